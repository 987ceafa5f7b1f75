/* Programs' info queries: what the shim answers itself (its own handles,
 * the program's own options, what kept binaries hide) and the rest from
 * the vendor. */
#include <string.h>

#include "shim.h"
#include "entry.h"

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(
    cl_program program, cl_program_info param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    struct shim_info_own own = {
        CL_PROGRAM_REFERENCE_COUNT, atomic_load(&p->obj.app_refs),
        {CL_PROGRAM_CONTEXT}, {p->context}};
    if (shim_info_own(&own, param_name, param_value_size, param_value,
                      param_value_size_ret, &err))
        return err;
    switch (param_name) {
    /* Made from kept binaries by a switch (program_cache.c): the vendor
     * has no source or IL for it, the program still does. */
    case CL_PROGRAM_SOURCE:
        if (p->real_from_binary && p->origin == SHIM_FROM_SOURCE)
            return shim_info_return(p->source, strlen(p->source) + 1,
                                    param_value_size, param_value,
                                    param_value_size_ret);
        break;
    case CL_PROGRAM_IL:
        if (p->real_from_binary && p->origin == SHIM_FROM_IL)
            return shim_info_return(p->il, p->il_size, param_value_size,
                                    param_value, param_value_size_ret);
        break;
    /* The binaries of the program's build, the same across switches. */
    case CL_PROGRAM_BINARY_SIZES:
    case CL_PROGRAM_BINARIES:
        shim_enter();
        bool answered = shim_program_cache_answer(
            p, param_name, param_value_size, param_value,
            param_value_size_ret, &err);
        shim_leave();
        if (answered)
            return err;
        break;
    case CL_PROGRAM_DEVICES: {
        /* The vendor's list, mapped back to the program's own handles. */
        cl_device_id real[64], mine[64];
        size_t size = 0;
        shim_enter();
        err = VENDOR(p->obj.real)->clGetProgramInfo(
            p->obj.real, CL_PROGRAM_DEVICES, sizeof(real), real, &size);
        shim_leave();
        if (err != CL_SUCCESS)
            return err;
        size_t n = size / sizeof(cl_device_id);
        for (size_t i = 0; i < n; i++) {
            mine[i] = NULL;
            for (cl_uint d = 0; d < p->context->n_devices; d++)
                if (p->context->devices[d]->obj.real == real[i])
                    mine[i] = (cl_device_id)p->context->devices[d];
        }
        return shim_info_return(mine, n * sizeof(cl_device_id),
                                param_value_size, param_value,
                                param_value_size_ret);
    }
    default:
        break;
    }
    shim_enter();
    err = VENDOR(p->obj.real)->clGetProgramInfo(p->obj.real, param_name,
                                                param_value_size, param_value,
                                                param_value_size_ret);
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(
    cl_program program, cl_device_id device,
    cl_program_build_info param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    if (!shim_obj_is(device, SHIM_DEVICE))
        return CL_INVALID_DEVICE;
    /* The options as the program gave them, without the shim's own. */
    if (param_name == CL_PROGRAM_BUILD_OPTIONS && p->step != SHIM_NOT_BUILT) {
        const char *o = p->options ? p->options : "";
        return shim_info_return(o, strlen(o) + 1, param_value_size,
                                param_value, param_value_size_ret);
    }
    /* Kept binaries are only of builds, compiles and links that
     * succeeded; a compiled object or library loaded from them was not
     * built again by the vendor, which may say CL_BUILD_NONE. */
    if (param_name == CL_PROGRAM_BUILD_STATUS && p->real_from_binary) {
        cl_build_status st = CL_BUILD_SUCCESS;
        return shim_info_return(&st, sizeof(st), param_value_size,
                                param_value, param_value_size_ret);
    }
    shim_enter();
    err = VENDOR(p->obj.real)->clGetProgramBuildInfo(
        p->obj.real, R(device), param_name, param_value_size, param_value,
        param_value_size_ret);
    shim_leave();
    return err;
}
