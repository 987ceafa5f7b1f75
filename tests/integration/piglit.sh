#!/bin/bash
# piglit's OpenCL tests (Debian's `piglit`) natively and under crane, with
# the same verdicts test by test.
#
#   piglit.sh shim            under crane-run (passthrough)
#   piglit.sh remote          remoted from the start through a crane-proxy
#   piglit.sh switch EVERY    switched passthrough <-> remoting before every
#                             EVERY-th OpenCL call
#   piglit.sh --list MODE     the tests a mode runs
#
# Each test runs natively first, then in the mode; a verdict is piglit's
# result (pass, fail, skip, warn, crash) or "exit N" when a test printed
# none.  Exits 0 when every verdict matches, 1 otherwise, 77 without piglit.
#
# The set: every cl-api-* and cl-custom-* test (the API's errors, info
# queries and objects: what the shim must not change), three cl-program-*
# programs, and 16 cl-program-tester files chosen to cover what programs do
# (loops, work-item functions, global offsets, __local and __constant
# memory, structs by value, samplers, image reads and writes, program-scope
# arrays, vectors, a real kernel (pyrit), build options and macros) within a
# few minutes per mode on two cores: each file costs 3-6 s to build with a
# cold PoCL cache, 0.2-0.9 s warm; the whole directory (120 files plus the
# generated builtin tests) would take an hour.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
. tests/integration/modes.sh
trap mode_stop EXIT
PIGLIT=${PIGLIT_DIR:-/usr/lib/x86_64-linux-gnu/piglit}
BIN=$PIGLIT/bin
PROGRAMS=$PIGLIT/tests/cl/program

PROGRAM_TESTS="
execute/for-loop.cl execute/get-global-id.cl execute/global-offset.cl
execute/local-memory.cl execute/constant-load.cl execute/calls-struct.cl
execute/sampler.cl execute/image-read-2d.cl execute/image-write-2d.cl
execute/program-scope-arrays.cl execute/pyrit-wpa-psk.cl
execute/vector-load-int4.cl execute/vector-arithmetic-int4.program_test
build/macro-definitions.cl build/define-GENTYPE.cl
build/optimization-options-cl11+.cl"

# Left out, each with its reason (printed with the verdicts), by mode ("all"
# or the mode): differences crane keeps on purpose, each reproduced by
# `piglit.sh MODE` with its line removed.
declare -A LEFT_OUT=(
    [all:cl-api-get-extension-function-address-for-platform]="ocl-icd answers a NULL platform with its own clIcdGetPlatformIDsKHR; the shim, in the loader's place, answers NULL as the specification says"
    [remote:cl-api-create-command-queue]="PoCL exit()s natively when asked for a device-side queue; the proxy refuses it, so the program goes on and fails"
)

# Why a test is left out of this mode, or nothing.
left_out() {
    echo "${LEFT_OUT[all:$1]:-${LEFT_OUT[$mode:$1]:-}}"
}

usage() { sed -n '2,13p' "$0"; exit 2; }

if [ "${1:-}" = --list ]; then
    listing=1
    shift
    [ "${1:-}" = switch ] && [ $# -eq 1 ] && set -- switch 1
else
    listing=0
fi
mode_parse "$@" || usage
mode=$MODE

if [ ! -x "$BIN/cl-api-create-buffer" ] || [ ! -x "$BIN/cl-program-tester" ]
then
    echo "piglit is not installed (apt-get install piglit)"
    exit 77
fi

# The tests, one per line: NAME COMMAND...
tests() {
    local t f
    for t in $(cd "$BIN" && ls cl-api-* cl-custom-* cl-program-bitcoin-phatk \
                   cl-program-max-work-item-sizes cl-program-predefined-macros)
    do
        [ -n "$(left_out "$t")" ] && continue
        echo "$t $BIN/$t"
    done
    for f in $PROGRAM_TESTS; do
        echo "program/$f $BIN/cl-program-tester $PROGRAMS/$f"
    done
}

if [ "$listing" -eq 1 ]; then
    tests | cut -d' ' -f1
    exit 0
fi

TMP=$MODE_TMP

# verdict LOG CMD...: runs one test (from the program tests' directory, for
# their includes) and prints its verdict.
verdict() {
    local log=$1 rc v
    shift
    (cd "$PROGRAMS" && mode_bounded 60 piglit nice -n 10 "$@" -auto) >"$log" 2>&1
    rc=$?
    v=$(grep -o 'PIGLIT: {"result": "[a-z]*"' "$log" | tail -1 |
        sed 's/.*"\([a-z]*\)"$/\1/')
    echo "${v:-exit $rc}"
}

mode_start || exit 1

same=0 differ=0
while read -r name cmd; do
    # shellcheck disable=SC2086 # cmd is a word list.
    native=$(verdict "$TMP/native.log" $cmd)
    # shellcheck disable=SC2086
    crane=$(verdict "$TMP/crane.log" "${UNDER[@]}" $cmd)
    if [ "$native" = "$crane" ]; then
        same=$((same + 1))
        echo "same   $name: $native"
    else
        differ=$((differ + 1))
        echo "DIFFER $name: native $native, $mode $crane"
        diff "$TMP/native.log" "$TMP/crane.log" | grep '^[<>]' | head -8 |
            sed 's/^/    /'
    fi
    mode_proxy_alive || { echo "(during $name)"; exit 1; }
done < <(tests)
for t in $(cd "$BIN" && ls cl-*); do
    why=$(left_out "$t")
    [ -n "$why" ] && echo "left out $t: $why"
done

echo "piglit $mode: $same same verdicts, $differ different"
[ "$mode" = switch ] && { mode_switches || exit 1; }
[ "$differ" -eq 0 ]
