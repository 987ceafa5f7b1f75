# Sourced by tests/guest/guestd.sh (its helpers and $T): the cases of
# programs that start during a migration (start-*), programs lost to a
# fault (lost-*), and the reason a prepare gives for a program silent
# since earlier (silent-since).  docs/guest.md, "Programs that start
# during a migration" and "Lost programs".

# waits_for COND...: true once the command COND succeeds (30 s at most).
waits_for() {
    for _ in $(seq 300); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
exited() { ! kill -0 "$1" 2>/dev/null; }
# mode_of NAME: the MODE column of the program whose pid is $1.
mode_of() { ctl status | awk -v p="$1" '$1 == "program" && $2 == p { print $4 }'; }

# A program started after `prepare --live` goes to the proxy from its
# first call (its shim says so, status shows it remoting, it computes
# there) and comes back to the GPU with the others on resume.
case_start_live() {
    start_proxy
    start_daemon
    worker 1
    wait_programs 1
    expect_ok prepare --live
    worker 2
    wait_programs 2
    waits_for grep -q 'first call goes to the proxy' "$T/shim2.log" ||
        die "worker 2 was not started on the proxy"
    waits_for advances 2 || die "worker 2 does not compute on the proxy"
    [ "$(mode_of "$W2")" = remoting ] || { ctl status; die "worker 2 is not remoting"; }
    grep -q 'native: loaded' "$T/shim2.log" &&
        die "worker 2 loaded the vendor before the resume"
    expect_ok resume | tee "$T/resume.out"
    grep -q "^program $W2 .*passthrough .*resume *ok" "$T/resume.out" ||
        die "worker 2 did not come back with the resume"
    all_in passthrough || die "not every program is back in passthrough"
    advances 2 || die "worker 2 stopped after the resume"
    finish_workers 1 2
}

# A program started during an offline migration waits for the GPU:
# status shows it starting, it makes no progress, and it starts on the
# GPU once the resume brought it back.
case_start_offline() {
    start_daemon
    worker 1
    wait_programs 1
    expect_ok prepare --offline
    worker 2
    wait_programs 2
    ctl status | tee "$T/status.out"
    grep -q "^program $W2 .* starting " "$T/status.out" ||
        die "worker 2 is not shown starting"
    grep -q 'first call waits for the GPU' "$T/status.out" ||
        die "no starting detail"
    [ "$(iterations 2)" = 0 ] || die "worker 2 computed without the GPU"
    expect_ok resume
    waits_for grep -q 'the GPU is back after' "$T/shim2.log" ||
        die "worker 2 was not let start"
    waits_for advances 2 || die "worker 2 does not compute after the resume"
    all_in passthrough || die "not every program is in passthrough"
    finish_workers 1 2
}

# CRANE_START_WAIT_MS bounds the wait: past it the program starts anyway
# (on whatever GPU its vendor finds) and says why.
case_start_wait_bound() {
    start_daemon
    expect_ok prepare --offline
    START_WAIT_MS=300 worker 1
    waits_for grep -q 'did not come back (CRANE_START_WAIT_MS)' \
        "$T/shim1.log" || die "the bound did not end the wait"
    waits_for advances 1 || die "worker 1 does not compute after the bound"
    expect_ok resume
    finish_workers 1
}

# The proxy dies while the VM is prepared: the remoting programs fail
# (CL_DEVICE_NOT_AVAILABLE, never wrong data) and exit; their shims
# reported the fault first, so the resume names them lost, with the
# reason, and cranectl exits 4, not a plain ok.
case_lost_proxy_killed() {
    start_proxy
    start_daemon
    worker 1; worker 2
    wait_programs 2
    expect_ok prepare --live
    all_in remoting || die "not every program is remoting"
    kill -9 "${PIDS[0]}"
    waits_for exited "$W1" || die "worker 1 outlived its proxy"
    waits_for exited "$W2" || die "worker 2 outlived its proxy"
    grep -q '^FAIL cl_worker' "$T/w1.out" || die "worker 1 did not fail"
    local rc=0
    ctl resume >"$T/resume.out" 2>&1 || rc=$?
    cat "$T/resume.out"
    [ "$rc" = 4 ] || die "cranectl resume exited $rc, not 4"
    [ "$(grep -c '^program .* lost ' "$T/resume.out")" = 2 ] ||
        die "not both programs listed lost"
    grep -q '^        lost: the connection to the proxy .* was lost' \
        "$T/resume.out" || die "no reason for the loss"
    grep -q '^result: LOST 2 program(s): 2 program(s) lost to a fault' \
        "$T/resume.out" || die "the result does not say so"
    # The next migration starts afresh.
    worker 3
    wait_programs 1
    rm -f "$T/proxy.sock"
    start_proxy
    expect_ok prepare --live | grep -q '^result: ok$' ||
        die "the next prepare still reports old losses"
    expect_ok resume
    finish_workers 3
}

# A program dies of a fault in the middle of the resume (its shim reports
# it, then exits): lost, not "exited during the operation".
case_lost_mid_resume() {
    start_proxy
    start_daemon
    worker 1
    fake dies fault-on-resume
    wait_programs 2
    expect_ok prepare --live
    local rc=0
    ctl resume >"$T/resume.out" 2>&1 || rc=$?
    cat "$T/resume.out"
    [ "$rc" = 4 ] || die "cranectl resume exited $rc, not 4"
    grep -q '^program .* dies *lost .*resume' "$T/resume.out" ||
        die "the program is not listed lost during the resume"
    grep -q 'lost: fake: the connection to the proxy was lost' \
        "$T/resume.out" || die "no reason"
    ! grep -q 'exited during the operation' "$T/resume.out" ||
        die "listed as exited too"
    grep -q "^program $W1 .*passthrough" "$T/resume.out" ||
        die "worker 1 not back"
    grep -q 'lost to a fault' "$T/guestd.log" || die "no log line"
    finish_workers 1
}

# A program that stopped answering is named as such by the next prepare:
# silent since a time before it, not "no answer within" its deadline.
case_silent_since() {
    start_proxy
    start_daemon
    worker 1
    FAKE_SHIM_HOLD=$T/mods/dev/fakegpu0 fake mute silent
    wait_programs 2
    expect_fail 'mute.* holds .*fakegpu0 but did not answer the prepare within 2000 ms' \
        prepare --deadline 2000
    expect_fail 'mute.* holds .*fakegpu0 but has not answered since [0-9:]* UTC, [0-9.]* s before this prepare' \
        prepare --deadline 15000
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
    [ "$(mode_of "$W1")" = passthrough ] || die "worker 1 not in passthrough"
    advances 1 || die "worker 1 stopped"
    finish_workers 1
}

