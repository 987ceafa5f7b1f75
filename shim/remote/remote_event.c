/* The remote backend's events and synchronisation: user events, event
 * callbacks, clFinish/clFlush/clWaitForEvents, markers and barriers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/log.h"
#include "remote.h"

/* --- events */

/*
 * The proxy runs one program's calls in order, so a wait it executes holds
 * back every later call of the program, a clSetUserEventStatus from
 * another thread included.  While user events this client made are unset,
 * waits therefore happen here instead: the proxy is asked to notify each
 * event's completion (WatchEvent) and the waiting thread sleeps until the
 * notices came, leaving the stream free.  Otherwise a wait is one Sync.
 */
static atomic_long unset_user_events;

cl_event CL_API_CALL rc_clCreateUserEvent(cl_context c, cl_int *errcode_ret)
{
    Crane__CreateUserEvent ue = CRANE__CREATE_USER_EVENT__INIT;
    struct rc_user_event *u =
        rc_obj_new(SHIM_EVENT, sizeof(struct rc_user_event));

    if (!u) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    u->obj.user_event = true;
    ue.id = u->obj.id;
    ue.context = RC_ID(c);
    RC_MSG(m, create_user_event, CREATE_USER_EVENT, &ue);
    cl_event e = rc_created(&u->obj, &m, NULL, 0, errcode_ret);
    if (e)
        atomic_fetch_add(&unset_user_events, 1);
    return e;
}

/* The user event U is set or gone: one fewer to wait around. */
static void user_event_done(struct rc_user_event *u)
{
    if (!atomic_exchange(&u->set, true))
        atomic_fetch_sub(&unset_user_events, 1);
}

/*
 * A wait on user events alone needs no notice from the proxy: a user event
 * is complete when this client set it, and the set is on the stream ahead
 * of anything the woken thread sends next (the proxy runs a program's
 * messages in order).  Such waiters sleep on this condition, which every
 * set wakes: as soon as native, without the set's trip to the proxy, the
 * vendor's callback there and the Notify back (issue 21: 2.6x native on
 * PoCL with them).
 */
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t set_cond = PTHREAD_COND_INITIALIZER;

cl_int CL_API_CALL rc_clSetUserEventStatus(cl_event e, cl_int status)
{
    Crane__SetUserEventStatus us = CRANE__SET_USER_EVENT_STATUS__INIT;
    struct rc_user_event *u = (struct rc_user_event *)e;

    us.event = RC_ID(e);
    us.status = status;
    RC_MSG(m, set_user_event_status, SET_USER_EVENT_STATUS, &us);
    cl_int err = shim_remote_send(&m, NULL, 0);
    if (err != CL_SUCCESS)
        return err;
    user_event_done(u);
    /* Queued: whatever a woken thread sends comes after it. */
    atomic_store(&u->status, status);
    pthread_mutex_lock(&set_lock);
    atomic_store(&u->completed, true);
    pthread_cond_broadcast(&set_cond);
    pthread_mutex_unlock(&set_lock);
    /* Work waiting on it should start now, not at the next flush. */
    return shim_remote_flush();
}

/* True when every one of the N events at EV is a user event of ours. */
static bool all_user_events(cl_uint n, const cl_event *ev)
{
    for (cl_uint i = 0; i < n; i++)
        if (!ev[i] || !((struct rc_obj *)ev[i])->user_event)
            return false;
    return true;
}

/* Waits until this client set each of the N user events at EV (or the
 * connection is gone). */
static cl_int wait_user_events(cl_uint n, const cl_event *ev)
{
    bool failed = false;

    pthread_mutex_lock(&set_lock);
    for (cl_uint i = 0; i < n; i++) {
        struct rc_user_event *u = (struct rc_user_event *)ev[i];
        while (!atomic_load(&u->completed) && shim_remote_alive()) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100 * 1000 * 1000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&set_cond, &set_lock, &until);
        }
        if (!atomic_load(&u->completed)) {
            pthread_mutex_unlock(&set_lock);
            return CL_DEVICE_NOT_AVAILABLE;
        }
        failed |= atomic_load(&u->status) < 0;
    }
    pthread_mutex_unlock(&set_lock);
    return failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
                  : CL_SUCCESS;
}

/* Completion notices awaited by one thread: shared with the callback
 * thread, freed by whoever drops the last reference. */
struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t refs, pending;
    bool failed;
};

static void waiter_drop(struct waiter *w, bool notified, cl_int status)
{
    pthread_mutex_lock(&w->lock);
    if (notified) {
        w->pending--;
        w->failed |= status < 0;
        pthread_cond_broadcast(&w->cond);
    }
    bool last = --w->refs == 0;
    pthread_mutex_unlock(&w->lock);
    if (last) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
    }
}

