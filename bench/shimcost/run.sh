#!/bin/sh
# run.sh: the shim's added cost per OpenCL call, against a null vendor.

set -u

usage() {
    cat <<'EOF'
usage: run.sh [--reps N] [--iters N] [--callgrind] [--build DIR]

Runs build/bench/shimcost natively (the system ICD loader, with
build/bench/nullcl/libnullcl.so as its only vendor) and under crane-run
(the same library as the shim's only vendor), alternately, N times each,
and prints per call kind the median ns/call of each side and their
difference: what the shim adds to one call.  With --callgrind it also
counts instructions per call under valgrind (repeatable on a noisy
machine): each side runs the kind at ITERS/10 and ITERS/5 calls, and the
difference of the two totals over the extra calls is the per-call count.

  --reps N      timed runs per side (default 5)
  --iters N     calls per kind and run (default 2000000)
  --callgrind   also print instructions per call, native and shim
  --build DIR   where bin/ and bench/ are (default build)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=5
iters=2000000
callgrind=0
build=$root/build
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --callgrind) callgrind=1; shift ;;
    --build) build=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

prog=$build/bench/shimcost
lib=$build/bench/nullcl/libnullcl.so
for f in "$prog" "$lib" "$build/bin/crane-run"; do
    [ -e "$f" ] || { echo "run.sh: $f missing (make bench)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The .icd is written here, so that a build carried to another machine
# names the library where it now is.
mkdir -p "$tmp/vendors"
echo "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")" \
    >"$tmp/vendors/nullcl.icd"

native() { OCL_ICD_VENDORS=$tmp/vendors "$@"; }
shim() {
    CRANE_VENDOR_LIBS=$lib CRANE_SOCKET=none "$build/bin/crane-run" "$@"
}

kinds="setarg setarg_mem launch args8_launch launch_event write4 read4 event_status"
i=0
while [ $i -lt "$reps" ]; do
    native "$prog" "$iters" >>"$tmp/native" || exit 1
    shim "$prog" "$iters" >>"$tmp/shim" || exit 1
    i=$((i + 1))
done

median() {  # median FILE KIND: the median ns/call of KIND's lines
    awk -v k="$2" '$1 == "RESULT" && $2 == k { print $3 }' "$1" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
             else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

instr() {  # instr SIDE KIND N: instructions of one whole run
    out=$tmp/cg.$$
    "$1" valgrind --tool=callgrind --callgrind-out-file="$out" \
        --trace-children=yes "$prog" "$3" "$2" >/dev/null 2>"$tmp/cg.err" ||
        { cat "$tmp/cg.err" >&2; exit 1; }
    # Under crane-run the program is the last process that wrote a file.
    awk '/^summary:/ { print $2 }' "$(ls -t "$out"* | head -1)"
    rm -f "$out"*
}

echo "# shim cost per call against a null vendor: $reps runs per side," \
    "$iters calls per kind; medians"
printf '%-14s %10s %10s %10s %8s\n' kind native_ns shim_ns added_ns target
for k in $kinds; do
    n=$(median "$tmp/native" "$k")
    s=$(median "$tmp/shim" "$k")
    case $k in setarg|launch) t="<= 20" ;; *) t="-" ;; esac
    awk -v k="$k" -v n="$n" -v s="$s" -v t="$t" \
        'BEGIN { printf "%-14s %10.2f %10.2f %10.2f %8s\n", k, n, s, s - n, t }'
done

if [ $callgrind -eq 1 ]; then
    a=$((iters / 10))
    b=$((iters / 5))
    echo "# instructions per call (callgrind, ($b - $a) extra calls)"
    printf '%-14s %10s %10s %10s\n' kind native shim added
    for k in $kinds; do
        na=$(instr native "$k" $a); nb=$(instr native "$k" $b)
        sa=$(instr shim "$k" $a); sb=$(instr shim "$k" $b)
        awk -v k="$k" -v na="$na" -v nb="$nb" -v sa="$sa" -v sb="$sb" \
            -v d=$((b - a)) 'BEGIN { n = (nb - na) / d; s = (sb - sa) / d;
            printf "%-14s %10.1f %10.1f %10.1f\n", k, n, s, s - n }'
    done
fi
