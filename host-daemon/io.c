/* Frames over blocking sockets with deadlines, for the daemon's threads. */
#include "io.h"

#include "daemon.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Reads exactly LEN bytes by DEADLINE; AT_START tells a clean close (no
 * byte yet) from one mid-frame. */
static int read_exact(int fd, void *p, size_t len, double deadline,
                      int at_start)
{
    size_t got = 0;

    while (got < len) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int wait_ms = -1;
        ssize_t n;

        if (deadline > 0) {
            double left = deadline - hd_now();
            if (left <= 0)
                return -ETIMEDOUT;
            wait_ms = (int)(left * 1000) + 1;
        }
        n = poll(&pfd, 1, wait_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -ETIMEDOUT;
        n = read(fd, (char *)p + got, len - got);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return at_start && got == 0 ? -ENODATA : -EPIPE;
        got += (size_t)n;
    }
    return 0;
}

int hd_frame_read_by(int fd, size_t max, double deadline, uint8_t **buf,
                     size_t *len)
{
    uint8_t hdr[4];
    uint32_t n;
    uint8_t *b;
    int rc;

    if ((rc = read_exact(fd, hdr, 4, deadline, 1)) < 0)
        return rc;
    n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
        (uint32_t)hdr[2] << 8 | hdr[3];
    if (n > max)
        return -EMSGSIZE;
    if (!(b = malloc(n ? n : 1)))
        return -ENOMEM;
    if ((rc = read_exact(fd, b, n, deadline, 0)) < 0) {
        free(b);
        return rc == -ENODATA ? -EPIPE : rc;
    }
    *buf = b;
    *len = n;
    return 0;
}

void hd_send_timeout(int fd, unsigned seconds)
{
    struct timeval tv = { .tv_sec = seconds };

    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}
