#!/bin/bash
# Remoting tests: the shim's test programs run through a real crane-proxy
# from their start, or switched between passthrough and remoting while they
# run; and a proxy killed under a remoting program.
#
#   remote.sh remote PROGRAM [ARGS]       remoted from the start
#   remote.sh switch EVERY MIN PROGRAM [ARGS]
#       switched native <-> remote before every EVERY-th OpenCL call; at
#       least MIN switches must happen and each must work (or be refused
#       for a documented reason: -16, a map or a pending user event)
#   remote.sh proxy-killed                the proxy dies mid-run: the
#       program must fail with an error, never report PASS on wrong data
#   remote.sh ring-writes                 writes through a small shared
#       area, behind a user event another thread sets and staged through
#       the proxy's pinned buffers, every byte checked
#   remote.sh proxy-frozen                the proxy stops answering
#       mid-run: the program's calls fail once CRANE_PROXY_TIMEOUT_MS
#       passes, never hang
#   remote.sh shm-file PROGRAM [ARGS]     remoted over TCP with a file both
#       sides map as the shared area (the ivshmem shape: CRANE_SHM_FILE in
#       the program, --shm-dir at the proxy); its log must say so
#   remote.sh proxy-killed-bulk           the same while 24 MiB writes and
#       reads stream (through shared memory unless CRANE_SHM_MB=0): an
#       error, never bytes that differ
#   remote.sh tls PROGRAM [ARGS]          the proxy on TCP with TLS: x509
#       (a PKI made with certtool) and psk pass the program; a client
#       certificate from another CA, a wrong key, and a client without TLS
#       are each refused, with the proxy's log saying why
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
. tests/wait.sh
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
TMP=$(mktemp -d)
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

# Starts a proxy on a unix socket and waits until it accepts connections.
# wait_connected PID: prints yes once the proxy's log shows a longrun's
# connection (30 s without progress of PID or the proxy: no), no if it
# never did or PID ended first.
wait_connected() {
    if wait_until -q 30 -p "$1" -p "$PROXY_PID" -f "$TMP/proxy.log" -e "$1" \
        -n "longrun connected" -- \
        grep -q 'longrun pid [0-9]*): connected' "$TMP/proxy.log"; then
        echo yes
    else
        echo no
    fi
}
# proxy_port: PORT from the proxy's log once it listens on TCP.
proxy_port() {
    PORT=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' \
        "$TMP/proxy.log")
    [ -n "$PORT" ]
}

start_proxy() {
    SOCK=$TMP/proxy.sock
    "$PROXY" --listen "unix:$SOCK" "$@" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$SOCK" && return 0
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

case "${1:-}" in
remote)
    shift
    start_proxy || exit 1
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$@"
    ;;
switch)
    every=$2 min=$3
    shift 3
    start_proxy || exit 1
    report=$TMP/report
    CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$every" CRANE_REHOME_REPORT="$report" \
        "$RUN" "$@" || exit 1
    to_remote=$(grep -c 'rc=0 from=native to=remote' "$report")
    to_native=$(grep -c 'rc=0 from=remote to=native' "$report")
    bad=$(grep '^rehome' "$report" | grep -v ' rc=0 ' | grep -vc ' rc=-16 ')
    echo "switches: $to_remote to the proxy, $to_native back, $bad failed"
    [ "$bad" -eq 0 ] && [ $((to_remote + to_native)) -ge "$min" ] &&
        [ "$to_remote" -ge 1 ]
    ;;
proxy-killed)
    start_proxy || exit 1
    out=$TMP/out
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$B/tests/programs/longrun" \
        1000000 >"$out" 2>&1 &
    prog=$!
    # Kill the proxy once the program is computing through it; a program
    # that never got there tests nothing.
    connected=$(wait_connected "$prog")
    kill -9 "$PROXY_PID"
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
    wait "$prog"
    rc=$?
    echo "program exit $rc (connected before the kill: $connected):"
    tail -3 "$out"
    # Errors, not wrong data: the program saw a failing call.
    [ "$connected" = yes ] && [ "$rc" -ne 0 ] && ! grep -q '^PASS' "$out"
    ;;
