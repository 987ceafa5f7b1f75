#!/bin/bash
# crane-guestd tests: the daemon driven by cranectl over a unix host channel,
# with real OpenCL programs under crane-run, a real crane-proxy, a fake
# modprobe (tests/guest/fake-modprobe.sh) and fake shims for the programs
# that misbehave on purpose (build/tests/guest/fake_shim).
#
#   guestd.sh --list     the cases
#   guestd.sh CASE       runs one; exit 0 pass, 1 fail
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
GUESTD=${GUESTD:-$B/bin/crane-guestd}  # may be a sanitizer build
CTL=$B/bin/cranectl
PROXY=$B/bin/crane-proxy
WORKER=$B/tests/guest/cl_worker
FAKE=$B/tests/guest/fake_shim
CASES="several-live offline exit-mid-prepare never-answers
never-answers-holding-gpu unregistered-gpu-user status-switching idle-flood
register-timeout program-bound socket-perms host-auth host-tls host-idle module-busy
module-busy-second gpu-wait gpu-none gpu-none-two daemon-restart daemon-restart-offline
daemon-restart-mid-prepare daemon-restart-full-disk abort-mid-prepare churn churn-return
bad-host-input bad-shim-input port no-daemon cli shm start-live start-offline
start-wait-bound lost-proxy-killed lost-mid-resume silent-since
icd-linked icd-dlopen icd-python icd-disable"

case "${1:-}" in
--list) echo $CASES; exit 0 ;;
"" | -h | --help) sed -n '2,8p' "$0"; exit 2 ;;
esac

T=$(mktemp -d /tmp/crane-guestd-test.XXXXXX)
PIDS=()
GD_PID=

