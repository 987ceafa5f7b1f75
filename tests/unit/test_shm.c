/* Unit tests of proto/shm.c: the rings' order, wrap-around, and pieces or
 * positions from a peer that lies (the area is untrusted input). */
#include "runner.h"

#include "proto/shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING (64u << 10)

/* Pieces of odd sizes through ring 0 for several laps, each checked. */
TEST(shm_ring_wraps_in_order)
{
    struct crn_shm prod, cons;
    uint8_t piece[5000], got[5000];

    ASSERT_EQ(crn_shm_create(RING, &prod), 0);
    /* The consumer maps the same memfd, as the proxy does. */
    ASSERT_EQ(crn_shm_map_fd(dup(prod.fd), prod.size, RING, true, &cons), 0);
    for (unsigned i = 0; i < 200; i++) {
        size_t len = 1 + (i * 977) % sizeof(piece);
        uint64_t pos;
        memset(piece, (int)i, len);
        ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, len, &pos), 0);
        ASSERT(pos % RING + len <= RING);
        memcpy(crn_shm_at(&prod, CRN_SHM_TO_PROXY, pos), piece, len);
        ASSERT_EQ(crn_shm_take(&cons, CRN_SHM_TO_PROXY, pos, len, got), 0);
        ASSERT_MEM_EQ(got, piece, len);
    }
    ASSERT(prod.head[0] > 4 * RING);
    crn_shm_close(&cons);
    crn_shm_close(&prod);
}

/* A full ring says so; room comes back as the consumer takes. */
TEST(shm_ring_full_then_freed)
{
    struct crn_shm s;
    uint64_t a, b, c;

    ASSERT_EQ(crn_shm_create(RING, &s), 0);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_CLIENT, RING / 2, &a), 0);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_CLIENT, RING / 2, &b), 0);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_CLIENT, 1, &c), -EAGAIN);
    ASSERT_EQ(crn_shm_reserve_wait(&s, CRN_SHM_TO_CLIENT, 1, 5, &c),
              -EAGAIN);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_CLIENT, RING + 1, &c),
              -EMSGSIZE);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_CLIENT, a, RING / 2, NULL), 0);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_CLIENT, 1, &c), 0);
    crn_shm_close(&s);
}

/* Pieces out of place are refused, and change nothing. */
TEST(shm_take_refuses_pieces_out_of_place)
{
    struct crn_shm s;
    uint64_t pos;
    uint8_t buf[64];

    ASSERT_EQ(crn_shm_create(RING, &s), 0);
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_PROXY, 4096, &pos), 0);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, pos, 4096, NULL), 0);
    /* Behind what was taken, a ring or more ahead, across the end, longer
     * than the ring, empty, near the top of the position space. */
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, 0, 16, buf), -EPROTO);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, 4096 + RING, 16, buf),
              -EPROTO);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, RING - 8, 16, buf),
              -EPROTO);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, 4096, RING + 1, NULL),
              -EPROTO);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, 4096, 0, buf), -EPROTO);
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, UINT64_MAX - 8, 16, buf),
              -EPROTO);
    ASSERT_EQ(s.expect[0], 4096);
    /* A piece in place still goes. */
    ASSERT_EQ(crn_shm_take(&s, CRN_SHM_TO_PROXY, 8192, 16, buf), 0);
    crn_shm_close(&s);
}

/* A consumer that publishes an impossible position is not believed. */
TEST(shm_reserve_distrusts_consumed)
{
    struct crn_shm s;
    uint64_t pos, lie = 1u << 30;

    ASSERT_EQ(crn_shm_create(RING, &s), 0);
    memcpy(s.base + 64, &lie, sizeof(lie));  /* ring 0's CONSUMED */
    ASSERT_EQ(crn_shm_reserve(&s, CRN_SHM_TO_PROXY, 16, &pos), -EPROTO);
    crn_shm_close(&s);
}

/* Descriptors and layouts the consumer must not map. */
TEST(shm_map_refuses_bad_areas)
{
    struct crn_shm s, m;

    ASSERT_EQ(crn_shm_create(RING, &s), 0);
    ASSERT_EQ(crn_shm_map_fd(dup(s.fd), s.size, RING * 2, true, &m),
              -EINVAL);
    ASSERT_EQ(crn_shm_map_fd(dup(s.fd), s.size + 4096, RING, true, &m),
              -EINVAL);
    ASSERT_EQ(crn_shm_map_fd(dup(s.fd), s.size, RING + 1, true, &m),
              -EINVAL);
    crn_shm_close(&s);
}

/* A file-backed area at an offset of its file (a program's part of an
 * ivshmem BAR): the layout stays inside the part, the peer finds it there
 * with the token written, and parts that do not fit are refused. */
