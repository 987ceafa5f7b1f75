/* A migration test program: computes until told to stop, checking every result.
 *
 *   cl_worker [--stop-file F] [--seconds S] [--progress F] [--words N]
 *             [--pause-file F] [--svm]
 *
 * Builds its state (a ping-pong stencil over two buffers plus an
 * accumulator, N words each, default 262144 = 1 MiB), then launches one
 * kernel per iteration and checks both buffers against a CPU model every
 * 50 iterations, until the stop file exists or S seconds (default 120)
 * have passed.  While it runs it rewrites the progress file with
 * "ITERATIONS SECONDS" so a test can see it keep computing through a
 * migration.  While the pause file exists it makes no OpenCL call (an idle
 * program, for tests/fault).  With --svm it also holds a coarse-grained
 * SVM allocation from start to end (a program crane refuses to switch, for
 * tests/fault; exit 77 where the device has no SVM).  Prints "PASS cl_worker iterations=N" (exit 0) when every
 * check held, else "FAIL cl_worker: what" (exit 1).  Knows nothing of
 * crane: run it under crane-run.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_EVERY 50

static const char *source =
    "__kernel void stencil(__global const uint *src, __global uint *dst,\n"
    "                   __global uint *acc, uint it)\n"
    "{\n"
    "    uint n = get_global_size(0), i = get_global_id(0);\n"
    "    uint l = src[i == 0 ? n - 1 : i - 1];\n"
    "    uint r = src[i == n - 1 ? 0 : i + 1];\n"
    "    uint v = (l + 2u * src[i] + r) * 0x9e37u ^ it;\n"
    "    dst[i] = v;\n"
    "    acc[i] += v >> 7;\n"
    "}\n";

static void fail(const char *what, cl_int err)
{
    printf("FAIL cl_worker: %s (%d)\n", what, err);
    fflush(stdout);
    exit(1);
}

#define CK(call, what)                 \
    do {                               \
        cl_int e_ = (call);            \
        if (e_ != CL_SUCCESS)          \
            fail(what, e_);            \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void model_step(cl_uint *src, cl_uint *dst, cl_uint *acc, size_t n,
                       cl_uint it)
{
    for (size_t i = 0; i < n; i++) {
        cl_uint l = src[i == 0 ? n - 1 : i - 1];
        cl_uint r = src[i == n - 1 ? 0 : i + 1];
        cl_uint v = (l + 2u * src[i] + r) * 0x9e37u ^ it;
        dst[i] = v;
        acc[i] += v >> 7;
    }
}

static void progress(const char *path, unsigned long it, double secs)
{
    char tmp[4096];
    FILE *f;

    if (!path)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (!(f = fopen(tmp, "w")))
        return;
    fprintf(f, "%lu %.3f\n", it, secs);
    fclose(f);
    rename(tmp, path);
}

int main(int argc, char **argv)
{
    const char *stop_file = NULL, *progress_file = NULL, *pause_file = NULL;
    double seconds = 120, t0, last_progress = 0;
    bool svm = false;
    size_t n = 262144;
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stop-file") == 0 && i + 1 < argc)
            stop_file = argv[++i];
        else if (strcmp(argv[i], "--pause-file") == 0 && i + 1 < argc)
            pause_file = argv[++i];
        else if (strcmp(argv[i], "--progress") == 0 && i + 1 < argc)
            progress_file = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--words") == 0 && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--svm") == 0)
            svm = true;
        else {
            fprintf(stderr, "usage: cl_worker [--stop-file F] [--seconds S] "
                            "[--progress F] [--words N] "
                            "[--pause-file F] [--svm]\n");
            return 2;
        }
    }
    if (n < 16 || n > (64u << 20))
        fail("bad --words", 0);

    CK(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
    CK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL),
       "clGetDeviceIDs");
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CK(err, "clCreateContext");
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CK(err, "clCreateCommandQueue");
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err, "clCreateProgramWithSource");
    CK(clBuildProgram(prog, 1, &device, NULL, NULL, NULL), "clBuildProgram");
    cl_kernel k = clCreateKernel(prog, "stencil", &err);
    CK(err, "clCreateKernel");
    void *svm_block = NULL;
    if (svm) {
        svm_block = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);
        if (!svm_block) {
            printf("SKIP cl_worker: the device has no SVM\n");
            return 77;
        }
    }

    size_t bytes = n * sizeof(cl_uint);
    cl_uint *model[2], *macc, *got;
    model[0] = malloc(bytes);
    model[1] = malloc(bytes);
    macc = calloc(n, sizeof(cl_uint));
    got = malloc(bytes);
    if (!model[0] || !model[1] || !macc || !got)
        fail("out of memory", 0);
    for (size_t i = 0; i < n; i++)
        model[0][i] = (cl_uint)(i * 2654435761u);
    cl_mem buf[2], acc;
    buf[0] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            bytes, model[0], &err);
    CK(err, "clCreateBuffer");
    buf[1] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CK(err, "clCreateBuffer");
    acc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                         macc, &err);
    CK(err, "clCreateBuffer");

    t0 = now();
    unsigned long it = 0;
    int cur = 0;
    for (;;) {
        cl_uint iter = (cl_uint)it;
        while (pause_file && access(pause_file, F_OK) == 0)
            usleep(10000);
        CK(clSetKernelArg(k, 0, sizeof(cl_mem), &buf[cur]), "arg 0");
        CK(clSetKernelArg(k, 1, sizeof(cl_mem), &buf[1 - cur]), "arg 1");
        CK(clSetKernelArg(k, 2, sizeof(cl_mem), &acc), "arg 2");
        CK(clSetKernelArg(k, 3, sizeof(cl_uint), &iter), "arg 3");
        CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL),
           "clEnqueueNDRangeKernel");
        model_step(model[cur], model[1 - cur], macc, n, iter);
        cur = 1 - cur;
        it++;
        double t = now() - t0;
        bool stop = t >= seconds || (stop_file && access(stop_file, F_OK) == 0);
        if (it % CHECK_EVERY == 0 || stop) {
            CK(clEnqueueReadBuffer(q, buf[cur], CL_TRUE, 0, bytes, got, 0,
                                   NULL, NULL),
               "clEnqueueReadBuffer");
            if (memcmp(got, model[cur], bytes) != 0)
                fail("stencil buffer differs from the CPU model", 0);
            CK(clEnqueueReadBuffer(q, acc, CL_TRUE, 0, bytes, got, 0, NULL,
                                   NULL),
               "clEnqueueReadBuffer");
            if (memcmp(got, macc, bytes) != 0)
                fail("accumulator differs from the CPU model", 0);
        }
        if (t - last_progress >= 0.1 || stop) {
            progress(progress_file, it, t);
            last_progress = t;
        }
        if (stop)
            break;
    }
    CK(clFinish(q), "clFinish");
    if (svm_block)
        clSVMFree(ctx, svm_block);
    clReleaseMemObject(buf[0]);
    clReleaseMemObject(buf[1]);
    clReleaseMemObject(acc);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("PASS cl_worker iterations=%lu\n", it);
    return 0;
}
