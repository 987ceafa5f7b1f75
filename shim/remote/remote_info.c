/* The remote backend's queries: every clGet*Info and
 * clGetSupportedImageFormats as one GetInfo message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"

/* --- queries */

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

cl_int rc_get_info_in(Crane__InfoFn fn, uint64_t id, uint64_t other,
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

cl_int rc_get_info(Crane__InfoFn fn, uint64_t id, uint64_t other,
                   cl_uint param, size_t size, void *value, size_t *size_ret)
{
    return rc_get_info_in(fn, id, other, 0, param, NULL, 0, size, value,
                          size_ret);
}

#define INFO_FN(name, type, FN)                                            \
    cl_int CL_API_CALL rc_##name(type h, cl_uint param, size_t size,       \
                                 void *value, size_t *size_ret)            \
    {                                                                      \
        return rc_get_info(CRANE__INFO_FN__##FN, RC_ID(h), 0, param, size, \
                           value, size_ret);                               \
    }
INFO_FN(clGetPlatformInfo, cl_platform_id, INFO_PLATFORM)
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

cl_int CL_API_CALL rc_clGetProgramBuildInfo(cl_program p, cl_device_id d,
                                            cl_program_build_info param,
                                            size_t size, void *value,
                                            size_t *size_ret)
{
    return rc_get_info(CRANE__INFO_FN__INFO_PROGRAM_BUILD, RC_ID(p), RC_ID(d),
                       param, size, value, size_ret);
}

cl_int CL_API_CALL rc_clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d,
                                               cl_kernel_work_group_info param,
                                               size_t size, void *value,
                                               size_t *size_ret)
{
    return rc_get_info(CRANE__INFO_FN__INFO_KERNEL_WORK_GROUP, RC_ID(k),
                       RC_ID(d), param, size, value, size_ret);
}

cl_int CL_API_CALL rc_clGetKernelArgInfo(cl_kernel k, cl_uint index,
                                         cl_kernel_arg_info param, size_t size,
                                         void *value, size_t *size_ret)
{
    return rc_get_info_in(CRANE__INFO_FN__INFO_KERNEL_ARG, RC_ID(k), 0, index,
                          param, NULL, 0, size, value, size_ret);
}

cl_int CL_API_CALL rc_clGetKernelSubGroupInfo(cl_kernel k, cl_device_id d,
                                              cl_kernel_sub_group_info param,
                                              size_t in_size, const void *in,
                                              size_t size, void *value,
                                              size_t *size_ret)
{
    return rc_get_info_in(CRANE__INFO_FN__INFO_KERNEL_SUB_GROUP, RC_ID(k),
                          RC_ID(d), 0, param, in, in_size, size, value,
                          size_ret);
}

/* Binaries come back concatenated; the program gave one pointer each. */
cl_int CL_API_CALL rc_clGetProgramInfo(cl_program p, cl_uint param,
                                       size_t size, void *value,
                                       size_t *size_ret)
{
    if (param != CL_PROGRAM_BINARIES || !value)
        return rc_get_info(CRANE__INFO_FN__INFO_PROGRAM, RC_ID(p), 0, param,
                           size, value, size_ret);
    size_t sizes[64], n_sizes = 0, total = 0;
    cl_int err =
        rc_get_info(CRANE__INFO_FN__INFO_PROGRAM, RC_ID(p), 0,
                    CL_PROGRAM_BINARY_SIZES, sizeof(sizes), sizes, &n_sizes);
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
    err = rc_get_info(CRANE__INFO_FN__INFO_PROGRAM, RC_ID(p), 0,
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

cl_int CL_API_CALL rc_clGetSupportedImageFormats(
    cl_context c, cl_mem_flags flags, cl_mem_object_type type, cl_uint n,
    cl_image_format *formats, cl_uint *n_ret)
{
    Crane__GetInfo gi = CRANE__GET_INFO__INIT;
    struct rc_reply r;

    gi.fn = CRANE__INFO_FN__INFO_IMAGE_FORMATS;
    gi.id = RC_ID(c);
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

/* Only coarse-grained SVM is remoted (remote_svm.c), and no native kernel
 * (a function of the program's, which the proxy cannot call): the device
 * says so, and a program that asks runs neither.  Fine-grained buffers and
 * atomics would need the program's bytes and the device's to be one
 * memory, which no transport gives (docs/remoting.md, "SVM"). */
cl_int CL_API_CALL rc_clGetDeviceInfo(cl_device_id d, cl_uint param,
                                      size_t size, void *value,
                                      size_t *size_ret)
{
    cl_int err = rc_get_info(CRANE__INFO_FN__INFO_DEVICE, RC_ID(d), 0, param,
                             size, value, size_ret);

    if (err == CL_SUCCESS && param == CL_DEVICE_SVM_CAPABILITIES && value &&
        size >= sizeof(cl_device_svm_capabilities))
        *(cl_device_svm_capabilities *)value &=
            CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
    if (err == CL_SUCCESS && param == CL_DEVICE_EXECUTION_CAPABILITIES &&
        value && size >= sizeof(cl_device_exec_capabilities))
        *(cl_device_exec_capabilities *)value &= ~(cl_device_exec_capabilities)
            CL_EXEC_NATIVE_KERNEL;
    return err;
}
