/* What the files of the remote backend's connection (remote_conn*.c)
 * share, for them only. */
#ifndef SHIM_REMOTE_CONN_INT_H
#define SHIM_REMOTE_CONN_INT_H

#include "config.h"
#include "proto/log.h"
#include "proto/endpoint.h"
#include "proto/shm.h"
#include "proto/stream.h"
#include "remote.h"

#define RPC_VERSION 1
#define MAX_FRAME (1u << 20)        /* what we send */
#define MAX_REPLY_FRAME (64u << 20) /* what we accept */
#define BATCH_FLUSH (64u << 10)  /* send a batch once it is this big */
#define BULK_INLINE SHIM_PATH_INLINE_MAX  /* bulk up to this: in the batch */
#define SHM_WAIT_MS 200          /* for room in the shared area, then the
                                    stream takes the bytes */

/* A caller waiting for the answer to `seq`, or a detached read. */
struct slot {
    uint64_t seq;
    unsigned char *dst;
    size_t dst_len;
    atomic_bool done;
    bool detached;
    /* Or the bytes are handed on where they lie (remote_ring.c). */
    shim_ring_sink sink;
    void *sink_arg;
    int sink_err;                /* the first failure of SINK */
    bool in_sink;                /* its reply is being handled (under
                                    lock) */
    Crane__ServerMessage *msg;
    struct slot *next;
};

struct cb_item {
    struct rc_watch *watch;
    cl_int status;
    struct cb_item *next;
};

/* The connection: one per process (remote_conn_state.c). */
struct shim_conn {
    struct crn_stream io;        /* the socket, TLS on tcp: */
    bool up;                     /* connected, threads running */
    atomic_bool dead;            /* the stream failed: calls fail */
    /* Sending: the batch and sequence numbers. */
    pthread_mutex_t send_lock;
    unsigned char *batch;
    size_t batch_len, batch_cap;
    uint64_t seq;
    /* Waiting: slots, matched by the reader thread. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct slot *slots;
    atomic_int deferred_err;     /* first failed batched call's error */
    /* Who reads the socket (under lock): the reader thread, or a caller
     * waiting for its own answer (remote_conn.c: the answer then skips the
     * reader's wake-up and hand-off); the reader parks meanwhile. */
    enum { READ_FREE, READ_READER, READ_CALLER } reading;
    bool reader_parked;
    pthread_cond_t read_cond;
    size_t reads_lost;           /* detached reads dropped by a failure */
    unsigned long generation;    /* connections made so far */
    pthread_t reader;
    /* Callbacks. */
    pthread_t cb_thread;
    struct cb_item *cb_head, *cb_tail;
    bool cb_stop;
    pthread_cond_t cb_cond;
    /* Liveness (the watchdog thread). */
    pthread_t watchdog;
    bool watchdog_stop;
    pthread_cond_t watchdog_cond;
    atomic_int sending;          /* threads inside a blocking send */
    _Atomic double send_since;   /* when the latest of them started */
    _Atomic double last_request; /* the latest call that wants an answer */
    atomic_bool handshaking;     /* the Welcome is awaited */
    _Atomic double last_alive;   /* the last frame read from the proxy */
    double last_ping;
    /* Heartbeats (docs/remoting.md, "Liveness"): the interval asked for,
     * the last one's arrival, the call it named (its ClientMessage field
     * number, 0 a pending read) and how long it had run then. */
    long beat_ms;
    _Atomic double beat_at;
    atomic_uint beat_call;
    _Atomic double beat_ran;
    /* From the Welcome. */
    struct rc_platform **platforms;
    cl_platform_id *platform_handles;
    cl_uint n_platforms;
    atomic_uint_fast64_t next_id;
    size_t chunk;
    long spin_ns;                /* how long a caller spins for its answer
                                    (CRANE_REMOTE_SPIN_US) */
    bool shm_ok;                 /* the Welcome offered a shared area */
    /* The shared area (docs/remoting.md, "Shared memory"): ring 0 is
     * filled under send_lock, ring 1 emptied by the reader thread. */
    struct crn_shm shm;
    bool shm_on;
    bool shm_stuck;              /* ring 0 stayed full: no waiting for it */
    bool host_on;                /* the proxy took the host-memory region
                                    (hostmem.h): reads and writes of
                                    pointers in it name offsets */
    bool shm_memfd;              /* the area is our own memfd (a proxy on
                                    this host), not a file or a BAR */
    unsigned long shm_gen;       /* memfd areas attached so far: a wrap of
                                    an older one (at the same address,
                                    maybe) is never used */
    unsigned ring_held;          /* ring 0 pieces held for a device's copy
                                    (remote_ring.c, under send_lock): other
                                    bulk takes the stream meanwhile */
    atomic_bool shm_in;          /* the reader takes ring 1's pieces */
    /* Bulk bytes carried each way together (remote_shm.h). */
    atomic_uint_fast64_t shm_bytes, stream_bytes;
    /* ... and bytes read or written in place in the host-memory region,
     * which neither side copied. */
    atomic_uint_fast64_t host_bytes;
    /* Bulk bytes as this side moved them, in ns (the re-home report):
     * copying out (into ring 0 or the socket), waiting for ring 0's room,
     * copying in (from ring 1 or the socket, on the reader thread). */
    atomic_uint_fast64_t out_copy_ns, out_wait_ns, in_copy_ns;
    /* Calls whose bytes failed on the lanes (remote_lanes.c): already
     * failed to the program, so the proxy's later word on them is not
     * reported again (remote_conn_reader.c). */
    uint64_t lane_failed_seq[64];
    unsigned lane_failed_next;
};
extern struct shim_conn shim_conn;