cleanup() {
    touch "$T/stop"
    for p in "${PIDS[@]}" $GD_PID; do
        kill "$p" 2>/dev/null
    done
    sleep 0.2
    for p in "${PIDS[@]}" $GD_PID; do
        kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    [ -n "${DISK_MOUNT:-}" ] && umount "$DISK_MOUNT"
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

. tests/wait.sh
# until_ QUIET COND...: tests/wait.sh's wait_until COND; what moves is the
# daemon, every program, fake shim and proxy the case started, and its
# folder; gives up after QUIET s in which none moved (or 10 x QUIET).
until_() {
    local q=$1 p args=()
    shift
    for p in "${PIDS[@]}" $GD_PID; do args+=(-t "$p"); done
    wait_until -q "$q" "${args[@]}" -f "$T" -n "$*" -- "$@"
}

die() { echo "FAIL: $*"; dump; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
dump() {
    echo "--- crane-guestd log (last 40 lines)"
    tail -40 "$T/guestd.log" 2>/dev/null
    for f in "$T"/w*.out; do [ -e "$f" ] && { echo "--- $f"; cat "$f"; }; done
}

daemon_sockets() { [ -S "$T/ctl.sock" ] && [ -S "$T/guest.sock" ]; }

# Writes the config (extra lines from the arguments) and starts the daemon.
start_daemon() {
    mkdir -p "$T/mods/dev"
    if [ ! -e "$T/guestd.conf" ]; then
        cat >"$T/guestd.conf" <<EOF
listen = $T/guest.sock
host = unix:$T/host.sock
control = unix:$T/ctl.sock
state_file = $T/guestd.state
modprobe = $PWD/tests/guest/fake-modprobe.sh
modules = ${MODULES:-fakegpu}
gpu_device = $T/mods/dev/fakegpu0
gpu_type = all
proxy = unix:$T/proxy.sock
prepare_deadline_ms = 20000
abort_deadline_ms = 10000
gpu_wait_ms = 20000
reconnect_grace_ms = 5000
log_level = debug
EOF
        for line in "$@"; do echo "$line" >>"$T/guestd.conf"; done
        for m in ${MODULES:-fakegpu}; do
            touch "$T/mods/$m.loaded" "$T/mods/dev/${m}0"
        done
    fi
    CRANE_FAKE_MODULES=$T/mods "$GUESTD" --config "$T/guestd.conf" \
        >>"$T/guestd.log" 2>&1 &
    GD_PID=$!
    wait_until -q 10 -p "$GD_PID" -e "$GD_PID" -n "crane-guestd listens" \
        -- daemon_sockets && return 0
    die "crane-guestd did not start"
}

start_proxy() {
    "$PROXY" --listen "unix:$T/proxy.sock" >"$T/proxy.log" 2>&1 &
    PIDS+=($!)
    wait_until -q 10 -p "$!" -e "$!" -n "crane-proxy listens" \
        -- test -S "$T/proxy.sock" && return 0
    die "crane-proxy did not start"
}

ctl() { "$CTL" --connect "unix:$T/ctl.sock" --timeout 120 "$@"; }

# worker N: a cl_worker under the shim, registered with the daemon.
worker() {
    local n=$1
    CRANE_START_WAIT_MS=${START_WAIT_MS:-300000} CRANE_SOCKET=$T/guest.sock CRANE_LOG_LEVEL=info \
        CRANE_LOG_FILE=$T/shim$n.log "$RUN" "$WORKER" --stop-file "$T/stop" \
        --progress "$T/progress$n" --seconds 240 >"$T/w$n.out" 2>&1 &
    PIDS+=($!)
    eval "W$n=$!"
}

fake() {  # fake NAME BEHAVIOUR [DELAY_MS]: a fake shim
    "$FAKE" "$T/guest.sock" "$@" >"$T/fake-$1.out" 2>&1 &
    PIDS+=($!)
    eval "F_$1=$!"
}

# Waits until status lists N programs (and each cl_worker has progressed).
registered() { [ "$(ctl status 2>/dev/null | grep -c '^program ')" -ge "$1" ]; }
wait_programs() {
    local n=$1
    until_ 30 registered "$n" && return 0
    ctl status
    die "fewer than $n programs registered"
}

iterations() { cut -d' ' -f1 "$T/progress$1" 2>/dev/null || echo 0; }

# Waits until worker N has computed more than it had.
beyond() { [ "$(iterations "$1")" -gt "$2" ]; }
advances() {
    until_ 5 beyond "$1" "$(iterations "$1")"
}

# mode_of NAME: the mode status reports for the program NAME.
modes() { ctl status | awk '$1 == "program" { print $3, $4 }'; }

all_in() {  # all_in MODE: every listed program is in MODE
    local m
    m=$(modes)
    echo "$m" | grep -q . || return 1
    ! echo "$m" | awk -v want="$1" '$2 != want { bad = 1 } END { exit !bad }'
}

# Stops the workers and checks each verified every byte.
finish_workers() {
    local w
    touch "$T/stop"
    for w in "$@"; do
        until_ 30 grep -qs '^PASS\|^FAIL' "$T/w$w.out"
        grep -q '^PASS cl_worker' "$T/w$w.out" || die "worker $w did not pass"
        cat "$T/w$w.out"
    done
}

expect_ok() {  # expect_ok CMD...: cranectl command that must succeed
    local out
    out=$(ctl "$@") || { echo "$out"; die "cranectl $* failed"; }
    echo "$out"
}

expect_fail() {  # expect_fail PATTERN CMD...: must fail, output has PATTERN
    local pat=$1 out
    shift
    out=$(ctl "$@") && { echo "$out"; die "cranectl $* succeeded"; }
    echo "$out"
    echo "$out" | grep -q -- "$pat" || die "cranectl $*: no '$pat'"
}

# --- cases -------------------------------------------------------------------

# Three programs at once: live prepare onto the proxy (they keep computing
# through it), driver unloaded, resume, back to passthrough, every byte
# verified.
case_several_live() {
    start_proxy
    start_daemon
    worker 1; worker 2; worker 3
    wait_programs 3
    advances 1 || die "worker 1 does not compute"
    expect_ok prepare --live
    all_in remoting || die "not every program is remoting"
    grep -q 'modprobe -r fakegpu' "$T/mods/log" || die "module not unloaded"
    [ ! -e "$T/mods/dev/fakegpu0" ] || die "device node still there"
    for w in 1 2 3; do advances $w || die "worker $w stopped while remoting"; done
    ctl status | grep -q '^phase: prepared' || die "phase is not prepared"
    expect_ok resume | tee "$T/resume.out"
    grep -q '^stoppage: max' "$T/resume.out" || die "no stoppage line"
    all_in passthrough || die "not every program is back in passthrough"
    advances 1 || die "worker 1 stopped after resume"
    finish_workers 1 2 3
}

# Stop-and-copy: programs park (state in RAM, calls held), no proxy needed.
case_offline() {
    start_daemon
    worker 1; worker 2
    wait_programs 2
    advances 1 || die "worker 1 does not compute"
    expect_ok prepare --offline
    all_in parked || die "not every program is parked"
    local a b
    sleep 0.3; a=$(iterations 1); sleep 1; b=$(iterations 1)
    echo "parked: iterations $a -> $b"
    [ "$a" = "$b" ] || die "a parked program kept computing"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    advances 1 || die "worker 1 did not resume computing"
    finish_workers 1 2
}

# A program exits in the middle of the prepare: the others migrate.
case_exit_mid_prepare() {
    start_proxy
    start_daemon
    worker 1
    fake leaver exit-on-prepare
    wait_programs 2
    expect_ok prepare | tee "$T/prep.out"
    grep -q 'exited during the operation' "$T/prep.out" ||
        die "the exited program is not reported"
    all_in remoting || die "worker 1 is not remoting"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    finish_workers 1
}

# One program never answers and holds no GPU device: at the deadline it
# alone is left out (status: unresponsive), the others migrate, the driver
# goes; a second prepare does not wait for it again.
case_never_answers() {
    start_proxy
    start_daemon
    worker 1; worker 2
    fake mute silent
    wait_programs 3
    expect_ok prepare --deadline 3000 | tee "$T/prep.out"
    grep -q '^result: ok: 1 program(s) did not answer and hold no GPU device, left out: program mute' \
        "$T/prep.out" || die "the left-out program is not named"
    grep -q '^program .* mute .*unresponsive' "$T/prep.out" ||
        die "mute not reported unresponsive in the answer"
    ctl status | tee "$T/status.out"
    grep -q '^program .* mute .*unresponsive' "$T/status.out" ||
        die "mute not reported unresponsive"
    grep -q 'unresponsive: no answer for .* (prepare pending)' "$T/status.out" ||
        die "no unresponsive detail"
    [ "$(modes | awk '$1 == "cl_worker" && $2 == "remoting"' | wc -l)" \
        -eq 2 ] || die "the workers are not remoting"
    grep -q 'modprobe -r fakegpu' "$T/mods/log" || die "module not unloaded"
    expect_ok resume
    [ "$(modes | awk '$1 == "cl_worker" && $2 == "passthrough"' | wc -l)" \
        -eq 2 ] || die "the workers are not back in passthrough"
    # Still silent on the earlier commands: not waited for this time.
    expect_ok prepare --deadline 60000 | grep -q 'left out: program mute' ||
        die "mute not left out at once"
    expect_ok resume
    advances 1 || die "worker 1 stopped"
    finish_workers 1 2
}

# One program never answers and holds the GPU's device node: the driver
# must not go, so the prepare fails and is undone; the others are back in
# passthrough and the driver never left.
case_never_answers_holding_gpu() {
    start_proxy
    start_daemon
    worker 1; worker 2
    FAKE_SHIM_HOLD=$T/mods/dev/fakegpu0 fake mute silent
    wait_programs 3
    expect_fail 'mute.* holds .*fakegpu0 but did not answer the prepare' \
        prepare --deadline 3000
    ctl status | tee "$T/status.out"
    grep -q '^program .* mute .*unresponsive' "$T/status.out" ||
        die "mute not reported unresponsive"
    [ "$(modes | awk '$1 == "cl_worker" && $2 == "passthrough"' | wc -l)" \
        -eq 2 ] || die "the workers are not back in passthrough"
    ! grep -q 'modprobe -r' "$T/mods/log" 2>/dev/null ||
        die "the module was unloaded"
    grep -q '^phase: idle' "$T/status.out" || die "phase is not idle"
    advances 1 || die "worker 1 stopped"
    finish_workers 1 2
}

# A process holds the GPU's device node but never registered (not under
# the shim): no prepare succeeds while it does; once it is gone, one does.
case_unregistered_gpu_user() {
    start_proxy
    start_daemon
    worker 1
    wait_programs 1
    sleep 600 3<"$T/mods/dev/fakegpu0" &
    local holder=$!
    PIDS+=($holder)
    expect_fail "pid $holder (sleep) holds .*fakegpu0 but is not a registered program" \
        prepare --live
    ! grep -q 'modprobe -r' "$T/mods/log" 2>/dev/null ||
        die "the module was unloaded"
    all_in passthrough || die "worker not back in passthrough"
    kill "$holder"; wait "$holder" 2>/dev/null
    expect_ok prepare --live | grep -q '^step *account for GPU users (0) *ok' ||
        die "no accounting step"
    all_in remoting || die "worker not remoting"
    expect_ok resume
    finish_workers 1
}

# Status tells where a program stands during and after a slow switch:
# "switching" while its command is in flight; "unresponsive" once the
# deadline passed without an answer (not the mode it had before); its
# real mode when its answer comes at last.
case_status_switching() {
    start_daemon
    fake slow ok 2000
    wait_programs 1
    ctl prepare --offline --deadline 30000 >"$T/prep.out" 2>&1 &
    local prep=$!
    shown_switching() { ctl status | grep -q '^program .* slow .*switching'; }
    until_ 5 shown_switching
    ctl status | tee "$T/status.out"
    grep -q '^program .* slow .*switching' "$T/status.out" ||
        die "not shown switching"
    grep -q 'switching: prepare pending for .*; last reported passthrough' \
        "$T/status.out" || die "no switching detail"
    wait $prep || die "the slow prepare failed"
    all_in parked || die "not parked after its answer"
    expect_ok resume
    # Now a deadline shorter than the switch.
    expect_ok prepare --offline --deadline 700 | tee "$T/prep.out"
    grep -q '^program .* slow .*unresponsive' "$T/prep.out" ||
        die "the late program is not reported unresponsive"
    ctl status | grep -q '^program .* slow .*passthrough' &&
        die "status says passthrough while it is still switching"
    until_ 10 all_in parked
    all_in parked || die "the late answer did not update the status"
    expect_ok resume
}

# 2,000 connections that never register: the oldest are evicted at the
# bound (max_programs), a real program still registers, and a prepare
# reports it truthfully (1 program, remoting) and moves it.
case_idle_flood() {
    start_proxy
    start_daemon "register_timeout_ms = 600000"
    python3 - "$T/guest.sock" "$T/flood" "$T/stop" <<'EOF' &
import os, resource, socket, sys, time
path, out, stop = sys.argv[1:4]
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
conns = []
for i in range(2000):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    conns.append(s)
open(out + ".open", "w").write("%d\n" % len(conns))
while not os.path.exists(stop):
    time.sleep(0.1)
closed = 0
for s in conns:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except ConnectionResetError:
        closed += 1
open(out, "w").write("%d\n" % closed)
EOF
    local flood=$!
    PIDS+=($flood)
    until_ 30 test -e "$T/flood.open"
    [ "$(cat "$T/flood.open" 2>/dev/null)" = 2000 ] ||
        die "the 2,000 connections were not all accepted"
    worker 1
    wait_programs 1
    expect_ok prepare --live | tee "$T/prep.out"
    grep -q '^programs: 1$' "$T/prep.out" || die "not exactly 1 program"
    grep -q '^program .* cl_worker .*remoting' "$T/prep.out" ||
        die "the worker is not remoting"
    grep -q 'evicting' "$T/guestd.log" || die "no eviction logged"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    finish_workers 1
    wait $flood
    echo "idle connections closed by the daemon: $(cat "$T/flood")"
    [ "$(cat "$T/flood")" -ge 977 ] || die "fewer than 977 evicted"
}

# A connection that says nothing is closed after register_timeout_ms; a
# registered program is not.
case_register_timeout() {
    start_daemon "register_timeout_ms = 1000"
    fake calm ok
    python3 - "$T/guest.sock" <<'EOF' || die "the idle connection stayed open"
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)
assert s.recv(1) == b"", "data from the daemon"
print("idle connection closed by the daemon")
EOF
    grep -q 'no Register within register_timeout_ms' "$T/guestd.log" ||
        die "no timeout logged"
    wait_programs 1
    ctl status | grep -q '^program .* calm .*passthrough' ||
        die "the registered program was closed"
}

# The shims' socket: mode 0660, owned by program_group; a user outside
# the group cannot connect, a member can.  A group that does not exist
# keeps the daemon's group, with a warning.
case_socket_perms() {
    [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null ||
        skip "needs root and setpriv (a socket given to another group, users switched)"
    start_daemon "program_group = daemon"
    "$GUESTD" --config "$T/guestd.conf" --check-config |
        grep -q '^listen_mode = 0660$' || die "listen_mode is not 0660"
    [ "$(stat -c '%a %G' "$T/guest.sock")" = "660 daemon" ] ||
        die "socket is $(stat -c '%a %G' "$T/guest.sock")"
    chmod 755 "$T"
    setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - \
        "$T/guest.sock" <<'EOF' || die "a user outside the group connected"
import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1])
except PermissionError:
    print("outside the group: permission denied"); sys.exit(0)
sys.exit(1)
EOF
    setpriv --reuid=nobody --regid=nogroup --groups=daemon /usr/bin/python3 - \
        "$T/guest.sock" <<'EOF' || die "a member of the group could not connect"
import socket, sys
socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("member: connected")
EOF
    kill "$GD_PID"; wait "$GD_PID" 2>/dev/null
    echo "program_group = crane-no-such-group" >>"$T/guestd.conf"
    start_daemon
    grep -q 'program_group crane-no-such-group: no such group' \
        "$T/guestd.log" || die "no warning for a missing group"
    [ "$(stat -c '%a %g' "$T/guest.sock")" = "660 $(id -g)" ] ||
        die "socket is $(stat -c '%a %g' "$T/guest.sock")"
}

