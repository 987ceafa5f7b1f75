/* A TCP connection's TLS handshake before it is a connection like any
 * other.
 *
 * The handshake runs on a thread of its own (proto/tls_uv.c) within
 * --handshake-timeout, and counts against the bounds on connections not
 * yet authenticated from its accept on (preauth.c): past them the oldest
 * handshake, TLS or not, is cut short.  A session that succeeded is
 * handed to a relay, and the connection proper starts on the relay's
 * plaintext unix socket (px_conn_start_plain), keeping its place among the
 * unauthenticated and its deadline: the Hello, the tenant handshake and
 * the hand-over to a worker process are then exactly those of a unix
 * connection.  A TLS session cannot move to another process, its
 * plaintext socket can: the supervisor keeps the relay threads, the worker
 * reads and writes plain frames (the cost is in docs/results.md). */
#include "conn.h"

#include "proto/log.h"

#include "proto/tls_uv.h"

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* One TLS handshake under way, from the accept until its end is seen on
 * the loop (handshake_done frees it). */
struct tls_pending {
    struct px_preauth pa;        /* first: evicted() finds the rest */
    struct px_server *srv;
    struct crn_tls_accept *ta;   /* until handshake_done */
    uint64_t accepted_ms;
    bool evicted;
    char peer[64];
};

static void evicted(struct px_preauth *pa, const char *why)
{
    struct tls_pending *tp = (struct tls_pending *)pa;

    (void)why;
    tp->evicted = true;
    crn_tls_uv_cancel(tp->ta);
}

static void handshake_done(void *arg, int fd, const char *peer,
                           const char *why)
{
    struct tls_pending *tp = arg;
    struct px_server *srv = tp->srv;

    px_preauth_remove(srv, &tp->pa);
    if (fd < 0 && !tp->evicted)
        CRN_WARN("tcp connection from %s refused: %s", peer, why);
    else if (fd >= 0 && (tp->evicted || srv->stopping))
        close(fd);
    else if (fd >= 0)
        px_conn_start_plain(srv, fd, peer, tp->pa.order, tp->accepted_ms);
    free(tp);
}

void px_conn_accept_tls(struct px_server *srv)
{
    unsigned ms = srv->limits.handshake_ms ? (unsigned)srv->limits.handshake_ms
                                           : 10000;
    struct tls_pending *tp = calloc(1, sizeof(*tp));
    int rc;

    if (!tp) {
        /* Accepted and closed: libuv accepts ahead, so it must be taken. */
        uv_tcp_t *t = malloc(sizeof(*t));
        if (t && uv_tcp_init(srv->loop, t) == 0) {
            uv_accept(&srv->lis.stream, (uv_stream_t *)t);
            uv_close((uv_handle_t *)t, (uv_close_cb)free);
        } else {
            free(t);
        }
        CRN_ERROR("tcp connection closed: out of memory");
        return;
    }
    tp->srv = srv;
    tp->accepted_ms = uv_now(srv->loop);
    rc = crn_tls_uv_accept_handle(&srv->lis.stream, srv->tls, ms,
                                  handshake_done, tp, &tp->ta);
    if (rc < 0) {
        CRN_WARN("tcp connection: %s", uv_strerror(rc));
        free(tp);
        return;
    }
    snprintf(tp->peer, sizeof(tp->peer), "%s", crn_tls_uv_peer(tp->ta));
    tp->pa.order = px_preauth_order(srv);
    tp->pa.peer = tp->peer;
    tp->pa.evict = evicted;
    px_preauth_add(srv, &tp->pa);
}
