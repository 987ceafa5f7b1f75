#!/bin/bash
# Lanes (docs/remoting.md, "Lanes"): a remoting program's big reads and
# writes over several TCP streams, against a real crane-proxy on a free
# loopback port.
#
#   lanes.sh tcp PROGRAM [ARGS]   in clear, 4 lanes: the program passes and
#       (with CRANE_LANES_WANT=yes) every lane carried bytes both ways, as
#       both sides count them, and the proxy's side of writes and reads
#       went through its pinned area (through the heap with
#       CRANE_PROXY_PIN_RING=0)
#   lanes.sh tls PROGRAM [ARGS]   the same under TLS-PSK with --auth-key:
#       each lane its own TLS session and Challenge
#   lanes.sh killed               lane 0 dies mid-piece under bulk_loop
#       (a test hook): that round's write fails with an error, the shim
#       rejoins fresh lanes (generation 1, which the proxy takes in place
#       of the old), every later round right and carried on them: each of
#       the 4 rejoined lanes counts bytes out and in; no hang
#   lanes.sh killed-read          the proxy's lane 0 dies mid-piece of a
#       read (its test hook): that read fails with an error, the lanes
#       rejoin and carry every later round, each right
#   lanes.sh hostile              lane 0 sends a piece that claims bytes
#       past its transfer: the proxy refuses it (its log says why), the
#       write fails, the program goes on on rejoined lanes, never wrong
#       bytes
#   lanes.sh switch               build/bench/switch's 80 MiB (one buffer,
#       more than the proxy's 64 MiB landing ring) switched passthrough ->
#       proxy -> back over TCP: every word right, both switches done, and
#       the way back's bytes all came on the lanes, out of the proxy's
#       pinned area (its ring reused as they left), none through its heap
#   lanes.sh switch-killed        the same with the proxy's lane 0 shut
#       down in the middle of the way back (its test hook): that switch
#       fails, the program stays on the proxy with its data whole, and the
#       switch tried again brings it back over the main stream, every word
#       right
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
LOOP=$B/tests/integration/bulk_loop
TMP=$(mktemp -d)
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

# proxy_port: PORT from the proxy's log once it listens on TCP.
proxy_port() {
    PORT=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' \
        "$TMP/proxy.log")
    [ -n "$PORT" ]
}

# Starts a proxy on a free loopback port with OPTIONS; PORT is where.
start_tcp() {
    "$PROXY" --listen tcp:127.0.0.1:0 "$@" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    PORT=
    wait_until -q 20 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy on TCP" \
        -- proxy_port && return 0
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

stop_proxy() {
    kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    PROXY_PID=
}

# run ENV... -- PROGRAM ARGS: the program through 4 lanes, its output in
# $TMP/out; its exit status.
run() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    run_bounded -q 60 -t "$PROXY_PID" -n "$1" -- \
        env CRANE_BACKEND="remote:tcp:127.0.0.1:$PORT" CRANE_REMOTE_LANES=4 \
        CRANE_LOG_LEVEL=info "${envs[@]}" "$RUN" "$@" >"$TMP/out" 2>&1
}

# Every lane (0-3) carried bytes out and in, by the shim's count; the
# proxy counted the same bytes.
lanes_used() {
    local i ok=yes
    for i in 0 1 2 3; do
        if ! grep -q "remote: lane $i carried [1-9][0-9]* bytes out, [1-9]" \
            "$TMP/out"; then
            echo "lane $i carried nothing both ways:"; ok=no
        fi
        s=$(sed -n "s/.*remote: lane $i carried \([0-9]*\) bytes out, \([0-9]*\) in.*/\1 \2/p" \
            "$TMP/out")
        p=$(sed -n "s/.*tenant [0-9]*: lane $i carried \([0-9]*\) bytes in, \([0-9]*\) out.*/\1 \2/p" \
            "$TMP/proxy.log")
        [ "$s" = "$p" ] || { echo "lane $i: shim says '$s', proxy '$p'"; ok=no; }
    done
    [ $ok = yes ]
}

