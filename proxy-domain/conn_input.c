/* A connection's input: reading, cutting frames into requests, bulk bytes
 * read where the executor wants them, descriptors and shared areas, and
 * the bytes handed between supervisor and worker. */
#include "conn.h"

#include "arena.h"
#include "lanes.h"
#include "proto/log.h"
#include "shm_pci.h"
#include "validate.h"
#include "hostmem.h"
#include "ringpin.h"

#include "proto/frame.h"
#include "proto/shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room the input buffer keeps free for the next read. */
#define READ_ROOM (64u << 10)

static int attach_area(struct px_conn *c, const Crane__ShmAttach *a,
                       char *why, size_t why_len);
static int detach_area(struct px_conn *c, char *why, size_t why_len);
static int attach_host(struct px_conn *c, const Crane__HostAttach *h,
                       char *why, size_t why_len);

void px_conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct px_conn *c = h->data;

    (void)suggested;
    if (c->bulk_req) {
        /* Bulk bytes go straight where the executor wants them. */
        *buf = uv_buf_init((char *)c->bulk_req->bulk + c->bulk_have,
                           (unsigned)(c->bulk_req->bulk_len - c->bulk_have));
        return;
    }
    if (c->icap - c->ilen < READ_ROOM) {
        size_t cap = c->ilen + READ_ROOM * 2;
        uint8_t *p;
        if (cap > PX_MAX_FRAME + CRN_FRAME_HEADER_LEN + READ_ROOM)
            cap = PX_MAX_FRAME + CRN_FRAME_HEADER_LEN + READ_ROOM;
        p = cap > c->icap ? realloc(c->ibuf, cap) : NULL;
        if (p) {
            c->ibuf = p;
            c->icap = cap;
        }
    }
    *buf = uv_buf_init((char *)c->ibuf + c->ilen,
                       (unsigned)(c->icap - c->ilen));
}

/* Whether M is an attach or detach of shared or host memory that failed:
 * R->error then says why. */
static bool attach_failed(struct px_conn *c, const Crane__ClientMessage *m,
                          struct px_req *r)
{
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_SHM_ATTACH:
        return attach_area(c, m->shm_attach, r->error, sizeof(r->error)) < 0;
    case CRANE__CLIENT_MESSAGE__MSG_HOST_ATTACH:
        return attach_host(c, m->host_attach, r->error, sizeof(r->error)) < 0;
    case CRANE__CLIENT_MESSAGE__MSG_SHM_DETACH:
        return detach_area(c, r->error, sizeof(r->error)) < 0;
    default:
        return false;
    }
}

/* M's BULK bytes are in ring 0: claimed now, in the stream's order; the
 * call's execution copies them out (or stages a write through pinned
 * memory) and frees their room, in the same order (exec.c).  A piece out
 * of place is refused in R->error (M freed); nothing of it is used. */
static void take_shm_bulk(struct px_conn *c, Crane__ClientMessage *m,
                          struct px_arena *a, struct px_req *r, uint64_t bulk)
{
    unsigned char *at;
    int rc = bulk && c->shm ? crn_shm_claim(c->shm, CRN_SHM_TO_PROXY,
                                            m->shm_pos, bulk, &at)
                            : -EPROTO;

    if (rc < 0) {
        snprintf(r->error, sizeof(r->error),
                 "shared-memory bytes out of place (position %llu, "
                 "%llu bytes)", (unsigned long long)m->shm_pos,
                 (unsigned long long)bulk);
        r->deferred = !m->want_reply;
        px_arena_free(m, a);
        return;
    }
    r->msg = m;
    r->arena = a;
    r->bulk_len = bulk;
    r->ring = c->shm;
    r->ring_pos = m->shm_pos;
}

/* Handles the message M (taking it, and the arena A it was decoded into)
 * that the frame held; AFTER is the input after the frame, from which bulk
 * bytes are taken.  Returns how many bytes of bulk it took, or -1 to stop
 * parsing. */
