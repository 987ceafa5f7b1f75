/* libvirt's event loop on crane-hostd's libuv loop: fd watches and timers. */
#include "hv_event.h"

#include "proto/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

/*
 * How it works.  libvirt calls six hooks (add/update/remove of fd watches
 * and of timers) from any thread: the loop thread while it dispatches, and
 * any thread in the middle of an API call (a migration thread's RPC
 * disables and re-enables the connection's watch; closing a connection
 * removes it).  uv handles may only be touched on the loop thread.  So each
 * registration is a `struct watch` in one table under one mutex, holding
 * two states: what libvirt wants (written by the hooks) and what is applied
 * to uv (loop thread only).  On the loop thread a hook applies the change
 * at once; elsewhere it wakes the loop with a uv_async_t whose callback
 * reconciles every watch.
 *
 * Removal never calls libvirt's free callback from inside the hook
 * (libvirt may hold the lock that the free callback takes): the callback
 * runs later on the loop thread, once the watch's uv handles are closed.
 *
 * Reused fd numbers.  libvirt closes a watched fd right after removing its
 * watch, and the number may come back at once for a new watch.  Each
 * handle watch polls its own dup() of the fd, closed only after its
 * uv_poll_t is closed: on the loop thread the poll is stopped before the
 * remove hook returns; off the loop thread it goes on watching the same
 * open file (never a reused number, never a closed fd, which would make
 * libuv's epoll_ctl fail and abort) until the loop reconciles, and its
 * events in between are dropped because the watch is marked removed.  The
 * only cost is that the socket's last reference closes a loop iteration
 * later.  (uv_poll_init makes the file non-blocking, as libvirt's own fds
 * already are.)
 *
 * The table is process-wide because libvirt's hooks carry no context and
 * libvirt accepts one implementation per process.
 */

enum watch_kind { WATCH_HANDLE, WATCH_TIMEOUT };

struct watch {
    struct watch *next;
    int id;
    enum watch_kind kind;

    /* What libvirt wants: written by the hooks under ev.lock. */
    int vir_fd;                 /* handles: libvirt's fd, passed back */
    int events;                 /* handles: VIR_EVENT_HANDLE_* */
    int frequency;              /* timeouts: ms; 0 every iteration; -1 off */
    bool restart;               /* timeouts: update asked to start over */
    bool poll_failed;           /* handles: uv stopped it on an error */
    bool removed;
    virEventHandleCallback handle_cb;
    virEventTimeoutCallback timeout_cb;
    void *opaque;
    virFreeCallback ff;

    /* What is applied to uv: loop thread only, under ev.lock. */
    int poll_fd;                /* handles: our dup of vir_fd, owned */
    bool uv_ready;              /* the uv handles are initialized */
    bool uv_broken;             /* initializing them failed: never fires */
    bool closing;               /* uv_close was called on them */
    int open_uv;                /* uv handles not yet closed */
    int uv_events;              /* handles: UV_* the poll runs with, 0 off */
    int applied_frequency;      /* timeouts: -1 when neither runs */
    uv_poll_t poll;
    uv_timer_t timer;           /* frequency > 0 */
    uv_idle_t idle;             /* frequency 0: once per loop iteration */
};

static struct {
    pthread_mutex_t lock;
    bool impl_installed;        /* virEventRegisterImpl done (once) */
    uv_loop_t *loop;            /* NULL while detached */
    pthread_t loop_thread;
    bool draining;              /* hv_event_shutdown runs the last callbacks
                                   on the loop thread */
    uv_async_t wake;
    int uv_closing;             /* uv handles whose close is pending */
    struct watch *watches;      /* every registration, removed ones until
                                   they are freed */
    int last_id;
} ev = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool on_loop_thread_locked(void)
{
    return ev.loop != NULL && pthread_equal(pthread_self(), ev.loop_thread);
}

bool hv_event_on_loop_thread(void)
{
    bool yes;

    pthread_mutex_lock(&ev.lock);
    yes = on_loop_thread_locked() ||
          (ev.draining && pthread_equal(pthread_self(), ev.loop_thread));
    pthread_mutex_unlock(&ev.lock);
    return yes;
}

