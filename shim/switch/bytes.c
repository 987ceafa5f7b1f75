/* A switch's and pre-copy's reads and writes of a buffer's bytes between
 * its device and host memory, by the path shim_path_choose picks. */
#include <errno.h>

#include "bytepath.h"
#include "shim.h"

/* The path for moving N bytes of M's MEM (MOVE: a read or a write) in
 * the vendor context CTX. */
enum shim_path shim_bytes_path(enum shim_move move, void *ctx,
                               const struct shim_mem *m, cl_mem mem,
                               size_t n, bool into_shadow, bool from_proxy)
{
    cl_map_flags dir = move == SHIM_MOVE_READ ? CL_MAP_READ : CL_MAP_WRITE;
    struct shim_path_ask a = {
        .move = move,
        .len = n,
        .image = m->type == SHIM_IMAGE,
        .host_forbids = shim_mem_host_forbids(m, mem, dir),
        .staging = m->type != SHIM_IMAGE && shim_staging_has(ctx),
        .into_shadow = into_shadow,
        .from_proxy = from_proxy,
    };

    return shim_path_choose(&a);
}

int shim_bytes_read(cl_command_queue q, void *ctx, const struct shim_mem *m,
                    cl_mem mem, size_t off, size_t n, void *dst,
                    bool into_shadow, bool from_proxy, cl_int *err)
{
    *err = CL_SUCCESS;
    switch (shim_bytes_path(SHIM_MOVE_READ, ctx, m, mem, n, into_shadow,
                            from_proxy)) {
    case SHIM_PATH_DEVICE:
        return shim_hostcopy_read(q, ctx, mem, off, n, dst);
    case SHIM_PATH_STAGED:
        return shim_staging_read(q, ctx, mem, off, n, dst) < 0 ? -EIO : 0;
    case SHIM_PATH_CALL_BLOCKING:
        *err = VENDOR(q)->clEnqueueReadBuffer(q, mem, CL_TRUE, off, n, dst, 0,
                                              NULL, NULL);
        break;
    default:
        *err = VENDOR(q)->clEnqueueReadBuffer(q, mem, CL_FALSE, off, n, dst,
                                              0, NULL, NULL);
        break;
    }
    return *err == CL_SUCCESS ? 0 : -EIO;
}

int shim_bytes_write(cl_command_queue q, void *ctx, const struct shim_mem *m,
                     cl_mem mem, size_t off, size_t n, const void *src,
                     cl_int *err)
{
    *err = CL_SUCCESS;
    switch (shim_bytes_path(SHIM_MOVE_WRITE, ctx, m, mem, n, false, false)) {
    case SHIM_PATH_DEVICE:
        return shim_hostcopy_write(q, ctx, mem, off, n, src);
    case SHIM_PATH_STAGED:
        return shim_staging_write(q, ctx, mem, off, n, src) < 0 ? -EIO : 0;
    default:
        *err = VENDOR(q)->clEnqueueWriteBuffer(q, mem, CL_FALSE, off, n, src,
                                               0, NULL, NULL);
        break;
    }
    return *err == CL_SUCCESS ? 0 : -EIO;
}
