/* A switch's steps 4b-6: load the new backend, rebuild every object on
 * it, put every byte back (streamed buffers straight from the vendor);
 * and the undoing of a load that failed (rehome.c runs the switch). */
#include <errno.h>
#include <stdlib.h>

#include "rehome_int.h"

/* N bytes at LO of M's RAM copy written into its real object on Q. */
static int write_back(struct shim_mem *m, cl_command_queue q, size_t lo,
                      size_t n)
{
    cl_int err;
    int rc = shim_bytes_write(q, m->context->obj.real, m, m->obj.real, lo, n,
                              (char *)m->shadow + lo, &err);

    if (rc < 0 && err != CL_SUCCESS)
        SWITCH_FAIL("writing back %zu bytes of a %zu-byte object failed: %d",
                    n, m->size, err);
    return rc;
}

static int reinject(struct shim_mem *m, cl_command_queue q, size_t *bytes)
{
    /* Host-pointer objects were recreated over the program's own memory
     * (or the shim's, mem_own.c). */
    if (shim_mem_over_host(m))
        return 0;
    /* Under maps for writing whole: no one's bytes (rehome_out.c). */
    if (m->type == SHIM_BUFFER && shim_maps_cover(m))
        return 0;
    /* Adopted from a pre-copy: only what the stop read is missing there. */
    if (m->premade_used) {
        size_t lo = m->stop_lo, n = m->stop_hi - m->stop_lo;
        m->premade_used = false;
        if (n == 0)
            return 0;
        *bytes += n;
        return write_back(m, q, lo, n);
    }
    *bytes += m->size;
    if (m->type != SHIM_IMAGE)
        return write_back(m, q, 0, m->size);
    /* Its host access flags forbid writing it: through the device. */
    void *ctx = m->context->obj.real;
    if (shim_bytes_path(SHIM_MOVE_WRITE, ctx, m, m->obj.real, m->size, false,
                        false) == SHIM_PATH_DEVICE)
        return shim_hostcopy_write_image(q, ctx, m, m->obj.real,
                                         m->shadow) < 0 ? -EIO : 0;
    size_t origin[3] = {0, 0, 0}, region[3];
    shim_image_region(m, region);
    cl_int err = VENDOR(q)->clEnqueueWriteImage(q, m->obj.real, CL_FALSE,
                                                origin, region, 0, 0,
                                                m->shadow, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        SWITCH_FAIL("writing back a %zu-byte object failed: %d", m->size,
                    err);
        return -EIO;
    }
    return 0;
}

/* Its kind's row makes it again on the backend now in use (shim.h). */
static int realize(struct shim_obj *o)
{
    return o->ops->realize ? o->ops->realize(o) : 0;
}

static int stream_sink(void *arg, size_t off, const void *p, size_t len)
{
    struct streamed *d = arg;
    cl_int err = VENDOR(d->rq)->clEnqueueWriteBuffer(
        d->rq, d->m->obj.real, CL_FALSE, off, len, p, 0, NULL, NULL);

    return err == CL_SUCCESS ? 0 : -EIO;
}

/* The streamed buffers forgotten and their vendor queues released (when
 * the gate opens, whatever became of the switch). */
void shim_rehome_streamed_forget(struct pass *ps)
{
    for (size_t i = 0; i < ps->n_streamed; i++)
        ps->streamed[i].m->streamed = false;
    free(ps->streamed);
    ps->streamed = NULL;
    ps->n_streamed = 0;
    shim_helper_queues_release(ps->sq, &ps->n_sq);
}

/* The proxy connection the devices were matched on (begin). */
unsigned long shim_rehome_checked_conn;

/* Step 4b: TO loaded and its platforms bound. */
static int load(const struct shim_backend_ops *to,
                struct shim_rehome_times *t)
{
    double ts = shim_now();
    int rc;

    shim.backend = to;
    rc = to->load();
    /* The proxy's connection was made again since the devices were
     * matched (it died meanwhile): the plan names handles that are gone,
     * so the binding matches afresh. */
    if (rc == 0 && shim_is_proxy(to) &&
        shim_twin_generation() != shim_rehome_checked_conn) {
        struct shim_plan stale_plan;
        if (shim_plan_take(to, &stale_plan))
            shim_plan_free(&stale_plan);
    }
    if (rc == 0)
        rc = shim_fault_at("devices");
    if (rc == 0)
        rc = shim_platforms_bind();
    t->load = shim_now() - ts;
    if (rc < 0) {
        SWITCH_FAIL("%s did not come up (%d)", to->name, rc);
        return rc;
    }
    return shim_fault_at("load");
}

