/* The one leveled logger of every crane program: one line per record. */
#ifndef CRANE_PROTO_LOG_H
#define CRANE_PROTO_LOG_H

#include <stddef.h>
#include <time.h>

/* The order is the filter's: a level shows when it is at most the one set. */
enum crn_log_level { CRN_LOG_ERROR, CRN_LOG_WARN, CRN_LOG_INFO, CRN_LOG_DEBUG };

/*
 * How a line is written, chosen once at start-up:
 *   TEXT     "SECONDS.MS COMPONENT LEVEL: MESSAGE" (the shim writes
 *            "COMPONENT[PID]": many programs share one log file);
 *   JOURNAL  "<N>COMPONENT LEVEL: MESSAGE" when stderr is the journal: N is
 *            the syslog priority (sd-daemon.h: 3 error, 4 warn, 6 info,
 *            7 debug), which journald reads off the line; it stamps the
 *            time itself;
 *   CLI      "COMPONENT: MESSAGE", what a command run by a person prints
 *            (cranectl, crane-migrate); "<N>" first under the journal.
 */
enum crn_log_format { CRN_LOG_TEXT, CRN_LOG_JOURNAL, CRN_LOG_CLI };

/* A daemon: names the program in every line ("crane-hostd"), level info
 * until crn_log_set_level, TEXT or JOURNAL as stderr is. */
void crn_log_init(const char *component);
/* A command for people (cranectl): CLI lines, level warn. */
void crn_log_init_cli(const char *component);
/* The shim: level from CRANE_LOG_LEVEL (error|warn|info|debug, default
 * warn), lines to CRANE_LOG_FILE when set (appended, TEXT), else to stderr
 * as crn_log_init does; every line carries the process id. */
void crn_log_init_env(const char *component);
/* Sets the level from NAME (error|warn|info|debug); returns 0 or -EINVAL. */
int crn_log_set_level(const char *name);
int crn_log_enabled(enum crn_log_level level);
/* One write per line, so lines from several threads never mix. */
void crn_log(enum crn_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A line for the person who started the program, shown at any level: a
 * bad option, why a daemon cannot start.  "COMPONENT: MESSAGE" (CLI), or
 * with its priority when stderr is the journal. */
void crn_log_say(enum crn_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A bad command line: FMT (one %s, for ARG) said as an error with " (see
 * --help)" after it.  Returns 2, the exit status of bad usage in every
 * crane program. */
int crn_usage_error(const char *fmt, const char *arg);

/* JOURNAL when JOURNAL_STREAM (systemd's "DEVICE:INODE" of the stream it
 * gave the service, NULL when unset) names the file FD is, else TEXT. */
enum crn_log_format crn_log_format_for(int fd, const char *journal_stream);
/* The start of a line of FORMAT into BUF (SIZE bytes, NUL-terminated);
 * PID < 0 leaves it out; TS is the record's time.  Returns its length. */
size_t crn_log_prefix(char *buf, size_t size, enum crn_log_format format,
                      enum crn_log_level level, const char *component,
                      int pid, const struct timespec *ts);

/* The one spelling for a line of a fixed level; CRN_DEBUG formats
 * nothing unless debug lines are on. */
#define CRN_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)
#define CRN_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)
#define CRN_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)
#define CRN_DEBUG(...)                                                       \
    do {                                                                     \
        if (crn_log_enabled(CRN_LOG_DEBUG))                                  \
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__);                             \
    } while (0)

#endif /* CRANE_PROTO_LOG_H */
