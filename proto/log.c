/* Leveled logging to stderr, one line per record: every crane daemon's. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Process-wide like stderr itself; set once at start-up. */
static atomic_int log_level = CRN_LOG_INFO;
static char log_component[32] = "crane";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void crn_log_init(const char *component)
{
    snprintf(log_component, sizeof(log_component), "%s", component);
}

int crn_log_set_level(const char *name)
{
    for (int i = 0; i <= CRN_LOG_DEBUG; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            atomic_store(&log_level, i);
            return 0;
        }
    }
    return -EINVAL;
}

int crn_log_enabled(enum crn_log_level level)
{
    return (int)level <= atomic_load(&log_level);
}

void crn_log(enum crn_log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    va_list ap;
    int n;

    if (!crn_log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof(line), "%ld.%03ld %s %s: ", (long)ts.tv_sec,
                 ts.tv_nsec / 1000000, log_component, level_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per record keeps lines whole across threads. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, stderr);
}
