/* libFuzzer target: bytes through crn_frame_decode, then each frame unpacked
 * as a shim's Register and ShimMessage; and the input's head as a lane
 * piece's header checked against a transfer's shape (proto/lane.h). */
#include "proto/frame.h"
#include "proto/lane.h"
#include "proto/control.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Small enough that the fuzzer's inputs can hit the limit. */
#define FUZZ_MAX_LEN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Unpacks MSG as a ShimMessage and as a Register; a Register that unpacks
 * must pack and unpack again to the same values.  Registers with
 * unknown fields are left out of that check: protobuf-c 1.4.1 keeps a field
 * numbered 0 whose tag is an overlong varint (80 80 00) as an unknown
 * field, then packs it canonically (00), which it rejects.
 */
static void unpack_message(const uint8_t *msg, size_t len)
{
    Crane__Control__Register *h;
    Crane__Control__Register *again;
    Crane__Control__ShimMessage *c;
    uint8_t *packed;
    size_t packed_len;

    c = crane__control__shim_message__unpack(NULL, len, msg);
    if (c != NULL)
        crane__control__shim_message__free_unpacked(c, NULL);

    h = crane__control__register__unpack(NULL, len, msg);
    if (h == NULL)
        return;
    if (h->base.n_unknown_fields > 0) {
        crane__control__register__free_unpacked(h, NULL);
        return;
    }
    packed_len = crane__control__register__get_packed_size(h);
    packed = malloc(packed_len > 0 ? packed_len : 1);
    if (packed == NULL)
        abort();
    if (crane__control__register__pack(h, packed) != packed_len)
        abort();
    again = crane__control__register__unpack(NULL, packed_len, packed);
    if (again == NULL || again->version != h->version ||
        again->pid != h->pid || strcmp(again->program, h->program) != 0 ||
        again->state_bytes != h->state_bytes ||
        again->mode != h->mode)
        abort();
    crane__control__register__free_unpacked(again, NULL);
    crane__control__register__free_unpacked(h, NULL);
    free(packed);
}

/* A header the receiver accepts never names a byte outside its transfer
 * or more than a piece. */
static void check_lane_piece(const uint8_t *data, size_t size)
{
    struct crn_lane_hdr h;
    uint64_t total = 0;
    uint32_t piece, nlanes, lane;
    uint64_t k;

    if (size < CRN_LANE_HDR_LEN + 12 ||
        crn_lane_hdr_decode(data, &h) < 0)
        return;
    for (int i = 0; i < 8; i++)
        total = total << 8 | data[CRN_LANE_HDR_LEN + i];
    total >>= data[CRN_LANE_HDR_LEN + 8] % 64;
    piece = 1u << (14 + data[CRN_LANE_HDR_LEN + 9] % 10);
    nlanes = data[CRN_LANE_HDR_LEN + 10] % 20;
    lane = data[CRN_LANE_HDR_LEN + 11] % 20;
    k = h.xfer % 4096;
    if (crn_lane_piece_check(total, piece, nlanes, lane, k, &h) != 0)
        return;
    if (!crn_lane_shape_ok(total, piece, nlanes) || h.len == 0 ||
        h.len > piece || h.offset > total || h.len > total - h.offset ||
        h.lane != lane || lane >= nlanes || h.offset != k * piece)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *msg;
    size_t msg_len;
    size_t consumed;
    size_t pos = 0;
    int rc;

    check_lane_piece(data, size);
    /* Walk the input as a stream of frames, as an event loop would. */
    for (;;) {
        rc = crn_frame_decode(data + pos, size - pos, FUZZ_MAX_LEN, &msg,
                              &msg_len, &consumed);
        if (rc == -EAGAIN || rc == -EMSGSIZE)
            break;
        if (rc != 0 || consumed != CRN_FRAME_HEADER_LEN + msg_len ||
            consumed > size - pos || msg != data + pos + CRN_FRAME_HEADER_LEN ||
            msg_len > FUZZ_MAX_LEN)
            abort();
        unpack_message(msg, msg_len);
        pos += consumed;
    }
    return 0;
}
