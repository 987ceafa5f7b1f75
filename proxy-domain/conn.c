/* One client connection: its life from accept to close, who the peer is,
 * the bounds per peer and handshake, and its replies written in order;
 * input in conn_input.c, execution in conn_exec.c. */
#include "conn_int.h"

#include "lanes.h"
#include "log.h"
#include "supervisor.h"
#include "ringpin.h"

#include "proto/shm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/vm_sockets.h>
#include <fcntl.h>
#include <unistd.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void on_wake(uv_async_t *a);

static void on_close(uv_handle_t *h)
{
    struct px_conn *c = h->data;
    struct px_server *srv = c->srv;

    if (--c->open_handles > 0)
        return;
    px_preauth_remove(srv, &c->pa);
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
        px_shm_close(c->shm);
        free(c->shm);
    }
    if (c->shm_leaving) {
        px_shm_close(c->shm_leaving);
        free(c->shm_leaving);
    }
    px_req_free_list(c->inq_head);
    px_req_free_list(c->more_head);
    px_req_free_list(c->done);
    pthread_mutex_destroy(&c->more_lock);
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

/* preauth.c closes C in its handshake to make room for newer ones. */
static void evicted(struct px_preauth *pa, const char *why)
{
    struct px_conn *c = (struct px_conn *)((char *)pa -
                                           offsetof(struct px_conn, pa));

    px_conn_close(c, why);
}

/* A connection in its handshake holds no tenant yet and may belong to
 * anyone: it counts against the bounds on those (preauth.c), the oldest
 * closed first, so that idle connections cannot keep a client that holds
 * the key out (each gets --handshake-timeout at most).  ORDER: its TLS
 * handshake's, or 0 for a new one. */
static void count_unauth(struct px_conn *c, uint64_t order)
{
    c->pa.order = order ? order : px_preauth_order(c->srv);
    c->pa.peer = c->peer;
    c->pa.evict = evicted;
    px_preauth_add(c->srv, &c->pa);
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
    px_preauth_remove(c->srv, &c->pa);
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
    atomic_init(&c->more_any, false);
    pthread_mutex_init(&c->more_lock, NULL);
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
        pthread_mutex_destroy(&c->more_lock);
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

/* The common start of an accepted connection whose peer is named:
 * ORDER and ACCEPTED_MS those of its TLS handshake, or 0 for now. */
static void start_accepted(struct px_conn *c, uint64_t order,
                           uint64_t accepted_ms)
{
    struct px_server *srv = c->srv;
    uint64_t now = uv_now(srv->loop), spent;
    int rc;

    if (c->h.handle.type == UV_TCP) {
        uv_tcp_nodelay(&c->h.tcp, 1);
        uv_tcp_keepalive(&c->h.tcp, 1, KEEPALIVE_S);
    }
    c->accepted_ms = accepted_ms && accepted_ms <= now ? accepted_ms : now;
    c->last_input_ms = now;
    PX_DEBUG("connection %llu accepted from %s", (unsigned long long)c->num,
             c->peer);
    count_unauth(c, order);
    if (c->state == PX_CONN_CLOSING)
        return;                  /* it was the oldest: evicted at once */
    /* The deadline counts from the TCP accept, its TLS handshake's time
     * included. */
    spent = now - c->accepted_ms;
    if (srv->limits.handshake_ms)
        uv_timer_start(&c->timer, handshake_late,
                       spent < srv->limits.handshake_ms
                           ? srv->limits.handshake_ms - spent
                           : 1,
                       0);
    px_conn_schedule(c);
    rc = px_conn_read_start(c);
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
    start_accepted(c, 0, 0);
}

int px_conn_start_plain(struct px_server *srv, int fd, const char *peer,
                        uint64_t order, uint64_t accepted_ms)
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
    start_accepted(c, order, accepted_ms);
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
        int n = uv_try_write(&c->h.stream, bufs, nbufs);
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
    rc = uv_write(&o->wreq, &c->h.stream, bufs, nbufs, on_write);
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
void px_conn_drain(struct px_conn *c)
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

/* --- closing -------------------------------------------------------------- */

void px_conn_finish_close(struct px_conn *c)
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
        /* Nothing executes now: the area goes with the connection, as do
         * its lanes. */
        t->shm = t->shm_offered = NULL;
        px_lanes_close(t);
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
    px_preauth_remove(c->srv, &c->pa);
    atomic_store(&c->stop, true);
    px_beat_remove(c);
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    /* A call waiting for its pieces ends at once (the lanes die with the
     * stream). */
    px_lanes_stop(t);
    px_req_free_list(c->inq_head);
    c->inq_head = c->inq_tail = NULL;
    px_req_free(c->bulk_req);
    c->bulk_req = NULL;
    if (t)
        PX_INFO("tenant %llu (%s pid %u): disconnected%s%s",
                (unsigned long long)t->num, t->program, t->pid,
                why ? ": " : "", why ? why : "");
    if (t && c->srv->role == PX_ROLE_WORKER)
        px_worker_unwatch(c, why);
    else
        PX_DEBUG("connection %llu closed%s%s", (unsigned long long)c->num,
                 why ? ": " : "", why ? why : "");
    /* A worker blocked on a user event the client will never set must
     * finish; a tenant kept for --grace keeps its events. */
    if (t && c->working && (c->srv->grace_ms == 0 || c->srv->stopping))
        px_tenant_abort_user_events(t);
    if (!c->working)
        px_conn_finish_close(c);
}
