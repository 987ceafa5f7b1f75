/* A tiny OpenCL vendor for tests, in one of two modes.
 *
 * By default, for device-matching tests: one platform ("crane fake") with
 * one accelerator that answers its queries and refuses to make contexts.
 * Listed by an .icd file beside a real vendor's, it gives a proxy a second
 * platform whose device no CPU or GPU program may land on.
 *
 * With CRANE_FAKECL_WRAP=LIBRARY it is that real vendor (PoCL) made
 * lenient about host access flags, as NVIDIA's OpenCL is: CL_MEM_HOST_*
 * flags are accepted and reported in CL_MEM_FLAGS but not given to the
 * real vendor, so reads, writes and maps they forbid succeed.  It patches
 * the real vendor's dispatch table (every object of it points there) and
 * puts it back when unloaded; with CRANE_FAKECL_GPU=1 its devices are
 * GPUs too (as_gpu, below).  The bytes of such forbidden reads, writes
 * and maps are counted, and each time the library goes (an unload by the
 * shim, or the process's exit) a line "forbidden_bytes=N" is appended to
 * the file CRANE_FAKECL_COUNT: the program's own forbidden accesses are
 * the same natively and under the shim, which moves such objects through
 * the device and never reads or writes them from the host itself
 * (tests/integration/lenient.sh).  CRANE_FAKECL_LENIENT=maps refuses
 * the forbidden reads and writes but not the maps, as NVIDIA's does. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* --- the lenient wrapper (CRANE_FAKECL_WRAP) ------------------------------ */

#define HOST_FLAGS \
    (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
#define MAX_RESTRICTED 4096

static void *wrapped_lib;
static struct _cl_icd_dispatch *patched;  /* the real vendor's table */
static struct _cl_icd_dispatch orig;      /* its entries as they were */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    cl_mem mem;
    cl_mem_flags host;
} restricted[MAX_RESTRICTED];
static size_t n_restricted;
static unsigned long long forbidden_bytes;

/* Records MEM's host access flags (0 forgets an address the vendor may
 * reuse). */
static void remember(cl_mem mem, cl_mem_flags host)
{
    size_t i;

    if (!mem)
        return;
    pthread_mutex_lock(&lock);
    for (i = 0; i < n_restricted && restricted[i].mem != mem; i++)
        ;
    if (i == n_restricted && host && n_restricted < MAX_RESTRICTED)
        n_restricted++;
    if (i < n_restricted) {
        restricted[i].mem = mem;
        restricted[i].host = host;
    }
    pthread_mutex_unlock(&lock);
}

static cl_mem_flags host_of(cl_mem mem)
{
    cl_mem_flags host = 0;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_restricted; i++)
        if (restricted[i].mem == mem)
            host = restricted[i].host;
    pthread_mutex_unlock(&lock);
    return host;
}

/* Whether MEM's flags forbid ACCESS (CL_MAP_READ / _WRITE ...). */
static bool forbidden(cl_mem mem, cl_map_flags access)
{
    cl_mem_flags host = host_of(mem);

    return ((access & CL_MAP_READ) &&
            (host & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
           ((access & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) &&
            (host & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)));
}

/* With CRANE_FAKECL_LENIENT=maps, as NVIDIA's OpenCL does: reads and
 * writes the flags forbid are refused, maps they forbid are not. */
static bool refuses_transfer(cl_mem mem, cl_map_flags access)
{
    const char *mode = getenv("CRANE_FAKECL_LENIENT");

    return mode && strcmp(mode, "maps") == 0 && forbidden(mem, access);
}

/* Counts LEN bytes if MEM's flags forbid ACCESS. */
static void count(cl_mem mem, cl_map_flags access, size_t len)
{
    if (forbidden(mem, access)) {
        pthread_mutex_lock(&lock);
        forbidden_bytes += len;
        pthread_mutex_unlock(&lock);
    }
}

static size_t region_bytes(const size_t *region, size_t elem)
{
    return region ? region[0] * region[1] * region[2] * elem : 0;
}

static size_t image_elem(cl_mem image)
{
    size_t e = 0;

    if (orig.clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof(e), &e,
                            NULL) != CL_SUCCESS)
        e = 0;
    return e;
}

