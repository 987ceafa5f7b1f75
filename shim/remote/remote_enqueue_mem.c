/* The remote backend's memory commands: reads, writes, copies and fills of
 * buffers and images, streamed in chunks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostmem.h"
#include "proto/log.h"
#include "remote.h"
#include "remote_lanes.h"

/* --- memory commands */

/* A memory command being built: the message, its queue, and room for the
 * origins and region the message points at. */
struct cmd {
    Crane__MemCommand c;
    cl_command_queue q;
    uint64_t src_origin[3], dst_origin[3], region[3];
};

static void cmd_init(struct cmd *x, cl_command_queue q, Crane__MemOp op,
                     cl_mem src, cl_mem dst)
{
    *x = (struct cmd){.c = CRANE__MEM_COMMAND__INIT, .q = q};
    x->c.queue = RC_ID(q);
    x->c.op = op;
    x->c.src = RC_ID(src);
    x->c.dst = RC_ID(dst);
}

static uint64_t *copy3(uint64_t out[3], const size_t *in)
{
    for (int i = 0; i < 3; i++)
        out[i] = in[i];
    return out;
}

/* The 3-element origins (NULL: the op has none on that side) and region. */
static void cmd_geom(struct cmd *x, const size_t *src_origin,
                     const size_t *dst_origin, const size_t *region)
{
    if (src_origin) {
        x->c.src_origin = copy3(x->src_origin, src_origin);
        x->c.n_src_origin = 3;
    }
    if (dst_origin) {
        x->c.dst_origin = copy3(x->dst_origin, dst_origin);
        x->c.n_dst_origin = 3;
    }
    x->c.region = copy3(x->region, region);
    x->c.n_region = 3;
}

/* Sends X with its wait list and event; reads wait for their bytes in DST
 * (or leave them to arrive later when DETACHED). */
static cl_int mem_command(struct cmd *x, cl_uint n, const cl_event *wl,
                          cl_event *ev, const void *bulk, size_t bulk_len,
                          void *dst, size_t dst_len, bool detached)
{
    Crane__MemCommand *c = &x->c;
    struct rc_ids w;
    struct rc_obj *e;
    /* The proxy answers these once the device did them. */
    bool answered_done = (dst && !detached) || (c->host_mem && c->blocking);
    cl_int err = answered_done ? rc_wait_before_blocking(x->q, n, wl)
                               : CL_SUCCESS;

    if (err == CL_SUCCESS)
        err = rc_ids_of(&w, n, wl);

    if (err != CL_SUCCESS)
        return err;
    if ((err = rc_event_for(ev, &e)) != CL_SUCCESS) {
        rc_ids_done(&w);
        return err;
    }
    rc_touch(x->q);
    c->wait = w.v;
    c->n_wait = w.n;
    c->event = e ? e->id : 0;
    c->bulk_len = bulk_len;
    RC_MSG(m, mem_command, MEM_COMMAND, c);
    if (!dst && !(c->host_mem && c->blocking)) {
        /* Over TCP, big bytes take the lanes where there are some. */
        err = shim_lanes_fit(bulk_len) ? shim_lanes_write(&m, bulk, bulk_len)
                                       : shim_remote_send(&m, bulk, bulk_len);
    } else if (detached) {
        err = shim_remote_call_detached(&m, dst, dst_len);
    } else if ((c->op == CRANE__MEM_OP__MEM_READ ||
                c->op == CRANE__MEM_OP__MEM_READ_RECT ||
                c->op == CRANE__MEM_OP__MEM_READ_IMAGE) &&
               shim_lanes_fit(dst_len)) {
        /* A buffer's bytes, or a rectangle's or image's packed by the
         * proxy (read_packed spreads them). */
        err = shim_lanes_read(&m, dst, dst_len);
    } else {
        struct rc_reply r;
        err = shim_remote_call(&m, NULL, 0, dst, dst_len, &r);
        shim_remote_reply_free(&r);
    }
    rc_ids_done(&w);
    return rc_event_done(err, ev, e);
}

/* A command that moves no bytes between the program and the proxy. */
static cl_int device_command(struct cmd *x, cl_uint n, const cl_event *wl,
                             cl_event *ev)
{
    return mem_command(x, n, wl, ev, NULL, 0, NULL, 0, false);
}

/* Whether SIZE bytes at PTR lie wholly in the host-memory region the
 * proxy took (hostmem.h): their offset in *OFF. */
static bool in_host_memory(const void *ptr, size_t size, uint64_t *off)
{
    return size && shim_remote_host_on() && shim_hostmem_find(ptr, size, off);
}

