/* A worker's watch on its tenant, off the loop: the client's hang-up and
 * a call that runs past --max-kernel-seconds, told to the supervisor. */
#include "watchdog.h"

#include "proto/log.h"

#include "proto/remote_calls.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* How often a running call's age is looked at. */
#define TICK_MS 100

/* One per process: a worker serves one tenant, and the executor that
 * marks its calls has no handle on the worker. */
static struct {
    pthread_mutex_t lock;
    bool started;
    int wake;                    /* eventfd: the watched stream changed */
    int fd;                      /* the client's stream, -1: none */
    bool told;                   /* its hang-up was told */
    uint64_t num;
    char program[64];
    uint32_t pid;
    uint64_t max_call_ms;
    px_watch_end_fn end;
    void *arg;
    atomic_uint_fast64_t call_since_ms;  /* 0: no call runs */
    atomic_int call_case;
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = -1, .fd = -1};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void px_watch_call_begin(int msg_case)
{
    if (!wd.max_call_ms || crn_remote_call_is(msg_case, CRN_CALL_UNTIMED))
        return;
    atomic_store(&wd.call_case, msg_case);
    atomic_store(&wd.call_since_ms, now_ms());
}

void px_watch_call_end(void)
{
    atomic_store(&wd.call_since_ms, 0);
}

static void poke(void)
{
    uint64_t one = 1;

    if (wd.wake >= 0 && write(wd.wake, &one, sizeof(one)) < 0)
        CRN_DEBUG("watchdog: wake-up: %s", strerror(errno));
}

void px_watch_client(int fd, uint64_t num, const char *program, uint32_t pid)
{
    pthread_mutex_lock(&wd.lock);
    wd.fd = fd;
    wd.told = false;
    wd.num = num;
    snprintf(wd.program, sizeof(wd.program), "%s", program);
    wd.pid = pid;
    pthread_mutex_unlock(&wd.lock);
    poke();
}

void px_watch_forget(int fd)
{
    pthread_mutex_lock(&wd.lock);
    if (wd.fd == fd)
        wd.fd = -1;
    pthread_mutex_unlock(&wd.lock);
    poke();
}

/* A call past the bound: the tenant ends at once. */
static void check_call(void)
{
    uint64_t since = atomic_load(&wd.call_since_ms), ran;
    char why[256];

    if (!wd.max_call_ms || !since)
        return;
    ran = now_ms() - since;
    if (ran <= wd.max_call_ms)
        return;
    pthread_mutex_lock(&wd.lock);
    snprintf(why, sizeof(why),
             "tenant %llu (%s pid %u): its call %s has run %llu ms, past "
             "--max-kernel-seconds (%llu s)",
             (unsigned long long)wd.num, wd.program, wd.pid,
             crn_remote_call_name(atomic_load(&wd.call_case)), (unsigned long long)ran,
             (unsigned long long)(wd.max_call_ms / 1000));
    pthread_mutex_unlock(&wd.lock);
    CRN_ERROR("%s: ending the tenant", why);
    wd.end(wd.arg, why, true);
    /* Told once; the supervisor's kill follows. */
    wd.max_call_ms = 0;
}

static void *watch_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = wd.wake, .events = POLLIN}};
        int n = 1, timeout = wd.max_call_ms ? TICK_MS : -1;
        char why[256] = "";

        pthread_mutex_lock(&wd.lock);
        if (wd.fd >= 0 && !wd.told) {
            p[1] = (struct pollfd){.fd = wd.fd, .events = POLLRDHUP};
            n = 2;
        }
        pthread_mutex_unlock(&wd.lock);
        if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR) {
            CRN_ERROR("watchdog: poll: %s", strerror(errno));
            return NULL;
        }
        if (p[0].revents & POLLIN) {
            uint64_t v;
            if (read(wd.wake, &v, sizeof(v)) < 0)
                CRN_DEBUG("watchdog: %s", strerror(errno));
        }
        pthread_mutex_lock(&wd.lock);
        /* Still the stream polled (not forgotten meanwhile): told once. */
        if (n == 2 && wd.fd == p[1].fd && !wd.told &&
            (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            wd.told = true;
            snprintf(why, sizeof(why), "tenant %llu (%s pid %u): its client "
                     "left", (unsigned long long)wd.num, wd.program, wd.pid);
        }
        pthread_mutex_unlock(&wd.lock);
        if (why[0])
            wd.end(wd.arg, why, false);
        check_call();
    }
    return NULL;
}

int px_watch_start(uint64_t max_call_ms, px_watch_end_fn end, void *arg)
{
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    if (wd.started)
        return 0;
    wd.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wd.wake < 0)
        return -errno;
    wd.max_call_ms = max_call_ms;
    wd.end = end;
    wd.arg = arg;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, watch_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        close(wd.wake);
        wd.wake = -1;
        return -rc;
    }
    wd.started = true;
    return 0;
}
