/* A tenant's lanes: extra TCP streams carrying the bytes of its big reads
 * and writes in parallel (docs/remoting.md, "Lanes"; proto/lane.h). */
#ifndef PX_LANES_H
#define PX_LANES_H

#include "cl.h"
#include "req.h"
#include "tenant.h"

#include "proto/lane.h"

struct px_conn;

/* How long an executor waits for a write's pieces, and a piece may stall
 * on its lane, before the lanes are given up. */
#define PX_LANE_TIMEOUT_MS 30000
/* Each ring of the area the lanes' bytes land in: four of the shim's
 * 16 MiB write messages, sixteen 4 MiB read chunks. */
#define PX_LANE_RING (64u << 20)

/* --- lanes.c: requests and executors -------------------------------------- */

/* Loop thread, a message M (of R) whose bulk (BULK bytes, R->bulk)
 * travels on T's lanes: registers its transfer.  0, or -1 with R marked
 * refused (the lanes then given up: the bytes cannot come any other way;
 * its call fails with CL_OUT_OF_RESOURCES). */
int px_lanes_expect(struct px_tenant *t, struct px_req *r,
                    const Crane__ClientMessage *m, uint64_t bulk);
/* Executor: waits until R's pieces all came; 0 (R has none, or they did)
 * or a negative errno.  Forgets the transfer either way. */
int px_lanes_take(struct px_req *r);
/* R freed unexecuted: its transfer forgotten (lanes given up when it was
 * unfinished). */
void px_lanes_forget(struct px_req *r);
/* A read's chunk of LEN bytes for queue Q: room in ring 1 of T's pinned
 * landing area (*POS; the device reads into it), or NULL. */
void *px_lanes_read_room(struct px_tenant *t, cl_command_queue q, size_t len,
                         uint64_t *pos);
/* That room freed once its bytes left (in the order it was taken). */
void px_lanes_read_done(struct px_tenant *t, uint64_t pos, size_t len);
/* The lanes a read (message M) may send its bytes on: T's, or NULL. */
struct crn_lanes *px_lanes_for_read(struct px_tenant *t,
                                    const Crane__ClientMessage *m);
/* Sends the pieces of M's read (TOTAL bytes) in [FROM, TO) on LS, whose
 * bytes are at AT; 0 or a negative errno (lanes given up). */
int px_lanes_send(struct crn_lanes *ls, const Crane__ClientMessage *m,
                  const void *at, uint64_t total, uint64_t from,
                  uint64_t to);

/* --- conn_lanes.c: connections ------------------------------------------- */

/* A Welcome for T on C: T's new lanes and key (none off TCP or with
 * --max-lanes 0); fills W's lane fields. */
void px_lanes_open(struct px_conn *c, struct px_tenant *t,
                   Crane__Welcome *w);
/* The connection holding T is closing: its lanes die (waits end). */
void px_lanes_stop(struct px_tenant *t);
/* ... and has ended: they are freed. */
void px_lanes_close(struct px_tenant *t);
/* C's Hello named a lane and passed the handshake: C's stream joins its
 * tenant's lanes (C is closed, its socket kept), or C is refused. */
void px_lanes_attach(struct px_conn *c);

#endif /* PX_LANES_H */
