/* Introspection test: handle-returning queries give back the program's own
 * handles, reference counts move exactly as the spec says, and bad input
 * gets the spec's error codes. */
#define TEST_NAME "introspect"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <CL/cl_icd.h>
#include <stdint.h>

/* Query rounds, and words in the long-lived buffer. */
#define ROUNDS 60
#define N 1024

static const char *kernel_source =
    "__kernel void add1(__global uint *d)\n"
    "{\n"
    "    d[get_global_id(0)] += 1u;\n"
    "}\n";

/* The long-lived objects the queries are checked against. */
struct state {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem buf;
    cl_mem use_buf;
    cl_uint use_host[N];
    cl_uint mirror[N];
    cl_bool images;
    cl_api_clGetPlatformInfo get_platform_info;
};

/* Fails unless a queried handle equals the expected one. */
#define EXPECT_HANDLE(what, got, want)                                     \
    EXPECT((void *)(got) == (void *)(want), "%s is %p, expected %p", what, \
           (void *)(got), (void *)(want))

/* Reads a cl_uint reference count through any clGet*Info function. */
#define READ_COUNT(fn, obj, param, out)                                    \
    CHECK(fn(obj, param, sizeof(out), &(out), NULL))

/* Fails unless an object's reference count is `want`. */
#define EXPECT_COUNT(name, fn, obj, param, want, when)                     \
    do {                                                                   \
        cl_uint now_ = 0;                                                  \
        READ_COUNT(fn, obj, param, now_);                                  \
        if (now_ != (cl_uint)(want))                                       \
            fail("%s reference count is %u %s, expected %u", name, now_,   \
                 when, (cl_uint)(want));                                   \
    } while (0)

/* Retains twice and releases twice, checking the count after each step;
 * a `base` of 0 means "whatever it was before", otherwise the count must
 * start there. */
#define REFCOUNT_DANCE(name, obj, get, param, retain, release, base)       \
    do {                                                                   \
        cl_uint b_ = 0;                                                    \
        READ_COUNT(get, obj, param, b_);                                   \
        if ((base) != 0 && b_ != (cl_uint)(base))                          \
            fail("%s reference count starts at %u, expected %u", name, b_, \
                 (cl_uint)(base));                                         \
        CHECK(retain(obj));                                                \
        EXPECT_COUNT(name, get, obj, param, b_ + 1, "after retain");       \
        CHECK(retain(obj));                                                \
        EXPECT_COUNT(name, get, obj, param, b_ + 2, "after two retains");  \
        CHECK(release(obj));                                               \
        EXPECT_COUNT(name, get, obj, param, b_ + 1, "after a release");    \
        CHECK(release(obj));                                               \
        EXPECT_COUNT(name, get, obj, param, b_, "after two releases");     \
    } while (0)

/* Checks the platform, device, context and queue queries. */
static void check_top_level(struct state *st)
{
    cl_platform_id p = NULL;
    cl_device_id d = NULL;
    cl_context c = NULL;
    cl_uint n = 0;
    cl_context_properties props[8];
    size_t size = 0;

    CHECK(clGetPlatformIDs(1, &p, &n));
    EXPECT_HANDLE("clGetPlatformIDs", p, st->platform);
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL));
    EXPECT_HANDLE("clGetDeviceIDs", d, st->device);
    p = NULL;
    CHECK(clGetDeviceInfo(st->device, CL_DEVICE_PLATFORM, sizeof(p), &p,
                          NULL));
    EXPECT_HANDLE("CL_DEVICE_PLATFORM", p, st->platform);

    d = NULL;
    CHECK(clGetContextInfo(st->context, CL_CONTEXT_DEVICES, sizeof(d), &d,
                           &size));
    EXPECT(size == sizeof(d), "CL_CONTEXT_DEVICES size %zu", size);
    EXPECT_HANDLE("CL_CONTEXT_DEVICES", d, st->device);
    CHECK(clGetContextInfo(st->context, CL_CONTEXT_NUM_DEVICES, sizeof(n), &n,
                           NULL));
    EXPECT(n == 1, "CL_CONTEXT_NUM_DEVICES is %u", n);
    CHECK(clGetContextInfo(st->context, CL_CONTEXT_PROPERTIES, sizeof(props),
                           props, &size));
    EXPECT(size == 3 * sizeof(props[0]), "CL_CONTEXT_PROPERTIES size %zu",
           size);
    EXPECT(props[0] == CL_CONTEXT_PLATFORM &&
               props[1] == (cl_context_properties)st->platform &&
               props[2] == 0,
           "CL_CONTEXT_PROPERTIES are {0x%lx, 0x%lx, 0x%lx}",
           (long)props[0], (long)props[1], (long)props[2]);

    d = NULL;
    CHECK(clGetCommandQueueInfo(st->queue, CL_QUEUE_DEVICE, sizeof(d), &d,
                                NULL));
    EXPECT_HANDLE("CL_QUEUE_DEVICE", d, st->device);
    CHECK(clGetCommandQueueInfo(st->queue, CL_QUEUE_CONTEXT, sizeof(c), &c,
                                NULL));
    EXPECT_HANDLE("CL_QUEUE_CONTEXT", c, st->context);
}

