/* The remote wire's calls by oneof case: names and flags from the rows. */
#include "proto/remote_calls.h"

#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    [CRANE__CLIENT_MESSAGE__MSG_##CASE] = {#field, flags},
static const struct crn_remote_call calls[] = {
#include "proto/remote_calls.def"
};
#undef CRN_REMOTE_CALL

#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) +1
static const size_t n_rows = 0
#include "proto/remote_calls.def"
    ;
#undef CRN_REMOTE_CALL

const struct crn_remote_call *crn_remote_call(int msg_case)
{
    if (msg_case < 0 || (size_t)msg_case >= sizeof(calls) / sizeof(calls[0]) ||
        !calls[msg_case].name)
        return NULL;
    return &calls[msg_case];
}

const char *crn_remote_call_name(int msg_case)
{
    const struct crn_remote_call *c = crn_remote_call(msg_case);

    return c ? c->name : "?";
}

int crn_remote_call_is(int msg_case, unsigned flags)
{
    const struct crn_remote_call *c = crn_remote_call(msg_case);

    return c && (c->flags & flags) == flags;
}

size_t crn_remote_call_count(void)
{
    return n_rows;
}
