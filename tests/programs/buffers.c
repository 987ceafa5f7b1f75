/* Buffer test: every way to create, fill, copy, map and sub-divide a buffer. */
#define TEST_NAME "buffers"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* Each buffer holds N 32-bit words; the rect tests view it as ROWS x COLS. */
#define N 65536
#define SIZE (N * sizeof(cl_uint))
#define COLS 256
#define ROWS (N / COLS)
#define ROW_PITCH (COLS * sizeof(cl_uint))

/* The number of kernel launches in the increment loop. */
#define LAUNCHES 300

static const char *kernel_source =
    "__kernel void inc(__global uint *d, uint add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    d[i] += add + (uint)(i & 7);\n"
    "}\n"
    "__kernel void blend(__global const uint *a, __global uint *b)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    b[i] = b[i] * 3u + a[i];\n"
    "}\n";

/* A device buffer and the CPU copy of what it must contain. */
struct tbuf {
    const char *name;
    cl_mem mem;
    cl_uint *mirror;
};

/* The OpenCL objects shared by every step. */
struct ctx {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    size_t align;
};

static uint32_t rng_state = 0x12345678u;

/* Returns the next number of a fixed xorshift sequence. */
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Allocates zeroed memory or fails. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL)
        fail("out of memory");
    return p;
}

/* Fills words with the fixed sequence. */
static void fill_random(cl_uint *words, size_t n)
{
    for (size_t i = 0; i < n; i++)
        words[i] = rng();
}

/* Reads a whole buffer back with a blocking read and compares it with its
 * mirror. */
static void verify(struct ctx *c, struct tbuf *b, const char *step)
{
    static cl_uint got[N];
    char what[160];

    memset(got, 0xa5, sizeof(got));
    CHECK(clEnqueueReadBuffer(c->queue, b->mem, CL_TRUE, 0, SIZE, got, 0,
                              NULL, NULL));
    snprintf(what, sizeof(what), "%s after %s", b->name, step);
    expect_uints(got, b->mirror, N, what);
}

/* Copies a 3D byte rectangle the way the *BufferRect calls define it. */
static void rect_copy(unsigned char *dst, const size_t dorg[3], size_t drp,
                      size_t dsp, const unsigned char *src,
                      const size_t sorg[3], size_t srp, size_t ssp,
                      const size_t region[3])
{
    for (size_t z = 0; z < region[2]; z++) {
        for (size_t y = 0; y < region[1]; y++) {
            memcpy(dst + (dorg[2] + z) * dsp + (dorg[1] + y) * drp + dorg[0],
                   src + (sorg[2] + z) * ssp + (sorg[1] + y) * srp + sorg[0],
                   region[0]);
        }
    }
}

/* Checks the initial contents of buffers made from host memory. */
static void step_initial(struct ctx *c, struct tbuf *bufs, size_t nbufs)
{
    for (size_t i = 0; i < nbufs; i++)
        verify(c, &bufs[i], "creation");
}

