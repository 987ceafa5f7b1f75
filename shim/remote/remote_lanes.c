/* The remote backend's lanes: extra TCP streams to the proxy that carry
 * the bytes of big reads and writes in parallel (docs/remoting.md,
 * "Lanes"; proto/lane.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/lane.h"
#include "remote_conn_int.h"
#include "remote_lanes.h"

/* Pieces of at most 1 MiB: a 4 MiB chunk of the proxy's reads is one
 * piece per lane of four, and a piece is big enough that its header costs
 * nothing; a smaller transfer is cut finer, so that every lane has a
 * piece of it. */
#define LANE_PIECE (1u << 20)
/* Transfers from this size take the lanes; smaller ones the stream (the
 * one path chooser, bytepath.h). */
#define LANE_MIN SHIM_PATH_LANE_MIN
/* A write's message on the lanes: its bytes are not in the proxy's way
 * (they go into the heap it allocates), so bigger than CRANE_REMOTE_CHUNK
 * to cut the per-transfer hand-offs. */
#define LANE_CHUNK (16u << 20)
/* After lanes failed, the first rejoin is tried at the next transfer; a
 * rejoin that fails waits this long before the next, doubled each time
 * up to the cap (a proxy that refuses lanes is not asked at every
 * transfer). */
#define REJOIN_BACKOFF_MS 100
#define REJOIN_BACKOFF_MAX_MS 10000

static struct {
    pthread_mutex_t lock;        /* one transfer at a time, in order */
    /* Swapped (and killed by shim_lanes_disconnect) under set_lock, so
     * that a kill from another thread never meets a freed set. */
    pthread_mutex_t set_lock;
    struct crn_lanes *ls;
    atomic_uint n;               /* lanes in use, 0: none */
    uint64_t next_xfer;
    /* From the Welcome. */
    uint32_t lanes_max;
    uint8_t key[CRN_LANE_KEY_LEN];
    uint8_t token[64];
    size_t token_len;
    /* Where the lanes go, for a rejoin; the set's generation (0 the
     * first) and when the next rejoin may be tried. */
    struct crn_endpoint ep;
    char text[300];
    uint32_t gen;
    atomic_bool rejoin;          /* lanes failed: a fresh set is due */
    uint64_t rejoin_at_ms;
    unsigned backoff_ms;
    /* Bytes each lane carried in sets gone (earlier connections, failed
     * generations); those of the last rejoined set, for the log. */
    uint64_t out_before[CRN_LANES_MAX], in_before[CRN_LANES_MAX];
    uint64_t out_gen[CRN_LANES_MAX], in_gen[CRN_LANES_MAX];
    uint32_t logged_gen;
    bool logged_at_exit;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .set_lock = PTHREAD_MUTEX_INITIALIZER};

/* SEQ failed on the lanes (under L.lock): noted for the reader. */
static void lane_failed(uint64_t seq)
{
    shim_conn.lane_failed_seq[shim_conn.lane_failed_next++ % 64] = seq;
}

/* The messages this thread's current write call sent on the lanes: when
 * a later one of them fails, the call fails, and the proxy's deferred
 * errors for the earlier ones (whose bytes may not have come either)
 * say nothing new. */
static __thread uint64_t call_seqs[16];
static __thread unsigned call_n;

void shim_lanes_write_begin(void)
{
    call_n = 0;
}

