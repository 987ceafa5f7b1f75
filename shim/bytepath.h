/* The one path chooser for bytes: how a buffer's or image's bytes move
 * (the vendor's own call, pinned chunks, a device copy, the shared area,
 * the remote wire's inline, socket, shared-memory or lane paths). */
#ifndef CRANE_SHIM_BYTEPATH_H
#define CRANE_SHIM_BYTEPATH_H

#include <stdbool.h>
#include <stddef.h>

/* Reads from the proxy at least this big are blocking (a switch's
 * extract): a round trip each (~0.1 ms) is then under a tenth of the
 * transfer, and the proxy would gather larger ones in fresh
 * (page-faulting) heap memory. */
#define SHIM_PATH_BLOCKING_MIN (8u << 20)
/* A message's bulk up to this is copied into the remote batch. */
#define SHIM_PATH_INLINE_MAX (64u << 10)
/* Remote transfers from this size take the lanes; smaller ones the
 * stream. */
#define SHIM_PATH_LANE_MIN (1u << 20)

/* What is moved. */
enum shim_move {
    SHIM_MOVE_READ,       /* a switch: device -> host memory */
    SHIM_MOVE_WRITE,      /* a switch: host memory -> device */
    SHIM_MOVE_BOUNCE,     /* through the device (host access forbidden) */
    SHIM_MOVE_STREAM_OUT, /* a switch: vendor device -> the proxy */
    SHIM_MOVE_STREAM_BACK, /* a switch: the proxy -> vendor device */
    SHIM_MOVE_SEND,       /* the remote wire: a message's bulk bytes */
};

/* The ways bytes go. */
enum shim_path {
    SHIM_PATH_NONE,     /* none needed, or cannot (the RAM copy instead) */
    SHIM_PATH_CALL,     /* the vendor's own read or write, non-blocking */
    SHIM_PATH_CALL_BLOCKING, /* the same, blocking */
    SHIM_PATH_STAGED,   /* the context's pinned chunks (switch/staging.c) */
    SHIM_PATH_DEVICE,   /* a device copy, non-host access (hostcopy.c) */
    SHIM_PATH_BOUNCE,   /* a device copy via a bounce buffer (hostcopy.c) */
    SHIM_PATH_BOUNCE_STAGED, /* a device copy into pinned chunks */
    SHIM_PATH_RING,     /* the shared area pinned (switch/ringstream.c) */
    SHIM_PATH_STREAM,   /* pinned chunks handed on as they fill */
    SHIM_PATH_LANES,    /* the remote lanes (remote/remote_lanes.c) */
    SHIM_PATH_SHM,      /* the remote shared-memory area */
    SHIM_PATH_INLINE,   /* copied into the remote batch */
    SHIM_PATH_SOCKET,   /* written on the stream after its header */
};

/* What the choice depends on: size, transport, capabilities. */
struct shim_path_ask {
    enum shim_move move;
    size_t len;         /* bytes to move */
    bool image;         /* an image (no pinned chunks for rows) */
    bool host_forbids;  /* host access flags forbid this direction */
    bool staging;       /* the vendor context has pinned chunks */
    bool ring;          /* ... and the shared area pinned (to move) */
    bool into_shadow;   /* a read lands in the shim's own RAM copy */
    bool from_proxy;    /* a read from the proxy */
    bool shm;           /* SEND: the proxy's shared area is attached */
    bool lanes;         /* SEND: lanes to the proxy are up */
};

/* The path for ASK; pure (tests/unit/test_bytepath.c). */
enum shim_path shim_path_choose(const struct shim_path_ask *ask);

/* The path's name, for logs and tests. */
const char *shim_path_name(enum shim_path p);

#endif
