#!/bin/bash
# ffmpeg's OpenCL filters natively, under crane-run and re-homed: same frames.
#
# Usage: tests/integration/ffmpeg.sh [EVERY...] (default: 499 1201)
# Generates 96 frames of testsrc2 at 320x240, runs them through five OpenCL
# filters (average blur, unsharp, convolution, overlay of a second uploaded
# stream, sobel) and prints one md5 per frame. The shim's output and the
# output of each run re-homed every EVERY OpenCL calls must equal the native
# one byte for byte. Exits 77 when ffmpeg or its OpenCL filters are missing.
set -eu
cd "$(dirname "$0")/../.."
RUN=${RUN:-build/bin/crane-run}
[ $# -gt 0 ] || set -- 499 1201

command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg"; exit 77; }
filters=$(ffmpeg -hide_banner -filters 2>/dev/null)
for f in avgblur_opencl unsharp_opencl convolution_opencl overlay_opencl \
    sobel_opencl; do
    grep -q " $f " <<<"$filters" ||
        { echo "SKIP: ffmpeg has no $f"; exit 77; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sharpen="0 -1 0 -1 5 -1 0 -1 0"
inputs=(-f lavfi -i testsrc2=s=320x240:r=24:d=4
    -f lavfi -i rgbtestsrc=s=128x96:r=24:d=4)
graph="[0:v]format=yuv420p,hwupload,avgblur_opencl=sizeX=3,"
graph+="unsharp_opencl=lx=5:ly=5:la=1.0,"
graph+="convolution_opencl=$sharpen:$sharpen:$sharpen:${sharpen}[main];"
graph+="[1:v]format=yuva420p,hwupload[logo];"
graph+="[main][logo]overlay_opencl=x=96:y=72,sobel_opencl=planes=1,"
graph+="hwdownload,format=yuv420p"

# filtered [CMD-PREFIX...]: the filtered frames' md5s on stdout.
filtered() {
    "$@" ffmpeg -hide_banner -nostdin -loglevel error \
        -init_hw_device opencl=ocl:0.0 -filter_hw_device ocl \
        "${inputs[@]}" -filter_complex "$graph" -f framemd5 -
}

# timed NAME CMD...: CMD's stdout into $tmp/NAME, its time on ours.
timed() {
    local t0=${EPOCHREALTIME/./} rc=0 ms
    "${@:2}" >"$tmp/$1" || rc=$?
    ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
    printf '%-12s %3d.%d s  exit %d\n' "$1" $((ms / 1000)) \
        $((ms % 1000 / 100)) $rc
    return $rc
}

timed native filtered
frames=$(grep -c '^0,' "$tmp/native" || true)
[ "$frames" -eq 96 ] || { echo "native: $frames frames, not 96"; exit 1; }

# The OpenCL filters did run: without any OpenCL platform the same command
# fails, and the filtered frames differ from the source frames.
if filtered env OCL_ICD_VENDORS=/nonexistent >/dev/null 2>&1; then
    echo "ffmpeg ran its OpenCL filters without any OpenCL platform"
    exit 1
fi
ffmpeg -hide_banner -nostdin -loglevel error "${inputs[@]:0:4}" \
    -vf format=yuv420p -f framemd5 - >"$tmp/source"
if cmp -s <(grep '^0,' "$tmp/source") <(grep '^0,' "$tmp/native"); then
    echo "the OpenCL filters left the frames unchanged"
    exit 1
fi

status=0
timed shim filtered "$RUN" || status=1
cmp "$tmp/native" "$tmp/shim" || status=1

for every in "$@"; do
    report=$tmp/report-$every
    : >"$report"
    timed "rehome-$every" filtered env CRANE_REHOME_EVERY="$every" \
        CRANE_REHOME_REPORT="$report" "$RUN" || status=1
    cmp "$tmp/native" "$tmp/rehome-$every" || status=1
    # Every re-home worked or was refused for a documented reason (-EBUSY:
    # a mapped buffer), and at least one really happened.
    ok=$(grep -c ' rc=0 ' "$report" || true)
    busy=$(grep -c ' rc=-16 ' "$report" || true)
    bad=$(grep ' rc=-' "$report" | grep -vc ' rc=-16 ' || true)
    echo "rehome-$every: $ok re-homes done, $busy refused (busy)," \
        "$bad failed"
    [ "$ok" -ge 1 ] && [ "$bad" -eq 0 ] || status=1
done

[ $status -eq 0 ] && echo "PASS ffmpeg: $frames frames identical"
exit $status
