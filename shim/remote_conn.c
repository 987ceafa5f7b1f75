/* The remote backend's connection to crane-proxy: handshake, the batch of
 * calls that need no answer, the reader thread that routes replies and read
 * bytes to their callers, the thread that runs event callbacks, and the
 * watchdog that gives up on a proxy that stopped answering.
 *
 * Liveness: whenever something is outstanding (a call waiting for its
 * answer, a read not yet arrived, a send not yet accepted), the proxy must
 * show a sign of life (any frame, or progress of our sends) at least every
 * CRANE_PROXY_TIMEOUT_MS; the watchdog pings it every
 * CRANE_PROXY_KEEPALIVE_MS meanwhile.  A proxy that stays silent longer
 * (frozen, its host gone) ends the connection: every waiting and later call
 * fails with CL_DEVICE_NOT_AVAILABLE, never hangs and never passes partial
 * data.  The handshake is bounded by the same timeout. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proto/auth.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/pcopy.h"
#include "proto/shm.h"
#include "proto/tls.h"
#include "remote.h"

void shim_remote_maps_clear(void);

#define RPC_VERSION 1
#define MAX_FRAME (1u << 20)        /* what we send */
#define MAX_REPLY_FRAME (64u << 20) /* what we accept */
#define BATCH_FLUSH (64u << 10)  /* send a batch once it is this big */
#define BULK_INLINE (64u << 10)  /* bulk up to this is copied into the batch */
#define SHM_WAIT_MS 200          /* for room in the shared area, then the
                                    stream takes the bytes */

/* A caller waiting for the answer to `seq`, or a detached read. */
struct slot {
    uint64_t seq;
    unsigned char *dst;
    size_t dst_len;
    atomic_bool done;
    bool detached;
    Crane__ServerMessage *msg;
    struct slot *next;
};

struct cb_item {
    struct rc_watch *watch;
    cl_int status;
    struct cb_item *next;
};

static struct conn {
    int fd;
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
    /* From the Welcome. */
    struct rc_platform **platforms;
    cl_platform_id *platform_handles;
    cl_uint n_platforms;
    atomic_uint_fast64_t next_id;
    size_t chunk;
    long spin_ns;                /* how long a caller spins for its answer */
    bool shm_ok;                 /* the Welcome offered a shared area */
    /* The shared area (docs/remoting.md, "Shared memory"): ring 0 is
     * filled under send_lock, ring 1 emptied by the reader thread. */
    struct crn_shm shm;
    bool shm_on;
    /* Bulk bytes as this side moved them, in ns (the re-home report):
     * copying out (into ring 0 or the socket), waiting for ring 0's room,
     * copying in (from ring 1 or the socket, on the reader thread). */
    atomic_uint_fast64_t out_copy_ns, out_wait_ns, in_copy_ns;
} cn = {
    .fd = -1,
    .shm = {.fd = -1},
    .send_lock = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
    .cb_cond = PTHREAD_COND_INITIALIZER,
    .watchdog_cond = PTHREAD_COND_INITIALIZER,
};

static void alive(void)
{
    atomic_store_explicit(&cn.last_alive, shim_now(), memory_order_relaxed);
}

/* Writes to the proxy, watched while they block: a proxy that stops
 * reading leaves the send stuck (bulk leaves in chunks of
 * CRANE_REMOTE_CHUNK, each a write of its own). */
static int conn_write(const void *p, size_t len)
{
    atomic_store(&cn.send_since, shim_now());
    atomic_fetch_add(&cn.sending, 1);
    int rc = crn_bulk_write(cn.fd, p, len);
    atomic_fetch_sub(&cn.sending, 1);
    return rc;
}

size_t shim_remote_chunk(void)
{
    return cn.chunk;
}

uint64_t shim_remote_new_id(void)
{
    return atomic_fetch_add(&cn.next_id, 1);
}

/* --- sending --------------------------------------------------------------- */

static int batch_reserve(size_t more)
{
    if (cn.batch_len + more <= cn.batch_cap)
        return 0;
    size_t cap = cn.batch_cap ? cn.batch_cap : 256u << 10;
    while (cap < cn.batch_len + more)
        cap *= 2;
    unsigned char *b = realloc(cn.batch, cap);
    if (!b)
        return -ENOMEM;
    cn.batch = b;
    cn.batch_cap = cap;
    return 0;
}

static int flush_locked(void)
{
    int rc = 0;

    if (cn.batch_len && !atomic_load(&cn.dead))
        rc = conn_write(cn.batch, cn.batch_len);
    cn.batch_len = 0;
    if (rc < 0) {
        LOG_ERROR("remote: sending to the proxy failed: %s", strerror(-rc));
        atomic_store(&cn.dead, true);
        shutdown(cn.fd, SHUT_RDWR);
    }
    return rc;
}

/* Puts BULK into the shared area's ring 0 and names it in M.  When the
 * ring is full, what is batched leaves first (the proxy frees room as it
 * reads those frames), then a short wait; -EAGAIN after it: the bytes take
 * the stream instead. */
