/* ClientMessage packing for the calls a program makes most, without
 * protobuf-c's generic walk (fastpack.h). */
#include "fastpack.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Wire types. */
enum { WT_VARINT = 0, WT_LEN = 2 };

/* Field numbers (proto/remote.proto). */
enum {
    CM_SEQ = 1, CM_WANT_REPLY = 2, CM_SHM_BULK = 3, CM_SHM_POS = 4,
    CM_LANE_XFER = 5, CM_LANES = 6, CM_LANE_PIECE = 7,
    CM_LAUNCH_KERNEL = 26,
    LK_QUEUE = 1, LK_KERNEL = 2, LK_WORK_DIM = 3, LK_GLOBAL_OFFSET = 4,
    LK_GLOBAL_SIZE = 5, LK_LOCAL_SIZE = 6, LK_ARGS = 7, LK_WAIT = 8,
    LK_EVENT = 9,
    KA_INDEX = 1, KA_VALUE = 2, KA_OBJECT = 3, KA_IS_OBJECT = 4,
    KA_LOCAL_SIZE = 5, KA_IS_LOCAL = 6, KA_IS_SVM = 7, KA_SVM_OFFSET = 8,
};

static size_t varint_size(uint64_t v)
{
    /* 7 bits a byte: 1 + (index of the highest bit set) / 7. */
    return 1 + (size_t)(63 - __builtin_clzll(v | 1)) / 7;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_tag(uint8_t *p, unsigned field, unsigned wt)
{
    return put_varint(p, (uint64_t)field << 3 | wt);
}

/* Sizes of a field with its tag (every tag here is one byte but
 * CM_LAUNCH_KERNEL's, which is two), 0 where proto3 leaves it out. */
static size_t tag_size(unsigned field)
{
    return varint_size((uint64_t)field << 3);
}

static size_t num_size(unsigned field, uint64_t v)
{
    return v ? tag_size(field) + varint_size(v) : 0;
}

static size_t len_size(unsigned field, size_t len)
{
    return tag_size(field) + varint_size(len) + len;
}

static uint8_t *put_num(uint8_t *p, unsigned field, uint64_t v)
{
    if (!v)
        return p;
    p = put_tag(p, field, WT_VARINT);
    return put_varint(p, v);
}

/* A packed repeated uint64: the bytes of its values. */
static size_t packed_len(const uint64_t *v, size_t n)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++)
        len += varint_size(v[i]);
    return len;
}

static size_t packed_size(unsigned field, const uint64_t *v, size_t n)
{
    return n ? len_size(field, packed_len(v, n)) : 0;
}

static uint8_t *put_packed(uint8_t *p, unsigned field, const uint64_t *v,
                           size_t n)
{
    if (!n)
        return p;
    p = put_tag(p, field, WT_LEN);
    p = put_varint(p, packed_len(v, n));
    for (size_t i = 0; i < n; i++)
        p = put_varint(p, v[i]);
    return p;
}

static size_t arg_len(const Crane__KernelArg *a)
{
    return num_size(KA_INDEX, a->index) +
           (a->value.len ? len_size(KA_VALUE, a->value.len) : 0) +
           num_size(KA_OBJECT, a->object) +
           num_size(KA_IS_OBJECT, a->is_object) +
           num_size(KA_LOCAL_SIZE, a->local_size) +
           num_size(KA_IS_LOCAL, a->is_local) +
           num_size(KA_IS_SVM, a->is_svm) +
           num_size(KA_SVM_OFFSET, a->svm_offset);
}

/* A length-delimited field's body is written after one byte left for its
 * length (most are shorter than 128 bytes), then moved up where the
 * length takes more: no second walk to learn the length first. */
static uint8_t *len_open(uint8_t *p, unsigned field)
{
    return put_tag(p, field, WT_LEN) + 1;
}

static uint8_t *len_close(uint8_t *body, uint8_t *end)
{
    size_t n = (size_t)(end - body), k = varint_size(n);

    if (k > 1)
        memmove(body + k - 1, body, n);
    put_varint(body - 1, n);
    return end + k - 1;
}

static uint8_t *put_arg(uint8_t *p, const Crane__KernelArg *a)
{
    uint8_t *body = p = len_open(p, LK_ARGS);

    p = put_num(p, KA_INDEX, a->index);
    if (a->value.len) {
        p = put_tag(p, KA_VALUE, WT_LEN);
        p = put_varint(p, a->value.len);
        memcpy(p, a->value.data, a->value.len);
        p += a->value.len;
    }
    p = put_num(p, KA_OBJECT, a->object);
    p = put_num(p, KA_IS_OBJECT, a->is_object);
    p = put_num(p, KA_LOCAL_SIZE, a->local_size);
    p = put_num(p, KA_IS_LOCAL, a->is_local);
    p = put_num(p, KA_IS_SVM, a->is_svm);
    p = put_num(p, KA_SVM_OFFSET, a->svm_offset);
    return len_close(body, p);
}

static size_t launch_len(const Crane__LaunchKernel *l)
{
    size_t len = num_size(LK_QUEUE, l->queue) +
                 num_size(LK_KERNEL, l->kernel) +
                 num_size(LK_WORK_DIM, l->work_dim) +
                 packed_size(LK_GLOBAL_OFFSET, l->global_offset,
                             l->n_global_offset) +
                 packed_size(LK_GLOBAL_SIZE, l->global_size,
                             l->n_global_size) +
                 packed_size(LK_LOCAL_SIZE, l->local_size, l->n_local_size) +
                 packed_size(LK_WAIT, l->wait, l->n_wait) +
                 num_size(LK_EVENT, l->event);

    for (size_t i = 0; i < l->n_args; i++)
        len += len_size(LK_ARGS, arg_len(l->args[i]));
    return len;
}