/* The registration ID, removed ones included. */
static struct watch *find_locked(int id)
{
    for (struct watch *w = ev.watches; w != NULL; w = w->next)
        if (w->id == id)
            return w;
    return NULL;
}

static struct watch *find_live_locked(int id, enum watch_kind kind)
{
    struct watch *w = find_locked(id);

    return w != NULL && w->kind == kind && !w->removed ? w : NULL;
}

/* A positive id no registration holds, removed ones included: libvirt
 * must never see an id come back while it may still name the old one. */
static int next_id_locked(void)
{
    for (;;) {
        if (ev.last_id == INT_MAX)
            ev.last_id = 0;
        ev.last_id++;
        if (find_locked(ev.last_id) == NULL)
            return ev.last_id;
    }
}

static void unlink_locked(struct watch *w)
{
    for (struct watch **p = &ev.watches; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            w->next = NULL;
            return;
        }
    }
}

/* Ends a watch already unlinked: libvirt's free callback, our fd, memory.
 * Loop thread (or a detached process), never from inside a hook. */
static void free_watch(struct watch *w)
{
    if (w->ff != NULL)
        w->ff(w->opaque);
    if (w->poll_fd >= 0)
        close(w->poll_fd);
    free(w);
}

static void free_list(struct watch *list)
{
    while (list != NULL) {
        struct watch *next = list->next;

        free_watch(list);
        list = next;
    }
}

/* Asks the loop thread to reconcile; a no-op while detached (the next
 * hv_event_register reconciles everything). */
static void wake_loop_locked(void)
{
    if (ev.loop != NULL)
        uv_async_send(&ev.wake);
}

static int uv_events_of(int vir_events)
{
    int uv = 0;

    if (vir_events & VIR_EVENT_HANDLE_READABLE)
        uv |= UV_READABLE;
    if (vir_events & VIR_EVENT_HANDLE_WRITABLE)
        uv |= UV_WRITABLE;
    /* poll() always reports hang-ups; ask epoll for them too. */
    if (vir_events != 0)
        uv |= UV_DISCONNECT;
    return uv;
}

static int vir_events_of(int status, int uv_events)
{
    int vir = 0;

    if (status < 0)
        return VIR_EVENT_HANDLE_ERROR;
    if (uv_events & UV_READABLE)
        vir |= VIR_EVENT_HANDLE_READABLE;
    if (uv_events & UV_WRITABLE)
        vir |= VIR_EVENT_HANDLE_WRITABLE;
    if (uv_events & UV_DISCONNECT)
        vir |= VIR_EVENT_HANDLE_HANGUP;
    return vir;
}

/* --- dispatch (loop thread) ---------------------------------------------- */

static void on_poll(uv_poll_t *poll, int status, int uv_events)
{
    struct watch *w = poll->data;
    virEventHandleCallback cb;
    void *opaque;
    int vir_events;
    int id, fd;

    pthread_mutex_lock(&ev.lock);
    if (status < 0) {
        /* libuv has stopped the poll; it stays off until libvirt updates
         * the watch (libvirt closes a connection on an error). */
        w->uv_events = 0;
        w->poll_failed = true;
    }
    vir_events = vir_events_of(status, uv_events);
    /* What libvirt disabled off-thread and the loop has not applied yet
     * is not reported; errors and hang-ups are, while the watch is on. */
    vir_events &= w->events | VIR_EVENT_HANDLE_ERROR | VIR_EVENT_HANDLE_HANGUP;
    if (w->removed || w->events == 0 || vir_events == 0) {
        pthread_mutex_unlock(&ev.lock);
        return;
    }
    cb = w->handle_cb;
    opaque = w->opaque;
    id = w->id;
    fd = w->vir_fd;
    pthread_mutex_unlock(&ev.lock);
    /* Unlocked: the callback calls the hooks.  W stays valid until its
     * close callback, which cannot run before this returns. */
    cb(id, fd, vir_events, opaque);
}

