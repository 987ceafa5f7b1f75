/* clbench: SHOC-style OpenCL micro-benchmarks for measuring shim overhead. */

/*
 * Each subcommand builds its kernels, warms up (which also makes the
 * implementation compile its work-group functions), times a fixed amount of
 * work with CLOCK_MONOTONIC around the enqueue loop and the final clFinish,
 * verifies the output against a CPU reference and prints one line:
 *
 *     RESULT <name> <seconds> <metric-value> <metric-unit>
 *
 * Exit status: 0 pass, 1 verification mismatch, 2 usage or OpenCL error.
 * The program is deliberately ordinary OpenCL so that it can be run both
 * natively and under build/bin/crane-run in the same session.
 */

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BENCH_OK = 0, BENCH_MISMATCH = 1, BENCH_ERROR = 2 };

/* One OpenCL device and queue, shared by every test. */
struct bench {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    double scale;
    size_t max_wg;
    int pageable;
};

/* What a test reports on success: the timed region and its metric. */
struct bench_result {
    double seconds;
    double value;
    const char *unit;
};

typedef int bench_fn(struct bench *b, struct bench_result *r);

/* The OpenCL error codes we name in messages; others print as numbers. */
#define CL_ERRORS(X)                                                        \
    X(CL_DEVICE_NOT_FOUND)                                                  \
    X(CL_DEVICE_NOT_AVAILABLE)                                              \
    X(CL_COMPILER_NOT_AVAILABLE)                                            \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE)                                     \
    X(CL_OUT_OF_RESOURCES)                                                  \
    X(CL_OUT_OF_HOST_MEMORY)                                                \
    X(CL_BUILD_PROGRAM_FAILURE)                                             \
    X(CL_INVALID_VALUE)                                                     \
    X(CL_INVALID_DEVICE_TYPE)                                               \
    X(CL_INVALID_PLATFORM)                                                  \
    X(CL_INVALID_DEVICE)                                                    \
    X(CL_INVALID_CONTEXT)                                                   \
    X(CL_INVALID_COMMAND_QUEUE)                                             \
    X(CL_INVALID_MEM_OBJECT)                                                \
    X(CL_INVALID_PROGRAM)                                                   \
    X(CL_INVALID_PROGRAM_EXECUTABLE)                                        \
    X(CL_INVALID_KERNEL_NAME)                                               \
    X(CL_INVALID_KERNEL)                                                    \
    X(CL_INVALID_ARG_INDEX)                                                 \
    X(CL_INVALID_ARG_VALUE)                                                 \
    X(CL_INVALID_ARG_SIZE)                                                  \
    X(CL_INVALID_KERNEL_ARGS)                                               \
    X(CL_INVALID_WORK_DIMENSION)                                            \
    X(CL_INVALID_WORK_GROUP_SIZE)                                           \
    X(CL_INVALID_WORK_ITEM_SIZE)                                            \
    X(CL_INVALID_GLOBAL_OFFSET)                                             \
    X(CL_INVALID_EVENT_WAIT_LIST)                                           \
    X(CL_INVALID_OPERATION)                                                 \
    X(CL_INVALID_BUFFER_SIZE)                                               \
    X(CL_INVALID_GLOBAL_WORK_SIZE)

static const char *cl_err_name(cl_int err)
{
    switch (err) {
#define X(name) case name: return #name;
    CL_ERRORS(X)
#undef X
    default:
        return "unknown OpenCL error";
    }
}

static void cl_report(const char *what, cl_int err, int line)
{
    fprintf(stderr, "clbench: line %d: %s failed: %s (%d)\n", line, what,
            cl_err_name(err), (int)err);
}

/* Run an OpenCL call; on failure log it and jump to the function's out. */
#define CL_TRY(expr)                                                        \
    do {                                                                    \
        cl_int e_ = (expr);                                                 \
        if (e_ != CL_SUCCESS) {                                             \
            cl_report(#expr, e_, __LINE__);                                 \
            goto out;                                                       \
        }                                                                   \
    } while (0)

/* Jump to out unless a helper that logs its own failure succeeded. */
#define TRY(cond)                                                           \
    do {                                                                    \
        if (!(cond))                                                        \
            goto out;                                                       \
    } while (0)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The base work amount multiplied by --scale, never less than one. */
static long scaled(const struct bench *b, long base)
{
    double n = (double)base * b->scale;

    return n < 1.0 ? 1 : (long)(n + 0.5);
}

/*
 * Warm-up lasts at least min steps, a tenth of the timed work and
 * WARM_SECONDS of wall time, so that clocks, caches and driver pools have
 * settled before the clock starts. Past the first two bounds it goes on in
 * chunks of a fortieth of the timed work, draining the queue before each
 * look at the clock so that queued work counts, not just enqueued work.
 * Returns 1 while more warm-up is needed.
 */
#define WARM_SECONDS 0.2

static int warming(struct bench *b, long done, long reps, long min,
                   double since)
{
    long need = reps / 10 > min ? reps / 10 : min;
    long chunk = reps / 40 > 1 ? reps / 40 : 1;

    if (done < need)
        return 1;
    if ((done - need) % chunk)
        return 1;
    if (clFinish(b->queue) != CL_SUCCESS)
        return 0;
    return now_s() - since < WARM_SECONDS;
}

/* A small deterministic generator so every run sees the same data. */
static uint32_t rng_next(uint32_t *state)
{
    uint32_t x = *state;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size);

    if (!p)
        fprintf(stderr, "clbench: out of memory (%zu bytes)\n", size);
    return p;
}

static cl_mem new_buffer(struct bench *b, cl_mem_flags flags, size_t size,
                         void *host)
{
    cl_int err;
    cl_mem mem;

    if (host)
        flags |= CL_MEM_COPY_HOST_PTR;
    mem = clCreateBuffer(b->context, flags, size, host, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateBuffer", err, __LINE__);
        return NULL;
    }
    return mem;
}