/* Writes, copies and fills many small chunks, keeping mirrors in step. */
static void step_chunks(struct ctx *c, struct tbuf *bufs, size_t nbufs)
{
    static cl_uint staging[64][1024];
    cl_event last = NULL;

    for (int round = 0; round < 64; round++) {
        struct tbuf *dst = &bufs[rng() % nbufs];
        struct tbuf *src = &bufs[rng() % nbufs];
        size_t words = 1 + rng() % 1024;
        size_t doff = rng() % (N - words);
        size_t soff = rng() % (N - words);
        cl_uint pattern4 = rng();
        cl_uint pattern16[4] = {rng(), rng(), rng(), rng()};
        size_t foff = (rng() % (N / 4 - 256)) * 4;
        size_t fwords = 4 * (1 + rng() % 64);

        /* A non-blocking write from a staging area that stays untouched. */
        fill_random(staging[round], words);
        CHECK(clEnqueueWriteBuffer(c->queue, dst->mem, CL_FALSE,
                                   doff * sizeof(cl_uint),
                                   words * sizeof(cl_uint), staging[round], 0,
                                   NULL, NULL));
        memcpy(dst->mirror + doff, staging[round], words * sizeof(cl_uint));

        /* A copy between two buffers, or within one without overlap. */
        if (src != dst || soff + words <= doff || doff + words <= soff) {
            CHECK(clEnqueueCopyBuffer(c->queue, src->mem, dst->mem,
                                      soff * sizeof(cl_uint),
                                      doff * sizeof(cl_uint),
                                      words * sizeof(cl_uint), 0, NULL, NULL));
            memmove(dst->mirror + doff, src->mirror + soff,
                    words * sizeof(cl_uint));
        }

        /* Fills with a one-word and with a four-word pattern. */
        if (round % 2 == 0) {
            CHECK(clEnqueueFillBuffer(c->queue, src->mem, &pattern4,
                                      sizeof(pattern4), foff * sizeof(cl_uint),
                                      fwords * sizeof(cl_uint), 0, NULL,
                                      NULL));
            for (size_t i = 0; i < fwords; i++)
                src->mirror[foff + i] = pattern4;
        } else {
            if (last != NULL)
                CHECK(clReleaseEvent(last));
            CHECK(clEnqueueFillBuffer(c->queue, src->mem, pattern16,
                                      sizeof(pattern16),
                                      foff * sizeof(cl_uint),
                                      fwords * sizeof(cl_uint), 0, NULL,
                                      &last));
            for (size_t i = 0; i < fwords; i++)
                src->mirror[foff + i] = pattern16[i % 4];
        }
        if (round % 16 == 15) {
            CHECK(clFinish(c->queue));
            verify(c, dst, "chunk writes");
        }
    }
    if (last != NULL) {
        CHECK(clWaitForEvents(1, &last));
        CHECK(clReleaseEvent(last));
    }
    for (size_t i = 0; i < nbufs; i++)
        verify(c, &bufs[i], "chunk writes and copies");
}

/* Exercises clEnqueue{Write,Read,Copy}BufferRect with 2D and 3D regions. */
static void step_rects(struct ctx *c, struct tbuf *a, struct tbuf *b)
{
    static cl_uint host[N];
    static cl_uint got[N];
    static cl_uint want[N];

    for (int round = 0; round < 24; round++) {
        size_t w = 1 + rng() % 64;
        size_t h = 1 + rng() % 64;
        size_t region[3] = {w * sizeof(cl_uint), h, 1};
        size_t borg[3] = {(rng() % (COLS - w)) * sizeof(cl_uint),
                          rng() % (ROWS - h), 0};
        size_t horg[3] = {(rng() % (COLS - w)) * sizeof(cl_uint),
                          rng() % (ROWS - h), 0};
        size_t corg[3] = {(rng() % (COLS - w)) * sizeof(cl_uint),
                          rng() % (ROWS - h), 0};

        /* Host rectangle into buffer a. */
        fill_random(host, N);
        CHECK(clEnqueueWriteBufferRect(c->queue, a->mem, CL_TRUE, borg, horg,
                                       region, ROW_PITCH, 0, ROW_PITCH, 0,
                                       host, 0, NULL, NULL));
        rect_copy((unsigned char *)a->mirror, borg, ROW_PITCH, SIZE,
                  (unsigned char *)host, horg, ROW_PITCH, SIZE, region);

        /* Buffer a rectangle into buffer b at another origin. */
        CHECK(clEnqueueCopyBufferRect(c->queue, a->mem, b->mem, borg, corg,
                                      region, ROW_PITCH, 0, ROW_PITCH, 0, 0,
                                      NULL, NULL));
        rect_copy((unsigned char *)b->mirror, corg, ROW_PITCH, SIZE,
                  (unsigned char *)a->mirror, borg, ROW_PITCH, SIZE, region);

        /* Buffer b rectangle back to a host rectangle with a tight pitch. */
        memset(got, 0, sizeof(got));
        memset(want, 0, sizeof(want));
        {
            size_t zero[3] = {0, 0, 0};

            CHECK(clEnqueueReadBufferRect(c->queue, b->mem,
                                          round % 2 ? CL_TRUE : CL_FALSE,
                                          corg, zero, region, ROW_PITCH, 0,
                                          w * sizeof(cl_uint), 0, got, 0,
                                          NULL, NULL));
            CHECK(clFinish(c->queue));
            rect_copy((unsigned char *)want, zero, w * sizeof(cl_uint), SIZE,
                      (unsigned char *)b->mirror, corg, ROW_PITCH, SIZE,
                      region);
        }
        expect_uints(got, want, w * h, "rect read");
    }

    /* One 3D copy: the buffer as 16 slices of 16 rows of 256 words. */
    {
        size_t region[3] = {32 * sizeof(cl_uint), 5, 3};
        size_t sorg[3] = {8 * sizeof(cl_uint), 2, 1};
        size_t dorg[3] = {100 * sizeof(cl_uint), 9, 12};
        size_t slice = 16 * ROW_PITCH;

        CHECK(clEnqueueCopyBufferRect(c->queue, b->mem, a->mem, sorg, dorg,
                                      region, ROW_PITCH, slice, ROW_PITCH,
                                      slice, 0, NULL, NULL));
        rect_copy((unsigned char *)a->mirror, dorg, ROW_PITCH, slice,
                  (unsigned char *)b->mirror, sorg, ROW_PITCH, slice, region);
    }
    verify(c, a, "rect writes");
    verify(c, b, "rect copies");
}

