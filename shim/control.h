/* The shim's control thread: serves crane-guestd's commands. */
#ifndef CRANE_SHIM_CONTROL_H
#define CRANE_SHIM_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/*
 * Starts the control thread once the shim has initialised (init_once() in
 * start.c, only when the first load worked).  The thread connects to
 * crane-guestd's unix socket (CRANE_SOCKET, default /run/crane/guest.sock),
 * registers the program, and carries out prepare, resume and abort
 * (docs/guest.md).  Without a daemon it retries quietly every second; it
 * reconnects and registers again when the daemon restarts.  The thread is
 * detached and never keeps the process alive.  FD >= 0: a connection the
 * start registered already (control_start.c), which the thread takes over
 * (closed here on failure).  Returns 0 or a negative errno
 * (CRANE_SOCKET=none: 0, nothing started).
 */
int shim_control_start(int fd);

/* A new connection to crane-guestd's socket: its fd, or a negative errno. */
int shim_control_connect(void);
/* Sends FD the program's Register; STARTING: before its first backend
 * loads (it waits for a Start).  Returns 0 or a negative errno. */
int shim_control_register(int fd, bool starting);
/* Points shim_config.remote at ENDPOINT ("" : CRANE_PROXY) and the key at
 * KEY when there is one.  Only while no remote connection reads them (in
 * passthrough, or before the first load).  Returns 0 or a negative errno
 * with ERROR set. */
int shim_control_set_proxy(const char *endpoint,
                           const ProtobufCBinaryData *key, char *error,
                           size_t error_len);

/*
 * Before the program's first backend loads: asks crane-guestd where its
 * first OpenCL call goes (docs/guest.md, "Programs that start during a
 * migration").  Returns the backend to load: the remote one while the VM
 * is prepared for a live migration (the proxy and key the daemon named),
 * else the native one, after waiting (at most CRANE_START_WAIT_MS) while
 * the GPU is away for an offline one.  *FD: the registered connection for
 * shim_control_start, or -1 (no daemon: it is looked for again later).
 */
const struct shim_backend_ops *shim_control_begin(int *fd);

#endif /* CRANE_SHIM_CONTROL_H */
