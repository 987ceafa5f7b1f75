/* The remote backend's object calls: creation, release and queries of
 * devices, contexts, queues, memory objects, samplers, programs, kernels
 * and events, each turned into one message of proto/remote.proto. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "remote.h"

#define ID(h) ((h) ? ((const struct rc_obj *)(h))->id : 0)
#define SET_ERR(e)          \
    do {                    \
        if (errcode_ret)    \
            *errcode_ret = (e); \
    } while (0)

/* A new object of SIZE bytes with a fresh id, registered in the maps. */
static void *obj_new(enum shim_kind kind, size_t size)
{
    struct rc_obj *o = calloc(1, size);

    if (!o)
        return NULL;
    o->dispatch = &shim_remote_dispatch;
    o->id = shim_remote_new_id();
    o->kind = kind;
    if (shim_remote_track(o) < 0) {
        free(o);
        return NULL;
    }
    return o;
}

/* Sends a creation; on failure the object is forgotten again. */
static void *created(struct rc_obj *o, Crane__ClientMessage *m,
                     const void *bulk, size_t bulk_len, cl_int *errcode_ret)
{
    cl_int err = shim_remote_send(m, bulk, bulk_len);

    SET_ERR(err);
    if (err != CL_SUCCESS) {
        shim_remote_untrack(o);
        free(o);
        return NULL;
    }
    return o;
}

/* Creations whose errors the program must see at once. */
static void *created_sync(struct rc_obj *o, Crane__ClientMessage *m,
                          const void *bulk, size_t bulk_len,
                          cl_int *errcode_ret, struct rc_reply *keep)
{
    struct rc_reply r;
    cl_int err = shim_remote_call(m, bulk, bulk_len, NULL, 0, &r);

    SET_ERR(err);
    if (keep)
        *keep = r;
    else
        shim_remote_reply_free(&r);
    if (err != CL_SUCCESS) {
        shim_remote_untrack(o);
        free(o);
        return NULL;
    }
    return o;
}

static cl_int release(void *h, enum shim_kind kind)
{
    struct rc_obj *o = h;

    if (!o || o->kind != kind)
        return CL_INVALID_VALUE;
    Crane__Release rel = CRANE__RELEASE__INIT;
    rel.kind = (Crane__ObjKind)kind;
    rel.id = o->id;
    RC_MSG(m, release, RELEASE, &rel);
    cl_int err = shim_remote_send(&m, NULL, 0);
    shim_remote_untrack(o);
    return err;
}

/* --- queries ---------------------------------------------------------------- */

/* Whether a query's value holds handles, which travel as ids. */
static bool holds_handles(Crane__InfoFn fn, cl_uint param)
{
    switch (fn) {
    case CRANE__INFO_FN__INFO_DEVICE:
        return param == CL_DEVICE_PLATFORM || param == CL_DEVICE_PARENT_DEVICE;
    case CRANE__INFO_FN__INFO_CONTEXT:
        return param == CL_CONTEXT_DEVICES;
    case CRANE__INFO_FN__INFO_QUEUE:
        return param == CL_QUEUE_CONTEXT || param == CL_QUEUE_DEVICE ||
               param == CL_QUEUE_DEVICE_DEFAULT;
    case CRANE__INFO_FN__INFO_MEM:
        return param == CL_MEM_CONTEXT || param == CL_MEM_ASSOCIATED_MEMOBJECT;
    case CRANE__INFO_FN__INFO_IMAGE:
        return param == CL_IMAGE_BUFFER;
    case CRANE__INFO_FN__INFO_SAMPLER:
        return param == CL_SAMPLER_CONTEXT;
    case CRANE__INFO_FN__INFO_PROGRAM:
        return param == CL_PROGRAM_CONTEXT || param == CL_PROGRAM_DEVICES;
    case CRANE__INFO_FN__INFO_KERNEL:
        return param == CL_KERNEL_CONTEXT || param == CL_KERNEL_PROGRAM;
    case CRANE__INFO_FN__INFO_EVENT:
        return param == CL_EVENT_COMMAND_QUEUE || param == CL_EVENT_CONTEXT;
    default:
        return false;
    }
}

static cl_int get_info_in(Crane__InfoFn fn, uint64_t id, uint64_t other,
                          cl_uint arg_index, cl_uint param, const void *input,
                          size_t input_len, size_t size, void *value,
                          size_t *size_ret)
{
    Crane__GetInfo gi = CRANE__GET_INFO__INIT;
    struct rc_reply r;

    gi.fn = fn;
    gi.id = id;
    gi.other_id = other;
    gi.arg_index = arg_index;
    gi.param = param;
    gi.size = value ? size : 0;
    gi.input.data = (uint8_t *)input;
    gi.input.len = input_len;
    RC_MSG(m, get_info, GET_INFO, &gi);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    if (err == CL_SUCCESS) {
        size_t len = r.reply->value.len;
        if (value) {
            if (len > size) {
                err = CL_INVALID_VALUE;
            } else {
                memcpy(value, r.reply->value.data, len);
                if (holds_handles(fn, param))
                    for (size_t i = 0; i < len / sizeof(uint64_t); i++) {
                        uint64_t v;
                        memcpy(&v, (char *)value + i * 8, 8);
                        void *h = shim_remote_by_id(v);
                        memcpy((char *)value + i * 8, &h, 8);
                    }
            }
        }
        if (size_ret)
            *size_ret = r.reply->size_ret;
    }
    shim_remote_reply_free(&r);
    return err;
}

