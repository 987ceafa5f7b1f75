# Make fragment: libcrane-proto (protobuf-c code, framing), its tests, fuzzing.
#
# Include it from the top-level Makefile, which runs from the repository root
# and sets CC and CFLAGS, and may set B, the build folder of the variant
# being built (build-address for sanitizer builds; default build).  Objects
# and the archive go under $(B); generated code, the same for every variant,
# under build/gen.  It provides:
#   PROTO_LIB     $(B)/lib/libcrane-proto.a (build/lib/libcrane-proto.a)
#   PROTO_CFLAGS  include flags for users: #include "proto/frame.h" and
#                 #include "proto/control.pb-c.h" (generated)
#   PROTO_LIBS    what users link: the archive, then libprotobuf-c
#   PROTO_GEN_H   generated headers; objects that include them need them
#                 first, e.g.  $(UNIT_OBJS): | $(PROTO_GEN_H)
#   UNIT_RUNNER_SRCS, UNIT_SRCS += ...  the unit-test runner and this
#                 library's tests, linked into build/tests/unit-tests by the
#                 includer (add UNIT_SRCS with +=, or after this include)
#   fuzz-frame    builds build/fuzz/fuzz_frame (clang, libFuzzer + ASan)
#   fuzz-proto    builds build/fuzz/fuzz_proto: every schema's top-level
#                 messages through protobuf-c's decoder and encoder
#   FUZZ_PBC_OBJ  protobuf-c's runtime built for the fuzz targets
# Every *.proto in proto/ is compiled by protoc-c at build time into
# build/gen/proto/; generated code is never committed.

PROTOC_C ?= protoc-c
PROTOBUF_C_CFLAGS := $(shell pkg-config --cflags libprotobuf-c 2>/dev/null)
PROTOBUF_C_LIBS := $(or $(shell pkg-config --libs libprotobuf-c 2>/dev/null),\
                          -lprotobuf-c)

PROTO_B := $(or $(B),build)
PROTO_LIB := $(PROTO_B)/lib/libcrane-proto.a
PROTO_CFLAGS := -I. -Ibuild/gen $(PROTOBUF_C_CFLAGS)
# GnuTLS: TLS on every TCP link (tls.c), HMAC and random bytes (auth.c).
GNUTLS_LIBS := $(or $(shell pkg-config --libs gnutls 2>/dev/null),-lgnutls)
PROTO_LIBS := $(PROTO_LIB) $(PROTOBUF_C_LIBS) $(GNUTLS_LIBS)

