/* switch: device-dirty buffers carried passthrough -> remoting -> back. */

/*
 * With --hot H, the program instead keeps computing while it is switched
 * (pre-copy's case, CRANE_PRECOPY_ROUNDS): after the fill, a thread rewrites
 * an H MiB buffer again and again (the hot set: `advance` with the
 * iteration's number) while the main thread switches to the proxy and
 * back; the S MiB are written once (the cold state).  At the end the cold
 * buffers must hold the fill, the hot one the fill advanced once per
 * iteration the thread counted.
 */

/*
 * Run under build/bin/crane-run with CRANE_PROXY=ENDPOINT and
 * CRANE_REHOME_TO=alternate.  The program follows the migration-test
 * script:
 *
 *   1. allocate --mb S MiB in --buffers B device buffers and fill them
 *      with a kernel, so every byte is device-dirty;
 *   2. crane_rehome(): the vendor -> crane-proxy (pre-migration switch);
 *   3. run a second kernel that reads and rewrites every word, remoted
 *      (so the first fill must have arrived and all is dirty again);
 *   4. crane_rehome(): crane-proxy -> the vendor (post-migration switch);
 *   5. read every byte back and compare with the CPU's answer.
 *
 * It prints, as seen from the program (the shim's CRANE_REHOME_REPORT has
 * the stoppage broken down):
 *
 *     RESULT to_remote <seconds> <mib> MiB
 *     RESULT to_native <seconds> <mib> MiB
 *
 * Exit status: 0 every byte right, 1 a mismatch, 2 usage, OpenCL or
 * re-home error (crane_rehome missing means not run under crane-run).
 */

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SW_OK = 0, SW_MISMATCH = 1, SW_ERROR = 2 };
enum { MAX_BUFFERS = 64 };

static const char kernel_src[] =
    "static uint mix(uint x)\n"
    "{\n"
    "    x ^= x >> 16; x *= 0x7feb352dU;\n"
    "    x ^= x >> 15; x *= 0x846ca68bU;\n"
    "    return x ^ (x >> 16);\n"
    "}\n"
    "__kernel void fill(__global uint *p, uint base)\n"
    "{\n"
    "    uint i = (uint)get_global_id(0);\n"
    "    p[i] = mix(base + i);\n"
    "}\n"
    "__kernel void advance(__global uint *p, uint k)\n"
    "{\n"
    "    uint i = (uint)get_global_id(0);\n"
    "    p[i] = p[i] * 2654435761U + k;\n"
    "}\n";

/* The CPU's copy of the two kernels, one word at a time. */
static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

/* Everything the steps share. */
struct sw {
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel fill, step;
    cl_mem bufs[MAX_BUFFERS];
    unsigned n_bufs;
    unsigned steps;              /* step launches so far: the words' k */
    size_t words;       /* per buffer */
    int (*rehome)(void);
    /* --hot: the hot buffer and its thread. */
    cl_mem hot;
    size_t hot_words;
    atomic_uint hot_iters;
    atomic_bool hot_stop;
    int hot_rc;
    unsigned retries;            /* --retry: tries after a failed switch */
};

