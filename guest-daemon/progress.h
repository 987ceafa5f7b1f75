/* A prepare's progress, pushed every second to the hosts that asked for it. */
#ifndef GD_PROGRESS_H
#define GD_PROGRESS_H

#include "guestd.h"

/* The operation in flight has a waiter that asked for progress: an
 * OpProgress to each such waiter every second from now until its answer
 * (nothing when none asked). */
void gd_progress_arm(struct gd_daemon *d);

#endif /* GD_PROGRESS_H */
