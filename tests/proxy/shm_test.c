/* crane-proxy's shared-memory path on PoCL: `shm_test NAME` runs one case
 * (a memfd over the unix socket, a file in --shm-dir, an ivshmem BAR found
 * by its token (--shm-pci), an area given up mid-connection, a host-memory
 * region read and written in place, and what is refused: pieces out of place, an unsealed memfd, names it must not open,
 * tokens no BAR or two BARs hold). */
#include "client.h"

#include "proto/frame.h"
#include "proto/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CTX = 1, QUEUE = 2, BUF = 3 };

#define RING (1u << 20)
/* More than a ring's worth, in pieces that do not divide it: the rings
 * wrap, skipping their ends. */
#define BYTES (3u << 20)
#define PIECE (192u << 10)

/* A token and offset for the next attach (the ivshmem shape), reset by
 * it. */
static const uint8_t *next_token;
static uint64_t next_offset;

/* Sends M (seq and want_reply set here) with FD riding on it (none when
 * FD < 0) and returns the Reply's err. */
static int call_with_fd(struct client *c, Crane__ClientMessage *m, int fd)
{
    uint8_t buf[256];
    size_t len;

    m->seq = ++c->seq;
    m->want_reply = 1;
    len = crane__client_message__get_packed_size(m);
    crn_frame_header(buf, len);
    crane__client_message__pack(m, buf + CRN_FRAME_HEADER_LEN);
    len += CRN_FRAME_HEADER_LEN;
    if (fd < 0) {
        CHECK(crn_bulk_write(c->fd, buf, len) == 0);
    } else {
        union {
            struct cmsghdr h;
            char room[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {buf, len};
        struct msghdr mh = {0};
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.room;
        mh.msg_controllen = sizeof(ctl.room);
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof(int));
        CHECK_EQ(sendmsg(c->fd, &mh, MSG_NOSIGNAL), (long long)len);
    }
    Crane__ServerMessage *r = client_reply(c, m->seq);
    int err = r->reply->err;
    if (err)
        fprintf(stderr, "test: call %llu refused as %d: %s\n",
                (unsigned long long)m->seq, err, r->reply->error);
    crane__server_message__free_unpacked(r, NULL);
    return err;
}

/* Sends ShmAttach for S (a descriptor with it unless NAME) and returns the
 * Reply's err. */
static int attach(struct client *c, struct crn_shm *s, int fd,
                  const char *name)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__ShmAttach a = CRANE__SHM_ATTACH__INIT;

    a.size = s->size;
    a.ring_len = s->ring_len;
    a.name = (char *)(name ? name : "");
    if (next_token) {
        a.token.data = (uint8_t *)next_token;
        a.token.len = CRN_SHM_TOKEN_LEN;
        a.offset = next_offset;
    }
    next_token = NULL;
    next_offset = 0;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SHM_ATTACH;
    m.shm_attach = &a;
    return call_with_fd(c, &m, name ? -1 : fd);
}

/* A posted write whose bytes are in ring 0 at POS (LEN of them). */
static void post_shm_write(struct client *c, uint64_t off, uint64_t pos,
                           uint64_t len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;

    mc.queue = QUEUE;
    mc.op = CRANE__MEM_OP__MEM_WRITE;
    mc.dst = BUF;
    mc.dst_offset = off;
    mc.size = len;
    mc.bulk_len = len;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    m.shm_bulk = 1;
    m.shm_pos = pos;
    client_post(c, &m, NULL, 0);
}

/* Writes DATA through ring 0 in pieces. */
static void write_shm(struct client *c, struct crn_shm *s, const uint8_t *data,
                      size_t len)
{
    for (size_t off = 0; off < len; off += PIECE) {
        size_t n = len - off < PIECE ? len - off : PIECE;
        uint64_t pos;
        CHECK_EQ(crn_shm_reserve_wait(s, CRN_SHM_TO_PROXY, n, 10000, &pos),
                 0);
        memcpy(crn_shm_at(s, CRN_SHM_TO_PROXY, pos), data + off, n);
        post_shm_write(c, off, pos, n);
    }
}