static int shm_put_locked(Crane__ClientMessage *m, const void *bulk,
                          size_t bulk_len)
{
    uint64_t pos;
    int rc = crn_shm_reserve(&cn.shm, CRN_SHM_TO_PROXY, bulk_len, &pos);

    if (rc == -EAGAIN) {
        double t0 = shim_now();
        if ((rc = flush_locked()) < 0)
            return rc;
        rc = crn_shm_reserve_wait(&cn.shm, CRN_SHM_TO_PROXY, bulk_len,
                                  SHM_WAIT_MS, &pos);
        atomic_fetch_add(&cn.out_wait_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
    }
    if (rc < 0) {
        if (rc == -EPROTO) {
            LOG_ERROR("remote: the proxy's shared-memory ring position is "
                      "impossible; bulk bytes take the stream from now on");
            cn.shm_on = false;
        }
        return rc;
    }
    double t0 = shim_now();
    crn_pcopy(crn_shm_at(&cn.shm, CRN_SHM_TO_PROXY, pos), bulk, bulk_len);
    atomic_fetch_add(&cn.out_copy_ns, (uint64_t)((shim_now() - t0) * 1e9));
    m->shm_bulk = true;
    m->shm_pos = pos;
    return 0;
}

/* Appends M's frame (and its bulk) to the batch; big bulk is written
 * straight from the caller's memory after the batch.  Caller holds
 * send_lock. */
static int queue_locked(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len, bool flush)
{
    size_t len = crane__client_message__get_packed_size(m);
    int rc;

    if (atomic_load(&cn.dead))
        return -EPIPE;
    if (bulk_len && cn.shm_on &&
        (rc = shm_put_locked(m, bulk, bulk_len)) == 0) {
        /* The bytes are in the area; a big piece's frame leaves at once,
         * so that the proxy copies it out (freeing its room) while the
         * next piece is copied in. */
        flush = flush || bulk_len > BULK_INLINE;
        bulk_len = 0;
        len = crane__client_message__get_packed_size(m);
    }
    if (len > MAX_FRAME) {
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(
                &crane__client_message__descriptor, (unsigned)m->msg_case);
        LOG_ERROR("remote: a %s message of %zu bytes exceeds the %u-byte "
                  "frame limit: not sent",
                  f ? f->name : "?", len, MAX_FRAME);
        return -EMSGSIZE;
    }
    bool inline_bulk = bulk_len <= BULK_INLINE;
    if ((rc = batch_reserve(4 + len + (inline_bulk ? bulk_len : 0))) < 0)
        return rc;
    unsigned char *p = cn.batch + cn.batch_len;
    p[0] = (unsigned char)(len >> 24);
    p[1] = (unsigned char)(len >> 16);
    p[2] = (unsigned char)(len >> 8);
    p[3] = (unsigned char)len;
    crane__client_message__pack(m, p + 4);
    cn.batch_len += 4 + len;
    if (bulk_len && inline_bulk) {
        memcpy(cn.batch + cn.batch_len, bulk, bulk_len);
        cn.batch_len += bulk_len;
    } else if (bulk_len) {
        if ((rc = flush_locked()) < 0)
            return rc;
        double t0 = shim_now();
        rc = conn_write(bulk, bulk_len);
        atomic_fetch_add(&cn.out_copy_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
        if (rc < 0) {
            atomic_store(&cn.dead, true);
            shutdown(cn.fd, SHUT_RDWR);
            return rc;
        }
    }
    if (flush || cn.batch_len >= BATCH_FLUSH)
        return flush_locked();
    return 0;
}

cl_int shim_remote_take_deferred(void)
{
    /* A switch's own calls must neither fail for the program's error nor
     * swallow it (a switch back would fail, and the error be lost). */
    cl_int err = shim_own_calls ? CL_SUCCESS
                                : (cl_int)atomic_exchange(&cn.deferred_err,
                                                          0);

    /* A dead connection fails everything, even a clFinish with nothing
     * left to send: what it was waiting for will never come. */
    if (err == CL_SUCCESS && atomic_load(&cn.dead))
        err = CL_DEVICE_NOT_AVAILABLE;
    return err;
}

cl_int shim_remote_hand_over_deferred(void)
{
    return (cl_int)atomic_exchange(&cn.deferred_err, 0);
}

/* Which connection is up (0: none yet); objects of an older one are
 * gone with it. */
unsigned long shim_remote_generation(void)
{
    return cn.up && !atomic_load(&cn.dead) ? cn.generation : 0;
}

bool shim_remote_alive(void)
{
    return cn.up && !atomic_load(&cn.dead);
}

/* Detached reads not yet answered, and those lost with a connection: a
 * switch counts on both being zero once its queues are finished. */
size_t shim_remote_reads_outstanding(void)
{
    size_t n;

    pthread_mutex_lock(&cn.lock);
    n = cn.reads_lost;
    for (struct slot *s = cn.slots; s; s = s->next)
        n += s->detached;
    pthread_mutex_unlock(&cn.lock);
    return n;
}

void shim_remote_bulk_stats(struct shim_remote_bulk *out)
{
    out->out_copy_s = atomic_load(&cn.out_copy_ns) / 1e9;
    out->out_wait_s = atomic_load(&cn.out_wait_ns) / 1e9;
    out->in_copy_s = atomic_load(&cn.in_copy_ns) / 1e9;
}

const char *shim_remote_transport(void)
{
    if (!shim_remote_alive())
        return "none";
    return cn.shm_on ? "shm" : "stream";
}

cl_int shim_remote_send(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len)
{
    pthread_mutex_lock(&cn.send_lock);
    m->seq = ++cn.seq;
    m->want_reply = false;
    int rc = queue_locked(m, bulk, bulk_len, false);
    pthread_mutex_unlock(&cn.send_lock);
    if (rc == -ENOMEM)
        return CL_OUT_OF_HOST_MEMORY;
    return rc < 0 ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

cl_int shim_remote_flush(void)
{
    pthread_mutex_lock(&cn.send_lock);
    int rc = flush_locked();
    pthread_mutex_unlock(&cn.send_lock);
    return rc < 0 ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

/* Registers a slot, then sends: the reader may answer at once. */
static struct slot *send_with_slot(Crane__ClientMessage *m, const void *bulk,
                                   size_t bulk_len, void *dst, size_t dst_len,
                                   bool detached, int *rc)
{
    struct slot *s = calloc(1, sizeof(*s));

    if (!s) {
        *rc = -ENOMEM;
        return NULL;
    }
    s->dst = dst;
    s->dst_len = dst_len;
    s->detached = detached;
    atomic_store(&cn.last_request, shim_now());
    pthread_mutex_lock(&cn.send_lock);
    m->seq = s->seq = ++cn.seq;
    m->want_reply = true;
    pthread_mutex_lock(&cn.lock);
    s->next = cn.slots;
    cn.slots = s;
    pthread_mutex_unlock(&cn.lock);
    /* Detached reads need not leave yet: the next flush takes them. */
    *rc = queue_locked(m, bulk, bulk_len, !detached);
    pthread_mutex_unlock(&cn.send_lock);
    return s;
}

static void unlink_slot_locked(struct slot *s)
{
    for (struct slot **pp = &cn.slots; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            return;
        }
}

cl_int shim_remote_call(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len, void *dst, size_t dst_len,
                        struct rc_reply *out)
{
    int rc;
    struct slot *s = send_with_slot(m, bulk, bulk_len, dst, dst_len, false,
                                    &rc);
    cl_int err;

    memset(out, 0, sizeof(*out));
    if (!s)
        return CL_OUT_OF_HOST_MEMORY;
    /* Most answers come within tens of microseconds: spin a little before
     * sleeping, which saves the futex wake-up on every synchronous call
     * (only where another CPU can run the reader meanwhile). */
    if (rc == 0 && cn.spin_ns) {
        double until = shim_now() + cn.spin_ns * 1e-9;
        while (!atomic_load_explicit(&s->done, memory_order_acquire) &&
               !atomic_load(&cn.dead) && shim_now() < until)
            __builtin_ia32_pause();
    }
    pthread_mutex_lock(&cn.lock);
    while (rc == 0 && !atomic_load(&s->done) && !atomic_load(&cn.dead))
        pthread_cond_wait(&cn.cond, &cn.lock);
    unlink_slot_locked(s);
    pthread_mutex_unlock(&cn.lock);
    if (!s->done || !s->msg) {
        if (s->msg)
            crane__server_message__free_unpacked(s->msg, NULL);
        free(s);
        return CL_DEVICE_NOT_AVAILABLE;
    }
    out->msg = s->msg;
    out->reply = s->msg->reply;
    free(s);
    err = out->reply->err;
    if (err == CL_SUCCESS)
        err = shim_remote_take_deferred();
    if (err != CL_SUCCESS && out->reply->error && *out->reply->error)
        LOG_DEBUG("remote: call %llu: %d (%s)",
                  (unsigned long long)m->seq, err, out->reply->error);
    return err;
}

cl_int shim_remote_call_detached(Crane__ClientMessage *m, void *dst,
                                 size_t dst_len)
{
    int rc;
    struct slot *s = send_with_slot(m, NULL, 0, dst, dst_len, true, &rc);

    if (!s)
        return CL_OUT_OF_HOST_MEMORY;
    if (rc < 0) {
        pthread_mutex_lock(&cn.lock);
        unlink_slot_locked(s);
        pthread_mutex_unlock(&cn.lock);
        free(s);
        return CL_DEVICE_NOT_AVAILABLE;
    }
    return CL_SUCCESS;
}

void shim_remote_reply_free(struct rc_reply *r)
{
    if (r->msg)
        crane__server_message__free_unpacked(r->msg, NULL);
    r->msg = NULL;
    r->reply = NULL;
}

/* --- receiving ------------------------------------------------------------- */

static struct slot *find_slot(uint64_t seq)
{
    pthread_mutex_lock(&cn.lock);
    struct slot *s = cn.slots;
    while (s && s->seq != seq)
        s = s->next;
    pthread_mutex_unlock(&cn.lock);
    return s;
}

/* Bulk bytes for nobody (a bad offset, an unknown seq): read and drop. */
static int drain(size_t len)
{
    unsigned char buf[16384];
    while (len) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        int rc = crn_bulk_read(cn.fd, buf, n);
        if (rc < 0)
            return rc;
        len -= n;
    }
    return 0;
}

static void notify(const Crane__Notify *n)
{
    struct rc_watch *w = shim_remote_watch_take(n->cookie);
    struct cb_item *it;

    if (!w) {
        LOG_WARN("remote: the proxy named an unknown callback %llu",
                 (unsigned long long)n->cookie);
        return;
    }
    if (!(it = calloc(1, sizeof(*it)))) {
        free(w);
        return;
    }
    it->watch = w;
    it->status = n->status;
    pthread_mutex_lock(&cn.lock);
    if (cn.cb_tail)
        cn.cb_tail->next = it;
    else
        cn.cb_head = it;
    cn.cb_tail = it;
    pthread_cond_signal(&cn.cb_cond);
    pthread_mutex_unlock(&cn.lock);
}

static int handle_reply(Crane__ServerMessage *msg)
{
    Crane__Reply *r = msg->reply;
    struct slot *s = find_slot(r->seq);
    int rc = 0;

    if (r->deferred_err != 0) {
        int none = 0;
        atomic_compare_exchange_strong(&cn.deferred_err, &none,
                                       r->deferred_err);
        LOG_DEBUG("remote: batched call %llu failed: %d",
                  (unsigned long long)r->deferred_seq, r->deferred_err);
    }
    bool fits = s && s->dst && r->bulk_offset <= s->dst_len &&
                r->bulk_len <= s->dst_len - r->bulk_offset;
    double t0 = r->bulk_len ? shim_now() : 0;
    if (r->bulk_len && r->shm_bulk) {
        /* The bytes are in ring 1: copied out (or dropped) in order; a
         * piece out of place ends the connection, never wrong data. */
        if (!fits)
            LOG_ERROR("remote: %llu unexpected bytes for call %llu",
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
        rc = cn.shm_on ? crn_shm_take(&cn.shm, CRN_SHM_TO_CLIENT, r->shm_pos,
                                      r->bulk_len,
                                      fits ? s->dst + r->bulk_offset : NULL)
                       : -EPROTO;
        if (rc < 0) {
            LOG_ERROR("remote: the proxy named shared-memory bytes out of "
                      "place (position %llu, %llu bytes) for call %llu: "
                      "closing the connection",
                      (unsigned long long)r->shm_pos,
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
            crane__server_message__free_unpacked(msg, NULL);
            return rc;
        }
    } else if (r->bulk_len) {
        if (fits)
            rc = crn_bulk_read(cn.fd, s->dst + r->bulk_offset, r->bulk_len);
        else {
            LOG_ERROR("remote: %llu unexpected bytes for call %llu",
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
            rc = drain(r->bulk_len);
        }
    }
    if (r->bulk_len)
        atomic_fetch_add(&cn.in_copy_ns, (uint64_t)((shim_now() - t0) * 1e9));
    if (r->more || !s) {
        crane__server_message__free_unpacked(msg, NULL);
        return rc;
    }
    pthread_mutex_lock(&cn.lock);
    if (s->detached) {
        unlink_slot_locked(s);
        if (r->err != CL_SUCCESS) {
            int none = 0;
            atomic_compare_exchange_strong(&cn.deferred_err, &none, r->err);
        }
        crane__server_message__free_unpacked(msg, NULL);
        free(s);
    } else {
        s->msg = msg;
        atomic_store_explicit(&s->done, true, memory_order_release);
        pthread_cond_broadcast(&cn.cond);
    }
    pthread_mutex_unlock(&cn.lock);
    return rc;
}

static void *reader_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint8_t *buf;
        size_t len;
        int rc = crn_frame_read(cn.fd, &buf, &len, MAX_REPLY_FRAME);
        alive();
        if (rc < 0) {
            if (!atomic_load(&cn.dead) && rc != -ENODATA)
                LOG_ERROR("remote: reading from the proxy failed: %s",
                          strerror(-rc));
            else if (!atomic_load(&cn.dead))
                LOG_ERROR("remote: the proxy closed the connection");
            break;
        }
        Crane__ServerMessage *msg =
            crane__server_message__unpack(NULL, len, buf);
        free(buf);
        if (!msg) {
            LOG_ERROR("remote: undecodable message from the proxy");
            break;
        }
        if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY) {
            if (handle_reply(msg) < 0)
                break;
            continue;
        }
        if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY)
            notify(msg->notify);
        else
            LOG_WARN("remote: unexpected message %d from the proxy",
                     msg->msg_case);
        crane__server_message__free_unpacked(msg, NULL);
    }
    /* Fail every waiter.  Detached reads that never arrived are counted,
     * never forgotten: their bytes are missing, so every later call
     * (clFinish included) fails instead of passing partial data. */
    atomic_store(&cn.dead, true);
    pthread_mutex_lock(&cn.lock);
    size_t lost = 0;
    for (struct slot **pp = &cn.slots; *pp;) {
        struct slot *s = *pp;
        if (s->detached) {
            *pp = s->next;
            free(s);
            lost++;
        } else {
            pp = &s->next;
        }
    }
    cn.reads_lost += lost;
    if (lost)
        LOG_ERROR("remote: %zu read(s) from the proxy lost with the "
                  "connection", lost);
    pthread_cond_broadcast(&cn.cond);
    pthread_mutex_unlock(&cn.lock);
    return NULL;
}

/* Runs program callbacks in order, away from the socket. */
static void *callbacks_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cn.lock);
    for (;;) {
        while (!cn.cb_head && !cn.cb_stop)
            pthread_cond_wait(&cn.cb_cond, &cn.lock);
        if (!cn.cb_head)
            break;
        struct cb_item *it = cn.cb_head;
        cn.cb_head = it->next;
        if (!cn.cb_head)
            cn.cb_tail = NULL;
        pthread_mutex_unlock(&cn.lock);
        struct rc_watch *w = it->watch;
        w->fn(w->event, it->status, w->data);
        free(w);
        free(it);
        pthread_mutex_lock(&cn.lock);
    }
    pthread_mutex_unlock(&cn.lock);
    return NULL;
}

