/* What the files of one client connection share (conn*.c only). */
#ifndef PX_CONN_INT_H
#define PX_CONN_INT_H

#include "conn.h"

#include <stdint.h>

/* Requests (bytes) buffered ahead of execution before reading pauses, and
 * replies (bytes) not yet written before execution pauses: --max-queued. */
#define MAX_QUEUED(c)                                                        \
    ((c)->srv->limits.max_queued ? (c)->srv->limits.max_queued : SIZE_MAX)
/* TCP keepalive: probes after this many idle seconds find dead peers. */
#define KEEPALIVE_S 60

/* conn.c: set on the loop thread while it executes a batch whose answers
 * it writes itself right after (no wake-up for them). */
extern _Thread_local bool px_conn_drains_after;

/* conn.c: writes everything other threads queued; ends a closing C once
 * no work of it runs. */
void px_conn_drain(struct px_conn *c);
void px_conn_finish_close(struct px_conn *c);

/* conn_input.c: starts reading C's stream (uv_read_start's result). */
int px_conn_read_start(struct px_conn *c);

/* conn_exec.c: queues R for execution, pausing input past --max-queued;
 * the stream cannot be followed any more: answers WHY (in order, after
 * what is queued, as the reply to SEQ) and closes. */
void px_conn_queue(struct px_conn *c, struct px_req *r);
void px_conn_out_of_step(struct px_conn *c, uint64_t seq, const char *why);

/* conn_beat.c: the loop thread executes C's calls itself from ON to off
 * (no writes of C's meanwhile). */
void px_beat_inline(struct px_conn *c, bool on);

#endif /* PX_CONN_INT_H */