mode=${1:-}
shift
case "$mode" in
tcp|tls)
    if [ "$mode" = tls ]; then
        head -c 32 /dev/urandom >"$TMP/key"
        start_tcp --tls psk --auth-key "$TMP/key" || exit 1
        extra=(CRANE_TLS=psk CRANE_AUTH_KEY="$TMP/key")
    else
        start_tcp --tls none || exit 1
        extra=(CRANE_TLS=none)
    fi
    run "${extra[@]}" -- "$@"
    rc=$?
    stop_proxy
    tail -3 "$TMP/out"
    [ $rc -eq 0 ] && grep -q '^PASS' "$TMP/out" || { cat "$TMP/out"; exit 1; }
    grep -q 'remote: 4 lanes to' "$TMP/out" ||
        { echo "no lanes opened"; cat "$TMP/proxy.log"; exit 1; }
    if [ "$mode" = tls ]; then
        [ "$(grep -c 'remote: TLS (psk)' "$TMP/out")" -eq 5 ] ||
            { echo "not 5 TLS sessions (1 + 4 lanes)"; exit 1; }
    fi
    if [ "${CRANE_LANES_WANT:-no}" = yes ]; then
        lanes_used || { cat "$TMP/out" "$TMP/proxy.log"; exit 1; }
        grep 'remote: lane' "$TMP/out"
        n='[1-9][0-9]*'
        if [ "${CRANE_PROXY_PIN_RING:-1}" = 0 ]; then
            want="lanes' bytes: 0 in and 0 out through the pinned area, $n in and $n out through the heap"
        else
            # Writes and reads through it; a creation's contents (no
            # buffer write) land in the heap.
            want="lanes' bytes: $n in and $n out through the pinned area, [0-9]* in and 0 out through the heap"
        fi
        grep -q "$want" "$TMP/proxy.log" ||
            { echo "not the proxy's expected path ($want):";
              grep "lanes' bytes" "$TMP/proxy.log"; exit 1; }
        grep "lanes' bytes" "$TMP/proxy.log"
        # LANES_READ_BYTES: every byte the program read left on the lanes.
        if [ -n "${LANES_READ_BYTES:-}" ]; then
            out=$(sed -n "s/.*lanes' bytes: [0-9]* in and \([0-9]*\) out through the pinned area, [0-9]* in and \([0-9]*\) out.*/\1 \2/p" \
                "$TMP/proxy.log" | awk '{print $1 + $2}')
            [ "$out" = "$LANES_READ_BYTES" ] ||
                { echo "not every read on the lanes: $out bytes out, want" \
                    "$LANES_READ_BYTES"; exit 1; }
        fi
    fi
    grep -q 'lanes off' "$TMP/out" "$TMP/proxy.log" &&
        { echo "lanes failed:"; grep 'lanes off' "$TMP/out" "$TMP/proxy.log"; exit 1; }
    exit 0
    ;;
killed|killed-read|killed-nbread|hostile)
    # Past the first rounds (24 MiB each way, 6 MiB per lane; a read every
    # other round, or every read non-blocking with killed-nbread).
    envs=(CRANE_TLS=none)
    loop=("$LOOP" 6 go-on)
    [ "$mode" = killed-nbread ] && loop+=($((24 << 20)) nonblocking)
    if [ "$mode" = killed-read ] || [ "$mode" = killed-nbread ]; then
        CRANE_PROXY_TEST_LANE_FAULT=$((10 << 20)) start_tcp --tls none ||
            exit 1
    else
        start_tcp --tls none || exit 1
        envs+=(CRANE_TEST_LANE_FAULT=$((20 << 20)))
    fi
    [ "$mode" = hostile ] && envs+=(CRANE_TEST_LANE_BAD=1)
    run "${envs[@]}" -- "${loop[@]}"
    rc=$?
    stop_proxy
    cat "$TMP/out" | grep -v 'info: remote: lane'
    fails=0
    [ $rc -eq 0 ] && grep -q '^PASS bulk_loop: 6 rounds' "$TMP/out" ||
        { echo "not ok: the program did not go on to PASS (rc $rc)"; fails=1; }
    grep -q '^WRONG' "$TMP/out" && { echo "not ok: wrong bytes"; fails=1; }
    grep -q '^round [0-9] failed: error -5$' "$TMP/out" ||
        { echo "not ok: no round failed with CL_OUT_OF_RESOURCES"; fails=1; }
    grep -q '^round 5 ok' "$TMP/out" ||
        { echo "not ok: the last round did not succeed"; fails=1; }
    grep -q 'remote: the lanes failed: bulk bytes take the stream' \
        "$TMP/out" || { echo "not ok: lanes not given up"; fails=1; }
    # The later rounds ran on fresh lanes: rejoined after the fault, the
    # proxy's old set replaced, each new lane carrying bytes both ways.
    grep -q 'remote: 4 lanes rejoined to .* (generation 1)' "$TMP/out" ||
        { echo "not ok: the lanes did not rejoin"; fails=1; }
    grep -q 'lanes rejoined: generation 1 replaces 0' "$TMP/proxy.log" ||
        { echo "not ok: the proxy did not take the new lanes"; fails=1; }
    for i in 0 1 2 3; do
        grep -q "remote: rejoined lane $i (generation 1) carried [1-9][0-9]* bytes out, [1-9][0-9]* in" \
            "$TMP/out" ||
            { echo "not ok: rejoined lane $i did not carry bytes both ways"
              fails=1; }
    done
    if [ "$mode" = hostile ]; then
        grep -q 'lanes off: lane 0: a piece out of place' "$TMP/proxy.log" ||
            { echo "not ok: the proxy did not refuse the piece:";
              cat "$TMP/proxy.log"; fails=1; }
    elif [ "$mode" = killed-read ] || [ "$mode" = killed-nbread ]; then
        grep -q 'remote: a read of [0-9]* bytes failed on the lanes' \
            "$TMP/out" ||
            { echo "not ok: no read failed on the lanes"; fails=1; }
        grep -q 'lane 0 shut down mid-piece (test hook)' "$TMP/proxy.log" ||
            { echo "not ok: the proxy's hook did not fire"; fails=1; }
    else
        # Lane 0 broke mid-piece, or another closed first (the shim shuts
        # all of them down), while the transfer was awaited or between
        # two transfers.
        grep -q 'lanes off: lane [0-3]: \(a lane broke mid-piece\|closed by the peer mid-transfer\)\|lane [0-3] closed by the peer' \
            "$TMP/proxy.log" ||
            { echo "not ok: the proxy did not see the lanes break:";
              cat "$TMP/proxy.log"; fails=1; }
    fi
    exit $fails
    ;;