static long take_message(struct px_conn *c, Crane__ClientMessage *m,
                         struct px_arena *a, const uint8_t *after,
                         size_t after_len)
{
    uint64_t bulk = px_bulk_len(m);
    struct px_req *r;
    size_t n;

    if (bulk > PX_MAX_BULK) {
        char why[96];
        snprintf(why, sizeof(why), "bulk of %llu bytes over the %u limit",
                 (unsigned long long)bulk, PX_MAX_BULK);
        px_conn_out_of_step(c, m->seq, why);
        px_arena_free(m, a);
        return -1;
    }
    if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
        /* Decoded on the heap (parse): the handshake frees it so. */
        if (bulk) {
            px_arena_free(m, a);
            px_conn_refuse(c, "bulk data before the handshake ended");
            return -1;
        }
        px_handshake(c, m);
        return 0;
    }
    r = calloc(1, sizeof(*r));
    if (r && bulk && !m->shm_bulk)
        r->bulk = malloc(bulk);
    if (!r || (bulk && !m->shm_bulk && !r->bulk)) {
        free(r);
        px_arena_free(m, a);
        px_conn_out_of_step(c, 0, "out of memory for the bulk data");
        return -1;
    }
    r->seq = m->seq;
    if (attach_failed(c, m, r) || m->shm_bulk) {
        /* A failed attach or detach is answered with its reason (bulk
         * keeps to the stream); shared-memory bytes are claimed. */
        if (m->shm_bulk && !r->error[0])
            take_shm_bulk(c, m, a, r, bulk);
        else
            px_arena_free(m, a);
        px_conn_queue(c, r);
        return 0;
    }
    if (m->lane_xfer && bulk) {
        /* The bytes come on the lanes, into R->bulk; the call waits for
         * them (lanes.c). */
        r->msg = m;
        r->arena = a;
        r->bulk_len = bulk;
        px_lanes_expect(c->tenant, r, m, bulk);
        px_conn_queue(c, r);
        return 0;
    }
    r->msg = m;
    r->arena = a;
    r->bulk_len = bulk;
    n = after_len < bulk ? after_len : bulk;
    if (n)
        memcpy(r->bulk, after, n);
    if (n < bulk) {
        c->bulk_req = r;
        c->bulk_have = n;
    } else {
        px_conn_queue(c, r);
    }
    return (long)n;
}

/* Cuts the buffered input into frames and requests. */
static void parse(struct px_conn *c)
{
    size_t pos = 0;

    while (!c->input_done && !c->bulk_req && c->state != PX_CONN_CLOSING &&
           c->state != PX_CONN_HANDOFF) {
        const uint8_t *msg;
        size_t len, used;
        Crane__ClientMessage *m;
        struct px_arena *arena;
        long took;
        int rc = crn_frame_decode(c->ibuf + pos, c->ilen - pos, PX_MAX_FRAME,
                                  &msg, &len, &used);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            px_conn_out_of_step(c, 0, "frame over the 1 MiB limit");
            break;
        }
        pos += used;
        /* The handshake's messages stay on the heap (handshake.c frees
         * them so); every later one gets an arena. */
        if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
            arena = NULL;
            m = crane__client_message__unpack(NULL, len, msg);
        } else {
            m = px_arena_unpack(msg, len, &arena);
        }
        if (!m) {
            struct px_req *r;
            if (c->state == PX_CONN_HELLO || c->state == PX_CONN_AUTH) {
                px_conn_refuse(c, "a frame that does not decode");
                break;
            }
            r = calloc(1, sizeof(*r));
            if (!r) {
                px_conn_close(c, "out of memory");
                break;
            }
            snprintf(r->error, sizeof(r->error), "frame does not decode");
            px_conn_queue(c, r);
            continue;
        }
        took = take_message(c, m, arena, c->ibuf + pos, c->ilen - pos);
        if (took < 0)
            break;
        pos += (size_t)took;
    }
    if (c->state == PX_CONN_CLOSING || c->input_done) {
        c->ilen = 0;
        return;
    }
    memmove(c->ibuf, c->ibuf + pos, c->ilen - pos);
    c->ilen -= pos;
}

static void close_tmp(uv_handle_t *h)
{
    free(h);
}

/* Descriptors that came with the stream's bytes: the latest is kept for
 * the ShmAttach it rides on, any other is closed (a client cannot make us
 * hold more than one). */
