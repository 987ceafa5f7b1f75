#!/bin/bash
# x264 --opencl, the Crane paper's own workload: its lookahead keeps a
# CL_MEM_ALLOC_HOST_PTR staging buffer mapped for the whole encode.  x264
# takes only GPUs, so PoCL runs it through tests/integration/fakecl.c with
# CRANE_FAKECL_GPU=1 (PoCL's devices said to be GPUs), for the program and
# the proxy alike.  x264's OpenCL lookahead is not deterministic (two
# native runs give different streams), so the encode is checked as a
# stream: every frame decodes (ffprobe) and its global PSNR is within
# 1 dB of the native run's:
#
#   x264.sh shim              under the shim
#   x264.sh rehome EVERY MIN  re-homed every EVERY calls: at least MIN done,
#                             none refused (maps.sh's rules)
#   x264.sh switch EVERY MIN  switched vendor <-> a private proxy so
#   x264.sh refused EVERY     CRANE_OWN_HOST_ALLOC=0 (the vendor's memory
#                             under the map, the issue as found): switches
#                             refused while the map lasts, each with its
#                             reason in the report and the log
#
# The kernels' binary x264 caches (--opencl-clbin) is kept in the build
# tree ($B/tests/x264), so that only the first run pays PoCL's build (1-2
# minutes on a loaded machine); HOME and PoCL's cache are the run's own.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$(pwd)/$B/bin/crane-run
PROXY=$(pwd)/$B/bin/crane-proxy
FAKE=$B/tests/integration/libcrane-fakecl.so
TMP=$(mktemp -d)
. tests/integration/private-proxy.sh

for t in x264 ffprobe; do
    command -v $t >/dev/null || { echo "skip: $t is not installed"; exit 77; }
done
pocl=$(grep -h pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -1)
[ -n "$pocl" ] || { echo "skip: no PoCL in /etc/OpenCL/vendors"; exit 77; }
[ -f "$FAKE" ] || fail "missing $FAKE"

mkdir -p "$B/tests/x264" "$TMP/icd" "$TMP/home"
CLBIN=$(cd "$B/tests/x264" && pwd)/lookahead.clbin
# The shim never loads a library named libcrane* as a vendor.
cp "$FAKE" "$TMP/libgpuwrap.so"
echo "$TMP/libgpuwrap.so" >"$TMP/icd/gpu.icd"
export CRANE_FAKECL_WRAP=$pocl CRANE_FAKECL_GPU=1 HOME=$TMP/home
export POCL_CACHE_DIR=$TMP/pocl-cache POCL_DEVICES=${POCL_DEVICES:-pthread}

