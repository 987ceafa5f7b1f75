/* Host access flags (CL_MEM_HOST_WRITE_ONLY, HOST_READ_ONLY,
 * HOST_NO_ACCESS) go to the vendor with the program's other flags, so that
 * the program sees exactly what its vendor says: errors at creation,
 * CL_MEM_FLAGS, and the verdict on every read, write and map (PoCL refuses
 * the ones the flags forbid; NVIDIA's OpenCL accepts them, and so does the
 * shim).  The shim itself still moves every byte of such an object at a
 * switch, a pre-copy or a map into its own memory: through the device, by
 * copies into an unrestricted buffer (hostcopy.c).
 *
 * A proxy's objects are made without them (its reads at a switch back
 * stay plain reads), and a remote creation answers before the proxy's
 * vendor has judged it: on the proxy the shim says what OpenCL says
 * (shim_mem_flags_valid, the inheritance rules of sub-buffers and images
 * over buffers), CL_MEM_FLAGS reports the program's flags, and a read,
 * write or map they forbid gets the answer the program's own vendor gave
 * when asked (shim_mem_learn_host_policy), or OpenCL's refusal
 * (shim_mem_host_check). */
#include "mem_int.h"

/* OpenCL's rules for a new buffer's or image's flags, which every vendor
 * checks too: said here because a remote creation answers before the
 * proxy's vendor has judged it. */
bool shim_mem_flags_valid(cl_mem_flags flags)
{
    cl_mem_flags access = flags & ACCESS_FLAGS;
    cl_mem_flags host = flags & HOST_ACCESS_FLAGS;

    if ((access & (access - 1)) || (host & (host - 1)))
        return false;
    return !((flags & CL_MEM_USE_HOST_PTR) &&
             (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)));
}

/* The host access flags that rule `m`: its own, else its parent's. */
cl_mem_flags shim_mem_host_access(const struct shim_mem *m)
{
    for (; m; m = m->parent)
        if (m->flags & HOST_ACCESS_FLAGS)
            return m->flags & HOST_ACCESS_FLAGS;
    return 0;
}

/* OpenCL's rule for a sub-buffer or an image made from a buffer: at most
 * one host access flag, and none the parent's forbid. */
bool shim_mem_host_access_inherits(cl_mem_flags flags,
                                   const struct shim_mem *p)
{
    cl_mem_flags own = flags & HOST_ACCESS_FLAGS;
    cl_mem_flags parent = shim_mem_host_access(p);

    if (own & (own - 1))
        return false;
    if ((parent & CL_MEM_HOST_WRITE_ONLY) && (own & CL_MEM_HOST_READ_ONLY))
        return false;
    if ((parent & CL_MEM_HOST_READ_ONLY) && (own & CL_MEM_HOST_WRITE_ONLY))
        return false;
    if ((parent & CL_MEM_HOST_NO_ACCESS) &&
        (own & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY)))
        return false;
    return true;
}

/* Whether host access flags HOST forbid ACCESS from the host. */
static bool forbids(cl_mem_flags host, cl_map_flags access)
{
    if ((access & CL_MAP_READ) &&
        (host & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS)))
        return true;
    return (access & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) &&
           (host & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS));
}

bool shim_mem_host_forbids(const struct shim_mem *m, const void *real,
                           cl_map_flags access)
{
    return real && !shim_real_on_remote(real) &&
           forbids(shim_mem_host_access(m), access);
}

/* The flags the real object of M is made with in the context CTX. */
cl_mem_flags shim_mem_real_flags(const struct shim_mem *m, const void *ctx)
{
    cl_mem_flags f = shim_real_on_remote(ctx) ? m->flags & ~HOST_ACCESS_FLAGS
                                              : m->flags;

    /* Over the shim's own memory (mem_own.c). */
    if (m->own_host)
        f = (f & ~(cl_mem_flags)(CL_MEM_ALLOC_HOST_PTR |
                                 CL_MEM_COPY_HOST_PTR)) |
            CL_MEM_USE_HOST_PTR;
    return f;
}

/* A root buffer like M in the vendor context CTX, for a pre-copy; NULL
 * (and *ERR) if it cannot be made. */
void *shim_mem_make_in(struct shim_mem *m, void *ctx, cl_int *err)
{
    /* As realize makes it (never over the program's memory: those are
     * not pre-copied). */
    cl_mem_flags flags =
        shim_mem_real_flags(m, ctx) & ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR;

    if (m->props && VENDOR(ctx)->clCreateBufferWithProperties)
        return VENDOR(ctx)->clCreateBufferWithProperties(ctx, m->props, flags,
                                                         m->size, NULL, err);
    return VENDOR(ctx)->clCreateBuffer(ctx, flags, m->size, NULL, err);
}

