/* A connection's requests executed in order: one work item at a time on
 * libuv's pool, or a batch of light calls on the loop thread itself. */
#include "conn_int.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocking reads up to this size may run on a worker's loop thread. */
#define INLINE_READ_MAX (64u << 10)

static void work_run(uv_work_t *w)
{
    struct px_conn *c = w->data;
    struct px_req *batch = c->batch;

    c->batch = NULL;
    px_exec_batch(c->tenant, batch, &c->stop);
}

static void work_done(uv_work_t *w, int status)
{
    struct px_conn *c = w->data;

    (void)status;
    c->working = false;
    px_req_free_list(c->batch);
    c->batch = NULL;
    if (c->state == PX_CONN_CLOSING) {
        px_conn_finish_close(c);
        return;
    }
    if (!c->reading && !c->input_done && c->inq_bytes < MAX_QUEUED(c) &&
        px_conn_read_start(c) == 0)
        c->reading = true;
    px_conn_schedule(c);
}

/* A call that waits for the device only: a small blocking buffer read, a
 * finish or a wait.  Where the process serves one tenant (a worker) that
 * has no user event unset, it waits for work already on the device, which
 * no later message can be needed to release. */
static bool device_wait(const struct px_conn *c, const Crane__ClientMessage *m)
{
    struct px_tenant *t = c->tenant;
    size_t unset;

    if (c->srv->role != PX_ROLE_WORKER || !c->srv->inline_waits)
        return false;
    if (m->msg_case == CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND) {
        const Crane__MemCommand *mc = m->mem_command;
        if (mc->op != CRANE__MEM_OP__MEM_READ || !mc->blocking ||
            mc->size > INLINE_READ_MAX)
            return false;
    } else if (m->msg_case == CRANE__CLIENT_MESSAGE__MSG_SYNC) {
        if (m->sync->op != CRANE__SYNC_OP__SYNC_FINISH &&
            m->sync->op != CRANE__SYNC_OP__SYNC_WAIT &&
            m->sync->op != CRANE__SYNC_OP__SYNC_PING)
            return false;
    } else {
        return false;
    }
    pthread_mutex_lock(&t->lock);
    unset = t->uevents.count;
    pthread_mutex_unlock(&t->lock);
    return unset == 0;
}

/* Calls that never wait for the device (queries and argument changes), or
 * wait for it briefly (device_wait): run on the loop thread, their answers
 * leave without two thread hand-offs. */
static bool light(const struct px_conn *c, const struct px_req *r)
{
    for (; r; r = r->next) {
        if (!r->msg || r->bulk_len || r->close_after)
            return false;
        if (r->msg->msg_case != CRANE__CLIENT_MESSAGE__MSG_GET_INFO &&
            r->msg->msg_case != CRANE__CLIENT_MESSAGE__MSG_SET_KERNEL_ARGS &&
            !device_wait(c, r->msg))
            return false;
    }
    return true;
}

/* Test only: CRANE_PROXY_TEST_ABORT=PROGRAM makes the first call of a
 * tenant whose Hello names PROGRAM abort the process, as a vendor library
 * that crashes would (tests/proxy: crash-isolation). */
static void test_abort(const struct px_conn *c)
{
    static const char *name;
    static bool read;

    if (!read) {
        name = getenv("CRANE_PROXY_TEST_ABORT");
        read = true;
    }
    if (name && name[0] && strcmp(c->tenant->program, name) == 0) {
        PX_WARN("tenant %llu (%s): CRANE_PROXY_TEST_ABORT: aborting",
                (unsigned long long)c->tenant->num, name);
        abort();
    }
}

void px_conn_schedule(struct px_conn *c)
{
    bool poked;

    if (c->working || c->state != PX_CONN_READY || !c->tenant ||
        c->h.stream.write_queue_size >= MAX_QUEUED(c))
        return;
    if (c->inq_head)
        test_abort(c);
    poked = atomic_exchange(&c->poked, false);
    if (!c->inq_head && !poked)
        return;
    c->batch = c->inq_head;
    c->inq_head = c->inq_tail = NULL;
    c->inq_bytes = 0;
    /* A batch of light calls runs here on the loop thread and its answers
     * leave at once: a synchronous query then costs two thread hand-offs
     * fewer.  Nothing of this tenant runs elsewhere meanwhile (no work is
     * in flight), so the tenant needs no lock. */
    if (!poked && light(c, c->batch)) {
        struct px_req *batch = c->batch;
        c->batch = NULL;
        /* The loop thread writes the replies: none may wait for room in
         * the client's shared area. */
        c->tenant->shm_nowait = true;
        px_conn_drains_after = true;
        px_exec_batch(c->tenant, batch, &c->stop);
        px_conn_drains_after = false;
        c->tenant->shm_nowait = false;
        px_conn_drain(c);
        return;
    }
    c->work.data = c;
    c->working = true;
    if (uv_queue_work(c->srv->loop, &c->work, work_run, work_done) < 0) {
        c->working = false;
        px_conn_close(c, "cannot queue work");
    }
}

void px_conn_queue(struct px_conn *c, struct px_req *r)
{
    r->next = NULL;
    if (c->inq_tail)
        c->inq_tail->next = r;
    else
        c->inq_head = r;
    c->inq_tail = r;
    c->inq_bytes += r->bulk_len + 64;
    if (c->inq_bytes >= MAX_QUEUED(c) && c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
}

void px_conn_out_of_step(struct px_conn *c, uint64_t seq, const char *why)
{
    struct px_req *r;

    c->input_done = true;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
        px_handshake_refuse(c, "%s", why);
        return;
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        px_conn_close(c, "out of memory");
        return;
    }
    r->seq = seq;
    r->close_after = true;
    snprintf(r->error, sizeof(r->error), "%s", why);
    px_conn_queue(c, r);
}
