/* A tiny OpenCL vendor for device-matching tests: one platform ("crane
 * fake") with one accelerator that answers its queries and refuses to make
 * contexts.  Listed by an .icd file beside a real vendor's, it gives a
 * proxy a second platform whose device no CPU or GPU program may land on. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <string.h>

struct _cl_platform_id {
    const struct _cl_icd_dispatch *dispatch;
};
struct _cl_device_id {
    const struct _cl_icd_dispatch *dispatch;
};

static struct _cl_icd_dispatch table;
static struct _cl_platform_id platform = {&table};
static struct _cl_device_id device = {&table};

static cl_int answer(const void *v, size_t len, size_t size, void *out,
                     size_t *size_ret)
{
    if (out && size < len)
        return CL_INVALID_VALUE;
    if (out)
        memcpy(out, v, len);
    if (size_ret)
        *size_ret = len;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_platform_info(cl_platform_id p,
                                             cl_platform_info what,
                                             size_t size, void *out,
                                             size_t *size_ret)
{
    const char *s;

    if (p != &platform)
        return CL_INVALID_PLATFORM;
    switch (what) {
    case CL_PLATFORM_PROFILE: s = "FULL_PROFILE"; break;
    case CL_PLATFORM_VERSION: s = "OpenCL 1.2 crane-fake"; break;
    case CL_PLATFORM_NAME: s = "crane fake"; break;
    case CL_PLATFORM_VENDOR: s = "crane"; break;
    case CL_PLATFORM_EXTENSIONS: s = "cl_khr_icd"; break;
    case CL_PLATFORM_ICD_SUFFIX_KHR: s = "FAKE"; break;
    default: return CL_INVALID_VALUE;
    }
    return answer(s, strlen(s) + 1, size, out, size_ret);
}

static cl_int CL_API_CALL fake_device_ids(cl_platform_id p,
                                          cl_device_type type, cl_uint n,
                                          cl_device_id *out, cl_uint *n_ret)
{
    if (p != &platform)
        return CL_INVALID_PLATFORM;
    if (type != CL_DEVICE_TYPE_ALL && type != CL_DEVICE_TYPE_DEFAULT &&
        !(type & CL_DEVICE_TYPE_ACCELERATOR))
        return CL_DEVICE_NOT_FOUND;
    if (out && n)
        out[0] = &device;
    if (n_ret)
        *n_ret = 1;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_device_info(cl_device_id d,
                                           cl_device_info what, size_t size,
                                           void *out, size_t *size_ret)
{
    const char *s = NULL;
    cl_ulong u = 0;
    cl_uint ui = 0;
    size_t z = 0;
    cl_device_type t = CL_DEVICE_TYPE_ACCELERATOR;
    cl_platform_id p = &platform;

    if (d != &device)
        return CL_INVALID_DEVICE;
    switch (what) {
    case CL_DEVICE_NAME: s = "crane fake accelerator"; break;
    case CL_DEVICE_VENDOR: s = "crane"; break;
    case CL_DRIVER_VERSION: s = "1.0"; break;
    case CL_DEVICE_VERSION: s = "OpenCL 1.2 crane-fake"; break;
    case CL_DEVICE_OPENCL_C_VERSION: s = "OpenCL C 1.2"; break;
    case CL_DEVICE_PROFILE: s = "FULL_PROFILE"; break;
    case CL_DEVICE_EXTENSIONS: s = ""; break;
    case CL_DEVICE_BUILT_IN_KERNELS: s = ""; break;
    case CL_DEVICE_TYPE: return answer(&t, sizeof(t), size, out, size_ret);
    case CL_DEVICE_PLATFORM: return answer(&p, sizeof(p), size, out, size_ret);
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
    case CL_DEVICE_GLOBAL_MEM_SIZE:
        u = 1u << 20;
        return answer(&u, sizeof(u), size, out, size_ret);
    case CL_DEVICE_MAX_WORK_GROUP_SIZE:
        z = 1;
        return answer(&z, sizeof(z), size, out, size_ret);
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE:
        ui = CL_TRUE;
        return answer(&ui, sizeof(ui), size, out, size_ret);
    case CL_DEVICE_IMAGE_SUPPORT:
    case CL_DEVICE_MAX_COMPUTE_UNITS:
        ui = what == CL_DEVICE_MAX_COMPUTE_UNITS;
        return answer(&ui, sizeof(ui), size, out, size_ret);
    default: return CL_INVALID_VALUE;
    }
    return answer(s, strlen(s) + 1, size, out, size_ret);
}

static cl_context CL_API_CALL fake_context(
    const cl_context_properties *props, cl_uint n, const cl_device_id *devs,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
    void *data, cl_int *err)
{
    (void)props;
    (void)n;
    (void)devs;
    (void)notify;
    (void)data;
    if (err)
        *err = CL_OUT_OF_RESOURCES;
    return NULL;
}

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n,
                                                       cl_platform_id *out,
                                                       cl_uint *n_ret)
{
    table.clGetPlatformInfo = fake_platform_info;
    table.clGetDeviceIDs = fake_device_ids;
    table.clGetDeviceInfo = fake_device_info;
    table.clCreateContext = fake_context;
    if (!out && !n_ret)
        return CL_INVALID_VALUE;
    if (out && n)
        out[0] = &platform;
    if (n_ret)
        *n_ret = 1;
    return CL_SUCCESS;
}

/* The loader wants this one by name too. */
CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p,
                                                  cl_platform_info what,
                                                  size_t size, void *out,
                                                  size_t *size_ret)
{
    return fake_platform_info(p, what, size, out, size_ret);
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *name)
{
    if (name && strcmp(name, "clIcdGetPlatformIDsKHR") == 0)
        return (void *)clIcdGetPlatformIDsKHR;
    if (name && strcmp(name, "clGetPlatformInfo") == 0)
        return (void *)clGetPlatformInfo;
    return NULL;
}
