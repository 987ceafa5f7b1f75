/* crane-proxy's leveled logging to stderr, one line per record. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int log_level = PX_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int px_log_set_level(const char *name)
{
    for (int i = 0; i <= PX_LOG_DEBUG; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            atomic_store(&log_level, i);
            return 0;
        }
    }
    return -EINVAL;
}

int px_log_enabled(enum px_log_level level)
{
    return (int)level <= atomic_load(&log_level);
}

void px_log(enum px_log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    va_list ap;
    int n;

    if (!px_log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof(line), "%ld.%03ld crane-proxy %s: ",
                 (long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per record keeps lines whole across threads. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, stderr);
}
