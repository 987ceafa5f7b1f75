/* Executors for memory objects: every MemCommand (creation of buffers,
 * sub-buffers and images in exec_mem_create.c). */
#include "exec_mem_int.h"

#include "callbacks.h"
#include "hostmem.h"
#include "lanes.h"
#include "ringpin.h"
#include "staging.h"

#include "proto/log.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

#include "proto/pcopy.h"
#include "proto/shm.h"

/* --- MemCommand ------------------------------------------------------------ */


/* The memory object ID, of the class an op needs on that side.  Some
 * vendors take a buffer where an image is due without looking (PoCL read
 * an image's fields from a sub-buffer given to clEnqueueCopyBufferToImage
 * and crashed the proxy: tests/fuzz/regress/remote), so the proxy checks
 * the class as the specification words it: CL_INVALID_MEM_OBJECT. */
static cl_mem mem_arg(struct mem_op *op, uint64_t id, enum mem_want want,
                      cl_int *err)
{
    cl_mem m = px_tenant_handle(op->c->t, id, PX_MEM, err);
    cl_mem_object_type type;

    if (!m) {
        px_fail(op->c, *err, "unknown memory object %llu",
                (unsigned long long)id);
        return NULL;
    }
    if (want == WANT_ANY)
        return m;
    type = px_tenant_mem_type(op->c->t, id);
    if (!type || (want == WANT_BUFFER) != (type == CL_MEM_OBJECT_BUFFER) ||
        type == CL_MEM_OBJECT_PIPE) {
        *err = px_fail(op->c, CL_INVALID_MEM_OBJECT,
                       "memory object %llu (type 0x%x) is no %s",
                       (unsigned long long)id, (unsigned)type,
                       want == WANT_BUFFER ? "buffer" : "image");
        return NULL;
    }
    return m;
}

/* A sub-buffer on the buffer side of a copy between a buffer and an image
 * is given to the vendor as its parent at the sub-buffer's origin: PoCL
 * (5.0) dereferences a sub-buffer there as if it were a root buffer and
 * crashes (tests/fuzz/regress/remote/copy-buffer-to-sub-buffer-as-image;
 * a native program crashes the same way).  The bytes are the same; the
 * sub-buffer's own bounds are checked here, as the vendor would have. */
static cl_int buffer_side_as_root(struct mem_op *op, cl_mem image,
                                  cl_mem *buf, size_t *offset,
                                  const size_t region[3])
{
    cl_mem parent = NULL;
    size_t origin = 0, size = 0, elem = 0;
    uint64_t need;

    if (clGetMemObjectInfo(*buf, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent),
                           &parent, NULL) != CL_SUCCESS || !parent)
        return CL_SUCCESS;
    if (clGetMemObjectInfo(*buf, CL_MEM_OFFSET, sizeof(origin), &origin,
                           NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(*buf, CL_MEM_SIZE, sizeof(size), &size, NULL) !=
            CL_SUCCESS ||
        clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem,
                       NULL) != CL_SUCCESS)
        return px_fail(op->c, CL_INVALID_MEM_OBJECT,
                       "cannot query a sub-buffer or an image");
    if (px_mul3(region[0], region[1], region[2], &need) ||
        __builtin_mul_overflow(need, elem, &need) || *offset > size ||
        need > size - *offset)
        return px_fail(op->c, CL_INVALID_VALUE,
                       "%llu bytes at offset %zu of a sub-buffer of %zu",
                       (unsigned long long)need, *offset, size);
    *buf = parent;
    *offset += origin;
    return CL_SUCCESS;
}

/* What an op needs as its source (SRC) or destination. */
static enum mem_want mem_want_of(Crane__MemOp o, bool src)
{
    switch (o) {
    case CRANE__MEM_OP__MEM_READ_IMAGE:
    case CRANE__MEM_OP__MEM_WRITE_IMAGE:
    case CRANE__MEM_OP__MEM_COPY_IMAGE:
    case CRANE__MEM_OP__MEM_FILL_IMAGE:
        return WANT_IMAGE;
    case CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER:
        return src ? WANT_IMAGE : WANT_BUFFER;
    case CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE:
        return src ? WANT_BUFFER : WANT_IMAGE;
    case CRANE__MEM_OP__MEM_MIGRATE:
        return WANT_ANY;
    default:
        return WANT_BUFFER;
    }
}