TEST(shm_file_part_and_token)
{
    char path[] = "/tmp/crane-shm-unit-XXXXXX";
    uint8_t token[CRN_SHM_TOKEN_LEN], other[CRN_SHM_TOKEN_LEN] = {1};
    struct crn_shm a, b;
    int fd = mkstemp(path);

    ASSERT(fd >= 0);
    ASSERT_EQ(ftruncate(fd, 4u << 20), 0);
    close(fd);
    /* A part of 1 MiB at 2 MiB: rings as large as it allows. */
    ASSERT_EQ(crn_shm_map_file_at(path, 2u << 20, 1u << 20, 8u << 20, &a), 0);
    ASSERT(a.size <= (1u << 20));
    ASSERT_EQ(a.ring_len, ((1u << 20) - 4096) / 2 / 4096 * 4096);
    ASSERT_EQ(crn_shm_token_new(&a, token), 0);
    ASSERT_EQ(crn_shm_map_file_at(path, 2u << 20, 0, 0, &b), 0);
    ASSERT_EQ(b.ring_len, a.ring_len);
    ASSERT(crn_shm_token_is(&b, token, sizeof(token)));
    ASSERT(!crn_shm_token_is(&b, other, sizeof(other)));
    ASSERT(!crn_shm_token_is(&b, token, sizeof(token) - 1));
    crn_shm_close(&b);
    /* No area at the file's start; offsets off the page or past the end. */
    ASSERT_EQ(crn_shm_map_file_at(path, 0, 0, 0, &b), -EINVAL);
    ASSERT_EQ(crn_shm_map_file_at(path, 100, 0, RING, &b), -EINVAL);
    ASSERT_EQ(crn_shm_map_file_at(path, 4u << 20, 0, RING, &b), -EINVAL);
    /* A part too small for two rings. */
    ASSERT_EQ(crn_shm_map_file_at(path, 0, 64u << 10, RING, &b), -ENOSPC);
    crn_shm_close(&a);
    unlink(path);
}

/* Pieces claimed hold their room until released, in order; the bytes are
 * used where they lie; a lying position is still refused while pieces are
 * held, and a release out of range changes nothing. */
TEST(shm_claim_holds_room_until_released)
{
    struct crn_shm prod, cons;
    uint64_t a, b, c;
    unsigned char *at_a, *at_b;

    ASSERT_EQ(crn_shm_create(RING, &prod), 0);
    ASSERT_EQ(crn_shm_map_fd(dup(prod.fd), prod.size, RING, true, &cons), 0);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 2, &a), 0);
    memset(crn_shm_at(&prod, CRN_SHM_TO_PROXY, a), 0xab, RING / 2);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 4, &b), 0);
    memset(crn_shm_at(&prod, CRN_SHM_TO_PROXY, b), 0xcd, RING / 4);
    ASSERT_EQ(crn_shm_claim(&cons, CRN_SHM_TO_PROXY, a, RING / 2, &at_a), 0);
    ASSERT_EQ(crn_shm_claim(&cons, CRN_SHM_TO_PROXY, b, RING / 4, &at_b), 0);
    ASSERT_EQ(at_a[0], 0xab);
    ASSERT_EQ(at_a[RING / 2 - 1], 0xab);
    ASSERT_EQ(at_b[RING / 4 - 1], 0xcd);
    /* Both held: only the last quarter is free. */
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 2, &c),
              -EAGAIN);
    /* Claimed already, or beyond a ring past what was freed: refused. */
    ASSERT_EQ(crn_shm_claim(&cons, CRN_SHM_TO_PROXY, a, 16, &at_a), -EPROTO);
    ASSERT_EQ(crn_shm_claim(&cons, CRN_SHM_TO_PROXY, a + RING, 16, &at_a),
              -EPROTO);
    /* Releases out of range are ignored: going back, or too far ahead. */
    crn_shm_release(&cons, CRN_SHM_TO_PROXY, a);
    crn_shm_release(&cons, CRN_SHM_TO_PROXY, a + 2 * RING);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 2, &c),
              -EAGAIN);
    /* The first half freed: a half fits again, at the ring's start (the
     * last quarter skipped); nothing more while B is held. */
    crn_shm_release(&cons, CRN_SHM_TO_PROXY, a + RING / 2);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 2, &c), 0);
    ASSERT_EQ(c, (uint64_t)RING);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, 1, &c), -EAGAIN);
    crn_shm_release(&cons, CRN_SHM_TO_PROXY, b + RING / 4);
    ASSERT_EQ(crn_shm_reserve(&prod, CRN_SHM_TO_PROXY, RING / 4, &c), 0);
    crn_shm_close(&cons);
    crn_shm_close(&prod);
}
