/* Mapped pointers in the host-memory region of the shared area
 * (shim/hostmem.h), every byte checked; tests/integration/hostmem.sh
 * reads the logs to see which transfers went in place.
 *
 *   hostmem phases REGION_MB   remoted from the start with a region of
 *       REGION_MB MiB (1 expected): a buffer mapped into the region,
 *       blocking and non-blocking writes and reads from and to it
 *       (393216 bytes each), one behind work gated by a user event that
 *       is set only after it returned (copied: it must return), rect
 *       ones (a span of 3424 bytes), a second
 *       map too big for what is left
 *       (720896 bytes, in the heap), 65536 bytes half in and half out of
 *       the region (where memory next to it can be had), and unmaps that
 *       write back
 *   hostmem loop ROUNDS        a buffer mapped all along, used as the host
 *       memory of writes and reads every round, and a map made and undone
 *       each round: under switches (every few calls) and proxies killed;
 *       prints "round N ok"
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define A_BYTES 0x60000u     /* in the region */
#define F_BYTES 0xB0000u     /* no room left for it: the heap */
#define S_BYTES 0x10000u     /* half in, half out */
#define L_BYTES (4u << 20)   /* the loop's buffers */

static cl_context ctx;
static cl_command_queue q;

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = (uint32_t)(i * 2654435761u) ^ (seed * 0x9e3779b9u);
        memcpy(p + i, &v, n - i < 4 ? n - i : 4);
    }
}

#define CHECK(what, call)                                                  \
    do {                                                                   \
        cl_int e_ = (call);                                                \
        if (e_ != CL_SUCCESS) {                                            \
            printf("FAIL hostmem: %s: error %d\n", what, e_);              \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* The buffers mapped here: plain ones, whose maps are the remote
 * backend's own (in the region while it has room).  A CL_MEM_ALLOC_HOST_PTR
 * buffer lies over the shim's memory instead (shim/mem_own.c: made
 * remoted, in the region too), and its maps are that memory. */
#define MAPPED CL_MEM_READ_WRITE

static cl_mem buffer(cl_mem_flags flags, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(ctx, flags, n, NULL, &err);

    if (!m) {
        printf("FAIL hostmem: buffer of %zu bytes: error %d\n", n, err);
        exit(1);
    }
    return m;
}

static uint8_t *map(cl_mem m, size_t n)
{
    cl_int err;
    void *p = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                 0, n, 0, NULL, NULL, &err);

    if (!p) {
        printf("FAIL hostmem: map of %zu bytes: error %d\n", n, err);
        exit(1);
    }
    return p;
}

/* The device bytes of M (N of them) must be WANT's. */
static void expect_device(const char *what, cl_mem m, const uint8_t *want,
                          size_t n)
{
    uint8_t *back = malloc(n);

    if (!back)
        exit(1);
    CHECK(what, clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, back, 0, NULL,
                                    NULL));
    if (memcmp(back, want, n)) {
        printf("FAIL hostmem: %s: device bytes differ\n", what);
        exit(1);
    }
    free(back);
}

static void expect_host(const char *what, const uint8_t *p, unsigned seed,
                        size_t n)
{
    uint8_t *want = malloc(n);

    if (!want)
        exit(1);
    pattern(want, n, seed);
    if (memcmp(p, want, n)) {
        printf("FAIL hostmem: %s: host bytes differ\n", what);
        exit(1);
    }
    free(want);
}

/* Writes P (N bytes) to DEV blocking or not, checks the device; fills P
 * with zeros and reads DEV into it, blocking or not, checks P. */
static void round_trip(const char *what, uint8_t *p, size_t n, cl_mem dev,
                       unsigned seed, cl_bool blocking)
{
    cl_event ev = NULL;

    pattern(p, n, seed);
    CHECK(what, clEnqueueWriteBuffer(q, dev, blocking, 0, n, p, 0, NULL,
                                     blocking ? NULL : &ev));
    if (!blocking) {
        CHECK(what, clWaitForEvents(1, &ev));
        clReleaseEvent(ev);
    }
    expect_device(what, dev, p, n);
    memset(p, 0, n);
    CHECK(what, clEnqueueReadBuffer(q, dev, blocking, 0, n, p, 0, NULL,
                                    blocking ? NULL : &ev));
    if (!blocking) {
        CHECK(what, clWaitForEvents(1, &ev));
        clReleaseEvent(ev);
    }
    expect_host(what, p, seed, n);
}

