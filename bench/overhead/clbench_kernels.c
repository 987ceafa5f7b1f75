/* clbench: launch, setarg and stencil, the tests of many small
 * launches. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clbench.h"

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
int bench_launch(struct bench *b, struct bench_result *r)
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
int bench_setarg(struct bench *b, struct bench_result *r)
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
int bench_stencil(struct bench *b, struct bench_result *r)
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