static void dispatch_timeout(struct watch *w)
{
    virEventTimeoutCallback cb;
    void *opaque;
    int id;

    pthread_mutex_lock(&ev.lock);
    if (w->removed || w->frequency < 0) {
        pthread_mutex_unlock(&ev.lock);
        return;
    }
    cb = w->timeout_cb;
    opaque = w->opaque;
    id = w->id;
    pthread_mutex_unlock(&ev.lock);
    cb(id, opaque);
}

static void on_timer(uv_timer_t *timer)
{
    dispatch_timeout(timer->data);
}

static void on_idle(uv_idle_t *idle)
{
    dispatch_timeout(idle->data);
}

/* --- applying libvirt's wishes to uv (loop thread, under ev.lock) -------- */

static void on_uv_closed(uv_handle_t *handle)
{
    struct watch *w = handle->data;
    bool done;

    pthread_mutex_lock(&ev.lock);
    ev.uv_closing--;
    done = --w->open_uv == 0;
    if (done) {
        w->uv_ready = false;
        w->closing = false;
        w->uv_events = 0;
        w->applied_frequency = -1;
        /* Closed by hv_event_shutdown while libvirt still holds it: it
         * stays, to be started again on the next loop. */
        done = w->removed;
        if (done)
            unlink_locked(w);
    }
    pthread_mutex_unlock(&ev.lock);
    if (done)
        free_watch(w);
}

static void close_uv_locked(struct watch *w)
{
    if (!w->uv_ready || w->closing)
        return;
    w->closing = true;
    if (w->kind == WATCH_HANDLE) {
        /* uv_close stops the poll now: epoll forgets the fd before the
         * remove hook returns. */
        uv_close((uv_handle_t *)&w->poll, on_uv_closed);
        w->open_uv = 1;
    } else {
        uv_close((uv_handle_t *)&w->timer, on_uv_closed);
        uv_close((uv_handle_t *)&w->idle, on_uv_closed);
        w->open_uv = 2;
    }
    ev.uv_closing += w->open_uv;
}

static int init_uv_locked(struct watch *w)
{
    int rc;

    if (w->kind == WATCH_HANDLE) {
        rc = uv_poll_init(ev.loop, &w->poll, w->poll_fd);
        if (rc < 0)
            return rc;
        w->poll.data = w;
    } else {
        uv_timer_init(ev.loop, &w->timer);
        uv_idle_init(ev.loop, &w->idle);
        w->timer.data = w;
        w->idle.data = w;
        w->applied_frequency = -1;
    }
    w->uv_ready = true;
    return 0;
}

static void apply_handle_locked(struct watch *w)
{
    int want = w->poll_failed ? 0 : uv_events_of(w->events);
    int rc;

    if (want == w->uv_events)
        return;
    if (want == 0) {
        uv_poll_stop(&w->poll);
    } else {
        rc = uv_poll_start(&w->poll, want, on_poll);
        if (rc < 0) {
            CRN_ERROR("libvirt event watch %d on fd %d: %s", w->id, w->vir_fd,
                     uv_strerror(rc));
            want = 0;
        }
    }
    w->uv_events = want;
}

static void apply_timeout_locked(struct watch *w)
{
    if (w->frequency == w->applied_frequency && !w->restart)
        return;
    uv_timer_stop(&w->timer);
    uv_idle_stop(&w->idle);
    /* A 0 ms uv_timer re-armed from its own callback would run again in
     * the same timers phase forever (libuv < 1.45), starving I/O; an idle
     * handle runs once per iteration and keeps the poll from blocking. */
    if (w->frequency > 0)
        uv_timer_start(&w->timer, on_timer, (uint64_t)w->frequency,
                       (uint64_t)w->frequency);
    else if (w->frequency == 0)
        uv_idle_start(&w->idle, on_idle);
    w->applied_frequency = w->frequency;
    w->restart = false;
}

/*
 * Brings W's uv handles in line with what libvirt wants.  A removed watch
 * whose handles never existed moves to *DEAD, for the caller to free once
 * it is outside the lock and outside any hook.
 */
