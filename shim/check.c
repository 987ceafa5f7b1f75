/* OpenCL's rules for enqueued commands, checked by the shim where the remote
 * backend would batch the call and answer before the proxy's vendor. */
#include <string.h>

#include "proto/clrules.h"
#include "check.h"
#include "remote/remote.h"

/*
 * A command the remote backend batches answers CL_SUCCESS at once; the
 * proxy's vendor judges it later, and its error would reach the program
 * only at some later call (docs/remoting.md, "Batching and errors").
 * So for a queue on the remote backend the shim first checks here what it
 * knows itself: every object it made (buffer sizes and kinds, images'
 * shapes, contexts, queues, events).  Every rule here is OpenCL's own, the
 * same for every vendor; the order follows the one vendors use: objects,
 * their context, then offsets and sizes, then the wait list's events.
 * On the vendor (passthrough) the vendor judges the call itself, so these
 * checks run only for the remote backend: the program sees the vendor's
 * own answer there, its own order of checks included.
 */

/* A buffer or sub-buffer of this context; else the error OpenCL names. */
static cl_int buffer_of(const struct shim_queue *q, cl_mem handle,
                        struct shim_mem **out)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, handle);

    if (!m || (m->type != SHIM_BUFFER && m->type != SHIM_SUB_BUFFER))
        return CL_INVALID_MEM_OBJECT;
    if (m->context != q->context)
        return CL_INVALID_CONTEXT;
    *out = m;
    return CL_SUCCESS;
}

static cl_int image_of(const struct shim_queue *q, cl_mem handle,
                       struct shim_mem **out)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, handle);

    if (!m || m->type != SHIM_IMAGE)
        return CL_INVALID_MEM_OBJECT;
    if (m->context != q->context)
        return CL_INVALID_CONTEXT;
    *out = m;
    return CL_SUCCESS;
}

/* [offset, offset + size) inside a buffer of LIMIT bytes, size not 0. */
static bool range_fits(size_t offset, size_t size, size_t limit)
{
    return size && offset <= limit && size <= limit - offset;
}

cl_int shim_check_wait_context(const struct shim_queue *q, cl_uint n,
                               const cl_event *events)
{
    for (cl_uint i = 0; events && i < n; i++) {
        const struct shim_event *e =
            SHIM_AS(shim_event, SHIM_EVENT, events[i]);
        if (!e)
            return CL_INVALID_EVENT_WAIT_LIST;
        if (e->context != q->context)
            return CL_INVALID_CONTEXT;
    }
    return CL_SUCCESS;
}

/* The object of a transfer between the program and the device: a buffer
 * (IMAGE false) or an image of the queue's context, and the program's
 * memory there. */
static cl_int io_object(cl_command_queue queue, cl_mem mem, bool image,
                        const void *ptr, struct shim_mem **out)
{
    const struct shim_queue *q = (const struct shim_queue *)queue;
    cl_int err = image ? image_of(q, mem, out) : buffer_of(q, mem, out);

    return err == CL_SUCCESS && !ptr ? CL_INVALID_VALUE : err;
}

/* The end of every check of a transfer between the program and a memory
 * object: its host access flags (shim_mem_host_check), then the wait list. */
static cl_int io_finish(cl_command_queue queue, cl_mem mem, bool remote,
                        cl_uint n, const cl_event *events,
                        cl_map_flags access)
{
    cl_int err = shim_mem_host_check(queue, mem, access);

    if (err != CL_SUCCESS || !remote)
        return err;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}

/* The end of a rectangle (origin, region, pitches as OpenCL defines their
 * defaults and limits) in a buffer of LIMIT bytes: CL_INVALID_VALUE when
 * it is not a valid rectangle or does not fit. */
