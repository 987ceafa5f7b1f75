/* Leveled logging to stderr, one line per record: every crane daemon's. */
#ifndef CRANE_PROTO_LOG_H
#define CRANE_PROTO_LOG_H

enum crn_log_level { CRN_LOG_ERROR, CRN_LOG_WARN, CRN_LOG_INFO, CRN_LOG_DEBUG };

/* Names the program in every line ("crane-hostd"; "crane" until set). */
void crn_log_init(const char *component);
/* Sets the level from NAME (error|warn|info|debug); returns 0 or -EINVAL. */
int crn_log_set_level(const char *name);
int crn_log_enabled(enum crn_log_level level);
/* "SECONDS.MS COMPONENT LEVEL: MESSAGE", one write per line, so lines from
 * several threads never mix. */
void crn_log(enum crn_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* CRANE_PROTO_LOG_H */
