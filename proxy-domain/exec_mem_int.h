/* What the memory executors' files share (exec_mem.c, exec_mem_read.c):
 * one MemCommand's enqueue state and the read executor. */
#ifndef CRANE_PX_EXEC_MEM_INT_H
#define CRANE_PX_EXEC_MEM_INT_H

#include "exec.h"

/* What every enqueue of one MemCommand shares. */
struct mem_op {
    struct px_call *c;
    const Crane__MemCommand *mc;
    cl_command_queue q;
    cl_event *wait;
    cl_uint nwait;
    cl_event ev;                 /* the command's event */
    cl_event *evp;               /* &ev, or NULL when no event is wanted */
};

/* A message's three origin or region words as sizes. */
static inline void sizes3(size_t out[3], const uint64_t *in)
{
    for (int i = 0; i < 3; i++)
        out[i] = (size_t)in[i];
}

enum mem_want { WANT_ANY, WANT_BUFFER, WANT_IMAGE };

/* A read of a buffer, rectangle or image from SRC: blocking, whose bytes
 * leave with the Reply or on the lanes, or non-blocking, pending until its
 * event completes (exec_mem_read.c). */
cl_int px_mem_read(struct mem_op *op, cl_mem src);

#endif
