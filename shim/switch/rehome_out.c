/* A switch's steps 1-3 with the gate closed: finish every queue, extract
 * every changed byte to RAM (or note a buffer to stream), release the old
 * side's objects (rehome.c runs the switch). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "rehome_int.h"

static int check_movable(void)
{
    int rc = 0;

    if (atomic_load(&shim_svm_live) > 0)
        return shim_switch_refuse(-ENOTSUP, "the program holds %ld SVM "
                                  "allocation(s), whose addresses cannot "
                                  "move", atomic_load(&shim_svm_live));
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o && !rc; o = o->next) {
        if (o->kind == SHIM_MEM) {
            const struct shim_mem *m = (const void *)o;
            if (m->type == SHIM_PIPE)
                rc = shim_switch_refuse(-ENOTSUP, "a pipe cannot be read "
                                        "from the host");
        } else if (o->kind == SHIM_KERNEL &&
                   ((const struct shim_kernel *)o)->uses_svm) {
            rc = shim_switch_refuse(-ENOTSUP, "a kernel has SVM pointers "
                                    "among its arguments, whose addresses "
                                    "cannot move");
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
void shim_image_host_steps(const struct shim_mem *m, size_t row,
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

/* Copies to RAM what the device changed since the last copy. */
static int extract(struct shim_mem *m, cl_command_queue q, size_t *bytes)
{
    cl_int err;

    /* Over memory the program took back (it may have freed it): nothing
     * can read these bytes again, and none may be written there. */
    if (shim_mem_host_returned(m))
        return 0;
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
        if (shim_bytes_path(SHIM_MOVE_READ, m->context->obj.real, m,
                            m->obj.real, m->size, false,
                            false) == SHIM_PATH_DEVICE) {
            size_t row_step, slice_step;
            shim_image_host_steps(m, row, slice, &row_step, &slice_step);
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
        /* Under maps for writing whole: those bytes are the program's (its
         * unmaps write them); the device's are no one's, and reading them
         * into the host memory under the maps would overwrite the
         * program's (reinject writes none either). */
        if (shim_maps_cover(m)) {
            CRN_DEBUG("re-home: a %zu-byte buffer under maps for writing "
                      "whole: none of its bytes read", m->size);
            return 0;
        }
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
        if (!shim_mem_over_host(m)) {
            if (!m->shadow && !(m->shadow = malloc(m->size))) {
                SWITCH_FAIL("no memory for a %zu-byte RAM copy",
                          m->size);
                return -ENOMEM;
            }
            base = m->shadow;
        }
        *bytes += hi - lo;
        /* Through the device where its host access flags forbid reading
         * it; into the shim's own RAM copy through pinned chunks where the
         * vendor's context has them (staging.c).  From the proxy a large
         * range is read blocking: the proxy then streams it chunk by chunk
         * (its pinned pair, the ring or the socket), its device copies,
         * its copies and ours overlapped, where a non-blocking read is
         * first gathered whole in its heap (proxy-domain/exec_mem.c).
         * Small ones stay non-blocking, so that many of them cost no round
         * trip each (bytepath.c). */
        int rc = shim_bytes_read(q, m->context->obj.real, m, m->obj.real, lo,
                                 hi - lo, (char *)base + lo,
                                 base == m->shadow,
                                 shim_is_proxy(shim.backend), &err);
        if (rc == 0 || err == CL_SUCCESS)
            return rc;
    }
    if (err != CL_SUCCESS) {
        SWITCH_FAIL("reading a %zu-byte object failed: %d", m->size,
                  err);
        return -EIO;
    }
    return 0;
}

/*
 * Whether a switch from FROM to TO streams M: between the vendor and the
 * proxy (the old side's objects then outlive the rebuild, so the bytes can
 * move once the new side's buffer exists), a whole buffer to move (no RAM
 * copy holding part of it), none of the cases that need the RAM copy (a
 * map carried, the program's own memory, a pre-copy target, host access
 * flags).  To the proxy: through the shared area pinned for the vendor
 * (ringstream.c) or pinned chunks (staging.c).  Back from the proxy: only
 * through the shared area pinned in the context made ahead for it, so that
 * no byte takes a CPU copy.  CRANE_STREAM_SWITCH=0: never.
 */
