/* A connection's start: made, accepted in clear or from a TLS relay,
 * its peer named and counted in its handshake, its deadline armed, its
 * reading started (conn.h). */
#include "conn.h"

#include "proto/log.h"

#include <errno.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Who is at the other end, for per-peer bounds and logs: the user of a
 * unix socket's peer, the address of a TCP peer (any port). */
static void peer_name(struct px_conn *c)
{
    uv_os_fd_t fd;

    snprintf(c->peer, sizeof(c->peer), "?");
    if (uv_fileno(&c->tr.h.handle, &fd) < 0)
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
        if (uv_tcp_getpeername(&c->tr.h.tcp, (struct sockaddr *)&sa, &len) ==
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
        px_conn_refuse(c, "handshake not done within %llu ms",
                            (unsigned long long)c->srv->limits.handshake_ms);
}

struct px_conn *px_conn_new(struct px_server *srv, uv_handle_type type)
{
    struct px_conn *c = calloc(1, sizeof(*c));
    int rc;

    if (!c) {
        CRN_ERROR("out of memory accepting a connection");
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
    rc = px_transport_init(&c->tr, srv->loop, type, c, px_conn_on_alloc,
                           px_conn_on_read);
    if (rc == 0)
        rc = uv_async_init(srv->loop, &c->wake, px_conn_on_wake);
    if (rc < 0) {
        CRN_ERROR("cannot set up connection: %s", uv_strerror(rc));
        px_outq_destroy(&c->outq);
        pthread_mutex_destroy(&c->more_lock);
        free(c);
        return NULL;
    }
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

/* The common start of an accepted connection whose peer is named:
 * ORDER and ACCEPTED_MS those of its TLS handshake, or 0 for now. */
static void start_accepted(struct px_conn *c, uint64_t order,
                           uint64_t accepted_ms)
{
    struct px_server *srv = c->srv;
    uint64_t now = uv_now(srv->loop), spent;
    int rc;

    px_transport_tune(&c->tr, KEEPALIVE_S);
    c->accepted_ms = accepted_ms && accepted_ms <= now ? accepted_ms : now;
    c->last_input_ms = now;
    CRN_DEBUG("connection %llu accepted from %s", (unsigned long long)c->num,
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
    rc = px_transport_read_start(&c->tr);
    if (rc == 0)
        c->reading = true;
}

void px_conn_accept(struct px_server *srv)
{
    struct px_conn *c;
    int rc;

    c = px_conn_new(srv, srv->ep.kind == CRN_EP_TCP ? UV_TCP
                                                    : UV_NAMED_PIPE);
    if (!c)
        return;
    rc = uv_accept(&srv->lis.stream, &c->tr.h.stream);
    if (rc < 0) {
        CRN_WARN("accept failed: %s", uv_strerror(rc));
        px_conn_abandon(c);
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
    rc = uv_pipe_open(&c->tr.h.pipe, fd);
    if (rc < 0) {
        CRN_WARN("connection from %s: %s", peer, uv_strerror(rc));
        close(fd);
        px_conn_abandon(c);
        return rc;
    }
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    start_accepted(c, order, accepted_ms);
    return 0;
}
