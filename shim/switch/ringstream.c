/* A switch's streamed buffers moved between the native device and a proxy
 * on this host through the shared area itself, which the shim pins for its
 * own vendor too: no CPU copy on either way.
 *
 * The proxy pins the area for its device (proxy-domain/ringpin.h); here
 * every native context a switch copies out of or into wraps the same
 * mapping in a CL_MEM_USE_HOST_PTR buffer (which NVIDIA pins, so that its
 * copies to and from any address in it run at the bus's speed), made
 * before the gate closes and released after it opens, with the pinned
 * chunks (shim_copies_drop_all).  CRANE_SHIM_PIN_RING=0, an area that is a
 * file (an ivshmem BAR no native device can reach) or a wrap the vendor
 * refuses: staging.c's pinned chunks and RAM copies, as before.
 *
 * Out (native -> proxy): each piece of ring 0 is held, the native device
 * reads the buffer's next piece into it, and once that copy completed with
 * CL_COMPLETE the piece is named to the proxy as a write, whose device
 * copies it out of its own pinned view; a few pieces in flight overlap the
 * two devices.  A failure stops handing pieces on; the switch then fails
 * before anything is marked clean (rehome_in.c).
 *
 * Back (proxy -> native): a blocking read of the proxy's buffer whose
 * pieces arrive in ring 1, each written by the native device straight
 * from there; a piece's room is freed only once its write completed.  The
 * switch commits only when the read ended with success and every write
 * completed; otherwise it fails and the program stays on the proxy, whose
 * objects are set aside untouched until the switch committed
 * (docs/fault.md). */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define WRAP_CONTEXTS 16
/* Pieces in flight: ring 0 holds at least four (its ring's piece);
 * on the way back the proxy's own pieces are a quarter of ring 1, and two
 * held leave it room for the next two. */
#define OUT_DEPTH 3
#define BACK_DEPTH 2

struct wrap {
    void *ctx;                   /* the vendor's context */
    cl_mem mem;                  /* the area wrapped, NULL if refused */
    void *base;                  /* the area it wraps */
    unsigned long gen;           /* which area that was */
};

static struct wrap wraps[WRAP_CONTEXTS];
static size_t n_wraps;
static struct shim_ring_stats stats;

/* The rings of the proxy side's backend, or NULL (backend.h). */
static const struct shim_ring_ops *ring(void)
{
    const struct shim_backend_ops *b = shim_proxy_backend();

    return b ? b->ring : NULL;
}

static bool ring_area(void **base, size_t *size, unsigned long *gen)
{
    return ring() && ring()->area(base, size, gen);
}

static struct wrap *find(void *ctx)
{
    for (size_t i = 0; i < n_wraps; i++)
        if (wraps[i].ctx == ctx)
            return &wraps[i];
    return NULL;
}

/* The area wrapped for CTX's vendor, while the program still runs: 0, or
 * -errno (the switch then copies that context's bytes as before). */
int shim_ringstream_prepare(void *ctx)
{
    void *base;
    size_t size;
    unsigned long gen;
    cl_int err = CL_SUCCESS;

    if (!shim_config.pin_ring || !ctx)
        return -ENOTSUP;
    if (find(ctx))
        return 0;
    if (!ring_area(&base, &size, &gen))
        return -ENOENT;
    if (n_wraps == WRAP_CONTEXTS)
        return -E2BIG;
    double t0 = shim_now();
    struct wrap *w = &wraps[n_wraps++];
    *w = (struct wrap){.ctx = ctx, .base = base, .gen = gen};
    w->mem = VENDOR(ctx)->clCreateBuffer(
        ctx, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, size, base, &err);
    if (!w->mem) {
        CRN_INFO("ringstream: the vendor did not wrap the %zu-byte shared "
                 "area (%d): a switch's bytes go through pinned chunks",
                 size, err);
        return -EIO;
    }
    CRN_INFO("ringstream: shared area of %zu bytes wrapped for the vendor "
             "in %.3f ms, before the gate closes",
             size, (shim_now() - t0) * 1e3);
    return 0;
}

bool shim_ringstream_has(void *ctx)
{
    struct wrap *w = ctx ? find(ctx) : NULL;
    void *base;
    size_t size;
    unsigned long gen;

    /* The area it wraps is still the connection's: a connection made
     * since has its own, maybe at the same address, and the vendor would
     * copy to the old one's pages. */
    return w && w->mem && ring_area(&base, &size, &gen) && base == w->base &&
           gen == w->gen;
}

