/* crane-hostd's leveled logging to stderr, one line per record. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Process-wide like stderr itself; set once at start-up. */
static int log_level = HD_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int hd_log_set_level(const char *name)
{
    for (int i = 0; i <= HD_LOG_DEBUG; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            log_level = i;
            return 0;
        }
    }
    return -EINVAL;
}

int hd_log_enabled(enum hd_log_level level)
{
    return (int)level <= log_level;
}

void hd_log(enum hd_log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    va_list ap;
    int n;

    if (!hd_log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof(line), "%ld.%03ld crane-hostd %s: ",
                 (long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per record keeps lines whole. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, stderr);
}
