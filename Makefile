# crane: top-level build.  `make`, `make check`, `make demo`, `make man`,
# `make install` (install.mk says where things go and how to move them).

CC ?= cc
SAN ?=

# One version for every program (--version, man pages): `git describe` of
# a v* tag in a git checkout, else the VERSION file with the commit.
CRANE_VERSION ?= $(shell \
    v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && \
        { echo "$${v#v}"; exit; }; \
    h=$$(git describe --always --dirty 2>/dev/null); \
    echo "$$(cat VERSION)$${h:+-g$$h}")
# The C programs read it from a header rewritten only when it changes, so
# that a new commit rebuilds one object, not the tree.
VERSION_H := build/gen/crane_version.h
$(shell mkdir -p build/gen && \
    echo '#define CRANE_VERSION "$(CRANE_VERSION)"' >$(VERSION_H).tmp && \
    { cmp -s $(VERSION_H).tmp $(VERSION_H) && rm -f $(VERSION_H).tmp || \
      mv -f $(VERSION_H).tmp $(VERSION_H); })

ifeq ($(SAN),)
B := build
SAN_FLAGS :=
else
B := build-$(SAN)
SAN_FLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer
endif

# CFLAGS, CPPFLAGS and LDFLAGS come from the environment too (a
# distribution's hardening: dpkg-buildflags, debian/rules).  WERROR=1 (the
# default: developer builds and make check) turns warnings into errors;
# packages build with WERROR=0, so a newer compiler's warning never fails
# a distribution's build.
OPT ?= -O2
CFLAGS ?= $(OPT) -g
WERROR ?= 1
CFLAGS += $(CPPFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra \
    $(if $(filter 1,$(WERROR)),-Werror) -pthread $(SAN_FLAGS)
CFLAGS += -MMD -MP
LDFLAGS += $(SAN_FLAGS)

# The shim's core in shim/, its remote backend in shim/remote/, the switch
# in shim/switch/; their files include each other's headers by name.
SHIM_SRCS := $(sort $(wildcard shim/*.c shim/remote/*.c shim/switch/*.c))
SHIM_CPPFLAGS := -iquote shim
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/obj/%.o)
SHIM_LIB := $(B)/lib/libcrane.so
CRANE_RUN := $(B)/bin/crane-run

.DEFAULT_GOAL := all
include proto/proto.mk
-include proxy-domain/proxy.mk
-include bench/remote/remote.mk
-include bench/shimcost/shimcost.mk
-include bench/maps/maps.mk
-include guest-daemon/guestd.mk
-include host-daemon/hostd.mk

all: $(SHIM_LIB) $(CRANE_RUN) $(PROTO_LIB) programs bench

$(B)/obj/shim/%.o: shim/%.c | $(PROTO_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PROTO_CFLAGS) $(SHIM_CPPFLAGS) -fPIC \
	    -fvisibility=hidden -c $< -o $@

# The proto archive goes inside, its names hidden (--exclude-libs) so they
# never clash with the program's.  -z initfirst: the shim's constructor
# (exports.c hands the store its ICD table) runs before any other
# library's, which might call OpenCL.  -Bsymbolic-functions: the ICD
# table the shim hands a loader names the shim's own functions even where
# libOpenCL's come first in the program's scope (libcrane loaded as a
# vendor from an .icd file, with no crane-run).
$(SHIM_LIB): $(SHIM_OBJS) $(PROTO_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcrane.so -Wl,-z,defs -Wl,-z,initfirst \
	    -Wl,-Bsymbolic-functions \
	    -Wl,--exclude-libs,ALL -o $@ $(SHIM_OBJS) \
	    $(PROTO_LIB) $(PROTOBUF_C_LIBS) $(GNUTLS_LIBS) $(LDFLAGS) -ldl -pthread

# The version only: `make install` writes the install's paths (install.mk).
$(CRANE_RUN): shim/crane-run $(VERSION_H)
	@mkdir -p $(dir $@)
	sed 's|@VERSION@|$(CRANE_VERSION)|g' $< >$@.tmp
	chmod 755 $@.tmp
	mv -f $@.tmp $@

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
    build/bench/sockbw build/bench/hostptr build/bench/pcopybw \
    build/bench/shimcost build/bench/nullcl/libnullcl.so \
    build/bench/dlloop build/bench/budget build/bench/userevent \
    build/bench/maps
build/bench/dlloop: bench/rehome/dlloop.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $< -o $@ -ldl
build/bench/budget: bench/rehome/budget.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -ldl
CLBENCH_SRCS := $(sort $(wildcard bench/overhead/clbench*.c))
build/bench/clbench: $(CLBENCH_SRCS) bench/overhead/clbench.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
	    $(CLBENCH_SRCS) -o $@ -lOpenCL -lm

-include tests/tests.mk
include install.mk

clean:
	rm -rf build build-*

.PHONY: all programs bench clean check demo

-include $(SHIM_OBJS:.o=.d)

demo: all
	scripts/demo.sh

# Debian packages (debian/, docs/packaging.md) into DEB_DIR, built by
# dpkg-buildpackage in a copy of the tree (its clean step would empty
# build/ here).
DEB_DIR ?= build/deb
deb:
	rm -rf $(DEB_DIR)/src && mkdir -p $(DEB_DIR)/src
	tar -cf - --exclude=./build --exclude='./build-*' --exclude=./.git . | \
	    tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b -j2
	rm -rf $(DEB_DIR)/src
	@ls $(DEB_DIR)/*.deb
.PHONY: deb

# The version, for scripts (tests/install/install.sh).
print-version:
	@echo $(CRANE_VERSION)
.PHONY: print-version
