/* One client connection: stream IO, framing, ordered execution, replies. */
#include "conn.h"

#include "log.h"
#include "supervisor.h"
#include "validate.h"

#include "proto/frame.h"
#include "proto/shm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/vm_sockets.h>
#include <fcntl.h>
#include <unistd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room the input buffer keeps free for the next read. */
#define READ_ROOM (64u << 10)
/* Requests (bytes) buffered ahead of execution before reading pauses, and
 * replies (bytes) not yet written before execution pauses: --max-queued. */
#define MAX_QUEUED(c)                                                        \
    ((c)->srv->limits.max_queued ? (c)->srv->limits.max_queued : SIZE_MAX)
/* Blocking reads up to this size may run on a worker's loop thread. */
#define INLINE_READ_MAX (64u << 10)
/* TCP keepalive: probes after this many idle seconds find dead peers. */
#define KEEPALIVE_S 60

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_wake(uv_async_t *a);
static int attach_area(struct px_conn *c, const Crane__ShmAttach *a,
                       char *why, size_t why_len);

static void on_close(uv_handle_t *h)
{
    struct px_conn *c = h->data;
    struct px_server *srv = c->srv;

    if (--c->open_handles > 0)
        return;
    if (c->unauth)
        c->srv->unauth--;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    px_outq_destroy(&c->outq);
    if (c->shm_fd >= 0)
        close(c->shm_fd);
    if (c->shm) {
        crn_shm_close(c->shm);
        free(c->shm);
    }
    px_req_free_list(c->inq_head);
    px_req_free(c->bulk_req);
    free(c->ibuf);
    free(c);
    if (srv->role == PX_ROLE_WORKER)
        px_worker_idle(srv);
}

/* Who is at the other end, for per-peer bounds and logs: the user of a
 * unix socket's peer, the address of a TCP peer (any port). */
static void peer_name(struct px_conn *c)
{
    uv_os_fd_t fd;

    snprintf(c->peer, sizeof(c->peer), "?");
    if (uv_fileno(&c->h.handle, &fd) < 0)
        return;
    if (c->srv->ep.kind == CRN_EP_UNIX) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
            snprintf(c->peer, sizeof(c->peer), "uid %u",
                     (unsigned)cred.uid);
    } else if (c->srv->ep.kind == CRN_EP_VSOCK) {
        struct sockaddr_vm sa;
        socklen_t len = sizeof(sa);
        if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0)
            snprintf(c->peer, sizeof(c->peer), "vsock cid %u", sa.svm_cid);
    } else {
        struct sockaddr_storage sa;
        int len = sizeof(sa);
        if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&sa, &len) ==
            0) {
            if (sa.ss_family == AF_INET)
                uv_ip4_name((struct sockaddr_in *)&sa, c->peer,
                            sizeof(c->peer));
            else
                uv_ip6_name((struct sockaddr_in6 *)&sa, c->peer,
                            sizeof(c->peer));
        }
    }
}

/* A connection in its handshake holds no tenant yet and may belong to
 * anyone: at most --max-unauthenticated of them live, and a new one makes
 * room by closing the oldest, so that idle connections cannot keep a
 * client that holds the key out (each gets --handshake-timeout at most). */
static void count_unauth(struct px_conn *c)
{
    struct px_server *srv = c->srv;

    c->unauth = true;
    srv->unauth++;
    if (!srv->limits.max_unauth || srv->unauth <= srv->limits.max_unauth)
        return;
    struct px_conn *oldest = NULL;
    for (struct px_conn *o = srv->conns; o; o = o->next)
        if (o != c && o->unauth && o->state != PX_CONN_CLOSING &&
            (!oldest || o->num < oldest->num))
            oldest = o;
    if (oldest) {
        PX_WARN("connection %llu (%s) closed in its handshake: more than "
                "%llu connections in their handshake",
                (unsigned long long)oldest->num, oldest->peer,
                (unsigned long long)srv->limits.max_unauth);
        px_conn_close(oldest, "evicted");
        if (oldest->unauth) {
            oldest->unauth = false;
            srv->unauth--;
        }
    }
}

