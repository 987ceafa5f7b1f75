/* Limits on what a client may send, and checking a message against them. */
#include "validate.h"

#include "proto/clrules.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Records why into WHY and returns ERR, the OpenCL error the
 * specification names for the fault. */
static int bad(cl_int err, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(cl_int err, char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return err;
}

/* A malformed message: CL_INVALID_VALUE. */
#define BAD(...) bad(CL_INVALID_VALUE, why, why_len, __VA_ARGS__)
/* A field the specification refuses with its own error. */
#define REFUSE(err, ...) bad(err, why, why_len, __VA_ARGS__)

int px_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;

    if (__builtin_mul_overflow(a, b, &ab) ||
        __builtin_mul_overflow(ab, c, out))
        return -EOVERFLOW;
    return 0;
}

uint64_t px_bulk_len(const Crane__ClientMessage *m)
{
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER:
        return m->create_buffer->bulk_len;
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE:
        return m->create_image->bulk_len;
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        return m->mem_command->bulk_len;
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM:
        return m->create_program->bulk_len;
    default:
        return 0;
    }
}

static int check_props(size_t n, bool pairs, const char *what, char *why,
                       size_t why_len)
{
    if (n > PX_MAX_PROPS)
        return BAD("%s: %zu property words (at most %d)", what, n,
                   PX_MAX_PROPS);
    if (pairs && n % 2)
        return BAD("%s: properties must be name/value pairs", what);
    return 0;
}

static int check_list(size_t n, size_t max, const char *what, char *why,
                      size_t why_len)
{
    if (n > max)
        return BAD("%s: %zu entries (at most %zu)", what, n, max);
    return 0;
}

/* --- fields passed to the vendor, checked as the specification says ------ */

/* cl_mem_flags: known bits, at most one access mode for the kernel and one
 * for the host, USE_HOST_PTR with neither ALLOC_HOST_PTR nor
 * COPY_HOST_PTR. */
static int check_mem_flags(uint64_t flags, const char *what, char *why,
                           size_t why_len)
{
    const uint64_t known = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                           CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR |
                           CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR |
                           CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY |
                           CL_MEM_HOST_NO_ACCESS |
                           CL_MEM_KERNEL_READ_AND_WRITE;
    uint64_t kernel = flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                               CL_MEM_READ_ONLY);
    uint64_t host = flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY |
                             CL_MEM_HOST_NO_ACCESS);

    if (flags & ~known)
        return BAD("%s: unknown flags 0x%llx", what,
                   (unsigned long long)(flags & ~known));
    if (kernel & (kernel - 1))
        return BAD("%s: more than one of READ_WRITE, WRITE_ONLY and "
                   "READ_ONLY", what);
    if (host & (host - 1))
        return BAD("%s: more than one of HOST_WRITE_ONLY, HOST_READ_ONLY "
                   "and HOST_NO_ACCESS", what);
    if ((flags & CL_MEM_USE_HOST_PTR) &&
        (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)))
        return BAD("%s: USE_HOST_PTR with ALLOC_HOST_PTR or COPY_HOST_PTR",
                   what);
    return 0;
}

/* No memory property is defined by the core specification, and the proxy
 * offers no extension that defines one. */
static int check_mem_props(size_t n, const uint64_t *props, const char *what,
                           char *why, size_t why_len)
{
    if (n > PX_MAX_PROPS)
        return BAD("%s: %zu property words (at most %d)", what, n,
                   PX_MAX_PROPS);
    if (n)
        return REFUSE(CL_INVALID_PROPERTY, "%s: property 0x%llx is not "
                      "supported", what, (unsigned long long)props[0]);
    return 0;
}

/* Bytes per channel of a cl_channel_type (0: unknown); PACKED: the type
 * holds every channel in one unit and needs an RGB-like order. */
static int channel_bytes(uint32_t type, bool *packed)
{
    *packed = false;
    switch (type) {
    case CL_SNORM_INT8: case CL_UNORM_INT8:
    case CL_SIGNED_INT8: case CL_UNSIGNED_INT8:
        return 1;
    case CL_SNORM_INT16: case CL_UNORM_INT16:
    case CL_SIGNED_INT16: case CL_UNSIGNED_INT16: case CL_HALF_FLOAT:
        return 2;
    case CL_SIGNED_INT32: case CL_UNSIGNED_INT32: case CL_FLOAT:
        return 4;
    case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555:
    case CL_UNORM_INT_101010: case CL_UNORM_INT_101010_2:
    case CL_UNORM_INT24:
        *packed = true;
        return 1;
    default:
        return 0;
    }
}

