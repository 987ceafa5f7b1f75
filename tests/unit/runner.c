/* The test runner: runs list.h's tests, each forked with a limit on time without progress. */
#include "runner.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 30
/* A test's limit counts seconds in which it ran (or waited to run) less
 * than this percentage of the time (tests/wait.sh's rule); in all it may
 * run this many times its limit. */
#define PROGRESS_PCT 5
#define CAP_FACTOR 10
#define REASON_MAX 512
/* How much of a string or of a byte range a failure message quotes. */
#define QUOTE_MAX 48

#define TEST_ENTRY(name) void test_##name(void);
#define TEST_TIMED(name, seconds) void test_##name(void);
#include "list.h"
#undef TEST_ENTRY
#undef TEST_TIMED

struct test_entry {
    const char *name;
    void (*fn)(void);
    long timeout_s;              /* 0: the default */
};

/* Ends with a NULL row so that an empty list still compiles. */
static const struct test_entry tests[] = {
#define TEST_ENTRY(name) {#name, test_##name, 0},
#define TEST_TIMED(name, seconds) {#name, test_##name, seconds},
#include "list.h"
#undef TEST_ENTRY
#undef TEST_TIMED
    {NULL, NULL, 0},
};

/* This program's name, for its messages. */
static const char *prog = "unit-tests";

/* A skipped test's exit status, automake's convention. */
#define SKIP_STATUS 77

/*
 * The state of the test being run.  The framework is inherently
 * process-wide: assertion macros take no context argument, so it lives here.
 */
static struct {
    jmp_buf jump;           /* where a failed assertion returns to */
    int running;            /* a test body is on the stack */
    int skipped;            /* it ended through runner_skip */
    void (*on_fail)(void *arg);  /* runner_on_fail */
    void *on_fail_arg;
    pthread_t thread;       /* the thread running the body */
    int reason_fd;          /* forked child: pipe to the parent, else -1 */
    char reason[REASON_MAX];
} current = {.reason_fd = -1};

/* Writes S into OUT as a C literal, shortened to QUOTE_MAX characters. */
static void quote_str(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    size_t i;

    if (s == NULL) {
        snprintf(out, cap, "NULL");
        return;
    }
    n += (size_t)snprintf(out + n, cap - n, "\"");
    for (i = 0; s[i] != '\0' && n + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i == QUOTE_MAX) {
            n += (size_t)snprintf(out + n, cap - n, "...");
            break;
        }
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, cap - n, "\\%c", c);
        else if (isprint(c))
            n += (size_t)snprintf(out + n, cap - n, "%c", c);
        else
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
    }
    snprintf(out + n, cap - n, "\"");
}

/* Writes up to QUOTE_MAX / 3 bytes of P, from FROM on, as hex into OUT. */
static void quote_mem(char *out, size_t cap, const unsigned char *p,
                      size_t from, size_t len)
{
    size_t n = 0;
    size_t i;

    out[0] = '\0';
    for (i = from; i < len && i < from + QUOTE_MAX / 3 && n + 8 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%02x", i > from ? " " : "",
                              p[i]);
    if (i < len)
        snprintf(out + n, cap - n, " ...");
}

noreturn void runner_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(current.reason, sizeof(current.reason), "%s:%d: ", file,
                 line);
    if (n < 0 || (size_t)n >= sizeof(current.reason))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(current.reason + n, sizeof(current.reason) - (size_t)n, fmt,
              ap);
    va_end(ap);
    if (current.on_fail != NULL) {
        void (*fn)(void *arg) = current.on_fail;

        current.on_fail = NULL; /* a failure inside it must not loop */
        fn(current.on_fail_arg);
    }

    if (current.running && pthread_equal(current.thread, pthread_self())) {
        current.running = 0;
        longjmp(current.jump, 1);
    }
    /* Outside the test's thread nothing can be unwound: end the process. */
    fprintf(stderr, "%s (outside the test's thread)\n", current.reason);
    if (current.reason_fd >= 0) {
        ssize_t w = write(current.reason_fd, current.reason,
                          strlen(current.reason));
        (void)w;
        _exit(1);
    }
    abort();
}

