#!/bin/bash
# crane-migrate's tests: the command line against build/tests/hostd-fake, a
# stand-in crane-hostd that dumps the request it got and plays a scripted
# answer (tests/hostd-tools/fake_hostd.c).
#
#   migrate-cli.sh --list     the cases
#   migrate-cli.sh CASE       runs one; exit 0 pass, 1 fail, 77 skip
#
# MIGRATE=path runs another crane-migrate (a sanitizer build); WRAP="cmd"
# runs every crane-migrate under cmd (e.g. valgrind).
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
MIGRATE=${MIGRATE:-$B/bin/crane-migrate}
FAKE=$B/tests/hostd-fake
WRAP=${WRAP:-}
VALGRIND="valgrind -q --leak-check=full --errors-for-leak-kinds=all
--error-exitcode=99"
CASES="help usage-no-args usage-one-arg usage-extra-arg usage-unknown-option
usage-missing-value usage-bad-timeout usage-timeout-without-live
usage-live-offline usage-bad-proxy usage-bad-peer usage-bad-wait
usage-bad-connect xml-missing xml-unusable map-defaults map-options
map-xml map-connect-env map-virsh-options map-named usage-virsh-options
postcopy-refused ok verbose verbose-tty rolled-back failed remoting
lost
no-daemon hang-wait partial-wait close garbage empty huge unknown-result
cancel interrupt valgrind"

case "${1:-}" in
--list) echo $CASES; exit 0 ;;
"" | -h | --help) sed -n '2,11p' "$0"; exit 2 ;;
esac

T=$(mktemp -d /tmp/crane-migrate-test.XXXXXX)
SOCK=$T/hostd.sock
FAKE_PID=
RC=