static void CL_CALLBACK waiter_notified(cl_event e, cl_int status, void *data)
{
    (void)e;
    waiter_drop(data, true, status);
}

/* Waits for the N events at IDS through WatchEvent notices. */
static cl_int wait_watched(const uint64_t *ids, size_t n)
{
    struct waiter *w = calloc(1, sizeof(*w));
    uint64_t *cookies = calloc(n, sizeof(*cookies));
    cl_int err = CL_SUCCESS;
    size_t sent = 0;

    if (!w || !cookies) {
        free(w);
        free(cookies);
        return CL_OUT_OF_HOST_MEMORY;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->refs = n + 1;
    w->pending = n;
    /* Batched, the last one answered: its reply brings any earlier one's
     * error. */
    for (; sent < n && err == CL_SUCCESS; sent++) {
        Crane__WatchEvent we = CRANE__WATCH_EVENT__INIT;
        struct rc_watch *rw = malloc(sizeof(*rw));
        if (!rw) {
            err = CL_OUT_OF_HOST_MEMORY;
            break;
        }
        *rw = (struct rc_watch){waiter_notified, NULL, w, true};
        if (!(cookies[sent] = shim_remote_watch_add(rw))) {
            free(rw);
            err = CL_OUT_OF_HOST_MEMORY;
            break;
        }
        we.event = ids[sent];
        we.status = CL_COMPLETE;
        we.cookie = cookies[sent];
        RC_MSG(m, watch_event, WATCH_EVENT, &we);
        if (sent + 1 < n) {
            err = shim_remote_send(&m, NULL, 0);
        } else {
            struct rc_reply r;
            err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
            shim_remote_reply_free(&r);
        }
    }
    /* Watches that never reached the proxy, or all of them after an
     * error: taken back here, unless a notice is already on its way. */
    for (size_t i = 0; i < n; i++) {
        bool cancel = i >= sent || err != CL_SUCCESS;
        struct rc_watch *rw =
            cancel && cookies[i] ? shim_remote_watch_take(cookies[i]) : NULL;
        if (cancel && (rw || !cookies[i])) {
            free(rw);
            waiter_drop(w, true, 0);
        }
    }
    free(cookies);
    pthread_mutex_lock(&w->lock);
    while (w->pending && shim_remote_alive()) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&w->cond, &w->lock, &until);
    }
    bool done = w->pending == 0, failed = w->failed;
    pthread_mutex_unlock(&w->lock);
    /* If the stream died, the notices never come: the waiter is left to
     * the watches (freed with the connection's maps, without a call). */
    if (done)
        waiter_drop(w, false, 0);
    if (err == CL_SUCCESS && !done)
        err = CL_DEVICE_NOT_AVAILABLE;
    if (err == CL_SUCCESS && failed)
        err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    return err;
}

cl_int CL_API_CALL rc_clSetEventCallback(cl_event e, cl_int type,
                                         void(CL_CALLBACK *fn)(cl_event,
                                                               cl_int, void *),
                                         void *data)
{
    Crane__WatchEvent we = CRANE__WATCH_EVENT__INIT;
    struct rc_watch *w = malloc(sizeof(*w));

    if (!w)
        return CL_OUT_OF_HOST_MEMORY;
    w->fn = fn;
    w->event = e;
    w->data = data;
    w->on_reader = false;        /* the program's: the callbacks thread */
    we.event = RC_ID(e);
    we.status = type;
    we.cookie = shim_remote_watch_add(w);
    if (!we.cookie) {
        free(w);
        return CL_OUT_OF_HOST_MEMORY;
    }
    RC_MSG(m, watch_event, WATCH_EVENT, &we);
    struct rc_reply r;
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    if (err != CL_SUCCESS && shim_remote_watch_take(we.cookie))
        free(w);
    return err;
}

cl_int CL_API_CALL rc_clReleaseEvent(cl_event e)
{
    struct rc_obj *o = (struct rc_obj *)e;

    if (o && o->user_event)
        user_event_done((struct rc_user_event *)o);
    cl_int err = rc_release(e, SHIM_EVENT);
    free(e);
    return err;
}

/* --- synchronisation */

cl_int rc_sync_call(Crane__SyncOp op, cl_command_queue q, cl_uint n,
                    const cl_event *events, cl_event *event, bool reply)
{
    Crane__Sync s = CRANE__SYNC__INIT;
    struct rc_ids w;
    struct rc_obj *e;
    cl_int err = rc_ids_of(&w, n, events);

    if (err != CL_SUCCESS)
        return err;
    if ((err = rc_event_for(event, &e)) != CL_SUCCESS) {
        rc_ids_done(&w);
        return err;
    }
    if (op == CRANE__SYNC_OP__SYNC_MARKER ||
        op == CRANE__SYNC_OP__SYNC_BARRIER)
        rc_touch(q);
    s.op = op;
    s.queue = RC_ID(q);
    s.events = w.v;
    s.n_events = w.n;
    s.event = e ? e->id : 0;
    RC_MSG(m, sync, SYNC, &s);
    if (reply) {
        struct rc_reply r;
        err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
        shim_remote_reply_free(&r);
    } else {
        err = shim_remote_send(&m, NULL, 0);
    }
    rc_ids_done(&w);
    return rc_event_done(err, event, e);
}

