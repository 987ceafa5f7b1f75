/* A client's host-memory region (remote.proto's HostAttach): mapped,
 * pinned for the device, and read and written in place by MemCommands
 * with host_mem set. */
#ifndef PX_HOSTMEM_H
#define PX_HOSTMEM_H

#include "cl.h"
#include "exec.h"

struct crn_shm;

/*
 * The client's mapped pointers live in its region, so the proxy moves
 * their bytes straight between the region and the device: no copy on
 * either side, and pinned (ringpin.h) where the vendor pins such memory.
 * The region is the tenant's: it stays mapped across connections until
 * another replaces it or the tenant ends, and never before every command
 * that reads or writes it has completed (a non-blocking one is in flight
 * after its call returns).  Offsets and lengths come from the client and
 * are checked against the region's size.
 */

/* Maps the region FD (taken) of SIZE bytes offered by HostAttach, as
 * its frame arrives (the loop thread): the next HostAttach executor takes
 * it.  0 or a negative errno with WHY set. */
int px_host_offer(struct px_tenant *t, int fd, uint64_t size, char *why,
                  size_t why_len);

/* A MemCommand MEM_READ or MEM_WRITE (or their _RECT forms) with
 * host_mem of MEM on Q: the device reads or writes the region in place;
 * *EV (EV non-NULL) the command's event. */
cl_int px_host_mem(struct px_call *c, cl_command_queue q, cl_mem mem,
                   cl_uint nwait, const cl_event *wait, cl_event *ev);

/* Waits for every command on the region, then unmaps it (and one offered
 * and never taken): the tenant's end. */
void px_host_close(struct px_tenant *t);

#endif /* PX_HOSTMEM_H */
