/* Command queues: creation, recreation, reference counts and info. */
#include <errno.h>
#include <stdlib.h>

#include "proto/log.h"
#include "shim.h"
#include "entry.h"

static int queue_realize(struct shim_obj *o)
{
    struct shim_queue *q = (void *)o;
    void *ctx = q->context->obj.real, *dev = q->device->obj.real;
    cl_int err = CL_INVALID_OPERATION;

    if (q->legacy)
        q->obj.real = VENDOR(ctx)->clCreateCommandQueue(ctx, dev,
                                                        q->legacy_props, &err);
    else if (VENDOR(ctx)->clCreateCommandQueueWithProperties)
        q->obj.real = VENDOR(ctx)->clCreateCommandQueueWithProperties(
            ctx, dev, q->props, &err);
    if (!q->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    return 0;
}

static cl_command_queue queue_new(cl_context context, cl_device_id device,
                                  bool legacy, cl_command_queue_properties lp,
                                  const cl_queue_properties *props,
                                  cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_device *d = SHIM_AS(shim_device, SHIM_DEVICE, device);
    struct shim_queue *q = NULL;
    cl_int err = CL_SUCCESS;

    if (!c) {
        err = CL_INVALID_CONTEXT;
        goto out;
    }
    if (!d) {
        err = CL_INVALID_DEVICE;
        goto out;
    }
    shim_enter();
    q = shim_obj_new(&shim_queue_kind, sizeof(*q), NULL);
    if (!q) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        q->context = c;
        q->device = d;
        q->legacy = legacy;
        q->legacy_props = lp;
        q->props = shim_props_dup(props, sizeof(*props));
        q->profiling = lp & CL_QUEUE_PROFILING_ENABLE;
        for (const cl_queue_properties *pp = props; pp && pp[0]; pp += 2)
            if (pp[0] == CL_QUEUE_PROPERTIES)
                q->profiling = pp[1] & CL_QUEUE_PROFILING_ENABLE;
        shim_obj_retain_child(&c->obj);
        shim_obj_retain_child(&d->obj);
        if (props && !q->props)
            err = CL_OUT_OF_HOST_MEMORY;
        else if (queue_realize(&q->obj) < 0)
            err = shim_vendor_err;
        if (err != CL_SUCCESS) {
            shim_obj_release(q, SHIM_QUEUE);
            q = NULL;
        }
    }
    shim_leave();
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_command_queue)q;
}

SHIM_EXPORT CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueue(cl_context context, cl_device_id device,
                     cl_command_queue_properties properties,
                     cl_int *errcode_ret)
{
    return queue_new(context, device, true, properties, NULL, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
                                   const cl_queue_properties *properties,
                                   cl_int *errcode_ret)
{
    return queue_new(context, device, false, 0, properties, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clRetainCommandQueue(cl_command_queue command_queue)
{
    return shim_obj_retain(command_queue, SHIM_QUEUE) < 0
               ? CL_INVALID_COMMAND_QUEUE
               : CL_SUCCESS;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clReleaseCommandQueue(cl_command_queue command_queue)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    int rc;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    shim_enter();
    /* The spec flushes a queue on its last release. */
    if (atomic_load(&q->obj.app_refs) == 1 && q->obj.real)
        VENDOR(q->obj.real)->clFlush(q->obj.real);
    rc = shim_obj_release(q, SHIM_QUEUE);
    shim_leave();
    return rc < 0 ? CL_INVALID_COMMAND_QUEUE : CL_SUCCESS;
}

/* A switch away from the proxy may hand an error of a batched call on
 * (shim_owed_take): the program's next clFinish or clWaitForEvents
 * reports it, as the proxy would have. */
SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clFinish(cl_command_queue command_queue)
{
    cl_int err;

    if (!SHIM_LIVE(command_queue))
        return CL_INVALID_COMMAND_QUEUE;
    shim_enter();
    void *real = R(command_queue);
    err = real ? VENDOR(real)->clFinish(real) : CL_INVALID_COMMAND_QUEUE;
    if (err == CL_SUCCESS)
        err = shim_owed_take();
    shim_leave();
    return err;
}

/* clGetCommandQueueInfo (cl_api.def): the shim's handles and the
 * properties the program gave. */
bool shim_queue_info_own(struct shim_queue *q,
                         const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_QUEUE_REFERENCE_COUNT, atomic_load(&q->obj.app_refs),
        {CL_QUEUE_CONTEXT, CL_QUEUE_DEVICE}, {q->context, q->device}};
    /* Device-side default queues are not tracked by the shim. */
    const cl_command_queue no_default = NULL;

    if (shim_info_own(&own, ask, err))
        return true;
    if (ask->param == CL_QUEUE_PROPERTIES_ARRAY)
        *err = shim_info_give(ask, q->props,
                              shim_props_len(q->props, sizeof(*q->props)) *
                                  sizeof(cl_queue_properties));
    else if (ask->param == CL_QUEUE_DEVICE_DEFAULT)
        *err = shim_info_give(ask, &no_default, sizeof(no_default));
    else
        return false;
    return true;
}

static void queue_destroy(struct shim_obj *o)
{
    struct shim_queue *q = (void *)o;

    free(q->props);
    shim_obj_release_child(&q->context->obj);
    shim_obj_release_child(&q->device->obj);
}

SHIM_RELEASE_REAL_WITH(clReleaseCommandQueue)

const struct shim_kind_ops shim_queue_kind = {
    .kind = SHIM_QUEUE, .name = "queue", .twins = true,
    .destroy = queue_destroy, .realize = queue_realize,
    .release_real = release_real,
};
