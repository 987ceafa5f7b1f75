/* Platforms and devices: process-wide init, binding shadows to the backend's
 * real platforms and devices, and their entry points. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "control.h"
#include "log.h"
#include "shim.h"

struct shim_state shim = {
    .once = PTHREAD_ONCE_INIT,
    .rehome_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The first bind: a shadow for every platform and root device the backend
 * offers, in its order, each device's identity recorded. */
static int platforms_create(cl_platform_id *real, cl_uint n)
{
    shim.platforms = calloc(n ? n : 1, sizeof(*shim.platforms));
    if (!shim.platforms)
        return -ENOMEM;
    for (cl_uint i = 0; i < n; i++) {
        struct shim_platform *p = shim_obj_new(
            &shim_platform_kind, sizeof(struct shim_platform), NULL);
        cl_uint nd = 0;
        cl_device_id devs[64];

        if (!p)
            return -ENOMEM;
        shim.platforms[i] = p;
        shim.n_platforms = i + 1;
        p->index = i;
        p->obj.real = real[i];
        if (VENDOR(real[i])->clGetDeviceIDs(real[i], CL_DEVICE_TYPE_ALL, 64,
                                            devs, &nd) != CL_SUCCESS)
            nd = 0;
        if (nd > 64)
            nd = 64;
        p->devices = calloc(nd ? nd : 1, sizeof(*p->devices));
        if (!p->devices)
            return -ENOMEM;
        for (cl_uint d = 0; d < nd; d++) {
            struct shim_device *sd = shim_obj_new(
                &shim_device_kind, sizeof(struct shim_device), NULL);
            if (!sd)
                return -ENOMEM;
            sd->platform = p;
            sd->index = d;
            sd->obj.real = devs[d];
            shim_device_ident_read(devs[d], &sd->ident);
            sd->type = sd->ident.type;
            p->devices[d] = sd;
            p->n_devices = d + 1;
        }
    }
    return 0;
}

/* Gives every shadow platform and root device its real handle, creating the
 * shadows on the first call.  After a reload, each lands where the device
 * rule (devmatch.c) says; the program's platforms and devices themselves
 * never change. */
int shim_platforms_bind(void)
{
    struct shim_plan plan;
    cl_platform_id *real;
    cl_uint n;
    char why[400] = "";
    int rc = shim.backend->platforms(&real, &n);

    if (rc < 0)
        return rc;
    shim.bindings++;  /* a new profiling timebase (timebase.c) */
    if (!shim.platforms)
        return platforms_create(real, n);
    if (!shim_plan_take(shim.backend, &plan) &&
        (rc = shim_plan_make(shim.backend, &plan, why, sizeof(why))) < 0) {
        LOG_ERROR("bind: %s: %s", shim.backend->name,
                  why[0] ? why : strerror(-rc));
        return rc;
    }
    for (cl_uint i = 0; i < shim.n_platforms; i++) {
        struct shim_platform *p = shim.platforms[i];
        p->obj.real = plan.platforms[i];
        for (cl_uint d = 0; d < p->n_devices; d++)
            p->devices[d]->obj.real = plan.devices[i][d];
    }
    shim_plan_free(&plan);
    return 0;
}

static void init_once(void)
{
    crn_log_init_env("crane-shim");
    shim_config_load();
    shim.backend = shim_config.start_remote ? &shim_remote_ops
                                            : &shim_native_ops;
    shim.init_err = shim.backend->load();
    if (shim.init_err == 0)
        shim.init_err = shim_platforms_bind();
    if (shim.init_err == 0 && shim_config.rehome_every) {
        LOG_INFO("test hook: re-home before every %lu-th OpenCL call",
                 shim_config.rehome_every);
        shim_test_hook_arm(shim_config.rehome_every);
    }
    if (shim.init_err == 0)
        shim_control_start();
}

int shim_init(void)
{
    pthread_once(&shim.once, init_once);
    return shim.init_err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms,
                 cl_uint *num_platforms)
{
    if ((num_entries == 0 && platforms) || (!platforms && !num_platforms))
        return CL_INVALID_VALUE;
    if (shim_init() < 0) {
        if (num_platforms)
            *num_platforms = 0;
        return CL_PLATFORM_NOT_FOUND_KHR;
    }
    if (num_platforms)
        *num_platforms = shim.n_platforms;
    for (cl_uint i = 0; platforms && i < num_entries && i < shim.n_platforms;
         i++)
        platforms[i] = (cl_platform_id)shim.platforms[i];
    return CL_SUCCESS;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id *platforms,
                       cl_uint *num_platforms)
{
    return clGetPlatformIDs(num_entries, platforms, num_platforms);
}

