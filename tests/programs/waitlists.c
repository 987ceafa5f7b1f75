/* Buffer reads and writes larger than one chunk of a remoted transfer,
 * each behind an event wait list of one or several events. */
#define TEST_NAME "waitlists"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* 16 MiB and a page: reads of 16 MiB, of 4,194,308 bytes (one ring
 * chunk of 4 MiB and a word) and from odd offsets all fit. */
#define WORDS ((16u << 20) / 4 + 1024)
#define ODD 4194308u
#define BIG (16u << 20)
#define ROUNDS 5

static const char *source =
    "__kernel void gen(__global uint *o, uint k)\n"
    "{ uint i = get_global_id(0); o[i] = i * 2654435761u + k; }\n";

static cl_uint got[WORDS], put[WORDS];

static cl_uint want_at(size_t i, cl_uint k)
{
    return (cl_uint)i * 2654435761u + k;
}

/* Bytes [OFF, OFF + LEN) of the kernel's output for K in GOT. */
static void expect_gen(size_t off, size_t len, cl_uint k, const char *what)
{
    for (size_t w = 0; w < len / 4; w++)
        if (got[w] != want_at(off / 4 + w, k))
            fail("%s: word %zu of %zu is %u, expected %u", what, w, len / 4,
                 got[w], want_at(off / 4 + w, k));
}

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    size_t global = WORDS;

    pick_device(&plat, &dev);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, WORDS * 4, NULL,
                                &err);
    CHECK(err);
    cl_mem small = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CHECK(err);
    cl_program prog = build_source(ctx, dev, source, NULL);
    cl_kernel gen = make_kernel(prog, "gen");
    CHECK(clSetKernelArg(gen, 0, sizeof(buf), &buf));

    for (cl_uint r = 0; r < ROUNDS; r++) {
        cl_uint k = r * 7919u + 1u, zero = 0;
        cl_event ev[3], wev, rev;
        CHECK(clSetKernelArg(gen, 1, sizeof(k), &k));
        CHECK(clEnqueueNDRangeKernel(q, gen, 1, NULL, &global, NULL, 0, NULL,
                                     &ev[0]));
        CHECK(clEnqueueFillBuffer(q, small, &zero, sizeof(zero), 0, 4096, 0,
                                  NULL, &ev[1]));
        ev[2] = clCreateUserEvent(ctx, &err);
        CHECK(err);
        CHECK(clSetUserEventStatus(ev[2], CL_COMPLETE));

        /* Blocking reads behind one event, then behind all three. */
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, ODD, got, 1, ev, NULL));
        expect_gen(0, ODD, k, "a blocking read of 4,194,308 bytes, 1 event");
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, BIG, got, 3, ev, NULL));
        expect_gen(0, BIG, k, "a blocking read of 16 MiB, 3 events");
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 4096 + 4, ODD, got, 2, ev,
                                  NULL));
        expect_gen(4096 + 4, ODD, k, "a blocking read at an odd offset");

        /* Reads of up to one final reply (64 KiB) and just past it, each
         * behind the list. */
        for (cl_uint i = 0; i < 32; i++) {
            size_t len = (i % 2 ? 65536 + 4 : 4096) + 4 * i, off = 4 * r;
            CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, off, len, got,
                                      1 + i % 3, ev, NULL));
            expect_gen(off, len, k, "a small read behind a list");
        }

        /* Writes behind a list: blocking and not, the second behind the
         * first's event, each read back. */
        for (size_t w = 0; w < WORDS; w++)
            put[w] = (cl_uint)w ^ (k << 3);
        CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, ODD, put, 3, ev,
                                   NULL));
        CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, ODD, BIG - ODD,
                                   put + ODD / 4, 2, ev, &wev));
        CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, BIG, got, 1, &wev,
                                  &rev));
        CHECK(clWaitForEvents(1, &rev));
        expect_uints(got, put, BIG / 4, "16 MiB written behind wait lists");
        /* A blocking 16 MiB write behind one event, read back blocking
         * behind it and another. */
        cl_event two[2] = {rev, ev[2]};
        for (size_t w = 0; w < WORDS; w++)
            put[w] = ~(cl_uint)w + k;
        CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, BIG, put, 1, &rev,
                                   NULL));
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, BIG, got, 2, two, NULL));
        expect_uints(got, put, BIG / 4, "a blocking 16 MiB write");
        for (int i = 0; i < 3; i++)
            CHECK(clReleaseEvent(ev[i]));
        CHECK(clReleaseEvent(wev));
        CHECK(clReleaseEvent(rev));
    }
    CHECK(clFinish(q));
    clReleaseKernel(gen);
    clReleaseProgram(prog);
    clReleaseMemObject(small);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    pass();
}
