# Sourced by tests/e2e/live.sh: each phase's verdict, the run's end and
# cleanup, and the helpers the phases share (progress, status, migrate,
# the history's API, the blocker VM, the sniffer of the links).

# --- verdicts ---------------------------------------------------------------
# begin PHASE: a new phase; its checks start clean.
begin() {
    PHASE=$1
    FAILED=0
    T0=$(e2e_now)
    e2e_log "=== phase $PHASE"
}
# verdict: records the phase's result; a failed phase ends the run (the
# ones after it depend on where it left the VM).
verdict() {
    if [ $FAILED = 0 ]; then
        echo "$PHASE PASS" >> "$RESULTS"
        e2e_log "=== $PHASE: PASS ($(e2e_since "$T0") s)"
    else
        echo "$PHASE FAIL" >> "$RESULTS"
        e2e_log "=== $PHASE: FAIL"
        finish
    fi
}
finish() {
    e2e_hostd_stop > "$WORK/hostd-stop.out" ||
        { cat "$WORK/hostd-stop.out"; [ "$PHASE" = done ] && echo "done FAIL" >> "$RESULTS"; }
    e2e_log "whole run: $(e2e_since "$TALL") s"
    if [ "$PHASE" = done ] && ! grep -q FAIL "$RESULTS"; then
        e2e_log "live: PASS"
        exit 0
    fi
    e2e_log "live: FAIL in phase $PHASE (logs in $WORK)"
    for f in "$WORK"/hostd-*.log; do
        [ -f "$f" ] && { echo "--- $f"; tail -12 "$f"; }
    done
    for f in "$WORK"/console*.log "$WORK"/proxy/console.log; do
        [ -f "$f" ] && { echo "--- $f"; grep -v 'PROGRESS' "$f" | tail -12; }
    done
    exit 1
}
cleanup() {
    for p in $EVPIDS; do kill "$p" 2>/dev/null; done
    for p in $HOSTD_PIDS; do kill "$p" 2>/dev/null; done
    for p in $HOSTD_PIDS; do wait "$p" 2>/dev/null; done
    for u in "${SURI:-}" "${DURI:-}"; do
        [ -n "$u" ] || continue
        for d in "$DOM" "$DOM-blocker" "$PDOM"; do
            virsh -q -c "$u" destroy "$d" > /dev/null 2>&1
            virsh -q -c "$u" undefine "$d" > /dev/null 2>&1
        done
    done
    "$LIBVIRTD" stop "$SRC" > /dev/null 2>&1
    "$LIBVIRTD" stop "$DST" > /dev/null 2>&1
    ip link del "$BR" 2> /dev/null
}

# --- helpers ----------------------------------------------------------------
# iters FILE TAG EVENT: the iteration count of the last "CRANE-TAG-GPU
# EVENT UPTIME at N" line of FILE; UPTIME of it in UP.
gpu_at() {
    awk -v p="CRANE-$2-GPU $3" '{ sub(/\r$/, "") } index($0, p) == 1 { u = $3; n = $5 }
        END { print n " " u }' "$1"
}
# progress_at FILE TAG UPTIME: the last progress count at or before UPTIME
# (the guest's clock) in FILE.
progress_at() {
    awk -v p="CRANE-$2-PROGRESS" -v t="$3" '{ sub(/\r$/, "") }
        index($0, p) == 1 && $2 <= t { n = $3 }
        END { print n + 0 }' "$1"
}
# wait_progress FILE TAG MIN [TIMEOUT]: waits for TAG's progress >= MIN.
wait_progress() {
    if IT=$(e2e_wait_count "$1" "CRANE-$2-PROGRESS" 3 "$3" "${4:-$CL_TIMEOUT}"); then
        e2e_log "$2 at $IT iterations: $(e2e_since "$T0") s"
    else
        IT=0
        fail "$2: not $3 iterations within ${4:-$CL_TIMEOUT}s"
    fi
}
# last_it FILE TAG: the newest progress count of TAG in FILE.
last_it() {
    awk -v p="CRANE-$2-PROGRESS" '{ sub(/\r$/, "") } index($0, p) == 1 { n = $3 }
        END { print n + 0 }' "$1"
}
# status SOCKET OUT: cranectl status over the guest's channel.
status() {
    "$B/bin/cranectl" --connect "unix:$1" --timeout 20 status > "$2" 2>&1
    sed 's/^/    /' "$2"
}
# passthrough OUT NAME...: each NAME is listed in passthrough in OUT.
passthrough() {
    _o=$1
    shift
    for _n in "$@"; do
        grep -qE "^program +[0-9]+ +$_n +passthrough" "$_o" ||
            fail "$_n is not in passthrough ($_o)"
    done
}
# dest_xml URI HOP: the domain's migratable XML on URI for the next hop:
# its console and channel renamed (what the current QEMU holds open), the
# GPU removed (detached before the move), libvirt's tap name dropped.
dest_xml() {
    virsh -q -c "$1" dumpxml --migratable "$DOM" |
        sed -e "s|<source path='$WORK/console[^']*'|<source path='$WORK/console-$2.log'|g" \
            -e "s|<source mode='bind' path='$WORK/guest[^']*'|<source mode='bind' path='$WORK/guest-$2.sock'|g" \
            -e "/<target dev='vnet[0-9]*'\/>/d" \
            -e "/<rng[ >]/,/<\/rng>/d" > "$WORK/dest-$2.xml"
}
# migrate FROM TO XML MIGRATE_URI [ARGS...]: crane-migrate --live --p2p on
# FROM's crane-hostd, to TO; output in WORK/migrate-PHASE.out; sets RC.
migrate() {
    _from=$1 _to=$2 _xml=$3 _muri=$4
    shift 4
    _peer=$PORT0
    [ "$_to" = dst ] && _peer=$((PORT0 + 2))
    _uri=$SURI
    [ "$_to" = dst ] && _uri=$DURI
    _t=$(e2e_now)
    "$B/bin/crane-migrate" --connect "unix:$WORK/$_from-hostd.sock" \
        --peer "tcp:127.0.0.1:$_peer" --verbose --live --p2p --persistent \
        --undefinesource "$@" --xml "$_xml" "$DOM" "$_uri" "$_muri" \
        > "$WORK/migrate-$PHASE.out" 2>&1
    RC=$?
    MIGRATE_S=$(e2e_since "$_t")
    e2e_log "crane-migrate exit $RC after $MIGRATE_S s"
    sed 's/^/    /' "$WORK/migrate-$PHASE.out"
}
# api PORT: the newest migration of that crane-hostd, with its steps, as
# JSON (its HTTP API).
api_newest() {
    _id=$(curl -sf "http://127.0.0.1:$1/api/migrations" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["migrations"][0]["id"])')
    curl -sf "http://127.0.0.1:$1/api/migrations/$_id"
}
# wait_result PORT WANT: until that crane-hostd's newest migration has
# result WANT in its history (the log line comes just before the write).
newest_is() { [ "$(e2e_newest_result "$1")" = "$2" ]; }
wait_result() {
    e2e_wait "$WORK/results" "$TIMEOUT" newest_is "$1" "$2" ||
        fail "history on port $1: not $2"
}
# blocker URI: another VM that holds that host's GPU (firmware only).
blocker() {
    cat > "$WORK/blocker.xml" <<EOF
<domain type='qemu'>
  <name>$DOM-blocker</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
$(e2e_rng_xml | sed 's/^/    /')
    <memballoon model='none'/>
  </devices>
</domain>
EOF
    virsh -q -c "$1" create "$WORK/blocker.xml" > /dev/null || fail "blocker VM"
}
# nic MAC: the VMs' network interface on the bridge.
nic() {
    printf "    <interface type='bridge'>\n      <mac address='%s'/>\n" "$1"
    printf "      <source bridge='%s'/>\n      <model type='virtio'/>\n" "$BR"
    printf "    </interface>\n"
}

