/* Lanes: the pieces of bulk transfers over several extra streams, each
 * lane with a sender and a receiver thread (lane.h). */
#include "proto/lane.h"

#include "proto/auth.h"
#include "proto/log.h"
#include "proto/stream.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* --- the wire ------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* magic(4) lane(4) xfer(8) offset(8) len(4) reserved(4, zero) */
void crn_lane_hdr_encode(uint8_t out[CRN_LANE_HDR_LEN],
                         const struct crn_lane_hdr *h)
{
    put32(out, CRN_LANE_MAGIC);
    put32(out + 4, h->lane);
    put64(out + 8, h->xfer);
    put64(out + 16, h->offset);
    put32(out + 24, h->len);
    put32(out + 28, 0);
}

int crn_lane_hdr_decode(const uint8_t in[CRN_LANE_HDR_LEN],
                        struct crn_lane_hdr *h)
{
    if (get(in, 4) != CRN_LANE_MAGIC || get(in + 28, 4) != 0)
        return -EPROTO;
    h->lane = (uint32_t)get(in + 4, 4);
    h->xfer = get(in + 8, 8);
    h->offset = get(in + 16, 8);
    h->len = (uint32_t)get(in + 24, 4);
    return 0;
}

bool crn_lane_shape_ok(uint64_t total, uint32_t piece, uint32_t nlanes)
{
    return total > 0 && piece >= CRN_LANE_PIECE_MIN &&
           piece <= CRN_LANE_PIECE_MAX && (piece & (piece - 1)) == 0 &&
           nlanes >= 1 && nlanes <= CRN_LANES_MAX;
}

int crn_lane_piece_check(uint64_t total, uint32_t piece, uint32_t nlanes,
                         uint32_t lane, uint64_t k,
                         const struct crn_lane_hdr *h)
{
    uint64_t npieces, off, len;

    if (!crn_lane_shape_ok(total, piece, nlanes) || lane >= nlanes ||
        h->lane != lane || k % nlanes != lane)
        return -EPROTO;
    npieces = (total + piece - 1) / piece;
    if (k >= npieces)
        return -EPROTO;
    off = k * piece;
    len = total - off < piece ? total - off : piece;
    return h->offset == off && h->len == len ? 0 : -EPROTO;
}

int crn_lane_mac(const uint8_t key[CRN_LANE_KEY_LEN], const uint8_t *token,
                 size_t token_len, uint32_t index, uint32_t generation,
                 uint8_t out[CRN_LANE_KEY_LEN])
{
    uint8_t msg[128 + 8];
    size_t len = token_len + 4;

    if (token_len > 128)
        return -EINVAL;
    memcpy(msg, token, token_len);
    put32(msg + token_len, index);
    /* Generation 0 keeps the first lanes' MAC as it always was. */
    if (generation) {
        put32(msg + len, generation);
        len += 4;
    }
    return crn_hmac_sha256(key, CRN_LANE_KEY_LEN, msg, len, out);
}

/* --- the set -------------------------------------------------------------- */

struct crn_lane_xfer {
    struct crn_lane_xfer *next;
    uint64_t id;
    uint8_t *base;
    uint64_t total, npieces, got;
    uint32_t piece, nlanes;
    uint64_t next_k[CRN_LANES_MAX];  /* the piece each lane owes next */
    unsigned busy;                   /* receivers inside its bytes */
};

struct lane {
    struct crn_lanes *ls;
    unsigned index;
    struct crn_stream st;            /* in clear or TLS (stream.h) */
    pthread_t rx, tx;
    uint64_t job_seen;               /* the sending job it last did */
    atomic_uint_fast64_t sent, received;
};

struct crn_lanes {
    char who[64];
    unsigned timeout_ms;
    pthread_mutex_t lock;
    pthread_cond_t cond;             /* CLOCK_MONOTONIC */
    struct lane lanes[CRN_LANES_MAX];
    unsigned n;
    bool dead, stopping;
    struct crn_lane_xfer *xfers;     /* receiving, registered */
    uint64_t rx_floor;               /* ids up to it are done */
    /* The sending job (one at a time: send_serial). */
    pthread_mutex_t send_serial;
    uint64_t job;                    /* its number */
    uint64_t job_id, job_total, job_from, job_to;
    const uint8_t *job_base;
    uint32_t job_piece;
    unsigned job_nlanes, job_left;
    int job_err;
    uint64_t fault_after;            /* test hook: 0 none */
    bool fault_bad;                  /* ... a bad header, not a death */
};