/* Whether a write may go in place.  A blocking one in place returns once
 * the device has the bytes, after the work queued before it; a copied one
 * returns once they are copied, which is all OpenCL asks.  While user
 * events are unset, work ahead may wait for one that this very thread
 * sets only after the write returns (tests/integration/user_events.c):
 * then the bytes are copied, as they always were. */
static bool write_in_place(cl_bool blocking)
{
    return !blocking || !rc_user_events_unset();
}

/* A plain read or write of bytes in the host-memory region: the proxy
 * moves them between the device and the region in place, nobody copies
 * them.  Blocking: the proxy answers once the device is done with them
 * (a write's bytes may change, a read's are there); else the command's
 * event says so, as for the vendor's own. */
static cl_int host_command(struct cmd *x, uint64_t off, size_t bytes,
                           cl_bool blocking, cl_uint n, const cl_event *wl,
                           cl_event *ev)
{
    bool write = x->c.op == CRANE__MEM_OP__MEM_WRITE ||
                 x->c.op == CRANE__MEM_OP__MEM_WRITE_RECT;

    x->c.host_mem = true;
    x->c.host_offset = off;
    x->c.blocking = blocking ? true : false;
    cl_int err = mem_command(x, n, wl, ev, NULL, 0, NULL, 0, false);
    CRN_DEBUG("remote: %s of %zu bytes in place in host memory at %llu "
              "(%s): %d", write ? "write" : "read", bytes,
              (unsigned long long)off, blocking ? "blocking" : "non-blocking",
              err);
    if (err == CL_SUCCESS)
        shim_remote_count_host(bytes);
    return err;
}

/* Writes SIZE bytes at OFFSET of DST in chunks, the wait list on the first
 * and the event on the last, so the proxy copies one chunk to the device
 * while the next is on the wire. */
static cl_int write_chunks(cl_command_queue q, cl_mem dst, size_t offset,
                           size_t size, const void *src, cl_uint n,
                           const cl_event *wl, cl_event *ev)
{
    size_t chunk = shim_lanes_fit(size) ? shim_lanes_chunk()
                                        : shim_remote_chunk(),
           done = 0;
    cl_int err = CL_SUCCESS;

    shim_lanes_write_begin();
    do {
        size_t len = size - done < chunk ? size - done : chunk;
        bool last = done + len == size;
        struct cmd x;
        cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE, NULL, dst);
        x.c.dst_offset = offset + done;
        x.c.size = len;
        err = mem_command(&x, done ? 0 : n, done ? NULL : wl, last ? ev : NULL,
                          (const char *)src + done, len, NULL, 0, false);
        done += len;
    } while (err == CL_SUCCESS && done < size);
    return err;
}

/* The bytes are on their way when this returns (copied or written), so a
 * blocking write needs no round trip: later commands are ordered after it
 * and its errors come back at the next synchronisation.  Bytes in the
 * host-memory region are not copied: a blocking write of them waits for
 * the proxy's answer. */
cl_int CL_API_CALL rc_clEnqueueWriteBuffer(cl_command_queue q, cl_mem b,
                                           cl_bool blocking, size_t offset,
                                           size_t size, const void *ptr,
                                           cl_uint n, const cl_event *wl,
                                           cl_event *ev)
{
    uint64_t off;

    if (!ptr)
        return CL_INVALID_VALUE;
    if (write_in_place(blocking) && in_host_memory(ptr, size, &off)) {
        struct cmd x;
        cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE, NULL, b);
        x.c.dst_offset = offset;
        x.c.size = size;
        return host_command(&x, off, size, blocking, n, wl, ev);
    }
    return write_chunks(q, b, offset, size, ptr, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueReadBuffer(cl_command_queue q, cl_mem b,
                                          cl_bool blocking, size_t offset,
                                          size_t size, void *ptr, cl_uint n,
                                          const cl_event *wl, cl_event *ev)
{
    struct cmd x;
    uint64_t off;

    if (!ptr)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ, b, NULL);
    x.c.src_offset = offset;
    x.c.size = size;
    if (in_host_memory(ptr, size, &off))
        return host_command(&x, off, size, blocking, n, wl, ev);
    /* Over TCP a big non-blocking read takes the lanes as a blocking one:
     * OpenCL lets it be done when it returns, and its event is then
     * complete with every piece in place (or the call fails, never
     * success over partial bytes).  Not while user events are unset:
     * work ahead may wait for one this thread sets only after the read
     * returns (tests/integration/user_events.c). */
    if (!blocking && shim_lanes_fit(size) && !rc_user_events_unset())
        blocking = CL_TRUE;
    x.c.blocking = blocking;
    return mem_command(&x, n, wl, ev, NULL, 0, ptr, size, !blocking);
}

/* Host-side layout of a rect or image transfer. */
struct host_layout {
    size_t row, slice; /* the program's pitches */
    size_t row_bytes, rows, slices;
};

