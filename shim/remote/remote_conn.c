/* The remote backend's connection to crane-proxy: the batch of calls that
 * need no answer and the calls that wait for theirs (this file); its state
 * (remote_conn_state.c); the reader thread that routes replies and read
 * bytes to their callers, a caller reading its own answer, and the thread
 * that runs event callbacks (remote_conn_reader.c); the watchdog that gives
 * up on a proxy that stopped answering (remote_conn_watchdog.c);
 * connecting, the handshake and the shared area (remote_conn_setup.c).
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
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "proto/fastpack.h"
#include "proto/frame.h"
#include "proto/pcopy.h"
#include "proto/remote_calls.h"
#include "hostmem.h"
#include "remote_conn_int.h"

/* Writes to the proxy, watched while they block: a proxy that stops
 * reading leaves the send stuck (bulk leaves in chunks of
 * CRANE_REMOTE_CHUNK, each a write of its own). */
static int conn_write(const void *p, size_t len)
{
    atomic_store(&shim_conn.send_since, shim_now());
    atomic_fetch_add(&shim_conn.sending, 1);
    int rc = crn_bulk_write_on(&shim_conn.io, p, len);
    atomic_fetch_sub(&shim_conn.sending, 1);
    return rc;
}

size_t shim_remote_chunk(void)
{
    return shim_conn.chunk;
}

bool shim_remote_host_on(void)
{
    return shim_conn.host_on && !atomic_load(&shim_conn.dead);
}

void shim_remote_count_host(size_t len)
{
    atomic_fetch_add(&shim_conn.host_bytes, len);
}

uint64_t shim_remote_new_id(void)
{
    return atomic_fetch_add(&shim_conn.next_id, 1);
}

/* --- sending --------------------------------------------------------------- */

static int batch_reserve(size_t more)
{
    if (shim_conn.batch_len + more <= shim_conn.batch_cap)
        return 0;
    size_t cap = shim_conn.batch_cap ? shim_conn.batch_cap : 256u << 10;
    while (cap < shim_conn.batch_len + more)
        cap *= 2;
    unsigned char *b = realloc(shim_conn.batch, cap);
    if (!b)
        return -ENOMEM;
    shim_conn.batch = b;
    shim_conn.batch_cap = cap;
    return 0;
}

int shim_conn_flush_locked(void)
{
    int rc = 0;

    if (shim_conn.batch_len && !atomic_load(&shim_conn.dead))
        rc = conn_write(shim_conn.batch, shim_conn.batch_len);
    shim_conn.batch_len = 0;
    if (rc < 0) {
        CRN_ERROR("remote: sending to the proxy failed: %s", strerror(-rc));
        shim_conn_lost("sending to it failed");
        shutdown(shim_conn.io.fd, SHUT_RDWR);
    }
    return rc;
}

/* Puts BULK into the shared area's ring 0 and names it in M.  When the
 * ring is full, what is batched leaves first (the proxy frees room as it
 * executes those calls), then a short wait; -EAGAIN after it: the bytes
 * take the stream instead.  The proxy holds a call's room until it
 * executes the call, so a ring that stays full (the program's calls
 * queued behind a long wait there) sends the next pieces to the stream at
 * once, until room comes back. */
