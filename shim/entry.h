/* What the hand-written entry points of the object kinds share: answers
 * from the shim's own state, and the retain and release pair. */
#ifndef CRANE_SHIM_ENTRY_H
#define CRANE_SHIM_ENTRY_H

#include "shim.h"

/* What a kind's info query answers from the shim itself: the program's
 * reference count (REFS_PARAM) and shadow handles (PARAMS, 0 ends them).
 * shim_info_own: whether PARAM is one of them, its answer in *ERR. */
#define SHIM_INFO_OWN_MAX 3
struct shim_info_own {
    cl_uint refs_param, refs;
    cl_uint params[SHIM_INFO_OWN_MAX];
    const void *handles[SHIM_INFO_OWN_MAX];
};
bool shim_info_own(const struct shim_info_own *own, cl_uint param,
                   size_t value_size, void *value, size_t *size_ret,
                   cl_int *err);

/* clRetain<NAME> and clRelease<NAME> (HANDLE a TYPE) for a kind whose
 * release needs nothing else: the program's references on the shadow;
 * BAD answers a handle that is not a live one of KIND. */
#define SHIM_RETAIN_RELEASE(NAME, TYPE, KIND, BAD)                          \
    SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clRetain##NAME(TYPE handle) \
    {                                                                       \
        return shim_obj_retain(handle, KIND) < 0 ? BAD : CL_SUCCESS;        \
    }                                                                       \
    SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clRelease##NAME(TYPE handle) \
    {                                                                       \
        shim_enter();                                                       \
        int rc = shim_obj_release(handle, KIND);                            \
        shim_leave();                                                       \
        return rc < 0 ? BAD : CL_SUCCESS;                                   \
    }

#endif