/* Build one program from source and create the named kernel from it. */
static int build_kernel(struct bench *b, const char *src, const char *opts,
                        const char *name, cl_program *prog, cl_kernel *kern)
{
    cl_int err;
    size_t log_size = 0;
    char *log;

    *kern = NULL;
    *prog = clCreateProgramWithSource(b->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateProgramWithSource", err, __LINE__);
        return 0;
    }
    err = clBuildProgram(*prog, 1, &b->device, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        cl_report("clBuildProgram", err, __LINE__);
        clGetProgramBuildInfo(*prog, b->device, CL_PROGRAM_BUILD_LOG, 0,
                              NULL, &log_size);
        log = log_size ? malloc(log_size + 1) : NULL;
        if (log && clGetProgramBuildInfo(*prog, b->device,
                                         CL_PROGRAM_BUILD_LOG, log_size, log,
                                         NULL) == CL_SUCCESS) {
            log[log_size] = '\0';
            fprintf(stderr, "clbench: build log:\n%s\n", log);
        }
        free(log);
        return 0;
    }
    *kern = clCreateKernel(*prog, name, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateKernel", err, __LINE__);
        return 0;
    }
    return 1;
}

static void release_mem(cl_mem *mems, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
}

static void release_kernel(cl_program prog, cl_kernel kern)
{
    if (kern)
        clReleaseKernel(kern);
    if (prog)
        clReleaseProgram(prog);
}

/* ---- bus_h2d / bus_d2h: 64 MiB transfers -------------------------------- */

#define BUS_BYTES ((size_t)64 << 20)
#define BUS_WORDS (BUS_BYTES / sizeof(uint32_t))

/*
 * The host side of a transfer. By default it is pinned, as in SHOC's bus
 * tests: a CL_MEM_ALLOC_HOST_PTR buffer mapped once, so the driver can DMA
 * straight from it. With --pageable it is plain malloc memory, which most
 * drivers copy through a staging buffer and which varies more run to run.
 */
struct host_buf {
    cl_mem mem;
    uint32_t *ptr;
};

static int host_buf_get(struct bench *b, struct host_buf *h)
{
    cl_int err;

    h->mem = NULL;
    if (b->pageable) {
        h->ptr = xmalloc(BUS_BYTES);
        return h->ptr != NULL;
    }
    h->ptr = NULL;
    h->mem = new_buffer(b, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                        BUS_BYTES, NULL);
    if (!h->mem)
        return 0;
    h->ptr = clEnqueueMapBuffer(b->queue, h->mem, CL_TRUE,
                                CL_MAP_READ | CL_MAP_WRITE, 0, BUS_BYTES, 0,
                                NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        cl_report("clEnqueueMapBuffer", err, __LINE__);
        h->ptr = NULL;
        return 0;
    }
    return 1;
}

static void host_buf_put(struct bench *b, struct host_buf *h)
{
    if (!h->mem) {
        free(h->ptr);
    } else {
        if (h->ptr &&
            clEnqueueUnmapMemObject(b->queue, h->mem, h->ptr, 0, NULL,
                                    NULL) == CL_SUCCESS)
            clFinish(b->queue);
        clReleaseMemObject(h->mem);
    }
    h->mem = NULL;
    h->ptr = NULL;
}

static void bus_pattern(uint32_t *p)
{
    for (size_t i = 0; i < BUS_WORDS; i++)
        p[i] = (uint32_t)i * 2654435761u + 12345u;
}

/*
 * Blocking clEnqueueWriteBuffer of the whole buffer, repeated. The first
 * word is stamped with the iteration number so verification proves that
 * the last transfer landed, not just the first one.
 */
static int bench_bus_h2d(struct bench *b, struct bench_result *r)
{
    int rc = BENCH_ERROR;
    long reps = scaled(b, 60), warm;
    struct host_buf host = {0};
    uint32_t *back = NULL;
    cl_mem dev = NULL;
    double w0, t0, t1;

    TRY(host_buf_get(b, &host));
    TRY(back = xmalloc(BUS_BYTES));
    bus_pattern(host.ptr);
    TRY(dev = new_buffer(b, CL_MEM_READ_WRITE, BUS_BYTES, NULL));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 2, w0); warm++)
        CL_TRY(clEnqueueWriteBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES,
                                    host.ptr, 0, NULL, NULL));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++) {
        host.ptr[0] = (uint32_t)i;
        CL_TRY(clEnqueueWriteBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES,
                                    host.ptr, 0, NULL, NULL));
    }
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    CL_TRY(clEnqueueReadBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES, back, 0,
                               NULL, NULL));
    r->seconds = t1 - t0;
    r->value = (double)BUS_BYTES * (double)reps / r->seconds / 1e9;
    r->unit = "GB/s";
    rc = memcmp(host.ptr, back, BUS_BYTES) ? BENCH_MISMATCH : BENCH_OK;
out:
    release_mem(&dev, 1);
    free(back);
    host_buf_put(b, &host);
    return rc;
}

/* Blocking clEnqueueReadBuffer of a fixed device buffer, repeated. */
static int bench_bus_d2h(struct bench *b, struct bench_result *r)
{
    int rc = BENCH_ERROR;
    long reps = scaled(b, 60), warm;
    struct host_buf host = {0};
    uint32_t *src = NULL;
    cl_mem dev = NULL;
    double w0, t0, t1;

    TRY(src = xmalloc(BUS_BYTES));
    TRY(host_buf_get(b, &host));
    bus_pattern(src);
    TRY(dev = new_buffer(b, CL_MEM_READ_WRITE, BUS_BYTES, NULL));
    CL_TRY(clEnqueueWriteBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES, src, 0,
                                NULL, NULL));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 2, w0); warm++)
        CL_TRY(clEnqueueReadBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES,
                                   host.ptr, 0, NULL, NULL));
    CL_TRY(clFinish(b->queue));
    memset(host.ptr, 0, BUS_BYTES);

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(clEnqueueReadBuffer(b->queue, dev, CL_TRUE, 0, BUS_BYTES,
                                   host.ptr, 0, NULL, NULL));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    r->seconds = t1 - t0;
    r->value = (double)BUS_BYTES * (double)reps / r->seconds / 1e9;
    r->unit = "GB/s";
    rc = memcmp(src, host.ptr, BUS_BYTES) ? BENCH_MISMATCH : BENCH_OK;
