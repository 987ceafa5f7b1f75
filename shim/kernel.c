/* Kernels: creation, arguments (with their read/write class), recreation
 * and info. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "shim.h"
#include "entry.h"

/* Classifies every argument once, from clGetKernelArgInfo, so that
 * clSetKernelArg knows without a lookup whether a value is a handle and
 * whether a launch may write through it. */
static void classify_args(struct shim_kernel *k)
{
    void *real = k->obj.real;

    /* Built without argument info (as the program asked): what the source
     * says for certain, the rest decided per value. */
    if (!atomic_load(&k->program->arg_info)) {
        uint8_t cls[256];
        bool known = k->n_args <= 256 &&
                     shim_program_sig_classes(k->program, k->name, k->n_args,
                                              cls) == 0;
        for (cl_uint i = 0; i < k->n_args; i++)
            k->args[i].cls = known ? cls[i] : SHIM_ARG_UNKNOWN;
        return;
    }
    for (cl_uint i = 0; i < k->n_args; i++) {
        cl_kernel_arg_address_qualifier addr;
        cl_kernel_arg_access_qualifier access;
        cl_kernel_arg_type_qualifier tq = 0;
        char type[128] = "";
        struct shim_arg *a = &k->args[i];

        a->cls = SHIM_ARG_UNKNOWN;
        if (!atomic_load(&k->program->arg_info) ||
            VENDOR(real)->clGetKernelArgInfo(
                real, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(addr), &addr,
                NULL) != CL_SUCCESS ||
            VENDOR(real)->clGetKernelArgInfo(
                real, i, CL_KERNEL_ARG_ACCESS_QUALIFIER, sizeof(access),
                &access, NULL) != CL_SUCCESS ||
            VENDOR(real)->clGetKernelArgInfo(real, i,
                                             CL_KERNEL_ARG_TYPE_QUALIFIER,
                                             sizeof(tq), &tq,
                                             NULL) != CL_SUCCESS ||
            VENDOR(real)->clGetKernelArgInfo(real, i,
                                             CL_KERNEL_ARG_TYPE_NAME,
                                             sizeof(type) - 1, type,
                                             NULL) != CL_SUCCESS)
            continue;
        if (strstr(type, "image") || strstr(type, "pipe"))
            a->cls = access == CL_KERNEL_ARG_ACCESS_READ_ONLY
                         ? SHIM_ARG_MEM_RO
                         : SHIM_ARG_MEM_RW;
        else if (strstr(type, "sampler_t"))
            a->cls = SHIM_ARG_SAMPLER;
        else if (addr == CL_KERNEL_ARG_ADDRESS_LOCAL)
            a->cls = SHIM_ARG_LOCAL;
        else if (addr == CL_KERNEL_ARG_ADDRESS_CONSTANT)
            a->cls = SHIM_ARG_MEM_RO;
        else if (addr == CL_KERNEL_ARG_ADDRESS_GLOBAL)
            a->cls = (tq & CL_KERNEL_ARG_TYPE_CONST) ? SHIM_ARG_MEM_RO
                                                     : SHIM_ARG_MEM_RW;
        else
            a->cls = SHIM_ARG_VALUE;
    }
}

/* Number of arguments and their classes for a new real kernel. */
static int kernel_init_args(struct shim_kernel *k)
{
    cl_uint n = 0;

    if (VENDOR(k->obj.real)->clGetKernelInfo(k->obj.real,
                                             CL_KERNEL_NUM_ARGS, sizeof(n), &n,
                                             NULL) != CL_SUCCESS)
        return -EIO;
    k->args = calloc(n ? n : 1, sizeof(*k->args));
    if (!k->args)
        return -ENOMEM;
    k->n_args = n;
    classify_args(k);
    return 0;
}

