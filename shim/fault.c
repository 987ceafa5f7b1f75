/* Test hooks for tests/fault: make a switch fail, or stop, at a named step.
 *
 * CRANE_TEST_FAIL_AT=STEP[:N][@K] fails the N-th time (default the first)
 * switch number K (default 1; parks and unparks count) reaches STEP, as if
 * that step's transfer or rebuild had failed; K may be '*' (every
 * switch), and N '*' (every visit).  CRANE_TEST_STOP_AT=STEP[:N][@K] stops there instead:
 * the shim creates CRANE_TEST_STOP_FILE and waits (at most
 * CRANE_REHOME_TIMEOUT_MS) until the test removes it, so that the test can
 * kill or freeze the proxy, the daemon or the program at exactly that
 * point.  Steps: prebuild (gate open; a failure only stops making
 * kernels ahead), finish, extract, extract-done, release, dlopen and
 * platforms (native.c, each vendor's load), devices (the binding), load,
 * rebuild (rebuild-context, rebuild-queue: at those kinds only), args,
 * reinject, reinject-done (docs/fault.md lists where each is).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define MAX_STEPS 32

static struct {
    pthread_mutex_t lock;
    unsigned long which;         /* the switch under way, from 1 */
    const char *names[MAX_STEPS];
    unsigned long counts[MAX_STEPS];
} reached = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* How often STEP was reached so far, this time included. */
static unsigned long count(const char *step)
{
    unsigned long n = 0;

    pthread_mutex_lock(&reached.lock);
    for (int i = 0; i < MAX_STEPS; i++) {
        if (!reached.names[i])
            reached.names[i] = step;
        if (strcmp(reached.names[i], step) == 0) {
            n = ++reached.counts[i];
            break;
        }
    }
    pthread_mutex_unlock(&reached.lock);
    return n;
}

/* A new switch begins: visits count from zero again. */
void shim_fault_switch(unsigned long which)
{
    pthread_mutex_lock(&reached.lock);
    reached.which = which;
    memset(reached.counts, 0, sizeof(reached.counts));
    pthread_mutex_unlock(&reached.lock);
}

/* Whether SPEC ("STEP[:N][@K]") names this visit to STEP. */
static bool names(const char *spec, const char *step, unsigned long n)
{
    size_t len = strlen(step);
    unsigned long want = 1, which = 1;
    const char *p;
    char *end;

    if (!spec || strncmp(spec, step, len) != 0)
        return false;
    p = spec + len;
    bool any = false;            /* ":*": every visit */
    if (*p == ':' && p[1] == '*') {
        any = true;
        p += 2;
    } else if (*p == ':') {
        want = strtoul(p + 1, &end, 10);
        p = end;
    }
    if (*p == '@') {
        if (p[1] == '*' && p[2] == '\0')
            return any || n == want;
        which = strtoul(p + 1, &end, 10);
        p = end;
    }
    return *p == '\0' && (any || n == want) && which == reached.which;
}

static void stop_here(const char *step)
{
    const char *file = shim_config.test_stop_file;
    double until = shim_now() + shim_config.rehome_timeout_ms / 1e3;
    int fd;

    if (!file) {
        CRN_WARN("test hook: CRANE_TEST_STOP_AT=%s without "
                 "CRANE_TEST_STOP_FILE; not stopping", step);
        return;
    }
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        CRN_WARN("test hook: cannot create %s", file);
        return;
    }
    if (write(fd, step, strlen(step)) < 0 || write(fd, "\n", 1) < 0)
        CRN_WARN("test hook: cannot write %s", file);
    close(fd);
    CRN_INFO("test hook: stopped at %s until %s is removed", step, file);
    while (access(file, F_OK) == 0 && shim_now() < until)
        usleep(2000);
    CRN_INFO("test hook: going on after %s", step);
}

int shim_fault_at(const char *step)
{
    unsigned long n;

    if (SHIM_LIKELY(!shim_config.test_fail_at && !shim_config.test_stop_at))
        return 0;
    n = count(step);
    if (names(shim_config.test_stop_at, step, n))
        stop_here(step);
    if (names(shim_config.test_fail_at, step, n)) {
        CRN_ERROR("test hook: failing the switch at %s (visit %lu)", step, n);
        return -EIO;
    }
    return 0;
}
