/* Unit tests of proto/lane.c: the piece header, the checks a receiver
 * makes, and transfers between two lane sets over socket pairs, honest
 * and hostile. */
#include "runner.h"

#include "proto/lane.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

TEST(lane_header_round_trip_and_refusals)
{
    struct crn_lane_hdr h = {3, 0x1122334455667788ull, 5u << 20, 1u << 20};
    struct crn_lane_hdr got;
    uint8_t raw[CRN_LANE_HDR_LEN];

    crn_lane_hdr_encode(raw, &h);
    ASSERT_EQ(crn_lane_hdr_decode(raw, &got), 0);
    ASSERT_EQ(got.lane, 3u);
    ASSERT(got.xfer == h.xfer && got.offset == h.offset && got.len == h.len);
    raw[0] ^= 1;                          /* magic */
    ASSERT_EQ(crn_lane_hdr_decode(raw, &got), -EPROTO);
    raw[0] ^= 1;
    raw[31] = 1;                          /* reserved */
    ASSERT_EQ(crn_lane_hdr_decode(raw, &got), -EPROTO);
}

/* Piece k of a transfer is where the shape says, on its lane, whole. */
TEST(lane_piece_check_takes_only_the_owed_piece)
{
    uint32_t piece = 1u << 20;
    uint64_t total = 5 * (uint64_t)piece + 123;  /* 6 pieces, last short */
    struct crn_lane_hdr h = {1, 7, piece, piece};

    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 1, &h), 0);
    h.lane = 2;                                   /* not its lane */
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 1, &h), -EPROTO);
    h.lane = 1;
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 5, &h), -EPROTO);
    h.offset = piece + 1;                         /* not at its place */
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 1, &h), -EPROTO);
    h.offset = piece;
    h.len = piece - 1;                            /* short */
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 1, &h), -EPROTO);
    /* The last piece is the rest; past it there is none. */
    h = (struct crn_lane_hdr){1, 7, 5 * (uint64_t)piece, 123};
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 5, &h), 0);
    h = (struct crn_lane_hdr){1, 7, 9 * (uint64_t)piece, piece};
    ASSERT_EQ(crn_lane_piece_check(total, piece, 4, 1, 9, &h), -EPROTO);
    /* Shapes: pieces a power of two in bounds, 1 to 16 lanes. */
    ASSERT(!crn_lane_shape_ok(total, 3u << 20, 4));
    ASSERT(!crn_lane_shape_ok(total, 1024, 4));
    ASSERT(!crn_lane_shape_ok(total, piece, 0));
    ASSERT(!crn_lane_shape_ok(total, piece, CRN_LANES_MAX + 1));
    ASSERT(!crn_lane_shape_ok(0, piece, 4));
}

/* Two sets joined by N socket pairs: A's lane i is B's lane i. */
static void pair_up(struct crn_lanes *a, struct crn_lanes *b, unsigned n,
                    int keep[])
{
    for (unsigned i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
            abort();
        if (keep)
            keep[i] = dup(sv[1]);
        if (crn_lanes_add(a, i, sv[0]) < 0 || crn_lanes_add(b, i, sv[1]) < 0)
            abort();
    }
}

TEST(lane_transfers_both_ways)
{
    struct crn_lanes *a = crn_lanes_new("a", 5000);
    struct crn_lanes *b = crn_lanes_new("b", 5000);
    uint32_t piece = 256u << 10;
    size_t total = 5 * piece + 4321;
    uint8_t *src = malloc(total), *dst = calloc(1, total);
    uint64_t sent = 0, got = 0;

    ASSERT(a && b && src && dst);
    for (size_t i = 0; i < total; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    pair_up(a, b, 3, NULL);
    ASSERT_EQ(crn_lanes_count(a), 3u);
    for (uint64_t id = 1; id <= 3; id++) {
        struct crn_lanes *from = id % 2 ? a : b, *to = id % 2 ? b : a;
        struct crn_lane_xfer *x;
        memset(dst, 0, total);
        x = crn_lanes_expect(to, id, dst, total, piece, 3);
        ASSERT(x != NULL);
        /* In two calls, as a read leaves chunk by chunk. */
        ASSERT_EQ(crn_lanes_send(from, id, src, total, piece, 0, 2 * piece),
                  0);
        ASSERT_EQ(crn_lanes_send(from, id, src + 2 * piece, total, piece,
                                 2 * piece, total),
                  0);
        ASSERT_EQ(crn_lanes_wait(to, x, 5000), 0);
        crn_lanes_forget(to, x);
        ASSERT_MEM_EQ(dst, src, total);
    }
    /* An id already done is refused; a cancelled one kills nothing. */
    ASSERT(crn_lanes_expect(b, 1, dst, total, piece, 3) == NULL);
    crn_lanes_forget(b, crn_lanes_expect(b, 9, dst, total, piece, 3));
    ASSERT_EQ(crn_lanes_count(b), 3u);
    for (unsigned i = 0; i < 3; i++) {
        uint64_t s, r;
        crn_lanes_bytes(a, i, &s, &r);
        sent += s;
        got += r;
    }
    ASSERT(sent == 2 * total && got == total);
    crn_lanes_free(a);
    crn_lanes_free(b);
    free(src);
    free(dst);
}

/* Pieces written raw into B's lanes, as a hostile peer would. */
static struct crn_lanes *raw_lanes(unsigned n, int peer[])
{
    struct crn_lanes *b = crn_lanes_new("b", 500);

    for (unsigned i = 0; b && i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 ||
            crn_lanes_add(b, i, sv[1]) < 0)
            abort();
        peer[i] = sv[0];
    }
    return b;
}