/* A buffer write whose bytes are in the client's ring: straight from
 * there when the ring is pinned (ringpin.h), else copied into a pinned
 * buffer, which frees their room, then to the device at pinned speed
 * (staging.h).  1: neither to be had (the bytes then went to the heap,
 * C->bulk, for the plain write). */
static cl_int write_staged(struct mem_op *op, cl_mem dst)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    cl_bool blocking = mc->blocking ? CL_TRUE : CL_FALSE;
    cl_event ev = NULL;
    unsigned slot;
    void *host;
    cl_int err;

    /* A pinned ring: the device copies straight from it, and the room is
     * free once it did (blocking: waits only for work already on the
     * device, as below).  Not while the client has unset user events: work
     * ahead in the queue may wait for one, whose set would queue behind
     * this wait; a staging buffer may wait for its last copy the same
     * way, so the bytes then go through the heap. */
    bool may_wait = !px_tenant_has_unset_user_events(c->t);
    if (may_wait && px_ring_pinned(c->ring, op->q)) {
        err = clEnqueueWriteBuffer(op->q, dst, CL_TRUE, mc->dst_offset,
                                   c->bulk_len, c->ring_at, op->nwait,
                                   op->wait, op->evp ? &ev : NULL);
        px_call_ring_release(c);
        op->ev = ev;
        return err;
    }
    /* Not pinned after all (another context): a piece bigger than a
     * staging buffer goes through the heap. */
    host = may_wait && c->bulk_len <= PX_WSTAGE_SIZE
               ? px_wstage_get(c->t, op->q, &slot)
               : NULL;
    if (!host) {
        if (px_call_ring_copy(c) < 0)
            return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                           c->bulk_len);
        return 1;
    }
    crn_pcopy(host, c->ring_at, c->bulk_len);
    px_call_ring_release(c);
    err = clEnqueueWriteBuffer(op->q, dst, blocking, mc->dst_offset,
                               c->bulk_len, host, op->nwait, op->wait, &ev);
    if (err != CL_SUCCESS)
        return err;
    /* The buffer is taken again once this copy ended. */
    if (!blocking)
        px_wstage_busy(c->t, slot, ev);
    op->ev = ev;
    return CL_SUCCESS;
}

/* Writes: the bulk bytes stay alive until the device has copied them. */
static cl_int mem_write(struct mem_op *op, cl_mem dst)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    cl_bool blocking = mc->blocking ? CL_TRUE : CL_FALSE;
    size_t origin[3], region[3], zero[3] = {0, 0, 0};
    cl_event ev = NULL;
    cl_int err;

    if (c->ring && (err = write_staged(op, dst)) != 1)
        return err;
    if (mc->op == CRANE__MEM_OP__MEM_WRITE) {
        err = clEnqueueWriteBuffer(op->q, dst, blocking, mc->dst_offset,
                                   mc->size, c->bulk, op->nwait, op->wait,
                                   &ev);
    } else if (mc->op == CRANE__MEM_OP__MEM_WRITE_RECT) {
        sizes3(origin, mc->dst_origin);
        sizes3(region, mc->region);
        err = clEnqueueWriteBufferRect(op->q, dst, blocking, origin, zero,
                                       region, mc->dst_row_pitch,
                                       mc->dst_slice_pitch, 0, 0, c->bulk,
                                       op->nwait, op->wait, &ev);
    } else {
        size_t elem = 0;
        uint64_t want;
        sizes3(origin, mc->dst_origin);
        sizes3(region, mc->region);
        err = clGetImageInfo(dst, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem,
                             NULL);
        if (err != CL_SUCCESS)
            return px_fail(c, CL_INVALID_MEM_OBJECT, "not an image");
        if (px_mul3(mc->region[0], mc->region[1], mc->region[2], &want) ||
            px_mul3(want, elem, 1, &want) || want != c->bulk_len)
            return px_fail(c, CL_INVALID_VALUE,
                           "image write region does not match bulk_len %zu",
                           c->bulk_len);
        err = clEnqueueWriteImage(op->q, dst, blocking, origin, region, 0, 0,
                                  c->bulk, op->nwait, op->wait, &ev);
    }
    if (err != CL_SUCCESS)
        return err;
    if (!blocking) {
        void *data = c->bulk;
        c->bulk = NULL;
        if (px_cb_free(c->t, ev, data) != CL_SUCCESS) {
            clWaitForEvents(1, &ev);
            px_chunk_free(data);
        }
    }
    op->ev = ev;
    return CL_SUCCESS;
}

