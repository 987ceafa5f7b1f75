/* Executor for GetInfo: every clGet*Info, with handles turned into ids. */
#include "exec.h"

#include "validate.h"

#include <stdlib.h>
#include <string.h>

/* How a parameter's value is sent. */
enum shape {
    PLAIN,                       /* bytes as the implementation gives them */
    HANDLES,                     /* an array of handles: ids, 8 bytes each */
    HOST_PTR,                    /* CL_MEM_HOST_PTR: always 0 */
    CONTEXT_PROPS,               /* pairs; CL_CONTEXT_PLATFORM's value an id */
    BINARIES,                    /* CL_PROGRAM_BINARIES: concatenated */
};

static enum shape shape_of(Crane__InfoFn fn, cl_uint param)
{
    switch (fn) {
    case CRANE__INFO_FN__INFO_DEVICE:
        return param == CL_DEVICE_PLATFORM ||
                       param == CL_DEVICE_PARENT_DEVICE
                   ? HANDLES
                   : PLAIN;
    case CRANE__INFO_FN__INFO_CONTEXT:
        if (param == CL_CONTEXT_DEVICES)
            return HANDLES;
        return param == CL_CONTEXT_PROPERTIES ? CONTEXT_PROPS : PLAIN;
    case CRANE__INFO_FN__INFO_QUEUE:
        return param == CL_QUEUE_CONTEXT || param == CL_QUEUE_DEVICE ||
                       param == CL_QUEUE_DEVICE_DEFAULT
                   ? HANDLES
                   : PLAIN;
    case CRANE__INFO_FN__INFO_MEM:
        if (param == CL_MEM_HOST_PTR)
            return HOST_PTR;
        return param == CL_MEM_CONTEXT || param == CL_MEM_ASSOCIATED_MEMOBJECT
                   ? HANDLES
                   : PLAIN;
    case CRANE__INFO_FN__INFO_IMAGE:
        return param == CL_IMAGE_BUFFER ? HANDLES : PLAIN;
    case CRANE__INFO_FN__INFO_SAMPLER:
        return param == CL_SAMPLER_CONTEXT ? HANDLES : PLAIN;
    case CRANE__INFO_FN__INFO_PROGRAM:
        if (param == CL_PROGRAM_BINARIES)
            return BINARIES;
        return param == CL_PROGRAM_CONTEXT || param == CL_PROGRAM_DEVICES
                   ? HANDLES
                   : PLAIN;
    case CRANE__INFO_FN__INFO_KERNEL:
        return param == CL_KERNEL_CONTEXT || param == CL_KERNEL_PROGRAM
                   ? HANDLES
                   : PLAIN;
    case CRANE__INFO_FN__INFO_EVENT:
        return param == CL_EVENT_COMMAND_QUEUE || param == CL_EVENT_CONTEXT
                   ? HANDLES
                   : PLAIN;
    default:
        return PLAIN;
    }
}

/* The object a GetInfo is about, and the second one some need. */
struct target {
    void *obj;
    void *other;
};

