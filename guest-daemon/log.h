/* crane-guestd's and cranectl's logging: the shared logger (proto/log.h) under short names. */
#ifndef GD_LOG_H
#define GD_LOG_H

#include "proto/log.h"

#define GD_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)
#define GD_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)
#define GD_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)
#define GD_DEBUG(...)                                                        \
    do {                                                                     \
        if (crn_log_enabled(CRN_LOG_DEBUG))                                  \
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__);                             \
    } while (0)

#endif /* GD_LOG_H */
