# Make fragment: the host daemon's library (history, metrics, JSON, HTTP)
# and its unit tests.  Built only where SQLite is (pkg-config sqlite3); the
# HTTP server (http.c) and its tests only where libmicrohttpd is too.
#
# Included by the top-level Makefile; builds in the variant folder $(B)
# (build, or build-address with SAN=address).
#   HOSTD_LIB        $(B)/lib/libcrane-hostd.a
#   HOSTD_TEST_BIN   $(B)/tests/hostd-tests: the tests of tests/hostd/,
#                    listed in tests/hostd/list.h and run by the unit-test
#                    runner (tests/unit/runner.c); `make check` builds it.

ifeq ($(shell pkg-config --exists sqlite3 && echo yes),yes)

SQLITE_CFLAGS := $(shell pkg-config --cflags sqlite3)
SQLITE_LIBS := $(shell pkg-config --libs sqlite3)

HOSTD_LIB_SRCS := host-daemon/history.c host-daemon/metrics.c \
                  host-daemon/json.c host-daemon/buf.c host-daemon/log.c
HOSTD_LIB_OBJS := $(HOSTD_LIB_SRCS:%.c=$(B)/obj/%.o)
HOSTD_LIB := $(B)/lib/libcrane-hostd.a
HOSTD_LIBS := $(HOSTD_LIB) $(SQLITE_LIBS) -lm
HOSTD_DEFS :=

# The HTTP server; HD_HAVE_HTTP turns on its tests (tests/hostd/list.h).
ifeq ($(shell pkg-config --exists libmicrohttpd && echo yes),yes)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd)
HOSTD_LIB_SRCS += host-daemon/http.c
HOSTD_LIB_OBJS += $(B)/obj/host-daemon/http.o
HOSTD_LIBS += $(shell pkg-config --libs libmicrohttpd)
HOSTD_DEFS += -DHD_HAVE_HTTP
endif

HOSTD_TEST_SRCS := $(sort $(wildcard tests/hostd/*.c))
HOSTD_TEST_OBJS := $(HOSTD_TEST_SRCS:%.c=$(B)/obj/%.o) \
                   $(B)/obj/tests/hostd/runner/runner.o
HOSTD_TEST_BIN := $(B)/tests/hostd-tests

all: $(HOSTD_LIB) $(HOSTD_TEST_BIN)
check: $(HOSTD_TEST_BIN)
hostd-tests: $(HOSTD_TEST_BIN)

$(B)/obj/host-daemon/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS) -c -o $@ $<

$(HOSTD_LIB): $(HOSTD_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(B)/obj/tests/hostd/%.o: tests/hostd/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SQLITE_CFLAGS) $(HOSTD_DEFS) -I. -Itests/unit -c \
	    -o $@ $<

# The shared runner includes "list.h" from its own folder first, so it is
# compiled from a copy in a folder of its own, where -iquote tests/hostd
# makes tests/hostd/list.h the list it expands (tests/unit/ is untouched).
$(B)/obj/tests/hostd/runner/runner.c: tests/unit/runner.c
	@mkdir -p $(@D)
	cp $< $@

$(B)/obj/tests/hostd/runner/runner.o: $(B)/obj/tests/hostd/runner/runner.c \
                                      tests/hostd/list.h
	$(CC) $(CFLAGS) $(HOSTD_DEFS) -iquote tests/hostd -iquote tests/unit \
	    -c -o $@ $<

$(HOSTD_TEST_BIN): $(HOSTD_TEST_OBJS) $(HOSTD_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(HOSTD_TEST_OBJS) $(HOSTD_LIBS) $(LDFLAGS) -pthread

-include $(HOSTD_LIB_OBJS:.o=.d) $(HOSTD_TEST_OBJS:.o=.d)

.PHONY: hostd-tests

endif
