/* Times tight loops of single OpenCL calls: the shim's cost per call.
 *
 * Run natively and under crane-run against bench/shimcost's null vendor
 * (run.sh does both): the vendor returns at once, so the difference
 * between the two runs' ns/call is what the shim adds to each call.
 *
 *   shimcost [ITERATIONS [KIND]]   prints one line per call kind (or only
 *   KIND's): RESULT <kind> <ns per call> <iterations>
 *
 * The kinds: setarg (clSetKernelArg of an int), setarg_mem (of a buffer,
 * which the shim tracks for dirtiness), launch (clEnqueueNDRangeKernel
 * with no event), args8_launch (four buffer and four int arguments
 * changed, then a launch: bench/overhead's setarg iteration),
 * launch_event (with an event, then clReleaseEvent), read4 (a 4-byte
 * blocking clEnqueueReadBuffer), event_status (clGetEventInfo of a
 * completed marker's status: remoted, a round trip),
 * write4 (a 4-byte blocking clEnqueueWriteBuffer).  Exit 0, or 2 on an
 * OpenCL error (the message on stderr).
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                       \
    do {                                                                  \
        cl_int e_ = (call);                                               \
        if (e_ != CL_SUCCESS) {                                           \
            fprintf(stderr, "shimcost: %s failed: %d\n", #call, e_);     \
            exit(2);                                                      \
        }                                                                 \
    } while (0)

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* What every kind's loop uses. */
struct bench {
    cl_command_queue q;
    cl_kernel k;
    cl_mem bufs[4];
    size_t global;
    int value;
};

static void run_setarg(struct bench *b, long n)
{
    for (long i = 0; i < n; i++)
        clSetKernelArg(b->k, 4 + (i & 3), sizeof(int), &b->value);
}

static void run_setarg_mem(struct bench *b, long n)
{
    for (long i = 0; i < n; i++)
        clSetKernelArg(b->k, i & 3, sizeof(cl_mem), &b->bufs[(i >> 2) & 3]);
}

static void run_launch(struct bench *b, long n)
{
    for (long i = 0; i < n; i++)
        clEnqueueNDRangeKernel(b->q, b->k, 1, NULL, &b->global, NULL, 0,
                               NULL, NULL);
}

/* bench/overhead's setarg iteration: eight arguments, then a launch. */
static void run_args8_launch(struct bench *b, long n)
{
    for (long i = 0; i < n; i++) {
        int v[4] = {(int)i, (int)(i >> 4), 256, 1 + (int)(i % 7)};
        for (cl_uint a = 0; a < 4; a++)
            clSetKernelArg(b->k, a, sizeof(cl_mem), &b->bufs[(i + a) & 3]);
        for (cl_uint a = 0; a < 4; a++)
            clSetKernelArg(b->k, 4 + a, sizeof(int), &v[a]);
        clEnqueueNDRangeKernel(b->q, b->k, 1, NULL, &b->global, NULL, 0,
                               NULL, NULL);
    }
}

static void run_launch_event(struct bench *b, long n)
{
    for (long i = 0; i < n; i++) {
        cl_event ev;
        clEnqueueNDRangeKernel(b->q, b->k, 1, NULL, &b->global, NULL, 0,
                               NULL, &ev);
        clReleaseEvent(ev);
    }
}

static void run_read4(struct bench *b, long n)
{
    for (long i = 0; i < n; i++)
        clEnqueueReadBuffer(b->q, b->bufs[0], CL_TRUE, 0, 4, &b->value, 0,
                            NULL, NULL);
}

/* The marker is made and finished before the clock starts (main). */
static cl_event status_of;

static void run_event_status(struct bench *b, long n)
{
    cl_int status;

    (void)b;
    for (long i = 0; i < n; i++)
        clGetEventInfo(status_of, CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof(status), &status, NULL);
}

static void run_write4(struct bench *b, long n)
{
    for (long i = 0; i < n; i++)
        clEnqueueWriteBuffer(b->q, b->bufs[0], CL_TRUE, 0, 4, &b->value, 0,
                             NULL, NULL);
}

/* The kinds, in the order they run. */
static const struct kind {
    const char *name;
    void (*run)(struct bench *b, long n);
} kinds[] = {
    {"setarg", run_setarg},
    {"setarg_mem", run_setarg_mem},
    {"launch", run_launch},
    {"args8_launch", run_args8_launch},
    {"launch_event", run_launch_event},
    {"read4", run_read4},
    {"event_status", run_event_status},
    {"write4", run_write4},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* The kind named ONLY, or -1. */
static int kind_index(const char *only)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i].name, only) == 0)
            return (int)i;
    return -1;
}

/* A context, a queue, four buffers and a kernel with its eight arguments
 * set, on the first device of the first platform. */
static void setup(struct bench *b, cl_context *ctx, cl_program *prog)
{
    const char *src = "kernel void k(global int *a, global int *b, "
                      "global int *c, global int *d, int e, int f, int g, "
                      "int h) { a[0] = e; }";
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    *ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    b->q = clCreateCommandQueueWithProperties(*ctx, device, NULL, &err);
    CHECK(err);
    for (int i = 0; i < 4; i++) {
        b->bufs[i] = clCreateBuffer(*ctx, CL_MEM_READ_WRITE, 4096, NULL,
                                    &err);
        CHECK(err);
    }
    *prog = clCreateProgramWithSource(*ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(*prog, 1, &device, "", NULL, NULL));
    b->k = clCreateKernel(*prog, "k", &err);
    CHECK(err);
    for (cl_uint i = 0; i < 4; i++)
        CHECK(clSetKernelArg(b->k, i, sizeof(cl_mem), &b->bufs[i]));
    for (cl_uint i = 4; i < 8; i++)
        CHECK(clSetKernelArg(b->k, i, sizeof(int), &b->value));
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    const char *only = argc > 2 ? argv[2] : NULL;
    struct bench b = {.global = 1, .value = 7};
    cl_context ctx;
    cl_program prog;

    if (n <= 0 || (only && kind_index(only) < 0)) {
        fprintf(stderr, "usage: shimcost [ITERATIONS > 0 [setarg|"
                        "setarg_mem|launch|args8_launch|launch_event|"
                        "write4|read4|event_status]]\n");
        return 2;
    }
    setup(&b, &ctx, &prog);
    for (size_t i = 0; i < N_KINDS; i++) {
        if (only && strcmp(only, kinds[i].name))
            continue;
        if (kinds[i].run == run_event_status) {
            CHECK(clEnqueueMarkerWithWaitList(b.q, 0, NULL, &status_of));
            CHECK(clFinish(b.q));
        }
        double t0 = now_ns();
        kinds[i].run(&b, n);
        printf("RESULT %s %.2f %ld\n", kinds[i].name, (now_ns() - t0) / n, n);
        if (kinds[i].run == run_event_status)
            clReleaseEvent(status_of);
    }
    CHECK(clFinish(b.q));
    clReleaseKernel(b.k);
    clReleaseProgram(prog);
    for (int i = 0; i < 4; i++)
        clReleaseMemObject(b.bufs[i]);
    clReleaseCommandQueue(b.q);
    clReleaseContext(ctx);
    return 0;
}
