/* ClientMessage packing for the calls a program makes most, without
 * protobuf-c's generic walk. */
#ifndef CRN_FASTPACK_H
#define CRN_FASTPACK_H

#include "proto/remote.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/*
 * A kernel launch is the call a program makes most, and protobuf-c packed
 * it by walking every field descriptor of ClientMessage, LaunchKernel and
 * each KernelArg four times over (sizes, then each sub-message's size
 * again for its length prefix, then the bytes): two thirds of what a
 * launch cost the shim (bench/shimcost, callgrind).  These write the same
 * bytes protobuf-c writes (fields in number order, proto3 defaults left
 * out, repeated numbers packed; tests/unit/test_fastpack.c checks byte for
 * byte) for a ClientMessage holding a LaunchKernel; for any other call
 * they write ClientMessage's own fields and leave the call's message to
 * protobuf-c (its walk of ClientMessage's 34 field descriptors, twice,
 * cost more than a small call's own message).  The schema stays the wire
 * format: a field added to ClientMessage, LaunchKernel or KernelArg must
 * be added here too (the unit test fails until it is).
 */

/* The packed size of M. */
size_t crn_fastpack_size(const Crane__ClientMessage *m);
/* Packs M into OUT (crn_fastpack_size(M) bytes of room); returns the
 * bytes written. */
size_t crn_fastpack(const Crane__ClientMessage *m, uint8_t *out);

/* The same for the proxy's ServerMessage: its oneof's tag and length
 * written here, the message in it packed by protobuf-c. */
size_t crn_fastpack_server_size(const Crane__ServerMessage *m);
size_t crn_fastpack_server(const Crane__ServerMessage *m, uint8_t *out);

#endif /* CRN_FASTPACK_H */
