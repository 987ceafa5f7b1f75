/* The remote backend's shared helpers: new objects with client ids,
 * creations sent batched or answered, releases, wait lists as ids and the
 * events enqueues make. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"
#include "remote_lanes.h"

/* A new object of SIZE bytes with a fresh id, registered in the maps. */
void *rc_obj_new(enum shim_kind kind, size_t size)
{
    struct rc_obj *o = calloc(1, size);

    if (!o)
        return NULL;
    o->dispatch = shim_proxy_table;
    o->id = shim_remote_new_id();
    o->kind = kind;
    if (shim_remote_track(o) < 0) {
        free(o);
        return NULL;
    }
    return o;
}

/* Sends a creation; on failure the object is forgotten again. */
void *rc_created(struct rc_obj *o, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len, cl_int *errcode_ret)
{
    cl_int err;

    /* Over TCP, big initial contents take the lanes where there are
     * some (remote_lanes.c). */
    shim_lanes_write_begin();
    err = shim_lanes_fit(bulk_len) ? shim_lanes_write(m, bulk, bulk_len)
                                   : shim_remote_send(m, bulk, bulk_len);
    RC_SET_ERR(err);
    if (err != CL_SUCCESS) {
        shim_remote_untrack(o);
        free(o);
        return NULL;
    }
    return o;
}

/* Creations whose errors the program must see at once. */
void *rc_created_sync(struct rc_obj *o, Crane__ClientMessage *m,
                      const void *bulk, size_t bulk_len, cl_int *errcode_ret,
                      struct rc_reply *keep)
{
    struct rc_reply r;
    cl_int err = shim_remote_call(m, bulk, bulk_len, NULL, 0, &r);

    RC_SET_ERR(err);
    if (keep)
        *keep = r;
    else
        shim_remote_reply_free(&r);
    if (err != CL_SUCCESS) {
        shim_remote_untrack(o);
        free(o);
        return NULL;
    }
    return o;
}

void rc_forget(struct rc_obj *o)
{
    shim_remote_untrack(o);
    free(o);
}

cl_int rc_release(void *h, enum shim_kind kind)
{
    struct rc_obj *o = h;

    if (!o || o->kind != kind)
        return CL_INVALID_VALUE;
    Crane__Release rel = CRANE__RELEASE__INIT;
    rel.kind = (Crane__ObjKind)kind;
    rel.id = o->id;
    RC_MSG(m, release, RELEASE, &rel);
    cl_int err = shim_remote_send(&m, NULL, 0);
    shim_remote_untrack(o);
    return err;
}

#define MAX_WAIT 4096

/* A wait list as ids, on the stack when short. */
cl_int rc_ids_of(struct rc_ids *x, cl_uint n, const cl_event *events)
{
    x->v = x->stack;
    x->n = n;
    if ((n && !events) || (!n && events) || n > MAX_WAIT)
        return CL_INVALID_EVENT_WAIT_LIST;
    if (n > 32 && !(x->v = malloc(n * sizeof(*x->v))))
        return CL_OUT_OF_HOST_MEMORY;
    for (cl_uint i = 0; i < n; i++)
        x->v[i] = RC_ID(events[i]);
    return CL_SUCCESS;
}

void rc_ids_done(struct rc_ids *x)
{
    if (x->v != x->stack)
        free(x->v);
}

/* An event for the command if the program wants one. */
cl_int rc_event_for(cl_event *out, struct rc_obj **e)
{
    *e = NULL;
    if (!out)
        return CL_SUCCESS;
    *e = shim_remote_event_new();
    return *e ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
}

cl_int rc_event_done(cl_int err, cl_event *out, struct rc_obj *e)
{
    if (!e)
        return err;
    if (err == CL_SUCCESS)
        *out = (cl_event)e;
    else
        shim_remote_event_drop(e);
    return err;
}

/* Work went to Q: its next clFinish must ask the proxy. */
void rc_touch(cl_command_queue q)
{
    if (q)
        atomic_store_explicit(&((struct rc_queue *)q)->pending, true,
                              memory_order_relaxed);
}
/* Events made by enqueues: a fresh id the proxy will name its event by. */
struct rc_obj *shim_remote_event_new(void)
{
    return rc_obj_new(SHIM_EVENT, sizeof(struct rc_obj));
}

void shim_remote_event_drop(struct rc_obj *e)
{
    shim_remote_untrack(e);
    free(e);
}
