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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "shim.h"

extern atomic_long shim_svm_live;
bool shim_remote_alive(void);
unsigned long shim_remote_generation(void);
size_t shim_remote_reads_outstanding(void);
cl_int shim_remote_hand_over_deferred(void);
extern atomic_long shim_event_callbacks_pending;
void shim_event_retire(struct shim_event *e);
void shim_event_drain_deferred(void);
void shim_image_region(const struct shim_mem *m, size_t region[3]);
size_t shim_image_row_bytes(const struct shim_mem *m);

SHIM_TLS bool shim_own_calls;

/* The first error of the program's batched calls that a switch away from
 * the proxy took with it, for the program's next clFinish or
 * clWaitForEvents: a switch must neither fail for it (the program's
 * error, not the switch's) nor lose it. */
static atomic_int owed;

static void owe(cl_int err)
{
    int none = CL_SUCCESS;

    if (err != CL_SUCCESS) {
        LOG_DEBUG("re-home: an error of a batched call (%d) goes on to the "
                  "program's next clFinish or clWaitForEvents", err);
        atomic_compare_exchange_strong(&owed, &none, err);
    }
}

cl_int shim_owed_take(void)
{
    if (SHIM_LIKELY(!atomic_load_explicit(&owed, memory_order_relaxed)))
        return CL_SUCCESS;
    return (cl_int)atomic_exchange(&owed, CL_SUCCESS);
}

/* The first cause of the switch under way's failure, in words, for the
 * operator (cranectl status, through control.c). */
static char fail_reason[240];