out:
    release_mem(&dev, 1);
    host_buf_put(b, &host);
    free(src);
    return rc;
}

/* ---- launch: enqueue rate of a trivial one-work-item kernel ------------- */

static const char launch_src[] =
    "kernel void tick(global uint *count)\n"
    "{\n"
    "    count[0] += 1;\n"
    "}\n";

/*
 * Enqueue many single-work-item kernels back to back and clFinish once.
 * Each increments a counter, so the in-order queue must have run exactly
 * warm + reps of them.
 */
static int bench_launch(struct bench *b, struct bench_result *r)
{
    int rc = BENCH_ERROR;
    long reps = scaled(b, 160000), warm;
    size_t global = 1;
    cl_uint zero = 0, count = 0;
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    cl_mem counter = NULL;
    double w0, t0, t1;

    TRY(build_kernel(b, launch_src, "", "tick", &prog, &kern));
    TRY(counter = new_buffer(b, CL_MEM_READ_WRITE, sizeof(zero), &zero));
    CL_TRY(clSetKernelArg(kern, 0, sizeof(counter), &counter));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 200, w0); warm++)
        CL_TRY(clEnqueueNDRangeKernel(b->queue, kern, 1, NULL, &global, NULL,
                                      0, NULL, NULL));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(clEnqueueNDRangeKernel(b->queue, kern, 1, NULL, &global, NULL,
                                      0, NULL, NULL));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    CL_TRY(clEnqueueReadBuffer(b->queue, counter, CL_TRUE, 0, sizeof(count),
                               &count, 0, NULL, NULL));
    r->seconds = t1 - t0;
    r->value = r->seconds / (double)reps * 1e6;
    r->unit = "us/launch";
    rc = count == (cl_uint)(warm + reps) ? BENCH_OK : BENCH_MISMATCH;
    if (rc)
        fprintf(stderr, "clbench: launch: counter %u, expected %ld\n",
                (unsigned)count, warm + reps);
out:
    release_mem(&counter, 1);
    release_kernel(prog, kern);
    return rc;
}

/* ---- setarg: video-encoder style, eight arguments set per launch -------- */

#define MB_FRAMES 4
#define MB_W 256
#define MB_H 256
#define MB_COLS (MB_W / 16)
#define MB_COUNT (MB_COLS * (MB_H / 16))

static const char setarg_src[] =
    "kernel void mb_residual(global const uchar *cur,\n"
    "                        global const uchar *ref,\n"
    "                        global short *resid, global int *sad,\n"
    "                        int mb_x, int mb_y, int stride, int qp)\n"
    "{\n"
    "    int row = get_global_id(0);\n"
    "    int base = (mb_y * 16 + row) * stride + mb_x * 16;\n"
    "    int s = 0;\n"
    "    for (int x = 0; x < 16; x++) {\n"
    "        int d = (int)cur[base + x] - (int)ref[base + x];\n"
    "        resid[base + x] = (short)((d * 16) / qp);\n"
    "        s += d < 0 ? -d : d;\n"
    "    }\n"
    "    sad[(mb_y * (stride / 16) + mb_x) * 16 + row] = s + qp;\n"
    "}\n";

/* Which frame, macroblock and quantiser iteration i works on. */
struct mb_step {
    int frame, ref, mb_x, mb_y, qp;
};

static struct mb_step mb_step_of(long i)
{
    struct mb_step s;
    int mb = (int)((i / MB_FRAMES) % MB_COUNT);

    s.frame = (int)(i % MB_FRAMES);
    s.ref = (s.frame + MB_FRAMES - 1) % MB_FRAMES;
    s.mb_x = mb % MB_COLS;
    s.mb_y = mb / MB_COLS;
    s.qp = 1 + (int)(i % 7);
    return s;
}

/* The CPU reference of mb_residual for one step. */
static void mb_residual_ref(const uint8_t *cur, const uint8_t *ref,
                            int16_t *resid, int32_t *sad, struct mb_step s)
{
    for (int row = 0; row < 16; row++) {
        int base = (s.mb_y * 16 + row) * MB_W + s.mb_x * 16;
        int sum = 0;

        for (int x = 0; x < 16; x++) {
            int d = (int)cur[base + x] - (int)ref[base + x];

            resid[base + x] = (int16_t)((d * 16) / s.qp);
            sum += d < 0 ? -d : d;
        }
        sad[(s.mb_y * MB_COLS + s.mb_x) * 16 + row] = sum + s.qp;
    }
}

/* Set all eight arguments of mb_residual for step i and launch it. */
static cl_int mb_launch(struct bench *b, cl_kernel kern, cl_mem *frames,
                        cl_mem *resid, cl_mem *sad, long i)
{
    struct mb_step s = mb_step_of(i);
    cl_int stride = MB_W, err;
    size_t global = 16;

    if ((err = clSetKernelArg(kern, 0, sizeof(cl_mem), &frames[s.frame])) ||
        (err = clSetKernelArg(kern, 1, sizeof(cl_mem), &frames[s.ref])) ||
        (err = clSetKernelArg(kern, 2, sizeof(cl_mem), &resid[s.frame])) ||
        (err = clSetKernelArg(kern, 3, sizeof(cl_mem), &sad[s.frame])) ||
        (err = clSetKernelArg(kern, 4, sizeof(cl_int), &s.mb_x)) ||
        (err = clSetKernelArg(kern, 5, sizeof(cl_int), &s.mb_y)) ||
        (err = clSetKernelArg(kern, 6, sizeof(cl_int), &stride)) ||
        (err = clSetKernelArg(kern, 7, sizeof(cl_int), &s.qp)))
        return err;
    return clEnqueueNDRangeKernel(b->queue, kern, 1, NULL, &global, NULL, 0,
                                  NULL, NULL);
}