/* Maps buffers for reading and for writing and checks what unmap leaves. */
static void step_maps(struct ctx *c, struct tbuf *bufs, size_t nbufs,
                      struct tbuf *use, cl_uint *use_host)
{
    cl_int err;

    for (int round = 0; round < 40; round++) {
        struct tbuf *b = &bufs[round % nbufs];
        size_t words = 1 + rng() % 4096;
        size_t off = rng() % (N - words);
        cl_uint *p;
        cl_event ev;

        /* Map for reading and compare with the mirror. */
        p = clEnqueueMapBuffer(c->queue, b->mem, CL_TRUE, CL_MAP_READ,
                               off * sizeof(cl_uint), words * sizeof(cl_uint),
                               0, NULL, NULL, &err);
        CHECK(err);
        if (b == use && p != use_host + off)
            fail("map of USE_HOST_PTR buffer gave %p, expected %p", (void *)p,
                 (void *)(use_host + off));
        expect_uints(p, b->mirror + off, words, "map for read");
        CHECK(clEnqueueUnmapMemObject(c->queue, b->mem, p, 0, NULL, &ev));
        CHECK(clWaitForEvents(1, &ev));
        CHECK(clReleaseEvent(ev));

        /* Map for writing (plain or invalidating) and change every word. */
        p = clEnqueueMapBuffer(c->queue, b->mem, CL_FALSE,
                               round % 2 ? CL_MAP_WRITE
                                         : CL_MAP_WRITE_INVALIDATE_REGION,
                               off * sizeof(cl_uint), words * sizeof(cl_uint),
                               0, NULL, &ev, &err);
        CHECK(err);
        CHECK(clWaitForEvents(1, &ev));
        CHECK(clReleaseEvent(ev));
        for (size_t i = 0; i < words; i++) {
            p[i] = rng();
            b->mirror[off + i] = p[i];
        }
        CHECK(clEnqueueUnmapMemObject(c->queue, b->mem, p, 0, NULL, NULL));
        if (round % 8 == 7)
            verify(c, b, "map for write");
    }
    for (size_t i = 0; i < nbufs; i++)
        verify(c, &bufs[i], "maps");
}

