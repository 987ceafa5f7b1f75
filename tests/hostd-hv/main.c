/* The hostd-hv test program: runs list.h's tests, each forked with a timeout. */
#include "harness.h"

#include "host-daemon/hv_event.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct test {
    const char *name;
    void (*fn)(void);
    unsigned timeout_s;
};

static const struct test tests[] = {
#define TEST(name, timeout_s) {#name, test_##name, timeout_s},
#include "list.h"
#undef TEST
};

#define N_TESTS (sizeof(tests) / sizeof(tests[0]))
#define REASON_MAX 1024

/* The running test's pipe to the runner (-1 when run in-process). */
static int reason_fd = -1;

/* What to undo when the test fails (hvt_on_fail). */
static void (*fail_cleanup)(void *arg);
static void *fail_cleanup_arg;

void hvt_on_fail(void (*fn)(void *arg), void *arg)
{
    fail_cleanup = fn;
    fail_cleanup_arg = arg;
}

static noreturn void end_test(int status, const char *kind, const char *fmt,
                              va_list ap)
{
    char reason[REASON_MAX];
    ssize_t n;

    vsnprintf(reason, sizeof(reason), fmt, ap);
    if (reason_fd >= 0) {
        n = write(reason_fd, reason, strlen(reason));
        (void)n;
    } else {
        fprintf(stderr, "%s: %s\n", kind, reason);
    }
    fflush(stdout);
    _exit(status);
}

static noreturn void finish(int status, const char *kind, const char *fmt,
                            ...)
{
    va_list ap;

    va_start(ap, fmt);
    end_test(status, kind, fmt, ap);
}

noreturn void hvt_fail(const char *file, int line, const char *fmt, ...)
{
    char what[REASON_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (fail_cleanup != NULL) {
        void (*fn)(void *arg) = fail_cleanup;

        fail_cleanup = NULL; /* a failure inside it must not loop */
        fn(fail_cleanup_arg);
    }
    finish(1, "FAIL", "%s:%d: %s", file, line, what);
}

noreturn void hvt_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    end_test(HVT_SKIP, "skip", fmt, ap);
}

unsigned hvt_ms(unsigned ms)
{
    const char *slow = getenv("HVT_SLOW");
    long factor = slow != NULL ? strtol(slow, NULL, 10) : 1;

    return factor > 1 ? ms * (unsigned)factor : ms;
}

/* --- the loop fixture ------------------------------------------------------- */

static void on_deadline(uv_timer_t *timer)
{
    struct hvt_loop *l = timer->data;

    l->expired = true;
}

static void on_poke(uv_async_t *async)
{
    (void)async; /* waking up is all it is for */
}

void hvt_loop_init(struct hvt_loop *l)
{
    memset(l, 0, sizeof(*l));
    CHECK_INT(uv_loop_init(&l->loop), ==, 0);
    CHECK_INT(uv_timer_init(&l->loop, &l->deadline), ==, 0);
    l->deadline.data = l;
    CHECK_INT(uv_async_init(&l->loop, &l->poke, on_poke), ==, 0);
    uv_unref((uv_handle_t *)&l->poke);
}

void hvt_run_until(struct hvt_loop *l, bool (*done)(void *arg), void *arg,
                   unsigned timeout_ms, const char *what)
{
    l->expired = false;
    uv_update_time(&l->loop);
    uv_timer_start(&l->deadline, on_deadline, hvt_ms(timeout_ms), 0);
    while (!done(arg) && !l->expired)
        uv_run(&l->loop, UV_RUN_ONCE);
    uv_timer_stop(&l->deadline);
    if (!done(arg))
        hvt_fail(__FILE__, __LINE__, "timed out after %u ms waiting for %s",
                 hvt_ms(timeout_ms), what);
}

void hvt_poke(struct hvt_loop *l)
{
    uv_async_send(&l->poke);
}

static void count_unclosed(uv_handle_t *handle, void *arg)
{
    (void)handle;
    ++*(int *)arg;
}

void hvt_loop_fini(struct hvt_loop *l)
{
    int unclosed = 0;

    hv_event_shutdown();
    uv_close((uv_handle_t *)&l->deadline, NULL);
    uv_close((uv_handle_t *)&l->poke, NULL);
    uv_run(&l->loop, UV_RUN_NOWAIT);
    uv_walk(&l->loop, count_unclosed, &unclosed);
    CHECK_INT(unclosed, ==, 0);
    CHECK_INT(uv_loop_close(&l->loop), ==, 0);
}

