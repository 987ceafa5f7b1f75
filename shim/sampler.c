/* Samplers: creation, recreation, reference counts and info. */
#include <errno.h>
#include <stdlib.h>

#include "shim.h"
#include "entry.h"

static int sampler_realize(struct shim_obj *o)
{
    struct shim_sampler *s = (void *)o;
    void *ctx = s->context->obj.real;
    cl_int err = CL_INVALID_OPERATION;
    cl_bool norm = CL_TRUE;
    cl_addressing_mode addr = CL_ADDRESS_CLAMP;
    cl_filter_mode filter = CL_FILTER_NEAREST;

    static const cl_sampler_properties none[] = {0};

    if (VENDOR(ctx)->clCreateSamplerWithProperties) {
        /* A NULL list as an empty one: PoCL 3.1 refuses NULL, against the
         * specification, and a switch must remake what another vendor
         * took. */
        s->obj.real = VENDOR(ctx)->clCreateSamplerWithProperties(
            ctx, s->props ? s->props : none, &err);
    } else {
        /* An OpenCL 1.x vendor: the properties map onto the old call. */
        for (size_t i = 0; s->props && s->props[i]; i += 2) {
            if (s->props[i] == CL_SAMPLER_NORMALIZED_COORDS)
                norm = (cl_bool)s->props[i + 1];
            else if (s->props[i] == CL_SAMPLER_ADDRESSING_MODE)
                addr = (cl_addressing_mode)s->props[i + 1];
            else if (s->props[i] == CL_SAMPLER_FILTER_MODE)
                filter = (cl_filter_mode)s->props[i + 1];
        }
        s->obj.real =
            VENDOR(ctx)->clCreateSampler(ctx, norm, addr, filter, &err);
    }
    if (!s->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    return 0;
}

/* Both creation calls: LEGACY for clCreateSampler, whose PROPS are its
 * three pairs. */
static cl_sampler create_sampler(cl_context context,
                                 const cl_sampler_properties *props,
                                 bool legacy, cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_sampler *s = NULL;
    cl_int err = CL_SUCCESS;

    if (!c) {
        err = CL_INVALID_CONTEXT;
        goto out;
    }
    shim_enter();
    s = shim_obj_new(&shim_sampler_kind, sizeof(*s), NULL);
    if (!s) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        s->context = c;
        s->legacy = legacy;
        shim_obj_retain_child(&c->obj);
        s->props = shim_props_dup(props, sizeof(cl_sampler_properties));
        if (props && !s->props)
            err = CL_OUT_OF_HOST_MEMORY;
        else if (sampler_realize(&s->obj) < 0)
            err = shim_vendor_err;
        if (err != CL_SUCCESS) {
            shim_obj_release(s, SHIM_SAMPLER);
            s = NULL;
        }
    }
    shim_leave();
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_sampler)s;
}

SHIM_EXPORT CL_API_ENTRY cl_sampler CL_API_CALL clCreateSamplerWithProperties(
    cl_context context, const cl_sampler_properties *sampler_properties,
    cl_int *errcode_ret)
{
    return create_sampler(context, sampler_properties, false, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_sampler CL_API_CALL
clCreateSampler(cl_context context, cl_bool normalized_coords,
                cl_addressing_mode addressing_mode, cl_filter_mode filter_mode,
                cl_int *errcode_ret)
{
    const cl_sampler_properties props[] = {
        CL_SAMPLER_NORMALIZED_COORDS, normalized_coords,
        CL_SAMPLER_ADDRESSING_MODE, addressing_mode,
        CL_SAMPLER_FILTER_MODE, filter_mode,
        0};
    return create_sampler(context, props, true, errcode_ret);
}

SHIM_RETAIN_RELEASE(Sampler, cl_sampler, SHIM_SAMPLER, CL_INVALID_SAMPLER)

/* clGetSamplerInfo (cl_api.def): the shim's handles ... */
bool shim_sampler_info_own(struct shim_sampler *s,
                           const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_SAMPLER_REFERENCE_COUNT, atomic_load(&s->obj.app_refs),
        {CL_SAMPLER_CONTEXT}, {s->context}};

    return shim_info_own(&own, ask, err);
}

/* ... and, inside the gate, the list the program gave, as the
 * specification says: a vendor that got the pairs of a clCreateSampler
 * (from the shim, or the proxy) would answer them.  The vendor still says
 * whether it knows the query at all. */
bool shim_sampler_info_gated(struct shim_sampler *s,
                             const struct shim_info_ask *ask, cl_int *err)
{
    size_t n = s->legacy ? 0 : shim_props_len(s->props, sizeof(*s->props));
    size_t size;

    if (ask->param != CL_SAMPLER_PROPERTIES)
        return false;
    *err = VENDOR(s->obj.real)->clGetSamplerInfo(s->obj.real, ask->param, 0,
                                                 NULL, &size);
    if (*err == CL_SUCCESS)
        *err = shim_info_give(ask, s->props, n * sizeof(*s->props));
    return true;
}

static void sampler_destroy(struct shim_obj *o)
{
    struct shim_sampler *s = (void *)o;

    free(s->props);
    shim_obj_release_child(&s->context->obj);
}

SHIM_RELEASE_REAL_WITH(clReleaseSampler)

const struct shim_kind_ops shim_sampler_kind = {
    .kind = SHIM_SAMPLER, .name = "sampler", .by_address = true, .twins = true,
    .destroy = sampler_destroy, .realize = sampler_realize,
    .release_real = release_real,
};
