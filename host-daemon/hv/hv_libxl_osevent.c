/* The libxl backend's answer to libxl's fd and timeout hooks: an epoll set
 * of timerfds and libxl's fds, which the daemon's loop polls as one fd. */
#ifdef HD_HAVE_LIBXL

#include "hv_libxl_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "proto/log.h"

/*
 * libxl says which fds to poll and when to wake it through hooks
 * (libxl_osevent_hooks) that it calls from inside any libxl call, on any
 * thread, with its own lock held; it is told back with
 * libxl_osevent_occurred_fd/_timeout, which must not be called from inside
 * a hook.  libuv handles may only be touched on the loop thread, and
 * uv_poll_init would also switch the fd to O_NONBLOCK, which libxl's save
 * helper (a child writing the migration stream to the same socket with
 * blocking writes) does not expect.  So libxl's fds go into an epoll set of
 * this backend's own and its timeouts become timerfds in that same set:
 * the hooks change the set directly (epoll_ctl and timerfd_settime are
 * thread-safe and leave the fds' flags alone), and the loop has a single
 * uv_poll on the epoll fd (hv_libxl_loop.c).  When it is readable the loop
 * thread takes the ready entries and calls libxl, holding no lock of ours.
 * A late call for a registration libxl has dropped meanwhile is harmless:
 * libxl keeps its for_libxl cookies valid until libxl_ctx_free and ignores
 * stale ones.
 */

/* epoll data of a timeout: this bit and the timeout's id; of an fd: the fd. */
#define TIMER_BIT (UINT64_C(1) << 63)

struct hv_libxl_fdreg {          /* one fd registration of libxl's */
    struct hv_libxl_fdreg *next;
    int fd;
    short events;                /* poll(2) bits */
    void *for_libxl;
};

struct hv_libxl_timereg {        /* one timeout of libxl's */
    struct hv_libxl_timereg *next; /* in hv->timeregs until it fires */
    uint64_t id;
    int tfd;                     /* a timerfd in hv->epfd */
    void *for_libxl;
};

/* --- the epoll set: libxl's fds ------------------------------------------ */

static uint32_t to_epoll(short events)
{
    return ((events & POLLIN) ? EPOLLIN : 0) |
           ((events & POLLOUT) ? EPOLLOUT : 0) |
           ((events & POLLPRI) ? EPOLLPRI : 0);
}

static short from_epoll(uint32_t events)
{
    return (short)(((events & EPOLLIN) ? POLLIN : 0) |
                   ((events & EPOLLOUT) ? POLLOUT : 0) |
                   ((events & EPOLLPRI) ? POLLPRI : 0) |
                   ((events & EPOLLERR) ? POLLERR : 0) |
                   ((events & EPOLLHUP) ? POLLHUP : 0));
}

/* Makes FD's entry in the epoll set ask for what its registrations want
 * together (libxl may register one fd more than once; epoll takes it once).
 * Called with hv->lock held. */
