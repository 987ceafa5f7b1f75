/* The old side's objects after a switch: set aside, released (and the
 * old backend unloaded) in the background, proxy objects kept as twins
 * for a switch back, and given back to the shadows when a switch fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rehome_int.h"

#include "proto/deadline.h"

/* A switch between backends sets the old backend's objects aside instead
 * of releasing them: the program computes on the new side as soon as its
 * state is there, and the old objects are released (and the old backend
 * unloaded) in the background, while it runs (not stoppage).  Until the
 * new side is whole, the set-aside handles are the way back: a switch that
 * fails gives every shadow its old handle again (stay_on). */
struct stale {
    struct shim_obj *obj;
    void *real;
    cl_device_type type;         /* root devices: bind() overwrites it */
    bool twin;                   /* kept on the proxy, not released */
    bool user_pending;           /* a user event that moved unset */
};

static struct background {
    pthread_t thread;
    bool running;
    struct stale *list;
    size_t n;
    const struct shim_backend_ops *backend;
    unsigned rehome;
    size_t twins;                /* of the list, kept as twins */
    bool twins_held;             /* the proxy connection stays for them */
    bool cancel;                 /* a new switch: stop lingering */
    pthread_mutex_t lock;
    pthread_cond_t cond;
} bg = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/*
 * Twins.  Going back from the proxy to the vendor, the proxy's contexts,
 * queues, samplers, programs and kernels are kept ("twins") for
 * CRANE_REMOTE_LINGER_MS, with the connection: a switch to the proxy within
 * that time reuses them instead of making them again (a context and a
 * program build on the proxy are most of a small program's switch).
 * Buffers and images always move.  A switch to the proxy makes ahead
 * the twins that are missing (prebuild.c).  A program rebuilt meanwhile
 * (build_gen) has its twin and its kernels' dropped; a shadow destroyed meanwhile releases
 * its twin (objects.c); after the linger, or before any other kind of
 * switch, every twin is released and the connection closed.
 */
void shim_twin_release(struct shim_obj *o)
{
    void *t = atomic_exchange(&o->twin, NULL);

    /* A twin of a connection that is gone went with it. */
    if (t && o->twin_conn == shim_twin_generation())
        shim_real_release_handle(o, t);
}

/* The twin of O, if it can stand for O on the current connection. */
void *shim_twin_take(struct shim_obj *o)
{
    void *t = atomic_exchange(&o->twin, NULL);

    if (!t || o->twin_conn != shim_twin_generation())
        return NULL;
    /* Of an older build of the program (a kernel: of its program), made
     * before the program was built again. */
    if ((o->kind == SHIM_PROGRAM &&
         o->twin_build != ((struct shim_program *)o)->build_gen) ||
        (o->kind == SHIM_KERNEL &&
         o->twin_build != ((struct shim_kernel *)o)->program->build_gen)) {
        shim_real_release_handle(o, t);
        return NULL;
    }
    if (o->kind == SHIM_PROGRAM)
        ((struct shim_program *)o)->real_from_binary =
            ((struct shim_program *)o)->twin_from_binary;
    return t;
}

/* Every twin released and the proxy connection closed. */
void shim_twins_drop(void)
{
    /* On the proxy, the connection is the backend's own again. */
    if (!bg.twins_held || shim_is_proxy(shim.backend)) {
        bg.twins_held = false;
        return;
    }
    shim_store_lock();
    for (struct shim_obj *o = shim_store_last(); o; o = o->prev)
        shim_twin_release(o);
    shim_store_unlock();
    shim_proxy_backend()->unload();
    bg.twins_held = false;
}

static void *background_release(void *arg)
{
    char line[200];
    double t0 = shim_now(), t1;
    bool linger = false;

    (void)arg;
    size_t completed = 0;
    for (size_t i = bg.n; i-- > 0;) {
        if (bg.list[i].user_pending && bg.list[i].real)
            completed += shim_user_event_abandon(bg.list[i].real);
        if (!bg.list[i].twin)
            shim_real_release_handle(bg.list[i].obj, bg.list[i].real);
    }
    t1 = shim_now();
    if (bg.twins)
        bg.twins_held = linger = true;
    else
        bg.backend->unload();
    CRN_INFO("re-home #%u in the background: release %.3f + unload %.3f ms"
             "%s", bg.rehome, (t1 - t0) * 1e3, (shim_now() - t1) * 1e3,
             linger ? "; proxy objects kept for the next switch" : "");
    snprintf(line, sizeof(line),
             "background n=%u release=%.6f unload=%.6f objects=%zu "
             "twins=%zu user_events_completed=%zu\n",
             bg.rehome, t1 - t0, shim_now() - t1, bg.n, bg.twins, completed);
    shim_rehome_report_line(line);
    if (!linger)
        return NULL;
    /* Linger: a switch back soon reuses them; else they go. */
    struct timespec until;
    crn_deadline_in(CLOCK_REALTIME, (uint64_t)shim_config.remote_linger_ms,
                    &until);
    pthread_mutex_lock(&bg.lock);
    while (!bg.cancel &&
           pthread_cond_timedwait(&bg.cond, &bg.lock, &until) == 0)
        ;
    bool cancelled = bg.cancel;
    pthread_mutex_unlock(&bg.lock);
    if (!cancelled)
        shim_twins_drop();
    return NULL;
}