static void take_descriptors(struct px_conn *c)
{
    if (c->tr.h.handle.type != UV_NAMED_PIPE)
        return;
    while (uv_pipe_pending_count(&c->tr.h.pipe) > 0) {
        uv_pipe_t *tmp = malloc(sizeof(*tmp));
        uv_os_fd_t fd = -1;
        int kept = -1;
        if (!tmp || uv_pipe_init(c->srv->loop, tmp, 0) < 0) {
            free(tmp);
            px_conn_close(c, "out of memory");
            return;
        }
        tmp->data = NULL;
        if (uv_accept(&c->tr.h.stream, (uv_stream_t *)tmp) == 0 &&
            uv_fileno((uv_handle_t *)tmp, &fd) == 0)
            kept = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        uv_close((uv_handle_t *)tmp, close_tmp);
        if (c->shm_fd >= 0)
            close(c->shm_fd);
        c->shm_fd = kept;
    }
}

/* The area a ShmAttach names: a file in --shm-dir, or the ivshmem BAR
 * that holds its token (--shm-pci).  Returns 0 or a negative errno with
 * WHY set. */
static int map_named(struct px_conn *c, const Crane__ShmAttach *a,
                     struct crn_shm *s, char *why, size_t why_len)
{
    const struct px_server *srv = c->srv;
    char path[512];
    int rc;

    if (srv->shm_pci && a->token.len) {
        rc = px_shm_pci_find(srv->shm_pci, a->token.data, a->token.len,
                             a->offset, s, path, sizeof(path));
        if (rc == -EEXIST)
            snprintf(why, why_len, "the area's token is in more than one "
                     "ivshmem BAR (--shm-pci %.64s)", srv->shm_pci);
        else if (rc < 0)
            snprintf(why, why_len, "no ivshmem BAR holds the area's token "
                     "(--shm-pci %.64s): %s", srv->shm_pci, strerror(-rc));
        else
            CRN_INFO("tenant %llu: its shared area is %s at %llu",
                    (unsigned long long)c->tenant->num, path,
                    (unsigned long long)a->offset);
        return rc;
    }
    if (!a->name || !a->name[0] || !srv->shm_dir || strchr(a->name, '/') ||
        strcmp(a->name, ".") == 0 || strcmp(a->name, "..") == 0) {
        snprintf(why, why_len, "no shared file '%.64s' here (--shm-dir%s)",
                 a->name ? a->name : "", srv->shm_pci ? ", no token" : "");
        return -EPERM;
    }
    snprintf(path, sizeof(path), "%s/%s", srv->shm_dir, a->name);
    rc = crn_shm_map_file_at(path, a->offset, 0, 0, s);
    if (rc == 0 && a->token.len && !crn_shm_token_is(s, a->token.data,
                                                     a->token.len)) {
        px_shm_close(s);
        snprintf(why, why_len, "'%.64s' does not hold the area's token",
                 a->name);
        return -EPERM;
    }
    if (rc < 0)
        snprintf(why, why_len, "shared file '%.64s': %s", a->name,
                 strerror(-rc));
    return rc;
}

/* ShmAttach: maps the client's area (the descriptor that came with this
 * frame, or a file or BAR it names).  Returns 0 or sets WHY. */
