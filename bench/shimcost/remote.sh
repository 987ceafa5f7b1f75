#!/bin/bash
# remote.sh: what one remoted call costs the program and crane-proxy, in
# instructions, against the null vendor (repeatable on a busy machine).
set -u

usage() {
    cat <<'USAGE'
usage: remote.sh [--iters N] [--build DIR] [KIND...]

Runs crane-proxy (--isolation none, the null vendor of nullcl.c as its
only vendor) and build/bench/shimcost under crane-run remoted to it, both
under valgrind's callgrind, once with N/2 and once with N calls of KIND,
and prints per kind the instructions one call costs each side: the
difference of the two runs' totals over the extra calls, so that set-up
cancels out.  The vendor returns at once, so this is the remoting's own
cost: the shim's packing and sending (program) and the proxy's reading,
decoding, checking and executing (proxy).  Two threads on each side make
the counts vary by a few percent from run to run.

  --iters N     calls in the longer run (default 40000)
  --build DIR   where bin/ and bench/ are (default build)
  KIND          shimcost kinds (default: launch args8_launch read4
                event_status)
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
iters=40000
build=$root/build
kinds=
while [ $# -gt 0 ]; do
    case $1 in
    --iters) iters=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "remote.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) kinds="$kinds $1"; shift ;;
    esac
done
[ -n "$kinds" ] || kinds="launch args8_launch read4 event_status"
command -v valgrind >/dev/null ||
    { echo "remote.sh: valgrind is not installed" >&2; exit 2; }
prog=$build/bench/shimcost
lib=$build/bench/nullcl/libnullcl.so
for f in "$prog" "$lib" "$build/bin/crane-run" "$build/bin/crane-proxy"; do
    [ -e "$f" ] || { echo "remote.sh: $f missing (make bench)" >&2; exit 2; }
done
tmp=$(mktemp -d)
proxy_pid=
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/vendors"
echo "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")" \
    >"$tmp/vendors/nullcl.icd"

# one KIND N: "PROXY PROGRAM" instructions of one run of N calls.
one() {
    rm -f "$tmp"/px.* "$tmp"/pg.* "$tmp/p.sock"
    OCL_ICD_VENDORS=$tmp/vendors valgrind --tool=callgrind \
        --callgrind-out-file="$tmp/px.%p" "$build/bin/crane-proxy" \
        --listen "unix:$tmp/p.sock" --tls none --isolation none \
        --log-level warn >"$tmp/proxy.log" 2>&1 &
    proxy_pid=$!
    for _ in $(seq 600); do
        [ -S "$tmp/p.sock" ] && break
        sleep 0.05
    done
    [ -S "$tmp/p.sock" ] ||
        { echo "remote.sh: crane-proxy did not start:" >&2;
          cat "$tmp/proxy.log" >&2; exit 1; }
    CRANE_BACKEND=remote:unix:$tmp/p.sock CRANE_SOCKET=none \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/pg.%p" \
        --trace-children=yes "$build/bin/crane-run" "$prog" "$2" "$1" \
        >"$tmp/out" 2>"$tmp/err" ||
        { echo "remote.sh: shimcost $1 failed:" >&2; cat "$tmp/err" >&2;
          exit 1; }
    grep -q "^RESULT $1 " "$tmp/out" ||
        { echo "remote.sh: shimcost $1 printed no result" >&2; exit 1; }
    kill "$proxy_pid"
    wait "$proxy_pid" 2>/dev/null
    proxy_pid=
    # Under crane-run the program is the last process that wrote a file.
    echo "$(awk '/^summary:/ { print $2 }' "$tmp"/px.*)" \
        "$(awk '/^summary:/ { print $2 }' "$(ls -t "$tmp"/pg.* | head -1)")"
}

echo "# remoted calls against a null vendor: instructions per call" \
    "(callgrind, $((iters / 2)) and $iters calls)"
printf '%-14s %12s %12s\n' kind program proxy
for k in $kinds; do
    a=$(one "$k" $((iters / 2))) || exit 1
    b=$(one "$k" "$iters") || exit 1
    # shellcheck disable=SC2086  # two numbers each
    set -- $a $b
    awk -v k="$k" -v n=$((iters - iters / 2)) -v pa="$1" -v ga="$2" \
        -v pb="$3" -v gb="$4" 'BEGIN { printf "%-14s %12.0f %12.0f\n",
        k, (gb - ga) / n, (pb - pa) / n }'
done
