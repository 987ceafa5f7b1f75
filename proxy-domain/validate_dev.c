/* Checks of a call against what its devices report and its kernel declares. */
#include "validate.h"

#include "exec.h"

#include <stdlib.h>
#include <string.h>

/*
 * validate.c checks what a message says on its own; this file checks what
 * only the tenant's objects can tell: whether the devices of the context
 * can have the queue, image or sampler asked for (the vendor may abort on
 * what it does not implement: PoCL 3.1 exit()s on a device-side queue and
 * on mipmapped or multi-sampled images), and whether each kernel argument
 * is of the kind the kernel declares (PoCL dereferences whatever 8 bytes it
 * is given for a buffer, image or sampler argument).  An object id this
 * file cannot resolve is left to the executor, which names it.
 */

/* Each CALL row's check of proto/remote_calls.def. */
#define CALL_CALL(field) static cl_int px_check_call_##field(struct px_call *c);
#define CALL_NONE(field)
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    CALL_##call(field)
#include "proto/remote_calls.def"
#undef CRN_REMOTE_CALL
#undef CALL_CALL
#undef CALL_NONE

/* The devices of context CTX, malloc()ed into *OUT; their count, or 0. */
static size_t context_devices(cl_context ctx, cl_device_id **out)
{
    size_t len = 0;

    *out = NULL;
    if (clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &len) !=
            CL_SUCCESS ||
        len < sizeof(cl_device_id))
        return 0;
    *out = malloc(len);
    if (!*out)
        return 0;
    if (clGetContextInfo(ctx, CL_CONTEXT_DEVICES, len, *out, NULL) !=
        CL_SUCCESS) {
        free(*out);
        *out = NULL;
        return 0;
    }
    return len / sizeof(cl_device_id);
}

static cl_ulong dev_ulong(cl_device_id d, cl_device_info param)
{
    cl_ulong v = 0;
    size_t len = 0;
    unsigned char raw[8] = {0};

    /* Sizes are size_t, flags cl_bitfield, counts cl_uint: read whichever
     * the parameter is, little-endian, into 64 bits. */
    if (clGetDeviceInfo(d, param, sizeof(raw), raw, &len) != CL_SUCCESS)
        return 0;
    memcpy(&v, raw, len < sizeof(v) ? len : sizeof(v));
    return v;
}