static void note_reason(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void note_reason(const char *fmt, ...)
{
    va_list ap;

    if (fail_reason[0])
        return;
    va_start(ap, fmt);
    vsnprintf(fail_reason, sizeof(fail_reason), fmt, ap);
    va_end(ap);
}

/* Logs where a switch failed, and keeps the first such reason. */
#define SWITCH_FAIL(fmt, ...)                                   \
    do {                                                        \
        LOG_ERROR("re-home: " fmt, ##__VA_ARGS__);              \
        note_reason(fmt, ##__VA_ARGS__);                        \
    } while (0)

const char *shim_rehome_reason(void)
{
    return fail_reason;
}

/* A user event the program has not set yet: it moves (a new one on the
 * new side), unless a command still waits on it. */
static bool pending_user_event(const struct shim_obj *o)
{
    const struct shim_event *e = (const void *)o;

    return o->kind == SHIM_EVENT && e->user && !e->retired &&
           e->user_status == CL_SUBMITTED;
}

/* A pending user event moved to the new side leaves its old vendor event
 * unset for ever.  Some vendors (NVIDIA's) wait for every event of a
 * context before they let the context or the library go, so the release
 * of the old side would never end and the next switch, which waits for
 * it, would hang the program.  No command and no callback waits on the
 * old event (the switch was refused otherwise), so completing it there
 * changes nothing the program can see. */
static bool abandon_user_event(void *real)
{
    cl_int err = VENDOR(real)->clSetUserEventStatus(real, CL_COMPLETE);

    if (err != CL_SUCCESS)
        LOG_WARN("re-home: completing a moved user event on its old side "
                 "failed (%d)", err);
    return err == CL_SUCCESS;
}

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

/* The helper queue for CTX, made on first use: 0 or -errno, logged. */
static int helper_queue(struct helper_queue *hq, size_t *n, size_t cap,
                        struct shim_context *ctx, cl_command_queue *out)
{
    cl_int err = CL_SUCCESS;

    for (size_t i = 0; i < *n; i++)
        if (hq[i].ctx == ctx) {
            *out = hq[i].q;
            return 0;
        }
    if (*n == cap) {
        SWITCH_FAIL("more than %zu contexts hold bytes", cap);
        return -E2BIG;
    }
    void *rc = ctx->obj.real, *rd = ctx->devices[0]->obj.real;
    cl_command_queue q = VENDOR(rc)->clCreateCommandQueue(rc, rd, 0, &err);
    if (!q) {
        SWITCH_FAIL("cannot make a queue for the copies on %s: %d",
                  shim.backend ? shim.backend->name : "?", err);
        return -EIO;
    }
    hq[*n].ctx = ctx;
    hq[*n].q = q;
    (*n)++;
    *out = q;
    return 0;
}

/* Waits for every copy queued on the helper queues and releases them.
 * 0 only when every queue finished without error: a copy that did not
 * complete must fail the switch, never pass as data. */
static int helper_queues_finish(struct helper_queue *hq, size_t *n,
                                const char *what)
{
    int rc = 0;

    for (size_t i = 0; i < *n; i++) {
        cl_int err = VENDOR(hq[i].q)->clFinish(hq[i].q);
        if (err != CL_SUCCESS) {
            SWITCH_FAIL("%s did not complete: %d", what, err);
            rc = -EIO;
        }
        VENDOR(hq[i].q)->clReleaseCommandQueue(hq[i].q);
    }
    *n = 0;
    return rc;
}

static void helper_queues_release(struct helper_queue *hq, size_t *n)
{
    helper_queues_finish(hq, n, "a copy");
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
        if (o->kind == SHIM_MEM) {
            const struct shim_mem *m = (const void *)o;
            if (m->type == SHIM_PIPE) {
                LOG_WARN("re-home: pipes cannot be read from the host");
                rc = -ENOTSUP;
            }
        } else if (o->kind == SHIM_KERNEL &&
                   ((const struct shim_kernel *)o)->uses_svm) {
            rc = -ENOTSUP;
        }
    }
    if (rc == 0)
        rc = shim_maps_check();
    shim_store_unlock();
    return rc;
}

/* The host pitches of an image's bytes read into the program's memory
 * (ROW, SLICE as it gave them, 0 meaning packed): between rows, or the
 * layers of a 1D array, and between slices. */
static void image_host_steps(const struct shim_mem *m, size_t row,
                             size_t slice, size_t *row_step,
                             size_t *slice_step)
{
    size_t region[3], packed = shim_image_row_bytes(m);

    shim_image_region(m, region);
    if (!row)
        row = packed;
    if (m->desc.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
        *row_step = slice ? slice : row;
        *slice_step = 0;
        return;
    }
    *row_step = row;
    *slice_step = slice ? slice : row * region[1];
}

/* Reads from the proxy at least this big are blocking (extract): a round
 * trip each (~0.1 ms) is then under a tenth of the transfer, and the
 * proxy would gather larger ones in fresh (page-faulting) heap memory. */
#define STREAMED_READ_MIN (8u << 20)

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
            if (!m->shadow && !(m->shadow = malloc(m->size))) {
                SWITCH_FAIL("no memory for a %zu-byte RAM copy",
                          m->size);
                return -ENOMEM;
            }
            dst = m->shadow;
        }
        *bytes += m->size;
        /* Its host access flags forbid reading it: through the device. */
        if (shim_mem_host_forbids(m, m->obj.real, CL_MAP_READ)) {
            size_t row_step, slice_step;
            image_host_steps(m, row, slice, &row_step, &slice_step);
            return shim_hostcopy_read_image(q, m->context->obj.real, m,
                                            m->obj.real, dst, row_step,
                                            slice_step) < 0 ? -EIO : 0;
        }
        err = VENDOR(q)->clEnqueueReadImage(q, m->obj.real, CL_FALSE, origin,
                                            region, row, slice, dst, 0, NULL,
                                            NULL);
    } else {
        size_t lo = 0, hi = m->size;
        m->stop_lo = m->stop_hi = 0;
        if (m->shadow_valid) {
            lo = atomic_load(&m->dirty_lo);
            hi = atomic_load(&m->dirty_hi);
            if (lo >= hi)
                return 0;
        }
        /* What a buffer made ahead on the target still lacks (precopy.c). */
        m->stop_lo = lo;
        m->stop_hi = hi;
        void *base = m->host_ptr;
        if (!(m->flags & CL_MEM_USE_HOST_PTR)) {
            if (!m->shadow && !(m->shadow = malloc(m->size))) {
                SWITCH_FAIL("no memory for a %zu-byte RAM copy",
                          m->size);
                return -ENOMEM;
            }
            base = m->shadow;
        }
        void *ctx = m->context->obj.real;
        *bytes += hi - lo;
        if (shim_mem_host_forbids(m, m->obj.real, CL_MAP_READ))
            return shim_hostcopy_read(q, ctx, m->obj.real, lo, hi - lo,
                                      (char *)base + lo);
        /* Into the shim's own RAM copy, through pinned chunks where the
         * vendor's context has them (staging.c). */
        if (base == m->shadow && shim_staging_has(ctx))
            return shim_staging_read(q, ctx, m->obj.real, lo, hi - lo,
                                     (char *)base + lo) < 0 ? -EIO : 0;
        /* From the proxy a large range is read blocking: the proxy then
         * streams it chunk by chunk (its pinned pair, the ring or the
         * socket), its device copies, its copies and ours overlapped,
         * where a non-blocking read is first gathered whole in its heap
         * (proxy-domain/exec_mem.c).  Small ones stay non-blocking, so
         * that many of them cost no round trip each. */
        cl_bool blocking = shim.backend == &shim_remote_ops &&
                                   hi - lo >= STREAMED_READ_MIN
                               ? CL_TRUE
                               : CL_FALSE;
        err = VENDOR(q)->clEnqueueReadBuffer(q, m->obj.real, blocking, lo,
                                             hi - lo, (char *)base + lo, 0,
                                             NULL, NULL);
    }
    if (err != CL_SUCCESS) {
        SWITCH_FAIL("reading a %zu-byte object failed: %d", m->size,
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
    /* Adopted from a pre-copy: only what the stop read is missing there. */
    if (m->premade_used) {
        size_t lo = m->stop_lo, n = m->stop_hi - m->stop_lo;
        void *ctx = m->context->obj.real;
        m->premade_used = false;
        if (n == 0)
            return 0;
        *bytes += n;
        if (shim_mem_host_forbids(m, m->obj.real, CL_MAP_WRITE))
            return shim_hostcopy_write(q, ctx, m->obj.real, lo, n,
                                       (char *)m->shadow + lo);
        if (shim_staging_has(ctx))
            return shim_staging_write(q, ctx, m->obj.real, lo, n,
                                      (char *)m->shadow + lo) < 0 ? -EIO : 0;
        err = VENDOR(q)->clEnqueueWriteBuffer(q, m->obj.real, CL_FALSE, lo, n,
                                              (char *)m->shadow + lo, 0, NULL,
                                              NULL);
        if (err != CL_SUCCESS) {
            SWITCH_FAIL("writing back %zu bytes failed: %d", n, err);
            return -EIO;
        }
        return 0;
    }
    if (shim_mem_host_forbids(m, m->obj.real, CL_MAP_WRITE)) {
        /* Its host access flags forbid writing it: through the device. */
        void *ctx = m->context->obj.real;
        *bytes += m->size;
        if (m->type == SHIM_IMAGE)
            return shim_hostcopy_write_image(q, ctx, m, m->obj.real,
                                             m->shadow) < 0 ? -EIO : 0;
        return shim_hostcopy_write(q, ctx, m->obj.real, 0, m->size,
                                   m->shadow);
    }
    if (m->type == SHIM_IMAGE) {
        size_t origin[3] = {0, 0, 0}, region[3];
        shim_image_region(m, region);
        err = VENDOR(q)->clEnqueueWriteImage(q, m->obj.real, CL_FALSE, origin,
                                             region, 0, 0, m->shadow, 0, NULL,
                                             NULL);
    } else if (shim_staging_has(m->context->obj.real)) {
        *bytes += m->size;
        return shim_staging_write(q, m->context->obj.real, m->obj.real, 0,
                                  m->size, m->shadow) < 0 ? -EIO : 0;
    } else {
        err = VENDOR(q)->clEnqueueWriteBuffer(q, m->obj.real, CL_FALSE, 0,
                                              m->size, m->shadow, 0, NULL,
                                              NULL);
    }
    if (err != CL_SUCCESS) {
        SWITCH_FAIL("writing back a %zu-byte object failed: %d",
                  m->size, err);
        return -EIO;
    }
    *bytes += m->size;
    return 0;
}

/* Its kind's row makes it again on the backend now in use (shim.h). */
static int realize(struct shim_obj *o)
{
    return o->ops->realize ? o->ops->realize(o) : 0;
}

static void report_line(const char *line)
{
    FILE *f;

    if (!shim_config.report_file || !(f = fopen(shim_config.report_file, "ae")))
        return;
    fputs(line, f);
    fclose(f);
}

/* The bulk time between two snapshots A and B. */
static void bulk_since(struct shim_remote_bulk *out,
                       const struct shim_remote_bulk *a,
                       const struct shim_remote_bulk *b)
{
    out->out_copy_s = b->out_copy_s - a->out_copy_s;
    out->out_wait_s = b->out_wait_s - a->out_wait_s;
    out->in_copy_s = b->in_copy_s - a->in_copy_s;
}

static void report(const struct shim_rehome_times *t, int rc,
                   const char *from, const char *to)
{
    char line[1024];

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
    /* Where extract and reinject spent their time (docs/results.md reads
     * these): the vendor's staged chunks (device waits, CPU copies) and
     * the proxy's bulk bytes as moved here (copies, waits for ring room;
     * the rest of a phase is the proxy's own work and the round trips). */
    size_t at = strlen(line) - 1;
    snprintf(line + at, sizeof(line) - at,
             " extract_dev=%.6f extract_copy=%.6f extract_ship=%.6f "
             "reinject_dev=%.6f reinject_copy=%.6f reinject_ship=%.6f "
             "reinject_ringwait=%.6f transport=%s streamed=%zu\n",
             t->extract_staged.device_s, t->extract_staged.copy_s,
             t->extract_ship.in_copy_s, t->reinject_staged.device_s,
             t->reinject_staged.copy_s, t->reinject_ship.out_copy_s,
             t->reinject_ship.out_wait_s,
             t->transport ? t->transport : "none", t->bytes_streamed);
    /* Pre-copy rounds before the stop, if any (precopy.c). */
    char pre[200];
    shim_precopy_describe(pre, sizeof(pre));
    if (pre[0]) {
        at = strlen(line) - 1;
        snprintf(line + at, sizeof(line) - at, "%s\n", pre);
    }
    /* A refused move says why, on the same line. */
    if (rc < 0 && shim_devices_refusal()[0]) {
        at = strlen(line) - 1;
        snprintf(line + at, sizeof(line) - at, " reason=\"%s\"\n",
                 shim_devices_refusal());
    }
    report_line(line);
}

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
 * Buffers and images always move.  A program rebuilt meanwhile
 * (build_gen) has its twin dropped; a shadow destroyed meanwhile releases
 * its twin (objects.c); after the linger, or before any other kind of
 * switch, every twin is released and the connection closed.
 */
void shim_twin_release(struct shim_obj *o)
{
    void *t = atomic_exchange(&o->twin, NULL);

    /* A twin of a connection that is gone went with it. */
    if (t && o->twin_conn == shim_remote_generation())
        shim_real_release_handle(o, t);
}

/* The twin of O, if it can stand for O on the current connection. */
static void *twin_take(struct shim_obj *o)
{
    void *t = atomic_exchange(&o->twin, NULL);

    if (!t || o->twin_conn != shim_remote_generation())
        return NULL;
    if (o->kind == SHIM_PROGRAM &&
        o->twin_build != ((struct shim_program *)o)->build_gen) {
        shim_real_release_handle(o, t);
        return NULL;
    }
    return t;
}

/* Every twin released and the proxy connection closed. */
static void twins_drop(void)
{
    /* On the proxy, the connection is the backend's own again. */
    if (!bg.twins_held || shim.backend == &shim_remote_ops) {
        bg.twins_held = false;
        return;
    }
    shim_store_lock();
    for (struct shim_obj *o = shim_store_last(); o; o = o->prev)
        shim_twin_release(o);
    shim_store_unlock();
    shim_remote_ops.unload();
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
            completed += abandon_user_event(bg.list[i].real);
        if (!bg.list[i].twin)
            shim_real_release_handle(bg.list[i].obj, bg.list[i].real);
    }
    t1 = shim_now();
    if (bg.twins)
        bg.twins_held = linger = true;
    else
        bg.backend->unload();
    LOG_INFO("re-home #%u in the background: release %.3f + unload %.3f ms"
             "%s", bg.rehome, (t1 - t0) * 1e3, (shim_now() - t1) * 1e3,
             linger ? "; proxy objects kept for the next switch" : "");
    snprintf(line, sizeof(line),
             "background n=%u release=%.6f unload=%.6f objects=%zu "
             "twins=%zu user_events_completed=%zu\n",
             bg.rehome, t1 - t0, shim_now() - t1, bg.n, bg.twins, completed);
    report_line(line);
    if (!linger)
        return NULL;
    /* Linger: a switch back soon reuses them; else they go. */
    struct timespec until;
    long ms = shim_config.remote_linger_ms;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&bg.lock);
    while (!bg.cancel &&
           pthread_cond_timedwait(&bg.cond, &bg.lock, &until) == 0)
        ;
    bool cancelled = bg.cancel;
    pthread_mutex_unlock(&bg.lock);
    if (!cancelled)
        twins_drop();
    return NULL;
}

