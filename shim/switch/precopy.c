/* Pre-copy: before a switch stops the program, copy what its device holds
 * into the shim's RAM copies while it keeps running, round after round,
 * so that the stop has only the last round's dirty bytes left to read.
 *
 * Why a round's copy is right while the program keeps calling OpenCL
 * (this is the argument; the code below follows it step by step):
 *
 *  1. The fence.  The gate is closed for a moment: no call of the program
 *     is inside the shim (shim_gate_close waits for them to leave), so none
 *     is between marking a buffer dirty (dirty.c: at the enqueue of a
 *     launch, write, copy, fill or map for writing, before the vendor is
 *     called) and handing the command to the vendor.  Under it each
 *     buffer's dirty range is taken and emptied (the epoch moves, so every
 *     kernel launched later marks its writable arguments again), and a
 *     marker is queued on every queue of the program.  Then the gate opens.
 *  2. Every command the program enqueued before the fence precedes its
 *     queue's marker; every command enqueued after it marked its buffers
 *     dirty after the ranges were emptied.
 *  3. Once every marker completed, the taken ranges are read on the shim's
 *     own queues.  Those reads see at least every write enqueued before the
 *     fence.  A command enqueued after the fence may run at the same time
 *     and leave a read torn, but it marked its buffer dirty (2), so those
 *     bytes are read again: by the next round, or by the switch itself
 *     with the gate closed and the program's queues finished.
 *  4. Buffers the program has mapped keep their range (a host write
 *     through a map leaves no mark when it happens); images and buffers
 *     over the program's memory (CL_MEM_USE_HOST_PTR, read into the
 *     program's own memory) are left to the stop.
 *  5. A round that fails (a read that did not complete, a marker that
 *     never completed) gives every range it took back to the dirty state:
 *     the stop then copies it, as without pre-copy.  A buffer the program
 *     releases meanwhile is kept alive by the round (a child reference).
 *
 * Into the target.  Where the side the switch goes to already has the
 * program's context (the vendor's, made ahead by prewarm.c; the proxy's,
 * kept as a twin from the last switch back or made ahead now), each round also writes what
 * it read into a buffer made ahead there (shim_mem.premade): the whole RAM
 * copy the first time, then only the ranges read.  The RAM copy changes
 * only by rounds and by the stop's extraction, and each change is written
 * to the target after it, so once the stop wrote what it read
 * ([stop_lo, stop_hi), rehome.c) the target holds every byte.  A round
 * whose target writes failed releases every object made ahead: the stop
 * then writes everything, as without pre-copy.
 *
 * Rounds end when one found at most CRANE_PRECOPY_STOP_KB dirty bytes, when
 * one found no fewer than the one before (the program dirties as fast as
 * it is copied), or after CRANE_PRECOPY_ROUNDS; each round is in the
 * re-home report line (precopy_bytes, one figure per round).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define MAX_TAKEN 4096
#define MAX_QUEUES 64
#define MAX_CONTEXTS 16
#define REPORT_ROUNDS 16

struct taken {
    struct shim_mem *m;
    size_t lo, hi;
};

struct round {
    struct taken t[MAX_TAKEN];   /* every pre-copyable buffer */
    size_t n;
    const struct shim_backend_ops *to;
    struct {
        void *ctx;
        cl_command_queue q;
    } tq[MAX_CONTEXTS];          /* on the target */
    size_t n_tq;
    size_t target_bytes;
    cl_event marks[MAX_QUEUES];
    size_t n_marks;
    struct {
        void *ctx;
        cl_command_queue q;
    } hq[MAX_CONTEXTS];
    size_t n_hq;
    size_t bytes;
};

/* The last switch's rounds, for the report line. */
static struct {
    unsigned rounds;
    double seconds;
    size_t bytes[REPORT_ROUNDS];
    size_t target_bytes;
    bool target;
    char end[24];
} last;

/* Buffers whose dirty bytes a round copies (4). */
static bool precopyable(const struct shim_obj *o)
{
    const struct shim_mem *m = (const void *)o;

    return o->kind == SHIM_MEM && o->real && !m->parent &&
           m->type == SHIM_BUFFER && !shim_mem_over_host(m) &&
           atomic_load(&m->maps) == 0;
}

