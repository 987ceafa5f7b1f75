/* The remote backend's listening side: the reader thread that routes the
 * proxy's replies and read bytes to their callers, a caller waiting for its
 * answer (reading it itself where it can), and the thread that runs event
 * callbacks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/pcopy.h"
#include "proto/remote_calls.h"
#include "proto/spin.h"
#include "remote_conn_int.h"

void shim_conn_alive(void)
{
    atomic_store_explicit(&shim_conn.last_alive, shim_now(),
                          memory_order_relaxed);
}

/* --- heartbeats (docs/remoting.md, "Liveness") --------------------------- */

/* The call a heartbeat names, as its message's field in ClientMessage. */
const char *shim_conn_call_name(unsigned call)
{
    const struct crn_remote_call *row = crn_remote_call((int)call);

    if (call == 0)
        return "read";
    return row ? row->name : "call";
}

void shim_conn_beat(const Crane__Reply *r)
{
    double now = shim_now();
    bool fresh = now - atomic_load(&shim_conn.beat_at) >
                 BEAT_FRESH * shim_conn.beat_ms / 1e3;

    atomic_store(&shim_conn.beat_call, r->running_call);
    atomic_store(&shim_conn.beat_ran, r->running_ms / 1e3);
    atomic_store(&shim_conn.beat_at, now);
    if (fresh)
        CRN_INFO("remote: the proxy is still executing a %s (for %.1f s): "
                 "its heartbeats keep the connection",
                 shim_conn_call_name(r->running_call), r->running_ms / 1e3);
    else
        CRN_DEBUG("remote: heartbeat: a %s running for %.1f s",
                  shim_conn_call_name(r->running_call), r->running_ms / 1e3);
}

bool shim_remote_running(char *what, size_t len, double *for_s)
{
    double at = atomic_load(&shim_conn.beat_at);
    double now = shim_now();

    if (!shim_conn.up || atomic_load(&shim_conn.dead) || at == 0 ||
        now - at > BEAT_FRESH * shim_conn.beat_ms / 1e3)
        return false;
    if (what)
        snprintf(what, len, "%s",
                 shim_conn_call_name(atomic_load(&shim_conn.beat_call)));
    if (for_s)
        *for_s = atomic_load(&shim_conn.beat_ran) + (now - at);
    return true;
}

static void unlink_slot_locked(struct slot *s)
{
    for (struct slot **pp = &shim_conn.slots; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            return;
        }
}

/* --- receiving ------------------------------------------------------------- */

/* A sink's slot is marked in use while its reply is handled: its caller,
 * even one that gave up on a dead connection, frees it only after
 * (remote_ring.c). */
static struct slot *find_slot(uint64_t seq)
{
    pthread_mutex_lock(&shim_conn.lock);
    struct slot *s = shim_conn.slots;
    while (s && s->seq != seq)
        s = s->next;
    if (s && s->sink)
        s->in_sink = true;
    pthread_mutex_unlock(&shim_conn.lock);
    return s;
}

static void sink_done(struct slot *s)
{
    if (!s || !s->sink)
        return;
    pthread_mutex_lock(&shim_conn.lock);
    s->in_sink = false;
    pthread_cond_broadcast(&shim_conn.cond);
    pthread_mutex_unlock(&shim_conn.lock);
}

/* The proxy named ring 1 bytes where the ring's order does not allow. */
static void log_out_of_place(const Crane__Reply *r)
{
    CRN_ERROR("remote: the proxy named shared-memory bytes out of place "
              "(position %llu, %llu bytes) for call %llu: closing the "
              "connection",
              (unsigned long long)r->shm_pos, (unsigned long long)r->bulk_len,
              (unsigned long long)r->seq);
}

/* Bulk bytes for nobody (a bad offset, an unknown seq): read and drop. */
static int drain(size_t len)
{
    unsigned char buf[16384];
    while (len) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        int rc = crn_bulk_read_on(&shim_conn.io, buf, n);
        if (rc < 0)
            return rc;
        len -= n;
    }
    return 0;
}

