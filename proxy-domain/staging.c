/* Pinned host buffers the proxy stages reads through (CL_MEM_ALLOC_HOST_PTR,
 * mapped once), one pair per tenant for the context it last read from. */
#include "staging.h"

#include "log.h"

#include <stdlib.h>

struct px_staging {
    cl_context ctx;
    cl_command_queue q;          /* retained: it maps and unmaps */
    cl_mem mem[2];
    void *host[2];
    size_t size;
};

void px_staging_free(struct px_tenant *t)
{
    struct px_staging *s = t->staging;

    if (!s)
        return;
    for (int i = 0; i < 2; i++) {
        if (s->mem[i] && s->host[i])
            clEnqueueUnmapMemObject(s->q, s->mem[i], s->host[i], 0, NULL,
                                    NULL);
    }
    clFinish(s->q);
    for (int i = 0; i < 2; i++)
        if (s->mem[i])
            clReleaseMemObject(s->mem[i]);
    clReleaseCommandQueue(s->q);
    free(s);
    t->staging = NULL;
}

void *px_staging_get(struct px_tenant *t, cl_command_queue q, size_t size,
                     int which)
{
    struct px_staging *s = t->staging;
    cl_context ctx;
    cl_int err;

    if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx,
                              NULL) != CL_SUCCESS)
        return NULL;
    if (s && (s->ctx != ctx || s->size < size))
        px_staging_free(t);
    if (!t->staging) {
        if (!(s = calloc(1, sizeof(*s))))
            return NULL;
        s->ctx = ctx;
        s->q = q;
        s->size = size;
        clRetainCommandQueue(q);
        t->staging = s;
        for (int i = 0; i < 2; i++) {
            s->mem[i] = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, size, NULL,
                                       &err);
            if (s->mem[i])
                s->host[i] = clEnqueueMapBuffer(q, s->mem[i], CL_TRUE,
                                                CL_MAP_READ | CL_MAP_WRITE, 0,
                                                size, 0, NULL, NULL, &err);
            if (!s->host[i]) {
                PX_WARN("tenant %llu: no pinned staging of %zu bytes (%d): "
                        "reads go through the heap",
                        (unsigned long long)t->num, size, err);
                px_staging_free(t);
                return NULL;
            }
        }
        PX_DEBUG("tenant %llu: reads stage through 2 pinned buffers of %zu "
                 "bytes", (unsigned long long)t->num, size);
    }
    return t->staging->host[which & 1];
}
