# Sourced by tests/guest/guestd.sh (its helpers and $T): the daemon
# restarted (its state file, programs registering again) and aborts
# mid-prepare.

# The daemon dies while programs are remoting; restarted, it knows from
# the state file and the programs' new registrations, and resumes them.
case_daemon_restart() {
    start_proxy
    start_daemon
    worker 1; worker 2
    wait_programs 2
    expect_ok prepare
    kill -9 "$GD_PID"
    wait "$GD_PID" 2>/dev/null
    grep -q '^phase prepared' "$T/guestd.state" || die "state file: $(cat "$T/guestd.state")"
    advances 1 || die "worker 1 stopped when the daemon died"
    start_daemon
    wait_programs 2
    ctl status
    ctl status | grep -q '^phase: prepared' || die "restarted daemon lost the phase"
    all_in remoting || die "programs not known as remoting"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    finish_workers 1 2
}

# The same with parked programs and a clean stop: they wait for a resume
# from a daemon that did not exist when they parked.
case_daemon_restart_offline() {
    start_daemon
    worker 1
    wait_programs 1
    expect_ok prepare --offline
    kill -TERM "$GD_PID"         # a clean stop this time: same outcome
    wait "$GD_PID" 2>/dev/null
    grep -q '^program .* parked cl_worker' "$T/guestd.state" ||
        die "state file: $(cat "$T/guestd.state")"
    start_daemon
    wait_programs 1
    ctl status | grep -q '^phase: prepared' || die "restarted daemon lost the phase"
    all_in parked || die "program not known as parked"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    advances 1 || die "worker 1 did not resume computing"
    finish_workers 1
}

# The state file's disk is full (a tmpfs of its own) when the programs
# park: the write fails (logged, retried), a restart finds the stale phase
# idle, and the daemon takes the phase from the parked program that
# registers (prepared); once the disk frees the file is right again, and
# resume brings the program back.
case_daemon_restart_full_disk() {
    [ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"
    mkdir -p "$T/disk"
    mount -t tmpfs -o size=512k tmpfs "$T/disk" 2>/dev/null ||
        skip "cannot mount a tmpfs here"
    DISK_MOUNT=$T/disk
    start_daemon "state_file = $T/disk/guestd.state"
    worker 1
    wait_programs 1
    grep -q '^phase idle' "$T/disk/guestd.state" || die "no state file at start"
    dd if=/dev/zero of="$T/disk/fill" bs=4k >/dev/null 2>&1
    expect_ok prepare --offline
    all_in parked || die "program not parked"
    grep -q 'cannot write the state file' "$T/guestd.log" || die "no line for the failed write"
    grep -q '^phase idle' "$T/disk/guestd.state" || die "the state file is not stale: $(cat "$T/disk/guestd.state")"
    kill -TERM "$GD_PID"
    wait "$GD_PID" 2>/dev/null
    start_daemon
    wait_programs 1
    ctl status | grep -q '^phase: prepared' || { ctl status; die "restarted daemon says another phase than its parked program"; }
    all_in parked || die "program not known as parked"
    grep -q 'is parked while the state file said phase idle' "$T/guestd.log" || die "no line for the stale state file"
    rm -f "$T/disk/fill"
    for _ in $(seq 100); do
        grep -q '^phase prepared' "$T/disk/guestd.state" && break
        sleep 0.1
    done
    grep -q '^phase prepared' "$T/disk/guestd.state" || die "state file not written again: $(cat "$T/disk/guestd.state")"
    expect_ok resume
    all_in passthrough || die "not back in passthrough"
    advances 1 || die "worker 1 did not resume computing"
    finish_workers 1
}

# The daemon dies in the middle of a prepare (a program is still holding
# it up); restarted, it finishes the job: every program back in
# passthrough, the driver loaded.
case_daemon_restart_mid_prepare() {
    start_proxy
    start_daemon
    worker 1; worker 2
    fake mute silent
    wait_programs 3
    ctl prepare --deadline 60000 >"$T/prep.out" 2>&1 &
    until_ 5 grep -q '^phase preparing' "$T/guestd.state"
    sleep 1
    kill -9 "$GD_PID"
    wait "$GD_PID" 2>/dev/null
    grep -q '^phase preparing' "$T/guestd.state" || die "state file: $(cat "$T/guestd.state")"
    start_daemon
    aborted() { ctl status 2>/dev/null | grep -q '^last: abort'; }
    until_ 20 aborted
    ctl status
    ctl status | grep -q '^last: abort ok' || die "no recovery abort"
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
    [ "$(modes | awk '$1 == "cl_worker" && $2 == "passthrough"' | wc -l)" \
        -eq 2 ] || die "the workers are not back in passthrough"
    finish_workers 1 2
}

# An abort from the host while a prepare waits: the prepare fails as
# aborted, the programs are back in passthrough.
case_abort_mid_prepare() {
    start_proxy
    start_daemon
    worker 1
    fake mute silent
    wait_programs 2
    ctl prepare --deadline 60000 >"$T/prep.out" 2>&1 &
    local prep=$!
    # The prepare under way (its phase in the state file), then a moment
    # for it to reach the programs.
    until_ 10 grep -q '^phase preparing' "$T/guestd.state"
    sleep 1.5
    # The mute program answers the abort no more than the prepare.
    expect_fail 'mute.* did not answer abort' abort --deadline 2000
    wait $prep && die "the aborted prepare succeeded"
    cat "$T/prep.out"
    grep -q 'FAILED' "$T/prep.out" || die "prepare not reported failed"
    [ "$(modes | awk '$1 == "cl_worker" && $2 == "passthrough"' | wc -l)" \
        -eq 1 ] || die "worker not back in passthrough"
    finish_workers 1
}
