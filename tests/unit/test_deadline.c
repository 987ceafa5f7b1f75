/* Unit tests of proto/deadline.c: deadlines for timed waits. */
#include "runner.h"

#include "proto/deadline.h"

/* Milliseconds carry into seconds, nanoseconds stay below a second. */
TEST(deadline_add_ms)
{
    static const struct {
        long sec, nsec;
        uint64_t ms;
        long want_sec, want_nsec;
    } rows[] = {
        {5, 999999999L, 1, 6, 999999L},
        {6, 999999L, 2999, 8, 999999999L},
        {8, 999999999L, 0, 8, 999999999L},
        {0, 0, 86400123, 86400, 123000000L},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct timespec ts = {.tv_sec = rows[i].sec, .tv_nsec = rows[i].nsec};
        crn_timespec_add_ms(&ts, rows[i].ms);
        ASSERT_EQ(ts.tv_sec, rows[i].want_sec);
        ASSERT_EQ(ts.tv_nsec, rows[i].want_nsec);
    }
    for (uint64_t ms = 0; ms < 5000; ms += 7) {
        struct timespec t = {.tv_sec = 1, .tv_nsec = 500000000L};
        crn_timespec_add_ms(&t, ms);
        ASSERT(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
        ASSERT_EQ((uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000,
                  1500 + ms);
    }
}

/* A deadline lies ahead of the clock it was read from. */
TEST(deadline_in)
{
    struct timespec now, until;

    clock_gettime(CLOCK_MONOTONIC, &now);
    crn_deadline_in(CLOCK_MONOTONIC, 3000, &until);
    ASSERT(until.tv_sec >= now.tv_sec + 3);
    ASSERT(until.tv_nsec >= 0 && until.tv_nsec < 1000000000L);
}
