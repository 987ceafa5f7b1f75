/* Executing a tenant's requests in order: dispatch, replies, pending reads. */
#include "exec.h"
#include "hostmem.h"
#include "kout.h"

#include "arena.h"
#include "callbacks.h"
#include "ctxpool.h"
#include "lanes.h"
#include "log.h"
#include "staging.h"
#include "validate.h"
#include "ringpin.h"
#include "watchdog.h"

#include "proto/pcopy.h"
#include "proto/remote_calls.h"
#include "proto/shm.h"

#include <errno.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void px_req_free(struct px_req *r)
{
    if (!r)
        return;
    px_arena_free(r->msg, r->arena);
    px_lanes_forget(r);         /* before its bytes go */
    free(r->bulk);
    free(r);
}

void px_req_free_list(struct px_req *r)
{
    while (r) {
        struct px_req *next = r->next;
        px_req_free(r);
        r = next;
    }
}

cl_int px_fail(struct px_call *c, cl_int err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->error, sizeof(c->error), fmt, ap);
    va_end(ap);
    return err;
}

cl_int px_device_handles(struct px_call *c, const uint64_t *ids, size_t n,
                         cl_device_id *v)
{
    cl_int err;

    for (size_t i = 0; i < n; i++) {
        v[i] = px_tenant_handle(c->t, ids[i], PX_DEVICE, &err);
        if (!v[i])
            return px_fail(c, err, "unknown device %llu",
                           (unsigned long long)ids[i]);
    }
    return CL_SUCCESS;
}

/* Copies a reply's bulk into ring 1 of the tenant's shared area and names
 * it in R.  The client frees room as it reads the replies the loop thread
 * writes, so a worker waits a little for room; the loop thread itself must
 * not (it writes those replies).  Without room the bytes take the stream. */
static int shm_put(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                   size_t bulk_len)
{
    uint64_t pos;
    int rc = crn_shm_reserve_wait(t->shm, CRN_SHM_TO_CLIENT, bulk_len,
                                  t->shm_nowait ? 0 : PX_SHM_WAIT_MS, &pos);

    if (rc < 0)
        return rc;
    memcpy(crn_shm_at(t->shm, CRN_SHM_TO_CLIENT, pos), bulk, bulk_len);
    r->shm_bulk = true;
    r->shm_pos = pos;
    return 0;
}

/* Packs R (with the waiting deferred error) and hands it to the tenant's
 * connection; no flush of pending reads. */
static int emit_reply(struct px_tenant *t, Crane__Reply *r,
                      const uint8_t *bulk, size_t bulk_len, void *bulk_owner)
{
    struct px_out *o;

    if (t->deferred_seq) {
        r->deferred_seq = t->deferred_seq;
        r->deferred_err = t->deferred_err;
        t->deferred_seq = 0;
        t->deferred_err = 0;
    }
    /* A chunk of read bytes bigger than a quarter of the client's ring
     * leaves as several, so that the ring holds more than one at a time. */
    size_t piece = t->shm ? t->shm->ring_len / 4 : 0;
    while (r->more && piece && bulk_len > piece) {
        Crane__Reply part = *r;
        part.bulk_len = piece;
        if (shm_put(t, &part, bulk, piece) < 0 ||
            !(o = px_out_pack_reply(&part)))
            break;              /* the rest takes the stream */
        px_tenant_send(t, o, false);
        r->deferred_seq = 0;    /* said once */
        r->deferred_err = 0;
        r->bulk_offset += piece;
        bulk += piece;
        bulk_len -= piece;
    }
    /* What kernels printed so far goes with this reply (kout.h). */
    size_t kout_len;
    uint8_t *kout = px_kout_take(&kout_len);
    r->kernel_output.data = kout;
    r->kernel_output.len = kout_len;
    if (r->shm_bulk) {
        /* The caller put the bytes in the ring already (bulk_len set). */
        o = px_out_pack_reply(r);
        free(kout);
        r->kernel_output.data = NULL;
        if (!o)
            return -ENOMEM;
        o->bulk_owner = bulk_owner;
        px_tenant_send(t, o, false);
        return 0;
    }
    r->bulk_len = bulk_len;
    if (bulk_len && t->shm && shm_put(t, r, bulk, bulk_len) == 0)
        bulk_len = 0;           /* the bytes are in the shared area */
    o = px_out_pack_reply(r);
    free(kout);
    r->kernel_output.data = NULL;
    if (!o)
        return -ENOMEM;         /* BULK_OWNER stays the caller's */
    o->bulk = bulk;
    o->bulk_len = bulk_len;
    o->bulk_owner = bulk_owner;
    px_tenant_send(t, o, false);
    return 0;
}

