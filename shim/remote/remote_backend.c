/* The remote backend's ops: connecting counts as loading; its dispatch
 * table is shim/remote_dispatch.c. */
#include <errno.h>

#include "remote.h"
#include "remote_shm.h"

static int remote_load(void)
{
    shim_proxy_table = &shim_remote_dispatch;
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

static const struct shim_shm_ops remote_shm = {
    .use = shim_remote_shm_use,
    .release = shim_remote_shm_release,
    .attached = shim_remote_shm_attached,
    .counts = shim_remote_shm_counts,
};

static const struct shim_ring_ops remote_ring = {
    .area = shim_remote_ring_area,
    .piece = shim_remote_ring_piece,
    .hold = shim_remote_ring_hold,
    .write = shim_remote_ring_write,
    .unhold = shim_remote_ring_unhold,
    .release = shim_remote_ring_release,
    .read_to_sink = shim_remote_read_to_sink,
    .area_hold = shim_remote_shm_hold,
    .area_unhold = shim_remote_shm_unhold,
};

const struct shim_backend_ops shim_remote_ops = {
    .name = "remote",
    .side = SHIM_SIDE_PROXY,
    .load = remote_load,
    .unload = remote_unload,
    .platforms = shim_remote_platforms,
    .extension = remote_extension,
    .generation = shim_remote_generation,
    .alive = shim_remote_alive,
    .running = shim_remote_running,
    .reads_outstanding = shim_remote_reads_outstanding,
    .hand_over_deferred = shim_remote_hand_over_deferred,
    .bulk_stats = shim_remote_bulk_stats,
    .transport = shim_remote_transport,
    .restore_arg = shim_remote_restore_arg,
    .device_max_alloc = shim_remote_device_max_alloc,
    .host_on = shim_remote_host_on,
    .shm = &remote_shm,
    .ring = &remote_ring,
};
SHIM_BACKEND_REGISTER(shim_remote_ops);
