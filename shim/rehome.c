/* Re-home: take every OpenCL object out of the vendor implementation,
 * unload it, load it again, rebuild every object and put every buffer's
 * bytes back, while the program's calls wait at the gate.
 *
 * Order matters: shadows are recreated in creation order, so parents exist
 * before children (contexts before queues, buffers before sub-buffers,
 * programs before kernels), released in the reverse order, and kernel
 * arguments are set only once every object exists again.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "shim.h"

extern atomic_long shim_svm_live;
extern atomic_long shim_event_callbacks_pending;
void shim_event_retire(struct shim_event *e);
void shim_event_drain_deferred(void);
void shim_image_region(const struct shim_mem *m, size_t region[3]);
size_t shim_image_row_bytes(const struct shim_mem *m);

/* Objects whose bytes the shim moves itself: root buffers and images not
 * backed by a buffer.  Sub-buffers and buffer images share a root's bytes. */
static bool holds_bytes(const struct shim_obj *o)
{
    const struct shim_mem *m = (const void *)o;
    return o->kind == SHIM_MEM && !m->parent &&
           (m->type == SHIM_BUFFER || m->type == SHIM_IMAGE);
}

/* A queue per context for the shim's own copies. */
struct helper_queue {
    struct shim_context *ctx;
    cl_command_queue q;
};

static cl_command_queue helper_queue(struct helper_queue *hq, size_t *n,
                                     size_t cap, struct shim_context *ctx)
{
    cl_int err;

    for (size_t i = 0; i < *n; i++)
        if (hq[i].ctx == ctx)
            return hq[i].q;
    if (*n == cap)
        return NULL;
    void *rc = ctx->obj.real, *rd = ctx->devices[0]->obj.real;
    cl_command_queue q = VENDOR(rc)->clCreateCommandQueue(rc, rd, 0, &err);
    if (!q)
        return NULL;
    hq[*n].ctx = ctx;
    hq[*n].q = q;
    (*n)++;
    return q;
}

static void helper_queues_release(struct helper_queue *hq, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        VENDOR(hq[i].q)->clFinish(hq[i].q);
        VENDOR(hq[i].q)->clReleaseCommandQueue(hq[i].q);
    }
    *n = 0;
}

static int check_movable(void)
{
    int rc = 0;

    if (atomic_load(&shim_svm_live) > 0) {
        LOG_WARN("re-home: the program holds SVM allocations, whose "
                 "addresses cannot move");
        return -ENOTSUP;
    }
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o && !rc; o = o->next) {
        if (o->kind == SHIM_EVENT) {
            const struct shim_event *e = (const void *)o;
            if (e->user && !e->retired && e->user_status == CL_SUBMITTED) {
                LOG_WARN("re-home: a user event is still pending; queues "
                         "cannot be finished");
                rc = -EBUSY;
            }
        } else if (o->kind == SHIM_MEM) {
            const struct shim_mem *m = (const void *)o;
            if (atomic_load(&m->maps) > 0) {
                LOG_WARN("re-home: a buffer is mapped; its pointer would not "
                         "survive");
                rc = -EBUSY;
            } else if (m->type == SHIM_PIPE) {
                LOG_WARN("re-home: pipes cannot be read from the host");
                rc = -ENOTSUP;
            }
        } else if (o->kind == SHIM_KERNEL &&
                   ((const struct shim_kernel *)o)->uses_svm) {
            rc = -ENOTSUP;
        }
    }
    shim_store_unlock();
    return rc;
}

