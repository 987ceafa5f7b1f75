#!/bin/bash
# Kernels longer than every timeout (tests/programs/longkernel), with the
# timeouts made small: CRANE_PROXY_TIMEOUT_MS=2000 and kernels of 12 s (a
# margin of 3x over the 4 s a case needs, for calibrations on a busy machine).
#
#   longkernel.sh remote        remoted from the start: the proxy's
#       heartbeats keep the connection through the kernel; it passes
#   longkernel.sh switch-out    switched to the proxy while the kernel runs
#       natively: the switch waits for it, then moves; it passes
#   longkernel.sh switch-back   switched back while the kernel runs on the
#       proxy: the same
#   longkernel.sh frozen        the proxy frozen (SIGSTOP) while its kernel
#       runs: the shim says its heartbeats stopped and the program fails
#       within the timeout, never hangs, never passes
#   longkernel.sh prepare-refused  cranectl prepare --live meets the
#       kernel: cranectl status shows "waiting for a kernel running for N
#       s"; past CRANE_SWITCH_KERNEL_WAIT_MS=3000 the prepare is refused
#       with that reason, the program stays in passthrough and passes
#   longkernel.sh hostd-refused  the same through crane-hostd (libvirt's
#       test driver, the VM's channel this crane-guestd's host socket) and
#       crane-migrate: its lines show "pid N (longkernel): waiting for a
#       kernel running for N s", a kernel-wait step, and its exit message
#       the refusal's reason
#   longkernel.sh hostd-serial   the same with the VM's channel a relay that
#       takes one client at a time, as QEMU's socket behind a virtio-serial
#       port: the wait is seen all the same (crane-guestd's progress on the
#       prepare's own connection)
#   longkernel.sh never-answers a "proxy" that accepts connections and
#       never answers: the prepare is refused naming it as such
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/programs/longkernel
GUESTD=$B/bin/crane-guestd
CTL=$B/bin/cranectl
export CRANE_PROXY_TIMEOUT_MS=2000 CRANE_PROXY_KEEPALIVE_MS=500
KERNEL_S=12
# The most a case may take; beyond it the case fails as a hang.
BOUND=120

