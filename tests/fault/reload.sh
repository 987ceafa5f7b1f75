#!/bin/bash
# Reloads that fail: the vendor made to fail at each step of coming back
# (its dlopen, its platforms, the device binding, a context's or a
# queue's recreation, the kernels' arguments, the bytes put back), the
# program run under the AddressSanitizer shim.  Never a crash: the program
# gets OpenCL errors, goes on remoted, or stays where it is, every byte it
# reads right (docs/fault.md, "Reloads that fail").
#
#   reload.sh --list     the cases
#   reload.sh CASE       runs one; exit 0 pass, 1 fail
#
# Cases (STEP: dlopen platforms devices rebuild-context rebuild-queue args
# reinject):
#   STEP-native   a re-home on the vendor (native -> native, the vendor
#                 unloaded: CRANE_VENDOR_UNLOAD=always) fails at STEP with
#                 no proxy: the program's next calls answer
#                 CL_DEVICE_NOT_AVAILABLE (-2) and it exits with that
#                 error (tests/fault/switchee: exit 2)
#   STEP-again    the same, and the program tries the re-home once more at
#                 once: it comes back from its state in RAM, every byte
#                 right
#   STEP-proxy    the same with a proxy: the program goes on remoted,
#                 every byte right, and the next re-home brings it back to
#                 the vendor
#   STEP-back     a switch back from the proxy fails at STEP (every visit):
#                 the program stays remoted, every byte right
#   kept-auto     CRANE_VENDOR_UNLOAD=auto (the default) on PoCL: re-homes
#                 on the vendor keep it loaded (one load in all), every
#                 byte right
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
BA=${BA:-build-address}
PROXY=$B/bin/crane-proxy
PROG=$B/tests/fault/switchee
RUN=$BA/bin/crane-run
ASAN_LIB=$(gcc -print-file-name=libasan.so)
BOUND=60
STEPS="dlopen platforms devices rebuild-context rebuild-queue args reinject"

list() {
    local s
    for s in $STEPS; do
        echo "$s-native $s-again $s-proxy $s-back"
    done
    echo kept-auto
}

case "${1:-}" in
--list) list | tr '\n' ' '; echo; exit 0 ;;
"" | -h | --help) sed -n '2,33p' "$0"; exit 2 ;;
esac

for f in "$PROXY" "$PROG" "$RUN"; do
    [ -x "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
done

T=$(mktemp -d /tmp/crane-reload.XXXXXX)
PROXY_PID=
cleanup() {
    [ -n "$PROXY_PID" ] && kill -9 "$PROXY_PID" $(pgrep -P "$PROXY_PID") \
        2>/dev/null
    wait 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

die() {
    echo "FAIL: $*"
    for f in "$T"/out "$T"/report "$T"/shim.log; do
        [ -e "$f" ] && { echo "--- $f"; tail -15 "$f"; }
    done
    exit 1
}

start_proxy() {
    "$PROXY" --listen "unix:$T/proxy.sock" >"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    disown "$PROXY_PID"    # killed at the end: no job notice
    for _ in $(seq 400); do
        [ -S "$T/proxy.sock" ] && return 0
        kill -0 "$PROXY_PID" 2>/dev/null || die "crane-proxy exited"
        sleep 0.05
    done
    die "crane-proxy did not start"
}

# run ARGS... -- ENV...: the program under the ASan shim; sets RC.
run() {
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    env CRANE_PRELOAD_FIRST="$ASAN_LIB" \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:use_sigaltstack=0 \
        CRANE_SOCKET=none CRANE_REHOME_REPORT="$T/report" \
        CRANE_LOG_FILE="$T/shim.log" CRANE_LOG_LEVEL=info "$@" \
        timeout -s KILL $BOUND "$RUN" "$PROG" 4 "${args[@]}" \
        >"$T/out" 2>&1
    RC=$?
    cat "$T/out"
    [ $RC -eq 137 ] && die "the program hung past $BOUND s"
    grep -q "AddressSanitizer" "$T/out" && die "AddressSanitizer: see above"
    [ $RC -le 2 ] || die "the program died (exit $RC)"
}

report_rc() {  # report_rc K: the rc of switch K
    awk -v k="$1" '$1 == "rehome" && $2 == "n=" k { sub("rc=", "", $3);
        print $3 }' "$T/report" | head -1
}

# The fault spec: STEP at switch K, every visit where several may come.
spec() {  # spec STEP K
    case $1 in
    dlopen | platforms) echo "$1:*@$2" ;;
    *) echo "$1@$2" ;;
    esac
}

case=$1
step=${case%-*}
mode=${case##*-}
case " $STEPS kept " in *" $step "*) ;; *) die "no case $case" ;; esac
# The vendor really unloaded at each re-home, so that its load is tried.
UNLOAD=CRANE_VENDOR_UNLOAD=always

case $mode in
native)
    run -- $UNLOAD CRANE_REHOME_TO=native \
        CRANE_TEST_FAIL_AT="$(spec "$step" 1)"
    [ $RC -eq 2 ] || die "exit $RC, want 2 (an OpenCL error after the \
failed reload)"
    grep -q "^ERROR switchee: .*: -2$" "$T/out" ||
        die "the error is not CL_DEVICE_NOT_AVAILABLE (-2)"
    grep -q "every OpenCL call answers CL_DEVICE_NOT_AVAILABLE" \
        "$T/shim.log" || die "the shim did not say the program is on errors"
    [ "$(report_rc 1)" != 0 ] || die "switch 1 did not fail"
    ;;
again)
    run --again -- $UNLOAD CRANE_REHOME_TO=native \
        CRANE_TEST_FAIL_AT="$(spec "$step" 1)"
    [ $RC -eq 0 ] || die "exit $RC, want 0 (every byte right)"
    grep -q "4 switches done, 1 failed" "$T/out" ||
        die "want 4 switches done and 1 failed"
    grep -q "bringing the program back from its state in RAM" \
        "$T/shim.log" || die "the program did not come back from RAM"
    ;;
proxy)
    start_proxy
    run -- $UNLOAD CRANE_REHOME_TO=native CRANE_PROXY="unix:$T/proxy.sock" \
        CRANE_TEST_FAIL_AT="$(spec "$step" 1)"
    [ $RC -eq 0 ] || die "exit $RC, want 0 (every byte right)"
    [ "$(report_rc 1)" != 0 ] || die "switch 1 did not fail"
    grep -q "the program goes on remoted" "$T/shim.log" ||
        die "the program did not go on remoted"
    grep -q "^rehome n=2 rc=0 from=remote to=native" "$T/report" ||
        die "switch 2 did not bring it back to the vendor"
    ;;
back)
    start_proxy
    run -- $UNLOAD CRANE_REHOME_TO=alternate \
        CRANE_PROXY="unix:$T/proxy.sock" \
        CRANE_TEST_FAIL_AT="$(spec "$step" 2)"
    [ $RC -eq 0 ] || die "exit $RC, want 0 (every byte right)"
    [ "$(report_rc 1)" = 0 ] || die "switch 1 (out) failed"
    grep -q "rc=-[0-9]* from=remote to=native" "$T/report" ||
        die "no switch back failed"
    ;;
auto)
    run -- CRANE_REHOME_TO=native
    [ $RC -eq 0 ] || die "exit $RC, want 0 (every byte right)"
    grep -q "4 switches done, 0 failed" "$T/out" || die "want 4 switches"
    [ "$(grep -c 'kept loaded (1 load(s)' "$T/shim.log")" -eq 4 ] ||
        die "the vendor was not kept loaded across the 4 re-homes"
    ;;
esac
echo "PASS $case"
