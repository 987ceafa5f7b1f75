/* A connection's requests executed in order (one work item at a time on
 * libuv's pool, or a batch of light calls on the loop thread itself) and
 * their replies written in order, each pausing the other past
 * --max-queued; refusals are the last reply. */
#include "conn.h"

#include "proto/log.h"

#include "proto/remote_calls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocking reads up to this size may run on a worker's loop thread. */
#define INLINE_READ_MAX (64u << 10)

/* Gives the loop thread DONE (executed) to free, and takes what it handed
 * over since (px_conn_schedule), or NULL; with NULL and LAST the worker has
 * said it takes no more. */
static struct px_req *take_more(struct px_conn *c, struct px_req *done,
                                bool last)
{
    struct px_req *more;

    pthread_mutex_lock(&c->more_lock);
    while (done) {
        struct px_req *next = done->next;
        done->next = c->done;
        c->done = done;
        done = next;
    }
    more = c->more_head;
    c->more_head = c->more_tail = NULL;
    c->more_bytes = 0;
    atomic_store(&c->more_any, false);
    if (!more && last)
        c->takes = false;
    pthread_mutex_unlock(&c->more_lock);
    return more;
}

/* Waits up to the server's spin for requests handed over: a client that
 * sends its next call within it finds this thread awake (a pool thread
 * woken from its sleep costs microseconds per batch). */
static void spin_for_more(struct px_conn *c)
{
    uint64_t until;

    if (!c->srv->spin_ns)
        return;
    until = uv_hrtime() + c->srv->spin_ns;
    while (!atomic_load_explicit(&c->more_any, memory_order_acquire) &&
           !atomic_load(&c->stop) && uv_hrtime() < until)
        ;
}

static void work_run(uv_work_t *w)
{
    struct px_conn *c = w->data;
    struct px_req *batch = c->batch;

    c->batch = NULL;
    /* Once at least: a poke's batch has no request, only pending reads to
     * flush (px_exec_batch). */
    do {
        struct px_req *done = NULL;

        px_exec_batch(c->tenant, batch, &c->stop, &done);
        if (!(batch = take_more(c, done, false))) {
            spin_for_more(c);
            batch = take_more(c, NULL, true);
        }
    } while (batch);
}

static void work_done(uv_work_t *w, int status)
{
    struct px_conn *c = w->data;

    (void)status;
    c->working = false;
    px_req_free_list(c->batch);
    c->batch = NULL;
    /* The worker has returned: nothing else touches DONE now. */
    px_req_free_list(c->done);
    c->done = NULL;
    if (c->state == PX_CONN_CLOSING) {
        px_conn_finish_close(c);
        return;
    }
    if (!c->reading && !c->input_done && c->inq_bytes < MAX_QUEUED(c) &&
        px_transport_read_start(&c->tr) == 0)
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

/* A user event's status set: the vendor marks the event and starts what
 * waits on it, never waiting itself.  On the loop thread of a worker (one
 * tenant) the thread the program woke waits one hand-off less for the
 * Notify that wakes it (bench/remote/userevent.sh). */
static bool user_event_set(const struct px_conn *c,
                           const Crane__ClientMessage *m)
{
    return m->msg_case == CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS &&
           c->srv->role == PX_ROLE_WORKER && c->srv->inline_waits;
}

/* Calls that never wait for the device (queries, argument changes, user
 * events' sets), or wait for it briefly (device_wait): run on the loop
 * thread, their answers leave without two thread hand-offs. */
static bool light(const struct px_conn *c, const struct px_req *r)
{
    for (; r; r = r->next) {
        if (!r->msg || r->bulk_len || r->close_after)
            return false;
        if (!crn_remote_call_is((int)r->msg->msg_case, CRN_CALL_LIGHT) &&
            !user_event_set(c, r->msg) && !device_wait(c, r->msg))
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
        CRN_WARN("tenant %llu (%s): CRANE_PROXY_TEST_ABORT: aborting",
                (unsigned long long)c->tenant->num, name);
        abort();
    }
}

/* Hands what came in to the worker executing C's calls, if it still
 * takes more and has room, after what it has (the stream's order). */
static void hand_over(struct px_conn *c)
{
    struct px_req *done;
    bool handed = false;

    pthread_mutex_lock(&c->more_lock);
    done = c->done;
    c->done = NULL;
    if (c->takes && c->more_bytes < MAX_QUEUED(c)) {
        if (c->more_tail)
            c->more_tail->next = c->inq_head;
        else
            c->more_head = c->inq_head;
        c->more_tail = c->inq_tail;
        c->more_bytes += c->inq_bytes;
        atomic_store_explicit(&c->more_any, true, memory_order_release);
        handed = true;
    }
    pthread_mutex_unlock(&c->more_lock);
    px_req_free_list(done);
    if (!handed)
        return;
    c->inq_head = c->inq_tail = NULL;
    c->inq_bytes = 0;
    if (!c->reading && !c->input_done && px_transport_read_start(&c->tr) == 0)
        c->reading = true;
}

void px_conn_schedule(struct px_conn *c)
{
    bool poked;

    if (c->state != PX_CONN_READY || !c->tenant ||
        px_transport_queued(&c->tr) >= MAX_QUEUED(c))
        return;
    if (c->working) {
        if (c->inq_head) {
            test_abort(c);
            hand_over(c);
        }
        return;
    }
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
        px_beat_inline(c, true);
        px_exec_batch(c->tenant, batch, &c->stop, NULL);
        px_beat_inline(c, false);
        px_conn_drains_after = false;
        c->tenant->shm_nowait = false;
        px_conn_drain(c);
        return;
    }
    c->work.data = c;
    c->working = true;
    c->takes = true;
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
        px_transport_read_stop(&c->tr);
        c->reading = false;
    }
}