static cl_int rect_fits(const size_t *origin, const size_t *region,
                        size_t row, size_t slice, size_t limit)
{
    size_t start, end, t;

    if (!origin || !region || !region[0] || !region[1] || !region[2])
        return CL_INVALID_VALUE;
    if (!row)
        row = region[0];
    if (row < region[0])
        return CL_INVALID_VALUE;
    if (__builtin_mul_overflow(region[1], row, &t))
        return CL_INVALID_VALUE;
    if (!slice)
        slice = t;
    if (slice < t || slice % row)
        return CL_INVALID_VALUE;
    if (__builtin_mul_overflow(origin[2], slice, &start) ||
        __builtin_mul_overflow(origin[1], row, &t) ||
        __builtin_add_overflow(start, t, &start) ||
        __builtin_add_overflow(start, origin[0], &start) ||
        __builtin_mul_overflow(region[2] - 1, slice, &end) ||
        __builtin_mul_overflow(region[1] - 1, row, &t) ||
        __builtin_add_overflow(end, t, &end) ||
        __builtin_add_overflow(end, region[0], &end) ||
        __builtin_add_overflow(end, start, &end) || end > limit)
        return CL_INVALID_VALUE;
    return CL_SUCCESS;
}

cl_int shim_check_buffer_rect_io(cl_command_queue queue, cl_mem buffer,
                                 const size_t *buffer_origin,
                                 const size_t *host_origin,
                                 const size_t *region, size_t buffer_row,
                                 size_t buffer_slice, size_t host_row,
                                 size_t host_slice, const void *ptr,
                                 cl_uint n, const cl_event *events,
                                 cl_map_flags access)
{
    bool remote = shim_on_remote(queue);
    struct shim_mem *m;
    cl_int err = CL_SUCCESS;

    if (remote &&
        (err = io_object(queue, buffer, false, ptr, &m)) == CL_SUCCESS &&
        (rect_fits(buffer_origin, region, buffer_row, buffer_slice,
                   m->size) != CL_SUCCESS ||
         rect_fits(host_origin, region, host_row, host_slice, SIZE_MAX) !=
             CL_SUCCESS))
        err = CL_INVALID_VALUE;
    if (err != CL_SUCCESS)
        return err;
    return io_finish(queue, buffer, remote, n, events, access);
}

cl_int shim_check_wait_list(cl_command_queue queue, cl_uint n,
                            const cl_event *events)
{
    if (!shim_on_remote(queue))
        return CL_SUCCESS;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}

/* A plain transfer is a rectangle of one row. */
cl_int shim_check_buffer_io(cl_command_queue queue, cl_mem buffer,
                            size_t offset, size_t size, const void *ptr,
                            cl_uint n, const cl_event *events,
                            cl_map_flags access)
{
    const size_t origin[3] = {offset, 0, 0}, host[3] = {0, 0, 0};
    const size_t region[3] = {size, 1, 1};

    return shim_check_buffer_rect_io(queue, buffer, origin, host, region, 0,
                                     0, 0, 0, ptr, n, events, access);
}

cl_int shim_check_fill_buffer(cl_command_queue queue, cl_mem buffer,
                              const void *pattern, size_t pattern_size,
                              size_t offset, size_t size, cl_uint n,
                              const cl_event *events)
{
    struct shim_mem *m;
    cl_int err;

    if (!shim_on_remote(queue))
        return CL_SUCCESS;
    if ((err = io_object(queue, buffer, false, pattern, &m)) != CL_SUCCESS)
        return err;
    if (!range_fits(offset, size, m->size))
        return CL_INVALID_VALUE;
    if (!crn_fill_pattern_ok(pattern_size, offset, size))
        return CL_INVALID_VALUE;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}

/* The two objects of a copy: each an image (*_IMAGE) or a buffer of the
 * queue's context; *PA NULL when the queue is the vendor's, who judges. */
static cl_int copy_sides(cl_command_queue queue, cl_mem a, bool a_image,
                         cl_mem b, bool b_image, struct shim_mem **pa,
                         struct shim_mem **pb)
{
    const struct shim_queue *q = (const struct shim_queue *)queue;
    cl_int err;

    *pa = NULL;
    if (!shim_on_remote(queue))
        return CL_SUCCESS;
    err = a_image ? image_of(q, a, pa) : buffer_of(q, a, pa);

    if (err == CL_SUCCESS)
        err = b_image ? image_of(q, b, pb) : buffer_of(q, b, pb);
    return err;
}