static enum shim_path stream_path(const struct shim_backend_ops *from,
                                  const struct shim_backend_ops *to,
                                  const struct shim_mem *m)
{
    void *ctx = m->context->obj.real;
    struct shim_path_ask a = {.len = m->size};

    if (!shim_config.stream_switch || m->type != SHIM_BUFFER ||
        shim_mem_over_host(m) || atomic_load(&m->maps) != 0 ||
        !m->obj.real)
        return SHIM_PATH_NONE;
    if (shim_is_vendor(from) && shim_is_proxy(to)) {
        a.move = SHIM_MOVE_STREAM_OUT;
        a.ring = shim_ringstream_has(ctx);
        a.staging = shim_staging_has(ctx);
        a.host_forbids = shim_mem_host_forbids(m, m->obj.real, CL_MAP_READ);
    } else if (shim_is_proxy(from) && shim_is_vendor(to)) {
        a.move = SHIM_MOVE_STREAM_BACK;
        a.ring = shim_ringstream_has(m->context->premade);
        a.host_forbids = (m->flags & (CL_MEM_HOST_NO_ACCESS |
                                      CL_MEM_HOST_READ_ONLY |
                                      CL_MEM_HOST_WRITE_ONLY)) != 0;
    } else {
        return SHIM_PATH_NONE;
    }
    return shim_path_choose(&a);
}

static bool streams_kind(const struct shim_backend_ops *from,
                         const struct shim_backend_ops *to,
                         const struct shim_mem *m)
{
    return stream_path(from, to, m) != SHIM_PATH_NONE;
}

static bool streams(const struct shim_backend_ops *from,
                    const struct shim_backend_ops *to,
                    const struct shim_mem *m)
{
    return !m->premade &&
           (!m->shadow_valid || (atomic_load(&m->dirty_lo) == 0 &&
                                 atomic_load(&m->dirty_hi) >= m->size)) &&
           streams_kind(from, to, m);
}

/*
 * Whether the stop streams what a pre-copied buffer M still lacks (its
 * dirty range) into the buffer made ahead on the target, rather than
 * through the RAM copy: only through the shared area pinned for the vendor
 * (no CPU copy at all), and only a RAM copy that holds the rest (should
 * the target not be adopted, the stop writes it whole, then the range).
 */
static bool streams_range(const struct shim_backend_ops *from,
                          const struct shim_backend_ops *to,
                          const struct shim_mem *m)
{
    return m->premade && m->shadow && m->shadow_valid &&
           stream_path(from, to, m) == SHIM_PATH_RING;
}

/* Before the gate closes: whether a switch to TO (ARG) fills M's RAM
 * copy, as far as can be told while the program runs (a buffer it will
 * stream needs none, unless pre-copy rounds fill it first; one that does
 * not stream after all gets its copy at the stop, unprepared). */
bool shim_rehome_shadow_needed(const struct shim_mem *m, void *arg)
{
    const struct shim_backend_ops *to = arg;

    return shim_config.precopy_rounds > 0 || !streams(shim.backend, to, m);
}

/* Step 2 for a streamed buffer: only noted, moved by bring_back; with
 * RANGE, only what the buffer made ahead lacks (nothing: nothing noted). */
