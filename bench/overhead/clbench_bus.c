/* clbench: bus_h2d and bus_d2h, 64 MiB transfers each way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clbench.h"

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
int bench_bus_h2d(struct bench *b, struct bench_result *r)
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
int bench_bus_d2h(struct bench *b, struct bench_result *r)
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