static void apply_locked(struct watch *w, struct watch **dead)
{
    int rc;

    if (w->removed) {
        if (w->uv_ready) {
            close_uv_locked(w);
        } else if (!w->closing) {
            unlink_locked(w);
            w->next = *dead;
            *dead = w;
        }
        return;
    }
    if (w->uv_broken || w->closing)
        return;
    if (!w->uv_ready) {
        rc = init_uv_locked(w);
        if (rc < 0) {
            w->uv_broken = true;
            CRN_ERROR("libvirt event watch %d on fd %d: %s: it will never "
                     "fire", w->id, w->vir_fd, uv_strerror(rc));
            return;
        }
    }
    if (w->kind == WATCH_HANDLE)
        apply_handle_locked(w);
    else
        apply_timeout_locked(w);
}

static void reconcile_locked(struct watch **dead)
{
    struct watch *w = ev.watches;

    while (w != NULL) {
        struct watch *next = w->next; /* apply_locked may unlink W */

        apply_locked(w, dead);
        w = next;
    }
}

static void on_wake(uv_async_t *async)
{
    struct watch *dead = NULL;

    (void)async;
    pthread_mutex_lock(&ev.lock);
    reconcile_locked(&dead);
    pthread_mutex_unlock(&ev.lock);
    free_list(dead);
}

/*
 * After a hook changed W: on the loop thread, apply now (a removal stops
 * the poll before the hook returns); otherwise let the loop do it.  A
 * removed watch without uv handles is freed by the wake callback, never
 * here, inside the hook.
 */
static void changed_locked(struct watch *w)
{
    if (!on_loop_thread_locked() || (w->removed && !w->uv_ready)) {
        wake_loop_locked();
        return;
    }
    apply_locked(w, NULL);
}

/* --- libvirt's hooks (any thread) ---------------------------------------- */

static struct watch *new_watch(enum watch_kind kind, void *opaque,
                               virFreeCallback ff)
{
    struct watch *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return NULL;
    w->kind = kind;
    w->opaque = opaque;
    w->ff = ff;
    w->poll_fd = -1;
    w->vir_fd = -1;
    w->frequency = -1;
    w->applied_frequency = -1;
    return w;
}

/* Links W in and, on the loop thread, starts it; returns its id or -1
 * (then W is unlinked and the caller frees it without calling ff). */
static int add_watch(struct watch *w)
{
    int id;

    pthread_mutex_lock(&ev.lock);
    w->id = id = next_id_locked();
    w->next = ev.watches;
    ev.watches = w;
    if (on_loop_thread_locked()) {
        apply_locked(w, NULL);
        if (w->uv_broken) {
            unlink_locked(w);
            id = -1;
        }
    } else {
        wake_loop_locked();
    }
    pthread_mutex_unlock(&ev.lock);
    return id;
}

static int add_handle(int fd, int events, virEventHandleCallback cb,
                      void *opaque, virFreeCallback ff)
{
    struct watch *w = new_watch(WATCH_HANDLE, opaque, ff);
    int id;

    if (w == NULL)
        return -1;
    w->poll_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (w->poll_fd < 0) {
        CRN_ERROR("libvirt event watch on fd %d: dup: %s", fd,
                 strerror(errno));
        free(w);
        return -1;
    }
    w->vir_fd = fd;
    w->events = events;
    w->handle_cb = cb;
    id = add_watch(w);
    if (id < 0) {
        close(w->poll_fd);
        free(w);
    }
    return id;
}

static void update_handle(int id, int events)
{
    struct watch *w;

    pthread_mutex_lock(&ev.lock);
    w = find_live_locked(id, WATCH_HANDLE);
    if (w != NULL) {
        w->events = events;
        w->poll_failed = false;
        changed_locked(w);
    }
    pthread_mutex_unlock(&ev.lock);
}

static int remove_watch(int id, enum watch_kind kind)
{
    struct watch *w;

    pthread_mutex_lock(&ev.lock);
    w = find_live_locked(id, kind);
    if (w != NULL) {
        w->removed = true;
        changed_locked(w);
    }
    pthread_mutex_unlock(&ev.lock);
    return w != NULL ? 0 : -1;
}

static int remove_handle(int id)
{
    return remove_watch(id, WATCH_HANDLE);
}

