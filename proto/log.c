/* The one leveled logger of every crane program: one line per record. */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Process-wide like stderr itself; set once at start-up. */
static atomic_int log_level = CRN_LOG_INFO;
static enum crn_log_format log_format = CRN_LOG_TEXT;
static int log_with_pid;
static FILE *log_out;           /* CRANE_LOG_FILE, else NULL: stderr */
static char log_component[32] = "crane";

static const char *const level_names[] = {"error", "warn", "info", "debug"};
/* syslog priorities (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG). */
static const int level_priorities[] = {3, 4, 6, 7};

static void set_component(const char *component)
{
    if (component)
        snprintf(log_component, sizeof(log_component), "%s", component);
}

enum crn_log_format crn_log_format_for(int fd, const char *journal_stream)
{
    uintmax_t dev, ino;
    struct stat st;
    int end = 0;

    if (!journal_stream ||
        sscanf(journal_stream, "%ju:%ju%n", &dev, &ino, &end) != 2 ||
        journal_stream[end] != '\0' || fstat(fd, &st) < 0)
        return CRN_LOG_TEXT;
    return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino
               ? CRN_LOG_JOURNAL
               : CRN_LOG_TEXT;
}

void crn_log_init(const char *component)
{
    set_component(component);
    log_format = crn_log_format_for(STDERR_FILENO, getenv("JOURNAL_STREAM"));
}

void crn_log_init_cli(const char *component)
{
    set_component(component);
    atomic_store(&log_level, CRN_LOG_WARN);
    log_format = crn_log_format_for(STDERR_FILENO, getenv("JOURNAL_STREAM"))
                         == CRN_LOG_JOURNAL
                     ? CRN_LOG_JOURNAL
                     : CRN_LOG_CLI;
}

void crn_log_init_env(const char *component)
{
    const char *level = getenv("CRANE_LOG_LEVEL");
    const char *file = getenv("CRANE_LOG_FILE");

    crn_log_init(component);
    log_with_pid = 1;
    atomic_store(&log_level, CRN_LOG_WARN);
    if (level)
        crn_log_set_level(level);
    if (file && *file && !log_out) {
        log_out = fopen(file, "ae");
        if (log_out) {
            setvbuf(log_out, NULL, _IOLBF, 0);
            log_format = CRN_LOG_TEXT;
        }
    }
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

size_t crn_log_prefix(char *buf, size_t size, enum crn_log_format format,
                      enum crn_log_level level, const char *component,
                      int pid, const struct timespec *ts)
{
    char who[48];
    int n;

    if (pid >= 0)
        snprintf(who, sizeof(who), "%s[%d]", component, pid);
    else
        snprintf(who, sizeof(who), "%s", component);
    switch (format) {
    case CRN_LOG_JOURNAL:
        n = snprintf(buf, size, "<%d>%s %s: ", level_priorities[level], who,
                     level_names[level]);
        break;
    case CRN_LOG_CLI:
        n = snprintf(buf, size, "%s: ", who);
        break;
    default:
        n = snprintf(buf, size, "%ld.%03ld %s %s: ", (long)ts->tv_sec,
                     ts->tv_nsec / 1000000, who, level_names[level]);
    }
    if (n < 0)
        n = 0;
    return (size_t)n < size ? (size_t)n : size ? size - 1 : 0;
}

static void log_line(enum crn_log_format format, enum crn_log_level level,
                     const char *fmt, va_list ap)
{
    char line[1024];
    struct timespec ts;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    n = crn_log_prefix(line, sizeof(line), format, level, log_component,
                       log_with_pid ? (int)getpid() : -1, &ts);
    vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    /* A cut record still ends its line. */
    n = strlen(line);
    if (n == sizeof(line) - 1)
        n--;
    line[n] = '\n';
    line[n + 1] = '\0';
    /* One fputs per record keeps lines whole across threads. */
    fputs(line, log_out ? log_out : stderr);
}

void crn_log(enum crn_log_level level, const char *fmt, ...)
{
    va_list ap;

    if (!crn_log_enabled(level))
        return;
    va_start(ap, fmt);
    log_line(log_format, level, fmt, ap);
    va_end(ap);
}

void crn_log_say(enum crn_log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_line(log_format == CRN_LOG_JOURNAL ? CRN_LOG_JOURNAL : CRN_LOG_CLI,
             level, fmt, ap);
    va_end(ap);
}

int crn_usage_error(const char *fmt, const char *arg)
{
    char what[512];

    snprintf(what, sizeof(what), fmt, arg);
    crn_log_say(CRN_LOG_ERROR, "%s (see --help)", what);
    return 2;
}
