/* Host memory lent and taken back: CL_MEM_USE_HOST_PTR buffers released
 * while kernels still hold them as arguments, their memory then freed or
 * reused by the program at once; nothing may write there afterwards. */
#define TEST_NAME "lenthost"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* Words per buffer, kernels holding released buffers, rounds. */
#define N 4096
#define HOLDERS 4
#define ROUNDS 160
#define CANARY 0xa5c3e1f7u

static const char *kernel_source =
    "__kernel void twice(__global const uint *in, __global uint *out,\n"
    "                    uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * 2u + k;\n"
    "}\n";

/* Memory the program took back and filled with canaries: checked at the
 * end, since nothing may have written into it. */
struct kept {
    cl_uint *words;
    size_t n;
    int round;
};

static struct kept kept[ROUNDS];
static int n_kept;

static void fill(cl_uint *w, size_t n, cl_uint seed)
{
    for (size_t i = 0; i < n; i++)
        w[i] = seed * 2654435761u + (cl_uint)i;
}

/* Runs KERNEL over IN (N words at IN_OFF of its host words HOST) into a
 * fresh buffer and checks every word. */
static void run_checked(cl_context ctx, cl_command_queue q, cl_kernel kernel,
                        cl_mem in, const cl_uint *host, cl_uint k, int round)
{
    static cl_uint got[N];
    char what[64];
    cl_int err;
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, N * sizeof(cl_uint),
                                NULL, &err);
    size_t global = N;

    CHECK(err);
    CHECK(clSetKernelArg(kernel, 0, sizeof(in), &in));
    CHECK(clSetKernelArg(kernel, 1, sizeof(out), &out));
    CHECK(clSetKernelArg(kernel, 2, sizeof(k), &k));
    CHECK(clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                              NULL));
    for (size_t i = 0; i < N; i++)
        if (got[i] != host[i] * 2u + k) {
            snprintf(what, sizeof(what), "round %d word %zu", round, i);
            fail("%s is %u, expected %u", what, got[i], host[i] * 2u + k);
        }
    /* The output buffer goes; the kernel keeps holding IN (argument 0)
     * until its next round, several rounds and switches away. */
    CHECK(clSetKernelArg(kernel, 1, sizeof(in), &in));
    CHECK(clReleaseMemObject(out));
}

/* Gives the memory back to the program: freed (ASan and valgrind catch a
 * later write) or filled with canaries and kept (checked at the end). */
static void take_back(cl_uint *words, size_t n, int round)
{
    if (round % 2 == 0) {
        free(words);
        return;
    }
    for (size_t i = 0; i < n; i++)
        words[i] = CANARY ^ (cl_uint)i;
    kept[n_kept].words = words;
    kept[n_kept].n = n;
    kept[n_kept++].round = round;
}

/* A plain USE_HOST_PTR buffer, released while a kernel holds it. */
static void round_plain(cl_context ctx, cl_command_queue q, cl_kernel kernel,
                        int round)
{
    cl_uint *host = malloc(N * sizeof(cl_uint));
    cl_int err;

    EXPECT(host, "out of memory");
    fill(host, N, (cl_uint)round);
    cl_mem in = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR,
                               N * sizeof(cl_uint), host, &err);
    CHECK(err);
    run_checked(ctx, q, kernel, in, host, (cl_uint)round, round);
    CHECK(clReleaseMemObject(in));
    take_back(host, N, round);
}

/* A sub-buffer of a USE_HOST_PTR buffer: the parent released first (its
 * memory is still lent through the sub-buffer, which must keep working),
 * then the sub-buffer, while a kernel holds it. */
static void round_sub(cl_context ctx, cl_command_queue q, cl_kernel kernel,
                      int round)
{
    cl_uint *host = malloc(2 * N * sizeof(cl_uint));
    cl_buffer_region region = {N * sizeof(cl_uint), N * sizeof(cl_uint)};
    cl_int err;

    EXPECT(host, "out of memory");
    fill(host, 2 * N, (cl_uint)round + 7);
    cl_mem parent = clCreateBuffer(ctx, CL_MEM_READ_ONLY |
                                   CL_MEM_USE_HOST_PTR,
                                   2 * N * sizeof(cl_uint), host, &err);
    CHECK(err);
    cl_mem sub = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION,
                                   &region, &err);
    if (err == CL_MISALIGNED_SUB_BUFFER_OFFSET) {
        CHECK(clReleaseMemObject(parent));
        free(host);
        return;
    }
    CHECK(err);
    CHECK(clReleaseMemObject(parent));
    /* Still lent: the sub-buffer is the program's. */
    run_checked(ctx, q, kernel, sub, host + N, (cl_uint)round, round);
    run_checked(ctx, q, kernel, sub, host + N, (cl_uint)round + 1, round);
    CHECK(clReleaseMemObject(sub));
    take_back(host, 2 * N, round);
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_kernel holders[HOLDERS];
    cl_int err;

    pick_device(&platform, &device);
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    cl_program prog = build_source(ctx, device, kernel_source, "");
    for (int i = 0; i < HOLDERS; i++)
        holders[i] = make_kernel(prog, "twice");

    for (int round = 0; round < ROUNDS; round++) {
        cl_kernel k = holders[round % HOLDERS];
        if (round % 5 == 4)
            round_sub(ctx, q, k, round);
        else
            round_plain(ctx, q, k, round);
    }
    CHECK(clFinish(q));
    for (int i = 0; i < HOLDERS; i++)
        CHECK(clReleaseKernel(holders[i]));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));

    /* Every word of memory the program took back is as it left it. */
    for (int i = 0; i < n_kept; i++) {
        const cl_uint *w = kept[i].words;
        for (size_t j = 0; j < kept[i].n; j++)
            if (w[j] != (CANARY ^ (cl_uint)j))
                fail("memory taken back in round %d: word %zu is 0x%08x, "
                     "written after its buffer was released", kept[i].round,
                     j, w[j]);
    }
    for (int i = 0; i < n_kept; i++)
        free(kept[i].words);
    pass();
}