/* --- liveness ------------------------------------------------------------- */

/* How long the proxy has owed us something without a sign of life: an
 * answer (a call's, a detached read's, the handshake's) since the later of
 * the request and the last frame it sent, or a send it has not taken.
 * 0 when nothing is owed. */
static double owed_for(double now)
{
    bool waiting;
    double silent = 0;

    pthread_mutex_lock(&cn.lock);
    waiting = cn.slots != NULL || atomic_load(&cn.handshaking);
    pthread_mutex_unlock(&cn.lock);
    if (waiting) {
        double since = atomic_load(&cn.last_alive);
        double asked = atomic_load(&cn.last_request);
        silent = now - (asked > since ? asked : since);
    }
    if (atomic_load(&cn.sending) > 0 &&
        now - atomic_load(&cn.send_since) > silent)
        silent = now - atomic_load(&cn.send_since);
    return silent;
}

/* Asks for a sign of life: a Sync PING with a reply nobody waits for.  Not
 * when another thread is sending (that send is the test already). */
static void ping(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;

    if (atomic_load(&cn.handshaking) ||
        pthread_mutex_trylock(&cn.send_lock) != 0)
        return;
    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    m.seq = ++cn.seq;
    m.want_reply = true;
    queue_locked(&m, NULL, 0, true);
    pthread_mutex_unlock(&cn.send_lock);
}

