#!/bin/bash
# e2e: the whole mission live: real OpenCL programs compute through a proxy domain while their VM live-migrates between two libvirtd, and the faults of that path.
#
# Usage: tests/e2e/live.sh [run [PHASE...]] | result PHASE | --list | cleanup
#
# `run` (the default) boots, once, on this machine:
#   - a bridge crane-e2e-br (10.77.0.1/24; another name and subnet for
#     another CRANE_E2E_DIR) that both libvirtd "hosts"
#     attach their VMs to, as a data-centre L2 network spans real hosts;
#   - libvirtd "lsrc" and "ldst", each with a crane-hostd (peers on
#     loopback with a fresh key, one GPU each: the ua-gpu0 rng stand-in);
#   - the proxy domain crane-proxydom, defined on ldst and named in dst's
#     crane-hostd config (proxy_domain, proxy = tcp:10.77.0.2:7420,
#     proxy_key): crane-hostd boots it; it runs crane-proxy on its own
#     PoCL device with HMAC auth (vmimages/clguest/60-crane-proxy);
#   - the guest crane-live on lsrc (10.77.0.10): crane-guestd,
#     tests/guest/cl_worker and tests/guest/cl_pyworker.py (pyopencl, numpy:
#     Debian's packages, unmodified) started plainly on PoCL, under crane
#     through the crane-guest package's ICD.  crane in both VMs comes from
#     its .debs (make deb, cached by the source), installed into the image
#     as dpkg would (vmimages/build-clguest.sh); the setup checks that the
#     running crane-guestd, crane-proxy and each program's libcrane.so are
#     the packaged files (md5 as in the .deb) started from their units.
# Then the phases, in order, each with its own verdict in WORK/results:
#   proxy-down     the proxy domain is paused: `crane-migrate --live` is
#                  refused before anything changes (exit 1), both programs
#                  stay in passthrough, no unplug
#   migrate-fails  the migration URI cannot be listened on: the programs
#                  went remote, the GPU is plugged back on lsrc, both are
#                  in passthrough again and go on computing
#   (every link between the hosts encrypted: peers and proxy link with
#   TLS-PSK, the VM's memory with libvirt's TLS, forced by qemu.conf on a
#   PKI of this run; phase live sniffs them: tests/e2e/sniff.py)
#   live           `crane-migrate --live --p2p` to ldst: both programs
#                  make progress between the GPU's unplug and its return
#                  (through the proxy domain, while the VM moves), are back
#                  in passthrough on ldst, stop and print PASS (every result
#                  compared with a CPU model, byte for byte); each one's pre
#                  and post stoppage and the VM's downtime are in both
#                  histories, src's metrics, and its dashboard (headless
#                  Chromium, tests/hostd/dashboard.sh)
#   orchestrated   libvirt itself migrates the VM (virsh migrate, as an
#                  orchestrator's own virDomainMigrate would), crane-hostctl
#                  around it: prepare on the source, a migration that fails
#                  then abort (the GPU back, the program in passthrough),
#                  then prepare and crane-hostctl cancel (undone as abort
#                  would), then prepare, virsh migrate --live ldst -> lsrc, resume
#                  on lsrc, and the same back to ldst; the victim program
#                  (below) computes through the proxy domain while the VM
#                  moves and passes its self-checks after each hop; both
#                  histories have each migration by the id crane-hostctl
#                  gave (source ok once the VM left, destination ok)
#   shm            on ldst, where the proxy domain runs: crane-hostctl
#                  prepare --live (the victim remotes over TCP), then
#                  crane-hostctl shm: ldst's crane-hostd plugs an
#                  ivshmem-plain <shmem> (proxy_shm_mb) into the VM and the
#                  proxy domain, the victim's bulk bytes go through its BAR
#                  (status: shm bytes grow, stream bytes barely); shm
#                  --release: the victim gives it up while it computes
#                  (bulk back on TCP, no call lost), the device leaves
#                  both domains; abort: the GPU back, the victim in
#                  passthrough, computing on
#   no-free-gpu    back to lsrc while another VM holds lsrc's GPU: exit 4,
#                  a third program (cl_worker again, "victim") keeps
#                  computing through the proxy domain; once the other VM is
#                  gone lsrc's crane-hostd plugs the GPU in and the program
#                  is back in passthrough by itself
#   proxy-dies     to ldst, whose GPU is held again: while the victim
#                  remotes, the proxy domain is destroyed; the victim fails
#                  with an OpenCL error (never a wrong result), dst's
#                  history has a proxy-lost step and says why, crane-hostd
#                  boots the proxy domain again; the VM waiting there got
#                  shared memory with the proxy domain by itself, given up
#                  and unplugged when the GPU came free
# `result PHASE` exits 0 if that phase passed in the last run, 1 if it
# failed or did not run, 77 if the run was skipped.  `cleanup` stops the
# libvirtd instances and removes the bridge.
#
# Environment: CRANE_E2E_TIMEOUT (60 s without progress per step,
# tests/README.md), CRANE_E2E_CL_TIMEOUT (300 s without progress for the
# programs' start under TCG), CRANE_E2E_CL_MEM (guest MiB, 768),
# CRANE_E2E_CL_AFTER (iterations on ldst before the programs stop, 150),
# CRANE_E2E_CL_AFTER_S (and seconds of guest time on ldst, 20: while the
# test checks they are back in passthrough),
# CRANE_E2E_KARGS (more for the guest's kernel command line, e.g.
# crane.pocl_debug=all), CRANE_E2E_PROXY_ISOLATION (crane-proxy's
# --isolation in the proxy domain, tenant), HOSTD.  Exit 0 pass, 1 fail, 77 skip.  Logs: $CRANE_E2E_DIR/live/.
set -u
. "$(dirname "$0")/lib.sh"