#define CL_TRY(expr)                                                        \
    do {                                                                    \
        cl_int e_ = (expr);                                                 \
        if (e_ != CL_SUCCESS) {                                             \
            fprintf(stderr, "switch: line %d: %s failed: %d\n", __LINE__,   \
                    #expr, (int)e_);                                        \
            return SW_ERROR;                                                \
        }                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Platform 0's first device, the program, its two kernels and the
 * buffers. */
static int sw_open(struct sw *s)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    const char *src = kernel_src;

    CL_TRY(clGetPlatformIDs(1, &plat, NULL));
    CL_TRY(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    s->context = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_TRY(err);
    s->queue = clCreateCommandQueueWithProperties(s->context, dev, NULL,
                                                  &err);
    CL_TRY(err);
    s->program = clCreateProgramWithSource(s->context, 1, &src, NULL, &err);
    CL_TRY(err);
    CL_TRY(clBuildProgram(s->program, 1, &dev, "", NULL, NULL));
    s->fill = clCreateKernel(s->program, "fill", &err);
    CL_TRY(err);
    s->step = clCreateKernel(s->program, "advance", &err);
    CL_TRY(err);
    for (unsigned b = 0; b < s->n_bufs; b++) {
        s->bufs[b] = clCreateBuffer(s->context, CL_MEM_READ_WRITE,
                                    s->words * 4, NULL, &err);
        CL_TRY(err);
    }
    if (s->hot_words) {
        s->hot = clCreateBuffer(s->context, CL_MEM_READ_WRITE,
                                s->hot_words * 4, NULL, &err);
        CL_TRY(err);
    }
    return SW_OK;
}

/* The hot buffer's first word index for fill: after the cold ones. */
static cl_uint hot_base(const struct sw *s)
{
    return (cl_uint)(s->n_bufs * s->words);
}

static int hot_fill(struct sw *s)
{
    cl_uint base = hot_base(s);

    CL_TRY(clSetKernelArg(s->fill, 0, sizeof(cl_mem), &s->hot));
    CL_TRY(clSetKernelArg(s->fill, 1, sizeof(base), &base));
    CL_TRY(clEnqueueNDRangeKernel(s->queue, s->fill, 1, NULL, &s->hot_words,
                                  NULL, 0, NULL, NULL));
    CL_TRY(clFinish(s->queue));
    return SW_OK;
}

/* One iteration of the hot set: advance with k = the iteration's number. */
static int hot_step(struct sw *s, cl_uint k)
{
    CL_TRY(clSetKernelArg(s->step, 0, sizeof(cl_mem), &s->hot));
    CL_TRY(clSetKernelArg(s->step, 1, sizeof(k), &k));
    CL_TRY(clEnqueueNDRangeKernel(s->queue, s->step, 1, NULL, &s->hot_words,
                                  NULL, 0, NULL, NULL));
    CL_TRY(clFinish(s->queue));
    return SW_OK;
}

static void *hot_thread(void *arg)
{
    struct sw *s = arg;

    while (!atomic_load(&s->hot_stop)) {
        s->hot_rc = hot_step(s, atomic_load(&s->hot_iters));
        if (s->hot_rc != SW_OK)
            break;
        atomic_fetch_add(&s->hot_iters, 1);
    }
    return NULL;
}

/* Waits until the hot thread did N more iterations (or failed). */
static void hot_wait(struct sw *s, unsigned n)
{
    unsigned until = atomic_load(&s->hot_iters) + n;
    struct timespec ms = {0, 1000000};

    while (atomic_load(&s->hot_iters) < until && s->hot_rc == SW_OK)
        nanosleep(&ms, NULL);
}

/* The hot buffer: the fill advanced once per iteration, every word. */
static int hot_verify(struct sw *s)
{
    uint32_t *host = malloc(s->hot_words * 4);
    unsigned n = atomic_load(&s->hot_iters);
    int rc = SW_OK;

    if (!host) {
        fprintf(stderr, "switch: out of memory\n");
        return SW_ERROR;
    }
    cl_int err = clEnqueueReadBuffer(s->queue, s->hot, CL_TRUE, 0,
                                     s->hot_words * 4, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "switch: reading the hot buffer failed: %d\n",
                (int)err);
        free(host);
        return SW_ERROR;
    }
    /* N steps of w = w * A + k, k = 0..N-1, are w * A^N + C: the same
     * affine map for every word, so it is composed once (checking word by
     * word, step by step, took minutes once a fast GPU ran 10^5 steps). */
    uint32_t scale = 1, add = 0;
    for (unsigned k = 0; k < n; k++) {
        scale *= 2654435761U;
        add = add * 2654435761U + k;
    }
    for (size_t i = 0; i < s->hot_words; i++) {
        uint32_t want = mix(hot_base(s) + (uint32_t)i) * scale + add;
        if (host[i] != want) {
            fprintf(stderr, "switch: hot word %zu after %u iterations: "
                    "0x%08x, expected 0x%08x\n", i, n, host[i], want);
            rc = SW_MISMATCH;
            break;
        }
    }
    free(host);
    return rc;
}

/* Runs KERNEL over every buffer; its second argument is the buffer's first
 * word index (PER_BUFFER_BASE, for fill) or 1 (for advance). */
static int sw_launch(struct sw *s, cl_kernel kernel, int per_buffer_base)
{
    for (unsigned b = 0; b < s->n_bufs; b++) {
        cl_uint arg = per_buffer_base ? (cl_uint)(b * s->words) : 1;

        CL_TRY(clSetKernelArg(kernel, 0, sizeof(cl_mem), &s->bufs[b]));
        CL_TRY(clSetKernelArg(kernel, 1, sizeof(arg), &arg));
        CL_TRY(clEnqueueNDRangeKernel(s->queue, kernel, 1, NULL, &s->words,
                                      NULL, 0, NULL, NULL));
    }
    CL_TRY(clFinish(s->queue));
    return SW_OK;
}

static int sw_rehome(struct sw *s, const char *name, double mib)
{
    double t0 = now_s();
    int rc = s->rehome();

    /* A failed switch leaves the program where it was, its data whole:
     * tried again (tests: a lane killed in the middle of one). */
    for (unsigned k = 0; rc != 0 && k < s->retries; k++) {
        printf("RETRY %s: crane_rehome() failed: %d\n", name, rc);
        fflush(stdout);
        rc = s->rehome();
    }
    if (rc != 0) {
        fprintf(stderr, "switch: crane_rehome() for %s failed: %d\n", name,
                rc);
        return SW_ERROR;
    }
    printf("RESULT %s %.6f %.0f MiB\n", name, now_s() - t0, mib);
    fflush(stdout);
    return SW_OK;
}

/* Reads every buffer back and checks every word. */
static int sw_verify(struct sw *s)
{
    uint32_t *host = malloc(s->words * 4);
    uint32_t a_n = 1, sum = 0;   /* s->steps advances (k = 1), composed */
    int rc = SW_OK;

    if (!host) {
        fprintf(stderr, "switch: out of memory\n");
        return SW_ERROR;
    }
    for (unsigned n = 0; n < s->steps; n++) {
        a_n *= 2654435761U;
        sum = sum * 2654435761U + 1;
    }
    for (unsigned b = 0; b < s->n_bufs && rc == SW_OK; b++) {
        cl_int err = clEnqueueReadBuffer(s->queue, s->bufs[b], CL_TRUE, 0,
                                         s->words * 4, host, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "switch: reading buffer %u failed: %d\n", b,
                    (int)err);
            rc = SW_ERROR;
            break;
        }
        uint32_t base = (uint32_t)(b * s->words);
        for (size_t i = 0; i < s->words; i++) {
            uint32_t want = s->hot_words
                                ? mix(base + (uint32_t)i)
                                : mix(base + (uint32_t)i) * a_n + sum;
            if (host[i] != want) {
                fprintf(stderr, "switch: buffer %u word %zu: 0x%08x, "
                        "expected 0x%08x\n", b, i, host[i], want);
                rc = SW_MISMATCH;
                break;
            }
        }
    }
    free(host);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switch [--mb S] [--buffers B] [--hot H] [--cycles N]\n"
            "              [--retry N]\n"
            "Under crane-run with CRANE_PROXY=ENDPOINT and\n"
            "CRANE_REHOME_TO=alternate: fills S MiB (default 16) in B\n"
            "buffers (default 4) on the device, switches to the proxy,\n"
            "rewrites them there, switches back and checks every byte.\n"
            "--hot H: an H MiB buffer is rewritten by a thread all the\n"
            "while (switched under it), the S MiB only filled once.\n"
            "--cycles N: N round trips (default 1), the buffers rewritten\n"
            "natively between them: the later switches find the proxy's\n"
            "objects kept from the one before, as a second migration\n"
            "would.\n"
            "--retry N: a switch that failed is tried again, up to N\n"
            "times (default 0), each failure printed as a RETRY line.\n");
}