static cl_int get_info(Crane__InfoFn fn, uint64_t id, uint64_t other,
                       cl_uint param, size_t size, void *value,
                       size_t *size_ret)
{
    return get_info_in(fn, id, other, 0, param, NULL, 0, size, value,
                       size_ret);
}

#define INFO_FN(name, type, FN)                                             \
    static cl_int CL_API_CALL rc_##name(type h, cl_uint param, size_t size, \
                                        void *value, size_t *size_ret)      \
    {                                                                       \
        return get_info(CRANE__INFO_FN__##FN, ID(h), 0, param, size, value, \
                        size_ret);                                          \
    }
INFO_FN(clGetPlatformInfo, cl_platform_id, INFO_PLATFORM)
INFO_FN(clGetDeviceInfo, cl_device_id, INFO_DEVICE)
INFO_FN(clGetContextInfo, cl_context, INFO_CONTEXT)
INFO_FN(clGetCommandQueueInfo, cl_command_queue, INFO_QUEUE)
INFO_FN(clGetMemObjectInfo, cl_mem, INFO_MEM)
INFO_FN(clGetImageInfo, cl_mem, INFO_IMAGE)
INFO_FN(clGetPipeInfo, cl_mem, INFO_PIPE)
INFO_FN(clGetSamplerInfo, cl_sampler, INFO_SAMPLER)
INFO_FN(clGetKernelInfo, cl_kernel, INFO_KERNEL)
INFO_FN(clGetEventInfo, cl_event, INFO_EVENT)
INFO_FN(clGetEventProfilingInfo, cl_event, INFO_EVENT_PROFILING)
#undef INFO_FN

static cl_int CL_API_CALL rc_clGetProgramBuildInfo(
    cl_program p, cl_device_id d, cl_program_build_info param, size_t size,
    void *value, size_t *size_ret)
{
    return get_info(CRANE__INFO_FN__INFO_PROGRAM_BUILD, ID(p), ID(d), param,
                    size, value, size_ret);
}

static cl_int CL_API_CALL rc_clGetKernelWorkGroupInfo(
    cl_kernel k, cl_device_id d, cl_kernel_work_group_info param, size_t size,
    void *value, size_t *size_ret)
{
    return get_info(CRANE__INFO_FN__INFO_KERNEL_WORK_GROUP, ID(k), ID(d),
                    param, size, value, size_ret);
}

static cl_int CL_API_CALL rc_clGetKernelArgInfo(cl_kernel k, cl_uint index,
                                                cl_kernel_arg_info param,
                                                size_t size, void *value,
                                                size_t *size_ret)
{
    return get_info_in(CRANE__INFO_FN__INFO_KERNEL_ARG, ID(k), 0, index,
                       param, NULL, 0, size, value, size_ret);
}

static cl_int CL_API_CALL rc_clGetKernelSubGroupInfo(
    cl_kernel k, cl_device_id d, cl_kernel_sub_group_info param,
    size_t in_size, const void *in, size_t size, void *value,
    size_t *size_ret)
{
    return get_info_in(CRANE__INFO_FN__INFO_KERNEL_SUB_GROUP, ID(k), ID(d), 0,
                       param, in, in_size, size, value, size_ret);
}

/* Binaries come back concatenated; the program gave one pointer each. */
static cl_int CL_API_CALL rc_clGetProgramInfo(cl_program p, cl_uint param,
                                              size_t size, void *value,
                                              size_t *size_ret)
{
    if (param != CL_PROGRAM_BINARIES || !value)
        return get_info(CRANE__INFO_FN__INFO_PROGRAM, ID(p), 0, param, size,
                        value, size_ret);
    size_t sizes[64], n_sizes = 0, total = 0;
    cl_int err = get_info(CRANE__INFO_FN__INFO_PROGRAM, ID(p), 0,
                          CL_PROGRAM_BINARY_SIZES, sizeof(sizes), sizes,
                          &n_sizes);
    if (err != CL_SUCCESS)
        return err;
    n_sizes /= sizeof(size_t);
    if (size < n_sizes * sizeof(unsigned char *))
        return CL_INVALID_VALUE;
    for (size_t i = 0; i < n_sizes; i++)
        total += sizes[i];
    unsigned char *all = malloc(total ? total : 1);
    if (!all)
        return CL_OUT_OF_HOST_MEMORY;
    err = get_info(CRANE__INFO_FN__INFO_PROGRAM, ID(p), 0,
                   CL_PROGRAM_BINARIES, total, all, NULL);
    if (err == CL_SUCCESS) {
        unsigned char **out = value;
        size_t at = 0;
        for (size_t i = 0; i < n_sizes; i++) {
            if (out[i])
                memcpy(out[i], all + at, sizes[i]);
            at += sizes[i];
        }
        if (size_ret)
            *size_ret = n_sizes * sizeof(unsigned char *);
    }
    free(all);
    return err;
}