/* Step 5 for one object O: made again on TO (or its twin adopted). */
static int rebuild_one(const struct shim_backend_ops *to, struct shim_obj *o,
                       struct shim_rehome_times *t)
{
    int rc;

    shim_vendor_err = CL_SUCCESS;
    rc = shim_fault_at("rebuild");
    /* The first objects a reload makes, by name (tests/fault). */
    if (rc == 0 && o->kind == SHIM_CONTEXT)
        rc = shim_fault_at("rebuild-context");
    if (rc == 0 && o->kind == SHIM_QUEUE)
        rc = shim_fault_at("rebuild-queue");
    if (rc == 0 && shim_is_proxy(to) && o->ops->twins &&
        (o->real = shim_twin_take(o))) {
        t->twins++;
        return 0;
    }
    double tr = shim_now();
    if (rc == 0 && (rc = realize(o)) < 0)
        SWITCH_FAIL("recreating a %s on %s failed (%d, vendor %d)",
                    o->ops->name, to->name, rc, shim_vendor_err);
    if (shim_now() - tr > 1e-4)
        CRN_DEBUG("re-home: recreating a %s on %s took %.3f ms",
                  o->ops->name, to->name, (shim_now() - tr) * 1e3);
    return rc;
}

/* Step 5: rebuild in creation order, then set kernel arguments. */
static int rebuild(const struct shim_backend_ops *to,
                   struct shim_rehome_times *t)
{
    double ts = shim_now();
    unsigned kept, compiled;   /* programs' counts since: zeroed */
    int rc = 0;

    shim_program_cache_counts_take(&kept, &compiled);
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind != SHIM_PLATFORM)
            rc = rebuild_one(to, o, t);
    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (o->kind == SHIM_KERNEL) {
            rc = shim_fault_at("args");
            if (rc == 0)
                rc = shim_kernel_reset_args((void *)o);
        }
    t->rebuild = shim_now() - ts;
    shim_program_cache_counts_take(&t->programs_kept, &t->programs_compiled);
    if (rc < 0)
        SWITCH_FAIL("rebuilding objects on %s failed (%d)", to->name, rc);
    return rc;
}

/* Step 6 for a streamed buffer D (its new object M, TO's queue Q): by the
 * path the chooser picked when it was noted (rehome_out.c): back from the
 * proxy through the shared area, out to it through the shared area pinned
 * for the vendor or, where that has no room, pinned chunks. */
static int reinject_streamed(const struct shim_backend_ops *to,
                             struct streamed *d, struct shim_mem *m,
                             cl_command_queue q, struct shim_rehome_times *t)
{
    int rc;

    d->rq = q;
    /* A pre-copied buffer's range: the rest is in the buffer made ahead,
     * if the rebuild adopted it (nothing to write), else written whole
     * from the RAM copy first, the range over it. */
    if ((d->off != 0 || d->len != m->size) &&
        (rc = reinject(m, q, &t->bytes_reinjected)) < 0)
        return rc;
    t->bytes_reinjected += d->len;
    t->bytes_streamed += d->len;
    /* Back from the proxy: proxy -> ring 1 -> this device, done when it
     * returns (ringstream.c). */
    if (shim_is_vendor(to)) {
        if (shim_ringstream_back(d->q, d->mem, d->off, d->len, q,
                                 m->obj.real) < 0) {
            SWITCH_FAIL("streaming %zu bytes of a buffer back from the "
                        "proxy failed", d->len);
            return -EIO;
        }
        return 0;
    }
    /* Out through the shared area pinned for the vendor: device -> ring 0
     * -> the proxy, no CPU copy; else pinned chunks. */
    int out = shim_ringstream_out(d->q, d->ctx, d->mem, d->off, d->len, q,
                                  m->obj.real);
    if (out < 0 && out != -EAGAIN) {
        SWITCH_FAIL("streaming %zu bytes of a buffer to the proxy through "
                    "the shared area failed", d->len);
        return -EIO;
    }
    if (out != -EAGAIN)
        return 0;
    return shim_staging_stream(d->q, d->ctx, d->mem, d->off, d->len,
                               stream_sink, d) < 0 ? -EIO : 0;
}

