/* The one path chooser for bytes (bytepath.h): every place that moves a
 * buffer's or image's bytes asks it, so a new way to move them is one
 * case here. */
#include "bytepath.h"

/* Between the device and host memory during a switch or pre-copy: host
 * access flags that forbid the direction go through the device; pinned
 * chunks where the context has them (reads only into the shim's own RAM
 * copy: the program's memory needs no second copy); large reads from the
 * proxy blocking (the proxy then streams them, proxy-domain/exec_mem.c). */
static enum shim_path device_host(const struct shim_path_ask *a)
{
    if (a->host_forbids)
        return SHIM_PATH_DEVICE;
    if (a->image)
        return SHIM_PATH_CALL;
    if (a->staging && (a->move == SHIM_MOVE_WRITE || a->into_shadow))
        return SHIM_PATH_STAGED;
    if (a->move == SHIM_MOVE_READ && a->from_proxy &&
        a->len >= SHIM_PATH_BLOCKING_MIN)
        return SHIM_PATH_CALL_BLOCKING;
    return SHIM_PATH_CALL;
}

/* A message's bulk on the remote wire: the lanes take big ones where
 * there are some and no shared area; the shared area anything; else the
 * batch takes small ones and the socket the rest. */
static enum shim_path send(const struct shim_path_ask *a)
{
    if (a->lanes && !a->shm && a->len >= SHIM_PATH_LANE_MIN)
        return SHIM_PATH_LANES;
    if (a->shm && a->len > 0)
        return SHIM_PATH_SHM;
    return a->len <= SHIM_PATH_INLINE_MAX ? SHIM_PATH_INLINE
                                          : SHIM_PATH_SOCKET;
}

enum shim_path shim_path_choose(const struct shim_path_ask *a)
{
    switch (a->move) {
    case SHIM_MOVE_READ:
    case SHIM_MOVE_WRITE:
        return device_host(a);
    case SHIM_MOVE_BOUNCE:
        return a->staging ? SHIM_PATH_BOUNCE_STAGED : SHIM_PATH_BOUNCE;
    case SHIM_MOVE_STREAM_OUT:
        /* Device -> shared area -> proxy with no CPU copy, else pinned
         * chunks; a buffer the host may not read is not streamed. */
        if (a->image || a->host_forbids)
            return SHIM_PATH_NONE;
        return a->ring ? SHIM_PATH_RING
                       : a->staging ? SHIM_PATH_STREAM : SHIM_PATH_NONE;
    case SHIM_MOVE_STREAM_BACK:
        /* Only through the shared area pinned for the context made ahead,
         * so that no byte takes a CPU copy. */
        return !a->image && !a->host_forbids && a->ring ? SHIM_PATH_RING
                                                        : SHIM_PATH_NONE;
    case SHIM_MOVE_SEND:
        return send(a);
    }
    return SHIM_PATH_NONE;
}

const char *shim_path_name(enum shim_path p)
{
    static const char *const names[] = {
        [SHIM_PATH_NONE] = "none",           [SHIM_PATH_CALL] = "call",
        [SHIM_PATH_CALL_BLOCKING] = "call-blocking",
        [SHIM_PATH_STAGED] = "staged",       [SHIM_PATH_DEVICE] = "device",
        [SHIM_PATH_BOUNCE] = "bounce",
        [SHIM_PATH_BOUNCE_STAGED] = "bounce-staged",
        [SHIM_PATH_RING] = "ring",           [SHIM_PATH_STREAM] = "stream",
        [SHIM_PATH_LANES] = "lanes",         [SHIM_PATH_SHM] = "shm",
        [SHIM_PATH_INLINE] = "inline",       [SHIM_PATH_SOCKET] = "socket",
    };
    return (unsigned)p < sizeof(names) / sizeof(names[0]) && names[p]
               ? names[p]
               : "?";
}