static cl_int CL_API_CALL rc_clGetSupportedImageFormats(
    cl_context c, cl_mem_flags flags, cl_mem_object_type type, cl_uint n,
    cl_image_format *formats, cl_uint *n_ret)
{
    Crane__GetInfo gi = CRANE__GET_INFO__INIT;
    struct rc_reply r;

    gi.fn = CRANE__INFO_FN__INFO_IMAGE_FORMATS;
    gi.id = ID(c);
    gi.flags = flags;
    gi.image_type = type;
    gi.size = formats ? n * sizeof(cl_image_format) : 0;
    RC_MSG(m, get_info, GET_INFO, &gi);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    if (err == CL_SUCCESS) {
        size_t len = r.reply->value.len;
        if (formats && len <= n * sizeof(cl_image_format))
            memcpy(formats, r.reply->value.data, len);
        if (n_ret)
            *n_ret = (cl_uint)(r.reply->size_ret / sizeof(cl_image_format));
    }
    shim_remote_reply_free(&r);
    return err;
}

/* --- platforms and devices ---------------------------------------------------- */

static cl_int CL_API_CALL rc_clGetDeviceIDs(cl_platform_id platform,
                                            cl_device_type type, cl_uint n,
                                            cl_device_id *devices,
                                            cl_uint *n_ret)
{
    const struct rc_platform *p = (const void *)platform;
    cl_uint found = 0;

    for (cl_uint i = 0; i < p->n_devices; i++) {
        const struct rc_device *d = p->devices[i];
        bool match = type == CL_DEVICE_TYPE_ALL || (d->type & type) ||
                     (type == CL_DEVICE_TYPE_DEFAULT && i == 0);
        if (!match)
            continue;
        if (devices && found < n)
            devices[found] = (cl_device_id)d;
        found++;
    }
    if (n_ret)
        *n_ret = found;
    return found ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

static cl_int CL_API_CALL rc_clCreateSubDevices(
    cl_device_id in, const cl_device_partition_property *props, cl_uint n,
    cl_device_id *out, cl_uint *n_ret)
{
    Crane__CreateSubDevices sd = CRANE__CREATE_SUB_DEVICES__INIT;
    int64_t pv[64];
    uint64_t ids[64];
    struct rc_device *made[64];
    struct rc_reply r;
    size_t np = 0;

    while (props && props[np] && np < 63) {
        pv[np] = (int64_t)props[np];
        np++;
    }
    if (out && n > 64)
        return CL_INVALID_VALUE;
    sd.device = ID(in);
    sd.properties = pv;
    sd.n_properties = np;
    for (cl_uint i = 0; out && i < n; i++) {
        made[i] = obj_new(SHIM_DEVICE, sizeof(struct rc_device));
        if (!made[i]) {
            while (i--) {
                shim_remote_untrack(&made[i]->obj);
                free(made[i]);
            }
            return CL_OUT_OF_HOST_MEMORY;
        }
        ids[i] = made[i]->obj.id;
    }
    sd.ids = ids;
    sd.n_ids = out ? n : 0;
    RC_MSG(m, create_sub_devices, CREATE_SUB_DEVICES, &sd);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    cl_uint count = err == CL_SUCCESS ? (cl_uint)r.reply->count : 0;
    shim_remote_reply_free(&r);
    for (cl_uint i = 0; out && i < n; i++) {
        if (err == CL_SUCCESS && i < count) {
            out[i] = (cl_device_id)made[i];
            made[i]->type = ((const struct rc_device *)in)->type;
        } else {
            shim_remote_untrack(&made[i]->obj);
            free(made[i]);
        }
    }
    if (err == CL_SUCCESS && n_ret)
        *n_ret = count;
    return err;
}

static cl_int CL_API_CALL rc_clReleaseDevice(cl_device_id d)
{
    /* Root devices belong to the connection; sub-devices to the program. */
    for (struct rc_obj *o = (void *)d; o && shim_remote_by_id(o->id) == o;) {
        if (o->id & (1ULL << 63))
            return CL_SUCCESS;
        cl_int err = release(d, SHIM_DEVICE);
        free(d);
        return err;
    }
    return CL_INVALID_DEVICE;
}

/* A 0-terminated list of 64-bit name/value properties as the message's
 * pairs (at most 15 pairs, the rest is ignored); returns their count. */
static size_t prop_pairs(uint64_t out[32], const cl_ulong *props)
{
    size_t n = 0;

    while (props && props[n] && n < 30) {
        out[n] = props[n];
        out[n + 1] = props[n + 1];
        n += 2;
    }
    return n;
}

/* --- contexts and queues ------------------------------------------------------ */

static cl_context CL_API_CALL rc_clCreateContext(
    const cl_context_properties *props, cl_uint n, const cl_device_id *devs,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
    void *data, cl_int *errcode_ret)
{
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
    uint64_t ids[64];
    int64_t pv[64];
    size_t np = 0;

    (void)notify;  /* the proxy's errors come back as error codes */
    (void)data;
    if (!devs || n == 0 || n > 64) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++)
        ids[i] = ID(devs[i]);
    for (size_t i = 0; props && props[i] && np < 62; i += 2) {
        pv[np++] = (int64_t)props[i];
        pv[np++] = props[i] == CL_CONTEXT_PLATFORM
                       ? (int64_t)ID((void *)props[i + 1])
                       : (int64_t)props[i + 1];
    }
    struct rc_obj *o = obj_new(SHIM_CONTEXT, sizeof(struct rc_obj));
    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cc.id = o->id;
    cc.devices = ids;
    cc.n_devices = n;
    cc.properties = pv;
    cc.n_properties = np;
    RC_MSG(m, create_context, CREATE_CONTEXT, &cc);
    return created_sync(o, &m, NULL, 0, errcode_ret, NULL);
}

