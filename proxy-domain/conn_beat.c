/* Heartbeats: a thread that never waits on the vendor tells each client
 * whose call has executed (or whose read has been pending) for longer than
 * the interval it asked for that the proxy is alive (docs/remoting.md,
 * "Liveness"). */
#include "conn.h"

#include "proto/log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* The thread's tick while no client wants beats, and its bounds. */
#define IDLE_TICK_MS 250
#define MIN_TICK_MS 10
/* How long a beat written straight to a socket may wait for room once
 * part of it left (the rest must follow, or the stream is out of step). */
#define REST_WAIT_MS 1000

static struct {
    pthread_mutex_t lock;        /* the list and every conn's beat_* */
    pthread_cond_t cond;
    struct px_conn *head;
    pthread_t thread;
    bool started;
} beats = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

/* Writes FRAME whole on FD without waiting for room before its first
 * byte: 0, -EAGAIN (nothing left: the socket is full, so the client has
 * bytes to read anyway), or another -errno (the stream is broken). */
static int write_now(int fd, const uint8_t *frame, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = send(fd, frame + done, len - done,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if (done == 0)
            return -EAGAIN;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, REST_WAIT_MS) <= 0)
            return -ETIMEDOUT;
    }
    return 0;
}

/* Sends C a heartbeat: through its out queue when the loop thread is
 * free to write it, straight on its socket while the loop thread itself
 * executes C's calls (it writes nothing of C's meanwhile). */
static void beat(struct px_conn *c, uint32_t call, uint64_t ms)
{
    Crane__Reply r = CRANE__REPLY__INIT;
    struct px_out *o;
    uv_os_fd_t fd;
    int rc;

    r.running_call = call;
    r.running_ms = ms;
    if (!(o = px_out_pack_reply(&r)))
        return;
    if (!c->beat_inline) {
        px_outq_push(&c->outq, o);
        uv_async_send(&c->wake);
        return;
    }
    if (!c->beat_clean || uv_fileno(&c->tr.h.handle, &fd) < 0) {
        px_out_free(o);
        return;
    }
    rc = write_now(fd, o->frame, o->frame_len);
    px_out_free(o);
    if (rc < 0 && rc != -EAGAIN) {
        /* Part of a frame left: nothing else may follow it. */
        CRN_ERROR("connection %llu: a heartbeat could not be written whole "
                 "(%s); ending the stream",
                 (unsigned long long)c->num, strerror(-rc));
        shutdown(fd, SHUT_RDWR);
        c->beat_clean = false;
    }
}

/* Beats every connection that is due; returns the next tick in ms. */
static long beat_all(void)
{
    uint64_t now = uv_hrtime();
    long tick = IDLE_TICK_MS;

    for (struct px_conn *c = beats.head; c; c = c->beat_next) {
        struct px_tenant *t = c->tenant;
        unsigned ms = t ? atomic_load(&t->beat_ms) : 0;
        if (!ms)
            continue;
        if ((long)ms / 2 < tick)
            tick = ms / 2 > MIN_TICK_MS ? ms / 2 : MIN_TICK_MS;
        uint64_t run = atomic_load(&t->running_since);
        uint64_t pend = atomic_load(&t->pend_since);
        uint64_t since = run && (!pend || run < pend) ? run : pend;
        uint64_t period = (uint64_t)ms * 1000000u;
        if (!since || now - since < period || now - c->beat_last < period)
            continue;
        c->beat_last = now;
        beat(c, run ? atomic_load(&t->running_call) : 0,
             (now - since) / 1000000u);
    }
    return tick;
}

static void *beat_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&beats.lock);
    for (;;) {
        long tick = beat_all();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tick / 1000;
        ts.tv_nsec += (tick % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&beats.cond, &beats.lock, &ts);
    }
    return NULL;
}

void px_beat_add(struct px_conn *c)
{
    pthread_mutex_lock(&beats.lock);
    if (!beats.started) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        beats.started = pthread_create(&beats.thread, &a, beat_main, NULL) == 0;
        pthread_attr_destroy(&a);
        if (!beats.started)
            CRN_ERROR("cannot start the heartbeat thread: clients judge "
                     "this proxy by its answers alone");
    }
    if (!c->beat_listed) {
        c->beat_next = beats.head;
        beats.head = c;
        c->beat_listed = true;
    }
    pthread_mutex_unlock(&beats.lock);
}

void px_beat_remove(struct px_conn *c)
{
    pthread_mutex_lock(&beats.lock);
    for (struct px_conn **pp = &beats.head; *pp; pp = &(*pp)->beat_next)
        if (*pp == c) {
            *pp = c->beat_next;
            break;
        }
    c->beat_listed = false;
    pthread_mutex_unlock(&beats.lock);
}

void px_beat_inline(struct px_conn *c, bool on)
{
    pthread_mutex_lock(&beats.lock);
    c->beat_inline = on;
    c->beat_clean = on && c->tr.h.stream.write_queue_size == 0;
    pthread_mutex_unlock(&beats.lock);
}
