/* crane-proxy's logging: the shared logger (proto/log.h) under short names. */
#ifndef PX_LOG_H
#define PX_LOG_H

#include "proto/log.h"

#define PX_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)
#define PX_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)
#define PX_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)
#define PX_DEBUG(...)                                                        \
    do {                                                                     \
        if (crn_log_enabled(CRN_LOG_DEBUG))                                  \
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__);                             \
    } while (0)

#endif /* PX_LOG_H */