noreturn void runner_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(current.reason, sizeof(current.reason), fmt, ap);
    va_end(ap);
    current.skipped = 1;
    /* In its own process a skip ends it at once, as the test left it (what
     * it allocated is still referenced, not lost, for valgrind). */
    if (current.reason_fd < 0 && current.running &&
        pthread_equal(current.thread, pthread_self())) {
        current.running = 0;
        longjmp(current.jump, 1);
    }
    if (current.reason_fd >= 0) {
        fflush(stdout);
        fflush(stderr);
        ssize_t w = write(current.reason_fd, current.reason,
                          strlen(current.reason));
        (void)w;
    } else {
        fprintf(stderr, "skip: %s (outside the test's thread)\n",
                current.reason);
    }
    _exit(SKIP_STATUS);
}

void runner_on_fail(void (*fn)(void *arg), void *arg)
{
    current.on_fail = fn;
    current.on_fail_arg = arg;
}

unsigned runner_ms(unsigned ms)
{
    const char *slow = getenv("CRANE_TEST_SLOW");
    long factor;

    if (slow == NULL || *slow == '\0')
        slow = getenv("HVT_SLOW");
    factor = slow != NULL ? strtol(slow, NULL, 10) : 1;
    return factor > 1 && factor < 1000 ? ms * (unsigned)factor : ms;
}

void runner_assert_eq(const char *file, int line, const char *expr_a,
                      const char *expr_b, intmax_t a, intmax_t b)
{
    if (a == b)
        return;
    runner_fail(file, line,
                "ASSERT_EQ(%s, %s) failed: %" PRIdMAX " (0x%" PRIxMAX
                ") != %" PRIdMAX " (0x%" PRIxMAX ")",
                expr_a, expr_b, a, (uintmax_t)a, b, (uintmax_t)b);
}

void runner_assert_str_eq(const char *file, int line, const char *expr_a,
                          const char *expr_b, const char *a, const char *b)
{
    char qa[QUOTE_MAX * 4 + 16];
    char qb[QUOTE_MAX * 4 + 16];

    if (a == b || (a != NULL && b != NULL && strcmp(a, b) == 0))
        return;
    quote_str(qa, sizeof(qa), a);
    quote_str(qb, sizeof(qb), b);
    runner_fail(file, line, "ASSERT_STR_EQ(%s, %s) failed: %s != %s", expr_a,
                expr_b, qa, qb);
}

void runner_assert_mem_eq(const char *file, int line, const char *expr_a,
                          const char *expr_b, const void *a, const void *b,
                          size_t len)
{
    const unsigned char *pa = a;
    const unsigned char *pb = b;
    char qa[QUOTE_MAX * 2];
    char qb[QUOTE_MAX * 2];
    size_t i;

    if (len == 0 || a == b)
        return;
    if (a == NULL || b == NULL)
        runner_fail(file, line, "ASSERT_MEM_EQ(%s, %s, %zu) failed: %s is NULL",
                    expr_a, expr_b, len, a == NULL ? expr_a : expr_b);
    for (i = 0; i < len && pa[i] == pb[i]; i++)
        ;
    if (i == len)
        return;
    quote_mem(qa, sizeof(qa), pa, i, len);
    quote_mem(qb, sizeof(qb), pb, i, len);
    runner_fail(file, line,
                "ASSERT_MEM_EQ(%s, %s, %zu) failed at offset %zu: %s != %s",
                expr_a, expr_b, len, i, qa, qb);
}

/* Runs T's body in this process; returns 0, SKIP_STATUS, or -1 with
 * current.reason set. */
static int run_body(const struct test_entry *t)
{
    current.reason[0] = '\0';
    current.skipped = 0;
    current.on_fail = NULL;
    if (setjmp(current.jump) != 0) {
        current.on_fail = NULL;
        return current.skipped ? SKIP_STATUS : -1;
    }
    current.thread = pthread_self();
    current.running = 1;
    t->fn();
    current.running = 0;
    current.on_fail = NULL;
    return 0;
}

/* Milliseconds the threads of process PID ran or waited on a run queue
 * (/proc/PID/task/TID/schedstat): a test starved on a loaded machine waits
 * to run, a hung one does neither; -1 when it cannot be read. */
static long run_ms(pid_t pid)
{
    char path[320], buf[128];
    unsigned long long on_cpu, waited, sum = 0;
    struct dirent *e;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    dir = opendir(path);
    if (dir == NULL)
        return -1;
    while ((e = readdir(dir)) != NULL) {
        ssize_t n;
        int fd;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/task/%s/schedstat",
                 (long)pid, e->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* the thread ended meanwhile */
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu", &on_cpu, &waited) == 2)
            sum += on_cpu + waited;
    }
    closedir(dir);
    return (long)(sum / 1000000ULL);
}