/* Whether [src, src + size) and [dst, dst + size) of the same storage
 * overlap (two sub-buffers of one buffer included). */
static bool copy_overlaps(const struct shim_mem *src, size_t src_off,
                          const struct shim_mem *dst, size_t dst_off,
                          size_t size)
{
    if (shim_mem_root((struct shim_mem *)src) !=
        shim_mem_root((struct shim_mem *)dst))
        return false;
    size_t a = src_off + (src->type == SHIM_SUB_BUFFER ? src->origin : 0);
    size_t b = dst_off + (dst->type == SHIM_SUB_BUFFER ? dst->origin : 0);
    return a < b + size && b < a + size;
}

/* A plain copy is a copy of a one-row rectangle, which may not overlap
 * itself. */
cl_int shim_check_copy_buffer(cl_command_queue queue, cl_mem src_buffer,
                              cl_mem dst_buffer, size_t src_offset,
                              size_t dst_offset, size_t size, cl_uint n,
                              const cl_event *events)
{
    const size_t src_at[3] = {src_offset, 0, 0};
    const size_t dst_at[3] = {dst_offset, 0, 0}, region[3] = {size, 1, 1};
    cl_int err = shim_check_copy_buffer_rect(queue, src_buffer, dst_buffer,
                                             src_at, dst_at, region, 0, 0,
                                             0, 0, n, events);

    if (err != CL_SUCCESS || !shim_on_remote(queue))
        return err;
    /* Both are buffers of the queue's context now. */
    if (copy_overlaps((const struct shim_mem *)src_buffer, src_offset,
                      (const struct shim_mem *)dst_buffer, dst_offset, size))
        return CL_MEM_COPY_OVERLAP;
    return CL_SUCCESS;
}

/* ORIGIN and REGION inside image M: every region value at least 1, and
 * what a lower-dimensional image lacks given as origin 0 and region 1
 * (OpenCL's rule for every image command). */
static cl_int image_box_fits(const struct shim_mem *m, const size_t *origin,
                             const size_t *region)
{
    size_t dims[3];

    if (!origin || !region)
        return CL_INVALID_VALUE;
    shim_image_desc_region(&m->desc, dims);
    for (int i = 0; i < 3; i++)
        if (!range_fits(origin[i], region[i], dims[i]))
            return CL_INVALID_VALUE;
    return CL_SUCCESS;
}

cl_int shim_check_image_io(cl_command_queue queue, cl_mem image,
                           const size_t *origin, const size_t *region,
                           const void *ptr, cl_uint n, const cl_event *events,
                           cl_map_flags access)
{
    bool remote = shim_on_remote(queue);
    struct shim_mem *m;
    cl_int err = CL_SUCCESS;

    if (remote && (err = io_object(queue, image, true, ptr, &m)) == CL_SUCCESS)
        err = image_box_fits(m, origin, region);
    if (err != CL_SUCCESS)
        return err;
    return io_finish(queue, image, remote, n, events, access);
}

/* A fill is a transfer of one colour, with no host access rule. */
cl_int shim_check_fill_image(cl_command_queue queue, cl_mem image,
                             const void *color, const size_t *origin,
                             const size_t *region, cl_uint n,
                             const cl_event *events)
{
    return shim_check_image_io(queue, image, origin, region, color, n,
                               events, 0);
}

cl_int shim_check_migrate(cl_command_queue queue, cl_uint n_objects,
                          const cl_mem *objects, cl_mem_migration_flags flags,
                          cl_uint n, const cl_event *events)
{
    const struct shim_queue *q = (const struct shim_queue *)queue;

    if (!shim_on_remote(queue))
        return CL_SUCCESS;
    for (cl_uint i = 0; i < n_objects; i++) {
        const struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, objects[i]);
        if (!m)
            return CL_INVALID_MEM_OBJECT;
        if (m->context != q->context)
            return CL_INVALID_CONTEXT;
    }
    if (!crn_migrate_flags_ok(flags))
        return CL_INVALID_VALUE;
    return shim_check_wait_context(q, n, events);
}

