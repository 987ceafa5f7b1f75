/* Pinned staging for a switch: bytes leave and enter the vendor's devices
 * through mapped CL_MEM_ALLOC_HOST_PTR chunks, in a pipeline.
 *
 * A vendor copies between a device and pageable memory (a malloc'd RAM
 * copy) through its own small pinned bounce buffers, at a fraction of what
 * the bus carries.  Here every vendor context that holds bytes gets
 * CRANE_STAGING_MB (32) of pinned chunks of STAGING_CHUNK bytes (at least
 * two; CRANE_STAGING_MB=0 turns staging off), mapped once, made
 * before the gate closes (shim_staging_prepare) and released after it opens
 * (shim_staging_drop_all), so that neither the pinning nor the unpinning is
 * stoppage.  A copy is cut into chunks that go round the slots: while the
 * device copies chunk i into (or out of) one slot, the CPU moves chunk i-1
 * between another slot and the RAM copy.
 *
 * Accounting (docs/fault.md): each chunk's copy has an event; a slot is
 * reused, and its bytes handed on, only once its event completed with
 * CL_COMPLETE.  A failed chunk makes shim_staging_finish() fail, and the
 * caller fails the switch before marking anything clean.  The copies go on
 * the switch's helper queue, so that its clFinish covers them as well.
 *
 * Only contexts of the native backend are staged (a proxy's memory is not
 * this process's to pin); any context without staging is copied directly.
 *
 * An object the host may not read or write (CL_MEM_HOST_*, hostcopy.c)
 * goes through the device as well: each slot then also has an unrestricted
 * device buffer of STAGING_CHUNK bytes (made at its first such use), and a
 * chunk is copied between the object and it on the device before (or
 * after) the slot's host copy, on the same in-order queue.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "proto/pcopy.h"
#include "proto/log.h"
#include "shim.h"

#define STAGING_CHUNK (8u << 20)
#define STAGING_SLOTS_MAX 128
#define STAGING_CONTEXTS 16

struct slot {
    cl_mem buf;
    cl_mem dev;                  /* unrestricted twin, for hostcopy.c */
    void *ptr;                   /* mapped, for the process's copies */
    cl_event ev;                 /* the copy in flight, NULL when idle */
    void *to;                    /* a read: where the bytes go once done */
    shim_staging_sink sink;      /* or a stream: whom they go to */
    void *sink_arg;
    size_t off;                  /* a stream: the chunk's place in it */
    size_t len;
};

struct staging {
    void *ctx;                   /* the vendor's context */
    cl_command_queue mapq;       /* maps and unmaps the slots */
    struct slot slots[STAGING_SLOTS_MAX];
    unsigned n_slots;
    unsigned next;
};

static struct staging table[STAGING_CONTEXTS];
static size_t n_table;
static int stream_err;           /* first failure since the last finish */
/* Where a stream's time went, for the re-home report (since the last
 * shim_staging_stats_take): waiting for the device's chunk copies, and
 * the CPU's copies between the chunks and the RAM copy. */
static struct shim_staging_stats stats;

static struct staging *find(void *ctx)
{
    for (size_t i = 0; i < n_table; i++)
        if (table[i].ctx == ctx)
            return &table[i];
    return NULL;
}

static void release(struct staging *s)
{
    for (unsigned i = 0; i < s->n_slots; i++) {
        struct slot *sl = &s->slots[i];
        if (sl->ev) {
            VENDOR(sl->ev)->clWaitForEvents(1, &sl->ev);
            VENDOR(sl->ev)->clReleaseEvent(sl->ev);
        }
        if (sl->buf && sl->ptr)
            VENDOR(s->mapq)->clEnqueueUnmapMemObject(s->mapq, sl->buf, sl->ptr,
                                                     0, NULL, NULL);
    }
    if (s->mapq)
        VENDOR(s->mapq)->clFinish(s->mapq);
    for (unsigned i = 0; i < s->n_slots; i++) {
        if (s->slots[i].buf)
            VENDOR(s->slots[i].buf)->clReleaseMemObject(s->slots[i].buf);
        if (s->slots[i].dev)
            VENDOR(s->slots[i].dev)->clReleaseMemObject(s->slots[i].dev);
    }
    if (s->mapq)
        VENDOR(s->mapq)->clReleaseCommandQueue(s->mapq);
    memset(s, 0, sizeof(*s));
}

