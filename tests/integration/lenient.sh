#!/bin/bash
# The shim is invisible on a vendor that does not enforce host access flags
# (as NVIDIA's OpenCL does not): tests/integration/fakecl.c wraps PoCL and
# accepts the reads, writes and maps CL_MEM_HOST_* forbid.  The program
# hostaccess_lenient prints every verdict and checks every byte; it runs
# natively, under the shim, and under the shim re-homed every 7th call, and
# each run must print the same.  The wrapper counts the bytes of forbidden
# host accesses: the same in every run, since the shim moves such buffers
# through the device and never reads or writes them from the host itself.
#
#   lenient.sh                   the wrapped PoCL (make check)
#   lenient.sh --vendors DIR     the vendors whose .icd files DIR holds
#                                (say, only nvidia.icd on a GPU machine):
#                                the same comparisons, without the count
#                                and whatever the verdicts are
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROG=$B/tests/integration/hostaccess_lenient
FAKE=$B/tests/integration/libcrane-fakecl.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ICD=$TMP/icd
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
        tail -5 "$TMP/$name.out" "$TMP/$name.err"
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
    if grep -E '^(read|write|map) .*: ' "$TMP/native.out" |
        grep -qv ': 0$'; then
        echo "FAIL: the wrapped vendor refused a forbidden access natively"
        exit 1
    fi
    echo "native: $native_bytes bytes of forbidden host accesses"
    [ "$native_bytes" -gt 0 ] || { echo "FAIL: nothing counted"; exit 1; }
fi

rc=0
for mode in shim rehome; do
    if [ $mode = shim ]; then
        run shim env CRANE_VENDORS_DIR="$ICD" "$RUN" "$PROG" || exit 1
    else
        run rehome env CRANE_VENDORS_DIR="$ICD" CRANE_REHOME_EVERY=7 \
            CRANE_REHOME_REPORT="$TMP/report" "$RUN" "$PROG" || exit 1
    fi
    if ! diff "$TMP/native.out" "$TMP/$mode.out"; then
        echo "FAIL: $mode: the output differs from the native one"
        rc=1
    fi
    [ -n "${CRANE_FAKECL_WRAP:-}" ] || continue
    bytes=$(cat "$TMP/$mode.bytes")
    echo "$mode: $bytes bytes of forbidden host accesses"
    if [ "$bytes" != "$native_bytes" ]; then
        echo "FAIL: $mode: the vendor saw $bytes forbidden bytes, natively" \
             "$native_bytes"
        rc=1
    fi
done
done_=$(grep -c ' rc=0 ' "$TMP/report" || true)
bad=$(grep ' rc=-' "$TMP/report" | grep -vc ' rc=-16 ' || true)
echo "re-homes: $done_ done, $bad failed"
if [ "${done_:-0}" -lt 5 ] || [ "${bad:-0}" -ne 0 ]; then
    echo "FAIL: the re-homes did not happen as they should"
    rc=1
fi
[ $rc -eq 0 ] && echo "PASS lenient"
exit $rc
