/* The remote backend's kernels: creation, arguments cached until the
 * launch that carries them, and launches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"

/* --- kernels */

static struct rc_kernel *kernel_new(void)
{
    struct rc_kernel *k = rc_obj_new(SHIM_KERNEL, sizeof(struct rc_kernel));
    if (k)
        pthread_mutex_init(&k->lock, NULL);
    return k;
}

cl_kernel CL_API_CALL rc_clCreateKernel(cl_program p, const char *name,
                                        cl_int *errcode_ret)
{
    Crane__CreateKernel ck = CRANE__CREATE_KERNEL__INIT;

    if (!name) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    struct rc_kernel *k = kernel_new();
    if (!k) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    ck.id = k->obj.id;
    ck.program = RC_ID(p);
    ck.name = (char *)name;
    RC_MSG(m, create_kernel, CREATE_KERNEL, &ck);
    /* Programs check for a wrong name; the shim asks for the kernel's
     * arguments right after anyway, so waiting costs little. */
    return rc_created_sync(&k->obj, &m, NULL, 0, errcode_ret, NULL);
}

cl_int CL_API_CALL rc_clCreateKernelsInProgram(cl_program p, cl_uint n,
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
    ck.program = RC_ID(p);
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

cl_kernel CL_API_CALL rc_clCloneKernel(cl_kernel src, cl_int *errcode_ret)
{
    struct rc_kernel *from = (void *)src;
    Crane__CreateKernel ck = CRANE__CREATE_KERNEL__INIT;

    /* The proxy clones what it has: send the cached changes first. */
    cl_int err = shim_remote_send_args(from);
    if (err != CL_SUCCESS) {
        RC_SET_ERR(err);
        return NULL;
    }
    struct rc_kernel *k = kernel_new();
    if (!k) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    pthread_mutex_lock(&from->lock);
    k->args = calloc(from->n_args ? from->n_args : 1, sizeof(*k->args));
    for (cl_uint i = 0; k->args && i < from->n_args; i++) {
        k->args[i] = from->args[i];
        k->args[i].value = NULL;
        if (from->args[i].value &&
            (k->args[i].value = malloc(from->args[i].size)))
            memcpy(k->args[i].value, from->args[i].value, from->args[i].size);
    }
    k->n_args = k->args ? from->n_args : 0;
    pthread_mutex_unlock(&from->lock);
    ck.id = k->obj.id;
    ck.clone_of = from->obj.id;
    RC_MSG(m, create_kernel, CREATE_KERNEL, &ck);
    return rc_created(&k->obj, &m, NULL, 0, errcode_ret);
}

cl_int CL_API_CALL rc_clReleaseKernel(cl_kernel h)
{
    struct rc_kernel *k = (void *)h;
    cl_int err = rc_release(h, SHIM_KERNEL);

    for (cl_uint i = 0; i < k->n_args; i++)
        free(k->args[i].value);
    free(k->args);
    pthread_mutex_destroy(&k->lock);
    free(k);
    return err;
}

/* --- kernel arguments and launches */

/* Argument INDEX of K, with room made for it (its bytes, if any, kept for
 * the caller to reuse or free); NULL when out of memory.  Caller holds
 * k->lock. */
static struct rc_arg *arg_slot(struct rc_kernel *k, cl_uint index)
{
    if (index >= k->n_args) {
        cl_uint n = index + 1 > 2 * k->n_args ? index + 1 : 2 * k->n_args;
        struct rc_arg *a = realloc(k->args, n * sizeof(*a));
        if (!a)
            return NULL;
        memset(a + k->n_args, 0, (n - k->n_args) * sizeof(*a));
        k->args = a;
        k->n_args = n;
    }
    struct rc_arg *a = &k->args[index];
    a->is_svm = false;
    a->svm_offset = 0;
    return a;
}

/* The kernel gets the proxy's address of the same allocation plus the
 * same offset (docs/remoting.md, "SVM"). */
cl_int CL_API_CALL rc_clSetKernelArgSVMPointer(cl_kernel h, cl_uint index,
                                               const void *value)
{
    struct rc_kernel *k = (void *)h;
    struct rc_svm *svm = NULL;
    size_t offset = 0;

    if (index > 4096)
        return CL_INVALID_ARG_INDEX;
    if (value && !(svm = shim_remote_svm_find(value, &offset))) {
        CRN_WARN("remote: kernel argument %u points at %p, in no SVM "
                 "allocation of this program: CL_INVALID_ARG_VALUE",
                 index, value);
        return CL_INVALID_ARG_VALUE;
    }
    pthread_mutex_lock(&k->lock);
    struct rc_arg *a = arg_slot(k, index);
    if (!a) {
        pthread_mutex_unlock(&k->lock);
        return CL_OUT_OF_HOST_MEMORY;
    }
    free(a->value);
    a->value = NULL;
    a->is_object = a->is_local = false;
    a->is_svm = true;
    a->object = svm ? svm->mem.obj.id : 0;
    a->svm_offset = offset;
    a->size = sizeof(void *);
    if (!a->changed)
        k->n_changed++;
    a->changed = true;
    pthread_mutex_unlock(&k->lock);
    return CL_SUCCESS;
}

/* SVM pointers a kernel reaches other than through its arguments: the
 * proxy's kernels see only argument pointers translated, so such pointers
 * are checked and accepted (their allocations are on the proxy already);
 * fine-grained system SVM is not offered remoted. */
cl_int CL_API_CALL rc_clSetKernelExecInfo(cl_kernel h, cl_uint param,
                                          size_t size, const void *value)
{
    size_t offset;

    if (!h || !value)
        return h ? CL_INVALID_VALUE : CL_INVALID_KERNEL;
    switch (param) {
    case CL_KERNEL_EXEC_INFO_SVM_PTRS:
        if (size % sizeof(void *))
            return CL_INVALID_VALUE;
        for (size_t i = 0; i < size / sizeof(void *); i++)
            if (!shim_remote_svm_find(((void *const *)value)[i], &offset))
                return CL_INVALID_VALUE;
        return CL_SUCCESS;
    case CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM:
        if (size != sizeof(cl_bool))
            return CL_INVALID_VALUE;
        return *(const cl_bool *)value ? CL_INVALID_OPERATION : CL_SUCCESS;
    default:
        return CL_INVALID_VALUE;
    }
}

/* The shape of a clSetKernelArg (enum rc_arg_kind); *OBJ is the memory
 * object or sampler it names, else NULL. */
static enum rc_arg_kind arg_kind(size_t size, const void *value,
                                 struct rc_obj **obj)
{
    const struct rc_mem *m;

    *obj = NULL;
    if (!value)
        return RC_ARG_LOCAL;
    if (size != sizeof(void *))
        return RC_ARG_BYTES;
    if (!*(void *const *)value)
        return RC_ARG_NULL;
    if (!(*obj = shim_remote_by_addr(*(void *const *)value)))
        return RC_ARG_BYTES;
    if ((*obj)->kind == SHIM_SAMPLER)
        return RC_ARG_SAMPLER;
    m = (const struct rc_mem *)*obj;
    if (!m->elem)
        return RC_ARG_BUFFER;
    /* A read_only image argument refuses a write-only image, and the
     * reverse (OpenCL's rule): each access is a shape of its own. */
    if (m->flags & CL_MEM_READ_ONLY)
        return RC_ARG_IMAGE_RO;
    return m->flags & CL_MEM_WRITE_ONLY ? RC_ARG_IMAGE_WO : RC_ARG_IMAGE_RW;
}

/* Whether the proxy's vendor accepted this shape for argument A before. */
static bool arg_known(const struct rc_arg *a, enum rc_arg_kind kind,
                      size_t size)
{
    return (a->valid_kinds & (1u << kind)) &&
           (kind != RC_ARG_BYTES || size == a->valid_bytes);
}

static void arg_learn(struct rc_arg *a, enum rc_arg_kind kind, size_t size)
{
    a->valid_kinds |= (uint8_t)(1u << kind);
    if (kind == RC_ARG_BYTES)
        a->valid_bytes = size;
}

/* Argument A (number INDEX) as a message; VALUE its bytes. */
static void arg_message(const struct rc_arg *a, cl_uint index,
                        const void *value, Crane__KernelArg *out)
{
    static const Crane__KernelArg empty = CRANE__KERNEL_ARG__INIT;

    *out = empty;
    out->index = index;
    out->is_object = a->is_object;
    out->object = a->object;
    out->is_local = a->is_local;
    out->is_svm = a->is_svm;
    out->svm_offset = a->svm_offset;
    out->local_size = a->is_local ? a->size : 0;
    out->value.data = (uint8_t *)value;
    out->value.len = value ? a->size : 0;
}

/* Sets argument INDEX to NEXT (its bytes at VALUE) on the proxy now and
 * waits for the vendor's verdict: *ACCEPTED when it took it. */
static cl_int arg_send_now(struct rc_kernel *k, cl_uint index,
                           const struct rc_arg *next, const void *value,
                           bool *accepted)
{
    Crane__SetKernelArgs sa = CRANE__SET_KERNEL_ARGS__INIT;
    Crane__KernelArg ka, *one = &ka;
    struct rc_reply r;

    arg_message(next, index, value, &ka);
    sa.kernel = k->obj.id;
    sa.n_args = 1;
    sa.args = &one;
    RC_MSG(m, set_kernel_args, SET_KERNEL_ARGS, &sa);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    /* An earlier batched call's error may come back instead of this
     * call's own verdict, which the reply still holds. */
    *accepted = r.reply && r.reply->err == CL_SUCCESS;
    shim_remote_reply_free(&r);
    return err;
}

/* Keeps NEXT (its bytes at VALUE) as argument INDEX of K, to be sent with
 * the next launch (CHANGED) or already on the proxy; caller holds
 * k->lock. */
static cl_int arg_store(struct rc_kernel *k, cl_uint index,
                        const struct rc_arg *next, const void *value,
                        bool changed)
{
    struct rc_arg *a = arg_slot(k, index);
    bool bytes = value && !next->is_object && next->size;

    if (!a)
        return CL_OUT_OF_HOST_MEMORY;
    /* The same argument set again to bytes of the same size (a loop's
     * scalars) reuses their room. */
    if (a->value && (!bytes || a->size != next->size)) {
        free(a->value);
        a->value = NULL;
    }
    a->is_object = next->is_object;
    a->is_local = next->is_local;
    a->object = next->object;
    a->size = next->size;
    if (bytes) {
        if (!a->value && !(a->value = malloc(next->size)))
            return CL_OUT_OF_HOST_MEMORY;
        memcpy(a->value, value, next->size);
    }
    if (changed != a->changed)
        k->n_changed += changed ? 1 : -1;
    a->changed = changed;
    return CL_SUCCESS;
}

/*
 * Only the vendor knows an argument's type, so its errors for a wrong size
 * or kind of value cannot be told here.  The first set of each shape of
 * each argument is therefore sent at once and answered by the vendor;
 * once accepted, the same shape is batched ever after (a memory object or
 * sampler in it is checked to be one of ours by the lookup that finds
 * it), and only a new shape costs a round trip again.  TRUSTED: a switch
 * restoring a value the vendor on the other side took, batched at once.
 */
static cl_int set_arg(struct rc_kernel *k, cl_uint index, size_t size,
                      const void *value, bool trusted)
{
    struct rc_obj *obj;
    enum rc_arg_kind kind = arg_kind(size, value, &obj);
    struct rc_arg next = {.is_object = obj != NULL, .is_local = !value,
                          .object = obj ? obj->id : 0, .size = size};
    const void *bytes = value && !obj && size ? value : NULL;
    bool known, accepted = true;
    cl_int err = CL_SUCCESS;

    if (index > 4096)
        return CL_INVALID_ARG_INDEX;
    if (value && size > 65536)
        return CL_INVALID_ARG_SIZE;
    pthread_mutex_lock(&k->lock);
    known = trusted ||
            (index < k->n_args && arg_known(&k->args[index], kind, size));
    /* OpenCL's rule for an argument known to be __local. */
    if (known && kind == RC_ARG_LOCAL && size == 0)
        err = CL_INVALID_ARG_SIZE;
    else if (!known)
        err = arg_send_now(k, index, &next, bytes, &accepted);
    /* Known: kept to go with the next launch; else already set there. */
    if (known ? err == CL_SUCCESS : accepted) {
        cl_int kept = arg_store(k, index, &next, bytes, known);
        if (kept == CL_SUCCESS)
            arg_learn(&k->args[index], kind, size);
        else if (err == CL_SUCCESS)
            err = kept;
    }
    pthread_mutex_unlock(&k->lock);
    return err;
}

cl_int CL_API_CALL rc_clSetKernelArg(cl_kernel h, cl_uint index, size_t size,
                                     const void *value)
{
    return set_arg((struct rc_kernel *)h, index, size, value, false);
}

cl_int shim_remote_restore_arg(void *kernel, cl_uint index, size_t size,
                               const void *value)
{
    return set_arg(kernel, index, size, value, true);
}

/* The changed arguments as messages; caller holds k->lock. */
static size_t collect_args(struct rc_kernel *k, Crane__KernelArg *store,
                           Crane__KernelArg **ptrs)
{
    size_t n = 0;

    for (cl_uint i = 0; i < k->n_args && n < k->n_changed; i++) {
        struct rc_arg *a = &k->args[i];
        if (!a->changed)
            continue;
        arg_message(a, i, a->value, &store[n]);
        ptrs[n] = &store[n];
        n++;
    }
    return n;
}

static void args_sent(struct rc_kernel *k)
{
    for (cl_uint i = 0; i < k->n_args; i++)
        k->args[i].changed = false;
    k->n_changed = 0;
}

#define ARGS_ON_STACK 32

cl_int shim_remote_send_args(struct rc_kernel *k)
{
    Crane__KernelArg store[ARGS_ON_STACK], *ptrs[ARGS_ON_STACK];
    Crane__KernelArg *hs = NULL, **hp = NULL;
    cl_int err = CL_SUCCESS;

    pthread_mutex_lock(&k->lock);
    if (!k->n_changed)
        goto out;
    Crane__KernelArg *s = store, **p = ptrs;
    if (k->n_changed > ARGS_ON_STACK) {
        hs = malloc(k->n_changed * sizeof(*hs));
        hp = malloc(k->n_changed * sizeof(*hp));
        if (!hs || !hp) {
            err = CL_OUT_OF_HOST_MEMORY;
            goto out;
        }
        s = hs;
        p = hp;
    }
    Crane__SetKernelArgs sa = CRANE__SET_KERNEL_ARGS__INIT;
    sa.kernel = k->obj.id;
    sa.n_args = collect_args(k, s, p);
    sa.args = p;
    RC_MSG(m, set_kernel_args, SET_KERNEL_ARGS, &sa);
    err = shim_remote_send(&m, NULL, 0);
    if (err == CL_SUCCESS)
        args_sent(k);
out:
    pthread_mutex_unlock(&k->lock);
    free(hs);
    free(hp);
    return err;
}

static cl_int launch(cl_command_queue q, cl_kernel h, cl_uint dim,
                     const size_t *offset, const size_t *global,
                     const size_t *local, cl_uint n, const cl_event *wl,
                     cl_event *ev)
{
    struct rc_kernel *k = (void *)h;
    Crane__LaunchKernel lk = CRANE__LAUNCH_KERNEL__INIT;
    Crane__KernelArg store[ARGS_ON_STACK], *ptrs[ARGS_ON_STACK];
    Crane__KernelArg *hs = NULL, **hp = NULL;
    uint64_t off[3], gl[3], lo[3];
    struct rc_ids w;
    struct rc_obj *e = NULL;
    cl_int err;

    if (dim < 1 || dim > 3)
        return CL_INVALID_WORK_DIMENSION;
    if (!global)
        return CL_INVALID_GLOBAL_WORK_SIZE;
    for (cl_uint i = 0; i < dim; i++) {
        off[i] = offset ? offset[i] : 0;
        gl[i] = global[i];
        lo[i] = local ? local[i] : 0;
    }
    if ((err = rc_ids_of(&w, n, wl)) != CL_SUCCESS)
        return err;
    if ((err = rc_event_for(ev, &e)) != CL_SUCCESS) {
        rc_ids_done(&w);
        return err;
    }
    pthread_mutex_lock(&k->lock);
    Crane__KernelArg *s = store, **p = ptrs;
    if (k->n_changed > ARGS_ON_STACK) {
        hs = malloc(k->n_changed * sizeof(*hs));
        hp = malloc(k->n_changed * sizeof(*hp));
        if (!hs || !hp) {
            err = CL_OUT_OF_HOST_MEMORY;
            goto out;
        }
        s = hs;
        p = hp;
    }
    rc_touch(q);
    lk.queue = RC_ID(q);
    lk.kernel = k->obj.id;
    lk.work_dim = dim;
    lk.global_offset = off;
    lk.n_global_offset = offset ? dim : 0;
    lk.global_size = gl;
    lk.n_global_size = dim;
    lk.local_size = lo;
    lk.n_local_size = local ? dim : 0;
    lk.n_args = collect_args(k, s, p);
    lk.args = p;
    lk.wait = w.v;
    lk.n_wait = w.n;
    lk.event = e ? e->id : 0;
    RC_MSG(m, launch_kernel, LAUNCH_KERNEL, &lk);
    err = shim_remote_send(&m, NULL, 0);
    if (err == CL_SUCCESS)
        args_sent(k);
out:
    pthread_mutex_unlock(&k->lock);
    free(hs);
    free(hp);
    rc_ids_done(&w);
    return rc_event_done(err, ev, e);
}

cl_int CL_API_CALL rc_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k,
                                             cl_uint dim, const size_t *offset,
                                             const size_t *global,
                                             const size_t *local, cl_uint n,
                                             const cl_event *wl, cl_event *ev)
{
    return launch(q, k, dim, offset, global, local, n, wl, ev);
}

cl_int CL_API_CALL rc_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint n,
                                    const cl_event *wl, cl_event *ev)
{
    size_t one = 1;
    return launch(q, k, 1, NULL, &one, &one, n, wl, ev);
}