/* Copies to RAM what the device changed since the last copy. */
static int extract(struct shim_mem *m, cl_command_queue q, size_t *bytes)
{
    cl_int err;

    if (m->type == SHIM_IMAGE) {
        size_t origin[3] = {0, 0, 0}, region[3];
        shim_image_region(m, region);
        if (m->shadow_valid && atomic_load(&m->dirty_hi) == 0)
            return 0;
        void *dst = (m->flags & CL_MEM_USE_HOST_PTR) ? m->host_ptr : NULL;
        size_t row = dst ? m->desc.image_row_pitch : 0;
        size_t slice = dst ? m->desc.image_slice_pitch : 0;
        if (!dst) {
            if (!m->shadow && !(m->shadow = malloc(m->size)))
                return -ENOMEM;
            dst = m->shadow;
        }
        err = VENDOR(q)->clEnqueueReadImage(q, m->obj.real, CL_FALSE, origin,
                                            region, row, slice, dst, 0, NULL,
                                            NULL);
        *bytes += m->size;
    } else {
        size_t lo = 0, hi = m->size;
        if (m->shadow_valid) {
            lo = atomic_load(&m->dirty_lo);
            hi = atomic_load(&m->dirty_hi);
            if (lo >= hi)
                return 0;
        }
        void *base = m->host_ptr;
        if (!(m->flags & CL_MEM_USE_HOST_PTR)) {
            if (!m->shadow && !(m->shadow = malloc(m->size)))
                return -ENOMEM;
            base = m->shadow;
        }
        err = VENDOR(q)->clEnqueueReadBuffer(q, m->obj.real, CL_FALSE, lo,
                                             hi - lo, (char *)base + lo, 0,
                                             NULL, NULL);
        *bytes += hi - lo;
    }
    if (err != CL_SUCCESS) {
        LOG_ERROR("re-home: reading a %zu-byte object failed: %d", m->size,
                  err);
        return -EIO;
    }
    return 0;
}

static int reinject(struct shim_mem *m, cl_command_queue q, size_t *bytes)
{
    cl_int err;

    /* Host-pointer objects were recreated over the program's own memory. */
    if (m->flags & CL_MEM_USE_HOST_PTR)
        return 0;
    if (m->type == SHIM_IMAGE) {
        size_t origin[3] = {0, 0, 0}, region[3];
        shim_image_region(m, region);
        err = VENDOR(q)->clEnqueueWriteImage(q, m->obj.real, CL_FALSE, origin,
                                             region, 0, 0, m->shadow, 0, NULL,
                                             NULL);
    } else {
        err = VENDOR(q)->clEnqueueWriteBuffer(q, m->obj.real, CL_FALSE, 0,
                                              m->size, m->shadow, 0, NULL,
                                              NULL);
    }
    if (err != CL_SUCCESS) {
        LOG_ERROR("re-home: writing back a %zu-byte object failed: %d",
                  m->size, err);
        return -EIO;
    }
    *bytes += m->size;
    return 0;
}

static int realize(struct shim_obj *o)
{
    switch (o->kind) {
    case SHIM_DEVICE:
        return ((struct shim_device *)o)->parent
                   ? shim_device_realize((void *)o)
                   : 0;
    case SHIM_CONTEXT: return shim_context_realize((void *)o);
    case SHIM_QUEUE: return shim_queue_realize((void *)o);
    case SHIM_MEM: return shim_mem_realize((void *)o, NULL);
    case SHIM_SAMPLER: return shim_sampler_realize((void *)o);
    case SHIM_PROGRAM: return shim_program_realize((void *)o);
    case SHIM_KERNEL: return shim_kernel_realize((void *)o);
    case SHIM_EVENT: return shim_event_realize((void *)o);
    default: return 0;
    }
}

static void report_line(const char *line)
{
    FILE *f;

    if (!shim_config.report_file || !(f = fopen(shim_config.report_file, "ae")))
        return;
    fputs(line, f);
    fclose(f);
}

static void report(const struct shim_rehome_times *t, int rc,
                   const char *from, const char *to)
{
    char line[512];

    LOG_INFO("re-home #%u %s->%s %s: blocked %.3f ms = finish %.3f + extract %.3f "
             "+ release %.3f + unload %.3f + load %.3f + rebuild %.3f + "
             "reinject %.3f ms; %zu bytes out, %zu back, %u objects",
             shim.rehomes, from, to, rc ? "FAILED" : "done", t->total * 1e3,
             t->finish * 1e3, t->extract * 1e3, t->release * 1e3,
             t->unload * 1e3, t->load * 1e3, t->rebuild * 1e3,
             t->reinject * 1e3, t->bytes_extracted, t->bytes_reinjected,
             t->objects);
    snprintf(line, sizeof(line),
             "rehome n=%u rc=%d from=%s to=%s total=%.6f block=%.6f "
             "finish=%.6f extract=%.6f release=%.6f unload=%.6f load=%.6f "
             "rebuild=%.6f reinject=%.6f bytes_out=%zu bytes_back=%zu "
             "objects=%u\n",
             shim.rehomes, rc, from, to, t->total, t->block, t->finish,
             t->extract, t->release, t->unload, t->load, t->rebuild,
             t->reinject, t->bytes_extracted, t->bytes_reinjected,
             t->objects);
    report_line(line);
}

