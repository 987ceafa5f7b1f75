#!/bin/bash
# The fault-injection suite: a switch (passthrough <-> remoting) made to
# fail, or stopped, at every step, while the proxy, crane-guestd or the
# program is killed or frozen there.  Each case checks the outcome: every
# byte exact (the program's own check), or a clear OpenCL error; never a
# wrong byte, never a hang past the documented timeout, a status that
# tells the truth.  docs/results.md has the matrix.
#
#   fault.sh --list     the cases
#   fault.sh CASE       runs one; exit 0 pass, 1 fail
#
# Cases:
#   fail-STEP-DIR       the shim's test hook fails the switch at STEP
#                       (DIR: out = passthrough -> proxy, back = proxy ->
#                       passthrough): the switch must fail, the program
#                       stay where its data is whole and pass, and every
#                       other switch work; a switch to the proxy streams
#                       its buffers (device -> proxy, the report's
#                       streamed=), checked where it got that far
#   kill-proxy-STEP-DIR, stop-proxy-STEP-DIR
#                       the proxy is killed (SIGKILL) or frozen (SIGSTOP)
#                       while the switch waits at STEP (`piece`: in the
#                       middle of a buffer streamed through the pinned
#                       shared area, CRANE_SHM_MB=1)
#                       (`prebuild`: while the switch makes the
#                       program's objects on the proxy ahead, between its
#                       programs and its kernels, the gate still open)
#   kill-program-STEP   the program dies mid-switch: the proxy serves on
#   map-carried, map-portable
#                       two buffers stay mapped across every switch (one
#                       written through its pointer after the switch): the
#                       first switch is refused once (a vendor map), then
#                       maps live in shim memory and every switch carries
#                       them; with CRANE_PORTABLE_MAPS=1 none is refused
#   user-event-pending  a user event stays unset across every switch: it
#                       moves; when a copy waits on it, the switch is
#                       refused at once (not a hang), and the copy runs
#                       once the event is set
#   twins-proxy-restarted
#                       the proxy is restarted while the program runs in
#                       passthrough holding twins (its objects kept on the
#                       proxy for the next switch): the next switch must
#                       rebuild everything on the new proxy
#   guestd-*            crane-guestd and cranectl: see each case below
#   precopy-CASE        CASE with pre-copy on (CRANE_PRECOPY_ROUNDS=3): the
#                       same outcome, and a pre-copy round must have copied
#                       bytes (with a user event pending: stood aside)
#   nopin-CASE          CASE with CRANE_SHIM_PIN_RING=0: the shared area
#                       not pinned for the vendor, so the way out streams
#                       through pinned chunks and the way back through the
#                       RAM copy; no byte may move the no-copy way
#   precopy-fail        every pre-copy round fails (the test hook at step
#                       precopy): every switch still done, every byte right
#   precopy-target-fail every write into the target made ahead fails (step
#                       precopy-target): the same
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/fault/switchee
GUESTD=$B/bin/crane-guestd
CTL=$B/bin/cranectl
WORKER=$B/tests/guest/cl_worker
# What a frozen proxy may cost: the shim gives up after this much silence.
export CRANE_PROXY_TIMEOUT_MS=1500 CRANE_PROXY_KEEPALIVE_MS=300
# A case's program that neither used CPU nor wrote for this long (the
# proxy's and crane-guestd's CPU and the case's files count too) fails as a
# hang; CAP is the most it may take in all (tests/wait.sh's stall_kill).
BOUND=60
CAP=600
. tests/wait.sh

STEPS="finish extract extract-done release load rebuild:5 args:2 reinject:2
piece:2 reinject-done"
# Where the proxy is killed or frozen: before, during and after the bytes
# move, both ways.
KILL_STEPS_OUT="prebuild extract release rebuild:5 reinject:2 piece:2
reinject-done"
KILL_STEPS_BACK="finish extract extract-done release rebuild:5 reinject:2
piece:2 reinject-done"