/*
 * PoCL 3.1 crashes in clEnqueueCopyBufferRect when either side is a
 * sub-buffer (it should check overlap, or just copy).  Such a side is named
 * by its parent instead, its offset added to the origin, once the region is
 * checked to fit the sub-buffer: the same bytes, and the parent's own
 * overlap check then applies.
 */
static cl_int rect_side(struct mem_op *op, cl_mem *m, size_t origin[3],
                        const size_t region[3], size_t *row, size_t *slice)
{
    cl_mem parent = NULL;
    size_t off = 0, size = 0;
    uint64_t start, last;

    if (clGetMemObjectInfo(*m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent),
                           &parent, NULL) != CL_SUCCESS ||
        !parent)
        return CL_SUCCESS;
    if (region[0] == 0 || region[1] == 0 || region[2] == 0)
        return px_fail(op->c, CL_INVALID_VALUE, "empty region");
    if (*row == 0)
        *row = region[0];
    if (*slice == 0 && __builtin_mul_overflow(region[1], *row, slice))
        return px_fail(op->c, CL_INVALID_VALUE, "pitch overflows");
    clGetMemObjectInfo(*m, CL_MEM_OFFSET, sizeof(off), &off, NULL);
    clGetMemObjectInfo(*m, CL_MEM_SIZE, sizeof(size), &size, NULL);
    if (px_mul3(origin[2], *slice, 1, &start) ||
        px_mul3(origin[1], *row, 1, &last) ||
        __builtin_add_overflow(start, last, &start) ||
        __builtin_add_overflow(start, origin[0], &start) ||
        px_mul3(region[2] - 1, *slice, 1, &last) ||
        __builtin_add_overflow(start, last, &last) ||
        px_mul3(region[1] - 1, *row, 1, &start) ||
        __builtin_add_overflow(last, start, &last) ||
        __builtin_add_overflow(last, region[0], &last) || last > size ||
        __builtin_add_overflow(origin[0], off, &origin[0]))
        return px_fail(op->c, CL_INVALID_VALUE,
                       "rectangle outside the sub-buffer");
    *m = parent;
    return CL_SUCCESS;
}

/* Copies, fills and migrations: one enqueue each, nothing comes back. */
static cl_int mem_other(struct mem_op *op)
{
    const Crane__MemCommand *mc = op->mc;
    size_t so[3], dO[3], region[3];
    cl_mem src = NULL, dst = NULL;
    cl_event *evp = &op->ev;
    cl_int err = CL_SUCCESS;

    if (mc->n_src_origin)
        sizes3(so, mc->src_origin);
    if (mc->n_dst_origin)
        sizes3(dO, mc->dst_origin);
    if (mc->n_region)
        sizes3(region, mc->region);
    switch (mc->op) {
    case CRANE__MEM_OP__MEM_COPY:
    case CRANE__MEM_OP__MEM_COPY_RECT:
    case CRANE__MEM_OP__MEM_COPY_IMAGE:
    case CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER:
    case CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE:
        if (!(src = mem_arg(op, mc->src, mem_want_of(mc->op, true),
                            &err)) ||
            !(dst = mem_arg(op, mc->dst, mem_want_of(mc->op, false),
                            &err)))
            return err;
        break;
    case CRANE__MEM_OP__MEM_FILL:
    case CRANE__MEM_OP__MEM_FILL_IMAGE:
        if (!(dst = mem_arg(op, mc->dst, mem_want_of(mc->op, false),
                            &err)))
            return err;
        break;
    default:
        break;
    }
    switch (mc->op) {
    case CRANE__MEM_OP__MEM_COPY:
        return clEnqueueCopyBuffer(op->q, src, dst, mc->src_offset,
                                   mc->dst_offset, mc->size, op->nwait,
                                   op->wait, evp);
    case CRANE__MEM_OP__MEM_FILL:
        return clEnqueueFillBuffer(op->q, dst, mc->pattern.data,
                                   mc->pattern.len, mc->dst_offset, mc->size,
                                   op->nwait, op->wait, evp);
    case CRANE__MEM_OP__MEM_COPY_RECT: {
        size_t srow = mc->src_row_pitch, sslice = mc->src_slice_pitch;
        size_t drow = mc->dst_row_pitch, dslice = mc->dst_slice_pitch;
        if ((err = rect_side(op, &src, so, region, &srow, &sslice)) ||
            (err = rect_side(op, &dst, dO, region, &drow, &dslice)))
            return err;
        return clEnqueueCopyBufferRect(op->q, src, dst, so, dO, region, srow,
                                       sslice, drow, dslice, op->nwait,
                                       op->wait, evp);
    }
    case CRANE__MEM_OP__MEM_COPY_IMAGE:
        return clEnqueueCopyImage(op->q, src, dst, so, dO, region, op->nwait,
                                  op->wait, evp);
    case CRANE__MEM_OP__MEM_FILL_IMAGE:
        return clEnqueueFillImage(op->q, dst, mc->pattern.data, dO, region,
                                  op->nwait, op->wait, evp);
    case CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER: {
        size_t at = mc->dst_offset;
        if ((err = buffer_side_as_root(op, src, &dst, &at, region)))
            return err;
        return clEnqueueCopyImageToBuffer(op->q, src, dst, so, region, at,
                                          op->nwait, op->wait, evp);
    }
    case CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE: {
        size_t at = mc->src_offset;
        if ((err = buffer_side_as_root(op, dst, &src, &at, region)))
            return err;
        return clEnqueueCopyBufferToImage(op->q, src, dst, at, dO, region,
                                          op->nwait, op->wait, evp);
    }
    case CRANE__MEM_OP__MEM_MIGRATE: {
        cl_mem *mems = calloc(mc->n_objects ? mc->n_objects : 1,
                              sizeof(*mems));
        if (!mems)
            return px_fail(op->c, CL_OUT_OF_HOST_MEMORY, "out of memory");
        for (size_t i = 0; i < mc->n_objects && err == CL_SUCCESS; i++)
            mems[i] = mem_arg(op, mc->objects[i], WANT_ANY, &err);
        if (err == CL_SUCCESS)
            err = clEnqueueMigrateMemObjects(op->q, (cl_uint)mc->n_objects,
                                             mems, mc->flags, op->nwait,
                                             op->wait, evp);
        free(mems);
        return err;
    }
    default:
        return px_fail(op->c, CL_INVALID_VALUE, "unknown memory op");
    }
}