/* Ends the connection: the reader sees it closed and fails every waiter;
 * a send blocked on a full socket returns. */
static void give_up(double silent_s)
{
    LOG_ERROR("remote: the proxy showed no sign of life for %.1f s while "
              "calls waited (CRANE_PROXY_TIMEOUT_MS=%ld); closing the "
              "connection, calls on it fail",
              silent_s, shim_config.proxy_timeout_ms);
    atomic_store(&cn.dead, true);
    shutdown(cn.fd, SHUT_RDWR);
}

static void *watchdog_main(void *arg)
{
    long timeout_ms = shim_config.proxy_timeout_ms;
    long keep_ms = shim_config.proxy_keepalive_ms;
    long tick_ms = timeout_ms / 4;

    (void)arg;
    if (keep_ms > 0 && keep_ms < tick_ms)
        tick_ms = keep_ms;
    if (tick_ms < 10)
        tick_ms = 10;
    pthread_mutex_lock(&cn.lock);
    while (!cn.watchdog_stop && !atomic_load(&cn.dead)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tick_ms / 1000;
        ts.tv_nsec += (tick_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cn.watchdog_cond, &cn.lock, &ts);
        if (cn.watchdog_stop)
            break;
        pthread_mutex_unlock(&cn.lock);
        double now = shim_now();
        double silent = owed_for(now);
        if (silent <= 0) {
            /* Nothing expected: silence is fine. */
        } else if (silent * 1e3 > timeout_ms) {
            give_up(silent);
        } else if (keep_ms > 0 && silent * 1e3 >= keep_ms &&
                   (now - cn.last_ping) * 1e3 >= keep_ms) {
            cn.last_ping = now;
            ping();
        }
        pthread_mutex_lock(&cn.lock);
    }
    pthread_mutex_unlock(&cn.lock);
    return NULL;
}

