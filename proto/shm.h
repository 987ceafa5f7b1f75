/* Shared-memory rings that carry bulk bytes between the shim and crane-proxy
 * on one host (a memfd, or a file such as an ivshmem BAR). */
#ifndef CRANE_PROTO_SHM_H
#define CRANE_PROTO_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The area: a header page, then ring 0 (client to proxy: the bytes of
 * writes, new buffers, programs), then ring 1 (proxy to client: the bytes
 * of reads), RING_LEN bytes each.  The header holds, at fixed offsets,
 * little-endian: MAGIC (u32 at 0), VERSION (u32 at 4), RING_LEN (u64 at 8),
 * and each ring's CONSUMED position (u64 at 64 for ring 0, 128 for ring 1;
 * own cache lines), which only that ring's consumer writes.  A file-backed
 * area also holds the client's random TOKEN (16 bytes at 1024), by which a
 * proxy that sees the area as one of its ivshmem BARs finds it.
 *
 * Positions count bytes since the ring began and never wrap; a position's
 * place in its ring is POS % RING_LEN.  A producer takes room at its head,
 * skipping the ring's tail end when a piece would not fit before the end,
 * and names the piece's position and length in the control message that
 * the stream carries (never in the area).  The consumer copies the piece
 * out and then publishes CONSUMED = POS + LEN, which frees the room.
 *
 * The area is shared with the peer, so everything read from it is
 * untrusted: a consumer checks that each piece lies where the ring's order
 * allows (from its last CONSUMED on, within one ring length, not across the
 * ring's end) and refuses it otherwise; a producer never trusts a CONSUMED
 * that runs ahead of its own head.  Bytes in the area may change while they
 * are copied: only the peer's own data suffers.
 */
#define CRN_SHM_MAGIC 0x4853524eu /* "NRSH" */
#define CRN_SHM_VERSION 1u
#define CRN_SHM_HEADER 4096u
/* Largest area a peer may offer (both rings and the header). */
#define CRN_SHM_MAX_SIZE (2ull << 30)
/* Smallest ring worth having. */
#define CRN_SHM_MIN_RING (64u << 10)
/* The client's token in the header: random, never all zero. */
#define CRN_SHM_OFF_TOKEN 1024u
#define CRN_SHM_TOKEN_LEN 16u

enum crn_shm_ring {
    CRN_SHM_TO_PROXY = 0,
    CRN_SHM_TO_CLIENT = 1,
};

struct crn_shm {
    unsigned char *base;  /* the mapping, SIZE bytes */
    size_t size;
    size_t ring_len;
    int fd;               /* the memfd or file; -1 once given away */
    uint64_t head[2];     /* producing: the next free position */
    uint64_t expect[2];   /* consuming: where the next piece may start */
    uint64_t released[2]; /* consuming: CONSUMED as we published it (a
                             piece claimed lies between it and EXPECT);
                             atomic, a claim and a release may run on two
                             threads */
};

/* The area's size for rings of RING_LEN bytes. */
size_t crn_shm_size(size_t ring_len);

/* Makes a sealed memfd area (it can neither shrink nor grow) with rings of
 * RING_LEN bytes (rounded up to pages), mapped. */
int crn_shm_create(size_t ring_len, struct crn_shm *out);

/* Maps an area received from the peer: FD (taken: closed on failure) must
 * hold SIZE bytes, laid out for RING_LEN; with NEED_SEALS, FD must be a
 * memfd sealed against shrinking (a peer that could shrink it would make
 * our accesses fault). */
int crn_shm_map_fd(int fd, uint64_t size, uint64_t ring_len, bool need_seals,
                   struct crn_shm *out);

/* Plain shared memory, no rings (the host-memory region a client's mapped
 * pointers live in, remote.proto's HostAttach): a sealed memfd of SIZE
 * bytes (rounded up to pages, at most CRN_SHM_MAX_HOST: a proxy that pins
 * it holds all of it, so a peer may not ask for more), mapped, with
 * ring_len 0.  Only crn_shm_close applies to it. */
#define CRN_SHM_MAX_HOST (4ull << 30)
int crn_shm_create_plain(size_t size, struct crn_shm *out);
/* Maps such memory received from the peer: FD (taken: closed on failure)
 * must be a memfd sealed against shrinking, of at least SIZE bytes (a
 * multiple of the page). */
int crn_shm_map_plain(int fd, uint64_t size, struct crn_shm *out);

/* Maps the file at PATH (a /dev/shm file, or an ivshmem BAR's resource2):
 * with RING_LEN non-zero it lays a fresh area out over it (the file must
 * be large enough), with 0 it takes the layout its header names (checked
 * against the file's size). */
int crn_shm_map_file(const char *path, size_t ring_len, struct crn_shm *out);
/* The same for the part of the file from OFFSET (a multiple of the page)
 * on, at most LIMIT bytes of it (0: to the end). */
int crn_shm_map_file_at(const char *path, uint64_t offset, uint64_t limit,
                        size_t ring_len, struct crn_shm *out);

/* Writes a fresh random token into the header (and TOKEN). */
int crn_shm_token_new(struct crn_shm *s, uint8_t token[CRN_SHM_TOKEN_LEN]);
/* Whether the header holds TOKEN (of LEN bytes; a wrong length never
 * matches). */
bool crn_shm_token_is(const struct crn_shm *s, const uint8_t *token,
                      size_t len);

/* Unmaps and closes. */
void crn_shm_close(struct crn_shm *s);

/* Producer: room for LEN bytes in RING, its position in *POS.  -EAGAIN
 * while the consumer has not freed enough, -EMSGSIZE for a piece larger
 * than the ring, -EPROTO when the consumer's CONSUMED is impossible. */
int crn_shm_reserve(struct crn_shm *s, enum crn_shm_ring ring, size_t len,
                    uint64_t *pos);
/* The same, waiting up to TIMEOUT_MS (0: not at all) for room. */
int crn_shm_reserve_wait(struct crn_shm *s, enum crn_shm_ring ring,
                         size_t len, long timeout_ms, uint64_t *pos);
/* Where the piece at POS of RING lies (after crn_shm_reserve). */
unsigned char *crn_shm_at(const struct crn_shm *s, enum crn_shm_ring ring,
                          uint64_t pos);

/* Consumer: checks the piece of LEN bytes at POS of RING against the
 * ring's order, copies it to DST (DST NULL: drops it) and frees its room.
 * -EPROTO for a piece out of place (nothing is copied or freed). */
int crn_shm_take(struct crn_shm *s, enum crn_shm_ring ring, uint64_t pos,
                 uint64_t len, void *dst);

/* Consumer, in two steps, for bytes used where they lie: checks the piece
 * as crn_shm_take does (after every piece claimed before it) and returns
 * where it lies, its room still held; crn_shm_release(END = POS + LEN)
 * frees the room of that piece and of every piece before it.  One thread
 * claims, in ring order; one thread (perhaps another) releases, in the
 * same order (a release that would go back, or more than a ring length
 * ahead, is ignored).  -EPROTO for a piece out of place (nothing is
 * claimed). */
int crn_shm_claim(struct crn_shm *s, enum crn_shm_ring ring, uint64_t pos,
                  uint64_t len, unsigned char **at);
void crn_shm_release(struct crn_shm *s, enum crn_shm_ring ring,
                     uint64_t end);

#endif /* CRANE_PROTO_SHM_H */