static void background_forget(void)
{
    free(bg.list);
    bg.list = NULL;
    bg.n = 0;
}

/* Waits for the previous switch's background work (before a backend may
 * be loaded again). */
static void background_join(void)
{
    if (!bg.running)
        return;
    pthread_mutex_lock(&bg.lock);
    bg.cancel = true;
    pthread_cond_signal(&bg.cond);
    pthread_mutex_unlock(&bg.lock);
    pthread_join(bg.thread, NULL);
    background_forget();
    bg.running = false;
    bg.cancel = false;
}

/* Records every shadow's real handle, then takes them out of the shadows.
 * Nothing changes unless the whole list could be made. */
static int background_collect(const struct shim_backend_ops *from)
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
        bg.list[n].user_pending = pending_user_event(o);
        bg.list[n].type = o->kind == SHIM_DEVICE
                              ? ((struct shim_device *)o)->type
                              : 0;
        n++;
    }
    bg.n = n;
    bg.backend = from;
    bg.twins = 0;
    bool keep = from == &shim_remote_ops && shim_config.remote_linger_ms > 0;
    unsigned long conn = shim_remote_generation();
    for (size_t i = 0; i < n; i++) {
        struct shim_obj *o = bg.list[i].obj;
        bg.list[i].twin = false;
        if (o->kind == SHIM_EVENT && !pending_user_event(o))
            shim_event_retire((void *)o);
        if (keep && conn && o->ops->twins && o->real) {
            o->twin_conn = conn;
            if (o->kind == SHIM_PROGRAM)
                o->twin_build = ((struct shim_program *)o)->build_gen;
            atomic_store(&o->twin, o->real);
            bg.list[i].twin = true;
            bg.twins++;
        }
        if (o->kind != SHIM_PLATFORM)
            o->real = NULL;
    }
    return 0;
}

