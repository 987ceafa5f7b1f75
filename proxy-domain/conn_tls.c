/* A TCP connection's TLS handshake before it is a connection like any
 * other.
 *
 * The handshake runs on a thread of its own (proto/tls_uv.c), at most
 * --max-unauthenticated at once (a connection over the bound is closed at
 * once).  A session that succeeded is handed to a relay, and the
 * connection proper starts on the relay's plaintext unix socket
 * (px_conn_start_plain): the Hello, the tenant handshake and the
 * hand-over to a worker process are then exactly those of a unix
 * connection.  A TLS session cannot move to another process, its
 * plaintext socket can: the supervisor keeps the relay threads, the worker
 * reads and writes plain frames (the cost is in docs/results.md). */
#include "conn.h"

#include "log.h"

#include "proto/tls_uv.h"

#include <unistd.h>

static void handshake_done(void *arg, int fd, const char *peer,
                           const char *why)
{
    struct px_server *srv = arg;

    srv->tls_pending--;
    if (fd < 0)
        PX_WARN("tcp connection from %s refused: %s", peer, why);
    else if (srv->stopping)
        close(fd);
    else
        px_conn_start_plain(srv, fd, peer);
}

void px_conn_accept_tls(struct px_server *srv)
{
    unsigned ms = srv->limits.handshake_ms ? (unsigned)srv->limits.handshake_ms
                                           : 10000;
    int rc;

    if (srv->limits.max_unauth && srv->tls_pending >= srv->limits.max_unauth) {
        /* Accepted and closed: libuv accepts ahead, so it must be taken. */
        uv_tcp_t *t = malloc(sizeof(*t));
        if (t && uv_tcp_init(srv->loop, t) == 0) {
            uv_accept(&srv->lis.stream, (uv_stream_t *)t);
            uv_close((uv_handle_t *)t, (uv_close_cb)free);
        } else {
            free(t);
        }
        PX_WARN("tcp connection closed: %zu TLS handshakes already running "
                "(--max-unauthenticated)", srv->tls_pending);
        return;
    }
    rc = crn_tls_uv_accept(&srv->lis.stream, srv->tls, ms, handshake_done,
                           srv);
    if (rc < 0) {
        PX_WARN("tcp connection: %s", uv_strerror(rc));
        return;
    }
    srv->tls_pending++;
}