static void handshake_late(uv_timer_t *timer)
{
    struct px_conn *c = timer->data;

    if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH)
        px_handshake_refuse(c, "handshake not done within %llu ms",
                            (unsigned long long)c->srv->limits.handshake_ms);
}

/* Closes a ready connection that sent nothing for --idle-timeout while
 * nothing of its tenant ran or waited to be sent back. */
static void idle_check(uv_timer_t *timer)
{
    struct px_conn *c = timer->data;
    uint64_t idle = c->srv->limits.idle_ms;
    uint64_t now = uv_now(c->srv->loop), since = now - c->last_input_ms;
    bool busy = c->state != PX_CONN_READY || c->working || c->inq_head ||
                c->bulk_req || (c->tenant && c->tenant->pend_head) ||
                c->h.stream.write_queue_size;

    if (busy || since < idle) {
        uv_timer_start(timer, idle_check, busy ? idle : idle - since, 0);
        return;
    }
    px_conn_close(c, "idle timeout");
}

void px_conn_ready(struct px_conn *c)
{
    if (c->unauth) {
        c->unauth = false;
        c->srv->unauth--;
    }
    uv_timer_stop(&c->timer);
    /* A supervisor's connections go to workers, which watch idling. */
    if (c->srv->limits.idle_ms && c->srv->role != PX_ROLE_SUPERVISOR)
        uv_timer_start(&c->timer, idle_check, c->srv->limits.idle_ms, 0);
}

struct px_conn *px_conn_new(struct px_server *srv, uv_handle_type type)
{
    struct px_conn *c = calloc(1, sizeof(*c));
    int rc;

    if (!c) {
        PX_ERROR("out of memory accepting a connection");
        return NULL;
    }
    c->srv = srv;
    c->num = ++srv->next_conn;
    c->shm_fd = -1;
    px_outq_init(&c->outq);
    atomic_init(&c->poked, false);
    atomic_init(&c->stop, false);
    if (type == UV_TCP)
        rc = uv_tcp_init(srv->loop, &c->h.tcp);
    else
        /* ipc: a client may hand over a descriptor (its shared area). */
        rc = uv_pipe_init(srv->loop, &c->h.pipe, 1);
    if (rc == 0)
        rc = uv_async_init(srv->loop, &c->wake, on_wake);
    if (rc < 0) {
        PX_ERROR("cannot set up connection: %s", uv_strerror(rc));
        px_outq_destroy(&c->outq);
        free(c);
        return NULL;
    }
    c->h.handle.data = c;
    c->wake.data = c;
    uv_timer_init(srv->loop, &c->timer);
    c->timer.data = c;
    c->open_handles = 3;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    return c;
}

/* Closes a connection that never started. */
static void abandon(struct px_conn *c)
{
    c->finished = true;
    uv_close(&c->h.handle, on_close);
    uv_close((uv_handle_t *)&c->wake, on_close);
    uv_close((uv_handle_t *)&c->timer, on_close);
}

/* The common start of an accepted connection whose peer is named. */
static void start_accepted(struct px_conn *c)
{
    struct px_server *srv = c->srv;
    int rc;

    if (c->h.handle.type == UV_TCP) {
        uv_tcp_nodelay(&c->h.tcp, 1);
        uv_tcp_keepalive(&c->h.tcp, 1, KEEPALIVE_S);
    }
    c->accepted_ms = c->last_input_ms = uv_now(srv->loop);
    PX_DEBUG("connection %llu accepted from %s", (unsigned long long)c->num,
             c->peer);
    count_unauth(c);
    if (srv->limits.handshake_ms)
        uv_timer_start(&c->timer, handshake_late, srv->limits.handshake_ms,
                       0);
    px_conn_schedule(c);
    rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc == 0)
        c->reading = true;
}