# At max_programs: registered programs that answer are never evicted (a
# newcomer is refused); one that stopped answering makes room for a new
# program.
case_program_bound() {
    start_daemon "max_programs = 3"
    fake a ok; fake b ok; fake c ok
    wait_programs 3
    fake d ok
    until_ 5 grep -q 'refusing a connection' "$T/guestd.log"
    grep -q 'refusing a connection' "$T/guestd.log" || die "no refusal"
    ctl status | tee "$T/status.out"
    for f in a b c; do
        grep -q "^program .* $f .*passthrough" "$T/status.out" ||
            die "registered program $f lost"
    done
    grep -q '^program .* d ' "$T/status.out" && die "over the bound"
    kill "$F_a" "$F_d"
    two_left() { [ "$(ctl status | grep -c '^program ')" -eq 2 ]; }
    until_ 5 two_left     # a's place is free once the daemon saw it go
    fake mute silent
    wait_programs 3
    mute_unresponsive() {
        ctl status | grep -q '^program .* mute .*unresponsive'; }
    until_ 10 mute_unresponsive
    ctl status | grep -q '^program .* mute .*unresponsive' ||
        die "a silent program is not shown unresponsive"
    fake e ok
    e_registered() { ctl status | grep -q '^program .* e .*passthrough'; }
    until_ 10 e_registered
    ctl status | tee "$T/status.out"
    grep -q '^program .* e .*passthrough' "$T/status.out" ||
        die "no room made for a new program"
    grep -q '^program .* mute ' "$T/status.out" &&
        die "the silent program was kept over an answering one"
    grep -q 'evicting program mute' "$T/guestd.log" || die "no eviction logged"
}