static void pack(unsigned char *out, const unsigned char *in,
                 const struct host_layout *l)
{
    for (size_t z = 0; z < l->slices; z++)
        for (size_t y = 0; y < l->rows; y++)
            memcpy(out + (z * l->rows + y) * l->row_bytes,
                   in + z * l->slice + y * l->row, l->row_bytes);
}

static void unpack(unsigned char *out, const unsigned char *in,
                   const struct host_layout *l)
{
    for (size_t z = 0; z < l->slices; z++)
        for (size_t y = 0; y < l->rows; y++)
            memcpy(out + z * l->slice + y * l->row,
                   in + (z * l->rows + y) * l->row_bytes, l->row_bytes);
}

static struct host_layout layout(const size_t *region, size_t elem, size_t row,
                                 size_t slice)
{
    struct host_layout l;
    l.row_bytes = region[0] * elem;
    l.rows = region[1];
    l.slices = region[2];
    l.row = row ? row : l.row_bytes;
    l.slice = slice ? slice : l.row * l.rows;
    return l;
}

/* A read into a packed bounce buffer, then spread with the host pitches.
 * Non-blocking reads of this kind are done blocking. */
static cl_int read_packed(struct cmd *x, const struct host_layout *l,
                          void *ptr, cl_uint n, const cl_event *wl,
                          cl_event *ev)
{
    size_t len = l->row_bytes * l->rows * l->slices;
    unsigned char *tmp = malloc(len ? len : 1);

    if (!tmp)
        return CL_OUT_OF_HOST_MEMORY;
    x->c.blocking = true;
    cl_int err = mem_command(x, n, wl, ev, NULL, 0, tmp, len, false);
    if (err == CL_SUCCESS)
        unpack(ptr, tmp, l);
    free(tmp);
    return err;
}

static cl_int write_packed(struct cmd *x, const struct host_layout *l,
                           const void *ptr, cl_uint n, const cl_event *wl,
                           cl_event *ev)
{
    size_t len = l->row_bytes * l->rows * l->slices;
    unsigned char *tmp = malloc(len ? len : 1);

    if (!tmp)
        return CL_OUT_OF_HOST_MEMORY;
    pack(tmp, ptr, l);
    cl_int err = mem_command(x, n, wl, ev, tmp, len, NULL, 0, false);
    free(tmp);
    return err;
}

/* Where a rect transfer starts in the program's memory. */
static size_t host_offset(const size_t *origin, const struct host_layout *l)
{
    return origin[2] * l->slice + origin[1] * l->row + origin[0];
}

/* A rect transfer whose rows at AT (laid out as L) lie wholly in the
 * host-memory region: sent with the offset and the host pitches, in
 * place as a plain one.  1: not so (the packed path takes it). */
static cl_int rect_in_place(struct cmd *x, const void *at,
                            const struct host_layout *l, cl_bool blocking,
                            cl_uint n, const cl_event *wl, cl_event *ev)
{
    size_t span, a, b;
    uint64_t off;

    if (!l->row_bytes || !l->rows || !l->slices ||
        __builtin_mul_overflow(l->slices - 1, l->slice, &a) ||
        __builtin_mul_overflow(l->rows - 1, l->row, &b) ||
        __builtin_add_overflow(a, b, &span) ||
        __builtin_add_overflow(span, l->row_bytes, &span) ||
        !in_host_memory(at, span, &off))
        return 1;
    x->c.host_row_pitch = l->row;
    x->c.host_slice_pitch = l->slice;
    return host_command(x, off, l->row_bytes * l->rows * l->slices, blocking,
                        n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueReadBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *buf_origin,
    const size_t *host_origin, const size_t *region, size_t buf_row,
    size_t buf_slice, size_t host_row, size_t host_slice, void *ptr, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!ptr || !buf_origin || !host_origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, 1, host_row, host_slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ_RECT, b, NULL);
    cmd_geom(&x, buf_origin, NULL, region);
    x.c.src_row_pitch = buf_row;
    x.c.src_slice_pitch = buf_slice;
    char *at = (char *)ptr + host_offset(host_origin, &l);
    cl_int err = rect_in_place(&x, at, &l, blocking, n, wl, ev);
    if (err != 1)
        return err;
    return read_packed(&x, &l, at, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueWriteBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *buf_origin,
    const size_t *host_origin, const size_t *region, size_t buf_row,
    size_t buf_slice, size_t host_row, size_t host_slice, const void *ptr,
    cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!ptr || !buf_origin || !host_origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, 1, host_row, host_slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE_RECT, NULL, b);
    cmd_geom(&x, NULL, buf_origin, region);
    x.c.dst_row_pitch = buf_row;
    x.c.dst_slice_pitch = buf_slice;
    const char *at = (const char *)ptr + host_offset(host_origin, &l);
    cl_int err = write_in_place(blocking)
                     ? rect_in_place(&x, at, &l, blocking, n, wl, ev)
                     : 1;
    if (err != 1)
        return err;
    return write_packed(&x, &l, at, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src,
                                          cl_mem dst, size_t src_off,
                                          size_t dst_off, size_t size,
                                          cl_uint n, const cl_event *wl,
                                          cl_event *ev)
{
    struct cmd x;

    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY, src, dst);
    x.c.src_offset = src_off;
    x.c.dst_offset = dst_off;
    x.c.size = size;
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueCopyBufferRect(
    cl_command_queue q, cl_mem src, cl_mem dst, const size_t *src_origin,
    const size_t *dst_origin, const size_t *region, size_t src_row,
    size_t src_slice, size_t dst_row, size_t dst_slice, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!src_origin || !dst_origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY_RECT, src, dst);
    cmd_geom(&x, src_origin, dst_origin, region);
    x.c.src_row_pitch = src_row;
    x.c.src_slice_pitch = src_slice;
    x.c.dst_row_pitch = dst_row;
    x.c.dst_slice_pitch = dst_slice;
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueFillBuffer(cl_command_queue q, cl_mem b,
                                          const void *pattern,
                                          size_t pattern_size, size_t offset,
                                          size_t size, cl_uint n,
                                          const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!pattern || !pattern_size || pattern_size > 128)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_FILL, NULL, b);
    x.c.dst_offset = offset;
    x.c.size = size;
    x.c.pattern.data = (uint8_t *)pattern;
    x.c.pattern.len = pattern_size;
    return device_command(&x, n, wl, ev);
}