/* Passthrough -> remoting: the program computes on the proxy as soon as
 * its state is there; the vendor's objects are released and the vendor
 * unloaded here, while the program runs (not stoppage). */
struct stale {
    const struct shim_obj *obj;
    void *real;
};

static struct background {
    pthread_t thread;
    bool running;
    struct stale *list;
    size_t n;
    const struct shim_backend_ops *backend;
    unsigned rehome;
} bg;

static void *background_release(void *arg)
{
    char line[160];
    double t0 = shim_now(), t1;

    (void)arg;
    for (size_t i = bg.n; i-- > 0;)
        shim_real_release_handle(bg.list[i].obj, bg.list[i].real);
    t1 = shim_now();
    bg.backend->unload();
    LOG_INFO("re-home #%u in the background: release %.3f + unload %.3f ms",
             bg.rehome, (t1 - t0) * 1e3, (shim_now() - t1) * 1e3);
    snprintf(line, sizeof(line),
             "background n=%u release=%.6f unload=%.6f objects=%zu\n",
             bg.rehome, t1 - t0, shim_now() - t1, bg.n);
    report_line(line);
    return NULL;
}

/* Waits for the previous switch's background work (before a backend may
 * be loaded again). */
static void background_join(void)
{
    if (!bg.running)
        return;
    pthread_join(bg.thread, NULL);
    free(bg.list);
    bg.list = NULL;
    bg.n = 0;
    bg.running = false;
}

/* Takes every real handle out of the shadows into the background list. */
static int background_collect(const struct shim_backend_ops *from)
{
    size_t n = 0, cap = 256;

    bg.list = malloc(cap * sizeof(*bg.list));
    if (!bg.list)
        return -ENOMEM;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind == SHIM_EVENT)
            shim_event_retire((void *)o);
        if (o->kind == SHIM_PLATFORM || !o->real)
            continue;
        if (n == cap) {
            struct stale *l = realloc(bg.list, 2 * cap * sizeof(*l));
            if (!l)
                return -ENOMEM;
            bg.list = l;
            cap *= 2;
        }
        bg.list[n].obj = o;
        bg.list[n].real = o->real;
        o->real = NULL;
        n++;
    }
    bg.n = n;
    bg.backend = from;
    return 0;
}

/* Helper queues of one switch, released by whoever opens the gate. */
struct pass {
    struct helper_queue hq[16];
    size_t n_hq;
    bool background;
};

/* Steps 1-3, with the gate closed: finish, extract, release (or hand the
 * real handles to the background when leaving the vendor for the proxy). */
static int take_out(const struct shim_backend_ops *from,
                    const struct shim_backend_ops *to, struct pass *ps,
                    struct shim_rehome_times *t)
{
    double ts;
    int rc;

    if ((rc = check_movable()) < 0)
        return rc;