ring-writes)
    # Writes through a 2 MiB area (rings of about 1 MiB) in 512 KiB
    # pieces: held back by a user event another thread sets, then, with
    # `staged` (the proxy's CRANE_PROXY_PIN_RING=0), staged by the proxy
    # through its pinned buffers, or, with `pinned`, copied by the device
    # straight from the area, which the proxy pinned (proxy-domain/
    # ringpin.h); every byte checked, and the proxy's log must show the
    # path taken.
    mode=${2:-staged}
    case $mode in
    staged) pin=0 want='writes stage through' ;;
    pinned) pin=1 want='pinned for the device' ;;  # and reads: below
    *) echo "ring-writes: staged or pinned, not $mode" >&2; exit 2 ;;
    esac
    CRANE_PROXY_PIN_RING=$pin start_proxy --log-level debug || exit 1
    CRANE_SHM_MB=2 CRANE_BACKEND="remote:unix:$SOCK" "$RUN" \
        "$B/tests/integration/ring_writes" || exit 1
    grep -q 'bulk bytes through 2 MiB of shared memory' "$TMP/proxy.log" &&
        grep -q "$want" "$TMP/proxy.log" ||
        { echo "the proxy's log does not show '$want':";
          tail -5 "$TMP/proxy.log"; exit 1; }
    [ "$mode" = staged ] ||
        grep -q 'went straight into the pinned ring (0)' "$TMP/proxy.log" ||
        { echo "no read went straight into the pinned ring"; exit 1; }
    ;;
pin-cap)
    # CRANE_PROXY_MAX_PINNED_MB=1: the client's 2 MiB area (and its host
    # region) are over the cap, so the proxy leaves them unpinned and
    # stages; the writes and reads still land, every byte checked.
    CRANE_PROXY_MAX_PINNED_MB=1 start_proxy --log-level debug || exit 1
    CRANE_SHM_MB=2 CRANE_BACKEND="remote:unix:$SOCK" "$RUN" \
        "$B/tests/integration/ring_writes" || exit 1
    grep -q 'not pinned: .* CRANE_PROXY_MAX_PINNED_MB allows 1048576' \
        "$TMP/proxy.log" && ! grep -q 'pinned for the device' \
        "$TMP/proxy.log" ||
        { echo "the proxy pinned over its cap:"; grep -i pinned \
          "$TMP/proxy.log" | tail -5; exit 1; }
    ;;
warm-spares)
    # CRANE_PROXY_WARM_SPARES=1: each spare context builds and runs a
    # kernel once before it is offered (on GPUs by default); a program
    # then computes on one.  The one it took is replaced only after
    # CRANE_PROXY_SPARE_DELAY_MS (making one would hold the vendor while
    # the program moves its bytes): never within a 600 s delay, and soon
    # with none.  One proxy process (--isolation none), so one pool.
    for delay in 600000 0; do
        [ -n "$PROXY_PID" ] && kill "$PROXY_PID" && wait "$PROXY_PID"
        CRANE_PROXY_WARM_SPARES=1 CRANE_PROXY_SPARE_DELAY_MS=$delay \
            start_proxy --log-level debug --isolation none || exit 1
        CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$2" || exit 1
        want=$([ "$delay" = 0 ] && echo 2 || echo 1)
        warmed() {
            n=$(grep -c 'spare context warmed' "$TMP/proxy.log")
            [ "$n" -ge "$want" ]
        }
        wait_until -q 60 -t "$PROXY_PID" -f "$TMP/proxy.log" \
            -n "spares warmed" -- warmed
        [ "$n" = "$want" ] ||
            { echo "delay $delay: $n spare(s) warmed, want $want:";
              tail -5 "$TMP/proxy.log"; exit 1; }
    done
    ;;
proxy-frozen)
    # The proxy stops (SIGSTOP) under a program whose calls poll for their
    # answers (CRANE_REMOTE_SPIN_US) and read them themselves: the
    # watchdog must end the connection and the calls fail, never hang.
    start_proxy || exit 1
    out=$TMP/out
    CRANE_PROXY_TIMEOUT_MS=1500 CRANE_PROXY_KEEPALIVE_MS=300 \
        CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$B/tests/programs/longrun" \
        1000000 >"$out" 2>&1 &
    prog=$!
    connected=$(wait_connected "$prog")
    sleep 0.3
    # The supervisor and its workers (the tenant's among them).
    pids="$PROXY_PID $(pgrep -P "$PROXY_PID")"
    kill -STOP $pids
    wait "$prog"
    rc=$?
    kill -CONT $pids
    echo "program exit $rc (connected before the stop: $connected):"
    tail -3 "$out"
    [ "$connected" = yes ] && [ "$rc" -ne 0 ] && ! grep -q '^PASS' "$out" &&
        grep -q 'showed no sign of life' "$out"
    ;;
shm-file)
    shift
    mkdir "$TMP/shm"
    # The host side's backing file: made and sized by its owner (libvirt,
    # for an ivshmem-plain device), here 16 MiB.
    truncate -s 16M "$TMP/shm/area"
    "$PROXY" --listen tcp:127.0.0.1:0 --shm-dir "$TMP/shm" \
        >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    PORT=
    wait_until -q 20 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy on TCP" \
        -- proxy_port || { echo "crane-proxy did not start:"; cat "$TMP/proxy.log"; exit 1; }
    CRANE_BACKEND="remote:tcp:127.0.0.1:$PORT" CRANE_SHM_FILE="$TMP/shm/area" \
        CRANE_SHM_MB=14 "$RUN" "$@" || exit 1
    grep 'shared memory' "$TMP/proxy.log"
    grep -q 'bulk bytes through' "$TMP/proxy.log"
    ;;
