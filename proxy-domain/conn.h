/* One client connection: its files' layers, top down (README.md,
 * "Layers"): conn_tls.c (TLS accepts) > conn_start.c (made, accepted,
 * started) > conn_input.c (reading, frames) > handshake.c > conn_lanes.c
 * > conn_exec.c (execution in order, replies written) > conn.c (closing,
 * idling) > conn_beat.c, preauth.c, server_state.c, transport.c. */
#ifndef PX_CONN_H
#define PX_CONN_H

#include "dispatch.h"
#include "outq.h"
#include "preauth.h"
#include "server_state.h"
#include "transport.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

enum px_conn_state {
    PX_CONN_HELLO,               /* waiting for Hello */
    PX_CONN_AUTH,                /* Challenge sent, waiting for Auth */
    PX_CONN_RESUME_WAIT,         /* its tenant's old connection is closing */
    PX_CONN_HANDOFF,             /* supervisor: authenticated, goes to a
                                    worker (supervisor.c) */
    PX_CONN_READY,               /* calls flow */
    PX_CONN_CLOSING,
};

struct px_conn {
    struct px_server *srv;
    struct px_conn *next, *prev; /* the server's list */
    uint64_t num;                /* for logs */
    struct px_transport tr;      /* what carries its bytes */
    uv_async_t wake;             /* other threads: output or a poke */
    uv_timer_t timer;            /* the handshake's deadline, then idling */
    uv_shutdown_t shut;
    int open_handles;
    enum px_conn_state state;
    bool finished;               /* handles closing */
    bool write_closed;           /* shutdown sent: nothing more leaves */
    bool reading;
    bool input_done;             /* the stream is out of step: read no more */
    bool handing;                /* supervisor: its handoff is being sent */
    struct px_preauth pa;        /* listed while in its handshake */
    uint64_t accepted_ms;        /* loop time of the accept */
    uint64_t last_input_ms;      /* loop time of the last bytes read */
    char peer[64];               /* uid:N (unix) or the address (tcp) */

    struct px_outq outq;
    atomic_bool poked;           /* a pending read may have completed */
    atomic_bool stop;            /* the worker stops executing */

    /* Input: bytes of the frame being assembled, or a bulk being read. */
    uint8_t *ibuf;
    size_t ilen, icap;
    struct px_req *bulk_req;
    size_t bulk_have;

    /* Requests in order, and the batch a worker is executing. */
    struct px_req *inq_head, *inq_tail;
    size_t inq_bytes;
    uv_work_t work;
    struct px_req *batch;
    bool working;
    /* Requests the loop thread hands to a worker still executing (under
     * more_lock): it goes on with them instead of a return to the loop
     * and a wake-up of a pool thread per batch; DONE: what it executed,
     * which the loop thread frees (it allocated them).  TAKES: the worker will
     * look at MORE again before it returns; MORE_ANY: MORE is not empty,
     * for a worker spinning without the lock. */
    pthread_mutex_t more_lock;
    struct px_req *more_head, *more_tail;
    struct px_req *done;         /* executed, for the loop thread to free */
    size_t more_bytes;
    bool takes;
    atomic_bool more_any;

    struct px_tenant *tenant;    /* once the handshake is done */

    /* Heartbeats (conn_beat.c, under its lock): on its list, the loop
     * thread executing C's calls itself (and whether C's stream was then
     * at a frame boundary), the last beat's uv_hrtime. */
    struct px_conn *beat_next;
    bool beat_listed, beat_inline, beat_clean;
    uint64_t beat_last;

    /* Shared memory (docs/remoting.md): a descriptor that came with the
     * stream, until a ShmAttach takes it, and the mapped area, whose
     * ring 0 this loop thread empties as frames arrive. */
    int shm_fd;
    struct crn_shm *shm;
    bool shm_memfd;              /* SHM is a memfd the client sent (not a
                                    file or BAR): host memory may join */
    /* An area given up (ShmDetach read): no more ring 0; the executor
     * unmaps it, this side frees it (at close or the next attach). */
    struct crn_shm *shm_leaving;
    struct px_tenant *resuming;  /* RESUME_WAIT: the tenant it waits for */

    /* Handshake. */
    uint8_t nonce[32];
    char program[64];
    uint32_t pid;
    uint8_t token[PX_TOKEN_LEN * 2];
    size_t token_len;
    /* A lane's Hello (lanes.c): TOKEN names its tenant. */
    bool lane;
    uint32_t lane_index;
    uint32_t lane_generation;
    uint8_t lane_mac[32];
};

/* Requests (bytes) buffered ahead of execution before reading pauses, and
 * replies (bytes) not yet written before execution pauses: --max-queued. */
