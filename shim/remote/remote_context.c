/* The remote backend's platforms, devices, contexts and command queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"

/* --- platforms and devices */

cl_int CL_API_CALL rc_clGetDeviceIDs(cl_platform_id platform,
                                     cl_device_type type, cl_uint n,
                                     cl_device_id *devices, cl_uint *n_ret)
{
    const struct rc_platform *p = (const void *)platform;
    cl_uint found = 0;

    for (cl_uint i = 0; i < p->n_devices; i++) {
        const struct rc_device *d = p->devices[i];
        bool match = type == CL_DEVICE_TYPE_ALL || (d->type & type) ||
                     (type == CL_DEVICE_TYPE_DEFAULT && i == 0);
        if (!match)
            continue;
        if (devices && found < n)
            devices[found] = (cl_device_id)d;
        found++;
    }
    if (n_ret)
        *n_ret = found;
    return found ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

cl_int CL_API_CALL rc_clCreateSubDevices(
    cl_device_id in, const cl_device_partition_property *props, cl_uint n,
    cl_device_id *out, cl_uint *n_ret)
{
    Crane__CreateSubDevices sd = CRANE__CREATE_SUB_DEVICES__INIT;
    int64_t pv[64];
    uint64_t ids[64];
    struct rc_device *made[64];
    struct rc_reply r;
    size_t np = 0;

    while (props && props[np] && np < 63) {
        pv[np] = (int64_t)props[np];
        np++;
    }
    if (out && n > 64)
        return CL_INVALID_VALUE;
    sd.device = RC_ID(in);
    sd.properties = pv;
    sd.n_properties = np;
    for (cl_uint i = 0; out && i < n; i++) {
        made[i] = rc_obj_new(SHIM_DEVICE, sizeof(struct rc_device));
        if (!made[i]) {
            while (i--) {
                shim_remote_untrack(&made[i]->obj);
                free(made[i]);
            }
            return CL_OUT_OF_HOST_MEMORY;
        }
        ids[i] = made[i]->obj.id;
    }
    sd.ids = ids;
    sd.n_ids = out ? n : 0;
    RC_MSG(m, create_sub_devices, CREATE_SUB_DEVICES, &sd);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    cl_uint count = err == CL_SUCCESS ? (cl_uint)r.reply->count : 0;
    shim_remote_reply_free(&r);
    for (cl_uint i = 0; out && i < n; i++) {
        if (err == CL_SUCCESS && i < count) {
            out[i] = (cl_device_id)made[i];
            made[i]->type = ((const struct rc_device *)in)->type;
        } else {
            shim_remote_untrack(&made[i]->obj);
            free(made[i]);
        }
    }
    if (err == CL_SUCCESS && n_ret)
        *n_ret = count;
    return err;
}

cl_ulong shim_remote_device_max_alloc(void *device)
{
    struct rc_device *d = device;
    cl_ulong v = atomic_load_explicit(&d->max_alloc, memory_order_relaxed);

    if (v == 0 &&
        rc_get_info(CRANE__INFO_FN__INFO_DEVICE, d->obj.id, 0,
                    CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(v), &v,
                    NULL) == CL_SUCCESS)
        atomic_store_explicit(&d->max_alloc, v, memory_order_relaxed);
    return v;
}

cl_int CL_API_CALL rc_clReleaseDevice(cl_device_id d)
{
    /* Root devices belong to the connection; sub-devices to the program. */
    for (struct rc_obj *o = (void *)d; o && shim_remote_by_id(o->id) == o;) {
        if (o->id & (1ULL << 63))
            return CL_SUCCESS;
        cl_int err = rc_release(d, SHIM_DEVICE);
        free(d);
        return err;
    }
    return CL_INVALID_DEVICE;
}

/* A 0-terminated list of 64-bit name/value properties as the message's
 * pairs (at most 15 pairs, the rest is ignored); returns their count. */
size_t rc_prop_pairs(uint64_t out[32], const cl_ulong *props)
{
    size_t n = 0;

    while (props && props[n] && n < 30) {
        out[n] = props[n];
        out[n + 1] = props[n + 1];
        n += 2;
    }
    return n;
}

/* --- contexts and queues */

cl_context CL_API_CALL rc_clCreateContext(
    const cl_context_properties *props, cl_uint n, const cl_device_id *devs,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
    void *data, cl_int *errcode_ret)
{
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
    uint64_t ids[64];
    int64_t pv[64];
    size_t np = 0;

    (void)notify; /* the proxy's errors come back as error codes */
    (void)data;
    if (!devs || n == 0 || n > 64) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++)
        ids[i] = RC_ID(devs[i]);
    for (size_t i = 0; props && props[i] && np < 62; i += 2) {
        pv[np++] = (int64_t)props[i];
        pv[np++] = props[i] == CL_CONTEXT_PLATFORM
                       ? (int64_t)RC_ID((void *)props[i + 1])
                       : (int64_t)props[i + 1];
    }
    struct rc_obj *o = rc_obj_new(SHIM_CONTEXT, sizeof(struct rc_obj));
    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cc.id = o->id;
    cc.devices = ids;
    cc.n_devices = n;
    cc.properties = pv;
    cc.n_properties = np;
    RC_MSG(m, create_context, CREATE_CONTEXT, &cc);
    return rc_created_sync(o, &m, NULL, 0, errcode_ret, NULL);
}