/* Sends a completed read's data in chunks, then its final Reply. */
static void send_pending(struct px_tenant *t, struct px_pending *p)
{
    Crane__Reply r = CRANE__REPLY__INIT;
    cl_int status = CL_COMPLETE;
    size_t off = 0;

    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                   &status, NULL);
    if (p->orphan)
        goto out;
    r.seq = p->seq;
    if (status == CL_COMPLETE) {
        while (off < p->len) {
            Crane__Reply chunk = CRANE__REPLY__INIT;
            size_t n = p->len - off;
            if (n > PX_READ_CHUNK)
                n = PX_READ_CHUNK;
            chunk.seq = p->seq;
            chunk.more = 1;
            chunk.bulk_offset = off;
            /* The last chunk's entry owns the staging buffer: entries of
             * one stream are written, and freed, in order. */
            if (emit_reply(t, &chunk, p->data + off, n,
                           off + n == p->len ? p->data : NULL) < 0) {
                /* Entries already queued may point into the data. */
                if (off > 0)
                    p->data = NULL;
                status = CL_OUT_OF_HOST_MEMORY;
                break;
            }
            off += n;
        }
        if (p->len > 0 && off == p->len)
            p->data = NULL;     /* the last chunk's entry owns it */
    }
    r.err = status == CL_COMPLETE ? CL_SUCCESS : status;
    emit_reply(t, &r, NULL, 0, NULL);
out:
    px_chunk_free(p->data);
    clReleaseEvent(p->ev);
    free(p);
}

static bool read_done(const struct px_pending *p)
{
    cl_int status = CL_COMPLETE;

    if (clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof(status), &status, NULL) != CL_SUCCESS)
        return true;
    return status <= CL_COMPLETE;
}

void px_exec_flush_reads(struct px_tenant *t, bool wait)
{
    struct px_pending **pp = &t->pend_head;

    t->pend_tail = NULL;
    if (!*pp)
        return;
    while (*pp) {
        struct px_pending *p = *pp;
        if (wait)
            clWaitForEvents(1, &p->ev);
        if (read_done(p)) {
            *pp = p->next;
            send_pending(t, p);
        } else {
            t->pend_tail = p;
            pp = &p->next;
        }
    }
    if (!t->pend_head)
        atomic_store(&t->pend_since, 0);
}

void px_pending_add(struct px_tenant *t, struct px_pending *p)
{
    p->next = NULL;
    if (t->pend_tail) {
        t->pend_tail->next = p;
    } else {
        t->pend_head = p;
        if (atomic_load_explicit(&t->beat_ms, memory_order_relaxed))
            atomic_store(&t->pend_since, uv_hrtime());
    }
    t->pend_tail = p;
}

int px_send_reply(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                  size_t bulk_len, void *bulk_owner)
{
    if (t->pend_head)
        px_exec_flush_reads(t, false);
    return emit_reply(t, r, bulk, bulk_len, bulk_owner);
}

int px_send_more(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                 size_t bulk_len, void *bulk_owner)
{
    return emit_reply(t, r, bulk, bulk_len, bulk_owner);
}

