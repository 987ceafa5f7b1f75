/* Buffers kept mapped for the whole run, as x264's lookahead keeps its
 * CL_MEM_ALLOC_HOST_PTR staging buffer: read and written through the map
 * pointers between (and across) switches, used as the host side of other
 * buffers' reads and writes, every word checked; the maps ended only at
 * the end, and what was written through them checked on the device. */
#define TEST_NAME "mapped"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* Words per transfer, rounds. */
#define N 2048
#define ROUNDS 48
/* The staging buffer: room for the input and output of a round. */
#define STAGE_WORDS (4 * N)

static const char *kernel_source =
    "__kernel void scale(__global const uint *in, __global uint *out,\n"
    "                    __global const uint *table, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * 3u + table[i % 64u] + k;\n"
    "}\n";

static cl_uint word(cl_uint seed, size_t i)
{
    return seed * 2654435761u + (cl_uint)i * 40503u;
}

static cl_uint table_word(size_t i)
{
    return 0x1000u + (cl_uint)i * 7u;
}

static cl_uint expect(cl_uint seed, size_t i, cl_uint k)
{
    return word(seed, i) * 3u + table_word(i % 64) + k;
}

struct state {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel kernel;
    cl_mem stage, table, sub, in, out, cycle;
    cl_uint *stage_p;            /* mapped for the whole run */
    const cl_uint *table_p;      /* mapped for reading, whole run */
    cl_uint *sub_p;              /* a sub-buffer's, whole run */
};

static cl_mem buffer(cl_context ctx, cl_mem_flags flags, size_t bytes,
                     void *host)
{
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, flags, bytes, host, &err);

    CHECK(err);
    return b;
}

static void *map(cl_command_queue q, cl_mem b, cl_map_flags flags,
                 size_t offset, size_t bytes)
{
    cl_int err;
    void *p = clEnqueueMapBuffer(q, b, CL_TRUE, flags, offset, bytes, 0,
                                 NULL, NULL, &err);

    CHECK(err);
    EXPECT(p, "a map returned NULL");
    return p;
}

/* A CL_MEM_ALLOC_HOST_PTR buffer says so, and has no host pointer of the
 * program's. */
static void check_info(cl_mem b)
{
    cl_mem_flags flags = 0;
    void *host = (void *)1;

    CHECK(clGetMemObjectInfo(b, CL_MEM_FLAGS, sizeof(flags), &flags, NULL));
    CHECK(clGetMemObjectInfo(b, CL_MEM_HOST_PTR, sizeof(host), &host, NULL));
    EXPECT(flags & CL_MEM_ALLOC_HOST_PTR,
           "CL_MEM_FLAGS 0x%llx lacks CL_MEM_ALLOC_HOST_PTR",
           (unsigned long long)flags);
    EXPECT(!(flags & CL_MEM_USE_HOST_PTR),
           "CL_MEM_FLAGS 0x%llx says CL_MEM_USE_HOST_PTR",
           (unsigned long long)flags);
    EXPECT(host == NULL, "CL_MEM_HOST_PTR is %p, not NULL", host);
}

static void setup(struct state *s, cl_device_id device)
{
    static cl_uint table[64];
    cl_int err;

    s->ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    s->q = clCreateCommandQueueWithProperties(s->ctx, device, NULL, &err);
    CHECK(err);
    cl_program prog = build_source(s->ctx, device, kernel_source, "");
    s->kernel = make_kernel(prog, "scale");
    CHECK(clReleaseProgram(prog));

    /* x264's: write-only for kernels, mapped to read and write. */
    s->stage = buffer(s->ctx, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR,
                      STAGE_WORDS * sizeof(cl_uint), NULL);
    check_info(s->stage);
    s->stage_p = map(s->q, s->stage, CL_MAP_READ | CL_MAP_WRITE, 0,
                     STAGE_WORDS * sizeof(cl_uint));
    /* Bytes given at creation, kept mapped for reading while kernels
     * read it (as OpenCL allows). */
    for (size_t i = 0; i < 64; i++)
        table[i] = table_word(i);
    s->table = buffer(s->ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR |
                      CL_MEM_COPY_HOST_PTR, sizeof(table), table);
    check_info(s->table);
    s->table_p = map(s->q, s->table, CL_MAP_READ, 0, sizeof(table));
    memset(table, 0, sizeof(table));
    /* The second half of a pinned buffer as a sub-buffer, mapped. */
    s->cycle = buffer(s->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                      2 * N * sizeof(cl_uint), NULL);
    cl_buffer_region region = {N * sizeof(cl_uint), N * sizeof(cl_uint)};
    s->sub = clCreateSubBuffer(s->cycle, 0, CL_BUFFER_CREATE_TYPE_REGION,
                               &region, &err);
    if (err == CL_MISALIGNED_SUB_BUFFER_OFFSET)
        s->sub = NULL;
    else
        CHECK(err);
    if (s->sub)
        s->sub_p = map(s->q, s->sub, CL_MAP_WRITE, 0, N * sizeof(cl_uint));
    s->in = buffer(s->ctx, CL_MEM_READ_ONLY, N * sizeof(cl_uint), NULL);
    s->out = buffer(s->ctx, CL_MEM_WRITE_ONLY, N * sizeof(cl_uint), NULL);
}

/* A round as x264 does it: the input written into the staging map, sent
 * to the device from there, the kernel's output read back into it, and
 * checked through the pointer. */
