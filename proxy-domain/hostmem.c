/* Clients' host-memory regions, read and written in place (hostmem.h). */
#include "hostmem.h"

#include "ctxpool.h"
#include "proto/log.h"
#include "ringpin.h"
#include "tenant.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/shm.h"

/* Non-blocking commands on a region still in flight, pruned as they
 * complete: the region is not unmapped before they have. */
struct px_host_busy {
    cl_event *ev;
    size_t n, cap;
};

int px_host_offer(struct px_tenant *t, int fd, uint64_t size, char *why,
                  size_t why_len)
{
    struct crn_shm *s = calloc(1, sizeof(*s));
    struct crn_shm *none = NULL;
    int rc;

    if (!s) {
        close(fd);
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    if (fd < 0) {
        free(s);
        snprintf(why, why_len, "no descriptor came with the region");
        return -EBADF;
    }
    if ((rc = crn_shm_map_plain(fd, size, s)) < 0) {
        free(s);
        snprintf(why, why_len, "host-memory region of %llu bytes refused: "
                 "%s", (unsigned long long)size, strerror(-rc));
        return rc;
    }
    if (!atomic_compare_exchange_strong(&t->host_offered, &none, s)) {
        crn_shm_close(s);
        free(s);
        snprintf(why, why_len, "a host-memory region is offered already");
        return -EBUSY;
    }
    return 0;
}

/* Drops the events of commands that completed; WAIT: waits for all. */
static void busy_prune(struct px_host_busy *b, bool wait)
{
    size_t keep = 0;

    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        cl_int st = CL_COMPLETE;
        if (wait)
            clWaitForEvents(1, &b->ev[i]);
        else
            clGetEventInfo(b->ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(st), &st, NULL);
        if (st <= CL_COMPLETE)
            clReleaseEvent(b->ev[i]);
        else
            b->ev[keep++] = b->ev[i];
    }
    b->n = keep;
}

/* Unmaps the tenant's region once nothing reads or writes it. */
static void region_close(struct px_tenant *t)
{
    busy_prune(t->host_busy, true);
    if (t->host) {
        px_shm_close(t->host);
        free(t->host);
        t->host = NULL;
    }
}

/* HostAttach's executor: the offered region becomes the tenant's (an
 * older one goes once its commands completed). */
cl_int px_exec_host_attach(struct px_call *c)
{
    struct px_tenant *t = c->t;
    struct crn_shm *s = atomic_exchange(&t->host_offered, NULL);
    cl_context spare;

    if (!s)
        return px_fail(c, CL_INVALID_OPERATION, "no host-memory region");
    if (!t->host_busy && !(t->host_busy = calloc(1, sizeof(*t->host_busy)))) {
        crn_shm_close(s);
        free(s);
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    }
    region_close(t);
    t->host = s;
    px_ring_allow(s);
    if ((spare = px_ctxpool_peek())) {
        px_ring_prepin(s, spare);
        clReleaseContext(spare);
    }
    CRN_INFO("tenant %llu (%s pid %u): mapped pointers in %zu MiB of host "
            "memory, read and written in place", (unsigned long long)t->num,
            t->program, t->pid, s->size >> 20);
    return CL_SUCCESS;
}

/* The bytes a command spans in the region from its host_offset: SIZE,
 * or a rectangle's rows with its host pitches (0: tightly packed).  -1
 * when that overflows or the rectangle is empty. */
static int64_t host_span(const Crane__MemCommand *mc)
{
    uint64_t row, slice, a, b, span;
    const uint64_t *r = mc->region;

    if (mc->op == CRANE__MEM_OP__MEM_READ ||
        mc->op == CRANE__MEM_OP__MEM_WRITE)
        return mc->size > INT64_MAX ? -1 : (int64_t)mc->size;
    if (!r[0] || !r[1] || !r[2])
        return -1;
    row = mc->host_row_pitch ? mc->host_row_pitch : r[0];
    if (mc->host_slice_pitch)
        slice = mc->host_slice_pitch;
    else if (__builtin_mul_overflow(row, r[1], &slice))
        return -1;
    if (__builtin_mul_overflow(r[2] - 1, slice, &a) ||
        __builtin_mul_overflow(r[1] - 1, row, &b) ||
        __builtin_add_overflow(a, b, &span) ||
        __builtin_add_overflow(span, r[0], &span) || span > INT64_MAX)
        return -1;
    return (int64_t)span;
}

