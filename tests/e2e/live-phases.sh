# Sourced by tests/e2e/live.sh: the phases driven by crane-migrate:
# proxy-down, migrate-fails, live, no-free-gpu, proxy-dies.

# --- proxy-down -------------------------------------------------------------
phase_proxy_down() {
begin proxy-down
$VD suspend "$PDOM" > /dev/null || fail "suspend the proxy domain"
dest_xml "$SURI" 1
migrate src dst "$WORK/dest-1.xml" tcp://127.0.0.1
[ $RC = 1 ] || fail "crane-migrate exit $RC, expected 1"
grep -q "does not answer" "$WORK/migrate-$PHASE.out" || fail "no 'does not answer'"
grep -q "nothing was changed" "$WORK/migrate-$PHASE.out" || fail "not said that nothing changed"
grep -qE '^step +prepare' "$WORK/migrate-$PHASE.out" && fail "a prepare was sent"
grep -q 'device-removed' "$WORK/events-src.log" && fail "the GPU was unplugged"
status "$WORK/guest0.sock" "$WORK/status-$PHASE.out"
grep -q '^phase: *idle' "$WORK/status-$PHASE.out" || fail "guest not idle"
passthrough "$WORK/status-$PHASE.out" cl_worker python3
[ "$(e2e_newest_result $((PORT0 + 1)))" = rolled-back ] || fail "src history: not rolled-back"
$VD resume "$PDOM" > /dev/null || fail "resume the proxy domain"
# (a TCG VM just resumed may take seconds to answer again: the next
# phase's probe allows proxy_timeout_ms, 15 s here)
CL0=$(last_it "$C" CL)
wait_progress "$C" CL $((CL0 + 20))
verdict
}

# --- migrate-fails ----------------------------------------------------------
phase_migrate_fails() {
begin migrate-fails
dest_xml "$SURI" 1
# 192.0.2.1 (TEST-NET-1) is no address of this host: dst's QEMU cannot
# listen there; libvirt fails after the programs went remote and the GPU
# was unplugged.
migrate src dst "$WORK/dest-1.xml" tcp://192.0.2.1 --timeout 30
[ $RC = 1 ] || fail "crane-migrate exit $RC, expected 1"
grep -q 'migration failed' "$WORK/migrate-$PHASE.out" || fail "no migration failure"
for p in cl_worker python3; do
    grep -qE "^step +pre +[0-9]+ +$p .* ok" "$WORK/migrate-$PHASE.out" ||
        fail "$p did not go remote (no pre step)"
done
step "GPU plugged back on src" "$WORK/events-src.log" 'device-added.*ua-gpu0'
step "cl_worker sees its GPU back" "$C" '^CRANE-CL-GPU back'
step "cl_pyworker sees its GPU back" "$C" '^CRANE-PY-GPU back'
status "$WORK/guest0.sock" "$WORK/status-$PHASE.out"
grep -q '^phase: *idle' "$WORK/status-$PHASE.out" || fail "guest not idle"
passthrough "$WORK/status-$PHASE.out" cl_worker python3
[ "$($VS domstate "$DOM")" = running ] || fail "not running on src"
[ "$(e2e_newest_result $((PORT0 + 1)))" = rolled-back ] || fail "src history: not rolled-back"
CL0=$(last_it "$C" CL)
PY0=$(last_it "$C" PY)
wait_progress "$C" CL $((CL0 + 50))
wait_progress "$C" PY $((PY0 + 25))
grep -q 'RESULT' "$C" && fail "a program ended: $(grep RESULT "$C")"
verdict
}