void shim_lanes_welcome(const Crane__Welcome *w)
{
    L.lanes_max = 0;
    if (!w->lanes_max || w->lane_key.len != CRN_LANE_KEY_LEN ||
        !w->session_token.len || w->session_token.len > sizeof(L.token))
        return;
    L.lanes_max = w->lanes_max;
    memcpy(L.key, w->lane_key.data, CRN_LANE_KEY_LEN);
    memcpy(L.token, w->session_token.data, w->session_token.len);
    L.token_len = w->session_token.len;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Under L.lock: the set in use is given up (its bytes kept for the log);
 * freed once no other thread can reach it. */
static void drop_set_locked(void)
{
    struct crn_lanes *ls;

    pthread_mutex_lock(&L.set_lock);
    ls = L.ls;
    L.ls = NULL;
    atomic_store(&L.n, 0);
    pthread_mutex_unlock(&L.set_lock);
    if (!ls)
        return;
    for (unsigned i = 0; i < CRN_LANES_MAX; i++) {
        uint64_t out, in;
        crn_lanes_bytes(ls, i, &out, &in);
        L.out_before[i] += out;
        L.in_before[i] += in;
        if (L.gen) {
            L.out_gen[i] = out;
            L.in_gen[i] = in;
        }
    }
    if (L.gen)
        L.logged_gen = L.gen;
    crn_lanes_free(ls);
}

static void log_lanes(void)
{
    uint32_t gen = L.ls && L.gen ? L.gen : L.logged_gen;

    for (unsigned i = 0; i < CRN_LANES_MAX; i++) {
        uint64_t out, in, gout = L.out_gen[i], gin = L.in_gen[i];
        crn_lanes_bytes(L.ls, i, &out, &in);
        if (L.ls && L.gen) {
            gout = out;
            gin = in;
        }
        out += L.out_before[i];
        in += L.in_before[i];
        if (out || in)
            CRN_INFO("remote: lane %u carried %llu bytes out, %llu in", i,
                     (unsigned long long)out, (unsigned long long)in);
        /* What the lanes carried after they were rejoined. */
        if (gen && (gout || gin))
            CRN_INFO("remote: rejoined lane %u (generation %u) carried %llu "
                     "bytes out, %llu in", i, gen, (unsigned long long)gout,
                     (unsigned long long)gin);
    }
}

/* Lane INDEX's handshake on stream ST: Hello with its MAC, the proxy's
 * Challenge answered as the main connection's, then its Welcome. */
static int lane_handshake(const struct crn_stream *st, unsigned index)
{
    Crane__Hello hello = CRANE__HELLO__INIT;
    uint8_t mac[CRN_LANE_KEY_LEN];
    int rc;

    if ((rc = crn_lane_mac(L.key, L.token, L.token_len, index, L.gen,
                           mac)) < 0)
        return rc;
    hello.version = RPC_VERSION;
    hello.program = "lane";
    hello.pid = (uint32_t)getpid();
    hello.lane_of.data = L.token;
    hello.lane_of.len = L.token_len;
    hello.lane_index = index;
    hello.lane_generation = L.gen;
    hello.lane_mac.data = mac;
    hello.lane_mac.len = sizeof(mac);
    RC_MSG(m, hello, HELLO, &hello);
    m.seq = 1;
    if ((rc = crn_frame_write_on(st, &m.base)) < 0)
        return rc;
    for (int step = 0; step < 3; step++) {
        uint8_t *buf;
        size_t len;
        if ((rc = crn_frame_read_on(st, &buf, &len, 64u << 10)) < 0)
            return rc;
        Crane__ServerMessage *s = crane__server_message__unpack(NULL, len,
                                                                buf);
        free(buf);
        if (!s)
            return -EPROTO;
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE) {
            uint8_t amac[32];
            Crane__Auth auth = CRANE__AUTH__INIT;
            rc = shim_conn_auth_mac(s->challenge, amac);
            crane__server_message__free_unpacked(s, NULL);
            if (rc < 0)
                return rc;
            auth.mac.data = amac;
            auth.mac.len = sizeof(amac);
            RC_MSG(a, auth, AUTH, &auth);
            a.seq = 2;
            if ((rc = crn_frame_write_on(st, &a.base)) < 0)
                return rc;
            continue;
        }
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_REFUSED)
            CRN_WARN("remote: the proxy refused lane %u: %s", index,
                     s->refused->reason);
        rc = s->msg_case == CRANE__SERVER_MESSAGE__MSG_WELCOME &&
                     s->welcome->version == RPC_VERSION
                 ? 0
                 : -EACCES;
        crane__server_message__free_unpacked(s, NULL);
        return rc;
    }
    return -EPROTO;
}

/* Lane INDEX: connected, in TLS as the main connection is (its own
 * session in *ST), its handshake bounded by the proxy timeout.  0 or
 * < 0. */
static int lane_open(const struct crn_endpoint *ep, const char *text,
                     unsigned index, struct crn_stream *st)
{
    long ms = shim_config.proxy_timeout_ms > 0 ? shim_config.proxy_timeout_ms
                                               : 20000;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000}, none = {0, 0};
    int fd = crn_endpoint_connect(ep), rc;

    if (fd < 0)
        return fd;
    if ((fd = shim_conn_tls_wrap(fd, ep, text, st)) < 0)
        return fd;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if ((rc = lane_handshake(st, index)) < 0) {
        crn_stream_close(st);
        return rc;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
    return 0;
}

/* Under L.lock: a set of lanes of generation L.gen opened, one lane
 * after another; in use when two or more joined.  0, or -1. */