static void round_staged(struct state *s, int round)
{
    cl_uint *src = s->stage_p + (size_t)(round % 2) * 2 * N;
    cl_uint *dst = src + N;
    cl_uint k = (cl_uint)round;
    size_t global = N;

    for (size_t i = 0; i < N; i++)
        src[i] = word((cl_uint)round, i);
    CHECK(clEnqueueWriteBuffer(s->q, s->in, CL_FALSE, 0, N * sizeof(cl_uint),
                               src, 0, NULL, NULL));
    CHECK(clSetKernelArg(s->kernel, 0, sizeof(s->in), &s->in));
    CHECK(clSetKernelArg(s->kernel, 1, sizeof(s->out), &s->out));
    CHECK(clSetKernelArg(s->kernel, 2, sizeof(s->table), &s->table));
    CHECK(clSetKernelArg(s->kernel, 3, sizeof(k), &k));
    CHECK(clEnqueueNDRangeKernel(s->q, s->kernel, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    CHECK(clEnqueueReadBuffer(s->q, s->out, CL_TRUE, 0, N * sizeof(cl_uint),
                              dst, 0, NULL, NULL));
    for (size_t i = 0; i < N; i++)
        if (dst[i] != expect((cl_uint)round, i, k))
            fail("round %d word %zu is %u, expected %u", round, i, dst[i],
                 expect((cl_uint)round, i, k));
    /* The other half still holds the previous round's words. */
    if (round > 0) {
        const cl_uint *prev = s->stage_p + (size_t)((round - 1) % 2) * 2 * N;
        for (size_t i = 0; i < N; i += 97)
            if (prev[N + i] != expect((cl_uint)round - 1, i, k - 1))
                fail("round %d: the map's word %zu of round %d changed to "
                     "%u", round, i, round - 1, prev[N + i]);
    }
}

/* The read-only map still shows the bytes given at creation; the
 * sub-buffer's map keeps what was written into it. */
static void round_kept(struct state *s, int round)
{
    for (size_t i = 0; i < 64; i++)
        if (s->table_p[i] != table_word(i))
            fail("round %d: the read map's word %zu is %u, expected %u",
                 round, i, s->table_p[i], table_word(i));
    if (!s->sub_p)
        return;
    if (round > 0)
        for (size_t i = 0; i < N; i++)
            if (s->sub_p[i] != word(0xbeefu, i) + (cl_uint)round - 1)
                fail("round %d: the sub-buffer map's word %zu is %u, "
                     "expected %u", round, i, s->sub_p[i],
                     word(0xbeefu, i) + (cl_uint)round - 1);
    for (size_t i = 0; i < N; i++)
        s->sub_p[i] = word(0xbeefu, i) + (cl_uint)round;
}

/* A map made and ended within the round, of the first half of the
 * sub-buffer's parent (not under its map). */
static void round_cycle(struct state *s, int round)
{
    cl_uint *p = map(s->q, s->cycle, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                     N * sizeof(cl_uint));
    for (size_t i = 0; i < N; i++)
        p[i] = word((cl_uint)round + 99, i);
    CHECK(clEnqueueUnmapMemObject(s->q, s->cycle, p, 0, NULL, NULL));
    p = map(s->q, s->cycle, CL_MAP_READ, 0, N * sizeof(cl_uint));
    for (size_t i = 0; i < N; i++)
        if (p[i] != word((cl_uint)round + 99, i))
            fail("round %d: a remapped word %zu is %u, expected %u", round,
                 i, p[i], word((cl_uint)round + 99, i));
    CHECK(clEnqueueUnmapMemObject(s->q, s->cycle, p, 0, NULL, NULL));
}

/* The maps end: what was written through them reaches the device (the
 * staging buffer's last words, the sub-buffer's). */
static void finish(struct state *s)
{
    static cl_uint got[STAGE_WORDS];

    for (size_t i = 0; i < STAGE_WORDS; i++)
        s->stage_p[i] = word(0x5151u, i);
    CHECK(clEnqueueUnmapMemObject(s->q, s->stage, s->stage_p, 0, NULL,
                                  NULL));
    CHECK(clEnqueueUnmapMemObject(s->q, s->table, (void *)s->table_p, 0,
                                  NULL, NULL));
    CHECK(clEnqueueReadBuffer(s->q, s->stage, CL_TRUE, 0, sizeof(got), got, 0,
                              NULL, NULL));
    for (size_t i = 0; i < STAGE_WORDS; i++)
        if (got[i] != word(0x5151u, i))
            fail("after the unmap the staging buffer's word %zu is %u, "
                 "expected %u", i, got[i], word(0x5151u, i));
    if (s->sub) {
        CHECK(clEnqueueUnmapMemObject(s->q, s->sub, s->sub_p, 0, NULL,
                                      NULL));
        CHECK(clEnqueueReadBuffer(s->q, s->cycle, CL_TRUE,
                                  N * sizeof(cl_uint), N * sizeof(cl_uint),
                                  got, 0, NULL, NULL));
        for (size_t i = 0; i < N; i++)
            if (got[i] != word(0xbeefu, i) + ROUNDS - 1)
                fail("after the unmap the sub-buffer's word %zu is %u, "
                     "expected %u", i, got[i],
                     word(0xbeefu, i) + ROUNDS - 1);
        CHECK(clReleaseMemObject(s->sub));
    }
    CHECK(clFinish(s->q));
    cl_mem all[] = {s->stage, s->table, s->cycle, s->in, s->out};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        CHECK(clReleaseMemObject(all[i]));
    CHECK(clReleaseKernel(s->kernel));
    CHECK(clReleaseCommandQueue(s->q));
    CHECK(clReleaseContext(s->ctx));
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    struct state s = {0};

    pick_device(&platform, &device);
    setup(&s, device);
    for (int round = 0; round < ROUNDS; round++) {
        round_staged(&s, round);
        round_kept(&s, round);
        if (round % 3 == 2)
            round_cycle(&s, round);
    }
    finish(&s);
    pass();
}