/* A buffer whose bytes a switch to the proxy streams from the vendor's
 * device straight to the proxy (each pinned chunk into the ring or the
 * socket), not through its RAM copy: its vendor handles, kept by the
 * background list until the gate opens. */
struct streamed {
    struct shim_mem *m;
    void *ctx;                   /* the vendor's context */
    cl_mem mem;                  /* the vendor's buffer */
    cl_command_queue q;          /* a vendor queue of the pass (sq) */
    cl_command_queue rq;         /* the proxy's, set by bring_back */
};

/* Helper queues of one switch, released by whoever opens the gate. */
struct pass {
    struct helper_queue hq[16];
    size_t n_hq;
    bool background;
    /* Streamed buffers and the vendor queues that read them. */
    struct helper_queue sq[16];
    size_t n_sq;
    struct streamed *streamed;
    size_t n_streamed;
};

/*
 * Whether a switch from FROM to TO streams M: from the vendor to the proxy
 * (the vendor's objects then outlive the rebuild, so the bytes can move
 * once the proxy's buffer exists), a whole buffer to move (no RAM copy
 * holding part of it), through pinned chunks, none of the cases that need
 * the RAM copy (a map carried, the program's own memory, a pre-copy
 * target, host access the vendor forbids).  CRANE_STREAM_SWITCH=0: never.
 */