/* Pinned chunks for the vendor context CTX, while the program still runs:
 * 0, or -errno (logged; the switch then copies that context directly). */
int shim_staging_prepare(void *ctx)
{
    cl_device_id dev = NULL;
    cl_int err;

    if (!ctx || find(ctx))
        return 0;
    if (n_table == STAGING_CONTEXTS)
        return -E2BIG;
    if (VENDOR(ctx)->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(dev),
                                      &dev, NULL) != CL_SUCCESS ||
        !dev)
        return -EIO;
    struct staging *s = &table[n_table];
    memset(s, 0, sizeof(*s));
    s->ctx = ctx;
    s->mapq = VENDOR(ctx)->clCreateCommandQueue(ctx, dev, 0, &err);
    unsigned want = shim_config.staging_mb / (STAGING_CHUNK >> 20);
    if (want < 2)
        want = 2;  /* one chunk moves while the other is copied */
    if (want > STAGING_SLOTS_MAX)
        want = STAGING_SLOTS_MAX;
    for (unsigned i = 0; s->mapq && i < want; i++) {
        struct slot *sl = &s->slots[i];
        s->n_slots = i + 1;
        sl->buf = VENDOR(ctx)->clCreateBuffer(
            ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, STAGING_CHUNK,
            NULL, &err);
        if (sl->buf)
            sl->ptr = VENDOR(s->mapq)->clEnqueueMapBuffer(
                s->mapq, sl->buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                STAGING_CHUNK, 0, NULL, NULL, &err);
        if (!sl->ptr)
            break;
    }
    if (!s->mapq || !s->slots[want - 1].ptr) {
        CRN_WARN("staging: no pinned chunks (%d); this context's bytes are "
                 "copied directly", err);
        release(s);
        return -ENOMEM;
    }
    n_table++;
    return 0;
}

/* Whether context C has a buffer whose bytes a switch copies through the
 * shim's RAM copy (a root buffer not over the program's memory). */
static bool stages_bytes(const struct shim_context *c)
{
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        const struct shim_mem *m = (const void *)o;
        if (o->kind == SHIM_MEM && m->context == c && !m->parent &&
            m->type == SHIM_BUFFER && !shim_mem_over_host(m))
            return true;
    }
    return false;
}

/* Before the gate closes on a switch from FROM to TO: chunks for every
 * vendor context the switch will copy out of (FROM native: the contexts
 * the program uses) or into (TO native: those prewarm.c made ahead). */
void shim_staging_prepare_switch(const struct shim_backend_ops *from,
                                 const struct shim_backend_ops *to)
{
    double t0 = shim_now();
    size_t before = n_table;

    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        struct shim_context *c = (void *)o;
        if (o->kind != SHIM_CONTEXT || !stages_bytes(c))
            continue;
        /* Between the vendor and a proxy on this host: the shared area
         * itself, pinned (ringstream.c); the chunks stay the fallback. */
        if (shim_is_vendor(from) && shim_is_proxy(to) && o->real)
            shim_ringstream_prepare(o->real);
        if (shim_is_proxy(from) && shim_is_vendor(to) && c->premade)
            shim_ringstream_prepare(c->premade);
        if (shim_config.staging_mb == 0)
            continue;
        if (shim_is_vendor(from) && o->real)
            shim_staging_prepare(o->real);
        if (shim_is_vendor(to) && to != from && c->premade)
            shim_staging_prepare(c->premade);
    }
    shim_store_unlock();
    if (n_table > before)
        CRN_INFO("staging: %zu context(s) given %u pinned %u MiB chunks in "
                 "%.3f ms, before the gate closes",
                 n_table - before, table[before].n_slots, STAGING_CHUNK >> 20,
                 (shim_now() - t0) * 1e3);
}

