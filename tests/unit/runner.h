/* Unit-test framework: TEST bodies and the assertion macros they use. */
#ifndef CRANE_UNIT_RUNNER_H
#define CRANE_UNIT_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

/*
 * A test is a body written as
 *
 *     TEST(frame_roundtrip_pipe)
 *     {
 *         ASSERT_EQ(crn_frame_write(fd, msg), 0);
 *     }
 *
 * and registered by one TEST_ENTRY(frame_roundtrip_pipe) row in list.h, or
 * TEST_TIMED(name, seconds) for a test with a time limit of its own (else
 * CRANE_TEST_TIMEOUT's, default 30 s): seconds in which the test made no
 * progress (ran or waited to run less than 5% of the time), at most 10
 * times that in all.
 * Every test program of crane is this runner compiled against its folder's list.h (tests/unit,
 * tests/hostd, tests/hostd-hv).
 * A test passes by returning.  A failed assertion prints nothing itself: it
 * records "file:line: what failed" and leaves the test at once (through
 * longjmp), so assertions also work inside helper functions.  A test is run
 * in its own forked child, so it may leak fds or memory when it fails; it
 * should still clean up when it passes (valgrind runs every test in one
 * process with --no-fork).  Assertions belong to the test's own thread:
 * one failing in another thread ends the whole process.
 */
#define TEST(name)                                                           \
    void test_##name(void);                                                  \
    void test_##name(void)

/* Fails the test when COND is false. */
#define ASSERT(cond)                                                         \
    do {                                                                     \
        if (!(cond))                                                         \
            runner_fail(__FILE__, __LINE__, "ASSERT(%s) failed", #cond);     \
    } while (0)

/* Fails the test unless integers A and B are equal; prints both values. */
#define ASSERT_EQ(a, b)                                                      \
    do {                                                                     \
        runner_assert_eq(__FILE__, __LINE__, #a, #b, (intmax_t)(a),          \
                         (intmax_t)(b));                                     \
    } while (0)

/* Fails the test unless strings A and B are equal (NULL equals only NULL). */
#define ASSERT_STR_EQ(a, b)                                                  \
    do {                                                                     \
        runner_assert_str_eq(__FILE__, __LINE__, #a, #b, (a), (b));          \
    } while (0)

/* Fails the test unless the LEN bytes at A and at B are equal. */
#define ASSERT_MEM_EQ(a, b, len)                                             \
    do {                                                                     \
        runner_assert_mem_eq(__FILE__, __LINE__, #a, #b, (a), (b), (len));   \
    } while (0)

/* Ends the test as skipped, saying why (a program that only skipped exits
 * 77, as tests/run-tests.sh expects of a skip). */
noreturn void runner_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Runs FN(ARG) when the test fails, before it ends, to undo what outlives
 * the process (a domain left in a libvirtd); one at a time, NULL clears. */
void runner_on_fail(void (*fn)(void *arg), void *arg);

/* MS scaled for slow runs (valgrind): times $CRANE_TEST_SLOW (or the older
 * $HVT_SLOW), default 1.  Time limits of rows are scaled the same way. */
unsigned runner_ms(unsigned ms);

/* The runner's side of the macros above; tests use the macros. */
noreturn void runner_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void runner_assert_eq(const char *file, int line, const char *expr_a,
                      const char *expr_b, intmax_t a, intmax_t b);
void runner_assert_str_eq(const char *file, int line, const char *expr_a,
                          const char *expr_b, const char *a, const char *b);
void runner_assert_mem_eq(const char *file, int line, const char *expr_a,
                          const char *expr_b, const void *a, const void *b,
                          size_t len);

#endif /* CRANE_UNIT_RUNNER_H */
