# Tests: the unit-test binary and `make check`, which runs every stage.

UNIT_SRCS += tests/unit/test_shadow.c tests/unit/test_remote.c \
    tests/unit/test_check.c \
    tests/unit/test_timebase.c \
    tests/unit/test_kernel_sig.c tests/unit/test_hostmem.c \
    tests/unit/test_bytepath.c
UNIT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(UNIT_RUNNER_SRCS) $(UNIT_SRCS))
UNIT_BIN := $(B)/tests/unit-tests
SHIM_ARCHIVE := $(B)/lib/libcrane-shim.a

$(SHIM_ARCHIVE): $(SHIM_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(B)/obj/tests/unit/%.o: tests/unit/%.c | $(PROTO_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PROTO_CFLAGS) $(SHIM_CPPFLAGS) -c -o $@ $<

$(UNIT_BIN): $(UNIT_OBJS) $(SHIM_ARCHIVE) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(UNIT_OBJS) $(SHIM_ARCHIVE) $(PROTO_LIBS) $(LDFLAGS) \
	    -luv -ldl -pthread

unit: $(UNIT_BIN)

# Remoting scenarios that are no migration test program (tests/programs/
# runs in every mode; these only where they say).
REMOTE_TEST_BINS := $(B)/tests/integration/user_events \
    $(B)/tests/integration/svm $(B)/tests/integration/timers \
    $(B)/tests/integration/callbacks $(B)/tests/integration/bulk_loop \
    $(B)/tests/integration/deferred $(B)/tests/integration/ring_writes \
    $(B)/tests/integration/libcrane-fakecl.so \
    $(B)/tests/integration/hostaccess_lenient \
    $(B)/tests/integration/early_ctor $(B)/tests/integration/hostmem \
    $(B)/tests/integration/prebuild $(B)/tests/integration/spin \
    $(B)/tests/integration/kept_binaries $(B)/tests/integration/svm_caps
$(B)/tests/integration/libcrane-fakecl.so: tests/integration/fakecl.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -shared \
	    -fPIC $< -o $@ -ldl -pthread
# A library whose constructor calls OpenCL, and a program linked with it.
$(B)/tests/integration/libearly.so: tests/integration/early_lib.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -shared \
	    -fPIC $< -o $@ -lOpenCL
$(B)/tests/integration/early_ctor: tests/integration/early_ctor.c \
    $(B)/tests/integration/libearly.so
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror $< -o $@ \
	    -L$(@D) -learly -Wl,-rpath,'$$ORIGIN' -lOpenCL -ldl
$(B)/tests/integration/%: tests/integration/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror $< -o $@ \
	    -lOpenCL -pthread

# Every stage: unit tests (plain, valgrind, ASan), the shim under real
# programs with and without re-homes, third-party programs, the shim under
# ASan, and a short fuzz run.  One summary line at the end.
check: all $(UNIT_BIN) $(REMOTE_TEST_BINS)
	$(MAKE) SAN=address $(SHIM_LIB_ASAN_TARGETS)
	$(MAKE) fuzz-frame fuzz-proto
	tests/run-tests.sh

SHIM_LIB_ASAN_TARGETS := build-address/lib/libcrane.so \
    build-address/bin/crane-run build-address/tests/unit-tests \
    $(if $(HOSTD_BIN),build-address/bin/crane-hostd)

.PHONY: unit
-include $(UNIT_OBJS:.o=.d)
