/* Unit tests of proto/fastpack.c: the same bytes as protobuf-c's packer. */
#include "runner.h"

#include "proto/fastpack.h"

#include <stdbool.h>
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

/* Every other call: the same bytes, whatever its message holds. */
TEST(fastpack_other_messages_are_protobuf_c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync s = CRANE__SYNC__INIT;
    Crane__GetInfo g = CRANE__GET_INFO__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    Crane__Release r = CRANE__RELEASE__INIT;
    uint64_t wait[3] = {1, 300, 1ull << 40}, region[3] = {4, 1, 1};
    uint8_t pattern[200];

    memset(pattern, 0xa5, sizeof(pattern));
    same_bytes(&m);                       /* no call at all */
    m.seq = 77;
    m.want_reply = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
    m.sync = &s;
    same_bytes(&m);                       /* an empty message */
    s.queue = 5;
    s.n_events = 3;
    s.events = wait;
    same_bytes(&m);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_GET_INFO;
    m.get_info = &g;
    g.fn = 7;
    g.id = 1234567;
    g.param = 0x11d3;
    g.size = 4;
    same_bytes(&m);
    m.shm_bulk = 1;
    m.shm_pos = 1ull << 33;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    mc.queue = 2;
    mc.op = CRANE__MEM_OP__MEM_FILL;
    mc.dst = 9;
    mc.size = 1ull << 31;
    mc.blocking = 1;
    mc.n_region = 3;
    mc.region = region;
    mc.n_wait = 3;
    mc.wait = wait;
    mc.pattern.len = sizeof(pattern);    /* a body over 127 bytes */
    mc.pattern.data = pattern;
    same_bytes(&m);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_RELEASE;
    m.release = &r;
    r.id = 3;
    same_bytes(&m);
}

/* --- random calls of every kind ------------------------------------------ */

/* Everything a random message holds, freed at once. */
struct pool {
    void *p[4096];
    size_t n;
};

static void *pool_alloc(struct pool *pl, size_t n)
{
    void *p = calloc(1, n ? n : 1);

    ASSERT(p && pl->n < sizeof(pl->p) / sizeof(pl->p[0]));
    pl->p[pl->n++] = p;
    return p;
}

static void pool_free(struct pool *pl)
{
    while (pl->n)
        free(pl->p[--pl->n]);
}

static ProtobufCMessage *random_msg(const ProtobufCMessageDescriptor *d,
                                    uint64_t *seed, int depth,
                                    struct pool *pl);

/* A random value of field F at AT (a string may be empty, a number zero,
 * an enum any int32, negative ones included). */
static void random_value(const ProtobufCFieldDescriptor *f, void *at,
                         uint64_t *seed, int depth, struct pool *pl)
{
    uint64_t r = any(seed);

    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_ENUM:
        *(uint32_t *)at = (uint32_t)r;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
        *(uint64_t *)at = r;
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)at = (protobuf_c_boolean)(r & 1);
        break;
    case PROTOBUF_C_TYPE_STRING: {
        size_t n = rng_next(seed) % 3 ? rng_next(seed) % 40 : 0;
        char *str = pool_alloc(pl, n + 1);
        for (size_t i = 0; i < n; i++)
            str[i] = (char)('a' + rng_next(seed) % 26);
        *(char **)at = str;
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = at;
        b->len = rng_next(seed) % 3 ? rng_next(seed) % 300 : 0;
        b->data = pool_alloc(pl, b->len);
        for (size_t i = 0; i < b->len; i++)
            b->data[i] = (uint8_t)rng_next(seed);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)at =
            random_msg(f->descriptor, seed, depth + 1, pl);
        break;
    default:
        ASSERT(!"a field type remote.proto does not use");
    }
}

static size_t width(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    default:
        return 4;
    }
}

/* Every field set or not at random; one member of each oneof, or none;
 * nested messages three deep at most. */
static ProtobufCMessage *random_msg(const ProtobufCMessageDescriptor *d,
                                    uint64_t *seed, int depth,
                                    struct pool *pl)
{
    ProtobufCMessage *m = pool_alloc(pl, d->sizeof_message);
    char *base = (char *)m;

    d->message_init(m);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        void *at = base + f->offset;
        bool deep = f->type == PROTOBUF_C_TYPE_MESSAGE && depth >= 3;
        if (deep || rng_next(seed) % 2)
            continue;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t *which = (uint32_t *)(base + f->quantifier_offset);
            if (*which)
                continue;
            *which = f->id;
            random_value(f, at, seed, depth, pl);
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = rng_next(seed) % 5, w = width(f->type);
            char *arr = pool_alloc(pl, n * w);
            for (size_t k = 0; k < n; k++)
                random_value(f, arr + k * w, seed, depth, pl);
            *(size_t *)(base + f->quantifier_offset) = n;
            *(char **)at = arr;
        } else {
            random_value(f, at, seed, depth, pl);
        }
    }
    return m;
}

static void same_server_bytes(const Crane__ServerMessage *m)
{
    size_t want = crane__server_message__get_packed_size(m);
    uint8_t *a = malloc(want + 1), *b = malloc(want + 1);

    ASSERT(a && b);
    ASSERT_EQ(crn_fastpack_server_size(m), want);
    ASSERT_EQ(crane__server_message__pack(m, a), want);
    ASSERT_EQ(crn_fastpack_server(m, b), want);
    ASSERT_MEM_EQ(a, b, want);
    free(a);
    free(b);
}

/* Calls and answers of every kind the remoting channel carries, at
 * random: the same bytes as protobuf-c's. */
TEST(fastpack_any_message_matches_protobuf_c)
{
    uint64_t seed = 0x5eed5eed12345677ull;
    struct pool pl = {.n = 0};

    for (int round = 0; round < 5000; round++) {
        same_bytes((const Crane__ClientMessage *)random_msg(
            &crane__client_message__descriptor, &seed, 0, &pl));
        same_server_bytes((const Crane__ServerMessage *)random_msg(
            &crane__server_message__descriptor, &seed, 0, &pl));
        pool_free(&pl);
    }
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
    /* ServerMessage: its oneof's members only. */
    ASSERT_EQ(crane__server_message__descriptor.n_fields, 5);
}