T=$(mktemp -d /tmp/crane-longkernel.XXXXXX)
PIDS=
cleanup() {
    for p in $PIDS; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

die() {
    echo "FAIL: $*"
    for f in "$T"/*.log "$T"/*.out; do
        [ -e "$f" ] && { echo "--- $f"; tail -12 "$f"; }
    done
    exit 1
}

# waitfor SECONDS CMD...: until CMD succeeds, at most SECONDS.
waitfor() {
    local until=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.1; done
    return 1
}

start_proxy() {
    "$PROXY" --listen "unix:$T/proxy.sock" >"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    PIDS="$PIDS $PROXY_PID"
    waitfor 20 test -S "$T/proxy.sock" || die "crane-proxy did not start"
}

# A program, under crane-run with ENV..., in the background: PROG_PID.
start_prog() {  # start_prog MODE ENV...
    local mode=$1
    shift
    env CRANE_LOG_LEVEL=info "$@" timeout -s KILL $BOUND "$RUN" "$PROG" \
        $KERNEL_S "$mode" >"$T/prog.out" 2>&1 &
    PROG_PID=$!
    PIDS="$PIDS $PROG_PID"
}

finish_prog() {  # sets RC
    wait "$PROG_PID"
    RC=$?
    [ $RC -eq 137 ] && die "the program hung past $BOUND s"
    grep -E '^(PASS|FAIL|SKIP)|longkernel:' "$T/prog.out"
}

# The long kernel ran longer than the proxy timeout: the case tested it.
expect_long() {
    local ran
    ran=$(sed -n 's/.*the long kernel .* ran \([0-9.]*\) s/\1/p' \
        "$T/prog.out")
    [ -n "$ran" ] || die "no long kernel ran"
    awk -v r="$ran" -v t="$CRANE_PROXY_TIMEOUT_MS" \
        'BEGIN { exit !(r * 1000 > 2 * t) }' ||
        die "the kernel ran $ran s: not past twice the timeout"
}

expect_pass() {
    [ $RC -eq 0 ] && grep -q '^PASS longkernel' "$T/prog.out" ||
        die "the program did not pass (exit $RC)"
}

kernel_runs() { grep -q 'the long kernel runs' "$T/prog.out"; }

start_guestd() {  # start_guestd PROXY_ENDPOINT
    mkdir -p "$T/mods/dev"
    touch "$T/mods/fakegpu.loaded" "$T/mods/dev/fakegpu0"
    cat >"$T/guestd.conf" <<EOF
listen = $T/guest.sock
host = unix:$T/host.sock
control = unix:$T/ctl.sock
state_file = $T/guestd.state
modprobe = $PWD/tests/guest/fake-modprobe.sh
modules = fakegpu
gpu_device = $T/mods/dev/fakegpu0
gpu_type = all
proxy = $1
prepare_deadline_ms = 10000
abort_deadline_ms = 10000
gpu_wait_ms = 8000
reconnect_grace_ms = 2000
log_level = debug
EOF
    CRANE_FAKE_MODULES=$T/mods "$GUESTD" --config "$T/guestd.conf" \
        >>"$T/guestd.log" 2>&1 &
    PIDS="$PIDS $!"
    waitfor 20 test -S "$T/ctl.sock" -a -S "$T/guest.sock" ||
        die "crane-guestd did not start"
}

ctl() { timeout -s KILL 60 "$CTL" --connect "unix:$T/ctl.sock" \
    --timeout 30 "$@"; }
registered() { [ "$(ctl status 2>/dev/null | grep -c '^program ')" -ge 1 ]; }
mode() { ctl status | awk '$1 == "program" { print $4 }'; }

# A prepare while the kernel runs natively: DIE_WHY names what the reason
# must say.
prepare_during_kernel() {  # prepare_during_kernel REASON_REGEX
    start_prog finish CRANE_SOCKET="$T/guest.sock" \
        CRANE_SWITCH_KERNEL_WAIT_MS=3000
    waitfor 60 registered || die "the program never registered"
    waitfor 60 kernel_runs || die "the long kernel never started"
    ctl prepare --live >"$T/prepare.out" 2>&1 &
    local ctl_pid=$!
    PIDS="$PIDS $ctl_pid"
    echo "$1" | grep -q kernel &&
        { waitfor 20 sh -c "'$CTL' --connect unix:$T/ctl.sock status |
            grep -q 'waiting for a kernel running for [0-9]* s'" ||
            die "cranectl status never showed the wait";
          "$CTL" --connect "unix:$T/ctl.sock" status | grep waiting; }
    wait $ctl_pid && die "prepare succeeded"
    cat "$T/prepare.out"
    grep -Eq "$1" "$T/prepare.out" || die "prepare does not say '$1'"
    grep -q 'still running at the timeout' "$T/prepare.out" &&
        die "the wrong reason"
    [ "$(mode)" = passthrough ] || die "status says $(mode), not passthrough"
    finish_prog
    expect_pass
}

# The same through crane-hostd and crane-migrate: a VM of libvirt's test
# driver whose guest channel is CHANNEL (crane-guestd's host socket, or a
# relay in front of it).
hostd_prepare() {  # hostd_prepare CHANNEL
    HOSTD=$B/bin/crane-hostd
    MIGRATE=$B/bin/crane-migrate
    [ -x "$HOSTD" ] && [ -x "$MIGRATE" ] ||
        { echo "skip: crane-hostd not built"; exit 77; }
    start_proxy
    start_guestd "unix:$T/proxy.sock"
    rng="<rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-gpu0'/></rng>"
    echo "$rng" >"$T/gpu0.xml"
    # A second, free GPU: the destination (this same crane-hostd) must
    # have one for the VM's, or the check refuses before the prepare.
    echo "${rng/ua-gpu0/ua-gpu1}" >"$T/gpu1.xml"
    cat >"$T/node.xml" <<XML
<node><domain type='test'><name>vm</name><memory>65536</memory>
<os><type>hvm</type></os><devices>$rng
<channel type='unix'><source mode='bind' path='$1'/><target type='virtio' name='org.crane.guest.0'/></channel>
</devices></domain></node>
XML
    head -c 32 /dev/urandom >"$T/peer.key"
    port=$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$HOSTD" --uri "test://$T/node.xml" --control "unix:$T/c.sock" \
        --peer-listen "tcp:127.0.0.1:$port" --peer-key "$T/peer.key" \
        --tls none --http none --history "$T/h.db" --host-name host-a \
        --gpu "gpu0 xml:$T/gpu0.xml" --gpu "gpu1 xml:$T/gpu1.xml" \
        >"$T/hostd.log" 2>&1 &
    PIDS="$PIDS $!"
    waitfor 20 test -S "$T/c.sock" || die "crane-hostd did not start"
    # 5 s: the shim says the wait after one, crane-guestd passes it on
    # every second; a kernel of 16 s outlasts it.
    KERNEL_S=16
    start_prog finish CRANE_SOCKET="$T/guest.sock" \
        CRANE_SWITCH_KERNEL_WAIT_MS=5000
    waitfor 60 registered || die "the program never registered"
    waitfor 60 kernel_runs || die "the long kernel never started"
    timeout -s KILL 90 "$MIGRATE" --verbose --connect "unix:$T/c.sock" \
        --peer "tcp:127.0.0.1:$port" vm test:///default \
        >"$T/migrate.out" 2>"$T/migrate.err"
    rc=$?
    cat "$T/migrate.out" "$T/migrate.err"
    [ $rc -eq 1 ] || die "crane-migrate exit $rc, expected 1 (rolled back)"
    grep -Eq 'pid [0-9]+ \(longkernel\): waiting for a kernel running for [0-9]+ s' \
        "$T/migrate.out" || die "crane-migrate showed no wait"
    grep -Eq 'waited [0-9]+ s for a kernel running for [0-9]+ s \(CRANE_SWITCH_KERNEL_WAIT_MS' \
        "$T/migrate.err" || die "crane-migrate's exit message has no reason"
    grep -q '^step    kernel-wait' "$T/migrate.out" ||
        die "no kernel-wait step"
    [ "$(mode)" = passthrough ] || die "status says $(mode), not passthrough"
    finish_prog
    expect_pass
}

case "${1:-}" in
remote)
    start_proxy
    start_prog finish CRANE_BACKEND="remote:unix:$T/proxy.sock"
    finish_prog
    expect_pass
    expect_long
    grep -q 'still executing a .* heartbeats keep the connection' \
        "$T/prog.out" || die "no heartbeat was heard"
    ;;
switch-out | switch-back)
    start_proxy
    mode=rehome
    [ "$1" = switch-back ] && mode=rehome-back
    start_prog $mode CRANE_PROXY="unix:$T/proxy.sock" \
        CRANE_REHOME_TO=alternate
    finish_prog
    expect_pass
    expect_long
    n=$(grep -c 'crane_rehome returned 0' "$T/prog.out")
    want=1
    [ "$1" = switch-back ] && want=2
    [ "$n" -eq $want ] || die "$n switch(es) done, want $want"
    grep -q 'waiting for a kernel running for' "$T/prog.out" ||
        die "the switch did not wait for the kernel"
    ;;
frozen)
    start_proxy
    start_prog finish CRANE_BACKEND="remote:unix:$T/proxy.sock"
    waitfor 60 kernel_runs || die "the long kernel never started"
    waitfor 20 grep -q 'heartbeats keep the connection' "$T/prog.out" ||
        die "no heartbeat was heard"
    pids="$PROXY_PID $(pgrep -P "$PROXY_PID")"
    kill -STOP $pids
    finish_prog
    kill -CONT $pids
    [ $RC -ne 0 ] && ! grep -q '^PASS' "$T/prog.out" ||
        die "the program passed over a frozen proxy"
    grep -q 'its heartbeats stopped' "$T/prog.out" ||
        die "the shim does not say the heartbeats stopped"
    ;;
prepare-refused)
    start_proxy
    start_guestd "unix:$T/proxy.sock"
    prepare_during_kernel \
        'waited [0-9]+ s for a kernel running for [0-9]+ s \(CRANE_SWITCH_KERNEL_WAIT_MS'
    ;;
hostd-refused) hostd_prepare "$T/host.sock" ;;
hostd-serial)
    # One client at a time, the next accepted once it hung up (QEMU's
    # chardev socket): each accept logged.
    python3 -c '
import os, select, socket, sys
lis = socket.socket(socket.AF_UNIX)
lis.bind(sys.argv[1] + ".tmp"); lis.listen(16)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
log = open(sys.argv[3], "a", buffering=1)
n = 0
while True:
    c, _ = lis.accept(); n += 1
    g = socket.socket(socket.AF_UNIX)
    try:
        g.connect(sys.argv[2])
    except OSError:
        c.close(); continue
    log.write("client %d\n" % n)
    up = True
    while up:
        for s in select.select([c, g], [], [])[0]:
            data = s.recv(65536)
            if not data:
                up = False
                break
            (g if s is c else c).sendall(data)
    c.close(); g.close()
    log.write("gone %d\n" % n)
' "$T/chan.sock" "$T/host.sock" "$T/relay.log" &
    PIDS="$PIDS $!"
    waitfor 20 test -S "$T/chan.sock" || die "the relay did not start"
    hostd_prepare "$T/chan.sock"
    grep -q '^client 1$' "$T/relay.log" || die "nothing came through the relay"
    ;;
never-answers)
    # Accepts, reads, never writes a byte.
    python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
held = []
while True:
    c, _ = s.accept(); held.append(c)
' "$T/mute.sock" &
    PIDS="$PIDS $!"
    waitfor 20 test -S "$T/mute.sock" || die "the mute listener did not start"
    start_guestd "unix:$T/mute.sock"
    start_prog finish CRANE_SOCKET="$T/guest.sock"
    waitfor 60 registered || die "the program never registered"
    ctl prepare --live >"$T/prepare.out" 2>&1 && die "prepare succeeded"
    cat "$T/prepare.out"
    grep -q 'accepted the connection but never answered its handshake' \
        "$T/prepare.out" || die "prepare does not name the mute proxy"
    grep -q 'still running at the timeout' "$T/prepare.out" &&
        die "the wrong reason"
    finish_prog
    expect_pass
    ;;
*) sed -n '2,28p' "$0"; exit 2 ;;
esac
echo "PASS $1"