void shim_conn_notify(const Crane__Notify *n)
{
    struct rc_watch *w = shim_remote_watch_take(n->cookie);
    struct cb_item *it;

    if (!w) {
        CRN_WARN("remote: the proxy named an unknown callback %llu",
                 (unsigned long long)n->cookie);
        return;
    }
    /* A thread waiting in the shim wakes on the notice itself, with no
     * hop through the callbacks thread. */
    if (w->on_reader) {
        w->fn(w->event, n->status, w->data);
        free(w);
        return;
    }
    if (!(it = calloc(1, sizeof(*it)))) {
        free(w);
        return;
    }
    it->watch = w;
    it->status = n->status;
    pthread_mutex_lock(&shim_conn.lock);
    if (shim_conn.cb_tail)
        shim_conn.cb_tail->next = it;
    else
        shim_conn.cb_head = it;
    shim_conn.cb_tail = it;
    pthread_cond_signal(&shim_conn.cb_cond);
    pthread_mutex_unlock(&shim_conn.lock);
}

/* A sink's pieces (remote_ring.c): ring 1's room stays claimed until the
 * sink frees it, in order. */
bool shim_conn_ring1_held(void)
{
    return __atomic_load_n(&shim_conn.shm.released[CRN_SHM_TO_CLIENT],
                           __ATOMIC_ACQUIRE) !=
           shim_conn.shm.expect[CRN_SHM_TO_CLIENT];
}

int shim_conn_sink_piece(struct slot *s, const Crane__Reply *r)
{
    bool fits = r->bulk_offset <= s->dst_len &&
                r->bulk_len <= s->dst_len - r->bulk_offset;
    int rc;

    if (!fits)
        CRN_ERROR("remote: %llu unexpected bytes for call %llu",
                  (unsigned long long)r->bulk_len,
                  (unsigned long long)r->seq);
    if (r->shm_bulk) {
        unsigned char *at;
        atomic_fetch_add(&shim_conn.shm_bytes, r->bulk_len);
        rc = atomic_load(&shim_conn.shm_in)
                 ? crn_shm_claim(&shim_conn.shm, CRN_SHM_TO_CLIENT,
                                 r->shm_pos, r->bulk_len, &at)
                 : -EPROTO;
        if (rc < 0) {
            log_out_of_place(r);
            return rc;
        }
        uint64_t end = r->shm_pos + r->bulk_len;
        /* The sink owns the room from here: it releases it in order (at
         * once when it fails).  After a failure, or for bytes that do not
         * fit, the room is freed here. */
        if (!fits || s->sink_err) {
            crn_shm_release(&shim_conn.shm, CRN_SHM_TO_CLIENT, end);
            return fits ? 0 : -EPROTO;
        }
        rc = s->sink(s->sink_arg, r->bulk_offset, at, r->bulk_len, end);
        if (rc < 0)
            s->sink_err = rc;
        return 0;
    }
    /* On the stream (the proxy found no room in ring 1): read into a
     * bounce, handed on before it is freed. */
    atomic_fetch_add(&shim_conn.stream_bytes, r->bulk_len);
    unsigned char *tmp = malloc(r->bulk_len ? r->bulk_len : 1);
    if (!tmp)
        return -ENOMEM;          /* the stream is out of step now */
    rc = crn_bulk_read_on(&shim_conn.io, tmp, r->bulk_len);
    if (rc == 0 && fits && !s->sink_err) {
        int e = s->sink(s->sink_arg, r->bulk_offset, tmp, r->bulk_len, 0);
        if (e < 0)
            s->sink_err = e;
    }
    free(tmp);
    return rc < 0 ? rc : fits ? 0 : -EPROTO;
}

/* What the proxy's kernels printed goes to the program's fd 1, where the
 * vendor writes it natively (one write(1) per work-group, before the call
 * that waited for the kernel returns): here before the reply wakes its
 * caller, in the order the replies come. */
