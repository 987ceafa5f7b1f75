/* A minimal OpenCL ICD vendor whose calls return at once: the shim's cost
 * alone, measured against it.
 *
 * bench/shimcost times a tight loop of calls natively (through the system
 * ICD loader) and under crane-run, both against this library.  A real
 * vendor spends microseconds per launch and its time varies from run to
 * run by more than the shim costs; here the vendor spends a few
 * nanoseconds, so the difference between the two runs is the shim's own
 * per-call cost, resolvable to a nanosecond and, under callgrind, to an
 * instruction.
 *
 * One platform, one device; every object is a small struct starting with
 * the dispatch table (so it is a valid cl_khr_icd object).  Info queries
 * answer the values the shim asks for (identity strings, argument
 * qualifiers, sizes) and zeros otherwise.  Buffers own real host memory so
 * that reads and writes move bytes; kernels run nothing.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl_icd.h>
#include <stdlib.h>
#include <string.h>

#define NULLCL_EXPORT __attribute__((visibility("default")))
#define NULLCL_ARGS 8

static struct _cl_icd_dispatch table;

struct nullcl_obj {
    struct _cl_icd_dispatch *dispatch;
    unsigned refs;
    size_t size;    /* buffers: bytes of data */
    char *data;     /* buffers: host memory standing for device memory */
};

static struct nullcl_obj the_platform = {&table, 1, 0, NULL};
static struct nullcl_obj the_device = {&table, 1, 0, NULL};

static void *new_obj(cl_int *err)
{
    struct nullcl_obj *o = calloc(1, sizeof(*o));

    if (err)
        *err = o ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (o) {
        o->dispatch = &table;
        o->refs = 1;
    }
    return o;
}

static cl_int retain(void *h)
{
    ((struct nullcl_obj *)h)->refs++;
    return CL_SUCCESS;
}

static cl_int release(void *h)
{
    struct nullcl_obj *o = h;

    if (--o->refs == 0) {
        free(o->data);
        free(o);
    }
    return CL_SUCCESS;
}

/* Copies one answer the OpenCL way (size query, or a big enough buffer). */
static cl_int answer(const void *v, size_t n, size_t size, void *out,
                     size_t *size_ret)
{
    if (size_ret)
        *size_ret = n;
    if (out) {
        if (size < n)
            return CL_INVALID_VALUE;
        memcpy(out, v, n);
    }
    return CL_SUCCESS;
}

static cl_int answer_str(const char *s, size_t size, void *out,
                         size_t *size_ret)
{
    return answer(s, strlen(s) + 1, size, out, size_ret);
}

/* Any other query: zeros of the width the caller gave (8 if it asks). */
static cl_int answer_zero(size_t size, void *out, size_t *size_ret)
{
    static const char zeros[64];
    size_t n = out ? (size < sizeof(zeros) ? size : sizeof(zeros)) : 8;

    return answer(zeros, n, size, out, size_ret);
}