/* A blocking write from P behind work that waits for a user event this
 * thread sets only after the write returned: the write must return (its
 * bytes copied, not in place) and land once the event is set. */
static void gated_write(uint8_t *p, size_t n, cl_mem dev)
{
    cl_int err;
    cl_event user = clCreateUserEvent(ctx, &err);

    CHECK("user event", err);
    CHECK("gate", clEnqueueMarkerWithWaitList(q, 1, &user, NULL));
    pattern(p, n, 11);
    CHECK("gated write", clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, n, p, 0,
                                              NULL, NULL));
    CHECK("set", clSetUserEventStatus(user, CL_COMPLETE));
    CHECK("finish", clFinish(q));
    clReleaseEvent(user);
    expect_device("gated write", dev, p, n);
}

/* A rectangle of 64 x 16 x 2 bytes written from P (host origin 4, 1, 0;
 * rows of 96, slices of 1920 bytes: a span of 3424) into DEV, blocking,
 * and read back the same way into P + 0x20000 without blocking; every
 * byte of it checked, and the bytes between its rows left alone. */
static void rect_trip(uint8_t *p, cl_mem dev)
{
    const size_t bo[3] = {8, 2, 1}, ho[3] = {4, 1, 0}, r[3] = {64, 16, 2};
    const size_t row = 96, slice = 1920, at = 4 + 96;
    uint8_t *back = p + 0x20000;
    cl_event ev;

    pattern(p, 0x20000, 9);
    memset(back, 0, 0x20000);
    CHECK("rect write", clEnqueueWriteBufferRect(q, dev, CL_TRUE, bo, ho, r,
                                                 128, 128 * 32, row, slice,
                                                 p, 0, NULL, NULL));
    CHECK("rect read", clEnqueueReadBufferRect(q, dev, CL_FALSE, bo, ho, r,
                                               128, 128 * 32, row, slice,
                                               back, 0, NULL, &ev));
    CHECK("rect read", clWaitForEvents(1, &ev));
    clReleaseEvent(ev);
    for (size_t z = 0; z < r[2]; z++)
        for (size_t y = 0; y < r[1]; y++) {
            size_t o = at + z * slice + y * row;
            if (memcmp(back + o, p + o, r[0]) || back[o + r[0]] != 0) {
                printf("FAIL hostmem: rect: row %zu of slice %zu\n", y, z);
                exit(1);
            }
        }
}

/* Memory of its own right before or right after the region [BASE, +LEN):
 * where S_BYTES at the returned pointer lie half in, half out. */
