/* Host access flags (CL_MEM_HOST_*) and sub-buffer flags as OpenCL defines
 * them: the errors, the reported flags, and buffers the host may not read
 * or write keeping their bytes while the device works on them. */
#define TEST_NAME "hostaccess"
#include "clcheck.h"

#define N 4096
#define ROUNDS 40

static const char *source =
    "__kernel void bump(__global uint *a, uint k) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * 3u + k;\n"
    "}\n";

static cl_mem make(cl_context c, cl_mem_flags flags, void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, flags, N * sizeof(cl_uint), host, &err);

    if (err != CL_SUCCESS)
        fail("clCreateBuffer(flags %#llx) returned %d",
             (unsigned long long)flags, (int)err);
    return m;
}

static cl_mem_flags flags_of(cl_mem m)
{
    cl_mem_flags f = 0;

    CHECK(clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(f), &f, NULL));
    return f;
}

/* Every combination of two or three host access flags is invalid. */
static void invalid_combinations(cl_context c)
{
    static const cl_mem_flags bad[] = {
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY,
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS,
        CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY |
            CL_MEM_HOST_NO_ACCESS,
    };
    cl_int err;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cl_mem m = clCreateBuffer(c, bad[i] | CL_MEM_READ_WRITE, 64, NULL,
                                  &err);
        EXPECT(!m && err == CL_INVALID_VALUE,
               "flags %#llx gave %d", (unsigned long long)bad[i], (int)err);
    }
}

/* Reads, writes and maps the flags forbid are refused; the others work. */
static void refusals(cl_command_queue q, cl_mem wo, cl_mem ro, cl_mem na)
{
    static cl_uint tmp[N];
    cl_int err;
    void *p;

    CHECK_ERR(clEnqueueReadBuffer(q, wo, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueReadBuffer(q, na, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueWriteBuffer(q, ro, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueWriteBuffer(q, na, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    p = clEnqueueMapBuffer(q, wo, CL_TRUE, CL_MAP_READ, 0, 64, 0, NULL, NULL,
                           &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map for reading gave %d",
           (int)err);
    p = clEnqueueMapBuffer(q, ro, CL_TRUE, CL_MAP_WRITE, 0, 64, 0, NULL, NULL,
                           &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map for writing gave %d",
           (int)err);
    p = clEnqueueMapBuffer(q, na, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                           64, 0, NULL, NULL, &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map to invalidate gave %d",
           (int)err);
}

/* Sub-buffers: the host pointer and host access rules of OpenCL 1.2. */
static void sub_buffers(cl_context c, cl_command_queue q, cl_uint *host)
{
    cl_buffer_region r = {1024, 1024};
    cl_mem parent = make(c, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, host);
    cl_mem na = make(c, CL_MEM_HOST_NO_ACCESS, NULL);
    cl_mem sub;
    cl_int err;
    void *p = NULL;
    static cl_uint tmp[256];

    sub = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &r,
                            &err);
    CHECK(err);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_HOST_PTR, sizeof(p), &p, NULL));
    EXPECT(p == (char *)host + r.origin, "CL_MEM_HOST_PTR %p, host %p", p,
           (void *)host);
    EXPECT(flags_of(sub) & CL_MEM_USE_HOST_PTR,
           "sub-buffer flags %#llx lack the parent's USE_HOST_PTR",
           (unsigned long long)flags_of(sub));
    CHECK(clReleaseMemObject(sub));
    sub = clCreateSubBuffer(parent, CL_MEM_USE_HOST_PTR,
                            CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    EXPECT(!sub && err == CL_INVALID_VALUE,
           "a sub-buffer with CL_MEM_USE_HOST_PTR gave %d", (int)err);
    sub = clCreateSubBuffer(na, CL_MEM_HOST_READ_ONLY,
                            CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    EXPECT(!sub && err == CL_INVALID_VALUE,
           "a host-readable sub-buffer of a no-access one gave %d", (int)err);
    sub = clCreateSubBuffer(na, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CHECK(err);
    EXPECT(flags_of(sub) & CL_MEM_HOST_NO_ACCESS,
           "sub-buffer flags %#llx lack the parent's HOST_NO_ACCESS",
           (unsigned long long)flags_of(sub));
    CHECK_ERR(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(na));
    CHECK(clReleaseMemObject(parent));
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    static cl_uint init[N], want[N], got[N], host[N];

    pick_device(&platform, &device);
    cl_context c = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(c, device, NULL,
                                                            &err);
    CHECK(err);
    cl_program prog = build_source(c, device, source, "");
    cl_kernel k = make_kernel(prog, "bump");

    for (cl_uint i = 0; i < N; i++)
        init[i] = want[i] = i * 2654435761u;
    invalid_combinations(c);

    /* The device alone changes these; the host sees them only through a
     * plain buffer they are copied to. */
    cl_mem na = make(c, CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR, init);
    cl_mem wo = make(c, CL_MEM_HOST_WRITE_ONLY | CL_MEM_READ_WRITE, NULL);
    cl_mem ro = make(c, CL_MEM_HOST_READ_ONLY | CL_MEM_COPY_HOST_PTR, init);
    cl_mem plain = make(c, CL_MEM_READ_WRITE, NULL);
    EXPECT((flags_of(na) & ~(cl_mem_flags)CL_MEM_READ_WRITE) ==
               (CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR),
           "CL_MEM_FLAGS %#llx", (unsigned long long)flags_of(na));
    EXPECT(flags_of(wo) == (CL_MEM_HOST_WRITE_ONLY | CL_MEM_READ_WRITE),
           "CL_MEM_FLAGS %#llx", (unsigned long long)flags_of(wo));
    refusals(q, wo, ro, na);
    sub_buffers(c, q, host);

    CHECK(clEnqueueWriteBuffer(q, wo, CL_TRUE, 0, sizeof(init), init, 0, NULL,
                               NULL));
    size_t gsize = N;
    for (cl_uint round = 0; round < ROUNDS; round++) {
        cl_mem targets[2] = {na, wo};
        for (int t = 0; t < 2; t++) {
            CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &targets[t]));
            CHECK(clSetKernelArg(k, 1, sizeof(cl_uint), &round));
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsize, NULL, 0, NULL,
                                         NULL));
        }
        for (cl_uint i = 0; i < N; i++)
            want[i] = want[i] * 3u + round;
        for (int t = 0; t < 2; t++) {
            CHECK(clEnqueueCopyBuffer(q, targets[t], plain, 0, 0,
                                      sizeof(got), 0, NULL, NULL));
            CHECK(clEnqueueReadBuffer(q, plain, CL_TRUE, 0, sizeof(got), got,
                                      0, NULL, NULL));
            expect_uints(got, want, N, t ? "host-write-only buffer"
                                         : "no-access buffer");
        }
        CHECK(clEnqueueReadBuffer(q, ro, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        expect_uints(got, init, N, "host-read-only buffer");
    }

    CHECK(clReleaseMemObject(plain));
    CHECK(clReleaseMemObject(ro));
    CHECK(clReleaseMemObject(wo));
    CHECK(clReleaseMemObject(na));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(c));
    pass();
}