/* A blocking read of LEN bytes whose chunks must come through ring 1. */
static void read_shm(struct client *c, struct crn_shm *s, uint8_t *out,
                     size_t len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    size_t got = 0;

    mc.queue = QUEUE;
    mc.op = CRANE__MEM_OP__MEM_READ;
    mc.src = BUF;
    mc.size = len;
    mc.blocking = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    m.want_reply = 1;
    client_send(c, &m, NULL, 0);
    for (;;) {
        Crane__ServerMessage *sm = client_reply(c, m.seq);
        Crane__Reply *r = sm->reply;
        if (r->bulk_len) {
            CHECK(r->shm_bulk);
            CHECK_EQ(r->bulk_offset, got);
            CHECK(got + r->bulk_len <= len);
            CHECK_EQ(crn_shm_take(s, CRN_SHM_TO_CLIENT, r->shm_pos,
                                  r->bulk_len, out + got),
                     0);
            got += r->bulk_len;
        }
        bool last = !r->more;
        CHECK_EQ(r->err, 0);
        crane__server_message__free_unpacked(sm, NULL);
        if (last)
            break;
    }
    CHECK_EQ(got, len);
}

/* Objects, then BYTES written and read back through the area, checked
 * byte for byte. */
static void round_trip(struct client *c, struct crn_shm *s, uint8_t seed)
{
    uint8_t *in = malloc(BYTES), *out = malloc(BYTES);

    CHECK(in && out);
    for (size_t i = 0; i < BYTES; i++)
        in[i] = (uint8_t)(i * 131 + seed + (i >> 12));
    tc_context(c, CTX);
    tc_queue(c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(c, false, BUF, CTX, BYTES, NULL), 0);
    write_shm(c, s, in, BYTES);
    memset(out, 0, BYTES);
    read_shm(c, s, out, BYTES);
    CHECK(memcmp(in, out, BYTES) == 0);
    /* Twice: the second lap reuses the rings' room. */
    read_shm(c, s, out, BYTES);
    CHECK(memcmp(in, out, BYTES) == 0);
    free(in);
    free(out);
}

static int test_memfd(void)
{
    struct proxy p;
    struct client c;
    struct crn_shm s;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(crn_shm_create(RING, &s), 0);
    CHECK_EQ(attach(&c, &s, s.fd, NULL), 0);
    CHECK(proxy_wait_log(&p, "shared memory", 1));
    round_trip(&c, &s, 7);
    client_close(&c);
    crn_shm_close(&s);
    proxy_stop(&p);
    return 0;
}

/* The ivshmem shape: both sides map one file (here in a private folder;
 * on a host, the shmem object's backing file in /dev/shm). */
static int test_file(void)
{
    char dir[] = "/tmp/crane-shm-XXXXXX", path[128];
    struct proxy p;
    struct client c;
    struct crn_shm s;
    int fd;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/area", dir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)crn_shm_size(RING)) == 0);
    close(fd);
    proxy_start(&p, "--shm-dir", dir, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(crn_shm_map_file(path, RING, &s), 0);
    CHECK_EQ(s.ring_len, RING);
    /* Names the proxy must not open: outside its folder, or none there. */
    CHECK(attach(&c, &s, -1, "../area") != 0);
    CHECK(attach(&c, &s, -1, "missing") != 0);
    CHECK_EQ(attach(&c, &s, -1, "area"), 0);
    round_trip(&c, &s, 11);
    client_close(&c);
    crn_shm_close(&s);
    proxy_stop(&p);
    unlink(path);
    rmdir(dir);
    return 0;
}

/* Refusals: an unsealed memfd (we could shrink it under the proxy), a
 * name without --shm-dir; then pieces out of place are refused one by
 * one (the call fails, nothing of them lands) and the proxy goes on. */
static int test_refused(void)
{
    struct proxy p;
    struct client c;
    struct crn_shm s, loose;
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync sy = CRANE__SYNC__INIT;
    Crane__ServerMessage *r;
    uint8_t *good = malloc(PIECE), *back = malloc(BYTES);
    uint64_t pos;

    CHECK(good && back);
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);

    int fd = memfd_create("unsealed", MFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)crn_shm_size(RING)) == 0);
    loose.size = crn_shm_size(RING);
    loose.ring_len = RING;
    CHECK(attach(&c, &loose, fd, NULL) != 0);
    close(fd);
    CHECK(attach(&c, &loose, -1, "area") != 0);

    CHECK_EQ(crn_shm_create(RING, &s), 0);
    CHECK_EQ(attach(&c, &s, s.fd, NULL), 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF, CTX, BYTES, NULL), 0);
    memset(good, 0x5a, PIECE);
    write_shm(&c, &s, good, PIECE);

    /* Garbage positions and lengths, each its own posted write: past the
     * ring, behind what was consumed, across the ring's end, longer than
     * the ring.  Each must fail, and none may write a byte. */
    const uint64_t bad[][2] = {
        {s.head[0] + 5ull * RING, 4096},
        {0, 4096},
        {s.head[0] + RING - 100, 4096},
        {s.head[0], RING + 4096},
        {UINT64_MAX - 10, 4096},
    };
    memset(crn_shm_at(&s, CRN_SHM_TO_PROXY, s.head[0]), 0xee, 4096);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        post_shm_write(&c, PIECE, bad[i][0], bad[i][1]);
        sy.op = CRANE__SYNC_OP__SYNC_FINISH;
        sy.queue = QUEUE;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        CHECK_EQ(client_call(&c, &m, NULL, 0, &r), 0);
        CHECK_EQ(r->reply->deferred_err, CL_INVALID_VALUE);
        crane__server_message__free_unpacked(r, NULL);
    }
    CHECK(proxy_wait_log(&p, "out of place", 5));
    /* A piece in place still works after them. */
    CHECK_EQ(crn_shm_reserve(&s, CRN_SHM_TO_PROXY, PIECE, &pos), 0);
    memset(crn_shm_at(&s, CRN_SHM_TO_PROXY, pos), 0x33, PIECE);
    post_shm_write(&c, 2 * PIECE, pos, PIECE);
    read_shm(&c, &s, back, 3 * PIECE);
    for (size_t i = 0; i < PIECE; i++) {
        CHECK_EQ(back[i], 0x5a);
        CHECK(back[PIECE + i] != 0xee);
        CHECK_EQ(back[2 * PIECE + i], 0x33);
    }
    client_close(&c);
    crn_shm_close(&s);
    proxy_stop(&p);
    free(good);
    free(back);
    return 0;
}