/*
 * Each iteration sets all eight arguments (four buffers that rotate over
 * four frames, four scalars) and launches a 16-work-item kernel, the way a
 * video encoder walks macroblocks. The CPU replays the same sequence.
 */
static int bench_setarg(struct bench *b, struct bench_result *r)
{
    enum { PIX = MB_W * MB_H, SADN = MB_COUNT * 16 };
    int rc = BENCH_ERROR;
    long reps = scaled(b, 80000), warm;
    uint8_t *frames_h = NULL;
    int16_t *resid_h = NULL, *resid_d = NULL;
    int32_t *sad_h = NULL, *sad_d = NULL;
    cl_mem frames[MB_FRAMES] = {0}, resid[MB_FRAMES] = {0};
    cl_mem sad[MB_FRAMES] = {0};
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    uint32_t seed = 0x5eed1234u;
    double w0, t0, t1;

    TRY(frames_h = xmalloc((size_t)MB_FRAMES * PIX));
    TRY(resid_h = calloc((size_t)MB_FRAMES * PIX, sizeof(int16_t)));
    TRY(resid_d = xmalloc((size_t)MB_FRAMES * PIX * sizeof(int16_t)));
    TRY(sad_h = calloc((size_t)MB_FRAMES * SADN, sizeof(int32_t)));
    TRY(sad_d = xmalloc((size_t)MB_FRAMES * SADN * sizeof(int32_t)));
    for (size_t i = 0; i < (size_t)MB_FRAMES * PIX; i++)
        frames_h[i] = (uint8_t)rng_next(&seed);

    TRY(build_kernel(b, setarg_src, "", "mb_residual", &prog, &kern));
    for (int f = 0; f < MB_FRAMES; f++) {
        TRY(frames[f] = new_buffer(b, CL_MEM_READ_ONLY, PIX,
                                   frames_h + (size_t)f * PIX));
        TRY(resid[f] = new_buffer(b, CL_MEM_READ_WRITE,
                                  PIX * sizeof(int16_t),
                                  resid_h + (size_t)f * PIX));
        TRY(sad[f] = new_buffer(b, CL_MEM_READ_WRITE,
                                SADN * sizeof(int32_t),
                                sad_h + (size_t)f * SADN));
    }

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, MB_FRAMES * MB_COUNT, w0); warm++)
        CL_TRY(mb_launch(b, kern, frames, resid, sad, warm));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = warm; i < warm + reps; i++)
        CL_TRY(mb_launch(b, kern, frames, resid, sad, i));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    for (int f = 0; f < MB_FRAMES; f++) {
        CL_TRY(clEnqueueReadBuffer(b->queue, resid[f], CL_FALSE, 0,
                                   PIX * sizeof(int16_t),
                                   resid_d + (size_t)f * PIX, 0, NULL, NULL));
        CL_TRY(clEnqueueReadBuffer(b->queue, sad[f], CL_FALSE, 0,
                                   SADN * sizeof(int32_t),
                                   sad_d + (size_t)f * SADN, 0, NULL, NULL));
    }
    CL_TRY(clFinish(b->queue));
    for (long i = 0; i < warm + reps; i++) {
        struct mb_step s = mb_step_of(i);

        mb_residual_ref(frames_h + (size_t)s.frame * PIX,
                        frames_h + (size_t)s.ref * PIX,
                        resid_h + (size_t)s.frame * PIX,
                        sad_h + (size_t)s.frame * SADN, s);
    }

    r->seconds = t1 - t0;
    r->value = r->seconds / (double)reps * 1e6;
    r->unit = "us/iter";
    rc = BENCH_OK;
    if (memcmp(resid_h, resid_d, (size_t)MB_FRAMES * PIX * sizeof(int16_t)) ||
        memcmp(sad_h, sad_d, (size_t)MB_FRAMES * SADN * sizeof(int32_t)))
        rc = BENCH_MISMATCH;
out:
    release_mem(frames, MB_FRAMES);
    release_mem(resid, MB_FRAMES);
    release_mem(sad, MB_FRAMES);
    release_kernel(prog, kern);
    free(sad_d);
    free(sad_h);
    free(resid_d);
    free(resid_h);
    free(frames_h);
    return rc;
}

/* ---- stencil: 2D 5-point Jacobi sweeps ---------------------------------- */

#define ST_N 512
#define ST_ITERS 40 /* per sweep, even so the result ends in buffer a */

static const char stencil_src[] =
    "kernel void jacobi(global const float *in, global float *out, int n)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    int i = y * n + x;\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1)\n"
    "        out[i] = in[i];\n"
    "    else\n"
    "        out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] +\n"
    "                         in[i + n]);\n"
    "}\n";

static void jacobi_ref(const float *in, float *out, int n)
{
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            int i = y * n + x;

            if (x == 0 || y == 0 || x == n - 1 || y == n - 1)
                out[i] = in[i];
            else
                out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] +
                                 in[i + n]);
        }
}