static int attach_area(struct px_conn *c, const Crane__ShmAttach *a,
                       char *why, size_t why_len)
{
    struct crn_shm *s;
    int rc;

    if (c->srv->no_shm) {
        snprintf(why, why_len, "shared memory is off (--no-shm)");
        return -EPERM;
    }
    if (c->shm) {
        snprintf(why, why_len, "a shared area is attached already");
        return -EBUSY;
    }
    if (c->shm_leaving) {
        /* Given up before: gone once its ShmDetach executed. */
        if (!atomic_load(&c->tenant->shm_given_up)) {
            snprintf(why, why_len, "the previous shared area is still "
                     "being given up");
            return -EBUSY;
        }
        px_shm_close(c->shm_leaving);
        free(c->shm_leaving);
        c->shm_leaving = NULL;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    s->fd = -1;
    if ((a->name && a->name[0]) || a->token.len) {
        if ((rc = map_named(c, a, s, why, why_len)) == 0 &&
            (s->size != a->size || s->ring_len != a->ring_len)) {
            px_shm_close(s);
            rc = -EINVAL;
        }
        if (rc < 0 && !why[0])
            snprintf(why, why_len, "shared area of %llu bytes refused: %s",
                     (unsigned long long)a->size, strerror(-rc));
        if (rc < 0) {
            free(s);
            return rc;
        }
    } else {
        rc = c->shm_fd >= 0
                 ? crn_shm_map_fd(c->shm_fd, a->size, a->ring_len, true, s)
                 : -EBADF;
        c->shm_fd = -1;         /* taken, closed on failure */
        if (rc < 0) {
            snprintf(why, why_len, "shared area of %llu bytes refused: %s",
                     (unsigned long long)a->size, strerror(-rc));
            free(s);
            return rc;
        }
        px_ring_allow(s);
    }
    c->shm_memfd = !((a->name && a->name[0]) || a->token.len);
    c->shm = s;
    atomic_store(&c->tenant->shm_given_up, false);
    c->tenant->shm_offered = s;
    CRN_INFO("tenant %llu (%s pid %u): bulk bytes through %llu MiB of "
            "shared memory", (unsigned long long)c->tenant->num,
            c->tenant->program, c->tenant->pid,
            (unsigned long long)(a->size >> 20));
    return 0;
}

/* HostAttach: maps the client's host-memory region, the descriptor that
 * came with this frame (hostmem.h), beside a memfd area only.  Returns 0
 * or sets WHY. */
static int attach_host(struct px_conn *c, const Crane__HostAttach *h,
                       char *why, size_t why_len)
{
    int fd = c->shm_fd;

    c->shm_fd = -1;             /* taken, closed on failure */
    if (c->srv->no_shm || !c->shm || !c->shm_memfd) {
        if (fd >= 0)
            close(fd);
        snprintf(why, why_len, "host memory only beside a memfd area");
        return -EPERM;
    }
    return px_host_offer(c->tenant, fd, h->size, why, why_len);
}

/* ShmDetach, as its frame is read: every piece of ring 0 before it has
 * been claimed (in stream order), and their calls copy them out before
 * the ShmDetach executes (in the tenant's order); none may follow.  Its
 * executor stops ring 1 and unmaps the area. */
static int detach_area(struct px_conn *c, char *why, size_t why_len)
{
    if (!c->shm) {
        snprintf(why, why_len, "no shared area to give up");
        return -ENOENT;
    }
    c->shm_leaving = c->shm;
    c->shm = NULL;
    return 0;
}

void px_conn_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct px_conn *c = s->data;

    (void)buf;
    c->last_input_ms = uv_now(c->srv->loop);
    px_server_active(c->srv);
    if (nread < 0) {
        px_conn_close(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    take_descriptors(c);
    if (nread == 0 || c->input_done || c->state == PX_CONN_CLOSING)
        return;
    if (c->bulk_req) {
        c->bulk_have += (size_t)nread;
        if (c->bulk_have < c->bulk_req->bulk_len)
            return;
        px_conn_queue(c, c->bulk_req);
        c->bulk_req = NULL;
    } else {
        c->ilen += (size_t)nread;
    }
    parse(c);
    if (c->state == PX_CONN_HANDOFF) {
        /* What follows the handshake is the worker's to read. */
        if (c->reading) {
            px_transport_read_stop(&c->tr);
            c->reading = false;
        }
        PX_ROLE_CALL(c->srv, handoff, c);
        return;
    }
    px_conn_schedule(c);
}

/* --- handing connections between supervisor and worker ------------------ */

const uint8_t *px_conn_pending_input(const struct px_conn *c, size_t *len)
{
    *len = c->ilen;
    return c->ibuf;
}

void px_conn_handed_over(struct px_conn *c)
{
    px_conn_close(c, "handed to a worker");
}

void px_conn_start_handed(struct px_conn *c, const uint8_t *input,
                          size_t len)
{
    struct px_server *srv = c->srv;

    /* A TLS connection arrives as its relay's unix socket. */
    px_transport_tune(&c->tr, KEEPALIVE_S);
    c->accepted_ms = c->last_input_ms = uv_now(srv->loop);
    if (len) {
        c->ibuf = malloc(len + READ_ROOM);
        if (!c->ibuf) {
            px_conn_close(c, "out of memory");
            return;
        }
        memcpy(c->ibuf, input, len);
        c->ilen = len;
        c->icap = len + READ_ROOM;
    }
    px_handshake_finish(c);
    if (c->state == PX_CONN_CLOSING)
        return;
    parse(c);
    px_conn_schedule(c);
    if (!c->input_done && c->state != PX_CONN_CLOSING &&
        px_transport_read_start(&c->tr) == 0)
        c->reading = true;
}