static cl_int find_target(struct px_call *c, struct target *tg)
{
    const Crane__GetInfo *g = c->m->get_info;
    enum px_kind kind, other = 0;
    cl_int err = CL_SUCCESS;

    switch (g->fn) {
    case CRANE__INFO_FN__INFO_PLATFORM: kind = PX_PLATFORM; break;
    case CRANE__INFO_FN__INFO_DEVICE: kind = PX_DEVICE; break;
    case CRANE__INFO_FN__INFO_CONTEXT:
    case CRANE__INFO_FN__INFO_IMAGE_FORMATS: kind = PX_CONTEXT; break;
    case CRANE__INFO_FN__INFO_QUEUE: kind = PX_QUEUE; break;
    case CRANE__INFO_FN__INFO_MEM:
    case CRANE__INFO_FN__INFO_IMAGE:
    case CRANE__INFO_FN__INFO_PIPE: kind = PX_MEM; break;
    case CRANE__INFO_FN__INFO_SAMPLER: kind = PX_SAMPLER; break;
    case CRANE__INFO_FN__INFO_PROGRAM: kind = PX_PROGRAM; break;
    case CRANE__INFO_FN__INFO_PROGRAM_BUILD:
        kind = PX_PROGRAM;
        other = PX_DEVICE;
        break;
    case CRANE__INFO_FN__INFO_KERNEL:
    case CRANE__INFO_FN__INFO_KERNEL_ARG: kind = PX_KERNEL; break;
    case CRANE__INFO_FN__INFO_KERNEL_WORK_GROUP:
    case CRANE__INFO_FN__INFO_KERNEL_SUB_GROUP:
        kind = PX_KERNEL;
        other = PX_DEVICE;
        break;
    case CRANE__INFO_FN__INFO_EVENT:
    case CRANE__INFO_FN__INFO_EVENT_PROFILING: kind = PX_EVENT; break;
    default:
        return px_fail(c, CL_INVALID_VALUE, "unknown info function");
    }
    tg->obj = px_known(c, g->id, kind, &err);
    if (!tg->obj)
        return err;
    tg->other = NULL;
    /* A kernel's work-group info may name no device (0). */
    if (other && (g->other_id ||
                  g->fn == CRANE__INFO_FN__INFO_PROGRAM_BUILD)) {
        tg->other = px_known(c, g->other_id, other, &err);
        if (!tg->other)
            return err;
    }
    return CL_SUCCESS;
}

/* Calls the real clGet*Info for the request with SIZE bytes at VALUE. */
static cl_int real_info(struct px_call *c, const struct target *tg,
                        size_t size, void *value, size_t *size_ret)
{
    const Crane__GetInfo *g = c->m->get_info;
    cl_uint p = g->param;

    switch (g->fn) {
    case CRANE__INFO_FN__INFO_PLATFORM:
        return clGetPlatformInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_DEVICE:
        return clGetDeviceInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_CONTEXT:
        return clGetContextInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_QUEUE:
        return clGetCommandQueueInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_MEM:
        return clGetMemObjectInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_IMAGE:
        return clGetImageInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_SAMPLER:
        return clGetSamplerInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_PROGRAM:
        return clGetProgramInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_PROGRAM_BUILD:
        return clGetProgramBuildInfo(tg->obj, tg->other, p, size, value,
                                     size_ret);
    case CRANE__INFO_FN__INFO_KERNEL:
        return clGetKernelInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_KERNEL_WORK_GROUP:
        return clGetKernelWorkGroupInfo(tg->obj, tg->other, p, size, value,
                                        size_ret);
    case CRANE__INFO_FN__INFO_KERNEL_ARG:
        return clGetKernelArgInfo(tg->obj, g->arg_index, p, size, value,
                                  size_ret);
    case CRANE__INFO_FN__INFO_EVENT:
        return clGetEventInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_EVENT_PROFILING:
        return clGetEventProfilingInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_PIPE:
        return clGetPipeInfo(tg->obj, p, size, value, size_ret);
    case CRANE__INFO_FN__INFO_KERNEL_SUB_GROUP:
        return clGetKernelSubGroupInfo(tg->obj, tg->other, p, g->input.len,
                                       g->input.len ? g->input.data : NULL,
                                       size, value, size_ret);
    default:
        return CL_INVALID_VALUE;
    }
}

