/* Reads, writes and maps that host access flags forbid, on a vendor that
 * does not enforce them (tests/integration/fakecl.c wrapping PoCL, as
 * NVIDIA's OpenCL behaves): prints each verdict, then, round after round
 * while kernels change the buffers, reads a no-access and a host-write-only
 * buffer straight from the host and writes a host-read-only one, checking
 * every byte.  lenient.sh runs it natively and under the shim (re-homed
 * too) and requires the same output: the shim must accept what the vendor
 * accepts, and move the buffers' bytes exactly. */
#define TEST_NAME "hostaccess_lenient"
#include "../programs/clcheck.h"

#define N 4096
#define ROUNDS 60

static const char *source =
    "__kernel void bump(__global uint *a, uint k) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * 3u + k;\n"
    "}\n";

static unsigned long long checked;

static cl_mem make(cl_context c, cl_mem_flags flags, void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, flags, N * sizeof(cl_uint), host, &err);

    if (err != CL_SUCCESS)
        fail("clCreateBuffer(flags %#llx) returned %d",
             (unsigned long long)flags, (int)err);
    return m;
}

static void check(const cl_uint *got, const cl_uint *want, const char *what)
{
    expect_uints(got, want, N, what);
    checked += N * sizeof(cl_uint);
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    static cl_uint init[N], na_want[N], wo_want[N], ro_want[N], got[N];

    pick_device(&platform, &device);
    cl_context c = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(c, device, NULL,
                                                            &err);
    CHECK(err);
    cl_program prog = build_source(c, device, source, "");
    cl_kernel k = make_kernel(prog, "bump");

    for (cl_uint i = 0; i < N; i++)
        init[i] = na_want[i] = wo_want[i] = ro_want[i] = i * 2654435761u;
    cl_mem na = make(c, CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR, init);
    cl_mem wo = make(c, CL_MEM_HOST_WRITE_ONLY | CL_MEM_COPY_HOST_PTR, init);
    cl_mem ro = make(c, CL_MEM_HOST_READ_ONLY | CL_MEM_COPY_HOST_PTR, init);
    cl_mem plain = make(c, CL_MEM_READ_WRITE, NULL);
    cl_mem_flags f = 0;
    CHECK(clGetMemObjectInfo(na, CL_MEM_FLAGS, sizeof(f), &f, NULL));
    printf("CL_MEM_FLAGS of the no-access buffer: %#llx\n",
           (unsigned long long)f);

    /* The verdicts, whatever they are: the same under the shim. */
    printf("read no-access: %d\n",
           (int)clEnqueueReadBuffer(q, na, CL_TRUE, 0, sizeof(got), got, 0,
                                    NULL, NULL));
    printf("read host-write-only: %d\n",
           (int)clEnqueueReadBuffer(q, wo, CL_TRUE, 0, sizeof(got), got, 0,
                                    NULL, NULL));
    printf("write host-read-only: %d\n",
           (int)clEnqueueWriteBuffer(q, ro, CL_TRUE, 0, sizeof(init), init,
                                     0, NULL, NULL));
    cl_uint *p = clEnqueueMapBuffer(q, na, CL_TRUE,
                                    CL_MAP_WRITE_INVALIDATE_REGION, 0,
                                    sizeof(init), 0, NULL, NULL, &err);
    printf("map no-access to invalidate: %d\n", (int)err);
    if (p) {
        memcpy(p, init, sizeof(init));
        CHECK(clEnqueueUnmapMemObject(q, na, p, 0, NULL, NULL));
    }
    p = clEnqueueMapBuffer(q, wo, CL_TRUE, CL_MAP_READ, 0, sizeof(init), 0,
                           NULL, NULL, &err);
    printf("map host-write-only to read: %d\n", (int)err);
    if (p) {
        check(p, wo_want, "host-write-only buffer through a map");
        CHECK(clEnqueueUnmapMemObject(q, wo, p, 0, NULL, NULL));
    }
    CHECK(clFinish(q));

    size_t gsize = N;
    for (cl_uint round = 0; round < ROUNDS; round++) {
        cl_mem targets[2] = {na, wo};
        cl_uint *wants[2] = {na_want, wo_want};
        for (int t = 0; t < 2; t++) {
            CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &targets[t]));
            CHECK(clSetKernelArg(k, 1, sizeof(cl_uint), &round));
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsize, NULL, 0, NULL,
                                         NULL));
            for (cl_uint i = 0; i < N; i++)
                wants[t][i] = wants[t][i] * 3u + round;
        }
        /* Straight from the host, as the vendor allows. */
        if (clEnqueueReadBuffer(q, na, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                                NULL) == CL_SUCCESS)
            check(got, na_want, "no-access buffer read by the host");
        if (clEnqueueReadBuffer(q, wo, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                                NULL) == CL_SUCCESS)
            check(got, wo_want, "host-write-only buffer read by the host");
        /* And through the device, which every vendor allows. */
        for (int t = 0; t < 2; t++) {
            CHECK(clEnqueueCopyBuffer(q, targets[t], plain, 0, 0, sizeof(got),
                                      0, NULL, NULL));
            CHECK(clEnqueueReadBuffer(q, plain, CL_TRUE, 0, sizeof(got), got,
                                      0, NULL, NULL));
            check(got, wants[t], t ? "host-write-only buffer"
                                   : "no-access buffer");
        }
        if (round % 5 == 4) {
            for (cl_uint i = 0; i < N; i++)
                ro_want[i] = round + i;
            if (clEnqueueWriteBuffer(q, ro, CL_TRUE, 0, sizeof(ro_want),
                                     ro_want, 0, NULL, NULL) != CL_SUCCESS)
                memcpy(ro_want, init, sizeof(ro_want));
        }
        CHECK(clEnqueueReadBuffer(q, ro, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        check(got, ro_want, "host-read-only buffer");
    }
    printf("bytes checked: %llu\n", checked);

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
