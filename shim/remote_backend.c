/* The remote backend's ops: connecting counts as loading; its dispatch
 * table is shim/remote_dispatch.c. */
#include <errno.h>

#include "remote.h"

static int remote_load(void)
{
    shim_remote_table = &shim_remote_dispatch;
    return shim_remote_connect();
}

/* Every object was released already (batched); the disconnect flushes
 * those releases before closing. */
static int remote_unload(void)
{
    shim_remote_disconnect();
    return 0;
}

/* Extension functions are the shim's own entries (clGetExtensionFunction*
 * rows are LOCAL): the proxy's vendor extensions are not remoted. */
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