PROTO_SCHEMAS := $(wildcard proto/*.proto)
PROTO_GEN_C := $(PROTO_SCHEMAS:proto/%.proto=build/gen/proto/%.pb-c.c)
PROTO_GEN_H := $(PROTO_GEN_C:.c=.h)
PROTO_C_SRCS := $(sort $(wildcard proto/*.c))
PROTO_OBJS := $(PROTO_GEN_C:build/gen/proto/%.c=$(PROTO_B)/obj/gen/proto/%.o) \
              $(PROTO_C_SRCS:proto/%.c=$(PROTO_B)/obj/proto/%.o)

UNIT_RUNNER_SRCS := tests/unit/runner.c
UNIT_SRCS += tests/unit/test_frame.c tests/unit/test_auth.c tests/unit/test_tls.c \
             tests/unit/test_conffile.c tests/unit/test_conftable.c \
             tests/unit/test_log.c \
             tests/unit/test_shm.c tests/unit/test_pcopy.c \
             tests/unit/test_fastpack.c \
             tests/unit/test_map.c tests/unit/test_deadline.c \
             tests/unit/test_listen.c tests/unit/test_spin.c \
             tests/unit/test_lane.c tests/unit/test_control.c

# One protoc-c run writes both files (a grouped pattern rule).  The proto
# path is the repository root, so imports read "proto/x.proto" and the
# generated code includes "proto/x.pb-c.h".
build/gen/proto/%.pb-c.c build/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(PROTOC_C) --proto_path=. --c_out=build/gen $<

# -fPIC: the archive is linked into libcrane.so too.
$(PROTO_B)/obj/gen/proto/%.o: build/gen/proto/%.c | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC $(PROTO_CFLAGS) -MMD -MP -c -o $@ $<

$(PROTO_B)/obj/proto/%.o: proto/%.c | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC $(PROTO_CFLAGS) -MMD -MP -c -o $@ $<

$(PROTO_LIB): $(PROTO_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

-include $(PROTO_OBJS:.o=.d)

# The fuzz target compiles its sources itself: libFuzzer needs them
# instrumented by clang.  Run it with
#   build/fuzz/fuzz_frame -max_total_time=10
FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 \
               -fsanitize=fuzzer,address,undefined \
               -fno-sanitize-recover=undefined

# protobuf-c's runtime is compiled into every fuzz target with the
# fuzzer's instrumentation (fuzzer-no-link: coverage, ASan, UBSan), so that
# its decoder is explored and checked too, instead of linking the
# uninstrumented libprotobuf-c.  The source is Debian's source package of
# the installed version, fetched once by tests/fuzz/protobuf-c-source.sh;
# offline, give PROTOBUF_C_SRC=DIR (an unpacked tree of that version).
PROTOBUF_C_SRC ?= build/fuzz/protobuf-c-src
FUZZ_PBC_CFLAGS := -I$(PROTOBUF_C_SRC)
FUZZ_PBC_OBJ := build/fuzz/protobuf-c.o

build/fuzz/protobuf-c-src/protobuf-c/protobuf-c.c:
	tests/fuzz/protobuf-c-source.sh build/fuzz/protobuf-c-src

# Three UBSan checks are off for protobuf-c.c alone, each for a finding of
# fuzz_proto in the first minute that upstream knows and that computes the
# intended values on the machines crane runs on:
#   shift-base: parse_tag_and_wiretype shifts a byte promoted to int left
#     by 25 for a five-byte tag (protobuf-c.c:2085, :2088; protobuf-c issue
#     #506, pull request #794; tests/fuzz/regress/proto/tag-shift-overflow);
#   pointer-overflow: protobuf_c_message_unpack computes desc->fields + 0
#     for a message without fields, whose fields pointer is NULL
#     (protobuf-c.c:3035; tests/fuzz/regress/proto/empty-message-null-fields);
#   nonnull-attribute: binary_data_pack calls memcpy(out, NULL, 0) for an
#     empty bytes field (protobuf-c.c:1024; pull request #794;
#     tests/fuzz/regress/proto/empty-bytes-memcpy-null).
# ASan and every other UBSan check stay on.
$(FUZZ_PBC_OBJ): $(PROTOBUF_C_SRC)/protobuf-c/protobuf-c.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 \
	    -fsanitize=fuzzer-no-link,address,undefined \
	    -fno-sanitize-recover=undefined -fno-sanitize=shift-base,pointer-overflow,nonnull-attribute \
	    $(FUZZ_PBC_CFLAGS) -c -o $@ $<

# Every proto/ source but the listener, which needs libuv and is no part
# of what the fuzzer reaches.
build/fuzz/fuzz_frame: tests/fuzz/fuzz_frame.c \
                       $(filter-out proto/listen.c,$(PROTO_C_SRCS)) \
                       proto/frame.h $(PROTO_GEN_C) $(PROTO_GEN_H) \
                       $(FUZZ_PBC_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_PBC_CFLAGS) $(PROTO_CFLAGS) -o $@ \
	    $(filter %.c %.o,$^) $(GNUTLS_LIBS) -luv

build/fuzz/fuzz_proto: tests/fuzz/fuzz_proto.c $(PROTO_GEN_C) \
                       $(PROTO_GEN_H) $(FUZZ_PBC_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_PBC_CFLAGS) $(PROTO_CFLAGS) -o $@ \
	    $(filter %.c %.o,$^)

.PHONY: fuzz-frame fuzz-proto
fuzz-frame: build/fuzz/fuzz_frame
fuzz-proto: build/fuzz/fuzz_proto