static int stream_defer(struct pass *ps, struct shim_mem *m,
                        cl_command_queue q, bool range, size_t *bytes)
{
    size_t lo = 0, hi = m->size;

    if (range) {
        lo = atomic_load(&m->dirty_lo);
        hi = atomic_load(&m->dirty_hi);
        if (hi > m->size)
            hi = m->size;
        m->stop_lo = m->stop_hi = 0;
        if (lo >= hi)
            return 0;
    }
    struct streamed *l = realloc(ps->streamed,
                                 (ps->n_streamed + 1) * sizeof(*l));

    if (!l) {
        SWITCH_FAIL("no memory to note a streamed buffer");
        return -ENOMEM;
    }
    ps->streamed = l;
    l[ps->n_streamed++] = (struct streamed){
        .m = m, .ctx = m->context->obj.real, .mem = m->obj.real, .q = q,
        .off = lo, .len = hi - lo};
    m->streamed = true;
    m->stop_lo = m->stop_hi = 0;
    *bytes += hi - lo;
    return 0;
}

/* A chunk in its pinned memory goes to the proxy's buffer: the remote
 * backend has the bytes in the ring (or on the socket) when it returns. */
/* A helper queue of this pass for CTX, for map.c. */
static cl_command_queue pass_queue(struct shim_context *ctx, void *arg)
{
    struct pass *ps = arg;
    cl_command_queue q = NULL;

    return shim_helper_queue(ps->hq, &ps->n_hq, 16, ctx, &q) == 0 ? q : NULL;
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
            rc = shim_switch_refuse(-EBUSY, "a command waits on a user "
                                    "event the program has not set");
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        VENDOR(marks[i])->clReleaseEvent(marks[i]);
    return rc;
}

/* Step 1: finish every queue and let every pending callback run. */
static int finish_all(const struct shim_backend_ops *from,
                      struct shim_rehome_times *t)
{
    double ts = shim_now();
    int rc;

    if (!shim_backend_alive(from)) {
        SWITCH_FAIL("the connection to the proxy is lost; the "
                    "program's data there cannot be brought back");
        return -ENOTCONN;
    }
    bool pending_user = false;
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        pending_user |= shim_user_event_pending(o);
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
            shim_now() - ts > USER_EVENT_WAIT_MS / 1e3)
            return shim_switch_refuse(
                -EBUSY, "%ld event callback(s) wait, maybe on a user "
                "event the program has not set",
                atomic_load(&shim_event_callbacks_pending));
        if (shim_now() - ts > shim_config.rehome_timeout_ms / 1e3) {
            SWITCH_FAIL("%ld event callback(s) never ran; giving up",
                      atomic_load(&shim_event_callbacks_pending));
            return -ETIMEDOUT;
        }
        sched_yield();
    }
    shim_event_drain_deferred();
    t->finish = shim_now() - ts;
    return shim_fault_at("finish");
}

/* Step 2's reads: each buffer's changed bytes read, or noted to stream. */
static int extract_all(const struct shim_backend_ops *from,
                       const struct shim_backend_ops *to, struct pass *ps,
                       struct shim_rehome_times *t)
{
    int rc = 0;

    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (shim_mem_holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q;
            bool range = streams_range(from, to, m);
            bool stream = range || streams(from, to, m);
            if (stream)
                rc = shim_helper_queue(ps->sq, &ps->n_sq, 16, m->context, &q);
            else
                rc = shim_helper_queue(ps->hq, &ps->n_hq, 16, m->context, &q);
            if (rc == 0)
                rc = shim_fault_at("extract");
            if (rc == 0)
                rc = stream ? stream_defer(ps, m, q, range,
                                           &t->bytes_extracted)
                            : extract(m, q, &t->bytes_extracted);
        }
    return rc;
}

/* Step 2: every byte the device changed goes to RAM.  Nothing is marked
 * clean until every read has completed without error. */
