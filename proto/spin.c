/* Bounded busy-waiting for a peer's answer on a socket. */
#include "spin.h"

#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SPIN_MAX_US 10000

long crn_spin_default_us(void)
{
    return sysconf(_SC_NPROCESSORS_ONLN) > 2 ? 50 : 0;
}

long crn_spin_us_from_env(const char *env)
{
    const char *v = getenv(env);
    char *end;
    long us;

    if (!v || !*v)
        return crn_spin_default_us();
    errno = 0;
    us = strtol(v, &end, 10);
    if (errno || *end || us < 0 || us > SPIN_MAX_US) {
        CRN_WARN("ignoring %s=%s (0 to %d microseconds)", env,
                v, SPIN_MAX_US);
        return crn_spin_default_us();
    }
    return us;
}

static long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

bool crn_spin_readable(int fd, long spin_ns, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    long until = spin_ns > 0 ? now_ns() + spin_ns : 0;
    int rc;

    while (until) {
        rc = poll(&p, 1, 0);
        if (rc > 0)
            return true;
        if (rc < 0 && errno != EINTR)
            return true;    /* the read that follows says what is wrong */
        if (now_ns() >= until)
            break;
    }
    do
        rc = poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    return rc != 0;
}