    /* 1. Finish every queue and let every pending callback run. */
    ts = shim_now();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->kind == SHIM_QUEUE && o->real)
            VENDOR(o->real)->clFinish(o->real);
    while (atomic_load(&shim_event_callbacks_pending) > 0) {
        if (shim_now() - ts > shim_config.rehome_timeout_ms / 1e3) {
            LOG_ERROR("re-home: %ld event callback(s) never ran; giving up",
                      atomic_load(&shim_event_callbacks_pending));
            return -ETIMEDOUT;
        }
        sched_yield();
    }
    shim_event_drain_deferred();
    t->finish = shim_now() - ts;

    /* 2. Extract: every byte the device changed goes to RAM. */
    ts = shim_now();
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q = helper_queue(ps->hq, &ps->n_hq, 16,
                                              m->context);
            rc = q ? extract(m, q, &t->bytes_extracted) : -ENOMEM;
        }
    for (size_t i = 0; i < ps->n_hq; i++)
        VENDOR(ps->hq[i].q)->clFinish(ps->hq[i].q);
    helper_queues_release(ps->hq, &ps->n_hq);
    t->extract = shim_now() - ts;
    if (rc < 0)
        return rc;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (holds_bytes(o))
            shim_mem_dirty_reset((struct shim_mem *)o);

    /* 3. Release every vendor object, children first: now, or after the
     * gate opens when leaving the native backend for the proxy. */
    ts = shim_now();
    ps->background = from == &shim_native_ops && to && to != from;
    if (ps->background && background_collect(from) < 0) {
        ps->background = false;
        return -ENOMEM;
    }
    for (struct shim_obj *o = shim_store_last(); o && !ps->background;
         o = o->prev) {
        if (o->kind == SHIM_EVENT)
            shim_event_retire((void *)o);
        if (o->kind != SHIM_PLATFORM && o->real) {
            shim_real_release(o);
            o->real = NULL;
        }
    }
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        t->objects++;
    t->release = shim_now() - ts;

    /* 4a. Unload the old backend, unless in the background. */
    ts = shim_now();
    if (!ps->background)
        from->unload();
    t->unload = shim_now() - ts;
    return 0;
}

/* The proxy is out of reach: the vendor's objects were only set aside, so
 * the program stays on the vendor with nothing lost. */
static void stay_on(const struct shim_backend_ops *from,
                    const struct shim_backend_ops *to, struct pass *ps)
{
    to->unload();
    for (size_t i = 0; i < bg.n; i++)
        ((struct shim_obj *)bg.list[i].obj)->real = bg.list[i].real;
    free(bg.list);
    bg.list = NULL;
    bg.n = 0;
    ps->background = false;
    shim.backend = from;
}

/* Steps 4b-6: load TO, rebuild every object on it, put every byte back. */
static int bring_back(const struct shim_backend_ops *to, struct pass *ps,
                      struct shim_rehome_times *t)
{
    double ts = shim_now();
    int rc;

    shim.backend = to;
    rc = to->load();
    if (rc == 0)
        rc = shim_platforms_bind();
    t->load = shim_now() - ts;
    if (rc < 0) {
        LOG_ERROR("re-home: %s did not come up (%d)", to->name, rc);
        return rc;
    }

    /* 5. Rebuild in creation order, then set kernel arguments. */
    ts = shim_now();
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind != SHIM_PLATFORM)
            rc = realize(o);
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind == SHIM_KERNEL)
            rc = shim_kernel_reset_args((void *)o);
    t->rebuild = shim_now() - ts;
    if (rc < 0) {
        LOG_ERROR("re-home: rebuilding objects failed (%d, vendor %d)", rc,
                  shim_vendor_err);
        return rc;
    }

    /* 6. Put every byte back. */
    ts = shim_now();
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q = helper_queue(ps->hq, &ps->n_hq, 16,
                                              m->context);
            rc = q ? reinject(m, q, &t->bytes_reinjected) : -ENOMEM;
        }
    helper_queues_release(ps->hq, &ps->n_hq);
    t->reinject = shim_now() - ts;
    return rc;
}

/* Opens the gate, then starts the background release, if any. */
static void reopen(struct pass *ps, struct shim_rehome_times *t, double t0)
{
    helper_queues_release(ps->hq, &ps->n_hq);
    shim_gate_open();
    t->total = shim_now() - t0;
    if (ps->background) {
        bg.rehome = shim.rehomes + 1;  /* end() counts this one */
        bg.running = pthread_create(&bg.thread, NULL, background_release,
                                    NULL) == 0;
        if (!bg.running)  /* no thread: do it here, late but done */
            background_release(NULL);
    }
}

