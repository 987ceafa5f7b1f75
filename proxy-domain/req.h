/* One request: a message from a client's stream, decoded, with its bytes. */
#ifndef PX_REQ_H
#define PX_REQ_H

#include "proto/lane.h"
#include "proto/remote.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct crn_shm;
struct px_arena;

/*
 * One message from the stream, decoded, with its bulk bytes.  MSG NULL
 * means the frame could not be used: ERROR says why, and the executor
 * answers Reply{seq, CL_INVALID_VALUE, error}.  CLOSE_AFTER: the stream is
 * out of step; close it once the answer is written.
 */
struct px_req {
    struct px_req *next;
    Crane__ClientMessage *msg;
    struct px_arena *arena;      /* MSG was decoded into it (arena.h) */
    uint64_t seq;
    uint8_t *bulk;
    size_t bulk_len;
    char error[128];
    bool close_after;
    bool deferred;               /* MSG NULL: its sender wants no reply, so
                                    the error is the tenant's deferred one */
    /* Bulk bytes still in ring 0 of RING (the client's shared area) at
     * RING_POS, BULK_LEN of them, BULK NULL: claimed in the stream's order
     * by the loop thread, their room freed in the same order once the call
     * is executed (px_exec_one), or once copied out of the ring. */
    struct crn_shm *ring;
    uint64_t ring_pos;
    /* Or BULK is filled by the tenant's lanes, transfer LANE_X
     * (lanes.c): the call waits for every piece before it executes. */
    struct crn_lanes *lanes;
    struct crn_lane_xfer *lane_x;
    bool lane_refused;           /* its transfer could not be taken */
};

#endif /* PX_REQ_H */