static void watchdog_stop(void)
{
    pthread_mutex_lock(&cn.lock);
    cn.watchdog_stop = true;
    pthread_cond_signal(&cn.watchdog_cond);
    pthread_mutex_unlock(&cn.lock);
    pthread_join(cn.watchdog, NULL);
}

/* The socket's own liveness where the kernel can help: TCP keepalive
 * notices a peer host that is gone even when nothing is outstanding. */
static void socket_keepalive(int fd)
{
    int on = 1;
    int idle = (int)(shim_config.proxy_keepalive_ms / 1000);
    int cnt = 3;
    int intvl;

    if (shim_config.proxy_keepalive_ms <= 0)
        return;
    if (idle < 1)
        idle = 1;
    intvl = idle;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0)
        return;  /* not a TCP socket: the watchdog alone */
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* A tcp: proxy is spoken to through TLS (proto/tls.h): the handshake on
 * FD, then a relay whose plaintext socket replaces FD, so that everything
 * below reads and writes frames as it does on a unix socket.  The
 * credentials are made once and kept (each session holds a reference).
 * Returns the descriptor to use, or a negative errno (FD closed). */
static int tls_wrap(int fd, const struct crn_endpoint *ep, const char *text)
{
    static struct crn_tls_config *cfg;
    static bool made;
    enum crn_tls_mode mode;
    char why[512] = "";
    int rc;

    if (!made) {
        if (crn_tls_mode_parse(shim_config.tls, &mode) < 0) {
            LOG_ERROR("remote: CRANE_TLS=%s: auto, x509, psk or none",
                      shim_config.tls);
            close(fd);
            return -EINVAL;
        }
        rc = crn_tls_config_new(mode, CRN_TLS_CLIENT, shim_config.pki_dir,
                                shim_config.auth_key, &cfg, why,
                                sizeof(why));
        if (rc < 0) {
            LOG_ERROR("remote: TLS to %s: %s", text, why);
            close(fd);
            return rc;
        }
        made = true;
        if (!cfg)
            LOG_WARN("remote: %s in clear: no TLS credentials (CRANE_TLS="
                     "%s, no PKI in %s and no CRANE_AUTH_KEY)", text,
                     shim_config.tls,
                     shim_config.pki_dir ? shim_config.pki_dir
                                         : CRN_TLS_PKI_DEFAULT);
    }
    if (!cfg)
        return fd;
    rc = crn_tls_wrap_client(cfg, fd, ep->host,
                             (unsigned)shim_config.proxy_timeout_ms, why,
                             sizeof(why));
    if (rc < 0)
        LOG_ERROR("remote: %s: %s", text, why);
    else
        LOG_INFO("remote: TLS (%s) to %s",
                 crn_tls_mode_name(crn_tls_config_mode(cfg)), text);
    return rc;
}