/* clGetSupportedImageFormats: room for size / sizeof(cl_image_format). */
static cl_int image_formats(struct px_call *c, const struct target *tg)
{
    const Crane__GetInfo *g = c->m->get_info;
    uint64_t room = g->size / sizeof(cl_image_format);
    cl_image_format *v = NULL;
    cl_uint n = 0;
    cl_int err;

    err = clGetSupportedImageFormats(tg->obj, g->flags, g->image_type, 0,
                                     NULL, &n);
    if (err != CL_SUCCESS)
        return err;
    c->reply.size_ret = (uint64_t)n * sizeof(cl_image_format);
    if (room > n)
        room = n;
    if (room == 0)
        return CL_SUCCESS;
    v = calloc(n, sizeof(*v));
    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    err = clGetSupportedImageFormats(tg->obj, g->flags, g->image_type, n, v,
                                     NULL);
    if (err == CL_SUCCESS) {
        c->reply.value.data = (uint8_t *)v;
        c->reply.value.len = room * sizeof(*v);
        c->value_owner = v;
    } else {
        free(v);
    }
    return err;
}

_Static_assert(sizeof(void *) == sizeof(uint64_t),
              "handles travel as 8-byte ids in their own room");

/* Replaces the N handles at V (in place, 8 bytes each) by the tenant's
 * ids. */
static void handles_to_ids(struct px_tenant *t, void *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *h;
        uint64_t id;
        memcpy(&h, (char *)v + i * sizeof(h), sizeof(h));
        id = px_tenant_id_of(t, h);
        memcpy((char *)v + i * sizeof(id), &id, sizeof(id));
    }
}

/* CL_PROGRAM_BINARIES: every device's binary, one after the other in the
 * order of CL_PROGRAM_DEVICES; size_ret is their total. */
static cl_int binaries(struct px_call *c, const struct target *tg)
{
    size_t sizes_len = 0, n, total = 0;
    size_t *sizes = NULL;
    unsigned char **ptrs = NULL;
    uint8_t *out = NULL;
    cl_int err;

    err = clGetProgramInfo(tg->obj, CL_PROGRAM_BINARY_SIZES, 0, NULL,
                           &sizes_len);
    if (err != CL_SUCCESS)
        return err;
    n = sizes_len / sizeof(size_t);
    sizes = calloc(n ? n : 1, sizeof(*sizes));
    ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    if (!sizes || !ptrs) {
        err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
        goto out;
    }
    err = clGetProgramInfo(tg->obj, CL_PROGRAM_BINARY_SIZES, sizes_len, sizes,
                           NULL);
    if (err != CL_SUCCESS)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (sizes[i] > PX_MAX_INFO || total + sizes[i] > PX_MAX_INFO) {
            err = px_fail(c, CL_OUT_OF_RESOURCES, "binaries too large");
            goto out;
        }
        total += sizes[i];
    }
    c->reply.size_ret = total;
    if (c->m->get_info->size == 0)
        goto out;
    if (c->m->get_info->size < total) {
        err = px_fail(c, CL_INVALID_VALUE, "room for %llu of %zu bytes",
                      (unsigned long long)c->m->get_info->size, total);
        goto out;
    }
    out = malloc(total ? total : 1);
    if (!out) {
        err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
        goto out;
    }
    for (size_t i = 0, off = 0; i < n; off += sizes[i], i++)
        ptrs[i] = sizes[i] ? out + off : NULL;
    err = clGetProgramInfo(tg->obj, CL_PROGRAM_BINARIES, n * sizeof(*ptrs),
                           ptrs, NULL);
    if (err == CL_SUCCESS) {
        c->reply.value.data = out;
        c->reply.value.len = total;
        c->value_owner = out;
        out = NULL;
    }
out:
    free(out);
    free(sizes);
    free(ptrs);
    return err;
}

/* CL_PROGRAM_BUILD_OPTIONS without the option the proxy adds to every
 * build (validate_dev.c), so that the program sees its own (REAL_LEN: the
 * vendor's size). */