/* Whether device D lists extension NAME. */
static bool dev_has_extension(cl_device_id d, const char *name)
{
    size_t len = 0, n = strlen(name);
    char *ext;
    bool found = false;

    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &len) !=
            CL_SUCCESS ||
        len == 0 || !(ext = malloc(len + 1)))
        return false;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, len, ext, NULL) ==
        CL_SUCCESS) {
        ext[len] = '\0';
        for (char *p = ext; (p = strstr(p, name)) != NULL; p += n)
            if ((p == ext || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
                found = true;
    }
    free(ext);
    return found;
}

/* --- queues ------------------------------------------------------------- */

static cl_int px_check_call_create_queue(struct px_call *c)
{
    const Crane__CreateQueue *q = c->m->create_queue;
    cl_queue_properties bits = q->legacy ? q->legacy_properties : 0;
    uint64_t size = 0;
    bool has_size = false;
    cl_device_id dev;
    cl_int err;

    dev = px_tenant_handle(c->t, q->device, PX_DEVICE, &err);
    if (!dev)
        return CL_SUCCESS;
    for (size_t i = 0; !q->legacy && i + 1 < q->n_properties; i += 2) {
        if (q->properties[i] == CL_QUEUE_PROPERTIES)
            bits = q->properties[i + 1];
        if (q->properties[i] == CL_QUEUE_SIZE) {
            size = q->properties[i + 1];
            has_size = true;
        }
    }
    if (bits & CL_QUEUE_ON_DEVICE) {
        cl_ulong dev_props = dev_ulong(dev, CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES);
        cl_ulong caps = dev_ulong(dev, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES);
        cl_ulong max = dev_ulong(dev, CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE);
        if (dev_props == 0 || !(caps & CL_DEVICE_QUEUE_SUPPORTED))
            return px_fail(c, CL_INVALID_QUEUE_PROPERTIES,
                           "the device has no device-side queues");
        if ((bits & CL_QUEUE_PROFILING_ENABLE) &&
            !(dev_props & CL_QUEUE_PROFILING_ENABLE))
            return px_fail(c, CL_INVALID_QUEUE_PROPERTIES,
                           "no profiling on device-side queues");
        if (has_size && size > max)
            return px_fail(c, CL_INVALID_VALUE,
                           "device queue of %llu bytes (at most %llu)",
                           (unsigned long long)size,
                           (unsigned long long)max);
        return CL_SUCCESS;
    }
    bits &= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE |
            CL_QUEUE_PROFILING_ENABLE;
    if (bits & ~dev_ulong(dev, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES))
        return px_fail(c, CL_INVALID_QUEUE_PROPERTIES,
                       "queue properties 0x%llx not supported by the "
                       "device",
                       (unsigned long long)bits);
    return CL_SUCCESS;
}

/* --- images and samplers ------------------------------------------------ */

/* Whether some device of CTX supports images; CL_SUCCESS or an error. */
static cl_int context_images(struct px_call *c, cl_context ctx,
                             cl_device_id **devs, size_t *ndev)
{
    *ndev = context_devices(ctx, devs);
    for (size_t i = 0; i < *ndev; i++)
        if (dev_ulong((*devs)[i], CL_DEVICE_IMAGE_SUPPORT))
            return CL_SUCCESS;
    free(*devs);
    *devs = NULL;
    return px_fail(c, CL_INVALID_OPERATION,
                   "no device of the context supports images");
}

/* Whether the image's dimensions fit device D's limits. */
static bool image_fits(const Crane__CreateImage *im, cl_device_id d)
{
    cl_ulong w = im->width, h = im->height, dp = im->depth;

    switch (im->image_type) {
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
        return w <= dev_ulong(d, CL_DEVICE_IMAGE_MAX_BUFFER_SIZE);
    case CL_MEM_OBJECT_IMAGE1D:
        return w <= dev_ulong(d, CL_DEVICE_IMAGE2D_MAX_WIDTH);
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        return w <= dev_ulong(d, CL_DEVICE_IMAGE2D_MAX_WIDTH) &&
               im->array_size <= dev_ulong(d, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        if (im->array_size > dev_ulong(d, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE))
            return false;
        /* fall through */
    case CL_MEM_OBJECT_IMAGE2D:
        return w <= dev_ulong(d, CL_DEVICE_IMAGE2D_MAX_WIDTH) &&
               h <= dev_ulong(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT);
    case CL_MEM_OBJECT_IMAGE3D:
        return w <= dev_ulong(d, CL_DEVICE_IMAGE3D_MAX_WIDTH) &&
               h <= dev_ulong(d, CL_DEVICE_IMAGE3D_MAX_HEIGHT) &&
               dp <= dev_ulong(d, CL_DEVICE_IMAGE3D_MAX_DEPTH);
    default:
        return false;
    }
}

/* Whether CTX supports FMT for images of TYPE made with FLAGS. */
static bool format_supported(cl_context ctx, cl_mem_flags flags,
                             cl_mem_object_type type,
                             const cl_image_format *fmt)
{
    cl_image_format *v;
    cl_uint n = 0;
    bool found = false;

    if (clGetSupportedImageFormats(ctx, flags, type, 0, NULL, &n) !=
            CL_SUCCESS ||
        n == 0 || !(v = calloc(n, sizeof(*v))))
        return false;
    if (clGetSupportedImageFormats(ctx, flags, type, n, v, NULL) ==
        CL_SUCCESS)
        for (cl_uint i = 0; i < n && !found; i++)
            found = v[i].image_channel_order == fmt->image_channel_order &&
                    v[i].image_channel_data_type ==
                        fmt->image_channel_data_type;
    free(v);
    return found;
}

/* An image made from memory object MEM: a buffer big enough (1D buffer and
 * 2D images), or for a 2D image a 2D image. */
static cl_int check_image_source(struct px_call *c, cl_mem mem)
{
    const Crane__CreateImage *im = c->m->create_image;
    cl_mem_object_type type = 0;
    size_t size = 0;
    uint64_t need;

    clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof(type), &type, NULL);
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, NULL);
    if (type == CL_MEM_OBJECT_IMAGE2D &&
        im->image_type == CL_MEM_OBJECT_IMAGE2D)
        return CL_SUCCESS;      /* the vendor compares the two images */
    if (type != CL_MEM_OBJECT_BUFFER)
        return px_fail(c, CL_INVALID_IMAGE_DESCRIPTOR,
                       "image made from a memory object of type 0x%x",
                       (unsigned)type);
    /* The bytes the image covers in the buffer: at least width pixels of
     * up to 16 bytes per row, rows of row_pitch. */
    if (im->image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER)
        need = im->width;
    else if (px_mul3(im->row_pitch ? im->row_pitch : im->width,
                     im->height, 1, &need))
        return px_fail(c, CL_INVALID_IMAGE_SIZE, "image size overflows");
    if (need > size)
        return px_fail(c, CL_INVALID_IMAGE_SIZE,
                       "image of %llu bytes or more over a buffer of %zu",
                       (unsigned long long)need, size);
    return CL_SUCCESS;
}