list() {
    local s d
    for d in out back; do
        for s in $STEPS; do echo "fail-${s%%:*}-$d"; done
    done
    for s in $KILL_STEPS_OUT; do
        echo "kill-proxy-${s%%:*}-out"; echo "stop-proxy-${s%%:*}-out"
    done
    for s in $KILL_STEPS_BACK; do
        echo "kill-proxy-${s%%:*}-back"; echo "stop-proxy-${s%%:*}-back"
    done
    echo kill-program-extract kill-program-reinject
    echo map-carried map-portable twins-proxy-restarted user-event-pending
    echo guestd-resume-proxy-dead guestd-prepare-proxy-frozen
    echo guestd-killed-mid-prepare guestd-frozen-mid-prepare
    echo guestd-program-frozen guestd-refused-reason
    echo precopy-fail precopy-target-fail precopy-fail-extract-out
    echo precopy-fail-extract-back precopy-fail-rebuild-out
    echo precopy-fail-rebuild-back precopy-fail-reinject-out
    echo precopy-fail-reinject-back precopy-kill-proxy-extract-back
    echo precopy-stop-proxy-extract-back precopy-kill-proxy-rebuild-out
    echo precopy-stop-proxy-reinject-out precopy-map-carried
    echo precopy-user-event-pending precopy-twins-proxy-restarted
    echo nopin-fail-reinject-out nopin-fail-reinject-back
    echo nopin-kill-proxy-rebuild-back nopin-kill-proxy-reinject-out
}

case "${1:-}" in
--list) list | tr '\n' ' '; echo; exit 0 ;;
"" | -h | --help) sed -n '2,25p' "$0"; exit 2 ;;
esac

