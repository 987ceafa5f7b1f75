/* What the files of memory objects (mem*.c) share, for them only. */
#ifndef SHIM_MEM_INT_H
#define SHIM_MEM_INT_H

#include "proto/log.h"
#include "shim.h"

/* Host access, access and host pointer flags of a creation (mem_host.c
 * says how the host access flags are handled). */
#define HOST_ACCESS_FLAGS \
    (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
#define ACCESS_FLAGS \
    (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY)
#define HOST_PTR_FLAGS \
    (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)

/* mem_host.c: OpenCL's rules for a new object's flags; the host access
 * flags that rule M (its own, else its parent's); OpenCL's rule for a
 * sub-buffer or an image made from a buffer; the flags the real object of
 * M is made with in the context CTX; the vendor's answers to forbidden
 * host accesses, learnt once per context. */
bool shim_mem_flags_valid(cl_mem_flags flags);
cl_mem_flags shim_mem_host_access(const struct shim_mem *m);
bool shim_mem_host_access_inherits(cl_mem_flags flags,
                                   const struct shim_mem *p);
cl_mem_flags shim_mem_real_flags(const struct shim_mem *m, const void *ctx);
void shim_mem_learn_host_policy(struct shim_context *c);

/* mem_image.c: the region of M's image; its packed row in bytes. */
void shim_image_region(const struct shim_mem *m, size_t region[3]);
size_t shim_image_row_bytes(const struct shim_mem *m);

/* mem_info.c: the destructor callbacks of M, run and forgotten. */
void shim_mem_callbacks_fire(struct shim_mem *m);

#endif /* SHIM_MEM_INT_H */