/* --no-shm: no offer in the Welcome, and an attach is refused. */
static int test_off(void)
{
    struct proxy p;
    struct client c;
    struct crn_shm s;

    proxy_start(&p, "--no-shm", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(crn_shm_create(RING, &s), 0);
    CHECK(attach(&c, &s, s.fd, NULL) != 0);
    client_close(&c);
    crn_shm_close(&s);
    proxy_stop(&p);
    return 0;
}

/* A PCI device under ROOT (ADDR, VENDOR:DEVICE) whose BAR 2 is a file of
 * BAR bytes; its path in BAR_PATH. */
static void fake_device(const char *root, const char *addr, const char *vendor,
                        const char *device, size_t bar, char *bar_path,
                        size_t bar_len)
{
    char path[256];
    FILE *f;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", root, addr);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/%s/vendor", root, addr);
    CHECK((f = fopen(path, "w")) != NULL);
    fprintf(f, "%s\n", vendor);
    fclose(f);
    snprintf(path, sizeof(path), "%s/%s/device", root, addr);
    CHECK((f = fopen(path, "w")) != NULL);
    fprintf(f, "%s\n", device);
    fclose(f);
    snprintf(bar_path, bar_len, "%s/%s/resource2", root, addr);
    fd = open(bar_path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)bar) == 0);
    close(fd);
}

/* The proxy in a proxy domain (--shm-pci): the client's area is found by
 * its token among the ivshmem BARs, at the offset it names; a token no
 * ivshmem BAR holds, or two of them hold, is refused, and a device of
 * another kind is never looked into. */
