/* The remote backend's queue calls: memory commands (streamed in chunks),
 * maps, kernel arguments cached until the launch that carries them,
 * markers, barriers and synchronisation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "remote.h"

#define ID(h) ((h) ? ((const struct rc_obj *)(h))->id : 0)
#define MAX_WAIT 4096

struct rc_obj *shim_remote_event_new(void);
void shim_remote_event_drop(struct rc_obj *e);

/* A wait list as ids, on the stack when short. */
struct ids {
    uint64_t stack[32];
    uint64_t *v;
    size_t n;
};

static cl_int ids_of(struct ids *x, cl_uint n, const cl_event *events)
{
    x->v = x->stack;
    x->n = n;
    if ((n && !events) || (!n && events) || n > MAX_WAIT)
        return CL_INVALID_EVENT_WAIT_LIST;
    if (n > 32 && !(x->v = malloc(n * sizeof(*x->v))))
        return CL_OUT_OF_HOST_MEMORY;
    for (cl_uint i = 0; i < n; i++)
        x->v[i] = ID(events[i]);
    return CL_SUCCESS;
}

static void ids_done(struct ids *x)
{
    if (x->v != x->stack)
        free(x->v);
}

/* An event for the command if the program wants one. */
static cl_int event_for(cl_event *out, struct rc_obj **e)
{
    *e = NULL;
    if (!out)
        return CL_SUCCESS;
    *e = shim_remote_event_new();
    return *e ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
}

static cl_int event_done(cl_int err, cl_event *out, struct rc_obj *e)
{
    if (!e)
        return err;
    if (err == CL_SUCCESS)
        *out = (cl_event)e;
    else
        shim_remote_event_drop(e);
    return err;
}

/* Work went to Q: its next clFinish must ask the proxy. */
static void touch(cl_command_queue q)
{
    if (q)
        atomic_store_explicit(&((struct rc_queue *)q)->pending, true,
                              memory_order_relaxed);
}

/* --- synchronisation -------------------------------------------------------- */

static cl_int sync_call(Crane__SyncOp op, cl_command_queue q, cl_uint n,
                        const cl_event *events, cl_event *event, bool reply)
{
    Crane__Sync s = CRANE__SYNC__INIT;
    struct ids w;
    struct rc_obj *e;
    cl_int err = ids_of(&w, n, events);

    if (err != CL_SUCCESS)
        return err;
    if ((err = event_for(event, &e)) != CL_SUCCESS) {
        ids_done(&w);
        return err;
    }
    if (op == CRANE__SYNC_OP__SYNC_MARKER ||
        op == CRANE__SYNC_OP__SYNC_BARRIER)
        touch(q);
    s.op = op;
    s.queue = ID(q);
    s.events = w.v;
    s.n_events = w.n;
    s.event = e ? e->id : 0;
    RC_MSG(m, sync, SYNC, &s);
    if (reply) {
        struct rc_reply r;
        err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
        shim_remote_reply_free(&r);
    } else {
        err = shim_remote_send(&m, NULL, 0);
    }
    ids_done(&w);
    return event_done(err, event, e);
}

static cl_int CL_API_CALL rc_clFinish(cl_command_queue q)
{
    if (q && !atomic_exchange(&((struct rc_queue *)q)->pending, false))
        return shim_remote_take_deferred();
    return sync_call(CRANE__SYNC_OP__SYNC_FINISH, q, 0, NULL, NULL, true);
}

static cl_int CL_API_CALL rc_clFlush(cl_command_queue q)
{
    cl_int err = sync_call(CRANE__SYNC_OP__SYNC_FLUSH, q, 0, NULL, NULL,
                           false);
    return err == CL_SUCCESS ? shim_remote_flush() : err;
}

static cl_int CL_API_CALL rc_clWaitForEvents(cl_uint n, const cl_event *ev)
{
    if (!n || !ev)
        return CL_INVALID_VALUE;
    return sync_call(CRANE__SYNC_OP__SYNC_WAIT, NULL, n, ev, NULL, true);
}