static uint8_t *straddle(uint8_t *base, size_t len)
{
    uint8_t *before = base - S_BYTES, *after = base + len;
    void *p = mmap(before, S_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

    if (p == before)
        return base - S_BYTES / 2;
    if (p != MAP_FAILED)
        munmap(p, S_BYTES);
    p = mmap(after, S_BYTES, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == after)
        return after - S_BYTES / 2;
    if (p != MAP_FAILED)
        munmap(p, S_BYTES);
    return NULL;
}

static int phases(size_t region)
{
    cl_mem b1 = buffer(MAPPED, A_BYTES);
    cl_mem b2 = buffer(MAPPED, F_BYTES);
    cl_mem dev = buffer(CL_MEM_READ_WRITE, F_BYTES);
    uint8_t *p = map(b1, A_BYTES);

    round_trip("blocking, in the region", p, A_BYTES, dev, 1, CL_TRUE);
    round_trip("non-blocking, in the region", p, A_BYTES, dev, 2, CL_FALSE);
    gated_write(p, A_BYTES, dev);
    rect_trip(p, dev);
    uint8_t *f = map(b2, F_BYTES);
    round_trip("blocking, the heap", f, F_BYTES, dev, 3, CL_TRUE);
    round_trip("non-blocking, the heap", f, F_BYTES, dev, 4, CL_FALSE);
    /* The region's first map starts it (p), when there is one. */
    uint8_t *s = region ? straddle(p, region) : p;
    if (s) {
        round_trip("blocking, half in", s, S_BYTES, dev, 5, CL_TRUE);
        round_trip("non-blocking, half in", s, S_BYTES, dev, 6, CL_FALSE);
    } else {
        /* The shim's threads and areas may border the region on both
         * sides; unit/hostmem_region_allocations checks the decision. */
        printf("note: no memory free next to the region: no range half "
               "in, half out\n");
    }
    /* Unmaps write the program's bytes back. */
    pattern(p, A_BYTES, 7);
    pattern(f, F_BYTES, 8);
    CHECK("unmap", clEnqueueUnmapMemObject(q, b1, p, 0, NULL, NULL));
    CHECK("unmap", clEnqueueUnmapMemObject(q, b2, f, 0, NULL, NULL));
    uint8_t *want = malloc(F_BYTES);
    pattern(want, A_BYTES, 7);
    expect_device("unmapped, in the region", b1, want, A_BYTES);
    pattern(want, F_BYTES, 8);
    expect_device("unmapped, the heap", b2, want, F_BYTES);
    /* The region's memory comes back once the unmap's write is done. */
    CHECK("finish", clFinish(q));
    p = map(b1, A_BYTES);
    expect_host("mapped again", p, 7, A_BYTES);
    CHECK("unmap", clEnqueueUnmapMemObject(q, b1, p, 0, NULL, NULL));
    CHECK("finish", clFinish(q));
    free(want);
    printf("PASS hostmem phases\n");
    return 0;
}

static int loop(unsigned rounds)
{
    cl_mem keep = buffer(MAPPED, L_BYTES);
    cl_mem each = buffer(MAPPED, L_BYTES);
    cl_mem dev = buffer(CL_MEM_READ_WRITE, L_BYTES);
    uint8_t *want = malloc(L_BYTES);
    /* Mapped all along, switches or not. */
    uint8_t *p = map(keep, L_BYTES);

    for (unsigned r = 0; r < rounds; r++) {
        round_trip("the kept map", p, L_BYTES, dev, 100 + r, r % 2);
        uint8_t *m = map(each, L_BYTES);
        if (r)
            expect_host("a map of last round's bytes", m, 1000 + r - 1,
                        L_BYTES);
        pattern(m, L_BYTES, 1000 + r);
        CHECK("unmap", clEnqueueUnmapMemObject(q, each, m, 0, NULL, NULL));
        pattern(want, L_BYTES, 1000 + r);
        expect_device("unmapped", each, want, L_BYTES);
        printf("round %u ok\n", r);
        fflush(stdout);
    }
    pattern(p, L_BYTES, 7);
    CHECK("unmap", clEnqueueUnmapMemObject(q, keep, p, 0, NULL, NULL));
    pattern(want, L_BYTES, 7);
    expect_device("the kept map, unmapped", keep, want, L_BYTES);
    CHECK("finish", clFinish(q));
    free(want);
    printf("PASS hostmem loop\n");
    return 0;
}

int main(int argc, char **argv)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    /* A wait that never returns fails instead of stalling the suite. */
    alarm(120);
    if (argc != 3 || (strcmp(argv[1], "phases") && strcmp(argv[1], "loop"))) {
        fprintf(stderr, "usage: hostmem phases REGION_MB | loop ROUNDS\n");
        return 2;
    }
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) !=
            CL_SUCCESS) {
        printf("FAIL hostmem: no device\n");
        return 1;
    }
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    q = ctx ? clCreateCommandQueueWithProperties(ctx, device, NULL, &err)
            : NULL;
    if (!q) {
        printf("FAIL hostmem: setup: %d\n", err);
        return 1;
    }
    if (!strcmp(argv[1], "phases"))
        return phases((size_t)atoi(argv[2]) << 20);
    return loop((unsigned)atoi(argv[2]));
}