#define MAX_QUEUED(c)                                                        \
    ((c)->srv->limits.max_queued ? (c)->srv->limits.max_queued : SIZE_MAX)
/* TCP keepalive: probes after this many idle seconds find dead peers. */
#define KEEPALIVE_S 60

/* --- conn_tls.c ---------------------------------------------------------- */

/* Accepts a TCP connection that must speak TLS: the handshake on a thread
 * of its own, then px_conn_start_plain on its relay. */
void px_conn_accept_tls(struct px_server *srv);

/* --- conn_start.c -------------------------------------------------------- */

/* Accepts a connection on the server's listener (in clear). */
void px_conn_accept(struct px_server *srv);
/* Starts a connection on FD, the plaintext socket of a TLS relay, from
 * PEER (an address), accepted as ORDER (px_preauth_order) at loop time
 * ACCEPTED_MS: the handshake's deadline counts from then.  Returns 0 or
 * a negative errno (FD then closed). */
int px_conn_start_plain(struct px_server *srv, int fd, const char *peer,
                        uint64_t order, uint64_t accepted_ms);
/* A connection whose stream (of TYPE, UV_TCP or UV_NAMED_PIPE) is still to
 * be accepted into c->tr.h.stream by the caller; NULL when out of memory. */
struct px_conn *px_conn_new(struct px_server *srv, uv_handle_type type);

/* --- conn_input.c -------------------------------------------------------- */

/* The reader px_conn_new gives the transport. */
void px_conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void px_conn_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
/* Worker: starts C, handed over after its handshake, with the INPUT (LEN
 * bytes) the client sent after it: finishes the handshake as the Hello
 * asked (new tenant or resume), then reads. */
void px_conn_start_handed(struct px_conn *c, const uint8_t *input,
                          size_t len);
/* Supervisor: the bytes read past the handshake (handed to the worker). */
const uint8_t *px_conn_pending_input(const struct px_conn *c, size_t *len);
/* Closes C without a word: its stream went to a worker. */
void px_conn_handed_over(struct px_conn *c);

/* --- handshake.c --------------------------------------------------------- */

/* Handles one message before READY; takes M. */
void px_handshake(struct px_conn *c, Crane__ClientMessage *m);
/* Gives tenant T to C and sends Welcome (RESUMED: it existed before). */
void px_handshake_welcome(struct px_conn *c, struct px_tenant *t,
                          bool resumed);
/* After Hello (and Auth): a new tenant or a resumed one, per the Hello. */
void px_handshake_finish(struct px_conn *c);

/* --- conn_exec.c --------------------------------------------------------- */

/* Starts a work item if requests wait and none runs. */
void px_conn_schedule(struct px_conn *c);
/* Queues R for execution, pausing input past --max-queued. */
void px_conn_queue(struct px_conn *c, struct px_req *r);
/* The stream cannot be followed any more: answers WHY (in order, after
 * what is queued, as the reply to SEQ) and closes. */
void px_conn_out_of_step(struct px_conn *c, uint64_t seq, const char *why);
/* Sends O now (loop thread). */
void px_conn_send(struct px_conn *c, struct px_out *o);
/* Writes everything other threads queued. */
void px_conn_drain(struct px_conn *c);
/* The wake-up other threads send (output, or a poke). */
void px_conn_on_wake(uv_async_t *a);
/* The sink that gives a tenant's frames to C. */
struct px_sink px_conn_sink(struct px_conn *c);
/* Sends Refused{WHY} and closes once it is written. */
void px_conn_refuse(struct px_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Set on the loop thread while it executes a batch whose answers it
 * writes itself right after (no wake-up for them). */
extern _Thread_local bool px_conn_drains_after;

/* --- conn.c -------------------------------------------------------------- */

/* Closes C: stops input, drops what was not executed, and lets go of the
 * tenant once no work item runs.  Safe to call more than once. */
void px_conn_close(struct px_conn *c, const char *why);
/* Ends a closing C once no work of it runs. */
void px_conn_finish_close(struct px_conn *c);
/* Closes a connection that never started. */
void px_conn_abandon(struct px_conn *c);
/* The handshake ended (READY): stops counting C as unauthenticated and
 * arms the idle timer. */
void px_conn_ready(struct px_conn *c);

/* --- conn_beat.c --------------------------------------------------------- */

/* Heartbeats: C, given its tenant, gets them while its calls run as the
 * tenant asked (SYNC_HEARTBEAT), or no more (before its tenant goes). */
void px_beat_add(struct px_conn *c);
void px_beat_remove(struct px_conn *c);
/* The loop thread executes C's calls itself from ON to off (no writes of
 * C's meanwhile). */
void px_beat_inline(struct px_conn *c, bool on);

#endif /* PX_CONN_H */