static int shm_put_locked(Crane__ClientMessage *m, const void *bulk,
                          size_t bulk_len)
{
    uint64_t pos;
    int rc;

    /* Pieces held for a device's copy are named in the order they were
     * taken (remote_ring.c): none may be taken after them meanwhile. */
    if (shim_conn.ring_held)
        return -EAGAIN;
    rc = crn_shm_reserve(&shim_conn.shm, CRN_SHM_TO_PROXY, bulk_len, &pos);

    if (rc == -EAGAIN) {
        double t0 = shim_now();
        if ((rc = shim_conn_flush_locked()) < 0)
            return rc;
        rc = crn_shm_reserve_wait(&shim_conn.shm, CRN_SHM_TO_PROXY, bulk_len,
                                  shim_conn.shm_stuck ? 0 : SHM_WAIT_MS, &pos);
        if (rc == -EAGAIN && !shim_conn.shm_stuck)
            CRN_DEBUG("remote: no room in the shared area for %zu bytes "
                      "after %d ms: bulk bytes take the stream until it "
                      "frees", bulk_len, SHM_WAIT_MS);
        shim_conn.shm_stuck = rc == -EAGAIN;
        atomic_fetch_add(&shim_conn.out_wait_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
    }
    if (rc < 0) {
        if (rc == -EPROTO) {
            CRN_ERROR("remote: the proxy's shared-memory ring position is "
                      "impossible; bulk bytes take the stream from now on");
            shim_conn.shm_on = false;
        }
        return rc;
    }
    double t0 = shim_now();
    crn_pcopy(crn_shm_at(&shim_conn.shm, CRN_SHM_TO_PROXY, pos), bulk,
              bulk_len);
    atomic_fetch_add(&shim_conn.out_copy_ns,
                     (uint64_t)((shim_now() - t0) * 1e9));
    m->shm_bulk = true;
    m->shm_pos = pos;
    return 0;
}

/* How LEN bulk bytes leave on the main connection (bytepath.c): the
 * shared area where SHM, else inline in the batch or after it. */
static enum shim_path send_path(size_t len, bool shm)
{
    struct shim_path_ask a = {.move = SHIM_MOVE_SEND, .len = len,
                              .shm = shm};

    return shim_path_choose(&a);
}

/* Appends M's frame (and its bulk) to the batch; big bulk is written
 * straight from the caller's memory after the batch.  Caller holds
 * send_lock. */
int shim_conn_queue_locked(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len, bool flush)
{
    size_t len = crn_fastpack_size(m);
    int rc;

    if (atomic_load(&shim_conn.dead))
        return -EPIPE;
    if (send_path(bulk_len, shim_conn.shm_on) == SHIM_PATH_SHM &&
        (rc = shm_put_locked(m, bulk, bulk_len)) == 0) {
        /* The bytes are in the area; a big piece's frame leaves at once,
         * so that the proxy copies it out (freeing its room) while the
         * next piece is copied in. */
        flush = flush || bulk_len > BULK_INLINE;
        atomic_fetch_add(&shim_conn.shm_bytes, bulk_len);
        bulk_len = 0;
        len = crn_fastpack_size(m);
    }
    if (len > MAX_FRAME) {
        CRN_ERROR("remote: a %s message of %zu bytes exceeds the %u-byte "
                  "frame limit: not sent",
                  crn_remote_call_name((int)m->msg_case), len, MAX_FRAME);
        return -EMSGSIZE;
    }
    atomic_fetch_add(&shim_conn.stream_bytes, bulk_len);
    bool inline_bulk = send_path(bulk_len, false) == SHIM_PATH_INLINE;
    if ((rc = batch_reserve(4 + len + (inline_bulk ? bulk_len : 0))) < 0)
        return rc;
    unsigned char *p = shim_conn.batch + shim_conn.batch_len;
    p[0] = (unsigned char)(len >> 24);
    p[1] = (unsigned char)(len >> 16);
    p[2] = (unsigned char)(len >> 8);
    p[3] = (unsigned char)len;
    crn_fastpack(m, p + 4);
    shim_conn.batch_len += 4 + len;
    if (bulk_len && inline_bulk) {
        memcpy(shim_conn.batch + shim_conn.batch_len, bulk, bulk_len);
        shim_conn.batch_len += bulk_len;
    } else if (bulk_len) {
        if ((rc = shim_conn_flush_locked()) < 0)
            return rc;
        double t0 = shim_now();
        rc = conn_write(bulk, bulk_len);
        atomic_fetch_add(&shim_conn.out_copy_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
        if (rc < 0) {
            shim_conn_lost("sending to it failed");
            shutdown(shim_conn.io.fd, SHUT_RDWR);
            return rc;
        }
    }
    if (flush || shim_conn.batch_len >= BATCH_FLUSH)
        return shim_conn_flush_locked();
    return 0;
}

cl_int shim_remote_take_deferred(void)
{
    /* A switch's own calls must neither fail for the program's error nor
     * swallow it (a switch back would fail, and the error be lost). */
    cl_int err = shim_own_calls
                     ? CL_SUCCESS
                     : (cl_int)atomic_exchange(&shim_conn.deferred_err, 0);

    /* A dead connection fails everything, even a clFinish with nothing
     * left to send: what it was waiting for will never come. */
    if (err == CL_SUCCESS && atomic_load(&shim_conn.dead))
        err = CL_DEVICE_NOT_AVAILABLE;
    return err;
}

cl_int shim_remote_hand_over_deferred(void)
{
    return (cl_int)atomic_exchange(&shim_conn.deferred_err, 0);
}

/* Which connection is up (0: none yet); objects of an older one are
 * gone with it. */
unsigned long shim_remote_generation(void)
{
    return shim_conn.up && !atomic_load(&shim_conn.dead)
               ? shim_conn.generation
               : 0;
}

bool shim_remote_alive(void)
{
    return shim_conn.up && !atomic_load(&shim_conn.dead);
}

/* Detached reads not yet answered, and those lost with a connection: a
 * switch counts on both being zero once its queues are finished. */
size_t shim_remote_reads_outstanding(void)
{
    size_t n;

    pthread_mutex_lock(&shim_conn.lock);
    n = shim_conn.reads_lost;
    for (struct slot *s = shim_conn.slots; s; s = s->next)
        n += s->detached;
    pthread_mutex_unlock(&shim_conn.lock);
    return n;
}

void shim_remote_bulk_stats(struct shim_bulk *out)
{
    out->out_copy_s = atomic_load(&shim_conn.out_copy_ns) / 1e9;
    out->out_wait_s = atomic_load(&shim_conn.out_wait_ns) / 1e9;
    out->in_copy_s = atomic_load(&shim_conn.in_copy_ns) / 1e9;
}

const char *shim_remote_transport(void)
{
    if (!shim_remote_alive())
        return "none";
    return shim_conn.shm_on ? "shm" : "stream";
}

cl_int shim_remote_send(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len)
{
    pthread_mutex_lock(&shim_conn.send_lock);
    m->seq = ++shim_conn.seq;
    m->want_reply = false;
    int rc = shim_conn_queue_locked(m, bulk, bulk_len, false);
    pthread_mutex_unlock(&shim_conn.send_lock);
    if (rc == -ENOMEM)
        return CL_OUT_OF_HOST_MEMORY;
    return rc < 0 ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

cl_int shim_remote_flush(void)
{
    pthread_mutex_lock(&shim_conn.send_lock);
    int rc = shim_conn_flush_locked();
    pthread_mutex_unlock(&shim_conn.send_lock);
    return rc < 0 ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

/* Registers a slot, then sends: the reader may answer at once. */
struct slot *shim_conn_send_with_slot(Crane__ClientMessage *m, const void *bulk,
                                      size_t bulk_len, void *dst,
                                      size_t dst_len, bool detached,
                                      shim_ring_sink sink, void *sink_arg,
                                      int *rc)
{
    struct slot *s = calloc(1, sizeof(*s));

    if (!s) {
        *rc = -ENOMEM;
        return NULL;
    }
    s->dst = dst;
    s->dst_len = dst_len;
    s->detached = detached;
    s->sink = sink;
    s->sink_arg = sink_arg;
    atomic_store(&shim_conn.last_request, shim_now());
    pthread_mutex_lock(&shim_conn.send_lock);
    m->seq = s->seq = ++shim_conn.seq;
    m->want_reply = true;
    pthread_mutex_lock(&shim_conn.lock);
    s->next = shim_conn.slots;
    shim_conn.slots = s;
    pthread_mutex_unlock(&shim_conn.lock);
    /* Detached reads need not leave yet: the next flush takes them. */
    *rc = shim_conn_queue_locked(m, bulk, bulk_len, !detached);
    pthread_mutex_unlock(&shim_conn.send_lock);
    return s;
}

cl_int shim_remote_call(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len, void *dst, size_t dst_len,
                        struct rc_reply *out)
{
    int rc;
    struct slot *s = shim_conn_send_with_slot(m, bulk, bulk_len, dst,
                                              dst_len, false, NULL, NULL,
                                              &rc);
    cl_int err;

    memset(out, 0, sizeof(*out));
    if (!s)
        return CL_OUT_OF_HOST_MEMORY;
    if (rc == 0)
        shim_conn_await(s);
    else
        shim_conn_forget(s);
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
        CRN_DEBUG("remote: call %llu: %d (%s)",
                  (unsigned long long)m->seq, err, out->reply->error);
    return err;
}

cl_int shim_remote_call_detached(Crane__ClientMessage *m, void *dst,
                                 size_t dst_len)
{
    int rc;
    struct slot *s = shim_conn_send_with_slot(m, NULL, 0, dst, dst_len, true,
                                              NULL, NULL, &rc);

    if (!s)
        return CL_OUT_OF_HOST_MEMORY;
    if (rc < 0) {
        shim_conn_forget(s);
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

