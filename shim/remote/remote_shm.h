/* A shared area attached to the remote connection, and given up, while the
 * program remotes (the ivshmem path between a guest and the proxy domain
 * on its host; docs/remoting.md, "Shared memory"). */
#ifndef SHIM_REMOTE_SHM_H
#define SHIM_REMOTE_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/*
 * Lays a shared area out over PATH (an ivshmem BAR's resource2), from
 * OFFSET, at most LIMIT bytes (0: to the end), writes a fresh token into
 * it and offers it to the proxy (ShmAttach{token, offset}; NAME too when
 * the proxy maps host files by name).  A proxy that refuses is asked
 * again for up to PATIENCE_MS (the proxy domain may see a device just
 * plugged a moment after this guest does).  Bulk bytes go through it from
 * the next call on.  Returns 0, -ENOTCONN when not remoting, -EBUSY when
 * an area is attached already, or another negative errno with WHY set.
 */
int shim_remote_shm_use(const char *path, const char *name, uint64_t offset,
                        uint64_t limit, long patience_ms, char *why,
                        size_t why_len);

/*
 * Gives the attached area up (ShmDetach): bulk bytes take the stream from
 * the next call on, calls in flight finish (their bytes already in the
 * area are read first), and the area is unmapped, so that its device can
 * go.  Without an area: 0.  A proxy that refuses ends the connection (its
 * calls then fail, never with wrong data).
 */
int shim_remote_shm_release(char *why, size_t why_len);

/* Whether an area is attached. */
int shim_remote_shm_attached(void);

/* Holds attaching and giving up an area off (they wait) while a switch's
 * device copies use it (shim/ringstream.c), so that it is not unmapped
 * under them. */
void shim_remote_shm_hold(void);
void shim_remote_shm_unhold(void);

void shim_remote_shm_counts(struct shim_shm_counts *out);

#endif /* SHIM_REMOTE_SHM_H */