static int kernel_realize(struct shim_obj *o)
{
    struct shim_kernel *k = (void *)o;
    void *prog = k->program->obj.real;
    cl_int err;

    k->obj.real = VENDOR(prog)->clCreateKernel(prog, k->name, &err);
    if (!k->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    return 0;
}

static cl_int arg_apply(struct shim_kernel *k, cl_uint i)
{
    struct shim_arg *a = &k->args[i];
    const void *value;
    void *real_obj;

    if (!a->set)
        return CL_SUCCESS;
    if (a->obj) {
        real_obj = a->obj->real;
        value = &real_obj;
    } else if (a->null_value) {
        value = NULL;
    } else {
        value = a->size <= SHIM_ARG_INLINE ? a->v.bytes : a->v.heap;
    }
    /* The program set it once already: the proxy need not be asked
     * whether the shape is valid (remote_kernel.c). */
    const struct shim_backend_ops *b =
        shim_on_remote(k) ? shim_proxy_backend() : NULL;
    if (b && b->restore_arg)
        return b->restore_arg(k->obj.real, i, a->size, value);
    return VENDOR(k->obj.real)->clSetKernelArg(k->obj.real, i, a->size,
                                               value);
}

int shim_kernel_reset_args(struct shim_kernel *k)
{
    for (cl_uint i = 0; i < k->n_args; i++) {
        cl_int err = arg_apply(k, i);
        if (err != CL_SUCCESS) {
            CRN_ERROR("kernel %s: argument %u could not be set again: %d",
                      k->name, i, err);
            return -EIO;
        }
    }
    return 0;
}

static struct shim_kernel *kernel_wrap(struct shim_program *p, void *real,
                                       const char *name, cl_int *err)
{
    struct shim_kernel *k = shim_obj_new(&shim_kernel_kind, sizeof(*k), real);
    char buf[256];

    if (!k) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    k->program = p;
    shim_obj_retain_child(&p->obj);
    if (!name && VENDOR(real)->clGetKernelInfo(real, CL_KERNEL_FUNCTION_NAME,
                                               sizeof(buf), buf,
                                               NULL) == CL_SUCCESS)
        name = buf;
    k->name = shim_strdup(name);
    size_t alen = 0;
    if (VENDOR(real)->clGetKernelInfo(real, CL_KERNEL_ATTRIBUTES, 0, NULL,
                                      &alen) == CL_SUCCESS &&
        alen > 0 && alen < (1u << 16) && (k->attributes = malloc(alen)) &&
        VENDOR(real)->clGetKernelInfo(real, CL_KERNEL_ATTRIBUTES, alen,
                                      k->attributes, NULL) != CL_SUCCESS) {
        free(k->attributes);
        k->attributes = NULL;
    }
    if (k->attributes)
        k->attributes[alen - 1] = '\0';
    if (!k->name || kernel_init_args(k) < 0) {
        *err = CL_OUT_OF_HOST_MEMORY;
        shim_obj_release(k, SHIM_KERNEL);
        return NULL;
    }
    return k;
}

SHIM_EXPORT CL_API_ENTRY cl_kernel CL_API_CALL
clCreateKernel(cl_program program, const char *kernel_name,
               cl_int *errcode_ret)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    struct shim_kernel *k = NULL;
    cl_int err = CL_SUCCESS;
    void *real;

    if (!p) {
        err = CL_INVALID_PROGRAM;
        goto out;
    }
    if (!kernel_name) {
        err = CL_INVALID_VALUE;
        goto out;
    }
    shim_enter();
    real = VENDOR(p->obj.real)->clCreateKernel(p->obj.real, kernel_name,
                                               &err);
    if (real)
        k = kernel_wrap(p, real, kernel_name, &err);
    shim_leave();
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_kernel)k;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                         cl_kernel *kernels, cl_uint *num_kernels_ret)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    cl_kernel real[256];
    cl_uint n = 0;
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    shim_enter();
    err = VENDOR(p->obj.real)->clCreateKernelsInProgram(
        p->obj.real, kernels ? (num_kernels < 256 ? num_kernels : 256) : 0,
        kernels ? real : NULL, &n);
    if (err == CL_SUCCESS && kernels) {
        for (cl_uint i = 0; i < n && i < num_kernels; i++) {
            struct shim_kernel *k = kernel_wrap(p, real[i], NULL, &err);
            kernels[i] = (cl_kernel)k;
            if (!k) {
                for (cl_uint j = i + 1; j < n && j < num_kernels; j++)
                    VENDOR(real[j])->clReleaseKernel(real[j]);
                while (i--)
                    shim_obj_release(kernels[i], SHIM_KERNEL);
                break;
            }
        }
    }
    if (err == CL_SUCCESS && num_kernels_ret)
        *num_kernels_ret = n;
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_kernel CL_API_CALL
clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
    struct shim_kernel *src = SHIM_AS(shim_kernel, SHIM_KERNEL, source_kernel);
    struct shim_kernel *k = NULL;
    cl_int err = CL_SUCCESS;
    void *real = NULL;

    if (!src) {
        err = CL_INVALID_KERNEL;
        goto out;
    }
    shim_enter();
    if (VENDOR(src->obj.real)->clCloneKernel)
        real = VENDOR(src->obj.real)->clCloneKernel(src->obj.real, &err);
    else
        err = CL_INVALID_OPERATION;
    if (real && (k = kernel_wrap(src->program, real, src->name, &err))) {
        /* The clone starts with the source's arguments. */
        for (cl_uint i = 0; i < k->n_args && i < src->n_args; i++) {
            struct shim_arg *a = &k->args[i];
            const struct shim_arg *b = &src->args[i];
            uint8_t cls = a->cls;
            *a = *b;
            a->cls = cls;
            if (b->obj)
                shim_obj_retain_child(b->obj);
            else if (b->set && b->size > SHIM_ARG_INLINE) {
                a->v.heap = malloc(b->size);
                if (a->v.heap)
                    memcpy(a->v.heap, b->v.heap, b->size);
                else
                    a->set = false;
            }
        }
    }
    shim_leave();
