/* A worker's watch on its tenant, off the loop: the client gone, a call
 * past --max-kernel-seconds. */
#ifndef PX_WATCHDOG_H
#define PX_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A worker's loop may be held by its tenant's vendor for ever (a device
 * wait runs on it, and a kernel that never ends never lets it return), so
 * what must end such a tenant watches from a thread of its own: it polls
 * the client's stream for its hang-up and the call executing for how long
 * it has run, and tells the supervisor (worker.c's px_worker_tell_ending,
 * safe from any thread), which ends the worker (supervisor.c).
 */

/* Called with the reason the tenant must end, from the watchdog's thread;
 * NOW: at once (a call ran too long), else after the supervisor's bound
 * (the client left: the worker should end by itself first). */
typedef void (*px_watch_end_fn)(void *arg, const char *reason, bool now);

/* Starts the watchdog thread; MAX_CALL_MS: --max-kernel-seconds (0: no
 * bound on a call).  0 or a negative errno. */
int px_watch_start(uint64_t max_call_ms, px_watch_end_fn end, void *arg);

/* Watches FD, the stream of tenant NUM's connection (PROGRAM, PID for
 * logs), for the client's hang-up; a second one replaces the first (a
 * resume).  Loop thread. */
void px_watch_client(int fd, uint64_t num, const char *program,
                     uint32_t pid);
/* FD is being closed by the worker: no longer watched (before it is
 * closed).  Loop thread. */
void px_watch_forget(int fd);

/* The executor begins a call of kind MSG_CASE (a ClientMessage case),
 * then ends it; any thread, one call at a time per process.  Builds are
 * not bounded (the compiler's time, not the device's). */
void px_watch_call_begin(int msg_case);
void px_watch_call_end(void);

#endif /* PX_WATCHDOG_H */