size_t rc_elem_of(cl_mem image)
{
    const struct rc_mem *m = (const void *)image;
    return m && m->elem ? m->elem : 1;
}

cl_int CL_API_CALL rc_clEnqueueReadImage(cl_command_queue q, cl_mem image,
                                         cl_bool blocking,
                                         const size_t *origin,
                                         const size_t *region, size_t row,
                                         size_t slice, void *ptr, cl_uint n,
                                         const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, rc_elem_of(image), row, slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ_IMAGE, image, NULL);
    cmd_geom(&x, origin, NULL, region);
    return read_packed(&x, &l, ptr, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueWriteImage(
    cl_command_queue q, cl_mem image, cl_bool blocking, const size_t *origin,
    const size_t *region, size_t row, size_t slice, const void *ptr, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, rc_elem_of(image), row, slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE_IMAGE, NULL, image);
    cmd_geom(&x, NULL, origin, region);
    return write_packed(&x, &l, ptr, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueFillImage(cl_command_queue q, cl_mem image,
                                         const void *color,
                                         const size_t *origin,
                                         const size_t *region, cl_uint n,
                                         const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!color || !origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_FILL_IMAGE, NULL, image);
    cmd_geom(&x, NULL, origin, region);
    x.c.pattern.data = (uint8_t *)color;
    x.c.pattern.len = 16;
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueCopyImage(cl_command_queue q, cl_mem src,
                                         cl_mem dst, const size_t *src_origin,
                                         const size_t *dst_origin,
                                         const size_t *region, cl_uint n,
                                         const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!src_origin || !dst_origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY_IMAGE, src, dst);
    cmd_geom(&x, src_origin, dst_origin, region);
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueCopyImageToBuffer(
    cl_command_queue q, cl_mem src, cl_mem dst, const size_t *src_origin,
    const size_t *region, size_t dst_off, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    struct cmd x;

    if (!src_origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER, src, dst);
    cmd_geom(&x, src_origin, NULL, region);
    x.c.dst_offset = dst_off;
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueCopyBufferToImage(
    cl_command_queue q, cl_mem src, cl_mem dst, size_t src_off,
    const size_t *dst_origin, const size_t *region, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!dst_origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE, src, dst);
    cmd_geom(&x, NULL, dst_origin, region);
    x.c.src_offset = src_off;
    return device_command(&x, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueMigrateMemObjects(
    cl_command_queue q, cl_uint n_objs, const cl_mem *objs,
    cl_mem_migration_flags flags, cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;
    uint64_t ids[256];

    if (!n_objs || !objs || n_objs > 256)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n_objs; i++)
        ids[i] = RC_ID(objs[i]);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_MIGRATE, NULL, NULL);
    x.c.objects = ids;
    x.c.n_objects = n_objs;
    x.c.flags = flags;
    return device_command(&x, n, wl, ev);
}