# --- live -------------------------------------------------------------------
phase_live() {
begin live
dest_xml "$SURI" 1
sniff_start
migrate src dst "$WORK/dest-1.xml" tcp://127.0.0.1
[ $RC = 0 ] || fail "crane-migrate exit $RC, expected 0"
sniff_check
grep -q '^result: ok' "$WORK/migrate-$PHASE.out" || fail "no 'result: ok'"
for p in cl_worker python3; do
    grep -qE "^program +[0-9]+ +$p +pre +[0-9.]+ ms post +[0-9.]+ ms" \
        "$WORK/migrate-$PHASE.out" || fail "no stoppage line of $p"
done
grep -qE '^step +downtime ' "$WORK/migrate-$PHASE.out" || fail "no downtime step"
C1=$WORK/console-1.log
CON=$C1
step "cl_worker sees its GPU on dst" "$C1" '^CRANE-CL-GPU back'
step "cl_pyworker sees its GPU on dst" "$C1" '^CRANE-PY-GPU back'
status "$WORK/guest-1.sock" "$WORK/status-$PHASE.out"
grep -q '^phase: *idle' "$WORK/status-$PHASE.out" || fail "guest not idle on dst"
passthrough "$WORK/status-$PHASE.out" cl_worker python3
# Progress while the VM moved: from the GPU's unplug on src (the programs
# were remote by then) to its return on dst (before they left the proxy).
for tag in CL PY; do
    set -- $(gpu_at "$C" $tag gone)
    gone=${1:-0} gone_up=${2:-0}
    set -- $(gpu_at "$C1" $tag back)
    back=${1:-0} back_up=${2:-0}
    span=$(awk -v a="$gone_up" -v b="$back_up" 'BEGIN { printf "%.1f", b - a }')
    before=$(( gone - $(progress_at "$C" $tag "$(awk -v a="$gone_up" -v s="$span" 'BEGIN { print a - s }')") ))
    e2e_log "$tag: $((back - gone)) iterations between the unplug (at $gone) and the GPU's return on dst (at $back), ${span} s of guest time; $before in the same span before"
    echo "$tag during $((back - gone)) before $before span $span" >> "$WORK/progress-live"
    [ "$back" -gt "$gone" ] || fail "$tag made no progress while the VM moved"
done
step "cl_worker stops on dst" "$C1" '^CRANE-CL-RESULT' 1 "$CL_TIMEOUT"
step "cl_pyworker stops on dst" "$C1" '^CRANE-PY-RESULT' 1 "$CL_TIMEOUT"
for tag in CL PY; do
    r=$(grep "^CRANE-$tag-RESULT" "$C1" | tail -n 1 | tr -d '\r')
    e2e_log "$r"
    case $r in "CRANE-$tag-RESULT PASS"*) ;; *) fail "$tag did not pass on dst" ;; esac
done
grep -q 'RESULT' "$C" && fail "a program ended on src"
[ "$($VD domstate "$DOM")" = running ] || fail "not running on dst"
$VS dominfo "$DOM" > /dev/null 2>&1 && fail "still defined on src"
[ "$(e2e_newest_result $((PORT0 + 1)))" = ok ] || fail "src history: not ok"
[ "$(e2e_newest_result $((PORT0 + 3)))" = ok ] || fail "dst history: not ok"
# The history: each program's pre and post, the downtime.
api_newest $((PORT0 + 1)) > "$WORK/api-$PHASE.json"
python3 - "$WORK/api-$PHASE.json" <<'PY' || fail "history: stoppage or downtime missing"
import json, sys
m = json.load(open(sys.argv[1]))
steps = m["steps"]
for prog in ("cl_worker", "python3"):
    for phase in ("pre", "post"):
        s = [x for x in steps if x.get("program") == prog and x["phase"] == phase]
        assert s and s[0]["duration"] > 0, (prog, phase)
d = [x for x in steps if x["phase"] == "downtime" and not x.get("pid")]
assert d and 0 < d[0]["duration"] < 30, d
print("    history: pre/post of both programs, downtime %.1f ms" % (d[0]["duration"] * 1e3))
PY
curl -sf "http://127.0.0.1:$((PORT0 + 1))/metrics" > "$WORK/metrics-src.txt"
grep -qE '^crane_migration_downtime_seconds_count\{mode="live"\} [1-9]' "$WORK/metrics-src.txt" ||
    fail "metrics: no downtime"
grep -qE '^crane_migration_stoppage_seconds_count\{phase="post"\} [1-9]' "$WORK/metrics-src.txt" ||
    fail "metrics: no post stoppage"
# The dashboard, in headless Chromium, on the history this wrote (a copy:
# the daemon still runs).
cp "$WORK/src.db" "$WORK/src-copy.db"
[ -f "$WORK/src.db-wal" ] && cp "$WORK/src.db-wal" "$WORK/src-copy.db-wal"
bash "$E2E_ROOT/tests/hostd/dashboard.sh" "$WORK/src-copy.db" > "$WORK/dashboard.out" 2>&1
r=$?
tail -n 2 "$WORK/dashboard.out" | sed 's/^/    /'
[ $r = 0 ] || [ $r = 77 ] || fail "dashboard on the real history"
verdict
}

