/* Programs' info queries: what the shim answers itself (its own handles,
 * the program's own options, what kept binaries hide) and the rest from
 * the vendor. */
#include <string.h>

#include "shim.h"
#include "entry.h"

/* CL_PROGRAM_DEVICES: the vendor's list, mapped back to the program's own
 * handles. */
static cl_int program_devices(struct shim_program *p,
                              const struct shim_info_ask *ask)
{
    cl_device_id real[64], mine[64];
    size_t size = 0;
    cl_int err;

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
    return shim_info_give(ask, mine, n * sizeof(cl_device_id));
}

/* clGetProgramInfo (cl_api.def). */
bool shim_program_info_own(struct shim_program *p,
                           const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_PROGRAM_REFERENCE_COUNT, atomic_load(&p->obj.app_refs),
        {CL_PROGRAM_CONTEXT}, {p->context}};
    bool answered;

    if (shim_info_own(&own, ask, err))
        return true;
    switch (ask->param) {
    /* Made from kept binaries by a switch (program_cache.c): the vendor
     * has no source or IL for it, the program still does. */
    case CL_PROGRAM_SOURCE:
        if (!p->real_from_binary || p->origin != SHIM_FROM_SOURCE)
            return false;
        *err = shim_info_give(ask, p->source, strlen(p->source) + 1);
        return true;
    case CL_PROGRAM_IL:
        if (!p->real_from_binary || p->origin != SHIM_FROM_IL)
            return false;
        *err = shim_info_give(ask, p->il, p->il_size);
        return true;
    /* The binaries of the program's build, the same across switches. */
    case CL_PROGRAM_BINARY_SIZES:
    case CL_PROGRAM_BINARIES:
        shim_enter();
        answered = shim_program_cache_answer(p, ask->param, ask->size,
                                             ask->value, ask->size_ret, err);
        shim_leave();
        return answered;
    case CL_PROGRAM_DEVICES:
        *err = program_devices(p, ask);
        return true;
    default:
        return false;
    }
}

/* clGetProgramBuildInfo (cl_api.def). */
bool shim_program_build_info_own(struct shim_program *p, cl_device_id device,
                                 const struct shim_info_ask *ask,
                                 cl_int *err)
{
    const char *options = p->options ? p->options : "";
    const cl_build_status built = CL_BUILD_SUCCESS;

    if (!shim_obj_is(device, SHIM_DEVICE))
        *err = CL_INVALID_DEVICE;
    /* The options as the program gave them, without the shim's own. */
    else if (ask->param == CL_PROGRAM_BUILD_OPTIONS &&
             p->step != SHIM_NOT_BUILT)
        *err = shim_info_give(ask, options, strlen(options) + 1);
    /* Kept binaries are only of builds, compiles and links that
     * succeeded; a compiled object or library loaded from them was not
     * built again by the vendor, which may say CL_BUILD_NONE. */
    else if (ask->param == CL_PROGRAM_BUILD_STATUS && p->real_from_binary)
        *err = shim_info_give(ask, &built, sizeof(built));
    else
        return false;
    return true;
}
