/* Records on a TLS session: reads and writes, with and without deadlines,
 * and the gathering of a write's records into few large sends. */
#include "proto/tls_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

/* Bytes of records gathered before they go out in one send: a 16 KiB
 * record each would otherwise cost a system call of its own. */
#define OUT_CAP (256u << 10)

/* Sends all LEN bytes; -1 with errno set on failure (EAGAIN: the socket's
 * SO_SNDTIMEO passed without progress). */
static int send_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int out_flush_locked(struct crn_tls *t)
{
    int rc = send_all(t->fd, t->out, t->out_len);

    t->out_len = 0;
    return rc;
}

/* GnuTLS's push: without SIGPIPE (a peer gone is an error, not a dead
 * daemon), and into the gathering buffer while its owner writes.  A record
 * of another thread (an alert, the answer to a key update) first sends
 * what is gathered, so the records keep their order. */
static ssize_t push(gnutls_transport_ptr_t p, const giovec_t *iov,
                    int iovcnt)
{
    struct crn_tls *t = p;
    ssize_t total = 0;

    pthread_mutex_lock(&t->out_lock);
    if (!t->out_on || !pthread_equal(t->out_owner, pthread_self())) {
        struct msghdr m = {.msg_iov = (struct iovec *)iov,
                           .msg_iovlen = (size_t)iovcnt};
        total = out_flush_locked(t) < 0 ? -1
                                        : sendmsg(t->fd, &m, MSG_NOSIGNAL);
        pthread_mutex_unlock(&t->out_lock);
        return total;
    }
    for (int i = 0; i < iovcnt; i++) {
        size_t len = iov[i].iov_len;
        if (t->out_len + len > OUT_CAP && out_flush_locked(t) < 0)
            goto fail;
        if (len > OUT_CAP) {
            if (send_all(t->fd, iov[i].iov_base, len) < 0)
                goto fail;
        } else {
            memcpy(t->out + t->out_len, iov[i].iov_base, len);
            t->out_len += len;
        }
        total += (ssize_t)len;
    }
    pthread_mutex_unlock(&t->out_lock);
    return total;
fail:
    pthread_mutex_unlock(&t->out_lock);
    return -1;
}

void crn_tls_io_init(struct crn_tls *t)
{
    pthread_mutex_init(&t->out_lock, NULL);
    /* Reads through GnuTLS's own recv and poll on the descriptor; writes
     * through push. */
    gnutls_transport_set_ptr2(t->s,
                              (gnutls_transport_ptr_t)(intptr_t)t->fd, t);
    gnutls_transport_set_vec_push_function(t->s, push);
}

void crn_tls_io_fini(struct crn_tls *t)
{
    pthread_mutex_destroy(&t->out_lock);
    free(t->out);
    t->out = NULL;
}

long crn_tls_read(struct crn_tls *t, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = gnutls_record_recv(t->s, buf, len);
        if (n >= 0)
            return (long)n;
        if (n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_TIMEDOUT)
            return -ETIMEDOUT;
        if (n == GNUTLS_E_PREMATURE_TERMINATION)
            return -ECONNRESET;
        return -EPROTO;
    }
}

long crn_tls_read_timed(struct crn_tls *t, void *buf, size_t len,
                        int timeout_ms)
{
    /* 0: no deadline of GnuTLS's own, the blocking socket waits. */
    gnutls_record_set_timeout(t->s, timeout_ms < 0 ? 0u
                                                   : (unsigned)timeout_ms);
    return crn_tls_read(t, buf, len);
}

static void gather(struct crn_tls *t, bool on)
{
    pthread_mutex_lock(&t->out_lock);
    if (on && !t->out)
        t->out = malloc(OUT_CAP);
    t->out_on = on && t->out;
    t->out_owner = pthread_self();
    pthread_mutex_unlock(&t->out_lock);
}

int crn_tls_write_all(struct crn_tls *t, const void *buf, size_t len)
{
    const char *p = buf;
    int rc = 0, flushed;

    gather(t, len > 16384);
    while (len > 0) {
        ssize_t n = gnutls_record_send(t->s, p, len);
        if (n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n < 0) {
            rc = n == GNUTLS_E_AGAIN ? -ETIMEDOUT : -EPIPE;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    pthread_mutex_lock(&t->out_lock);
    t->out_on = false;
    flushed = out_flush_locked(t);
    pthread_mutex_unlock(&t->out_lock);
    if (rc == 0 && flushed < 0)
        rc = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -EPIPE;
    return rc;
}

int crn_tls_write_all_timed(struct crn_tls *t, const void *buf, size_t len,
                            int timeout_ms)
{
    int ms = timeout_ms < 0 ? 0 : timeout_ms;

    if (ms != t->send_timeout_ms) {
        struct timeval tv = {.tv_sec = ms / 1000,
                             .tv_usec = (ms % 1000) * 1000};
        setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        t->send_timeout_ms = ms;
    }
    return crn_tls_write_all(t, buf, len);
}

bool crn_tls_pending(struct crn_tls *t)
{
    return gnutls_record_check_pending(t->s) > 0;
}
