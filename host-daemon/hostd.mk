# Make fragment: the host daemon: its library (history, metrics, JSON, HTTP,
# dashboard), crane-hostd, crane-migrate, and their tests.
#
# Included by the top-level Makefile after proto/proto.mk; builds in the
# variant folder $(B) (build, or build-address with SAN=address).
#   HOSTD_LIB        $(B)/lib/libcrane-hostd.a (needs SQLite)
#   HOSTD_TEST_BIN   $(B)/tests/hostd-tests: the tests of tests/hostd/,
#                    listed in tests/hostd/list.h and run by the unit-test
#                    runner (tests/unit/runner.c); `make check` builds it.
#   HOSTD_BIN        $(B)/bin/crane-hostd (needs libvirt, libxml2, libuv
#                    and libmicrohttpd too); the libxl backend is built in
#                    when libxenlight is there (package libxen-dev)
#   MIGRATE_BIN      $(B)/bin/crane-migrate
#   HOSTCTL_BIN      $(B)/bin/crane-hostctl (crane's steps of a migration
#                    another tool performs; the pool for schedulers)
#   HOSTD_TOOLS      $(B)/tests/hostd-serve: serves a history file over
#                    HTTP (the dashboard's browser test); hostd-seed:
#                    writes a realistic history of one host

ifeq ($(shell pkg-config --exists sqlite3 && echo yes),yes)

SQLITE_CFLAGS := $(shell pkg-config --cflags sqlite3)
SQLITE_LIBS := $(shell pkg-config --libs sqlite3)

# The history (host-daemon/history/) and what renders it (host-daemon/web/).
HOSTD_LIB_SRCS := $(addprefix host-daemon/history/,history_write.c \
                      history_db.c history_schema.c history_query.c \
                      history_stats.c \
                      backlog.c history_counters.c history_job.c) \
                  $(addprefix host-daemon/web/,stats.c metrics.c json.c \
                      json_views.c buf.c pool_report.c)
HOSTD_LIB_OBJS := $(HOSTD_LIB_SRCS:%.c=$(B)/obj/%.o)
HOSTD_LIB := $(B)/lib/libcrane-hostd.a
HOSTD_LIBS := $(HOSTD_LIB) $(PROTO_LIBS) $(SQLITE_LIBS) -lm
HOSTD_DEFS :=

# The HTTP server; HD_HAVE_HTTP turns on its tests (tests/hostd/list.h).
ifeq ($(shell pkg-config --exists libmicrohttpd && echo yes),yes)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd)
HOSTD_HTTP_SRCS := $(addprefix host-daemon/web/,http.c http_query.c \
                       http_tls.c http_webconf.c)