/* A piece past the transfer's end, or on the wrong lane, kills the lanes:
 * the wait fails and no byte lands anywhere. */
TEST(lane_refuses_hostile_pieces)
{
    uint32_t piece = 64u << 10;
    struct crn_lane_hdr bad[] = {
        {0, 1, 2 * (uint64_t)piece, piece},   /* past the end */
        {1, 1, 0, piece},                     /* lane 1's header on 0 */
        {0, 1, 0, piece + 1},                 /* longer than the piece */
        {0, 99, 0, piece},                    /* a transfer never named */
    };
    uint8_t *dst = calloc(1, 2 * piece), zero[64] = {0};

    ASSERT(dst != NULL);
    for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
        int peer[2];
        struct crn_lanes *b = raw_lanes(2, peer);
        struct crn_lane_xfer *x = crn_lanes_expect(b, 1, dst, 2 * piece,
                                                   piece, 2);
        uint8_t raw[CRN_LANE_HDR_LEN];
        ASSERT(b && x);
        crn_lane_hdr_encode(raw, &bad[t]);
        ASSERT_EQ(write(peer[0], raw, sizeof(raw)), (ssize_t)sizeof(raw));
        /* B may have shut the lane already: no SIGPIPE, any result. */
        (void)send(peer[0], zero, sizeof(zero), MSG_NOSIGNAL);
        ASSERT_EQ(crn_lanes_wait(b, x, 5000), -EPIPE);
        ASSERT_EQ(crn_lanes_count(b), 0u);
        crn_lanes_forget(b, x);
        crn_lanes_free(b);
        close(peer[0]);
        close(peer[1]);
        for (size_t i = 0; i < 2 * piece; i++)
            ASSERT_EQ(dst[i], 0);
    }
    free(dst);
}

/* A lane that ends mid-piece fails the transfer; one that stalls past the
 * timeout too. */
TEST(lane_fails_a_broken_or_stalled_piece)
{
    uint32_t piece = 64u << 10;
    uint8_t *dst = calloc(1, 2 * piece), some[100] = {1};

    ASSERT(dst != NULL);
    for (int stall = 0; stall < 2; stall++) {
        int peer[2];
        struct crn_lanes *b = raw_lanes(2, peer);
        struct crn_lane_xfer *x = crn_lanes_expect(b, 1, dst, 2 * piece,
                                                   piece, 2);
        struct crn_lane_hdr h = {0, 1, 0, piece};
        uint8_t raw[CRN_LANE_HDR_LEN];
        ASSERT(b && x);
        crn_lane_hdr_encode(raw, &h);
        ASSERT_EQ(send(peer[0], raw, sizeof(raw), MSG_NOSIGNAL),
                  (ssize_t)sizeof(raw));
        ASSERT_EQ(send(peer[0], some, sizeof(some), MSG_NOSIGNAL),
                  (ssize_t)sizeof(some));
        if (!stall)
            close(peer[0]);
        /* The set's timeout is 0.5 s: the stalled piece fails within it. */
        ASSERT_EQ(crn_lanes_wait(b, x, 10000), -EPIPE);
        crn_lanes_forget(b, x);
        crn_lanes_free(b);
        if (stall)
            close(peer[0]);
        close(peer[1]);
    }
    free(dst);
}