/* Writes through sub-buffers and reads through their parent. */
static void step_sub_buffers(struct ctx *c, struct tbuf *parent,
                             cl_kernel inc)
{
    enum { NSUB = 4 };
    cl_mem subs[NSUB];
    size_t origins[NSUB];
    size_t sizes[NSUB];
    size_t align_words = c->align / sizeof(cl_uint);
    static cl_uint host[N];
    cl_int err;

    for (int s = 0; s < NSUB; s++) {
        cl_buffer_region region;

        origins[s] = (size_t)s * (N / NSUB) + align_words * (size_t)(s + 1);
        sizes[s] = 1000 + (size_t)s * 517;
        region.origin = origins[s] * sizeof(cl_uint);
        region.size = sizes[s] * sizeof(cl_uint);
        subs[s] = clCreateSubBuffer(parent->mem, CL_MEM_READ_WRITE,
                                    CL_BUFFER_CREATE_TYPE_REGION, &region,
                                    &err);
        CHECK(err);
    }
    for (int round = 0; round < 32; round++) {
        int s = round % NSUB;
        size_t words = 1 + rng() % sizes[s];
        size_t off = rng() % (sizes[s] - words + 1);
        cl_uint add = rng();

        /* A write through the sub-buffer lands in the parent. */
        fill_random(host, words);
        CHECK(clEnqueueWriteBuffer(c->queue, subs[s], CL_TRUE,
                                   off * sizeof(cl_uint),
                                   words * sizeof(cl_uint), host, 0, NULL,
                                   NULL));
        memcpy(parent->mirror + origins[s] + off, host,
               words * sizeof(cl_uint));

        /* A kernel on the sub-buffer sees index 0 at the sub-buffer origin. */
        CHECK(clSetKernelArg(inc, 0, sizeof(cl_mem), &subs[s]));
        CHECK(clSetKernelArg(inc, 1, sizeof(cl_uint), &add));
        CHECK(clEnqueueNDRangeKernel(c->queue, inc, 1, NULL, &sizes[s], NULL,
                                     0, NULL, NULL));
        for (size_t i = 0; i < sizes[s]; i++)
            parent->mirror[origins[s] + i] += add + (cl_uint)(i & 7);

        /* Read a slice of the parent covering the sub-buffer. */
        CHECK(clEnqueueReadBuffer(c->queue, parent->mem, CL_TRUE,
                                  origins[s] * sizeof(cl_uint),
                                  sizes[s] * sizeof(cl_uint), host, 0, NULL,
                                  NULL));
        expect_uints(host, parent->mirror + origins[s], sizes[s],
                     "parent read after sub-buffer write");
    }
    /* Reads through each sub-buffer return the parent's bytes. */
    for (int s = 0; s < NSUB; s++) {
        CHECK(clEnqueueReadBuffer(c->queue, subs[s], CL_TRUE, 0,
                                  sizes[s] * sizeof(cl_uint), host, 0, NULL,
                                  NULL));
        expect_uints(host, parent->mirror + origins[s], sizes[s],
                     "sub-buffer read");
        CHECK(clReleaseMemObject(subs[s]));
    }
    verify(c, parent, "sub-buffer writes");
}

/* Launches the increment kernel many times, mixing blocking and
 * non-blocking reads whose snapshots are checked later. */
