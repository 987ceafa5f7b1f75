/* Re-home: take every OpenCL object out of the vendor implementation,
 * unload it, load it again, rebuild every object and put every buffer's
 * bytes back, while the program's calls wait at the gate.  This file runs
 * a switch, a park and an unpark; the steps are in rehome_out.c (finish,
 * extract, release), rehome_in.c (load, rebuild, reinject),
 * rehome_linger.c (the old side's background release, twins) and
 * rehome_report.c (the report lines).
 *
 * Order matters: shadows are recreated in creation order, so parents exist
 * before children (contexts before queues, buffers before sub-buffers,
 * programs before kernels), released in the reverse order, and kernel
 * arguments are set only once every object exists again.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rehome_int.h"

/* Opens the gate, then starts the background release, if any. */
static void reopen(struct pass *ps, struct shim_rehome_times *t, double t0)
{
    shim_helper_queues_release(ps->hq, &ps->n_hq);
    shim_rehome_streamed_forget(ps);
    shim_gate_open();
    t->total = shim_now() - t0;
    /* Unpinning is not stoppage, but comes before the old vendor goes. */
    shim_copies_drop_all();
    if (ps->background)
        shim_rehome_bg_start();
}

/* Takes the rehome lock and closes the gate; -EDEADLK from a callback.
 * GPU_LEAVES: the GPU goes after this switch (a migration; native.c). */
static int begin(const struct shim_backend_ops *to, bool gpu_leaves,
                 struct shim_rehome_times *t, double *t0)
{
    memset(t, 0, sizeof(*t));
    shim_rehome_note_clear();
    shim_precopy_forget();
    /* Every caller started the shim (start.c): the control thread and
     * the test hook only once it started well, crane_rehome itself. */
    if (shim.init_err < 0)
        return shim_switch_refuse(-ENODEV, "the shim did not start (%d)",
                                  shim.init_err);
    if (shim_in_callback)
        return shim_switch_refuse(-EDEADLK, "asked from inside an OpenCL "
                                  "callback");
    pthread_mutex_lock(&shim.rehome_lock);
    if (shim.parked) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return shim_switch_refuse(-EBUSY, "the program is parked "
                                  "(stop-and-copy): resume it first");
    }
    shim_rehome_bg_join();
    shim.gpu_leaves = gpu_leaves;
    /* Visits count from here: a load ahead (prewarm, the device check)
     * is this switch's. */
    shim_fault_switch(shim.rehomes + 1);
    /* Its objects on no backend (dead.c): its state is all in RAM. */
    bool dead = shim_backend_on(shim.backend, SHIM_SIDE_NONE);
    if (!shim_is_proxy(to))
        shim_twins_drop();
    /* Binaries of programs built since the last switch, for a fast
     * rebuild: fetched while the program still runs. */
    shim_program_cache_prepare();
    /* Onto another backend: what does not depend on the program's state
     * is done while it still runs. */
    if (to && to != shim.backend && to->prewarm)
        to->prewarm(to);
    /* Onto another backend only where every device in use has a place
     * (devmatch.c): refused here, before anything changes. */
    int ok = to ? shim_devices_check(shim.backend, to) : 0;
    if (ok < 0) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return ok;
    }
    shim_rehome_checked_conn = shim_twin_generation();
    /* A long kernel is waited for (up to a bound) with the program
     * running, not behind the closed gate. */
    if (shim.backend && (ok = shim_rehome_wait_kernels(shim.backend)) < 0) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return ok;
    }
    /* Pinned chunks for the vendor's side of the copies, and the RAM
     * copies themselves, before the program stops (staging.c). */
    shim_staging_prepare_switch(shim.backend, to);
    shim_staging_prepare_shadows(shim_rehome_shadow_needed, (void *)to);
    /* Onto the proxy: every object it has no twin of made there now,
     * for the rebuild to take (prebuild.c). */
    if (shim_is_proxy(to) && shim.backend != to && !dead)
        shim_prebuild_remote(t);
    /* What the program's devices hold, copied while it still runs:
     * the stop reads only what it changed since (precopy.c). */
    if (!dead)
        shim_precopy(to);
    *t0 = shim_now();
    int rc = shim_gate_close(shim_config.rehome_timeout_ms);
    t->block = shim_now() - *t0;
    if (rc == -ETIMEDOUT)
        shim_switch_refuse(rc, "OpenCL calls of the program's still ran "
                           "after %ld ms (CRANE_REHOME_TIMEOUT_MS)",
                           shim_config.rehome_timeout_ms);
    if (rc < 0) {
        shim_copies_drop_all();
        shim_precopy_drop_targets();
        pthread_mutex_unlock(&shim.rehome_lock);
    }
    return rc;
}

static int end(struct shim_rehome_times *t, int rc, const char *from,
               const char *to)
{
    shim.rehomes++;
    pthread_mutex_unlock(&shim.rehome_lock);
    shim_rehome_report(t, rc, from, to);
    return rc;
}

