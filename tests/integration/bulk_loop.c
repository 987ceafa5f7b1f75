/* Bulk transfers in a loop, every byte checked: writes and reads of a
 * 24 MiB buffer, blocking and not, each round a new pattern.  Used with a
 * proxy killed under it (remote.sh proxy-killed-bulk): every call either
 * succeeds with the right bytes or fails; "WRONG" would be a lie.  With
 * "go-on" after the rounds ("-": not), a round that fails is counted and
 * the next one tried (lanes.sh: a lane killed mid-transfer fails one call, the
 * program goes on over the main stream).  A fourth argument "nonblocking"
 * makes every read non-blocking, its event waited for and checked (lanes.sh:
 * such reads take the lanes too); "rect" adds a rectangle read to each
 * round (rect_read), "image" an image written and read (image_read),
 * every byte checked. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes per transfer: 24 MiB, or the third argument (a multiple of 8). */
static size_t bytes = 24u << 20;

static void pattern(uint8_t *p, size_t n, unsigned round)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = (i * 0x9e3779b97f4a7c15ull) ^ round;
        memcpy(p + i, &v, 8);
    }
}

/* Reads LEN bytes of B into OUT; not BLOCKING: the read's event is
 * waited for, and must say it completed. */
static cl_int read_all(cl_command_queue q, cl_mem b, int blocking,
                       size_t len, void *out)
{
    cl_event ev = NULL;
    cl_int status = CL_COMPLETE,
           err = clEnqueueReadBuffer(q, b, blocking ? CL_TRUE : CL_FALSE, 0,
                                     len, out, 0, NULL, &ev);

    if (err == CL_SUCCESS)
        err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof(status), &status, NULL);
    if (ev)
        clReleaseEvent(ev);
    if (err == CL_SUCCESS && status != CL_COMPLETE)
        err = status < 0 ? status : CL_INVALID_EVENT;
    return err;
}

#define RECT_WRONG 1 /* not an OpenCL error code */

/* Reads half of every 4 KiB row of B (bytes 512-2559, written from IN)
 * into OUT with rows 3 KiB apart, and checks every byte: each row's 2 KiB
 * in place, the 1 KiB between rows untouched.  RECT_WRONG: a byte
 * differs. */
