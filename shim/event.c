/* Events: wrapping the vendor's, user events, waits, callbacks and info.
 * An event that completed before a re-home is "retired": it has no vendor
 * object any more and answers from what was recorded. */
#include <errno.h>
#include <stdlib.h>

#include "proto/log.h"
#include "shim.h"
#include "entry.h"

/* Callbacks registered with the vendor and not yet run; a re-home waits for
 * them before it unloads the code they would return into. */
atomic_long shim_event_callbacks_pending;

cl_int shim_event_wrap(cl_event *out, cl_event real, struct shim_queue *q)
{
    shim_event_drain_deferred();
    struct shim_event *e = shim_obj_new(&shim_event_kind, sizeof(*e), real);

    if (!e) {
        VENDOR(real)->clReleaseEvent(real);
        *out = NULL;
        return CL_OUT_OF_HOST_MEMORY;
    }
    e->queue = q;
    e->context = q->context;
    if (q->profiling) {
        e->generation = shim.bindings;
        e->host_queued = shim_timebase_host_now();
    }
    shim_obj_retain_child(&q->obj);
    *out = (cl_event)e;
    return CL_SUCCESS;
}

static int event_realize(struct shim_obj *o)
{
    struct shim_event *e = (void *)o;
    cl_int err;
    void *ctx = e->context->obj.real;

    /* Only user events still pending are recreated; others are retired. */
    if (!e->user || e->retired)
        return 0;
    e->obj.real = VENDOR(ctx)->clCreateUserEvent(ctx, &err);
    if (!e->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    return 0;
}

SHIM_EXPORT CL_API_ENTRY cl_event CL_API_CALL
clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_event *e = NULL;
    cl_int err = CL_SUCCESS;

    if (!c) {
        err = CL_INVALID_CONTEXT;
        goto out;
    }
    shim_enter();
    e = shim_obj_new(&shim_event_kind, sizeof(*e), NULL);
    if (!e) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        e->user = true;
        e->context = c;
        e->user_status = CL_SUBMITTED;
        e->command = CL_COMMAND_USER;
        shim_obj_retain_child(&c->obj);
        if (event_realize(&e->obj) < 0) {
            err = shim_vendor_err;
            shim_obj_release(e, SHIM_EVENT);
            e = NULL;
        }
    }
    shim_leave();
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_event)e;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clSetUserEventStatus(cl_event event, cl_int execution_status)
{
    struct shim_event *e = SHIM_AS(shim_event, SHIM_EVENT, event);
    cl_int err;

    if (!e || !e->user)
        return CL_INVALID_EVENT;
    if (execution_status != CL_COMPLETE && execution_status >= 0)
        return CL_INVALID_VALUE;
    shim_enter();
    if (e->user_status != CL_SUBMITTED) {
        err = CL_INVALID_OPERATION;
    } else {
        err = VENDOR(e->obj.real)->clSetUserEventStatus(e->obj.real,
                                                        execution_status);
        if (err == CL_SUCCESS)
            e->user_status = execution_status;
    }
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
    struct shim_xlate wl;
    cl_int err;

    if (num_events == 0 || !event_list)
        return CL_INVALID_VALUE;
    shim_enter();
    err = shim_xlate_events(&wl, event_list, num_events);
    if (err == CL_INVALID_EVENT_WAIT_LIST)
        err = CL_INVALID_EVENT;
    if (err == CL_SUCCESS && wl.n) {
        err = VENDOR(wl.real[0])->clWaitForEvents(wl.n,
                                                  (const cl_event *)wl.real);
        shim_xlate_done(&wl);
    }
    if (err == CL_SUCCESS)
        err = shim_owed_take();
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clEnqueueWaitForEvents(
    cl_command_queue command_queue, cl_uint num_events,
    const cl_event *event_list)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_xlate wl;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (num_events == 0 || !event_list)
        return CL_INVALID_VALUE;
    shim_enter();
    err = shim_xlate_events(&wl, event_list, num_events);
    if (err == CL_INVALID_EVENT_WAIT_LIST)
        err = CL_INVALID_EVENT;
    if (err == CL_SUCCESS && wl.n) {
        err = VENDOR(q->obj.real)->clEnqueueWaitForEvents(
            q->obj.real, wl.n, (const cl_event *)wl.real);
        shim_xlate_done(&wl);
    }
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clEnqueueMarker(cl_command_queue command_queue, cl_event *event)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    cl_event ev = NULL;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (!event)
        return CL_INVALID_VALUE;
    shim_enter();
    err = VENDOR(q->obj.real)->clEnqueueMarker(q->obj.real, &ev);
    if (err == CL_SUCCESS)
        err = shim_event_wrap(event, ev, q);
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clRetainEvent(cl_event event)
{
    return shim_obj_retain(event, SHIM_EVENT) < 0 ? CL_INVALID_EVENT
                                                  : CL_SUCCESS;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clReleaseEvent(cl_event event)
{
    int rc;

    shim_enter();
    shim_event_drain_deferred();
    rc = shim_obj_release(event, SHIM_EVENT);
    shim_leave();
    return rc < 0 ? CL_INVALID_EVENT : CL_SUCCESS;
}

/* clGetEventInfo (cl_api.def): the shim's handles ... */
bool shim_event_info_own(struct shim_event *e,
                         const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_EVENT_REFERENCE_COUNT, atomic_load(&e->obj.app_refs),
        {CL_EVENT_COMMAND_QUEUE, CL_EVENT_CONTEXT}, {e->queue, e->context}};

    return shim_info_own(&own, ask, err);
}

/* ... and, inside the gate (a re-home may retire the event until then),
 * a retired event's recorded status and type. */
bool shim_event_info_gated(struct shim_event *e,
                           const struct shim_info_ask *ask, cl_int *err)
{
    if (!e->retired)
        return false;
    if (ask->param == CL_EVENT_COMMAND_EXECUTION_STATUS)
        *err = shim_info_give(ask, &e->status, sizeof(e->status));
    else if (ask->param == CL_EVENT_COMMAND_TYPE)
        *err = shim_info_give(ask, &e->command, sizeof(e->command));
    else
        *err = CL_INVALID_VALUE;
    return true;
}

/* clGetEventProfilingInfo (cl_api.def): a retired event's recorded
 * times ... */
bool shim_event_profiling_gated(struct shim_event *e,
                                const struct shim_info_ask *ask,
                                cl_int *err)
{
    unsigned i = ask->param - CL_PROFILING_COMMAND_QUEUED;

    if (!e->retired)
        return false;
    if (!e->profiled)
        *err = CL_PROFILING_INFO_NOT_AVAILABLE;
    else if (i >= 5)
        *err = CL_INVALID_VALUE;
    else
        *err = shim_info_give(ask, &e->prof[i], sizeof(cl_ulong));
    return true;
}

/* ... and a live one's on the one timeline of its device (timebase.c). */
void shim_event_profiling_after(struct shim_event *e,
                                const struct shim_info_ask *ask, cl_int err)
{
    cl_ulong queued = 0;

    if (err == CL_SUCCESS && ask->value && ask->size >= sizeof(cl_ulong) &&
        e->host_queued &&
        VENDOR(e->obj.real)->clGetEventProfilingInfo(
            e->obj.real, CL_PROFILING_COMMAND_QUEUED, sizeof(queued), &queued,
            NULL) == CL_SUCCESS)
        shim_timebase_translate(e, queued, ask->value, 1);
}

struct event_cb {
    struct shim_event *event;
    void(CL_CALLBACK *fn)(cl_event, cl_int, void *);
    void *user_data;
};

/* Events whose last reference went with a callback.  Releasing the vendor
 * event from inside its own callback would free it under the vendor's
 * feet, so the release waits for the next call from a program thread. */
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_event **deferred;
static size_t n_deferred, cap_deferred;

void shim_event_drain_deferred(void)
{
    struct shim_event **list;
    size_t n;

    if (!__atomic_load_n(&n_deferred, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&deferred_lock);
    list = deferred;
    n = n_deferred;
    deferred = NULL;
    n_deferred = cap_deferred = 0;
    pthread_mutex_unlock(&deferred_lock);
    for (size_t i = 0; i < n; i++)
        shim_obj_release_child(&list[i]->obj);
    free(list);
}

static void defer_release(struct shim_event *e)
{
    pthread_mutex_lock(&deferred_lock);
    if (n_deferred == cap_deferred) {
        size_t cap = cap_deferred ? 2 * cap_deferred : 64;
        struct shim_event **grown = realloc(deferred, cap * sizeof(*grown));
        if (!grown) {
            /* Keeping the shadow is safe; only its memory is lost. */
            pthread_mutex_unlock(&deferred_lock);
            return;
        }
        deferred = grown;
        cap_deferred = cap;
    }
    deferred[n_deferred++] = e;
    pthread_mutex_unlock(&deferred_lock);
}

/* Runs on the vendor's thread: hands the program its own handle. */
static void CL_CALLBACK event_cb_trampoline(cl_event real, cl_int status,
                                            void *data)
{
    struct event_cb *cb = data;

    (void)real;
    shim_in_callback = true;
    cb->fn((cl_event)cb->event, status, cb->user_data);
    shim_in_callback = false;
    defer_release(cb->event);
    free(cb);
    atomic_fetch_sub(&shim_event_callbacks_pending, 1);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetEventCallback(
    cl_event event, cl_int command_exec_callback_type,
    void(CL_CALLBACK *pfn_notify)(cl_event, cl_int, void *), void *user_data)
{
    struct shim_event *e = SHIM_AS(shim_event, SHIM_EVENT, event);
    struct event_cb *cb;
    cl_int err;

    if (!e)
        return CL_INVALID_EVENT;
    if (!pfn_notify || (command_exec_callback_type != CL_COMPLETE &&
                        command_exec_callback_type != CL_RUNNING &&
                        command_exec_callback_type != CL_SUBMITTED))
        return CL_INVALID_VALUE;
    cb = malloc(sizeof(*cb));
    if (!cb)
        return CL_OUT_OF_HOST_MEMORY;
    cb->event = e;
    cb->fn = pfn_notify;
    cb->user_data = user_data;
    shim_enter();
    if (e->retired) {
        shim_leave();
        free(cb);
        /* Long complete: the callback is due at once, with the status it
         * waited for (or the error the command ended with). */
        pfn_notify(event,
                   e->status < 0 ? e->status : command_exec_callback_type,
                   user_data);
        return CL_SUCCESS;
    }
    shim_obj_retain_child(&e->obj);
    atomic_fetch_add(&shim_event_callbacks_pending, 1);
    err = VENDOR(e->obj.real)->clSetEventCallback(
        e->obj.real, command_exec_callback_type, event_cb_trampoline, cb);
    if (err != CL_SUCCESS) {
        atomic_fetch_sub(&shim_event_callbacks_pending, 1);
        shim_obj_release_child(&e->obj);
        free(cb);
    }
    shim_leave();
    return err;
}

/* Before a re-home drops its vendor object: keep what queries may ask. */
void shim_event_retire(struct shim_event *e)
{
    void *r = e->obj.real;

    if (!r || e->retired)
        return;
    if (VENDOR(r)->clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                  sizeof(e->status), &e->status,
                                  NULL) != CL_SUCCESS)
        e->status = CL_COMPLETE;
    VENDOR(r)->clGetEventInfo(r, CL_EVENT_COMMAND_TYPE, sizeof(e->command),
                              &e->command, NULL);
    e->profiled = true;
    for (unsigned i = 0; i < 5; i++)
        if (VENDOR(r)->clGetEventProfilingInfo(
                r, CL_PROFILING_COMMAND_QUEUED + i, sizeof(cl_ulong),
                &e->prof[i], NULL) != CL_SUCCESS)
            e->profiled = false;
    if (e->profiled)
        shim_timebase_translate(e, e->prof[0], e->prof, 5);
    e->retired = true;
}

static void event_destroy(struct shim_obj *o)
{
    struct shim_event *e = (void *)o;

    if (e->queue)
        shim_obj_release_child(&e->queue->obj);
    else
        shim_obj_release_child(&e->context->obj);
}

SHIM_RELEASE_REAL_WITH(clReleaseEvent)

const struct shim_kind_ops shim_event_kind = {
    .kind = SHIM_EVENT, .name = "user event", .destroy = event_destroy,
    .realize = event_realize, .release_real = release_real,
};
