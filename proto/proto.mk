# Make fragment: libcrane-proto (protobuf-c code, framing), its tests, fuzzing.
#
# Include it from the top-level Makefile, which runs from the repository root
# and sets CC and CFLAGS, and may set B, the build folder of the variant
# being built (build-address for sanitizer builds; default build).  Objects
# and the archive go under $(B); generated code, the same for every variant,
# under build/gen.  It provides:
#   PROTO_LIB     $(B)/lib/libcrane-proto.a (build/lib/libcrane-proto.a)
#   PROTO_CFLAGS  include flags for users: #include "proto/frame.h" and
#                 #include "proto/snapshot.pb-c.h" (generated)
#   PROTO_LIBS    what users link: the archive, then libprotobuf-c
#   PROTO_GEN_H   generated headers; objects that include them need them
#                 first, e.g.  $(UNIT_OBJS): | $(PROTO_GEN_H)
#   UNIT_RUNNER_SRCS, UNIT_SRCS += ...  the unit-test runner and this
#                 library's tests, linked into build/tests/unit-tests by the
#                 includer (add UNIT_SRCS with +=, or after this include)
#   fuzz-frame    builds build/fuzz/fuzz_frame (clang, libFuzzer + ASan)
# Every *.proto in proto/ is compiled by protoc-c at build time into
# build/gen/proto/; generated code is never committed.

PROTOC_C ?= protoc-c
PROTOBUF_C_CFLAGS := $(shell pkg-config --cflags libprotobuf-c 2>/dev/null)
PROTOBUF_C_LIBS := $(or $(shell pkg-config --libs libprotobuf-c 2>/dev/null),\
                          -lprotobuf-c)

PROTO_B := $(or $(B),build)
PROTO_LIB := $(PROTO_B)/lib/libcrane-proto.a
PROTO_CFLAGS := -I. -Ibuild/gen $(PROTOBUF_C_CFLAGS)
PROTO_LIBS := $(PROTO_LIB) $(PROTOBUF_C_LIBS)

PROTO_SCHEMAS := $(wildcard proto/*.proto)
PROTO_GEN_C := $(PROTO_SCHEMAS:proto/%.proto=build/gen/proto/%.pb-c.c)
PROTO_GEN_H := $(PROTO_GEN_C:.c=.h)
PROTO_C_SRCS := $(sort $(wildcard proto/*.c))
PROTO_OBJS := $(PROTO_GEN_C:build/gen/proto/%.c=$(PROTO_B)/obj/gen/proto/%.o) \
              $(PROTO_C_SRCS:proto/%.c=$(PROTO_B)/obj/proto/%.o)

UNIT_RUNNER_SRCS := tests/unit/runner.c
UNIT_SRCS += tests/unit/test_frame.c tests/unit/test_auth.c \
             tests/unit/test_conffile.c

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

build/fuzz/fuzz_frame: tests/fuzz/fuzz_frame.c $(PROTO_C_SRCS) \
                       proto/frame.h $(PROTO_GEN_C) $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(PROTO_CFLAGS) -o $@ $(filter %.c,$^) \
	    $(PROTOBUF_C_LIBS)

.PHONY: fuzz-frame
fuzz-frame: build/fuzz/fuzz_frame
