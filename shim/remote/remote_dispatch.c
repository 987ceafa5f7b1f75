/* The remote backend's dispatch table, expanded from cl_api.def: each row's
 * rc_<name>, or a stub that refuses it with its reason logged once. */
#include <stdatomic.h>
#include <stddef.h>

#include "proto/log.h"
#include "remote.h"

/*
 * A stub answers CL_INVALID_OPERATION: through errcode_ret when its row has
 * one (the parameter shadows this NULL), else as its cl_int result, else as
 * a NULL handle.  Its parameters are the row's, unused.
 */
static cl_int *const errcode_ret = NULL;

static cl_int refused(atomic_flag *once, const char *name, bool local,
                      const char *reason)
{
    if (!atomic_flag_test_and_set(once)) {
        if (local)
            CRN_ERROR("remote: %s reached the remote backend, which it must "
                      "never (%s): answering CL_INVALID_OPERATION",
                      name, reason);
        else
            CRN_WARN("remote: %s is not available remoted: %s "
                     "(CL_INVALID_OPERATION; docs/remoting.md)",
                     name, reason);
    }
    return CL_INVALID_OPERATION;
}

#define RC_STUB(ret, name, params, local, reason)                      \
    static ret CL_API_CALL rc_stub_##name params                       \
    {                                                                  \
        static atomic_flag once_ = ATOMIC_FLAG_INIT;                   \
        cl_int err_ = refused(&once_, #name, local, reason);           \
        if (errcode_ret)                                               \
            *errcode_ret = err_;                                       \
        return (ret) _Generic((ret *)0, cl_int * : err_, default : 0); \
    }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define RC_WHAT RC_STUB_
#define RC_STUB_REMOTE(ret, name, params, reason)
#define RC_STUB_LOCAL(ret, name, params, reason) \
    RC_STUB(ret, name, params, true, reason)
#define RC_STUB_REFUSED(ret, name, params, reason) \
    RC_STUB(ret, name, params, false, reason)
#include "remote_rows.h"
#undef RC_WHAT
#pragma GCC diagnostic pop

/* The table: a row's implementation or its stub, never NULL. */
#define RC_WHAT RC_SLOT_
#define RC_SLOT_REMOTE(ret, name, params, reason) .name = rc_##name,
#define RC_SLOT_LOCAL(ret, name, params, reason) .name = rc_stub_##name,
#define RC_SLOT_REFUSED(ret, name, params, reason) .name = rc_stub_##name,
const struct _cl_icd_dispatch shim_remote_dispatch = {
#include "remote_rows.h"
};
#undef RC_WHAT

/* The rows with what happens to them, for tests and the documentation. */
#define RC_WHAT RC_LIST_
#define RC_LIST_ROW(name, kind, reason) \
    {#name, kind, reason, offsetof(struct _cl_icd_dispatch, name)},
#define RC_LIST_REMOTE(ret, name, params, reason) \
    RC_LIST_ROW(name, SHIM_REMOTE_IMPL, reason)
#define RC_LIST_LOCAL(ret, name, params, reason) \
    RC_LIST_ROW(name, SHIM_REMOTE_LOCAL, reason)
#define RC_LIST_REFUSED(ret, name, params, reason) \
    RC_LIST_ROW(name, SHIM_REMOTE_REFUSED, reason)
const struct shim_remote_row shim_remote_rows[] = {
#include "remote_rows.h"
};
#undef RC_WHAT
const size_t shim_remote_n_rows =
    sizeof(shim_remote_rows) / sizeof(shim_remote_rows[0]);
