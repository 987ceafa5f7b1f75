/* The shim's link to crane-guestd: its socket and one lock for its frames. */
#ifndef CRANE_SHIM_CTL_LINK_H
#define CRANE_SHIM_CTL_LINK_H

#include <protobuf-c/protobuf-c.h>

/* FD is the daemon connection now (-1: none).  The control thread owns
 * it: it sets and clears it, and closes it after clearing. */
void shim_ctl_link_set(int fd);

/* In a forked child: no connection, and a lock no thread holds. */
void shim_ctl_link_atfork_child(void);

/* Writes MSG as one frame on the daemon connection, whole, never
 * interleaved with another thread's.  Returns 0 or a negative errno
 * (-ENOTCONN without a daemon). */
int shim_ctl_link_write(const ProtobufCMessage *msg);

/* Tells crane-guestd of a fault the program is about to see (ERR, a
 * negative errno, and one line REASON), before its calls fail of it: a
 * program that exits of the fault is then reported `lost` with REASON
 * (docs/guest.md, "Lost programs").  Nothing without a daemon. */
void shim_ctl_fault(int err, const char *reason);

#endif
