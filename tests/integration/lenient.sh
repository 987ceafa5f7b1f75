#!/bin/bash
# The shim is invisible on a vendor that does not enforce host access flags
# (as NVIDIA's OpenCL does not): tests/integration/fakecl.c wraps PoCL and
# accepts the reads, writes and maps CL_MEM_HOST_* forbid.  The program
# hostaccess_lenient prints every verdict and checks every byte; it runs
# natively, under the shim, under the shim re-homed every 7th call, and
# switched to a crane-proxy and back every 7th call, and each run must print
# the same.  The wrapper counts the bytes of forbidden host accesses: under
# the shim (not switched) the program's own plus the 20 bytes with which
# the shim learns, once per context, what the vendor accepts (mem.c), since
# the shim moves such buffers through the device and never reads or writes
# them from the host itself.
#
#   lenient.sh                   the wrapped PoCL (make check)
#   lenient.sh --maps-only       the wrapped PoCL refusing the forbidden
#                                reads and writes but not the maps, as
#                                NVIDIA's OpenCL does (make check)
#   lenient.sh --vendors DIR     the vendors whose .icd files DIR holds
#                                (say, only nvidia.icd on a GPU machine):
#                                the same comparisons, without the count
#                                and whatever the verdicts are
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
RUN=$B/bin/crane-run
PROG=$B/tests/integration/hostaccess_lenient
FAKE=$B/tests/integration/libcrane-fakecl.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PROXY_PID=

ICD=$TMP/icd
# The bytes of the shim's question (mem.c): a 4-byte read, write and
# three maps of a no-access buffer, as many as the vendor accepts.
question=20
if [ "${1:-}" = --maps-only ]; then
    export CRANE_FAKECL_LENIENT=maps
    question=12
    shift
fi
if [ "${1:-}" = --vendors ] && [ -d "${2:-}" ]; then
    ICD=$(cd "$2" && pwd)
    [ -x "$PROG" ] || { echo "missing $PROG"; exit 1; }
else
    pocl=$(grep -h pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -1)
    if [ -z "$pocl" ]; then
        echo "skip: no PoCL in /etc/OpenCL/vendors to wrap"
        exit 77
    fi
    for f in "$PROG" "$FAKE"; do
        [ -x "$f" ] || [ -f "$f" ] || { echo "missing $f"; exit 1; }
    done
    # The shim never loads a library named libcrane* as a vendor.
    cp "$FAKE" "$TMP/liblenient.so"
    mkdir "$ICD"
    echo "$TMP/liblenient.so" >"$ICD/lenient.icd"
    export CRANE_FAKECL_WRAP=$pocl
fi

# run NAME CMD...: the program's stdout in $TMP/NAME.out, the forbidden
# bytes summed over every load of the vendor in $TMP/NAME.bytes.
run() {
    local name=$1
    shift
    CRANE_FAKECL_COUNT=$TMP/$name.count "$@" >"$TMP/$name.out" \
        2>"$TMP/$name.err" || {
        echo "FAIL: $name: the program failed:"
        tail -n 5 "$TMP/$name.out" "$TMP/$name.err"
        return 1
    }
    awk -F= '/^forbidden_bytes=/ {s += $2} END {print s + 0}' \
        "$TMP/$name.count" >"$TMP/$name.bytes" 2>/dev/null ||
        echo 0 >"$TMP/$name.bytes"
}

run native env OCL_ICD_VENDORS="$ICD" "$PROG" || exit 1
cat "$TMP/native.out"
native_bytes=$(cat "$TMP/native.bytes")
if [ -n "${CRANE_FAKECL_WRAP:-}" ]; then
    # The wrapper must really be lenient, or this test proves nothing.
    if [ "${CRANE_FAKECL_LENIENT:-}" = maps ]; then
        if grep -E '^map .*: ' "$TMP/native.out" | grep -qv ': 0$' ||
            grep -E '^(read|write) .*: ' "$TMP/native.out" |
            grep -q ': 0$'; then
            echo "FAIL: the wrapped vendor did not refuse exactly the" \
                 "forbidden reads and writes natively"
            exit 1
        fi
    elif grep -E '^(read|write|map) .*: ' "$TMP/native.out" |
        grep -qv ': 0$'; then
        echo "FAIL: the wrapped vendor refused a forbidden access natively"
        exit 1
    fi
    echo "native: $native_bytes bytes of forbidden host accesses"
    [ "$native_bytes" -gt 0 ] || { echo "FAIL: nothing counted"; exit 1; }
fi

# A proxy for the switched run, on the same vendors.
SOCK=$TMP/proxy.sock
OCL_ICD_VENDORS=$ICD "$B/bin/crane-proxy" --listen "unix:$SOCK" \
    >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
trap 'kill $PROXY_PID 2>/dev/null; wait $PROXY_PID 2>/dev/null; rm -rf "$TMP"' \
    EXIT
wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
    -- test -S "$SOCK"
[ -S "$SOCK" ] || { echo "crane-proxy did not start:"; cat "$TMP/proxy.log";
                    exit 1; }

# Re-homes (or switches) in REPORT: at least MIN done, none failed but for
# -16 (a map of the vendor's memory: refused once, documented).
switched() {
    local report=$1 what=$2 min=$3 done_ bad
    done_=$(grep -c ' rc=0 ' "$report" || true)
    bad=$(grep ' rc=-' "$report" | grep -vc ' rc=-16 ' || true)
    echo "$what: $done_ done, $bad failed"
    [ "${done_:-0}" -ge "$min" ] && [ "${bad:-0}" -eq 0 ]
}

rc=0
for mode in shim rehome switch; do
    case $mode in
    shim) run shim env CRANE_VENDORS_DIR="$ICD" "$RUN" "$PROG" || exit 1 ;;
    rehome)
        run rehome env CRANE_VENDORS_DIR="$ICD" CRANE_REHOME_EVERY=7 \
            CRANE_REHOME_REPORT="$TMP/rehomes" "$RUN" "$PROG" || exit 1 ;;
    switch)
        run switch env CRANE_VENDORS_DIR="$ICD" CRANE_PROXY="unix:$SOCK" \
            CRANE_REHOME_TO=alternate CRANE_REHOME_EVERY=7 \
            CRANE_REHOME_REPORT="$TMP/switches" "$RUN" "$PROG" || exit 1 ;;
    esac
    if ! diff "$TMP/native.out" "$TMP/$mode.out"; then
        echo "FAIL: $mode: the output differs from the native one"
        rc=1
    fi
    # Switched, the program's accesses on the proxy are not counted here.
    [ -n "${CRANE_FAKECL_WRAP:-}" ] && [ $mode != switch ] || continue
    bytes=$(cat "$TMP/$mode.bytes")
    echo "$mode: $bytes bytes of forbidden host accesses"
    if [ "$bytes" != $((native_bytes + question)) ]; then
        echo "FAIL: $mode: the vendor saw $bytes forbidden bytes, natively" \
             "$native_bytes (+$question for the shim's question)"
        rc=1
    fi
done
switched "$TMP/rehomes" "re-homes" 5 || rc=1
switched "$TMP/switches" "switches to the proxy and back" 5 || rc=1
[ $rc -eq 0 ] && echo "PASS lenient"
exit $rc