PHASES="proxy-down migrate-fails live orchestrated shm no-free-gpu proxy-dies"
TIMEOUT=${CRANE_E2E_TIMEOUT:-60}
CL_TIMEOUT=${CRANE_E2E_CL_TIMEOUT:-300}
MEM=${CRANE_E2E_CL_MEM:-768}
AFTER=${CRANE_E2E_CL_AFTER:-150}
AFTER_S=${CRANE_E2E_CL_AFTER_S:-20}
SRC=lsrc
DST=ldst
DOM=crane-live
PDOM=crane-proxydom
# The bridge and its subnet are private to $CRANE_E2E_DIR, so two live runs
# on one machine (each with its own CRANE_E2E_DIR) do not collide: the
# default directory keeps crane-e2e-br and 10.77.0.0/24.
if [ "$E2E_DIR" = /tmp/crane-e2e ]; then
    BR=crane-e2e-br NET=10.77.0
else
    E2E_NET_N=$(( $(printf '%s' "$E2E_DIR" | cksum | cut -d' ' -f1) % 200 + 20 ))
    BR=crane-br$E2E_NET_N NET=10.77.$E2E_NET_N
fi
PROXY_EP=tcp:$NET.2:7420
# crane-proxy's own default: a worker process per tenant.  With one spare
# worker two programs connecting at once waited 60 s under TCG for the
# second one's worker; --spares (2 by default) keeps one ready for each.
PROXY_ISOLATION=${CRANE_E2E_PROXY_ISOLATION:-tenant}
# Shared memory between the VM and the proxy domain on ldst (MiB): an
# empty pcie-root-port of q35 gets a 2 MiB prefetchable window from the
# firmware, which a larger ivshmem BAR would not fit.
SHM_MB=2
PORT0=$(e2e_free_ports 10) || { echo "no free ports"; exit 1; }
B=$E2E_ROOT/build
WORK=$E2E_DIR/live
RESULTS=$WORK/results
LIBVIRTD=$E2E_ROOT/tests/e2e/libvirtd.sh
HOSTD_PIDS=""
EVPIDS=""
FAILED=0

RUN_PHASES=$PHASES
case "${1:-run}" in
--list) echo $PHASES; exit 0 ;;
cleanup)
    "$LIBVIRTD" stop "$SRC"; "$LIBVIRTD" stop "$DST"
    ip link del "$BR" 2>/dev/null
    exit 0 ;;
