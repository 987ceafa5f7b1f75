/* Absolute deadlines for timed waits (pthread_cond_timedwait and kin). */
#ifndef CRANE_PROTO_DEADLINE_H
#define CRANE_PROTO_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* Moves TS on by MS milliseconds, its nanoseconds kept below a second. */
void crn_timespec_add_ms(struct timespec *ts, uint64_t ms);
/* The time on CLOCK MS milliseconds from now, into *OUT: the deadline of a
 * wait on a condition variable whose clock is CLOCK. */
void crn_deadline_in(clockid_t clock, uint64_t ms, struct timespec *out);

#endif /* CRANE_PROTO_DEADLINE_H */
