#!/bin/bash
# Devices matched by identity and capability, not position: a program that
# runs on PoCL is switched to proxies that offer other platforms.
#
#   devices.sh two-platforms PROGRAM    the proxy offers PoCL and a fake
#       accelerator platform (tests/integration/fakecl.c), in both orders:
#       every switch must land on PoCL and the program must pass
#   devices.sh control                   the same refusal driven by
#       cranectl prepare through crane-guestd (fake modprobe): the prepare
#       fails with the reason, and cranectl status shows the program still
#       in passthrough
#   devices.sh refused PROGRAM          the proxy offers only the fake
#       accelerator: every switch must be refused before anything changes,
#       with the reason in the re-home report, and the program must pass
#       on its own device
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
FAKE=$PWD/$B/tests/integration/libcrane-fakecl.so
TMP=$(mktemp -d)
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

pocl=$(grep -h pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -1)
if [ -z "$pocl" ]; then
    echo "no PoCL in /etc/OpenCL/vendors: nothing to match against"
    exit 77
fi
[ -f "$FAKE" ] || { echo "missing $FAKE (make $B/tests/integration/"\
"libcrane-fakecl.so)"; exit 1; }

# Starts a proxy whose loader sees the .icd files in $TMP/icd (in the
# order the directory lists them) and waits until it listens.
start_proxy() {
    SOCK=$TMP/proxy.sock
    rm -f "$SOCK"
    OCL_ICD_VENDORS=$TMP/icd OCL_ICD_PLATFORM_SORT=none \
        "$PROXY" --listen "unix:$SOCK" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$SOCK" && return 0
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

stop_proxy() {
    kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    PROXY_PID=
}

# Runs PROGRAM switched native <-> proxy every 7th call; the report in
# $TMP/report.
run_switched() {
    rm -f "$TMP/report"
    CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate CRANE_REHOME_EVERY=7 \
        CRANE_REHOME_REPORT="$TMP/report" "$RUN" "$@"
}

case "${1:-}" in
two-platforms)
    shift
    for order in fake-first pocl-first; do
        rm -rf "$TMP/icd"; mkdir -p "$TMP/icd"
        if [ $order = fake-first ]; then a=$FAKE b=$pocl; else a=$pocl b=$FAKE; fi
        echo "$a" >"$TMP/icd/a.icd"
        echo "$b" >"$TMP/icd/b.icd"
        start_proxy || exit 1
        run_switched "$@" || { echo "FAIL: $order: the program failed"; \
            tail -5 "$TMP/proxy.log"; exit 1; }
        ok=$(grep -c 'rc=0 from=native to=remote' "$TMP/report")
        back=$(grep -c 'rc=0 from=remote to=native' "$TMP/report")
        bad=$(grep '^rehome' "$TMP/report" | grep -v ' rc=0 ' |
              grep -vc ' rc=-16 ')
        echo "$order: $ok switches to the two-platform proxy, $back back," \
             "$bad failed"
        if [ "$ok" -lt 1 ] || [ "$bad" -ne 0 ]; then
            grep -v ' rc=0 ' "$TMP/report" | head -3
            exit 1
        fi
        stop_proxy
    done
    ;;
control)
    rm -rf "$TMP/icd"; mkdir -p "$TMP/icd" "$TMP/mods/dev"
    echo "$FAKE" >"$TMP/icd/fake.icd"
    start_proxy || exit 1
    touch "$TMP/mods/fakegpu.loaded" "$TMP/mods/dev/fakegpu0"
    cat >"$TMP/guestd.conf" <<CONF
listen = $TMP/guest.sock
host = unix:$TMP/host.sock
control = unix:$TMP/ctl.sock
state_file = $TMP/guestd.state
modprobe = $PWD/tests/guest/fake-modprobe.sh
modules = fakegpu
gpu_device = $TMP/mods/dev/fakegpu0
gpu_type = all
proxy = unix:$SOCK
prepare_deadline_ms = 10000
CONF
    CRANE_FAKE_MODULES=$TMP/mods $B/bin/crane-guestd \
        --config "$TMP/guestd.conf" >"$TMP/guestd.log" 2>&1 &
    gd=$!
    CTL="$B/bin/cranectl --connect unix:$TMP/ctl.sock --timeout 30"
    sockets() { [ -S "$TMP/guest.sock" ] && [ -S "$TMP/ctl.sock" ]; }
    wait_until -q 10 -p "$gd" -e "$gd" -n "crane-guestd listens" -- sockets
    CRANE_SOCKET=$TMP/guest.sock "$RUN" $B/tests/programs/longrun 100000000 \
        >"$TMP/prog.log" 2>&1 &
    prog=$!
    registered() { $CTL status 2>/dev/null | grep -q '^programs: 1'; }
    wait_until -q 30 -p "$prog" -p "$gd" -e "$prog" \
        -n "the program registered" -- registered
    $CTL prepare >"$TMP/prepare.out" 2>&1
    $CTL status >"$TMP/status.out" 2>&1
    kill "$prog" "$gd" 2>/dev/null
    wait "$prog" "$gd" 2>/dev/null
    cat "$TMP/prepare.out"
    grep -q 'cannot move to remote: no device there can take' \
        "$TMP/prepare.out" || { echo "FAIL: no reason in the answer"; exit 1; }
    grep -q '^program .* longrun .*passthrough' "$TMP/status.out" ||
        { echo "FAIL: the program is not in passthrough"; \
          cat "$TMP/status.out"; exit 1; }
    ;;
refused)
    shift
    rm -rf "$TMP/icd"; mkdir -p "$TMP/icd"
    echo "$FAKE" >"$TMP/icd/fake.icd"
    start_proxy || exit 1
    run_switched "$@" 2>"$TMP/err" || { echo "FAIL: the program failed"; \
        tail -5 "$TMP/err"; exit 1; }
    moved=$(grep -c 'rc=0 from=native to=remote' "$TMP/report")
    refused=$(grep -c 'rc=-19 from=native to=remote.*reason="cannot move to remote: no device there can take' "$TMP/report")
    echo "$refused switches refused with their reason, $moved moved"
    grep -m1 'reason=' "$TMP/report"
    [ "$moved" -eq 0 ] && [ "$refused" -ge 1 ]
    ;;
*)
    echo "usage: devices.sh two-platforms|refused PROGRAM [ARGS]" >&2
    echo "       devices.sh control" >&2
    exit 2
    ;;
esac