/* Step 1, under the gate: take the ranges, queue the markers. */
static int fence(struct round *r)
{
    int rc = 0;

    r->n = r->n_marks = r->bytes = 0;
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o && rc == 0;
         o = o->next) {
        if (o->kind == SHIM_QUEUE && o->real) {
            if (r->n_marks == MAX_QUEUES ||
                VENDOR(o->real)->clEnqueueMarkerWithWaitList(
                    o->real, 0, NULL, &r->marks[r->n_marks]) != CL_SUCCESS)
                rc = -E2BIG;
            else
                VENDOR(o->real)->clFlush(o->real);
            r->n_marks += rc == 0;
            continue;
        }
        if (!precopyable(o))
            continue;
        struct shim_mem *m = (void *)o;
        size_t lo = 0, hi = m->size;
        if (m->shadow_valid) {
            lo = atomic_load(&m->dirty_lo);
            hi = atomic_load(&m->dirty_hi);
            if (lo >= hi)
                lo = hi = 0;  /* kept for the target (nothing to read) */
        }
        if (r->n == MAX_TAKEN) {
            rc = -E2BIG;
            break;
        }
        if (!m->shadow && !(m->shadow = malloc(m->size))) {
            rc = -ENOMEM;
            break;
        }
        shim_obj_retain_child(&m->obj);
        r->t[r->n++] = (struct taken){m, lo, hi};
        r->bytes += hi - lo;
        if (lo < hi)
            shim_mem_dirty_reset(m);
    }
    shim_store_unlock();
    return rc;
}

/* Step 5: the taken ranges are dirty again; the children let go. */
static void give_back(struct round *r, bool copied)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!copied && r->t[i].lo < r->t[i].hi)
            shim_mem_dirty_range(r->t[i].m, r->t[i].lo, r->t[i].hi);
        shim_obj_release_child(&r->t[i].m->obj);
    }
    r->n = 0;
}

static void release_marks(struct round *r)
{
    for (size_t i = 0; i < r->n_marks; i++)
        VENDOR(r->marks[i])->clReleaseEvent(r->marks[i]);
    r->n_marks = 0;
}

/* Step 3's precondition: every marker complete, within the switch's
 * timeout (a queue held by a user event, or a very long kernel, ends the
 * pre-copy; the switch itself then decides). */
static int wait_marks(struct round *r)
{
    double until = shim_now() + shim_config.rehome_timeout_ms / 1e3;

    for (size_t i = 0; i < r->n_marks; i++) {
        cl_int st = CL_QUEUED;
        for (;;) {
            if (VENDOR(r->marks[i])->clGetEventInfo(
                    r->marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                    sizeof(st), &st, NULL) != CL_SUCCESS ||
                st <= CL_COMPLETE || shim_now() > until)
                break;
            usleep(200);
        }
        if (st != CL_COMPLETE)
            return -EIO;
    }
    return 0;
}

static cl_command_queue round_queue(struct round *r, struct shim_mem *m)
{
    void *ctx = m->context->obj.real;
    cl_int err;

    for (size_t i = 0; i < r->n_hq; i++)
        if (r->hq[i].ctx == ctx)
            return r->hq[i].q;
    if (r->n_hq == MAX_CONTEXTS)
        return NULL;
    cl_command_queue q = VENDOR(ctx)->clCreateCommandQueue(
        ctx, m->context->devices[0]->obj.real, 0, &err);
    if (q) {
        r->hq[r->n_hq].ctx = ctx;
        r->hq[r->n_hq++].q = q;
    }
    return q;
}

/* Step 3: the taken ranges into the RAM copies; 0 once all completed. */
static int copy(struct round *r)
{
    int rc = 0;

    for (size_t i = 0; i < r->n && rc == 0; i++) {
        struct shim_mem *m = r->t[i].m;
        size_t lo = r->t[i].lo, n = r->t[i].hi - lo;
        if (n == 0)
            continue;
        cl_command_queue q = round_queue(r, m);
        cl_int err;
        if (!q)
            rc = -EIO;
        else if ((rc = shim_fault_at("precopy")) < 0)
            break;
        else
            rc = shim_bytes_read(q, m->context->obj.real, m, m->obj.real, lo,
                                 n, (char *)m->shadow + lo, true, false,
                                 &err);
    }
    if (shim_staging_finish() < 0)
        rc = -EIO;
    for (size_t i = 0; i < r->n_hq; i++)
        if (VENDOR(r->hq[i].q)->clFinish(r->hq[i].q) != CL_SUCCESS)
            rc = -EIO;
    return rc;
}

