# Make fragment: crane-guestd (the guest daemon), cranectl, and their tests.
#
# Included by the top-level Makefile after proto/proto.mk; builds in the
# variant folder $(B) (build, or build-address with SAN=address).
#   GUESTD_BIN        $(B)/bin/crane-guestd
#   CRANECTL_BIN      $(B)/bin/cranectl
#   GUEST_TEST_BINS   build/tests/guest/*: the test helpers of
#                     tests/guest/ (a fake shim, an OpenCL workload)

ifndef UV_LIBS
UV_CFLAGS := $(shell pkg-config --cflags libuv 2>/dev/null)
UV_LIBS := $(or $(shell pkg-config --libs libuv 2>/dev/null),-luv)
endif

# cranectl's own files; everything else in guest-daemon/ is the daemon.
CRANECTL_SRCS := guest-daemon/cranectl.c guest-daemon/ctl_print.c
GUESTD_SRCS := $(filter-out $(CRANECTL_SRCS), \
                 $(sort $(wildcard guest-daemon/*.c)))
GUESTD_OBJS := $(GUESTD_SRCS:%.c=$(B)/obj/%.o)
CRANECTL_OBJS := $(CRANECTL_SRCS:%.c=$(B)/obj/%.o)
GUESTD_BIN := $(B)/bin/crane-guestd
CRANECTL_BIN := $(B)/bin/cranectl

all: $(GUESTD_BIN) $(CRANECTL_BIN)

$(B)/obj/guest-daemon/%.o: guest-daemon/%.c | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PROTO_CFLAGS) $(UV_CFLAGS) -c -o $@ $<

# -ldl: the GPU probe child loads the vendor library.
$(GUESTD_BIN): $(GUESTD_OBJS) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(GUESTD_OBJS) $(PROTO_LIBS) $(UV_LIBS) $(LDFLAGS) -ldl \
	    -lm -pthread

$(CRANECTL_BIN): $(CRANECTL_OBJS) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(CRANECTL_OBJS) $(PROTO_LIBS) $(LDFLAGS) -lm

-include $(GUESTD_OBJS:.o=.d) $(CRANECTL_OBJS:.o=.d)

# Test helpers: plain builds, no sanitizer.
GUEST_TEST_BINS := build/tests/guest/fake_shim build/tests/guest/cl_worker \
                   build/tests/guest/hostd_guest_call \
                   build/tests/guest/cl_worker.so build/tests/guest/dlopen_worker

build/tests/guest/fake_shim: tests/guest/fake_shim.c build/lib/libcrane-proto.a \
                             | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror \
	    $(PROTO_CFLAGS) -o $@ $< build/lib/libcrane-proto.a \
	    $(PROTOBUF_C_LIBS) $(GNUTLS_LIBS)

# crane-hostd's client of the guest channel (host-daemon/guest.c, io.c)
# alone, so the tests can drive crane-guestd the way crane-hostd does.
build/tests/guest/hostd_guest_call: tests/guest/hostd_guest_call.c \
                                    host-daemon/guest.c host-daemon/io.c \
                                    build/lib/libcrane-proto.a \
                                    | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror \
	    $(PROTO_CFLAGS) $(UV_CFLAGS) -Ihost-daemon -o $@ $(filter %.c,$^) \
	    build/lib/libcrane-proto.a $(PROTOBUF_C_LIBS) $(GNUTLS_LIBS)

build/tests/guest/cl_worker: tests/guest/cl_worker.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -o $@ $< \
	    -lOpenCL -lm

# cl_worker as a shared object, loaded by dlopen_worker with RTLD_LOCAL
# (tests/guest/guestd-icd.sh: a program that reaches OpenCL by dlopen).
build/tests/guest/cl_worker.so: tests/guest/cl_worker.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -fPIC -shared \
	    -Dmain=cl_worker_main -o $@ $< -lOpenCL -lm
build/tests/guest/dlopen_worker: tests/guest/dlopen_worker.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -o $@ $< -ldl

guest-tests: $(GUESTD_BIN) $(CRANECTL_BIN) $(GUEST_TEST_BINS)
all: guest-tests
check: guest-tests

# `make install` (install.mk) installs both, the config and the unit.

.PHONY: guest-tests
