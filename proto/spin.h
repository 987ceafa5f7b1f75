/* Bounded busy-waiting for a peer's answer on a socket, instead of a
 * sleep and a wake-up (docs/remoting.md, "Small calls"). */
#ifndef CRANE_PROTO_SPIN_H
#define CRANE_PROTO_SPIN_H

#include <stdbool.h>

/* The default spin in microseconds for this machine: 50 where more than
 * two CPUs are online, else 0 (a spinning thread would take the only other
 * core from the peer that must answer). */
long crn_spin_default_us(void);

/* The spin in microseconds that ENV (an environment variable) asks for,
 * 0 to 10000, else the default; a value that does not parse is logged and
 * ignored. */
long crn_spin_us_from_env(const char *env);

/* Waits until FD has bytes (or an error or hang-up) to read: polls without
 * sleeping for up to SPIN_NS, then sleeps in poll() for up to TIMEOUT_MS
 * (-1: without end).  Returns true when FD is ready, false on time out. */
bool crn_spin_readable(int fd, long spin_ns, int timeout_ms);

#endif /* CRANE_PROTO_SPIN_H */
