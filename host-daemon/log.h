/* crane-hostd's leveled logging to stderr, one line per record. */
#ifndef HD_LOG_H
#define HD_LOG_H

enum hd_log_level { HD_LOG_ERROR, HD_LOG_WARN, HD_LOG_INFO, HD_LOG_DEBUG };

/* Sets the level from NAME (error|warn|info|debug); returns 0 or -EINVAL. */
int hd_log_set_level(const char *name);
int hd_log_enabled(enum hd_log_level level);
void hd_log(enum hd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define HD_ERROR(...) hd_log(HD_LOG_ERROR, __VA_ARGS__)
#define HD_WARN(...) hd_log(HD_LOG_WARN, __VA_ARGS__)
#define HD_INFO(...) hd_log(HD_LOG_INFO, __VA_ARGS__)
#define HD_DEBUG(...)                                                        \
    do {                                                                     \
        if (hd_log_enabled(HD_LOG_DEBUG))                                    \
            hd_log(HD_LOG_DEBUG, __VA_ARGS__);                               \
    } while (0)

#endif /* HD_LOG_H */
