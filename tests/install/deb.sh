#!/bin/bash
# install/deb: crane's Debian packages built from a copy of the tree
# (dpkg-buildpackage -us -uc -b, Debian's build flags, 0 compiler
# warnings), lintian (no error), then installed, upgraded, removed and
# purged for real with dpkg inside a private mount namespace (tmpfs
# overlays over /usr, /etc, /var, a tmpfs /run: nothing of the machine
# changes): files, conffiles, the crane group, state folder, units
# enabled and verified (systemd-analyze verify), the vendors' .icd files
# taken over (dpkg-divert, and the trigger for a vendor installed later)
# and given back, a plain OpenCL program running under the packaged
# libcrane, hardening.  docs/packaging.md.
#
#   deb.sh            the whole case (exit 0 pass, 1 fail, 77 skip)
#   deb.sh --in-ns T  the dpkg part, in the namespace (run by the above)
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

if [ "${1:-}" = --in-ns ]; then
    . tests/install/deb-cycle.sh
    deb_cycle "$2"
    exit $?
fi

[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace for dpkg)"
for t in dpkg-buildpackage dh lintian unshare hardening-check; do
    command -v $t >/dev/null ||
        skip "$t is missing (scripts/setup-debian.sh installs it)"
done
[ -x "$B/tests/programs/buffers" ] || fail "$B/tests/programs/buffers not built"

T=$(mktemp -d /tmp/crane-deb-test.XXXXXX)
trap 'if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi' EXIT

echo "--- make deb (dpkg-buildpackage -us -uc -b in a copy of the tree)"
# A make of its own: under `make check` the parent's jobserver is not
# passed down, and make would warn about that in the log checked below.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make --no-print-directory deb DEB_DIR="$T" >"$T/build.log" 2>&1 ||
    { tail -30 "$T/build.log"; fail "make deb failed"; }
if grep -E '(warning|error):' "$T/build.log" | grep -v '^dpkg' | grep -q .; then
    grep -E '(warning|error):' "$T/build.log" | head -20
    fail "the build with Debian's flags warned"
fi
grep -q -- '-fstack-protector-strong' "$T/build.log" &&
    grep -q -- '-D_FORTIFY_SOURCE=2' "$T/build.log" &&
    grep -q -- '-z,now' "$T/build.log" || fail "dpkg-buildflags not used"
grep -q -- ' -Werror ' "$T/build.log" && fail "-Werror in the package build"
for p in crane-host crane-guest crane-proxy; do
    ls "$T/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package"
done

echo "--- lintian"
lintian --fail-on error --info "$T"/crane_*.changes >"$T/lintian.log" 2>&1
rc=$?
grep -v '^N:\|root privileges' "$T/lintian.log"
[ $rc = 0 ] || fail "lintian found errors"

echo "--- install, upgrade, remove, purge (private mount namespace)"
unshare -m --propagation private bash "$0" --in-ns "$T" || exit 1
echo "PASS install/deb"
