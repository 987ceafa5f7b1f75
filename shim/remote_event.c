/* The remote backend's events and synchronisation: user events, event
 * callbacks, clFinish/clFlush/clWaitForEvents, markers and barriers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "remote.h"

/* --- events */

cl_event CL_API_CALL rc_clCreateUserEvent(cl_context c, cl_int *errcode_ret)
{
    Crane__CreateUserEvent ue = CRANE__CREATE_USER_EVENT__INIT;
    struct rc_obj *o = rc_obj_new(SHIM_EVENT, sizeof(struct rc_obj));

    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    ue.id = o->id;
    ue.context = RC_ID(c);
    RC_MSG(m, create_user_event, CREATE_USER_EVENT, &ue);
    return rc_created(o, &m, NULL, 0, errcode_ret);
}

cl_int CL_API_CALL rc_clSetUserEventStatus(cl_event e, cl_int status)
{
    Crane__SetUserEventStatus us = CRANE__SET_USER_EVENT_STATUS__INIT;

    us.event = RC_ID(e);
    us.status = status;
    RC_MSG(m, set_user_event_status, SET_USER_EVENT_STATUS, &us);
    cl_int err = shim_remote_send(&m, NULL, 0);
    /* Work waiting on it should start now, not at the next flush. */
    return err == CL_SUCCESS ? shim_remote_flush() : err;
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

cl_int CL_API_CALL rc_clFinish(cl_command_queue q)
{
    if (q && !atomic_exchange(&((struct rc_queue *)q)->pending, false))
        return shim_remote_take_deferred();
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
