/* The control protocol's operations by Op, from the rows of control_ops.def. */
#ifndef CRANE_PROTO_CONTROL_OPS_H
#define CRANE_PROTO_CONTROL_OPS_H

#include "proto/control.pb-c.h"

#include <stdbool.h>
#include <stddef.h>

struct crn_control_op {
    const char *name;            /* "prepare" */
    /* The oneof case it comes as from the host, and to the shims:
     * ..._MSG__NOT_SET where it does not take that hop. */
    Crane__Control__HostMessage__MsgCase host_case;
    Crane__Control__DaemonMessage__MsgCase shim_case;
};

/* The row of OP, or NULL for a value no row names. */
const struct crn_control_op *crn_control_op(int op);
/* OP's name for logs and status: "?" when no row names it. */
const char *crn_control_op_name(int op);
/* The operation the host's command NAME (cranectl's word) asks for:
 * CRANE__CONTROL__OP__OP_NONE when no row of the host hop has that name. */
Crane__Control__Op crn_control_op_by_name(const char *name);
/* The operation a HostMessage of MSG_CASE asks for, or OP_NONE. */
Crane__Control__Op crn_control_op_of_host(int msg_case);
/* How many rows the table has (for the test that checks it against the
 * schema). */
size_t crn_control_op_count(void);

#endif /* CRANE_PROTO_CONTROL_OPS_H */