/* --- handshake ------------------------------------------------------------- */

static Crane__ServerMessage *read_server_message(void)
{
    uint8_t *buf;
    size_t len;

    if (crn_frame_read(cn.fd, &buf, &len, MAX_REPLY_FRAME) < 0)
        return NULL;
    Crane__ServerMessage *m = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    return m;
}

static int answer_challenge(const Crane__Challenge *ch)
{
    uint8_t *key = NULL, mac[32];
    size_t key_len = 0;
    int rc;

    if (!shim_config.auth_key) {
        LOG_ERROR("remote: the proxy wants a key; set CRANE_AUTH_KEY=FILE "
                  "(or have crane-hostd send it with the prepare)");
        return -EACCES;
    }
    if ((rc = crn_auth_key_load(shim_config.auth_key, &key, &key_len)) < 0) {
        LOG_ERROR("remote: cannot read key file %s: %s",
                  shim_config.auth_key, strerror(-rc));
        return rc;
    }
    rc = crn_hmac_sha256(key, key_len, ch->nonce.data, ch->nonce.len, mac);
    free(key);
    if (rc < 0)
        return rc;
    Crane__Auth auth = CRANE__AUTH__INIT;
    auth.mac.data = mac;
    auth.mac.len = sizeof(mac);
    RC_MSG(m, auth, AUTH, &auth);
    m.seq = ++cn.seq;
    return crn_frame_write(cn.fd, &m.base);
}

static int take_welcome(const Crane__Welcome *w)
{
    cn.shm_ok = w->shm_ok;
    cn.platforms = calloc(w->n_platforms ? w->n_platforms : 1,
                          sizeof(*cn.platforms));
    cn.platform_handles = calloc(w->n_platforms ? w->n_platforms : 1,
                                 sizeof(*cn.platform_handles));
    if (!cn.platforms || !cn.platform_handles)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_platforms; i++) {
        const Crane__PlatformDesc *pd = w->platforms[i];
        struct rc_platform *p = calloc(1, sizeof(*p));
        if (!p)
            return -ENOMEM;
        cn.platforms[cn.n_platforms++] = p;
        p->obj = (struct rc_obj){&shim_remote_dispatch, pd->id,
                                 SHIM_PLATFORM, false};
        cn.platform_handles[i] = (cl_platform_id)p;
        p->devices = calloc(pd->n_devices ? pd->n_devices : 1,
                            sizeof(*p->devices));
        if (!p->devices)
            return -ENOMEM;
        for (size_t d = 0; d < pd->n_devices; d++) {
            struct rc_device *dev = calloc(1, sizeof(*dev));
            if (!dev)
                return -ENOMEM;
            dev->obj = (struct rc_obj){&shim_remote_dispatch,
                                       pd->devices[d]->id, SHIM_DEVICE, false};
            dev->type = pd->devices[d]->type;
            p->devices[p->n_devices++] = dev;
            shim_remote_track(&dev->obj);
        }
        shim_remote_track(&p->obj);
    }
    return 0;
}

