/* Executors for devices, contexts, queues, samplers, user events, releases. */
#include "ctxpool.h"
#include "exec.h"

#include "validate.h"

#include <stdlib.h>
#include <string.h>

cl_int px_exec_sub_devices(struct px_call *c)
{
    const Crane__CreateSubDevices *s = c->m->create_sub_devices;
    cl_device_partition_property props[PX_MAX_PROPS + 1];
    cl_device_id dev, *out;
    cl_uint n = 0;
    cl_int err;

    dev = px_known(c, s->device, PX_DEVICE, &err);
    if (!dev)
        return err;
    err = px_check_new_ids(c, s->ids, s->n_ids, PX_DEVICE);
    if (err != CL_SUCCESS)
        return err;
    for (size_t i = 0; i < s->n_properties; i++)
        props[i] = (cl_device_partition_property)s->properties[i];
    props[s->n_properties] = 0;
    err = clCreateSubDevices(dev, props, 0, NULL, &n);
    if (err != CL_SUCCESS)
        return err;
    c->reply.count = n;
    if (s->n_ids == 0 || n == 0)
        return CL_SUCCESS;
    out = calloc(n, sizeof(*out));
    if (!out)
        return CL_OUT_OF_HOST_MEMORY;
    err = clCreateSubDevices(dev, props, n, out, NULL);
    if (err == CL_SUCCESS)
        err = px_tenant_adopt(c->t, s->ids, s->n_ids, PX_DEVICE,
                              (void **)out, n);
    free(out);
    return err;
}

cl_int px_exec_context(struct px_call *c)
{
    const Crane__CreateContext *cc = c->m->create_context;
    cl_context_properties props[PX_MAX_PROPS + 1];
    cl_device_id devs[PX_MAX_DEVICES];
    cl_context ctx;
    cl_int err;

    err = px_tenant_check_new(c->t, cc->id, PX_CONTEXT);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "bad or used context id");
    err = px_device_handles(c, cc->devices, cc->n_devices, devs);
    if (err != CL_SUCCESS)
        return err;
    for (size_t i = 0; i < cc->n_properties; i += 2) {
        props[i] = (cl_context_properties)cc->properties[i];
        props[i + 1] = (cl_context_properties)cc->properties[i + 1];
        if (props[i] == CL_CONTEXT_PLATFORM) {
            cl_platform_id p = px_known(
                c, (uint64_t)cc->properties[i + 1], PX_PLATFORM, &err);
            if (!p)
                return err;
            props[i + 1] = (cl_context_properties)p;
        }
    }
    props[cc->n_properties] = 0;
    /* One device and at most its platform: a spare made ahead will do. */
    ctx = NULL;
    if (cc->n_devices == 1 &&
        (cc->n_properties == 0 ||
         (cc->n_properties == 2 && props[0] == CL_CONTEXT_PLATFORM)))
        ctx = px_ctxpool_take(devs[0], cc->n_properties
                                           ? (cl_platform_id)props[1]
                                           : NULL);
    if (!ctx)
        ctx = clCreateContext(cc->n_properties ? props : NULL,
                              (cl_uint)cc->n_devices, devs, NULL, NULL, &err);
    if (!ctx)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, cc->id, PX_CONTEXT, ctx, 0, false);
}

cl_int px_exec_queue(struct px_call *c)
{
    const Crane__CreateQueue *q = c->m->create_queue;
    cl_queue_properties props[PX_MAX_PROPS + 1];
    cl_command_queue queue;
    cl_context ctx;
    cl_device_id dev;
    cl_int err;

    err = px_new_in_context(c, q->id, PX_QUEUE, "queue id", q->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    dev = px_known(c, q->device, PX_DEVICE, &err);
    if (!dev)
        return err;
    if (q->legacy) {
        queue = clCreateCommandQueue(ctx, dev, q->legacy_properties, &err);
    } else {
        px_props(props, q->properties, q->n_properties);
        queue = clCreateCommandQueueWithProperties(
            ctx, dev, q->n_properties ? props : NULL, &err);
    }
    if (!queue)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, q->id, PX_QUEUE, queue, 0, false);
}

cl_int px_exec_sampler(struct px_call *c)
{
    const Crane__CreateSampler *s = c->m->create_sampler;
    cl_sampler_properties props[PX_MAX_PROPS + 1];
    cl_sampler sampler;
    cl_context ctx;
    cl_int err;

    err = px_new_in_context(c, s->id, PX_SAMPLER,
                            "sampler id", s->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    px_props(props, s->properties, s->n_properties);
    sampler = clCreateSamplerWithProperties(ctx, props, &err);
    if (!sampler)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, s->id, PX_SAMPLER, sampler, 0, false);
}

cl_int px_exec_user_event(struct px_call *c)
{
    const Crane__CreateUserEvent *u = c->m->create_user_event;
    cl_context ctx;
    cl_event ev;
    cl_int err;

    err = px_new_in_context(c, u->id, PX_EVENT, "event id", u->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    ev = clCreateUserEvent(ctx, &err);
    if (!ev)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, u->id, PX_EVENT, ev, 0, true);
}

cl_int px_exec_release(struct px_call *c)
{
    const Crane__Release *r = c->m->release;
    enum px_kind kind = (enum px_kind)r->kind;

    if (kind == PX_PLATFORM || (r->id & PX_PROXY_ID_BIT)) {
        /* The proxy's platforms and devices are never released. */
        cl_int err;
        if (!px_tenant_handle(c->t, r->id, kind, &err))
            return px_fail(c, err, "unknown %s %llu", px_kind_name(kind),
                           (unsigned long long)r->id);
        return CL_SUCCESS;
    }
    if (px_tenant_remove(c->t, r->id, kind) != CL_SUCCESS)
        return px_fail(c, px_kind_error(kind), "unknown %s %llu",
                       px_kind_name(kind), (unsigned long long)r->id);
    return CL_SUCCESS;
}