# Programs start and exit all the time, some in the middle of a switch,
# while prepares and resumes follow each other: every program still
# verifies every byte and exits 0, and the daemon serves on.  With
# "return" (churn-return) each program returns from main instead of
# calling exit(), and each must have left through the shim's exit hold
# (shim/exit_hold.c, its debug line).
case_churn() {
    local how=${1:-} level=${CRANE_LOG_LEVEL:-}
    [ -n "$how" ] && level=debug
    start_proxy
    start_daemon
    (
        for i in $(seq 10); do
            CRANE_SOCKET=$T/guest.sock \
                CRANE_LOG_LEVEL=$level \
                "$RUN" "$B/tests/programs/longrun" 150 $how \
                >"$T/churn.$i" 2>&1
            echo "exit $?" >>"$T/churn.$i"
        done
    ) &
    local loop=$!
    PIDS+=($loop)
    while kill -0 $loop 2>/dev/null; do
        ctl prepare --deadline 3000 >/dev/null 2>&1
        ctl resume >/dev/null 2>&1
    done
    wait $loop
    cat "$T"/churn.* | sort | uniq -c
    [ "$(cat "$T"/churn.* | grep -c '^PASS longrun')" -eq 10 ] ||
        die "a program failed"
    [ "$(cat "$T"/churn.* | grep -c '^exit 0')" -eq 10 ] ||
        die "a program exited non-zero"
    if [ -n "$how" ]; then
        [ "$(cat "$T"/churn.* |
             grep -c 'exit: main returned 0: out through the switches')" \
            -eq 10 ] || die "a return from main missed the exit hold"
    fi
    local switched
    # Onto the proxy by a prepare, or from the first call by a start
    # during one (docs/guest.md, "Programs that start during a migration").
    switched=$(grep -c 'longrun.*: prepare done\|longrun.*: started during .* to the proxy' \
        "$T/guestd.log")
    echo "switches to the proxy: $switched"
    [ "$switched" -ge 3 ] || die "too few programs were switched"
    expect_ok status
}

