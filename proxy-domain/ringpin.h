/* A client's shared area made pinned memory for the vendor, so that the
 * device copies straight between it and its buffers. */
#ifndef PX_RINGPIN_H
#define PX_RINGPIN_H

#include "cl.h"
#include "proto/shm.h"

#include <stdbool.h>

/*
 * NVIDIA pins the host memory of a CL_MEM_USE_HOST_PTR buffer for as long
 * as the buffer lives, and every copy between that memory and any buffer
 * then runs at pinned speed (H200: 53-55 GB/s, against 6.8 GB/s from the
 * same pages unpinned).  So the proxy wraps a client's memfd area in such
 * a buffer, which it never uses otherwise, and reads and writes bulk bytes
 * straight between the rings and the device: no heap copy, no staging.
 *
 * The vendor knows pinned memory by its address, so the buffer must go
 * before the area is unmapped (another mapping could take the address):
 * every area is closed through px_shm_close.  Only memfd areas are
 * offered (px_ring_allow); files and ivshmem BARs are never pinned.
 * CRANE_PROXY_PIN_RING=0 turns it off.
 */

/* S (a memfd area just mapped) may be pinned. */
void px_ring_allow(const struct crn_shm *s);
/* Whether S may be pinned: allowed, and not failed to be. */
bool px_ring_pinnable(const struct crn_shm *s);
/* Whether S is pinned memory for Q's context; the first call pins it
 * (a failure is remembered: false from then on). */
bool px_ring_pinned(const struct crn_shm *s, cl_command_queue q);
/* Pins S for CTX now, if it may be and was not tried yet: at ShmAttach,
 * with the spare context a program's first context will most likely be
 * (ctxpool.h), so that pinning (tens of ms on NVIDIA) is not part of a
 * switch's stop. */
void px_ring_prepin(const struct crn_shm *s, cl_context ctx);
/* Unpins S (if it was) and unmaps it. */
void px_shm_close(struct crn_shm *s);

#endif /* PX_RINGPIN_H */
