/* Bytes of memory objects the host may not read or write, moved through
 * the device.
 *
 * The vendor's objects carry the program's own host access flags
 * (CL_MEM_HOST_WRITE_ONLY, HOST_READ_ONLY, HOST_NO_ACCESS, or a parent's),
 * so that whatever the vendor says about the program's reads, writes and
 * maps is what the program sees (mem.c).  The shim must still move every
 * byte of such an object at a switch, a pre-copy or a map into its own
 * memory: it copies between the object and an unrestricted buffer on the
 * device (clEnqueueCopyBuffer, clEnqueueCopyImageToBuffer,
 * clEnqueueCopyBufferToImage) and reads or writes that one.  The
 * unrestricted buffer holds at most HOSTCOPY_CHUNK bytes (or one image
 * row), so a large object never needs its size again in device memory:
 * the copy goes chunk by chunk on one in-order queue, each chunk's device
 * copy ordered before (reading) or after (writing) its host copy.
 *
 * Buffers of a context with pinned staging go through the staging slots
 * (staging.c, each slot with its own unrestricted twin, pipelined);
 * otherwise through one bounce buffer per context, kept for the switch and
 * released by shim_copies_drop_all() before the vendor goes.  A program's
 * map (map.c) gets a bounce buffer of its own, released once its commands
 * are done, since program threads may map at the same time.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "proto/log.h"
#include "shim.h"

#define HOSTCOPY_CHUNK (8u << 20)
#define BOUNCE_CONTEXTS 16

void shim_image_region(const struct shim_mem *m, size_t region[3]);
size_t shim_image_row_bytes(const struct shim_mem *m);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct bounce {
    void *ctx;
    cl_mem buf;
    size_t size;
} bounces[BOUNCE_CONTEXTS];
static size_t n_bounces;

static cl_mem make_buffer(void *ctx, size_t size, cl_int *err)
{
    return VENDOR(ctx)->clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL,
                                       err);
}

/* The switch's bounce buffer of CTX, at least NEED bytes: NULL (logged)
 * if none can be made. */
static cl_mem bounce_for(void *ctx, size_t need)
{
    struct bounce *b = NULL;
    cl_int err = CL_SUCCESS;
    cl_mem buf = NULL;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_bounces && !b; i++)
        if (bounces[i].ctx == ctx)
            b = &bounces[i];
    if (!b && n_bounces < BOUNCE_CONTEXTS) {
        b = &bounces[n_bounces++];
        *b = (struct bounce){.ctx = ctx};
    }
    if (b && b->size < need) {
        /* Commands queued on the old one keep it alive until done. */
        if (b->buf)
            VENDOR(b->buf)->clReleaseMemObject(b->buf);
        b->buf = make_buffer(ctx, need, &err);
        b->size = b->buf ? need : 0;
    }
    if (b)
        buf = b->buf;
    pthread_mutex_unlock(&lock);
    if (!buf)
        CRN_ERROR("hostcopy: no %zu-byte device buffer to move an object "
                  "the host may not access: %d", need, err);
    return buf;
}

void shim_copies_drop_all(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_bounces; i++)
        if (bounces[i].buf)
            VENDOR(bounces[i].buf)->clReleaseMemObject(bounces[i].buf);
    n_bounces = 0;
    pthread_mutex_unlock(&lock);
    shim_staging_drop_all();
}

static size_t chunk_for(size_t len)
{
    return len < HOSTCOPY_CHUNK ? len : HOSTCOPY_CHUNK;
}

/* [off, off+len) of MEM into DST through BOUNCE (BSIZE bytes) on the
 * in-order queue Q; the first copy waits on WAIT, LAST (if any) gets the
 * final read's event. */
static cl_int read_chunks(cl_command_queue q, cl_mem bounce, size_t bsize,
                          cl_mem mem, size_t off, size_t len, void *dst,
                          cl_uint n_wait, const cl_event *wait,
                          cl_event *last)
{
    cl_int err;

    /* At least one copy: a zero size is the vendor's to refuse. */
    do {
        size_t n = len < bsize ? len : bsize;
        err = VENDOR(q)->clEnqueueCopyBuffer(q, mem, bounce, off, 0, n,
                                             n_wait, wait, NULL);
        n_wait = 0;
        wait = NULL;
        if (err == CL_SUCCESS)
            err = VENDOR(q)->clEnqueueReadBuffer(
                q, bounce, CL_FALSE, 0, n, dst, 0, NULL,
                len == n ? last : NULL);
        dst = (char *)dst + n;
        off += n;
        len -= n;
    } while (len > 0 && err == CL_SUCCESS);
    return err;
}

