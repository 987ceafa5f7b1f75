/* crane-guestd's and cranectl's leveled logging to stderr, one line each. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int log_level = GD_LOG_INFO;
static char log_component[32] = "crane-guestd";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gd_log_init(const char *component)
{
    snprintf(log_component, sizeof(log_component), "%s", component);
}

int gd_log_set_level(const char *name)
{
    for (int i = 0; i <= GD_LOG_DEBUG; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            log_level = i;
            return 0;
        }
    }
    return -EINVAL;
}

int gd_log_enabled(enum gd_log_level level)
{
    return (int)level <= log_level;
}

void gd_log(enum gd_log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    va_list ap;
    int n;

    if (!gd_log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof(line), "%ld.%03ld %s %s: ", (long)ts.tv_sec,
                 ts.tv_nsec / 1000000, log_component, level_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per record keeps lines whole. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, stderr);
}