static int switch_to(const struct shim_backend_ops *to, bool gpu_leaves,
                     struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};
    const struct shim_backend_ops *from = shim.backend;
    double t0;
    int rc = begin(to, gpu_leaves, t, &t0);

    if (rc < 0) {
        shim_rehome_report(t, rc, from ? from->name : "none", to->name);
        return rc;
    }
    from = shim.backend;
    /* From the dead side there is nothing to take out: the last switch
     * left every byte in RAM (rehome_fallback.c). */
    rc = shim_backend_on(from, SHIM_SIDE_NONE)
             ? shim_rehome_dead_leave()
             : shim_rehome_take_out(from, to, &ps, t);
    if (rc < 0) {
        /* Nothing was released: the program runs on as it was. */
        CRN_ERROR("re-home: cannot switch from %s to %s (%d); staying on %s",
                  from->name, to->name, rc, from->name);
    } else if ((rc = shim_rehome_bring_back(to, &ps, t)) < 0 && ps.background) {
        CRN_ERROR("re-home: cannot switch to %s (%d); staying on %s",
                  to->name, rc, from->name);
        shim_rehome_stay_on(from, to, &ps);
    } else if (rc < 0) {
        /* The old side is gone: the proxy where one answers, else an
         * error from every call (rehome_fallback.c), never a crash. */
        shim_rehome_fallback(to, &ps, t, rc);
    }
    const char *why = shim_rehome_reason();
    if (rc < 0 && (shim_is_proxy(from) || shim_is_proxy(to)) &&
        !shim_backend_alive(shim_proxy_backend()) && why[0] &&
        !strstr(why, "proxy"))
        shim_rehome_note_add("; the proxy connection is gone (closed, or "
                             "silent past CRANE_PROXY_TIMEOUT_MS)");
    /* The program's errors left on the proxy go with it. */
    if (rc == 0 && shim_is_proxy(from) && to != from)
        shim_owe(shim_backend_hand_over_deferred(from));
    /* Objects made ahead that this switch did not adopt. */
    shim_precopy_drop_targets();
    reopen(&ps, t, t0);
    return end(t, rc, from->name, to->name);
}


/* Stop-and-copy: everything out to RAM and the vendor unloaded; the gate
 * stays closed, so the program's OpenCL calls wait until shim_unpark(). */
static int park(struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};
    double t0;
    int rc = begin(NULL, true, t, &t0);

    if (rc < 0)
        return rc;
    const struct shim_backend_ops *from = shim.backend;
    if (shim_backend_on(from, SHIM_SIDE_NONE)) {
        /* Nothing to park from: a resume could not say where to go. */
        reopen(&ps, t, t0);
        return end(t, -ENODEV, from->name, "parked");
    }
    rc = shim_rehome_take_out(from, NULL, &ps, t);
    shim_helper_queues_release(ps.hq, &ps.n_hq);
    if (rc < 0) {
        /* take_out fails only before releasing anything: run on as is. */
        reopen(&ps, t, t0);
        return end(t, rc, from->name, "parked");
    }
    if (shim_is_proxy(from))
        shim_owe(shim_backend_hand_over_deferred(from));
    shim.parked = true;
    shim.parked_from = from;
    shim.parked_at = t0;
    t->total = shim_now() - t0;
    return end(t, 0, from->name, "parked");
}

/* Back from stop-and-copy onto the backend the program was parked from. */
static int unpark(struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};

    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&shim.rehome_lock);
    shim_rehome_note_clear();
    shim_precopy_forget();
    if (!shim.parked) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return shim_switch_refuse(-EINVAL, "not parked: nothing to "
                                  "resume");
    }
    shim_fault_switch(shim.rehomes + 1);
    double t0 = shim_now();
    const struct shim_backend_ops *to = shim.parked_from;
    int rc = shim_rehome_bring_back(to, &ps, t);
    if (rc < 0) {
        /* The state in RAM is the only whole copy: keep it, and the
         * program's calls held, for a later resume to try again. */
        shim_rehome_undo_bring_back(to, &ps);
        CRN_ERROR("re-home: %s did not come back (%d); the program stays "
                  "parked with its state in RAM until a resume works",
                  to->name, rc);
        t->total = shim_now() - t0;
        return end(t, rc, "parked", to->name);
    }
    shim.parked = false;
    reopen(&ps, t, t0);
    /* Calls were held since the park: that whole time is stoppage. */
    t->block = t0 - shim.parked_at;
    return end(t, rc, "parked", to->name);
}

/* A switch, a park or an unpark, this thread's calls marked as its own
 * (shim_own_calls) meanwhile. */
enum move { MOVE_SWITCH, MOVE_MIGRATE, MOVE_PARK, MOVE_UNPARK };

static int own_calls(enum move what, const struct shim_backend_ops *to,
                     struct shim_rehome_times *t)
{
    bool was = shim_own_calls;
    int rc;

    shim_own_calls = true;
    if (what == MOVE_SWITCH || what == MOVE_MIGRATE)
        rc = switch_to(to, what == MOVE_MIGRATE, t);
    else
        rc = what == MOVE_PARK ? park(t) : unpark(t);
    shim_own_calls = was;
    return rc;
}

int shim_switch(const struct shim_backend_ops *to,
                struct shim_rehome_times *t)
{
    return own_calls(MOVE_SWITCH, to, t);
}

int shim_switch_gpu_leaves(const struct shim_backend_ops *to,
                           struct shim_rehome_times *t)
{
    return own_calls(MOVE_MIGRATE, to, t);
}

int shim_park(struct shim_rehome_times *t)
{
    return own_calls(MOVE_PARK, NULL, t);
}

int shim_unpark(struct shim_rehome_times *t)
{
    return own_calls(MOVE_UNPARK, NULL, t);
}

/* The backend a re-home goes to: CRANE_REHOME_TO=native (a plain re-home
 * on the vendor), remote (onto the proxy) or alternate (back and forth). */
int shim_rehome(struct shim_rehome_times *t)
{
    const char *to = shim_config.rehome_to;
    const struct shim_backend_ops *target = shim.backend;

    if (strcmp(to, "remote") == 0)
        target = shim_proxy_backend();
    else if (strcmp(to, "alternate") == 0)
        target = shim_is_vendor(shim.backend) ? shim_proxy_backend()
                                              : shim_vendor_backend();
    else if (strcmp(to, "native") == 0)
        target = shim_vendor_backend();
    if (shim_backend_on(target, SHIM_SIDE_NONE))
        target = shim_vendor_backend();
    return shim_switch(target, t);
}
