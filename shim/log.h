/* Leveled logging for every crane component. */
#ifndef CRANE_LOG_H
#define CRANE_LOG_H

enum crn_log_level { CRN_LOG_ERROR, CRN_LOG_WARN, CRN_LOG_INFO, CRN_LOG_DEBUG };

/* Reads CRANE_LOG_LEVEL (error|warn|info|debug) and CRANE_LOG_FILE once. */
void crn_log_init(const char *component);
int crn_log_enabled(enum crn_log_level level);
void crn_log(enum crn_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define LOG_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                       \
    do {                                     \
        if (crn_log_enabled(CRN_LOG_DEBUG))  \
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