static int extract_step(const struct shim_backend_ops *from,
                        const struct shim_backend_ops *to, struct pass *ps,
                        struct shim_rehome_times *t)
{
    double ts = shim_now();
    struct shim_bulk ship0, ship1;
    shim_staging_stats_take(&t->extract_staged);  /* pre-copy's: dropped */
    shim_backend_bulk_stats(shim_proxy_backend(), &ship0);
    size_t owed_before =
        shim_is_proxy(from) ? shim_backend_reads_outstanding(from) : 0;
    int rc = extract_all(from, to, ps, t);
    if (rc == 0)
        rc = shim_fault_at("extract-done");
    int src = shim_staging_finish();
    if (rc == 0 && src < 0) {
        SWITCH_FAIL("a staged read from %s failed", from->name);
        rc = src;
    }
    int frc = shim_helper_queues_finish(ps->hq, &ps->n_hq,
                                        "reading the buffers back");
    if (rc == 0)
        rc = frc;
    /* Other answers may be owed (a watch on a user event): only this
     * extract's reads must all have arrived. */
    if (rc == 0 && shim_is_proxy(from) &&
        shim_backend_reads_outstanding(from) > owed_before) {
        SWITCH_FAIL("%zu read(s) from the proxy never arrived",
                    shim_backend_reads_outstanding(from) - owed_before);
        rc = -EIO;
    }
    t->extract = shim_now() - ts;
    shim_staging_stats_take(&t->extract_staged);
    shim_backend_bulk_stats(shim_proxy_backend(), &ship1);
    shim_rehome_bulk_since(&t->extract_ship, &ship0, &ship1);
    if (shim_is_proxy(from))
        t->transport = shim_backend_transport(from);
    if (rc < 0) {
        SWITCH_FAIL("extracting from %s failed (%d); the program "
                  "stays there", from->name, rc);
        return rc;
    }
    /* Streamed buffers stay dirty until their bytes are on the proxy. */
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (shim_mem_holds_bytes(o) && !((struct shim_mem *)o)->streamed)
            shim_mem_dirty_reset((struct shim_mem *)o);
    return 0;
}

/* Steps 3 and 4a: release every vendor object, children first: now, or
 * after the gate opens when leaving the native backend for the proxy;
 * then unload the old backend, unless in the background. */
static int release_step(const struct shim_backend_ops *from,
                        const struct shim_backend_ops *to, struct pass *ps,
                        struct shim_rehome_times *t)
{
    double ts = shim_now();
    int rc;

    if ((rc = shim_fault_at("release")) < 0)
        return rc;
    ps->background = to && to != from;
    /* The vendor goes now: its pinned chunks first. */
    if (!ps->background)
        shim_copies_drop_all();
    if (ps->background && (rc = shim_rehome_bg_collect(from)) < 0) {
        ps->background = false;
        shim_rehome_bg_forget();
        SWITCH_FAIL("no memory to set the old objects aside");
        return rc;
    }
    for (struct shim_obj *o = shim_store_last(); o && !ps->background;
         o = o->prev) {
        if (o->kind == SHIM_EVENT && !shim_user_event_pending(o))
            shim_event_retire((void *)o);
        if (shim_user_event_pending(o) && o->real)
            shim_user_event_abandon(o->real);
        if (o->kind != SHIM_PLATFORM && o->real) {
            shim_real_release(o);
            o->real = NULL;
        }
    }
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        t->objects++;
    t->release = shim_now() - ts;
    ts = shim_now();
    if (!ps->background)
        from->unload();
    t->unload = shim_now() - ts;
    return 0;
}

/* Steps 1-3, with the gate closed: finish, extract, release (or hand the
 * real handles to the background when leaving the vendor for the proxy). */
int shim_rehome_take_out(const struct shim_backend_ops *from,
                         const struct shim_backend_ops *to, struct pass *ps,
                         struct shim_rehome_times *t)
{
    int rc;

    if ((rc = check_movable()) < 0 || (rc = finish_all(from, t)) < 0)
        return rc;
    /* Maps the program keeps across the switch: the vendor's side ends
     * here, the program's pointer stays (map.c). */
    if ((rc = shim_maps_carry(pass_queue, ps)) < 0) {
        shim_helper_queues_release(ps->hq, &ps->n_hq);
        return rc;
    }
    if ((rc = extract_step(from, to, ps, t)) < 0)
        return rc;
    return release_step(from, to, ps, t);
}