/* Creates and drops a buffer and a sub-buffer, checking their queries and
 * reference counts. */
static void check_buffers(struct state *st)
{
    cl_mem b, sub, assoc = (cl_mem)(uintptr_t)1;
    cl_context c = NULL;
    cl_buffer_region region = {256, 512};
    size_t size = 0, offset = 0;
    void *host = NULL;
    cl_mem_flags flags = 0;
    cl_mem_object_type type = 0;
    cl_int err;

    b = clCreateBuffer(st->context, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CHECK(err);
    REFCOUNT_DANCE("fresh buffer", b, clGetMemObjectInfo,
                   CL_MEM_REFERENCE_COUNT, clRetainMemObject,
                   clReleaseMemObject, 1);
    CHECK(clGetMemObjectInfo(b, CL_MEM_CONTEXT, sizeof(c), &c, NULL));
    EXPECT_HANDLE("CL_MEM_CONTEXT", c, st->context);
    CHECK(clGetMemObjectInfo(b, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(assoc),
                             &assoc, NULL));
    EXPECT_HANDLE("CL_MEM_ASSOCIATED_MEMOBJECT of a buffer", assoc, NULL);
    CHECK(clGetMemObjectInfo(b, CL_MEM_TYPE, sizeof(type), &type, NULL));
    EXPECT(type == CL_MEM_OBJECT_BUFFER, "CL_MEM_TYPE 0x%x", (unsigned)type);

    sub = clCreateSubBuffer(b, CL_MEM_READ_ONLY, CL_BUFFER_CREATE_TYPE_REGION,
                            &region, &err);
    CHECK(err);
    REFCOUNT_DANCE("fresh sub-buffer", sub, clGetMemObjectInfo,
                   CL_MEM_REFERENCE_COUNT, clRetainMemObject,
                   clReleaseMemObject, 1);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(assoc),
                             &assoc, NULL));
    EXPECT_HANDLE("CL_MEM_ASSOCIATED_MEMOBJECT", assoc, b);
    c = NULL;
    CHECK(clGetMemObjectInfo(sub, CL_MEM_CONTEXT, sizeof(c), &c, NULL));
    EXPECT_HANDLE("CL_MEM_CONTEXT of a sub-buffer", c, st->context);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof(offset), &offset,
                             NULL));
    EXPECT(offset == 256, "CL_MEM_OFFSET is %zu", offset);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_SIZE, sizeof(size), &size, NULL));
    EXPECT(size == 512, "sub-buffer CL_MEM_SIZE is %zu", size);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_FLAGS, sizeof(flags), &flags, NULL));
    EXPECT(flags == CL_MEM_READ_ONLY, "sub-buffer CL_MEM_FLAGS 0x%llx",
           (unsigned long long)flags);
    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(b));

    /* The long-lived USE_HOST_PTR buffer reports the program's pointer. */
    CHECK(clGetMemObjectInfo(st->use_buf, CL_MEM_HOST_PTR, sizeof(host),
                             &host, NULL));
    EXPECT(host == st->use_host, "CL_MEM_HOST_PTR is %p, expected %p", host,
           (void *)st->use_host);
    CHECK(clGetMemObjectInfo(st->use_buf, CL_MEM_FLAGS, sizeof(flags), &flags,
                             NULL));
    EXPECT(flags == (CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR),
           "CL_MEM_FLAGS 0x%llx", (unsigned long long)flags);
    CHECK(clGetMemObjectInfo(st->use_buf, CL_MEM_SIZE, sizeof(size), &size,
                             NULL));
    EXPECT(size == sizeof(st->use_host), "CL_MEM_SIZE is %zu", size);
}

/* Checks the program, a fresh kernel, the event of its launch, a user
 * event and a sampler. */
