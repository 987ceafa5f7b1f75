/* Unit tests of proto/fastpack.c: the same bytes as protobuf-c's packer. */
#include "runner.h"

#include "proto/fastpack.h"

#include <stdlib.h>
#include <string.h>

/* Packs M both ways and checks the bytes are the same. */
static void same_bytes(const Crane__ClientMessage *m)
{
    size_t want = crane__client_message__get_packed_size(m);
    uint8_t *a = malloc(want + 1), *b = malloc(want + 1);

    ASSERT(a && b);
    ASSERT_EQ(crn_fastpack_size(m), want);
    ASSERT_EQ(crane__client_message__pack(m, a), want);
    ASSERT_EQ(crn_fastpack(m, b), want);
    ASSERT_MEM_EQ(a, b, want);
    free(a);
    free(b);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A number of any width, zero often (proto3 leaves zeros out). */
static uint64_t any(uint64_t *s)
{
    uint64_t r = rng_next(s);

    switch (r & 3) {
    case 0:
        return 0;
    case 1:
        return r >> 58;
    case 2:
        return r >> 40;
    default:
        return rng_next(s);
    }
}

TEST(fastpack_launch_matches_protobuf_c)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    uint8_t bytes[300];

    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (uint8_t)(i * 7 + 1);
    for (int round = 0; round < 2000; round++) {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
        Crane__KernelArg args[12], *ptrs[12];
        uint64_t off[3], gl[3], lo[3], wait[5];

        m.seq = any(&seed);
        m.want_reply = rng_next(&seed) & 1;
        m.shm_bulk = rng_next(&seed) & 1;
        m.shm_pos = any(&seed);
        m.lane_xfer = rng_next(&seed) & 1 ? any(&seed) : 0;
        m.lanes = (uint32_t)any(&seed);
        m.lane_piece = (uint32_t)(rng_next(&seed) & 1 ? any(&seed) : 0);
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
        m.launch_kernel = &l;
        l.queue = any(&seed);
        l.kernel = any(&seed);
        l.work_dim = (uint32_t)(rng_next(&seed) % 4);
        for (int d = 0; d < 3; d++) {
            off[d] = any(&seed);
            gl[d] = any(&seed);
            lo[d] = any(&seed);
        }
        l.n_global_offset = rng_next(&seed) % 4;
        l.global_offset = off;
        l.n_global_size = rng_next(&seed) % 4;
        l.global_size = gl;
        l.n_local_size = rng_next(&seed) % 4;
        l.local_size = lo;
        for (int w = 0; w < 5; w++)
            wait[w] = any(&seed);
        l.n_wait = rng_next(&seed) % 6;
        l.wait = wait;
        l.event = any(&seed);
        l.n_args = rng_next(&seed) % 13;
        l.args = ptrs;
        for (size_t a = 0; a < l.n_args; a++) {
            Crane__KernelArg *k = &args[a];
            crane__kernel_arg__init(k);
            k->index = (uint32_t)any(&seed);
            k->value.len = rng_next(&seed) % 3 ? 0 : rng_next(&seed) % 300;
            k->value.data = k->value.len ? bytes : NULL;
            k->object = any(&seed);
            k->is_object = rng_next(&seed) & 1;
            k->local_size = any(&seed);
            k->is_local = rng_next(&seed) & 1;
            k->is_svm = rng_next(&seed) & 1;
            k->svm_offset = any(&seed);
            ptrs[a] = k;
        }
        same_bytes(&m);
    }
}

/* Everything else is protobuf-c's own packing. */
TEST(fastpack_other_messages_are_protobuf_c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync s = CRANE__SYNC__INIT;

    m.seq = 77;
    m.want_reply = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
    m.sync = &s;
    s.queue = 5;
    same_bytes(&m);
}

/* A field added to the schema must be added to fastpack.c too: these
 * counts are the fields it writes. */
TEST(fastpack_knows_every_field)
{
    ASSERT_EQ(crane__kernel_arg__descriptor.n_fields, 8);
    ASSERT_EQ(crane__launch_kernel__descriptor.n_fields, 9);
    /* seq, want_reply, shm_bulk, shm_pos, lane_xfer, lanes, lane_piece
     * and the oneof's members. */
    ASSERT_EQ(crane__client_message__descriptor.n_fields, 34);
}
