#!/bin/bash
# bench/multigpu/run.sh: one GPU shared within one VM (issue 26, item 5):
# two programs at once on the same GPU, and two contexts of one program on
# it (tests/programs/multidev --one-device: one context with two queues
# and copies between them, two contexts of their own), each re-homed on
# the vendor and switched to a proxy on this machine and back.  Every
# program checks every word it computed (exact results); this script
# prints one RESULT line per run, the switches each made, and its wall
# time as a ratio against the same program native in this run.
#
#   bench/multigpu/run.sh [--every N] [--rounds N]
#     --every N    switch or re-home before every N-th OpenCL call (37)
#     --rounds N   longrun's iterations per program (3000)
# Run it on the vendor set wanted (bench/gpu-session.sh multigpu runs it
# on NVIDIA alone).  Exit 1 when any run failed.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
. tests/wait.sh
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
P=$B/tests/programs
EVERY=37
ROUNDS=3000
while [ $# -gt 0 ]; do
    case $1 in
    --every) EVERY=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
    esac
done
for f in "$RUN" "$PROXY" "$P/longrun" "$P/multidev"; do
    [ -x "$f" ] || { echo "no $f (make all programs)"; exit 1; }
done
TMP=$(mktemp -d)
PROXY_PID=
cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

SOCK=$TMP/proxy.sock
"$PROXY" --listen "unix:$SOCK" >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
wait_until -q 30 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
    -- test -S "$SOCK" || { cat "$TMP/proxy.log"; exit 1; }
grep -m1 -i 'device' "$TMP/proxy.log"

fails=0
now() { date +%s.%N; }

# timed NAME CMD...: runs CMD with its output in NAME.out; its seconds in
# NAME.s; its exit status.
timed() {
    local name=$1 t0 rc
    shift
    t0=$(now)
    "$@" >"$TMP/$name.out" 2>&1
    rc=$?
    awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }' >"$TMP/$name.s"
    return $rc
}

# result NAME RC BASE: one line; the switches from NAME.report.
result() {
    local name=$1 rc=$2 base=$3 ok=0 bad=0 s
    if [ -f "$TMP/$name.report" ]; then
        ok=$(grep -c '^rehome.* rc=0 ' "$TMP/$name.report")
        bad=$(grep '^rehome' "$TMP/$name.report" | grep -v ' rc=0 ' |
            grep -vc ' rc=-16 ')
    fi
    s=$(cat "$TMP/$name.s")
    if [ "$rc" -eq 0 ] && grep -q '^PASS' "$TMP/$name.out" && [ "$bad" -eq 0 ]
    then
        printf 'RESULT %-28s PASS  switches %4d  %.2f s  x%.2f of native\n' \
            "$name" "$ok" "$s" "$(awk -v a="$s" -v b="$base" \
                'BEGIN { print (b > 0 ? a / b : 0) }')"
    else
        printf 'RESULT %-28s FAIL  (exit %d, %d switches failed): %s\n' \
            "$name" "$rc" "$bad" "$(tail -1 "$TMP/$name.out")"
        fails=$((fails + 1))
    fi
}

# shim NAME HOW PROG ARGS: PROG under the shim, HOW rehome (on the vendor)
# or switch (to the proxy and back) every EVERY calls.
shim() {
    local name=$1 how=$2
    shift 2
    if [ "$how" = switch ]; then
        set -- env CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate "$@"
    fi
    timed "$name" env CRANE_REHOME_EVERY="$EVERY" \
        CRANE_REHOME_REPORT="$TMP/$name.report" "$RUN" "$@"
}

echo "# two contexts of one program on one GPU (multidev --one-device)"
timed md-native "$P/multidev" --one-device
result md-native $? "$(cat "$TMP/md-native.s")"
base=$(cat "$TMP/md-native.s")
for how in rehome switch; do
    shim "md-$how" "$how" "$P/multidev" --one-device
    result "md-$how" $? "$base"
done

echo "# two programs of one VM on one GPU at once (longrun $ROUNDS each)"
timed lr-native "$P/longrun" "$ROUNDS"
result lr-native $? "$(cat "$TMP/lr-native.s")"
base=$(cat "$TMP/lr-native.s")
for how in rehome switch; do
    shim "lr-$how-a" "$how" "$P/longrun" "$ROUNDS" &
    a=$!
    shim "lr-$how-b" "$how" "$P/longrun" "$ROUNDS" &
    b=$!
    wait "$a"; ra=$?
    wait "$b"; rb=$?
    result "lr-$how-a" "$ra" "$base"
    result "lr-$how-b" "$rb" "$base"
done
echo "# $fails run(s) failed"
[ "$fails" -eq 0 ]