/* After a wait that ended on a Notify: the bytes of reads that completed
 * before it may still be on their way (the proxy sends a read's data when
 * it next looks at its queue, not before the Notify).  One round trip
 * orders after them: the proxy flushes completed reads before it answers.
 * Without it, a clFinish returned with a non-blocking read's bytes not yet
 * in place.  With no such read under way there is nothing to wait for:
 * the wait ends on the Notify itself (a user event set on another thread
 * wakes the waiter as soon as the proxy says so; the round trip was most
 * of its 19.6 ms on the H200).  Bytes in the host-memory region are in
 * place once the proxy's device wrote them. */
static cl_int settle(cl_int err)
{
    if (err != CL_SUCCESS || shim_remote_reads_outstanding() == 0)
        return err;
    return rc_sync_call(CRANE__SYNC_OP__SYNC_PING, NULL, 0, NULL, NULL,
                        true);
}

bool rc_user_events_unset(void)
{
    return atomic_load(&unset_user_events) > 0;
}

cl_int rc_wait_before_blocking(cl_command_queue q, cl_uint n,
                               const cl_event *wl)
{
    if (atomic_load(&unset_user_events) <= 0)
        return CL_SUCCESS;
    cl_event done = NULL;
    cl_int err = rc_sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, n, wl, &done,
                              false);
    if (err == CL_SUCCESS) {
        uint64_t id = RC_ID(done);
        err = wait_watched(&id, 1);
        cl_int rel = rc_clReleaseEvent(done);
        if (err == CL_SUCCESS)
            err = rel;
    }
    return err;
}

cl_int CL_API_CALL rc_clFinish(cl_command_queue q)
{
    if (q && !atomic_exchange(&((struct rc_queue *)q)->pending, false))
        return shim_remote_take_deferred();
    /* Finished once a barrier behind everything queued completes. */
    if (atomic_load(&unset_user_events) > 0)
        return settle(rc_wait_before_blocking(q, 0, NULL));
    return rc_sync_call(CRANE__SYNC_OP__SYNC_FINISH, q, 0, NULL, NULL, true);
}

cl_int CL_API_CALL rc_clFlush(cl_command_queue q)
{
    cl_int err =
        rc_sync_call(CRANE__SYNC_OP__SYNC_FLUSH, q, 0, NULL, NULL, false);
    return err == CL_SUCCESS ? shim_remote_flush() : err;
}

cl_int CL_API_CALL rc_clWaitForEvents(cl_uint n, const cl_event *ev)
{
    if (!n || !ev)
        return CL_INVALID_VALUE;
    if (all_user_events(n, ev))
        return wait_user_events(n, ev);
    if (atomic_load(&unset_user_events) > 0) {
        struct rc_ids w;
        cl_int err = rc_ids_of(&w, n, ev);
        if (err == CL_SUCCESS)
            err = wait_watched(w.v, w.n);
        rc_ids_done(&w);
        return settle(err);
    }
    return rc_sync_call(CRANE__SYNC_OP__SYNC_WAIT, NULL, n, ev, NULL, true);
}

cl_int CL_API_CALL rc_clEnqueueMarkerWithWaitList(cl_command_queue q,
                                                  cl_uint n,
                                                  const cl_event *wl,
                                                  cl_event *ev)
{
    return rc_sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
}

cl_int CL_API_CALL rc_clEnqueueBarrierWithWaitList(cl_command_queue q,
                                                   cl_uint n,
                                                   const cl_event *wl,
                                                   cl_event *ev)
{
    return rc_sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, n, wl, ev, false);
}

cl_int CL_API_CALL rc_clEnqueueMarker(cl_command_queue q, cl_event *ev)
{
    if (!ev)
        return CL_INVALID_VALUE;
    return rc_sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, 0, NULL, ev, false);
}

cl_int CL_API_CALL rc_clEnqueueWaitForEvents(cl_command_queue q, cl_uint n,
                                             const cl_event *ev)
{
    if (!n || !ev)
        return CL_INVALID_VALUE;
    return rc_sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, n, ev, NULL, false);
}

cl_int CL_API_CALL rc_clEnqueueBarrier(cl_command_queue q)
{
    return rc_sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, 0, NULL, NULL, false);
}