/* Run one sweep: reset a from the initial grid, then ST_ITERS ping-pongs. */
static cl_int stencil_sweep(struct bench *b, cl_kernel kern, cl_mem init,
                            cl_mem a, cl_mem bb)
{
    size_t global[2] = {ST_N, ST_N};
    cl_int err;

    err = clEnqueueCopyBuffer(b->queue, init, a, 0, 0,
                              sizeof(float) * ST_N * ST_N, 0, NULL, NULL);
    for (int t = 0; t < ST_ITERS && err == CL_SUCCESS; t++) {
        cl_mem in = (t & 1) ? bb : a, out = (t & 1) ? a : bb;

        err = clSetKernelArg(kern, 0, sizeof(cl_mem), &in);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kern, 1, sizeof(cl_mem), &out);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(b->queue, kern, 2, NULL, global,
                                         NULL, 0, NULL, NULL);
    }
    return err;
}

/*
 * Repeated sweeps, each restarting from the same grid, so the CPU
 * reference costs one sweep however far --scale goes.
 */
static int bench_stencil(struct bench *b, struct bench_result *r)
{
    const size_t cells = (size_t)ST_N * ST_N, bytes = cells * sizeof(float);
    int rc = BENCH_ERROR;
    long reps = scaled(b, 50), warm;
    cl_int n = ST_N;
    float *g0 = NULL, *g1 = NULL, *got = NULL;
    cl_mem mem[3] = {0};
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    uint32_t seed = 0xabcdef01u;
    double w0, t0, t1, worst = 0;

    TRY(g0 = xmalloc(bytes));
    TRY(g1 = xmalloc(bytes));
    TRY(got = xmalloc(bytes));
    for (size_t i = 0; i < cells; i++)
        g0[i] = (float)(rng_next(&seed) >> 8) / 16777216.0f;

    TRY(build_kernel(b, stencil_src, "", "jacobi", &prog, &kern));
    TRY(mem[0] = new_buffer(b, CL_MEM_READ_ONLY, bytes, g0));
    TRY(mem[1] = new_buffer(b, CL_MEM_READ_WRITE, bytes, NULL));
    TRY(mem[2] = new_buffer(b, CL_MEM_READ_WRITE, bytes, NULL));
    CL_TRY(clSetKernelArg(kern, 2, sizeof(n), &n));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 1, w0); warm++)
        CL_TRY(stencil_sweep(b, kern, mem[0], mem[1], mem[2]));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(stencil_sweep(b, kern, mem[0], mem[1], mem[2]));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    CL_TRY(clEnqueueReadBuffer(b->queue, mem[1], CL_TRUE, 0, bytes, got, 0,
                               NULL, NULL));
    for (int t = 0; t < ST_ITERS; t += 2) {
        jacobi_ref(g0, g1, ST_N);
        jacobi_ref(g1, g0, ST_N);
    }
    for (size_t i = 0; i < cells; i++) {
        double d = fabs((double)got[i] - (double)g0[i]);

        if (d > worst)
            worst = d;
    }

    r->seconds = t1 - t0;
    r->value = (double)cells * ST_ITERS * (double)reps / r->seconds / 1e6;
    r->unit = "Mcell/s";
    rc = worst <= 1e-5 ? BENCH_OK : BENCH_MISMATCH;
    if (rc)
        fprintf(stderr, "clbench: stencil: max error %g\n", worst);
out:
    release_mem(mem, 3);
    release_kernel(prog, kern);
    free(got);
    free(g1);
    free(g0);
    return rc;
}

/* ---- reduction: two-pass float sum -------------------------------------- */

#define RED_N ((size_t)4 << 20)
#define RED_GROUPS 256

static const char reduction_src[] =
    "kernel void reduce(global const float *in, global float *partial,\n"
    "                   local float *scratch, uint n)\n"
    "{\n"
    "    uint lid = get_local_id(0), lsz = get_local_size(0);\n"
    "    float s = 0.0f;\n"
    "    for (uint i = get_global_id(0); i < n; i += get_global_size(0))\n"
    "        s += in[i];\n"
    "    scratch[lid] = s;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint off = lsz / 2; off > 0; off /= 2) {\n"
    "        if (lid < off)\n"
    "            scratch[lid] += scratch[lid + off];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (lid == 0)\n"
    "        partial[get_group_id(0)] = scratch[0];\n"
    "}\n";