static void check_program_kernel_event(struct state *st)
{
    cl_program p = NULL;
    cl_context c = NULL;
    cl_device_id d = NULL;
    cl_command_queue q = NULL;
    cl_uint n = 0;
    cl_kernel k;
    cl_event ev, user;
    size_t global = N;
    cl_int err;

    CHECK(clGetProgramInfo(st->program, CL_PROGRAM_CONTEXT, sizeof(c), &c,
                           NULL));
    EXPECT_HANDLE("CL_PROGRAM_CONTEXT", c, st->context);
    CHECK(clGetProgramInfo(st->program, CL_PROGRAM_NUM_DEVICES, sizeof(n), &n,
                           NULL));
    EXPECT(n == 1, "CL_PROGRAM_NUM_DEVICES is %u", n);
    CHECK(clGetProgramInfo(st->program, CL_PROGRAM_DEVICES, sizeof(d), &d,
                           NULL));
    EXPECT_HANDLE("CL_PROGRAM_DEVICES", d, st->device);

    k = make_kernel(st->program, "add1");
    REFCOUNT_DANCE("fresh kernel", k, clGetKernelInfo,
                   CL_KERNEL_REFERENCE_COUNT, clRetainKernel, clReleaseKernel,
                   1);
    CHECK(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof(p), &p, NULL));
    EXPECT_HANDLE("CL_KERNEL_PROGRAM", p, st->program);
    c = NULL;
    CHECK(clGetKernelInfo(k, CL_KERNEL_CONTEXT, sizeof(c), &c, NULL));
    EXPECT_HANDLE("CL_KERNEL_CONTEXT", c, st->context);

    /* The fresh kernel's launch increments the long-lived buffer. */
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->buf));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                 NULL, &ev));
    for (size_t i = 0; i < N; i++)
        st->mirror[i]++;
    CHECK(clReleaseKernel(k));
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof(q), &q, NULL));
    EXPECT_HANDLE("CL_EVENT_COMMAND_QUEUE", q, st->queue);
    c = NULL;
    CHECK(clGetEventInfo(ev, CL_EVENT_CONTEXT, sizeof(c), &c, NULL));
    EXPECT_HANDLE("CL_EVENT_CONTEXT", c, st->context);
    REFCOUNT_DANCE("kernel event", ev, clGetEventInfo,
                   CL_EVENT_REFERENCE_COUNT, clRetainEvent, clReleaseEvent, 0);
    CHECK(clReleaseEvent(ev));

    user = clCreateUserEvent(st->context, &err);
    CHECK(err);
    REFCOUNT_DANCE("user event", user, clGetEventInfo,
                   CL_EVENT_REFERENCE_COUNT, clRetainEvent, clReleaseEvent, 1);
    q = (cl_command_queue)(uintptr_t)1;
    CHECK(clGetEventInfo(user, CL_EVENT_COMMAND_QUEUE, sizeof(q), &q, NULL));
    EXPECT_HANDLE("CL_EVENT_COMMAND_QUEUE of a user event", q, NULL);
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    CHECK(clReleaseEvent(user));

    if (st->images) {
        cl_sampler_properties props[] = {
            CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE,
            CL_SAMPLER_ADDRESSING_MODE, CL_ADDRESS_CLAMP,
            CL_SAMPLER_FILTER_MODE, CL_FILTER_NEAREST,
            0,
        };
        cl_sampler s = clCreateSamplerWithProperties(st->context, props, &err);

        CHECK(err);
        REFCOUNT_DANCE("fresh sampler", s, clGetSamplerInfo,
                       CL_SAMPLER_REFERENCE_COUNT, clRetainSampler,
                       clReleaseSampler, 1);
        c = NULL;
        CHECK(clGetSamplerInfo(s, CL_SAMPLER_CONTEXT, sizeof(c), &c, NULL));
        EXPECT_HANDLE("CL_SAMPLER_CONTEXT", c, st->context);
        CHECK(clReleaseSampler(s));
    }
}

/* Checks the counts of long-lived objects, and that retaining a root
 * device leaves its count at one. */
