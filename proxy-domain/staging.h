/* Pinned host buffers the proxy stages reads and writes through. */
#ifndef PX_STAGING_H
#define PX_STAGING_H

#include "cl.h"
#include "tenant.h"

/* Host pointer WHICH (0 or 1) of T's pair of pinned buffers of at least
 * SIZE bytes in Q's context, made (and mapped once) on first use; NULL
 * when the implementation cannot make them. */
void *px_staging_get(struct px_tenant *t, cl_command_queue q, size_t size,
                     int which);
/* Unmaps and releases them, and the write buffers below once their copies
 * ended (teardown: before the tenant's objects). */
void px_staging_free(struct px_tenant *t);

/*
 * Writes whose bytes came through the client's shared area are copied from
 * its ring into one of PX_WSTAGE_N pinned buffers of PX_WSTAGE_SIZE bytes
 * (per tenant, made for the context it last wrote to), which frees their
 * ring room at once, and the device copies from there at pinned speed
 * instead of from pageable memory.  A buffer is taken again once the copy
 * from it ended: a wait for work already on the device, never for a later
 * message, since only writes made while the tenant has no user event
 * unset stage here (an unset one could hold the copy back until the
 * client sets it, through a message behind this one).
 */
#define PX_WSTAGE_N 4
#define PX_WSTAGE_SIZE (4u << 20)
/* Smaller writes are copied to the heap (the copy is cheap either way). */
#define PX_WSTAGE_MIN (256u << 10)

/* Whether a write of LEN bytes of T may stage through pinned buffers, or,
 * PINNABLE (its ring may be pinned, ringpin.h), go straight from the ring
 * to the device whatever its size. */
bool px_wstage_wants(struct px_tenant *t, size_t len, bool pinnable);
/* A free pinned buffer of PX_WSTAGE_SIZE bytes in Q's context (waiting for
 * the copy from it to end if needed), its number in *SLOT; NULL when the
 * implementation cannot make them. */
void *px_wstage_get(struct px_tenant *t, cl_command_queue q, unsigned *slot);
/* The copy from buffer SLOT is EV (retained; NULL: nothing in flight). */
void px_wstage_busy(struct px_tenant *t, unsigned slot, cl_event ev);

#endif /* PX_STAGING_H */
