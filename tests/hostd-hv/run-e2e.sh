#!/bin/sh
# Runs the hostd-hv tests that need real libvirtds: starts two, runs, stops them.
#
# Usage: tests/hostd-hv/run-e2e.sh [TEST...]
# Without TESTs: every libvirt_remote_* and e2e_* test.  Starts the
# libvirtd instances "hvsrc" and "hvdst" (tests/e2e/libvirtd.sh) unless
# CRANE_E2E_URI (and CRANE_E2E_DEST_URI) name running ones, builds the
# guest image when missing (tests/e2e/lib.sh), runs
# build/tests/hostd-hv-tests, and stops what it started.  As root, on the
# machines ../shared/VM.md describes.  VALGRIND=1 runs the test program
# under valgrind (timeouts scaled by HVT_SLOW=10).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/lib.sh

BIN=build/tests/hostd-hv-tests
OWN=""

cleanup() {
    for n in $OWN; do tests/e2e/libvirtd.sh stop "$n"; done
}
trap cleanup EXIT
trap 'exit 1' INT TERM

make -s "$BIN" || exit 1
e2e_guest_image || exit 1
if [ -z "${CRANE_E2E_URI:-}" ]; then
    CRANE_E2E_URI=$(tests/e2e/libvirtd.sh start hvsrc) || exit 1
    OWN="$OWN hvsrc"
fi
if [ -z "${CRANE_E2E_DEST_URI:-}" ]; then
    CRANE_E2E_DEST_URI=$(tests/e2e/libvirtd.sh start hvdst) || exit 1
    OWN="$OWN hvdst"
fi
export CRANE_E2E_URI CRANE_E2E_DEST_URI

[ $# -gt 0 ] || set -- $("$BIN" --list | grep -E '^(libvirt_remote_|e2e_)')
if [ -n "${VALGRIND:-}" ]; then
    HVT_SLOW=${HVT_SLOW:-10} valgrind -q --leak-check=full \
        --error-exitcode=1 "$BIN" "$@"
else
    "$BIN" "$@"
fi