/* LEN bytes of RAM with every page already faulted in, or NULL. */
static void *populated(size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = malloc(len);

    if (!p || page <= 0)
        return p;
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(page - 1);
#ifdef MADV_POPULATE_WRITE
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0)
        return p;
#endif
    for (size_t at = 0; at < len; at += (size_t)page)
        ((volatile char *)p)[at] = 0;
    return p;
}

/*
 * The RAM copies a switch's extraction will fill, made before the gate
 * closes, every page faulted in: a first switch otherwise takes a page
 * fault per 4 KiB while the program is stopped (about a quarter of a
 * second per GiB), whatever the copies' speed.  Only objects without one
 * yet, and for which NEEDED(M, ARG) says the switch will fill one (a
 * buffer it streams needs none); each is held by a child reference while
 * it is made.
 */
void shim_staging_prepare_shadows(bool (*needed)(const struct shim_mem *m,
                                                 void *arg),
                                  void *arg)
{
    struct shim_mem **list = NULL;
    size_t n = 0, cap = 0, bytes = 0;
    double t0 = shim_now();

    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        struct shim_mem *m = (void *)o;
        if (o->kind != SHIM_MEM || m->parent || m->shadow ||
            (m->type != SHIM_BUFFER && m->type != SHIM_IMAGE) ||
            shim_mem_over_host(m) || (needed && !needed(m, arg)))
            continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 64;
            struct shim_mem **l = realloc(list, c * sizeof(*l));
            if (!l)
                break;
            list = l;
            cap = c;
        }
        shim_obj_retain_child(&m->obj);
        list[n++] = m;
    }
    shim_store_unlock();
    for (size_t i = 0; i < n; i++) {
        struct shim_mem *m = list[i];
        /* Only the switch (holding the re-home lock) sets a shadow. */
        if (!m->shadow && (m->shadow = populated(m->size)))
            bytes += m->size;
        shim_obj_release_child(&m->obj);
    }
    free(list);
    if (bytes)
        CRN_INFO("staging: %zu bytes of RAM copies made and faulted in, in "
                 "%.3f ms, before the gate closes",
                 bytes, (shim_now() - t0) * 1e3);
}

/* Every context's chunks unmapped and released, and the shared area's
 * wraps (after the gate opens, or before the vendor they belong to is
 * unloaded, or the area), through
 * shim_copies_drop_all (hostcopy.c), which drops its bounce buffers
 * first. */
void shim_staging_drop_all(void)
{
    shim_ringstream_drop_all();
    for (size_t i = 0; i < n_table; i++)
        release(&table[i]);
    n_table = 0;
    stream_err = 0;
}

bool shim_staging_has(void *ctx)
{
    return ctx && find(ctx) != NULL;
}

/* Waits for the slot's copy; a read's bytes go to their place.  A failed
 * copy is remembered for shim_staging_finish(); its bytes are dropped. */