cl_int px_wait_list(struct px_call *c, const uint64_t *ids, size_t n,
                    cl_event **out)
{
    cl_event *v;
    cl_int err;

    *out = NULL;
    if (n == 0)
        return CL_SUCCESS;
    v = malloc(n * sizeof(*v));
    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        v[i] = px_tenant_handle(c->t, ids[i], PX_EVENT, &err);
        if (!v[i]) {
            free(v);
            return px_fail(c, CL_INVALID_EVENT_WAIT_LIST,
                           "unknown event %llu in the wait list",
                           (unsigned long long)ids[i]);
        }
    }
    *out = v;
    return CL_SUCCESS;
}

cl_int px_event_slot(struct px_call *c, uint64_t id, cl_event *slot,
                     cl_event **slot_ptr)
{
    cl_int err;

    *slot = NULL;
    *slot_ptr = NULL;
    if (id == 0)
        return CL_SUCCESS;
    err = px_tenant_check_new(c->t, id, PX_EVENT);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "event id %llu is %s",
                       (unsigned long long)id,
                       err == CL_INVALID_VALUE ? "not a client id" : "in use");
    *slot_ptr = slot;
    return CL_SUCCESS;
}

cl_int px_event_keep(struct px_call *c, uint64_t id, cl_event ev)
{
    if (id == 0 || !ev)
        return CL_SUCCESS;
    return px_tenant_add(c->t, id, PX_EVENT, ev, 0, false);
}

typedef cl_int exec_fn(struct px_call *c);

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The executor of each call, by the oneof case of ClientMessage: one per
 * row of proto/remote_calls.def. */
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    [CRANE__CLIENT_MESSAGE__MSG_##CASE] = px_exec_##exec,
static exec_fn *const executors[] = {
#include "proto/remote_calls.def"
};
#undef CRN_REMOTE_CALL

/* Answers a frame that cannot be executed at all. */
static void answer_bad_frame(struct px_tenant *t, struct px_req *r)
{
    Crane__Reply reply = CRANE__REPLY__INIT;
    struct px_out *o;

    reply.seq = r->seq;
    reply.err = CL_INVALID_VALUE;
    reply.error = r->error;
    PX_WARN("tenant %llu: seq %llu refused: %s", (unsigned long long)t->num,
            (unsigned long long)r->seq, r->error);
    if (r->deferred && !r->close_after) {
        if (!t->deferred_seq) {
            t->deferred_seq = r->seq;
            t->deferred_err = CL_INVALID_VALUE;
        }
        return;
    }
    if (!r->close_after) {
        px_send_reply(t, &reply, NULL, 0, NULL);
        return;
    }
    /* The stream is out of step: this is the last frame it carries. */
    if (t->deferred_seq) {
        reply.deferred_seq = t->deferred_seq;
        reply.deferred_err = t->deferred_err;
        t->deferred_seq = 0;
    }
    o = px_out_pack_reply(&reply);
    if (o) {
        o->close_after = true;
        px_tenant_send(t, o, false);
    }
}

/* A command that names an event for the client failed: the client made
 * that id its event already (the call was batched), so the id gets an event
 * that reports the failure as its status instead of CL_INVALID_EVENT at
 * every later query or wait (a real program's event queries did). */
static void fail_event(struct px_tenant *t, const Crane__ClientMessage *m,
                       cl_int err)
{
    uint64_t id = 0, qid = 0;
    cl_command_queue q;
    cl_context ctx;
    cl_event ev;
    cl_int e;

    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL:
        id = m->launch_kernel->event;
        qid = m->launch_kernel->queue;
        break;
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        id = m->mem_command->event;
        qid = m->mem_command->queue;
        break;
    case CRANE__CLIENT_MESSAGE__MSG_SYNC:
        id = m->sync->event;
        qid = m->sync->queue;
        break;
    default:
        return;
    }
    if (!id || err >= 0 || px_tenant_check_new(t, id, PX_EVENT) != CL_SUCCESS)
        return;
    q = px_tenant_handle(t, qid, PX_QUEUE, &e);
    if (!q || clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx,
                                    NULL) != CL_SUCCESS)
        return;
    ev = clCreateUserEvent(ctx, &e);
    if (!ev)
        return;
    clSetUserEventStatus(ev, err);
    px_tenant_add(t, id, PX_EVENT, ev, 0, false);
}