/* Both passes and a non-blocking read of the total into *dst. */
static cl_int reduce_once(struct bench *b, cl_kernel k1, cl_kernel k2,
                          size_t global, size_t local, cl_mem total,
                          float *dst)
{
    cl_int err;

    err = clEnqueueNDRangeKernel(b->queue, k1, 1, NULL, &global, &local, 0,
                                 NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(b->queue, k2, 1, NULL, &local, &local, 0,
                                     NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(b->queue, total, CL_FALSE, 0, sizeof(float),
                                  dst, 0, NULL, NULL);
    return err;
}

/*
 * Each repetition runs a grid-stride pass into RED_GROUPS partial sums, a
 * one-group pass over those, and reads the 4-byte total back. The inputs
 * are small integers whose total stays below 2^24, so every partial sum is
 * exact in float whatever the order, and the check is exact.
 */
static int bench_reduction(struct bench *b, struct bench_result *r)
{
    int rc = BENCH_ERROR;
    long reps = scaled(b, 30), warm;
    size_t local = 256, global;
    cl_uint n = (cl_uint)RED_N, ngroups = RED_GROUPS;
    float *in = NULL, *sums = NULL;
    double expect = 0;
    cl_mem mem[3] = {0};
    cl_program prog = NULL;
    cl_kernel k1 = NULL, k2 = NULL;
    uint32_t seed = 0x13579bdfu;
    cl_int err;
    double w0, t0, t1;

    while (local > b->max_wg)
        local /= 2;
    global = local * RED_GROUPS;
    TRY(in = xmalloc(RED_N * sizeof(float)));
    TRY(sums = calloc((size_t)reps, sizeof(float)));
    for (size_t i = 0; i < RED_N; i++) {
        in[i] = (float)(rng_next(&seed) & 3);
        expect += in[i];
    }

    TRY(build_kernel(b, reduction_src, "", "reduce", &prog, &k1));
    k2 = clCreateKernel(prog, "reduce", &err);
    CL_TRY(err);
    TRY(mem[0] = new_buffer(b, CL_MEM_READ_ONLY, RED_N * sizeof(float), in));
    TRY(mem[1] = new_buffer(b, CL_MEM_READ_WRITE,
                            RED_GROUPS * sizeof(float), NULL));
    TRY(mem[2] = new_buffer(b, CL_MEM_READ_WRITE, sizeof(float), NULL));
    CL_TRY(clSetKernelArg(k1, 0, sizeof(cl_mem), &mem[0]));
    CL_TRY(clSetKernelArg(k1, 1, sizeof(cl_mem), &mem[1]));
    CL_TRY(clSetKernelArg(k1, 2, local * sizeof(float), NULL));
    CL_TRY(clSetKernelArg(k1, 3, sizeof(n), &n));
    CL_TRY(clSetKernelArg(k2, 0, sizeof(cl_mem), &mem[1]));
    CL_TRY(clSetKernelArg(k2, 1, sizeof(cl_mem), &mem[2]));
    CL_TRY(clSetKernelArg(k2, 2, local * sizeof(float), NULL));
    CL_TRY(clSetKernelArg(k2, 3, sizeof(ngroups), &ngroups));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 2, w0); warm++)
        CL_TRY(reduce_once(b, k1, k2, global, local, mem[2], &sums[0]));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(reduce_once(b, k1, k2, global, local, mem[2], &sums[i]));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    r->seconds = t1 - t0;
    r->value = (double)RED_N * sizeof(float) * (double)reps / r->seconds / 1e9;
    r->unit = "GB/s";
    rc = BENCH_OK;
    for (long i = 0; i < reps; i++)
        if ((double)sums[i] != expect) {
            fprintf(stderr, "clbench: reduction: rep %ld sum %.1f, "
                    "expected %.1f\n", i, (double)sums[i], expect);
            rc = BENCH_MISMATCH;
            break;
        }
out:
    release_mem(mem, 3);
    if (k2)
        clReleaseKernel(k2);
    release_kernel(prog, k1);
    free(sums);
    free(in);
    return rc;
}

/* ---- sort: bitonic sort, one launch per compare-exchange step ----------- */

#define SORT_LOG2 18
#define SORT_N ((size_t)1 << SORT_LOG2)

static const char sort_src[] =
    "kernel void bitonic_step(global uint *a, uint j, uint k)\n"
    "{\n"
    "    uint t = get_global_id(0);\n"
    "    uint low = t & (j - 1);\n"
    "    uint i = ((t - low) << 1) | low;\n"
    "    uint p = i | j;\n"
    "    uint x = a[i], y = a[p];\n"
    "    if ((x > y) == ((i & k) == 0)) {\n"
    "        a[i] = y;\n"
    "        a[p] = x;\n"
    "    }\n"
    "}\n";

static int cmp_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

    return (a > b) - (a < b);
}

/* Reset the keys from the unsorted copy, then run every bitonic step. */
static cl_int sort_once(struct bench *b, cl_kernel kern, cl_mem keys,
                        cl_mem work)
{
    size_t global = SORT_N / 2;
    cl_int err;

    err = clEnqueueCopyBuffer(b->queue, keys, work, 0, 0,
                              SORT_N * sizeof(cl_uint), 0, NULL, NULL);
    for (cl_uint k = 2; k <= SORT_N && err == CL_SUCCESS; k <<= 1)
        for (cl_uint j = k >> 1; j > 0 && err == CL_SUCCESS; j >>= 1) {
            err = clSetKernelArg(kern, 1, sizeof(j), &j);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(kern, 2, sizeof(k), &k);
            if (err == CL_SUCCESS)
                err = clEnqueueNDRangeKernel(b->queue, kern, 1, NULL,
                                             &global, NULL, 0, NULL, NULL);
        }
    return err;
}

static int bench_sort(struct bench *b, struct bench_result *r)
{
    int rc = BENCH_ERROR;
    long reps = scaled(b, 6), warm;
    uint32_t *keys = NULL, *got = NULL, seed = 0x2468ace0u;
    cl_mem mem[2] = {0};
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    double w0, t0, t1;

    TRY(keys = xmalloc(SORT_N * sizeof(uint32_t)));
    TRY(got = xmalloc(SORT_N * sizeof(uint32_t)));
    for (size_t i = 0; i < SORT_N; i++)
        keys[i] = rng_next(&seed);

    TRY(build_kernel(b, sort_src, "", "bitonic_step", &prog, &kern));
    TRY(mem[0] = new_buffer(b, CL_MEM_READ_ONLY, SORT_N * sizeof(cl_uint),
                            keys));
    TRY(mem[1] = new_buffer(b, CL_MEM_READ_WRITE, SORT_N * sizeof(cl_uint),
                            NULL));
    CL_TRY(clSetKernelArg(kern, 0, sizeof(cl_mem), &mem[1]));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 1, w0); warm++)
        CL_TRY(sort_once(b, kern, mem[0], mem[1]));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(sort_once(b, kern, mem[0], mem[1]));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    CL_TRY(clEnqueueReadBuffer(b->queue, mem[1], CL_TRUE, 0,
                               SORT_N * sizeof(cl_uint), got, 0, NULL, NULL));
    qsort(keys, SORT_N, sizeof(uint32_t), cmp_u32);

    r->seconds = t1 - t0;
    r->value = (double)SORT_N * (double)reps / r->seconds / 1e6;
    r->unit = "Mkey/s";
    rc = memcmp(keys, got, SORT_N * sizeof(uint32_t)) ? BENCH_MISMATCH
                                                       : BENCH_OK;