static int add_timeout(int frequency, virEventTimeoutCallback cb,
                       void *opaque, virFreeCallback ff)
{
    struct watch *w = new_watch(WATCH_TIMEOUT, opaque, ff);
    int id;

    if (w == NULL)
        return -1;
    w->frequency = frequency < 0 ? -1 : frequency;
    w->timeout_cb = cb;
    id = add_watch(w);
    if (id < 0)
        free(w);
    return id;
}

static void update_timeout(int id, int frequency)
{
    struct watch *w;

    pthread_mutex_lock(&ev.lock);
    w = find_live_locked(id, WATCH_TIMEOUT);
    if (w != NULL) {
        w->frequency = frequency < 0 ? -1 : frequency;
        /* libvirt counts a new period from every update. */
        w->restart = true;
        changed_locked(w);
    }
    pthread_mutex_unlock(&ev.lock);
}

static int remove_timeout(int id)
{
    return remove_watch(id, WATCH_TIMEOUT);
}

/* --- attaching and detaching --------------------------------------------- */

int hv_event_register(uv_loop_t *loop)
{
    struct watch *dead = NULL;
    int rc;

    pthread_mutex_lock(&ev.lock);
    if (ev.loop != NULL) {
        rc = ev.loop == loop ? 0 : -EBUSY;
        pthread_mutex_unlock(&ev.lock);
        return rc;
    }
    rc = uv_async_init(loop, &ev.wake, on_wake);
    if (rc < 0) {
        pthread_mutex_unlock(&ev.lock);
        CRN_ERROR("libvirt event loop: %s", uv_strerror(rc));
        return rc;
    }
    /* The wake-up alone must not keep uv_run from returning. */
    uv_unref((uv_handle_t *)&ev.wake);
    ev.loop = loop;
    ev.loop_thread = pthread_self();
    /* Watches that outlived an earlier loop start on this one. */
    reconcile_locked(&dead);
    if (!ev.impl_installed) {
        virEventRegisterImpl(add_handle, update_handle, remove_handle,
                             add_timeout, update_timeout, remove_timeout);
        ev.impl_installed = true;
    }
    pthread_mutex_unlock(&ev.lock);
    free_list(dead);
    return 0;
}

static void on_wake_closed(uv_handle_t *handle)
{
    (void)handle;
    pthread_mutex_lock(&ev.lock);
    ev.uv_closing--;
    pthread_mutex_unlock(&ev.lock);
}

/* Unlinks every removed watch with no uv handle left into a list. */
static struct watch *take_removed_locked(void)
{
    struct watch *dead = NULL;
    struct watch *w = ev.watches;

    while (w != NULL) {
        struct watch *next = w->next;

        if (w->removed && !w->uv_ready && !w->closing) {
            unlink_locked(w);
            w->next = dead;
            dead = w;
        }
        w = next;
    }
    return dead;
}

void hv_event_shutdown(void)
{
    uv_loop_t *loop;

    pthread_mutex_lock(&ev.lock);
    loop = ev.loop;
    if (loop == NULL) {
        pthread_mutex_unlock(&ev.lock);
        return;
    }
    /* From here on hooks only record (no uv_async_send on a closing
     * handle), including those that free callbacks below call. */
    ev.loop = NULL;
    ev.draining = true;
    for (struct watch *w = ev.watches; w != NULL; w = w->next)
        close_uv_locked(w);
    uv_close((uv_handle_t *)&ev.wake, on_wake_closed);
    ev.uv_closing++;
    pthread_mutex_unlock(&ev.lock);

    /* Close callbacks free removed watches; their free callbacks may
     * remove more (a connection's last reference going away). */
    for (;;) {
        struct watch *dead;
        int closing;

        pthread_mutex_lock(&ev.lock);
        dead = take_removed_locked();
        closing = ev.uv_closing;
        pthread_mutex_unlock(&ev.lock);
        if (dead == NULL && closing == 0)
            break;
        free_list(dead);
        if (closing > 0)
            uv_run(loop, UV_RUN_NOWAIT);
    }
    pthread_mutex_lock(&ev.lock);
    ev.draining = false;
    pthread_mutex_unlock(&ev.lock);
}
