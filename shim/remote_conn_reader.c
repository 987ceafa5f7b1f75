/* The remote backend's listening side: the reader thread that routes the
 * proxy's replies and read bytes to their callers, the thread that runs
 * event callbacks, and the watchdog that gives up on a silent proxy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/pcopy.h"
#include "proto/spin.h"
#include "remote_conn_int.h"

/* --- receiving ------------------------------------------------------------- */

static struct slot *find_slot(uint64_t seq)
{
    pthread_mutex_lock(&shim_conn.lock);
    struct slot *s = shim_conn.slots;
    while (s && s->seq != seq)
        s = s->next;
    pthread_mutex_unlock(&shim_conn.lock);
    return s;
}

/* Bulk bytes for nobody (a bad offset, an unknown seq): read and drop. */
static int drain(size_t len)
{
    unsigned char buf[16384];
    while (len) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);
        int rc = crn_bulk_read(shim_conn.fd, buf, n);
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
    pthread_mutex_lock(&shim_conn.lock);
    if (shim_conn.cb_tail)
        shim_conn.cb_tail->next = it;
    else
        shim_conn.cb_head = it;
    shim_conn.cb_tail = it;
    pthread_cond_signal(&shim_conn.cb_cond);
    pthread_mutex_unlock(&shim_conn.lock);
}