static long ms_between(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000L +
           (b->tv_nsec - a->tv_nsec) / 1000000L;
}

/* Progress of the child PID since MARK (its run time MARK_RUN, run_ms()):
 * when it ran or waited to run PROGRESS_PCT of the time or more, MARK
 * moves to NOW; 1 when it moved. */
static int progressed(pid_t pid, struct timespec *mark, long *mark_run,
                      const struct timespec *now)
{
    long run = run_ms(pid), wall_ms = ms_between(mark, now);

    if (run < 0 || run <= *mark_run)
        return 0;
    if ((run - *mark_run) * 100 < wall_ms * PROGRESS_PCT)
        return 0;
    *mark = *now;
    *mark_run = run;
    return 1;
}

/* Waits until the child PID exits or, with TIMEOUT_S (0: no limit), until
 * it made no progress for TIMEOUT_S seconds or ran CAP_FACTOR times that;
 * then kills its group and returns 1 with WHY set.  Returns 0 once it
 * exited (a zombie still, for the caller's waitpid). */
static int wait_limited(pid_t pid, long timeout_s, char *why, size_t cap)
{
    struct timespec start, mark;
    long mark_run = 0;
    sigset_t chld;
    siginfo_t info;
    int timed_out = 0;

    /* SIGCHLD is blocked: it stays pending, and sigtimedwait() picks it up
     * the moment the child exits, with no sleeping or polling. */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    clock_gettime(CLOCK_MONOTONIC, &start);
    mark = start;
    for (;;) {
        struct timespec now;
        /* Progress is looked at every second. */
        struct timespec left = {1, 0};

        /* WNOWAIT keeps the child a zombie, so its process group id cannot
         * be reused before the group is killed below. */
        memset(&info, 0, sizeof(info));
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 &&
            errno != EINTR)
            break; /* cannot happen; waitpid() below still reaps it */
        if (info.si_pid == pid)
            break;
        if (timeout_s == 0) {
            sigwaitinfo(&chld, NULL);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        progressed(pid, &mark, &mark_run, &now);
        if (ms_between(&mark, &now) >= timeout_s * 1000L ||
            ms_between(&start, &now) >= timeout_s * 1000L * CAP_FACTOR) {
            timed_out = 1;
            snprintf(why, cap,
                     "timed out: no progress for %ld s (%ld s in all, cap "
                     "%ld s)", ms_between(&mark, &now) / 1000,
                     ms_between(&start, &now) / 1000, timeout_s * CAP_FACTOR);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        sigtimedwait(&chld, NULL, &left);
    }
    return timed_out;
}

/* Runs T in a forked child of its own process group, ended after TIMEOUT_S
 * seconds in which it made no progress (progressed()) or
 * CAP_FACTOR times that in all (0: no limit); returns 0, SKIP_STATUS with
 * REASON set, or -1 with REASON set. */
static int run_forked(const struct test_entry *t, long timeout_s,
                      const sigset_t *child_mask, char *reason, size_t cap)
{
    char why[160];
    int fds[2];
    int status;
    int timed_out = 0;
    ssize_t n;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(reason, cap, "runner: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        snprintf(reason, cap, "runner: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, child_mask, NULL);
        current.reason_fd = fds[1];
        int rc = run_body(t);
        if (rc != 0) {
            n = write(fds[1], current.reason, strlen(current.reason));
            (void)n;
            fflush(stdout);
            fflush(stderr);
            _exit(rc == SKIP_STATUS ? SKIP_STATUS : 1);
        }
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    /* Also set here, so that the group exists whichever runs first. */
    setpgid(pid, pid);
    close(fds[1]);

    timed_out = wait_limited(pid, timeout_s, why, sizeof(why));
    /* Whatever the test started and left behind goes with it. */
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(reason, cap, "runner: waitpid: %s", strerror(errno));
            close(fds[0]);
            return -1;
        }
    }
    n = read(fds[0], reason, cap - 1);
    reason[n > 0 ? n : 0] = '\0';
    close(fds[0]);

    if (timed_out) {
        snprintf(reason, cap, "%s", why);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS)
        return SKIP_STATUS;
    if (reason[0] != '\0')
        return -1;
    if (WIFEXITED(status))
        snprintf(reason, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(reason, cap, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(reason, cap, "ended with wait status 0x%x", status);
    return -1;
}

/* Reads CRANE_TEST_TIMEOUT; returns seconds (0: no limit) or -1 if bad. */
static long read_timeout(void)
{
    const char *s = getenv("CRANE_TEST_TIMEOUT");
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return DEFAULT_TIMEOUT_S;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > INT_MAX) {
        fprintf(stderr,
                "%s: CRANE_TEST_TIMEOUT must be a whole number of "
                "seconds (0: none), not '%s'\n",
                prog, s);
        return -1;
    }
    return v;
}

