#!/bin/bash
# Runs every test stage after `make check` has built everything; prints one
# line per case and ends with "N passed, M failed".
set -u
cd "$(dirname "$0")/.."

B=build
BA=build-address
RUN=$B/bin/crane-run
PROGS=$B/tests/programs
LOGDIR=$B/test-logs
ASAN_LIB=$(gcc -print-file-name=libasan.so)
mkdir -p "$LOGDIR"
pass=0
fail=0
skip=0

# case NAME CMD...: runs CMD with a timeout, records ok / not ok / skip (77).
case_() {
    local name=$1
    shift
    local log="$LOGDIR/${name//\//_}.log"
    # bash -c, so that cases may be the shell functions exported below.
    timeout "${CASE_TIMEOUT:-300}" bash -c '"$@"' case "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "ok - $name"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); echo "ok - $name # SKIP"
    else
        fail=$((fail + 1)); echo "not ok - $name (exit $rc, log $log)"
        tail -5 "$log" | sed 's/^/#   /'
    fi
}

# Re-homes that happened, and that every attempt either worked or was
# refused for a documented reason (-EBUSY: a map or a pending user event).
rehomed() {
    local report=$1 min=$2
    local ok bad
    ok=$(grep -c ' rc=0 ' "$report" 2>/dev/null || true)
    bad=$(grep ' rc=-' "$report" 2>/dev/null | grep -vc ' rc=-16 ' || true)
    echo "re-homes: $ok done, $bad failed"
    [ "${ok:-0}" -ge "$min" ] && [ "${bad:-0}" -eq 0 ]
}

# A program under the shim, re-homed every N calls; passes when the program
# verified every byte itself and at least MIN re-homes really happened.
rehome_case() {
    local every=$1 min=$2
    shift 2
    local report
    report=$(mktemp)
    CRANE_REHOME_EVERY=$every CRANE_REHOME_REPORT=$report "$@" || {
        rm -f "$report"; return 1; }
    rehomed "$report" "$min"
    local rc=$?
    rm -f "$report"
    return $rc
}

same_output() {  # same_output NAME CMD...: shim output equals native output
    local a b
    a=$("${@:2}" 2>&1) || return 1
    b=$("$RUN" "${@:2}" 2>&1) || return 1
    [ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b") | head -20; return 1; }
}

strip_loader() { sed '/^ICD loader properties/,$d' | grep -v '^[[:space:]]*$'; }
clinfo_same() {
    diff <(clinfo | strip_loader) <("$RUN" clinfo | strip_loader) &&
    diff <(clinfo | strip_loader) \
         <(CRANE_REHOME_EVERY=7 "$RUN" clinfo 2>/dev/null | strip_loader)
}
py_same() {
    local a b c
    a=$(/usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    b=$("$RUN" /usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    c=$(CRANE_REHOME_EVERY=50 "$RUN" /usr/bin/python3 \
        tests/integration/pyopencl_app.py 2>/dev/null) || return 1
    echo "native $a"; echo "shim   $b"; echo "rehome $c"
    [ "$a" = "$b" ] && [ "$a" = "$c" ]
}
no_vendor() {
    local out
    out=$(CRANE_VENDORS_DIR=/nonexistent "$RUN" clinfo -l 2>&1)
    echo "$out"
    echo "$out" | grep -q '/nonexistent/\*.icd'
}

export -f rehomed rehome_case same_output clinfo_same py_same no_vendor \
    strip_loader
export RUN B BA PROGS

echo "# unit tests"
for t in $($B/tests/unit-tests --list); do
    case_ "unit/$t" $B/tests/unit-tests "$t"
done
# Under valgrind: every test but the two that push a MiB through a tiny
# socket buffer or race signals, which valgrind slows past any timeout.
case_ "unit/valgrind" valgrind -q --error-exitcode=1 --leak-check=full \
    $B/tests/unit-tests --no-fork $($B/tests/unit-tests --list |
        grep -v -e frame_partial_writes -e frame_survives_signals)
case_ "unit/asan" $BA/tests/unit-tests

echo "# programs: native, under the shim, re-homed while they run"
for p in $PROGS/*; do
    n=$(basename "$p")
    case_ "native/$n" "$p"
    case_ "shim/$n" "$RUN" "$p"
    case_ "rehome-97/$n" rehome_case 97 1 "$RUN" "$p"
    case_ "rehome-13/$n" rehome_case 13 1 "$RUN" "$p"
done
case_ "rehome-5/longrun" rehome_case 5 20 "$RUN" $PROGS/longrun 300
# Fresh link-map namespace per load: 15 fresh copies, then the main one.
case_ "new-namespace/longrun" bash -c \
    'CRANE_VENDOR_NAMESPACE=new rehome_case 31 20 "$RUN" "$PROGS/longrun" 800'

echo "# the shim under AddressSanitizer, re-homing"
for n in buffers kernels images events threads longrun; do
    # use_sigaltstack=0: ASan cannot free a thread's signal stack once a
    # second C library (the vendor's namespace) has run on that thread.
    case_ "asan-rehome/$n" bash -c "CRANE_PRELOAD_FIRST=$ASAN_LIB \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:use_sigaltstack=0 \
        rehome_case 41 1 $BA/bin/crane-run $PROGS/$n"
done

echo "# third-party programs from Debian packages"
if command -v clinfo >/dev/null; then
    case_ "thirdparty/clinfo" clinfo_same
else
    case_ "thirdparty/clinfo" exit 77
fi
if /usr/bin/python3 -c 'import pyopencl' 2>/dev/null; then
    case_ "thirdparty/pyopencl" py_same
else
    case_ "thirdparty/pyopencl" exit 77
fi

echo "# bad input"
case_ "badinput/no-vendor" no_vendor
case_ "badinput/crane-run-help" "$RUN" --help
case_ "badinput/crane-run-no-args" bash -c "! $RUN"

echo "# fuzzing the frame decoder"
case_ "fuzz/frame" build/fuzz/fuzz_frame -max_total_time=20 \
    -rss_limit_mb=1024

total=$((pass + fail + skip))
echo "$((pass + skip)) passed, $fail failed (of $total; $skip skipped)"
[ $fail -eq 0 ]
