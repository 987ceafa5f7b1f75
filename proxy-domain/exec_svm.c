/* Executors for coarse-grained SVM: an allocation made here and wrapped in
 * a buffer, and kernel arguments that point into one. */
#include "exec.h"

#include "proto/log.h"
#include "validate.h"

#include <stdlib.h>

/* What a wrapped allocation's buffer frees when it goes. */
struct svm_owner {
    cl_context ctx;              /* retained */
    void *ptr;
};

static void CL_CALLBACK svm_buffer_gone(cl_mem mem, void *data)
{
    struct svm_owner *o = data;

    (void)mem;
    clSVMFree(o->ctx, o->ptr);
    clReleaseContext(o->ctx);
    free(o);
}

cl_int px_exec_svm_alloc(struct px_call *c)
{
    const Crane__SvmAlloc *a = c->m->svm_alloc;
    cl_mem_flags access = a->flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                                      CL_MEM_READ_ONLY);
    struct svm_owner *owner;
    cl_context ctx;
    cl_mem mem;
    cl_int err;
    void *p;

    err = px_new_in_context(c, a->id, PX_MEM,
                            "memory object id", a->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    err = px_tenant_charge(c->t, a->size);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "SVM of %llu bytes is over the quota",
                       (unsigned long long)a->size);
    if (!(owner = malloc(sizeof(*owner))))
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    p = clSVMAlloc(ctx, a->flags, a->size, a->alignment);
    if (!p) {
        free(owner);
        return px_fail(c, CL_OUT_OF_RESOURCES,
                       "clSVMAlloc of %llu bytes (flags 0x%llx) failed",
                       (unsigned long long)a->size,
                       (unsigned long long)a->flags);
    }
    /* A buffer over the SVM uses it (OpenCL 2.0, 5.6.1), so every
     * MemCommand reaches the SVM bytes. */
    mem = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR | access, a->size, p, &err);
    if (!mem) {
        clSVMFree(ctx, p);
        free(owner);
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    }
    owner->ctx = ctx;
    owner->ptr = p;
    clRetainContext(ctx);
    err = clSetMemObjectDestructorCallback(mem, svm_buffer_gone, owner);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(mem);
        svm_buffer_gone(NULL, owner);
        return px_fail(c, err, "cannot tie the SVM to its buffer");
    }
    return px_tenant_add(c->t, a->id, PX_MEM, mem, a->size, false);
}

cl_int px_svm_arg(struct px_call *c, cl_kernel kernel,
                  const Crane__KernelArg *a)
{
    cl_mem mem;
    void *base = NULL;
    size_t size = 0;
    cl_int err;

    if (!a->object)
        return clSetKernelArgSVMPointer(kernel, a->index, NULL);
    mem = px_tenant_handle(c->t, a->object, PX_MEM, &err);
    if (!mem)
        return px_fail(c, CL_INVALID_ARG_VALUE,
                       "argument %u: unknown SVM allocation %llu", a->index,
                       (unsigned long long)a->object);
    err = clGetMemObjectInfo(mem, CL_MEM_HOST_PTR, sizeof(base), &base,
                             NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, NULL);
    if (err != CL_SUCCESS || !base || a->svm_offset >= size)
        return px_fail(c, CL_INVALID_ARG_VALUE,
                       "argument %u: offset %llu is outside SVM "
                       "allocation %llu",
                       a->index, (unsigned long long)a->svm_offset,
                       (unsigned long long)a->object);
    return clSetKernelArgSVMPointer(kernel, a->index,
                                    (char *)base + a->svm_offset);
}