static int open_set_locked(void)
{
    unsigned want = (unsigned)shim_config.remote_lanes, n = 0;
    long ms = shim_config.proxy_timeout_ms > 0 ? shim_config.proxy_timeout_ms
                                               : 20000;
    struct crn_lanes *ls = crn_lanes_new("remote", (unsigned)ms);

    if (want > L.lanes_max)
        want = L.lanes_max;
    for (unsigned i = 0; ls && i < want; i++) {
        struct crn_stream st;
        int rc = lane_open(&L.ep, L.text, i, &st);
        if (rc < 0 || crn_lanes_add_stream(ls, i, st) < 0) {
            CRN_WARN("remote: lane %u to %s: %s; %u lane(s)", i, L.text,
                     strerror(rc < 0 ? -rc : EPIPE), i);
            break;
        }
        n++;
    }
    if (n < 2) {
        /* One lane beside the stream gains nothing. */
        crn_lanes_free(ls);
        return -1;
    }
    /* The test hook's fault is the first set's only: a rejoined set
     * carries the later rounds whole. */
    if (shim_config.lanes_fault_bytes && L.gen == 0)
        crn_lanes_fault_after(ls, (uint64_t)shim_config.lanes_fault_bytes,
                              shim_config.lanes_fault_bad);
    pthread_mutex_lock(&L.set_lock);
    L.ls = ls;
    atomic_store(&L.n, n);
    pthread_mutex_unlock(&L.set_lock);
    return 0;
}

void shim_lanes_connect(const struct crn_endpoint *ep, const char *text)
{
    if (ep->kind != CRN_EP_TCP || shim_config.remote_lanes < 2 ||
        !L.lanes_max)
        return;
    pthread_mutex_lock(&L.lock);
    L.ep = *ep;
    snprintf(L.text, sizeof(L.text), "%s", text);
    L.next_xfer = 0;
    L.gen = 0;
    L.rejoin = false;
    L.backoff_ms = 0;
    if (open_set_locked() == 0) {
        CRN_INFO("remote: %u lanes to %s carry transfers from %u KiB",
                 atomic_load(&L.n), text, LANE_MIN >> 10);
        if (!L.logged_at_exit)
            L.logged_at_exit = atexit(log_lanes) == 0;
    }
    pthread_mutex_unlock(&L.lock);
}

void shim_lanes_disconnect(void)
{
    /* A transfer under way (holding L.lock) fails at once. */
    pthread_mutex_lock(&L.set_lock);
    crn_lanes_kill(L.ls, NULL);
    pthread_mutex_unlock(&L.set_lock);
    pthread_mutex_lock(&L.lock);
    drop_set_locked();
    L.rejoin = false;
    pthread_mutex_unlock(&L.lock);
}

bool shim_lanes_fit(size_t len)
{
    struct shim_path_ask a = {.move = SHIM_MOVE_SEND,
                              .len = len,
                              /* A rejoin due is tried by the transfer. */
                              .lanes = atomic_load(&L.n) != 0 ||
                                       atomic_load(&L.rejoin),
                              .shm = shim_conn.shm_on};

    return shim_path_choose(&a) == SHIM_PATH_LANES;
}

size_t shim_lanes_chunk(void)
{
    return LANE_CHUNK;
}

/* Under L.lock: a fresh set of lanes in place of those that failed, once
 * the backoff allows: every frame sent before is read by the proxy first
 * (one round trip), so that no transfer named on the old set is taken
 * for the new one; the proxy then retires the old set. */
static void rejoin_locked(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;
    struct rc_reply r;
    uint64_t now = now_ms();
    cl_int err;

    if (now < L.rejoin_at_ms)
        return;
    if (L.gen + 1 >= CRN_LANE_GENERATIONS) {
        CRN_WARN("remote: the lanes failed %u times: bulk bytes take the "
                 "stream from now on", CRN_LANE_GENERATIONS);
        L.rejoin = false;
        return;
    }
    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    L.gen++;
    if (err == CL_SUCCESS && open_set_locked() == 0) {
        CRN_INFO("remote: %u lanes rejoined to %s (generation %u)",
                 atomic_load(&L.n), L.text, L.gen);
        L.rejoin = false;
        L.backoff_ms = 0;
        return;
    }
    L.backoff_ms = L.backoff_ms ? L.backoff_ms * 2 : REJOIN_BACKOFF_MS;
    if (L.backoff_ms > REJOIN_BACKOFF_MAX_MS)
        L.backoff_ms = REJOIN_BACKOFF_MAX_MS;
    L.rejoin_at_ms = now + L.backoff_ms;
    CRN_WARN("remote: lanes not rejoined (generation %u); next try in %u ms",
             L.gen, L.backoff_ms);
}

/* Under L.lock: whether the lanes can take a transfer.  Dead ones are
 * given up (the stream carries the bytes meanwhile) and a fresh set
 * joined in their place (rejoin_locked). */
