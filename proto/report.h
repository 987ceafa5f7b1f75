/* What reports show: a program's stoppage from its shim's times
 * (control.proto), sizes for people. */
#ifndef CRANE_PROTO_REPORT_H
#define CRANE_PROTO_REPORT_H

#include "proto/control.pb-c.h"

#include <stddef.h>

/*
 * Seconds the program's OpenCL calls were held by one command.  Coming back
 * from stop-and-copy the shim reports the unpark in `total` and the time
 * its calls waited since the park in `block` (longer than the unpark): the
 * calls were held for both.  0 for NULL.
 */
double crn_held_seconds(const Crane__Control__StepTimes *t);

/* B bytes as "12.3MiB" (binary units, one decimal; "512B" below 1 KiB). */
void crn_format_bytes(char *buf, size_t len, unsigned long long b);

#endif /* CRANE_PROTO_REPORT_H */
