/* Executors for synchronisation: finish, flush, waits, markers, callbacks. */
#include "exec.h"

#include "callbacks.h"

#include "proto/log.h"

#include <stdlib.h>

cl_int px_exec_sync(struct px_call *c)
{
    const Crane__Sync *s = c->m->sync;
    cl_event slot, *evp, *events = NULL;
    cl_command_queue q = NULL;
    cl_int err = CL_SUCCESS;

    if (s->op == CRANE__SYNC_OP__SYNC_PING)
        return CL_SUCCESS;
    if (s->op == CRANE__SYNC_OP__SYNC_HEARTBEAT) {
        /* Heard by the heartbeat thread (conn_beat.c) from now on. */
        atomic_store(&c->t->beat_ms, s->beat_ms);
        return CL_SUCCESS;
    }
    if (s->op != CRANE__SYNC_OP__SYNC_WAIT) {
        q = px_known(c, s->queue, PX_QUEUE, &err);
        if (!q)
            return err;
    }
    switch (s->op) {
    case CRANE__SYNC_OP__SYNC_FINISH:
        return clFinish(q);
    case CRANE__SYNC_OP__SYNC_FLUSH:
        return clFlush(q);
    case CRANE__SYNC_OP__SYNC_WAIT:
        if (s->n_events == 0)
            return px_fail(c, CL_INVALID_VALUE, "wait for no events");
        for (size_t i = 0; i < s->n_events; i++) {
            if (!px_tenant_handle(c->t, s->events[i], PX_EVENT, &err))
                return px_fail(c, CL_INVALID_EVENT, "unknown event %llu",
                               (unsigned long long)s->events[i]);
        }
        err = px_wait_list(c, s->events, s->n_events, &events);
        if (err != CL_SUCCESS)
            return err;
        err = clWaitForEvents((cl_uint)s->n_events, events);
        free(events);
        return err;
    case CRANE__SYNC_OP__SYNC_MARKER:
    case CRANE__SYNC_OP__SYNC_BARRIER:
        err = px_event_slot(c, s->event, &slot, &evp);
        if (err == CL_SUCCESS)
            err = px_wait_list(c, s->events, s->n_events, &events);
        if (err != CL_SUCCESS)
            return err;
        if (s->op == CRANE__SYNC_OP__SYNC_MARKER)
            err = clEnqueueMarkerWithWaitList(q, (cl_uint)s->n_events, events,
                                              evp);
        else
            err = clEnqueueBarrierWithWaitList(q, (cl_uint)s->n_events,
                                               events, evp);
        free(events);
        if (err != CL_SUCCESS)
            return err;
        return px_event_keep(c, s->event, slot);
    default:
        return px_fail(c, CL_INVALID_VALUE, "unknown sync op");
    }
}

cl_int px_exec_user_event_status(struct px_call *c)
{
    const Crane__SetUserEventStatus *s = c->m->set_user_event_status;
    struct px_obj *o = px_tenant_obj(c->t, s->event, PX_EVENT);
    cl_int err;

    if (!o)
        return px_fail(c, CL_INVALID_EVENT, "unknown event %llu",
                       (unsigned long long)s->event);
    if (!o->user_event)
        return px_fail(c, CL_INVALID_EVENT, "event %llu is no user event",
                       (unsigned long long)s->event);
    err = clSetUserEventStatus(o->handle, s->status);
    if (err == CL_SUCCESS)
        px_tenant_user_event_set(c->t, o->handle);
    return err;
}

cl_int px_exec_watch(struct px_call *c)
{
    const Crane__WatchEvent *we = c->m->watch_event;
    cl_event ev;
    cl_int err;

    ev = px_known(c, we->event, PX_EVENT, &err);
    if (!ev)
        return err;
    err = px_cb_watch(c->t, ev, we->status, we->event, we->cookie);
    return err;
}