out:
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_kernel)k;
}

SHIM_RETAIN_RELEASE(Kernel, cl_kernel, SHIM_KERNEL, CL_INVALID_KERNEL)

/* Drops what an argument held: heap bytes, or a reference on a handle. */
static void arg_clear(struct shim_arg *a)
{
    if (a->obj)
        shim_obj_release_child(a->obj);
    else if (a->set && a->size > SHIM_ARG_INLINE)
        free(a->v.heap);
    a->obj = NULL;
    a->set = false;
    a->writes = false;
}

static void arg_record_bytes(struct shim_arg *a, size_t size,
                             const void *value)
{
    arg_clear(a);
    a->size = size;
    a->set = true;
    a->null_value = !value;
    if (size <= SHIM_ARG_INLINE) {
        if (value)
            memcpy(a->v.bytes, value, size);
        else
            memset(a->v.bytes, 0, sizeof(a->v.bytes));
    } else if ((a->v.heap = malloc(size))) {
        if (value)
            memcpy(a->v.heap, value, size);
        else
            memset(a->v.heap, 0, size);
    } else {
        a->set = false;
    }
}

/* The hot path: one switch on the class learned at creation time. */
SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
               const void *arg_value)
{
    struct shim_kernel *k = SHIM_AS(shim_kernel, SHIM_KERNEL, kernel);
    struct shim_obj *obj = NULL;
    struct shim_arg *a;
    void *real_obj;
    const void *value = arg_value;
    cl_int err;

    if (!k)
        return CL_INVALID_KERNEL;
    if (arg_index >= k->n_args)
        return CL_INVALID_ARG_INDEX;
    a = &k->args[arg_index];

    switch (a->cls) {
    case SHIM_ARG_MEM_RO:
    case SHIM_ARG_MEM_RW:
    case SHIM_ARG_SAMPLER:
        if (arg_size != sizeof(cl_mem))
            return CL_INVALID_ARG_SIZE;
        if (arg_value && *(void *const *)arg_value) {
            obj = *(struct shim_obj *const *)arg_value;
            if (!shim_obj_is(obj, a->cls == SHIM_ARG_SAMPLER ? SHIM_SAMPLER
                                                             : SHIM_MEM))
                return a->cls == SHIM_ARG_SAMPLER ? CL_INVALID_SAMPLER
                                                  : CL_INVALID_MEM_OBJECT;
        }
        break;
    case SHIM_ARG_UNKNOWN:
        /* No argument info (a program from a binary): a pointer-sized
         * value may be a handle, which only a lookup can tell. */
        if (arg_size == sizeof(void *) && arg_value)
            obj = shim_obj_find_live(*(void *const *)arg_value);
        break;
    default:
        break;
    }

    shim_enter();
    if (obj) {
        real_obj = obj->real;
        value = &real_obj;
    }
    err = VENDOR(k->obj.real)->clSetKernelArg(k->obj.real, arg_index,
                                              arg_size, value);
    if (err == CL_SUCCESS) {
        if (obj) {
            /* The kernel keeps what it was given alive, so that a re-home
             * can set it again even after the program released it. */
            if (a->obj != obj) {  /* re-setting the same one is common */
                shim_obj_retain_child(obj);
                arg_clear(a);
                a->obj = obj;
                k->marked_epoch = 0;  /* the next launch marks it */
            }
            a->size = arg_size;
            a->set = true;
            a->writes = obj->kind == SHIM_MEM && a->cls != SHIM_ARG_MEM_RO;
        } else {
            arg_record_bytes(a, arg_size, arg_value);
        }
    }
    shim_leave();
    return err;
}