static void deadline_in(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void kill_locked(struct crn_lanes *ls, const char *why)
{
    if (ls->dead)
        return;
    ls->dead = true;
    if (why)
        CRN_WARN("%s: lanes off: %s", ls->who, why);
    for (unsigned i = 0; i < ls->n; i++)
        shutdown(ls->lanes[i].st.fd, SHUT_RDWR);
    pthread_cond_broadcast(&ls->cond);
}

void crn_lanes_kill(struct crn_lanes *ls, const char *why)
{
    if (!ls)
        return;
    pthread_mutex_lock(&ls->lock);
    kill_locked(ls, why);
    pthread_mutex_unlock(&ls->lock);
}

/* Moves LEN bytes at P through stream ST (WRITE: out), waiting at most
 * TIMEOUT_MS for each step of progress; IDLE_OK: the first byte may take
 * forever (a lane between transfers), and an end of stream before it is
 * -ENODATA.  0, -EPIPE at end of stream, or a negative errno. */
static int move(const struct crn_stream *st, void *p, size_t len, bool write,
                unsigned timeout_ms, bool idle_ok)
{
    uint8_t *at = p;
    size_t done = 0;

    if (write) {
        int rc = crn_stream_write_all(st, p, len, (int)timeout_ms);
        return rc == -EIO ? -EPIPE : rc;
    }
    while (done < len) {
        long n = crn_stream_read(st, at + done, len - done,
                                 idle_ok && done == 0 ? -1
                                                      : (int)timeout_ms);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return idle_ok && done == 0 ? -ENODATA : -EPIPE;
        return (int)n;
    }
    return 0;
}

static struct crn_lane_xfer *find_locked(struct crn_lanes *ls, uint64_t id)
{
    struct crn_lane_xfer *x = ls->xfers;
    while (x && x->id != id)
        x = x->next;
    return x;
}

/* One piece read on lane L: its header in H.  0, or why it failed. */
static int receive_piece(struct lane *l, const struct crn_lane_hdr *h,
                         const char **why)
{
    struct crn_lanes *ls = l->ls;
    struct crn_lane_xfer *x;
    struct timespec until;
    int rc = 0;

    deadline_in(&until, ls->timeout_ms);
    pthread_mutex_lock(&ls->lock);
    /* Its control frame may still be on its way on the main stream. */
    while (!ls->dead && !(x = find_locked(ls, h->xfer)) &&
           h->xfer > ls->rx_floor && rc == 0)
        rc = pthread_cond_timedwait(&ls->cond, &ls->lock, &until);
    if (ls->dead) {
        pthread_mutex_unlock(&ls->lock);
        *why = NULL;
        return -EPIPE;
    }
    if (!x) {
        pthread_mutex_unlock(&ls->lock);
        *why = rc ? "a piece of a transfer never announced"
                  : "a piece of a finished transfer";
        return -EPROTO;
    }
    if (crn_lane_piece_check(x->total, x->piece, x->nlanes, l->index,
                             x->next_k[l->index], h) < 0) {
        pthread_mutex_unlock(&ls->lock);
        *why = "a piece out of place (lane, offset or length)";
        return -EPROTO;
    }
    x->busy++;
    pthread_mutex_unlock(&ls->lock);
    rc = move(&l->st, x->base + h->offset, h->len, false, ls->timeout_ms,
              false);
    pthread_mutex_lock(&ls->lock);
    x->busy--;
    if (rc == 0) {
        x->next_k[l->index] += x->nlanes;
        x->got++;
        atomic_fetch_add(&l->received, h->len);
    }
    pthread_cond_broadcast(&ls->cond);
    pthread_mutex_unlock(&ls->lock);
    *why = rc == -ETIMEDOUT ? "a piece stalled past the timeout"
                            : "a lane broke mid-piece";
    return rc;
}

static void *rx_main(void *arg)
{
    struct lane *l = arg;
    struct crn_lanes *ls = l->ls;

    for (;;) {
        uint8_t raw[CRN_LANE_HDR_LEN];
        struct crn_lane_hdr h;
        const char *why = "closed by the peer mid-transfer";
        char text[160];
        int rc = move(&l->st, raw, sizeof(raw), false, ls->timeout_ms, true);
        if (rc == 0 && (rc = crn_lane_hdr_decode(raw, &h)) < 0)
            why = "a frame that is no lane piece";
        if (rc == 0)
            rc = receive_piece(l, &h, &why);
        if (rc < 0) {
            pthread_mutex_lock(&ls->lock);
            if (rc == -ENODATA && !ls->dead && !ls->stopping &&
                !ls->xfers) {
                /* Closed between transfers: the peer is leaving. */
                CRN_INFO("%s: lane %u closed by the peer",
                        ls->who, l->index);
                kill_locked(ls, NULL);
            } else if (!ls->dead && !ls->stopping) {
                snprintf(text, sizeof(text), "lane %u: %s (%s)", l->index,
                         why ? why : "ended", strerror(-rc));
                kill_locked(ls, text);
            }
            pthread_mutex_unlock(&ls->lock);
            return NULL;
        }
    }
}

/* Sends lane L's pieces of the current job. */
static int send_job(struct lane *l)
{
    struct crn_lanes *ls = l->ls;
    uint64_t npieces = (ls->job_total + ls->job_piece - 1) / ls->job_piece;

    for (uint64_t k = l->index; k < npieces; k += ls->job_nlanes) {
        uint64_t off = k * ls->job_piece;
        uint64_t len = ls->job_total - off < ls->job_piece
                           ? ls->job_total - off
                           : ls->job_piece;
        struct crn_lane_hdr h = {l->index, ls->job_id, off, (uint32_t)len};
        uint8_t raw[CRN_LANE_HDR_LEN];
        int rc;
        if (off < ls->job_from)
            continue;
        if (off >= ls->job_to)
            break;
        crn_lane_hdr_encode(raw, &h);
        if (ls->fault_after && l->index == 0 &&
            atomic_load(&l->sent) + len >= ls->fault_after &&
            ls->fault_bad) {
            /* The test hook: a piece that claims bytes past its
             * transfer; the receiver must refuse it. */
            h.offset = ls->job_total;
            crn_lane_hdr_encode(raw, &h);
            ls->fault_after = 0;
            CRN_WARN("%s: lane 0 sends a piece out of place "
                    "(test hook)", ls->who);
        } else if (ls->fault_after && l->index == 0 &&
                   atomic_load(&l->sent) + len >= ls->fault_after) {
            /* The test hook: half a piece, then the lane is gone. */
            move(&l->st, raw, sizeof(raw), true, ls->timeout_ms, false);
            move(&l->st, (void *)(ls->job_base + (off - ls->job_from)),
                 len / 2, true, ls->timeout_ms, false);
            CRN_WARN("%s: lane 0 shut down mid-piece (test "
                    "hook)", ls->who);
            shutdown(l->st.fd, SHUT_RDWR);
            return -EPIPE;
        }
        if ((rc = move(&l->st, raw, sizeof(raw), true, ls->timeout_ms,
                       false)) < 0 ||
            (rc = move(&l->st, (void *)(ls->job_base + (off - ls->job_from)),
                       len, true, ls->timeout_ms, false)) < 0)
            return rc;
        atomic_fetch_add(&l->sent, len);
    }
    return 0;
}

static void *tx_main(void *arg)
{
    struct lane *l = arg;
    struct crn_lanes *ls = l->ls;

    pthread_mutex_lock(&ls->lock);
    for (;;) {
        while (!ls->stopping && ls->job == l->job_seen)
            pthread_cond_wait(&ls->cond, &ls->lock);
        if (ls->stopping)
            break;
        l->job_seen = ls->job;
        bool dead = ls->dead;
        pthread_mutex_unlock(&ls->lock);
        int rc = dead ? -EPIPE : send_job(l);
        pthread_mutex_lock(&ls->lock);
        if (rc < 0 && !ls->job_err)
            ls->job_err = rc;
        if (rc < 0 && !ls->dead) {
            char text[96];
            snprintf(text, sizeof(text), "lane %u: sending failed (%s)",
                     l->index, strerror(-rc));
            kill_locked(ls, text);
        }
        ls->job_left--;
        pthread_cond_broadcast(&ls->cond);
    }
    pthread_mutex_unlock(&ls->lock);
    return NULL;
}

struct crn_lanes *crn_lanes_new(const char *who, unsigned timeout_ms)
{
    struct crn_lanes *ls = calloc(1, sizeof(*ls));
    pthread_condattr_t ca;

    if (!ls)
        return NULL;
    snprintf(ls->who, sizeof(ls->who), "%s", who);
    ls->timeout_ms = timeout_ms ? timeout_ms : 30000;
    pthread_mutex_init(&ls->lock, NULL);
    pthread_mutex_init(&ls->send_serial, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ls->cond, &ca);
    pthread_condattr_destroy(&ca);
    return ls;
}

int crn_lanes_add(struct crn_lanes *ls, unsigned index, int fd)
{
    return crn_lanes_add_stream(ls, index, (struct crn_stream){fd, NULL});
}

int crn_lanes_add_stream(struct crn_lanes *ls, unsigned index,
                         struct crn_stream st)
{
    struct lane *l;
    int rc;

    pthread_mutex_lock(&ls->lock);
    if (ls->dead || ls->stopping || index != ls->n ||
        index >= CRN_LANES_MAX) {
        pthread_mutex_unlock(&ls->lock);
        crn_stream_close(&st);
        return ls->dead ? -EPIPE : -EINVAL;
    }
    l = &ls->lanes[index];
    l->ls = ls;
    l->index = index;
    l->st = st;
    l->job_seen = ls->job;
    if ((rc = -pthread_create(&l->rx, NULL, rx_main, l)) < 0) {
        pthread_mutex_unlock(&ls->lock);
        crn_stream_close(&l->st);
        return rc;
    }
    if ((rc = -pthread_create(&l->tx, NULL, tx_main, l)) < 0) {
        shutdown(st.fd, SHUT_RDWR);
        pthread_mutex_unlock(&ls->lock);
        pthread_join(l->rx, NULL);
        crn_stream_close(&l->st);
        return rc;
    }
    ls->n++;
    pthread_mutex_unlock(&ls->lock);
    return 0;
}

unsigned crn_lanes_count(struct crn_lanes *ls)
{
    unsigned n;

    if (!ls)
        return 0;
    pthread_mutex_lock(&ls->lock);
    n = ls->dead ? 0 : ls->n;
    pthread_mutex_unlock(&ls->lock);
    return n;
}

bool crn_lanes_dead(struct crn_lanes *ls)
{
    return crn_lanes_count(ls) == 0;
}

void crn_lanes_free(struct crn_lanes *ls)
{
    if (!ls)
        return;
    pthread_mutex_lock(&ls->lock);
    kill_locked(ls, NULL);
    ls->stopping = true;
    pthread_cond_broadcast(&ls->cond);
    pthread_mutex_unlock(&ls->lock);
    for (unsigned i = 0; i < ls->n; i++) {
        pthread_join(ls->lanes[i].rx, NULL);
        pthread_join(ls->lanes[i].tx, NULL);
        crn_stream_close(&ls->lanes[i].st);
    }
    while (ls->xfers) {
        struct crn_lane_xfer *x = ls->xfers;
        ls->xfers = x->next;
        free(x);
    }
    pthread_cond_destroy(&ls->cond);
    pthread_mutex_destroy(&ls->lock);
    pthread_mutex_destroy(&ls->send_serial);
    free(ls);
}

void crn_lanes_bytes(struct crn_lanes *ls, unsigned i, uint64_t *sent,
                     uint64_t *received)
{
    *sent = *received = 0;
    if (!ls || i >= CRN_LANES_MAX)
        return;
    *sent = atomic_load(&ls->lanes[i].sent);
    *received = atomic_load(&ls->lanes[i].received);
}

void crn_lanes_fault_after(struct crn_lanes *ls, uint64_t bytes, bool bad)
{
    ls->fault_after = bytes;
    ls->fault_bad = bad;
}

/* --- receiving ------------------------------------------------------------ */

struct crn_lane_xfer *crn_lanes_expect(struct crn_lanes *ls, uint64_t id,
                                       void *base, uint64_t total,
                                       uint32_t piece, uint32_t nlanes)
{
    struct crn_lane_xfer *x;

    if (!crn_lane_shape_ok(total, piece, nlanes) ||
        !(x = calloc(1, sizeof(*x))))
        return NULL;
    x->id = id;
    x->base = base;
    x->total = total;
    x->piece = piece;
    x->nlanes = nlanes;
    x->npieces = (total + piece - 1) / piece;
    for (unsigned i = 0; i < CRN_LANES_MAX; i++)
        x->next_k[i] = i;
    pthread_mutex_lock(&ls->lock);
    if (ls->dead || nlanes != ls->n || id <= ls->rx_floor ||
        find_locked(ls, id)) {
        pthread_mutex_unlock(&ls->lock);
        free(x);
        return NULL;
    }
    x->next = ls->xfers;
    ls->xfers = x;
    pthread_cond_broadcast(&ls->cond);
    pthread_mutex_unlock(&ls->lock);
    return x;
}

int crn_lanes_wait(struct crn_lanes *ls, struct crn_lane_xfer *x,
                   unsigned timeout_ms)
{
    struct timespec until;
    int rc = 0;

    deadline_in(&until, timeout_ms);
    pthread_mutex_lock(&ls->lock);
    while (x->got < x->npieces && !ls->dead && rc == 0)
        rc = pthread_cond_timedwait(&ls->cond, &ls->lock, &until);
    if (x->got == x->npieces)
        rc = 0;
    else if (ls->dead)
        rc = -EPIPE;
    else {
        kill_locked(ls, "a transfer's pieces did not come in time");
        rc = -ETIMEDOUT;
    }
    pthread_mutex_unlock(&ls->lock);
    return rc;
}

void crn_lanes_forget(struct crn_lanes *ls, struct crn_lane_xfer *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&ls->lock);
    for (struct crn_lane_xfer **pp = &ls->xfers; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    /* One of which no byte came is merely cancelled (a peer that declined
     * the lanes); its pieces are refused from now on. */
    if (x->got < x->npieces && (x->got || x->busy))
        kill_locked(ls, "a transfer was given up unfinished");
    else if (x->id > ls->rx_floor)
        ls->rx_floor = x->id;
    while (x->busy)
        pthread_cond_wait(&ls->cond, &ls->lock);
    pthread_mutex_unlock(&ls->lock);
    free(x);
}

/* --- sending -------------------------------------------------------------- */

int crn_lanes_send(struct crn_lanes *ls, uint64_t id, const void *at,
                   uint64_t total, uint32_t piece, uint64_t from,
                   uint64_t to)
{
    int rc;

    pthread_mutex_lock(&ls->send_serial);
    pthread_mutex_lock(&ls->lock);
    if (ls->dead || !ls->n || !crn_lane_shape_ok(total, piece, ls->n) ||
        from % piece || from >= to) {
        rc = ls->dead || !ls->n ? -EPIPE : -EINVAL;
        pthread_mutex_unlock(&ls->lock);
        pthread_mutex_unlock(&ls->send_serial);
        return rc;
    }
    ls->job_id = id;
    ls->job_base = at;
    ls->job_total = total;
    ls->job_piece = piece;
    ls->job_from = from;
    ls->job_to = to < total ? to : total;
    ls->job_nlanes = ls->n;
    ls->job_left = ls->n;
    ls->job_err = 0;
    ls->job++;
    pthread_cond_broadcast(&ls->cond);
    /* Every sender reports, dead lanes or not: AT is the caller's once
     * this returns. */
    while (ls->job_left)
        pthread_cond_wait(&ls->cond, &ls->lock);
    rc = ls->job_err ? ls->job_err : ls->dead ? -EPIPE : 0;
    pthread_mutex_unlock(&ls->lock);
    pthread_mutex_unlock(&ls->send_serial);
    return rc;
}
