/* The checks of crane-proxy's messages shared by validate*.c, for them only. */
#ifndef PX_VALIDATE_INT_H
#define PX_VALIDATE_INT_H

#include "validate.h"

#include <stdbool.h>

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

/* validate.c: N property words of WHAT, at most PX_MAX_PROPS, in
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
int px_check_image(const Crane__CreateImage *im, char *why, size_t why_len);
int px_check_queue(const Crane__CreateQueue *q, char *why, size_t why_len);
int px_check_sampler(const Crane__CreateSampler *s, char *why,
                     size_t why_len);
int px_check_context(const Crane__CreateContext *cc, char *why,
                     size_t why_len);
int px_check_sub_devices(const Crane__CreateSubDevices *s, char *why,
                         size_t why_len);

#endif /* PX_VALIDATE_INT_H */
