/* Executing the calls about the stream itself: the shared area taken and
 * given up, handshake messages refused once the handshake is over. */
#include "exec.h"

#include "ctxpool.h"
#include "proto/log.h"
#include "ringpin.h"

#include "proto/shm.h"

/* The area was mapped as the frame arrived (conn.c); from here on read
 * bytes may use it. */
cl_int px_exec_shm_attach(struct px_call *c)
{
    cl_context spare;

    c->t->shm = c->t->shm_offered;
    if (!c->t->shm)
        return px_fail(c, CL_INVALID_OPERATION, "no shared area");
    if ((spare = px_ctxpool_peek())) {
        px_ring_prepin(c->t->shm, spare);
        clReleaseContext(spare);
    }
    return CL_SUCCESS;
}

/* The area given up (conn_input.c claimed no more of ring 0 after its
 * frame, and the calls before it, which copied their pieces out, have
 * executed): replies from here on carry their bytes on the stream, and
 * the mapping goes, so that the device behind it can be unplugged.
 * Replies that named ring 1 left before this one's, in order. */
cl_int px_exec_shm_detach(struct px_call *c)
{
    struct px_tenant *t = c->t;

    if (!t->shm)
        return px_fail(c, CL_INVALID_OPERATION, "no shared area");
    px_shm_close(t->shm);
    t->shm = t->shm_offered = NULL;
    atomic_store(&t->shm_given_up, true);
    CRN_INFO("tenant %llu (%s pid %u): shared memory given up, bulk bytes "
            "on the stream", (unsigned long long)t->num, t->program, t->pid);
    return CL_SUCCESS;
}

/* Hello or Auth after the handshake. */
cl_int px_exec_not_now(struct px_call *c)
{
    return px_fail(c, CL_INVALID_OPERATION,
                   "handshake message after the handshake");
}

