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

static const char *only;  /* the one kind to run, or NULL for all */

static int wanted(const char *kind)
{
    return !only || strcmp(only, kind) == 0;
}

static void report(const char *kind, double t0, long n)
{
    printf("RESULT %s %.2f %ld\n", kind, (now_ns() - t0) / n, n);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    const char *src = "kernel void k(global int *a, global int *b, "
                      "global int *c, global int *d, int e, int f, int g, "
                      "int h) { a[0] = e; }";
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    size_t global = 1;
    cl_mem bufs[4];
    int value = 7;
    double t0;

    only = argc > 2 ? argv[2] : NULL;
    if (n <= 0 || (only && !wanted("setarg") && !wanted("setarg_mem") &&
                   !wanted("launch") && !wanted("args8_launch") &&
                   !wanted("launch_event") && !wanted("read4") &&
                   !wanted("event_status") &&
                   !wanted("write4"))) {
        fprintf(stderr, "usage: shimcost [ITERATIONS > 0 [setarg|"
                        "setarg_mem|launch|args8_launch|launch_event|"
                        "write4|read4|event_status]]\n");
        return 2;
    }
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    for (int i = 0; i < 4; i++) {
        bufs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
        CHECK(err);
    }
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &device, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "k", &err);
    CHECK(err);
    for (cl_uint i = 0; i < 4; i++)
        CHECK(clSetKernelArg(k, i, sizeof(cl_mem), &bufs[i]));
    for (cl_uint i = 4; i < 8; i++)
        CHECK(clSetKernelArg(k, i, sizeof(int), &value));

    if (wanted("setarg")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clSetKernelArg(k, 4 + (i & 3), sizeof(int), &value);
        report("setarg", t0, n);
    }
    if (wanted("setarg_mem")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clSetKernelArg(k, i & 3, sizeof(cl_mem), &bufs[(i >> 2) & 3]);
        report("setarg_mem", t0, n);
    }
    if (wanted("launch")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                   NULL);
        report("launch", t0, n);
    }
    if (wanted("args8_launch")) {
        /* bench/overhead's setarg iteration: eight arguments, then a
         * launch. */
        t0 = now_ns();
        for (long i = 0; i < n; i++) {
            int v[4] = {(int)i, (int)(i >> 4), 256, 1 + (int)(i % 7)};
            for (cl_uint a = 0; a < 4; a++)
                clSetKernelArg(k, a, sizeof(cl_mem), &bufs[(i + a) & 3]);
            for (cl_uint a = 0; a < 4; a++)
                clSetKernelArg(k, 4 + a, sizeof(int), &v[a]);
            clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                   NULL);
        }
        report("args8_launch", t0, n);
    }
    if (wanted("launch_event")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++) {
            cl_event ev;
            clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                   &ev);
            clReleaseEvent(ev);
        }
        report("launch_event", t0, n);
    }
    if (wanted("read4")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clEnqueueReadBuffer(q, bufs[0], CL_TRUE, 0, 4, &value, 0, NULL,
                                NULL);
        report("read4", t0, n);
    }
    if (wanted("event_status")) {
        cl_event done;
        cl_int status;
        CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &done));
        CHECK(clFinish(q));
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(status), &status, NULL);
        report("event_status", t0, n);
        clReleaseEvent(done);
    }
    if (wanted("write4")) {
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            clEnqueueWriteBuffer(q, bufs[0], CL_TRUE, 0, 4, &value, 0, NULL,
                                 NULL);
        report("write4", t0, n);
    }

    CHECK(clFinish(q));
    clReleaseKernel(k);
    clReleaseProgram(prog);
    for (int i = 0; i < 4; i++)
        clReleaseMemObject(bufs[i]);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
