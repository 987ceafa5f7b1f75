# Make fragment: `make install` and `make man`: where every file goes.
#
# Included by the top-level Makefile after the parts' fragments.  Every
# variable may be given on the command line (defaults in brackets):
#   PREFIX      [/usr/local]
#   BINDIR      [$(PREFIX)/bin]    crane-run, crane-migrate
#   SBINDIR     [$(PREFIX)/sbin]   crane-hostd, crane-guestd, crane-proxy,
#                                  cranectl, crane-hostctl (tools for root,
#                                  man section 8)
#   LIBDIR      [$(PREFIX)/lib]    crane/libcrane.so: preloaded by
#                                  crane-run, never linked against
#   SYSCONFDIR  [/etc]             crane/*.conf and proxy.env, installed
#                                  only where absent; the daemons' built-in
#                                  default is /etc/crane, the units name
#                                  the file
#   UNITDIR     [$(LIBDIR)/systemd/system]  the systemd units
#   MANDIR      [$(PREFIX)/share/man]
#   DESTDIR     []                 a staging root (packages)
# Paths inside the installed units, configs and crane-run are these
# variables' values (never DESTDIR).  Each daemon's unit is hardened and
# Type=notify; docs/host.md and docs/guest.md say how to start them.
#
# Man pages come from each program's --help (help2man): the one source.
# docs/man/PROGRAM.h2m adds the name line, files and see-also.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
SYSCONFDIR ?= /etc
UNITDIR ?= $(LIBDIR)/systemd/system
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

HELP2MAN ?= help2man

# PROGRAM:SECTION for every program that is built here (crane-hostd and
# crane-migrate need libvirt's headers: hostd.mk).
MAN_PAGES := crane-run:1 crane-proxy:8 crane-guestd:8 cranectl:8 \
    $(if $(HOSTD_BIN),crane-hostd:8 crane-migrate:1 crane-hostctl:8)
MAN_FILES := $(foreach p,$(MAN_PAGES),\
    build/man/$(word 1,$(subst :, ,$(p))).$(word 2,$(subst :, ,$(p))))

man: $(MAN_FILES)

# A page is rebuilt when its program or its include file changes.
define man_rule
build/man/$(1).$(2): $(B)/bin/$(1) docs/man/$(1).h2m
	@command -v $(HELP2MAN) >/dev/null || { echo "make man: $(HELP2MAN) \
	is missing (Debian: apt-get install help2man)" >&2; exit 1; }
	@mkdir -p $$(@D)
	$(HELP2MAN) --no-info --section=$(2) --include=docs/man/$(1).h2m \
	    --source=crane --manual="crane manual" $(B)/bin/$(1) >$$@.tmp
	mv -f $$@.tmp $$@
endef
$(foreach p,$(MAN_PAGES),$(eval $(call man_rule,$(word 1,$(subst :, ,$(p))),$(word 2,$(subst :, ,$(p))))))

# Paths of the install, written into units, configs and crane-run.
INSTALL_SED := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
    -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
    -e 's|@UNITDIR@|$(UNITDIR)|g' -e 's|@VERSION@|$(CRANE_VERSION)|g'
# An example config: its /etc/crane paths moved to SYSCONFDIR's.
CONF_SED := sed -e 's|/etc/crane/|$(SYSCONFDIR)/crane/|g'

# install_conf SOURCE NAME: SYSCONFDIR/crane/NAME unless one is there.
install_conf = test -e $(DESTDIR)$(SYSCONFDIR)/crane/$(2) || \
    { $(CONF_SED) $(1) | $(INSTALL_SED) \
        >$(DESTDIR)$(SYSCONFDIR)/crane/$(2).tmp && \
      chmod 644 $(DESTDIR)$(SYSCONFDIR)/crane/$(2).tmp && \
      mv $(DESTDIR)$(SYSCONFDIR)/crane/$(2).tmp \
         $(DESTDIR)$(SYSCONFDIR)/crane/$(2); }
# install_subst SOURCE DEST MODE: SOURCE with the paths replaced.
install_subst = $(INSTALL_SED) $(1) >$(2).tmp && chmod $(3) $(2).tmp && \
    mv -f $(2).tmp $(2)

# What `make install` installs, built (debian/rules' build step: no test
# programs or benchmarks).
installables: $(SHIM_LIB) $(CRANE_RUN) $(PROXY_BIN) $(GUESTD_BIN) \
    $(CRANECTL_BIN) $(HOSTD_BIN) $(MIGRATE_BIN) $(HOSTCTL_BIN) man

install: installables
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	    $(DESTDIR)$(LIBDIR)/crane $(DESTDIR)$(SYSCONFDIR)/crane \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man8
	install -m 755 $(SHIM_LIB) $(DESTDIR)$(LIBDIR)/crane/libcrane.so
	$(call install_subst,shim/crane-run,$(DESTDIR)$(BINDIR)/crane-run,755)
	install -m 755 $(PROXY_BIN) $(DESTDIR)$(SBINDIR)/crane-proxy
	install -m 755 $(GUESTD_BIN) $(DESTDIR)$(SBINDIR)/crane-guestd
	install -m 755 $(CRANECTL_BIN) $(DESTDIR)$(SBINDIR)/cranectl
	$(call install_conf,guest-daemon/crane-guestd.conf,guestd.conf)
	$(call install_conf,proxy-domain/crane-proxy.env,proxy.env)
	$(call install_subst,guest-daemon/crane-guestd.service,\
	    $(DESTDIR)$(UNITDIR)/crane-guestd.service,644)
	$(call install_subst,proxy-domain/crane-proxy.service,\
	    $(DESTDIR)$(UNITDIR)/crane-proxy.service,644)
ifneq ($(HOSTD_BIN),)
	install -m 755 $(HOSTD_BIN) $(DESTDIR)$(SBINDIR)/crane-hostd
	install -m 755 $(MIGRATE_BIN) $(DESTDIR)$(BINDIR)/crane-migrate
	install -m 755 $(HOSTCTL_BIN) $(DESTDIR)$(SBINDIR)/crane-hostctl
	$(call install_conf,host-daemon/crane-hostd.conf,hostd.conf)
	$(call install_subst,host-daemon/crane-hostd.service,\
	    $(DESTDIR)$(UNITDIR)/crane-hostd.service,644)
endif
	for f in $(MAN_FILES); do \
	    $(call install_subst,$$f,\
	        $(DESTDIR)$(MANDIR)/man$${f##*.}/$${f##*/},644) || exit 1; \
	done

.PHONY: install installables man