switch|switch-killed)
    MB=80
    if [ "$mode" = switch-killed ]; then
        # 8 MiB into lane 0's 20 MiB of the way back.
        CRANE_PROXY_TEST_LANE_FAULT=$((8 << 20)) start_tcp --tls none ||
            exit 1
    else
        start_tcp --tls none || exit 1
    fi
    run_bounded -s KILL -q 60 -t "$PROXY_PID" -n "switch" -- \
        env CRANE_PROXY="tcp:127.0.0.1:$PORT" CRANE_TLS=none \
        CRANE_REMOTE_LANES=4 CRANE_REHOME_TO=alternate CRANE_SOCKET=none \
        CRANE_REHOME_REPORT="$TMP/report" CRANE_LOG_LEVEL=info \
        "$RUN" "$B/bench/switch" --mb $MB --buffers 1 \
        --retry 1 >"$TMP/out" 2>&1
    rc=$?
    stop_proxy
    grep -v 'info: remote: lane' "$TMP/out"
    cat "$TMP/report"
    grep "lanes' bytes" "$TMP/proxy.log"
    fails=0
    [ $rc -eq 0 ] && grep -q "^PASS $MB MiB in 1 buffers" "$TMP/out" ||
        { echo "not ok: not every word right (rc $rc)"; fails=1; }
    grep -q 'remote: 4 lanes to' "$TMP/out" ||
        { echo "not ok: no lanes opened"; fails=1; }
    ok=$(grep -c '^rehome .* rc=0 from=remote to=native' "$TMP/report")
    bad=$(grep '^rehome ' "$TMP/report" | grep -vc ' rc=0 ')
    n='[1-9][0-9]*'
    if [ "$mode" = switch ]; then
        [ "$ok" -eq 1 ] && [ "$bad" -eq 0 ] &&
            grep -q '^rehome .* rc=0 from=native to=remote' "$TMP/report" ||
            { echo "not ok: want both switches done, none failed"; fails=1; }
        # Every byte of the way back (the only reads) on the lanes, from
        # the pinned area; the way out's writes landed there too.
        out=$(sed -n "s/.*lanes' bytes: [0-9]* in and \([0-9]*\) out through the pinned area, [0-9]* in and 0 out through the heap.*/\1/p" \
            "$TMP/proxy.log")
        [ -n "$out" ] && [ "$out" -ge $((MB << 20)) ] ||
            { echo "not ok: the way back's $((MB << 20)) bytes did not" \
                "all leave on the lanes from the pinned area"; fails=1; }
        lanes_used || fails=1
        grep -q 'lanes off' "$TMP/out" "$TMP/proxy.log" &&
            { echo "not ok: the lanes failed"; fails=1; }
    else
        # Back failed once (nothing committed), then done over the stream.
        [ "$ok" -eq 1 ] && [ "$bad" -eq 1 ] &&
            grep -q '^rehome n=2 .* from=remote to=native' "$TMP/report" &&
            ! grep -q '^rehome n=2 rc=0 ' "$TMP/report" ||
            { echo "not ok: want the way back failed once, then done"
              fails=1; }
        grep -q '^RETRY to_native' "$TMP/out" ||
            { echo "not ok: no switch retried"; fails=1; }
        grep -q 'lane 0 shut down mid-piece (test hook)' "$TMP/proxy.log" ||
            { echo "not ok: the proxy's hook did not fire"; fails=1; }
        grep -q 'remote: a read of [0-9]* bytes failed on the lanes' \
            "$TMP/out" || { echo "not ok: no read failed on the lanes"
                           fails=1; }
        grep -q 'remote: the lanes failed: bulk bytes take the stream' \
            "$TMP/out" || { echo "not ok: lanes not given up"; fails=1; }
    fi
    [ $fails -eq 0 ] && echo "PASS lanes $mode"
    exit $fails
    ;;
*)
    echo "usage: lanes.sh tcp|tls PROGRAM [ARGS] | killed | killed-read |" \
        "killed-nbread | hostile | switch | switch-killed" >&2
    exit 2
    ;;
esac