out:
    release_mem(mem, 2);
    release_kernel(prog, kern);
    free(got);
    free(keys);
    return rc;
}

/* ---- gemm: tiled SGEMM, C = A * B, square row-major --------------------- */

#define GEMM_N 512

static const char gemm_src[] =
    "kernel void sgemm(global const float *a, global const float *b,\n"
    "                  global float *c, int n)\n"
    "{\n"
    "    local float as[TILE][TILE], bs[TILE][TILE];\n"
    "    int tx = get_local_id(0), ty = get_local_id(1);\n"
    "    int col = get_global_id(0), row = get_global_id(1);\n"
    "    float acc = 0.0f;\n"
    "    for (int t = 0; t < n; t += TILE) {\n"
    "        as[ty][tx] = a[row * n + t + tx];\n"
    "        bs[ty][tx] = b[(t + ty) * n + col];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < TILE; k++)\n"
    "            acc += as[ty][k] * bs[k][tx];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    c[row * n + col] = acc;\n"
    "}\n";

/*
 * Inputs are integers in [-2, 2], so every product and partial sum
 * (|sum| <= 4 * GEMM_N) is exact in float, with or without FMA, and the
 * result must equal the CPU reference bit for bit.
 */
static int bench_gemm(struct bench *b, struct bench_result *r)
{
    const size_t nn = (size_t)GEMM_N * GEMM_N, bytes = nn * sizeof(float);
    int rc = BENCH_ERROR;
    long reps = scaled(b, 4), warm;
    size_t tile = b->max_wg >= 256 ? 16 : 8;
    size_t global[2] = {GEMM_N, GEMM_N}, local[2] = {tile, tile};
    cl_int n = GEMM_N;
    float *a = NULL, *bm = NULL, *c = NULL, *got = NULL;
    cl_mem mem[3] = {0};
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    uint32_t seed = 0x0badf00du;
    char opts[32];
    double w0, t0, t1;

    TRY(a = xmalloc(bytes));
    TRY(bm = xmalloc(bytes));
    TRY(c = calloc(nn, sizeof(float)));
    TRY(got = xmalloc(bytes));
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)((int)(rng_next(&seed) % 5) - 2);
        bm[i] = (float)((int)(rng_next(&seed) % 5) - 2);
    }

    snprintf(opts, sizeof(opts), "-DTILE=%zu", tile);
    TRY(build_kernel(b, gemm_src, opts, "sgemm", &prog, &kern));
    TRY(mem[0] = new_buffer(b, CL_MEM_READ_ONLY, bytes, a));
    TRY(mem[1] = new_buffer(b, CL_MEM_READ_ONLY, bytes, bm));
    TRY(mem[2] = new_buffer(b, CL_MEM_READ_WRITE, bytes, NULL));
    for (cl_uint i = 0; i < 3; i++)
        CL_TRY(clSetKernelArg(kern, i, sizeof(cl_mem), &mem[i]));
    CL_TRY(clSetKernelArg(kern, 3, sizeof(n), &n));

    w0 = now_s();
    for (warm = 0; warming(b, warm, reps, 1, w0); warm++)
        CL_TRY(clEnqueueNDRangeKernel(b->queue, kern, 2, NULL, global, local,
                                      0, NULL, NULL));
    CL_TRY(clFinish(b->queue));

    t0 = now_s();
    for (long i = 0; i < reps; i++)
        CL_TRY(clEnqueueNDRangeKernel(b->queue, kern, 2, NULL, global, local,
                                      0, NULL, NULL));
    CL_TRY(clFinish(b->queue));
    t1 = now_s();

    CL_TRY(clEnqueueReadBuffer(b->queue, mem[2], CL_TRUE, 0, bytes, got, 0,
                               NULL, NULL));
    for (int i = 0; i < GEMM_N; i++)
        for (int k = 0; k < GEMM_N; k++) {
            float aik = a[(size_t)i * GEMM_N + k];

            for (int j = 0; j < GEMM_N; j++)
                c[(size_t)i * GEMM_N + j] += aik * bm[(size_t)k * GEMM_N + j];
        }

    r->seconds = t1 - t0;
    r->value = 2.0 * GEMM_N * (double)nn * (double)reps / r->seconds / 1e9;
    r->unit = "GFLOP/s";
    rc = memcmp(c, got, bytes) ? BENCH_MISMATCH : BENCH_OK;
out:
    release_mem(mem, 3);
    release_kernel(prog, kern);
    free(got);
    free(c);
    free(bm);
    free(a);
    return rc;
}

/* ---- command table, device selection, main ------------------------------ */

static const struct {
    const char *name;
    bench_fn *fn;
    const char *help;
} tests[] = {
    {"bus_h2d", bench_bus_h2d, "host-to-device bandwidth, 64 MiB writes"},
    {"bus_d2h", bench_bus_d2h, "device-to-host bandwidth, 64 MiB reads"},
    {"launch", bench_launch, "trivial kernel enqueue rate"},
    {"setarg", bench_setarg, "8 clSetKernelArg + 1 tiny launch per iteration"},
    {"stencil", bench_stencil, "2D 5-point Jacobi, 512x512"},
    {"reduction", bench_reduction, "two-pass float sum of 4M elements"},
    {"sort", bench_sort, "bitonic sort of 256Ki keys, 171 launches"},
    {"gemm", bench_gemm, "tiled SGEMM 512x512"},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: clbench [--platform N] [--device N] "
            "[--device-type gpu|cpu|all]\n"
            "               [--scale S] [--pageable] TEST | --list\n"
            "prints: DEVICE <platform> | <device> | <driver version>\n"
            "        RESULT <name> <seconds> <metric-value> <metric-unit>\n"
            "--list prints every platform and device with its indices\n"
            "tests:\n");
    for (size_t i = 0; i < NTESTS; i++)
        fprintf(f, "  %-10s %s\n", tests[i].name, tests[i].help);
}