static cl_int px_check_call_create_image(struct px_call *c)
{
    const Crane__CreateImage *im = c->m->create_image;
    cl_image_format fmt = {im->channel_order, im->channel_type};
    cl_mem_flags flags =
        im->flags & ~(cl_mem_flags)(CL_MEM_USE_HOST_PTR |
                                    CL_MEM_COPY_HOST_PTR);
    cl_device_id *devs = NULL;
    size_t ndev = 0;
    bool fits = false, mip = false;
    cl_context ctx;
    cl_int err;

    ctx = px_tenant_handle(c->t, im->context, PX_CONTEXT, &err);
    if (!ctx)
        return CL_SUCCESS;
    err = context_images(c, ctx, &devs, &ndev);
    if (err != CL_SUCCESS)
        return err;
    for (size_t i = 0; i < ndev; i++) {
        fits |= image_fits(im, devs[i]);
        mip |= dev_has_extension(devs[i], "cl_khr_mipmap_image");
    }
    free(devs);
    if (im->num_mip_levels && !mip)
        return px_fail(c, CL_INVALID_IMAGE_DESCRIPTOR,
                       "%u mip levels: no device has cl_khr_mipmap_image",
                       im->num_mip_levels);
    if (!fits)
        return px_fail(c, CL_INVALID_IMAGE_SIZE,
                       "image of %llux%llux%llu (array %llu) over every "
                       "device's limits",
                       (unsigned long long)im->width,
                       (unsigned long long)im->height,
                       (unsigned long long)im->depth,
                       (unsigned long long)im->array_size);
    if (!format_supported(ctx, flags, im->image_type, &fmt))
        return px_fail(c, CL_IMAGE_FORMAT_NOT_SUPPORTED,
                       "format 0x%x/0x%x not supported for image type 0x%x",
                       im->channel_order, im->channel_type,
                       im->image_type);
    if (im->buffer) {
        cl_mem mem = px_tenant_handle(c->t, im->buffer, PX_MEM, &err);
        if (mem)
            return check_image_source(c, mem);
    }
    return CL_SUCCESS;
}

