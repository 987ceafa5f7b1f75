/* What the hand-written entry points of the object kinds share: answers
 * from the shim's own state, and the retain and release pair. */
#ifndef CRANE_SHIM_ENTRY_H
#define CRANE_SHIM_ENTRY_H

#include "shim.h"

/* An info query as the program asked it (clGet*Info's last four
 * parameters); shim_info_give answers it from SRC, as the spec asks. */
struct shim_info_ask {
    cl_uint param;
    size_t size;
    void *value;
    size_t *size_ret;
};
#define SHIM_INFO_ASK                                                  \
    {param_name, param_value_size, param_value, param_value_size_ret}
cl_int shim_info_give(const struct shim_info_ask *ask, const void *src,
                      size_t size);

/* What a kind's info query answers from the shim itself: the program's
 * reference count (REFS_PARAM) and shadow handles (PARAMS, 0 ends them).
 * shim_info_own: whether ASK is for one of them, its answer in *ERR. */
#define SHIM_INFO_OWN_MAX 3
struct shim_info_own {
    cl_uint refs_param, refs;
    cl_uint params[SHIM_INFO_OWN_MAX];
    const void *handles[SHIM_INFO_OWN_MAX];
};
bool shim_info_own(const struct shim_info_own *own,
                   const struct shim_info_ask *ask, cl_int *err);

/* The hooks of cl_api.def's SHIM_INFO rows (exports.c expands them), in
 * the file of their kind.  An `own` hook answers before the gate and
 * returns whether it did (its answer in *ERR); a `gated` one answers
 * inside the gate, before the vendor would; an `after` one amends the
 * vendor's answer ERR. */
struct shim_platform *shim_platform_or_default(cl_platform_id platform);
bool shim_device_info_own(struct shim_device *d,
                          const struct shim_info_ask *ask, cl_int *err);
bool shim_context_info_own(struct shim_context *c,
                           const struct shim_info_ask *ask, cl_int *err);
bool shim_queue_info_own(struct shim_queue *q,
                         const struct shim_info_ask *ask, cl_int *err);
bool shim_mem_info_own(struct shim_mem *m, const struct shim_info_ask *ask,
                       cl_int *err);
bool shim_image_info_own(struct shim_mem *m, const struct shim_info_ask *ask,
                         cl_int *err);
void shim_image_info_after(struct shim_mem *m,
                           const struct shim_info_ask *ask, cl_int err);
bool shim_sampler_info_own(struct shim_sampler *s,
                           const struct shim_info_ask *ask, cl_int *err);
bool shim_sampler_info_gated(struct shim_sampler *s,
                             const struct shim_info_ask *ask, cl_int *err);
bool shim_program_info_own(struct shim_program *p,
                           const struct shim_info_ask *ask, cl_int *err);
bool shim_program_build_info_own(struct shim_program *p, cl_device_id device,
                                 const struct shim_info_ask *ask,
                                 cl_int *err);
bool shim_kernel_info_own(struct shim_kernel *k,
                          const struct shim_info_ask *ask, cl_int *err);
bool shim_kernel_arg_info_own(struct shim_kernel *k, cl_uint arg_indx,
                              cl_int *err);
bool shim_kernel_arg_info_gated(struct shim_kernel *k, int *seen,
                                cl_int *err);
void shim_kernel_arg_info_after(struct shim_kernel *k, int seen,
                                cl_int err);
bool shim_event_info_own(struct shim_event *e,
                         const struct shim_info_ask *ask, cl_int *err);
bool shim_event_info_gated(struct shim_event *e,
                           const struct shim_info_ask *ask, cl_int *err);
bool shim_event_profiling_gated(struct shim_event *e,
                                const struct shim_info_ask *ask,
                                cl_int *err);
void shim_event_profiling_after(struct shim_event *e,
                                const struct shim_info_ask *ask, cl_int err);

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
