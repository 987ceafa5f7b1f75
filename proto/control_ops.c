/* The control protocol's operations by Op: names and hops from the rows. */
#include "proto/control_ops.h"

#include <string.h>

#define CRN_CTL_HOST_HOST(OP) CRANE__CONTROL__HOST_MESSAGE__MSG_##OP
#define CRN_CTL_HOST_NONE(OP) CRANE__CONTROL__HOST_MESSAGE__MSG__NOT_SET
#define CRN_CTL_SHIM_SHIM(OP) CRANE__CONTROL__DAEMON_MESSAGE__MSG_##OP
#define CRN_CTL_SHIM_NONE(OP) CRANE__CONTROL__DAEMON_MESSAGE__MSG__NOT_SET

#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec)         \
    [CRANE__CONTROL__OP__OP_##OP] = {#name, CRN_CTL_HOST_##host(OP),        \
                                     CRN_CTL_SHIM_##shim(OP)},
static const struct crn_control_op ops[] = {
#include "proto/control_ops.def"
};
#undef CRN_CONTROL_OP

#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec) +1
static const size_t n_rows = 0
#include "proto/control_ops.def"
    ;
#undef CRN_CONTROL_OP

const struct crn_control_op *crn_control_op(int op)
{
    if (op < 0 || (size_t)op >= sizeof(ops) / sizeof(ops[0]) ||
        !ops[op].name)
        return NULL;
    return &ops[op];
}

const char *crn_control_op_name(int op)
{
    const struct crn_control_op *o = crn_control_op(op);

    return o ? o->name : "?";
}

Crane__Control__Op crn_control_op_by_name(const char *name)
{
    for (size_t i = 0; name && i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i].name && strcmp(ops[i].name, name) == 0 &&
            ops[i].host_case != CRANE__CONTROL__HOST_MESSAGE__MSG__NOT_SET)
            return (Crane__Control__Op)i;
    return CRANE__CONTROL__OP__OP_NONE;
}

Crane__Control__Op crn_control_op_of_host(int msg_case)
{
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i].name &&
            ops[i].host_case != CRANE__CONTROL__HOST_MESSAGE__MSG__NOT_SET &&
            (int)ops[i].host_case == msg_case)
            return (Crane__Control__Op)i;
    return CRANE__CONTROL__OP__OP_NONE;
}

size_t crn_control_op_count(void)
{
    return n_rows;
}