/* Through the context's pinned chunks, or its bounce buffer. */
static enum shim_path bounce_path(void *ctx)
{
    struct shim_path_ask a = {.move = SHIM_MOVE_BOUNCE,
                              .staging = shim_staging_has(ctx)};

    return shim_path_choose(&a);
}

int shim_hostcopy_read(cl_command_queue q, void *ctx, cl_mem mem, size_t off,
                       size_t len, void *dst)
{
    cl_mem bounce;
    cl_int err;

    if (len == 0)
        return 0;
    if (bounce_path(ctx) == SHIM_PATH_BOUNCE_STAGED)
        return shim_staging_read_via_device(q, ctx, mem, off, len, dst) < 0
                   ? -EIO
                   : 0;
    if (!(bounce = bounce_for(ctx, chunk_for(len))))
        return -ENOMEM;
    err = read_chunks(q, bounce, chunk_for(len), mem, off, len, dst, 0, NULL,
                      NULL);
    if (err != CL_SUCCESS) {
        CRN_ERROR("hostcopy: reading %zu bytes at %zu through the device "
                  "failed: %d", len, off, err);
        return -EIO;
    }
    return 0;
}

int shim_hostcopy_write(cl_command_queue q, void *ctx, cl_mem mem,
                        size_t off, size_t len, const void *src)
{
    cl_mem bounce;
    cl_int err = CL_SUCCESS;

    if (len == 0)
        return 0;
    if (bounce_path(ctx) == SHIM_PATH_BOUNCE_STAGED)
        return shim_staging_write_via_device(q, ctx, mem, off, len, src) < 0
                   ? -EIO
                   : 0;
    size_t bsize = chunk_for(len);
    if (!(bounce = bounce_for(ctx, bsize)))
        return -ENOMEM;
    for (size_t at = 0; at < len && err == CL_SUCCESS; at += bsize) {
        size_t n = len - at < bsize ? len - at : bsize;
        err = VENDOR(q)->clEnqueueWriteBuffer(q, bounce, CL_FALSE, 0, n,
                                              (const char *)src + at, 0,
                                              NULL, NULL);
        if (err == CL_SUCCESS)
            err = VENDOR(q)->clEnqueueCopyBuffer(q, bounce, mem, 0, off + at,
                                                 n, 0, NULL, NULL);
    }
    if (err != CL_SUCCESS) {
        CRN_ERROR("hostcopy: writing %zu bytes at %zu through the device "
                  "failed: %d", len, off, err);
        return -EIO;
    }
    return 0;
}

/* Rows of an image per chunk, and the bounce buffer's size for them. */
static size_t image_rows_per_chunk(const struct shim_mem *m, size_t *bsize)
{
    size_t row = shim_image_row_bytes(m), region[3];

    shim_image_region(m, region);
    size_t rows = HOSTCOPY_CHUNK / row ? HOSTCOPY_CHUNK / row : 1;
    if (rows > region[1])
        rows = region[1];
    *bsize = rows * row;
    return rows;
}