/* --- the runner ------------------------------------------------------------- */

enum outcome { PASSED, FAILED, SKIPPED };

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads the child's reason until it exits (EOF) or DEADLINE passes. */
static bool read_reason(int fd, char *reason, size_t cap, double deadline)
{
    size_t len = strlen(reason);

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        double left = deadline - now_s();
        ssize_t n;

        if (left <= 0)
            return false;
        if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (pfd.revents == 0)
            continue;
        n = read(fd, reason + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return true;
        len += (size_t)n;
        reason[len] = '\0';
        if (len == cap - 1)
            return true;
    }
}

static enum outcome run_forked(const struct test *t)
{
    char reason[REASON_MAX] = "";
    double deadline;
    int fds[2];
    int status;
    pid_t pid;
    bool ended;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        printf("FAIL %s: pipe: %s\n", t->name, strerror(errno));
        return FAILED;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        printf("FAIL %s: fork: %s\n", t->name, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return FAILED;
    }
    if (pid == 0) {
        close(fds[0]);
        setpgid(0, 0);
        reason_fd = fds[1];
        t->fn();
        fflush(stdout);
        exit(0); /* exit, not _exit: valgrind's leak check runs here */
    }
    setpgid(pid, pid);
    close(fds[1]);
    deadline = now_s() + hvt_ms(t->timeout_s * 1000) / 1000.0;
    ended = read_reason(fds[0], reason, sizeof(reason), deadline);
    close(fds[0]);
    if (!ended)
        kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!ended) {
        printf("FAIL %s: timed out after %u s\n", t->name,
               hvt_ms(t->timeout_s * 1000) / 1000);
        return FAILED;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("ok %s\n", t->name);
        return PASSED;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == HVT_SKIP) {
        printf("skip %s: %s\n", t->name, reason);
        return SKIPPED;
    }
    if (reason[0] == '\0') {
        if (WIFSIGNALED(status))
            snprintf(reason, sizeof(reason), "killed by signal %d",
                     WTERMSIG(status));
        else
            snprintf(reason, sizeof(reason),
                     "exit status %d (valgrind errors?)", WEXITSTATUS(status));
    }
    printf("FAIL %s: %s\n", t->name, reason);
    return FAILED;
}

static const struct test *find_test(const char *name)
{
    for (size_t i = 0; i < N_TESTS; i++)
        if (strcmp(tests[i].name, name) == 0)
            return &tests[i];
    return NULL;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: hostd-hv-tests [--list] [--no-fork] [TEST...]\n"
                "Runs the named tests (all without names), each in a child\n"
                "process; prints ok NAME, skip NAME: why, FAIL NAME: why.\n"
                "Exit: 0 passed, 1 a test failed, 77 all skipped.\n"
                "--no-fork runs one test in this process (for a debugger).\n");
}

int main(int argc, char **argv)
{
    int counts[3] = {0, 0, 0};
    bool no_fork = false;
    int first = 1;

    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--list") == 0) {
            for (size_t i = 0; i < N_TESTS; i++)
                printf("%s\n", tests[i].name);
            return 0;
        } else if (strcmp(argv[first], "--no-fork") == 0) {
            no_fork = true;
        } else {
            usage(strcmp(argv[first], "--help") == 0 ? stdout : stderr);
            return strcmp(argv[first], "--help") == 0 ? 0 : 2;
        }
    }
    for (int i = first; i < argc; i++) {
        if (find_test(argv[i]) == NULL) {
            fprintf(stderr, "hostd-hv-tests: no test %s (see --list)\n",
                    argv[i]);
            return 2;
        }
    }
    if (no_fork) {
        if (argc - first != 1) {
            usage(stderr);
            return 2;
        }
        find_test(argv[first])->fn();
        printf("ok %s\n", argv[first]);
        return 0;
    }
    if (first == argc) {
        for (size_t i = 0; i < N_TESTS; i++)
            counts[run_forked(&tests[i])]++;
    } else {
        for (int i = first; i < argc; i++)
            counts[run_forked(find_test(argv[i]))]++;
    }
    printf("hostd-hv: %d passed, %d failed, %d skipped\n", counts[PASSED],
           counts[FAILED], counts[SKIPPED]);
    if (counts[FAILED] > 0)
        return 1;
    return counts[PASSED] == 0 && counts[SKIPPED] > 0 ? HVT_SKIP : 0;
}
