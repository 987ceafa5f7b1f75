/* The remote backend's ops: connecting counts as loading, and its dispatch
 * table, filled once from the rows of remote_objects.c and
 * remote_enqueue.c (entries left NULL make the shim return
 * CL_INVALID_OPERATION: SVM, pipes, native kernels, interop). */
#include <errno.h>

#include "remote.h"

void shim_remote_objects_fill(struct _cl_icd_dispatch *t);
void shim_remote_enqueue_fill(struct _cl_icd_dispatch *t);

struct _cl_icd_dispatch shim_remote_dispatch;
static pthread_once_t fill_once = PTHREAD_ONCE_INIT;

static void fill(void)
{
    shim_remote_objects_fill(&shim_remote_dispatch);
    shim_remote_enqueue_fill(&shim_remote_dispatch);
}

static int remote_load(void)
{
    pthread_once(&fill_once, fill);
    return shim_remote_connect();
}

/* Every object was released already (batched); the disconnect flushes
 * those releases before closing. */
static int remote_unload(void)
{
    shim_remote_disconnect();
    return 0;
}

static void *remote_extension(cl_platform_id real, const char *name)
{
    (void)real;
    (void)name;
    return NULL;
}

const struct shim_backend_ops shim_remote_ops = {
    .name = "remote",
    .load = remote_load,
    .unload = remote_unload,
    .platforms = shim_remote_platforms,
    .extension = remote_extension,
};