proxy-killed-bulk)
    start_proxy || exit 1
    out=$TMP/out
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$B/tests/integration/bulk_loop" \
        100000 >"$out" 2>&1 &
    prog=$!
    # Kill the proxy once rounds are going through it (and, on the shared
    # path, through its area); a program that never got there tests nothing.
    going=no
    wait_until -q 60 -p "$prog" -t "$PROXY_PID" -f "$out" -e "$prog" \
        -n "round 2" -- grep -q '^round 2 ok' "$out" && going=yes
    kill -9 "$PROXY_PID"
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
    wait "$prog"
    rc=$?
    shm=no
    grep -q 'bulk bytes through' "$TMP/proxy.log" && shm=yes
    echo "program exit $rc (rounds going before the kill: $going," \
        "shared memory: $shm):"
    tail -3 "$out"
    want_shm=yes
    [ "${CRANE_SHM_MB:-64}" = 0 ] && want_shm=no
    [ "$going" = yes ] && [ "$shm" = "$want_shm" ] && [ "$rc" -eq 1 ] &&
        grep -q '^FAIL bulk_loop: round' "$out" &&
        ! grep -q '^WRONG\|^PASS' "$out"
    ;;
tls)
    shift
    tests/tls/mkpki.sh "$TMP/pki" crane || exit 1
    tests/tls/mkpki.sh "$TMP/other" stranger || exit 1
    cp "$TMP/pki/CA/cacert.pem" "$TMP/other/CA/cacert.pem"
    head -c 32 /dev/urandom >"$TMP/key"
    head -c 32 /dev/urandom >"$TMP/wrong"
    # Starts a proxy on a free TCP port with OPTIONS; PORT is where.
    start_tcp() {
        "$PROXY" --listen tcp:127.0.0.1:0 "$@" >"$TMP/proxy.log" 2>&1 &
        PROXY_PID=$!
        PORT=
        wait_until -q 20 -p "$PROXY_PID" -e "$PROXY_PID" \
            -n "crane-proxy on TCP" -- proxy_port && return 0
        echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
        return 1
    }
    stop_proxy() {
        kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
        PROXY_PID=
    }
    # run NAME WANT ENV...: the program with ENV must pass (WANT=pass)
    # or fail (WANT=refused), the proxy's log then naming the refusal.
    fails=0
    run() {
        local name=$1 want=$2 rc before
        shift 2
        before=$(grep -c 'refused: .*TLS' "$TMP/proxy.log")
        env CRANE_BACKEND="remote:tcp:127.0.0.1:$PORT" "$@" \
            "$RUN" "${PROG[@]}" >"$TMP/out" 2>&1
        rc=$?
        if [ "$want" = pass ] && [ $rc -eq 0 ] && grep -q '^PASS' "$TMP/out"
        then
            echo "ok - $name: passed"
        elif [ "$want" = refused ] && [ $rc -ne 0 ] &&
            ! grep -q '^PASS' "$TMP/out" &&
            [ "$(grep -c 'tcp connection from 127.0.0.1 refused: .*TLS' \
                "$TMP/proxy.log")" -gt "$before" ]; then
            echo "ok - $name: refused: $(grep -o 'refused: .*TLS.*' \
                "$TMP/proxy.log" | tail -1)"
        else
            echo "not ok - $name (exit $rc, wanted $want):"
            tail -n 5 "$TMP/out" "$TMP/proxy.log"
            fails=$((fails + 1))
        fi
    }
    PROG=("$@")
    start_tcp --tls x509 --pki-dir "$TMP/pki" || exit 1
    grep -q 'TLS x509' "$TMP/proxy.log" || { echo "no TLS x509"; exit 1; }
    run x509 pass CRANE_TLS=x509 CRANE_PKI_DIR="$TMP/pki"
    run x509-other-ca refused CRANE_TLS=x509 CRANE_PKI_DIR="$TMP/other"
    run plain-client refused CRANE_TLS=none
    stop_proxy
    # auto with a key and no PKI is psk (a PKI dir that does not exist, so
    # that a machine's own /etc/pki changes nothing here).
    start_tcp --auth-key "$TMP/key" --pki-dir "$TMP/none" || exit 1
    grep -q 'TLS psk' "$TMP/proxy.log" || { echo "no TLS psk"; exit 1; }
    run psk pass CRANE_AUTH_KEY="$TMP/key" CRANE_PKI_DIR="$TMP/none"
    run psk-wrong-key refused CRANE_TLS=psk CRANE_AUTH_KEY="$TMP/wrong"
    stop_proxy
    [ $fails -eq 0 ]
    ;;
*)
    sed -n '2,18p' "$0"
    exit 2
    ;;
esac