static cl_int build_options(struct px_call *c, const struct target *tg,
                            size_t real_len)
{
    const Crane__GetInfo *g = c->m->get_info;
    char *v;
    size_t len;
    cl_int err;

    if (real_len > PX_MAX_INFO)
        return px_fail(c, CL_OUT_OF_RESOURCES, "value of %zu bytes",
                       real_len);
    v = calloc(1, real_len + 1);
    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    err = real_info(c, tg, real_len, v, NULL);
    if (err != CL_SUCCESS) {
        free(v);
        return err;
    }
    len = px_build_options_seen(v, real_len);
    v[len - (len > 0)] = '\0';
    c->reply.size_ret = len;
    if (g->size == 0) {
        free(v);
        return CL_SUCCESS;
    }
    if (g->size < len) {
        free(v);
        return px_fail(c, CL_INVALID_VALUE, "room for %llu of %zu bytes",
                       (unsigned long long)g->size, len);
    }
    c->reply.value.data = (uint8_t *)v;
    c->reply.value.len = len;
    c->value_owner = v;
    return CL_SUCCESS;
}

cl_int px_exec_get_info(struct px_call *c)
{
    const Crane__GetInfo *g = c->m->get_info;
    struct target tg;
    enum shape shape;
    size_t real_len = 0;
    void *v;
    cl_int err;

    err = find_target(c, &tg);
    if (err != CL_SUCCESS)
        return err;
    if (g->fn == CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return image_formats(c, &tg);
    shape = shape_of(g->fn, g->param);
    if (shape == BINARIES)
        return binaries(c, &tg);
    err = real_info(c, &tg, 0, NULL, &real_len);
    if (err != CL_SUCCESS)
        return err;
    if (g->fn == CRANE__INFO_FN__INFO_PROGRAM_BUILD &&
        g->param == CL_PROGRAM_BUILD_OPTIONS)
        return build_options(c, &tg, real_len);
    if (real_len > PX_MAX_INFO)
        return px_fail(c, CL_OUT_OF_RESOURCES, "value of %zu bytes",
                       real_len);
    /* Handles are pointers here and 8-byte ids on the wire: the same size
     * on the 64-bit hosts the proxy runs on. */
    c->reply.size_ret = real_len;
    if (g->size == 0)
        return CL_SUCCESS;
    if (g->size < real_len)
        return px_fail(c, CL_INVALID_VALUE, "room for %llu of %zu bytes",
                       (unsigned long long)g->size, real_len);
    v = calloc(1, real_len ? real_len : 1);
    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    err = real_info(c, &tg, real_len, v, NULL);
    if (err != CL_SUCCESS) {
        free(v);
        return err;
    }
    switch (shape) {
    case HANDLES:
        handles_to_ids(c->t, v, real_len / sizeof(void *));
        break;
    case HOST_PTR:
        memset(v, 0, real_len);
        break;
    case CONTEXT_PROPS: {
        cl_context_properties *p = v;
        size_t n = real_len / sizeof(*p);
        for (size_t i = 0; i + 1 < n; i += 2)
            if (p[i] == CL_CONTEXT_PLATFORM)
                p[i + 1] = (cl_context_properties)px_tenant_id_of(
                    c->t, (void *)p[i + 1]);
        break;
    }
    default:
        break;
    }
    c->reply.value.data = v;
    c->reply.value.len = real_len;
    c->value_owner = v;
    return CL_SUCCESS;
}

cl_int px_exec_device_timer(struct px_call *c)
{
    const Crane__DeviceTimer *d = c->m->device_timer;
    cl_ulong *v = malloc(2 * sizeof(*v));
    cl_device_id dev;
    cl_int err;

    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    dev = px_tenant_handle(c->t, d->device, PX_DEVICE, &err);
    if (!dev) {
        free(v);
        return px_fail(c, CL_INVALID_DEVICE, "unknown device %llu",
                       (unsigned long long)d->device);
    }
    if (d->host_only)
        err = clGetHostTimer(dev, &v[0]);
    else
        err = clGetDeviceAndHostTimer(dev, &v[0], &v[1]);
    if (err != CL_SUCCESS) {
        free(v);
        return err;
    }
    c->reply.value.data = (uint8_t *)v;
    c->reply.value.len = (d->host_only ? 1 : 2) * sizeof(*v);
    c->value_owner = v;
    return CL_SUCCESS;
}