static void write_kernel_output(const ProtobufCBinaryData *out)
{
    size_t off = 0;

    while (off < out->len) {
        ssize_t n = write(1, out->data + off, out->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            CRN_WARN("remote: %zu bytes of kernel output not written to "
                     "fd 1: %s", out->len - off,
                     n < 0 ? strerror(errno) : "short write");
            return;
        }
        off += (size_t)n;
    }
}

static int handle_reply(Crane__ServerMessage *msg)
{
    Crane__Reply *r = msg->reply;
    struct slot *s;
    int rc = 0;

    if (r->seq == 0 && !r->bulk_len && (r->running_call || r->running_ms)) {
        shim_conn_beat(r);
        crane__server_message__free_unpacked(msg, NULL);
        return 0;
    }
    s = find_slot(r->seq);

    if (r->kernel_output.len)
        write_kernel_output(&r->kernel_output);
    if (r->deferred_err != 0 && !shim_conn_lane_failed(r->deferred_seq)) {
        int none = 0;
        atomic_compare_exchange_strong(&shim_conn.deferred_err, &none,
                                       r->deferred_err);
        CRN_DEBUG("remote: batched call %llu failed: %d",
                  (unsigned long long)r->deferred_seq, r->deferred_err);
    }
    bool fits = s && s->dst && r->bulk_offset <= s->dst_len &&
                r->bulk_len <= s->dst_len - r->bulk_offset;
    double t0 = r->bulk_len ? shim_now() : 0;
    if (r->bulk_len && s && s->sink) {
        /* Handed on where the bytes lie (remote_ring.c). */
        if ((rc = shim_conn_sink_piece(s, r)) < 0) {
            sink_done(s);
            crane__server_message__free_unpacked(msg, NULL);
            return rc;
        }
    } else if (r->bulk_len && r->shm_bulk && shim_conn_ring1_held()) {
        /* A sink still uses ring 1's room before this piece, which a take
         * would free under it: never wrong bytes, the connection ends. */
        CRN_ERROR("remote: call %llu's bytes arrived while a sink holds "
                  "ring 1: closing the connection",
                  (unsigned long long)r->seq);
        crane__server_message__free_unpacked(msg, NULL);
        return -EPROTO;
    } else if (r->bulk_len && r->shm_bulk) {
        /* The bytes are in ring 1: copied out (or dropped) in order; a
         * piece out of place ends the connection, never wrong data. */
        if (!fits)
            CRN_ERROR("remote: %llu unexpected bytes for call %llu",
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
        atomic_fetch_add(&shim_conn.shm_bytes, r->bulk_len);
        rc = atomic_load(&shim_conn.shm_in)
                 ? crn_shm_take(&shim_conn.shm, CRN_SHM_TO_CLIENT, r->shm_pos,
                                r->bulk_len,
                                fits ? s->dst + r->bulk_offset : NULL)
                 : -EPROTO;
        if (rc < 0) {
            log_out_of_place(r);
            crane__server_message__free_unpacked(msg, NULL);
            return rc;
        }
    } else if (r->bulk_len) {
        atomic_fetch_add(&shim_conn.stream_bytes, r->bulk_len);
        if (fits)
            rc = crn_bulk_read_on(&shim_conn.io, s->dst + r->bulk_offset,
                               r->bulk_len);
        else {
            CRN_ERROR("remote: %llu unexpected bytes for call %llu",
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
            rc = drain(r->bulk_len);
        }
    }
    if (r->bulk_len)
        atomic_fetch_add(&shim_conn.in_copy_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
    if (r->more || !s) {
        sink_done(s);
        crane__server_message__free_unpacked(msg, NULL);
        return rc;
    }
    pthread_mutex_lock(&shim_conn.lock);
    if (s->detached) {
        unlink_slot_locked(s);
        if (r->err != CL_SUCCESS) {
            int none = 0;
            atomic_compare_exchange_strong(&shim_conn.deferred_err, &none,
                                           r->err);
        }
        crane__server_message__free_unpacked(msg, NULL);
        free(s);
    } else {
        s->msg = msg;
        s->in_sink = false;
        atomic_store_explicit(&s->done, true, memory_order_release);
        pthread_cond_broadcast(&shim_conn.cond);
    }
    pthread_mutex_unlock(&shim_conn.lock);
    return rc;
}

int shim_conn_read_one(void)
{
    uint8_t *buf;
    size_t len;
    int rc = crn_frame_read_on(&shim_conn.io, &buf, &len, MAX_REPLY_FRAME);

    shim_conn_alive();
    if (rc < 0) {
        if (!atomic_load(&shim_conn.dead) && rc != -ENODATA)
            CRN_ERROR("remote: reading from the proxy failed: %s",
                      strerror(-rc));
        else if (!atomic_load(&shim_conn.dead))
            CRN_ERROR("remote: the proxy closed the connection");
        return rc;
    }
    Crane__ServerMessage *msg = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    if (!msg) {
        CRN_ERROR("remote: undecodable message from the proxy");
        return -EPROTO;
    }
    if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY)
        return handle_reply(msg);
    if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY)
        shim_conn_notify(msg->notify);
    else
        CRN_WARN("remote: unexpected message %d from the proxy",
                 msg->msg_case);
    crane__server_message__free_unpacked(msg, NULL);
    return 0;
}

void shim_conn_broken(void)
{
    /* Fail every waiter.  Detached reads that never arrived are counted,
     * never forgotten: their bytes are missing, so every later call
     * (clFinish included) fails instead of passing partial data. */
    shim_conn_lost("the proxy closed it, or reading from it failed");
    /* The stream is out of step: nobody may read from it any more (the
     * reader thread or a caller would otherwise wait on it). */
    shutdown(shim_conn.io.fd, SHUT_RDWR);
    pthread_mutex_lock(&shim_conn.lock);
    size_t lost = 0;
    for (struct slot **pp = &shim_conn.slots; *pp;) {
        struct slot *s = *pp;
        if (s->detached) {
            *pp = s->next;
            free(s);
            lost++;
        } else {
            pp = &s->next;
        }
    }
    shim_conn.reads_lost += lost;
    if (lost)
        CRN_ERROR("remote: %zu read(s) from the proxy lost with the "
                  "connection", lost);
    pthread_cond_broadcast(&shim_conn.cond);
    pthread_cond_broadcast(&shim_conn.read_cond);
    pthread_mutex_unlock(&shim_conn.lock);
}

/* How long the parked reader sleeps before it looks again on its own:
 * bounds how late a Notify is seen while callers read their answers. */
#define PARK_MS 2

/* Reads whatever the proxy sends whenever no caller reads its own answer
 * (remote_conn.c): waits for bytes, then takes the reading for one frame. */
void *shim_conn_reader_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&shim_conn.dead)) {
        if (!crn_stream_readable(&shim_conn.io, 0, -1))
            continue;
        pthread_mutex_lock(&shim_conn.lock);
        if (shim_conn.reading != READ_FREE) {
            /* A caller reads: out of its way until it is done. */
            shim_conn.reader_parked = true;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += PARK_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            while (shim_conn.reading != READ_FREE &&
                   !atomic_load(&shim_conn.dead) &&
                   pthread_cond_timedwait(&shim_conn.read_cond,
                                          &shim_conn.lock, &ts) == 0) {
            }
            shim_conn.reader_parked = false;
            pthread_mutex_unlock(&shim_conn.lock);
            continue;
        }
        shim_conn.reading = READ_READER;
        pthread_mutex_unlock(&shim_conn.lock);
        /* The caller that read last may have taken the bytes that woke
         * us: read only what is there (a frame begun is read whole). */
        int rc = crn_stream_readable(&shim_conn.io, 0, 0) ? shim_conn_read_one()
                                                        : 0;
        pthread_mutex_lock(&shim_conn.lock);
        shim_conn.reading = READ_FREE;
        pthread_mutex_unlock(&shim_conn.lock);
        if (rc < 0)
            break;
    }
    shim_conn_broken();
    return NULL;
}