static cl_int px_check_call_create_sampler(struct px_call *c)
{
    cl_device_id *devs = NULL;
    size_t ndev;
    cl_context ctx;
    cl_int err;

    ctx = px_tenant_handle(c->t, c->m->create_sampler->context, PX_CONTEXT,
                           &err);
    if (!ctx)
        return CL_SUCCESS;
    err = context_images(c, ctx, &devs, &ndev);
    free(devs);
    return err;
}

/* --- kernel arguments ------------------------------------------------------ */

/* What a kernel argument is declared as. */
enum arg_kind {
    ARG_UNKNOWN,                 /* no argument info: only shapes checked */
    ARG_BUFFER,                  /* __global or __constant pointer */
    ARG_LOCAL,                   /* __local pointer */
    ARG_IMAGE,
    ARG_PIPE,
    ARG_SAMPLER,
    ARG_VALUE,                   /* anything else: bytes */
};

/* The image type an OpenCL C image type name declares, or 0. */
static cl_mem_object_type image_type_of(const char *name)
{
    static const struct {
        const char *name;
        cl_mem_object_type type;
    } types[] = {
        {"image1d_t", CL_MEM_OBJECT_IMAGE1D},
        {"image1d_buffer_t", CL_MEM_OBJECT_IMAGE1D_BUFFER},
        {"image1d_array_t", CL_MEM_OBJECT_IMAGE1D_ARRAY},
        {"image2d_t", CL_MEM_OBJECT_IMAGE2D},
        {"image2d_array_t", CL_MEM_OBJECT_IMAGE2D_ARRAY},
        {"image3d_t", CL_MEM_OBJECT_IMAGE3D},
        {"image2d_depth_t", CL_MEM_OBJECT_IMAGE2D},
        {"image2d_array_depth_t", CL_MEM_OBJECT_IMAGE2D_ARRAY},
    };

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(name, types[i].name) == 0)
            return types[i].type;
    return 0;
}

static enum arg_kind arg_kind_of(cl_kernel k, cl_uint index,
                                 cl_mem_object_type *image_type)
{
    cl_kernel_arg_address_qualifier aq = 0;
    cl_kernel_arg_type_qualifier tq = 0;
    char name[64] = "";

    *image_type = 0;
    if (clGetKernelArgInfo(k, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                           sizeof(aq), &aq, NULL) != CL_SUCCESS ||
        clGetKernelArgInfo(k, index, CL_KERNEL_ARG_TYPE_QUALIFIER,
                           sizeof(tq), &tq, NULL) != CL_SUCCESS)
        return ARG_UNKNOWN;
    /* A name longer than the room is no image or sampler name. */
    if (clGetKernelArgInfo(k, index, CL_KERNEL_ARG_TYPE_NAME,
                           sizeof(name) - 1, name, NULL) != CL_SUCCESS)
        name[0] = '\0';
    if (tq & CL_KERNEL_ARG_TYPE_PIPE)
        return ARG_PIPE;
    if (strcmp(name, "sampler_t") == 0)
        return ARG_SAMPLER;
    if ((*image_type = image_type_of(name)) != 0)
        return ARG_IMAGE;
    /* An image type this file does not know (an extension's, or a name
     * spelt otherwise by another vendor): shapes only, never a wrong
     * refusal.  Never for a pointer (its name ends in '*'): bytes for a
     * pointer are what crashes the vendor. */
    if ((strstr(name, "image") || strstr(name, "sampler")) &&
        aq != CL_KERNEL_ARG_ADDRESS_LOCAL && name[0] &&
        name[strlen(name) - 1] != '*')
        return ARG_UNKNOWN;
    if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL)
        return ARG_LOCAL;
    if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
        aq == CL_KERNEL_ARG_ADDRESS_CONSTANT)
        return ARG_BUFFER;
    return ARG_VALUE;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* The memory object id OBJECT must name, for an argument of KIND. */