void px_conn_accept(struct px_server *srv)
{
    struct px_conn *c;
    int rc;

    if (srv->tls) {
        px_conn_accept_tls(srv);
        return;
    }
    c = px_conn_new(srv, srv->ep.kind == CRN_EP_TCP ? UV_TCP
                                                    : UV_NAMED_PIPE);
    if (!c)
        return;
    rc = uv_accept(&srv->lis.stream, &c->h.stream);
    if (rc < 0) {
        PX_WARN("accept failed: %s", uv_strerror(rc));
        abandon(c);
        return;
    }
    peer_name(c);
    start_accepted(c);
}

int px_conn_start_plain(struct px_server *srv, int fd, const char *peer)
{
    struct px_conn *c = px_conn_new(srv, UV_NAMED_PIPE);
    int rc;

    if (!c)
        return -ENOMEM;
    rc = uv_pipe_open(&c->h.pipe, fd);
    if (rc < 0) {
        PX_WARN("connection from %s: %s", peer, uv_strerror(rc));
        close(fd);
        abandon(c);
        return rc;
    }
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    start_accepted(c);
    return 0;
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
    if (status == 0 && c->h.stream.write_queue_size < MAX_QUEUED(c))
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
    bufs[0] = uv_buf_init((char *)o->frame, (unsigned)o->frame_len);
    bufs[1] = uv_buf_init((char *)o->bulk, (unsigned)o->bulk_len);
    o->wreq.data = o;
    rc = uv_write(&o->wreq, &c->h.stream, bufs, o->bulk_len ? 2 : 1,
                  on_write);
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
            uv_read_stop(&c->h.stream);
            c->reading = false;
        }
        c->shut.data = c;
        if (uv_shutdown(&c->shut, &c->h.stream, on_shutdown) < 0)
            px_conn_close(c, NULL);
    }
}

/* Writes everything other threads queued. */
static void drain(struct px_conn *c)
{
    struct px_out *o = px_outq_take(&c->outq);

    while (o) {
        struct px_out *next = o->next;
        px_conn_send(c, o);
        o = next;
    }
}

static void on_wake(uv_async_t *a)
{
    struct px_conn *c = a->data;

    drain(c);
    if (atomic_load(&c->poked))
        px_conn_schedule(c);
}

static void sink_push(void *ctx, struct px_out *o)
{
    struct px_conn *c = ctx;

    px_outq_push(&c->outq, o);
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

/* --- execution ------------------------------------------------------------ */

static void work_run(uv_work_t *w)
{
    struct px_conn *c = w->data;
    struct px_req *batch = c->batch;

    c->batch = NULL;
    px_exec_batch(c->tenant, batch, &c->stop);
}

static void finish_close(struct px_conn *c);

static void work_done(uv_work_t *w, int status)
{
    struct px_conn *c = w->data;

    (void)status;
    c->working = false;
    px_req_free_list(c->batch);
    c->batch = NULL;
    if (c->state == PX_CONN_CLOSING) {
        finish_close(c);
        return;
    }
    if (!c->reading && !c->input_done && c->inq_bytes < MAX_QUEUED(c) &&
        uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
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
        px_exec_batch(c->tenant, batch, &c->stop);
        c->tenant->shm_nowait = false;
        drain(c);
        return;
    }
    c->work.data = c;
    c->working = true;
    if (uv_queue_work(c->srv->loop, &c->work, work_run, work_done) < 0) {
        c->working = false;
        px_conn_close(c, "cannot queue work");
    }
}

static void queue_req(struct px_conn *c, struct px_req *r)
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

/* The stream cannot be followed any more: answer (in order, after what is
 * queued) and close. */
static void out_of_step(struct px_conn *c, uint64_t seq, const char *why)
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
    queue_req(c, r);
}

/* --- input ---------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct px_conn *c = h->data;

    (void)suggested;
    if (c->bulk_req) {
        /* Bulk bytes go straight where the executor wants them. */
        *buf = uv_buf_init((char *)c->bulk_req->bulk + c->bulk_have,
                           (unsigned)(c->bulk_req->bulk_len - c->bulk_have));
        return;
    }
    if (c->icap - c->ilen < READ_ROOM) {
        size_t cap = c->ilen + READ_ROOM * 2;
        uint8_t *p;
        if (cap > PX_MAX_FRAME + CRN_FRAME_HEADER_LEN + READ_ROOM)
            cap = PX_MAX_FRAME + CRN_FRAME_HEADER_LEN + READ_ROOM;
        p = cap > c->icap ? realloc(c->ibuf, cap) : NULL;
        if (p) {
            c->ibuf = p;
            c->icap = cap;
        }
    }
    *buf = uv_buf_init((char *)c->ibuf + c->ilen,
                       (unsigned)(c->icap - c->ilen));
}