int shim_hostcopy_read_image(cl_command_queue q, void *ctx,
                             const struct shim_mem *m, cl_mem mem, void *dst,
                             size_t row_step, size_t slice_step)
{
    size_t region[3], row = shim_image_row_bytes(m), bsize;
    size_t per = image_rows_per_chunk(m, &bsize);
    cl_mem bounce = bounce_for(ctx, bsize);
    cl_int err = CL_SUCCESS;

    if (!bounce)
        return -ENOMEM;
    shim_image_region(m, region);
    for (size_t z = 0; z < region[2] && err == CL_SUCCESS; z++)
        for (size_t y = 0; y < region[1] && err == CL_SUCCESS; y += per) {
            size_t n = region[1] - y < per ? region[1] - y : per;
            size_t origin[3] = {0, y, z}, part[3] = {region[0], n, 1};
            char *to = (char *)dst + z * slice_step + y * row_step;
            err = VENDOR(q)->clEnqueueCopyImageToBuffer(q, mem, bounce, origin,
                                                        part, 0, 0, NULL,
                                                        NULL);
            if (err != CL_SUCCESS)
                break;
            if (row_step == row) {
                err = VENDOR(q)->clEnqueueReadBuffer(q, bounce, CL_FALSE, 0,
                                                     n * row, to, 0, NULL,
                                                     NULL);
            } else {
                /* The program's memory behind the image has its pitch. */
                size_t zero[3] = {0, 0, 0}, rect[3] = {row, n, 1};
                err = VENDOR(q)->clEnqueueReadBufferRect(
                    q, bounce, CL_FALSE, zero, zero, rect, row, 0, row_step,
                    0, to, 0, NULL, NULL);
            }
        }
    if (err != CL_SUCCESS) {
        CRN_ERROR("hostcopy: reading a %zu-byte image through the device "
                  "failed: %d", m->size, err);
        return -EIO;
    }
    return 0;
}

int shim_hostcopy_write_image(cl_command_queue q, void *ctx,
                              const struct shim_mem *m, cl_mem mem,
                              const void *src)
{
    size_t region[3], row = shim_image_row_bytes(m), bsize;
    size_t per = image_rows_per_chunk(m, &bsize);
    cl_mem bounce = bounce_for(ctx, bsize);
    cl_int err = CL_SUCCESS;

    if (!bounce)
        return -ENOMEM;
    shim_image_region(m, region);
    for (size_t z = 0; z < region[2] && err == CL_SUCCESS; z++)
        for (size_t y = 0; y < region[1] && err == CL_SUCCESS; y += per) {
            size_t n = region[1] - y < per ? region[1] - y : per;
            size_t origin[3] = {0, y, z}, part[3] = {region[0], n, 1};
            const char *from =
                (const char *)src + (z * region[1] + y) * row;
            err = VENDOR(q)->clEnqueueWriteBuffer(q, bounce, CL_FALSE, 0,
                                                  n * row, from, 0, NULL,
                                                  NULL);
            if (err == CL_SUCCESS)
                err = VENDOR(q)->clEnqueueCopyBufferToImage(
                    q, bounce, mem, 0, origin, part, 0, NULL, NULL);
        }
    if (err != CL_SUCCESS) {
        CRN_ERROR("hostcopy: writing a %zu-byte image through the device "
                  "failed: %d", m->size, err);
        return -EIO;
    }
    return 0;
}

cl_int shim_hostcopy_read_image_events(cl_command_queue q, void *ctx,
                                       cl_mem mem, const size_t *origin,
                                       const size_t *region, size_t len,
                                       void *dst, cl_uint n_wait,
                                       const cl_event *wait, cl_event *last)
{
    cl_int err;
    cl_mem bounce = make_buffer(ctx, len ? len : 1, &err);

    if (!bounce)
        return err;
    /* Packed as the shim's own image mappings are (map.c). */
    err = VENDOR(q)->clEnqueueCopyImageToBuffer(q, mem, bounce, origin,
                                                region, 0, n_wait, wait,
                                                NULL);
    if (err == CL_SUCCESS)
        err = VENDOR(q)->clEnqueueReadBuffer(q, bounce, CL_FALSE, 0, len, dst,
                                             0, NULL, last);
    VENDOR(bounce)->clReleaseMemObject(bounce);
    return err;
}

cl_int shim_hostcopy_read_events(cl_command_queue q, void *ctx, cl_mem mem,
                                 size_t off, size_t len, void *dst,
                                 cl_uint n_wait, const cl_event *wait,
                                 cl_event *last)
{
    size_t bsize = chunk_for(len ? len : 1);
    cl_int err;
    cl_mem bounce = make_buffer(ctx, bsize, &err);

    if (!bounce)
        return err;
    err = read_chunks(q, bounce, bsize, mem, off, len, dst, n_wait, wait,
                      last);
    /* Released once the copies queued on it are done. */
    VENDOR(bounce)->clReleaseMemObject(bounce);
    return err;
}