void px_conn_out_of_step(struct px_conn *c, uint64_t seq, const char *why)
{
    struct px_req *r;

    c->input_done = true;
    if (c->reading) {
        px_transport_read_stop(&c->tr);
        c->reading = false;
    }
    if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
        px_conn_refuse(c, "%s", why);
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

/* --- output ------------------------------------------------------------- */

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    px_conn_close(req->data, NULL);
}

static void on_write(uv_write_t *req, int status)
{
    struct px_out *o = req->data;
    struct px_conn *c = req->handle->data;

    if (status < 0 && status != UV_ECANCELED)
        px_conn_close(c, uv_strerror(status));
    px_out_free(o);
    /* Execution waits while the client reads too slowly. */
    if (status == 0 && px_transport_queued(&c->tr) < MAX_QUEUED(c))
        px_conn_schedule(c);
}

void px_conn_send(struct px_conn *c, struct px_out *o)
{
    uv_buf_t bufs[2];
    int rc;

    if (c->write_closed || c->finished) {
        px_out_free(o);
        return;
    }
    /* The client's next call tends to follow its answer closely. */
    px_server_active(c->srv);
    bufs[0] = uv_buf_init((char *)o->frame, (unsigned)o->frame_len);
    bufs[1] = uv_buf_init((char *)o->bulk, (unsigned)o->bulk_len);
    unsigned nbufs = o->bulk_len ? 2 : 1;
    /* Most answers leave whole at once: written so, they need no write
     * request, whose completion costs a loop turn and an epoll_ctl (libuv
     * refuses while earlier writes wait, so the order holds).  What is
     * left, or an error, goes the usual way. */
    if (!o->close_after) {
        int n = px_transport_try_write(&c->tr, bufs, nbufs);
        if (n > 0 && (size_t)n == o->frame_len + o->bulk_len) {
            px_out_free(o);
            return;
        }
        if (n > 0 && (size_t)n < bufs[0].len) {
            bufs[0].base += n;
            bufs[0].len -= (size_t)n;
        } else if (n > 0) {
            n -= (int)bufs[0].len;
            bufs[0] = uv_buf_init(bufs[1].base + n,
                                  (unsigned)(bufs[1].len - (size_t)n));
            nbufs = 1;
        }
    }
    o->wreq.data = o;
    rc = px_transport_write(&c->tr, &o->wreq, bufs, nbufs, on_write);
    if (rc < 0) {
        px_out_free(o);
        px_conn_close(c, uv_strerror(rc));
        return;
    }
    if (o->close_after) {
        /* The stream is out of step: say the last word, then close. */
        c->write_closed = true;
        c->input_done = true;
        if (c->reading) {
            px_transport_read_stop(&c->tr);
            c->reading = false;
        }
        c->shut.data = c;
        if (px_transport_shutdown(&c->tr, &c->shut, on_shutdown) < 0)
            px_conn_close(c, NULL);
    }
}

void px_conn_drain(struct px_conn *c)
{
    struct px_out *o = px_outq_take(&c->outq);

    while (o) {
        struct px_out *next = o->next;
        px_conn_send(c, o);
        o = next;
    }
}

void px_conn_on_wake(uv_async_t *a)
{
    struct px_conn *c = a->data;

    px_conn_drain(c);
    if (atomic_load(&c->poked))
        px_conn_schedule(c);
}

/* Set on the loop thread while it executes calls itself and writes their
 * answers right after (px_conn_schedule): no wake-up is needed then. */
_Thread_local bool px_conn_drains_after;

static void sink_push(void *ctx, struct px_out *o)
{
    struct px_conn *c = ctx;

    px_outq_push(&c->outq, o);
    /* An answer the loop thread itself writes next: the wake-up (a write
     * to an eventfd, then a loop turn to read it) would only delay it. */
    if (!px_conn_drains_after)
        uv_async_send(&c->wake);
}

static void sink_poke(void *ctx)
{
    struct px_conn *c = ctx;

    atomic_store(&c->poked, true);
    uv_async_send(&c->wake);
}

struct px_sink px_conn_sink(struct px_conn *c)
{
    return (struct px_sink){sink_push, sink_poke, c};
}

/* --- refusals ----------------------------------------------------------- */

void px_conn_refuse(struct px_conn *c, const char *fmt, ...)
{
    Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;
    Crane__Refused r = CRANE__REFUSED__INIT;
    char why[160];
    struct px_out *o;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    CRN_WARN("connection %llu (%s pid %u) refused: %s",
            (unsigned long long)c->num, c->program[0] ? c->program : "?",
            c->pid, why);
    r.reason = why;
    m.msg_case = CRANE__SERVER_MESSAGE__MSG_REFUSED;
    m.refused = &r;
    o = px_out_pack(&m);
    if (!o) {
        px_conn_close(c, "out of memory");
        return;
    }
    o->close_after = true;
    px_conn_send(c, o);
}