static cl_int check_mem_arg(struct px_call *c, const Crane__KernelArg *a,
                            enum arg_kind kind, cl_mem_object_type want)
{
    cl_mem_object_type type;
    /* One look-up of the entry for both its handle and its type. */
    struct px_obj *o = px_tenant_obj(c->t, a->object, PX_MEM);

    if (!o || !o->handle)
        return px_fail(c, CL_INVALID_MEM_OBJECT,
                       "argument %u: %llu is no memory object", a->index,
                       (unsigned long long)a->object);
    type = o->mem_type ? o->mem_type : px_tenant_mem_type(c->t, a->object);
    if (kind == ARG_BUFFER)
        want = CL_MEM_OBJECT_BUFFER;
    else if (kind == ARG_PIPE)
        want = CL_MEM_OBJECT_PIPE;
    if (type != want)
        return px_fail(c, CL_INVALID_MEM_OBJECT,
                       "argument %u: memory object of type 0x%x, the kernel "
                       "wants 0x%x",
                       a->index, (unsigned)type, (unsigned)want);
    return CL_SUCCESS;
}

/*
 * What a kernel's signature says of each argument: asked of the vendor
 * once per kernel and kept with its entry (struct px_obj's info), since
 * three queries and a few string compares per argument were most of what
 * a launch cost the proxy.  A kernel's signature never changes; its entry
 * (and this) goes when the kernel is released.  LAUNCH_DEV: the device
 * whose local memory the kernel's last launch was checked against, NULL
 * once a __local argument's size may have changed (px_validate_launch).
 */
struct kernel_sig {
    cl_uint nargs;
    cl_device_id launch_dev;
    struct {
        enum arg_kind kind;
        cl_mem_object_type image_type;
        uint64_t local_size;    /* a __local argument's, as last set */
    } arg[];
};

/* The signature of the tenant's kernel ID (K its handle), learnt now if
 * not yet; NULL when the vendor cannot tell its argument count, or out of
 * memory (*NARGS 0 then). */
static struct kernel_sig *kernel_sig_of(struct px_call *c, uint64_t id,
                                        cl_kernel k)
{
    struct px_obj *o = px_tenant_obj(c->t, id, PX_KERNEL);
    struct kernel_sig *sig;
    cl_uint nargs = 0;

    if (o && o->info)
        return o->info;
    if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs,
                        NULL) != CL_SUCCESS)
        return NULL;
    if (!(sig = calloc(1, sizeof(*sig) + nargs * sizeof(sig->arg[0]))))
        return NULL;
    sig->nargs = nargs;
    for (cl_uint i = 0; i < nargs; i++)
        sig->arg[i].kind = arg_kind_of(k, i, &sig->arg[i].image_type);
    if (o)
        o->info = sig;
    return sig;
}