static cl_int CL_API_CALL rc_clEnqueueMarkerWithWaitList(cl_command_queue q,
                                                         cl_uint n,
                                                         const cl_event *wl,
                                                         cl_event *ev)
{
    return sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
}

static cl_int CL_API_CALL rc_clEnqueueBarrierWithWaitList(cl_command_queue q,
                                                          cl_uint n,
                                                          const cl_event *wl,
                                                          cl_event *ev)
{
    return sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, n, wl, ev, false);
}

static cl_int CL_API_CALL rc_clEnqueueMarker(cl_command_queue q, cl_event *ev)
{
    if (!ev)
        return CL_INVALID_VALUE;
    return sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, 0, NULL, ev, false);
}

static cl_int CL_API_CALL rc_clEnqueueWaitForEvents(cl_command_queue q,
                                                    cl_uint n,
                                                    const cl_event *ev)
{
    if (!n || !ev)
        return CL_INVALID_VALUE;
    return sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, n, ev, NULL, false);
}

static cl_int CL_API_CALL rc_clEnqueueBarrier(cl_command_queue q)
{
    return sync_call(CRANE__SYNC_OP__SYNC_BARRIER, q, 0, NULL, NULL, false);
}

/* --- memory commands ------------------------------------------------------- */

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
    x->c.queue = ID(q);
    x->c.op = op;
    x->c.src = ID(src);
    x->c.dst = ID(dst);
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
    struct ids w;
    struct rc_obj *e;
    cl_int err = ids_of(&w, n, wl);

    if (err != CL_SUCCESS)
        return err;
    if ((err = event_for(ev, &e)) != CL_SUCCESS) {
        ids_done(&w);
        return err;
    }
    touch(x->q);
    c->wait = w.v;
    c->n_wait = w.n;
    c->event = e ? e->id : 0;
    c->bulk_len = bulk_len;
    RC_MSG(m, mem_command, MEM_COMMAND, c);
    if (!dst) {
        err = shim_remote_send(&m, bulk, bulk_len);
    } else if (detached) {
        err = shim_remote_call_detached(&m, dst, dst_len);
    } else {
        struct rc_reply r;
        err = shim_remote_call(&m, NULL, 0, dst, dst_len, &r);
        shim_remote_reply_free(&r);
    }
    ids_done(&w);
    return event_done(err, ev, e);
}

/* A command that moves no bytes between the program and the proxy. */
static cl_int device_command(struct cmd *x, cl_uint n, const cl_event *wl,
                             cl_event *ev)
{
    return mem_command(x, n, wl, ev, NULL, 0, NULL, 0, false);
}

/* Writes SIZE bytes at OFFSET of DST in chunks, the wait list on the first
 * and the event on the last, so the proxy copies one chunk to the device
 * while the next is on the wire. */
static cl_int write_chunks(cl_command_queue q, cl_mem dst, size_t offset,
                           size_t size, const void *src, cl_uint n,
                           const cl_event *wl, cl_event *ev)
{
    size_t chunk = shim_remote_chunk(), done = 0;
    cl_int err = CL_SUCCESS;

    do {
        size_t len = size - done < chunk ? size - done : chunk;
        bool last = done + len == size;
        struct cmd x;
        cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE, NULL, dst);
        x.c.dst_offset = offset + done;
        x.c.size = len;
        err = mem_command(&x, done ? 0 : n, done ? NULL : wl,
                          last ? ev : NULL, (const char *)src + done, len,
                          NULL, 0, false);
        done += len;
    } while (err == CL_SUCCESS && done < size);
    return err;
}

/* The bytes are on their way when this returns (copied or written), so a
 * blocking write needs no round trip: later commands are ordered after it
 * and its errors come back at the next synchronisation. */
