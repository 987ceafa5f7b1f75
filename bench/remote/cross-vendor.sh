#!/bin/bash
# cross-vendor.sh: running programs moved between vendors and devices
# (docs/shim.md, "Devices"), each move's result and stoppage printed.
#
# On the build machine:   bench/remote/cross-vendor.sh --pack
#   copies the shared libraries crane needs beyond a bare Debian
#   (libprotobuf-c, libuv) and clpeak, if installed, into build/carry/.
# On the GPU machine (NVIDIA's OpenCL and PoCL installed), from the
# repository root with build/ carried:
#   bench/remote/cross-vendor.sh [--every N] [--clpeak-every N]
#                                [--nvidia LIB] [--pocl LIB]
# (N: switch before every Nth OpenCL call; 97 for the test programs, 2000
# for clpeak, whose launch test makes many calls; --clpeak-every 0 leaves
# clpeak out.)
#
# Moves, each with tests/programs (every byte checked by the program) and
# clpeak --kernel-latency (a third-party program: it must exit 0):
#   nv>pocl       the program on NVIDIA, switched to a proxy offering only
#                 PoCL and back, every N calls (CRANE_DEVICE=portable
#                 names PoCL's platform: a GPU program sent to a CPU device
#                 on purpose), NVIDIA -> PoCL -> NVIDIA ...
#   both/same     the program on NVIDIA, switched to a proxy offering NVIDIA
#                 and PoCL: by identity it lands on the same NVIDIA device
#   both/pocl     the same proxy with CRANE_DEVICE=portable: it lands on
#                 PoCL, and comes back to NVIDIA
#   pocl>both     the program on PoCL natively, to the two-platform proxy
#                 (lands on PoCL by identity) and back
#   refused       the program on NVIDIA, a proxy offering only PoCL and no
#                 CRANE_DEVICE: another type of device, so every move is
#                 refused before anything changes (reason printed)
# Then remoted from the start on an NVIDIA proxy: the SVM, user-event and
# timer tests (tests/integration).
#
# Prints one line per move and program: PASS/FAIL, switches that worked
# each way, refused or failed ones, and the median and maximum stoppage
# (the re-home report's `block`, ms).  A move line passes when the program
# passed, at least one switch went each way and none failed; refusals are
# counted (a program holding binary-only programs is refused a move to
# another device model while it holds them).  Exit status 0 when every
# line passed.  PROGRAMS="kernels images" limits the test programs;
# MOVE_TIMEOUT (300 s) bounds each run (a hang fails with exit 124).
set -u
cd "$(dirname "$0")/../.."
root=$PWD

B=${B:-build}
every=97
clpeak_every=2000
nvidia=libnvidia-opencl.so.1
pocl=$(grep -h pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -1)
pocl=${pocl:-libpocl.so.2}

pack() {
    mkdir -p "$B/carry"
    for lib in libprotobuf-c.so.1 libuv.so.1; do
        path=$(ldd "$B/bin/crane-proxy" "$B/lib/libcrane.so" 2>/dev/null |
               awk -v l="$lib" '$1 == l { print $3; exit }')
        [ -n "$path" ] && cp -L "$path" "$B/carry/" && echo "carry: $path"
    done
    if command -v clpeak >/dev/null; then
        cp -L "$(command -v clpeak)" "$B/carry/" && echo "carry: clpeak"
    fi
    echo "carry build/ (with build/carry/) to the GPU machine"
}

while [ $# -gt 0 ]; do
    case $1 in
    --pack) pack; exit 0 ;;
    --every) every=${2:?}; shift 2 ;;
    --clpeak-every) clpeak_every=${2:?}; shift 2 ;;
    --nvidia) nvidia=${2:?}; shift 2 ;;
    --pocl) pocl=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *) echo "cross-vendor.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

export LD_LIBRARY_PATH=$root/$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$root/$B/carry:$PATH
RUN=$root/$B/bin/crane-run
PROXY=$root/$B/bin/crane-proxy
PROGS=$root/$B/tests/programs
TMP=$(mktemp -d)
PROXY_PID=
failed=0

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

# The vendor sets: one .icd folder each.
mkdir -p "$TMP/nv" "$TMP/pocl" "$TMP/both"
echo "$nvidia" >"$TMP/nv/nvidia.icd"
echo "$pocl" >"$TMP/pocl/pocl.icd"
cp "$TMP/nv/nvidia.icd" "$TMP/pocl/pocl.icd" "$TMP/both/"
for set in nv pocl; do
    n=$(OCL_ICD_VENDORS=$TMP/$set clinfo -l 2>/dev/null | grep -c Platform)
    [ "${n:-0}" -ge 1 ] || { echo "no platform from $(cat "$TMP/$set"/*.icd)" \
        "(set --nvidia / --pocl)"; exit 1; }
done