static cl_int rect_read(cl_command_queue q, cl_mem b, const uint8_t *in,
                        uint8_t *out, int blocking)
{
    const size_t row = 4096, host_row = 3072, width = 2048, skip = 512;
    size_t rows = bytes / row;
    size_t origin[3] = {skip, 0, 0}, host[3] = {0, 0, 0},
           region[3] = {width, rows, 1};
    cl_int err;

    if (!rows)
        return CL_SUCCESS;
    memset(out, 0xa5, rows * host_row);
    err = clEnqueueReadBufferRect(q, b, blocking ? CL_TRUE : CL_FALSE, origin,
                                  host, region, row, 0, host_row, 0, out, 0,
                                  NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    if (err != CL_SUCCESS)
        return err;
    for (size_t y = 0; y < rows; y++) {
        if (memcmp(out + y * host_row, in + y * row + skip, width) != 0)
            return RECT_WRONG;
        for (size_t x = width; x < host_row; x++)
            if (out[y * host_row + x] != 0xa5)
                return RECT_WRONG;
    }
    return CL_SUCCESS;
}

/* Writes a 1024 x 1024 RGBA8 image (4 MiB) from IN, reads it back into
 * OUT with rows 4 KiB + 256 bytes apart, and checks every byte: each row
 * in place, the 256 bytes between rows untouched.  RECT_WRONG: a byte
 * differs; CL_IMAGE_FORMAT_NOT_SUPPORTED and the like: no such image. */
static cl_int image_read(cl_context ctx, cl_command_queue q,
                         const uint8_t *in, uint8_t *out, int blocking)
{
    const size_t side = 1024, row = side * 4, host_row = row + 256;
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D,
                          .image_width = side, .image_height = side};
    size_t origin[3] = {0, 0, 0}, region[3] = {side, side, 1};
    cl_int err;

    if (bytes < host_row * side)
        return CL_INVALID_VALUE;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL,
                               &err);
    if (!img)
        return err;
    memset(out, 0xa5, host_row * side);
    err = clEnqueueWriteImage(q, img, CL_TRUE, origin, region, 0, 0, in, 0,
                              NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadImage(q, img, blocking ? CL_TRUE : CL_FALSE,
                                 origin, region, host_row, 0, out, 0, NULL,
                                 NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    clReleaseMemObject(img);
    for (size_t y = 0; err == CL_SUCCESS && y < side; y++) {
        if (memcmp(out + y * host_row, in + y * row, row) != 0)
            return RECT_WRONG;
        for (size_t x = row; x < host_row; x++)
            if (out[y * host_row + x] != 0xa5)
                return RECT_WRONG;
    }
    return err;
}

/* Round R's rectangle (RECT) or image read, checked: 0, or the exit
 * status (1: failed, 2: wrong bytes). */
static int shaped_read(cl_context ctx, cl_command_queue q, cl_mem buf,
                       const uint8_t *in, uint8_t *out, unsigned r, int rect)
{
    const char *what = rect ? "rectangle" : "image";
    cl_int err = rect ? rect_read(q, buf, in, out, r % 2)
                      : image_read(ctx, q, in, out, r % 2);

    if (err == RECT_WRONG) {
        printf("WRONG bulk_loop: round %u: a %s read back different "
               "bytes\n", r, what);
        return 2;
    }
    if (err != CL_SUCCESS) {
        printf("FAIL bulk_loop: round %u: %s: error %d\n", r, what, err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
    int go_on = argc > 2 && strcmp(argv[2], "go-on") == 0;
    /* "nonblocking": every read is, then its event is waited for. */
    int nonblocking = argc > 4 && strcmp(argv[4], "nonblocking") == 0;
    /* "rect": each round also reads a rectangle (rect_read). */
    int rect = argc > 4 && strcmp(argv[4], "rect") == 0;
    /* "image": each round also writes and reads an image (image_read). */
    int image = argc > 4 && strcmp(argv[4], "image") == 0;
    unsigned failed = 0;

    if (argc > 3)
        bytes = (size_t)strtoull(argv[3], NULL, 10) / 8 * 8;
    if (!bytes)
        bytes = 8;
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    uint8_t *in = malloc(bytes), *out = malloc(bytes);

    if (!in || !out || clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) !=
            CL_SUCCESS) {
        printf("FAIL bulk_loop: no device\n");
        return 1;
    }
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q =
        ctx ? clCreateCommandQueueWithProperties(ctx, device, NULL, &err)
            : NULL;
    cl_mem buf = q ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err)
                   : NULL;
    if (!buf) {
        printf("FAIL bulk_loop: setup: %d\n", err);
        return 1;
    }
    /* A buffer made with its contents (CL_MEM_COPY_HOST_PTR: they travel
     * with the creation), read back whole. */
    pattern(in, bytes, 12345);
    cl_mem made = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 bytes, in, &err);
    if (made)
        err = read_all(q, made, !nonblocking, bytes, out);
    if (!made || err != CL_SUCCESS) {
        printf("FAIL bulk_loop: a buffer made with contents: %d\n", err);
        return 1;
    }
    if (memcmp(in, out, bytes) != 0) {
        printf("WRONG bulk_loop: a buffer made with contents reads back "
               "different bytes\n");
        return 2;
    }
    clReleaseMemObject(made);
    for (unsigned r = 0; r < rounds; r++) {
        pattern(in, bytes, r);
        memset(out, 0, bytes);
        err = clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, in, 0, NULL,
                                   NULL);
        if (err == CL_SUCCESS) {
            /* Odd rounds read without blocking, then wait. */
            err = read_all(q, buf, !nonblocking && r % 2 == 0, bytes, out);
            if (err == CL_SUCCESS)
                err = clFinish(q);
        }
        if (err != CL_SUCCESS && go_on) {
            printf("round %u failed: error %d\n", r, err);
            fflush(stdout);
            failed++;
            continue;
        }
        if (err != CL_SUCCESS) {
            printf("FAIL bulk_loop: round %u: error %d\n", r, err);
            return 1;
        }
        if (memcmp(in, out, bytes) != 0) {
            printf("WRONG bulk_loop: round %u: the bytes read back differ\n",
                   r);
            return 2;
        }
        if ((rect || image) &&
            (err = shaped_read(ctx, q, buf, in, out, r, rect)) != 0)
            return err;
        printf("round %u ok\n", r);
        fflush(stdout);
    }
    printf("PASS bulk_loop: %u rounds of %zu bytes (%u failed)\n", rounds,
           bytes, failed);
    return 0;
}