/* The switch out and back while a thread keeps rewriting MIB's hot
 * buffer: both switches, then every word of both checked. */
static int hot_run(struct sw *s, double mib)
{
    pthread_t th;
    int rc;

    if ((rc = sw_open(s)) != SW_OK ||
        (rc = sw_launch(s, s->fill, 1)) != SW_OK ||
        (rc = hot_fill(s)) != SW_OK)
        return rc;
    if (pthread_create(&th, NULL, hot_thread, s) != 0) {
        fprintf(stderr, "switch: no thread\n");
        return SW_ERROR;
    }
    hot_wait(s, 3);
    rc = sw_rehome(s, "to_remote", mib);
    hot_wait(s, 3);
    if (rc == SW_OK)
        rc = sw_rehome(s, "to_native", mib);
    hot_wait(s, 3);
    atomic_store(&s->hot_stop, true);
    pthread_join(th, NULL);
    if (rc == SW_OK && (rc = s->hot_rc) == SW_OK &&
        (rc = sw_verify(s)) == SW_OK)
        rc = hot_verify(s);
    if (rc != SW_OK)
        return rc;
    printf("PASS %.0f MiB in %u buffers, %u MiB hot over %u "
           "iterations\n", mib, s->n_bufs + 1,
           (unsigned)(s->hot_words * 4 >> 20), atomic_load(&s->hot_iters));
    return SW_OK;
}