static void step_kernel_loop(struct ctx *c, struct tbuf *bufs, size_t nbufs,
                             cl_kernel inc, cl_kernel blend, cl_mem input,
                             const cl_uint *input_host)
{
    enum { SNAPS = 8, SNAP_WORDS = 4096 };
    static cl_uint snaps[SNAPS][SNAP_WORDS];
    static cl_uint want[SNAPS][SNAP_WORDS];
    static cl_uint now[SNAP_WORDS];
    cl_event events[SNAPS];
    int pending = 0;
    size_t global = N;

    for (int it = 0; it < LAUNCHES; it++) {
        struct tbuf *b = &bufs[it % nbufs];
        cl_uint add = (cl_uint)it * 2654435761u;

        if (it % 10 == 9) {
            CHECK(clSetKernelArg(blend, 0, sizeof(cl_mem), &input));
            CHECK(clSetKernelArg(blend, 1, sizeof(cl_mem), &b->mem));
            CHECK(clEnqueueNDRangeKernel(c->queue, blend, 1, NULL, &global,
                                         NULL, 0, NULL, NULL));
            for (size_t i = 0; i < N; i++)
                b->mirror[i] = b->mirror[i] * 3u + input_host[i];
        } else {
            CHECK(clSetKernelArg(inc, 0, sizeof(cl_mem), &b->mem));
            CHECK(clSetKernelArg(inc, 1, sizeof(cl_uint), &add));
            CHECK(clEnqueueNDRangeKernel(c->queue, inc, 1, NULL, &global,
                                         NULL, 0, NULL, NULL));
            for (size_t i = 0; i < N; i++)
                b->mirror[i] += add + (cl_uint)(i & 7);
        }

        if (it % 7 == 3) {
            size_t off = rng() % (N - SNAP_WORDS);

            if (it % 2 == 0) {
                /* A blocking read, checked at once. */
                CHECK(clEnqueueReadBuffer(c->queue, b->mem, CL_TRUE,
                                          off * sizeof(cl_uint),
                                          SNAP_WORDS * sizeof(cl_uint),
                                          now, 0, NULL, NULL));
                expect_uints(now, b->mirror + off, SNAP_WORDS,
                             "blocking read in kernel loop");
            } else {
                /* A non-blocking read, checked once its event completes. */
                memcpy(want[pending], b->mirror + off,
                       SNAP_WORDS * sizeof(cl_uint));
                CHECK(clEnqueueReadBuffer(c->queue, b->mem, CL_FALSE,
                                          off * sizeof(cl_uint),
                                          SNAP_WORDS * sizeof(cl_uint),
                                          snaps[pending], 0, NULL,
                                          &events[pending]));
                pending++;
            }
        }
        if (pending == SNAPS || (it == LAUNCHES - 1 && pending > 0)) {
            CHECK(clWaitForEvents((cl_uint)pending, events));
            for (int s = 0; s < pending; s++) {
                expect_uints(snaps[s], want[s], SNAP_WORDS,
                             "non-blocking read in kernel loop");
                CHECK(clReleaseEvent(events[s]));
            }
            pending = 0;
        }
    }
    for (size_t i = 0; i < nbufs; i++)
        verify(c, &bufs[i], "kernel loop");
}