# Shims that break the protocol are cut off; the daemon serves on.
case_bad_shim_input() {
    start_daemon
    worker 1
    fake junk garbage
    fake early no-register
    python3 - "$T/guest.sock" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(struct.pack(">I", 1 << 30))      # a frame of 1 GiB announced
s.settimeout(5)
print("oversize shim frame: connection", "closed" if s.recv(1) == b"" else "open")
EOF
    both_cut() {
        grep -q 'junk.*closing' "$T/guestd.log" &&
            grep -q 'first message is not a Register' "$T/guestd.log"
    }
    until_ 5 both_cut
    grep 'closing' "$T/guestd.log"
    grep -q 'first message is not a Register' "$T/guestd.log" ||
        die "no-register shim not refused"
    wait_programs 1
    [ "$(ctl status | grep -c '^program ')" -eq 1 ] || die "bad shims listed"
    expect_ok status
    finish_workers 1
}

# No daemon: a program under the shim runs as before and exits at once.
case_no_daemon() {
    local a b t0 t1
    a=$("$B/tests/programs/longrun" 300) || die "native run failed"
    t0=$(date +%s%N)
    b=$(CRANE_SOCKET=$T/nobody.sock CRANE_LOG_LEVEL=warn "$RUN" \
        "$B/tests/programs/longrun" 300 2>&1) || die "shim run failed"
    t1=$(date +%s%N)
    echo "native: $a; shim, no daemon: $b ($(( (t1 - t0) / 1000000 )) ms)"
    [ "$a" = "$b" ] || die "output differs (warnings?)"
    # The default socket path too, and CRANE_SOCKET=none.
    b=$(CRANE_SOCKET=none "$RUN" "$B/tests/programs/longrun" 300 2>&1) ||
        die "CRANE_SOCKET=none run failed"
    [ "$a" = "$b" ] || die "output differs with CRANE_SOCKET=none"
    # A process that makes no OpenCL call starts no control thread.
    start_daemon
    CRANE_SOCKET=$T/guest.sock "$RUN" sleep 1.5 &
    PIDS+=($!)
    sleep 1
    [ "$(ctl status | grep -c '^program ')" -eq 0 ] ||
        die "a process without OpenCL registered"
}

