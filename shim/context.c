/* Contexts: creation, recreation, reference counts and info queries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks.h"
#include "proto/log.h"
#include "shim.h"
#include "entry.h"

/* Destructor callbacks hang off a side table keyed by the shadow, to keep
 * struct shim_context what a re-home needs. */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_cb {
    struct shim_context *ctx;
    struct shim_callback *list;
    struct ctx_cb *next;
} *ctx_cbs;

/* The vendor's property list: shim platforms replaced by real ones. */
static cl_context_properties *real_props(const cl_context_properties *props)
{
    size_t n = shim_props_len(props, sizeof(*props));
    cl_context_properties *r;

    if (!n)
        return NULL;
    r = malloc(n * sizeof(*r));
    if (!r)
        return NULL;
    memcpy(r, props, n * sizeof(*r));
    for (size_t i = 0; i + 1 < n; i += 2)
        if (r[i] == CL_CONTEXT_PLATFORM)
            r[i + 1] = (cl_context_properties)R((cl_platform_id)r[i + 1]);
    return r;
}

static bool props_valid(const cl_context_properties *props)
{
    size_t n = shim_props_len(props, sizeof(*props));

    for (size_t i = 0; i + 1 < n; i += 2)
        if (props[i] == CL_CONTEXT_PLATFORM &&
            !shim_obj_is((void *)props[i + 1], SHIM_PLATFORM))
            return false;
    return true;
}

static int context_realize(struct shim_obj *o)
{
    struct shim_context *c = (void *)o;
    cl_device_id devs[64];
    cl_context_properties *props = NULL;
    cl_int err = CL_OUT_OF_HOST_MEMORY;

    if (c->n_devices == 0 || c->n_devices > 64)
        return -EINVAL;
    if (c->premade) {            /* made while the program ran elsewhere */
        c->obj.real = c->premade;
        c->premade = NULL;
        return 0;
    }
    for (cl_uint i = 0; i < c->n_devices; i++)
        devs[i] = c->devices[i]->obj.real;
    if (c->props && !(props = real_props(c->props)))
        return -ENOMEM;
    c->obj.real = VENDOR(devs[0])->clCreateContext(
        props, c->n_devices, devs, c->notify, c->notify_data, &err);
    free(props);
    if (!c->obj.real) {
        shim_vendor_err = err;
        CRN_DEBUG("context: the vendor refused it: %d", err);
        return -EIO;
    }
    return 0;
}

static cl_context context_new(const cl_context_properties *properties,
                              cl_uint num_devices, const cl_device_id *devices,
                              void *notify, void *user_data,
                              cl_int *errcode_ret)
{
    struct shim_context *c;
    cl_int err = CL_SUCCESS;

    c = shim_obj_new(&shim_context_kind, sizeof(*c), NULL);
    if (!c) {
        err = CL_OUT_OF_HOST_MEMORY;
        goto out;
    }
    c->props = shim_props_dup(properties, sizeof(*properties));
    c->devices = malloc(num_devices * sizeof(*c->devices));
    c->n_devices = c->devices ? num_devices : 0;
    c->notify = notify;
    c->notify_data = user_data;
    if ((properties && !c->props) || !c->devices) {
        err = CL_OUT_OF_HOST_MEMORY;
        goto fail;
    }
    for (cl_uint i = 0; i < num_devices; i++) {
        c->devices[i] = (struct shim_device *)devices[i];
        shim_obj_retain_child(&c->devices[i]->obj);
    }
    if (context_realize(&c->obj) < 0) {
        err = shim_vendor_err;
        goto fail;
    }
    goto out;
fail:
    shim_obj_release(c, SHIM_CONTEXT);
    c = NULL;
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_context)c;
}

SHIM_EXPORT CL_API_ENTRY cl_context CL_API_CALL clCreateContext(
    const cl_context_properties *properties, cl_uint num_devices,
    const cl_device_id *devices,
    void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *),
    void *user_data, cl_int *errcode_ret)
{
    cl_int err = CL_SUCCESS;
    cl_context c = NULL;

    if (shim_init() < 0)
        err = CL_INVALID_PLATFORM;
    else if (!devices || num_devices == 0 || (!pfn_notify && user_data) ||
             num_devices > 64)
        err = CL_INVALID_VALUE;
    else if (!props_valid(properties))
        err = CL_INVALID_PLATFORM;
    for (cl_uint i = 0; err == CL_SUCCESS && i < num_devices; i++)
        if (!shim_obj_is(devices[i], SHIM_DEVICE))
            err = CL_INVALID_DEVICE;
    if (err != CL_SUCCESS) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    shim_enter();
    c = context_new(properties, num_devices, devices, (void *)pfn_notify,
                    user_data, errcode_ret);
    shim_leave();
    return c;
}