/* Handles the message M (taking it) that the frame held; POS_BULK is the
 * input after the frame, from which bulk bytes are taken.  Returns how
 * many bytes of bulk it took, or -1 to stop parsing. */
static long take_message(struct px_conn *c, Crane__ClientMessage *m,
                         const uint8_t *after, size_t after_len)
{
    uint64_t bulk = px_bulk_len(m);
    struct px_req *r;
    size_t n;

    if (bulk > PX_MAX_BULK) {
        char why[96];
        snprintf(why, sizeof(why), "bulk of %llu bytes over the %u limit",
                 (unsigned long long)bulk, PX_MAX_BULK);
        out_of_step(c, m->seq, why);
        crane__client_message__free_unpacked(m, NULL);
        return -1;
    }
    if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
        if (bulk) {
            crane__client_message__free_unpacked(m, NULL);
            px_handshake_refuse(c, "bulk data before the handshake ended");
            return -1;
        }
        px_handshake(c, m);
        return 0;
    }
    r = calloc(1, sizeof(*r));
    if (r && bulk)
        r->bulk = malloc(bulk);
    if (!r || (bulk && !r->bulk)) {
        free(r);
        crane__client_message__free_unpacked(m, NULL);
        out_of_step(c, 0, "out of memory for the bulk data");
        return -1;
    }
    r->seq = m->seq;
    if (m->msg_case == CRANE__CLIENT_MESSAGE__MSG_SHM_ATTACH &&
        attach_area(c, m->shm_attach, r->error, sizeof(r->error)) < 0) {
        /* Answered with the reason; bulk keeps to the stream. */
        crane__client_message__free_unpacked(m, NULL);
        queue_req(c, r);
        return 0;
    }
    if (m->shm_bulk) {
        /* The bytes are in ring 0: copied out now, in the stream's order,
         * which frees their room at once.  A piece out of place is
         * refused; nothing of it is used. */
        int rc = bulk && c->shm ? crn_shm_take(c->shm, CRN_SHM_TO_PROXY,
                                               m->shm_pos, bulk, r->bulk)
                                : -EPROTO;
        if (rc < 0) {
            snprintf(r->error, sizeof(r->error),
                     "shared-memory bytes out of place (position %llu, "
                     "%llu bytes)", (unsigned long long)m->shm_pos,
                     (unsigned long long)bulk);
            free(r->bulk);
            r->bulk = NULL;
            r->deferred = !m->want_reply;
            crane__client_message__free_unpacked(m, NULL);
            queue_req(c, r);
            return 0;
        }
        r->msg = m;
        r->bulk_len = bulk;
        queue_req(c, r);
        return 0;
    }
    r->msg = m;
    r->bulk_len = bulk;
    n = after_len < bulk ? after_len : bulk;
    if (n)
        memcpy(r->bulk, after, n);
    if (n < bulk) {
        c->bulk_req = r;
        c->bulk_have = n;
    } else {
        queue_req(c, r);
    }
    return (long)n;
}

