/* Pinned host buffers the proxy stages reads and writes through
 * (CL_MEM_ALLOC_HOST_PTR, mapped once): one pair per tenant for the context
 * it last read from, and PX_WSTAGE_N for the one it last wrote to. */
#include "staging.h"

#include "proto/log.h"

#include <stdlib.h>

struct px_staging {
    cl_context ctx;
    cl_command_queue q;          /* retained: it maps and unmaps */
    cl_mem mem[2];
    void *host[2];
    size_t size;
};

struct px_wstage {
    cl_context ctx;
    cl_command_queue q;          /* retained: it maps and unmaps */
    cl_mem mem[PX_WSTAGE_N];
    void *host[PX_WSTAGE_N];
    cl_event busy[PX_WSTAGE_N];  /* the copy from it, until it ended */
    unsigned next;
};

static void wstage_free(struct px_tenant *t)
{
    struct px_wstage *w = t->wstage;

    if (!w)
        return;
    for (unsigned i = 0; i < PX_WSTAGE_N; i++)
        if (w->busy[i]) {
            clWaitForEvents(1, &w->busy[i]);
            clReleaseEvent(w->busy[i]);
        }
    for (unsigned i = 0; i < PX_WSTAGE_N; i++)
        if (w->mem[i] && w->host[i])
            clEnqueueUnmapMemObject(w->q, w->mem[i], w->host[i], 0, NULL,
                                    NULL);
    clFinish(w->q);
    for (unsigned i = 0; i < PX_WSTAGE_N; i++)
        if (w->mem[i])
            clReleaseMemObject(w->mem[i]);
    clReleaseCommandQueue(w->q);
    free(w);
    t->wstage = NULL;
}

bool px_wstage_wants(struct px_tenant *t, size_t len, bool pinnable)
{
    size_t unset;

    if (len < PX_WSTAGE_MIN ||
        (!pinnable && (len > PX_WSTAGE_SIZE || t->wstage_off)))
        return false;
    pthread_mutex_lock(&t->lock);
    unset = t->uevents.count;
    pthread_mutex_unlock(&t->lock);
    return unset == 0;
}

void *px_wstage_get(struct px_tenant *t, cl_command_queue q, unsigned *slot)
{
    struct px_wstage *w = t->wstage;
    cl_context ctx;
    cl_int err = CL_SUCCESS;

    if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx,
                              NULL) != CL_SUCCESS)
        return NULL;
    if (w && w->ctx != ctx)
        wstage_free(t);
    if (!t->wstage) {
        if (!(w = calloc(1, sizeof(*w))))
            return NULL;
        w->ctx = ctx;
        w->q = q;
        clRetainCommandQueue(q);
        t->wstage = w;
        for (unsigned i = 0; i < PX_WSTAGE_N; i++) {
            w->mem[i] = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR,
                                       PX_WSTAGE_SIZE, NULL, &err);
            if (w->mem[i])
                w->host[i] = clEnqueueMapBuffer(
                    q, w->mem[i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                    PX_WSTAGE_SIZE, 0, NULL, NULL, &err);
            if (!w->host[i]) {
                CRN_WARN("tenant %llu: no pinned staging for writes (%d): "
                        "they go through the heap",
                        (unsigned long long)t->num, err);
                wstage_free(t);
                t->wstage_off = true;
                return NULL;
            }
        }
        CRN_DEBUG("tenant %llu: writes stage through %u pinned buffers of %u "
                 "bytes", (unsigned long long)t->num, PX_WSTAGE_N,
                 PX_WSTAGE_SIZE);
    }
    *slot = w->next++ % PX_WSTAGE_N;
    if (w->busy[*slot]) {
        clWaitForEvents(1, &w->busy[*slot]);
        clReleaseEvent(w->busy[*slot]);
        w->busy[*slot] = NULL;
    }
    return w->host[*slot];
}

void px_wstage_busy(struct px_tenant *t, unsigned slot, cl_event ev)
{
    if (!t->wstage || slot >= PX_WSTAGE_N || !ev)
        return;
    clRetainEvent(ev);
    t->wstage->busy[slot] = ev;
}

static void reads_free(struct px_tenant *t)
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

void px_staging_free(struct px_tenant *t)
{
    wstage_free(t);
    reads_free(t);
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
        reads_free(t);
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
                CRN_WARN("tenant %llu: no pinned staging of %zu bytes (%d): "
                        "reads go through the heap",
                        (unsigned long long)t->num, size, err);
                reads_free(t);
                return NULL;
            }
        }
        CRN_DEBUG("tenant %llu: reads stage through 2 pinned buffers of %zu "
                 "bytes", (unsigned long long)t->num, size);
    }
    return t->staging->host[which & 1];
}