static cl_int CL_API_CALL rc_clReleaseContext(cl_context c)
{
    cl_int err = release(c, SHIM_CONTEXT);
    free(c);
    return err;
}

static cl_command_queue create_queue(cl_context c, cl_device_id d,
                                     const cl_queue_properties *props,
                                     bool legacy, cl_ulong legacy_props,
                                     cl_int *errcode_ret)
{
    Crane__CreateQueue cq = CRANE__CREATE_QUEUE__INIT;
    uint64_t pv[32];
    size_t np = 0;

    np = prop_pairs(pv, props);
    struct rc_obj *o = obj_new(SHIM_QUEUE, sizeof(struct rc_queue));
    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cq.id = o->id;
    cq.context = ID(c);
    cq.device = ID(d);
    cq.properties = pv;
    cq.n_properties = np;
    cq.legacy = legacy;
    cq.legacy_properties = legacy_props;
    RC_MSG(m, create_queue, CREATE_QUEUE, &cq);
    return created(o, &m, NULL, 0, errcode_ret);
}

static cl_command_queue CL_API_CALL rc_clCreateCommandQueue(
    cl_context c, cl_device_id d, cl_command_queue_properties props,
    cl_int *errcode_ret)
{
    return create_queue(c, d, NULL, true, props, errcode_ret);
}

static cl_command_queue CL_API_CALL rc_clCreateCommandQueueWithProperties(
    cl_context c, cl_device_id d, const cl_queue_properties *props,
    cl_int *errcode_ret)
{
    return create_queue(c, d, props, false, 0, errcode_ret);
}

static cl_int CL_API_CALL rc_clReleaseCommandQueue(cl_command_queue q)
{
    cl_int err = release(q, SHIM_QUEUE);
    free(q);
    return err;
}

/* --- memory objects ------------------------------------------------------------ */

static struct rc_mem *mem_new(cl_mem_flags flags, size_t size, void *host)
{
    struct rc_mem *mem = obj_new(SHIM_MEM, sizeof(struct rc_mem));

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
    bool with_data =
        host && (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR));

    np = prop_pairs(pv, props);
    struct rc_mem *mem = mem_new(flags, size, host);
    if (!mem) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cb.id = mem->obj.id;
    cb.context = ID(c);
    cb.flags = flags;
    cb.size = size;
    cb.properties = pv;
    cb.n_properties = np;
    cb.bulk_len = with_data ? size : 0;
    RC_MSG(m, create_buffer, CREATE_BUFFER, &cb);
    return created(&mem->obj, &m, with_data ? host : NULL, cb.bulk_len,
                   errcode_ret);
}

static cl_mem CL_API_CALL rc_clCreateBuffer(cl_context c, cl_mem_flags flags,
                                            size_t size, void *host,
                                            cl_int *errcode_ret)
{
    return create_buffer(c, NULL, flags, size, host, errcode_ret);
}

static cl_mem CL_API_CALL rc_clCreateBufferWithProperties(
    cl_context c, const cl_mem_properties *props, cl_mem_flags flags,
    size_t size, void *host, cl_int *errcode_ret)
{
    return create_buffer(c, props, flags, size, host, errcode_ret);
}

static cl_mem CL_API_CALL rc_clCreateSubBuffer(cl_mem buffer,
                                               cl_mem_flags flags,
                                               cl_buffer_create_type type,
                                               const void *info,
                                               cl_int *errcode_ret)
{
    const cl_buffer_region *reg = info;
    const struct rc_mem *parent = (const void *)buffer;

    if (type != CL_BUFFER_CREATE_TYPE_REGION || !reg) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    Crane__CreateSubBuffer sb = CRANE__CREATE_SUB_BUFFER__INIT;
    void *host = parent->host_ptr ? (char *)parent->host_ptr + reg->origin
                                  : NULL;
    struct rc_mem *mem = mem_new(parent->flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR,
                                 reg->size, NULL);
    if (!mem) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    mem->host_ptr = host;
    sb.id = mem->obj.id;
    sb.buffer = ID(buffer);
    sb.flags = flags;
    sb.origin = reg->origin;
    sb.size = reg->size;
    RC_MSG(m, create_sub_buffer, CREATE_SUB_BUFFER, &sb);
    /* Alignment and bounds are the device's to judge: wait for them. */
    return created_sync(&mem->obj, &m, NULL, 0, errcode_ret, NULL);
}

