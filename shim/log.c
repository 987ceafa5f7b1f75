/* Leveled logging to stderr or CRANE_LOG_FILE, one line per record. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static int log_level = CRN_LOG_WARN;
static FILE *log_out;
static char log_component[32] = "crane";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void crn_log_init(const char *component)
{
    const char *lvl = getenv("CRANE_LOG_LEVEL");
    const char *file = getenv("CRANE_LOG_FILE");

    if (component)
        snprintf(log_component, sizeof(log_component), "%s", component);
    if (lvl)
        for (int i = 0; i <= CRN_LOG_DEBUG; i++)
            if (strcasecmp(lvl, level_names[i]) == 0)
                log_level = i;
    if (file && *file && !log_out) {
        log_out = fopen(file, "ae");
        if (log_out)
            setvbuf(log_out, NULL, _IOLBF, 0);
    }
}

int crn_log_enabled(enum crn_log_level level)
{
    return (int)level <= log_level;
}

void crn_log(enum crn_log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    va_list ap;
    int n;

    if ((int)level > log_level)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof(line), "%ld.%03ld %s[%d] %s: ", (long)ts.tv_sec,
                 ts.tv_nsec / 1000000, log_component, (int)getpid(),
                 level_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per record keeps lines whole across threads. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, log_out ? log_out : stderr);
}