cl_int px_exec_mem(struct px_call *c)
{
    const Crane__MemCommand *mc = c->m->mem_command;
    struct mem_op op = {.c = c, .mc = mc};
    cl_event slot;
    cl_mem mem;
    cl_int err;

    op.q = px_known(c, mc->queue, PX_QUEUE, &err);
    if (!op.q)
        return err;
    err = px_event_slot(c, mc->event, &slot, &op.evp);
    if (err != CL_SUCCESS)
        return err;
    err = px_wait_list(c, mc->wait, mc->n_wait, &op.wait);
    if (err != CL_SUCCESS)
        return err;
    op.nwait = (cl_uint)mc->n_wait;
    if (mc->host_mem) {
        /* A buffer read or write in place in the host-memory region
         * (validate.c allows no other op). */
        bool rd = mc->op == CRANE__MEM_OP__MEM_READ ||
                  mc->op == CRANE__MEM_OP__MEM_READ_RECT;
        if ((mem = mem_arg(&op, rd ? mc->src : mc->dst, WANT_BUFFER,
                           &err)) != NULL)
            err = px_host_mem(c, op.q, mem, op.nwait, op.wait,
                              op.evp ? &op.ev : NULL);
        free(op.wait);
        if (err == CL_SUCCESS && op.evp && op.ev)
            return px_event_keep(c, mc->event, op.ev);
        if (op.ev)
            clReleaseEvent(op.ev);
        return err;
    }
    switch (mc->op) {
    case CRANE__MEM_OP__MEM_READ:
    case CRANE__MEM_OP__MEM_READ_RECT:
    case CRANE__MEM_OP__MEM_READ_IMAGE:
        if ((mem = mem_arg(&op, mc->src, mem_want_of(mc->op, true),
                           &err)) != NULL)
            err = px_mem_read(&op, mem);
        break;
    case CRANE__MEM_OP__MEM_WRITE:
    case CRANE__MEM_OP__MEM_WRITE_RECT:
    case CRANE__MEM_OP__MEM_WRITE_IMAGE:
        if ((mem = mem_arg(&op, mc->dst, mem_want_of(mc->op, false),
                           &err)) != NULL)
            err = mem_write(&op, mem);
        break;
    default:
        err = mem_other(&op);
        break;
    }
    free(op.wait);
    if (err == CL_SUCCESS && op.evp && op.ev)
        return px_event_keep(c, mc->event, op.ev);
    if (op.ev)
        clReleaseEvent(op.ev);
    return err;
}

