/* The hostd-hv test program's checks, loop fixture and test list. */
#ifndef HVT_HARNESS_H
#define HVT_HARNESS_H

#include <stdbool.h>
#include <stdnoreturn.h>
#include <uv.h>

/* The exit status of a skipped test (automake's convention). */
#define HVT_SKIP 77

/* Ends the test (from its own thread): FAIL with a reason, or a skip. */
noreturn void hvt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
noreturn void hvt_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

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

/* Runs FN(ARG) when the test fails (from hvt_fail, before it exits), to
 * undo what outlives the process, such as a domain in a libvirtd; one at a
 * time, NULL to clear. */
void hvt_on_fail(void (*fn)(void *arg), void *arg);

/* Scales the timeouts of slow runs (valgrind): $HVT_SLOW, default 1. */
unsigned hvt_ms(unsigned ms);

/* The test list: list.h rows TEST(name, timeout_s), bodies test_NAME. */
#define TEST(name, timeout_s) void test_##name(void);
#include "list.h"
#undef TEST

#endif /* HVT_HARNESS_H */