cl_int shim_check_buffer_size(const struct shim_context *c, size_t size)
{
    if (!shim_on_remote(c))
        return CL_SUCCESS;
    for (cl_uint i = 0; i < c->n_devices; i++) {
        cl_ulong max = shim_backend_device_max_alloc(shim_proxy_backend(),
                                                     c->devices[i]->obj.real);
        /* Unknown (the query failed): the proxy's vendor judges. */
        if (max == 0 || size <= max)
            return CL_SUCCESS;
    }
    return c->n_devices ? CL_INVALID_BUFFER_SIZE : CL_SUCCESS;
}

cl_int shim_check_launch(cl_command_queue queue, cl_kernel kernel,
                         cl_uint n, const cl_event *events)
{
    const struct shim_queue *q = (const struct shim_queue *)queue;
    const struct shim_kernel *k = SHIM_AS(shim_kernel, SHIM_KERNEL, kernel);

    if (!shim_on_remote(queue))
        return CL_SUCCESS;
    if (!k)
        return CL_INVALID_KERNEL;
    if (k->program->context != q->context)
        return CL_INVALID_CONTEXT;
    cl_int err = shim_check_wait_context(q, n, events);
    if (err != CL_SUCCESS)
        return err;
    /* Every argument set (SVM pointers are not counted here: such a
     * kernel is left to the vendor). */
    for (cl_uint i = 0; !k->uses_svm && i < k->n_args; i++)
        if (!k->args[i].set)
            return CL_INVALID_KERNEL_ARGS;
    return CL_SUCCESS;
}

/* K's reqd_work_group_size and its device's non-uniform support, asked
 * of the (remote) vendor at K's first launch on DEV. */
static void learn_work_groups(struct shim_kernel *k, struct shim_device *dev)
{
    size_t reqd[3] = {0, 0, 0};
    cl_bool nonuni = CL_FALSE;

    if (atomic_load(&k->wg_known))
        return;
    if (VENDOR(k->obj.real)->clGetKernelWorkGroupInfo(
            k->obj.real, dev->obj.real, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
            sizeof(reqd), reqd, NULL) != CL_SUCCESS)
        memset(reqd, 0, sizeof(reqd));
    if (VENDOR(dev->obj.real)->clGetDeviceInfo(
            dev->obj.real, CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT,
            sizeof(nonuni), &nonuni, NULL) != CL_SUCCESS)
        nonuni = CL_TRUE;       /* unknown: the vendor judges */
    memcpy(k->wg_reqd, reqd, sizeof(reqd));
    k->wg_nonuniform = nonuni;
    atomic_store(&k->wg_known, true);
}

cl_int shim_check_ndrange(cl_command_queue queue, cl_kernel kernel,
                          cl_uint dim, const size_t *global,
                          const size_t *local)
{
    const struct shim_queue *q = (const struct shim_queue *)queue;
    struct shim_kernel *k = SHIM_AS(shim_kernel, SHIM_KERNEL, kernel);

    /* The rest is the vendor's (a deferred error at worst). */
    if (!shim_on_remote(queue) || !k || dim < 1 || dim > 3 || !global)
        return CL_SUCCESS;
    for (cl_uint i = 0; i < dim; i++)
        if (global[i] == 0)
            return CL_SUCCESS;  /* an empty launch (OpenCL 2.1 on) */
    learn_work_groups(k, q->device);
    bool reqd = k->wg_reqd[0] || k->wg_reqd[1] || k->wg_reqd[2];
    if (reqd && !local)
        return CL_INVALID_WORK_GROUP_SIZE;
    for (cl_uint i = 0; local && i < dim; i++) {
        if (local[i] == 0 || (reqd && local[i] != k->wg_reqd[i]))
            return CL_INVALID_WORK_GROUP_SIZE;
        if (!k->wg_nonuniform && global[i] % local[i] != 0)
            return CL_INVALID_WORK_GROUP_SIZE;
    }
    return CL_SUCCESS;
}