static void check_refcounts(struct state *st)
{
    REFCOUNT_DANCE("context", st->context, clGetContextInfo,
                   CL_CONTEXT_REFERENCE_COUNT, clRetainContext,
                   clReleaseContext, 0);
    REFCOUNT_DANCE("queue", st->queue, clGetCommandQueueInfo,
                   CL_QUEUE_REFERENCE_COUNT, clRetainCommandQueue,
                   clReleaseCommandQueue, 0);
    REFCOUNT_DANCE("program", st->program, clGetProgramInfo,
                   CL_PROGRAM_REFERENCE_COUNT, clRetainProgram,
                   clReleaseProgram, 0);
    REFCOUNT_DANCE("long-lived kernel", st->kernel, clGetKernelInfo,
                   CL_KERNEL_REFERENCE_COUNT, clRetainKernel, clReleaseKernel,
                   1);
    REFCOUNT_DANCE("long-lived buffer", st->buf, clGetMemObjectInfo,
                   CL_MEM_REFERENCE_COUNT, clRetainMemObject,
                   clReleaseMemObject, 0);

    EXPECT_COUNT("root device", clGetDeviceInfo, st->device,
                 CL_DEVICE_REFERENCE_COUNT, 1, "at first");
    CHECK(clRetainDevice(st->device));
    EXPECT_COUNT("root device", clGetDeviceInfo, st->device,
                 CL_DEVICE_REFERENCE_COUNT, 1, "after retain");
    CHECK(clReleaseDevice(st->device));
    EXPECT_COUNT("root device", clGetDeviceInfo, st->device,
                 CL_DEVICE_REFERENCE_COUNT, 1, "after release");
}

/* Checks the spec's error codes for plainly bad input, and that failed
 * creations return NULL. */
