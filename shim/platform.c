/* The entry points of platforms and devices; the program's first call,
 * often one of these, starts the shim (start.c).  Their shadows and kind
 * rows: devices.c. */
#include "config.h"
#include "shim.h"
#include "entry.h"

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
    /* Only the loader asks this: CRANE_DISABLE hands it the vendors. */
    if (shim_config_disabled())
        return shim_disabled_platforms(num_entries, platforms, num_platforms);
    return clGetPlatformIDs(num_entries, platforms, num_platforms);
}

/* A NULL platform means the default one, as the ICD loaders have it
 * (clGetPlatformInfo's row in cl_api.def asks it too). */
struct shim_platform *shim_platform_or_default(cl_platform_id platform)
{
    if (!platform && shim_init() == 0 && shim.n_platforms)
        return shim.platforms[0];
    return SHIM_AS(shim_platform, SHIM_PLATFORM, platform);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type,
               cl_uint num_entries, cl_device_id *devices,
               cl_uint *num_devices)
{
    const cl_device_type known =
        CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
        CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;
    struct shim_platform *p = shim_platform_or_default(platform);
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

/* clGetDeviceInfo (cl_api.def): a root device's count is 1, as natively. */
bool shim_device_info_own(struct shim_device *d,
                          const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_DEVICE_REFERENCE_COUNT,
        d->parent ? atomic_load(&d->obj.app_refs) : 1,
        {CL_DEVICE_PLATFORM, CL_DEVICE_PARENT_DEVICE},
        {d->platform, d->parent}};

    return shim_info_own(&own, ask, err);
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

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clUnloadCompiler(void)
{
    return CL_SUCCESS;
}
