/* A worker's kernel output (printf) captured from fd 1 for its replies. */
#include "kout.h"

#include "proto/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One per process: fd 1 is the process's (kout.h says why a worker). */
static struct {
    atomic_bool on;
    int rd;                     /* the pipe's read end (non-blocking) */
    int saved;                  /* the proxy's own fd 1 */
    pthread_t drainer;
    pthread_mutex_t lock;
    uint8_t *buf;               /* captured, not yet taken */
    size_t len, cap;
    size_t dropped;
} K = {.rd = -1, .saved = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* Reads what the pipe holds into K.buf; false at its end.  Under K.lock. */
static bool pull_locked(void)
{
    uint8_t tmp[16384];

    for (;;) {
        ssize_t n = read(K.rd, tmp, sizeof(tmp));
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        size_t want = K.len + (size_t)n;
        if (want > PX_KOUT_KEEP_MAX) {
            if (K.dropped == 0)
                CRN_WARN("kernel output: more than %u MiB waiting for a "
                        "reply; dropping the rest until one takes it",
                        PX_KOUT_KEEP_MAX >> 20);
            K.dropped += (size_t)n;
            continue;
        }
        if (want > K.cap) {
            size_t cap = K.cap ? K.cap * 2 : 65536;
            while (cap < want)
                cap *= 2;
            uint8_t *nb = realloc(K.buf, cap);
            if (!nb) {
                K.dropped += (size_t)n;
                CRN_ERROR("kernel output: no memory for %zu bytes", want);
                continue;
            }
            K.buf = nb;
            K.cap = cap;
        }
        memcpy(K.buf + K.len, tmp, (size_t)n);
        K.len = want;
    }
}

/* Empties the pipe as the vendor fills it, so that a kernel's write never
 * waits for a reply; ends when fd 1 is given back. */
static void *drain_main(void *arg)
{
    struct pollfd p = {.fd = K.rd, .events = POLLIN};
    bool open = true;

    (void)arg;
    while (open) {
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            break;
        pthread_mutex_lock(&K.lock);
        open = pull_locked();
        pthread_mutex_unlock(&K.lock);
    }
    return NULL;
}

int px_kout_start(char *why, size_t why_len)
{
    int fds[2];
    int rc;

    if (pipe2(fds, O_CLOEXEC) < 0) {
        rc = -errno;
        snprintf(why, why_len, "kernel output: pipe: %s", strerror(errno));
        return rc;
    }
    K.saved = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (K.saved < 0 || dup2(fds[1], 1) < 0 ||
        fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
        rc = -errno;
        snprintf(why, why_len, "kernel output: fd 1: %s", strerror(errno));
        goto fail;
    }
    close(fds[1]);
    fds[1] = -1;
    K.rd = fds[0];
    rc = -pthread_create(&K.drainer, NULL, drain_main, NULL);
    if (rc < 0) {
        snprintf(why, why_len, "kernel output: thread: %s", strerror(-rc));
        goto fail;
    }
    atomic_store(&K.on, true);
    return 0;
fail:
    if (K.saved >= 0) {
        dup2(K.saved, 1);
        close(K.saved);
        K.saved = -1;
    }
    close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    K.rd = -1;
    return rc;
}

uint8_t *px_kout_take(size_t *len)
{
    uint8_t *out = NULL;

    *len = 0;
    if (!atomic_load_explicit(&K.on, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&K.lock);
    pull_locked();
    if (K.len > PX_KOUT_REPLY_MAX) {
        out = malloc(PX_KOUT_REPLY_MAX);
        if (out) {
            memcpy(out, K.buf, PX_KOUT_REPLY_MAX);
            memmove(K.buf, K.buf + PX_KOUT_REPLY_MAX,
                    K.len - PX_KOUT_REPLY_MAX);
            K.len -= PX_KOUT_REPLY_MAX;
            *len = PX_KOUT_REPLY_MAX;
        }
    } else if (K.len > 0) {
        out = K.buf;
        *len = K.len;
        K.buf = NULL;
        K.len = K.cap = 0;
    }
    if (K.dropped) {
        CRN_WARN("kernel output: %zu bytes were dropped", K.dropped);
        K.dropped = 0;
    }
    pthread_mutex_unlock(&K.lock);
    return out;
}

void px_kout_stop(void)
{
    if (!atomic_exchange(&K.on, false))
        return;
    /* The pipe's last write end goes: the drainer reads to its end. */
    fflush(stdout);
    dup2(K.saved, 1);
    close(K.saved);
    K.saved = -1;
    pthread_join(K.drainer, NULL);
    for (size_t off = 0; off < K.len;) {
        ssize_t n = write(1, K.buf + off, K.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    free(K.buf);
    K.buf = NULL;
    K.len = K.cap = 0;
    close(K.rd);
    K.rd = -1;
}