static int test_pci(void)
{
    char root[] = "/tmp/crane-pci-XXXXXX", a_bar[256], b_bar[256],
         x_bar[256], cmd[300];
    uint8_t tok_a[CRN_SHM_TOKEN_LEN], tok_b[CRN_SHM_TOKEN_LEN],
        nobody[CRN_SHM_TOKEN_LEN];
    const uint64_t off = 4u << 20;
    struct crn_shm a, b, x;
    struct proxy p;
    struct client c, c2;

    CHECK(mkdtemp(root) != NULL);
    fake_device(root, "0000:00:03.0", "0x1af4", "0x1110", 8u << 20, a_bar,
                sizeof(a_bar));
    fake_device(root, "0000:00:04.0", "0x1af4", "0x1110", 8u << 20, b_bar,
                sizeof(b_bar));
    /* An ivshmem-doorbell (0x1110 of another vendor is no ivshmem). */
    fake_device(root, "0000:00:05.0", "0x8086", "0x1110", 8u << 20, x_bar,
                sizeof(x_bar));
    CHECK_EQ(crn_shm_map_file_at(a_bar, off, 0, RING, &a), 0);
    CHECK_EQ(crn_shm_token_new(&a, tok_a), 0);
    CHECK_EQ(crn_shm_map_file_at(b_bar, off, 0, RING, &b), 0);
    CHECK_EQ(crn_shm_token_new(&b, tok_b), 0);
    /* The other kind of device holds a copy of A's header: ignored. */
    CHECK_EQ(crn_shm_map_file_at(x_bar, off, 0, RING, &x), 0);
    memcpy(x.base, a.base, CRN_SHM_HEADER);
    memset(nobody, 0x42, sizeof(nobody));

    proxy_start(&p, "tcp", "--shm-pci", root, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    next_token = nobody;
    next_offset = off;
    CHECK(attach(&c, &a, -1, NULL) != 0);
    CHECK(proxy_wait_log(&p, "no ivshmem BAR holds", 1));
    /* The right token at the wrong offset holds no area there. */
    next_token = tok_a;
    next_offset = 0;
    CHECK(attach(&c, &a, -1, NULL) != 0);
    next_token = tok_a;
    next_offset = off;
    CHECK_EQ(attach(&c, &a, -1, NULL), 0);
    CHECK(proxy_wait_log(&p, "0000:00:03.0/resource2", 1));
    round_trip(&c, &a, 13);

    /* A second client copies A's header into its own BAR: now two BARs
     * hold the token and neither is taken. */
    client_open(&c2, &p, NULL, 0, NULL, 0);
    memcpy(b.base + CRN_SHM_OFF_TOKEN, tok_a, CRN_SHM_TOKEN_LEN);
    next_token = tok_a;
    next_offset = off;
    CHECK(attach(&c2, &b, -1, NULL) != 0);
    CHECK(proxy_wait_log(&p, "more than one ivshmem BAR", 1));
    client_close(&c2);
    client_close(&c);
    crn_shm_close(&a);
    crn_shm_close(&b);
    crn_shm_close(&x);
    proxy_stop(&p);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return 0;
}

/* Sends ShmDetach (want_reply) and returns its seq; the reply is read by
 * the caller, after those of the calls before it. */
static uint64_t send_detach(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__ShmDetach d = CRANE__SHM_DETACH__INIT;

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SHM_DETACH;
    m.shm_detach = &d;
    m.want_reply = 1;
    client_send(c, &m, NULL, 0);
    return m.seq;
}

/* An area given up mid-connection, with calls in flight: writes whose
 * bytes are in ring 0 and a read whose answer comes through ring 1 are
 * sent, then ShmDetach before any answer is read; the read's bytes arrive
 * through the area before the detach's answer, every byte lands; later
 * bulk takes the stream, a piece in the old ring is refused, and a new
 * area can be attached and used. */
static int test_detach(void)
{
    struct proxy p;
    struct client c;
    struct crn_shm s, s2;
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    Crane__ServerMessage *sm;
    uint8_t *in = malloc(BYTES), *out = malloc(BYTES);
    uint64_t pos, seq_detach;
    size_t got = 0, ring_bytes = 0;

    CHECK(in && out);
    for (size_t i = 0; i < BYTES; i++)
        in[i] = (uint8_t)(i * 7 + (i >> 9));
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF, CTX, BYTES, NULL), 0);
    /* Remoting on the stream first, as a guest does before its device is
     * plugged; then the area. */
    for (size_t i = 0; i < BYTES; i++)
        out[i] = (uint8_t)~in[i];
    CHECK_EQ(tc_write(&c, true, QUEUE, BUF, 0, out, BYTES), 0);
    CHECK_EQ(crn_shm_create(RING, &s), 0);
    CHECK_EQ(attach(&c, &s, s.fd, NULL), 0);
    write_shm(&c, &s, in, BYTES);
    memset(out, 0, BYTES);

    /* In flight: a read of everything (its chunks through ring 1), then
     * the detach; nothing read yet. */
    mc.queue = QUEUE;
    mc.op = CRANE__MEM_OP__MEM_READ;
    mc.src = BUF;
    mc.size = BYTES;
    mc.blocking = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    m.want_reply = 1;
    client_send(&c, &m, NULL, 0);
    seq_detach = send_detach(&c);
    for (;;) {
        sm = client_reply(&c, m.seq);
        Crane__Reply *r = sm->reply;
        if (r->bulk_len) {
            CHECK_EQ(r->bulk_offset, got);
            CHECK(got + r->bulk_len <= BYTES);
            if (r->shm_bulk) {
                CHECK_EQ(crn_shm_take(&s, CRN_SHM_TO_CLIENT, r->shm_pos,
                                      r->bulk_len, out + got), 0);
                ring_bytes += r->bulk_len;
            } else {
                for (size_t have = 0; have < r->bulk_len;) {
                    ssize_t n = read(c.fd, out + got + have,
                                     r->bulk_len - have);
                    CHECK(n > 0);
                    have += (size_t)n;
                }
            }
            got += r->bulk_len;
        }
        bool last = !r->more;
        CHECK_EQ(r->err, 0);
        crane__server_message__free_unpacked(sm, NULL);
        if (last)
            break;
    }
    CHECK_EQ(got, BYTES);
    CHECK(ring_bytes > 0);
    CHECK(memcmp(in, out, BYTES) == 0);
    sm = client_reply(&c, seq_detach);
    CHECK_EQ(sm->reply->err, 0);
    crane__server_message__free_unpacked(sm, NULL);
    CHECK(proxy_wait_log(&p, "shared memory given up", 1));

    /* After it: the stream carries bulk both ways. */
    for (size_t i = 0; i < BYTES; i++)
        in[i] ^= 0x5a;
    CHECK_EQ(tc_write(&c, true, QUEUE, BUF, 0, in, BYTES), 0);
    memset(out, 0, BYTES);
    CHECK_EQ(tc_read(&c, QUEUE, BUF, 0, out, BYTES), 0);
    CHECK(memcmp(in, out, BYTES) == 0);
    /* A piece in the old ring is refused, lands nowhere. */
    CHECK_EQ(crn_shm_reserve(&s, CRN_SHM_TO_PROXY, PIECE, &pos), 0);
    memset(crn_shm_at(&s, CRN_SHM_TO_PROXY, pos), 0xee, PIECE);
    post_shm_write(&c, 0, pos, PIECE);
    {
        Crane__ClientMessage f = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_FINISH;
        sy.queue = QUEUE;
        f.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        f.sync = &sy;
        CHECK_EQ(client_call(&c, &f, NULL, 0, &sm), 0);
        CHECK_EQ(sm->reply->deferred_err, CL_INVALID_VALUE);
        crane__server_message__free_unpacked(sm, NULL);
    }
    /* Giving up twice is refused. */
    seq_detach = send_detach(&c);
    sm = client_reply(&c, seq_detach);
    CHECK(sm->reply->err != 0);
    crane__server_message__free_unpacked(sm, NULL);
    crn_shm_close(&s);

    /* A new area (as on the next host with one): used again. */
    CHECK_EQ(crn_shm_create(RING, &s2), 0);
    CHECK_EQ(attach(&c, &s2, s2.fd, NULL), 0);
    write_shm(&c, &s2, in, BYTES);
    memset(out, 0, BYTES);
    read_shm(&c, &s2, out, BYTES);
    CHECK(memcmp(in, out, BYTES) == 0);
    client_close(&c);
    crn_shm_close(&s2);
    proxy_stop(&p);
    free(in);
    free(out);
    return 0;
}