/* A caller whose answer is the next thing the proxy owes reads the socket
 * itself while nobody else does: the answer then reaches it without waking
 * the reader thread and being handed over (most answers come within tens
 * of microseconds, so it polls without sleeping for CRANE_REMOTE_SPIN_US
 * first).  It routes whatever comes meanwhile as the reader would, and
 * gives the reading back once its answer is in, or when a stream error
 * ended the connection (every waiter fails, as with the reader).  Only
 * where no other call waits: answers come in order, so a caller behind
 * another would read that one's answer first, and threads taking turns
 * would only add hand-offs. */
static bool read_own_answer(struct slot *s)
{
    bool mine;

    pthread_mutex_lock(&shim_conn.lock);
    mine = shim_conn.reading == READ_FREE && shim_conn.slots == s &&
           !s->next && shim_conn.up && !atomic_load(&shim_conn.dead);
    if (mine)
        shim_conn.reading = READ_CALLER;
    else if (shim_conn.reader_parked && shim_conn.reading == READ_FREE)
        /* The reader, parked since the last caller read, is needed now. */
        pthread_cond_broadcast(&shim_conn.read_cond);
    pthread_mutex_unlock(&shim_conn.lock);
    if (!mine)
        return false;
    int rc = 0;
    while (!atomic_load_explicit(&s->done, memory_order_acquire) &&
           !atomic_load(&shim_conn.dead)) {
        if (crn_stream_readable(&shim_conn.io, shim_conn.spin_ns, -1) &&
            (rc = shim_conn_read_one()) < 0)
            break;
    }
    pthread_mutex_lock(&shim_conn.lock);
    shim_conn.reading = READ_FREE;
    /* The reader, parked while we read, looks again on its own within a
     * few milliseconds; at once where other answers are awaited (or the
     * connection is going). */
    bool others = shim_conn.slots != s || s->next;
    if ((shim_conn.reader_parked && others) || atomic_load(&shim_conn.dead))
        pthread_cond_broadcast(&shim_conn.read_cond);
    pthread_mutex_unlock(&shim_conn.lock);
    if (rc < 0)
        shim_conn_broken();
    return true;
}