/* Packs host image data the program laid out with its own pitches. */
static void *pack_image(const void *host, const cl_image_desc *d, size_t elem,
                        size_t *len)
{
    size_t reg[3];
    shim_image_desc_region(d, reg);
    size_t row = reg[0] * elem;
    size_t in_row = d->image_row_pitch ? d->image_row_pitch : row;
    size_t in_slice = d->image_slice_pitch ? d->image_slice_pitch
                                           : in_row * reg[1];
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
        SET_ERR(!fmt ? CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
                     : CL_INVALID_IMAGE_DESCRIPTOR);
        return NULL;
    }
    size_t elem = shim_image_elem_size(fmt);
    if (host && (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)) &&
        !(packed = pack_image(host, desc, elem, &len))) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    np = prop_pairs(pv, props);
    size_t reg[3];
    shim_image_desc_region(desc, reg);
    struct rc_mem *mem = mem_new(flags, reg[0] * elem * reg[1] * reg[2], host);
    if (!mem) {
        free(packed);
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    mem->elem = elem;
    ci.id = mem->obj.id;
    ci.context = ID(c);
    ci.flags = flags;
    ci.channel_order = fmt->image_channel_order;
    ci.channel_type = fmt->image_channel_data_type;
    ci.image_type = desc->image_type;
    ci.width = desc->image_width;
    ci.height = desc->image_height;
    ci.depth = desc->image_depth;
    ci.array_size = desc->image_array_size;
    ci.buffer = ID(desc->buffer);
    ci.row_pitch = ci.buffer ? desc->image_row_pitch : 0;
    ci.slice_pitch = ci.buffer ? desc->image_slice_pitch : 0;
    ci.num_mip_levels = desc->num_mip_levels;
    ci.num_samples = desc->num_samples;
    ci.properties = pv;
    ci.n_properties = np;
    ci.bulk_len = len;
    RC_MSG(m, create_image, CREATE_IMAGE, &ci);
    /* Image creation fails for many reasons the program checks: wait. */
    cl_mem out = created_sync(&mem->obj, &m, packed, len, errcode_ret, NULL);
    free(packed);
    return out;
}

static cl_mem CL_API_CALL rc_clCreateImage(cl_context c, cl_mem_flags flags,
                                           const cl_image_format *fmt,
                                           const cl_image_desc *desc,
                                           void *host, cl_int *errcode_ret)
{
    return create_image(c, NULL, flags, fmt, desc, host, errcode_ret);
}

static cl_mem CL_API_CALL rc_clCreateImageWithProperties(
    cl_context c, const cl_mem_properties *props, cl_mem_flags flags,
    const cl_image_format *fmt, const cl_image_desc *desc, void *host,
    cl_int *errcode_ret)
{
    return create_image(c, props, flags, fmt, desc, host, errcode_ret);
}

void shim_remote_mem_free(struct rc_mem *mem);

static cl_int CL_API_CALL rc_clReleaseMemObject(cl_mem h)
{
    cl_int err = release(h, SHIM_MEM);
    shim_remote_mem_free((struct rc_mem *)h);
    return err;
}

/* --- samplers ------------------------------------------------------------------ */

static cl_sampler create_sampler(cl_context c, const cl_sampler_properties *p,
                                 cl_int *errcode_ret)
{
    Crane__CreateSampler cs = CRANE__CREATE_SAMPLER__INIT;
    uint64_t pv[32];
    size_t np = 0;

    np = prop_pairs(pv, p);
    struct rc_obj *o = obj_new(SHIM_SAMPLER, sizeof(struct rc_obj));
    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cs.id = o->id;
    cs.context = ID(c);
    cs.properties = pv;
    cs.n_properties = np;
    RC_MSG(m, create_sampler, CREATE_SAMPLER, &cs);
    return created(o, &m, NULL, 0, errcode_ret);
}

static cl_sampler CL_API_CALL rc_clCreateSampler(cl_context c, cl_bool norm,
                                                 cl_addressing_mode addr,
                                                 cl_filter_mode filter,
                                                 cl_int *errcode_ret)
{
    cl_sampler_properties p[] = {CL_SAMPLER_NORMALIZED_COORDS, norm,
                                 CL_SAMPLER_ADDRESSING_MODE, addr,
                                 CL_SAMPLER_FILTER_MODE, filter, 0};
    return create_sampler(c, p, errcode_ret);
}

static cl_sampler CL_API_CALL rc_clCreateSamplerWithProperties(
    cl_context c, const cl_sampler_properties *p, cl_int *errcode_ret)
{
    return create_sampler(c, p, errcode_ret);
}

static cl_int CL_API_CALL rc_clReleaseSampler(cl_sampler s)
{
    cl_int err = release(s, SHIM_SAMPLER);
    free(s);
    return err;
}

/* --- programs ------------------------------------------------------------------ */

static cl_program CL_API_CALL rc_clCreateProgramWithSource(
    cl_context c, cl_uint count, const char **strings, const size_t *lengths,
    cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    size_t total = 0;

    if (!count || !strings) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < count; i++) {
        if (!strings[i]) {
            SET_ERR(CL_INVALID_VALUE);
            return NULL;
        }
        total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    }
    char *src = malloc(total + 1);
    struct rc_obj *o = src ? obj_new(SHIM_PROGRAM, sizeof(struct rc_obj))
                           : NULL;
    if (!o) {
        free(src);
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    size_t at = 0;
    for (cl_uint i = 0; i < count; i++) {
        size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
        memcpy(src + at, strings[i], n);
        at += n;
    }
    cp.id = o->id;
    cp.context = ID(c);
    cp.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE;
    cp.source.data = (uint8_t *)src;
    cp.source.len = total;
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    cl_program p = created(o, &m, NULL, 0, errcode_ret);
    free(src);
    return p;
}