/* A NULL platform means the default one, as the ICD loaders have it. */
static struct shim_platform *platform_or_default(cl_platform_id platform)
{
    if (!platform && shim_init() == 0 && shim.n_platforms)
        return shim.platforms[0];
    return SHIM_AS(shim_platform, SHIM_PLATFORM, platform);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetPlatformInfo(cl_platform_id platform, cl_platform_info param_name,
                  size_t param_value_size, void *param_value,
                  size_t *param_value_size_ret)
{
    struct shim_platform *p = platform_or_default(platform);
    cl_int err;

    if (!p)
        return CL_INVALID_PLATFORM;
    shim_enter();
    err = VENDOR(p->obj.real)->clGetPlatformInfo(p->obj.real, param_name,
                                                 param_value_size,
                                                 param_value,
                                                 param_value_size_ret);
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type,
               cl_uint num_entries, cl_device_id *devices,
               cl_uint *num_devices)
{
    const cl_device_type known =
        CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
        CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;
    struct shim_platform *p = platform_or_default(platform);
    cl_uint n = 0;

    if (!p)
        return CL_INVALID_PLATFORM;
    if (device_type != CL_DEVICE_TYPE_ALL && (device_type & ~known))
        return CL_INVALID_DEVICE_TYPE;
    if ((num_entries == 0 && devices) || (!devices && !num_devices))
        return CL_INVALID_VALUE;
    /* The program's devices as it first saw them, wherever they run now:
     * a device keeps its handle and its place across switches. */
    for (cl_uint d = 0; d < p->n_devices; d++) {
        const struct shim_device *sd = p->devices[d];
        bool match = device_type == CL_DEVICE_TYPE_ALL ||
                     (sd->ident.type & device_type) ||
                     (device_type == CL_DEVICE_TYPE_DEFAULT && d == 0);
        if (!match)
            continue;
        if (devices && n < num_entries)
            devices[n] = (cl_device_id)sd;
        n++;
    }
    if (num_devices)
        *num_devices = n;
    return n ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetDeviceInfo(cl_device_id device, cl_device_info param_name,
                size_t param_value_size, void *param_value,
                size_t *param_value_size_ret)
{
    struct shim_device *d = SHIM_AS(shim_device, SHIM_DEVICE, device);
    cl_int err;

    if (!d)
        return CL_INVALID_DEVICE;
    switch (param_name) {
    case CL_DEVICE_PLATFORM: {
        cl_platform_id p = (cl_platform_id)d->platform;
        return shim_info_return(&p, sizeof(p), param_value_size, param_value,
                                param_value_size_ret);
    }
    case CL_DEVICE_PARENT_DEVICE: {
        cl_device_id p = (cl_device_id)d->parent;
        return shim_info_return(&p, sizeof(p), param_value_size, param_value,
                                param_value_size_ret);
    }
    case CL_DEVICE_REFERENCE_COUNT: {
        cl_uint refs = d->parent ? atomic_load(&d->obj.app_refs) : 1;
        return shim_info_return(&refs, sizeof(refs), param_value_size,
                                param_value, param_value_size_ret);
    }
    default:
        break;
    }
    shim_enter();
    err = VENDOR(d->obj.real)->clGetDeviceInfo(d->obj.real, param_name,
                                               param_value_size, param_value,
                                               param_value_size_ret);
    shim_leave();
    return err;
}

/* Sub-devices: recorded with their partition so a re-home can recreate them
 * in the same order.  Root devices get theirs from shim_platforms_bind. */
static int device_realize(struct shim_obj *o)
{
    struct shim_device *d = (void *)o;

    if (!d->parent)
        return 0;
    cl_uint n = 0;
    cl_device_id *out;
    void *parent = d->parent->obj.real;
    cl_int err = VENDOR(parent)->clCreateSubDevices(parent, d->partition, 0,
                                                     NULL, &n);

    if (err != CL_SUCCESS || d->index >= n)
        return -ENODEV;
    out = calloc(n, sizeof(*out));
    if (!out)
        return -ENOMEM;
    err = VENDOR(parent)->clCreateSubDevices(parent, d->partition, n, out,
                                             NULL);
    if (err == CL_SUCCESS) {
        d->obj.real = out[d->index];
        for (cl_uint i = 0; i < n; i++)
            if (i != d->index)
                VENDOR(out[i])->clReleaseDevice(out[i]);
    }
    free(out);
    return err == CL_SUCCESS ? 0 : -ENODEV;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clCreateSubDevices(
    cl_device_id in_device, const cl_device_partition_property *properties,
    cl_uint num_devices, cl_device_id *out_devices, cl_uint *num_devices_ret)
{
    struct shim_device *parent = SHIM_AS(shim_device, SHIM_DEVICE, in_device);
    cl_device_id real_out[64];
    cl_uint n = 0;
    cl_int err;

    if (!parent)
        return CL_INVALID_DEVICE;
    if (!properties || (out_devices && num_devices == 0))
        return CL_INVALID_VALUE;
    shim_enter();
    err = VENDOR(parent->obj.real)->clCreateSubDevices(
        parent->obj.real, properties, 64, real_out, &n);
    if (err == CL_SUCCESS && out_devices && num_devices < n)
        err = CL_INVALID_VALUE;
    if (err == CL_SUCCESS && n > 64)
        err = CL_OUT_OF_RESOURCES;
    for (cl_uint i = 0; err == CL_SUCCESS && i < n; i++) {
        if (!out_devices) {
            VENDOR(real_out[i])->clReleaseDevice(real_out[i]);
            continue;
        }
        struct shim_device *sd =
            shim_obj_new(&shim_device_kind, sizeof(*sd), real_out[i]);
        if (!sd) {
            VENDOR(real_out[i])->clReleaseDevice(real_out[i]);
            err = CL_OUT_OF_HOST_MEMORY;
            break;
        }
        sd->platform = parent->platform;
        sd->parent = parent;
        sd->index = i;
        sd->type = parent->type;
        sd->partition = shim_props_dup(properties, sizeof(*properties));
        shim_obj_retain_child(&parent->obj);
        out_devices[i] = (cl_device_id)sd;
    }
    if (err == CL_SUCCESS && num_devices_ret)
        *num_devices_ret = n;
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clRetainDevice(cl_device_id device)
{
    struct shim_device *d = SHIM_AS(shim_device, SHIM_DEVICE, device);

    if (!d)
        return CL_INVALID_DEVICE;
    if (d->parent)
        shim_obj_retain(d, SHIM_DEVICE);
    return CL_SUCCESS;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clReleaseDevice(cl_device_id device)
{
    struct shim_device *d = SHIM_AS(shim_device, SHIM_DEVICE, device);

    if (!d)
        return CL_INVALID_DEVICE;
    if (d->parent) {
        shim_enter();
        shim_obj_release(d, SHIM_DEVICE);
        shim_leave();
    }
    return CL_SUCCESS;
}

static void platform_destroy(struct shim_obj *o)
{
    free(((struct shim_platform *)o)->devices);
}

const struct shim_kind_ops shim_platform_kind = {
    .kind = SHIM_PLATFORM, .name = "platform", .destroy = platform_destroy,
};

static void device_destroy(struct shim_obj *o)
{
    struct shim_device *d = (void *)o;

    free(d->partition);
    if (d->parent)
        shim_obj_release_child(&d->parent->obj);
}

/* Only sub-devices are the program's to release; root devices are the
 * backend's. */
static void device_release_real(const struct shim_obj *o, void *real)
{
    if (((const struct shim_device *)o)->parent)
        VENDOR(real)->clReleaseDevice(real);
}

const struct shim_kind_ops shim_device_kind = {
    .kind = SHIM_DEVICE, .name = "sub-device",
    .destroy = device_destroy, .realize = device_realize,
    .release_real = device_release_real,
};

/* Extension lookups return the shim's own functions for every entry point
 * it wraps; vendor extensions would receive shim handles they cannot read,
 * so they are not offered. */
SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL
clGetExtensionFunctionAddress(const char *func_name)
{
    shim_init();
    /* The ICD loader's own queries take no handles: let them through. */
    if (func_name && strncmp(func_name, "clGetICDLoaderInfo", 18) == 0)
        return dlsym(RTLD_NEXT, func_name);
    return shim_lookup_entry(func_name);
}

SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL
clGetExtensionFunctionAddressForPlatform(cl_platform_id platform,
                                         const char *func_name)
{
    if (!SHIM_AS(shim_platform, SHIM_PLATFORM, platform))
        return NULL;
    return shim_lookup_entry(func_name);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clUnloadCompiler(void)
{
    return CL_SUCCESS;
}