static void round_queues_release(struct round *r)
{
    for (size_t i = 0; i < r->n_hq; i++)
        VENDOR(r->hq[i].q)->clReleaseCommandQueue(r->hq[i].q);
    r->n_hq = 0;
}

/* The context of C on the side TO, if it exists before the stop. */
static void *target_ctx(const struct shim_backend_ops *to,
                        struct shim_context *c)
{
    if (!to || to == shim.backend)
        return NULL;
    if (shim_is_vendor(to))
        return c->premade;
    if (shim_is_proxy(to)) {
        void *t = atomic_load(&c->obj.twin);
        return t && c->obj.twin_conn == shim_twin_generation() ? t : NULL;
    }
    return NULL;
}

static cl_command_queue target_queue(struct round *r, void *ctx)
{
    cl_device_id dev = NULL;
    cl_int err;

    for (size_t i = 0; i < r->n_tq; i++)
        if (r->tq[i].ctx == ctx)
            return r->tq[i].q;
    if (r->n_tq == MAX_CONTEXTS ||
        VENDOR(ctx)->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(dev),
                                      &dev, NULL) != CL_SUCCESS ||
        !dev)
        return NULL;
    cl_command_queue q = VENDOR(ctx)->clCreateCommandQueue(ctx, dev, 0, &err);
    if (q) {
        r->tq[r->n_tq].ctx = ctx;
        r->tq[r->n_tq++].q = q;
    }
    return q;
}

static int target_write(cl_command_queue q, void *ctx, struct shim_mem *m,
                        cl_mem mem, size_t off, size_t n, const void *src)
{
    cl_int err;

    /* Made with the program's host access flags (mem.c). */
    return shim_bytes_write(q, ctx, m, mem, off, n, src, &err);
}

/* After a round's reads: what they brought into the RAM copies, written
 * into the objects made ahead on the target (made now, whole, the first
 * time).  0 once every write completed. */
static int mirror(struct round *r)
{
    int rc = 0;

    for (size_t i = 0; i < r->n && rc == 0; i++) {
        struct shim_mem *m = r->t[i].m;
        void *ctx = target_ctx(r->to, m->context);
        size_t lo = r->t[i].lo, hi = r->t[i].hi;
        cl_int err = CL_SUCCESS;
        if (!ctx)
            continue;
        if (m->premade && m->premade_ctx != ctx) {
            void *pre = shim_precopy_take_target(m);
            if (pre)
                VENDOR(pre)->clReleaseMemObject(pre);
        }
        if (!m->premade) {
            m->premade = shim_mem_make_in(m, ctx, &err);
            if (!m->premade) {
                CRN_WARN("pre-copy: no %zu-byte buffer on the target (%d)",
                         m->size, err);
                rc = -EIO;
                break;
            }
            m->premade_ctx = ctx;
            m->premade_conn = shim_is_proxy(r->to) ? shim_twin_generation() : 0;
            lo = 0;
            hi = m->size;
        }
        if (lo >= hi)
            continue;
        cl_command_queue q = target_queue(r, ctx);
        if (!q)
            rc = -EIO;
        else if ((rc = shim_fault_at("precopy-target")) == 0)
            rc = target_write(q, ctx, m, m->premade, lo, hi - lo,
                              (char *)m->shadow + lo);
        r->target_bytes += hi - lo;
    }
    if (shim_staging_finish() < 0)
        rc = -EIO;
    for (size_t i = 0; i < r->n_tq; i++)
        if (VENDOR(r->tq[i].q)->clFinish(r->tq[i].q) != CL_SUCCESS)
            rc = -EIO;
    return rc;
}

void *shim_precopy_take_target(struct shim_mem *m)
{
    void *pre = m->premade;

    m->premade = NULL;
    /* A handle of a connection that is gone may name something else on
     * the one that replaced it: never used, never released. */
    if (pre && m->premade_conn && m->premade_conn != shim_twin_generation())
        return NULL;
    return pre;
}

/* Every object made ahead and not adopted by a switch, released: after a
 * failed target write, and after every switch (success or not). */
