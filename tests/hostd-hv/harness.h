/* The hostd-hv tests' checks and loop fixture, on the one test runner. */
#ifndef HVT_HARNESS_H
#define HVT_HARNESS_H

#include "tests/unit/runner.h"

#include <stdbool.h>
#include <string.h>
#include <uv.h>

/* The runner's calls under the names these tests grew up with. */
#define hvt_fail runner_fail
#define hvt_skip runner_skip
#define hvt_on_fail runner_on_fail
#define hvt_ms runner_ms

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            hvt_fail(__FILE__, __LINE__, "%s", #cond);                       \
    } while (0)

#define CHECK_INT(a, op, b)                                                  \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (!(a_ op b_))                                                     \
            hvt_fail(__FILE__, __LINE__, "%s %s %s: %lld, %lld", #a, #op,    \
                     #b, a_, b_);                                            \
    } while (0)

#define CHECK_STR(a, b)                                                      \
    do {                                                                     \
        const char *a_ = (a), *b_ = (b);                                     \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                 \
            hvt_fail(__FILE__, __LINE__, "%s == %s: \"%s\", \"%s\"", #a, #b, \
                     a_ ? a_ : "(null)", b_ ? b_ : "(null)");                \
    } while (0)

/*
 * A uv loop for one test, with a deadline timer and a wake-up that other
 * threads use (hvt_poke) to make the loop look at its condition again.
 */
struct hvt_loop {
    uv_loop_t loop;
    uv_timer_t deadline;
    uv_async_t poke;
    bool expired;
};

void hvt_loop_init(struct hvt_loop *l);
/* Runs the loop until DONE(ARG) holds; fails the test, naming WHAT, when
 * TIMEOUT_MS pass first. */
void hvt_run_until(struct hvt_loop *l, bool (*done)(void *arg), void *arg,
                   unsigned timeout_ms, const char *what);
/* Any thread: wakes the loop so that hvt_run_until checks again. */
void hvt_poke(struct hvt_loop *l);
/* hv_event_shutdown, closes the fixture's handles; uv_loop_close must
 * succeed (every handle of the test closed). */
void hvt_loop_fini(struct hvt_loop *l);

/* The test bodies: list.h rows TEST_TIMED(name, timeout_s). */
#define TEST_TIMED(name, timeout_s) void test_##name(void);
#include "list.h"
#undef TEST_TIMED

#endif /* HVT_HARNESS_H */