/* Takes the rehome lock and closes the gate; -EDEADLK from a callback. */
static int begin(const struct shim_backend_ops *to,
                 struct shim_rehome_times *t, double *t0)
{
    memset(t, 0, sizeof(*t));
    if (shim_init() < 0)
        return -ENODEV;
    if (shim_in_callback) {
        LOG_WARN("re-home: refused from inside an OpenCL callback");
        return -EDEADLK;
    }
    pthread_mutex_lock(&shim.rehome_lock);
    if (shim.parked) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return -EBUSY;
    }
    background_join();
    /* Binaries of programs built since the last switch, for a fast
     * rebuild: fetched while the program still runs. */
    shim_program_cache_prepare();
    /* Onto another backend: what does not depend on the program's state
     * is done while it still runs. */
    if (to && to != shim.backend && to->prewarm)
        to->prewarm();
    *t0 = shim_now();
    int rc = shim_gate_close(shim_config.rehome_timeout_ms);
    t->block = shim_now() - *t0;
    if (rc < 0)
        pthread_mutex_unlock(&shim.rehome_lock);
    return rc;
}

static int end(struct shim_rehome_times *t, int rc, const char *from,
               const char *to)
{
    shim.rehomes++;
    pthread_mutex_unlock(&shim.rehome_lock);
    report(t, rc, from, to);
    return rc;
}

int shim_switch(const struct shim_backend_ops *to,
                struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};
    const struct shim_backend_ops *from = shim.backend;
    double t0;
    int rc = begin(to, t, &t0);

    if (rc < 0) {
        report(t, rc, from ? from->name : "none", to->name);
        return rc;
    }
    from = shim.backend;
    rc = take_out(from, to, &ps, t);
    if (rc == 0) {
        rc = bring_back(to, &ps, t);
        if (rc < 0 && ps.background) {
            LOG_ERROR("re-home: cannot switch to %s (%d); staying on %s",
                      to->name, rc, from->name);
            stay_on(from, to, &ps);
        } else if (rc < 0) {
            LOG_ERROR("re-home: OpenCL calls will fail");
        }
    }
    reopen(&ps, t, t0);
    return end(t, rc, from->name, to->name);
}

/* Stop-and-copy: everything out to RAM and the vendor unloaded; the gate
 * stays closed, so the program's OpenCL calls wait until shim_unpark(). */
int shim_park(struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};
    double t0;
    int rc = begin(NULL, t, &t0);

    if (rc < 0)
        return rc;
    const struct shim_backend_ops *from = shim.backend;
    rc = take_out(from, NULL, &ps, t);
    helper_queues_release(ps.hq, &ps.n_hq);
    if (rc < 0) {
        /* take_out fails only before releasing anything: run on as is. */
        reopen(&ps, t, t0);
        return end(t, rc, from->name, "parked");
    }
    shim.parked = true;
    shim.parked_from = from;
    shim.parked_at = t0;
    t->total = shim_now() - t0;
    return end(t, 0, from->name, "parked");
}

/* Back from stop-and-copy onto the backend the program was parked from. */
int shim_unpark(struct shim_rehome_times *t)
{
    struct pass ps = {.n_hq = 0};

    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&shim.rehome_lock);
    if (!shim.parked) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return -EINVAL;
    }
    double t0 = shim_now();
    const struct shim_backend_ops *to = shim.parked_from;
    int rc = bring_back(to, &ps, t);
    shim.parked = false;
    reopen(&ps, t, t0);
    /* Calls were held since the park: that whole time is stoppage. */
    t->block = t0 - shim.parked_at;
    return end(t, rc, "parked", to->name);
}

/* The backend a re-home goes to: CRANE_REHOME_TO=native (a plain re-home
 * on the vendor), remote (onto the proxy) or alternate (back and forth). */
int shim_rehome(struct shim_rehome_times *t)
{
    const char *to = shim_config.rehome_to;
    const struct shim_backend_ops *target = shim.backend;

    if (strcmp(to, "remote") == 0)
        target = &shim_remote_ops;
    else if (strcmp(to, "alternate") == 0)
        target = shim.backend == &shim_native_ops ? &shim_remote_ops
                                                  : &shim_native_ops;
    else if (strcmp(to, "native") == 0)
        target = &shim_native_ops;
    return shim_switch(target, t);
}

/* The documented test hook: a program (or a debugger) may call this to
 * re-home at a moment of its choosing.  Returns 0 or a negative errno. */
SHIM_EXPORT int crane_rehome(void)
{
    struct shim_rehome_times t;
    return shim_rehome(&t);
}
