# crane: top-level build.  `make`, `make check`, `make demo`,
# `make install PREFIX=/usr/local DESTDIR=`.

CC ?= cc
PREFIX ?= /usr/local
DESTDIR ?=
SAN ?=

ifeq ($(SAN),)
B := build
SAN_FLAGS :=
else
B := build-$(SAN)
SAN_FLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer
endif

OPT ?= -O2
CFLAGS ?= $(OPT) -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread $(SAN_FLAGS)
CFLAGS += -MMD -MP
LDFLAGS += $(SAN_FLAGS)

SHIM_SRCS := $(sort $(wildcard shim/*.c))
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/obj/%.o)
SHIM_LIB := $(B)/lib/libcrane.so
CRANE_RUN := $(B)/bin/crane-run

.DEFAULT_GOAL := all
include proto/proto.mk
-include proxy-domain/proxy.mk
-include bench/remote/remote.mk
-include bench/shimcost/shimcost.mk
-include guest-daemon/guestd.mk
-include host-daemon/hostd.mk

all: $(SHIM_LIB) $(CRANE_RUN) $(PROTO_LIB) programs bench

$(B)/obj/shim/%.o: shim/%.c | $(PROTO_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PROTO_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# The proto archive goes inside, its names hidden (--exclude-libs) so they
# never clash with the program's.
$(SHIM_LIB): $(SHIM_OBJS) $(PROTO_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcrane.so -Wl,-z,defs \
	    -Wl,--exclude-libs,ALL -o $@ $(SHIM_OBJS) \
	    $(PROTO_LIB) $(PROTOBUF_C_LIBS) $(LDFLAGS) -ldl -pthread

$(CRANE_RUN): shim/crane-run
	@mkdir -p $(dir $@)
	install -m 755 $< $@

# Test programs and benchmarks: plain OpenCL programs, built without
# sanitizers (the shim is what is under test).
TEST_PROGS := $(basename $(notdir $(wildcard tests/programs/*.c)))
programs: $(TEST_PROGS:%=build/tests/programs/%) build/tests/fault/switchee
build/tests/fault/switchee: tests/fault/switchee.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -ldl
build/tests/programs/%: tests/programs/%.c $(wildcard tests/programs/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror $< -o $@ \
	    $(if $(filter dlopen_app,$*),-ldl,-lOpenCL) -pthread -lm

bench: build/bench/clbench build/bench/latency build/bench/switch \
    build/bench/shimcost build/bench/nullcl/libnullcl.so
build/bench/clbench: bench/overhead/clbench.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -lm

-include tests/tests.mk

install: $(SHIM_LIB) $(CRANE_RUN)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(SHIM_LIB) $(DESTDIR)$(PREFIX)/lib/libcrane.so
	install -m 755 $(CRANE_RUN) $(DESTDIR)$(PREFIX)/bin/crane-run

clean:
	rm -rf build build-*

.PHONY: all programs bench install clean check demo

-include $(SHIM_OBJS:.o=.d)

demo: all
	scripts/demo.sh
