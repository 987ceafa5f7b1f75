/* clbench: reduction, sort and gemm, the compute tests. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clbench.h"

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
int bench_reduction(struct bench *b, struct bench_result *r)
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

int bench_sort(struct bench *b, struct bench_result *r)
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
int bench_gemm(struct bench *b, struct bench_result *r)
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
