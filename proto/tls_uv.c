/* TLS for libuv servers: a TCP connection's handshake off the loop. */
#include "proto/tls_uv.h"

#include "proto/endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tls_accept {
    uv_tcp_t tcp;                /* libuv's accepted handle, closed at once */
    uv_async_t done;             /* the thread's end, on the loop */
    int open_handles;
    const struct crn_tls_config *cfg;
    unsigned timeout_ms;
    crn_tls_accepted_fn cb;
    void *arg;
    int fd;                      /* the TCP socket, the thread's */
    int plain;                   /* the relay's socket, or -errno */
    /* The loop may cut a handshake short (crn_tls_uv_cancel): under LOCK,
     * FD stays open until FINISHED is set, so that a shutdown from the
     * loop never meets a descriptor that was closed and reused. */
    pthread_mutex_t lock;
    bool finished;
    bool cancelled;
    char peer[64];
    char why[512];
};

static void accept_freed(uv_handle_t *h)
{
    struct tls_accept *ta = h->data;

    if (--ta->open_handles == 0) {
        pthread_mutex_destroy(&ta->lock);
        free(ta);
    }
}

static void handshake_done(uv_async_t *a)
{
    struct tls_accept *ta = a->data;

    ta->cb(ta->arg, ta->plain, ta->peer, ta->why);
    uv_close((uv_handle_t *)&ta->done, accept_freed);
}

static void *handshake_main(void *arg)
{
    struct tls_accept *ta = arg;
    struct crn_tls *t = NULL;
    bool cancelled;
    int rc = crn_tls_server(ta->cfg, ta->fd, ta->timeout_ms, &t, ta->why,
                            sizeof(ta->why));

    pthread_mutex_lock(&ta->lock);
    ta->finished = true;
    cancelled = ta->cancelled;
    pthread_mutex_unlock(&ta->lock);
    if (rc < 0) {
        close(ta->fd);
        ta->plain = rc;
        if (cancelled)
            snprintf(ta->why, sizeof(ta->why), "closed in its handshake");
    } else if (cancelled) {
        crn_tls_close(t);
        ta->plain = -ECANCELED;
        snprintf(ta->why, sizeof(ta->why), "closed in its handshake");
    } else {
        ta->plain = crn_tls_relay(t);
        if (ta->plain < 0)
            snprintf(ta->why, sizeof(ta->why), "TLS relay: %s",
                     strerror(-ta->plain));
    }
    uv_async_send(&ta->done);
    return NULL;
}

int crn_tls_uv_accept(uv_stream_t *listener, const struct crn_tls_config *cfg,
                      unsigned timeout_ms, crn_tls_accepted_fn done,
                      void *arg)
{
    return crn_tls_uv_accept_handle(listener, cfg, timeout_ms, done, arg,
                                    NULL);
}

void crn_tls_uv_cancel(struct crn_tls_accept *h)
{
    struct tls_accept *ta = (struct tls_accept *)h;

    pthread_mutex_lock(&ta->lock);
    if (!ta->finished && !ta->cancelled) {
        ta->cancelled = true;
        /* The thread's reads and writes fail at once: it ends. */
        shutdown(ta->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&ta->lock);
}

const char *crn_tls_uv_peer(const struct crn_tls_accept *h)
{
    return ((const struct tls_accept *)h)->peer;
}

int crn_tls_uv_accept_handle(uv_stream_t *listener,
                             const struct crn_tls_config *cfg,
                             unsigned timeout_ms, crn_tls_accepted_fn done,
                             void *arg, struct crn_tls_accept **out)
{
    struct tls_accept *ta = calloc(1, sizeof(*ta));
    uv_os_fd_t ufd;
    pthread_attr_t attr;
    pthread_t th;
    int one = 1, rc;

    if (!ta)
        return -ENOMEM;
    ta->cfg = cfg;
    ta->timeout_ms = timeout_ms;
    ta->cb = done;
    ta->arg = arg;
    ta->fd = -1;
    pthread_mutex_init(&ta->lock, NULL);
    ta->tcp.data = ta->done.data = ta;
    uv_tcp_init(listener->loop, &ta->tcp);
    ta->open_handles = 1;
    /* The accepted socket leaves libuv (a duplicate outlives the handle):
     * the handshake thread and then the relay own it. */
    rc = uv_accept(listener, (uv_stream_t *)&ta->tcp);
    if (rc == 0 && (rc = uv_fileno((uv_handle_t *)&ta->tcp, &ufd)) == 0 &&
        (ta->fd = fcntl(ufd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = -errno;
    uv_close((uv_handle_t *)&ta->tcp, accept_freed);
    if (rc < 0)
        return rc;
    /* libuv made it non-blocking; the handshake and the relay block. */
    fcntl(ta->fd, F_SETFL, fcntl(ta->fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(ta->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(ta->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    crn_endpoint_peer_name(ta->fd, ta->peer, sizeof(ta->peer));
    if ((rc = uv_async_init(listener->loop, &ta->done, handshake_done)) < 0) {
        close(ta->fd);
        return rc;
    }
    ta->open_handles++;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, handshake_main, ta);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        close(ta->fd);
        uv_close((uv_handle_t *)&ta->done, accept_freed);
        return -rc;
    }
    if (out)
        *out = (struct crn_tls_accept *)ta;
    return 0;
}