void shim_rehome_bg_forget(void)
{
    free(bg.list);
    bg.list = NULL;
    bg.n = 0;
}

/* Waits for the previous switch's background work (before a backend may
 * be loaded again). */
void shim_rehome_bg_join(void)
{
    if (!bg.running)
        return;
    pthread_mutex_lock(&bg.lock);
    bg.cancel = true;
    pthread_cond_signal(&bg.cond);
    pthread_mutex_unlock(&bg.lock);
    pthread_join(bg.thread, NULL);
    shim_rehome_bg_forget();
    bg.running = false;
    bg.cancel = false;
}

/* Records every shadow's real handle, then takes them out of the shadows.
 * Nothing changes unless the whole list could be made. */
int shim_rehome_bg_collect(const struct shim_backend_ops *from)
{
    size_t n = 0, cap = 256;

    bg.list = malloc(cap * sizeof(*bg.list));
    if (!bg.list)
        return -ENOMEM;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (n == cap) {
            struct stale *l = realloc(bg.list, 2 * cap * sizeof(*l));
            if (!l)
                return -ENOMEM;
            bg.list = l;
            cap *= 2;
        }
        bg.list[n].obj = o;
        bg.list[n].real = o->real;
        bg.list[n].user_pending = shim_user_event_pending(o);
        bg.list[n].type = o->kind == SHIM_DEVICE
                              ? ((struct shim_device *)o)->type
                              : 0;
        n++;
    }
    bg.n = n;
    bg.backend = from;
    bg.twins = 0;
    bool keep = shim_is_proxy(from) && shim_config.remote_linger_ms > 0;
    unsigned long conn = shim_twin_generation();
    for (size_t i = 0; i < n; i++) {
        struct shim_obj *o = bg.list[i].obj;
        bg.list[i].twin = false;
        if (o->kind == SHIM_EVENT && !shim_user_event_pending(o))
            shim_event_retire((void *)o);
        if (keep && conn && o->ops->twins && o->real) {
            o->twin_conn = conn;
            if (o->kind == SHIM_PROGRAM) {
                struct shim_program *p = (void *)o;
                o->twin_build = p->build_gen;
                p->twin_from_binary = p->real_from_binary;
            }
            if (o->kind == SHIM_KERNEL)
                o->twin_build =
                    ((struct shim_kernel *)o)->program->build_gen;
            atomic_store(&o->twin, o->real);
            bg.list[i].twin = true;
            bg.twins++;
        }
        if (o->kind != SHIM_PLATFORM)
            o->real = NULL;
    }
    return 0;
}

/* The new side did not come up whole: what the switch made there is
 * released, every shadow gets back the handle it had before (platforms and
 * devices included), and the program goes on where its data is whole, as
 * if the switch had never been tried. */
void shim_rehome_stay_on(const struct shim_backend_ops *from,
                         const struct shim_backend_ops *to, struct pass *ps)
{
    shim_helper_queues_release(ps->hq, &ps->n_hq);
    for (size_t i = bg.n; i-- > 0;) {
        struct shim_obj *o = bg.list[i].obj;
        if (o->real && o->real != bg.list[i].real &&
            o->kind != SHIM_PLATFORM)
            shim_real_release_handle(o, o->real);
        if (bg.list[i].twin)
            atomic_store(&o->twin, NULL);  /* it is the real one again */
        o->real = bg.list[i].real;
        if (o->kind == SHIM_DEVICE)
            ((struct shim_device *)o)->type = bg.list[i].type;
    }
    shim_copies_drop_all();
    shim_precopy_drop_targets();
    to->unload();
    shim_rehome_bg_forget();
    ps->background = false;
    shim.backend = from;
}


/* The background release of the switch now ending, in its own thread
 * (reopen, once the gate is open). */
void shim_rehome_bg_start(void)
{
    bg.rehome = shim.rehomes + 1;  /* end() counts this one */
    bg.running = pthread_create(&bg.thread, NULL, background_release,
                                NULL) == 0;
    if (!bg.running)  /* no thread: do it here, late but done */
        background_release(NULL);
}