static int handshake(void)
{
    char name[64] = "";
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(name, sizeof(name), f))
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
    Crane__Hello hello = CRANE__HELLO__INIT;
    hello.version = RPC_VERSION;
    hello.program = name;
    hello.pid = (uint32_t)getpid();
    RC_MSG(m, hello, HELLO, &hello);
    m.seq = ++cn.seq;
    int rc = crn_frame_write(cn.fd, &m.base);
    if (rc < 0)
        return rc;
    for (;;) {
        Crane__ServerMessage *s = read_server_message();
        if (!s) {
            LOG_ERROR("remote: the proxy closed the connection during the "
                      "handshake");
            return -ECONNRESET;
        }
        switch (s->msg_case) {
        case CRANE__SERVER_MESSAGE__MSG_CHALLENGE:
            rc = answer_challenge(s->challenge);
            crane__server_message__free_unpacked(s, NULL);
            if (rc < 0)
                return rc;
            continue;
        case CRANE__SERVER_MESSAGE__MSG_WELCOME:
            if (s->welcome->version != RPC_VERSION) {
                LOG_ERROR("remote: the proxy speaks version %u, not %u",
                          s->welcome->version, RPC_VERSION);
                rc = -EPROTO;
            } else {
                rc = take_welcome(s->welcome);
            }
            crane__server_message__free_unpacked(s, NULL);
            return rc;
        case CRANE__SERVER_MESSAGE__MSG_REFUSED:
            LOG_ERROR("remote: the proxy refused us: %s",
                      s->refused->reason);
            crane__server_message__free_unpacked(s, NULL);
            return -EACCES;
        default:
            crane__server_message__free_unpacked(s, NULL);
            return -EPROTO;
        }
    }
}

/* Sends ShmAttach; a memfd rides on the frame's bytes (SCM_RIGHTS). */
static int send_attach(const char *name)
{
    Crane__ShmAttach a = CRANE__SHM_ATTACH__INIT;
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr mh = {0};
    struct iovec iov;
    uint8_t buf[256];
    size_t len;

    a.size = cn.shm.size;
    a.ring_len = cn.shm.ring_len;
    a.name = (char *)(name ? name : "");
    RC_MSG(m, shm_attach, SHM_ATTACH, &a);
    m.seq = ++cn.seq;
    m.want_reply = true;
    len = crane__client_message__get_packed_size(&m);
    if (len + CRN_FRAME_HEADER_LEN > sizeof(buf))
        return -EMSGSIZE;
    crn_frame_header(buf, len);
    crane__client_message__pack(&m, buf + CRN_FRAME_HEADER_LEN);
    len += CRN_FRAME_HEADER_LEN;
    if (name)
        return crn_bulk_write(cn.fd, buf, len);
    /* The descriptor goes with the first byte; the rest follows plainly. */
    iov.iov_base = buf;
    iov.iov_len = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_control = ctl.room;
    mh.msg_controllen = sizeof(ctl.room);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &cn.shm.fd, sizeof(int));
    ssize_t n;
    do
        n = sendmsg(cn.fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if ((size_t)n < len)
        return crn_bulk_write(cn.fd, buf + n, len - (size_t)n);
    return 0;
}

/* Offers a shared area for bulk bytes (unix: endpoints get a memfd;
 * CRANE_SHM_FILE names a file both sides map, e.g. an ivshmem BAR) and
 * waits for the answer.  Any failure leaves bulk bytes on the stream. */
static void shm_attach(const struct crn_endpoint *ep)
{
    size_t ring = (size_t)shim_config.shm_mb << 19;  /* half each way */
    const char *name = NULL;
    int rc;

    if (!cn.shm_ok || shim_config.shm_mb <= 0)
        return;
    if (shim_config.shm_file) {
        const char *slash = strrchr(shim_config.shm_file, '/');
        name = getenv("CRANE_SHM_NAME");
        if (!name || !*name)
            name = slash ? slash + 1 : shim_config.shm_file;
        rc = crn_shm_map_file(shim_config.shm_file, ring, &cn.shm);
    } else if (ep->kind == CRN_EP_UNIX) {
        rc = crn_shm_create(ring, &cn.shm);
    } else {
        return;
    }
    if (rc < 0) {
        LOG_WARN("remote: no shared-memory area (%s): bulk bytes take the "
                 "stream", strerror(-rc));
        return;
    }
    rc = send_attach(name);
    while (rc == 0) {
        Crane__ServerMessage *s = read_server_message();
        if (!s) {
            rc = -ECONNRESET;
            break;
        }
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY) {
            notify(s->notify);
            crane__server_message__free_unpacked(s, NULL);
            continue;
        }
        if (s->msg_case != CRANE__SERVER_MESSAGE__MSG_REPLY ||
            s->reply->seq != cn.seq) {
            crane__server_message__free_unpacked(s, NULL);
            rc = -EPROTO;
            break;
        }
        if (s->reply->err != 0) {
            LOG_WARN("remote: the proxy refused the shared-memory area "
                     "(%s): bulk bytes take the stream",
                     s->reply->error ? s->reply->error : "?");
            crane__server_message__free_unpacked(s, NULL);
            crn_shm_close(&cn.shm);
            return;
        }
        crane__server_message__free_unpacked(s, NULL);
        /* The proxy holds its own mapping: ours is enough here. */
        if (cn.shm.fd >= 0)
            close(cn.shm.fd);
        cn.shm.fd = -1;
        cn.shm_on = true;
        LOG_INFO("remote: bulk bytes go through %zu MiB of shared memory%s%s",
                 cn.shm.size >> 20, name ? " in " : "", name ? name : "");
        return;
    }
    LOG_WARN("remote: offering the shared-memory area failed: %s",
             strerror(-rc));
    crn_shm_close(&cn.shm);
    atomic_store(&cn.dead, true);
}