int px_call_ring_copy(struct px_call *c)
{
    uint8_t *p;

    if (!c->ring)
        return 0;
    /* On a pool thread: big pieces in kept chunks, as fresh heap there
     * would cost a page fault per 4 KiB (outq.h). */
    p = c->bulk_len >= PX_CHUNK_MIN ? px_chunk_alloc(c->bulk_len)
                                    : malloc(c->bulk_len);
    if (p)
        crn_pcopy(p, c->ring_at, c->bulk_len);
    px_call_ring_release(c);
    if (!p)
        return -ENOMEM;
    px_chunk_free(c->bulk);
    c->bulk = p;
    return 0;
}

void px_call_ring_release(struct px_call *c)
{
    if (!c->ring)
        return;
    crn_shm_release(c->ring, CRN_SHM_TO_PROXY, c->ring_pos + c->bulk_len);
    c->ring = NULL;
    c->ring_at = NULL;
}

/* Whether C's bytes stay in the ring for its executor: a plain buffer
 * write that may stage through pinned memory or go straight from a pinned
 * ring. */
static bool ring_stays(const struct px_call *c)
{
    const Crane__ClientMessage *m = c->m;

    return m->msg_case == CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND &&
           m->mem_command->op == CRANE__MEM_OP__MEM_WRITE &&
           px_wstage_wants(c->t, c->bulk_len, px_ring_pinnable(c->ring));
}

/* Executes R; what must go at once goes (its lanes' transfer, its bulk
 * bytes), R itself and its message are left to the caller.  False: R was
 * freed already. */
