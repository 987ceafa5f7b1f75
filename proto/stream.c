/* A byte stream in clear or through a TLS session, read and written by the
 * thread that uses its bytes (stream.h). */
#include "proto/stream.h"

#include "proto/spin.h"
#include "proto/tls.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* One step in clear: the descriptor may be blocking or not; poll() bounds
 * the wait.  Returns what send or recv did, or -ETIMEDOUT. */
static long clear_step(int fd, void *p, size_t len, bool write,
                       int timeout_ms)
{
    for (;;) {
        ssize_t n = write ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                          : recv(fd, p, len, MSG_DONTWAIT);
        if (n >= 0)
            return (long)n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        struct pollfd pf = {fd, write ? POLLOUT : POLLIN, 0};
        int rc = poll(&pf, 1, timeout_ms);
        if (rc == 0)
            return -ETIMEDOUT;
        if (rc < 0 && errno != EINTR)
            return -errno;
    }
}

long crn_stream_read(const struct crn_stream *s, void *p, size_t len,
                     int timeout_ms)
{
    if (s->tls)
        return crn_tls_read_timed(s->tls, p, len, timeout_ms);
    return clear_step(s->fd, p, len, false, timeout_ms);
}

int crn_stream_write_all(const struct crn_stream *s, const void *p,
                         size_t len, int timeout_ms)
{
    const char *at = p;

    if (s->tls)
        return crn_tls_write_all_timed(s->tls, p, len, timeout_ms);
    while (len > 0) {
        long n = clear_step(s->fd, (void *)at, len, true, timeout_ms);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO;
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

bool crn_stream_pending(const struct crn_stream *s)
{
    return s->tls && crn_tls_pending(s->tls);
}

bool crn_stream_readable(const struct crn_stream *s, long spin_ns,
                         int timeout_ms)
{
    return crn_stream_pending(s) ||
           crn_spin_readable(s->fd, spin_ns, timeout_ms);
}

void crn_stream_close(struct crn_stream *s)
{
    if (s->tls)
        crn_tls_close(s->tls);
    else if (s->fd >= 0)
        close(s->fd);
    s->tls = NULL;
    s->fd = -1;
}
