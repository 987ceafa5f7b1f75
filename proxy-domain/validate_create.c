/* The fields of an object's creation that the vendor gets (memory flags
 * and properties, image formats and descriptors, queue, sampler and context
 * properties, partitions), checked as the OpenCL specification says. */
#include "validate_common.h"

#include <string.h>

/* cl_mem_flags: known bits, at most one access mode for the kernel and one
 * for the host, USE_HOST_PTR with neither ALLOC_HOST_PTR nor
 * COPY_HOST_PTR. */
int px_check_mem_flags(uint64_t flags, const char *what, char *why,
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
int px_check_mem_props(size_t n, const uint64_t *props, const char *what,
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
int px_check_create_image(const Crane__CreateImage *im, char *why,
                   size_t why_len)
{
    bool from_mem = im->buffer != 0;
    int rc;

    if (im->bulk_len > PX_MAX_BULK)
        return BAD("bulk of %llu bytes (at most %u)",
                   (unsigned long long)im->bulk_len, PX_MAX_BULK);
    if ((rc = px_check_mem_flags(im->flags, "image", why, why_len)) ||
        (rc = px_check_mem_props(im->n_properties, im->properties, "image",
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
int px_check_create_queue(const Crane__CreateQueue *q, char *why,
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
    if ((rc = px_check_props(q->n_properties, true, "queue", why, why_len)))
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
    /* CL_QUEUE_SIZE without CL_QUEUE_ON_DEVICE is the vendor's to judge:
     * PoCL 3.1 takes it, so a switch must be able to remake such a queue
     * here (tests/programs/conformance, queue2.size-only). */
    return 0;
}

/* clCreateSamplerWithProperties: the three core names, each once, with
 * values the specification lists. */
int px_check_create_sampler(const Crane__CreateSampler *s, char *why,
                     size_t why_len)
{
    unsigned seen = 0;
    int rc = px_check_props(s->n_properties, true, "sampler", why, why_len);

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
int px_check_create_context(const Crane__CreateContext *cc, char *why,
                     size_t why_len)
{
    bool platform = false, sync = false;
    int rc;

    if (cc->n_devices == 0)
        return BAD("context without devices");
    if ((rc = px_check_list(cc->n_devices, PX_MAX_DEVICES, "devices", why,
                            why_len)) ||
        (rc = px_check_props(cc->n_properties, true, "context", why, why_len)))
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
int px_check_create_sub_devices(const Crane__CreateSubDevices *s, char *why,
                         size_t why_len)
{
    const int64_t *p = s->properties;
    size_t n = s->n_properties;
    int64_t total = 0;
    int rc;

    if ((rc = px_check_props(n, false, "sub-devices", why, why_len)) ||
        (rc = px_check_list(s->n_ids, PX_MAX_DEVICES, "sub-device ids", why,
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