static int handle_reply(Crane__ServerMessage *msg)
{
    Crane__Reply *r = msg->reply;
    struct slot *s = find_slot(r->seq);
    int rc = 0;

    if (r->deferred_err != 0) {
        int none = 0;
        atomic_compare_exchange_strong(&shim_conn.deferred_err, &none,
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
        atomic_fetch_add(&shim_conn.shm_bytes, r->bulk_len);
        rc = atomic_load(&shim_conn.shm_in)
                 ? crn_shm_take(&shim_conn.shm, CRN_SHM_TO_CLIENT, r->shm_pos,
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
        atomic_fetch_add(&shim_conn.stream_bytes, r->bulk_len);
        if (fits)
            rc = crn_bulk_read(shim_conn.fd, s->dst + r->bulk_offset,
                               r->bulk_len);
        else {
            LOG_ERROR("remote: %llu unexpected bytes for call %llu",
                      (unsigned long long)r->bulk_len,
                      (unsigned long long)r->seq);
            rc = drain(r->bulk_len);
        }
    }
    if (r->bulk_len)
        atomic_fetch_add(&shim_conn.in_copy_ns,
                         (uint64_t)((shim_now() - t0) * 1e9));
    if (r->more || !s) {
        crane__server_message__free_unpacked(msg, NULL);
        return rc;
    }
    pthread_mutex_lock(&shim_conn.lock);
    if (s->detached) {
        shim_conn_unlink_slot_locked(s);
        if (r->err != CL_SUCCESS) {
            int none = 0;
            atomic_compare_exchange_strong(&shim_conn.deferred_err, &none,
                                           r->err);
        }
        crane__server_message__free_unpacked(msg, NULL);
        free(s);
    } else {
        s->msg = msg;
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
    int rc = crn_frame_read(shim_conn.fd, &buf, &len, MAX_REPLY_FRAME);

    shim_conn_alive();
    if (rc < 0) {
        if (!atomic_load(&shim_conn.dead) && rc != -ENODATA)
            LOG_ERROR("remote: reading from the proxy failed: %s",
                      strerror(-rc));
        else if (!atomic_load(&shim_conn.dead))
            LOG_ERROR("remote: the proxy closed the connection");
        return rc;
    }
    Crane__ServerMessage *msg = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    if (!msg) {
        LOG_ERROR("remote: undecodable message from the proxy");
        return -EPROTO;
    }
    if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY)
        return handle_reply(msg);
    if (msg->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY)
        shim_conn_notify(msg->notify);
    else
        LOG_WARN("remote: unexpected message %d from the proxy",
                 msg->msg_case);
    crane__server_message__free_unpacked(msg, NULL);
    return 0;
}

void shim_conn_broken(void)
{
    /* Fail every waiter.  Detached reads that never arrived are counted,
     * never forgotten: their bytes are missing, so every later call
     * (clFinish included) fails instead of passing partial data. */
    atomic_store(&shim_conn.dead, true);
    /* The stream is out of step: nobody may read from it any more (the
     * reader thread or a caller would otherwise wait on it). */
    shutdown(shim_conn.fd, SHUT_RDWR);
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
        LOG_ERROR("remote: %zu read(s) from the proxy lost with the "
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
        if (!crn_spin_readable(shim_conn.fd, 0, -1))
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
        int rc = crn_spin_readable(shim_conn.fd, 0, 0) ? shim_conn_read_one()
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

/* --- liveness ------------------------------------------------------------- */

/* How long the proxy has owed us something without a sign of life: an
 * answer (a call's, a detached read's, the handshake's) since the later of
 * the request and the last frame it sent, or a send it has not taken.
 * 0 when nothing is owed. */
static double owed_for(double now)
{
    bool waiting;
    double silent = 0;

    pthread_mutex_lock(&shim_conn.lock);
    waiting = shim_conn.slots != NULL || atomic_load(&shim_conn.handshaking);
    pthread_mutex_unlock(&shim_conn.lock);
    if (waiting) {
        double since = atomic_load(&shim_conn.last_alive);
        double asked = atomic_load(&shim_conn.last_request);
        silent = now - (asked > since ? asked : since);
    }
    if (atomic_load(&shim_conn.sending) > 0 &&
        now - atomic_load(&shim_conn.send_since) > silent)
        silent = now - atomic_load(&shim_conn.send_since);
    return silent;
}

/* Asks for a sign of life: a Sync PING with a reply nobody waits for.  Not
 * when another thread is sending (that send is the test already). */
static void ping(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;

    if (atomic_load(&shim_conn.handshaking) ||
        pthread_mutex_trylock(&shim_conn.send_lock) != 0)
        return;
    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    m.seq = ++shim_conn.seq;
    m.want_reply = true;
    shim_conn_queue_locked(&m, NULL, 0, true);
    pthread_mutex_unlock(&shim_conn.send_lock);
}

/* Ends the connection: the reader sees it closed and fails every waiter;
 * a send blocked on a full socket returns. */
static void give_up(double silent_s)
{
    LOG_ERROR("remote: the proxy showed no sign of life for %.1f s while "
              "calls waited (CRANE_PROXY_TIMEOUT_MS=%ld); closing the "
              "connection, calls on it fail",
              silent_s, shim_config.proxy_timeout_ms);
    atomic_store(&shim_conn.dead, true);
    shutdown(shim_conn.fd, SHUT_RDWR);
}

void *shim_conn_watchdog_main(void *arg)
{
    long timeout_ms = shim_config.proxy_timeout_ms;
    long keep_ms = shim_config.proxy_keepalive_ms;
    long tick_ms = timeout_ms / 4;

    (void)arg;
    if (keep_ms > 0 && keep_ms < tick_ms)
        tick_ms = keep_ms;
    if (tick_ms < 10)
        tick_ms = 10;
    pthread_mutex_lock(&shim_conn.lock);
    while (!shim_conn.watchdog_stop && !atomic_load(&shim_conn.dead)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tick_ms / 1000;
        ts.tv_nsec += (tick_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&shim_conn.watchdog_cond, &shim_conn.lock, &ts);
        if (shim_conn.watchdog_stop)
            break;
        pthread_mutex_unlock(&shim_conn.lock);
        double now = shim_now();
        double silent = owed_for(now);
        if (silent <= 0) {
            /* Nothing expected: silence is fine. */
        } else if (silent * 1e3 > timeout_ms) {
            give_up(silent);
        } else if (keep_ms > 0 && silent * 1e3 >= keep_ms &&
                   (now - shim_conn.last_ping) * 1e3 >= keep_ms) {
            shim_conn.last_ping = now;
            ping();
        }
        pthread_mutex_lock(&shim_conn.lock);
    }
    pthread_mutex_unlock(&shim_conn.lock);
    return NULL;
}

void shim_conn_watchdog_stop(void)
{
    pthread_mutex_lock(&shim_conn.lock);
    shim_conn.watchdog_stop = true;
    pthread_cond_signal(&shim_conn.watchdog_cond);
    pthread_mutex_unlock(&shim_conn.lock);
    pthread_join(shim_conn.watchdog, NULL);
}