/* rehome_common.c (below this layer): a failed switch's first reason,
 * for the operator (a handshake never answered). */
void shim_rehome_note(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* remote_conn_state.c: whether SEQ is a call that failed on the lanes. */
bool shim_conn_lane_failed(uint64_t seq);

/* remote_conn_secure.c: a tcp: stream wrapped in TLS as CRANE_TLS says
 * (the descriptor to use, or < 0 with FD closed); the MAC answering a
 * proxy's Challenge with CRANE_AUTH_KEY.  Lanes use both. */
int shim_conn_tls_wrap(int fd, const struct crn_endpoint *ep,
                       const char *text, struct crn_stream *out);
int shim_conn_auth_mac(const Crane__Challenge *ch, uint8_t mac[32]);

/* remote_conn.c: the batch sent, a message queued (under send_lock); a
 * message that wants its answer sent with a slot (a sink's: SINK set). */
int shim_conn_flush_locked(void);
int shim_conn_queue_locked(Crane__ClientMessage *m, const void *bulk,
                           size_t bulk_len, bool flush);
struct slot *shim_conn_send_with_slot(Crane__ClientMessage *m, const void *bulk,
                                      size_t bulk_len, void *dst,
                                      size_t dst_len, bool detached,
                                      shim_ring_sink sink, void *sink_arg,
                                      int *rc);

/* remote_conn_reader.c: a sign of life from the proxy; a notification run;
 * the reader and callbacks threads. */
void shim_conn_alive(void);
void shim_conn_notify(const Crane__Notify *n);
void *shim_conn_reader_main(void *arg);
void *shim_conn_callbacks_main(void *arg);
/* Reads and routes one frame from the proxy (the caller holds the
 * reading); < 0: the stream ended or is out of step. */
int shim_conn_read_one(void);
/* The stream ended: every waiter fails, detached reads are counted lost;
 * under no lock. */
void shim_conn_broken(void);
/* Marks the connection dead; the first time, while the program's calls go
 * to it, tells crane-guestd WHY (shim_ctl_fault), before those calls can
 * fail of it. */
void shim_conn_lost(const char *why);
/* A reply's bytes handed to S's sink (ring 1's piece where it lies, or
 * the stream's bytes through a bounce): < 0, the connection is out of
 * step; whether a sink still holds ring 1's room (remote_ring.c). */
int shim_conn_sink_piece(struct slot *s, const Crane__Reply *r);
bool shim_conn_ring1_held(void);
/* Waits for S's answer (or the connection's end) and takes S off the list;
 * S off the list without waiting (its message was not sent). */
void shim_conn_await(struct slot *s);
void shim_conn_forget(struct slot *s);


/* remote_conn_watchdog.c: the watchdog thread; stopping it; the
 * heartbeats' interval (from CRANE_PROXY_TIMEOUT_MS), asked of the proxy
 * (a new connection). */
void *shim_conn_watchdog_main(void *arg);
void shim_conn_watchdog_stop(void);
long shim_conn_beat_interval(void);
void shim_conn_ask_beats(void);
/* remote_conn_reader.c: a heartbeat recorded; the call it names; how
 * many intervals old one still says a call runs. */
void shim_conn_beat(const Crane__Reply *r);
const char *shim_conn_call_name(unsigned call);
#define BEAT_FRESH 3

#endif /* SHIM_REMOTE_CONN_INT_H */