/* Step 6's writes: every buffer's bytes handed on (streamed ones in the
 * order the extract noted them). */
static int reinject_all(const struct shim_backend_ops *to, struct pass *ps,
                        struct shim_rehome_times *t)
{
    size_t next_streamed = 0;
    int rc = 0;

    for (struct shim_obj *o = shim_store_first(); o && rc == 0; o = o->next)
        if (shim_mem_holds_bytes(o)) {
            struct shim_mem *m = (void *)o;
            cl_command_queue q;
            rc = shim_helper_queue(ps->hq, &ps->n_hq, 16, m->context, &q);
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
                return -EIO;
            }
            rc = reinject_streamed(to, d, m, q, t);
        }
    if (rc == 0 && next_streamed != ps->n_streamed) {
        SWITCH_FAIL("%zu streamed buffer(s) not sent",
                    ps->n_streamed - next_streamed);
        rc = -EIO;
    }
    return rc;
}

/* Step 6: put every byte back; the switch is done only once every write
 * has completed without error. */
static int put_back(const struct shim_backend_ops *to, struct pass *ps,
                    struct shim_rehome_times *t)
{
    double ts = shim_now();
    struct shim_bulk ship0, ship1;

    shim_staging_stats_take(&t->reinject_staged);
    shim_ring_stats_take(&t->ring);
    shim_backend_bulk_stats(shim_proxy_backend(), &ship0);
    int rc = reinject_all(to, ps, t);
    if (rc == 0)
        rc = shim_fault_at("reinject-done");
    double tw = shim_now();
    int src = shim_staging_finish();
    double tq = shim_now();
    if (rc == 0 && src < 0) {
        SWITCH_FAIL("a staged write into %s failed", to->name);
        rc = src;
    }
    int frc = shim_helper_queues_finish(ps->hq, &ps->n_hq,
                                        "writing the buffers back");
    if (rc == 0)
        rc = frc;
    CRN_DEBUG("re-home: reinject handed on every byte in %.3f ms, then "
              "waited %.3f ms for staged writes and %.3f ms for the queues",
              (tw - ts) * 1e3, (tq - tw) * 1e3, (shim_now() - tq) * 1e3);
    /* Every streamed chunk went through the proxy's queue finished above:
     * the bytes are there, and the RAM copy does not hold them. */
    for (size_t i = 0; rc == 0 && i < ps->n_streamed; i++) {
        shim_mem_dirty_reset(ps->streamed[i].m);
        ps->streamed[i].m->shadow_valid = false;
    }
    t->reinject = shim_now() - ts;
    shim_staging_stats_take(&t->reinject_staged);
    shim_ring_stats_take(&t->ring);
    shim_backend_bulk_stats(shim_proxy_backend(), &ship1);
    shim_rehome_bulk_since(&t->reinject_ship, &ship0, &ship1);
    if (shim_is_proxy(to))
        t->transport = shim_backend_transport(to);
    if (rc < 0)
        SWITCH_FAIL("putting the bytes back on %s failed (%d)", to->name,
                    rc);
    return rc;
}

/* Steps 4b-6: load TO, rebuild every object on it, put every byte back. */
int shim_rehome_bring_back(const struct shim_backend_ops *to, struct pass *ps,
                           struct shim_rehome_times *t)
{
    int rc = load(to, t);

    if (rc == 0)
        rc = rebuild(to, t);
    if (rc == 0)
        rc = put_back(to, ps, t);
    return rc;
}

/* Releases whatever a failed bring_back made on TO and unloads it, so
 * that the next attempt starts from the state in RAM alone. */
void shim_rehome_undo_bring_back(const struct shim_backend_ops *to,
                                 struct pass *ps)
{
    shim_helper_queues_release(ps->hq, &ps->n_hq);
    for (struct shim_obj *o = shim_store_last(); o; o = o->prev) {
        if (o->kind != SHIM_PLATFORM)
            shim_real_release(o);
        o->real = NULL;
    }
    shim_copies_drop_all();
    shim_precopy_drop_targets();
    to->unload();
}