static cl_program CL_API_CALL rc_clCreateProgramWithBinary(
    cl_context c, cl_uint n, const cl_device_id *devs, const size_t *lengths,
    const unsigned char **bins, cl_int *status, cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    uint64_t ids[64];
    ProtobufCBinaryData b[64];
    struct rc_reply r;

    if (!n || n > 64 || !devs || !lengths || !bins) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++) {
        ids[i] = ID(devs[i]);
        b[i].data = (uint8_t *)bins[i];
        b[i].len = bins[i] ? lengths[i] : 0;
    }
    struct rc_obj *o = obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));
    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cp.id = o->id;
    cp.context = ID(c);
    cp.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY;
    cp.devices = ids;
    cp.n_devices = n;
    cp.binaries = b;
    cp.n_binaries = n;
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    cl_program p = created_sync(o, &m, NULL, 0, errcode_ret, &r);
    for (cl_uint i = 0; status && r.reply && i < n; i++)
        status[i] = i < r.reply->n_statuses ? r.reply->statuses[i]
                                            : CL_INVALID_BINARY;
    shim_remote_reply_free(&r);
    return p;
}

static cl_program program_from_bytes(cl_context c, Crane__ProgramOrigin org,
                                     const void *bytes, size_t len,
                                     const cl_device_id *devs, cl_uint n,
                                     cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    uint64_t ids[64];

    if (n > 64) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++)
        ids[i] = ID(devs[i]);
    struct rc_obj *o = obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));
    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cp.id = o->id;
    cp.context = ID(c);
    cp.origin = org;
    cp.source.data = (uint8_t *)bytes;
    cp.source.len = len;
    cp.devices = ids;
    cp.n_devices = n;
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    return created_sync(o, &m, NULL, 0, errcode_ret, NULL);
}

static cl_program CL_API_CALL rc_clCreateProgramWithIL(cl_context c,
                                                       const void *il,
                                                       size_t len,
                                                       cl_int *errcode_ret)
{
    return program_from_bytes(c, CRANE__PROGRAM_ORIGIN__PROGRAM_IL, il, len,
                              NULL, 0, errcode_ret);
}

static cl_program CL_API_CALL rc_clCreateProgramWithBuiltInKernels(
    cl_context c, cl_uint n, const cl_device_id *devs, const char *names,
    cl_int *errcode_ret)
{
    if (!names) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    return program_from_bytes(c, CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN,
                              names, strlen(names), devs, n, errcode_ret);
}

typedef void(CL_CALLBACK *build_notify_fn)(cl_program, void *);

static cl_int build(Crane__BuildOp op, cl_program p, cl_context c, cl_uint n,
                    const cl_device_id *devs, const char *options,
                    cl_uint n_inputs, const cl_program *inputs,
                    const char **names, uint64_t link_id)
{
    Crane__BuildProgram bp = CRANE__BUILD_PROGRAM__INIT;
    uint64_t ids[64], in[256];
    struct rc_reply r;

    if (n > 64 || n_inputs > 256)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n; i++)
        ids[i] = ID(devs[i]);
    for (cl_uint i = 0; i < n_inputs; i++)
        in[i] = ID(inputs[i]);
    bp.op = op;
    bp.program = ID(p);
    bp.context = ID(c);
    bp.devices = ids;
    bp.n_devices = n;
    bp.options = (char *)(options ? options : "");
    bp.inputs = in;
    bp.n_inputs = n_inputs;
    bp.input_names = (char **)names;
    bp.n_input_names = names ? n_inputs : 0;
    bp.link_id = link_id;
    RC_MSG(m, build_program, BUILD_PROGRAM, &bp);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    return err;
}

static cl_int CL_API_CALL rc_clBuildProgram(cl_program p, cl_uint n,
                                            const cl_device_id *devs,
                                            const char *options,
                                            build_notify_fn notify,
                                            void *data)
{
    cl_int err = build(CRANE__BUILD_OP__BUILD, p, NULL, n, devs, options, 0,
                       NULL, NULL, 0);
    if (notify)
        notify(p, data);
    return err;
}

static cl_int CL_API_CALL rc_clCompileProgram(
    cl_program p, cl_uint n, const cl_device_id *devs, const char *options,
    cl_uint n_headers, const cl_program *headers, const char **names,
    build_notify_fn notify, void *data)
{
    cl_int err = build(CRANE__BUILD_OP__COMPILE, p, NULL, n, devs, options,
                       n_headers, headers, names, 0);
    if (notify)
        notify(p, data);
    return err;
}

static cl_program CL_API_CALL rc_clLinkProgram(
    cl_context c, cl_uint n, const cl_device_id *devs, const char *options,
    cl_uint n_inputs, const cl_program *inputs, build_notify_fn notify,
    void *data, cl_int *errcode_ret)
{
    struct rc_obj *o = obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));

    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cl_int err = build(CRANE__BUILD_OP__LINK, NULL, c, n, devs, options,
                       n_inputs, inputs, NULL, o->id);
    SET_ERR(err);
    /* A failed link may still make a program (with a log to read). */
    if (err != CL_SUCCESS && err != CL_LINK_PROGRAM_FAILURE) {
        shim_remote_untrack(o);
        free(o);
        o = NULL;
    }
    if (notify && o)
        notify((cl_program)o, data);
    return (cl_program)o;
}

static cl_int CL_API_CALL rc_clReleaseProgram(cl_program p)
{
    cl_int err = release(p, SHIM_PROGRAM);
    free(p);
    return err;
}

/* --- kernels ------------------------------------------------------------------- */