/*
 * What the program's own vendor says to host accesses the flags forbid
 * (PoCL refuses them all; NVIDIA's OpenCL refuses reads and writes but
 * maps to invalidate), learnt once per context when its first object with
 * host access flags is made on the vendor: a small no-access buffer is
 * read, written, and mapped each of the three ways, on a queue of its own,
 * each answer kept apart (SHIM_HOST_*_OK).  A program on the proxy then
 * gets the answers its vendor would give; one remoted from its start (no
 * vendor here to ask) gets OpenCL's.
 */
void shim_mem_learn_host_policy(struct shim_context *c)
{
    void *ctx = c->obj.real;
    unsigned policy = SHIM_HOST_PROBED;
    cl_uint word[16] = {0};
    cl_int err;
    void *p;

    if (atomic_load(&c->host_policy) || !ctx || shim_real_on_remote(ctx) ||
        !c->n_devices)
        return;
    cl_mem b = VENDOR(ctx)->clCreateBuffer(ctx, CL_MEM_HOST_NO_ACCESS,
                                           sizeof(word), NULL, &err);
    cl_command_queue q = VENDOR(ctx)->clCreateCommandQueue(
        ctx, c->devices[0]->obj.real, 0, &err);
    if (b && q) {
        static const struct {
            cl_map_flags map;
            unsigned ok;
        } maps[] = {
            {CL_MAP_READ, SHIM_HOST_MAP_READ_OK},
            {CL_MAP_WRITE, SHIM_HOST_MAP_WRITE_OK},
            {CL_MAP_WRITE_INVALIDATE_REGION, SHIM_HOST_MAP_INVALIDATE_OK},
        };
        if (VENDOR(q)->clEnqueueReadBuffer(q, b, CL_TRUE, 0, 4, word, 0,
                                           NULL, NULL) == CL_SUCCESS)
            policy |= SHIM_HOST_READS_OK;
        if (VENDOR(q)->clEnqueueWriteBuffer(q, b, CL_TRUE, 0, 4, word, 0,
                                            NULL, NULL) == CL_SUCCESS)
            policy |= SHIM_HOST_WRITES_OK;
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
            p = VENDOR(q)->clEnqueueMapBuffer(q, b, CL_TRUE, maps[i].map, 0,
                                              4, 0, NULL, NULL, &err);
            if (!p)
                continue;
            VENDOR(q)->clEnqueueUnmapMemObject(q, b, p, 0, NULL, NULL);
            policy |= maps[i].ok;
        }
        VENDOR(q)->clFinish(q);
        if (policy != SHIM_HOST_PROBED)
            CRN_INFO("the vendor accepts some host accesses that host "
                     "access flags forbid (0x%x: reads 2, writes 4, maps "
                     "for reading 8, writing 16, invalidating 32); on the "
                     "proxy the program gets the same",
                     policy & ~SHIM_HOST_PROBED);
    }
    if (q)
        VENDOR(q)->clReleaseCommandQueue(q);
    if (b)
        VENDOR(b)->clReleaseMemObject(b);
    atomic_store(&c->host_policy, policy);
}

cl_int shim_mem_host_check(cl_command_queue queue, cl_mem memobj,
                           cl_map_flags access)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, queue);
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, memobj);
    unsigned policy;

    /* Whatever the vendor refuses first (a bad object, another context)
     * it still answers itself; a vendor's object carries the flags, and
     * its vendor judges. */
    if (!q || !m || m->context != q->context ||
        !shim_real_on_remote(m->obj.real))
        return CL_SUCCESS;
    /* On the proxy: as the program's own vendor would answer. */
    policy = atomic_load(&m->context->host_policy);
    if (access & SHIM_ACCESS_MAP) {
        if (policy & SHIM_HOST_MAP_READ_OK)
            access &= ~(cl_map_flags)CL_MAP_READ;
        if (policy & SHIM_HOST_MAP_WRITE_OK)
            access &= ~(cl_map_flags)CL_MAP_WRITE;
        if (policy & SHIM_HOST_MAP_INVALIDATE_OK)
            access &= ~(cl_map_flags)CL_MAP_WRITE_INVALIDATE_REGION;
    } else {
        if (policy & SHIM_HOST_READS_OK)
            access &= ~(cl_map_flags)CL_MAP_READ;
        if (policy & SHIM_HOST_WRITES_OK)
            access &= ~(cl_map_flags)CL_MAP_WRITE;
    }
    return forbids(shim_mem_host_access(m), access) ? CL_INVALID_OPERATION
                                                    : CL_SUCCESS;
}
