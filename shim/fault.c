/* Test hooks for tests/fault: make a switch fail, or stop, at a named step.
 *
 * CRANE_TEST_FAIL_AT=STEP[:N] fails the N-th time (default the first) a
 * switch reaches STEP in this process, as if that step's transfer or
 * rebuild had failed.  CRANE_TEST_STOP_AT=STEP[:N] stops there instead:
 * the shim creates CRANE_TEST_STOP_FILE and waits (at most
 * CRANE_REHOME_TIMEOUT_MS) until the test removes it, so that the test can
 * kill or freeze the proxy, the daemon or the program at exactly that
 * point.  Steps: finish, extract, extract-done, release, load, rebuild,
 * args, reinject, reinject-done (docs/fault.md lists where each is).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "shim.h"

#define MAX_STEPS 16

static struct {
    pthread_mutex_t lock;
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

/* Whether SPEC ("STEP" or "STEP:N") names this visit to STEP. */
static bool names(const char *spec, const char *step, unsigned long n)
{
    size_t len = strlen(step);
    unsigned long want = 1;

    if (!spec || strncmp(spec, step, len) != 0)
        return false;
    if (spec[len] == ':')
        want = strtoul(spec + len + 1, NULL, 10);
    else if (spec[len] != '\0')
        return false;
    return n == want;
}

static void stop_here(const char *step)
{
    const char *file = shim_config.test_stop_file;
    double until = shim_now() + shim_config.rehome_timeout_ms / 1e3;
    int fd;

    if (!file) {
        LOG_WARN("test hook: CRANE_TEST_STOP_AT=%s without "
                 "CRANE_TEST_STOP_FILE; not stopping", step);
        return;
    }
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        LOG_WARN("test hook: cannot create %s", file);
        return;
    }
    if (write(fd, step, strlen(step)) < 0 || write(fd, "\n", 1) < 0)
        LOG_WARN("test hook: cannot write %s", file);
    close(fd);
    LOG_INFO("test hook: stopped at %s until %s is removed", step, file);
    while (access(file, F_OK) == 0 && shim_now() < until)
        usleep(2000);
    LOG_INFO("test hook: going on after %s", step);
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
        LOG_ERROR("test hook: failing the switch at %s (visit %lu)", step, n);
        return -EIO;
    }
    return 0;
}
