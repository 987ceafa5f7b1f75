/* Limits on what a client may send, and checking a message against them. */
#ifndef PX_VALIDATE_H
#define PX_VALIDATE_H

#include "bounds.h"
#include "cl.h"

#include "proto/remote.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Checks M's fields against the limits (bounds.h), the shapes the calls need
 * (lists of the right length, pattern sizes, enum values in range, bulk
 * present only where data is written) and what the OpenCL specification
 * allows in each field the vendor gets (flags, properties, image
 * descriptors and formats, partition schemes, queue properties), before
 * anything touches OpenCL.  Returns 0, or the (negative) OpenCL error the
 * specification names for the fault, CL_INVALID_VALUE for a malformed
 * message, with WHY (WHY_LEN bytes) saying what is wrong.
 */
int px_validate(const Crane__ClientMessage *m, char *why, size_t why_len);

struct px_call;

/*
 * validate_dev.c: checks C's call against what only the tenant's objects
 * can tell: the devices' reported capabilities (device-side queues, queue
 * properties, image support, sizes, formats, mipmaps) and the argument
 * kinds the kernel declares (buffer, image, sampler, pipe, __local, value).
 * Runs after px_validate and before the executor.  Returns CL_SUCCESS or
 * the error the specification names, with C's error text set.
 */
cl_int px_validate_call(struct px_call *c);
/* Before an enqueue of kernel K on queue Q, its arguments set: refuses a
 * launch whose __local memory exceeds the device's (PoCL asserts). */
cl_int px_validate_launch(struct px_call *c, cl_command_queue q,
                          cl_kernel k);
/* Build options with -cl-kernel-arg-info added, so that the argument kinds
 * can be checked (malloc()ed; NULL when out of memory). */
char *px_build_options(const char *options);
/* CL_PROGRAM_BUILD_OPTIONS as the client gave them: the LEN bytes (NUL
 * included) at OPTIONS without what px_build_options added; returns the
 * new length (the NUL moved there by the caller). */
size_t px_build_options_seen(const char *options, size_t len);

/* The bulk_len M announces (0 when none). */
uint64_t px_bulk_len(const Crane__ClientMessage *m);

/* A * B * C into *OUT; -EOVERFLOW when it does not fit 64 bits. */
int px_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out);

#endif /* PX_VALIDATE_H */