void shim_precopy_drop_targets(void)
{
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        struct shim_mem *m = (void *)o;
        void *pre = o->kind == SHIM_MEM ? shim_precopy_take_target(m) : NULL;
        if (pre)
            VENDOR(pre)->clReleaseMemObject(pre);
    }
    shim_store_unlock();
}

/* Rounds of copying while the program runs, before the switch's gate
 * closes for good (rehome.c, begin).  Never fails the switch: what a
 * round could not copy stays dirty for the stop. */
void shim_precopy(const struct shim_backend_ops *to)
{
    unsigned max = shim_config.precopy_rounds;
    size_t prev = SIZE_MAX;
    double t0 = shim_now();
    const char *end = "rounds";
    struct round *r;

    shim_precopy_forget();
    shim_precopy_drop_targets();
    if (max == 0 || !(r = calloc(1, sizeof(*r))))
        return;
    r->to = to;
    bool targets = true;
    /* The proxy gets the program's contexts now if it has none kept. */
    if (shim_is_proxy(to) && to != shim.backend)
        shim_prewarm_remote_contexts();
    /* A queue that waits on a user event would hold every marker. */
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        const struct shim_event *e = (const void *)o;
        if (o->kind == SHIM_EVENT && e->user && !e->retired &&
            e->user_status == CL_SUBMITTED) {
            end = "user-event";
            max = 0;
        }
    }
    shim_store_unlock();
    for (unsigned k = 0; k < max; k++) {
        if (shim_gate_close(shim_config.rehome_timeout_ms) < 0) {
            end = "busy";
            break;
        }
        int rc = fence(r);
        shim_gate_open();
        if (rc == 0)
            rc = wait_marks(r);
        if (rc == 0)
            rc = copy(r);
        release_marks(r);
        /* Into the target: a failure there leaves the RAM copies good. */
        if (rc == 0 && targets) {
            r->target_bytes = 0;
            if (mirror(r) < 0) {
                CRN_WARN("pre-copy: writing into the target failed; the stop "
                         "writes everything");
                shim_precopy_drop_targets();
                targets = false;
            }
            last.target_bytes += r->target_bytes;
        }
        give_back(r, rc == 0);
        if (rc < 0) {
            CRN_WARN("pre-copy: round %u failed (%d); its bytes are left to "
                     "the stop", k + 1, rc);
            end = "failed";
            break;
        }
        if (last.rounds < REPORT_ROUNDS)
            last.bytes[last.rounds] = r->bytes;
        last.rounds++;
        if (r->bytes <= shim_config.precopy_stop_bytes) {
            end = "converged";
            break;
        }
        if (r->bytes >= prev) {
            end = "no-progress";
            break;
        }
        prev = r->bytes;
    }
    round_queues_release(r);
    for (size_t i = 0; i < r->n_tq; i++)
        VENDOR(r->tq[i].q)->clReleaseCommandQueue(r->tq[i].q);
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o && targets; o = o->next)
        last.target |= o->kind == SHIM_MEM && ((struct shim_mem *)o)->premade;
    shim_store_unlock();
    free(r);
    last.seconds = shim_now() - t0;
    snprintf(last.end, sizeof(last.end), "%s", end);
    CRN_INFO("pre-copy: %u round(s) in %.3f ms while the program ran (%s)",
             last.rounds, last.seconds * 1e3, last.end);
}

void shim_precopy_forget(void)
{
    memset(&last, 0, sizeof(last));
}

/* The last pre-copy for the re-home report line: " precopy=N
 * precopy_s=S precopy_end=WHY precopy_bytes=B1,B2,..." or "" if none. */
void shim_precopy_describe(char *buf, size_t len)
{
    size_t at;

    buf[0] = '\0';
    if (!last.rounds && !last.end[0])
        return;
    at = (size_t)snprintf(buf, len,
                          " precopy=%u precopy_s=%.6f precopy_end=%s "
                          "precopy_target=%zu precopy_bytes=",
                          last.rounds, last.seconds, last.end,
                          last.target ? last.target_bytes : 0);
    for (unsigned i = 0; i < last.rounds && i < REPORT_ROUNDS && at < len;
         i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%zu", i ? "," : "",
                               last.bytes[i]);
    if (last.rounds == 0 && at < len)
        snprintf(buf + at, len - at, "0");
}