static struct rc_kernel *kernel_new(void)
{
    struct rc_kernel *k = obj_new(SHIM_KERNEL, sizeof(struct rc_kernel));
    if (k)
        pthread_mutex_init(&k->lock, NULL);
    return k;
}

static cl_kernel CL_API_CALL rc_clCreateKernel(cl_program p, const char *name,
                                               cl_int *errcode_ret)
{
    Crane__CreateKernel ck = CRANE__CREATE_KERNEL__INIT;

    if (!name) {
        SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    struct rc_kernel *k = kernel_new();
    if (!k) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    ck.id = k->obj.id;
    ck.program = ID(p);
    ck.name = (char *)name;
    RC_MSG(m, create_kernel, CREATE_KERNEL, &ck);
    /* Programs check for a wrong name; the shim asks for the kernel's
     * arguments right after anyway, so waiting costs little. */
    return created_sync(&k->obj, &m, NULL, 0, errcode_ret, NULL);
}

static cl_int CL_API_CALL rc_clCreateKernelsInProgram(cl_program p,
                                                      cl_uint n,
                                                      cl_kernel *kernels,
                                                      cl_uint *n_ret)
{
    Crane__CreateKernel ck = CRANE__CREATE_KERNEL__INIT;
    struct rc_kernel *made[256];
    uint64_t ids[256];
    struct rc_reply r;

    if (kernels && n > 256)
        n = 256;
    for (cl_uint i = 0; kernels && i < n; i++) {
        if (!(made[i] = kernel_new())) {
            while (i--) {
                shim_remote_untrack(&made[i]->obj);
                free(made[i]);
            }
            return CL_OUT_OF_HOST_MEMORY;
        }
        ids[i] = made[i]->obj.id;
    }
    ck.program = ID(p);
    ck.all_ids = ids;
    ck.n_all_ids = kernels ? n : 0;
    RC_MSG(m, create_kernel, CREATE_KERNEL, &ck);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    cl_uint count = err == CL_SUCCESS ? (cl_uint)r.reply->count : 0;
    shim_remote_reply_free(&r);
    if (err == CL_SUCCESS && kernels && count > n)
        err = CL_INVALID_VALUE;
    for (cl_uint i = 0; kernels && i < n; i++) {
        if (err == CL_SUCCESS && i < count) {
            kernels[i] = (cl_kernel)made[i];
        } else {
            shim_remote_untrack(&made[i]->obj);
            free(made[i]);
        }
    }
    if (err == CL_SUCCESS && n_ret)
        *n_ret = count;
    return err;
}

cl_int shim_remote_send_args(struct rc_kernel *k);

static cl_kernel CL_API_CALL rc_clCloneKernel(cl_kernel src,
                                              cl_int *errcode_ret)
{
    struct rc_kernel *from = (void *)src;
    Crane__CreateKernel ck = CRANE__CREATE_KERNEL__INIT;

    /* The proxy clones what it has: send the cached changes first. */
    cl_int err = shim_remote_send_args(from);
    if (err != CL_SUCCESS) {
        SET_ERR(err);
        return NULL;
    }
    struct rc_kernel *k = kernel_new();
    if (!k) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    pthread_mutex_lock(&from->lock);
    k->args = calloc(from->n_args ? from->n_args : 1, sizeof(*k->args));
    for (cl_uint i = 0; k->args && i < from->n_args; i++) {
        k->args[i] = from->args[i];
        k->args[i].value = NULL;
        if (from->args[i].value &&
            (k->args[i].value = malloc(from->args[i].size)))
            memcpy(k->args[i].value, from->args[i].value,
                   from->args[i].size);
    }
    k->n_args = k->args ? from->n_args : 0;
    pthread_mutex_unlock(&from->lock);
    ck.id = k->obj.id;
    ck.clone_of = from->obj.id;
    RC_MSG(m, create_kernel, CREATE_KERNEL, &ck);
    return created(&k->obj, &m, NULL, 0, errcode_ret);
}

static cl_int CL_API_CALL rc_clReleaseKernel(cl_kernel h)
{
    struct rc_kernel *k = (void *)h;
    cl_int err = release(h, SHIM_KERNEL);

    for (cl_uint i = 0; i < k->n_args; i++)
        free(k->args[i].value);
    free(k->args);
    pthread_mutex_destroy(&k->lock);
    free(k);
    return err;
}

/* --- events -------------------------------------------------------------------- */

static cl_event CL_API_CALL rc_clCreateUserEvent(cl_context c,
                                                 cl_int *errcode_ret)
{
    Crane__CreateUserEvent ue = CRANE__CREATE_USER_EVENT__INIT;
    struct rc_obj *o = obj_new(SHIM_EVENT, sizeof(struct rc_obj));

    if (!o) {
        SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    ue.id = o->id;
    ue.context = ID(c);
    RC_MSG(m, create_user_event, CREATE_USER_EVENT, &ue);
    return created(o, &m, NULL, 0, errcode_ret);
}

static cl_int CL_API_CALL rc_clSetUserEventStatus(cl_event e, cl_int status)
{
    Crane__SetUserEventStatus us = CRANE__SET_USER_EVENT_STATUS__INIT;

    us.event = ID(e);
    us.status = status;
    RC_MSG(m, set_user_event_status, SET_USER_EVENT_STATUS, &us);
    cl_int err = shim_remote_send(&m, NULL, 0);
    /* Work waiting on it should start now, not at the next flush. */
    return err == CL_SUCCESS ? shim_remote_flush() : err;
}

static cl_int CL_API_CALL rc_clSetEventCallback(
    cl_event e, cl_int type, void(CL_CALLBACK *fn)(cl_event, cl_int, void *),
    void *data)
{
    Crane__WatchEvent we = CRANE__WATCH_EVENT__INIT;
    struct rc_watch *w = malloc(sizeof(*w));

    if (!w)
        return CL_OUT_OF_HOST_MEMORY;
    w->fn = fn;
    w->event = e;
    w->data = data;
    we.event = ID(e);
    we.status = type;
    we.cookie = shim_remote_watch_add(w);
    if (!we.cookie) {
        free(w);
        return CL_OUT_OF_HOST_MEMORY;
    }
    RC_MSG(m, watch_event, WATCH_EVENT, &we);
    struct rc_reply r;
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    if (err != CL_SUCCESS && shim_remote_watch_take(we.cookie))
        free(w);
    return err;
}

static cl_int CL_API_CALL rc_clReleaseEvent(cl_event e)
{
    cl_int err = release(e, SHIM_EVENT);
    free(e);
    return err;
}

/* Events made by enqueues: a fresh id the proxy will name its event by. */
struct rc_obj *shim_remote_event_new(void)
{
    return obj_new(SHIM_EVENT, sizeof(struct rc_obj));
}

void shim_remote_event_drop(struct rc_obj *e)
{
    shim_remote_untrack(e);
    free(e);
}

/* --- this file's rows of the dispatch table ---------------------------------- */

void shim_remote_objects_fill(struct _cl_icd_dispatch *t)
{
    t->clGetPlatformInfo = rc_clGetPlatformInfo;
    t->clGetDeviceIDs = rc_clGetDeviceIDs;
    t->clGetDeviceInfo = rc_clGetDeviceInfo;
    t->clCreateSubDevices = rc_clCreateSubDevices;
    t->clReleaseDevice = rc_clReleaseDevice;
    t->clCreateContext = rc_clCreateContext;
    t->clReleaseContext = rc_clReleaseContext;
    t->clGetContextInfo = rc_clGetContextInfo;
    t->clCreateCommandQueue = rc_clCreateCommandQueue;
    t->clCreateCommandQueueWithProperties = rc_clCreateCommandQueueWithProperties;
    t->clReleaseCommandQueue = rc_clReleaseCommandQueue;
    t->clGetCommandQueueInfo = rc_clGetCommandQueueInfo;
    t->clCreateBuffer = rc_clCreateBuffer;
    t->clCreateBufferWithProperties = rc_clCreateBufferWithProperties;
    t->clCreateSubBuffer = rc_clCreateSubBuffer;
    t->clCreateImage = rc_clCreateImage;
    t->clCreateImageWithProperties = rc_clCreateImageWithProperties;
    t->clReleaseMemObject = rc_clReleaseMemObject;
    t->clGetSupportedImageFormats = rc_clGetSupportedImageFormats;
    t->clGetMemObjectInfo = rc_clGetMemObjectInfo;
    t->clGetImageInfo = rc_clGetImageInfo;
    t->clGetPipeInfo = rc_clGetPipeInfo;
    t->clCreateSampler = rc_clCreateSampler;
    t->clCreateSamplerWithProperties = rc_clCreateSamplerWithProperties;
    t->clReleaseSampler = rc_clReleaseSampler;
    t->clGetSamplerInfo = rc_clGetSamplerInfo;
    t->clCreateProgramWithSource = rc_clCreateProgramWithSource;
    t->clCreateProgramWithBinary = rc_clCreateProgramWithBinary;
    t->clCreateProgramWithIL = rc_clCreateProgramWithIL;
    t->clCreateProgramWithBuiltInKernels = rc_clCreateProgramWithBuiltInKernels;
    t->clBuildProgram = rc_clBuildProgram;
    t->clCompileProgram = rc_clCompileProgram;
    t->clLinkProgram = rc_clLinkProgram;
    t->clReleaseProgram = rc_clReleaseProgram;
    t->clGetProgramInfo = rc_clGetProgramInfo;
    t->clGetProgramBuildInfo = rc_clGetProgramBuildInfo;
    t->clCreateKernel = rc_clCreateKernel;
    t->clCreateKernelsInProgram = rc_clCreateKernelsInProgram;
    t->clCloneKernel = rc_clCloneKernel;
    t->clReleaseKernel = rc_clReleaseKernel;
    t->clGetKernelInfo = rc_clGetKernelInfo;
    t->clGetKernelArgInfo = rc_clGetKernelArgInfo;
    t->clGetKernelWorkGroupInfo = rc_clGetKernelWorkGroupInfo;
    t->clGetKernelSubGroupInfo = rc_clGetKernelSubGroupInfo;
    t->clCreateUserEvent = rc_clCreateUserEvent;
    t->clSetUserEventStatus = rc_clSetUserEventStatus;
    t->clSetEventCallback = rc_clSetEventCallback;
    t->clReleaseEvent = rc_clReleaseEvent;
    t->clGetEventInfo = rc_clGetEventInfo;
    t->clGetEventProfilingInfo = rc_clGetEventProfilingInfo;
}