void shim_ringstream_drop_all(void)
{
    for (size_t i = 0; i < n_wraps; i++)
        if (wraps[i].mem)
            VENDOR(wraps[i].mem)->clReleaseMemObject(wraps[i].mem);
    n_wraps = 0;
}

void shim_ring_stats_take(struct shim_ring_stats *out)
{
    *out = stats;
    memset(&stats, 0, sizeof(stats));
}

/* A device copy of a piece, and where the piece lies. */
struct piece {
    cl_event ev;
    uint64_t pos;                /* out: ring 0's; back: ring 1's end */
    size_t off, len;
};

/* Waits for P's copy: 0 only when it completed. */
static int wait_copy(struct piece *p)
{
    cl_int st = CL_QUEUED;
    double t0 = shim_now();
    cl_int err = VENDOR(p->ev)->clWaitForEvents(1, &p->ev);

    if (err == CL_SUCCESS)
        err = VENDOR(p->ev)->clGetEventInfo(
            p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    VENDOR(p->ev)->clReleaseEvent(p->ev);
    p->ev = NULL;
    stats.device_s += shim_now() - t0;
    if (err != CL_SUCCESS || st != CL_COMPLETE) {
        CRN_ERROR("ringstream: a %zu-byte piece's device copy failed (%d, "
                  "status %d)", p->len, err, st);
        return -EIO;
    }
    return 0;
}

/* --- out ---------------------------------------------------------------- */

struct out {
    cl_command_queue rq;
    cl_mem rmem;
    struct piece fifo[OUT_DEPTH];
    unsigned head, n;
};

/* The oldest piece named to the proxy once its copy completed. */
static int out_retire(struct out *o)
{
    struct piece *p = &o->fifo[o->head];
    int rc = wait_copy(p);

    o->head = (o->head + 1) % OUT_DEPTH;
    o->n--;
    if (rc == 0 &&
        ring()->write(o->rq, o->rmem, p->off, p->len, p->pos) != CL_SUCCESS) {
        CRN_ERROR("ringstream: naming a %zu-byte piece to the proxy failed",
                  p->len);
        rc = -EIO;
    }
    if (rc == 0)
        stats.bytes += p->len;
    return rc;
}

int shim_ringstream_out(cl_command_queue nq, void *nctx, cl_mem nmem,
                        size_t from, size_t len, cl_command_queue rq,
                        cl_mem rmem)
{
    struct out o = {.rq = rq, .rmem = rmem};
    size_t piece, off = from, size = from + len;
    int rc = 0;

    /* The area stays mapped until every copy into it is done; one given
     * up or made anew since the wrap: the caller's chunks instead. */
    if (!ring())
        return -EAGAIN;
    ring()->area_hold();
    if (!shim_ringstream_has(nctx) || !(piece = ring()->piece())) {
        ring()->area_unhold();
        return -EAGAIN;
    }
    while (off < size && rc == 0) {
        size_t n = size - off < piece ? size - off : piece;
        uint64_t pos;
        void *at;
        if (o.n == OUT_DEPTH && (rc = out_retire(&o)) < 0)
            break;
        if ((rc = shim_fault_at("piece")) < 0)
            break;
        /* No room: the pieces in flight go first, which frees it once the
         * proxy copied them; with none left, wait as long as the proxy
         * may be silent. */
        while ((rc = ring()->hold(n, 0, &pos, &at)) == -EAGAIN && o.n > 0)
            if ((rc = out_retire(&o)) < 0)
                break;
        if (rc == -EAGAIN)
            rc = ring()->hold(n, shim_config.proxy_timeout_ms, &pos, &at);
        if (rc < 0) {
            CRN_ERROR("ringstream: no room for %zu bytes in the shared area "
                      "(%d)", n, rc);
            break;
        }
        struct piece *p = &o.fifo[(o.head + o.n) % OUT_DEPTH];
        *p = (struct piece){.pos = pos, .off = off, .len = n};
        cl_int err = VENDOR(nq)->clEnqueueReadBuffer(nq, nmem, CL_FALSE, off,
                                                     n, at, 0, NULL, &p->ev);
        if (err != CL_SUCCESS) {
            CRN_ERROR("ringstream: reading %zu bytes at %zu failed: %d", n,
                      off, err);
            rc = -EIO;
            break;
        }
        VENDOR(nq)->clFlush(nq);
        o.n++;
        off += n;
    }
    while (o.n > 0) {
        if (rc == 0) {
            rc = out_retire(&o);
            continue;
        }
        /* Failed: nothing more is named, but no copy may still run into
         * the ring once the switch goes on. */
        wait_copy(&o.fifo[o.head]);
        o.head = (o.head + 1) % OUT_DEPTH;
        o.n--;
    }
    if (rc < 0)
        ring()->unhold();
    ring()->area_unhold();
    return rc;
}

/* --- back --------------------------------------------------------------- */

struct back {
    cl_command_queue nq;
    cl_mem nmem;
    size_t base;                 /* the read's offset in the buffer */
    struct piece fifo[BACK_DEPTH];
    unsigned head, n;
    int err;
};

/* The oldest piece's room freed once its write completed (freed even when
 * it failed: nothing reads it any more). */
static int back_retire(struct back *b)
{
    struct piece *p = &b->fifo[b->head];
    int rc = wait_copy(p);

    ring()->release(p->pos);
    b->head = (b->head + 1) % BACK_DEPTH;
    b->n--;
    if (rc == 0)
        stats.bytes += p->len;
    return rc;
}

static int back_drain(struct back *b)
{
    int rc = 0;

    while (b->n > 0) {
        int r = back_retire(b);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

/* A piece of the proxy's read (remote_ring.c, on the thread that reads the
 * answer): written by the native device where it lies. */
static int back_sink(void *arg, size_t off, const void *bytes, size_t len,
                     uint64_t ring_end)
{
    struct back *b = arg;
    int rc = 0;
    cl_int err;

    if (ring_end == 0) {
        /* On the stream: the bytes live only during this call. */
        err = VENDOR(b->nq)->clEnqueueWriteBuffer(
            b->nq, b->nmem, CL_TRUE, b->base + off, len, bytes, 0, NULL,
            NULL);
        if (err != CL_SUCCESS) {
            CRN_ERROR("ringstream: writing %zu bytes at %zu failed: %d", len,
                      b->base + off, err);
            return b->err = -EIO;
        }
        return 0;
    }
    /* The test hook, on the thread that reads the answer. */
    rc = shim_fault_at("piece");
    if (rc == 0 && b->n == BACK_DEPTH)
        rc = back_retire(b);
    struct piece *p = &b->fifo[(b->head + b->n) % BACK_DEPTH];
    *p = (struct piece){.pos = ring_end, .off = off, .len = len};
    err = rc < 0 ? CL_SUCCESS
                 : VENDOR(b->nq)->clEnqueueWriteBuffer(
                       b->nq, b->nmem, CL_FALSE, b->base + off, len, bytes, 0,
                       NULL, &p->ev);
    if (rc == 0 && err != CL_SUCCESS) {
        CRN_ERROR("ringstream: writing %zu bytes at %zu failed: %d", len,
                  b->base + off, err);
        rc = -EIO;
    }
    if (rc < 0) {
        /* The sink owns this piece's room: freed with the rest, in order,
         * once no copy reads any of it. */
        back_drain(b);
        ring()->release(ring_end);
        return b->err = rc;
    }
    VENDOR(b->nq)->clFlush(b->nq);
    b->n++;
    return 0;
}

int shim_ringstream_back(cl_command_queue rq, cl_mem rmem, size_t off,
                         size_t size, cl_command_queue nq, cl_mem nmem)
{
    struct back b = {.nq = nq, .nmem = nmem, .base = off};

    /* The area stays mapped until every copy out of it is done (without
     * one, the pieces come on the stream, each through a bounce). */
    if (!ring())
        return -ENOTCONN;
    ring()->area_hold();
    cl_int err = ring()->read_to_sink(rq, rmem, off, size, back_sink, &b);
    /* Pieces still in flight (the read ended, or failed) are waited for
     * and their room freed, in order. */
    int rc = back_drain(&b);
    ring()->area_unhold();

    if (err != CL_SUCCESS) {
        CRN_ERROR("ringstream: reading %zu bytes from the proxy failed: %d",
                  size, err);
        return -EIO;
    }
    return rc < 0 ? rc : b.err;
}
