# Make fragment: crane-proxy, the remoting server, and its tests.
#
# Included by the top-level Makefile after proto/proto.mk; builds in the
# variant folder $(B) (build, or build-address with SAN=address).
#   PROXY_BIN        $(B)/bin/crane-proxy
#   PROXY_TEST_BINS  build/tests/proxy/*: integration clients for
#                    tests/run-tests.sh (plain build, no sanitizer)
#   proxy-asan       build-address/bin/crane-proxy, for the ASan test runs
#   fuzz-remote      build/fuzz/fuzz_remote (clang, libFuzzer + ASan/UBSan)
#   UNIT_SRCS += ... tests/unit/test_px.c with validate.c, validate_create.c,
#                    validate_common.c
# `make check` builds the three first.

UV_CFLAGS := $(shell pkg-config --cflags libuv 2>/dev/null)
UV_LIBS := $(or $(shell pkg-config --libs libuv 2>/dev/null),-luv)

PROXY_SRCS := $(sort $(wildcard proxy-domain/*.c))
PROXY_OBJS := $(PROXY_SRCS:%.c=$(B)/obj/%.o)
PROXY_BIN := $(B)/bin/crane-proxy
# Everything but the network side (every conn*.c among it): what the fuzz
# target links.
PROXY_CORE_SRCS := $(filter-out proxy-domain/main.c proxy-domain/server.c \
                     proxy-domain/supervisor.c proxy-domain/worker.c \
                     proxy-domain/conn%.c proxy-domain/handshake.c \
                     proxy-domain/preauth.c proxy-domain/server_state.c \
                     proxy-domain/transport.c, \
                     $(PROXY_SRCS))

all: $(PROXY_BIN)

$(B)/obj/proxy-domain/%.o: proxy-domain/%.c | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PROTO_CFLAGS) $(UV_CFLAGS) -c -o $@ $<

$(PROXY_BIN): $(PROXY_OBJS) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(PROXY_OBJS) $(PROTO_LIBS) $(UV_LIBS) $(LDFLAGS) \
	    -lOpenCL -lm -pthread

-include $(PROXY_OBJS:.o=.d)

# The proxy's pure parts in the unit-test binary (tests/unit/test_px.c).
UNIT_SRCS += tests/unit/test_px.c proxy-domain/validate.c \
    proxy-domain/validate_create.c proxy-domain/validate_common.c

# Integration clients: each tests/proxy/*.c with the shared client code.
PROXY_TEST_COMMON := tests/proxy/client.c
PROXY_TEST_PROGS := $(filter-out $(PROXY_TEST_COMMON), \
                      $(wildcard tests/proxy/*.c))
PROXY_TEST_BINS := $(PROXY_TEST_PROGS:tests/proxy/%.c=build/tests/proxy/%)

# A program whose cases are many keeps them in a folder of its name
# (tests/proxy/proxy_test/*.c), linked in with it.
build/tests/proxy/%: tests/proxy/%.c $(PROXY_TEST_COMMON) \
                     tests/proxy/client.h build/lib/libcrane-proto.a \
                     | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -pthread \
	    $(PROTO_CFLAGS) -o $@ $< $(wildcard tests/proxy/$(@F)/*.c) \
	    $(PROXY_TEST_COMMON) \
	    build/lib/libcrane-proto.a $(PROTOBUF_C_LIBS) $(GNUTLS_LIBS)
build/tests/proxy/proxy_test: $(wildcard tests/proxy/proxy_test/*.c \
                                tests/proxy/proxy_test/*.h)

proxy-tests: build/bin/crane-proxy $(PROXY_TEST_BINS)
# The ASan proxy runs every integration case a second time.
proxy-asan:
	$(MAKE) SAN=address build-address/bin/crane-proxy
check: proxy-tests proxy-asan fuzz-remote

# The fuzz target: message decoding, validation and execution on a real
# tenant (PoCL), without the network.  Run it with
#   build/fuzz/fuzz_remote -max_total_time=20
build/fuzz/fuzz_remote: tests/fuzz/fuzz_remote.c $(PROXY_CORE_SRCS) \
                        $(PROTO_C_SRCS) $(PROTO_GEN_C) $(PROTO_GEN_H) \
                        $(wildcard proxy-domain/*.h) $(FUZZ_PBC_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_PBC_CFLAGS) $(PROTO_CFLAGS) \
	    $(UV_CFLAGS) -Iproxy-domain -o $@ $(filter %.c %.o,$^) \
	    $(UV_LIBS) $(GNUTLS_LIBS) -lOpenCL -lm -pthread

.PHONY: proxy-tests proxy-asan fuzz-remote
fuzz-remote: build/fuzz/fuzz_remote
