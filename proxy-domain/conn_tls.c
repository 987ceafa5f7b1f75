/* A TCP connection's TLS handshake, on a thread of its own, before it is a
 * connection like any other.
 *
 * The handshake (proto/tls.c) blocks for up to --handshake-timeout, so it
 * runs neither on the loop nor on libuv's pool (whose threads execute the
 * tenants' calls): each runs on a short-lived thread, at most
 * --max-unauthenticated at once (a connection over the bound is closed at
 * once).  Its end comes back to the loop through an async handle.  A
 * session that succeeded is handed to a relay, and the connection proper
 * starts on the relay's plaintext unix socket (px_conn_start_plain): the
 * Hello, the tenant handshake and the hand-over to a worker process are
 * then exactly those of a unix connection.  A TLS session cannot move to
 * another process, its plaintext socket can: the supervisor keeps the
 * relay threads, the worker reads and writes plain frames (the cost is in
 * docs/results.md). */
#include "conn.h"

#include "log.h"

#include "proto/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tls_accept {
    uv_tcp_t tcp;                /* libuv's accepted handle, closed at once */
    uv_async_t done;             /* the thread's end, on the loop */
    int open_handles;
    struct px_server *srv;
    int fd;                      /* the TCP socket, the thread's */
    int plain;                   /* the relay's socket, or -errno */
    char peer[64];
    char why[512];
};

static void accept_freed(uv_handle_t *h)
{
    struct tls_accept *ta = h->data;

    if (--ta->open_handles == 0)
        free(ta);
}

static void handshake_done(uv_async_t *a)
{
    struct tls_accept *ta = a->data;
    struct px_server *srv = ta->srv;

    srv->tls_pending--;
    if (ta->plain < 0)
        PX_WARN("tcp connection from %s refused: %s", ta->peer, ta->why);
    else if (srv->stopping)
        close(ta->plain);
    else
        px_conn_start_plain(srv, ta->plain, ta->peer);
    uv_close((uv_handle_t *)&ta->done, accept_freed);
}

static void *handshake_main(void *arg)
{
    struct tls_accept *ta = arg;
    struct px_server *srv = ta->srv;
    unsigned ms = srv->limits.handshake_ms ? (unsigned)srv->limits.handshake_ms
                                           : 10000;

    ta->plain = crn_tls_wrap_server(srv->tls, ta->fd, ms, ta->why,
                                    sizeof(ta->why));
    uv_async_send(&ta->done);
    return NULL;
}

static void address(int fd, char *out, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);

    snprintf(out, len, "?");
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) < 0)
        return;
    if (sa.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, out,
                  (socklen_t)len);
}

void px_conn_accept_tls(struct px_server *srv)
{
    struct tls_accept *ta = calloc(1, sizeof(*ta));
    uv_os_fd_t ufd;
    pthread_attr_t attr;
    pthread_t th;
    int one = 1, rc;

    if (!ta) {
        PX_ERROR("out of memory accepting a connection");
        return;
    }
    ta->srv = srv;
    ta->fd = -1;
    ta->tcp.data = ta->done.data = ta;
    uv_tcp_init(srv->loop, &ta->tcp);
    ta->open_handles = 1;
    /* The accepted socket leaves libuv (a duplicate outlives the handle):
     * the handshake thread and then the relay own it. */
    rc = uv_accept(&srv->lis.stream, (uv_stream_t *)&ta->tcp);
    if (rc == 0 && (rc = uv_fileno((uv_handle_t *)&ta->tcp, &ufd)) == 0 &&
        (ta->fd = fcntl(ufd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = -errno;
    uv_close((uv_handle_t *)&ta->tcp, accept_freed);
    if (rc < 0) {
        PX_WARN("accept failed: %s", uv_strerror(rc));
        return;
    }
    /* libuv made it non-blocking; the handshake and relay block. */
    fcntl(ta->fd, F_SETFL, fcntl(ta->fd, F_GETFL) & ~O_NONBLOCK);
    address(ta->fd, ta->peer, sizeof(ta->peer));
    if (srv->limits.max_unauth && srv->tls_pending >= srv->limits.max_unauth) {
        PX_WARN("tcp connection from %s closed: %zu TLS handshakes "
                "already running (--max-unauthenticated)",
                ta->peer, srv->tls_pending);
        close(ta->fd);
        return;
    }
    setsockopt(ta->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(ta->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    if (uv_async_init(srv->loop, &ta->done, handshake_done) < 0) {
        close(ta->fd);
        return;
    }
    ta->open_handles++;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, handshake_main, ta);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        PX_WARN("tcp connection from %s closed: no thread for its TLS "
                "handshake: %s", ta->peer, strerror(rc));
        close(ta->fd);
        uv_close((uv_handle_t *)&ta->done, accept_freed);
        return;
    }
    srv->tls_pending++;
}