static bool streams(const struct shim_backend_ops *from,
                    const struct shim_backend_ops *to,
                    const struct shim_mem *m)
{
    return shim_config.stream_switch && from == &shim_native_ops &&
           to == &shim_remote_ops && m->type == SHIM_BUFFER &&
           !(m->flags & CL_MEM_USE_HOST_PTR) && atomic_load(&m->maps) == 0 &&
           !m->premade && m->obj.real &&
           (!m->shadow_valid || (atomic_load(&m->dirty_lo) == 0 &&
                                 atomic_load(&m->dirty_hi) >= m->size)) &&
           shim_staging_has(m->context->obj.real) &&
           !shim_mem_host_forbids(m, m->obj.real, CL_MAP_READ);
}

/* Before the gate closes: whether a switch to TO (ARG) fills M's RAM
 * copy, as far as can be told while the program runs (a buffer it will
 * stream needs none, unless pre-copy rounds fill it first; one that does
 * not stream after all gets its copy at the stop, unprepared). */
static bool shadow_needed(const struct shim_mem *m, void *arg)
{
    const struct shim_backend_ops *to = arg;

    return shim_config.precopy_rounds > 0 || !streams(shim.backend, to, m);
}

/* Step 2 for a streamed buffer: only noted, read by bring_back. */
static int stream_defer(struct pass *ps, struct shim_mem *m,
                        cl_command_queue q, size_t *bytes)
{
    struct streamed *l = realloc(ps->streamed,
                                 (ps->n_streamed + 1) * sizeof(*l));

    if (!l) {
        SWITCH_FAIL("no memory to note a streamed buffer");
        return -ENOMEM;
    }
    ps->streamed = l;
    l[ps->n_streamed++] = (struct streamed){
        .m = m, .ctx = m->context->obj.real, .mem = m->obj.real, .q = q};
    m->streamed = true;
    m->stop_lo = m->stop_hi = 0;
    *bytes += m->size;
    return 0;
}

/* A chunk in its pinned memory goes to the proxy's buffer: the remote
 * backend has the bytes in the ring (or on the socket) when it returns. */
static int stream_sink(void *arg, size_t off, const void *p, size_t len)
{
    struct streamed *d = arg;
    cl_int err = VENDOR(d->rq)->clEnqueueWriteBuffer(
        d->rq, d->m->obj.real, CL_FALSE, off, len, p, 0, NULL, NULL);

    return err == CL_SUCCESS ? 0 : -EIO;
}

/* The streamed buffers forgotten and their vendor queues released (when
 * the gate opens, whatever became of the switch). */
static void streamed_forget(struct pass *ps)
{
    for (size_t i = 0; i < ps->n_streamed; i++)
        ps->streamed[i].m->streamed = false;
    free(ps->streamed);
    ps->streamed = NULL;
    ps->n_streamed = 0;
    helper_queues_release(ps->sq, &ps->n_sq);
}

/* A helper queue of this pass for CTX, for map.c. */
static cl_command_queue pass_queue(struct shim_context *ctx, void *arg)
{
    struct pass *ps = arg;
    cl_command_queue q = NULL;

    return helper_queue(ps->hq, &ps->n_hq, 16, ctx, &q) == 0 ? q : NULL;
}

/* With user events pending, a queue may hold commands that wait on them,
 * which clFinish would wait for forever: a marker on each queue tells
 * whether it drains (within USER_EVENT_WAIT_MS).  0, or -EBUSY when a
 * command waits on a pending user event (the switch is refused, nothing
 * changed). */