/* The image format: a known channel order and type that go together
 * (the table of "Image Format Descriptor" in the specification). */
static int check_format(uint32_t order, uint32_t type, char *why,
                        size_t why_len)
{
    bool packed;

    if (!channel_bytes(type, &packed))
        return REFUSE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
                      "unknown channel type 0x%x", type);
    switch (order) {
    case CL_R: case CL_A: case CL_RG: case CL_RA: case CL_RGBA:
    case CL_Rx: case CL_RGx:
        break;
    case CL_RGB: case CL_RGBx:
        if (type != CL_UNORM_SHORT_565 && type != CL_UNORM_SHORT_555 &&
            type != CL_UNORM_INT_101010)
            goto mismatch;
        return 0;
    case CL_BGRA: case CL_ARGB: case CL_ABGR:
        if (type != CL_UNORM_INT8 && type != CL_SNORM_INT8 &&
            type != CL_SIGNED_INT8 && type != CL_UNSIGNED_INT8)
            goto mismatch;
        return 0;
    case CL_INTENSITY: case CL_LUMINANCE:
        if (type != CL_UNORM_INT8 && type != CL_UNORM_INT16 &&
            type != CL_SNORM_INT8 && type != CL_SNORM_INT16 &&
            type != CL_HALF_FLOAT && type != CL_FLOAT)
            goto mismatch;
        return 0;
    case CL_DEPTH:
        if (type != CL_UNORM_INT16 && type != CL_FLOAT)
            goto mismatch;
        return 0;
    case CL_sRGB: case CL_sRGBx: case CL_sRGBA: case CL_sBGRA:
        if (type != CL_UNORM_INT8)
            goto mismatch;
        return 0;
    default:
        return REFUSE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
                      "unknown channel order 0x%x", order);
    }
    if (packed && type != CL_UNORM_INT_101010_2)
        goto mismatch;
    if (type == CL_UNORM_INT_101010_2 && order != CL_RGBA)
        goto mismatch;
    return 0;
mismatch:
    return REFUSE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
                  "channel order 0x%x with channel type 0x%x", order, type);
}

/*
 * clCreateImage's descriptor.  num_mip_levels and num_samples must be 0:
 * the core specification defines neither (mipmaps need cl_khr_mipmap_image,
 * checked against the devices in validate_dev.c), and PoCL aborts the
 * process on either.  Pitches only describe a buffer the image is made
 * from: host contents arrive packed.
 */
static int check_image(const Crane__CreateImage *im, char *why,
                       size_t why_len)
{
    bool from_mem = im->buffer != 0;
    int rc;

    if (im->bulk_len > PX_MAX_BULK)
        return BAD("bulk of %llu bytes (at most %u)",
                   (unsigned long long)im->bulk_len, PX_MAX_BULK);
    if ((rc = check_mem_flags(im->flags, "image", why, why_len)) ||
        (rc = check_mem_props(im->n_properties, im->properties, "image",
                              why, why_len)) ||
        (rc = check_format(im->channel_order, im->channel_type, why,
                           why_len)))
        return rc;
    if (im->num_samples)
        return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR,
                      "num_samples %u (must be 0)", im->num_samples);
    switch (im->image_type) {
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
        if (!from_mem)
            return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR,
                          "a 1D buffer image names no buffer");
        /* fall through */
    case CL_MEM_OBJECT_IMAGE1D:
        break;
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        if (im->array_size == 0)
            return REFUSE(CL_INVALID_IMAGE_SIZE, "array size 0");
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        if (im->array_size == 0)
            return REFUSE(CL_INVALID_IMAGE_SIZE, "array size 0");
        /* fall through */
    case CL_MEM_OBJECT_IMAGE2D:
        if (im->height == 0)
            return REFUSE(CL_INVALID_IMAGE_SIZE, "height 0");
        break;
    case CL_MEM_OBJECT_IMAGE3D:
        if (im->height == 0 || im->depth == 0)
            return REFUSE(CL_INVALID_IMAGE_SIZE, "height or depth 0");
        break;
    default:
        return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR, "image type 0x%x",
                      im->image_type);
    }
    if (im->width == 0)
        return REFUSE(CL_INVALID_IMAGE_SIZE, "width 0");
    if (from_mem && im->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER &&
        im->image_type != CL_MEM_OBJECT_IMAGE2D)
        return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR,
                      "image type 0x%x cannot be made from a memory object",
                      im->image_type);
    if (im->num_mip_levels && from_mem)
        return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR,
                      "mip levels for an image made from a memory object");
    if (!from_mem && (im->row_pitch || im->slice_pitch))
        return REFUSE(CL_INVALID_IMAGE_DESCRIPTOR,
                      "pitches without a buffer (contents come packed)");
    if (from_mem && im->bulk_len)
        return REFUSE(CL_INVALID_HOST_PTR,
                      "contents given for an image over a memory object");
    return 0;
}