# --- no-free-gpu ------------------------------------------------------------
phase_no_free_gpu() {
begin no-free-gpu
# (the victim registers where live left the VM: console-1.log; CON is
# where the VM writes now, after orchestrated's hops)
step "the victim program registered on dst" "$C1" '^CRANE-VC-REGISTERED' 1 "$CL_TIMEOUT"
wait_progress "$CON" VC 100
blocker "$SURI"
dest_xml "$DURI" 2
migrate dst src "$WORK/dest-2.xml" tcp://127.0.0.1
[ $RC = 4 ] || fail "crane-migrate exit $RC, expected 4 (remoting)"
C2=$WORK/console-2.log
status "$WORK/guest-2.sock" "$WORK/status-$PHASE-wait.out"
grep -q '^phase: *prepared' "$WORK/status-$PHASE-wait.out" || fail "guest not waiting (prepared) on src"
grep -qE '^program +[0-9]+ +cl_worker +remot' "$WORK/status-$PHASE-wait.out" ||
    fail "the victim is not remoting"
V0=$(last_it "$C2" VC)
wait_progress "$C2" VC $((V0 + 50))
e2e_log "victim computing through the proxy domain while no GPU is free: $V0 -> $IT"
$VS destroy "$DOM-blocker" > /dev/null || fail "destroy the blocker"
step "src plugs the freed GPU in" "$WORK/events-src.log" "device-added.*'$DOM'.*ua-gpu0|'$DOM'.*device-added.*ua-gpu0"
step "the victim sees its GPU" "$C2" '^CRANE-VC-GPU back'
step "src resumed it by itself" "$WORK/hostd-src.log" "migration .* $DOM: ok"
wait_result $((PORT0 + 1)) ok
status "$WORK/guest-2.sock" "$WORK/status-$PHASE.out"
grep -q '^phase: *idle' "$WORK/status-$PHASE.out" || fail "guest not idle on src"
passthrough "$WORK/status-$PHASE.out" cl_worker
V0=$(last_it "$C2" VC)
wait_progress "$C2" VC $((V0 + 50))
grep -q 'CRANE-VC-RESULT' "$C2" && fail "the victim ended"
verdict
}

# --- proxy-dies -------------------------------------------------------------
phase_proxy_dies() {
begin proxy-dies
ADD_G=$(shm_events "$DOM" device-added) REM_G=$(shm_events "$DOM" device-removed)
SHM_GIVEN=$(grep -c "$DOM: bulk bytes to the proxy domain $PDOM" "$WORK/hostd-dst.log")
blocker "$DURI"
dest_xml "$SURI" 3
migrate src dst "$WORK/dest-3.xml" tcp://127.0.0.1
[ $RC = 4 ] || fail "crane-migrate exit $RC, expected 4 (remoting)"
C3=$WORK/console-3.log
V0=$(last_it "$C3" VC)
wait_progress "$C3" VC $((V0 + 20))
# Waiting for a GPU on the proxy domain's host: shared memory by itself.
step "dst gives the waiting VM shared memory" "$WORK/hostd-dst.log" \
    "$DOM: bulk bytes to the proxy domain $PDOM through $SHM_MB MiB" $((SHM_GIVEN + 1))
shm_event_step "$DOM" device-added "$ADD_G"
PROXY_UPS=$(grep -c '^CRANE-PROXY-UP' "$PC")
$VD destroy "$PDOM" > /dev/null || fail "destroy the proxy domain"
step "dst notes the proxy domain's death" "$WORK/hostd-dst.log" "proxy domain $PDOM stopped"
step "dst boots the proxy domain again" "$WORK/hostd-dst.log" "proxy domain $PDOM started again"
step "crane-proxy up again" "$PC" '^CRANE-PROXY-UP' $((PROXY_UPS + 1)) "$CL_TIMEOUT"
step "the victim ends" "$C3" '^CRANE-VC-RESULT' 1 "$CL_TIMEOUT"
r=$(grep '^CRANE-VC-RESULT' "$C3" | tail -n 1 | tr -d '\r')
e2e_log "$r"
case $r in
*"differs from the CPU model"*) fail "the victim computed a wrong result" ;;
*"CRANE-VC-RESULT FAIL"*"FAIL cl_worker: "*"(-"[0-9]*")") ;;
*) fail "the victim did not end with an OpenCL error" ;;
esac
api_newest $((PORT0 + 3)) > "$WORK/api-$PHASE.json"
grep -q '"proxy-lost"' "$WORK/api-$PHASE.json" || fail "dst history: no proxy-lost step"
$VD destroy "$DOM-blocker" > /dev/null || fail "destroy the blocker"
step "dst finishes the migration" "$WORK/hostd-dst.log" "migration .* $DOM: ok"
# The programs left the proxy: the area went before them.
shm_event_step "$DOM" device-removed "$REM_G"
wait_result $((PORT0 + 3)) ok
api_newest $((PORT0 + 3)) > "$WORK/api-$PHASE-end.json"
grep -q 'proxy domain stopped while' "$WORK/api-$PHASE-end.json" ||
    fail "dst history: the migration does not say the proxy died"
verdict
}