/* Open platform/device by index and create the context and queue. */
static int bench_open(struct bench *b, cl_uint pidx, cl_uint didx,
                      cl_device_type type)
{
    cl_platform_id plats[16];
    cl_device_id devs[16];
    cl_uint np = 0, nd = 0;
    cl_int err;
    char version[128] = "";

    CL_TRY(clGetPlatformIDs(16, plats, &np));
    if (pidx >= np) {
        fprintf(stderr, "clbench: platform %u not found (%u present)\n",
                (unsigned)pidx, (unsigned)np);
        goto out;
    }
    b->platform = plats[pidx];
    CL_TRY(clGetDeviceIDs(b->platform, type, 16, devs, &nd));
    if (didx >= nd) {
        fprintf(stderr, "clbench: device %u not found (%u present)\n",
                (unsigned)didx, (unsigned)nd);
        goto out;
    }
    b->device = devs[didx];
    CL_TRY(clGetDeviceInfo(b->device, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                           sizeof(b->max_wg), &b->max_wg, NULL));
    CL_TRY(clGetDeviceInfo(b->device, CL_DEVICE_VERSION, sizeof(version) - 1,
                           version, NULL));
    b->context = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err);
    CL_TRY(err);
    /* "OpenCL 2.0" and later have the properties form; 1.x only the old. */
    if (strncmp(version, "OpenCL 1.", 9) == 0)
        b->queue = clCreateCommandQueue(b->context, b->device, 0, &err);
    else
        b->queue = clCreateCommandQueueWithProperties(b->context, b->device,
                                                      NULL, &err);
    CL_TRY(err);
    return 0;
out:
    return -1;
}

/* Print "DEVICE <platform> | <device> | <driver version>" for device d. */
static void print_device(cl_platform_id p, cl_device_id d, const char *tag)
{
    char pname[128] = "?", dname[128] = "?", driver[64] = "?";

    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(pname) - 1, pname, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(dname) - 1, dname, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof(driver) - 1, driver, NULL);
    printf("%s %s | %s | %s\n", tag, pname, dname, driver);
}

/* --list: every platform and device, by the indices --platform and
 * --device take (device indices counted within --device-type). */
static int list_devices(cl_device_type type)
{
    cl_platform_id plats[16];
    cl_device_id devs[16];
    cl_uint np = 0, nd;
    char tag[32];

    CL_TRY(clGetPlatformIDs(16, plats, &np));
    for (cl_uint p = 0; p < np && p < 16; p++) {
        nd = 0;
        if (clGetDeviceIDs(plats[p], type, 16, devs, &nd) != CL_SUCCESS)
            nd = 0;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            snprintf(tag, sizeof(tag), "platform %u device %u:",
                     (unsigned)p, (unsigned)d);
            print_device(plats[p], devs[d], tag);
        }
    }
    return BENCH_OK;
out:
    return BENCH_ERROR;
}

static void bench_close(struct bench *b)
{
    if (b->queue)
        clReleaseCommandQueue(b->queue);
    if (b->context)
        clReleaseContext(b->context);
}

static int parse_uint(const char *s, cl_uint *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (!*s || *end || v > 1024)
        return -1;
    *out = (cl_uint)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b = {.scale = 1.0};
    struct bench_result r = {0};
    cl_uint pidx = 0, didx = 0;
    cl_device_type type = CL_DEVICE_TYPE_ALL;
    const char *name = NULL;
    bench_fn *fn = NULL;
    int rc, list = 0;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(arg, "--platform") && val) {
            if (parse_uint(val, &pidx))
                goto bad;
            i++;
        } else if (!strcmp(arg, "--device") && val) {
            if (parse_uint(val, &didx))
                goto bad;
            i++;
        } else if (!strcmp(arg, "--device-type") && val) {
            if (!strcmp(val, "gpu"))
                type = CL_DEVICE_TYPE_GPU;
            else if (!strcmp(val, "cpu"))
                type = CL_DEVICE_TYPE_CPU;
            else if (!strcmp(val, "all"))
                type = CL_DEVICE_TYPE_ALL;
            else
                goto bad;
            i++;
        } else if (!strcmp(arg, "--list")) {
            list = 1;
        } else if (!strcmp(arg, "--pageable")) {
            b.pageable = 1;
        } else if (!strcmp(arg, "--scale") && val) {
            char *end;

            b.scale = strtod(val, &end);
            if (!*val || *end || !(b.scale > 0) || b.scale > 1e6)
                goto bad;
            i++;
        } else if (arg[0] != '-' && !name) {
            name = arg;
        } else {
            goto bad;
        }
    }
    if (list)
        return name ? (usage(stderr), BENCH_ERROR) : list_devices(type);
    if (!name)
        goto bad;
    for (size_t i = 0; i < NTESTS; i++)
        if (!strcmp(name, tests[i].name))
            fn = tests[i].fn;
    if (!fn) {
        fprintf(stderr, "clbench: unknown test '%s'\n", name);
        goto bad;
    }

    if (bench_open(&b, pidx, didx, type)) {
        bench_close(&b);
        return BENCH_ERROR;
    }
    print_device(b.platform, b.device, "DEVICE");
    fflush(stdout);
    rc = fn(&b, &r);
    bench_close(&b);
    if (rc == BENCH_MISMATCH)
        fprintf(stderr, "clbench: %s: result does not match the CPU "
                "reference\n", name);
    if (rc != BENCH_OK)
        return rc;
    printf("RESULT %s %.6f %.4f %s\n", name, r.seconds, r.value, r.unit);
    return BENCH_OK;
bad:
    usage(stderr);
    return BENCH_ERROR;
}