static cl_mem CL_API_CALL w_create_buffer(cl_context c, cl_mem_flags flags,
                                          size_t size, void *host,
                                          cl_int *err)
{
    cl_mem m = orig.clCreateBuffer(c, flags & ~HOST_FLAGS, size, host, err);
    remember(m, flags & HOST_FLAGS);
    return m;
}

static cl_mem CL_API_CALL w_create_buffer_props(
    cl_context c, const cl_mem_properties *props, cl_mem_flags flags,
    size_t size, void *host, cl_int *err)
{
    cl_mem m = orig.clCreateBufferWithProperties(c, props, flags & ~HOST_FLAGS,
                                                 size, host, err);
    remember(m, flags & HOST_FLAGS);
    return m;
}

static cl_mem CL_API_CALL w_create_sub_buffer(cl_mem parent,
                                              cl_mem_flags flags,
                                              cl_buffer_create_type type,
                                              const void *info, cl_int *err)
{
    cl_mem m = orig.clCreateSubBuffer(parent, flags & ~HOST_FLAGS, type, info,
                                      err);
    remember(m, (flags & HOST_FLAGS) ? flags & HOST_FLAGS : host_of(parent));
    return m;
}

static cl_mem CL_API_CALL w_create_image(cl_context c, cl_mem_flags flags,
                                         const cl_image_format *f,
                                         const cl_image_desc *d, void *host,
                                         cl_int *err)
{
    cl_mem m = orig.clCreateImage(c, flags & ~HOST_FLAGS, f, d, host, err);
    cl_mem_flags h = flags & HOST_FLAGS;
    remember(m, h || !d || !d->buffer ? h : host_of(d->buffer));
    return m;
}

static cl_int CL_API_CALL w_mem_info(cl_mem m, cl_mem_info what, size_t size,
                                     void *out, size_t *size_ret)
{
    cl_int err = orig.clGetMemObjectInfo(m, what, size, out, size_ret);

    if (err == CL_SUCCESS && what == CL_MEM_FLAGS && out &&
        size >= sizeof(cl_mem_flags))
        *(cl_mem_flags *)out |= host_of(m);
    return err;
}

static cl_int CL_API_CALL w_read(cl_command_queue q, cl_mem b, cl_bool bl,
                                 size_t off, size_t len, void *p, cl_uint n,
                                 const cl_event *w, cl_event *e)
{
    if (refuses_transfer(b, CL_MAP_READ))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueReadBuffer(q, b, bl, off, len, p, n, w, e);
    if (err == CL_SUCCESS)
        count(b, CL_MAP_READ, len);
    return err;
}

static cl_int CL_API_CALL w_write(cl_command_queue q, cl_mem b, cl_bool bl,
                                  size_t off, size_t len, const void *p,
                                  cl_uint n, const cl_event *w, cl_event *e)
{
    if (refuses_transfer(b, CL_MAP_WRITE))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueWriteBuffer(q, b, bl, off, len, p, n, w, e);
    if (err == CL_SUCCESS)
        count(b, CL_MAP_WRITE, len);
    return err;
}

static cl_int CL_API_CALL w_read_rect(
    cl_command_queue q, cl_mem b, cl_bool bl, const size_t *bo,
    const size_t *ho, const size_t *r, size_t brp, size_t bsp, size_t hrp,
    size_t hsp, void *p, cl_uint n, const cl_event *w, cl_event *e)
{
    if (refuses_transfer(b, CL_MAP_READ))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueReadBufferRect(q, b, bl, bo, ho, r, brp, bsp,
                                              hrp, hsp, p, n, w, e);
    if (err == CL_SUCCESS)
        count(b, CL_MAP_READ, region_bytes(r, 1));
    return err;
}

static cl_int CL_API_CALL w_write_rect(
    cl_command_queue q, cl_mem b, cl_bool bl, const size_t *bo,
    const size_t *ho, const size_t *r, size_t brp, size_t bsp, size_t hrp,
    size_t hsp, const void *p, cl_uint n, const cl_event *w, cl_event *e)
{
    if (refuses_transfer(b, CL_MAP_WRITE))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueWriteBufferRect(q, b, bl, bo, ho, r, brp, bsp,
                                               hrp, hsp, p, n, w, e);
    if (err == CL_SUCCESS)
        count(b, CL_MAP_WRITE, region_bytes(r, 1));
    return err;
}

