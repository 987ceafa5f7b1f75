/* Absolute deadlines for timed waits, computed in one place. */
#include "deadline.h"

#define NS_PER_S 1000000000L

void crn_timespec_add_ms(struct timespec *ts, uint64_t ms)
{
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= NS_PER_S) {
        ts->tv_sec++;
        ts->tv_nsec -= NS_PER_S;
    }
}

void crn_deadline_in(clockid_t clock, uint64_t ms, struct timespec *out)
{
    clock_gettime(clock, out);
    crn_timespec_add_ms(out, ms);
}
