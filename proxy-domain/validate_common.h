/* The checks of crane-proxy's messages shared by validate*.c, for them only. */
#ifndef PX_VALIDATE_COMMON_H
#define PX_VALIDATE_COMMON_H

#include "bounds.h"
#include "cl.h"

#include "proto/remote.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Records why into WHY and returns ERR, the OpenCL error the
 * specification names for the fault. */
int px_bad(cl_int err, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A malformed message: CL_INVALID_VALUE. */
#define BAD(...) px_bad(CL_INVALID_VALUE, why, why_len, __VA_ARGS__)
/* A field the specification refuses with its own error. */
#define REFUSE(err, ...) px_bad(err, why, why_len, __VA_ARGS__)

/* Each check returns 0, or the error with WHY (WHY_LEN bytes) saying what
 * is wrong. */

/* validate_common.c: N property words of WHAT, at most PX_MAX_PROPS, in
 * name/value PAIRS if asked; a list of N entries, at most MAX. */
int px_check_props(size_t n, bool pairs, const char *what, char *why,
                   size_t why_len);
int px_check_list(size_t n, size_t max, const char *what, char *why,
                  size_t why_len);

/* validate_create.c: the fields of a creation the vendor gets. */
int px_check_mem_flags(uint64_t flags, const char *what, char *why,
                       size_t why_len);
int px_check_mem_props(size_t n, const uint64_t *props, const char *what,
                       char *why, size_t why_len);

/* Each SHAPE row's check of proto/remote_calls.def, px_check_FIELD: in
 * validate_create.c for creations of objects with properties (sub-devices,
 * contexts, queues, images, samplers), else in validate.c. */
#define PX_SHAPE_SHAPE(field, Type) \
    int px_check_##field(const Crane__##Type *x, char *why, size_t why_len);
#define PX_SHAPE_NONE(field, Type)
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    PX_SHAPE_##shape(field, Type)
#include "proto/remote_calls.def"
#undef CRN_REMOTE_CALL
#undef PX_SHAPE_SHAPE
#undef PX_SHAPE_NONE

#endif /* PX_VALIDATE_COMMON_H */
