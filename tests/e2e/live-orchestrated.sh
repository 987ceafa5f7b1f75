# Sourced by tests/e2e/live.sh: the phases driven by crane-hostctl around
# libvirt's own migration (orchestrated) and its shared memory (shm).

# --- orchestrated -----------------------------------------------------------
# hostctl HOST OUT ARGS...: crane-hostctl on HOST's crane-hostd; its output
# in WORK/OUT; sets RC.
hostctl() {
    _h=$1 _o=$2
    shift 2
    _t=$(e2e_now)
    "$B/bin/crane-hostctl" --connect "unix:$WORK/$_h-hostd.sock" "$@" \
        > "$WORK/$_o" 2>&1
    RC=$?
    e2e_log "crane-hostctl $1 on $_h: exit $RC after $(e2e_since "$_t") s"
    sed 's/^/    /' "$WORK/$_o"
}
# api_get PORT ID: migration ID of that crane-hostd's history, as JSON.
api_get() {
    curl -sf "http://127.0.0.1:$1/api/migrations/$2"
}
# wait_id PORT ID WANT: until migration ID has result WANT in that history.
# (Polled outside WORK, whose files changing count as the test's progress.)
id_is() {
    api_get "$1" "$2" > "$E2E_DIR/live-poll.json" 2>/dev/null &&
        grep -q "\"result\":\"$3\"" "$E2E_DIR/live-poll.json"
}
wait_id() {
    _r=0
    e2e_wait "$WORK/results" "$TIMEOUT" id_is "$1" "$2" "$3" || _r=1
    cp "$E2E_DIR/live-poll.json" "$WORK/api-$2-$1.json" 2>/dev/null
    [ $_r = 1 ] || return 0
    fail "migration $2 on port $1: not $3 ($(cat "$WORK/api-$2-$1.json" 2>/dev/null | head -c 300))"
}
# status_ok SOCKET OUT: the guest idle with the victim in passthrough.
status_ok() {
    status "$1" "$2"
    grep -q '^phase: *idle' "$2" || fail "guest not idle ($2)"
    passthrough "$2" cl_worker
}
# orch_abort HOST: prepare on HOST, a migration libvirt cannot make, abort.
orch_abort() {
    _from=$1 _uri=$DURI _turi=$SURI _port=$((PORT0 + 3)) _ev=$WORK/events-dst.log
    if [ "$_from" = src ]; then
        _uri=$SURI _turi=$DURI _port=$((PORT0 + 1)) _ev=$WORK/events-src.log
    fi
    _id=orch-abort-$$
    _rm=$(grep -c "device-removed.*ua-gpu0" "$_ev")
    _back=$(grep -c '^CRANE-VC-GPU back' "$CON")
    dest_xml "$_uri" 4
    hostctl "$_from" "orch-prepare-abort.out" prepare --live --id "$_id" "$DOM"
    [ $RC = 0 ] || fail "prepare exit $RC, expected 0"
    grep -q '^result: ok' "$WORK/orch-prepare-abort.out" || fail "prepare: no 'result: ok'"
    grep -qE '^step +pre +[0-9]+ +cl_worker .* ok' "$WORK/orch-prepare-abort.out" ||
        fail "the victim did not go remote (no pre step)"
    step "GPU unplugged by the prepare" "$_ev" "device-removed.*ua-gpu0" $((_rm + 1))
    # 192.0.2.1 (TEST-NET-1): the destination's QEMU cannot listen there.
    virsh -q -c "$_uri" migrate --live --p2p --persistent --undefinesource --tls \
        --xml "$WORK/dest-4.xml" "$DOM" "$_turi" tcp://192.0.2.1 \
        > "$WORK/virsh-abort.out" 2>&1 && fail "virsh migrate to 192.0.2.1 succeeded"
    e2e_log "virsh migrate failed as it must: $(head -n 1 "$WORK/virsh-abort.out")"
    hostctl "$_from" "orch-abort.out" abort "$DOM"
    [ $RC = 0 ] || fail "abort exit $RC, expected 0"
    step "the victim sees its GPU back" "$CON" '^CRANE-VC-GPU back' $((_back + 1))
    status_ok "$CHAN" "$WORK/status-$PHASE-abort.out"
    wait_id "$_port" "$_id" rolled-back
}
# orch_cancel HOST: prepare on HOST, then crane-hostctl cancel: the VM
# waited prepared, so the cancel undoes the prepare as abort does; a second
# cancel finds nothing.
orch_cancel() {
    _from=$1 _port=$((PORT0 + 3)) _ev=$WORK/events-dst.log
    [ "$_from" = src ] && _port=$((PORT0 + 1)) _ev=$WORK/events-src.log
    _id=orch-cancel-$$
    _rm=$(grep -c "device-removed.*ua-gpu0" "$_ev")
    _back=$(grep -c '^CRANE-VC-GPU back' "$CON")
    hostctl "$_from" "orch-prepare-cancel.out" prepare --live --id "$_id" "$DOM"
    [ $RC = 0 ] || fail "prepare exit $RC, expected 0"
    step "GPU unplugged by the prepare" "$_ev" "device-removed.*ua-gpu0" $((_rm + 1))
    hostctl "$_from" "orch-cancel.out" cancel "$DOM"
    [ $RC = 0 ] || fail "cancel of the prepared VM: exit $RC, expected 0"
    grep -q "^cancel: done; $DOM was prepared" "$WORK/orch-cancel.out" ||
        fail "cancel of the prepared VM: not undone"
    step "the victim sees its GPU back" "$CON" '^CRANE-VC-GPU back' $((_back + 1))
    status_ok "$CHAN" "$WORK/status-$PHASE-cancel.out"
    wait_id "$_port" "$_id" rolled-back
    grep -q 'crane-hostctl cancel' "$WORK/api-$_id-$_port.json" ||
        fail "history: the cancel not said"
    hostctl "$_from" "orch-cancel-again.out" cancel "$DOM"
    [ $RC = 1 ] || fail "a second cancel: exit $RC, expected 1"
    grep -q "no migration of $DOM runs here" "$WORK/orch-cancel-again.out" ||
        fail "a second cancel: not refused as none runs"
}
# orch_hop FROM TO N: prepare on FROM, virsh migrate --live FROM -> TO,
# resume on TO; the victim computes through the proxy domain meanwhile.
orch_hop() {
    _from=$1 _to=$2 _n=$3
    _furi=$DURI _turi=$SURI _fport=$((PORT0 + 3)) _tport=$((PORT0 + 1))
    if [ "$_from" = src ]; then
        _furi=$SURI _turi=$DURI _fport=$((PORT0 + 1)) _tport=$((PORT0 + 3))
    fi
    _id=orch-$_n-$$
    dest_xml "$_furi" "$_n"
    hostctl "$_from" "orch-prepare-$_n.out" prepare --live --id "$_id" --to "$_to" "$DOM"
    [ $RC = 0 ] || fail "prepare exit $RC, expected 0"
    grep -qE '^step +pre +[0-9]+ +cl_worker .* ok' "$WORK/orch-prepare-$_n.out" ||
        fail "the victim did not go remote (no pre step)"
    _t=$(e2e_now)
    virsh -q -c "$_furi" migrate --live --p2p --persistent --undefinesource --tls \
        --xml "$WORK/dest-$_n.xml" "$DOM" "$_turi" tcp://127.0.0.1 \
        > "$WORK/virsh-$_n.out" 2>&1 || fail "virsh migrate $_from -> $_to: $(cat "$WORK/virsh-$_n.out")"
    e2e_log "virsh migrate --live $_from -> $_to: $(e2e_since "$_t") s"
    hostctl "$_to" "orch-resume-$_n.out" resume --id "$_id" --from "$_from" "$DOM"
    [ $RC = 0 ] || fail "resume exit $RC, expected 0"
    grep -qE '^step +post +[0-9]+ +cl_worker .* ok' "$WORK/orch-resume-$_n.out" ||
        fail "the victim did not come back (no post step)"
    _new=$WORK/console-$_n.log
    _chan=$WORK/guest-$_n.sock
    step "the victim sees its GPU on $_to" "$_new" '^CRANE-VC-GPU back'
    status_ok "$WORK/guest-$_n.sock" "$WORK/status-$PHASE-$_n.out"
    set -- $(gpu_at "$CON" VC gone)
    _gone=${1:-0}
    set -- $(gpu_at "$_new" VC back)
    _backit=${1:-0}
    e2e_log "victim: $((_backit - _gone)) iterations between the unplug on $_from (at $_gone) and the GPU's return on $_to (at $_backit)"
    echo "VC hop $_n during $((_backit - _gone))" >> "$WORK/progress-live"
    [ "$_backit" -gt "$_gone" ] || fail "the victim made no progress while the VM moved"
    # The pool as a scheduler reads it, from the real libvirt: the GPU
    # held by the VM on the destination, free again on the source.
    hostctl "$_to" "orch-pool-$_n-to.out" pool --json
    python3 - "$WORK/orch-pool-$_n-to.out" "$DOM" <<'PY' || fail "pool on $_to: gpu0 not held by $DOM"
import json, sys
p = json.loads(open(sys.argv[1]).read().splitlines()[0])
g = {x["name"]: x for x in p["gpus"]}
assert g["gpu0"]["state"] == "held" and g["gpu0"]["holder"] == sys.argv[2], p
PY
    hostctl "$_from" "orch-pool-$_n-from.out" pool --format placement
    python3 - "$WORK/orch-pool-$_n-from.out" <<'PY' || fail "pool on $_from: gpu0 not free"
import json, sys
p = json.loads(open(sys.argv[1]).read().splitlines()[0])
x = p["providers"][0]
assert x["usages"]["CUSTOM_CRANE_GPU"] == 0 and x["inventories"]["CUSTOM_CRANE_GPU"]["reserved"] == 0, p
PY
    [ "$(virsh -q -c "$_turi" domstate "$DOM")" = running ] || fail "not running on $_to"
    virsh -q -c "$_furi" dominfo "$DOM" > /dev/null 2>&1 && fail "still defined on $_from"
    # The source's migration ends ok once libvirt says the VM left; the
    # destination's (the same id) once the programs are back.
    wait_id "$_fport" "$_id" ok
    wait_id "$_tport" "$_id" ok
    grep -q '"phase":"moved"' "$WORK/api-$_id-$_fport.json" || fail "source history: no moved step"
    grep -q '"phase":"attach"' "$WORK/api-$_id-$_tport.json" || fail "destination history: no attach step"
    CON=$_new
    CHAN=$_chan
    V0=$(last_it "$CON" VC)
    wait_progress "$CON" VC $((V0 + 50))
    grep -q 'CRANE-VC-RESULT' "$CON" && fail "the victim ended: $(grep RESULT "$CON")"
}
phase_orchestrated() {
begin orchestrated
step "the victim program registered" "$C1" '^CRANE-VC-REGISTERED' 1 "$CL_TIMEOUT"
wait_progress "$CON" VC 100
CHAN=$WORK/guest-1.sock
orch_abort dst
orch_cancel dst
orch_hop dst src 5
orch_hop src dst 6
verdict
}