cl_int CL_API_CALL rc_clReleaseContext(cl_context c)
{
    cl_int err = rc_release(c, SHIM_CONTEXT);
    free(c);
    return err;
}

static cl_command_queue create_queue(cl_context c, cl_device_id d,
                                     const cl_queue_properties *props,
                                     bool legacy, cl_ulong legacy_props,
                                     cl_int *errcode_ret)
{
    Crane__CreateQueue cq = CRANE__CREATE_QUEUE__INIT;
    uint64_t pv[32];
    size_t np = 0;

    np = rc_prop_pairs(pv, props);
    struct rc_obj *o = rc_obj_new(SHIM_QUEUE, sizeof(struct rc_queue));
    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cq.id = o->id;
    cq.context = RC_ID(c);
    cq.device = RC_ID(d);
    cq.properties = pv;
    cq.n_properties = np;
    cq.legacy = legacy;
    cq.legacy_properties = legacy_props;
    RC_MSG(m, create_queue, CREATE_QUEUE, &cq);
    /* Answered at once: a program learns what its device's queues take
     * from the refusals (the CTS's negative_create_command_queue*), which
     * a deferred error would give to its next blocking call instead. */
    return rc_created_sync(o, &m, NULL, 0, errcode_ret, NULL);
}

cl_command_queue CL_API_CALL
rc_clCreateCommandQueue(cl_context c, cl_device_id d,
                        cl_command_queue_properties props, cl_int *errcode_ret)
{
    return create_queue(c, d, NULL, true, props, errcode_ret);
}

cl_command_queue CL_API_CALL rc_clCreateCommandQueueWithProperties(
    cl_context c, cl_device_id d, const cl_queue_properties *props,
    cl_int *errcode_ret)
{
    return create_queue(c, d, props, false, 0, errcode_ret);
}

cl_int CL_API_CALL rc_clReleaseCommandQueue(cl_command_queue q)
{
    cl_int err = rc_release(q, SHIM_QUEUE);
    free(q);
    return err;
}

/* The device's timer and the proxy host's: a program compares them with
 * the device's profiling times, which are the proxy's too. */
static cl_int device_timer(cl_device_id d, bool host_only, cl_ulong *dev,
                           cl_ulong *host)
{
    Crane__DeviceTimer dt = CRANE__DEVICE_TIMER__INIT;
    struct rc_reply r;
    cl_ulong v[2] = {0, 0};

    dt.device = RC_ID(d);
    dt.host_only = host_only;
    RC_MSG(m, device_timer, DEVICE_TIMER, &dt);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    if (err == CL_SUCCESS) {
        size_t want = (host_only ? 1 : 2) * sizeof(cl_ulong);
        if (r.reply->value.len == want)
            memcpy(v, r.reply->value.data, want);
        else
            err = CL_OUT_OF_RESOURCES;
    }
    shim_remote_reply_free(&r);
    if (err == CL_SUCCESS && host_only) {
        *host = v[0];
    } else if (err == CL_SUCCESS) {
        *dev = v[0];
        *host = v[1];
    }
    return err;
}

cl_int CL_API_CALL rc_clGetDeviceAndHostTimer(cl_device_id d,
                                              cl_ulong *device_timestamp,
                                              cl_ulong *host_timestamp)
{
    cl_ulong dev, host;
    /* The vendor's answer first: one without timers refuses the call
     * whatever it is given (PoCL 3.1: CL_INVALID_OPERATION), as natively. */
    cl_int err = device_timer(d, false, &dev, &host);

    if (err == CL_SUCCESS && (!device_timestamp || !host_timestamp))
        return CL_INVALID_VALUE;
    if (err == CL_SUCCESS) {
        *device_timestamp = dev;
        *host_timestamp = host;
    }
    return err;
}

cl_int CL_API_CALL rc_clGetHostTimer(cl_device_id d, cl_ulong *host_timestamp)
{
    cl_ulong host;
    cl_int err = device_timer(d, true, NULL, &host);

    if (err == CL_SUCCESS && !host_timestamp)
        return CL_INVALID_VALUE;
    if (err == CL_SUCCESS)
        *host_timestamp = host;
    return err;
}