static void retire(struct slot *sl)
{
    cl_int st = CL_QUEUED;

    if (!sl->ev)
        return;
    double t0 = shim_now();
    cl_int err = VENDOR(sl->ev)->clWaitForEvents(1, &sl->ev);
    double t1 = shim_now();
    stats.device_s += t1 - t0;
    if (err == CL_SUCCESS)
        err = VENDOR(sl->ev)->clGetEventInfo(
            sl->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    VENDOR(sl->ev)->clReleaseEvent(sl->ev);
    sl->ev = NULL;
    if (err != CL_SUCCESS || st != CL_COMPLETE) {
        CRN_ERROR("staging: a %zu-byte chunk's copy failed (%d, status %d)",
                  sl->len, err, st);
        if (!stream_err)
            stream_err = -EIO;
    } else if (sl->to) {
        crn_pcopy_from_pinned(sl->to, sl->ptr, sl->len);
        stats.copy_s += shim_now() - t1;
        stats.bytes += sl->len;
    } else if (sl->sink && !stream_err) {
        int rc = sl->sink(sl->sink_arg, sl->off, sl->ptr, sl->len);
        stats.copy_s += shim_now() - t1;
        stats.bytes += sl->len;
        if (rc < 0) {
            CRN_ERROR("staging: handing on a %zu-byte chunk at %zu failed "
                      "(%d)", sl->len, sl->off, rc);
            stream_err = rc;
        }
    }
    sl->to = NULL;
    sl->sink = NULL;
}

static struct slot *take_slot(struct staging *s)
{
    struct slot *sl = &s->slots[s->next++ % s->n_slots];

    retire(sl);
    return sl;
}

/* The slot's unrestricted device buffer, made at its first use: NULL
 * (logged, the stream failed) if the vendor has none to give. */
static cl_mem slot_dev(struct staging *s, struct slot *sl)
{
    cl_int err = CL_SUCCESS;

    if (!sl->dev)
        sl->dev = VENDOR(s->ctx)->clCreateBuffer(
            s->ctx, CL_MEM_READ_WRITE, STAGING_CHUNK, NULL, &err);
    if (!sl->dev) {
        CRN_ERROR("staging: no %u-byte device buffer for a restricted "
                  "object's copy: %d", STAGING_CHUNK, err);
        stream_err = -ENOMEM;
    }
    return sl->dev;
}

/* Queues the read of [off, off+len) of the vendor buffer MEM on Q (a queue
 * of context CTX) into DST, chunk by chunk; with VIA_DEVICE each chunk is
 * first copied on the device into the slot's unrestricted buffer (MEM's
 * host access flags forbid reading it).  DST holds the bytes only after
 * shim_staging_finish() returned 0.  0, or -errno (nothing more queued). */
static int stream_read(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                       size_t len, void *dst, bool via_device)
{
    struct staging *s = find(ctx);

    if (!s)
        return -ENOENT;
    while (len > 0 && !stream_err) {
        size_t n = len < STAGING_CHUNK ? len : STAGING_CHUNK;
        struct slot *sl = take_slot(s);
        cl_mem from = mem;
        size_t at = off;
        cl_int err = CL_SUCCESS;
        if (via_device) {
            if (!(from = slot_dev(s, sl)))
                break;
            at = 0;
            err = VENDOR(q)->clEnqueueCopyBuffer(q, mem, from, off, 0, n, 0,
                                                 NULL, NULL);
        }
        if (err == CL_SUCCESS)
            err = VENDOR(q)->clEnqueueReadBuffer(q, from, CL_FALSE, at, n,
                                                 sl->ptr, 0, NULL, &sl->ev);
        if (err != CL_SUCCESS) {
            CRN_ERROR("staging: reading %zu bytes at %zu failed: %d", n, off,
                      err);
            sl->ev = NULL;
            stream_err = -EIO;
            break;
        }
        VENDOR(q)->clFlush(q);
        sl->to = dst;
        sl->len = n;
        dst = (char *)dst + n;
        off += n;
        len -= n;
    }
    return stream_err;
}

int shim_staging_read(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                      size_t len, void *dst)
{
    return stream_read(q, ctx, mem, off, len, dst, false);
}

int shim_staging_read_via_device(cl_command_queue q, void *ctx, cl_mem mem,
                                 size_t off, size_t len, void *dst)
{
    return stream_read(q, ctx, mem, off, len, dst, true);
}

/* Queues the read of [off, off+len) of the vendor buffer MEM on Q (a queue
 * of context CTX), chunk by chunk, each handed to SINK(ARG, offset, bytes,
 * length) straight from its pinned chunk once its copy completed (the
 * bytes are SINK's to copy before it returns; a sink that fails ends the
 * stream).  Every chunk went through SINK only once shim_staging_finish()
 * returned 0.  0, or -errno (nothing more queued). */
int shim_staging_stream(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                        size_t len, shim_staging_sink sink, void *arg)
{
    struct staging *s = find(ctx);

    if (!s)
        return -ENOENT;
    while (len > 0 && !stream_err) {
        size_t n = len < STAGING_CHUNK ? len : STAGING_CHUNK;
        struct slot *sl = take_slot(s);
        if (stream_err)
            break;  /* the chunk just handed on failed */
        cl_int err = VENDOR(q)->clEnqueueReadBuffer(q, mem, CL_FALSE, off, n,
                                                    sl->ptr, 0, NULL, &sl->ev);
        if (err != CL_SUCCESS) {
            CRN_ERROR("staging: reading %zu bytes at %zu failed: %d", n, off,
                      err);
            sl->ev = NULL;
            stream_err = -EIO;
            break;
        }
        VENDOR(q)->clFlush(q);
        sl->sink = sink;
        sl->sink_arg = arg;
        sl->off = off;
        sl->len = n;
        off += n;
        len -= n;
    }
    return stream_err;
}

/* Queues the write of LEN bytes from SRC into [off, off+len) of the vendor
 * buffer MEM on Q, chunk by chunk (with VIA_DEVICE, through the slot's
 * unrestricted buffer and a device copy): done once shim_staging_finish()
 * returned 0.  SRC may be reused as soon as this returns.  0, or -errno. */
static int stream_write(cl_command_queue q, void *ctx, cl_mem mem,
                        size_t off, size_t len, const void *src,
                        bool via_device)
{
    struct staging *s = find(ctx);

    if (!s)
        return -ENOENT;
    while (len > 0 && !stream_err) {
        size_t n = len < STAGING_CHUNK ? len : STAGING_CHUNK;
        struct slot *sl = take_slot(s);
        cl_mem to = via_device ? slot_dev(s, sl) : mem;
        cl_int err;
        if (!to)
            break;
        double t0 = shim_now();
        crn_pcopy(sl->ptr, src, n);
        stats.copy_s += shim_now() - t0;
        stats.bytes += n;
        if (via_device) {
            err = VENDOR(q)->clEnqueueWriteBuffer(q, to, CL_FALSE, 0, n,
                                                  sl->ptr, 0, NULL, NULL);
            if (err == CL_SUCCESS)
                err = VENDOR(q)->clEnqueueCopyBuffer(q, to, mem, 0, off, n, 0,
                                                     NULL, &sl->ev);
        } else {
            err = VENDOR(q)->clEnqueueWriteBuffer(q, mem, CL_FALSE, off, n,
                                                  sl->ptr, 0, NULL, &sl->ev);
        }
        if (err != CL_SUCCESS) {
            CRN_ERROR("staging: writing %zu bytes at %zu failed: %d", n, off,
                      err);
            sl->ev = NULL;
            stream_err = -EIO;
            break;
        }
        VENDOR(q)->clFlush(q);
        sl->to = NULL;
        sl->len = n;
        src = (const char *)src + n;
        off += n;
        len -= n;
    }
    return stream_err;
}

int shim_staging_write(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                       size_t len, const void *src)
{
    return stream_write(q, ctx, mem, off, len, src, false);
}

int shim_staging_write_via_device(cl_command_queue q, void *ctx, cl_mem mem,
                                  size_t off, size_t len, const void *src)
{
    return stream_write(q, ctx, mem, off, len, src, true);
}

/* Waits for every chunk in flight: 0 only when each completed (its bytes in
 * place), else -EIO.  Ready for the next stream either way. */
int shim_staging_finish(void)
{
    for (size_t i = 0; i < n_table; i++)
        for (unsigned k = 0; k < table[i].n_slots; k++)
            retire(&table[i].slots[k]);
    int rc = stream_err;
    stream_err = 0;
    return rc;
}

/* Where the staged copies' time went since the last call, then zeroed. */
void shim_staging_stats_take(struct shim_staging_stats *out)
{
    *out = stats;
    memset(&stats, 0, sizeof(stats));
}
