/* A kernel whose duration is a parameter: 300 short launches, then one
 * that runs about SECONDS, every work-item's result checked.
 *   longkernel [SECONDS [finish|poll|rehome|rehome-back]]   (0.5 finish)
 * LONGKERNEL_STEPS=N runs N steps instead of a calibrated SECONDS. */
#define TEST_NAME "longkernel"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

/* Work-items, short launches, and the calibration's first length. */
#define ITEMS 8
#define SHORT_LAUNCHES 300
#define SHORT_STEPS 1000
#define CALIBRATE_STEPS (1u << 18)

static const char *kernel_source =
    "__kernel void spin(__global uint *out, ulong steps)\n"
    "{\n"
    "    uint x = get_global_id(0) * 2654435761u + 1u;\n"
    "    for (ulong i = 0; i < steps; i++)\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "    out[get_global_id(0)] = x;\n"
    "}\n";

/* What the kernel computes for work-item I, by jumping the generator
 * ahead STEPS at once (x -> a x + c composed with itself). */
static cl_uint model(cl_uint i, uint64_t steps)
{
    uint32_t a = 1664525u, c = 1013904223u, ra = 1, rc = 0;
    uint32_t x = i * 2654435761u + 1u;

    for (; steps; steps >>= 1) {
        if (steps & 1) {
            rc = rc * a + c;
            ra *= a;
        }
        c = c * a + c;
        a *= a;
    }
    return ra * x + rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(cl_command_queue q, cl_kernel k, cl_mem out, uint64_t steps,
                cl_event *ev)
{
    size_t g = ITEMS;
    cl_ulong s = steps;

    CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
    CHECK(clSetKernelArg(k, 1, sizeof(s), &s));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, ev));
}

static void check(cl_command_queue q, cl_mem out, uint64_t steps,
                  const char *what)
{
    cl_uint got[ITEMS], want[ITEMS];

    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                              NULL));
    for (cl_uint i = 0; i < ITEMS; i++)
        want[i] = model(i, steps);
    expect_uints(got, want, ITEMS, what);
}

/* crane_rehome: a switch asked of crane, its result on stderr. */
static void rehome(void)
{
    int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");

    if (!fn)
        skip("not under crane-run (no crane_rehome)");
    fprintf(stderr, "longkernel: crane_rehome returned %d\n", fn());
}

/* Waits for EV as MODE says: clFinish, polling its status, or a switch
 * asked of crane while it runs (rehome, and rehome-back after one before
 * it: with CRANE_REHOME_TO=alternate, the way back), then clFinish. */
static void wait_for(cl_command_queue q, cl_event ev, const char *mode)
{
    if (strcmp(mode, "poll") == 0) {
        cl_int st = CL_QUEUED;
        struct timespec pause = {0, 20 * 1000000L};
        while (st > CL_COMPLETE) {
            CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                 sizeof(st), &st, NULL));
            if (st > CL_COMPLETE)
                nanosleep(&pause, NULL);
        }
        EXPECT(st == CL_COMPLETE, "the long kernel ended with %d", st);
    } else if (strncmp(mode, "rehome", 6) == 0) {
        rehome();
    } else if (strcmp(mode, "finish") != 0) {
        fail("mode %s: finish, poll, rehome or rehome-back", mode);
    }
    CHECK(clFinish(q));
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    const char *mode = argc > 2 ? argv[2] : "finish";
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    cl_event ev;

    if (seconds <= 0 || seconds > 3600)
        fail("SECONDS %s: more than 0, at most 3600", argv[1]);
    pick_device(&platform, &device);
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    cl_program prog = build_source(ctx, device, kernel_source, NULL);
    cl_kernel k = make_kernel(prog, "spin");
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY,
                                ITEMS * sizeof(cl_uint), NULL, &err);
    CHECK(err);

    for (int i = 0; i < SHORT_LAUNCHES; i++) {
        run(q, k, out, SHORT_STEPS + (uint64_t)i, NULL);
        check(q, out, SHORT_STEPS + (uint64_t)i, "a short launch");
    }
    /* Steps per second on this device now, from runs of at least
     * 250 ms, the faster of two: a machine loaded while it calibrates and
     * idle while the long kernel runs would otherwise make that kernel
     * several times shorter than asked (seen: 2.2 s for 8). */
    uint64_t steps = CALIBRATE_STEPS;
    double t;
    for (;;) {
        double t0 = now_s();
        run(q, k, out, steps, NULL);
        CHECK(clFinish(q));
        t = now_s() - t0;
        if (t >= 0.25 || steps >= (1ull << 40))
            break;
        steps *= 4;
    }
    double t0 = now_s();
    run(q, k, out, steps, NULL);
    CHECK(clFinish(q));
    if (now_s() - t0 < t)
        t = now_s() - t0;
    check(q, out, steps, "the calibration");
    uint64_t want = (uint64_t)(seconds * (double)steps / t);
    /* The same kernel as another run's (bench/remote/long-kernel.sh). */
    const char *fixed = getenv("LONGKERNEL_STEPS");
    if (fixed && *fixed)
        want = strtoull(fixed, NULL, 10);
    if (want < 1)
        want = 1;

    if (strcmp(mode, "rehome-back") == 0)
        rehome();
    t0 = now_s();
    run(q, k, out, want, &ev);
    CHECK(clFlush(q));
    fprintf(stderr, "longkernel: the long kernel runs (%llu steps, about "
            "%.1f s)\n", (unsigned long long)want, seconds);
    wait_for(q, ev, mode);
    double ran = now_s() - t0;
    check(q, out, want, "the long kernel");
    fprintf(stderr, "longkernel: the long kernel (%llu steps) ran %.1f s\n",
            (unsigned long long)want, ran);
    CHECK(clReleaseEvent(ev));
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    pass();
}