#define USER_EVENT_WAIT_MS 200
static int queues_drain(void)
{
    cl_event marks[64];
    size_t n = 0;
    int rc = 0;

    for (struct shim_obj *o = shim_store_first(); o && n < 64; o = o->next)
        if (o->kind == SHIM_QUEUE && o->real &&
            VENDOR(o->real)->clEnqueueMarkerWithWaitList(
                o->real, 0, NULL, &marks[n]) == CL_SUCCESS) {
            VENDOR(o->real)->clFlush(o->real);
            n++;
        }
    double until = shim_now() + USER_EVENT_WAIT_MS / 1e3;
    for (size_t i = 0; i < n; i++) {
        cl_int st = CL_QUEUED;
        while (VENDOR(marks[i])->clGetEventInfo(
                   marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st),
                   &st, NULL) == CL_SUCCESS &&
               st > CL_COMPLETE && shim_now() < until)
            usleep(1000);
        if (st > CL_COMPLETE) {
            LOG_WARN("re-home: a command waits on a user event the program "
                     "has not set; refused, nothing changed");
            rc = -EBUSY;
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        VENDOR(marks[i])->clReleaseEvent(marks[i]);
    return rc;
}

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
    if (from == &shim_remote_ops && !shim_remote_alive()) {
        SWITCH_FAIL("the connection to the proxy is lost; the "
                  "program's data there cannot be brought back");
        return -ENOTCONN;
    }
    bool pending_user = false;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        pending_user |= pending_user_event(o);
    if (pending_user && (rc = queues_drain()) < 0)
        return rc;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->kind == SHIM_QUEUE && o->real) {
            cl_int err = VENDOR(o->real)->clFinish(o->real);
            if (err != CL_SUCCESS) {
                SWITCH_FAIL("finishing a queue of the program on %s "
                          "failed: %d", from->name, err);
                return -EIO;
            }
        }
    while (atomic_load(&shim_event_callbacks_pending) > 0) {
        /* A callback on a pending user event runs only once it is set. */
        if (pending_user &&
            shim_now() - ts > USER_EVENT_WAIT_MS / 1e3) {
            LOG_WARN("re-home: %ld event callback(s) wait, maybe on a user "
                     "event the program has not set; refused",
                     atomic_load(&shim_event_callbacks_pending));
            return -EBUSY;
        }
        if (shim_now() - ts > shim_config.rehome_timeout_ms / 1e3) {
            SWITCH_FAIL("%ld event callback(s) never ran; giving up",
                      atomic_load(&shim_event_callbacks_pending));
            return -ETIMEDOUT;
        }
        sched_yield();
    }
    shim_event_drain_deferred();
    t->finish = shim_now() - ts;
    if ((rc = shim_fault_at("finish")) < 0)
        return rc;
    /* Maps the program keeps across the switch: the vendor's side ends
     * here, the program's pointer stays (map.c). */
    if ((rc = shim_maps_carry(pass_queue, ps)) < 0) {
        helper_queues_release(ps->hq, &ps->n_hq);
        return rc;
    }

    /* 2. Extract: every byte the device changed goes to RAM.  Nothing is
     * marked clean until every read has completed without error. */
    ts = shim_now();
    struct shim_remote_bulk ship0, ship1;
    shim_staging_stats_take(&t->extract_staged);  /* pre-copy's: dropped */
    shim_remote_bulk_stats(&ship0);
    size_t owed_before = from == &shim_remote_ops
                             ? shim_remote_reads_outstanding()
                             : 0;
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q;
            bool stream = streams(from, to, m);
            if (stream)
                rc = helper_queue(ps->sq, &ps->n_sq, 16, m->context, &q);
            else
                rc = helper_queue(ps->hq, &ps->n_hq, 16, m->context, &q);
            if (rc == 0)
                rc = shim_fault_at("extract");
            if (rc == 0)
                rc = stream ? stream_defer(ps, m, q, &t->bytes_extracted)
                            : extract(m, q, &t->bytes_extracted);
        }
    if (rc == 0)
        rc = shim_fault_at("extract-done");
    int src = shim_staging_finish();
    if (rc == 0 && src < 0) {
        SWITCH_FAIL("a staged read from %s failed", from->name);
        rc = src;
    }
    int frc = helper_queues_finish(ps->hq, &ps->n_hq, "reading the "
                                                      "buffers back");
    if (rc == 0)
        rc = frc;
    /* Other answers may be owed (a watch on a user event): only this
     * extract's reads must all have arrived. */
    if (rc == 0 && from == &shim_remote_ops &&
        shim_remote_reads_outstanding() > owed_before) {
        SWITCH_FAIL("%zu read(s) from the proxy never arrived",
                    shim_remote_reads_outstanding() - owed_before);
        rc = -EIO;
    }
    t->extract = shim_now() - ts;
    shim_staging_stats_take(&t->extract_staged);
    shim_remote_bulk_stats(&ship1);
    bulk_since(&t->extract_ship, &ship0, &ship1);
    if (from == &shim_remote_ops)
        t->transport = shim_remote_transport();
    if (rc < 0) {
        SWITCH_FAIL("extracting from %s failed (%d); the program "
                  "stays there", from->name, rc);
        return rc;
    }
    /* Streamed buffers stay dirty until their bytes are on the proxy. */
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (holds_bytes(o) && !((struct shim_mem *)o)->streamed)
            shim_mem_dirty_reset((struct shim_mem *)o);

    /* 3. Release every vendor object, children first: now, or after the
     * gate opens when leaving the native backend for the proxy. */
    ts = shim_now();
    if ((rc = shim_fault_at("release")) < 0)
        return rc;
    ps->background = to && to != from;
    /* The vendor goes now: its pinned chunks first. */
    if (!ps->background)
        shim_staging_drop_all();
    if (ps->background && (rc = background_collect(from)) < 0) {
        ps->background = false;
        background_forget();
        SWITCH_FAIL("no memory to set the old objects aside");
        return rc;
    }
    for (struct shim_obj *o = shim_store_last(); o && !ps->background;
         o = o->prev) {
        if (o->kind == SHIM_EVENT && !pending_user_event(o))
            shim_event_retire((void *)o);
        if (pending_user_event(o) && o->real)
            abandon_user_event(o->real);
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

/* The new side did not come up whole: what the switch made there is
 * released, every shadow gets back the handle it had before (platforms and
 * devices included), and the program goes on where its data is whole, as
 * if the switch had never been tried. */
static void stay_on(const struct shim_backend_ops *from,
                    const struct shim_backend_ops *to, struct pass *ps)
{
    helper_queues_release(ps->hq, &ps->n_hq);
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
    shim_staging_drop_all();
    shim_precopy_drop_targets();
    to->unload();
    background_forget();
    ps->background = false;
    shim.backend = from;
}

/* The proxy connection the devices were matched on (begin). */
static unsigned long checked_conn;

/* Steps 4b-6: load TO, rebuild every object on it, put every byte back. */
static int bring_back(const struct shim_backend_ops *to, struct pass *ps,
                      struct shim_rehome_times *t)
{
    double ts = shim_now();
    int rc;

    shim.backend = to;
    rc = to->load();
    /* The proxy's connection was made again since the devices were
     * matched (it died meanwhile): the plan names handles that are gone,
     * so the binding matches afresh. */
    if (rc == 0 && to == &shim_remote_ops &&
        shim_remote_generation() != checked_conn) {
        struct shim_plan stale_plan;
        if (shim_plan_take(to, &stale_plan))
            shim_plan_free(&stale_plan);
    }
    if (rc == 0)
        rc = shim_platforms_bind();
    t->load = shim_now() - ts;
    if (rc < 0) {
        SWITCH_FAIL("%s did not come up (%d)", to->name, rc);
        return rc;
    }

    if ((rc = shim_fault_at("load")) < 0)
        return rc;

    /* 5. Rebuild in creation order, then set kernel arguments. */
    ts = shim_now();
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind != SHIM_PLATFORM) {
            shim_vendor_err = CL_SUCCESS;
            rc = shim_fault_at("rebuild");
            if (rc == 0 && to == &shim_remote_ops && o->ops->twins &&
                (o->real = twin_take(o)))
                continue;
            if (rc == 0 && (rc = realize(o)) < 0)
                SWITCH_FAIL("recreating a %s on %s failed (%d, "
                          "vendor %d)", o->ops->name, to->name,
                          rc, shim_vendor_err);
        }
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind == SHIM_KERNEL) {
            rc = shim_fault_at("args");
            if (rc == 0)
                rc = shim_kernel_reset_args((void *)o);
        }
    t->rebuild = shim_now() - ts;
    if (rc < 0) {
        SWITCH_FAIL("rebuilding objects on %s failed (%d)", to->name,
                  rc);
        return rc;
    }

    /* 6. Put every byte back; the switch is done only once every write
     * has completed without error. */
    ts = shim_now();
    struct shim_remote_bulk ship0, ship1;
    shim_staging_stats_take(&t->reinject_staged);
    shim_remote_bulk_stats(&ship0);
    size_t next_streamed = 0;    /* the extract noted them in this order */
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q;
            rc = helper_queue(ps->hq, &ps->n_hq, 16, m->context, &q);
            if (rc == 0)
                rc = shim_fault_at("reinject");
            if (rc < 0 || !m->streamed) {
                if (rc == 0)
                    rc = reinject(m, q, &t->bytes_reinjected);
                continue;
            }
            /* Streamed: vendor device -> pinned chunk -> the proxy, the
             * device's copy of a chunk while the previous one is handed
             * on (staging.c), the proxy copying them in meanwhile. */
            struct streamed *d = next_streamed < ps->n_streamed
                                     ? &ps->streamed[next_streamed++]
                                     : NULL;
            if (!d || d->m != m) {
                SWITCH_FAIL("the streamed buffers changed under the switch");
                rc = -EIO;
                break;
            }
            d->rq = q;
            t->bytes_reinjected += m->size;
            t->bytes_streamed += m->size;
            if (shim_staging_stream(d->q, d->ctx, d->mem, 0, m->size,
                                    stream_sink, d) < 0)
                rc = -EIO;
        }
    if (rc == 0 && next_streamed != ps->n_streamed) {
        SWITCH_FAIL("%zu streamed buffer(s) not sent",
                    ps->n_streamed - next_streamed);
        rc = -EIO;
    }
    if (rc == 0)
        rc = shim_fault_at("reinject-done");
    int src = shim_staging_finish();
    if (rc == 0 && src < 0) {
        SWITCH_FAIL("a staged write into %s failed", to->name);
        rc = src;
    }
    int frc = helper_queues_finish(ps->hq, &ps->n_hq,
                                   "writing the buffers back");
    if (rc == 0)
        rc = frc;
    /* Every streamed chunk went through the proxy's queue finished above:
     * the bytes are there, and the RAM copy does not hold them. */
    for (size_t i = 0; rc == 0 && i < ps->n_streamed; i++) {
        shim_mem_dirty_reset(ps->streamed[i].m);
        ps->streamed[i].m->shadow_valid = false;
    }
    t->reinject = shim_now() - ts;
    shim_staging_stats_take(&t->reinject_staged);
    shim_remote_bulk_stats(&ship1);
    bulk_since(&t->reinject_ship, &ship0, &ship1);
    if (to == &shim_remote_ops)
        t->transport = shim_remote_transport();
    if (rc < 0)
        SWITCH_FAIL("putting the bytes back on %s failed (%d)",
                  to->name, rc);
    return rc;
}