static bool usable_locked(void)
{
    if (L.ls && crn_lanes_dead(L.ls)) {
        CRN_WARN("remote: the lanes failed: bulk bytes take the stream "
                 "until they rejoin");
        drop_set_locked();
        L.rejoin = true;
        L.rejoin_at_ms = now_ms() + L.backoff_ms;
    }
    if (shim_conn.shm_on)
        return false;
    if (!L.ls && L.rejoin)
        rejoin_locked();
    return L.ls && atomic_load(&L.n);
}

static void name_transfer(Crane__ClientMessage *m, size_t len)
{
    uint32_t piece = LANE_PIECE;

    while (piece > CRN_LANE_PIECE_MIN && (uint64_t)piece * L.n > len)
        piece /= 2;
    m->lane_xfer = ++L.next_xfer;
    m->lanes = L.n;
    m->lane_piece = piece;
}

cl_int shim_lanes_write(Crane__ClientMessage *m, const void *bulk,
                        size_t len)
{
    int rc;

    pthread_mutex_lock(&L.lock);
    if (!usable_locked()) {
        pthread_mutex_unlock(&L.lock);
        return shim_remote_send(m, bulk, len);
    }
    name_transfer(m, len);
    /* The control frame leaves first (with the batch before it), in the
     * stream's order; the pieces follow on the lanes. */
    pthread_mutex_lock(&shim_conn.send_lock);
    m->seq = ++shim_conn.seq;
    m->want_reply = false;
    rc = shim_conn_queue_locked(m, NULL, 0, true);
    pthread_mutex_unlock(&shim_conn.send_lock);
    if (rc < 0) {
        pthread_mutex_unlock(&L.lock);
        return rc == -ENOMEM ? CL_OUT_OF_HOST_MEMORY
                             : CL_DEVICE_NOT_AVAILABLE;
    }
    rc = crn_lanes_send(L.ls, m->lane_xfer, bulk, len, m->lane_piece, 0,
                        len);
    if (rc < 0) {
        /* The proxy never executes it (its bytes did not all come) and
         * says so later; this call says it now. */
        lane_failed(m->seq);
        for (unsigned i = 0; i < call_n && i < 16; i++)
            lane_failed(call_seqs[i]);
        CRN_ERROR("remote: a write of %zu bytes failed on the lanes: %s",
                  len, strerror(-rc));
        pthread_mutex_unlock(&L.lock);
        return CL_OUT_OF_RESOURCES;
    }
    if (call_n < 16)
        call_seqs[call_n++] = m->seq;
    pthread_mutex_unlock(&L.lock);
    return CL_SUCCESS;
}

cl_int shim_lanes_read(Crane__ClientMessage *m, void *dst, size_t len)
{
    struct crn_lane_xfer *x;
    struct rc_reply r;
    cl_int err;
    int rc;

    pthread_mutex_lock(&L.lock);
    if (!usable_locked()) {
        pthread_mutex_unlock(&L.lock);
        err = shim_remote_call(m, NULL, 0, dst, len, &r);
        shim_remote_reply_free(&r);
        return err;
    }
    name_transfer(m, len);
    x = crn_lanes_expect(L.ls, m->lane_xfer, dst, len, m->lane_piece, L.n);
    if (!x) {
        m->lane_xfer = 0;
        m->lanes = m->lane_piece = 0;
    }
    /* Bytes the proxy sends on the stream instead (it may decline the
     * lanes) land in DST as always. */
    err = shim_remote_call(m, NULL, 0, dst, len, &r);
    uint64_t on_lanes = r.reply ? r.reply->lane_bytes : 0;
    shim_remote_reply_free(&r);
    if (x && on_lanes == len) {
        rc = crn_lanes_wait(L.ls, x, (unsigned)(shim_config.proxy_timeout_ms
                                                    > 0
                                                    ? shim_config
                                                          .proxy_timeout_ms
                                                    : 20000));
        if (rc < 0) {
            CRN_ERROR("remote: a read of %zu bytes failed on the lanes: %s",
                      len, strerror(-rc));
            if (err == CL_SUCCESS)
                err = CL_OUT_OF_RESOURCES;
        }
    } else if (x && on_lanes) {
        CRN_ERROR("remote: the proxy sent %llu of a read's %zu bytes on the "
                  "lanes", (unsigned long long)on_lanes, len);
        crn_lanes_kill(L.ls, "a read's bytes half on the lanes");
        if (err == CL_SUCCESS)
            err = CL_OUT_OF_RESOURCES;
    }
    /* Unfinished (nothing came, or the lanes failed): no receiver touches
     * DST once this returns. */
    crn_lanes_forget(L.ls, x);
    pthread_mutex_unlock(&L.lock);
    return err;
}