cl_int shim_check_map(cl_command_queue queue, cl_mem mem, bool image,
                      size_t offset, size_t size, const size_t *origin,
                      const size_t *region, cl_uint n,
                      const cl_event *events, cl_map_flags flags)
{
    const cl_map_flags rw = CL_MAP_READ | CL_MAP_WRITE;

    /* Known flags, CL_MAP_WRITE_INVALIDATE_REGION alone (OpenCL's rule):
     * remoted, such a map answers without a round trip. */
    if (shim_on_remote(queue) &&
        ((flags & ~(rw | CL_MAP_WRITE_INVALIDATE_REGION)) ||
         ((flags & CL_MAP_WRITE_INVALIDATE_REGION) && (flags & rw))))
        return CL_INVALID_VALUE;
    /* The mapping provides the memory: no program pointer to check (the
     * queue stands in for one). */
    if (image)
        return shim_check_image_io(queue, mem, origin, region, queue, n,
                                   events, flags | SHIM_ACCESS_MAP);
    return shim_check_buffer_io(queue, mem, offset, size, queue, n, events,
                                flags | SHIM_ACCESS_MAP);
}

cl_int shim_check_copy_buffer_rect(cl_command_queue queue, cl_mem src_buffer,
                                   cl_mem dst_buffer,
                                   const size_t *src_origin,
                                   const size_t *dst_origin,
                                   const size_t *region, size_t src_row,
                                   size_t src_slice, size_t dst_row,
                                   size_t dst_slice, cl_uint n,
                                   const cl_event *events)
{
    struct shim_mem *src, *dst;
    cl_int err = copy_sides(queue, src_buffer, false, dst_buffer, false,
                            &src, &dst);

    if (err != CL_SUCCESS || !src)
        return err;
    /* Rectangles that overlap in one buffer are the vendor's to find. */
    if ((err = rect_fits(src_origin, region, src_row, src_slice,
                         src->size)) != CL_SUCCESS ||
        (err = rect_fits(dst_origin, region, dst_row, dst_slice,
                         dst->size)) != CL_SUCCESS)
        return err;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}

/* Whether two boxes of REGION at A and B overlap. */
static bool boxes_overlap(const size_t *a, const size_t *b,
                          const size_t *region)
{
    for (int i = 0; i < 3; i++)
        if (a[i] >= b[i] + region[i] || b[i] >= a[i] + region[i])
            return false;
    return true;
}

cl_int shim_check_copy_image(cl_command_queue queue, cl_mem src_image,
                             cl_mem dst_image, const size_t *src_origin,
                             const size_t *dst_origin, const size_t *region,
                             cl_uint n, const cl_event *events)
{
    struct shim_mem *src, *dst;
    cl_int err = copy_sides(queue, src_image, true, dst_image, true, &src,
                            &dst);

    if (err != CL_SUCCESS || !src)
        return err;
    if (memcmp(&src->format, &dst->format, sizeof(src->format)))
        return CL_IMAGE_FORMAT_MISMATCH;
    if ((err = image_box_fits(src, src_origin, region)) != CL_SUCCESS ||
        (err = image_box_fits(dst, dst_origin, region)) != CL_SUCCESS)
        return err;
    if (src == dst && boxes_overlap(src_origin, dst_origin, region))
        return CL_MEM_COPY_OVERLAP;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}

cl_int shim_check_copy_image_buffer(cl_command_queue queue, cl_mem image,
                                    cl_mem buffer, const size_t *origin,
                                    const size_t *region, size_t offset,
                                    cl_uint n, const cl_event *events)
{
    struct shim_mem *img, *buf;
    size_t bytes;
    cl_int err = copy_sides(queue, image, true, buffer, false, &img, &buf);

    if (err != CL_SUCCESS || !img)
        return err;
    if ((err = image_box_fits(img, origin, region)) != CL_SUCCESS)
        return err;
    /* The box's pixels, packed, from OFFSET of the buffer. */
    if (__builtin_mul_overflow(region[0] * region[1], region[2], &bytes) ||
        __builtin_mul_overflow(bytes, shim_image_elem_size(&img->format),
                               &bytes) ||
        !range_fits(offset, bytes, buf->size))
        return CL_INVALID_VALUE;
    return shim_check_wait_context((const struct shim_queue *)queue, n,
                                   events);
}
