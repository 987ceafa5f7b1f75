/* crane-proxy's leveled logging to stderr, one line per record. */
#ifndef PX_LOG_H
#define PX_LOG_H

enum px_log_level { PX_LOG_ERROR, PX_LOG_WARN, PX_LOG_INFO, PX_LOG_DEBUG };

/* Sets the level from NAME (error|warn|info|debug); returns 0 or -EINVAL. */
int px_log_set_level(const char *name);
int px_log_enabled(enum px_log_level level);
void px_log(enum px_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define PX_ERROR(...) px_log(PX_LOG_ERROR, __VA_ARGS__)
#define PX_WARN(...) px_log(PX_LOG_WARN, __VA_ARGS__)
#define PX_INFO(...) px_log(PX_LOG_INFO, __VA_ARGS__)
#define PX_DEBUG(...)                                                        \
    do {                                                                     \
        if (px_log_enabled(PX_LOG_DEBUG))                                    \
            px_log(PX_LOG_DEBUG, __VA_ARGS__);                               \
    } while (0)

#endif /* PX_LOG_H */