T=$(mktemp -d /tmp/crane-fault.XXXXXX)
PROXY_PID=
PROG_PID=
PROG_ARGS=
GD_PID=
cleanup() {
    [ -n "$PROXY_PID" ] && kill -CONT $(proxy_pids) 2>/dev/null
    for p in $PROG_PID $(proxy_pids 2>/dev/null) $GD_PID; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

die() {
    echo "FAIL: $*"
    for f in "$T"/*.log "$T"/out "$T"/report; do
        [ -e "$f" ] && { echo "--- $f"; tail -15 "$f"; }
    done
    exit 1
}

# The proxy and its workers (a process per tenant): signalled by pid.
proxy_pids() { echo "$PROXY_PID" $(pgrep -P "$PROXY_PID"); }
proxy_kill() {
    kill -9 $(proxy_pids) 2>/dev/null
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
}

start_proxy() {
    "$PROXY" --listen "unix:$T/proxy.sock" >"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$T/proxy.sock" && return 0
    die "crane-proxy did not start"
}

# Step spec for the hooks: STEP[:N]@K, K the switch (1: out, 2: back).
spec() {  # spec STEPNAME DIR
    local s=$1 k=1
    [ "$2" = back ] && k=2
    for full in $STEPS; do
        [ "${full%%:*}" = "$s" ] && s=$full
    done
    echo "$s@$k"
}

# Runs the program under the shim, switching every round; extra
# environment from the arguments.  Leaves PROG_PID.
run_prog() {
    env CRANE_PROXY="unix:$T/proxy.sock" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_REPORT="$T/report" CRANE_SOCKET=none \
        CRANE_LOG_FILE="$T/shim.log" CRANE_LOG_LEVEL=info \
        CRANE_TEST_STOP_FILE="$T/stopped" "$@" \
        timeout -s KILL $CAP "$RUN" "$PROG" 4 $PROG_ARGS >"$T/out" 2>&1 &
    PROG_PID=$!
    bound_prog
}

# bound_prog: stall_kill on PROG_PID (its SIGKILL gives status 137).
bound_prog() {
    stall_kill -q $BOUND -c $CAP ${PROXY_PID:+-t "$PROXY_PID"} \
        ${GD_PID:+-p "$GD_PID"} -f "$T" -n "the program" -- "$PROG_PID" &
}

finish_prog() {  # sets RC; fails the case on a hang
    wait "$PROG_PID"
    RC=$?
    PROG_PID=
    [ $RC -eq 137 ] && die "the program hung (nothing moved for ${BOUND} s)"
    cat "$T/out"
}

# Waits until the shim stopped at its step.
wait_stopped() {
    wait_until -q 30 -t "$PROG_PID" ${PROXY_PID:+-t "$PROXY_PID"} \
        -e "$PROG_PID" -n "the shim at its step" -- test -e "$T/stopped"
    case $? in
    0) return 0 ;;
    2) die "the program ended before the step" ;;
    esac
    die "the shim never reached its step"
}

report_rc() {  # report_rc K: the rc of switch K
    awk -v k="$1" '$1 == "rehome" && $2 == "n=" k { sub("rc=", "", $3);
        print $3 }' "$T/report"
}

expect_pass() {  # every byte right; DONE switches done, FAILED failed
    [ $RC -eq 0 ] || die "exit $RC, want 0 (every byte right)"
    grep -q "^PASS switchee: $1 switches done, $2 failed" "$T/out" ||
        die "want $1 switches done and $2 failed"
}

expect_error() {  # a clear OpenCL error, never a wrong byte
    [ $RC -eq 2 ] || die "exit $RC, want 2 (an OpenCL error)"
    grep -q '^ERROR switchee:' "$T/out" || die "no OpenCL error reported"
}

# expect_streamed K: switch K (to the proxy) streamed its buffers from
# the device straight to the proxy (CRANE_STREAM_SWITCH, on by default).
# With pre-copy the rounds before the stop already moved them: the stop
# may have nothing left to stream (what the rounds copied is checked at
# the end).
expect_streamed() {
    [ "$precopy" = 1 ] && return 0
    awk -v k="$1" '/^rehome / && ++n == k' "$T/report" |
        grep -Eq ' streamed=[1-9]' ||
        die "switch $1 did not stream its buffers to the proxy"
}

# streamed_of K: the bytes switch K streamed (0 if none).
streamed_of() {
    awk -v k="$1" '/^rehome / && ++n == k { for (i = 1; i <= NF; i++)
        if ($i ~ /^streamed=/) { sub("streamed=", "", $i); print $i } }' \
        "$T/report"
}

# expect_nocopy K: switch K moved its streamed bytes between the vendor's
# device and the shared area with no CPU copy (shim/ringstream.c; the
# report's nocopy=), and with CRANE_SHIM_PIN_RING=0 none did.
expect_nocopy() {
    [ "$precopy" = 1 ] && return 0
    if [ "$nopin" = 1 ]; then
        ! grep -Eq '^rehome .* nocopy=[1-9]' "$T/report" ||
            die "bytes moved the no-copy way with CRANE_SHIM_PIN_RING=0"
        return 0
    fi
    awk -v k="$1" '/^rehome / && ++n == k' "$T/report" |
        grep -Eq ' nocopy=[1-9]' ||
        die "switch $1 moved no byte the no-copy way (pinned shared area)"
}

# fail-STEP-DIR: the hook fails the switch; the program must not notice.
case_fail() {
    local step=$1 dir=$2 k=1
    [ "$dir" = back ] && k=2
    start_proxy
    run_prog CRANE_TEST_FAIL_AT="$(spec "$step" "$dir")"
    finish_prog
    expect_pass 3 1
    [ "$(report_rc $k)" != 0 ] || die "switch $k did not fail"
    grep -q "test hook: failing the switch at $step" "$T/shim.log" ||
        die "the hook never fired"
    grep -q "staying on" "$T/shim.log" || die "no 'staying on' logged"
    # The bytes went out streamed: failed while streaming (out, from
    # reinject on), or before the switch that failed (back).
    case "$dir:$step" in
    out:reinject | out:reinject-done) expect_streamed 1; expect_nocopy 1 ;;
    back:*) expect_streamed 1; expect_nocopy 1 ;;
    esac
    # Failed after streaming back: the bytes had moved the no-copy way.
    case "$dir:$step" in
    back:reinject-done) expect_nocopy 2 ;;
    esac
}

# kill-proxy / stop-proxy at STEP in DIR.
case_proxy() {
    local how=$1 step=$2 dir=$3
    start_proxy
    run_prog CRANE_TEST_STOP_AT="$(spec "$step" "$dir")"
    wait_stopped
    if [ "$how" = kill ]; then
        proxy_kill
    else
        kill -STOP $(proxy_pids)
    fi
    rm -f "$T/stopped"
    finish_prog
    case "$dir:$step" in
    out:*)
        # The proxy side never became whole: the program stays in
        # passthrough, every later switch to the proxy fails too.
        expect_pass 0 4
        # At reinject the proxy went while the bytes streamed to it.
        case $step in reinject*) expect_streamed 1; expect_nocopy 1 ;; esac
        ;;
    back:finish | back:extract | back:extract-done)
        # The bytes were on the proxy only, and did not all come back:
        # the switch fails and the program gets OpenCL errors.
        expect_error
        grep -q 'the program stays there\|connection to the proxy is lost' \
            "$T/shim.log" || die "no reason logged" ;;
    back:release | back:rebuild | back:reinject | back:piece)
        if [ "$(streamed_of 2)" != 0 ]; then
            # Streamed back after the rebuild, proxy -> vendor with no RAM
            # copy (shim/ringstream.c): the proxy went before every byte
            # came, so the switch fails and the program gets errors.
            expect_error
            grep -q 'streaming .* back from the proxy failed' \
                "$T/shim.log" || die "no reason logged"
        else
            # Through the RAM copy, whole before the proxy went.
            expect_pass 2 2
        fi
        [ "$nopin" = 1 ] && [ "$(streamed_of 2)" != 0 ] &&
            die "streamed back with CRANE_SHIM_PIN_RING=0"
        [ "$nopin" = 0 ] && [ "$precopy" = 0 ] &&
            [ "$(streamed_of 2)" = 0 ] && die "switch 2 did not stream back"
        ;;
    back:*)
        # Every byte was out before the proxy went: the switch completes
        # in passthrough; the next switch to the dead proxy fails.
        expect_pass 2 2 ;;
    esac
    [ "$how" = stop ] && ! grep -q 'no sign of life' "$T/shim.log" &&
        [ "$step" != release ] && [ "$dir:$step" != out:release ] &&
        echo "note: the frozen proxy was not needed after the stop"
    return 0
}

# kill-program-STEP: the program dies in the middle of a switch to the
# proxy; the proxy must serve the next program as if nothing happened.
case_kill_program() {
    local step=$1
    start_proxy
    run_prog CRANE_TEST_STOP_AT="$(spec "$step" out)"
    wait_stopped
    kill -9 "$PROG_PID"
    wait "$PROG_PID" 2>/dev/null
    PROG_PID=
    rm -f "$T/stopped" "$T/report"
    kill -0 "$PROXY_PID" || die "the proxy died with the program"
    run_prog
    finish_prog
    expect_pass 4 0
}

# map-carried / map-portable: maps held across switches.
case_map() {
    start_proxy
    PROG_ARGS=--map
    if [ "$1" = portable ]; then
        run_prog CRANE_PORTABLE_MAPS=1
        finish_prog
        expect_pass 4 0
    else
        run_prog
        finish_prog
        expect_pass 3 1
        [ "$(report_rc 1)" = -16 ] || die "the first switch was not refused"
        grep -q 'maps use shim memory from now on' "$T/shim.log" ||
            die "no word of shim-memory maps"
    fi
}

case_user_event() {
    start_proxy
    PROG_ARGS=--user-event
    run_prog
    finish_prog
    expect_pass 3 1
    [ "$(report_rc 4)" = -16 ] || die "the 4th switch was not refused"
    grep -q 'a command waits on a user event' "$T/shim.log" ||
        die "no reason for the refusal"
    # The event moved unset: each side it left must have it completed
    # (a vendor may hold a context with an unset event for ever).
    grep -Eq '^background .* user_events_completed=[1-9]' "$T/report" ||
        die "no switch completed the moved user event on its old side"
}

# twins-proxy-restarted: objects kept on a proxy that is gone are never
# reused.
case_twins_restarted() {
    start_proxy
    run_prog CRANE_TEST_STOP_AT="finish@3"
    wait_stopped
    proxy_kill
    rm -f "$T/proxy.sock"
    start_proxy
    rm -f "$T/stopped"
    finish_prog
    expect_pass 4 0
    [ "$(grep -c 'remote: connected' "$T/shim.log")" -eq 2 ] ||
        die "the program did not connect to the new proxy"
}

# --- crane-guestd ----------------------------------------------------------

start_guestd() {
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
proxy = unix:$T/proxy.sock
prepare_deadline_ms = 8000
abort_deadline_ms = 8000
gpu_wait_ms = 8000
reconnect_grace_ms = 2000
log_level = debug
EOF
    CRANE_FAKE_MODULES=$T/mods "$GUESTD" --config "$T/guestd.conf" \
        >>"$T/guestd.log" 2>&1 &
    GD_PID=$!
    wait_until -q 10 -p "$GD_PID" -e "$GD_PID" -n "crane-guestd listens" \
        -- guestd_sockets && return 0
    die "crane-guestd did not start"
}

guestd_sockets() { [ -S "$T/ctl.sock" ] && [ -S "$T/guest.sock" ]; }

ctl() { timeout -s KILL $BOUND "$CTL" --connect "unix:$T/ctl.sock" \
    --timeout 30 "$@"; }

worker_registered() {
    [ "$(ctl status 2>/dev/null | grep -c '^program ')" -ge 1 ] &&
        [ -s "$T/progress" ]
}

# A cl_worker under the shim, registered with crane-guestd.
start_worker() {
    env CRANE_SOCKET="$T/guest.sock" CRANE_LOG_LEVEL=info \
        CRANE_LOG_FILE="$T/shim.log" CRANE_TEST_STOP_FILE="$T/stopped" "$@" \
        timeout -s KILL $CAP "$RUN" "$WORKER" --stop-file "$T/stop" \
        --pause-file "$T/pause" --progress "$T/progress" --seconds 50 \
        ${WORKER_ARGS:-} >"$T/out" 2>&1 &
    PROG_PID=$!
    bound_prog
    wait_until -q 30 -t "$PROG_PID" -p "$GD_PID" -e "$PROG_PID" \
        -n "the worker registered" -- worker_registered && return 0
    die "the worker never registered"
}

stop_worker() {  # sets RC
    touch "$T/stop"
    wait "$PROG_PID"
    RC=$?
    PROG_PID=
    [ $RC -eq 137 ] && die "the worker hung (nothing moved for ${BOUND} s)"
    cat "$T/out"
}

# Waits until the paused worker's progress stops moving.
still() {
    local a b
    a=$(cat "$T/progress" 2>/dev/null); sleep 0.1
    b=$(cat "$T/progress" 2>/dev/null)
    [ "${a%% *}" = "${b%% *}" ]
}
wait_idle() {
    wait_until -q 10 -t "$PROG_PID" -n "the worker paused" -- still &&
        return 0
    die "the worker never paused"
}

# at_step: the shim stopped at its step (while crane-guestd's prepare
# waits on it).
at_step() {
    wait_until -q 30 -t "$PROG_PID" -p "$GD_PID" -n "the shim at its step" \
        -- test -e "$T/stopped"
}

# back_in_passthrough: status says passthrough (after a resume or abort).
in_passthrough() { [ "$(mode)" = passthrough ]; }
back_in_passthrough() {
    wait_until -q 10 -t "$PROG_PID" -p "$GD_PID" -n "passthrough again" \
        -- in_passthrough
}

mode() { ctl status | awk '$1 == "program" { print $4 }'; }

# The program is remoting, and idle, when its proxy dies: resume must fail
# with the true reason (not "Cannot allocate memory"), the program must get
# errors, never a PASS over lost data.
case_guestd_resume_proxy_dead() {
    start_proxy
    start_guestd
    start_worker
    ctl prepare --live >"$T/prepare.out" || die "prepare failed"
    [ "$(mode)" = remoting ] || die "not remoting after prepare"
    touch "$T/pause"
    wait_idle
    proxy_kill
    ctl resume >"$T/resume.out" 2>&1 && die "resume succeeded"
    cat "$T/resume.out"
    grep -qi 'connection to the proxy is lost\|proxy' "$T/resume.out" ||
        die "resume does not say the proxy is gone"
    grep -q 'Cannot allocate memory' "$T/resume.out" &&
        die "the wrong reason again"
    [ "$(mode)" = remoting ] || die "status says '$(mode)', not remoting"
    rm -f "$T/pause"
    stop_worker
    [ $RC -ne 0 ] && ! grep -q '^PASS' "$T/out" ||
        die "the worker passed over data left on a dead proxy"
}

# A program whose switch is refused (it holds SVM, whose addresses cannot
# move): the live prepare fails, and cranectl (what crane-hostd relays to
# crane-migrate and the dashboard) names the program and its reason; the
# program stays in passthrough and passes.
case_guestd_refused_reason() {
    start_proxy
    start_guestd
    WORKER_ARGS=--svm start_worker
    ctl prepare --live >"$T/prepare.out" 2>&1 && die "prepare succeeded"
    cat "$T/prepare.out"
    grep -q 'SVM' "$T/prepare.out" ||
        die "cranectl does not give the program's reason"
    grep -q "$(basename "$WORKER")" "$T/prepare.out" ||
        die "cranectl does not name the program"
    [ "$(mode)" = passthrough ] || die "status says $(mode), not passthrough"
    stop_worker
    [ $RC -eq 0 ] && grep -q '^PASS cl_worker' "$T/out" ||
        die "the worker did not pass"
}

# The proxy is frozen: a live prepare must fail within its deadline with a
# reason, and the program must still be in passthrough, computing, and
# pass.
case_guestd_prepare_proxy_frozen() {
    start_proxy
    start_guestd
    start_worker
    kill -STOP $(proxy_pids)
    local t0=$SECONDS
    ctl prepare --live >"$T/prepare.out" 2>&1 && die "prepare succeeded"
    cat "$T/prepare.out"
    [ $((SECONDS - t0)) -lt 30 ] || die "prepare took $((SECONDS - t0)) s"
    [ "$(mode)" = passthrough ] || die "status says $(mode), not passthrough"
    kill -CONT $(proxy_pids)
    stop_worker
    [ $RC -eq 0 ] && grep -q '^PASS cl_worker' "$T/out" ||
        die "the worker did not pass"
}

# crane-guestd is killed while a program is in the middle of its switch
# to the proxy: the switch completes on its own, the program keeps every
# byte, and a restarted daemon sees it as it is.
case_guestd_killed_mid_prepare() {
    start_proxy
    start_guestd
    start_worker CRANE_TEST_STOP_AT="reinject@1"
    ctl prepare --live >"$T/prepare.out" 2>&1 &
    local ctl_pid=$!
    at_step || die "the shim never reached its step"
    kill -9 "$GD_PID"; wait "$GD_PID" 2>/dev/null; GD_PID=
    rm -f "$T/stopped"
    wait $ctl_pid
    start_guestd
    # One status, read once the abort the restarted daemon starts on its
    # own is over (phase aborting, the program switching meanwhile): read
    # while it ran, a later read could find the program elsewhere.
    local st m
    settled() {
        st=$(ctl status)
        m=$(printf '%s\n' "$st" | awk '$1 == "program" { print $4 }')
        case $m in
        '' | switching) return 1 ;;
        esac
        ! printf '%s\n' "$st" | grep -q '^phase: aborting'
    }
    wait_until -q 10 -t "$PROG_PID" -p "$GD_PID" -n "status settled" \
        -- settled
    printf '%s\n' "$st"
    # The switch completed, so the program remotes; the restarted daemon
    # aborts the prepare it finds interrupted in its state file once the
    # program is back in touch (guest-daemon/daemon.c), so a status may
    # already show it back in passthrough.  Anything else is a lie.
    case $m in
    remoting)
        ctl resume >/dev/null 2>&1 || ctl abort ||
            die "cannot bring it back" ;;
    passthrough)
        grep -q 'control: abort' "$T/shim.log" ||
            die "passthrough, but no abort reached the program" ;;
    *) die "status says '$m', neither remoting nor passthrough" ;;
    esac
    [ "$(mode)" = passthrough ] || die "not back in passthrough"
    stop_worker
    [ $RC -eq 0 ] && grep -q '^PASS cl_worker' "$T/out" ||
        die "the worker did not pass"
}

# crane-guestd is frozen (SIGSTOP) while a program's prepare waits at a
# step, then thawed: the prepare completes and status tells it.
case_guestd_frozen_mid_prepare() {
    start_proxy
    start_guestd
    start_worker CRANE_TEST_STOP_AT="reinject@1"
    ctl prepare --live >"$T/prepare.out" 2>&1 &
    local ctl_pid=$!
    at_step || die "the shim never reached its step"
    kill -STOP "$GD_PID"
    rm -f "$T/stopped"
    # The switch finishes without the daemon: the worker computes on.
    wait_until -q 5 -t "$PROG_PID" -t "$PROXY_PID" -f "$T/shim.log" \
        -n "switch done" -- \
        grep -q 're-home #1 native->remote done' "$T/shim.log"
    grep -q 're-home #1 native->remote done' "$T/shim.log" ||
        die "the switch did not finish while the daemon was frozen"
    kill -CONT "$GD_PID"
    wait $ctl_pid || { cat "$T/prepare.out"; die "prepare failed"; }
    [ "$(mode)" = remoting ] || die "status says '$(mode)', not remoting"
    ctl resume >/dev/null || die "resume failed"
    [ "$(mode)" = passthrough ] || die "not back in passthrough"
    stop_worker
    [ $RC -eq 0 ] && grep -q '^PASS cl_worker' "$T/out" ||
        die "the worker did not pass"
}

# The program itself is frozen (SIGSTOP) through a prepare: the prepare
# ends within its deadline (crane-guestd leaves out a program that does not
# answer and holds no GPU device node, docs/guest.md); once the program is
# thawed, a resume brings everything back and status and the program agree
# on where it is; every byte right.
case_guestd_program_frozen() {
    start_proxy
    start_guestd
    start_worker
    kill -STOP "$PROG_PID" $(pgrep -P "$PROG_PID")
    local t0=$SECONDS
    ctl prepare --live >"$T/prepare.out" 2>&1
    cat "$T/prepare.out"
    [ $((SECONDS - t0)) -lt 30 ] || die "prepare took $((SECONDS - t0)) s"
    grep -q 'did not answer' "$T/prepare.out" ||
        die "prepare does not name the program that did not answer"
    kill -CONT "$PROG_PID" $(pgrep -P "$PROG_PID")
    ctl resume >"$T/resume.out" 2>&1 || ctl abort >/dev/null 2>&1
    cat "$T/resume.out"
    back_in_passthrough
    ctl status
    [ "$(mode)" = passthrough ] || die "status says '$(mode)'"
    local out back
    out=$(grep -c 're-home .* native->remote done' "$T/shim.log")
    back=$(grep -c 're-home .* remote->native done' "$T/shim.log")
    [ "$out" -eq "$back" ] ||
        die "the program is remoting while status says passthrough"
    stop_worker
    [ $RC -eq 0 ] && grep -q '^PASS cl_worker' "$T/out" ||
        die "the worker did not pass"
}

# A pre-copy round fails at every switch: its bytes are left to the stop,
# which moves them; nothing else changes.
case_precopy_fail() {
    start_proxy
    run_prog CRANE_PRECOPY_ROUNDS=3 CRANE_TEST_FAIL_AT='precopy@*'
    finish_prog
    expect_pass 4 0
    grep -q "test hook: failing the switch at precopy" "$T/shim.log" ||
        die "the hook never fired"
    grep -q 'precopy_end=failed' "$T/report" ||
        die "no failed pre-copy in the report"
}

# Writes into the target made ahead fail at every switch: everything is
# written at the stop instead.
case_precopy_target_fail() {
    start_proxy
    run_prog CRANE_PRECOPY_ROUNDS=3 CRANE_TEST_FAIL_AT='precopy-target@*'
    finish_prog
    expect_pass 4 0
    grep -q "test hook: failing the switch at precopy-target" \
        "$T/shim.log" || die "the hook never fired"
    grep -q 'writing into the target failed' "$T/shim.log" ||
        die "no failed target write logged"
}

c=$1
precopy=0
nopin=0
# The `piece` step (a buffer streamed through the pinned shared area, in
# pieces of a quarter of a ring): rings of 512 KiB, so that the second
# piece is in the middle of the first buffer.
case "$c" in *-piece-*) export CRANE_SHM_MB=1 ;; esac
case "$c" in
nopin-*)
    export CRANE_SHIM_PIN_RING=0
    c=${c#nopin-}
    nopin=1
    ;;
esac
case "$c" in
precopy-fail | precopy-target-fail) ;;
precopy-*)
    export CRANE_PRECOPY_ROUNDS=3
    c=${c#precopy-}
    precopy=1
    ;;
esac
case "$c" in
precopy-fail) case_precopy_fail ;;
precopy-target-fail) case_precopy_target_fail ;;
fail-*-out | fail-*-back)
    rest=${c#fail-}; case_fail "${rest%-*}" "${rest##*-}" ;;
kill-proxy-* | stop-proxy-*)
    how=${c%%-*}; rest=${c#*-proxy-}
    case_proxy "$how" "${rest%-*}" "${rest##*-}" ;;
kill-program-*) case_kill_program "${c#kill-program-}" ;;
map-carried) case_map carried ;;
map-portable) case_map portable ;;
twins-proxy-restarted) case_twins_restarted ;;
user-event-pending) case_user_event ;;
guestd-resume-proxy-dead) case_guestd_resume_proxy_dead ;;
guestd-refused-reason) case_guestd_refused_reason ;;
guestd-prepare-proxy-frozen) case_guestd_prepare_proxy_frozen ;;
guestd-killed-mid-prepare) case_guestd_killed_mid_prepare ;;
guestd-frozen-mid-prepare) case_guestd_frozen_mid_prepare ;;
guestd-program-frozen) case_guestd_program_frozen ;;
*) echo "unknown case $c (see --list)"; exit 2 ;;
esac
rc=$?
# The case held with pre-copy on: a round must have copied something.
# With a user event pending it stands aside (a marker behind it would
# never complete), and says so.
if [ $rc -eq 0 ] && [ $precopy = 1 ] && [ "$c" = user-event-pending ]; then
    grep -q 'precopy_end=user-event' "$T/report" ||
        die "pre-copy did not stand aside for the pending user event"
    c=precopy-$c
elif [ $rc -eq 0 ] && [ $precopy = 1 ]; then
    grep -Eq '^rehome .* precopy=[1-9][0-9]* .*precopy_bytes=[1-9]' \
        "$T/report" || die "no pre-copy round copied anything"
    c=precopy-$c
fi
[ $rc -eq 0 ] && [ $nopin = 1 ] && c=nopin-$c
[ $rc -eq 0 ] && echo "PASS $c"
exit $rc
