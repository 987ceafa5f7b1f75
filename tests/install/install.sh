#!/bin/bash
# `make install DESTDIR=$T PREFIX=/usr` checked: every file there, the
# install's paths written into units, configs and crane-run (no @VAR@
# left, no path of another prefix), each unit accepted by
# `systemd-analyze verify` (when installed), each man page rendered by
# groff without a warning, every installed program answering --version as
# "PROGRAM VERSION" and exiting 2 on a bad option.
#   install.sh          runs it: exit 0 pass, 1 fail
set -u
cd "$(dirname "$0")/../.."
# Our own make, not the one `make check` runs under (its flags, jobserver).
unset MAKEFLAGS MFLAGS MAKELEVEL
T=$(mktemp -d /tmp/crane-install-XXXXXX)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; exit 1; }
command -v help2man >/dev/null ||
    { echo "SKIP: help2man is not installed (make man needs it)"; exit 77; }

nice make -s install DESTDIR="$T/root" PREFIX=/usr >"$T/make.log" 2>&1 ||
    { tail -20 "$T/make.log"; die "make install failed"; }
R=$T/root
version=$(make -s -f /dev/null -f Makefile print-version 2>/dev/null)

# Every file; crane-hostd's only where it is built (libvirt's headers).
files="usr/bin/crane-run usr/sbin/crane-proxy usr/sbin/crane-guestd
usr/sbin/cranectl usr/lib/crane/libcrane.so etc/crane/guestd.conf
etc/crane/proxy.env usr/lib/systemd/system/crane-guestd.service
usr/lib/systemd/system/crane-proxy.service usr/share/man/man1/crane-run.1
usr/share/man/man8/crane-proxy.8 usr/share/man/man8/crane-guestd.8
usr/share/man/man8/cranectl.8"
units="crane-guestd crane-proxy"
programs="usr/bin/crane-run usr/sbin/crane-proxy usr/sbin/crane-guestd
usr/sbin/cranectl"
if [ -x build/bin/crane-hostd ]; then
    files="$files usr/sbin/crane-hostd usr/bin/crane-migrate
usr/sbin/crane-hostctl etc/crane/hostd.conf
usr/lib/systemd/system/crane-hostd.service usr/share/man/man8/crane-hostd.8
usr/share/man/man1/crane-migrate.1 usr/share/man/man8/crane-hostctl.8"
    units="$units crane-hostd"
    programs="$programs usr/sbin/crane-hostd usr/bin/crane-migrate
usr/sbin/crane-hostctl"
fi
for f in $files; do
    [ -f "$R/$f" ] || die "$f not installed"
done
n_files=$(find "$R" -type f | wc -l)
[ "$n_files" -eq "$(echo $files | wc -w)" ] ||
    { find "$R" -type f; die "$n_files files installed, $(echo $files | wc -w) expected"; }
echo "$n_files files installed"

# The install's paths, substituted; nothing of the default prefix.
text="etc/crane usr/bin/crane-run usr/lib/systemd/system usr/share/man"
if grep -rn '@[A-Z]*@' $(for d in $text; do echo "$R/$d"; done); then
    die "a @VARIABLE@ left unsubstituted"
fi
if grep -rn '/usr/local' $(for d in $text; do echo "$R/$d"; done); then
    die "a /usr/local path in an install to /usr"
fi
for u in $units; do
    f=$R/usr/lib/systemd/system/$u.service
    grep -q "^ExecStart=/usr/sbin/$u " "$f" || die "$u: ExecStart not /usr/sbin"
    grep -q '^Type=notify$' "$f" || die "$u: not Type=notify"
    for k in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
             PrivateTmp=yes RestrictAddressFamilies= CapabilityBoundingSet=; do
        grep -q "^$k" "$f" || die "$u: no $k"
    done
done
grep -q 'crane/libcrane.so' "$R/usr/bin/crane-run" &&
    grep -q '"/usr/lib/crane/libcrane.so"' "$R/usr/bin/crane-run" ||
    die "crane-run does not look in /usr/lib/crane"
# A SYSCONFDIR of its own reaches the units and the configs.
nice make -s install DESTDIR="$T/alt" PREFIX=/opt/crane SYSCONFDIR=/opt/crane/etc \
    >"$T/make-alt.log" 2>&1 || { tail "$T/make-alt.log"; die "second install"; }
grep -q -- '--config /opt/crane/etc/crane/guestd.conf' \
    "$T/alt/opt/crane/lib/systemd/system/crane-guestd.service" ||
    die "SYSCONFDIR not in the guestd unit"
grep -q '^EnvironmentFile=-/opt/crane/etc/crane/proxy.env' \
    "$T/alt/opt/crane/lib/systemd/system/crane-proxy.service" ||
    die "SYSCONFDIR not in the proxy unit"
grep -rqP '(?<!/opt/crane)/etc/crane/' "$T/alt/opt/crane/etc/crane" &&
    die "a config still names /etc/crane/"
echo "paths substituted (PREFIX=/usr; PREFIX=/opt/crane SYSCONFDIR=...)"

# systemd-analyze verify, inside a root that has the installed files and
# this machine's system units (for the targets the units name).
if command -v systemd-analyze >/dev/null; then
    V=$T/verify
    mkdir -p "$V/usr/lib/systemd/system" "$V/etc/systemd/system"
    cp -a "$R/." "$V/"
    cp -rn /usr/lib/systemd/system/. "$V/usr/lib/systemd/system/" 2>/dev/null
    for u in $units; do
        out=$(systemd-analyze verify --man=no --root="$V" \
            "/usr/lib/systemd/system/$u.service" 2>&1)
        rc=$?
        # Only our unit's lines: the machine's own units may warn.
        mine=$(echo "$out" | grep -F "$u.service" || true)
        [ $rc -eq 0 ] && [ -z "$mine" ] ||
            { echo "$out"; die "$u.service: systemd-analyze verify"; }
    done
    echo "systemd-analyze verify: $units accepted"
else
    echo "systemd-analyze is not installed: units not verified"
fi

# Man pages: no warning from groff (-ww), and man can read each.
for m in "$R"/usr/share/man/man*/*; do
    w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
    [ -z "$w" ] || { echo "$w"; die "$(basename "$m"): groff warns"; }
    MANWIDTH=80 man -l "$m" 2>/dev/null | grep -q '^NAME' ||
        die "$(basename "$m"): man -l shows no NAME"
    grep -q '^\.SH DESCRIPTION' "$m" || die "$(basename "$m"): no DESCRIPTION"
done
echo "man pages render without warnings"

# --version and a bad option, for every installed program.
for p in $programs; do
    name=$(basename "$p")
    out=$(CRANE_LIB=$R/usr/lib/crane/libcrane.so "$R/$p" --version)
    rc=$?
    [ $rc -eq 0 ] && [ "$out" = "$name $version" ] ||
        die "$name --version: '$out' (exit $rc), want '$name $version'"
    "$R/$p" --no-such-option >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || die "$name --no-such-option: exit $rc, want 2"
done
echo "every program: --version says '$version', a bad option exits 2"
echo PASS