/* Cuts the buffered input into frames and requests. */
static void parse(struct px_conn *c)
{
    size_t pos = 0;

    while (!c->input_done && !c->bulk_req && c->state != PX_CONN_CLOSING &&
           c->state != PX_CONN_HANDOFF) {
        const uint8_t *msg;
        size_t len, used;
        Crane__ClientMessage *m;
        long took;
        int rc = crn_frame_decode(c->ibuf + pos, c->ilen - pos, PX_MAX_FRAME,
                                  &msg, &len, &used);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            out_of_step(c, 0, "frame over the 1 MiB limit");
            break;
        }
        pos += used;
        m = crane__client_message__unpack(NULL, len, msg);
        if (!m) {
            struct px_req *r;
            if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
                px_handshake_refuse(c, "a frame that does not decode");
                break;
            }
            r = calloc(1, sizeof(*r));
            if (!r) {
                px_conn_close(c, "out of memory");
                break;
            }
            snprintf(r->error, sizeof(r->error), "frame does not decode");
            queue_req(c, r);
            continue;
        }
        took = take_message(c, m, c->ibuf + pos, c->ilen - pos);
        if (took < 0)
            break;
        pos += (size_t)took;
    }
    if (c->state == PX_CONN_CLOSING || c->input_done) {
        c->ilen = 0;
        return;
    }
    memmove(c->ibuf, c->ibuf + pos, c->ilen - pos);
    c->ilen -= pos;
}

static void close_tmp(uv_handle_t *h)
{
    free(h);
}

/* Descriptors that came with the stream's bytes: the latest is kept for
 * the ShmAttach it rides on, any other is closed (a client cannot make us
 * hold more than one). */
static void take_descriptors(struct px_conn *c)
{
    if (c->h.handle.type != UV_NAMED_PIPE)
        return;
    while (uv_pipe_pending_count(&c->h.pipe) > 0) {
        uv_pipe_t *tmp = malloc(sizeof(*tmp));
        uv_os_fd_t fd = -1;
        int kept = -1;
        if (!tmp || uv_pipe_init(c->srv->loop, tmp, 0) < 0) {
            free(tmp);
            px_conn_close(c, "out of memory");
            return;
        }
        tmp->data = NULL;
        if (uv_accept(&c->h.stream, (uv_stream_t *)tmp) == 0 &&
            uv_fileno((uv_handle_t *)tmp, &fd) == 0)
            kept = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        uv_close((uv_handle_t *)tmp, close_tmp);
        if (c->shm_fd >= 0)
            close(c->shm_fd);
        c->shm_fd = kept;
    }
}

/* ShmAttach: maps the client's area (the descriptor that came with this
 * frame, or a file in --shm-dir it names).  Returns 0 or sets WHY. */