void shim_conn_await(struct slot *s)
{
    /* Behind another answer: the reader (or that answer's caller) routes
     * ours; most come within tens of microseconds, so spin a little before
     * sleeping, which saves the futex wake-up. */
    if (!read_own_answer(s) && shim_conn.spin_ns) {
        double until = shim_now() + shim_conn.spin_ns * 1e-9;
        while (!atomic_load_explicit(&s->done, memory_order_acquire) &&
               !atomic_load(&shim_conn.dead) && shim_now() < until)
            __builtin_ia32_pause();
    }
    pthread_mutex_lock(&shim_conn.lock);
    while (!atomic_load(&s->done) && !atomic_load(&shim_conn.dead))
        pthread_cond_wait(&shim_conn.cond, &shim_conn.lock);
    unlink_slot_locked(s);
    pthread_mutex_unlock(&shim_conn.lock);
}

void shim_conn_forget(struct slot *s)
{
    pthread_mutex_lock(&shim_conn.lock);
    unlink_slot_locked(s);
    pthread_mutex_unlock(&shim_conn.lock);
}

/* Runs program callbacks in order, away from the socket. */
void *shim_conn_callbacks_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&shim_conn.lock);
    for (;;) {
        while (!shim_conn.cb_head && !shim_conn.cb_stop)
            pthread_cond_wait(&shim_conn.cb_cond, &shim_conn.lock);
        if (!shim_conn.cb_head)
            break;
        struct cb_item *it = shim_conn.cb_head;
        shim_conn.cb_head = it->next;
        if (!shim_conn.cb_head)
            shim_conn.cb_tail = NULL;
        pthread_mutex_unlock(&shim_conn.lock);
        struct rc_watch *w = it->watch;
        w->fn(w->event, it->status, w->data);
        free(w);
        free(it);
        pthread_mutex_lock(&shim_conn.lock);
    }
    pthread_mutex_unlock(&shim_conn.lock);
    return NULL;
}
