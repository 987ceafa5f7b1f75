/* The "dead" side: where a program's objects go when a re-home lost its
 * old backend and could bring up no other; every row of cl_api.def
 * answers an OpenCL error from one table, never a crash.
 *
 * A re-home on the vendor (native -> native) releases every vendor object
 * and unloads the vendor before loading it again.  If the load, the
 * device binding, a rebuild or a write back fails there, and no proxy
 * answers either (rehome_fallback.c), no real handle is left that a call
 * could use: every shadow's real handle becomes shim_dead_handle, whose
 * dispatch table is this one, and the backend becomes shim_dead_ops.
 * Retains and releases answer CL_SUCCESS (the program can clean up, the
 * shim frees its shadows); every other row answers CL_DEVICE_NOT_AVAILABLE:
 * through errcode_ret when its row has one, as its cl_int result, or as a
 * NULL handle or pointer.  The program's state stays in the shim's RAM
 * copies, so a later re-home (the test hook, crane-guestd's prepare or
 * resume) brings it back from there (rehome.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "proto/log.h"
#include "shim.h"

static atomic_flag told = ATOMIC_FLAG_INIT;

/* Retains and releases succeed; anything else is refused, said once. */
static cl_int dead_answer(const char *name)
{
    if (strncmp(name, "clRetain", 8) == 0 ||
        strncmp(name, "clRelease", 9) == 0)
        return CL_SUCCESS;
    if (!atomic_flag_test_and_set(&told))
        CRN_ERROR("%s: the OpenCL implementation did not come back after "
                  "a re-home; every call answers CL_DEVICE_NOT_AVAILABLE "
                  "until a re-home brings the program back",
                  name);
    return CL_DEVICE_NOT_AVAILABLE;
}

/* The row's errcode_ret parameter, where it has one, shadows this NULL. */
static cl_int *const errcode_ret = NULL;

#define DEAD_ROW(ret, name, params)                                    \
    static ret CL_API_CALL dead_##name params                          \
    {                                                                  \
        cl_int err_ = dead_answer(#name);                              \
        if (errcode_ret)                                               \
            *errcode_ret = err_;                                       \
        return (ret) _Generic((ret *)0, cl_int * : err_, default : 0); \
    }

/* Every row of cl_api.def, whatever its kind and remote column. */
#define SHIM_ROW(ret, name, params, remote) DEAD_ROW(ret, name, params)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "cl_api.def"
#pragma GCC diagnostic pop
#undef SHIM_ROW

/* The table: every row's answer, never NULL. */
#define SHIM_ROW(ret, name, params, remote) .name = dead_##name,
static const struct _cl_icd_dispatch dead_dispatch = {
#include "cl_api.def"
};
#undef SHIM_ROW

/* The one real handle of the dead side: an ICD object of that table. */
static const struct {
    const struct _cl_icd_dispatch *dispatch;
} dead_object = {&dead_dispatch};

void *const shim_dead_handle = (void *)&dead_object;

/* A backend with nothing behind it: it never loads, has no platforms and
 * no extensions.  Only rehome_fallback.c puts a program on it. */
static int dead_load(void)
{
    return -ENODEV;
}

static int dead_unload(void)
{
    return 0;
}

static int dead_platforms(cl_platform_id **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    return -ENODEV;
}

static void *dead_extension(cl_platform_id real, const char *name)
{
    (void)real;
    (void)name;
    return NULL;
}

const struct shim_backend_ops shim_dead_ops = {
    .name = "none",
    .side = SHIM_SIDE_NONE,
    .load = dead_load,
    .unload = dead_unload,
    .platforms = dead_platforms,
    .extension = dead_extension,
};
SHIM_BACKEND_REGISTER(shim_dead_ops);