static int attach_area(struct px_conn *c, const Crane__ShmAttach *a,
                       char *why, size_t why_len)
{
    struct crn_shm *s;
    int rc;

    if (c->srv->no_shm) {
        snprintf(why, why_len, "shared memory is off (--no-shm)");
        return -EPERM;
    }
    if (c->shm) {
        snprintf(why, why_len, "a shared area is attached already");
        return -EBUSY;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    s->fd = -1;
    if (a->name && a->name[0]) {
        char path[512];
        if (!c->srv->shm_dir || strchr(a->name, '/') ||
            strcmp(a->name, ".") == 0 || strcmp(a->name, "..") == 0) {
            snprintf(why, why_len, "no shared file '%.64s' here "
                     "(--shm-dir)", a->name);
            free(s);
            return -EPERM;
        }
        snprintf(path, sizeof(path), "%s/%s", c->srv->shm_dir, a->name);
        rc = crn_shm_map_file(path, 0, s);
        if (rc == 0 && (s->size != a->size || s->ring_len != a->ring_len)) {
            crn_shm_close(s);
            rc = -EINVAL;
        }
    } else if (c->shm_fd >= 0) {
        rc = crn_shm_map_fd(c->shm_fd, a->size, a->ring_len, true, s);
        c->shm_fd = -1;         /* taken, closed on failure */
    } else {
        rc = -EBADF;
    }
    if (rc < 0) {
        snprintf(why, why_len, "shared area of %llu bytes refused: %s",
                 (unsigned long long)a->size, strerror(-rc));
        free(s);
        return rc;
    }
    c->shm = s;
    c->tenant->shm_offered = s;
    PX_INFO("tenant %llu (%s pid %u): bulk bytes through %llu MiB of "
            "shared memory", (unsigned long long)c->tenant->num,
            c->tenant->program, c->tenant->pid,
            (unsigned long long)(a->size >> 20));
    return 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct px_conn *c = s->data;

    (void)buf;
    c->last_input_ms = uv_now(c->srv->loop);
    if (nread < 0) {
        px_conn_close(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    take_descriptors(c);
    if (nread == 0 || c->input_done || c->state == PX_CONN_CLOSING)
        return;
    if (c->bulk_req) {
        c->bulk_have += (size_t)nread;
        if (c->bulk_have < c->bulk_req->bulk_len)
            return;
        queue_req(c, c->bulk_req);
        c->bulk_req = NULL;
    } else {
        c->ilen += (size_t)nread;
    }
    parse(c);
    if (c->state == PX_CONN_HANDOFF) {
        /* What follows the handshake is the worker's to read. */
        if (c->reading) {
            uv_read_stop(&c->h.stream);
            c->reading = false;
        }
        px_super_handoff(c);
        return;
    }
    px_conn_schedule(c);
}

/* --- handing connections between supervisor and worker ------------------- */

const uint8_t *px_conn_pending_input(const struct px_conn *c, size_t *len)
{
    *len = c->ilen;
    return c->ibuf;
}

void px_conn_handed_over(struct px_conn *c)
{
    px_conn_close(c, "handed to a worker");
}

void px_conn_start_handed(struct px_conn *c, const uint8_t *input,
                          size_t len)
{
    struct px_server *srv = c->srv;

    /* A TLS connection arrives as its relay's unix socket. */
    if (c->h.handle.type == UV_TCP) {
        uv_tcp_nodelay(&c->h.tcp, 1);
        uv_tcp_keepalive(&c->h.tcp, 1, KEEPALIVE_S);
    }
    c->accepted_ms = c->last_input_ms = uv_now(srv->loop);
    if (len) {
        c->ibuf = malloc(len + READ_ROOM);
        if (!c->ibuf) {
            px_conn_close(c, "out of memory");
            return;
        }
        memcpy(c->ibuf, input, len);
        c->ilen = len;
        c->icap = len + READ_ROOM;
    }
    px_handshake_finish(c);
    if (c->state == PX_CONN_CLOSING)
        return;
    parse(c);
    px_conn_schedule(c);
    if (!c->input_done && c->state != PX_CONN_CLOSING &&
        uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
        c->reading = true;
}

/* --- closing -------------------------------------------------------------- */

static void finish_close(struct px_conn *c)
{
    struct px_tenant *t = c->tenant;

    if (c->finished)
        return;
    c->finished = true;
    if (c->resuming) {
        c->resuming->waiting = NULL;
        c->resuming = NULL;
    }
    if (t) {
        /* Nothing executes now: the area goes with the connection. */
        t->shm = t->shm_offered = NULL;
        px_tenant_detach(t);
        t->conn = NULL;
        c->tenant = NULL;
        px_server_tenant_released(c->srv, t);
    }
    uv_close(&c->h.handle, on_close);
    uv_close((uv_handle_t *)&c->wake, on_close);
    uv_close((uv_handle_t *)&c->timer, on_close);
}

void px_conn_close(struct px_conn *c, const char *why)
{
    struct px_tenant *t = c->tenant;

    if (c->state == PX_CONN_CLOSING)
        return;
    c->state = PX_CONN_CLOSING;
    atomic_store(&c->stop, true);
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    px_req_free_list(c->inq_head);
    c->inq_head = c->inq_tail = NULL;
    px_req_free(c->bulk_req);
    c->bulk_req = NULL;
    if (t)
        PX_INFO("tenant %llu (%s pid %u): disconnected%s%s",
                (unsigned long long)t->num, t->program, t->pid,
                why ? ": " : "", why ? why : "");
    else
        PX_DEBUG("connection %llu closed%s%s", (unsigned long long)c->num,
                 why ? ": " : "", why ? why : "");
    /* A worker blocked on a user event the client will never set must
     * finish; a tenant kept for --grace keeps its events. */
    if (t && c->working && (c->srv->grace_ms == 0 || c->srv->stopping))
        px_tenant_abort_user_events(t);
    if (!c->working)
        finish_close(c);
}
