/* crane-guestd's and cranectl's leveled logging to stderr. */
#ifndef GD_LOG_H
#define GD_LOG_H

enum gd_log_level { GD_LOG_ERROR, GD_LOG_WARN, GD_LOG_INFO, GD_LOG_DEBUG };

/* Names the component in every line (crane-guestd, cranectl). */
void gd_log_init(const char *component);
/* Sets the level from NAME (error|warn|info|debug); returns 0 or -EINVAL. */
int gd_log_set_level(const char *name);
int gd_log_enabled(enum gd_log_level level);
void gd_log(enum gd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define GD_ERROR(...) gd_log(GD_LOG_ERROR, __VA_ARGS__)
#define GD_WARN(...) gd_log(GD_LOG_WARN, __VA_ARGS__)
#define GD_INFO(...) gd_log(GD_LOG_INFO, __VA_ARGS__)
#define GD_DEBUG(...)                                                        \
    do {                                                                     \
        if (gd_log_enabled(GD_LOG_DEBUG))                                    \
            gd_log(GD_LOG_DEBUG, __VA_ARGS__);                               \
    } while (0)

#endif /* GD_LOG_H */
