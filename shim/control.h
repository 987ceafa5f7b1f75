/* The shim's control thread: serves crane-guestd's commands. */
#ifndef CRANE_SHIM_CONTROL_H
#define CRANE_SHIM_CONTROL_H

/*
 * Starts the control thread once the shim has initialised (init_once() in
 * start.c, only when the first load worked).  The thread connects to
 * crane-guestd's unix socket (CRANE_SOCKET, default /run/crane/guest.sock),
 * registers the program, and carries out prepare, resume and abort
 * (docs/guest.md).  Without a daemon it retries quietly every second; it
 * reconnects and registers again when the daemon restarts.  The thread is
 * detached and never keeps the process alive.  Returns 0 or a negative
 * errno (CRANE_SOCKET=none: 0, nothing started).
 */
int shim_control_start(void);

#endif /* CRANE_SHIM_CONTROL_H */
