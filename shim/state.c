/* The process state every layer of the shim reads (`shim`), and what a
 * switch leaves for the program's calls (this thread's own calls, an
 * error owed to the program): a leaf, so that reading them ties no file to
 * the start (start.c) or the switch (rehome.c). */
#include "proto/log.h"
#include "shim.h"

struct shim_state shim = {
    .once = PTHREAD_ONCE_INIT,
    .rehome_lock = PTHREAD_MUTEX_INITIALIZER,
};

SHIM_TLS bool shim_own_calls;
SHIM_TLS bool shim_create_no_bytes;

const struct _cl_icd_dispatch *shim_proxy_table;

void (*shim_wait_shown)(const char *text);
_Atomic double shim_cmd_deadline;

/* The first error of the program's batched calls that a switch away from
 * the proxy took with it, for the program's next clFinish or
 * clWaitForEvents: a switch must neither fail for it (the program's
 * error, not the switch's) nor lose it. */
static atomic_int owed;

void shim_owe(cl_int err)
{
    int none = CL_SUCCESS;

    if (err != CL_SUCCESS) {
        CRN_DEBUG("re-home: an error of a batched call (%d) goes on to the "
                  "program's next clFinish or clWaitForEvents", err);
        atomic_compare_exchange_strong(&owed, &none, err);
    }
}

cl_int shim_owed_take(void)
{
    if (SHIM_LIKELY(!atomic_load_explicit(&owed, memory_order_relaxed)))
        return CL_SUCCESS;
    return (cl_int)atomic_exchange(&owed, CL_SUCCESS);
}
