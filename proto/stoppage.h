/* A program's stoppage from the times its shim reports (control.proto). */
#ifndef CRANE_PROTO_STOPPAGE_H
#define CRANE_PROTO_STOPPAGE_H

#include "proto/control.pb-c.h"

/*
 * Seconds the program's OpenCL calls were held by one command.  Coming back
 * from stop-and-copy the shim reports the unpark in `total` and the time
 * its calls waited since the park in `block` (longer than the unpark): the
 * calls were held for both.  0 for NULL.
 */
double crn_held_seconds(const Crane__Control__StepTimes *t);

#endif /* CRANE_PROTO_STOPPAGE_H */