# start_proxy SET: a crane-proxy whose loader sees the SET vendors.
start_proxy() {
    SOCK=$TMP/proxy.sock
    rm -f "$SOCK"
    OCL_ICD_VENDORS=$TMP/$1 "$PROXY" --listen "unix:$SOCK" \
        >"$TMP/proxy-$1.log" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 400); do
        [ -S "$SOCK" ] && return 0
        kill -0 "$PROXY_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "crane-proxy ($1) did not start:"; tail -5 "$TMP/proxy-$1.log"
    exit 1
}

stop_proxy() {
    kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    PROXY_PID=
}

# Median and maximum stoppage of the report lines on stdin, ms: a switch's
# `total`, from the gate closing to its opening (calls held all along).
stoppage() {
    sed -n 's/.* total=\([0-9.]*\).*/\1/p' | sort -g |
        awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
              printf "median %.1f ms, max %.1f ms", v[int((NR + 1) / 2)] * 1e3,
              v[NR] * 1e3 }'
}

# move NAME NATIVE-SET EXPECT N CMD...: CMD under crane-run on NATIVE-SET's
# vendors, switched to the running proxy and back every N calls.
# EXPECT: moves (at least one switch each way, none failed) or refused
# (none moved, at least one refused with a reason).
move() {
    local name=$1 set=$2 expect=$3 n=$4 rep=$TMP/report
    shift 4
    rm -f "$rep"
    CRANE_VENDORS_DIR=$TMP/$set OCL_ICD_VENDORS=$TMP/$set \
        CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY=$n CRANE_REHOME_REPORT=$rep \
        timeout "${MOVE_TIMEOUT:-300}" "$RUN" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$? prog
    prog=$(basename "$1")
    touch "$rep"
    local to=$(grep -c 'rc=0 from=native to=remote' "$rep")
    local back=$(grep -c 'rc=0 from=remote to=native' "$rep")
    local refused=$(grep -c 'rc=-19 .*reason=' "$rep")
    local bad=$(grep '^rehome' "$rep" | grep -v ' rc=0 ' | grep -v ' rc=-16 ' |
                grep -vc ' rc=-19 ')
    local verdict=PASS
    [ $rc -eq 0 ] || verdict="FAIL (exit $rc)"
    # A program holding programs created from binaries only cannot move
    # to another device model (docs/shim.md, "Devices"): for it, a refusal
    # that says so is as right as moves (which it makes while it holds
    # none).
    if [ "$expect" = moves ] && [ "$to" -eq 0 ] && [ "$bad" -eq 0 ] &&
        grep -q 'reason=.*binaries only' "$rep"; then
        expect=refused
    fi
    if [ "$expect" = moves ]; then
        { [ "$to" -ge 1 ] && [ "$back" -ge 1 ] && [ "$bad" -eq 0 ]; } ||
            verdict="FAIL ($verdict)"
    else
        { [ "$to" -eq 0 ] && [ "$refused" -ge 1 ]; } ||
            verdict="FAIL ($verdict)"
    fi
    printf '%-10s %-12s %s: %d to the proxy (%s), %d back (%s), %d refused, %d failed\n' \
        "$name" "$prog" "$verdict" "$to" \
        "$(grep 'rc=0 from=native to=remote' "$rep" | stoppage)" "$back" \
        "$(grep 'rc=0 from=remote to=native' "$rep" | stoppage)" \
        "$refused" "$bad"
    if [ "$expect" = refused ] && [ "$refused" -ge 1 ]; then
        grep -m1 -o 'reason=.*' "$rep" | sed 's/^/           /'
    fi
    case $verdict in
    PASS) ;;
    *) failed=1; tail -n 3 "$TMP/out" "$TMP/err" | sed 's/^/    /' ;;
    esac
}

# The programs of each move: every test program and clpeak's launch test.
programs() {
    for p in ${PROGRAMS:-buffers kernels images events binaries threads \
                        longrun}; do
        [ -x "$PROGS/$p" ] && echo "$PROGS/$p"
    done
}
clpeak_args="--kernel-latency"

run_moves() {
    local name=$1 set=$2 expect=$3
    for p in $(programs); do
        move "$name" "$set" "$expect" "$every" "$p"
    done
    if [ "$clpeak_every" -gt 0 ] && command -v clpeak >/dev/null; then
        move "$name" "$set" "$expect" "$clpeak_every" \
            "$(command -v clpeak)" $clpeak_args
    fi
}

echo "# crane cross-vendor moves, every $every calls (clpeak" \
     "$clpeak_every); NVIDIA: $nvidia, PoCL: $pocl"
start_proxy pocl
CRANE_DEVICE=portable run_moves nv\>pocl nv moves
run_moves refused nv refused
stop_proxy

start_proxy both
run_moves both/same nv moves
CRANE_DEVICE=portable run_moves both/pocl nv moves
run_moves pocl\>both pocl moves
stop_proxy

echo "# remoted from the start on an NVIDIA proxy"
start_proxy nv
for t in svm user_events timers; do
    bin=$root/$B/tests/integration/$t
    [ -x "$bin" ] || { echo "remote     $t: missing"; failed=1; continue; }
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$bin" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    printf '%-10s %-12s %s\n' remote "$t" "$(tail -1 "$TMP/out")"
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || failed=1
done
stop_proxy
exit $failed