static bool exec_call(struct px_tenant *t, struct px_req *r)
{
    struct px_call c = {.t = t, .m = r->msg};
    const Crane__ClientMessage *m = r->msg;
    cl_int err;
    bool malformed = false;
    int lanes_rc;

    if (!m) {
        answer_bad_frame(t, r);
        px_req_free(r);
        return false;
    }
    crane__reply__init(&c.reply);
    c.reply.seq = m->seq;
    lanes_rc = px_lanes_take(r);
    c.bulk = r->bulk;
    c.bulk_len = r->bulk_len;
    r->bulk = NULL;
    if (r->ring) {
        c.ring = r->ring;
        c.ring_pos = r->ring_pos;
        c.ring_at = crn_shm_at(r->ring, CRN_SHM_TO_PROXY, r->ring_pos);
        r->ring = NULL;
    }
    err = px_validate(m, c.error, sizeof(c.error));
    if (err != CL_SUCCESS) {
        /* A call the proxy cannot even name is answered whatever
         * want_reply says: the client cannot expect anything else. */
        malformed = m->msg_case == CRANE__CLIENT_MESSAGE__MSG__NOT_SET;
    } else if (lanes_rc < 0) {
        /* Never executed over partial bytes. */
        err = px_fail(&c, CL_OUT_OF_RESOURCES, "its bytes did not all come "
                      "on the lanes (%s)", strerror(-lanes_rc));
    } else {
        err = px_validate_call(&c);
        /* Bytes in the ring stay there only for a write that stages them
         * through pinned memory (exec_mem.c); every other call gets them
         * in the heap, as from the stream. */
        if (err == CL_SUCCESS && c.ring && !ring_stays(&c) &&
            px_call_ring_copy(&c) < 0)
            err = px_fail(&c, CL_OUT_OF_HOST_MEMORY,
                          "no room for %zu bytes", c.bulk_len);
        if (err == CL_SUCCESS) {
            /* At debug level, a call that held the worker for more than
             * a millisecond says so: where a switch's time went. */
            double t0 = crn_log_enabled(CRN_LOG_DEBUG) ? mono_s() : 0;
            bool beats = atomic_load_explicit(&t->beat_ms,
                                              memory_order_relaxed) != 0;
            if (beats) {
                atomic_store(&t->running_call, (unsigned)m->msg_case);
                atomic_store(&t->running_since, uv_hrtime());
            }
            err = executors[m->msg_case](&c);
            if (beats)
                atomic_store(&t->running_since, 0);
            if (t0 > 0 && mono_s() - t0 > 1e-3)
                PX_DEBUG("tenant %llu: seq %llu (%s) took %.3f ms",
                         (unsigned long long)t->num,
                         (unsigned long long)m->seq,
                         crn_remote_call_name((int)m->msg_case),
                         (mono_s() - t0) * 1e3);
        }
    }
    /* In the stream's order, whatever became of the call. */
    px_call_ring_release(&c);
    if (err != CL_SUCCESS && !malformed && m->msg_case !=
        CRANE__CLIENT_MESSAGE__MSG__NOT_SET)
        fail_event(t, m, err);
    if (err != CL_SUCCESS)
        PX_DEBUG("tenant %llu: seq %llu (%s) failed: %d%s%s",
                 (unsigned long long)t->num, (unsigned long long)m->seq,
                 crn_remote_call_name((int)m->msg_case), err, c.error[0] ? ": " : "", c.error);
    if (!c.done && (m->want_reply || malformed)) {
        c.reply.err = err;
        if (c.error[0])
            c.reply.error = c.error;
        px_send_reply(t, &c.reply, NULL, 0, NULL);
    } else if (!c.done && err != CL_SUCCESS && t->deferred_seq == 0) {
        t->deferred_seq = m->seq;
        t->deferred_err = err;
    }
    free(c.value_owner);
    px_chunk_free(c.bulk);
    px_lanes_forget(r);         /* before its bytes go */
    free(r->bulk);
    r->bulk = NULL;
    return true;
}

void px_exec_one(struct px_tenant *t, struct px_req *r)
{
    if (exec_call(t, r))
        px_req_free(r);
}

void px_exec_batch(struct px_tenant *t, struct px_req *reqs,
                   const atomic_bool *stop, struct px_req **done)
{
    if (t->pend_head)
        px_exec_flush_reads(t, false);
    while (reqs) {
        struct px_req *next = reqs->next;
        /* Fetched while this one executes (the vendor's call takes
         * microseconds): the next call's message, decoded on the loop
         * thread's core. */
        if (next) {
            __builtin_prefetch(next);
            px_arena_prefetch(next->arena);
        }
        if (stop && atomic_load(stop)) {
            px_req_free(reqs);
            reqs = next;
            continue;
        }
        px_watch_call_begin(reqs->msg ? (int)reqs->msg->msg_case : 0);
        bool keep = exec_call(t, reqs);
        px_watch_call_end();
        if (keep) {
            if (done) {
                reqs->next = *done;
                *done = reqs;
            } else {
                px_req_free(reqs);
            }
        }
        reqs = next;
    }
}

size_t px_exec_teardown(struct px_tenant *t)
{
    px_tenant_abort_user_events(t);
    px_tenant_detach(t);
    px_cb_forget(t);
    px_staging_free(t);
    /* After every command on it (user events aborted above). */
    px_host_close(t);
    /* Their staging buffers must outlive the device's copies. */
    while (t->pend_head) {
        struct px_pending *p = t->pend_head;
        t->pend_head = p->next;
        clWaitForEvents(1, &p->ev);
        clReleaseEvent(p->ev);
        px_chunk_free(p->data);
        free(p);
    }
    t->pend_tail = NULL;
    return px_tenant_release_all(t);
}