static void check_errors(struct state *st)
{
    cl_int err = CL_SUCCESS;
    cl_mem m;
    cl_uint word = 0;
    cl_kernel k;
    cl_buffer_region bad_region = {1, 16};

    CHECK_ERR(clGetPlatformIDs(0, NULL, NULL), CL_INVALID_VALUE);
    m = clCreateBuffer(NULL, CL_MEM_READ_WRITE, 64, NULL, &err);
    EXPECT(m == NULL && err == CL_INVALID_CONTEXT,
           "clCreateBuffer with no context gave %p, error %d", (void *)m, err);
    m = clCreateBuffer(st->context, CL_MEM_READ_WRITE, 0, NULL, &err);
    EXPECT(m == NULL && err == CL_INVALID_BUFFER_SIZE,
           "clCreateBuffer of size 0 gave %p, error %d", (void *)m, err);
    m = clCreateBuffer(st->context, CL_MEM_USE_HOST_PTR, 64, NULL, &err);
    EXPECT(m == NULL && err == CL_INVALID_HOST_PTR,
           "USE_HOST_PTR with no pointer gave %p, error %d", (void *)m, err);
    m = clCreateBuffer(st->context, CL_MEM_READ_WRITE, 64, &word, &err);
    EXPECT(m == NULL && err == CL_INVALID_HOST_PTR,
           "a pointer with no host-pointer flag gave %p, error %d", (void *)m,
           err);
    CHECK_ERR(clReleaseMemObject(NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clSetKernelArg(st->kernel, 7, sizeof(cl_mem), &st->buf),
              CL_INVALID_ARG_INDEX);
    CHECK_ERR(clSetKernelArg(st->kernel, 0, 3, &st->buf),
              CL_INVALID_ARG_SIZE);
    k = clCreateKernel(st->program, "no_such_kernel", &err);
    EXPECT(k == NULL && err == CL_INVALID_KERNEL_NAME,
           "clCreateKernel of a missing name gave %p, error %d", (void *)k,
           err);
    CHECK_ERR(clEnqueueReadBuffer(st->queue, st->buf, CL_TRUE,
                                  N * sizeof(cl_uint) - 2, 4, &word, 0, NULL,
                                  NULL),
              CL_INVALID_VALUE);
    m = clCreateSubBuffer(st->buf, CL_MEM_READ_WRITE,
                          CL_BUFFER_CREATE_TYPE_REGION, &bad_region, &err);
    EXPECT(m == NULL && err == CL_MISALIGNED_SUB_BUFFER_OFFSET,
           "a misaligned sub-buffer gave %p, error %d", (void *)m, err);
    CHECK_ERR(clGetDeviceInfo(st->device, 0x7fff, sizeof(word), &word, NULL),
              CL_INVALID_VALUE);
    /* add1 was built without -cl-kernel-arg-info. */
    {
        char name[64];

        CHECK_ERR(clGetKernelArgInfo(st->kernel, 0, CL_KERNEL_ARG_NAME,
                                     sizeof(name), name, NULL),
                  CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    }
}

/* Calls clGetPlatformInfo through the pointer the extension query gave,
 * if it gave one, and compares with the direct call. */
static void check_extension_pointer(struct state *st)
{
    char direct[256] = "", indirect[256] = "";

    if (st->get_platform_info == NULL)
        return;
    CHECK(clGetPlatformInfo(st->platform, CL_PLATFORM_NAME,
                            sizeof(direct) - 1, direct, NULL));
    CHECK(st->get_platform_info(st->platform, CL_PLATFORM_NAME,
                                sizeof(indirect) - 1, indirect, NULL));
    EXPECT(strcmp(direct, indirect) == 0,
           "platform name '%s' directly, '%s' through the pointer", direct,
           indirect);
}

/* Reads the long-lived buffer and compares it with its mirror. */
static void verify_buf(struct state *st, const char *step)
{
    static cl_uint got[N];

    CHECK(clEnqueueReadBuffer(st->queue, st->buf, CL_TRUE, 0, sizeof(got),
                              got, 0, NULL, NULL));
    expect_uints(got, st->mirror, N, step);
}

/* Releases the program while a kernel still uses it: the kernel keeps
 * working and keeps naming the program. */
static void check_orphan_kernel(struct state *st)
{
    cl_program old = st->program;
    size_t global = N;

    CHECK(clReleaseProgram(st->program));
    st->program = NULL;
    for (int i = 0; i < 20; i++) {
        cl_program p = NULL;

        CHECK(clGetKernelInfo(st->kernel, CL_KERNEL_PROGRAM, sizeof(p), &p,
                              NULL));
        EXPECT_HANDLE("CL_KERNEL_PROGRAM after clReleaseProgram", p, old);
        CHECK(clSetKernelArg(st->kernel, 0, sizeof(cl_mem), &st->buf));
        CHECK(clEnqueueNDRangeKernel(st->queue, st->kernel, 1, NULL, &global,
                                     NULL, 0, NULL, NULL));
        for (size_t j = 0; j < N; j++)
            st->mirror[j]++;
    }
    verify_buf(st, "kernel of a released program");
}

int main(void)
{
    static struct state st;
    cl_context_properties props[3];
    cl_int err;

    pick_device(&st.platform, &st.device);
    CHECK(clGetDeviceInfo(st.device, CL_DEVICE_IMAGE_SUPPORT,
                          sizeof(st.images), &st.images, NULL));
    props[0] = CL_CONTEXT_PLATFORM;
    props[1] = (cl_context_properties)st.platform;
    props[2] = 0;
    st.context = clCreateContext(props, 1, &st.device, NULL, NULL, &err);
    CHECK(err);
    st.queue = clCreateCommandQueueWithProperties(st.context, st.device, NULL,
                                                  &err);
    CHECK(err);
    st.program = build_source(st.context, st.device, kernel_source, "");
    st.kernel = make_kernel(st.program, "add1");
    st.buf = clCreateBuffer(st.context,
                            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            sizeof(st.mirror), st.mirror, &err);
    CHECK(err);
    st.use_buf = clCreateBuffer(st.context,
                                CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                sizeof(st.use_host), st.use_host, &err);
    CHECK(err);

    /* A core name may or may not be answered; an unknown name must not. */
    st.get_platform_info = (cl_api_clGetPlatformInfo)
        clGetExtensionFunctionAddressForPlatform(st.platform,
                                                 "clGetPlatformInfo");
    if (st.get_platform_info == NULL)
        fprintf(stderr, "note: no address for clGetPlatformInfo, pointer "
                        "call skipped\n");
    EXPECT(clGetExtensionFunctionAddressForPlatform(
               st.platform, "clCraneNoSuchFunctionXYZ") == NULL,
           "an unknown extension function has an address");

    for (int round = 0; round < ROUNDS; round++) {
        check_top_level(&st);
        check_buffers(&st);
        check_program_kernel_event(&st);
        check_refcounts(&st);
        check_errors(&st);
        check_extension_pointer(&st);
        if (round % 10 == 9)
            verify_buf(&st, "query rounds");
    }
    check_orphan_kernel(&st);
    check_top_level(&st);
    check_extension_pointer(&st);

    CHECK(clReleaseKernel(st.kernel));
    CHECK(clReleaseMemObject(st.buf));
    CHECK(clReleaseMemObject(st.use_buf));
    CHECK(clReleaseCommandQueue(st.queue));
    CHECK(clReleaseContext(st.context));
    pass();
}