# --- shm --------------------------------------------------------------------
# bulk OUT KIND: the victim's bulk bytes in a cranectl status output, "shm"
# or "stream", or whether its shared area is attached ("area").
bulk() {
    awk -v kind="$2" '$1 == "program" { cur = $3 }
        $1 == "bulk:" && cur == "cl_worker" {
            if (kind == "shm") print $3
            else if (kind == "stream") print $6
            else print $9
        }' "$1"
}
# shm_events DOMAIN KIND: lines of dst's events log for the shared memory's
# KIND (device-added, device-removed) in DOMAIN.
shm_regex() { echo "$2.*'$1'.*ua-crane-shm-|'$1'.*$2.*ua-crane-shm-"; }
shm_events() { grep -cE "$(shm_regex "$1" "$2")" "$WORK/events-dst.log"; }
# shm_event_step DOMAIN KIND BEFORE: waits for one more such line.
shm_event_step() {
    step "$2 of the area in $1" "$WORK/events-dst.log" "$(shm_regex "$1" "$2")" $(($3 + 1))
}
phase_shm() {
begin shm
# (after orchestrated the VM is on ldst again, CON and CHAN its console and
# channel; run alone after live, the same VM of live; the victim registered
# where live left the VM: console-1.log)
CHAN=${CHAN:-$WORK/guest-1.sock}
step "the victim program registered" "$C1" '^CRANE-VC-REGISTERED' 1 "$CL_TIMEOUT"
SHM_ID=shm-$$
V0=$(last_it "$CON" VC)
wait_progress "$CON" VC $((V0 + 20))
hostctl dst "shm-prepare.out" prepare --live --id "$SHM_ID" "$DOM"
[ $RC = 0 ] || fail "prepare exit $RC, expected 0"
grep -qE '^step +pre +[0-9]+ +cl_worker .* ok' "$WORK/shm-prepare.out" ||
    fail "the victim did not go remote (no pre step)"
# Remoting over TCP to the proxy domain on the same host; then the area.
status "$CHAN" "$WORK/status-$PHASE-tcp.out"
grep -qE '^program +[0-9]+ +cl_worker +remoting' "$WORK/status-$PHASE-tcp.out" ||
    fail "the victim is not remoting"
ADD_G=$(shm_events "$DOM" device-added) ADD_P=$(shm_events "$PDOM" device-added)
_t=$(e2e_now)
hostctl dst "shm-attach.out" shm "$DOM"
[ $RC = 0 ] || fail "crane-hostctl shm exit $RC, expected 0"
e2e_log "shared memory plugged into both domains and taken: $(e2e_since "$_t") s"
shm_event_step "$DOM" device-added "$ADD_G"
shm_event_step "$PDOM" device-added "$ADD_P"
step "crane-proxy finds the area among its ivshmem BARs" "$PC" 'its shared area is .*/resource2'
status "$CHAN" "$WORK/status-$PHASE-shm0.out"
[ "$(bulk "$WORK/status-$PHASE-shm0.out" area)" = attached ] || fail "the victim has no area attached"
S0=$(bulk "$WORK/status-$PHASE-shm0.out" shm) T0S=$(bulk "$WORK/status-$PHASE-shm0.out" stream)
_t=$(e2e_now)
V0=$(last_it "$CON" VC)
wait_progress "$CON" VC $((V0 + 20))
status "$CHAN" "$WORK/status-$PHASE-shm1.out"
S1=$(bulk "$WORK/status-$PHASE-shm1.out" shm) T1S=$(bulk "$WORK/status-$PHASE-shm1.out" stream)
_dt=$(e2e_since "$_t")
e2e_log "victim through shared memory: shm ${S0:-?} -> ${S1:-?} B, stream ${T0S:-?} -> ${T1S:-?} B in $_dt s"
[ "${S1:-0}" -gt "${S0:-0}" ] || fail "no bulk bytes through the shared memory"
[ $(( (${T1S:-0} - ${T0S:-0}) * 10 )) -le $(( ${S1:-0} - ${S0:-0} )) ] ||
    fail "more than a tenth of the bulk bytes on the stream while the area was attached"
echo "shm bytes $((${S1:-0} - ${S0:-0})) seconds $_dt" >> "$WORK/progress-live"
# Given up while the victim computes: bulk back on TCP, the device gone.
REM_G=$(shm_events "$DOM" device-removed) REM_P=$(shm_events "$PDOM" device-removed)
hostctl dst "shm-release.out" shm --release "$DOM"
[ $RC = 0 ] || fail "crane-hostctl shm --release exit $RC, expected 0"
shm_event_step "$DOM" device-removed "$REM_G"
shm_event_step "$PDOM" device-removed "$REM_P"
step "crane-proxy gave the area up" "$PC" 'shared memory given up'
status "$CHAN" "$WORK/status-$PHASE-tcp1.out"
[ "$(bulk "$WORK/status-$PHASE-tcp1.out" area)" = none ] || fail "the victim still has an area"
grep -qE '^program +[0-9]+ +cl_worker +remoting' "$WORK/status-$PHASE-tcp1.out" ||
    fail "the victim is not remoting after the release"
S2=$(bulk "$WORK/status-$PHASE-tcp1.out" shm) T2S=$(bulk "$WORK/status-$PHASE-tcp1.out" stream)
_t=$(e2e_now)
V0=$(last_it "$CON" VC)
wait_progress "$CON" VC $((V0 + 20))
status "$CHAN" "$WORK/status-$PHASE-tcp2.out"
S3=$(bulk "$WORK/status-$PHASE-tcp2.out" shm) T3S=$(bulk "$WORK/status-$PHASE-tcp2.out" stream)
_dt=$(e2e_since "$_t")
e2e_log "victim over TCP after the release: shm ${S2:-?} -> ${S3:-?} B, stream ${T2S:-?} -> ${T3S:-?} B in $_dt s"
[ "${S3:-x}" = "${S2:-y}" ] || fail "bulk bytes through the area after its release"
[ "${T3S:-0}" -gt "${T2S:-0}" ] || fail "no bulk bytes on the stream after the release"
echo "stream bytes $((${T3S:-0} - ${T2S:-0})) seconds $_dt" >> "$WORK/progress-live"
grep -q 'CRANE-VC-RESULT' "$CON" && fail "the victim ended: $(grep RESULT "$CON")"
# Back to the GPU; the victim goes on in passthrough.
_back=$(grep -c '^CRANE-VC-GPU back' "$CON")
hostctl dst "shm-abort.out" abort --id "$SHM_ID" "$DOM"
[ $RC = 0 ] || fail "abort exit $RC, expected 0"
step "the victim sees its GPU back" "$CON" '^CRANE-VC-GPU back' $((_back + 1))
status_ok "$CHAN" "$WORK/status-$PHASE.out"
wait_id $((PORT0 + 3)) "$SHM_ID" rolled-back
V0=$(last_it "$CON" VC)
wait_progress "$CON" VC $((V0 + 20))
grep -q 'CRANE-VC-RESULT' "$CON" && fail "the victim ended: $(grep RESULT "$CON")"
verdict
}