result)
    [ $# = 2 ] || { echo "usage: $0 result PHASE" >&2; exit 2; }
    [ -f "$RESULTS" ] || { echo "live.sh: no run recorded ($RESULTS)"; exit 1; }
    if grep -q '^SKIP' "$RESULTS"; then
        echo "live.sh: skipped: $(sed -n 's/^SKIP //p' "$RESULTS")"; exit 77
    fi
    v=$(awk -v p="$2" '$1 == p { v = $2 } END { print v }' "$RESULTS")
    echo "live.sh: $2: ${v:-not run}"
    [ "$v" = PASS ]; exit ;;
run)
    # run PHASE...: only those (in the order above; `live` alone for the
    # demo); orchestrated, shm, no-free-gpu and proxy-dies need live
    # before them.
    if [ $# -gt 1 ]; then
        shift
        RUN_PHASES=""
        for ph in $PHASES; do
            for w in "$@"; do [ "$w" = "$ph" ] && RUN_PHASES="$RUN_PHASES $ph"; done
        done
        [ -n "$RUN_PHASES" ] || { echo "live.sh: no such phase: $*" >&2; exit 2; }
    fi ;;
*) echo "usage: $0 [run [PHASE...]] | result PHASE | --list | cleanup" >&2; exit 2 ;;
esac

