/* Two devices at once: one context over both with a queue on each and
 * copies between them, and a context per device with bytes carried from
 * one to the other; every word checked, round after round.  With
 * --one-device, the same on the first device alone: one context with two
 * queues on it, and two contexts of their own on it (a one-GPU machine). */
#define TEST_NAME "multidev"
#include "clcheck.h"

#define N 4096
#define ROUNDS 120

static const char *source =
    "__kernel void advance(__global uint *a, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * 3u + k + (uint)i;\n"
    "}\n";

static void model_step(cl_uint *a, cl_uint k)
{
    for (cl_uint i = 0; i < N; i++)
        a[i] = a[i] * 3u + k + i;
}

static void run(cl_command_queue q, cl_kernel kern, cl_mem buf, cl_uint k)
{
    size_t global = N;

    CHECK(clSetKernelArg(kern, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(kern, 1, sizeof(k), &k));
    CHECK(clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
}

/* The context's devices and each queue's device are the program's own
 * handles, in its order. */
static void check_handles(cl_context ctx, const cl_device_id *dev,
                          cl_uint n, cl_command_queue *q)
{
    cl_device_id got[2] = { 0 };
    cl_uint count = 0;

    CHECK(clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof(count),
                           &count, NULL));
    EXPECT(count == n, "context has %u devices, expected %u", count, n);
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, n * sizeof(got[0]), got,
                           NULL));
    for (cl_uint i = 0; i < n; i++) {
        cl_device_id qd = NULL;

        EXPECT(got[i] == dev[i], "context device %u changed", i);
        CHECK(clGetCommandQueueInfo(q[i], CL_QUEUE_DEVICE, sizeof(qd), &qd,
                                    NULL));
        EXPECT(qd == dev[i], "queue %u is on another device", i);
    }
}

static cl_uint pattern(cl_uint i, cl_uint salt)
{
    return i * 2654435761u ^ salt;
}

int main(int argc, char **argv)
{
    int one = argc > 1 && strcmp(argv[1], "--one-device") == 0;
    cl_platform_id platform;
    cl_device_id dev[2];
    cl_uint n_dev = 0;
    cl_int err;
    static cl_uint a[N], b[N], ma[N], mb[2][N], got[N];

    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, dev, &n_dev));
    if (one)
        dev[1] = dev[0];
    else if (n_dev < 2)
        skip("needs two devices on the first platform (PoCL: "
             "POCL_DEVICES=\"pthread pthread\"), or --one-device");
    cl_uint n_ctx = one ? 1 : 2;

    /* One context over both devices, a queue on each. */
    cl_context both = clCreateContext(NULL, n_ctx, dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue bq[2];
    for (int i = 0; i < 2; i++) {
        bq[i] = clCreateCommandQueueWithProperties(both, dev[i], NULL, &err);
        CHECK(err);
    }
    cl_program bprog = clCreateProgramWithSource(both, 1, &source, NULL,
                                                 &err);
    CHECK(err);
    CHECK(clBuildProgram(bprog, n_ctx, dev, NULL, NULL, NULL));
    cl_kernel bk[2] = { make_kernel(bprog, "advance"),
                        make_kernel(bprog, "advance") };
    for (cl_uint i = 0; i < N; i++)
        ma[i] = a[i] = pattern(i, 1);
    cl_mem x = clCreateBuffer(both, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(a), a, &err);
    CHECK(err);
    cl_mem y = clCreateBuffer(both, CL_MEM_READ_WRITE, sizeof(a), NULL, &err);
    CHECK(err);

    /* A context per device, each with its program and buffer. */
    cl_context own[2];
    cl_command_queue oq[2];
    cl_kernel ok[2];
    cl_program oprog[2];
    cl_mem ob[2];
    for (int i = 0; i < 2; i++) {
        own[i] = clCreateContext(NULL, 1, &dev[i], NULL, NULL, &err);
        CHECK(err);
        oq[i] = clCreateCommandQueueWithProperties(own[i], dev[i], NULL,
                                                   &err);
        CHECK(err);
        oprog[i] = build_source(own[i], dev[i], source, NULL);
        ok[i] = make_kernel(oprog[i], "advance");
        for (cl_uint j = 0; j < N; j++)
            mb[i][j] = b[j] = pattern(j, 7 + (cl_uint)i);
        ob[i] = clCreateBuffer(own[i], CL_MEM_READ_WRITE |
                               CL_MEM_COPY_HOST_PTR, sizeof(b), b, &err);
        CHECK(err);
    }

    for (cl_uint r = 0; r < ROUNDS; r++) {
        /* Device 0 steps X, device 1 copies it to Y and steps Y, device 0
         * copies Y back into X. */
        run(bq[0], bk[0], x, r);
        CHECK(clFinish(bq[0]));
        model_step(ma, r);
        CHECK(clEnqueueCopyBuffer(bq[1], x, y, 0, 0, sizeof(a), 0, NULL,
                                  NULL));
        run(bq[1], bk[1], y, r + 1000);
        CHECK(clFinish(bq[1]));
        model_step(ma, r + 1000);
        CHECK(clEnqueueCopyBuffer(bq[0], y, x, 0, 0, sizeof(a), 0, NULL,
                                  NULL));
        CHECK(clEnqueueReadBuffer(bq[0], x, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        expect_uints(got, ma, N, "one context over two devices");

        /* Each device's own context steps its buffer; every fourth round
         * device 0's bytes are carried into device 1's context. */
        run(oq[0], ok[0], ob[0], r);
        run(oq[1], ok[1], ob[1], r + 7);
        model_step(mb[0], r);
        model_step(mb[1], r + 7);
        CHECK(clEnqueueReadBuffer(oq[0], ob[0], CL_TRUE, 0, sizeof(got), got,
                                  0, NULL, NULL));
        expect_uints(got, mb[0], N, "device 0's own context");
        if (r % 4 == 3) {
            CHECK(clEnqueueWriteBuffer(oq[1], ob[1], CL_TRUE, 0, sizeof(got),
                                       got, 0, NULL, NULL));
            memcpy(mb[1], mb[0], sizeof(mb[1]));
        }
        CHECK(clEnqueueReadBuffer(oq[1], ob[1], CL_TRUE, 0, sizeof(got), got,
                                  0, NULL, NULL));
        expect_uints(got, mb[1], N, "device 1's own context");
        if (r % 10 == 0) {
            check_handles(both, dev, n_ctx, bq);
            check_handles(own[0], &dev[0], 1, &oq[0]);
            check_handles(own[1], &dev[1], 1, &oq[1]);
        }
    }

    for (int i = 0; i < 2; i++) {
        clReleaseMemObject(ob[i]);
        clReleaseKernel(ok[i]);
        clReleaseProgram(oprog[i]);
        clReleaseCommandQueue(oq[i]);
        clReleaseContext(own[i]);
        clReleaseKernel(bk[i]);
        clReleaseCommandQueue(bq[i]);
    }
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseProgram(bprog);
    clReleaseContext(both);
    pass();
}
