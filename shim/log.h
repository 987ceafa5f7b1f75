/* The shim's logging: the shared logger (proto/log.h) under short names. */
#ifndef CRANE_LOG_H
#define CRANE_LOG_H

#include "proto/log.h"

#define LOG_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                           \
    do {                                         \
        if (crn_log_enabled(CRN_LOG_DEBUG))      \
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