HOSTD_LIB_SRCS += $(HOSTD_HTTP_SRCS)
HOSTD_LIB_OBJS += $(HOSTD_HTTP_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/gen/dashboard.o
HOSTD_LIBS += $(shell pkg-config --libs libmicrohttpd) -lcrypt
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
	$(CC) $(CFLAGS) -I. $(SQLITE_CFLAGS) $(MHD_CFLAGS) -c -o $@ $<

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

$(HOSTD_TEST_BIN): $(HOSTD_TEST_OBJS) $(HOSTD_LIB) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(HOSTD_TEST_OBJS) $(HOSTD_LIBS) $(LDFLAGS) -pthread

# The dashboard page, embedded in the library as bytes
# (hd_dashboard_html[], hd_dashboard_html_len), nothing to install: the
# frame host-daemon/web/dashboard.html with each `<!-- include: FILE -->`
# line replaced by host-daemon/web/FILE (its CSS and scripts, a file per
# concern), so the page served is one self-contained text/html file.  A
# piece missing or empty fails the build.
DASHBOARD_PARTS := $(wildcard host-daemon/web/dashboard*.css \
                              host-daemon/web/dashboard*.js)
$(B)/gen/dashboard.html: host-daemon/web/dashboard.html $(DASHBOARD_PARTS)
	@mkdir -p $(@D)
	awk '/^<!-- include: [A-Za-z0-9._-]+ -->$$/ { \
	      f = "host-daemon/web/" $$3; n = 0; \
	      while ((r = (getline l < f)) > 0) { print l; n++ } \
	      close(f); \
	      if (r < 0 || n == 0) { print "no piece " f > "/dev/stderr"; exit 1 } \
	      next } { print }' $< > $@.tmp && mv $@.tmp $@

$(B)/gen/dashboard.c: $(B)/gen/dashboard.html
	@mkdir -p $(@D)
	{ echo '/* Generated from host-daemon/web/dashboard*; do not edit. */'; \
	  echo 'const unsigned char hd_dashboard_html[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo 'const unsigned long hd_dashboard_html_len = sizeof(hd_dashboard_html);'; \
	} > $@.tmp && mv $@.tmp $@

$(B)/obj/gen/dashboard.o: $(B)/gen/dashboard.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# --- the daemon and crane-migrate ---------------------------------------------
ifeq ($(shell pkg-config --exists libvirt libxml-2.0 libmicrohttpd && echo yes),yes)

VIRT_CFLAGS := $(shell pkg-config --cflags libvirt libxml-2.0)
VIRT_LIBS := $(shell pkg-config --libs libvirt libxml-2.0)
ifndef UV_LIBS
UV_CFLAGS := $(shell pkg-config --cflags libuv 2>/dev/null)
UV_LIBS := $(or $(shell pkg-config --libs libuv 2>/dev/null),-luv)
endif

# crane-migrate's own files; the library's; everything else is the daemon.
# The two CLIs live in host-daemon/cli/.
MIGRATE_SRCS := $(addprefix host-daemon/cli/,crane-migrate.c migrate_args.c \
                    migrate_print.c migrate_virsh.c migrate_jobinfo.c \
                    migrate_cancel.c)
# crane-hostctl shares crane-migrate's output (migrate_print.c).
HOSTCTL_SRCS := $(addprefix host-daemon/cli/,crane-hostctl.c hostctl_table.c \
                    migrate_print.c migrate_jobinfo.c migrate_cancel.c)
HOSTD_SRCS := $(filter-out $(HOSTD_LIB_SRCS) $(MIGRATE_SRCS) $(HOSTCTL_SRCS) \
                host-daemon/hv/hv_libxl%.c, \
                $(sort $(wildcard host-daemon/*.c host-daemon/*/*.c)))
HOSTD_DAEMON_DEFS :=
XL_LIBS :=
ifeq ($(shell pkg-config --exists xenlight && echo yes),yes)
HOSTD_SRCS += $(sort $(wildcard host-daemon/hv/hv_libxl*.c))
HOSTD_DAEMON_DEFS += -DHD_HAVE_LIBXL
VIRT_CFLAGS += $(shell pkg-config --cflags xenlight)
XL_LIBS := $(shell pkg-config --libs xenlight xentoollog)
endif
HOSTD_OBJS := $(HOSTD_SRCS:%.c=$(B)/obj/%.o)
MIGRATE_OBJS := $(MIGRATE_SRCS:%.c=$(B)/obj/%.o)
HOSTCTL_OBJS := $(HOSTCTL_SRCS:%.c=$(B)/obj/%.o)
HOSTD_BIN := $(B)/bin/crane-hostd
MIGRATE_BIN := $(B)/bin/crane-migrate
HOSTCTL_BIN := $(B)/bin/crane-hostctl
HOSTD_SERVE_BIN := $(B)/tests/hostd-serve
HOSTD_SEED_BIN := $(B)/tests/hostd-seed
HOSTD_FAKE_BIN := $(B)/tests/hostd-fake
HOSTD_FAKE_GUEST_BIN := $(B)/tests/hostd-fake-guest
# The daemon's objects without main(), for tests that drive its parts.
HOSTD_CORE_OBJS := $(filter-out $(B)/obj/host-daemon/main.o,$(HOSTD_OBJS))
HOSTD_HV_TEST_SRCS := $(sort $(wildcard tests/hostd-hv/*.c))
HOSTD_HV_TEST_OBJS := $(HOSTD_HV_TEST_SRCS:%.c=$(B)/obj/%.o) \
                      $(B)/obj/tests/hostd-hv/runner/runner.o
HOSTD_HV_TEST_BIN := $(B)/tests/hostd-hv-tests

all: $(HOSTD_BIN) $(MIGRATE_BIN) $(HOSTCTL_BIN) $(HOSTD_SERVE_BIN) \
     $(HOSTD_SEED_BIN) \
     $(HOSTD_FAKE_BIN) $(HOSTD_FAKE_GUEST_BIN) \
     $(if $(HOSTD_HV_TEST_SRCS),$(HOSTD_HV_TEST_BIN))

$(HOSTD_OBJS) $(MIGRATE_OBJS) $(HOSTCTL_OBJS): | $(PROTO_GEN_H)
$(HOSTD_OBJS) $(MIGRATE_OBJS) $(HOSTCTL_OBJS): CFLAGS += $(PROTO_CFLAGS) $(VIRT_CFLAGS) \
    $(UV_CFLAGS) $(HOSTD_DAEMON_DEFS)

$(HOSTD_BIN): $(HOSTD_OBJS) $(HOSTD_LIB) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(HOSTD_OBJS) $(HOSTD_LIBS) $(PROTO_LIBS) $(VIRT_LIBS) \
	    $(XL_LIBS) $(UV_LIBS) $(LDFLAGS) -lm -pthread

$(MIGRATE_BIN): $(MIGRATE_OBJS) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(MIGRATE_OBJS) $(PROTO_LIBS) $(LDFLAGS) -lm

$(HOSTCTL_BIN): $(HOSTCTL_OBJS) $(HOSTD_LIB) $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(HOSTCTL_OBJS) $(HOSTD_LIBS) $(PROTO_LIBS) $(LDFLAGS) -lm

$(B)/obj/tests/hostd-tools/%.o: tests/hostd-tools/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(HOSTD_DEFS) -I. -c -o $@ $<

$(HOSTD_SERVE_BIN): $(B)/obj/tests/hostd-tools/serve.o $(HOSTD_LIB) \
                    $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(HOSTD_LIBS) $(LDFLAGS) -pthread

# A realistic history of one host for the dashboard's tests on crane-hostd.
$(HOSTD_SEED_BIN): $(B)/obj/tests/hostd-tools/seed.o $(HOSTD_LIB) \
                   $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(HOSTD_LIBS) $(LDFLAGS) -pthread

# A stand-in crane-hostd for crane-migrate's tests (the client hop only).
$(B)/obj/tests/hostd-tools/fake_hostd.o: | $(PROTO_GEN_H)
$(B)/obj/tests/hostd-tools/fake_hostd.o: CFLAGS += $(PROTO_CFLAGS)
$(HOSTD_FAKE_BIN): $(B)/obj/tests/hostd-tools/fake_hostd.o \
                  $(B)/obj/tests/hostd-tools/listen_once.o $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(PROTO_LIBS) $(LDFLAGS) -lm

# A stand-in crane-guestd whose program waits for a long kernel
# (tests/hostd/kernel-wait.sh).
$(B)/obj/tests/hostd-tools/fake_guest.o: | $(PROTO_GEN_H)
$(B)/obj/tests/hostd-tools/fake_guest.o: CFLAGS += $(PROTO_CFLAGS)
$(HOSTD_FAKE_GUEST_BIN): $(B)/obj/tests/hostd-tools/fake_guest.o \
                        $(B)/obj/tests/hostd-tools/listen_once.o $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(PROTO_LIBS) $(LDFLAGS) -pthread

# Tests of the daemon's parts against real libvirt (test:///default and
# the e2e instances): tests/hostd-hv/*.c with the daemon's objects.
$(HOSTD_HV_TEST_OBJS): | $(PROTO_GEN_H)
$(HOSTD_HV_TEST_OBJS): CFLAGS += $(PROTO_CFLAGS) $(VIRT_CFLAGS) $(UV_CFLAGS) \
    $(HOSTD_DAEMON_DEFS)
$(B)/obj/tests/hostd-hv/%.o: tests/hostd-hv/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. -c -o $@ $<

# The one runner again, expanding tests/hostd-hv/list.h (as for tests/hostd).
$(B)/obj/tests/hostd-hv/runner/runner.c: tests/unit/runner.c
	@mkdir -p $(@D)
	cp $< $@

$(B)/obj/tests/hostd-hv/runner/runner.o: \
        $(B)/obj/tests/hostd-hv/runner/runner.c tests/hostd-hv/list.h
	$(CC) $(CFLAGS) -iquote tests/hostd-hv -iquote tests/unit -c -o $@ $<

$(HOSTD_HV_TEST_BIN): $(HOSTD_HV_TEST_OBJS) $(HOSTD_CORE_OBJS) $(HOSTD_LIB) \
                      $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(HOSTD_HV_TEST_OBJS) $(HOSTD_CORE_OBJS) $(HOSTD_LIBS) \
	    $(PROTO_LIBS) $(VIRT_LIBS) $(XL_LIBS) $(UV_LIBS) $(LDFLAGS) -lm \
	    -pthread

# `make install` (install.mk) installs both, the config and the unit.

-include $(HOSTD_OBJS:.o=.d) $(MIGRATE_OBJS:.o=.d) $(HOSTCTL_OBJS:.o=.d) \
    $(HOSTD_HV_TEST_OBJS:.o=.d)
endif

-include $(HOSTD_LIB_OBJS:.o=.d) $(HOSTD_TEST_OBJS:.o=.d)
# The test tools (hostd-serve, hostd-seed, hostd-fake) rebuild when a
# header they use changes (pool_report.h's struct, say).
-include $(wildcard $(B)/obj/tests/hostd-tools/*.d)

.PHONY: hostd-tests

endif