static void free_platforms(void)
{
    for (cl_uint i = 0; i < cn.n_platforms; i++) {
        for (cl_uint d = 0; d < cn.platforms[i]->n_devices; d++)
            free(cn.platforms[i]->devices[d]);
        free(cn.platforms[i]->devices);
        free(cn.platforms[i]);
    }
    free(cn.platforms);
    free(cn.platform_handles);
    cn.platforms = NULL;
    cn.platform_handles = NULL;
    cn.n_platforms = 0;
}

/* Whether a kept connection still reaches a live proxy: one round trip
 * (its death may not have been seen yet). */
static bool still_there(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;
    struct rc_reply r;

    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    if (err != CL_SUCCESS)
        LOG_INFO("remote: the kept connection is gone (%d); connecting "
                 "again", err);
    return err == CL_SUCCESS;
}

int shim_remote_connect(void)
{
    struct crn_endpoint ep;
    char text[400];
    int rc;

    /* A connection kept across a switch back (its objects kept as twins,
     * rehome.c) is reused while it lives; a dead one is replaced. */
    if (cn.up && !atomic_load(&cn.dead) && still_there())
        return 0;
    if (cn.up)
        shim_remote_disconnect();
    if (!shim_config.remote ||
        crn_endpoint_parse(shim_config.remote, &ep) < 0) {
        LOG_ERROR("remote: no usable proxy endpoint (CRANE_PROXY or "
                  "CRANE_BACKEND=remote:ENDPOINT): %s",
                  shim_config.remote ? shim_config.remote : "(unset)");
        return -EINVAL;
    }
    crn_endpoint_format(&ep, text, sizeof(text));
    cn.fd = crn_endpoint_connect(&ep);
    if (cn.fd < 0) {
        rc = cn.fd;
        LOG_ERROR("remote: cannot connect to %s: %s", text, strerror(-rc));
        cn.fd = -1;
        return rc;
    }
    socket_keepalive(cn.fd);
    if (ep.kind == CRN_EP_TCP && (cn.fd = tls_wrap(cn.fd, &ep, text)) < 0) {
        rc = cn.fd;
        cn.fd = -1;
        return rc;
    }
    atomic_store(&cn.dead, false);
    atomic_store(&cn.deferred_err, 0);
    cn.reads_lost = 0;
    atomic_store(&cn.next_id, 1);
    cn.seq = 0;
    cn.chunk = shim_config.remote_chunk;
    cn.spin_ns = sysconf(_SC_NPROCESSORS_ONLN) > 2 ? 50000 : 0;
    /* The watchdog bounds the handshake too. */
    alive();
    atomic_store(&cn.last_request, shim_now());
    cn.last_ping = 0;
    cn.watchdog_stop = false;
    atomic_store(&cn.sending, 0);
    atomic_store(&cn.handshaking, true);
    if ((rc = -pthread_create(&cn.watchdog, NULL, watchdog_main, NULL)) < 0)
        goto fail_early;
    cn.shm_ok = false;
    cn.shm_on = false;
    rc = handshake();
    if (rc == 0) {
        shm_attach(&ep);
        if (atomic_load(&cn.dead))
            rc = -ECONNRESET;
    }
    atomic_store(&cn.handshaking, false);
    if (rc < 0) {
        if (atomic_load(&cn.dead))
            rc = -ETIMEDOUT;
        goto fail;
    }
    cn.cb_stop = false;
    if ((rc = -pthread_create(&cn.reader, NULL, reader_main, NULL)) < 0)
        goto fail;
    if ((rc = -pthread_create(&cn.cb_thread, NULL, callbacks_main, NULL)) <
        0) {
        shutdown(cn.fd, SHUT_RDWR);
        pthread_join(cn.reader, NULL);
        goto fail;
    }
    cn.up = true;
    cn.generation++;
    LOG_INFO("remote: connected to %s, %u platform(s)", text,
             cn.n_platforms);
    return 0;
fail:
    watchdog_stop();
fail_early:
    atomic_store(&cn.handshaking, false);
    LOG_ERROR("remote: no connection to the proxy at %s: %s", text,
              strerror(-rc));
    free_platforms();
    shim_remote_maps_clear();
    crn_shm_close(&cn.shm);
    cn.shm_on = false;
    close(cn.fd);
    cn.fd = -1;
    return rc;
}

void shim_remote_disconnect(void)
{
    if (!cn.up)
        return;
    pthread_mutex_lock(&cn.send_lock);
    flush_locked();
    atomic_store(&cn.dead, true);
    shutdown(cn.fd, SHUT_RDWR);
    pthread_mutex_unlock(&cn.send_lock);
    pthread_join(cn.reader, NULL);
    pthread_mutex_lock(&cn.lock);
    cn.cb_stop = true;
    pthread_cond_signal(&cn.cb_cond);
    pthread_mutex_unlock(&cn.lock);
    pthread_join(cn.cb_thread, NULL);
    watchdog_stop();
    close(cn.fd);
    cn.fd = -1;
    free(cn.batch);
    cn.batch = NULL;
    cn.batch_len = cn.batch_cap = 0;
    free_platforms();
    shim_remote_maps_clear();
    cn.shm_on = false;
    crn_shm_close(&cn.shm);
    cn.up = false;
}

int shim_remote_platforms(cl_platform_id **out, cl_uint *n)
{
    *out = cn.platform_handles;
    *n = cn.n_platforms;
    return cn.up ? 0 : -ENOTCONN;
}
