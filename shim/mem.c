/* Memory objects: buffers, sub-buffers, images and pipes; their creation,
 * recreation, reference counts and maps, their migration, native kernels
 * and SVM.  Host access rules in mem_host.c, image sizes in mem_image.c,
 * info and destructor callbacks in mem_info.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mem_int.h"
#include "entry.h"

/* Creates the vendor's object for `m` with `flags`. */
static int mem_create_real(struct shim_mem *m, cl_mem_flags flags,
                           void *copy_from)
{
    void *ctx = m->context->obj.real;
    void *host = NULL;
    cl_int err = CL_INVALID_OPERATION;

    /* Memory the program took back is never lent to a vendor again. */
    if (shim_mem_host_returned(m))
        flags &= ~(cl_mem_flags)CL_MEM_USE_HOST_PTR;
    if (flags & CL_MEM_USE_HOST_PTR)
        host = m->host_ptr;
    else if (copy_from)
        host = copy_from;
    else
        flags &= ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR;

    switch (m->type) {
    case SHIM_BUFFER:
        /* Over host memory that maps for writing cover whole (x264's
         * staging buffer): none of its bytes need go anywhere. */
        shim_create_no_bytes = host && shim_mem_over_host(m) &&
                               (m->own_blank || shim_maps_cover(m));
        m->own_blank = false;
        if (m->props && VENDOR(ctx)->clCreateBufferWithProperties)
            m->obj.real = VENDOR(ctx)->clCreateBufferWithProperties(
                ctx, m->props, flags, m->size, host, &err);
        else
            m->obj.real =
                VENDOR(ctx)->clCreateBuffer(ctx, flags, m->size, host, &err);
        shim_create_no_bytes = false;
        break;
    case SHIM_SUB_BUFFER: {
        cl_buffer_region region = {m->origin, m->size};
        void *parent = m->parent->obj.real;
        m->obj.real = VENDOR(parent)->clCreateSubBuffer(
            parent, flags, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        break;
    }
    case SHIM_IMAGE: {
        cl_image_desc desc = m->desc;
        if (m->parent)
            desc.buffer = m->parent->obj.real;
        if (m->props && VENDOR(ctx)->clCreateImageWithProperties)
            m->obj.real = VENDOR(ctx)->clCreateImageWithProperties(
                ctx, m->props, flags, &m->format, &desc, host, &err);
        else
            m->obj.real = VENDOR(ctx)->clCreateImage(ctx, flags, &m->format,
                                                     &desc, host, &err);
        break;
    }
    case SHIM_PIPE:
        if (VENDOR(ctx)->clCreatePipe)
            m->obj.real = VENDOR(ctx)->clCreatePipe(
                ctx, flags, m->pipe_packet_size, m->pipe_max_packets, NULL,
                &err);
        break;
    }
    if (!m->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    return 0;
}

static int mem_make(struct shim_mem *m, void *copy_from)
{
    /* Made ahead by a pre-copy in the context this one now has: its bytes
     * are there already (precopy.c). */
    void *pre = shim_precopy_take_target(m);
    if (pre && m->premade_ctx == m->context->obj.real && !copy_from) {
        m->obj.real = pre;
        m->premade_used = true;
        return 0;
    }
    if (pre)
        VENDOR(pre)->clReleaseMemObject(pre);
    m->premade_used = false;
    return mem_create_real(m, shim_mem_real_flags(m, m->context->obj.real),
                           copy_from);
}

/* On a vendor loaded here: nothing, the creation itself is the verdict.
 * On the proxy: the rules every vendor applies to flags (flags_valid),
 * then, for a root object with host access flags, the proxy vendor's
 * judgement of the program's own flags on an object made with them and
 * released at once, so that errors (and the CL_MEM_FLAGS it reports) are
 * that vendor's own.  Sub-buffers and images over buffers are judged by
 * the inheritance rule instead, since the proxy's parent lacks the
 * flags. */
static cl_int flags_verdict(struct shim_mem *m, void *copy_from)
{
    void *probe;
    cl_int err;

    if (!shim_real_on_remote(m->context->obj.real))
        return CL_SUCCESS;
    if (!shim_mem_flags_valid(m->flags))
        return CL_INVALID_VALUE;
    /* A sub-buffer never has host pointer flags of its own (a proxy, which
     * copies where the program's memory is used, would not notice). */
    if (m->type == SHIM_SUB_BUFFER && (m->flags & HOST_PTR_FLAGS))
        return CL_INVALID_VALUE;
    if (m->parent)
        return shim_mem_host_access_inherits(m->flags, m->parent)
                   ? CL_SUCCESS
                   : CL_INVALID_VALUE;
    if (!(m->flags & HOST_ACCESS_FLAGS))
        return CL_SUCCESS;
    if (mem_create_real(m, m->flags, copy_from) < 0)
        return shim_vendor_err;
    probe = m->obj.real;
    m->obj.real = NULL;
    err = VENDOR(probe)->clGetMemObjectInfo(probe, CL_MEM_FLAGS,
                                            sizeof(m->reported_flags),
                                            &m->reported_flags, NULL);
    if (err != CL_SUCCESS)
        m->reported_flags = m->flags;
    VENDOR(probe)->clReleaseMemObject(probe);
    return CL_SUCCESS;
}

/* CL_MEM_FLAGS, kept from creation so that it does not change when the
 * program moves.  Made by a vendor loaded here, or without host access
 * flags, it is the vendor's answer for the object it has.  Otherwise (on
 * the proxy): a root object's is the probe's (above); a sub-buffer's or an
 * image's over a buffer is OpenCL's rule of inheritance applied to its
 * parent's answer, since the proxy's parent differs from the program's. */
static void remember_flags(struct shim_mem *m)
{
    cl_mem_flags f = m->flags, parent;

    if (!shim_mem_host_access(m) || !shim_real_on_remote(m->obj.real)) {
        if (VENDOR(m->obj.real)->clGetMemObjectInfo(
                m->obj.real, CL_MEM_FLAGS, sizeof(f), &f, NULL) != CL_SUCCESS)
            f = m->flags;
        /* Host pointer flags are the program's, or a sub-buffer's parent's
         * (a proxy holds a copy where the program's memory is used, and
         * says so). */
        f &= ~HOST_PTR_FLAGS;
        f |= m->type == SHIM_SUB_BUFFER
                 ? m->parent->reported_flags & HOST_PTR_FLAGS
                 : m->flags & HOST_PTR_FLAGS;
    } else if (!m->parent) {
        return;
    } else {
        parent = m->parent->reported_flags;
        if (!(f & ACCESS_FLAGS))
            f |= parent & ACCESS_FLAGS;
        if (!(f & HOST_ACCESS_FLAGS))
            f |= parent & HOST_ACCESS_FLAGS;
        if (m->type == SHIM_SUB_BUFFER)
            f |= parent & HOST_PTR_FLAGS;
    }
    m->reported_flags = f;
}

/* Common tail of every creation call: record, realize, return the handle. */
static cl_mem mem_finish(struct shim_mem *m, void *host_ptr,
                         cl_int *errcode_ret)
{
    cl_int err = CL_SUCCESS;

    atomic_init(&m->dirty_lo, SIZE_MAX);
    atomic_init(&m->dirty_hi, 0);
    atomic_init(&m->host_returned, false);
    pthread_mutex_init(&m->dirty_lock, NULL);
    if (m->flags & CL_MEM_USE_HOST_PTR)
        m->host_ptr = host_ptr;
    shim_obj_retain_child(&m->context->obj);
    if (m->parent)
        shim_obj_retain_child(&m->parent->obj);
    void *copy_from = (m->flags & CL_MEM_COPY_HOST_PTR) ? host_ptr : NULL;
    err = flags_verdict(m, copy_from);
    /* CL_MEM_ALLOC_HOST_PTR: the shim's own memory, which every vendor
     * then uses (mem_own.c); the program's bytes are in it already. */
    if (err == CL_SUCCESS)
        shim_mem_own_host_make(m, copy_from);
    if (err == CL_SUCCESS && mem_make(m, m->own_host ? NULL : copy_from) < 0)
        err = shim_vendor_err;
    /* A vendor that will not take the shim's memory makes its own. */
    if (err != CL_SUCCESS && m->own_host) {
        CRN_WARN("memory: the vendor refused a %zu-byte buffer over the "
                 "shim's memory (%d); its own CL_MEM_ALLOC_HOST_PTR memory "
                 "instead (a map kept of it refuses switches)", m->size, err);
        shim_mem_own_host_free(m);
        err = mem_make(m, copy_from) < 0 ? shim_vendor_err : CL_SUCCESS;
    }
    if (err == CL_SUCCESS) {
        remember_flags(m);
        if (shim_mem_host_access(m))
            shim_mem_learn_host_policy(m->context);
    } else {
        shim_obj_release(m, SHIM_MEM);
        m = NULL;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_mem)m;
}

static struct shim_mem *mem_alloc(struct shim_context *c, cl_mem_flags flags,
                                  const cl_mem_properties *props,
                                  cl_int *errcode_ret)
{
    struct shim_mem *m = shim_obj_new(&shim_mem_kind, sizeof(*m), NULL);

    if (!m) {
        if (errcode_ret)
            *errcode_ret = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    m->context = c;
    m->flags = flags;
    m->props = shim_props_dup(props, sizeof(*props));
    return m;
}

static cl_mem buffer_new(cl_context context, const cl_mem_properties *props,
                         cl_mem_flags flags, size_t size, void *host_ptr,
                         cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_mem *m;
    cl_mem h = NULL;

    if (!c) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_CONTEXT;
        return NULL;
    }
    if (size == 0) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_BUFFER_SIZE;
        return NULL;
    }
    if (!host_ptr != !(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR))) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_HOST_PTR;
        return NULL;
    }
    shim_enter();
    cl_int err = shim_check_buffer_size(c, size);
    if (err != CL_SUCCESS) {
        shim_leave();
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    m = mem_alloc(c, flags, props, errcode_ret);
    if (m) {
        m->type = SHIM_BUFFER;
        m->size = size;
        h = mem_finish(m, host_ptr, errcode_ret);
    }
    shim_leave();
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL
clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
               void *host_ptr, cl_int *errcode_ret)
{
    return buffer_new(context, NULL, flags, size, host_ptr, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL clCreateBufferWithProperties(
    cl_context context, const cl_mem_properties *properties,
    cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret)
{
    return buffer_new(context, properties, flags, size, host_ptr,
                      errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL clCreateSubBuffer(
    cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type buffer_create_type,
    const void *buffer_create_info, cl_int *errcode_ret)
{
    struct shim_mem *parent = SHIM_AS(shim_mem, SHIM_MEM, buffer);
    const cl_buffer_region *region = buffer_create_info;
    struct shim_mem *m;
    cl_mem h = NULL;
    cl_int err = CL_SUCCESS;

    if (!parent || parent->type != SHIM_BUFFER)
        err = CL_INVALID_MEM_OBJECT;
    else if (buffer_create_type != CL_BUFFER_CREATE_TYPE_REGION || !region)
        err = CL_INVALID_VALUE;
    else if (region->size == 0)
        err = CL_INVALID_BUFFER_SIZE;
    else if (region->origin + region->size > parent->size ||
             region->origin + region->size < region->origin)
        err = CL_INVALID_VALUE;
    if (err != CL_SUCCESS) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    /* The program's own flags, as the vendor gets them: what a sub-buffer
     * inherits from its parent the vendor adds itself (and reports in
     * CL_MEM_FLAGS), and host pointer flags on a sub-buffer are an error
     * for it to report. */
    shim_enter();
    m = mem_alloc(parent->context, flags, NULL, errcode_ret);
    if (m) {
        m->type = SHIM_SUB_BUFFER;
        m->parent = parent;
        m->origin = region->origin;
        m->size = region->size;
        h = mem_finish(m, NULL, errcode_ret);
        /* It shares the parent's storage, the program's memory included. */
        if (h && (parent->flags & CL_MEM_USE_HOST_PTR))
            m->host_ptr = (char *)parent->host_ptr + region->origin;
    }
    shim_leave();
    return h;
}

static cl_mem image_new(cl_context context, const cl_mem_properties *props,
                        cl_mem_flags flags, const cl_image_format *format,
                        const cl_image_desc *desc, void *host_ptr,
                        cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_mem *m, *buf = NULL;
    size_t region[3];
    cl_mem h = NULL;
    cl_int err = CL_SUCCESS;

    if (!c)
        err = CL_INVALID_CONTEXT;
    else if (!format)
        err = CL_INVALID_IMAGE_FORMAT_DESCRIPTOR;
    else if (!desc)
        err = CL_INVALID_IMAGE_DESCRIPTOR;
    else if (desc->buffer &&
             !(buf = SHIM_AS(shim_mem, SHIM_MEM, desc->buffer)))
        err = CL_INVALID_IMAGE_DESCRIPTOR;
    if (err != CL_SUCCESS) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    shim_enter();
    m = mem_alloc(c, flags, props, errcode_ret);
    if (m) {
        m->type = SHIM_IMAGE;
        m->format = *format;
        m->desc = *desc;
        m->desc.buffer = NULL;
        m->parent = buf;
        shim_image_region(m, region);
        m->size = shim_image_row_bytes(m) * region[1] * region[2];
        h = mem_finish(m, host_ptr, errcode_ret);
    }
    shim_leave();
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL
clCreateImage(cl_context context, cl_mem_flags flags,
              const cl_image_format *image_format,
              const cl_image_desc *image_desc, void *host_ptr,
              cl_int *errcode_ret)
{
    return image_new(context, NULL, flags, image_format, image_desc,
                     host_ptr, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL clCreateImageWithProperties(
    cl_context context, const cl_mem_properties *properties,
    cl_mem_flags flags, const cl_image_format *image_format,
    const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret)
{
    return image_new(context, properties, flags, image_format, image_desc,
                     host_ptr, errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL clCreateImage2D(
    cl_context context, cl_mem_flags flags,
    const cl_image_format *image_format, size_t image_width,
    size_t image_height, size_t image_row_pitch, void *host_ptr,
    cl_int *errcode_ret)
{
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D,
                          .image_width = image_width,
                          .image_height = image_height,
                          .image_row_pitch = image_row_pitch};
    return image_new(context, NULL, flags, image_format, &desc, host_ptr,
                     errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL clCreateImage3D(
    cl_context context, cl_mem_flags flags,
    const cl_image_format *image_format, size_t image_width,
    size_t image_height, size_t image_depth, size_t image_row_pitch,
    size_t image_slice_pitch, void *host_ptr, cl_int *errcode_ret)
{
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE3D,
                          .image_width = image_width,
                          .image_height = image_height,
                          .image_depth = image_depth,
                          .image_row_pitch = image_row_pitch,
                          .image_slice_pitch = image_slice_pitch};
    return image_new(context, NULL, flags, image_format, &desc, host_ptr,
                     errcode_ret);
}

SHIM_EXPORT CL_API_ENTRY cl_mem CL_API_CALL
clCreatePipe(cl_context context, cl_mem_flags flags, cl_uint pipe_packet_size,
             cl_uint pipe_max_packets, const cl_pipe_properties *properties,
             cl_int *errcode_ret)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    struct shim_mem *m;
    cl_mem h = NULL;

    (void)properties; /* must be NULL in OpenCL 3.0 */
    if (!c) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_CONTEXT;
        return NULL;
    }
    shim_enter();
    m = mem_alloc(c, flags, NULL, errcode_ret);
    if (m) {
        m->type = SHIM_PIPE;
        m->pipe_packet_size = pipe_packet_size;
        m->pipe_max_packets = pipe_max_packets;
        h = mem_finish(m, NULL, errcode_ret);
    }
    shim_leave();
    return h;
}

SHIM_RETAIN_RELEASE(MemObject, cl_mem, SHIM_MEM, CL_INVALID_MEM_OBJECT)

void shim_mem_mapped(cl_mem handle)
{
    struct shim_mem *m = (struct shim_mem *)handle;
    atomic_fetch_add(&m->maps, 1);
}

void shim_mem_unmapped(cl_mem handle)
{
    struct shim_mem *m = (struct shim_mem *)handle;
    atomic_fetch_sub(&m->maps, 1);
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clEnqueueMigrateMemObjects(
    cl_command_queue command_queue, cl_uint num_mem_objects,
    const cl_mem *mem_objects, cl_mem_migration_flags flags,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_xlate wl, mems;
    cl_event ev = NULL;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (num_mem_objects == 0 || !mem_objects)
        return CL_INVALID_VALUE;
    shim_enter();
    err = shim_xlate_handles(&mems, (const void *const *)mem_objects,
                             num_mem_objects, SHIM_MEM,
                             CL_INVALID_MEM_OBJECT);
    if (err == CL_SUCCESS) {
        err = shim_xlate_events(&wl, event_wait_list,
                                num_events_in_wait_list);
        if (err == CL_SUCCESS) {
            err = shim_check_migrate(command_queue, num_mem_objects,
                                     mem_objects, flags,
                                     num_events_in_wait_list,
                                     event_wait_list);
            if (err != CL_SUCCESS)
                shim_xlate_done(&wl);
        }
        if (err == CL_SUCCESS) {
            /* Undefined content counts as changed. */
            if (flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED)
                for (cl_uint i = 0; i < num_mem_objects; i++)
                    shim_mem_dirty_all(mem_objects[i]);
            err = VENDOR(q->obj.real)->clEnqueueMigrateMemObjects(
                q->obj.real, num_mem_objects, (const cl_mem *)mems.real,
                flags, wl.n, (const cl_event *)wl.real, event ? &ev : NULL);
            if (err == CL_SUCCESS && event)
                err = shim_event_wrap(event, ev, q);
            shim_xlate_done(&wl);
        }
        shim_xlate_done(&mems);
    }
    shim_leave();
    return err;
}

/* The argument block's rules: the vendor copies ARGS and writes each
 * buffer's memory at its place in the copy, so a list that is missing, or
 * a place outside the block, would have the shim read past the program's
 * list or the vendor write past its copy. */
static cl_int native_args_check(const void *args, size_t cb_args,
                                cl_uint n_mems, const cl_mem *mem_list,
                                const void **args_mem_loc)
{
    if (!args != !cb_args || (n_mems && !args) ||
        !n_mems != !mem_list || !n_mems != !args_mem_loc)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n_mems; i++) {
        uintptr_t at = (uintptr_t)args_mem_loc[i], base = (uintptr_t)args;
        if (at < base || cb_args < sizeof(cl_mem) ||
            at - base > cb_args - sizeof(cl_mem)) {
            CRN_DEBUG("clEnqueueNativeKernel: buffer %u's place %p lies "
                      "outside the %zu-byte argument block at %p", i,
                      (void *)args_mem_loc[i], cb_args, args);
            return CL_INVALID_VALUE;
        }
    }
    return CL_SUCCESS;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clEnqueueNativeKernel(
    cl_command_queue command_queue, void(CL_CALLBACK *user_func)(void *),
    void *args, size_t cb_args, cl_uint num_mem_objects,
    const cl_mem *mem_list, const void **args_mem_loc,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_xlate wl, mems;
    cl_event ev = NULL;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (!user_func)
        return CL_INVALID_VALUE;
    err = native_args_check(args, cb_args, num_mem_objects, mem_list,
                            args_mem_loc);
    if (err != CL_SUCCESS)
        return err;
    shim_enter();
    err = shim_xlate_handles(&mems, (const void *const *)mem_list,
                             num_mem_objects, SHIM_MEM,
                             CL_INVALID_MEM_OBJECT);
    if (err == CL_SUCCESS) {
        err = shim_xlate_events(&wl, event_wait_list,
                                num_events_in_wait_list);
        if (err == CL_SUCCESS) {
            for (cl_uint i = 0; i < num_mem_objects; i++)
                shim_mem_dirty_all(mem_list[i]);
            /* The vendor overwrites the handles at args_mem_loc in its own
             * copy of args, so only the list needs translating. */
            err = VENDOR(q->obj.real)->clEnqueueNativeKernel(
                q->obj.real, user_func, args, cb_args, num_mem_objects,
                (const cl_mem *)mems.real, args_mem_loc, wl.n,
                (const cl_event *)wl.real, event ? &ev : NULL);
            if (err == CL_SUCCESS && event)
                err = shim_event_wrap(event, ev, q);
            shim_xlate_done(&wl);
        }
        shim_xlate_done(&mems);
    }
    shim_leave();
    return err;
}

/* SVM pointers are addresses the device chose: they cannot be moved to
 * another device, so a process that holds any is not re-homed. */
atomic_long shim_svm_live;

SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL clSVMAlloc(cl_context context,
                                                      cl_svm_mem_flags flags,
                                                      size_t size,
                                                      cl_uint alignment)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);
    void *p = NULL;

    if (!c)
        return NULL;
    shim_enter();
    if (VENDOR(c->obj.real)->clSVMAlloc)
        p = VENDOR(c->obj.real)->clSVMAlloc(c->obj.real, flags, size,
                                            alignment);
    if (p)
        atomic_fetch_add(&shim_svm_live, 1);
    shim_leave();
    return p;
}

SHIM_EXPORT CL_API_ENTRY void CL_API_CALL clSVMFree(cl_context context,
                                                    void *svm_pointer)
{
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context);

    if (!c || !svm_pointer)
        return;
    shim_enter();
    if (VENDOR(c->obj.real)->clSVMFree) {
        VENDOR(c->obj.real)->clSVMFree(c->obj.real, svm_pointer);
        atomic_fetch_sub(&shim_svm_live, 1);
    }
    shim_leave();
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMFree(
    cl_command_queue command_queue, cl_uint num_svm_pointers,
    void *svm_pointers[],
    void(CL_CALLBACK *pfn_free_func)(cl_command_queue, cl_uint, void *[],
                                     void *),
    void *user_data, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_xlate wl;
    cl_event ev = NULL;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    /* A free callback would be handed the vendor's queue: the shim frees
     * the pointers itself afterwards instead. */
    if (pfn_free_func)
        return CL_INVALID_OPERATION;
    shim_enter();
    err = shim_xlate_events(&wl, event_wait_list, num_events_in_wait_list);
    if (err == CL_SUCCESS) {
        err = VENDOR(q->obj.real)->clEnqueueSVMFree
                  ? VENDOR(q->obj.real)->clEnqueueSVMFree(
                        q->obj.real, num_svm_pointers, svm_pointers, NULL,
                        user_data, wl.n, (const cl_event *)wl.real,
                        event ? &ev : NULL)
                  : CL_INVALID_OPERATION;
        if (err == CL_SUCCESS) {
            atomic_fetch_sub(&shim_svm_live, (long)num_svm_pointers);
            if (event)
                err = shim_event_wrap(event, ev, q);
        }
        shim_xlate_done(&wl);
    }
    shim_leave();
    return err;
}

static void mem_destroy(struct shim_obj *o)
{
    struct shim_mem *m = (void *)o;

    shim_maps_free(m);
    void *pre = shim_precopy_take_target(m);
    if (pre)
        VENDOR(pre)->clReleaseMemObject(pre);

    shim_mem_callbacks_fire(m);
    free(m->props);
    free(m->shadow);
    shim_mem_own_host_free(m);
    pthread_mutex_destroy(&m->dirty_lock);
    shim_obj_release_child(&m->context->obj);
    if (m->parent)
        shim_obj_release_child(&m->parent->obj);
}

/* A switch makes it again from its shadow alone (its bytes come after). */
static int mem_realize(struct shim_obj *o)
{
    return mem_make((struct shim_mem *)o, NULL);
}

SHIM_RELEASE_REAL_WITH(clReleaseMemObject)

const struct shim_kind_ops shim_mem_kind = {
    .kind = SHIM_MEM, .name = "memory object", .by_address = true,
    .destroy = mem_destroy, .realize = mem_realize,
    .release_real = release_real, .unnamed = shim_mem_unnamed,
};