/* HostAttach of SIZE bytes with FD: the Reply's err. */
static int host_attach(struct client *c, int fd, uint64_t size)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__HostAttach h = CRANE__HOST_ATTACH__INIT;

    h.size = size;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_HOST_ATTACH;
    m.host_attach = &h;
    return call_with_fd(c, &m, fd);
}

/* A write (or read) of LEN bytes of BUF at OFF from (into) the host
 * region at AT: blocking, the Reply's err; else posted, 0. */
static int host_mem(struct client *c, bool write, uint64_t off, uint64_t at,
                    uint64_t len, bool blocking)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;

    mc.queue = QUEUE;
    mc.op = write ? CRANE__MEM_OP__MEM_WRITE : CRANE__MEM_OP__MEM_READ;
    if (write) {
        mc.dst = BUF;
        mc.dst_offset = off;
    } else {
        mc.src = BUF;
        mc.src_offset = off;
    }
    mc.size = len;
    mc.blocking = blocking;
    mc.host_mem = 1;
    mc.host_offset = at;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    if (!blocking) {
        client_post(c, &m, NULL, 0);
        return 0;
    }
    return client_call(c, &m, NULL, 0, NULL);
}

/* The host-memory region beside a memfd area (HostAttach, host_mem): the
 * device writes from and reads into it in place, blocking and not, every
 * byte checked; refused: a region without an area, an unsealed one, one
 * larger than its memfd, ranges outside it, host_mem on other ops. */