# sniff_start: tests/e2e/sniff.py watches the links between the hosts
# while the VM moves: libvirt's migration ports (QEMU to QEMU), the two
# crane-hostd peers, the proxy link; the markers are what each carries in
# clear (guest RAM: the kernel's banner; the peers: the domain's name; the
# proxy link: the programs' kernel sources, sent as they go remote).
sniff_start() {
    rm -f "$WORK/sniff.json" "$WORK/sniff.json.ready"
    python3 "$E2E_ROOT/tests/e2e/sniff.py" "$WORK/sniff.json" \
        "memory=49152-49215:Linux version,CRANE-GUESTD" \
        "peers=$PORT0,$((PORT0 + 2)):$DOM" \
        "proxy=7420:__kernel,stencil" > "$WORK/sniff.out" 2>&1 &
    SNIFF_PID=$!
    wait_until -q 30 -e "$SNIFF_PID" -n "the sniffer listens" -- \
        test -f "$WORK/sniff.json.ready" || fail "the sniffer did not start: $(cat "$WORK/sniff.out")"
}
# sniff_check: each link carried bytes, none of its markers in clear, and
# each end said it used TLS.
sniff_check() {
    kill -TERM "$SNIFF_PID" 2> /dev/null
    wait "$SNIFF_PID"
    python3 - "$WORK/sniff.json" <<'PY' || fail "a link between the hosts was not encrypted"
import json, sys
s = json.load(open(sys.argv[1]))
least = {"memory": 16 << 20, "peers": 64, "proxy": 1024}
bad = 0
for name, n in least.items():
    l = s[name]
    print("    %s: %d bytes in %d packets, in clear: %s" % (name, l["bytes"], l["packets"], l["seen"] or "nothing"))
    if l["bytes"] < n:
        print("    %s: fewer than %d bytes: the link was not watched" % (name, n))
        bad = 1
    bad |= bool(l["seen"])
sys.exit(bad)
PY
    for h in src dst; do
        grep -q 'peer links: TLS psk' "$WORK/hostd-$h.log" || fail "$h's peer links not TLS"
    done
    grep -q 'sets migrate_tls_force: migrating with TLS' "$WORK/hostd-src.log" ||
        fail "src's crane-hostd did not take TLS from qemu.conf"
    grep -q 'migrating to .*TLS' "$WORK/migrate-$PHASE.out" || fail "the migration did not say TLS"
    grep -q 'listening on tcp:0.0.0.0:7420 .*TLS psk' "$WORK/proxy/console.log" ||
        fail "crane-proxy not on TLS"
    [ "$(grep -c 'remote: TLS (psk) to '"$PROXY_EP" "$C")" -ge 2 ] ||
        fail "the programs did not reach the proxy over TLS"
}