int main(int argc, char **argv)
{
    struct sw s = {.n_bufs = 4};
    unsigned long mb = 16, cycles = 1;
    char *end;
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return SW_OK;
        } else if (!strcmp(a, "--mb") && v) {
            mb = strtoul(v, &end, 10);
            if (!*v || *end || mb < 1 || mb > 65536)
                return usage(stderr), SW_ERROR;
            i++;
        } else if (!strcmp(a, "--buffers") && v) {
            s.n_bufs = (unsigned)strtoul(v, &end, 10);
            if (!*v || *end || s.n_bufs < 1 || s.n_bufs > MAX_BUFFERS)
                return usage(stderr), SW_ERROR;
            i++;
        } else if (!strcmp(a, "--cycles") && v) {
            cycles = strtoul(v, &end, 10);
            if (!*v || *end || cycles < 1 || cycles > 1000)
                return usage(stderr), SW_ERROR;
            i++;
        } else if (!strcmp(a, "--retry") && v) {
            s.retries = (unsigned)strtoul(v, &end, 10);
            if (!*v || *end || s.retries > 10)
                return usage(stderr), SW_ERROR;
            i++;
        } else if (!strcmp(a, "--hot") && v) {
            unsigned long hot = strtoul(v, &end, 10);
            if (!*v || *end || hot < 1 || hot > 65536)
                return usage(stderr), SW_ERROR;
            s.hot_words = (hot << 20) / 4;
            i++;
        } else {
            usage(stderr);
            return SW_ERROR;
        }
    }
    s.words = (mb << 20) / 4 / s.n_bufs;
    s.rehome = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    if (!s.rehome) {
        fprintf(stderr, "switch: crane_rehome not found: run me under "
                "build/bin/crane-run\n");
        return SW_ERROR;
    }
    double mib = (double)(s.words * 4 * s.n_bufs) / (1 << 20);
    if (s.hot_words)
        return hot_run(&s, mib + (double)s.hot_words * 4 / (1 << 20));
    if ((rc = sw_open(&s)) != SW_OK || (rc = sw_launch(&s, s.fill, 1)) != SW_OK)
        return rc;
    for (unsigned long c = 0; c < cycles; c++) {
        /* Between round trips the vendor rewrites every word, so that
         * each switch out again finds every byte device-dirty. */
        if (c > 0 && (rc = sw_launch(&s, s.step, 0)) == SW_OK)
            s.steps++;
        if (rc == SW_OK)
            rc = sw_rehome(&s, "to_remote", mib);
        if (rc == SW_OK && (rc = sw_launch(&s, s.step, 0)) == SW_OK)
            s.steps++;
        if (rc == SW_OK)
            rc = sw_rehome(&s, "to_native", mib);
        if (rc != SW_OK)
            return rc;
    }
    if ((rc = sw_verify(&s)) != SW_OK)
        return rc;
    for (unsigned b = 0; b < s.n_bufs; b++)
        clReleaseMemObject(s.bufs[b]);
    clReleaseKernel(s.step);
    clReleaseKernel(s.fill);
    clReleaseProgram(s.program);
    clReleaseCommandQueue(s.queue);
    clReleaseContext(s.context);
    printf("PASS %.0f MiB in %u buffers\n", mib, s.n_bufs);
    return SW_OK;
}
