/* libFuzzer target: every message a peer sends, through protobuf-c itself. */
#include "proto/control.pb-c.h"
#include "proto/hostd.pb-c.h"
#include "proto/remote.pb-c.h"
#include "proto/worker.pb-c.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The first byte picks the schema's top-level message, the rest is its
 * encoding, as a peer would send it on the channel that carries it.  The
 * runtime (protobuf-c.c) is compiled into this target with the fuzzer's
 * instrumentation (proto/proto.mk), so coverage leads into its decoder and
 * ASan/UBSan watch it.  A message that decodes must encode to the size
 * get_packed_size says; once encoded by protobuf-c, a message must decode
 * and encode to the same bytes again (its canonical form is a fixed
 * point).  The first encoding may still differ from the input and fail to
 * decode: protobuf-c 1.4.1 keeps an unknown field numbered 0 whose tag is
 * an overlong varint, then packs it canonically, which it rejects.
 */
static const ProtobufCMessageDescriptor *const messages[] = {
    &crane__client_message__descriptor,   /* remoting: shim -> proxy */
    &crane__server_message__descriptor,   /* remoting: proxy -> shim */
    &crane__control__host_message__descriptor,     /* control: host -> guestd */
    &crane__control__guest_message__descriptor,    /* control: guestd -> host */
    &crane__control__shim_message__descriptor,     /* control: shim -> guestd */
    &crane__control__daemon_message__descriptor,   /* control: guestd -> shim */
    &crane__hostd__client_request__descriptor,
    &crane__hostd__daemon_reply__descriptor,
    &crane__hostd__peer_request__descriptor,
    &crane__hostd__peer_reply__descriptor,
    &crane__hostd__xen_config__descriptor,     /* libxl stream: its first frame */
    &crane__worker__to_worker__descriptor,     /* proxy: supervisor -> worker */
    &crane__worker__to_supervisor__descriptor, /* proxy: worker -> supervisor */
};

/* Packs M into a new buffer; *LEN its size.  Aborts on a size mismatch. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    size_t want = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(want ? want : 1);

    if (!buf)
        abort();
    *len = protobuf_c_message_pack(m, buf);
    if (*len != want)
        abort();
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ProtobufCMessageDescriptor *d;
    ProtobufCMessage *m, *again, *third;
    uint8_t *p1, *p2;
    size_t n1, n2;

    if (size < 1)
        return 0;
    d = messages[data[0] % (sizeof(messages) / sizeof(messages[0]))];
    m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
    if (!m)
        return 0;
    p1 = pack(m, &n1);
    again = protobuf_c_message_unpack(d, NULL, n1, p1);
    if (again) {
        p2 = pack(again, &n2);
        third = protobuf_c_message_unpack(d, NULL, n2, p2);
        /* The canonical form decodes, and encodes to itself. */
        if (!third)
            abort();
        {
            size_t n3;
            uint8_t *p3 = pack(third, &n3);
            if (n3 != n2 || memcmp(p3, p2, n2) != 0)
                abort();
            free(p3);
        }
        protobuf_c_message_free_unpacked(third, NULL);
        protobuf_c_message_free_unpacked(again, NULL);
        free(p2);
    }
    free(p1);
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