/* Checks argument A against what kernel K declares for it (SIG). */
static cl_int check_arg(struct px_call *c, const struct kernel_sig *sig,
                        const Crane__KernelArg *a)
{
    bool object = a->is_object || a->object;
    cl_mem_object_type image_type;
    enum arg_kind kind;

    if (a->index >= sig->nargs)
        return px_fail(c, CL_INVALID_ARG_INDEX,
                       "argument %u of a kernel with %u", a->index,
                       sig->nargs);
    kind = sig->arg[a->index].kind;
    image_type = sig->arg[a->index].image_type;
    if (a->is_svm) {
        /* An SVM pointer (exec_svm.c): a pointer argument, NULL or an
         * allocation, which the proxy keeps as a buffer. */
        if (kind != ARG_BUFFER && kind != ARG_UNKNOWN)
            return px_fail(c, CL_INVALID_ARG_VALUE,
                           "argument %u: an SVM pointer for an argument "
                           "that is no global or constant pointer",
                           a->index);
        cl_int err;
        if (!a->object || !px_tenant_handle(c->t, a->object, PX_MEM, &err))
            return CL_SUCCESS;   /* NULL, or the executor names the id */
        return check_mem_arg(c, a, ARG_BUFFER, 0);
    }
    /* OpenCL: a memory object's or sampler's argument takes a handle's
     * size, whatever the value (the vendor's first check, PoCL's too). */
    size_t size = object ? sizeof(cl_mem)
                  : a->is_local ? a->local_size
                                : a->value.len;
    if (kind != ARG_UNKNOWN && kind != ARG_VALUE && kind != ARG_LOCAL &&
        size != sizeof(cl_mem))
        return px_fail(c, CL_INVALID_ARG_SIZE,
                       "argument %u: %zu bytes for a memory object or "
                       "sampler argument",
                       a->index, size);
    switch (kind) {
    case ARG_UNKNOWN:
    case ARG_VALUE:
        if (kind == ARG_VALUE && a->object)
            return px_fail(c, CL_INVALID_ARG_VALUE,
                           "argument %u: an object for a value argument",
                           a->index);
        return CL_SUCCESS;
    case ARG_LOCAL:
        if (!a->is_local)
            return px_fail(c, CL_INVALID_ARG_VALUE,
                           "argument %u: a value for a __local argument",
                           a->index);
        return CL_SUCCESS;
    case ARG_BUFFER:
        /* A NULL buffer: no object, a NULL value, or a NULL handle. */
        if (a->object)
            return check_mem_arg(c, a, kind, 0);
        if (object || (a->is_local && a->local_size == sizeof(cl_mem)) ||
            (a->value.len == sizeof(cl_mem) &&
             all_zero(a->value.data, a->value.len)))
            return CL_SUCCESS;
        return px_fail(c, CL_INVALID_MEM_OBJECT,
                       "argument %u: %s for a buffer argument", a->index,
                       a->is_local ? "a local size" : "bytes");
    case ARG_IMAGE:
    case ARG_PIPE:
        if (!a->object)
            return px_fail(c, CL_INVALID_MEM_OBJECT,
                           "argument %u: no memory object for an image or "
                           "pipe argument",
                           a->index);
        return check_mem_arg(c, a, kind, image_type);
    case ARG_SAMPLER: {
        cl_int err;
        if (!a->object ||
            !px_tenant_handle(c->t, a->object, PX_SAMPLER, &err))
            return px_fail(c, CL_INVALID_SAMPLER,
                           "argument %u: no sampler for a sampler argument",
                           a->index);
        return CL_SUCCESS;
    }
    }
    return CL_SUCCESS;
}

static cl_int check_args(struct px_call *c, uint64_t kernel_id,
                         Crane__KernelArg **args, size_t n)
{
    struct kernel_sig *sig;
    cl_kernel k;
    cl_int err;

    if (n == 0)
        return CL_SUCCESS;
    k = px_tenant_handle(c->t, kernel_id, PX_KERNEL, &err);
    if (!k)
        return CL_SUCCESS;
    if (!(sig = kernel_sig_of(c, kernel_id, k)))
        return px_fail(c, CL_INVALID_KERNEL, "kernel without arguments");
    for (size_t i = 0; i < n; i++) {
        err = check_arg(c, sig, args[i]);
        if (err != CL_SUCCESS)
            return err;
        /* A __local size may change the kernel's local memory. */
        if (args[i]->is_local || sig->arg[args[i]->index].kind == ARG_LOCAL)
            sig->launch_dev = NULL;
        if (args[i]->is_local)
            sig->arg[args[i]->index].local_size = args[i]->local_size;
    }
    return CL_SUCCESS;
}

static cl_int px_check_call_set_kernel_args(struct px_call *c)
{
    const Crane__SetKernelArgs *a = c->m->set_kernel_args;

    return check_args(c, a->kernel, a->args, a->n_args);
}

static cl_int px_check_call_launch_kernel(struct px_call *c)
{
    const Crane__LaunchKernel *l = c->m->launch_kernel;

    return check_args(c, l->kernel, l->args, l->n_args);
}

