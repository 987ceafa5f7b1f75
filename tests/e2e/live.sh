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
#
# This file holds the command line, the settings and the order of things;
# the rest is sourced from beside it: live-lib.sh (verdicts, cleanup and
# the phases' helpers), live-setup.sh (the one boot), live-phases.sh (the
# phases crane-migrate drives), live-orchestrated.sh (orchestrated, shm).
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

LIVE=$(dirname "$0")
. "$LIVE/live-lib.sh"
PHASE=setup
: > "$RESULTS"
trap cleanup EXIT
trap 'exit 1' INT TERM
. "$LIVE/live-phases.sh"
. "$LIVE/live-orchestrated.sh"
# Boots everything (a failed setup ends the run there).
. "$LIVE/live-setup.sh"

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
