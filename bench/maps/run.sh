#!/bin/bash
# run.sh: bench/maps's program kept-mapped and unmapped, natively, under the
# shim, re-homed and switched through a private proxy every N calls; frames
# per second and their ratios against native in the same run.
set -u

usage() {
    cat <<'EOF'
usage: run.sh [--every N] [--reps R] [--frames F] [--frame-kb K]
              [--stage-mb M] [--build DIR] [--portable]

Each side runs `maps kept` (a CL_MEM_ALLOC_HOST_PTR staging buffer of M MiB
mapped for the whole run, as x264 keeps its lookahead's) and `maps
unmapped` (the same frames staged through malloc'd memory) R times
(default 3), alternately; the median frames/s of each is printed with its
ratio against the native run of the same mode, and kept/unmapped.

  --every N   switch before every N-th OpenCL call (default 37, as the
              issue's x264 runs)
  --portable  also the switched sides with the vendor's memory under the
              map and maps in shim memory from the start
              (CRANE_OWN_HOST_ALLOC=0 CRANE_PORTABLE_MAPS=1)
  --build DIR the build tree (default build)
Sides: native; shim (passthrough); rehome (re-homed onto the vendor);
switch (vendor <-> crane-proxy on a unix socket).  The switch counts come
from CRANE_REHOME_REPORT: done/refused.
EOF
}

every=37 reps=3 frames=300 frame_kb=256 stage_mb=32 build=build portable=0
while [ $# -gt 0 ]; do
    case $1 in
    --every) every=${2:?}; shift 2 ;;
    --reps) reps=${2:?}; shift 2 ;;
    --frames) frames=${2:?}; shift 2 ;;
    --frame-kb) frame_kb=${2:?}; shift 2 ;;
    --stage-mb) stage_mb=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    --portable) portable=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")/../.."
BENCH=$build/bench/maps
RUN=$build/bin/crane-run
for f in "$BENCH" "$RUN" "$build/bin/crane-proxy"; do
    [ -x "$f" ] || { echo "run.sh: missing $f (make -j2 all)" >&2; exit 2; }
done
TMP=$(mktemp -d)
"$build/bin/crane-proxy" --listen "unix:$TMP/proxy.sock" \
    >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
trap 'kill $PROXY_PID 2>/dev/null; wait $PROXY_PID 2>/dev/null; rm -rf "$TMP"' \
    EXIT
for _ in $(seq 200); do
    [ -S "$TMP/proxy.sock" ] && break
    sleep 0.05
done
[ -S "$TMP/proxy.sock" ] || { echo "crane-proxy did not start" >&2; exit 2; }

args=(--frames "$frames" --frame-kb "$frame_kb" --stage-mb "$stage_mb")
# side_env SIDE: the environment of a side (words, one per line).
side_env() {
    case $1 in
    native) ;;
    shim) echo "$RUN" ;;
    rehome*) echo "CRANE_REHOME_EVERY=$every"; echo "$RUN" ;;
    switch*) echo "CRANE_REHOME_EVERY=$every"
             echo "CRANE_PROXY=unix:$TMP/proxy.sock"
             echo "CRANE_REHOME_TO=alternate"; echo "$RUN" ;;
    esac
    case $1 in
    *-portable) echo CRANE_OWN_HOST_ALLOC=0; echo CRANE_PORTABLE_MAPS=1 ;;
    esac
}

# one SIDE MODE: frames/s of one run; its switch counts in $TMP/SIDE.MODE.
one() {
    local side=$1 mode=$2 words=() run=() out
    mapfile -t words < <(side_env "$side")
    # Settings first, then crane-run if any, then the program.
    for w in "${words[@]}"; do
        case $w in *=*) run+=("$w") ;; esac
    done
    for w in "${words[@]}"; do
        case $w in *=*) ;; *) run+=("$w") ;; esac
    done
    rm -f "$TMP/report"
    out=$(env CRANE_REHOME_REPORT="$TMP/report" "${run[@]}" "$BENCH" \
          "$mode" "${args[@]}" 2>>"$TMP/err") ||
        { echo "run.sh: $side $mode failed:" >&2; tail -3 "$TMP/err" >&2;
          exit 1; }
    local ok=0 no=0
    if [ -f "$TMP/report" ]; then
        ok=$(grep -c '^rehome .* rc=0 ' "$TMP/report" || true)
        no=$(grep '^rehome ' "$TMP/report" | grep -vc ' rc=0 ' || true)
    fi
    echo "$ok/$no" >"$TMP/$side.$mode"
    echo "$out" | awk '/^RESULT/ {print $4}'
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

sides="native shim rehome switch"
[ "$portable" = 1 ] && sides="$sides rehome-portable switch-portable"
declare -A fps
for side in $sides; do
    for mode in kept unmapped; do
        : >"$TMP/$side.$mode.fps"
    done
    for _ in $(seq "$reps"); do
        for mode in kept unmapped; do
            one "$side" "$mode" >>"$TMP/$side.$mode.fps" || exit 1
        done
    done
    for mode in kept unmapped; do
        fps[$side.$mode]=$(median <"$TMP/$side.$mode.fps")
    done
done

echo "bench/maps: $frames frames of $frame_kb KiB through a $stage_mb MiB" \
     "staging buffer, switched every $every calls, median of $reps"
printf '%-15s %10s %10s %9s %9s %9s %14s %14s\n' side kept/s unmapped/s \
    kept/nat unmap/nat kept/unm "kept sw ok/no" "unm sw ok/no"
for side in $sides; do
    k=${fps[$side.kept]} u=${fps[$side.unmapped]}
    printf '%-15s %10s %10s %9s %9s %9s %14s %14s\n' "$side" "$k" "$u" \
        "$(awk -v a="$k" -v b="${fps[native.kept]}" 'BEGIN {printf "%.3f", a / b}')" \
        "$(awk -v a="$u" -v b="${fps[native.unmapped]}" 'BEGIN {printf "%.3f", a / b}')" \
        "$(awk -v a="$k" -v b="$u" 'BEGIN {printf "%.3f", a / b}')" \
        "$(cat "$TMP/$side.kept")" "$(cat "$TMP/$side.unmapped")"
done