SHIM_EXPORT CL_API_ENTRY cl_context CL_API_CALL clCreateContextFromType(
    const cl_context_properties *properties, cl_device_type device_type,
    void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *),
    void *user_data, cl_int *errcode_ret)
{
    struct shim_platform *p = NULL;
    cl_device_id devs[64];
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    cl_context c = NULL;

    if (shim_init() < 0 || shim.n_platforms == 0) {
        err = CL_INVALID_PLATFORM;
        goto out;
    }
    if (!props_valid(properties)) {
        err = CL_INVALID_PLATFORM;
        goto out;
    }
    for (size_t i = 0; properties && properties[i]; i += 2)
        if (properties[i] == CL_CONTEXT_PLATFORM)
            p = (struct shim_platform *)properties[i + 1];
    if (!p)
        p = shim.platforms[0];
    /* Resolve the type to devices now; the context is then an ordinary one
     * over those devices, which is also how a re-home recreates it. */
    err = clGetDeviceIDs((cl_platform_id)p, device_type, 64, devs, &n);
    if (err == CL_INVALID_DEVICE_TYPE || err == CL_INVALID_VALUE)
        goto out;
    if (err != CL_SUCCESS || n == 0) {
        err = CL_DEVICE_NOT_FOUND;
        goto out;
    }
    return clCreateContext(properties, n > 64 ? 64 : n, devs, pfn_notify,
                           user_data, errcode_ret);
out:
    if (errcode_ret)
        *errcode_ret = err;
    return c;
}

SHIM_RETAIN_RELEASE(Context, cl_context, SHIM_CONTEXT, CL_INVALID_CONTEXT)

/* clGetContextInfo (cl_api.def): the devices and properties the program
 * gave, whichever vendor holds the context now. */
bool shim_context_info_own(struct shim_context *c,
                           const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {.refs_param = CL_CONTEXT_REFERENCE_COUNT,
                                .refs = atomic_load(&c->obj.app_refs)};
    size_t n_props = shim_props_len(c->props, sizeof(*c->props));

    if (shim_info_own(&own, ask, err))
        return true;
    if (ask->param == CL_CONTEXT_NUM_DEVICES)
        *err = shim_info_give(ask, &c->n_devices, sizeof(c->n_devices));
    else if (ask->param == CL_CONTEXT_DEVICES)
        *err = shim_info_give(ask, c->devices,
                              c->n_devices * sizeof(cl_device_id));
    else if (ask->param == CL_CONTEXT_PROPERTIES)
        *err = shim_info_give(ask, c->props,
                              n_props * sizeof(cl_context_properties));
    else
        return false;
    return true;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetContextDestructorCallback(
    cl_context context,
    void(CL_CALLBACK *pfn_notify)(cl_context context, void *user_data),
    void *user_data)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct ctx_cb *e;

    if (!c)
        return CL_INVALID_CONTEXT;
    if (!pfn_notify)
        return CL_INVALID_VALUE;
    pthread_mutex_lock(&cb_lock);
    for (e = ctx_cbs; e && e->ctx != c; e = e->next)
        ;
    if (!e && (e = calloc(1, sizeof(*e)))) {
        e->ctx = c;
        e->next = ctx_cbs;
        ctx_cbs = e;
    }
    int rc = e ? shim_callback_push(&e->list, (shim_destructor_fn)pfn_notify,
                                    user_data)
               : -ENOMEM;
    pthread_mutex_unlock(&cb_lock);
    return rc < 0 ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
}

static void context_destroy(struct shim_obj *o)
{
    struct shim_context *c = (void *)o;
    struct ctx_cb **pp, *e = NULL;

    pthread_mutex_lock(&cb_lock);
    for (pp = &ctx_cbs; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == c) {
            e = *pp;
            *pp = e->next;
            break;
        }
    pthread_mutex_unlock(&cb_lock);
    if (e) {
        shim_callback_fire(&e->list, c);
        free(e);
    }
    for (cl_uint i = 0; i < c->n_devices; i++)
        shim_obj_release_child(&c->devices[i]->obj);
    free(c->devices);
    free(c->props);
}

SHIM_RELEASE_REAL_WITH(clReleaseContext)

const struct shim_kind_ops shim_context_kind = {
    .kind = SHIM_CONTEXT, .name = "context", .twins = true,
    .destroy = context_destroy, .realize = context_realize,
    .release_real = release_real,
};
