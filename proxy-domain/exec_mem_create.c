/* Executors for the creation of memory objects: buffers, sub-buffers,
 * images (the MemCommand executor in exec_mem.c). */
#include "exec.h"

#include "proto/log.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

/* Host-pointer flags never reach the proxy's OpenCL: the program's memory
 * is on the client. */
#define HOST_PTR_FLAGS (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)

cl_int px_exec_buffer(struct px_call *c)
{
    const Crane__CreateBuffer *b = c->m->create_buffer;
    cl_mem_properties props[PX_MAX_PROPS + 1];
    cl_mem_flags flags = b->flags & ~(cl_mem_flags)HOST_PTR_FLAGS;
    cl_context ctx;
    cl_mem mem;
    cl_int err;

    err = px_new_in_context(c, b->id, PX_MEM,
                            "memory object id", b->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    err = px_tenant_charge(c->t, b->size);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "buffer of %llu bytes is over the quota",
                       (unsigned long long)b->size);
    if (c->bulk_len)
        flags |= CL_MEM_COPY_HOST_PTR;
    if (b->n_properties) {
        px_props(props, b->properties, b->n_properties);
        mem = clCreateBufferWithProperties(ctx, props, flags, b->size,
                                           c->bulk_len ? c->bulk : NULL,
                                           &err);
    } else {
        mem = clCreateBuffer(ctx, flags, b->size,
                             c->bulk_len ? c->bulk : NULL, &err);
    }
    if (!mem)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, b->id, PX_MEM, mem, b->size, false);
}

cl_int px_exec_sub_buffer(struct px_call *c)
{
    const Crane__CreateSubBuffer *s = c->m->create_sub_buffer;
    cl_buffer_region region = {s->origin, s->size};
    cl_mem parent, mem;
    cl_int err;

    err = px_tenant_check_new(c->t, s->id, PX_MEM);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "bad or used memory object id");
    parent = px_known(c, s->buffer, PX_MEM, &err);
    if (!parent)
        return err;
    mem = clCreateSubBuffer(parent, s->flags & ~(cl_mem_flags)HOST_PTR_FLAGS,
                            CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (!mem)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, s->id, PX_MEM, mem, 0, false);
}

/* Bytes per pixel of an image format, or 0 for one the proxy cannot size. */
static size_t element_size(cl_channel_order order, cl_channel_type type)
{
    size_t channels, bytes;

    switch (type) {
    case CL_UNORM_SHORT_565:
    case CL_UNORM_SHORT_555:
        return 2;
    case CL_UNORM_INT_101010:
    case CL_UNORM_INT_101010_2:
    case CL_UNORM_INT24:
        return 4;
    case CL_SNORM_INT8:
    case CL_UNORM_INT8:
    case CL_SIGNED_INT8:
    case CL_UNSIGNED_INT8:
        bytes = 1;
        break;
    case CL_SNORM_INT16:
    case CL_UNORM_INT16:
    case CL_SIGNED_INT16:
    case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT:
        bytes = 2;
        break;
    case CL_SIGNED_INT32:
    case CL_UNSIGNED_INT32:
    case CL_FLOAT:
        bytes = 4;
        break;
    default:
        return 0;
    }
    switch (order) {
    case CL_R:
    case CL_A:
    case CL_INTENSITY:
    case CL_LUMINANCE:
    case CL_DEPTH:
        channels = 1;
        break;
    case CL_RG:
    case CL_RA:
        channels = 2;
        break;
    case CL_RGB:
    case CL_sRGB:
        channels = 3;
        break;
    case CL_RGBA:
    case CL_BGRA:
    case CL_ARGB:
    case CL_ABGR:
    case CL_sRGBA:
    case CL_sBGRA:
        channels = 4;
        break;
    default:
        return 0;
    }
    return channels * bytes;
}

/* Bytes of an image's packed contents: 0 for a type or format the proxy
 * cannot size (the implementation refuses those), UINT64_MAX when the
 * dimensions overflow (so that any quota refuses it). */
static uint64_t image_bytes(const Crane__CreateImage *im)
{
    uint64_t w = im->width, h = 1, d = 1, n;
    size_t elem = element_size(im->channel_order, im->channel_type);

    switch (im->image_type) {
    case CL_MEM_OBJECT_IMAGE1D:
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
        break;
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        h = im->array_size;
        break;
    case CL_MEM_OBJECT_IMAGE2D:
        h = im->height;
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        h = im->height;
        d = im->array_size;
        break;
    case CL_MEM_OBJECT_IMAGE3D:
        h = im->height;
        d = im->depth;
        break;
    default:
        return 0;
    }
    if (px_mul3(w, h, d, &n) || px_mul3(n, elem, 1, &n))
        return UINT64_MAX;
    return n;
}

cl_int px_exec_image(struct px_call *c)
{
    const Crane__CreateImage *im = c->m->create_image;
    cl_mem_properties props[PX_MAX_PROPS + 1];
    cl_image_format fmt = {im->channel_order, im->channel_type};
    cl_image_desc desc;
    cl_mem_flags flags = im->flags & ~(cl_mem_flags)HOST_PTR_FLAGS;
    uint64_t bytes = 0;
    cl_context ctx;
    cl_mem mem;
    cl_int err;

    err = px_new_in_context(c, im->id, PX_MEM,
                            "memory object id", im->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    memset(&desc, 0, sizeof(desc));
    desc.image_type = im->image_type;
    desc.image_width = im->width;
    desc.image_height = im->height;
    desc.image_depth = im->depth;
    desc.image_array_size = im->array_size;
    desc.num_mip_levels = im->num_mip_levels;
    desc.num_samples = im->num_samples;
    if (im->buffer) {
        /* An image over a buffer: the buffer's bytes, counted already. */
        desc.mem_object = px_known(c, im->buffer, PX_MEM, &err);
        if (!desc.mem_object)
            return err;
        desc.image_row_pitch = im->row_pitch;
        desc.image_slice_pitch = im->slice_pitch;
        if (c->bulk_len)
            return px_fail(c, CL_INVALID_HOST_PTR,
                           "contents given for an image over a buffer");
    } else {
        bytes = image_bytes(im);
        if (c->bulk_len && c->bulk_len != bytes)
            return px_fail(c, bytes ? CL_INVALID_VALUE
                                    : CL_IMAGE_FORMAT_NOT_SUPPORTED,
                           "image contents of %zu bytes for %llu", c->bulk_len,
                           (unsigned long long)bytes);
        err = px_tenant_charge(c->t, bytes);
        if (err != CL_SUCCESS)
            return px_fail(c, err, "image of %llu bytes is over the quota",
                           (unsigned long long)bytes);
    }
    if (c->bulk_len)
        flags |= CL_MEM_COPY_HOST_PTR;
    px_props(props, im->properties, im->n_properties);
    mem = clCreateImageWithProperties(ctx, im->n_properties ? props : NULL,
                                      flags, &fmt, &desc,
                                      c->bulk_len ? c->bulk : NULL, &err);
    if (!mem && err == CL_INVALID_OPERATION && !im->n_properties)
        /* An OpenCL 1.2 implementation under a 3.0 loader. */
        mem = clCreateImage(ctx, flags, &fmt, &desc,
                            c->bulk_len ? c->bulk : NULL, &err);
    if (!mem)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, im->id, PX_MEM, mem, bytes, false);
}