atomic_long shim_svm_kernels;

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetKernelArgSVMPointer(
    cl_kernel kernel, cl_uint arg_index, const void *arg_value)
{
    struct shim_kernel *k = SHIM_AS(shim_kernel, SHIM_KERNEL, kernel);
    cl_int err;

    if (!k)
        return CL_INVALID_KERNEL;
    if (arg_index >= k->n_args)
        return CL_INVALID_ARG_INDEX;
    shim_enter();
    err = VENDOR(k->obj.real)->clSetKernelArgSVMPointer
              ? VENDOR(k->obj.real)->clSetKernelArgSVMPointer(
                    k->obj.real, arg_index, arg_value)
              : CL_INVALID_OPERATION;
    if (err == CL_SUCCESS)
        k->uses_svm = true;
    shim_leave();
    return err;
}

/* clGetKernelInfo (cl_api.def): the shim's handles and the attributes it
 * read when the kernel was made. */
bool shim_kernel_info_own(struct shim_kernel *k,
                          const struct shim_info_ask *ask, cl_int *err)
{
    struct shim_info_own own = {
        CL_KERNEL_REFERENCE_COUNT, atomic_load(&k->obj.app_refs),
        {CL_KERNEL_PROGRAM, CL_KERNEL_CONTEXT},
        {k->program, k->program->context}};

    if (shim_info_own(&own, ask, err))
        return true;
    if (ask->param != CL_KERNEL_ATTRIBUTES || !k->attributes)
        return false;
    *err = shim_info_give(ask, k->attributes, strlen(k->attributes) + 1);
    return true;
}

/* clGetKernelArgInfo (cl_api.def): argument info the program did not ask
 * for stays hidden, as natively. */
bool shim_kernel_arg_info_own(struct shim_kernel *k, cl_uint arg_indx,
                              cl_int *err)
{
    if (arg_indx >= k->n_args)
        *err = CL_INVALID_ARG_INDEX;
    else if (k->program->arg_info_hidden)
        *err = CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
    else
        return false;
    return true;
}

/* Built without the option: whether there is argument info is what the
 * native vendor said the first time (some give it anyway), kept across
 * moves; a proxy always has it (it builds with it for its checks), so it
 * never answers that first question.  *SEEN: what was known before. */
bool shim_kernel_arg_info_gated(struct shim_kernel *k, int *seen,
                                cl_int *err)
{
    struct shim_program *p = k->program;

    *seen = atomic_load(&p->arg_info) ? 1 : atomic_load(&p->arg_info_seen);
    if (*seen < 0 || (*seen == 0 && !shim_is_vendor(shim.backend))) {
        atomic_store(&p->arg_info_seen, -1);
        *err = CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
        return true;
    }
    return false;
}

/* The native vendor's first answer, kept. */
void shim_kernel_arg_info_after(struct shim_kernel *k, int seen, cl_int err)
{
    if (seen == 0 && err != CL_INVALID_VALUE)
        atomic_store(&k->program->arg_info_seen,
                     err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE ? -1 : 1);
}

static void kernel_destroy(struct shim_obj *o)
{
    struct shim_kernel *k = (void *)o;

    for (cl_uint i = 0; k->args && i < k->n_args; i++)
        arg_clear(&k->args[i]);
    free(k->args);
    free(k->name);
    free(k->attributes);
    shim_obj_release_child(&k->program->obj);
}

SHIM_RELEASE_REAL_WITH(clReleaseKernel)

const struct shim_kind_ops shim_kernel_kind = {
    .kind = SHIM_KERNEL, .name = "kernel", .twins = true,
    .destroy = kernel_destroy, .realize = kernel_realize,
    .release_real = release_real,
};