int main(void)
{
    cl_platform_id platform;
    struct ctx c;
    cl_int err;
    cl_uint align_bits = 0;
    cl_program program;
    cl_kernel inc, blend;
    cl_uint *use_host;
    static cl_uint init[N];
    static cl_uint input_host[N];
    cl_mem input;
    struct tbuf bufs[5];
    size_t nbufs = sizeof(bufs) / sizeof(bufs[0]);
    cl_uint *p;

    pick_device(&platform, &c.device);
    CHECK(clGetDeviceInfo(c.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                          sizeof(align_bits), &align_bits, NULL));
    c.align = align_bits / 8;
    if (c.align < sizeof(cl_uint) || c.align > SIZE / 16)
        fail("unusable CL_DEVICE_MEM_BASE_ADDR_ALIGN %u bits", align_bits);
    c.context = clCreateContext(NULL, 1, &c.device, NULL, NULL, &err);
    CHECK(err);
    c.queue = clCreateCommandQueueWithProperties(c.context, c.device, NULL,
                                                 &err);
    CHECK(err);
    program = build_source(c.context, c.device, kernel_source, "");
    inc = make_kernel(program, "inc");
    blend = make_kernel(program, "blend");

    for (size_t i = 0; i < nbufs; i++)
        bufs[i].mirror = xcalloc(N, sizeof(cl_uint));
    use_host = aligned_alloc(4096, SIZE);
    if (use_host == NULL)
        fail("out of memory");
    fill_random(init, N);
    fill_random(use_host, N);
    fill_random(input_host, N);

    /* A plain buffer, written before anything reads it. */
    bufs[0].name = "plain";
    bufs[0].mem = clCreateBuffer(c.context, CL_MEM_READ_WRITE, SIZE, NULL,
                                 &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(c.queue, bufs[0].mem, CL_TRUE, 0, SIZE, init,
                               0, NULL, NULL));
    memcpy(bufs[0].mirror, init, SIZE);

    bufs[1].name = "copy_host_ptr";
    bufs[1].mem = clCreateBuffer(c.context,
                                 CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 SIZE, init, &err);
    CHECK(err);
    memcpy(bufs[1].mirror, init, SIZE);

    bufs[2].name = "use_host_ptr";
    bufs[2].mem = clCreateBuffer(c.context,
                                 CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                 SIZE, use_host, &err);
    CHECK(err);
    memcpy(bufs[2].mirror, use_host, SIZE);

    /* An ALLOC_HOST_PTR buffer, filled through a map. */
    bufs[3].name = "alloc_host_ptr";
    bufs[3].mem = clCreateBuffer(c.context,
                                 CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                 SIZE, NULL, &err);
    CHECK(err);
    p = clEnqueueMapBuffer(c.queue, bufs[3].mem, CL_TRUE,
                           CL_MAP_WRITE_INVALIDATE_REGION, 0, SIZE, 0, NULL,
                           NULL, &err);
    CHECK(err);
    for (size_t i = 0; i < N; i++)
        p[i] = bufs[3].mirror[i] = init[i] ^ 0x5a5a5a5au;
    CHECK(clEnqueueUnmapMemObject(c.queue, bufs[3].mem, p, 0, NULL, NULL));

    bufs[4].name = "alloc_copy_host_ptr";
    bufs[4].mem = clCreateBuffer(c.context,
                                 CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR |
                                     CL_MEM_COPY_HOST_PTR,
                                 SIZE, input_host, &err);
    CHECK(err);
    memcpy(bufs[4].mirror, input_host, SIZE);

    /* A read-only kernel input, later migrated to the device explicitly. */
    input = clCreateBuffer(c.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                           SIZE, input_host, &err);
    CHECK(err);
    CHECK(clEnqueueMigrateMemObjects(c.queue, 1, &input, 0, 0, NULL, NULL));

    step_initial(&c, bufs, nbufs);
    step_chunks(&c, bufs, nbufs);
    step_rects(&c, &bufs[0], &bufs[3]);
    step_maps(&c, bufs, nbufs, &bufs[2], use_host);
    step_sub_buffers(&c, &bufs[0], inc);
    step_kernel_loop(&c, bufs, nbufs, inc, blend, input, input_host);

    /* The read-only input must be exactly what it was made from. */
    {
        static cl_uint got[N];

        CHECK(clEnqueueReadBuffer(c.queue, input, CL_TRUE, 0, SIZE, got, 0,
                                  NULL, NULL));
        expect_uints(got, input_host, N, "read-only input buffer");
    }

    /* After a map, the USE_HOST_PTR memory itself holds the final bytes. */
    p = clEnqueueMapBuffer(c.queue, bufs[2].mem, CL_TRUE, CL_MAP_READ, 0, SIZE,
                           0, NULL, NULL, &err);
    CHECK(err);
    if (p != use_host)
        fail("final map of USE_HOST_PTR buffer gave %p, expected %p",
             (void *)p, (void *)use_host);
    expect_uints(use_host, bufs[2].mirror, N, "USE_HOST_PTR host memory");
    CHECK(clEnqueueUnmapMemObject(c.queue, bufs[2].mem, p, 0, NULL, NULL));
    CHECK(clFinish(c.queue));

    for (size_t i = 0; i < nbufs; i++) {
        CHECK(clReleaseMemObject(bufs[i].mem));
        free(bufs[i].mirror);
    }
    CHECK(clReleaseMemObject(input));
    CHECK(clReleaseKernel(inc));
    CHECK(clReleaseKernel(blend));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(c.queue));
    CHECK(clReleaseContext(c.context));
    free(use_host);
    pass();
}
