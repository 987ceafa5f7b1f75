/* The remote backend's memory objects: buffers, sub-buffers, images and
 * samplers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"

/* --- memory objects */

static struct rc_mem *mem_new(cl_mem_flags flags, size_t size, void *host)
{
    struct rc_mem *mem = rc_obj_new(SHIM_MEM, sizeof(struct rc_mem));

    if (!mem)
        return NULL;
    mem->flags = flags;
    mem->size = size;
    mem->host_ptr = (flags & CL_MEM_USE_HOST_PTR) ? host : NULL;
    pthread_mutex_init(&mem->lock, NULL);
    return mem;
}

static cl_mem create_buffer(cl_context c, const cl_mem_properties *props,
                            cl_mem_flags flags, size_t size, void *host,
                            cl_int *errcode_ret)
{
    Crane__CreateBuffer cb = CRANE__CREATE_BUFFER__INIT;
    uint64_t pv[32];
    size_t np = 0;
    /* None when the shim says none of them are needed (state.c): the
     * program's maps for writing cover the whole buffer, or the shim's
     * memory under it holds none of the program's bytes yet. */
    bool with_data =
        host && (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)) &&
        !((flags & CL_MEM_USE_HOST_PTR) && shim_create_no_bytes);

    /* A buffer over an SVM allocation shares its bytes (OpenCL 2.0): on
     * the proxy, a sub-buffer of the buffer holding the allocation's
     * device bytes.  A buffer of its own with a copy of them would be
     * changed alone (pyopencl's as_buffer(): the allocation saw one of two
     * kernels' writes). */
    size_t at;
    struct rc_svm *svm = (flags & CL_MEM_USE_HOST_PTR) && host
                             ? shim_remote_svm_find(host, &at)
                             : NULL;
    if (svm) {
        if (size > svm->mem.size - at) {
            CRN_WARN("remote: a buffer of %zu bytes over an SVM allocation "
                     "with %zu bytes left from its pointer", size,
                     svm->mem.size - at);
            RC_SET_ERR(CL_INVALID_BUFFER_SIZE);
            return NULL;
        }
        cl_buffer_region reg = {at, size};
        cl_mem sub = rc_clCreateSubBuffer(
            (cl_mem)&svm->mem, flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR,
            CL_BUFFER_CREATE_TYPE_REGION, &reg, errcode_ret);
        if (sub)
            ((struct rc_mem *)sub)->host_ptr = host;
        return sub;
    }
    np = rc_prop_pairs(pv, props);
    struct rc_mem *mem = mem_new(flags, size, host);
    if (!mem) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cb.id = mem->obj.id;
    cb.context = RC_ID(c);
    cb.flags = flags;
    cb.size = size;
    cb.properties = pv;
    cb.n_properties = np;
    cb.bulk_len = with_data ? size : 0;
    if (!with_data && host && (flags & CL_MEM_USE_HOST_PTR))
        CRN_DEBUG("remote: a %zu-byte buffer over host memory none of whose "
                  "bytes are needed: none sent", size);
    RC_MSG(m, create_buffer, CREATE_BUFFER, &cb);
    return rc_created(&mem->obj, &m, with_data ? host : NULL, cb.bulk_len,
                      errcode_ret);
}

cl_mem CL_API_CALL rc_clCreateBuffer(cl_context c, cl_mem_flags flags,
                                     size_t size, void *host,
                                     cl_int *errcode_ret)
{
    return create_buffer(c, NULL, flags, size, host, errcode_ret);
}

cl_mem CL_API_CALL rc_clCreateBufferWithProperties(
    cl_context c, const cl_mem_properties *props, cl_mem_flags flags,
    size_t size, void *host, cl_int *errcode_ret)
{
    return create_buffer(c, props, flags, size, host, errcode_ret);
}

cl_mem CL_API_CALL rc_clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
                                        cl_buffer_create_type type,
                                        const void *info, cl_int *errcode_ret)
{
    const cl_buffer_region *reg = info;
    const struct rc_mem *parent = (const void *)buffer;

    if (type != CL_BUFFER_CREATE_TYPE_REGION || !reg) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    Crane__CreateSubBuffer sb = CRANE__CREATE_SUB_BUFFER__INIT;
    void *host =
        parent->host_ptr ? (char *)parent->host_ptr + reg->origin : NULL;
    struct rc_mem *mem = mem_new(
        parent->flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR, reg->size, NULL);
    if (!mem) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    mem->host_ptr = host;
    sb.id = mem->obj.id;
    sb.buffer = RC_ID(buffer);
    sb.flags = flags;
    sb.origin = reg->origin;
    sb.size = reg->size;
    RC_MSG(m, create_sub_buffer, CREATE_SUB_BUFFER, &sb);
    /* Alignment and bounds are the device's to judge: wait for them. */
    return rc_created_sync(&mem->obj, &m, NULL, 0, errcode_ret, NULL);
}