static int test_host(void)
{
    struct proxy p;
    struct client c;
    struct crn_shm s, h;
    const size_t len = 256u << 10, size = 1u << 20;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(crn_shm_create_plain(size, &h), 0);
    /* No area yet: refused. */
    CHECK(host_attach(&c, dup(h.fd), size) != 0);
    CHECK_EQ(crn_shm_create(RING, &s), 0);
    CHECK_EQ(attach(&c, &s, s.fd, NULL), 0);
    /* Unsealed, or larger than the memfd: refused. */
    int loose = memfd_create("unsealed", MFD_CLOEXEC);
    CHECK(loose >= 0 && ftruncate(loose, (off_t)size) == 0);
    CHECK(host_attach(&c, loose, size) != 0);
    close(loose);
    CHECK(host_attach(&c, dup(h.fd), 2 * size) != 0);
    CHECK_EQ(host_attach(&c, dup(h.fd), size), 0);
    CHECK(proxy_wait_log(&p, "mapped pointers in 1 MiB", 1));
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF, CTX, 2 * len, NULL), 0);
    for (size_t i = 0; i < len; i++)
        h.base[4096 + i] = (uint8_t)(i * 7 + (i >> 9));
    /* Blocking write, non-blocking write of the same bytes elsewhere,
     * then reads back into two other places of the region. */
    CHECK_EQ(host_mem(&c, true, 0, 4096, len, true), 0);
    CHECK_EQ(host_mem(&c, true, len, 4096, len, false), 0);
    CHECK_EQ(host_mem(&c, false, 0, size - len, len, true), 0);
    CHECK(memcmp(h.base + size - len, h.base + 4096, len) == 0);
    memset(h.base + 2 * len, 0xee, len);
    CHECK_EQ(host_mem(&c, false, len, 2 * len, len, false), 0);
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync sy = CRANE__SYNC__INIT;
    sy.op = CRANE__SYNC_OP__SYNC_FINISH;
    sy.queue = QUEUE;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
    m.sync = &sy;
    CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
    CHECK(memcmp(h.base + 2 * len, h.base + 4096, len) == 0);
    CHECK(proxy_wait_log(&p, "in place in host memory", 1));
    /* Ranges outside the region: refused, nothing written. */
    const uint64_t bad[][2] = {
        {size - 100, 4096},
        {size, 1},
        {UINT64_MAX - 10, 4096},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_EQ(host_mem(&c, false, 0, bad[i][0], bad[i][1], true),
                 CL_INVALID_VALUE);
    /* A rectangle whose rows run past the region's end. */
    Crane__MemCommand rc = CRANE__MEM_COMMAND__INIT;
    uint64_t zero[3] = {0, 0, 0}, reg[3] = {64, 16, 2};
    rc.queue = QUEUE;
    rc.op = CRANE__MEM_OP__MEM_READ_RECT;
    rc.src = BUF;
    rc.src_origin = zero;
    rc.n_src_origin = 3;
    rc.region = reg;
    rc.n_region = 3;
    rc.blocking = 1;
    rc.host_mem = 1;
    rc.host_offset = size - 1000;
    rc.host_row_pitch = 96;
    rc.host_slice_pitch = 1920;
    m = (Crane__ClientMessage)CRANE__CLIENT_MESSAGE__INIT;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &rc;
    CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
    /* host_mem is for buffer reads and writes only, without bulk. */
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    mc.queue = QUEUE;
    mc.op = CRANE__MEM_OP__MEM_COPY;
    mc.src = mc.dst = BUF;
    mc.size = 16;
    mc.dst_offset = len;
    mc.host_mem = 1;
    m = (Crane__ClientMessage)CRANE__CLIENT_MESSAGE__INIT;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
    /* The bytes in the device are still the first ones. */
    CHECK_EQ(host_mem(&c, false, 0, size - len, len, true), 0);
    CHECK(memcmp(h.base + size - len, h.base + 4096, len) == 0);
    client_close(&c);
    crn_shm_close(&s);
    crn_shm_close(&h);
    proxy_stop(&p);
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
    {"memfd", test_memfd},
    {"file", test_file},
    {"refused", test_refused},
    {"off", test_off},
    {"pci", test_pci},
    {"detach", test_detach},
    {"host", test_host},
};

int main(int argc, char **argv)
{
    size_t n = sizeof(tests) / sizeof(tests[0]);

    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            puts(tests[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: shm_test --list | NAME\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], tests[i].name) == 0)
            return tests[i].fn();
    fprintf(stderr, "shm_test: no test named '%s'\n", argv[1]);
    return 2;
}