static cl_int CL_API_CALL rc_clEnqueueWriteBuffer(
    cl_command_queue q, cl_mem b, cl_bool blocking, size_t offset,
    size_t size, const void *ptr, cl_uint n, const cl_event *wl, cl_event *ev)
{
    (void)blocking;
    if (!ptr)
        return CL_INVALID_VALUE;
    return write_chunks(q, b, offset, size, ptr, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueReadBuffer(
    cl_command_queue q, cl_mem b, cl_bool blocking, size_t offset,
    size_t size, void *ptr, cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!ptr)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ, b, NULL);
    x.c.src_offset = offset;
    x.c.size = size;
    x.c.blocking = blocking;
    return mem_command(&x, n, wl, ev, NULL, 0, ptr, size, !blocking);
}

/* Host-side layout of a rect or image transfer. */
struct host_layout {
    size_t row, slice;           /* the program's pitches */
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

static struct host_layout layout(const size_t *region, size_t elem,
                                 size_t row, size_t slice)
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

static cl_int CL_API_CALL rc_clEnqueueReadBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *buf_origin,
    const size_t *host_origin, const size_t *region, size_t buf_row,
    size_t buf_slice, size_t host_row, size_t host_slice, void *ptr,
    cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !buf_origin || !host_origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, 1, host_row, host_slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ_RECT, b, NULL);
    cmd_geom(&x, buf_origin, NULL, region);
    x.c.src_row_pitch = buf_row;
    x.c.src_slice_pitch = buf_slice;
    return read_packed(&x, &l, (char *)ptr + host_offset(host_origin, &l), n,
                       wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueWriteBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *buf_origin,
    const size_t *host_origin, const size_t *region, size_t buf_row,
    size_t buf_slice, size_t host_row, size_t host_slice, const void *ptr,
    cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !buf_origin || !host_origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, 1, host_row, host_slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE_RECT, NULL, b);
    cmd_geom(&x, NULL, buf_origin, region);
    x.c.dst_row_pitch = buf_row;
    x.c.dst_slice_pitch = buf_slice;
    return write_packed(&x, &l,
                        (const char *)ptr + host_offset(host_origin, &l), n,
                        wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueCopyBuffer(
    cl_command_queue q, cl_mem src, cl_mem dst, size_t src_off,
    size_t dst_off, size_t size, cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY, src, dst);
    x.c.src_offset = src_off;
    x.c.dst_offset = dst_off;
    x.c.size = size;
    return device_command(&x, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueCopyBufferRect(
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

static cl_int CL_API_CALL rc_clEnqueueFillBuffer(
    cl_command_queue q, cl_mem b, const void *pattern, size_t pattern_size,
    size_t offset, size_t size, cl_uint n, const cl_event *wl, cl_event *ev)
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

static size_t elem_of(cl_mem image)
{
    const struct rc_mem *m = (const void *)image;
    return m && m->elem ? m->elem : 1;
}

static cl_int CL_API_CALL rc_clEnqueueReadImage(
    cl_command_queue q, cl_mem image, cl_bool blocking, const size_t *origin,
    const size_t *region, size_t row, size_t slice, void *ptr, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, elem_of(image), row, slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_READ_IMAGE, image, NULL);
    cmd_geom(&x, origin, NULL, region);
    return read_packed(&x, &l, ptr, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueWriteImage(
    cl_command_queue q, cl_mem image, cl_bool blocking, const size_t *origin,
    const size_t *region, size_t row, size_t slice, const void *ptr,
    cl_uint n, const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    (void)blocking;
    if (!ptr || !origin || !region)
        return CL_INVALID_VALUE;
    struct host_layout l = layout(region, elem_of(image), row, slice);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_WRITE_IMAGE, NULL, image);
    cmd_geom(&x, NULL, origin, region);
    return write_packed(&x, &l, ptr, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueFillImage(
    cl_command_queue q, cl_mem image, const void *color,
    const size_t *origin, const size_t *region, cl_uint n,
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

static cl_int CL_API_CALL rc_clEnqueueCopyImage(
    cl_command_queue q, cl_mem src, cl_mem dst, const size_t *src_origin,
    const size_t *dst_origin, const size_t *region, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    struct cmd x;

    if (!src_origin || !dst_origin || !region)
        return CL_INVALID_VALUE;
    cmd_init(&x, q, CRANE__MEM_OP__MEM_COPY_IMAGE, src, dst);
    cmd_geom(&x, src_origin, dst_origin, region);
    return device_command(&x, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueCopyImageToBuffer(
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

static cl_int CL_API_CALL rc_clEnqueueCopyBufferToImage(
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

static cl_int CL_API_CALL rc_clEnqueueMigrateMemObjects(
    cl_command_queue q, cl_uint n_objs, const cl_mem *objs,
    cl_mem_migration_flags flags, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    struct cmd x;
    uint64_t ids[256];

    if (!n_objs || !objs || n_objs > 256)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n_objs; i++)
        ids[i] = ID(objs[i]);
    cmd_init(&x, q, CRANE__MEM_OP__MEM_MIGRATE, NULL, NULL);
    x.c.objects = ids;
    x.c.n_objects = n_objs;
    x.c.flags = flags;
    return device_command(&x, n, wl, ev);
}

/* --- maps ---------------------------------------------------------------------- */

/* A mapped region lives in client memory: the host pointer's own bytes
 * for CL_MEM_USE_HOST_PTR buffers, a fresh allocation otherwise; the map
 * reads it in (unless the program will overwrite it all), the unmap writes
 * it back if the program may have written. */
static void *map_alloc(struct rc_mem *m, size_t offset, size_t len,
                       bool *owned)
{
    *owned = false;
    if (m->host_ptr && !m->elem)
        return (char *)m->host_ptr + offset;
    *owned = true;
    return aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
}

static void map_record(struct rc_mem *m, struct rc_map *mp)
{
    pthread_mutex_lock(&m->lock);
    mp->next = m->maps;
    m->maps = mp;
    pthread_mutex_unlock(&m->lock);
}

static void *CL_API_CALL rc_clEnqueueMapBuffer(
    cl_command_queue q, cl_mem b, cl_bool blocking, cl_map_flags flags,
    size_t offset, size_t size, cl_uint n, const cl_event *wl, cl_event *ev,
    cl_int *errcode_ret)
{
    struct rc_mem *m = (void *)b;
    struct rc_map *mp = calloc(1, sizeof(*mp));
    cl_int err = CL_OUT_OF_HOST_MEMORY;

    (void)blocking;
    if (!mp || !(mp->ptr = map_alloc(m, offset, size, &mp->owned)))
        goto fail;
    mp->offset = offset;
    mp->size = size;
    mp->writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        err = sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else
        err = rc_clEnqueueReadBuffer(q, b, CL_TRUE, offset, size, mp->ptr, n,
                                     wl, ev);
    if (err != CL_SUCCESS)
        goto fail;
    map_record(m, mp);
    if (errcode_ret)
        *errcode_ret = CL_SUCCESS;
    return mp->ptr;
fail:
    if (mp && mp->owned)
        free(mp->ptr);
    free(mp);
    if (errcode_ret)
        *errcode_ret = err;
    return NULL;
}

static void *CL_API_CALL rc_clEnqueueMapImage(
    cl_command_queue q, cl_mem image, cl_bool blocking, cl_map_flags flags,
    const size_t *origin, const size_t *region, size_t *row_pitch,
    size_t *slice_pitch, cl_uint n, const cl_event *wl, cl_event *ev,
    cl_int *errcode_ret)
{
    struct rc_mem *m = (void *)image;
    struct rc_map *mp = NULL;
    cl_int err = CL_INVALID_VALUE;

    (void)blocking;
    if (!origin || !region || !row_pitch)
        goto fail;
    size_t row = region[0] * elem_of(image);
    size_t len = row * region[1] * region[2];
    err = CL_OUT_OF_HOST_MEMORY;
    if (!(mp = calloc(1, sizeof(*mp))) ||
        !(mp->ptr = map_alloc(m, 0, len, &mp->owned)))
        goto fail;
    mp->image = true;
    memcpy(mp->origin, origin, sizeof(mp->origin));
    memcpy(mp->region, region, sizeof(mp->region));
    mp->writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
    *row_pitch = row;
    if (slice_pitch)
        *slice_pitch = region[2] > 1 || region[1] > 1 ? row * region[1] : 0;
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        err = sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else
        err = rc_clEnqueueReadImage(q, image, CL_TRUE, origin, region, row,
                                    row * region[1], mp->ptr, n, wl, ev);
    if (err != CL_SUCCESS)
        goto fail;
    map_record(m, mp);
    if (errcode_ret)
        *errcode_ret = CL_SUCCESS;
    return mp->ptr;
fail:
    if (mp && mp->owned)
        free(mp->ptr);
    free(mp);
    if (errcode_ret)
        *errcode_ret = err;
    return NULL;
}

static cl_int CL_API_CALL rc_clEnqueueUnmapMemObject(cl_command_queue q,
                                                     cl_mem h, void *ptr,
                                                     cl_uint n,
                                                     const cl_event *wl,
                                                     cl_event *ev)
{
    struct rc_mem *m = (void *)h;
    struct rc_map *mp = NULL;
    cl_int err;

    pthread_mutex_lock(&m->lock);
    for (struct rc_map **pp = &m->maps; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&m->lock);
    if (!mp)
        return CL_INVALID_VALUE;
    if (!mp->writes)
        err = sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else if (mp->image)
        err = rc_clEnqueueWriteImage(q, h, CL_FALSE, mp->origin, mp->region,
                                     0, 0, mp->ptr, n, wl, ev);
    else
        err = rc_clEnqueueWriteBuffer(q, h, CL_FALSE, mp->offset, mp->size,
                                      mp->ptr, n, wl, ev);
    /* The bytes left with the call: the memory can go. */
    if (mp->owned)
        free(mp->ptr);
    free(mp);
    return err;
}

void shim_remote_mem_free(struct rc_mem *m)
{
    while (m->maps) {
        struct rc_map *mp = m->maps;
        m->maps = mp->next;
        if (mp->owned)
            free(mp->ptr);
        free(mp);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* --- kernel arguments and launches ------------------------------------------- */

static cl_int CL_API_CALL rc_clSetKernelArg(cl_kernel h, cl_uint index,
                                            size_t size, const void *value)
{
    struct rc_kernel *k = (void *)h;
    struct rc_obj *obj = NULL;

    if (index > 4096 || size > 65536)
        return CL_INVALID_ARG_INDEX;
    if (value && size == sizeof(void *))
        obj = shim_remote_by_addr(*(void *const *)value);
    pthread_mutex_lock(&k->lock);
    if (index >= k->n_args) {
        cl_uint n = index + 1 > 2 * k->n_args ? index + 1 : 2 * k->n_args;
        struct rc_arg *a = realloc(k->args, n * sizeof(*a));
        if (!a) {
            pthread_mutex_unlock(&k->lock);
            return CL_OUT_OF_HOST_MEMORY;
        }
        memset(a + k->n_args, 0, (n - k->n_args) * sizeof(*a));
        k->args = a;
        k->n_args = n;
    }
    struct rc_arg *a = &k->args[index];
    free(a->value);
    a->value = NULL;
    a->is_object = obj != NULL;
    a->is_local = !value;
    a->object = obj ? obj->id : 0;
    a->size = size;
    if (value && !obj && size) {
        if (!(a->value = malloc(size))) {
            pthread_mutex_unlock(&k->lock);
            return CL_OUT_OF_HOST_MEMORY;
        }
        memcpy(a->value, value, size);
    }
    if (!a->changed)
        k->n_changed++;
    a->changed = true;
    pthread_mutex_unlock(&k->lock);
    return CL_SUCCESS;
}

/* The changed arguments as messages; caller holds k->lock. */
static size_t collect_args(struct rc_kernel *k, Crane__KernelArg *store,
                           Crane__KernelArg **ptrs)
{
    size_t n = 0;

    for (cl_uint i = 0; i < k->n_args && n < k->n_changed; i++) {
        struct rc_arg *a = &k->args[i];
        if (!a->changed)
            continue;
        Crane__KernelArg ka = CRANE__KERNEL_ARG__INIT;
        ka.index = i;
        ka.is_object = a->is_object;
        ka.object = a->object;
        ka.is_local = a->is_local;
        ka.local_size = a->is_local ? a->size : 0;
        ka.value.data = a->value;
        ka.value.len = a->value ? a->size : 0;
        store[n] = ka;
        ptrs[n] = &store[n];
        n++;
    }
    return n;
}

static void args_sent(struct rc_kernel *k)
{
    for (cl_uint i = 0; i < k->n_args; i++)
        k->args[i].changed = false;
    k->n_changed = 0;
}

#define ARGS_ON_STACK 32

cl_int shim_remote_send_args(struct rc_kernel *k)
{
    Crane__KernelArg store[ARGS_ON_STACK], *ptrs[ARGS_ON_STACK];
    Crane__KernelArg *hs = NULL, **hp = NULL;
    cl_int err = CL_SUCCESS;

    pthread_mutex_lock(&k->lock);
    if (!k->n_changed)
        goto out;
    Crane__KernelArg *s = store, **p = ptrs;
    if (k->n_changed > ARGS_ON_STACK) {
        hs = malloc(k->n_changed * sizeof(*hs));
        hp = malloc(k->n_changed * sizeof(*hp));
        if (!hs || !hp) {
            err = CL_OUT_OF_HOST_MEMORY;
            goto out;
        }
        s = hs;
        p = hp;
    }
    Crane__SetKernelArgs sa = CRANE__SET_KERNEL_ARGS__INIT;
    sa.kernel = k->obj.id;
    sa.n_args = collect_args(k, s, p);
    sa.args = p;
    RC_MSG(m, set_kernel_args, SET_KERNEL_ARGS, &sa);
    err = shim_remote_send(&m, NULL, 0);
    if (err == CL_SUCCESS)
        args_sent(k);
out:
    pthread_mutex_unlock(&k->lock);
    free(hs);
    free(hp);
    return err;
}

static cl_int launch(cl_command_queue q, cl_kernel h, cl_uint dim,
                     const size_t *offset, const size_t *global,
                     const size_t *local, cl_uint n, const cl_event *wl,
                     cl_event *ev)
{
    struct rc_kernel *k = (void *)h;
    Crane__LaunchKernel lk = CRANE__LAUNCH_KERNEL__INIT;
    Crane__KernelArg store[ARGS_ON_STACK], *ptrs[ARGS_ON_STACK];
    Crane__KernelArg *hs = NULL, **hp = NULL;
    uint64_t off[3], gl[3], lo[3];
    struct ids w;
    struct rc_obj *e = NULL;
    cl_int err;

    if (dim < 1 || dim > 3)
        return CL_INVALID_WORK_DIMENSION;
    if (!global)
        return CL_INVALID_GLOBAL_WORK_SIZE;
    for (cl_uint i = 0; i < dim; i++) {
        off[i] = offset ? offset[i] : 0;
        gl[i] = global[i];
        lo[i] = local ? local[i] : 0;
    }
    if ((err = ids_of(&w, n, wl)) != CL_SUCCESS)
        return err;
    if ((err = event_for(ev, &e)) != CL_SUCCESS) {
        ids_done(&w);
        return err;
    }
    pthread_mutex_lock(&k->lock);
    Crane__KernelArg *s = store, **p = ptrs;
    if (k->n_changed > ARGS_ON_STACK) {
        hs = malloc(k->n_changed * sizeof(*hs));
        hp = malloc(k->n_changed * sizeof(*hp));
        if (!hs || !hp) {
            err = CL_OUT_OF_HOST_MEMORY;
            goto out;
        }
        s = hs;
        p = hp;
    }
    touch(q);
    lk.queue = ID(q);
    lk.kernel = k->obj.id;
    lk.work_dim = dim;
    lk.global_offset = off;
    lk.n_global_offset = offset ? dim : 0;
    lk.global_size = gl;
    lk.n_global_size = dim;
    lk.local_size = lo;
    lk.n_local_size = local ? dim : 0;
    lk.n_args = collect_args(k, s, p);
    lk.args = p;
    lk.wait = w.v;
    lk.n_wait = w.n;
    lk.event = e ? e->id : 0;
    RC_MSG(m, launch_kernel, LAUNCH_KERNEL, &lk);
    err = shim_remote_send(&m, NULL, 0);
    if (err == CL_SUCCESS)
        args_sent(k);
out:
    pthread_mutex_unlock(&k->lock);
    free(hs);
    free(hp);
    ids_done(&w);
    return event_done(err, ev, e);
}

static cl_int CL_API_CALL rc_clEnqueueNDRangeKernel(
    cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *offset,
    const size_t *global, const size_t *local, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    return launch(q, k, dim, offset, global, local, n, wl, ev);
}

static cl_int CL_API_CALL rc_clEnqueueTask(cl_command_queue q, cl_kernel k,
                                           cl_uint n, const cl_event *wl,
                                           cl_event *ev)
{
    size_t one = 1;
    return launch(q, k, 1, NULL, &one, &one, n, wl, ev);
}

/* --- this file's rows of the dispatch table --------------------------------- */

void shim_remote_enqueue_fill(struct _cl_icd_dispatch *t)
{
    t->clFinish = rc_clFinish;
    t->clFlush = rc_clFlush;
    t->clWaitForEvents = rc_clWaitForEvents;
    t->clEnqueueMarkerWithWaitList = rc_clEnqueueMarkerWithWaitList;
    t->clEnqueueBarrierWithWaitList = rc_clEnqueueBarrierWithWaitList;
    t->clEnqueueMarker = rc_clEnqueueMarker;
    t->clEnqueueWaitForEvents = rc_clEnqueueWaitForEvents;
    t->clEnqueueBarrier = rc_clEnqueueBarrier;
    t->clEnqueueReadBuffer = rc_clEnqueueReadBuffer;
    t->clEnqueueWriteBuffer = rc_clEnqueueWriteBuffer;
    t->clEnqueueReadBufferRect = rc_clEnqueueReadBufferRect;
    t->clEnqueueWriteBufferRect = rc_clEnqueueWriteBufferRect;
    t->clEnqueueCopyBuffer = rc_clEnqueueCopyBuffer;
    t->clEnqueueCopyBufferRect = rc_clEnqueueCopyBufferRect;
    t->clEnqueueFillBuffer = rc_clEnqueueFillBuffer;
    t->clEnqueueReadImage = rc_clEnqueueReadImage;
    t->clEnqueueWriteImage = rc_clEnqueueWriteImage;
    t->clEnqueueFillImage = rc_clEnqueueFillImage;
    t->clEnqueueCopyImage = rc_clEnqueueCopyImage;
    t->clEnqueueCopyImageToBuffer = rc_clEnqueueCopyImageToBuffer;
    t->clEnqueueCopyBufferToImage = rc_clEnqueueCopyBufferToImage;
    t->clEnqueueMigrateMemObjects = rc_clEnqueueMigrateMemObjects;
    t->clEnqueueMapBuffer = rc_clEnqueueMapBuffer;
    t->clEnqueueMapImage = rc_clEnqueueMapImage;
    t->clEnqueueUnmapMemObject = rc_clEnqueueUnmapMemObject;
    t->clSetKernelArg = rc_clSetKernelArg;
    t->clEnqueueNDRangeKernel = rc_clEnqueueNDRangeKernel;
    t->clEnqueueTask = rc_clEnqueueTask;
}