# Help, bad options and bad configs: one-line reasons, right exit codes.
case_cli() {
    "$GUESTD" --help | grep -q 'Usage: crane-guestd' || die "guestd --help"
    "$CTL" --help | grep -q 'Usage: cranectl' || die "cranectl --help"
    "$GUESTD" --bogus 2>&1; [ $? -eq 2 ] || die "guestd bad option"
    "$GUESTD" --log-level loud 2>&1; [ $? -eq 2 ] || die "guestd bad value"
    "$GUESTD" --config "$T/none.conf" 2>&1; [ $? -eq 1 ] ||
        die "guestd missing config"
    "$CTL" frobnicate 2>&1; [ $? -eq 2 ] || die "cranectl bad command"
    "$CTL" status --proxy x 2>&1; [ $? -eq 2 ] || die "cranectl bad option"
    "$CTL" prepare --deadline soon 2>&1; [ $? -eq 2 ] || die "bad deadline"
    "$CTL" --connect nowhere:1 status 2>&1; [ $? -eq 2 ] ||
        die "cranectl bad endpoint"
    "$CTL" --connect tcp:127.0.0.1:9 --key "$T/none.key" status 2>&1
    [ $? -eq 1 ] || die "cranectl missing key file"
    "$CTL" --connect "unix:$T/none.sock" status 2>&1
    [ $? -eq 3 ] || die "cranectl without daemon"
    echo "modules = -r evil" >"$T/bad.conf"
    "$GUESTD" --config "$T/bad.conf" --check-config 2>&1 | tee "$T/err"
    grep -q 'bad.conf:1: bad modules' "$T/err" || die "bad module accepted"
    echo "no equals sign" >"$T/bad.conf"
    "$GUESTD" --config "$T/bad.conf" 2>&1 | grep -q 'expected key = value' ||
        die "bad line accepted"
    echo "colour = blue" >"$T/bad.conf"
    "$GUESTD" --config "$T/bad.conf" 2>&1 | grep -q "unknown setting" ||
        die "unknown setting accepted"
    "$GUESTD" --config "$T/missing.conf" 2>&1 | grep -q 'cannot read' ||
        die "missing config accepted"
    "$GUESTD" --config guest-daemon/crane-guestd.conf --check-config |
        grep -q '^host = /dev/virtio-ports/org.crane.guest.0' ||
        die "example config unreadable"
}