/* Releases whatever a failed bring_back made on TO and unloads it, so
 * that the next attempt starts from the state in RAM alone. */
static void undo_bring_back(const struct shim_backend_ops *to,
                            struct pass *ps)
{
    helper_queues_release(ps->hq, &ps->n_hq);
    for (struct shim_obj *o = shim_store_last(); o; o = o->prev) {
        if (o->kind != SHIM_PLATFORM)
            shim_real_release(o);
        o->real = NULL;
    }
    shim_staging_drop_all();
    shim_precopy_drop_targets();
    to->unload();
}

/* Opens the gate, then starts the background release, if any. */
static void reopen(struct pass *ps, struct shim_rehome_times *t, double t0)
{
    helper_queues_release(ps->hq, &ps->n_hq);
    streamed_forget(ps);
    shim_gate_open();
    t->total = shim_now() - t0;
    /* Unpinning is not stoppage, but comes before the old vendor goes. */
    shim_staging_drop_all();
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
    fail_reason[0] = '\0';
    shim_precopy_forget();
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
    if (to != &shim_remote_ops)
        twins_drop();
    /* Binaries of programs built since the last switch, for a fast
     * rebuild: fetched while the program still runs. */
    shim_program_cache_prepare();
    /* Onto another backend: what does not depend on the program's state
     * is done while it still runs. */
    if (to && to != shim.backend && to->prewarm)
        to->prewarm();
    /* Onto another backend only where every device in use has a place
     * (devmatch.c): refused here, before anything changes. */
    int ok = to ? shim_devices_check(shim.backend, to) : 0;
    if (ok < 0) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return ok;
    }
    checked_conn = shim_remote_generation();
    /* Pinned chunks for the vendor's side of the copies, and the RAM
     * copies themselves, before the program stops (staging.c). */
    shim_staging_prepare_switch(shim.backend, to);
    shim_staging_prepare_shadows(shadow_needed, (void *)to);
    shim_fault_switch(shim.rehomes + 1);
    /* What the program's devices hold, copied while it still runs:
     * the stop reads only what it changed since (precopy.c). */
    shim_precopy(to);
    *t0 = shim_now();
    int rc = shim_gate_close(shim_config.rehome_timeout_ms);
    t->block = shim_now() - *t0;
    if (rc < 0) {
        shim_staging_drop_all();
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
    report(t, rc, from, to);
    return rc;
}

