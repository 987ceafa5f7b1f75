/* Executing a tenant's requests in order: validation, then the executor of
 * the message's row (proto/remote_calls.def), the answer or the deferred
 * error, a failed command's event; a tenant's teardown. */
#include "dispatch.h"

#include "arena.h"
#include "callbacks.h"
#include "exec.h"
#include "hostmem.h"
#include "lanes.h"
#include "proto/log.h"
#include "outq.h"
#include "ringpin.h"
#include "staging.h"
#include "validate.h"
#include "watchdog.h"

#include "proto/remote_calls.h"
#include "proto/shm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    CRN_WARN("tenant %llu: seq %llu refused: %s", (unsigned long long)t->num,
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
                CRN_DEBUG("tenant %llu: seq %llu (%s) took %.3f ms",
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
        CRN_DEBUG("tenant %llu: seq %llu (%s) failed: %d%s%s",
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
