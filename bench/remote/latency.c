/* latency: the time of one synchronous OpenCL call, native or remoted. */

/*
 * Each test warms up, then times N calls that must each wait for an answer
 * from the implementation (a round trip to crane-proxy when remoted):
 *
 *   finish  clFinish on a queue with nothing in it
 *   event   clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS) on an event
 *           that completed long ago
 *   read4   a 4-byte blocking clEnqueueReadBuffer
 *
 * and prints one line per test:
 *
 *     RESULT <name> <seconds> <us_per_call> us
 *
 * Exit status: 0 pass, 1 wrong data read back, 2 usage or OpenCL error.
 */

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LAT_OK = 0, LAT_MISMATCH = 1, LAT_ERROR = 2 };

/* The device, queue and the objects the tests call on. */
struct lat {
    cl_context context;
    cl_command_queue queue;
    cl_mem buf;
    cl_event done;      /* a completed event (a marker) */
    long iters;
};

typedef int lat_fn(struct lat *l, long n);

#define CL_TRY(expr)                                                        \
    do {                                                                    \
        cl_int e_ = (expr);                                                 \
        if (e_ != CL_SUCCESS) {                                             \
            fprintf(stderr, "latency: line %d: %s failed: %d\n", __LINE__,  \
                    #expr, (int)e_);                                        \
            return LAT_ERROR;                                               \
        }                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int lat_finish(struct lat *l, long n)
{
    for (long i = 0; i < n; i++)
        CL_TRY(clFinish(l->queue));
    return LAT_OK;
}

static int lat_event(struct lat *l, long n)
{
    cl_int status;

    for (long i = 0; i < n; i++) {
        CL_TRY(clGetEventInfo(l->done, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof(status), &status, NULL));
        if (status != CL_COMPLETE) {
            fprintf(stderr, "latency: event status %d, not complete\n",
                    (int)status);
            return LAT_MISMATCH;
        }
    }
    return LAT_OK;
}

static int lat_read4(struct lat *l, long n)
{
    cl_uint v;

    for (long i = 0; i < n; i++) {
        v = 0;
        CL_TRY(clEnqueueReadBuffer(l->queue, l->buf, CL_TRUE, 0, sizeof(v),
                                   &v, 0, NULL, NULL));
        if (v != 0xc0ffee42u) {
            fprintf(stderr, "latency: read 0x%x, not 0xc0ffee42\n", v);
            return LAT_MISMATCH;
        }
    }
    return LAT_OK;
}

static const struct {
    const char *name;
    lat_fn *fn;
} tests[] = {
    {"finish", lat_finish},
    {"event", lat_event},
    {"read4", lat_read4},
};
#define N_TESTS (sizeof(tests) / sizeof(tests[0]))

/* Platform PLATFORM's first device: context, queue, a buffer holding a
 * known word and a completed marker event. */
static int lat_open(struct lat *l, cl_uint platform)
{
    cl_platform_id plats[16];
    cl_uint n_plats = 0;
    cl_device_id dev;
    cl_int err;
    cl_uint word = 0xc0ffee42u;
    char name[256] = "";

    CL_TRY(clGetPlatformIDs(16, plats, &n_plats));
    if (platform >= n_plats) {
        fprintf(stderr, "latency: no platform %u (%u found)\n", platform,
                n_plats);
        return LAT_ERROR;
    }
    CL_TRY(clGetDeviceIDs(plats[platform], CL_DEVICE_TYPE_ALL, 1, &dev,
                          NULL));
    CL_TRY(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name,
                           NULL));
    printf("DEVICE %s\n", name);
    l->context = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_TRY(err);
    l->queue = clCreateCommandQueueWithProperties(l->context, dev, NULL,
                                                  &err);
    CL_TRY(err);
    l->buf = clCreateBuffer(l->context, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CL_TRY(err);
    CL_TRY(clEnqueueWriteBuffer(l->queue, l->buf, CL_TRUE, 0, sizeof(word),
                                &word, 0, NULL, NULL));
    CL_TRY(clEnqueueMarkerWithWaitList(l->queue, 0, NULL, &l->done));
    CL_TRY(clFinish(l->queue));
    return LAT_OK;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: latency [--platform N] [--iters N] [TEST...]\n"
            "Times N (default 20000) synchronous calls per test, after\n"
            "N/10 warm-up calls, and prints\n"
            "  RESULT <test> <seconds> <us_per_call> us\n"
            "tests: finish event read4 (default all)\n");
}

int main(int argc, char **argv)
{
    struct lat l = {.iters = 20000};
    unsigned long platform = 0;
    const char *want[N_TESTS];
    size_t n_want = 0;
    char *end;
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return LAT_OK;
        } else if (!strcmp(a, "--platform") && v) {
            platform = strtoul(v, &end, 10);
            if (!*v || *end)
                return usage(stderr), LAT_ERROR;
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            l.iters = strtol(v, &end, 10);
            if (!*v || *end || l.iters < 1)
                return usage(stderr), LAT_ERROR;
            i++;
        } else if (a[0] != '-' && n_want < N_TESTS) {
            size_t t = 0;
            while (t < N_TESTS && strcmp(tests[t].name, a))
                t++;
            if (t == N_TESTS) {
                fprintf(stderr, "latency: unknown test %s\n", a);
                return LAT_ERROR;
            }
            want[n_want++] = a;
        } else {
            usage(stderr);
            return LAT_ERROR;
        }
    }
    if ((rc = lat_open(&l, (cl_uint)platform)) != LAT_OK)
        return rc;
    for (size_t t = 0; t < N_TESTS; t++) {
        int run = n_want == 0;
        for (size_t w = 0; w < n_want; w++)
            run |= !strcmp(want[w], tests[t].name);
        if (!run)
            continue;
        if ((rc = tests[t].fn(&l, l.iters / 10 + 1)) != LAT_OK)
            return rc;
        double t0 = now_s();
        if ((rc = tests[t].fn(&l, l.iters)) != LAT_OK)
            return rc;
        double s = now_s() - t0;
        printf("RESULT %s %.6f %.3f us\n", tests[t].name, s,
               s / (double)l.iters * 1e6);
        fflush(stdout);
    }
    clReleaseEvent(l.done);
    clReleaseMemObject(l.buf);
    clReleaseCommandQueue(l.queue);
    clReleaseContext(l.context);
    return LAT_OK;
}
