/* Native kernels (clEnqueueNativeKernel) over two buffers, whose handles in
 * the argument block the implementation replaces by their memory, 150
 * rounds mixed with OpenCL C kernels on the same buffers, every word
 * checked.  CL_INVALID_OPERATION is taken (and counted) only where the
 * device says, just before or just after, that it runs none (a program
 * switched onto a proxy). */
#define TEST_NAME "nativekern"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#define ROUNDS 150
#define N 1024

static const char *source =
    "__kernel void inc(__global uint *d) { d[get_global_id(0)] += 1; }\n";

/* The argument block: two buffer handles (memory once it runs) between
 * plain values, which must arrive as given. */
struct native_args {
    cl_uint add;
    cl_uint *in;
    cl_uint n;
    cl_uint *out;
    const cl_uint *table;   /* made from host memory, never written */
    cl_uint tag;
};

#define TAG 0x5eed

static void native_fn(void *p)
{
    struct native_args *a = p;

    if (a->tag != TAG)
        return;  /* out stays as it was: the check below fails */
    for (cl_uint i = 0; i < a->n; i++)
        a->out[i] = a->in[i] + a->add + a->table[i % 16];
}

/* Argument blocks OpenCL refuses (CL_INVALID_VALUE), the shim among the
 * first: it once read a missing list. */
static void refusals(cl_command_queue q, cl_mem m)
{
    struct native_args a = {0, NULL, 0, NULL, NULL, TAG};
    const void *loc[1] = {&a.in};

    CHECK_ERR(clEnqueueNativeKernel(q, native_fn, &a, sizeof(a), 1, NULL, loc,
                                    0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(q, native_fn, &a, sizeof(a), 1, &m, NULL,
                                    0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(q, NULL, &a, sizeof(a), 0, NULL, NULL, 0,
                                    NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(q, native_fn, NULL, sizeof(a), 0, NULL,
                                    NULL, 0, NULL, NULL), CL_INVALID_VALUE);
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id dev;
    cl_device_exec_capabilities caps = 0;
    cl_int err;
    cl_uint in[N], out[N];
    unsigned ran = 0, refused = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    pick_device(&platform, &dev);
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof(caps),
                          &caps, NULL));
    if (!(caps & CL_EXEC_NATIVE_KERNEL))
        skip("the device runs no native kernel");
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL,
                                                            &err);
    CHECK(err);
    cl_mem bin = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(in), NULL,
                                &err);
    CHECK(err);
    cl_mem bout = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(out), NULL,
                                 &err);
    CHECK(err);
    cl_uint table[16];
    for (cl_uint i = 0; i < 16; i++)
        table[i] = 1000 * i;
    cl_mem btab = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 sizeof(table), table, &err);
    CHECK(err);
    cl_program p = build_source(ctx, dev, source, NULL);
    cl_kernel k = make_kernel(p, "inc");
    size_t global = N;
    CHECK(clSetKernelArg(k, 0, sizeof(bin), &bin));
    refusals(q, bin);
    for (cl_uint r = 0; r < ROUNDS; r++) {
        for (cl_uint i = 0; i < N; i++)
            in[i] = i * 3 + r;
        CHECK(clEnqueueWriteBuffer(q, bin, CL_FALSE, 0, sizeof(in), in, 0,
                                   NULL, NULL));
        /* in[i] + 1 on the device, then out = in + r + 7 natively. */
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                     NULL));
        struct native_args a = {r + 7, (cl_uint *)bin, N, (cl_uint *)bout,
                                (const cl_uint *)btab, TAG};
        const void *loc[3] = {&a.in, &a.out, &a.table};
        cl_mem mems[3] = {bin, bout, btab};
        cl_event ev = NULL;
        cl_device_exec_capabilities before = 0;
        CHECK(clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES,
                              sizeof(before), &before, NULL));
        err = clEnqueueNativeKernel(q, native_fn, &a, sizeof(a), 3, mems,
                                    loc, 0, NULL, r % 2 ? &ev : NULL);
        /* The program's own block must come back unchanged. */
        EXPECT(a.in == (cl_uint *)bin && a.out == (cl_uint *)bout,
               "round %u: the program's argument block was changed", r);
        if (err == CL_INVALID_OPERATION) {
            CHECK(clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES,
                                  sizeof(caps), &caps, NULL));
            /* A switch lands before or after the enqueue, so one of the
             * two asks the side the enqueue went to. */
            EXPECT(!(before & caps & CL_EXEC_NATIVE_KERNEL), "round %u: "
                   "refused where the device runs native kernels", r);
            refused++;
            continue;
        }
        CHECK(err);
        if (ev) {
            CHECK(clWaitForEvents(1, &ev));
            CHECK(clReleaseEvent(ev));
        }
        CHECK(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, sizeof(out), out, 0,
                                  NULL, NULL));
        for (cl_uint i = 0; i < N; i++)
            EXPECT(out[i] == i * 3 + r + 1 + r + 7 + 1000 * (i % 16),
                   "round %u: out[%u] = %u, not %u", r, i, out[i],
                   i * 3 + r + 1 + r + 7 + 1000 * (i % 16));
        ran++;
    }
    fprintf(stderr, "note: %u native kernels ran, %u refused\n", ran,
            refused);
    EXPECT(ran > 0, "no native kernel ran");
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(p));
    CHECK(clReleaseMemObject(btab));
    CHECK(clReleaseMemObject(bout));
    CHECK(clReleaseMemObject(bin));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    pass();
}
