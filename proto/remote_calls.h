/* The remote wire's calls by oneof case, from the rows of remote_calls.def. */
#ifndef CRANE_PROTO_REMOTE_CALLS_H
#define CRANE_PROTO_REMOTE_CALLS_H

#include "proto/remote.pb-c.h"

#include <stddef.h>

/* A row's flags (remote_calls.def). */
#define CRN_CALL_LIGHT 1u        /* never waits for the device */
#define CRN_CALL_UNTIMED 2u      /* long by nature (builds) */

struct crn_remote_call {
    const char *name;            /* the oneof field's name, e.g. "sync" */
    unsigned flags;
};

/* The row of MSG_CASE, or NULL for a case no row names (not set, or
 * unknown to this build). */
const struct crn_remote_call *crn_remote_call(int msg_case);
/* The name of MSG_CASE's field for logs: "?" when no row names it. */
const char *crn_remote_call_name(int msg_case);
/* Whether MSG_CASE's row has every bit of FLAGS. */
int crn_remote_call_is(int msg_case, unsigned flags);
/* How many rows the table has (for the test that checks it against the
 * schema). */
size_t crn_remote_call_count(void);

#endif /* CRANE_PROTO_REMOTE_CALLS_H */