/* Packs host image data the program laid out with its own pitches. */
static void *pack_image(const void *host, const cl_image_desc *d, size_t elem,
                        size_t *len)
{
    size_t reg[3];
    shim_image_desc_region(d, reg);
    size_t row = reg[0] * elem;
    size_t in_row = d->image_row_pitch ? d->image_row_pitch : row;
    size_t in_slice =
        d->image_slice_pitch ? d->image_slice_pitch : in_row * reg[1];
    if (d->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
        in_row = d->image_slice_pitch ? d->image_slice_pitch : row;
    *len = row * reg[1] * reg[2];
    unsigned char *out = malloc(*len ? *len : 1);
    if (!out)
        return NULL;
    for (size_t z = 0; z < reg[2]; z++)
        for (size_t y = 0; y < reg[1]; y++)
            memcpy(out + (z * reg[1] + y) * row,
                   (const char *)host + z * in_slice + y * in_row, row);
    return out;
}

static cl_mem create_image(cl_context c, const cl_mem_properties *props,
                           cl_mem_flags flags, const cl_image_format *fmt,
                           const cl_image_desc *desc, void *host,
                           cl_int *errcode_ret)
{
    Crane__CreateImage ci = CRANE__CREATE_IMAGE__INIT;
    uint64_t pv[32];
    size_t np = 0, len = 0;
    void *packed = NULL;

    if (!fmt || !desc) {
        RC_SET_ERR(!fmt ? CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
                        : CL_INVALID_IMAGE_DESCRIPTOR);
        return NULL;
    }
    size_t elem = shim_image_elem_size(fmt);
    if (host && (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)) &&
        !(packed = pack_image(host, desc, elem, &len))) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    np = rc_prop_pairs(pv, props);
    size_t reg[3];
    shim_image_desc_region(desc, reg);
    struct rc_mem *mem = mem_new(flags, reg[0] * elem * reg[1] * reg[2], host);
    if (!mem) {
        free(packed);
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    mem->elem = elem;
    ci.id = mem->obj.id;
    ci.context = RC_ID(c);
    ci.flags = flags;
    ci.channel_order = fmt->image_channel_order;
    ci.channel_type = fmt->image_channel_data_type;
    ci.image_type = desc->image_type;
    ci.width = desc->image_width;
    ci.height = desc->image_height;
    ci.depth = desc->image_depth;
    ci.array_size = desc->image_array_size;
    ci.buffer = RC_ID(desc->buffer);
    ci.row_pitch = ci.buffer ? desc->image_row_pitch : 0;
    ci.slice_pitch = ci.buffer ? desc->image_slice_pitch : 0;
    ci.num_mip_levels = desc->num_mip_levels;
    ci.num_samples = desc->num_samples;
    ci.properties = pv;
    ci.n_properties = np;
    ci.bulk_len = len;
    RC_MSG(m, create_image, CREATE_IMAGE, &ci);
    /* Image creation fails for many reasons the program checks: wait. */
    cl_mem out =
        rc_created_sync(&mem->obj, &m, packed, len, errcode_ret, NULL);
    free(packed);
    return out;
}

cl_mem CL_API_CALL rc_clCreateImage(cl_context c, cl_mem_flags flags,
                                    const cl_image_format *fmt,
                                    const cl_image_desc *desc, void *host,
                                    cl_int *errcode_ret)
{
    return create_image(c, NULL, flags, fmt, desc, host, errcode_ret);
}

cl_mem CL_API_CALL rc_clCreateImageWithProperties(
    cl_context c, const cl_mem_properties *props, cl_mem_flags flags,
    const cl_image_format *fmt, const cl_image_desc *desc, void *host,
    cl_int *errcode_ret)
{
    return create_image(c, props, flags, fmt, desc, host, errcode_ret);
}

cl_int CL_API_CALL rc_clReleaseMemObject(cl_mem h)
{
    cl_int err = rc_release(h, SHIM_MEM);
    shim_remote_mem_free((struct rc_mem *)h);
    return err;
}

/* --- samplers */

static cl_sampler create_sampler(cl_context c, const cl_sampler_properties *p,
                                 cl_int *errcode_ret)
{
    Crane__CreateSampler cs = CRANE__CREATE_SAMPLER__INIT;
    uint64_t pv[32];
    size_t np = 0;

    np = rc_prop_pairs(pv, p);
    struct rc_obj *o = rc_obj_new(SHIM_SAMPLER, sizeof(struct rc_obj));
    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cs.id = o->id;
    cs.context = RC_ID(c);
    cs.properties = pv;
    cs.n_properties = np;
    RC_MSG(m, create_sampler, CREATE_SAMPLER, &cs);
    return rc_created(o, &m, NULL, 0, errcode_ret);
}

cl_sampler CL_API_CALL rc_clCreateSampler(cl_context c, cl_bool norm,
                                          cl_addressing_mode addr,
                                          cl_filter_mode filter,
                                          cl_int *errcode_ret)
{
    cl_sampler_properties p[] = {CL_SAMPLER_NORMALIZED_COORDS,
                                 norm,
                                 CL_SAMPLER_ADDRESSING_MODE,
                                 addr,
                                 CL_SAMPLER_FILTER_MODE,
                                 filter,
                                 0};
    return create_sampler(c, p, errcode_ret);
}

cl_sampler CL_API_CALL rc_clCreateSamplerWithProperties(
    cl_context c, const cl_sampler_properties *p, cl_int *errcode_ret)
{
    return create_sampler(c, p, errcode_ret);
}

cl_int CL_API_CALL rc_clReleaseSampler(cl_sampler s)
{
    cl_int err = rc_release(s, SHIM_SAMPLER);
    free(s);
    return err;
}