static cl_int CL_API_CALL w_read_image(cl_command_queue q, cl_mem im,
                                       cl_bool bl, const size_t *o,
                                       const size_t *r, size_t rp, size_t sp,
                                       void *p, cl_uint n, const cl_event *w,
                                       cl_event *e)
{
    if (refuses_transfer(im, CL_MAP_READ))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueReadImage(q, im, bl, o, r, rp, sp, p, n, w, e);
    if (err == CL_SUCCESS)
        count(im, CL_MAP_READ, region_bytes(r, image_elem(im)));
    return err;
}

static cl_int CL_API_CALL w_write_image(cl_command_queue q, cl_mem im,
                                        cl_bool bl, const size_t *o,
                                        const size_t *r, size_t rp,
                                        size_t sp, const void *p, cl_uint n,
                                        const cl_event *w, cl_event *e)
{
    if (refuses_transfer(im, CL_MAP_WRITE))
        return CL_INVALID_OPERATION;
    cl_int err = orig.clEnqueueWriteImage(q, im, bl, o, r, rp, sp, p, n, w,
                                          e);
    if (err == CL_SUCCESS)
        count(im, CL_MAP_WRITE, region_bytes(r, image_elem(im)));
    return err;
}

static void *CL_API_CALL w_map(cl_command_queue q, cl_mem b, cl_bool bl,
                               cl_map_flags f, size_t off, size_t len,
                               cl_uint n, const cl_event *w, cl_event *e,
                               cl_int *err)
{
    void *p = orig.clEnqueueMapBuffer(q, b, bl, f, off, len, n, w, e, err);
    if (p)
        count(b, f, len);
    return p;
}

static void *CL_API_CALL w_map_image(cl_command_queue q, cl_mem im,
                                     cl_bool bl, cl_map_flags f,
                                     const size_t *o, const size_t *r,
                                     size_t *rp, size_t *sp, cl_uint n,
                                     const cl_event *w, cl_event *e,
                                     cl_int *err)
{
    void *p = orig.clEnqueueMapImage(q, im, bl, f, o, r, rp, sp, n, w, e,
                                     err);
    if (p)
        count(im, f, region_bytes(r, image_elem(im)));
    return p;
}

/* With CRANE_FAKECL_GPU=1 the wrapped vendor's devices are GPUs: asked
 * for GPUs it gives every device, asked for CPUs none, and CL_DEVICE_TYPE
 * says CL_DEVICE_TYPE_GPU (x264 --opencl takes only GPUs; its case in
 * tests/integration/x264.sh runs it on PoCL so). */
static bool as_gpu(void)
{
    const char *v = getenv("CRANE_FAKECL_GPU");

    return v && strcmp(v, "1") == 0;
}

static cl_int CL_API_CALL w_device_ids(cl_platform_id p, cl_device_type type,
                                       cl_uint n, cl_device_id *out,
                                       cl_uint *n_ret)
{
    if (type != CL_DEVICE_TYPE_ALL && type != CL_DEVICE_TYPE_DEFAULT) {
        if (!(type & CL_DEVICE_TYPE_GPU)) {
            if (n_ret)
                *n_ret = 0;
            return CL_DEVICE_NOT_FOUND;
        }
        type = CL_DEVICE_TYPE_ALL;
    }
    return orig.clGetDeviceIDs(p, type, n, out, n_ret);
}

static cl_int CL_API_CALL w_device_info(cl_device_id d, cl_device_info what,
                                        size_t size, void *out,
                                        size_t *size_ret)
{
    cl_device_type gpu = CL_DEVICE_TYPE_GPU;

    if (what == CL_DEVICE_TYPE)
        return answer(&gpu, sizeof(gpu), size, out, size_ret);
    return orig.clGetDeviceInfo(d, what, size, out, size_ret);
}