mkdir -p "$WORK"
skip() { echo "SKIP $*" > "$RESULTS"; echo "skip: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (libvirtd, QEMU and a bridge)"
HOSTD=${HOSTD:-$B/bin/crane-hostd}
for bin in "$HOSTD" "$B/bin/crane-migrate" "$B/bin/crane-hostctl" "$B/bin/cranectl" \
    "$B/tests/guest/cl_worker"; do
    [ -x "$bin" ] || skip "$bin not built"
done
[ -f /etc/OpenCL/vendors/pocl.icd ] || skip "PoCL not installed (pocl-opencl-icd)"
/usr/bin/python3 -c 'import numpy, pyopencl' 2> /dev/null ||
    skip "python3-pyopencl and python3-numpy not installed"
for t in mkfs.ext4 strace ip curl dpkg-buildpackage dh; do
    command -v $t > /dev/null || skip "$t missing (vmimages/setup-vm-host.sh)"
done

# --- verdicts ---------------------------------------------------------------
PHASE=setup
: > "$RESULTS"
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
trap cleanup EXIT
trap 'exit 1' INT TERM

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

# --- setup ------------------------------------------------------------------
TALL=$(e2e_now)
T0=$TALL
e2e_clguest_image || { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: building $E2E_CLGUEST_VM"; exit 1; }
e2e_log "image ready: $(e2e_since "$T0") s (disk $(du -k "$E2E_CLGUEST_VM/cl-root.img" | cut -f1) KiB)"
grep -q cl_pyworker "$E2E_CLGUEST_VM/check.out" 2>/dev/null ||
    { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: the image has no cl_pyworker"; exit 1; }

# Leftovers of an interrupted run.
for d in "$DOM" "$DOM-blocker" "$PDOM"; do
    for n in $SRC $DST; do
        [ -S "$E2E_DIR/$n/run/libvirt-sock" ] || continue
        virsh -q -c "$("$LIBVIRTD" uri $n)" destroy "$d" > /dev/null 2>&1
        virsh -q -c "$("$LIBVIRTD" uri $n)" undefine "$d" > /dev/null 2>&1
    done
done
ip link del "$BR" 2> /dev/null
rm -rf "$WORK"
mkdir -p "$WORK/proxy"
: > "$RESULTS"
ip link add "$BR" type bridge && ip addr add "$NET.1/24" dev "$BR" &&
    ip link set "$BR" up || { echo "setup FAIL" >> "$RESULTS"; e2e_log "FAIL: bridge $BR"; exit 1; }

# Every byte between the two "hosts" encrypted: the proxy link and the
# crane-hostd peers with TLS-PSK (their keys, tls = auto), the VM's memory
# with libvirt's migration TLS on a PKI made for this run and forced
# (migrate_tls_force: libvirt refuses any migration in clear, virsh's own
# in phase orchestrated included).  An instance left by an earlier run
# would keep its own qemu.conf: stopped first.
PKI=$WORK/pki
MKPKI_KEY_TYPE=rsa "$E2E_ROOT/tests/tls/mkpki.sh" "$PKI" crane-live > "$WORK/pki.out" 2>&1 ||
    { cat "$WORK/pki.out"; echo "setup FAIL" >> "$RESULTS"; exit 1; }
mkdir -p "$PKI/qemu"
cp "$PKI/CA/cacert.pem" "$PKI/qemu/ca-cert.pem"
for who in server client; do
    cp "$PKI/libvirt/${who}cert.pem" "$PKI/qemu/$who-cert.pem"
    cp "$PKI/libvirt/private/${who}key.pem" "$PKI/qemu/$who-key.pem"
done
export CRANE_LIBVIRTD_QEMU_CONF="migrate_tls_x509_cert_dir = \"$PKI/qemu\"
migrate_tls_force = 1"
"$LIBVIRTD" stop "$SRC" > /dev/null 2>&1
"$LIBVIRTD" stop "$DST" > /dev/null 2>&1
T0=$(e2e_now)
SURI=$("$LIBVIRTD" start "$SRC") || { echo "setup FAIL" >> "$RESULTS"; exit 1; }
DURI=$("$LIBVIRTD" start "$DST") || { echo "setup FAIL" >> "$RESULTS"; exit 1; }
e2e_log "libvirtd $SRC and $DST up: $(e2e_since "$T0") s"
VS="virsh -q -c $SURI"
VD="virsh -q -c $DURI"

head -c 32 /dev/urandom > "$WORK/key"
head -c 32 /dev/urandom > "$WORK/proxy.key"
chmod 600 "$WORK/key" "$WORK/proxy.key"
# The proxy domain's key disk: the key, padded to a sector.
cp "$WORK/proxy.key" "$WORK/proxy-key.img"
truncate -s 512 "$WORK/proxy-key.img"
e2e_rng_xml > "$WORK/rng.xml"

# The proxy domain: the same image in its proxy role, no GPU of the pool
# (it would own one in production), the key as a second read-only disk, a
# console that survives a restart, and a pcie-to-pci-bridge (on a root
# port of its own) for the shared memory crane-hostd plugs in: libvirt
# puts an ivshmem device, conventional PCI, only on such a bus (phase shm;
# the guest gets one too).
e2e_cl_domain_xml "$PDOM" "$WORK/proxy" "$E2E_CLGUEST_VM" 768 \
    "crane.role=proxy crane.ip=$NET.2/24 crane.proxy_isolation=$PROXY_ISOLATION" |
    sed -e '/<rng[ >]/,/<\/rng>/d' \
        -e "s|<source path='$WORK/proxy/console.log'/>|<source path='$WORK/proxy/console.log' append='on'/>|" |
    awk -v key="$WORK/proxy-key.img" -v nic="$(nic 52:54:00:77:00:02)" '
        /<memballoon/ {
            print "    <controller type=\x27pci\x27 model=\x27pcie-root-port\x27/>"
            print "    <controller type=\x27pci\x27 model=\x27pcie-to-pci-bridge\x27/>"
            print "    <disk type=\x27file\x27 device=\x27disk\x27>"
            print "      <driver name=\x27qemu\x27 type=\x27raw\x27/>"
            print "      <source file=\x27" key "\x27/>"
            print "      <target dev=\x27vdb\x27 bus=\x27virtio\x27/>"
            print "      <readonly/>"
            print "    </disk>"
            print nic
        }
        { print }' > "$WORK/proxy.xml"
for u in "$SURI" "$DURI"; do e2e_forget_domains "$u" "$DOM" "$PDOM" "$DOM-blocker"; done
$VD define "$WORK/proxy.xml" > /dev/null || { echo "setup FAIL" >> "$RESULTS"; exit 1; }

# The programs stop AFTER iterations after the GPU's return on ldst: its
# second return when migrate-fails (a rollback) runs first.
BACKS=1
case " $RUN_PHASES " in *" migrate-fails "*) BACKS=2 ;; esac
e2e_cl_domain_xml "$DOM" "$WORK" "$E2E_CLGUEST_VM" "$MEM" \
    "crane.ip=$NET.10/24 crane.py=1 crane.cl_backs=$BACKS crane.cl_after=$AFTER crane.cl_after_s=$AFTER_S crane.cl_words=65536 crane.victim=1${CRANE_E2E_KARGS:+ $CRANE_E2E_KARGS}" |
    awk -v nic="$(nic 52:54:00:77:00:10)" '/<memballoon/ { print nic
        print "    <controller type=\x27pci\x27 model=\x27pcie-root-port\x27/>"
        print "    <controller type=\x27pci\x27 model=\x27pcie-to-pci-bridge\x27/>" } { print }' \
    > "$WORK/domain.xml"
$VS define "$WORK/domain.xml" > /dev/null || { echo "setup FAIL" >> "$RESULTS"; exit 1; }

virsh -c "$SURI" event --all --loop --timestamp > "$WORK/events-src.log" 2>&1 &
EVPIDS="$EVPIDS $!"
virsh -c "$DURI" event --all --loop --timestamp > "$WORK/events-dst.log" 2>&1 &
EVPIDS="$EVPIDS $!"

E2E_WORK=$WORK
CONF="prepare_deadline_ms = 120000
resume_deadline_ms = 90000
proxy = $PROXY_EP
proxy_key = $WORK/proxy.key
proxy_start_ms = 180000
proxy_timeout_ms = 15000"
T0=$(e2e_now)
# migrate_tls = auto (the default) reads each host's qemu.conf: TLS forced.
e2e_hostd src "$SURI" $PORT0 $((PORT0 + 1)) "$CONF" \
    "qemu_conf = $E2E_DIR/$SRC/etc/qemu.conf"
e2e_hostd dst "$DURI" $((PORT0 + 2)) $((PORT0 + 3)) "$CONF" "proxy_domain = $PDOM" \
    "proxy_shm_mb = $SHM_MB" "qemu_conf = $E2E_DIR/$DST/etc/qemu.conf"
step "crane-hostd src up" "$WORK/hostd-src.log" 'crane-hostd on src'
step "crane-hostd dst up" "$WORK/hostd-dst.log" 'crane-hostd on dst'
$VS start "$DOM" > /dev/null || fail "start $DOM"
step "dst's crane-hostd boots the proxy domain" "$WORK/hostd-dst.log" "proxy domain $PDOM started"
PC=$WORK/proxy/console.log
C=$WORK/console.log
step "proxy domain on the network" "$PC" '^CRANE-NET eth0' 1 "$CL_TIMEOUT"
step "crane-proxy listens in the proxy domain" "$PC" '^CRANE-PROXY-UP' 1 "$CL_TIMEOUT"
step "guest on the network" "$C" '^CRANE-NET eth0' 1 "$CL_TIMEOUT"
step "crane-guestd up in the guest" "$C" 'CRANE-GUESTD-UP' 1 "$CL_TIMEOUT"
step "cl_worker registered" "$C" '^CRANE-CL-REGISTERED' 1 "$CL_TIMEOUT"
step "cl_pyworker registered" "$C" '^CRANE-PY-REGISTERED' 1 "$CL_TIMEOUT"
# crane in both VMs is what its .debs installed (vmimages/install-debs.sh).
e2e_clguest_packaged "$C" "$PC" CL PY
wait_progress "$C" CL 100
wait_progress "$C" PY 50
grep -q 'RESULT' "$C" && fail "a program ended on src: $(grep RESULT "$C")"
e2e_log "setup: $(e2e_since "$TALL") s"
[ $FAILED = 0 ] || { echo "setup FAIL" >> "$RESULTS"; finish; }

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

for ph in $RUN_PHASES; do
    "phase_${ph//-/_}"
done
# A phase cut short (a shell error aborts the loop) has no verdict: the
# run fails rather than pass without it.
for ph in $RUN_PHASES; do
    grep -q "^$ph " "$RESULTS" ||
        { PHASE=$ph; echo "$ph FAIL" >> "$RESULTS"; e2e_log "FAIL: phase $ph cut short"; finish; }
done
PHASE=done
finish