# bulk_of PID KIND: the bytes status reports for that program (shm or
# stream), and whether its area is attached (KIND area).
bulk_of() {
    ctl status | awk -v pid="$1" -v kind="$2" '
        $1 == "program" { cur = $2 }
        $1 == "bulk:" && cur == pid {
            if (kind == "shm") print $3
            else if (kind == "stream") print $6
            else print $9
        }'
}

# The ivshmem path without a VM: a fake PCI folder whose ivshmem-plain
# device's BAR is a plain file both sides map (as the guest's BAR and the
# proxy domain's are one host memory); the proxy on TCP finds each area by
# its token (--shm-pci).  Two programs remote on the stream, take a part
# of the area each (cranectl shm) and move bulk bytes through it while
# they compute, give it up (cranectl shm --release: bulk back on the
# stream, no call lost), come back to passthrough and verify every byte.
case_shm() {
    local port="" pid s0 s1 t0 t1
    mkdir -p "$T/pci/0000:00:05.0" "$T/pci/0000:00:06.0"
    echo 0x1af4 >"$T/pci/0000:00:05.0/vendor"
    echo 0x1110 >"$T/pci/0000:00:05.0/device"
    truncate -s 16M "$T/pci/0000:00:05.0/resource2"
    # Another device that is no ivshmem: never taken.
    echo 0x1af4 >"$T/pci/0000:00:06.0/vendor"
    echo 0x1005 >"$T/pci/0000:00:06.0/device"
    truncate -s 16M "$T/pci/0000:00:06.0/resource2"
    "$PROXY" --listen tcp:127.0.0.1:0 --shm-pci "$T/pci" >"$T/proxy.log" 2>&1 &
    PIDS+=($!)
    proxy_port() {
        port=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' "$T/proxy.log")
        [ -n "$port" ]
    }
    until_ 10 proxy_port
    [ -n "$port" ] || die "crane-proxy did not start"
    start_daemon "proxy = tcp:127.0.0.1:$port" "pci_root = $T/pci"
    worker 1; worker 2
    wait_programs 2
    advances 1 || die "worker 1 does not compute"
    expect_fail "no ivshmem-plain device" shm --size 4096
    expect_ok prepare --live
    all_in remoting || die "not every program is remoting"
    advances 1 || die "worker 1 stopped while remoting"
    expect_ok shm --pci 0000:00:05.0 --size 16777216 | tee "$T/shm.out"
    grep -q '^result: ok' "$T/shm.out" || die "shm: no 'result: ok'"
    [ "$(grep -c 'its shared area is .*0000:00:05.0/resource2' "$T/proxy.log")" = 2 ] ||
        die "the proxy did not find both areas in the BAR"
    grep -q 'resource2 at 8388608' "$T/proxy.log" || die "no second part at 8 MiB"
    for w in 1 2; do advances $w || die "worker $w stopped on shared memory"; done
    for pid in $W1 $W2; do
        [ "$(bulk_of $pid area)" = attached ] || die "$pid: no area attached"
    done
    s0=$(bulk_of $W1 shm)
    t0=$(bulk_of $W1 stream)
    advances 1; advances 1
    s1=$(bulk_of $W1 shm)
    t1=$(bulk_of $W1 stream)
    echo "worker 1 while attached: shm $s0 -> $s1 B, stream $t0 -> $t1 B"
    [ "$s1" -gt "$s0" ] || die "no bulk bytes through the shared area"
    [ "$t1" = "$t0" ] || die "bulk bytes on the stream while attached"
    expect_ok shm --release | tee "$T/release.out"
    grep -q '^result: ok' "$T/release.out" || die "release: no 'result: ok'"
    [ "$(grep -c 'shared memory given up' "$T/proxy.log")" = 2 ] ||
        die "the proxy did not give both areas up"
    for pid in $W1 $W2; do
        [ "$(bulk_of $pid area)" = none ] || die "$pid: area still attached"
    done
    s0=$(bulk_of $W1 shm)
    t0=$(bulk_of $W1 stream)
    advances 1; advances 1
    s1=$(bulk_of $W1 shm)
    t1=$(bulk_of $W1 stream)
    echo "worker 1 after release: shm $s0 -> $s1 B, stream $t0 -> $t1 B"
    [ "$s1" = "$s0" ] || die "bulk bytes through the area after its release"
    [ "$t1" -gt "$t0" ] || die "no bulk bytes on the stream after the release"
    expect_ok resume
    all_in passthrough || die "not every program is back in passthrough"
    finish_workers 1 2
}

case_churn_return() {
    case_churn return
}

# The host channel: keys, TLS, idle connections, bad input, the port.
. tests/guest/guestd-host.sh
# The GPU's driver and devices.
. tests/guest/guestd-gpu.sh
# The daemon restarted, aborts mid-prepare.
. tests/guest/guestd-restart.sh
# Programs that start during a migration, lost programs, the reasons.
. tests/guest/guestd-start.sh
# Programs started with no crane-run, through crane.icd.
. tests/guest/guestd-icd.sh

fn="case_${1//-/_}"
declare -F "$fn" >/dev/null || { echo "unknown case $1"; exit 2; }
"$fn"
echo "PASS $1"