static uint8_t *put_launch(uint8_t *p, const Crane__LaunchKernel *l)
{
    p = put_num(p, LK_QUEUE, l->queue);
    p = put_num(p, LK_KERNEL, l->kernel);
    p = put_num(p, LK_WORK_DIM, l->work_dim);
    p = put_packed(p, LK_GLOBAL_OFFSET, l->global_offset,
                   l->n_global_offset);
    p = put_packed(p, LK_GLOBAL_SIZE, l->global_size, l->n_global_size);
    p = put_packed(p, LK_LOCAL_SIZE, l->local_size, l->n_local_size);
    for (size_t i = 0; i < l->n_args; i++)
        p = put_arg(p, l->args[i]);
    p = put_packed(p, LK_WAIT, l->wait, l->n_wait);
    return put_num(p, LK_EVENT, l->event);
}

/* Whether M is one these pack: a launch, whose message was made by
 * CRANE__LAUNCH_KERNEL__INIT and friends (the unknown-fields lists
 * protobuf-c keeps for decoded messages are empty). */
static bool fast(const Crane__ClientMessage *m)
{
    return m->msg_case == CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL &&
           m->launch_kernel && !m->base.n_unknown_fields &&
           !m->launch_kernel->base.n_unknown_fields;
}

static size_t head_size(const Crane__ClientMessage *m)
{
    return num_size(CM_SEQ, m->seq) + num_size(CM_WANT_REPLY, m->want_reply) +
           num_size(CM_SHM_BULK, m->shm_bulk) +
           num_size(CM_SHM_POS, m->shm_pos) +
           num_size(CM_LANE_XFER, m->lane_xfer) +
           num_size(CM_LANES, m->lanes) +
           num_size(CM_LANE_PIECE, m->lane_piece);
}

/* Any other call: ClientMessage's own fields by hand (numbers 1-7, before
 * the oneof's 10-36), then the call's message: walking ClientMessage's 27
 * oneof members twice cost more than the call's own message.  The oneof's
 * case is its field number; every member of the union is a message. */
static const ProtobufCMessage *sub_of(const Crane__ClientMessage *m)
{
    if (m->msg_case == CRANE__CLIENT_MESSAGE__MSG__NOT_SET ||
        m->base.n_unknown_fields || !m->hello)
        return NULL;
    return (const ProtobufCMessage *)m->hello;
}

static uint8_t *put_head(uint8_t *p, const Crane__ClientMessage *m)
{
    p = put_num(p, CM_SEQ, m->seq);
    p = put_num(p, CM_WANT_REPLY, m->want_reply);
    p = put_num(p, CM_SHM_BULK, m->shm_bulk);
    p = put_num(p, CM_SHM_POS, m->shm_pos);
    p = put_num(p, CM_LANE_XFER, m->lane_xfer);
    p = put_num(p, CM_LANES, m->lanes);
    return put_num(p, CM_LANE_PIECE, m->lane_piece);
}

size_t crn_fastpack_size(const Crane__ClientMessage *m)
{
    const ProtobufCMessage *sub;

    if (!fast(m) && (sub = sub_of(m)))
        return head_size(m) + len_size((unsigned)m->msg_case,
                                       protobuf_c_message_get_packed_size(sub));
    if (!fast(m))
        return crane__client_message__get_packed_size(m);
    return head_size(m) +
           len_size(CM_LAUNCH_KERNEL, launch_len(m->launch_kernel));
}

size_t crn_fastpack(const Crane__ClientMessage *m, uint8_t *out)
{
    const ProtobufCMessage *sub = NULL;
    uint8_t *p = out;

    if (!fast(m) && !(sub = sub_of(m)))
        return crane__client_message__pack(m, out);
    p = put_head(p, m);
    if (sub) {
        uint8_t *body = p = len_open(p, (unsigned)m->msg_case);
        return (size_t)(len_close(body, p + protobuf_c_message_pack(sub, p)) - out);
    }
    uint8_t *body = p = len_open(p, CM_LAUNCH_KERNEL);
    p = len_close(body, put_launch(p, m->launch_kernel));
    return (size_t)(p - out);
}

/* ServerMessage is its oneof alone: the answer's message is packed after
 * its tag and length, without protobuf-c's walk of ServerMessage (twice)
 * and its second walk of the answer for the length. */
static const ProtobufCMessage *server_sub(const Crane__ServerMessage *m)
{
    if (m->msg_case == CRANE__SERVER_MESSAGE__MSG__NOT_SET ||
        m->base.n_unknown_fields || !m->reply)
        return NULL;
    return (const ProtobufCMessage *)m->reply;
}

size_t crn_fastpack_server_size(const Crane__ServerMessage *m)
{
    const ProtobufCMessage *sub = server_sub(m);

    if (!sub)
        return crane__server_message__get_packed_size(m);
    return len_size((unsigned)m->msg_case,
                    protobuf_c_message_get_packed_size(sub));
}

size_t crn_fastpack_server(const Crane__ServerMessage *m, uint8_t *out)
{
    const ProtobufCMessage *sub = server_sub(m);
    uint8_t *body;

    if (!sub)
        return crane__server_message__pack(m, out);
    body = len_open(out, (unsigned)m->msg_case);
    return (size_t)(len_close(body, body + protobuf_c_message_pack(sub, body)) -
                    out);
}