cleanup() {
    [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
    wait 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

die() {
    echo "FAIL: $*"
    for f in out err dump; do
        [ -e "$T/$f" ] && { echo "--- $f"; cat -A "$T/$f"; }
    done
    exit 1
}

# fake SCRIPT: starts the stand-in crane-hostd; its socket exists only once
# it listens.
fake() {
    rm -f "$T/dump" "$T/dump.xml"
    "$FAKE" "$SOCK" "$1" "$T/dump" 2>"$T/fake.err" &
    FAKE_PID=$!
    wait_until -q 5 -p "$FAKE_PID" -e "$FAKE_PID" -n "hostd-fake listens" \
        -- test -S "$SOCK" && return 0
    die "hostd-fake $1 did not start: $(cat "$T/fake.err")"
}

# mig ARGS...: crane-migrate against the fake; RC, $T/out, $T/err.
mig() {
    run_bounded -q 30 -c 300 ${FAKE_PID:+-p "$FAKE_PID"} -n crane-migrate \
        -- $WRAP "$MIGRATE" "$@" >"$T/out" 2>"$T/err"
    RC=$?
}
migf() { mig --connect "unix:$SOCK" "$@"; }

expect_rc() { [ "$RC" = "$1" ] || die "exit $RC, expected $1"; }
has_line() { grep -qxF -- "$1" "$T/out" || die "no line '$1'"; }
no_line() { ! grep -qE -- "$1" "$T/out" || die "unexpected line /$1/"; }
field() { grep -qxF -- "$1 = $2" "$T/dump" || die "dump lacks '$1 = $2'"; }

# err_line PATTERN: stderr is exactly one line, crane-migrate's, matching.
err_line() {
    [ "$(wc -l <"$T/err")" = 1 ] || die "stderr is not one line"
    grep -q '^crane-migrate: ' "$T/err" || die "stderr lacks the prefix"
    grep -qE -- "$1" "$T/err" || die "stderr does not match /$1/"
}

# usage ARGS...: exit 2, nothing on stdout, one line with the --help hint.
usage() {
    mig "$@"
    expect_rc 2
    [ -s "$T/out" ] && die "stdout not empty"
    err_line '\(see --help\)$'
}

# unusable ARGS...: exit 1 (a failure, not bad usage: the command line is
# well formed, the file it names is not), nothing on stdout, one line.
unusable() {
    mig "$@"
    expect_rc 1
    [ -s "$T/out" ] && die "stdout not empty"
    err_line '.'
    grep -q 'see --help' "$T/err" && die "a file's fault sent to --help"
}

# finish: waits for the fake, which must have gone well.
finish() {
    wait_until -q 10 -p "$FAKE_PID" -n "hostd-fake ends" -- \
        pid_ended "$FAKE_PID"
    kill -0 "$FAKE_PID" 2>/dev/null && die "hostd-fake still running"
    wait "$FAKE_PID" || die "hostd-fake failed: $(cat "$T/fake.err")"
    FAKE_PID=
}

case_help() {
    mig --help
    expect_rc 0
    [ -s "$T/err" ] && die "stderr not empty"
    for o in live offline p2p persistent undefinesource timeout verbose xml \
             proxy peer connect wait help; do
        grep -q -- "--$o\b" "$T/out" || die "--help lacks --$o"
    done
    for s in '  0  moved' '  1  failed and rolled back' '  2  bad usage' \
             '  3  no answer' '  4  moved, but' '  5  failed and not' \
             '  130, 143'; do
        grep -qF -- "$s" "$T/out" || die "--help lacks exit status '$s'"
    done
    grep -q 'cancels the migration' "$T/out" || die "--help lacks Ctrl-C"
    for o in tls copy-storage-all copy-storage-inc migrate-disks \
             auto-converge bandwidth abort-on-error parallel \
             parallel-connections migrateuri listen-address dname domain \
             desturi postcopy; do
        grep -q -- "--$o\b" "$T/out" || die "--help lacks --$o"
    done
    grep -q 'shared storage\|storage both hosts share' "$T/out" ||
        die "--help does not say shared storage is needed"
    grep -q 'stop-and-copy' "$T/out" || die "--help lacks stop-and-copy"
    # Anywhere on the line, as virsh takes options.
    mig vm1 --help
    expect_rc 0
}

case_usage_no_args() { usage; grep -q 'DOMAIN and DESTURI' "$T/err" || die; }
case_usage_one_arg() { usage vm1; grep -q 'DESTURI is needed' "$T/err" || die; }
case_usage_extra_arg() { usage vm1 qemu:///b tcp://b x; }
case_usage_unknown_option() {
    usage --bogus vm1 qemu:///b
    grep -q "'--bogus'" "$T/err" || die "option not named"
    usage -x vm1 qemu:///b
    usage --live=yes vm1 qemu:///b
}
case_usage_missing_value() { usage vm1 qemu:///b --xml; }
case_usage_bad_timeout() {
    for t in abc 0 -1 1.5 4294967296 "" " 5" 5s; do
        usage --live --timeout "$t" vm1 qemu:///b
    done
}
case_usage_timeout_without_live() { usage --timeout 5 vm1 qemu:///b; }
case_usage_live_offline() { usage --live --offline vm1 qemu:///b; }
case_usage_bad_proxy() {
    for p in proxy:7000 tcp:host unix: tcp:h:0 ""; do
        usage --live --proxy "$p" vm1 qemu:///b
    done
}
case_usage_bad_peer() {
    for p in "unix:$T/x.sock" host-b:7410 tcp:host-b:99999; do
        usage --peer "$p" vm1 qemu:///b
    done
}
case_usage_bad_wait() {
    for w in -1 abc 1e9 nan inf ""; do usage --wait "$w" vm1 qemu:///b; done
}
case_usage_bad_connect() {
    usage --connect "$T/hostd.sock" vm1 qemu:///b
    CRANE_HOSTD_CONNECT=nowhere usage vm1 qemu:///b
    grep -q 'CRANE_HOSTD_CONNECT' "$T/err" || die "variable not named"
}
case_xml_missing() {
    unusable --xml "$T/none.xml" vm1 qemu:///b
    grep -q 'none.xml' "$T/err" || die "file not named"
}
case_xml_unusable() {
    : >"$T/empty.xml"
    unusable --xml "$T/empty.xml" vm1 qemu:///b
    grep -q 'empty' "$T/err" || die "emptiness not named"
    printf '<domain>\0</domain>' >"$T/nul.xml"
    unusable --xml "$T/nul.xml" vm1 qemu:///b
    head -c 70000 /dev/zero | tr '\0' x >"$T/big.xml"
    unusable --xml "$T/big.xml" vm1 qemu:///b
    grep -q '64 KiB' "$T/err" || die "limit not named"
    # Under the file limit, over the request's with the rest.
    head -c 65530 /dev/zero | tr '\0' x >"$T/big.xml"
    unusable --xml "$T/big.xml" vm1 qemu:///b
    grep -q '64 KiB' "$T/err" || die "request limit not named"
    unusable --xml "$T" vm1 qemu:///b
}

case_map_defaults() {
    fake ok
    migf vm1 qemu+ssh://host-b/system
    expect_rc 0
    finish
    field domain vm1
    field dest_uri qemu+ssh://host-b/system
    field migrate_uri ""
    for f in live p2p persistent undefine_source verbose; do field $f 0; done
    field timeout_s 0
    field proxy ""
    field peer ""
    field dest_xml "0 bytes"
}

case_map_options() {
    fake ok
    # Options after the operands too, as virsh takes them.
    migf --live --p2p --persistent vm-1 qemu+tcp://host-b/system \
        tcp://10.0.0.2:49152 --undefinesource --timeout 120 --verbose \
        --proxy tcp:proxyvm:7000 --peer tcp:[fd00::2]:7410 --wait 30
    expect_rc 0
    finish
    field domain vm-1
    field dest_uri qemu+tcp://host-b/system
    field migrate_uri tcp://10.0.0.2:49152
    for f in live p2p persistent undefine_source verbose; do field $f 1; done
    field timeout_s 120
    field proxy tcp:proxyvm:7000
    field peer "tcp:[fd00::2]:7410"
    field dest_xml "0 bytes"
    # --offline is the default said aloud; "--" ends the options.
    fake ok
    migf --offline --proxy unix:/run/crane/px.sock -- -vm qemu:///b
    expect_rc 0
    finish
    field domain -vm
    field live 0
    field proxy unix:/run/crane/px.sock
}

case_map_virsh_options() {
    fake ok
    migf --live --p2p --tls --copy-storage-all --migrate-disks vda,sdb \
        --auto-converge --bandwidth 64 --abort-on-error --parallel \
        --parallel-connections 4 --listen-address 10.0.0.2 --dname vm1-b \
        --compressed --disks-uri tcp://10.0.0.2:49153 --disks-port 49153 \
        --unsafe --change-protection --tunnelled --zerocopy \
        --tls-destination host-b.example --copy-storage-synchronous-writes \
        --timeout-suspend vm1 qemu+tls://host-b/system
    expect_rc 0
    finish
    for f in tls copy_storage_all auto_converge abort_on_error parallel \
             compressed unsafe change_protection tunnelled zerocopy \
             copy_storage_synchronous_writes; do
        field options.$f 1
    done
    field options.copy_storage_inc 0
    field options.bandwidth_mib 64
    field options.parallel_connections 4
    field options.disks_port 49153
    field options.listen_address 10.0.0.2
    field options.dname vm1-b
    field options.disks_uri tcp://10.0.0.2:49153
    field options.tls_destination host-b.example
    grep -qxF 'options.migrate_disks = vda sdb' "$T/dump" ||
        die "migrate_disks not 'vda sdb'"
    # None of them: no options message at all.
    fake ok
    migf vm1 qemu:///b
    expect_rc 0
    finish
    field options none
    fake ok
    migf --copy-storage-inc vm1 qemu:///b
    expect_rc 0
    finish
    field options.copy_storage_inc 1
    field options.copy_storage_all 0
    field options.tls 0
}

case_map_named() {
    fake ok
    migf --domain vm-n --desturi qemu+ssh://host-b/system \
        --migrateuri tcp://10.0.0.2:49152
    expect_rc 0
    finish
    field domain vm-n
    field dest_uri qemu+ssh://host-b/system
    field migrate_uri tcp://10.0.0.2:49152
    # Named ones take their place; operands fill the rest in order.
    fake ok
    migf --desturi qemu:///b vm-o tcp://10.0.0.3:1
    expect_rc 0
    finish
    field domain vm-o
    field dest_uri qemu:///b
    field migrate_uri tcp://10.0.0.3:1
    usage --domain vm1
    grep -q 'DESTURI is needed' "$T/err" || die "missing DESTURI not said"
    usage --domain vm1 --desturi qemu:///b --migrateuri tcp://x:1 extra
    grep -q "'extra'" "$T/err" || die "extra operand not named"
}

case_usage_virsh_options() {
    usage --copy-storage-all --copy-storage-inc vm1 qemu:///b
    usage --migrate-disks vda vm1 qemu:///b
    grep -q 'need --copy-storage-all' "$T/err" || die "reason not said"
    for d in "" , "$(printf 'a%.0s' $(seq 40))" \
             "$(seq -s, 1 65 | sed 's/[0-9]*/vd&/g')"; do
        usage --copy-storage-all --migrate-disks "$d" vm1 qemu:///b
    done
    for b in 0 -1 abc 1.5 "" 1099511627777; do
        usage --bandwidth "$b" vm1 qemu:///b
    done
    for n in 0 256 x; do
        usage --parallel --parallel-connections "$n" vm1 qemu:///b
    done
    usage --parallel-connections 2 vm1 qemu:///b
    usage --zerocopy vm1 qemu:///b
    usage --tunnelled vm1 qemu:///b
    usage --copy-storage-all --disks-port 70000 vm1 qemu:///b
    usage --dname a/b vm1 qemu:///b
    usage --suspend vm1 qemu:///b
    grep -q 'must run at the destination' "$T/err" || die "--suspend reason"
    usage --direct vm1 qemu:///b
    usage vm1 qemu:///b --bandwidth
    grep -q "needs a value" "$T/err" || die "missing value not said"
}

case_postcopy_refused() {
    for o in --postcopy --postcopy-after-precopy --timeout-postcopy \
             "--postcopy-bandwidth=10" --postcopy-resume; do
        usage --live $o vm1 qemu:///b
        grep -q 'post-copy\|post-copy migration' "$T/err" ||
            die "$o: no reason"
    done
    usage --live --postcopy vm1 qemu:///b
    grep -q 'loses the VM' "$T/err" || die "the reason lacks the VM's loss"
    grep -q 'unplugged before the copy' "$T/err" ||
        die "the reason lacks the GPU's part"
}

case_map_xml() {
    fake ok
    printf '<domain type="kvm">\n  <name>vm1</name>\n  <!-- é -->\n</domain>\n' \
        >"$T/dest.xml"
    migf --xml "$T/dest.xml" vm1 qemu:///b
    expect_rc 0
    finish
    field dest_xml "$(wc -c <"$T/dest.xml") bytes"
    cmp "$T/dest.xml" "$T/dump.xml" || die "dest_xml differs from the file"
}

case_map_connect_env() {
    fake ok
    CRANE_HOSTD_CONNECT=unix:$SOCK mig vm1 qemu:///b
    expect_rc 0
    finish
    # --connect wins over the variable.
    fake ok
    CRANE_HOSTD_CONNECT=unix:$T/none.sock migf vm1 qemu:///b
    expect_rc 0
    finish
}

case_ok() {
    fake ok
    migf vm1 qemu+ssh://host-b/system
    expect_rc 0
    finish
    [ -s "$T/err" ] && die "stderr not empty"
    cat >"$T/expect" <<'EOF'
[  0.010s] check     host-b ready: 1 of 2 GPUs free
[  0.012s] prepare   taking 2 programs off the GPU
[  0.058s] prepare   programs taken off the GPU
[  0.180s] detach    gpu0 detached
[  0.181s] migrate   migrating to host-b
[  4.200s] migrate   migrated: 1.0GiB
[  4.300s] attach    gpu1 attached at host-b
[  4.420s] resume    programs back on the GPU
        PHASE     PID     PROGRAM           START(s)  TOOK(ms)  RESULT
step    check     -       -                    0.001       9.0  ok
step    prepare   -       -                    0.012      46.0  ok
step    pre       4242    cl_worker            0.013      45.0  ok
step    pre       4243    render_farm          0.013      40.0  ok
step    detach    -       -                    0.060     120.0  ok
step    migrate   -       -                    0.181    4019.0  ok
step    attach    -       -                    4.200     100.0  ok
step    resume    -       -                    4.300     120.0  ok
step    post      4242    cl_worker            4.301      60.0  ok
step    post      4243    render_farm          4.302     110.0  ok
program 4242    cl_worker        pre      45.0 ms post      60.0 ms
program 4243    render_farm      pre      40.0 ms post     110.0 ms
stoppage: pre max 45.0 ms, post max 110.0 ms over 2 program(s)
migration: 20240517-101500-vm1
destination: host-b
total: 4.420 s
bytes: 1073741824 (1.0GiB)
result: ok
EOF
    diff -u "$T/expect" "$T/out" || die "output differs"
}

# virsh 11's progress: "\rMigration: [%5.2f %]" on stderr, a new text
# only when it changes, the line ended before the next thing printed.
case_verbose() {
    fake ok
    migf --verbose vm1 qemu:///b
    expect_rc 0
    finish
    # From a daemon that sends whole percents only (the fake repeats 10 %).
    want=$(for p in 10 20 30 40 50 60 70 80 90 100; do
               printf '~Migration: [%5.2f %%]' $p; done)
    tr '\r' '~' <"$T/err" | grep -qxF -- "$want" || die "progress differs"
    [ "$(wc -l <"$T/err")" = 1 ] || die "stderr is not the one progress line"
    grep -q '^Migration' "$T/out" && die "progress on stdout"
    has_line "result: ok"
}

case_verbose_tty() {
    command -v script >/dev/null || exit 77
    fake ok
    # script(1) gives crane-migrate a terminal; -e passes its exit status.
    script -qec "$MIGRATE --connect unix:$SOCK --verbose vm1 qemu:///b" \
        /dev/null >"$T/out" 2>"$T/err"
    RC=$?
    expect_rc 0
    finish
    # On one terminal: the percent rewritten in place, the line ended
    # before the next phase line.
    tr '\r' '~' <"$T/out" |
        grep -qF -- '~Migration: [90.00 %]~Migration: [100.00 %]' ||
        die "no in-place progress line"
    tr '\r' '~' <"$T/out" | grep -qxF -- '[  4.200s] migrate   migrated: 1.0GiB~' ||
        die "phase line not on its own line"
}

case_verbose_job() {
    fake jobinfo
    migf --verbose vm1 qemu:///b
    expect_rc 0
    finish
    # From the job's bytes: two decimals, truncated (49.50, not 50).
    want=$(for p in 10.00 20.00 30.00 40.00 49.50 60.00 70.00 80.00 90.00 \
                    100.00; do
               printf '~Migration: [%5s %%]' $p; done)
    tr '\r' '~' <"$T/err" | grep -qxF -- "$want" || die "progress differs"
}

case_jobinfo() {
    fake jobinfo
    migf vm1 qemu:///b
    expect_rc 0
    finish
    sed -n '/^bytes:/,/^result:/p' "$T/out" >"$T/got"
    cat >"$T/expect" <<'EOF'
bytes: 1073741824 (1.0GiB)
Job type:         Completed   
Operation:        Outgoing migration
Time elapsed:     4019         ms
Data processed:   1.000 GiB
Data remaining:   0.000 B
Data total:       1.000 GiB
Memory processed: 1.000 GiB
Memory remaining: 0.000 B
Memory total:     1.000 GiB
Memory bandwidth: 256.000 MiB/s
Dirty rate:       120          pages/s
Page size:        4096         bytes
Iteration:        3           
Total downtime:   42           ms
Setup time:       12           ms
result: ok
EOF
    diff -u "$T/expect" "$T/got" || die "domjobinfo figures differ"
}

case_rolled_back() {
    fake rolled-back
    migf --live --verbose vm1 qemu:///b
    expect_rc 1
    finish
    has_line "[  1.200s] migrate   migration failed: connection reset by peer"
    has_line "[  1.420s] rollback  programs back on the GPU at the source"
    has_line "step    migrate   -       -                    0.181    1019.0  FAILED: migration job: connection reset by peer"
    has_line "program 4242    cl_worker        pre      45.0 ms post      60.0 ms"
    has_line "stoppage: pre max 45.0 ms, post max 60.0 ms over 1 program(s)"
    has_line "result: rolled-back: migrate: connection reset by peer"
    # The progress line, ended, then the one line of the result.
    head -1 "$T/err" | tr '\r' '~' |
        grep -qxF '~Migration: [10.00 %]~Migration: [30.00 %]' ||
        die "progress line differs"
    sed -i 1d "$T/err"
    err_line 'rolled back: it runs on at the source: migrate: connection reset'
}

case_failed() {
    fake failed
    migf vm1 qemu:///b
    expect_rc 5
    finish
    # An error without text is named by its errno.
    has_line "step    migrate   -       -                    0.181    1019.0  FAILED: Connection reset by peer"
    has_line "step    rollback  -       -                    1.200     150.0  FAILED: attach gpu0: device busy"
    has_line "program 4242    cl_worker        pre      45.0 ms post         - ms"
    has_line "stoppage: pre max 45.0 ms, post max - ms over 1 program(s)"
    has_line "result: failed: rollback incomplete: gpu0 not attached again: Device or resource busy"
    err_line 'not fully restored \(migration 20240517-101500-vm1\): operator attention needed'
}

case_remoting() {
    fake remoting
    migf vm1 qemu:///b
    expect_rc 4
    finish
    has_line "result: remoting: host-b has no usable GPU: programs remote until one is attached"
    has_line "stoppage: pre max 45.0 ms, post max - ms over 2 program(s)"
    err_line 'moved, but the destination has no usable GPU'
    # What the guest named its program reaches the terminal defused: no
    # escape byte, no forged line.
    has_line "[  4.310s] resume    ?[2Jforged?result: ok"
    has_line "program 666     evil?]0;owned??result:_ok pre      30.0 ms post         - ms"
    grep -q $'\x1b\|\x07' "$T/out" && die "control bytes reach the terminal"
    [ "$(grep -c '^result:' "$T/out")" = 1 ] || die "a forged result line"
}

# A program died of a fault during the migration: its step "lost" with
# the reason, LOST on its line, a lost line, and exit status 6, not 0.
case_lost() {
    fake lost
    migf vm1 qemu:///b
    expect_rc 6
    finish
    has_line "step    lost      4243    render_farm          4.301       0.0  FAILED: the connection to the proxy tcp:px:7000 was lost"
    has_line "program 4243    render_farm      pre      40.0 ms post         - ms  LOST"
    has_line "lost: 1 program(s) died of a fault during the migration"
    has_line "result: ok: 1 program(s) lost to a fault: render farm[4243]: the connection to the proxy tcp:px:7000 was lost"
    err_line 'moved, but 1 program\(s\) died of a fault'
}

case_no_daemon() {
    mig --connect "unix:$T/none.sock" vm1 qemu:///b
    expect_rc 3
    err_line "cannot connect to crane-hostd at unix:$T/none.sock \(--connect\)"
    mig --connect tcp:127.0.0.1:1 vm1 qemu:///b
    expect_rc 3
    err_line 'cannot connect'
}

# timed ARGS...: migf, and SECS says how long it took.
timed() {
    local t0=$(date +%s%N)
    migf "$@"
    SECS=$((($(date +%s%N) - t0) / 1000000))
}

case_hang_wait() {
    fake hang
    timed --wait 1 vm1 qemu:///b
    expect_rc 3
    finish
    err_line 'no message from crane-hostd for 1 s \(--wait\); the migration may go on'
    [ "$SECS" -ge 900 ] && [ "$SECS" -lt 5000 ] || die "took $SECS ms"
    fake hang
    timed --wait 0.3 vm1 qemu:///b
    expect_rc 3
    finish
    [ "$SECS" -ge 250 ] && [ "$SECS" -lt 3000 ] || die "took $SECS ms"
}

case_partial_wait() {
    # Half a frame header, then silence: --wait holds inside a frame too.
    fake partial
    timed --wait 1 vm1 qemu:///b
    expect_rc 3
    finish
    has_line "[  0.010s] check     host-b ready: 1 of 2 GPUs free"
    err_line '\(--wait\)'
    [ "$SECS" -lt 5000 ] || die "took $SECS ms"
}

case_close() {
    fake close
    migf vm1 qemu:///b
    expect_rc 3
    finish
    has_line "[  0.058s] prepare   programs taken off the GPU"
    no_line '^result:'
    err_line "closed the connection before the migration's end; it may go on"
}

case_garbage() {
    fake garbage
    migf vm1 qemu:///b
    expect_rc 3
    finish
    err_line 'malformed reply from crane-hostd: undecodable'
}

case_empty() {
    fake empty
    migf vm1 qemu:///b
    expect_rc 3
    finish
    err_line 'malformed reply from crane-hostd: neither Progress nor MigrateDone'
}

case_huge() {
    fake huge
    migf vm1 qemu:///b
    expect_rc 3
    finish
    err_line 'malformed reply from crane-hostd: a frame over 1024 KiB'
}

case_unknown_result() {
    fake unknown
    migf vm1 qemu:///b
    expect_rc 3
    finish
    err_line 'malformed reply from crane-hostd: a MigrateDone with an unknown result'
    no_line '^result:'
}

# interrupted SIGNAL STATUS: crane-migrate watching a migration gets SIGNAL.
# A first signal cancels: HostCancel on a second connection, then the
# rollback's report and its exit status 1.
cancelled() {
    fake cancel
    $WRAP "$MIGRATE" --connect "unix:$SOCK" vm1 qemu:///b >"$T/out" \
        2>"$T/err" &
    local pid=$!
    wait_until -q 10 -p "$FAKE_PID" -t "$pid" -n "the request" -- \
        test -s "$T/dump"
    [ -s "$T/dump" ] || die "no request"
    kill -"$1" "$pid"
    wait "$pid"
    RC=$?
    expect_rc 1
    finish
    field cancel vm1
    has_line "result: rolled-back: cancelled by the operator while the hypervisor copied"
    grep -q 'cancelling migration 20240517-101500-vm1 of vm1: it rolls back' \
        "$T/err" || die "the cancel is not said"
}

case_cancel() {
    cancelled INT
    cancelled TERM
}

# A second signal stops watching; the cancel goes on in crane-hostd.
interrupted() {
    fake hang
    $WRAP "$MIGRATE" --connect "unix:$SOCK" vm1 qemu:///b >"$T/out" \
        2>"$T/err" &
    local pid=$!
    # The fake writes the dump once it has the request.
    wait_until -q 10 -p "$FAKE_PID" -t "$pid" -n "the request" -- \
        test -s "$T/dump"
    [ -s "$T/dump" ] || die "no request"
    kill -"$1" "$pid"
    # The fake takes no cancel (it never accepts again): crane-migrate
    # says it could not cancel within its bound, then the second signal.
    wait_until -q 20 -t "$pid" -n "the cancel's answer" -- \
        grep -q 'cannot cancel' "$T/err"
    kill -"$1" "$pid"
    wait "$pid"
    RC=$?
    expect_rc "$2"
    finish
    grep -q 'interrupted again: stopped watching; the cancel and its rollback go on in crane-hostd' "$T/err" ||
        die 'the second interrupt is not said'
}

case_interrupt() {
    interrupted INT 130
    interrupted TERM 143
}

case_valgrind() {
    command -v valgrind >/dev/null || exit 77
    WRAP=$VALGRIND
    printf '<domain/>\n' >"$T/dest.xml"
    fake ok
    migf --live --verbose --xml "$T/dest.xml" --proxy tcp:p:1 vm1 qemu:///b
    expect_rc 0
    finish
    fake rolled-back
    migf vm1 qemu:///b
    expect_rc 1
    finish
    fake remoting
    migf vm1 qemu:///b
    expect_rc 4
    finish
    for s in garbage huge unknown close; do
        fake $s
        migf vm1 qemu:///b
        expect_rc 3
        finish
    done
    fake hang
    migf --wait 0.5 vm1 qemu:///b
    expect_rc 3
    finish
    interrupted INT 130
    unusable --xml "$T/none.xml" vm1 qemu:///b
    usage --live --timeout x vm1 qemu:///b
    mig --help
    expect_rc 0
}

fn="case_${1//-/_}"
declare -F "$fn" >/dev/null || { echo "unknown case $1"; exit 2; }
"$fn"
echo "PASS $1"