# 12 frames of 160x96 noise with a moving square (motion for the
# lookahead to find).
python3 - "$TMP/in.y4m" <<'EOF' || fail "cannot write the input"
import random, sys
w, h, n = 160, 96, 12
rnd = random.Random(264)
with open(sys.argv[1], "wb") as f:
    f.write(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C420jpeg\n" % (w, h))
    base = bytes(rnd.randrange(256) for _ in range(w * h))
    for i in range(n):
        y = bytearray(base)
        for r in range(20, 52):
            for c in range(10 + 6 * i, 42 + 6 * i):
                y[r * w + c] = 235
        f.write(b"FRAME\n" + bytes(y) + bytes([128]) * (w * h // 2))
EOF

# encode NAME ENV...: x264 --opencl under ENV, its stream $TMP/NAME.264.
encode() {
    local name=$1
    shift
    (cd "$TMP" && env "$@" x264 --psnr --opencl --opencl-clbin "$CLBIN" \
        --frames 12 -o "$TMP/$name.264" "$TMP/in.y4m") \
        >"$TMP/$name.log" 2>&1 || { cat "$TMP/$name.log" >"$TMP/out";
                                    fail "$name: x264 failed"; }
    grep -q 'OpenCL acceleration enabled' "$TMP/$name.log" || {
        cat "$TMP/$name.log" >"$TMP/out"
        fail "$name: x264 did not take the OpenCL lookahead"; }
}

encode native OCL_ICD_VENDORS="$TMP/icd"
shim_env=(CRANE_VENDORS_DIR="$TMP/icd" CRANE_LOG_FILE="$TMP/shim.log"
          CRANE_LOG_LEVEL=debug
          CRANE_REHOME_REPORT="$TMP/report" "$RUN")
mode=${1:-shim}
case $mode in
shim) encode shim "${shim_env[@]}" ;;
rehome|switch|refused)
    every=${2:-37} min=${3:-10}
    extra=()
    if [ "$mode" = switch ]; then
        OCL_ICD_VENDORS="$TMP/icd" start_private_proxy
        extra=(CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate)
    fi
    [ "$mode" = refused ] && extra=(CRANE_OWN_HOST_ALLOC=0)
    encode "$mode" CRANE_REHOME_EVERY="$every" "${extra[@]}" \
        "${shim_env[@]}"
    done_=$(grep -c '^rehome .* rc=0 ' "$TMP/report" || true)
    refused=$(grep -c '^rehome .* rc=-16 ' "$TMP/report" || true)
    failed=$(grep '^rehome ' "$TMP/report" | grep -v ' rc=0 ' |
             grep -vc ' rc=-16 ' || true)
    unsaid=$(grep '^rehome .* rc=-16 ' "$TMP/report" |
             grep -vc ' reason="' || true)
    logged=$(grep -c 'SWITCH_REFUSE' "$TMP/shim.log" || true)
    echo "$mode: $done_ done, $refused refused ($logged logged, $unsaid" \
         "without a reason), $failed failed"
    [ "$failed" -eq 0 ] || fail "$failed switch(es) failed"
    if [ "$mode" = refused ]; then
        [ "$refused" -ge 1 ] || fail "nothing refused: this proves nothing"
        [ "$unsaid" -eq 0 ] && [ "$logged" -eq "$refused" ] ||
            fail "refusals without their reason"
    else
        [ "$refused" -eq 0 ] || fail "$refused switch(es) refused"
        [ "$done_" -ge "$min" ] || fail "only $done_ switches, $min wanted"
        # The 32 MiB staging buffer, mapped whole for writing, moves at no
        # switch: its bytes are not read at the stops, nor sent with its
        # creations on the proxy (the shim's debug lines).
        unread=$(grep -c 'maps for writing whole: none' \
                 "$TMP/shim.log" || true)
        unsent=$(grep -c 'none of whose bytes are needed: none sent' \
                 "$TMP/shim.log" || true)
        echo "the staging buffer: $unread stops read none of it," \
             "$unsent creations on the proxy sent none"
        [ "$unread" -ge $((done_ / 2)) ] || fail "stops read the staging buffer"
        [ "$mode" = rehome ] || [ "$unsent" -ge $((done_ / 4)) ] ||
            fail "creations on the proxy sent the staging buffer"
    fi
    ;;
*) echo "usage: x264.sh shim | rehome|switch EVERY MIN | refused EVERY" >&2
   exit 2 ;;
esac
# psnr NAME: the run's global PSNR.
psnr() {
    sed -n 's/.*PSNR Mean .*Global:\([0-9.]*\).*/\1/p' "$TMP/$1.log" | tail -1
}
frames=$(ffprobe -v error -count_frames -select_streams v:0 \
         -show_entries stream=nb_read_frames -of csv=p=0 "$TMP/$mode.264")
[ "$frames" = 12 ] || fail "$mode: ${frames:-no} frames decode, not 12"
a=$(psnr native) b=$(psnr "$mode")
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(a > 0 && b > 0 &&
                                 d < 1 && d > -1) }' ||
    fail "$mode: global PSNR $b dB against ${a:-?} natively"
echo "PASS x264 $mode (12 frames decode; PSNR $b dB, natively $a)"