static int switch_to(const struct shim_backend_ops *to,
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
    if (rc < 0) {
        /* Nothing was released: the program runs on as it was. */
        LOG_ERROR("re-home: cannot switch from %s to %s (%d); staying on %s",
                  from->name, to->name, rc, from->name);
    } else if ((rc = bring_back(to, &ps, t)) < 0 && ps.background) {
        LOG_ERROR("re-home: cannot switch to %s (%d); staying on %s",
                  to->name, rc, from->name);
        stay_on(from, to, &ps);
    } else if (rc < 0) {
        LOG_ERROR("re-home: %s did not come back (%d); OpenCL calls will "
                  "fail", to->name, rc);
    }
    if (rc < 0 && (from == &shim_remote_ops || to == &shim_remote_ops) &&
        !shim_remote_alive() && fail_reason[0] &&
        !strstr(fail_reason, "proxy")) {
        size_t len = strlen(fail_reason);
        snprintf(fail_reason + len, sizeof(fail_reason) - len,
                 "; the proxy connection is gone (closed, or silent past "
                 "CRANE_PROXY_TIMEOUT_MS)");
    }
    /* The program's errors left on the proxy go with it. */
    if (rc == 0 && from == &shim_remote_ops && to != from)
        owe(shim_remote_hand_over_deferred());
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
    if (from == &shim_remote_ops)
        owe(shim_remote_hand_over_deferred());
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
    fail_reason[0] = '\0';
    shim_precopy_forget();
    if (!shim.parked) {
        pthread_mutex_unlock(&shim.rehome_lock);
        return -EINVAL;
    }
    shim_fault_switch(shim.rehomes + 1);
    double t0 = shim_now();
    const struct shim_backend_ops *to = shim.parked_from;
    int rc = bring_back(to, &ps, t);
    if (rc < 0) {
        /* The state in RAM is the only whole copy: keep it, and the
         * program's calls held, for a later resume to try again. */
        undo_bring_back(to, &ps);
        LOG_ERROR("re-home: %s did not come back (%d); the program stays "
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
enum move { MOVE_SWITCH, MOVE_PARK, MOVE_UNPARK };

static int own_calls(enum move what, const struct shim_backend_ops *to,
                     struct shim_rehome_times *t)
{
    bool was = shim_own_calls;
    int rc;

    shim_own_calls = true;
    if (what == MOVE_SWITCH)
        rc = switch_to(to, t);
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