/* clCreateCommandQueue's bits: only those OpenCL 1.x defined. */
#define QUEUE_HOST_BITS                                                      \
    (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE)
#define QUEUE_ALL_BITS                                                       \
    (QUEUE_HOST_BITS | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT)

static int check_queue_bits(uint64_t bits, char *why, size_t why_len)
{
    if (bits & ~(uint64_t)QUEUE_ALL_BITS)
        return BAD("queue: unknown properties 0x%llx",
                   (unsigned long long)(bits & ~(uint64_t)QUEUE_ALL_BITS));
    if ((bits & CL_QUEUE_ON_DEVICE) &&
        !(bits & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
        return BAD("queue: ON_DEVICE without OUT_OF_ORDER_EXEC_MODE_ENABLE");
    if ((bits & CL_QUEUE_ON_DEVICE_DEFAULT) && !(bits & CL_QUEUE_ON_DEVICE))
        return BAD("queue: ON_DEVICE_DEFAULT without ON_DEVICE");
    return 0;
}

/* clCreateCommandQueue(WithProperties): names the specification defines,
 * each once, values in range.  Whether the device can have such a queue is
 * checked against it in validate_dev.c. */
static int check_queue(const Crane__CreateQueue *q, char *why,
                       size_t why_len)
{
    bool seen_props = false, seen_size = false;
    uint64_t bits = 0;
    int rc;

    if (q->legacy) {
        if (q->n_properties)
            return BAD("queue: properties with the legacy call");
        if (q->legacy_properties & ~(uint64_t)QUEUE_HOST_BITS)
            return BAD("queue: properties 0x%llx (clCreateCommandQueue "
                       "takes OUT_OF_ORDER and PROFILING only)",
                       (unsigned long long)q->legacy_properties);
        return 0;
    }
    if ((rc = check_props(q->n_properties, true, "queue", why, why_len)))
        return rc;
    for (size_t i = 0; i < q->n_properties; i += 2) {
        uint64_t name = q->properties[i], value = q->properties[i + 1];
        if (name == CL_QUEUE_PROPERTIES && !seen_props) {
            seen_props = true;
            bits = value;
            if ((rc = check_queue_bits(bits, why, why_len)))
                return rc;
        } else if (name == CL_QUEUE_SIZE && !seen_size) {
            seen_size = true;
        } else {
            return BAD("queue: property 0x%llx %s",
                       (unsigned long long)name,
                       name == CL_QUEUE_PROPERTIES || name == CL_QUEUE_SIZE
                           ? "given twice"
                           : "is not supported");
        }
    }
    if (seen_size && !(bits & CL_QUEUE_ON_DEVICE))
        return BAD("queue: CL_QUEUE_SIZE for a queue not on the device");
    return 0;
}

/* clCreateSamplerWithProperties: the three core names, each once, with
 * values the specification lists. */
static int check_sampler(const Crane__CreateSampler *s, char *why,
                         size_t why_len)
{
    unsigned seen = 0;
    int rc = check_props(s->n_properties, true, "sampler", why, why_len);

    if (rc)
        return rc;
    for (size_t i = 0; i < s->n_properties; i += 2) {
        uint64_t name = s->properties[i], v = s->properties[i + 1];
        unsigned bit;
        bool ok;
        switch (name) {
        case CL_SAMPLER_NORMALIZED_COORDS:
            bit = 1;
            ok = v == CL_TRUE || v == CL_FALSE;
            break;
        case CL_SAMPLER_ADDRESSING_MODE:
            bit = 2;
            ok = v == CL_ADDRESS_NONE || v == CL_ADDRESS_CLAMP_TO_EDGE ||
                 v == CL_ADDRESS_CLAMP || v == CL_ADDRESS_REPEAT ||
                 v == CL_ADDRESS_MIRRORED_REPEAT;
            break;
        case CL_SAMPLER_FILTER_MODE:
            bit = 4;
            ok = v == CL_FILTER_NEAREST || v == CL_FILTER_LINEAR;
            break;
        default:
            return BAD("sampler: property 0x%llx is not supported",
                       (unsigned long long)name);
        }
        if (seen & bit)
            return BAD("sampler: property 0x%llx given twice",
                       (unsigned long long)name);
        if (!ok)
            return BAD("sampler: value 0x%llx for property 0x%llx",
                       (unsigned long long)v, (unsigned long long)name);
        seen |= bit;
    }
    return 0;
}

/* clCreateContext: CL_CONTEXT_PLATFORM and CL_CONTEXT_INTEROP_USER_SYNC,
 * each once.  Every other name (GL, D3D, ... sharing) would hand the vendor
 * a pointer that means nothing on this machine. */
static int check_context(const Crane__CreateContext *cc, char *why,
                         size_t why_len)
{
    bool platform = false, sync = false;
    int rc;

    if (cc->n_devices == 0)
        return BAD("context without devices");
    if ((rc = check_list(cc->n_devices, PX_MAX_DEVICES, "devices", why,
                         why_len)) ||
        (rc = check_props(cc->n_properties, true, "context", why, why_len)))
        return rc;
    for (size_t i = 0; i < cc->n_properties; i += 2) {
        int64_t name = cc->properties[i], v = cc->properties[i + 1];
        bool *seen;
        if (name == CL_CONTEXT_PLATFORM)
            seen = &platform;
        else if (name == CL_CONTEXT_INTEROP_USER_SYNC)
            seen = &sync;
        else
            return REFUSE(CL_INVALID_PROPERTY,
                          "context: property 0x%llx is not supported",
                          (unsigned long long)name);
        if (*seen)
            return REFUSE(CL_INVALID_PROPERTY,
                          "context: property 0x%llx given twice",
                          (unsigned long long)name);
        if (name == CL_CONTEXT_INTEROP_USER_SYNC && v != CL_TRUE &&
            v != CL_FALSE)
            return REFUSE(CL_INVALID_PROPERTY,
                          "context: INTEROP_USER_SYNC %lld",
                          (long long)v);
        *seen = true;
    }
    return 0;
}

/* clCreateSubDevices: one partition scheme, whole.  EQUALLY n (n >= 1);
 * BY_COUNTS c1 ... ck LIST_END (the list end sent as a 0, k >= 1, some
 * count not 0); BY_AFFINITY_DOMAIN one domain. */
static int check_sub_devices(const Crane__CreateSubDevices *s, char *why,
                             size_t why_len)
{
    const int64_t *p = s->properties;
    size_t n = s->n_properties;
    int64_t total = 0;
    int rc;

    if ((rc = check_props(n, false, "sub-devices", why, why_len)) ||
        (rc = check_list(s->n_ids, PX_MAX_DEVICES, "sub-device ids", why,
                         why_len)))
        return rc;
    if (n == 0)
        return BAD("sub-devices: no partition scheme");
    switch (p[0]) {
    case CL_DEVICE_PARTITION_EQUALLY:
        if (n != 2 || p[1] < 1 || p[1] > UINT32_MAX)
            return BAD("sub-devices: EQUALLY takes one count of at least 1");
        return 0;
    case CL_DEVICE_PARTITION_BY_COUNTS:
        if (n < 3 || p[n - 1] != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END)
            return BAD("sub-devices: BY_COUNTS takes counts, then "
                       "LIST_END");
        for (size_t i = 1; i + 1 < n; i++) {
            if (p[i] < 0 || p[i] > UINT32_MAX)
                return REFUSE(CL_INVALID_DEVICE_PARTITION_COUNT,
                              "sub-devices: count %lld", (long long)p[i]);
            total += p[i];
        }
        if (total == 0)
            return REFUSE(CL_INVALID_DEVICE_PARTITION_COUNT,
                          "sub-devices: no compute unit asked for");
        return 0;
    case CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN:
        if (n != 2)
            return BAD("sub-devices: BY_AFFINITY_DOMAIN takes one domain");
        switch (p[1]) {
        case CL_DEVICE_AFFINITY_DOMAIN_NUMA:
        case CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE:
        case CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE:
        case CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE:
        case CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE:
        case CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE:
            return 0;
        default:
            return BAD("sub-devices: affinity domain 0x%llx",
                       (unsigned long long)p[1]);
        }
    default:
        return BAD("sub-devices: partition scheme 0x%llx",
                   (unsigned long long)p[0]);
    }
}

static int check_image_type(uint32_t type, char *why, size_t why_len)
{
    switch (type) {
    case CL_MEM_OBJECT_IMAGE1D: case CL_MEM_OBJECT_IMAGE1D_BUFFER:
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: case CL_MEM_OBJECT_IMAGE3D:
        return 0;
    default:
        return BAD("image type 0x%x", type);
    }
}

/* An SVM pointer argument: an allocation (or NULL) and an offset only. */
static int check_arg_svm(const Crane__KernelArg *a, char *why,
                         size_t why_len)
{
    if (!a->is_svm)
        return a->svm_offset ? BAD("kernel argument %u: svm_offset "
                                   "without is_svm",
                                   a->index)
                             : 0;
    if (a->is_object || a->is_local || a->local_size || a->value.len)
        return BAD("kernel argument %u: an SVM pointer with an object, "
                   "local size or value",
                   a->index);
    if (!a->object && a->svm_offset)
        return BAD("kernel argument %u: offset into a NULL SVM pointer",
                   a->index);
    return 0;
}

static int check_arg(const Crane__KernelArg *a, char *why, size_t why_len)
{
    bool object = a->is_object || a->object != 0;

    if (a->is_svm || a->svm_offset)
        return check_arg_svm(a, why, why_len);

    if (a->value.len > PX_MAX_ARG)
        return BAD("kernel argument %u: %zu bytes (at most %u)", a->index,
                   a->value.len, PX_MAX_ARG);
    if ((object && a->is_local) || (object && a->value.len) ||
        (a->is_local && a->value.len))
        return BAD("kernel argument %u: more than one of object, local "
                   "size and value",
                   a->index);
    if (!a->is_local && a->local_size)
        return BAD("kernel argument %u: local_size without is_local",
                   a->index);
    if (a->is_local && a->local_size == 0)
        return REFUSE(CL_INVALID_ARG_SIZE,
                      "kernel argument %u: local size 0", a->index);
    return 0;
}

static int check_args(Crane__KernelArg **args, size_t n, char *why,
                      size_t why_len)
{
    int rc = check_list(n, PX_MAX_LIST, "kernel arguments", why, why_len);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_arg(args[i], why, why_len);
    return rc;
}

static int check_launch(const Crane__LaunchKernel *l, char *why,
                        size_t why_len)
{
    if (l->work_dim < 1 || l->work_dim > 3)
        return BAD("work_dim %u (1 to 3)", l->work_dim);
    if (l->n_global_size != l->work_dim)
        return BAD("%zu global sizes for work_dim %u", l->n_global_size,
                   l->work_dim);
    if (l->n_global_offset && l->n_global_offset != l->work_dim)
        return BAD("%zu global offsets for work_dim %u", l->n_global_offset,
                   l->work_dim);
    if (l->n_local_size && l->n_local_size != l->work_dim)
        return BAD("%zu local sizes for work_dim %u", l->n_local_size,
                   l->work_dim);
    for (uint32_t i = 0; i < l->work_dim; i++) {
        uint64_t end;
        if (l->n_global_offset &&
            __builtin_add_overflow(l->global_offset[i], l->global_size[i],
                                   &end))
            return REFUSE(CL_INVALID_GLOBAL_OFFSET,
                          "global offset %llu + size %llu overflows",
                          (unsigned long long)l->global_offset[i],
                          (unsigned long long)l->global_size[i]);
        if (l->n_local_size && l->local_size[i] == 0)
            return REFUSE(CL_INVALID_WORK_GROUP_SIZE,
                          "local size 0 in dimension %u", i);
    }
    if (check_list(l->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return CL_INVALID_VALUE;
    return check_args(l->args, l->n_args, why, why_len);
}

/* What a MemCommand op uses: which origins, a region, a pattern, data. */
enum {
    USE_SRC_ORIGIN = 1,
    USE_DST_ORIGIN = 2,
    USE_REGION = 4,
    WRITES_DATA = 8,
};

static int mem_uses(Crane__MemOp op)
{
    switch (op) {
    case CRANE__MEM_OP__MEM_READ: return 0;
    case CRANE__MEM_OP__MEM_WRITE: return WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY: return 0;
    case CRANE__MEM_OP__MEM_FILL: return 0;
    case CRANE__MEM_OP__MEM_READ_RECT: return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_WRITE_RECT:
        return USE_DST_ORIGIN | USE_REGION | WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY_RECT:
        return USE_SRC_ORIGIN | USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_READ_IMAGE: return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_WRITE_IMAGE:
        return USE_DST_ORIGIN | USE_REGION | WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY_IMAGE:
        return USE_SRC_ORIGIN | USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_FILL_IMAGE: return USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER:
        return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE:
        return USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_MIGRATE: return 0;
    default: return -1;
    }
}

static int check_mem(const Crane__MemCommand *c, char *why, size_t why_len)
{
    int uses = mem_uses(c->op);

    if (uses < 0)
        return BAD("unknown memory op %d", (int)c->op);
    if ((uses & USE_SRC_ORIGIN) && c->n_src_origin != 3)
        return BAD("memory op %d needs 3 src_origin values, got %zu",
                   (int)c->op, c->n_src_origin);
    if ((uses & USE_DST_ORIGIN) && c->n_dst_origin != 3)
        return BAD("memory op %d needs 3 dst_origin values, got %zu",
                   (int)c->op, c->n_dst_origin);
    if ((uses & USE_REGION) && c->n_region != 3)
        return BAD("memory op %d needs 3 region values, got %zu", (int)c->op,
                   c->n_region);
    if (!(uses & USE_SRC_ORIGIN) && c->n_src_origin)
        return BAD("memory op %d takes no src_origin", (int)c->op);
    if (!(uses & USE_DST_ORIGIN) && c->n_dst_origin)
        return BAD("memory op %d takes no dst_origin", (int)c->op);
    if (!(uses & USE_REGION) && c->n_region)
        return BAD("memory op %d takes no region", (int)c->op);
    if (c->bulk_len > PX_MAX_BULK)
        return BAD("bulk of %llu bytes (at most %u)",
                   (unsigned long long)c->bulk_len, PX_MAX_BULK);
    if (!(uses & WRITES_DATA) && c->bulk_len)
        return BAD("memory op %d carries no data, bulk_len %llu", (int)c->op,
                   (unsigned long long)c->bulk_len);
    if (c->op == CRANE__MEM_OP__MEM_WRITE && c->bulk_len != c->size)
        return BAD("write of %llu bytes with bulk_len %llu",
                   (unsigned long long)c->size,
                   (unsigned long long)c->bulk_len);
    if (c->op == CRANE__MEM_OP__MEM_WRITE_RECT) {
        uint64_t n;
        if (px_mul3(c->region[0], c->region[1], c->region[2], &n) ||
            n != c->bulk_len)
            return BAD("rectangular write region does not match bulk_len "
                       "%llu",
                       (unsigned long long)c->bulk_len);
    }
    if (c->op == CRANE__MEM_OP__MEM_FILL &&
        !crn_fill_pattern_ok(c->pattern.len, c->dst_offset, c->size))
        return BAD("fill pattern of %zu bytes at offset %llu, size %llu "
                   "(1, 2, 4, ... %d bytes; offset and size its multiples)",
                   c->pattern.len, (unsigned long long)c->dst_offset,
                   (unsigned long long)c->size, PX_MAX_PATTERN);
    if (c->op == CRANE__MEM_OP__MEM_MIGRATE &&
        (c->n_objects == 0 || !crn_migrate_flags_ok(c->flags)))
        return BAD("migration of %zu objects with flags 0x%llx",
                   c->n_objects, (unsigned long long)c->flags);
    if (c->op != CRANE__MEM_OP__MEM_MIGRATE && (c->flags || c->n_objects))
        return BAD("memory op %d takes no flags or objects", (int)c->op);
    if (c->op == CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len != 16)
        return BAD("image fill pattern of %zu bytes (16)", c->pattern.len);
    if (c->op != CRANE__MEM_OP__MEM_FILL &&
        c->op != CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len)
        return BAD("memory op %d takes no pattern", (int)c->op);
    if (check_list(c->n_objects, PX_MAX_LIST, "objects", why, why_len) ||
        check_list(c->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return CL_INVALID_VALUE;
    return 0;
}

static int check_info(const Crane__GetInfo *g, char *why, size_t why_len)
{
    if (g->fn < CRANE__INFO_FN__INFO_PLATFORM ||
        g->fn > CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return BAD("unknown info function %d", (int)g->fn);
    if (g->size > PX_MAX_INFO)
        return BAD("info size %llu (at most %u)",
                   (unsigned long long)g->size, PX_MAX_INFO);
    if (g->input.len > PX_MAX_ARG)
        return BAD("info input of %zu bytes", g->input.len);
    if (g->fn == CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return check_image_type(g->image_type, why, why_len) ||
                       check_mem_flags(g->flags, "image formats", why,
                                       why_len)
                   ? CL_INVALID_VALUE
                   : 0;
    return 0;
}

/* --- remote backend additions (shim/remote_*.c's newer messages) ------- */

/* A program's bytes as bulk: within the bulk limit, and for binaries one
 * length per device adding up to the bulk, with nothing inline beside. */
static int check_program_bulk(const Crane__CreateProgram *p, char *why,
                              size_t why_len)
{
    uint64_t sum = 0;

    if (!p->bulk_len)
        return p->n_binary_lens
                   ? BAD("binary lengths without bulk program bytes")
                   : 0;
    if (p->bulk_len > PX_MAX_BULK)
        return BAD("program bulk of %llu bytes (at most %u)",
                   (unsigned long long)p->bulk_len, PX_MAX_BULK);
    if (p->source.len || p->n_binaries)
        return BAD("program bytes both inline and as bulk");
    if (p->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY)
        return p->n_binary_lens ? BAD("binary lengths for a program not "
                                      "made from binaries")
                                : 0;
    if (p->n_binary_lens != p->n_devices)
        return BAD("%zu binary lengths for %zu devices", p->n_binary_lens,
                   p->n_devices);
    for (size_t i = 0; i < p->n_binary_lens; i++)
        if (__builtin_add_overflow(sum, p->binary_lens[i], &sum))
            return BAD("binary lengths overflow");
    if (sum != p->bulk_len)
        return BAD("binary lengths add up to %llu, bulk is %llu bytes",
                   (unsigned long long)sum, (unsigned long long)p->bulk_len);
    return 0;
}

/* A specialization constant's value: 1 to PX_MAX_ARG bytes. */
static int check_spec_constant(const Crane__SetSpecConstant *c, char *why,
                               size_t why_len)
{
    if (c->value.len == 0 || c->value.len > PX_MAX_ARG)
        return BAD("specialization constant of %zu bytes (1 to %u)",
                   c->value.len, PX_MAX_ARG);
    return 0;
}

/* Coarse-grained SVM only (the client keeps the program's copy, so
 * fine-grained sharing cannot hold), of a size and alignment OpenCL
 * accepts. */
static int check_svm_alloc(const Crane__SvmAlloc *a, char *why,
                           size_t why_len)
{
    const uint64_t access =
        CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;

    if (a->flags & ~access)
        return REFUSE(CL_INVALID_VALUE,
                      "SVM flags 0x%llx: only coarse-grained SVM is "
                      "remoted",
                      (unsigned long long)a->flags);
    if (a->size == 0 || a->size > PX_MAX_SVM)
        return REFUSE(CL_INVALID_VALUE, "SVM of %llu bytes (1 to %llu)",
                      (unsigned long long)a->size,
                      (unsigned long long)PX_MAX_SVM);
    if (a->alignment & (a->alignment - 1))
        return REFUSE(CL_INVALID_VALUE,
                      "SVM alignment %u is no power of two", a->alignment);
    return 0;
}

static int check_program(const Crane__CreateProgram *p, char *why,
                         size_t why_len)
{
    if (p->origin < CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE ||
        p->origin > CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN)
        return BAD("unknown program origin %d", (int)p->origin);
    if (check_list(p->n_devices, PX_MAX_DEVICES, "devices", why, why_len))
        return CL_INVALID_VALUE;
    if (p->bulk_len || p->n_binary_lens)
        return check_program_bulk(p, why, why_len);
    if (p->origin == CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY &&
        (p->n_binaries != p->n_devices || p->n_devices == 0))
        return BAD("%zu binaries for %zu devices", p->n_binaries,
                   p->n_devices);
    if (p->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY && p->n_binaries)
        return BAD("binaries given for a program not made from binaries");
    return 0;
}

static int check_build(const Crane__BuildProgram *b, char *why,
                       size_t why_len)
{
    if (b->op < CRANE__BUILD_OP__BUILD || b->op > CRANE__BUILD_OP__LINK)
        return BAD("unknown build op %d", (int)b->op);
    if (check_list(b->n_devices, PX_MAX_DEVICES, "devices", why, why_len) ||
        check_list(b->n_inputs, PX_MAX_LIST, "inputs", why, why_len))
        return CL_INVALID_VALUE;
    if (strlen(b->options) > PX_MAX_OPTIONS)
        return BAD("build options of %zu bytes", strlen(b->options));
    if (b->op == CRANE__BUILD_OP__COMPILE && b->n_input_names != b->n_inputs)
        return BAD("%zu header names for %zu headers", b->n_input_names,
                   b->n_inputs);
    if (b->op != CRANE__BUILD_OP__COMPILE && b->n_input_names)
        return BAD("header names outside a compile");
    for (size_t i = 0; i < b->n_input_names; i++)
        if (strlen(b->input_names[i]) > PX_MAX_NAME)
            return BAD("header name of %zu bytes",
                       strlen(b->input_names[i]));
    return 0;
}

int px_validate(const Crane__ClientMessage *m, char *why, size_t why_len)
{
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_HELLO:
        if (strlen(m->hello->program) > PX_MAX_NAME)
            return BAD("program name too long");
        if (m->hello->resume_token.len > PX_MAX_TOKEN)
            return BAD("resume token of %zu bytes",
                       m->hello->resume_token.len);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_AUTH:
        if (m->auth->mac.len > PX_MAX_TOKEN)
            return BAD("MAC of %zu bytes", m->auth->mac.len);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_GET_INFO:
        return check_info(m->get_info, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_DEVICES:
        return check_sub_devices(m->create_sub_devices, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT:
        return check_context(m->create_context, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE:
        return check_queue(m->create_queue, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER: {
        const Crane__CreateBuffer *b = m->create_buffer;
        int rc;
        if (b->bulk_len > PX_MAX_BULK)
            return BAD("bulk of %llu bytes (at most %u)",
                       (unsigned long long)b->bulk_len, PX_MAX_BULK);
        if (b->bulk_len && b->bulk_len != b->size)
            return BAD("buffer of %llu bytes with %llu bytes of contents",
                       (unsigned long long)b->size,
                       (unsigned long long)b->bulk_len);
        if (b->size == 0)
            return REFUSE(CL_INVALID_BUFFER_SIZE, "buffer of 0 bytes");
        if ((rc = check_mem_flags(b->flags, "buffer", why, why_len)))
            return rc;
        return check_mem_props(b->n_properties, b->properties, "buffer", why,
                               why_len);
    }
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_BUFFER: {
        const Crane__CreateSubBuffer *sb = m->create_sub_buffer;
        uint64_t end;
        if (sb->size == 0)
            return REFUSE(CL_INVALID_BUFFER_SIZE, "sub-buffer of 0 bytes");
        if (__builtin_add_overflow(sb->origin, sb->size, &end))
            return BAD("sub-buffer origin %llu + size %llu overflows",
                       (unsigned long long)sb->origin,
                       (unsigned long long)sb->size);
        return check_mem_flags(sb->flags, "sub-buffer", why, why_len);
    }
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE:
        return check_image(m->create_image, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SAMPLER:
        return check_sampler(m->create_sampler, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM:
        return check_program(m->create_program, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM:
        return check_build(m->build_program, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_KERNEL:
        if (strlen(m->create_kernel->name) > PX_MAX_NAME)
            return BAD("kernel name of %zu bytes",
                       strlen(m->create_kernel->name));
        return check_list(m->create_kernel->n_all_ids, PX_MAX_LIST,
                          "kernel ids", why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT:
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_RELEASE:
        if (m->release->kind < CRANE__OBJ_KIND__OBJ_PLATFORM ||
            m->release->kind > CRANE__OBJ_KIND__OBJ_EVENT)
            return BAD("release of unknown kind %d", (int)m->release->kind);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_SET_KERNEL_ARGS:
        return check_args(m->set_kernel_args->args,
                          m->set_kernel_args->n_args, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL:
        return check_launch(m->launch_kernel, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        return check_mem(m->mem_command, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_SYNC:
        if (m->sync->op < CRANE__SYNC_OP__SYNC_FINISH ||
            m->sync->op > CRANE__SYNC_OP__SYNC_PING)
            return BAD("unknown sync op %d", (int)m->sync->op);
        return check_list(m->sync->n_events, PX_MAX_LIST, "events", why,
                          why_len);
    case CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS:
        if (m->set_user_event_status->status > CL_COMPLETE)
            return BAD("user event status %d (CL_COMPLETE or an error)",
                       m->set_user_event_status->status);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_WATCH_EVENT:
        if (m->watch_event->status < 0 || m->watch_event->status > 2)
            return BAD("watched status %d (CL_COMPLETE, CL_RUNNING or "
                       "CL_SUBMITTED)",
                       m->watch_event->status);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_DEVICE_TIMER:
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_SET_SPEC_CONSTANT:
        return check_spec_constant(m->set_spec_constant, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_SHM_ATTACH:
        /* Checked where the area is mapped (conn.c). */
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_SVM_ALLOC:
        return check_svm_alloc(m->svm_alloc, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG__NOT_SET:
        return BAD("message without a call");
    default:
        return BAD("unknown call %d", (int)m->msg_case);
    }
}