static cl_int CL_API_CALL get_platform_ids(cl_uint n, cl_platform_id *p,
                                           cl_uint *np)
{
    if (np)
        *np = 1;
    if (p && n > 0)
        p[0] = (cl_platform_id)&the_platform;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL get_platform_info(cl_platform_id p,
                                            cl_platform_info what,
                                            size_t size, void *out,
                                            size_t *size_ret)
{
    (void)p;
    switch (what) {
    case CL_PLATFORM_NAME:
        return answer_str("nullcl", size, out, size_ret);
    case CL_PLATFORM_VENDOR:
        return answer_str("crane bench", size, out, size_ret);
    case CL_PLATFORM_VERSION:
        return answer_str("OpenCL 3.0 nullcl", size, out, size_ret);
    case CL_PLATFORM_PROFILE:
        return answer_str("FULL_PROFILE", size, out, size_ret);
    case CL_PLATFORM_EXTENSIONS:
        return answer_str("cl_khr_icd", size, out, size_ret);
    case CL_PLATFORM_ICD_SUFFIX_KHR:
        return answer_str("NULL", size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

static cl_int CL_API_CALL get_device_ids(cl_platform_id p, cl_device_type t,
                                         cl_uint n, cl_device_id *d,
                                         cl_uint *nd)
{
    (void)p;
    (void)t;
    if (nd)
        *nd = 1;
    if (d && n > 0)
        d[0] = (cl_device_id)&the_device;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL get_device_info(cl_device_id d, cl_device_info what,
                                          size_t size, void *out,
                                          size_t *size_ret)
{
    cl_device_type type = CL_DEVICE_TYPE_GPU;
    cl_platform_id platform = (cl_platform_id)&the_platform;
    cl_ulong big = 1ull << 30;
    cl_uint one = 1;
    size_t wg = 1024;
    size_t sizes[3] = {1024, 1024, 64};
    cl_bool yes = CL_TRUE;

    (void)d;
    switch (what) {
    case CL_DEVICE_NAME:
        return answer_str("nullcl device", size, out, size_ret);
    case CL_DEVICE_VENDOR:
        return answer_str("crane bench", size, out, size_ret);
    case CL_DRIVER_VERSION:
        return answer_str("1.0", size, out, size_ret);
    case CL_DEVICE_VERSION:
        return answer_str("OpenCL 3.0 nullcl", size, out, size_ret);
    case CL_DEVICE_OPENCL_C_VERSION:
        return answer_str("OpenCL C 1.2", size, out, size_ret);
    case CL_DEVICE_PROFILE:
        return answer_str("FULL_PROFILE", size, out, size_ret);
    case CL_DEVICE_EXTENSIONS:
    case CL_DEVICE_BUILT_IN_KERNELS:
        return answer_str("", size, out, size_ret);
    case CL_DEVICE_TYPE:
        return answer(&type, sizeof(type), size, out, size_ret);
    case CL_DEVICE_PLATFORM:
        return answer(&platform, sizeof(platform), size, out, size_ret);
    case CL_DEVICE_GLOBAL_MEM_SIZE:
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
    case CL_DEVICE_LOCAL_MEM_SIZE:
        return answer(&big, sizeof(big), size, out, size_ret);
    case CL_DEVICE_MAX_COMPUTE_UNITS:
    case CL_DEVICE_REFERENCE_COUNT:
        return answer(&one, sizeof(one), size, out, size_ret);
    case CL_DEVICE_MAX_WORK_GROUP_SIZE:
        return answer(&wg, sizeof(wg), size, out, size_ret);
    case CL_DEVICE_MAX_WORK_ITEM_SIZES:
        return answer(sizes, sizeof(sizes), size, out, size_ret);
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE:
    case CL_DEVICE_LINKER_AVAILABLE:
    case CL_DEVICE_ENDIAN_LITTLE:
        return answer(&yes, sizeof(yes), size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

static cl_context CL_API_CALL create_context(
    const cl_context_properties *props, cl_uint n, const cl_device_id *d,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
    void *user, cl_int *err)
{
    (void)props;
    (void)n;
    (void)d;
    (void)notify;
    (void)user;
    return new_obj(err);
}

static cl_context CL_API_CALL create_context_from_type(
    const cl_context_properties *props, cl_device_type t,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
    void *user, cl_int *err)
{
    (void)props;
    (void)t;
    (void)notify;
    (void)user;
    return new_obj(err);
}

static cl_int CL_API_CALL get_context_info(cl_context c, cl_context_info what,
                                           size_t size, void *out,
                                           size_t *size_ret)
{
    cl_device_id dev = (cl_device_id)&the_device;
    cl_uint one = 1;

    (void)c;
    switch (what) {
    case CL_CONTEXT_DEVICES:
        return answer(&dev, sizeof(dev), size, out, size_ret);
    case CL_CONTEXT_NUM_DEVICES:
        return answer(&one, sizeof(one), size, out, size_ret);
    case CL_CONTEXT_PROPERTIES:
        return answer(NULL, 0, size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

/* A queue's device and context (crane-proxy asks before a launch). */
static cl_int CL_API_CALL get_queue_info(cl_command_queue q,
                                         cl_command_queue_info what,
                                         size_t size, void *out,
                                         size_t *size_ret)
{
    cl_device_id dev = (cl_device_id)&the_device;

    (void)q;
    if (what == CL_QUEUE_DEVICE)
        return answer(&dev, sizeof(dev), size, out, size_ret);
    return answer_zero(size, out, size_ret);
}

static cl_command_queue CL_API_CALL create_queue(
    cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int *err)
{
    (void)c;
    (void)d;
    (void)p;
    return new_obj(err);
}

static cl_command_queue CL_API_CALL create_queue_props(
    cl_context c, cl_device_id d, const cl_queue_properties *p, cl_int *err)
{
    (void)c;
    (void)d;
    (void)p;
    return new_obj(err);
}

static cl_mem CL_API_CALL create_buffer(cl_context c, cl_mem_flags flags,
                                        size_t size, void *host, cl_int *err)
{
    struct nullcl_obj *o = new_obj(err);

    (void)c;
    if (!o)
        return NULL;
    o->size = size;
    o->data = calloc(1, size ? size : 1);
    if (!o->data) {
        free(o);
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    if (host && (flags & (CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR)))
        memcpy(o->data, host, size);
    return (cl_mem)o;
}

static cl_mem CL_API_CALL create_buffer_props(cl_context c,
                                              const cl_mem_properties *p,
                                              cl_mem_flags flags, size_t size,
                                              void *host, cl_int *err)
{
    (void)p;
    return create_buffer(c, flags, size, host, err);
}

static cl_int CL_API_CALL get_mem_info(cl_mem m, cl_mem_info what,
                                       size_t size, void *out,
                                       size_t *size_ret)
{
    struct nullcl_obj *o = (struct nullcl_obj *)m;

    /* Every memory object here is a buffer (crane-proxy checks the type
     * of a kernel's buffer arguments: bench/shimcost/run.sh --remote). */
    cl_mem_object_type type = CL_MEM_OBJECT_BUFFER;

    if (what == CL_MEM_SIZE)
        return answer(&o->size, sizeof(o->size), size, out, size_ret);
    if (what == CL_MEM_TYPE)
        return answer(&type, sizeof(type), size, out, size_ret);
    return answer_zero(size, out, size_ret);
}

static cl_program CL_API_CALL create_program_source(cl_context c, cl_uint n,
                                                    const char **src,
                                                    const size_t *len,
                                                    cl_int *err)
{
    (void)c;
    (void)n;
    (void)src;
    (void)len;
    return new_obj(err);
}

static cl_int CL_API_CALL build_program(
    cl_program p, cl_uint n, const cl_device_id *d, const char *opts,
    void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
    (void)n;
    (void)d;
    (void)opts;
    if (notify)
        notify(p, user);
    return CL_SUCCESS;
}

static cl_int CL_API_CALL get_program_info(cl_program p, cl_program_info what,
                                           size_t size, void *out,
                                           size_t *size_ret)
{
    cl_device_id dev = (cl_device_id)&the_device;
    cl_uint one = 1;

    (void)p;
    switch (what) {
    case CL_PROGRAM_DEVICES:
        return answer(&dev, sizeof(dev), size, out, size_ret);
    case CL_PROGRAM_NUM_DEVICES:
        return answer(&one, sizeof(one), size, out, size_ret);
    case CL_PROGRAM_KERNEL_NAMES:
        return answer_str("k", size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

static cl_int CL_API_CALL get_build_info(cl_program p, cl_device_id d,
                                         cl_program_build_info what,
                                         size_t size, void *out,
                                         size_t *size_ret)
{
    cl_build_status ok = CL_BUILD_SUCCESS;

    (void)p;
    (void)d;
    switch (what) {
    case CL_PROGRAM_BUILD_STATUS:
        return answer(&ok, sizeof(ok), size, out, size_ret);
    case CL_PROGRAM_BUILD_OPTIONS:
    case CL_PROGRAM_BUILD_LOG:
        return answer_str("", size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

static cl_kernel CL_API_CALL create_kernel(cl_program p, const char *name,
                                           cl_int *err)
{
    (void)p;
    (void)name;
    return new_obj(err);
}

static cl_int CL_API_CALL get_kernel_info(cl_kernel k, cl_kernel_info what,
                                          size_t size, void *out,
                                          size_t *size_ret)
{
    cl_uint nargs = NULLCL_ARGS;

    (void)k;
    switch (what) {
    case CL_KERNEL_NUM_ARGS:
        return answer(&nargs, sizeof(nargs), size, out, size_ret);
    case CL_KERNEL_FUNCTION_NAME:
        return answer_str("k", size, out, size_ret);
    case CL_KERNEL_ATTRIBUTES:
        return answer_str("", size, out, size_ret);
    default:
        return answer_zero(size, out, size_ret);
    }
}

/* Arguments 0-3 are global buffers read and written; 4-7 are ints. */
static cl_int CL_API_CALL get_kernel_arg_info(cl_kernel k, cl_uint i,
                                              cl_kernel_arg_info what,
                                              size_t size, void *out,
                                              size_t *size_ret)
{
    cl_kernel_arg_address_qualifier aq =
        i < 4 ? CL_KERNEL_ARG_ADDRESS_GLOBAL : CL_KERNEL_ARG_ADDRESS_PRIVATE;
    cl_kernel_arg_access_qualifier acc = CL_KERNEL_ARG_ACCESS_NONE;
    cl_kernel_arg_type_qualifier tq = CL_KERNEL_ARG_TYPE_NONE;

    (void)k;
    if (i >= NULLCL_ARGS)
        return CL_INVALID_ARG_INDEX;
    switch (what) {
    case CL_KERNEL_ARG_ADDRESS_QUALIFIER:
        return answer(&aq, sizeof(aq), size, out, size_ret);
    case CL_KERNEL_ARG_ACCESS_QUALIFIER:
        return answer(&acc, sizeof(acc), size, out, size_ret);
    case CL_KERNEL_ARG_TYPE_QUALIFIER:
        return answer(&tq, sizeof(tq), size, out, size_ret);
    case CL_KERNEL_ARG_TYPE_NAME:
        return answer_str(i < 4 ? "int*" : "int", size, out, size_ret);
    case CL_KERNEL_ARG_NAME:
        return answer_str("a", size, out, size_ret);
    default:
        return CL_INVALID_VALUE;
    }
}

static cl_int CL_API_CALL get_kernel_wg_info(cl_kernel k, cl_device_id d,
                                             cl_kernel_work_group_info what,
                                             size_t size, void *out,
                                             size_t *size_ret)
{
    (void)k;
    (void)d;
    (void)what;
    return answer_zero(size, out, size_ret);
}

static cl_int CL_API_CALL set_kernel_arg(cl_kernel k, cl_uint i, size_t size,
                                         const void *value)
{
    (void)k;
    (void)size;
    (void)value;
    return i < NULLCL_ARGS ? CL_SUCCESS : CL_INVALID_ARG_INDEX;
}

static cl_int CL_API_CALL enqueue_nd_range(
    cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
    const size_t *global, const size_t *local, cl_uint nwait,
    const cl_event *wait, cl_event *ev)
{
    cl_int err = CL_SUCCESS;

    (void)q;
    (void)k;
    (void)dim;
    (void)off;
    (void)global;
    (void)local;
    (void)nwait;
    (void)wait;
    if (ev)
        *ev = new_obj(&err);
    return err;
}

static cl_int CL_API_CALL enqueue_marker(cl_command_queue q, cl_uint nwait,
                                         const cl_event *wait, cl_event *ev)
{
    cl_int err = CL_SUCCESS;

    (void)q;
    (void)nwait;
    (void)wait;
    if (ev)
        *ev = new_obj(&err);
    return err;
}

static cl_int CL_API_CALL enqueue_rw(cl_command_queue q, cl_mem m,
                                     cl_bool blocking, size_t off, size_t n,
                                     void *ptr, cl_uint nwait,
                                     const cl_event *wait, cl_event *ev,
                                     int write)
{
    struct nullcl_obj *o = (struct nullcl_obj *)m;
    cl_int err = CL_SUCCESS;

    (void)q;
    (void)blocking;
    (void)nwait;
    (void)wait;
    if (off > o->size || n > o->size - off)
        return CL_INVALID_VALUE;
    if (write)
        memcpy(o->data + off, ptr, n);
    else
        memcpy(ptr, o->data + off, n);
    if (ev)
        *ev = new_obj(&err);
    return err;
}

static cl_int CL_API_CALL enqueue_read(cl_command_queue q, cl_mem m,
                                       cl_bool b, size_t off, size_t n,
                                       void *ptr, cl_uint nw,
                                       const cl_event *w, cl_event *ev)
{
    return enqueue_rw(q, m, b, off, n, ptr, nw, w, ev, 0);
}

static cl_int CL_API_CALL enqueue_write(cl_command_queue q, cl_mem m,
                                        cl_bool b, size_t off, size_t n,
                                        const void *ptr, cl_uint nw,
                                        const cl_event *w, cl_event *ev)
{
    return enqueue_rw(q, m, b, off, n, (void *)ptr, nw, w, ev, 1);
}

static cl_int CL_API_CALL no_op_queue(cl_command_queue q)
{
    (void)q;
    return CL_SUCCESS;
}

static cl_int CL_API_CALL wait_events(cl_uint n, const cl_event *ev)
{
    (void)n;
    (void)ev;
    return CL_SUCCESS;
}

/* Every command is complete at once: a callback runs at once. */
static cl_int CL_API_CALL set_event_callback(
    cl_event e, cl_int type, void(CL_CALLBACK *fn)(cl_event, cl_int, void *),
    void *data)
{
    if (!fn)
        return CL_INVALID_VALUE;
    fn(e, type, data);
    return CL_SUCCESS;
}

static cl_int CL_API_CALL get_event_info(cl_event e, cl_event_info what,
                                         size_t size, void *out,
                                         size_t *size_ret)
{
    cl_int complete = CL_COMPLETE;

    (void)e;
    if (what == CL_EVENT_COMMAND_EXECUTION_STATUS)
        return answer(&complete, sizeof(complete), size, out, size_ret);
    return answer_zero(size, out, size_ret);
}

static void *CL_API_CALL get_ext(const char *name);

static void *CL_API_CALL get_ext_platform(cl_platform_id p, const char *name)
{
    (void)p;
    return get_ext(name);
}

static void fill_table(void)
{
    table.clGetPlatformIDs = get_platform_ids;
    table.clGetPlatformInfo = get_platform_info;
    table.clGetDeviceIDs = get_device_ids;
    table.clGetDeviceInfo = get_device_info;
    table.clRetainDevice = (cl_api_clRetainDevice)retain;
    table.clReleaseDevice = (cl_api_clReleaseDevice)release;
    table.clCreateContext = create_context;
    table.clCreateContextFromType = create_context_from_type;
    table.clRetainContext = (cl_api_clRetainContext)retain;
    table.clReleaseContext = (cl_api_clReleaseContext)release;
    table.clGetContextInfo = get_context_info;
    table.clCreateCommandQueue = create_queue;
    table.clCreateCommandQueueWithProperties = create_queue_props;
    table.clRetainCommandQueue = (cl_api_clRetainCommandQueue)retain;
    table.clReleaseCommandQueue = (cl_api_clReleaseCommandQueue)release;
    table.clGetCommandQueueInfo = get_queue_info;
    table.clCreateBuffer = create_buffer;
    table.clCreateBufferWithProperties = create_buffer_props;
    table.clRetainMemObject = (cl_api_clRetainMemObject)retain;
    table.clReleaseMemObject = (cl_api_clReleaseMemObject)release;
    table.clGetMemObjectInfo = get_mem_info;
    table.clCreateProgramWithSource = create_program_source;
    table.clBuildProgram = build_program;
    table.clRetainProgram = (cl_api_clRetainProgram)retain;
    table.clReleaseProgram = (cl_api_clReleaseProgram)release;
    table.clGetProgramInfo = get_program_info;
    table.clGetProgramBuildInfo = get_build_info;
    table.clCreateKernel = create_kernel;
    table.clRetainKernel = (cl_api_clRetainKernel)retain;
    table.clReleaseKernel = (cl_api_clReleaseKernel)release;
    table.clGetKernelInfo = get_kernel_info;
    table.clGetKernelArgInfo = get_kernel_arg_info;
    table.clGetKernelWorkGroupInfo = get_kernel_wg_info;
    table.clSetKernelArg = set_kernel_arg;
    table.clEnqueueNDRangeKernel = enqueue_nd_range;
    table.clEnqueueMarkerWithWaitList = enqueue_marker;
    table.clEnqueueBarrierWithWaitList = enqueue_marker;
    table.clEnqueueReadBuffer = enqueue_read;
    table.clEnqueueWriteBuffer = enqueue_write;
    table.clFlush = no_op_queue;
    table.clFinish = no_op_queue;
    table.clWaitForEvents = wait_events;
    table.clGetEventInfo = get_event_info;
    table.clSetEventCallback = set_event_callback;
    table.clRetainEvent = (cl_api_clRetainEvent)retain;
    table.clReleaseEvent = (cl_api_clReleaseEvent)release;
    table.clGetExtensionFunctionAddressForPlatform = get_ext_platform;
}

/* Static, so that the address handed out is this library's own even when
 * a preloaded shim exports the same name. */
static cl_int CL_API_CALL icd_get_platform_ids(cl_uint n, cl_platform_id *p,
                                               cl_uint *np)
{
    if (!table.clGetPlatformIDs)
        fill_table();
    return get_platform_ids(n, p, np);
}

NULLCL_EXPORT cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n,
                                                         cl_platform_id *p,
                                                         cl_uint *np)
{
    return icd_get_platform_ids(n, p, np);
}

static void *CL_API_CALL get_ext(const char *name)
{
    /* ocl-icd looks up clGetPlatformInfo by name too, before it reads
     * the platform's suffix. */
    if (strcmp(name, "clIcdGetPlatformIDsKHR") == 0)
        return (void *)icd_get_platform_ids;
    if (strcmp(name, "clGetPlatformInfo") == 0)
        return (void *)get_platform_info;
    return NULL;
}

NULLCL_EXPORT void *CL_API_CALL clGetExtensionFunctionAddress(
    const char *name)
{
    return get_ext(name);
}