cl_int px_host_mem(struct px_call *c, cl_command_queue q, cl_mem mem,
                   cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    const Crane__MemCommand *mc = c->m->mem_command;
    struct px_tenant *t = c->t;
    bool write = mc->op == CRANE__MEM_OP__MEM_WRITE ||
                 mc->op == CRANE__MEM_OP__MEM_WRITE_RECT;
    bool rect = mc->op == CRANE__MEM_OP__MEM_READ_RECT ||
                mc->op == CRANE__MEM_OP__MEM_WRITE_RECT;
    cl_bool blocking = mc->blocking ? CL_TRUE : CL_FALSE;
    int64_t span = host_span(mc);
    cl_event own = NULL;
    cl_int err;

    if (!t->host)
        return px_fail(c, CL_INVALID_OPERATION, "no host-memory region");
    if (span < 0 || mc->host_offset > t->host->size ||
        (uint64_t)span > t->host->size - mc->host_offset)
        return px_fail(c, CL_INVALID_VALUE, "%lld bytes at %llu outside the "
                       "host-memory region of %zu", (long long)span,
                       (unsigned long long)mc->host_offset, t->host->size);
    void *at = t->host->base + mc->host_offset;
    bool pinned = px_ring_pinned(t->host, q);
    /* In flight after we return, a command is tracked: its event. */
    cl_event *evp = ev ? ev : blocking ? NULL : &own;
    if (rect) {
        size_t origin[3], region[3], zero[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            origin[i] = (size_t)(write ? mc->dst_origin[i]
                                       : mc->src_origin[i]);
            region[i] = (size_t)mc->region[i];
        }
        err = write ? clEnqueueWriteBufferRect(
                          q, mem, blocking, origin, zero, region,
                          mc->dst_row_pitch, mc->dst_slice_pitch,
                          mc->host_row_pitch, mc->host_slice_pitch, at,
                          nwait, wait, evp)
                    : clEnqueueReadBufferRect(
                          q, mem, blocking, origin, zero, region,
                          mc->src_row_pitch, mc->src_slice_pitch,
                          mc->host_row_pitch, mc->host_slice_pitch, at,
                          nwait, wait, evp);
    } else if (write) {
        err = clEnqueueWriteBuffer(q, mem, blocking, mc->dst_offset, mc->size,
                                   at, nwait, wait, evp);
    } else {
        err = clEnqueueReadBuffer(q, mem, blocking, mc->src_offset, mc->size,
                                  at, nwait, wait, evp);
    }
    CRN_DEBUG("tenant %llu: %s%s of %lld bytes in place in host memory at "
             "%llu (%s, %s): %d", (unsigned long long)t->num,
             write ? "write" : "read", rect ? " (rect)" : "", (long long)span,
             (unsigned long long)mc->host_offset,
             blocking ? "blocking" : "non-blocking",
             pinned ? "pinned" : "not pinned", err);
    if (err != CL_SUCCESS || blocking)
        return err;
    clFlush(q);
    struct px_host_busy *b = t->host_busy;
    busy_prune(b, false);
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        cl_event *v = realloc(b->ev, cap * sizeof(*v));
        if (!v) {
            /* Cannot track it: done before we go on. */
            clWaitForEvents(1, evp);
            if (own)
                clReleaseEvent(own);
            return CL_SUCCESS;
        }
        b->ev = v;
        b->cap = cap;
    }
    if (!own)
        clRetainEvent(*evp);
    b->ev[b->n++] = *evp;
    return CL_SUCCESS;
}

void px_host_close(struct px_tenant *t)
{
    struct crn_shm *s = atomic_exchange(&t->host_offered, NULL);

    if (s) {
        crn_shm_close(s);
        free(s);
    }
    region_close(t);
    if (t->host_busy) {
        free(t->host_busy->ev);
        free(t->host_busy);
        t->host_busy = NULL;
    }
}
