/* Lanes: bulk bytes of one remoting connection spread over several extra
 * streams, cut into pieces, sent and received in parallel. */
#ifndef CRANE_PROTO_LANE_H
#define CRANE_PROTO_LANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/stream.h"

/*
 * A transfer ("xfer") is TOTAL bytes named by a control frame on the main
 * stream (its id, its piece size and the number of lanes): piece k holds
 * bytes [k * PIECE, min((k + 1) * PIECE, TOTAL)) and travels on lane
 * k % NLANES, each lane carrying its pieces in increasing k, transfers one
 * after another in the order of their ids.  On a lane each piece is a
 * fixed header (crn_lane_hdr, CRN_LANE_HDR_LEN bytes, big-endian) followed
 * by its bytes.  The receiver accepts a piece only where it must be: its
 * transfer registered, its lane and offset the next this lane owes, its
 * length exact (crn_lane_piece_check); anything else ends every lane.
 * docs/remoting.md, "Lanes".
 */
#define CRN_LANES_MAX 16
#define CRN_LANE_HDR_LEN 32
#define CRN_LANE_MAGIC 0x43524c4eu       /* "CRLN" */
#define CRN_LANE_PIECE_MIN (64u << 10)
#define CRN_LANE_PIECE_MAX (4u << 20)
/* Sets of lanes ("generations") one connection may join: the first and
 * those rejoined after lanes failed; past that its bulk takes the stream. */
#define CRN_LANE_GENERATIONS 8
/* Bytes of a lane's key, and of the MAC a lane's Hello carries. */
#define CRN_LANE_KEY_LEN 32

struct crn_lane_hdr {
    uint32_t lane;
    uint64_t xfer;
    uint64_t offset;
    uint32_t len;
};

void crn_lane_hdr_encode(uint8_t out[CRN_LANE_HDR_LEN],
                         const struct crn_lane_hdr *h);
/* -EPROTO for a bad magic or reserved bits. */
int crn_lane_hdr_decode(const uint8_t in[CRN_LANE_HDR_LEN],
                        struct crn_lane_hdr *h);
/* Whether a transfer's shape is acceptable: TOTAL > 0, PIECE a power of
 * two within [CRN_LANE_PIECE_MIN, CRN_LANE_PIECE_MAX], NLANES 1 to
 * CRN_LANES_MAX. */
bool crn_lane_shape_ok(uint64_t total, uint32_t piece, uint32_t nlanes);
/* Whether header H, read on lane LANE, is the piece K that lane owes next
 * of a transfer of that shape: 0, or -EPROTO. */
int crn_lane_piece_check(uint64_t total, uint32_t piece, uint32_t nlanes,
                         uint32_t lane, uint64_t k,
                         const struct crn_lane_hdr *h);
/* The MAC that proves a lane belongs to a tenant: HMAC-SHA256 keyed with
 * the tenant's lane key over its token, the lane's index and (when not 0)
 * the generation of lanes it joins, each 4 bytes big-endian. */
int crn_lane_mac(const uint8_t key[CRN_LANE_KEY_LEN], const uint8_t *token,
                 size_t token_len, uint32_t index, uint32_t generation,
                 uint8_t out[CRN_LANE_KEY_LEN]);

/*
 * A set of lanes: each one a connected stream with a sender thread and a
 * receiver thread.  Thread-safe.  Any failure (a read or write error, a
 * piece out of place, a stall past the timeout) kills every lane: their
 * sockets shut down, every wait fails, nothing more is accepted.
 */
struct crn_lanes;
struct crn_lane_xfer;

/* WHO names the set in logs; TIMEOUT_MS bounds a piece's stall. */
struct crn_lanes *crn_lanes_new(const char *who, unsigned timeout_ms);
/* Adds the connected FD (taken: closed by the set) as lane INDEX, which
 * must be the next one (0, 1, ...); starts its threads. */
int crn_lanes_add(struct crn_lanes *ls, unsigned index, int fd);
/* The same for a stream in clear or TLS (proto/stream.h, taken): each
 * lane's records are made and read on its own threads. */
int crn_lanes_add_stream(struct crn_lanes *ls, unsigned index,
                         struct crn_stream st);
/* Lanes added, 0 once they died. */
unsigned crn_lanes_count(struct crn_lanes *ls);
bool crn_lanes_dead(struct crn_lanes *ls);
void crn_lanes_kill(struct crn_lanes *ls, const char *why);
/* Kills, joins and frees (NULL: nothing). */
void crn_lanes_free(struct crn_lanes *ls);
/* Bytes sent and received on lane I so far. */
void crn_lanes_bytes(struct crn_lanes *ls, unsigned i, uint64_t *sent,
                     uint64_t *received);
/* Test hook: lane 0 is shut down mid-piece once it has sent BYTES in
 * all, or (BAD) sends one piece whose header names bytes past its
 * transfer. */
void crn_lanes_fault_after(struct crn_lanes *ls, uint64_t bytes, bool bad);

/* Receiving: transfer ID's pieces go into BASE (TOTAL bytes) once
 * registered; NULL when the shape is bad or the lanes are dead. */
struct crn_lane_xfer *crn_lanes_expect(struct crn_lanes *ls, uint64_t id,
                                       void *base, uint64_t total,
                                       uint32_t piece, uint32_t nlanes);
/* Waits until every piece of X arrived (0), the lanes died (-EPIPE) or
 * TIMEOUT_MS passed (-ETIMEDOUT, the lanes then killed). */
int crn_lanes_wait(struct crn_lanes *ls, struct crn_lane_xfer *x,
                   unsigned timeout_ms);
/* Unregisters X and frees it; X begun but unfinished kills the lanes
 * first and waits until no receiver touches its bytes any more (one of
 * which nothing came is only cancelled). */
void crn_lanes_forget(struct crn_lanes *ls, struct crn_lane_xfer *x);

/* Sending: the pieces of transfer ID (TOTAL bytes, this set's lanes)
 * whose offsets lie in [FROM, TO), FROM a multiple of PIECE, those bytes
 * at AT (AT[0] is byte FROM), each lane its own in parallel; returns once
 * written: 0 or a negative errno (the lanes then killed). */
int crn_lanes_send(struct crn_lanes *ls, uint64_t id, const void *at,
                   uint64_t total, uint32_t piece, uint64_t from,
                   uint64_t to);

#endif /* CRANE_PROTO_LANE_H */