static int sync_fd(struct hv *hv, int fd)
{
    struct epoll_event ev = {.data.u64 = (uint32_t)fd};
    short want = 0;
    bool any = false;

    for (struct hv_libxl_fdreg *r = hv->fdregs; r; r = r->next) {
        if (r->fd == fd) {
            want |= r->events;
            any = true;
        }
    }
    ev.events = to_epoll(want);
    if (!any || !ev.events) {
        /* Gone already when libxl closed it first: nothing to remove. */
        if (epoll_ctl(hv->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 &&
            errno != ENOENT && errno != EBADF)
            return -errno;
        return 0;
    }
    if (epoll_ctl(hv->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        return 0;
    if (errno == ENOENT && epoll_ctl(hv->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
        return 0;
    /* A regular file, which poll(2) calls always ready: the libxl call that
     * uses it polls it itself on its own thread. */
    if (errno == EPERM)
        return 0;
    return -errno;
}

static int fd_register(void *user, int fd, void **reg_out, short events,
                       void *for_libxl)
{
    struct hv *hv = user;
    struct hv_libxl_fdreg *reg = malloc(sizeof(*reg));
    int rc;

    if (!reg)
        return ERROR_OSEVENT_REG_FAIL;
    reg->fd = fd;
    reg->events = events;
    reg->for_libxl = for_libxl;
    pthread_mutex_lock(&hv->lock);
    reg->next = hv->fdregs;
    hv->fdregs = reg;
    rc = sync_fd(hv, fd);
    if (rc < 0) {
        /* A failed hook must leave things as they were (libxl_event.h). */
        hv->fdregs = reg->next;
        sync_fd(hv, fd);
    }
    pthread_mutex_unlock(&hv->lock);
    if (rc < 0) {
        CRN_ERROR("libxl: cannot poll fd %d: %s", fd, strerror(-rc));
        free(reg);
        return ERROR_OSEVENT_REG_FAIL;
    }
    *reg_out = reg;
    return 0;
}

static int fd_modify(void *user, int fd, void **reg_io, short events)
{
    struct hv *hv = user;
    struct hv_libxl_fdreg *reg = *reg_io;
    short old = reg->events;
    int rc;

    pthread_mutex_lock(&hv->lock);
    reg->events = events;
    rc = sync_fd(hv, fd);
    if (rc < 0) {
        reg->events = old;
        sync_fd(hv, fd);
    }
    pthread_mutex_unlock(&hv->lock);
    if (rc < 0) {
        CRN_ERROR("libxl: cannot poll fd %d: %s", fd, strerror(-rc));
        return ERROR_OSEVENT_REG_FAIL;
    }
    return 0;
}

static void fd_deregister(void *user, int fd, void *reg_v)
{
    struct hv *hv = user;
    struct hv_libxl_fdreg **p;

    pthread_mutex_lock(&hv->lock);
    for (p = &hv->fdregs; *p && *p != reg_v; p = &(*p)->next)
        ;
    if (*p)
        *p = (*p)->next;
    sync_fd(hv, fd);
    pthread_mutex_unlock(&hv->lock);
    free(reg_v);
}

/* On the loop: tells libxl of every registration on FD. */
static void fd_ready(struct hv *hv, int fd, short revents)
{
    void *stack[8], **cookies = stack;
    size_t n = 0, cap = sizeof(stack) / sizeof(stack[0]);

    pthread_mutex_lock(&hv->lock);
    for (struct hv_libxl_fdreg *r = hv->fdregs; r; r = r->next)
        n += r->fd == fd;
    if (n > cap) {
        void **big = malloc(n * sizeof(*big));
        if (big) {
            cookies = big;
            cap = n;
        }
    }
    n = 0;
    for (struct hv_libxl_fdreg *r = hv->fdregs; r && n < cap; r = r->next) {
        if (r->fd == fd)
            cookies[n++] = r->for_libxl;
    }
    pthread_mutex_unlock(&hv->lock);
    /* libxl polls the fd again itself, so the events passed are a hint. */
    for (size_t i = 0; i < n && hv->ctx; i++)
        libxl_osevent_occurred_fd(hv->ctx, cookies[i], fd, revents, revents);
    if (cookies != stack)
        free(cookies);
}

/* --- the epoll set: libxl's timeouts, as timerfds ------------------------ */

/* Arms TFD for ABS on the clock of libxl's gettimeofday; {0,0} means
 * "now", which timerfd would read as "disarm". */
static int arm_timerfd(int tfd, struct timeval abs)
{
    struct itimerspec its = {
        .it_value = {.tv_sec = abs.tv_sec + abs.tv_usec / 1000000,
                     .tv_nsec = abs.tv_usec % 1000000 * 1000L},
    };

    if (its.it_value.tv_nsec < 0) { /* a timeval not normalized */
        its.it_value.tv_sec--;
        its.it_value.tv_nsec += 1000000000L;
    }
    if (its.it_value.tv_sec < 0 ||
        (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0))
        its.it_value = (struct timespec){.tv_nsec = 1};
    return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno
                                                                    : 0;
}

static int timeout_register(void *user, void **reg_out, struct timeval abs,
                            void *for_libxl)
{
    struct hv *hv = user;
    struct hv_libxl_timereg *t = calloc(1, sizeof(*t));
    struct epoll_event ev = {.events = EPOLLIN};
    int rc;

    if (!t)
        return ERROR_OSEVENT_REG_FAIL;
    t->for_libxl = for_libxl;
    t->tfd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (t->tfd < 0) {
        rc = -errno;
        goto fail;
    }
    rc = arm_timerfd(t->tfd, abs);
    if (rc < 0)
        goto fail;
    pthread_mutex_lock(&hv->lock);
    t->id = ++hv->next_timer_id;
    ev.data.u64 = TIMER_BIT | t->id;
    if (epoll_ctl(hv->epfd, EPOLL_CTL_ADD, t->tfd, &ev) < 0) {
        rc = -errno;
        pthread_mutex_unlock(&hv->lock);
        goto fail;
    }
    t->next = hv->timeregs;
    hv->timeregs = t;
    pthread_mutex_unlock(&hv->lock);
    *reg_out = t;
    return 0;

fail:
    CRN_ERROR("libxl: cannot set a timer: %s", strerror(-rc));
    if (t->tfd >= 0)
        close(t->tfd);
    free(t);
    return ERROR_OSEVENT_REG_FAIL;
}

/* libxl only ever moves a timeout to "now" (libxl_event.h), also to drop
 * it: it is then freed once it has fired and libxl has been told. */
static int timeout_modify(void *user, void **reg_io, struct timeval abs)
{
    struct hv *hv = user;
    struct hv_libxl_timereg *t = *reg_io;
    int rc;

    /* Under the lock: the loop thread closes the timerfd once it has fired,
     * and a modify may race with that firing (libxl_event.h). */
    pthread_mutex_lock(&hv->lock);
    rc = t->tfd >= 0 ? arm_timerfd(t->tfd, abs) : 0;
    pthread_mutex_unlock(&hv->lock);
    if (rc < 0) {
        CRN_ERROR("libxl: cannot move a timer: %s", strerror(-rc));
        return ERROR_OSEVENT_REG_FAIL;
    }
    return 0;
}

static void timeout_deregister(void *user, void *reg)
{
    /* Never called by libxl (libxl_event.h): see timeout_modify. */
    (void)user;
    (void)reg;
}

/* On the loop: timeout ID is due; libxl takes it back with this call. */
static void timer_ready(struct hv *hv, uint64_t id)
{
    struct hv_libxl_timereg **p, *t;

    pthread_mutex_lock(&hv->lock);
    for (p = &hv->timeregs; *p && (*p)->id != id; p = &(*p)->next)
        ;
    t = *p;
    if (t)
        *p = t->next;
    pthread_mutex_unlock(&hv->lock);
    if (!t)
        return;
    if (hv->ctx)
        libxl_osevent_occurred_timeout(hv->ctx, t->for_libxl);
    /* libxl no longer knows T: nothing else will touch it. */
    pthread_mutex_lock(&hv->lock);
    epoll_ctl(hv->epfd, EPOLL_CTL_DEL, t->tfd, NULL);
    close(t->tfd);
    t->tfd = -1;
    pthread_mutex_unlock(&hv->lock);
    free(t);
}

void hv_libxl__epoll_ready(uv_poll_t *handle, int status, int events)
{
    struct hv *hv = handle->data;
    struct epoll_event evs[32];
    int n;

    (void)events;
    if (hv->closing)
        return;
    if (status < 0) {
        CRN_ERROR("libxl: polling libxl's fds failed: %s", uv_strerror(status));
        return;
    }
    /* Level-triggered: whatever is left beyond 32 wakes the loop again. */
    n = epoll_wait(hv->epfd, evs, 32, 0);
    for (int i = 0; i < n && !hv->closing; i++) {
        uint64_t data = evs[i].data.u64;

        if (data & TIMER_BIT)
            timer_ready(hv, data & ~TIMER_BIT);
        else
            fd_ready(hv, (int)data, from_epoll(evs[i].events));
    }
}

int hv_libxl__osevent_init(struct hv *hv)
{
    hv->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (hv->epfd < 0) {
        int rc = -errno;

        CRN_ERROR("libxl: epoll_create1: %s", strerror(-rc));
        return rc;
    }
    return 0;
}

const libxl_osevent_hooks hv_libxl__osevent_hooks = {
    .fd_register = fd_register,
    .fd_modify = fd_modify,
    .fd_deregister = fd_deregister,
    .timeout_register = timeout_register,
    .timeout_modify = timeout_modify,
    .timeout_deregister = timeout_deregister,
};

void hv_libxl__osevent_free(struct hv *hv)
{
    struct hv_libxl_fdreg *r;
    struct hv_libxl_timereg *t;

    pthread_mutex_lock(&hv->lock);
    while ((r = hv->fdregs)) {
        hv->fdregs = r->next;
        free(r);
    }
    while ((t = hv->timeregs)) {
        hv->timeregs = t->next;
        close(t->tfd);
        free(t);
    }
    pthread_mutex_unlock(&hv->lock);
    if (hv->epfd >= 0)
        close(hv->epfd);
    hv->epfd = -1;
}

#endif /* HD_HAVE_LIBXL */