/* Each CALL row's check of proto/remote_calls.def, px_check_call_FIELD. */
cl_int px_validate_call(struct px_call *c)
{
#define CALL_CALL(field) return px_check_call_##field(c);
#define CALL_NONE(field) return CL_SUCCESS;
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    case CRANE__CLIENT_MESSAGE__MSG_##CASE:                             \
        CALL_##call(field)
    switch (c->m->msg_case) {
#include "proto/remote_calls.def"
    default:
        return CL_SUCCESS;
    }
#undef CRN_REMOTE_CALL
#undef CALL_CALL
#undef CALL_NONE
}

/* The alignment the vendor may give each __local argument (PoCL: 128
 * bytes), which CL_KERNEL_LOCAL_MEM_SIZE may leave out. */
#define LOCAL_ALIGN_SLACK 128

/* What that alignment may add to the arguments' sizes: none for sizes that
 * are multiples of it (a kernel may then use the whole local memory, as
 * the CTS's min_max_local_mem_size does); without a signature, the most
 * for every argument. */
static cl_ulong local_slack(const struct kernel_sig *sig, cl_uint nargs)
{
    cl_ulong pad = 0;

    if (!sig)
        return (cl_ulong)nargs * LOCAL_ALIGN_SLACK;
    for (cl_uint i = 0; i < sig->nargs; i++) {
        uint64_t n = sig->arg[i].local_size % LOCAL_ALIGN_SLACK;
        if (n)
            pad += LOCAL_ALIGN_SLACK - n;
    }
    return pad;
}

cl_int px_validate_launch(struct px_call *c, cl_command_queue q,
                          cl_kernel k)
{
    const Crane__LaunchKernel *l = c->m->launch_kernel;
    struct kernel_sig *sig = kernel_sig_of(c, l->kernel, k);
    cl_device_id dev = NULL;
    cl_ulong used = 0, have;
    cl_uint nargs = 0;

    /* A queue's device never changes: asked once per queue, not per
     * launch (a vendor call on the path of every launch). */
    struct px_obj *qo = px_tenant_obj(c->t, l->queue, PX_QUEUE);
    if (qo && qo->handle == q && qo->queue_dev) {
        dev = qo->queue_dev;
    } else {
        if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(dev), &dev,
                                  NULL) != CL_SUCCESS)
            return CL_SUCCESS;  /* the enqueue names what is wrong */
        if (qo && qo->handle == q)
            qo->queue_dev = dev;
    }
    /* Checked for this device, no __local size changed since. */
    if (sig && dev && sig->launch_dev == dev)
        return CL_SUCCESS;
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE,
                                 sizeof(used), &used, NULL) != CL_SUCCESS)
        return CL_SUCCESS;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL);
    have = dev_ulong(dev, CL_DEVICE_LOCAL_MEM_SIZE);
    if (used > have || local_slack(sig, nargs) > have - used)
        return px_fail(c, CL_OUT_OF_RESOURCES,
                       "kernel needs %llu bytes of local memory, the device "
                       "has %llu",
                       (unsigned long long)used, (unsigned long long)have);
    if (sig)
        sig->launch_dev = dev;
    return CL_SUCCESS;
}

/* What px_build_options appends. */
static const char arg_info[] = " -cl-kernel-arg-info";

size_t px_build_options_seen(const char *options, size_t len)
{
    size_t n = sizeof(arg_info) - 1;

    /* LEN counts the NUL, as clGetProgramBuildInfo gives it. */
    if (len > n && options[len - 1] == '\0' &&
        memcmp(options + len - 1 - n, arg_info, n) == 0)
        return len - n;
    return len;
}

char *px_build_options(const char *options)
{
    size_t len = strlen(options);
    char *s = malloc(len + sizeof(arg_info));

    if (!s)
        return NULL;
    memcpy(s, options, len);
    memcpy(s + len, arg_info, sizeof(arg_info));
    return s;
}
