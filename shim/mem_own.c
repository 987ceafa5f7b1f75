/* Host memory the shim owns for CL_MEM_ALLOC_HOST_PTR buffers, lent to
 * every vendor as CL_MEM_USE_HOST_PTR, so that a map's pointer is shim
 * memory that outlives any backend (a program may keep it mapped for its
 * whole life, as x264's lookahead does, and still switch). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "config.h"
#include "hostmem.h"
#include "mem_int.h"

/* The alignment OpenCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN asks of a host
 * pointer on every device met so far (NVIDIA 512 bytes, PoCL 128): a page
 * is more than any of them. */
#define OWN_ALIGN 4096u

/*
 * Whether the shim makes M's host memory itself: a root buffer the program
 * made with CL_MEM_ALLOC_HOST_PTR (maybe with CL_MEM_COPY_HOST_PTR), no
 * host access flags (the vendor's verdicts on those are kept as they are,
 * mem_host.c) and not over an SVM allocation.  CRANE_OWN_HOST_ALLOC=0:
 * never (the vendor's own allocation; a map kept across a switch is then
 * refused once and maps go portable, map.c).
 */
static bool own_wanted(const struct shim_mem *m)
{
    return shim_config.own_host_alloc && m->type == SHIM_BUFFER &&
           !m->parent && (m->flags & CL_MEM_ALLOC_HOST_PTR) &&
           !(m->flags & (CL_MEM_USE_HOST_PTR | HOST_ACCESS_FLAGS)) &&
           m->size > 0;
}

static size_t own_len(const struct shim_mem *m)
{
    return (m->size + OWN_ALIGN - 1) & ~(size_t)(OWN_ALIGN - 1);
}

/* Gives M its own host memory if it should have some (filled from
 * COPY_FROM where the program gave bytes, else zero): 0, or -ENOMEM
 * (logged; M is then the vendor's as the program asked). */
int shim_mem_own_host_make(struct shim_mem *m, const void *copy_from)
{
    void *p;

    if (!own_wanted(m))
        return 0;
    /* Made remoted: in the host-memory region while it has room, so that
     * the proxy moves the bytes of transfers from and to it in place, as
     * it does for remoted maps (hostmem.h); page-aligned, valid for the
     * process's life.  Else anonymous pages: aligned, zero. */
    if (shim_real_on_remote(m->context->obj.real) &&
        shim_backend_host_on(shim_proxy_backend()) &&
        (p = shim_hostmem_alloc(own_len(m)))) {
        if (copy_from)
            memcpy(p, copy_from, m->size);
        else
            memset(p, 0, own_len(m));
        goto made;
    }
    p = mmap(NULL, own_len(m), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        CRN_WARN("memory: no %zu bytes of host memory for a "
                 "CL_MEM_ALLOC_HOST_PTR buffer: the vendor's own instead "
                 "(a map kept of it refuses switches)", m->size);
        return -ENOMEM;
    }
    if (copy_from)
        memcpy(p, copy_from, m->size);
made:
    m->own_host = p;
    m->host_ptr = p;
    m->own_blank = copy_from == NULL;
    return 0;
}

/* The host memory of M, with the object (after its real one went). */
void shim_mem_own_host_free(struct shim_mem *m)
{
    if (!m->own_host)
        return;
    if (shim_hostmem_owns(m->own_host))
        shim_hostmem_free(m->own_host);
    else
        munmap(m->own_host, own_len(m));
    m->own_host = NULL;
    m->host_ptr = NULL;
}

bool shim_mem_over_host(const struct shim_mem *m)
{
    return (m->flags & CL_MEM_USE_HOST_PTR) || m->own_host;
}