static const struct test_entry *find_test(const char *name)
{
    const struct test_entry *t;

    for (t = tests; t->name != NULL; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--list] [--no-fork] [TEST...]\n"
            "Runs every unit test, or the named ones, each in a forked child.\n"
            "  --list     print the names of the tests and exit\n"
            "  --no-fork  run the tests in this process, without a timeout\n"
            "             (for valgrind and gdb)\n"
            "Prints ok - NAME, ok - NAME # SKIP why, not ok - NAME (why);\n"
            "exits 0, 1 when a test failed, 77 when every test skipped.\n"
            "Environment: CRANE_TEST_TIMEOUT=SECONDS per test (default %d, "
            "0: none; a\n"
            "row's own limit wins): seconds in which the test ran (or "
            "waited to run)\n"
            "less than %d%% of the time, at most %d times that in all; "
            "CRANE_TEST_SLOW=N\n"
            "scales limits (valgrind).\n",
            prog, DEFAULT_TIMEOUT_S, PROGRESS_PCT, CAP_FACTOR);
}

int main(int argc, char **argv)
{
    const struct test_entry **selected;
    const struct test_entry *t;
    sigset_t chld;
    sigset_t old_mask;
    char reason[REASON_MAX];
    size_t nselected = 0;
    int passed = 0;
    int failed = 0;
    int skipped = 0;
    int list = 0;
    int no_fork = 0;
    long timeout_s;
    size_t i;
    int a;

    if (argc > 0 && argv[0] != NULL)
        prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    selected = calloc(sizeof(tests) / sizeof(tests[0]) + (size_t)argc,
                      sizeof(*selected));
    if (selected == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 2;
    }
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--list") == 0) {
            list = 1;
        } else if (strcmp(argv[a], "--no-fork") == 0) {
            no_fork = 1;
        } else if (strcmp(argv[a], "--help") == 0 ||
                   strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            free(selected);
            return 0;
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[a]);
            usage(stderr);
            free(selected);
            return 2;
        } else if ((t = find_test(argv[a])) == NULL) {
            fprintf(stderr, "%s: no test named '%s' (see --list)\n", prog,
                    argv[a]);
            free(selected);
            return 2;
        } else {
            selected[nselected++] = t;
        }
    }
    if (list) {
        for (t = tests; t->name != NULL; t++)
            printf("%s\n", t->name);
        free(selected);
        return 0;
    }
    if (nselected == 0)
        for (t = tests; t->name != NULL; t++)
            selected[nselected++] = t;
    timeout_s = read_timeout();
    if (timeout_s < 0) {
        free(selected);
        return 2;
    }

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (!no_fork)
        sigprocmask(SIG_BLOCK, &chld, &old_mask);
    for (i = 0; i < nselected; i++) {
        int rc;

        t = selected[i];
        if (no_fork) {
            rc = run_body(t);
            snprintf(reason, sizeof(reason), "%s", current.reason);
        } else {
            long limit = t->timeout_s && timeout_s ? t->timeout_s : timeout_s;

            if (limit)
                limit = (long)runner_ms((unsigned)limit * 1000) / 1000;
            rc = run_forked(t, limit, &old_mask, reason, sizeof(reason));
        }
        if (rc == 0) {
            passed++;
            printf("ok - %s\n", t->name);
        } else if (rc == SKIP_STATUS) {
            skipped++;
            printf("ok - %s # SKIP %s\n", t->name, reason);
        } else {
            failed++;
            printf("not ok - %s (%s)\n", t->name, reason);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    free(selected);
    if (failed)
        return 1;
    return passed == 0 && skipped > 0 ? SKIP_STATUS : 0;
}