/* The real vendor's table gets the lenient entries. */
static int patch(struct _cl_icd_dispatch *t)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)t & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)(t + 1) + page - 1) & ~(uintptr_t)(page - 1);

    if (t->clCreateBuffer == w_create_buffer)
        return 0;  /* already ours (this copy was never unloaded) */
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
        return -1;
    orig = *t;
    t->clCreateBuffer = w_create_buffer;
    if (t->clCreateBufferWithProperties)
        t->clCreateBufferWithProperties = w_create_buffer_props;
    t->clCreateSubBuffer = w_create_sub_buffer;
    t->clCreateImage = w_create_image;
    t->clGetMemObjectInfo = w_mem_info;
    t->clEnqueueReadBuffer = w_read;
    t->clEnqueueWriteBuffer = w_write;
    t->clEnqueueReadBufferRect = w_read_rect;
    t->clEnqueueWriteBufferRect = w_write_rect;
    t->clEnqueueReadImage = w_read_image;
    t->clEnqueueWriteImage = w_write_image;
    t->clEnqueueMapBuffer = w_map;
    t->clEnqueueMapImage = w_map_image;
    if (as_gpu()) {
        t->clGetDeviceIDs = w_device_ids;
        t->clGetDeviceInfo = w_device_info;
    }
    patched = t;
    return 0;
}

static cl_int wrap_platforms(const char *lib, cl_uint n, cl_platform_id *out,
                             cl_uint *n_ret)
{
    typedef cl_int(CL_API_CALL * get_fn)(cl_uint, cl_platform_id *,
                                         cl_uint *);
    typedef void *(CL_API_CALL * ext_fn)(const char *);
    get_fn get = NULL;
    cl_platform_id first = NULL;
    cl_uint count_ = 0;

    if (!wrapped_lib && !(wrapped_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
        return CL_PLATFORM_NOT_FOUND_KHR;
    ext_fn ext = (ext_fn)dlsym(wrapped_lib, "clGetExtensionFunctionAddress");
    if (ext)
        get = (get_fn)ext("clIcdGetPlatformIDsKHR");
    if (!get)
        get = (get_fn)dlsym(wrapped_lib, "clIcdGetPlatformIDsKHR");
    if (!get || get(1, &first, &count_) != CL_SUCCESS || !first ||
        patch(*(struct _cl_icd_dispatch **)first) != 0)
        return CL_PLATFORM_NOT_FOUND_KHR;
    return get(n, out, n_ret);
}

__attribute__((destructor)) static void unwrap(void)
{
    const char *file = getenv("CRANE_FAKECL_COUNT");
    FILE *f;

    if (!patched)
        return;
    *patched = orig;
    patched = NULL;
    if (file && (f = fopen(file, "a"))) {
        fprintf(f, "forbidden_bytes=%llu\n", forbidden_bytes);
        fclose(f);
    }
    if (wrapped_lib)
        dlclose(wrapped_lib);
    wrapped_lib = NULL;
}

/* --- the entry points a loader looks for ---------------------------------- */

/* Static, and handed out by address: a preloaded shim exports the same
 * names, which would win over ours for a global's address. */
static cl_int CL_API_CALL icd_platforms(cl_uint n, cl_platform_id *out,
                                        cl_uint *n_ret)
{
    const char *wrap = getenv("CRANE_FAKECL_WRAP");

    if (wrap && *wrap) {
        if (!out && !n_ret)
            return CL_INVALID_VALUE;
        return wrap_platforms(wrap, n, out, n_ret);
    }
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

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n,
                                                       cl_platform_id *out,
                                                       cl_uint *n_ret)
{
    return icd_platforms(n, out, n_ret);
}

static cl_int CL_API_CALL any_platform_info(cl_platform_id p,
                                            cl_platform_info what,
                                            size_t size, void *out,
                                            size_t *size_ret)
{
    if (p && p != &platform)
        return (*(struct _cl_icd_dispatch **)p)->clGetPlatformInfo(
            p, what, size, out, size_ret);
    return fake_platform_info(p, what, size, out, size_ret);
}

/* The loader wants this one by name too. */
CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p,
                                                  cl_platform_info what,
                                                  size_t size, void *out,
                                                  size_t *size_ret)
{
    return any_platform_info(p, what, size, out, size_ret);
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *name)
{
    typedef void *(CL_API_CALL * ext_fn)(const char *);

    if (name && strcmp(name, "clIcdGetPlatformIDsKHR") == 0)
        return (void *)icd_platforms;
    if (name && strcmp(name, "clGetPlatformInfo") == 0)
        return (void *)any_platform_info;
    if (wrapped_lib) {
        ext_fn ext = (ext_fn)dlsym(wrapped_lib,
                                   "clGetExtensionFunctionAddress");
        return ext ? ext(name) : NULL;
    }
    return NULL;
}
