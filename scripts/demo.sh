#!/bin/bash
# The demo (`make demo`), on this machine alone:
#   1. re-home: a running OpenCL program has its whole GPU state taken out,
#      the vendor library unloaded and reloaded, every object rebuilt and
#      every byte put back, many times, and still verifies every byte;
#   2. the guest side of a migration: crane-guestd and cranectl take a
#      running program off the GPU onto a local crane-proxy (it keeps
#      computing), unload the "GPU driver", bring it back, then do the same
#      stop-and-copy; the program verifies every byte at the end;
#   3. as root with vmimages/setup-vm-host.sh's packages: the whole mission
#      live (tests/e2e/live.sh, phase live): a proxy domain VM, a guest
#      whose cl_worker and pyopencl program compute through it while
#      crane-migrate --live --p2p moves the VM between two libvirtd; its
#      phases, the programs' progress during the move, the stoppage table
#      and the VM's downtime;
#   4. the same program through a stop-and-copy migration.
# Parts 3 and 4 are skipped (said so) without root or the VM packages.
set -eu
cd "$(dirname "$0")/.."
B=build
T=$(mktemp -d /tmp/crane-demo.XXXXXX)
PIDS=()
cleanup() {
    touch "$T/stop"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

ms() {  # the "stoppage: max X ms" of a cranectl answer, in ms
    awk '/^stoppage: max/ { print $3 }' "$1"
}

echo "== 1. re-home: a program under crane, re-homed every 200 OpenCL calls"
build/tests/programs/longrun 1500
CRANE_REHOME_EVERY=200 CRANE_REHOME_REPORT="$T/report" CRANE_LOG_LEVEL=warn \
    $B/bin/crane-run build/tests/programs/longrun 1500
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       n++; t += v["total"]; if (v["total"] > m) m = v["total"] }
     END { if (n) printf "   %d re-homes, calls held %.1f ms on average, %.1f ms at most\n", n, t/n*1e3, m*1e3 }' \
    "$T/report"

echo
echo "== 2. the guest side of a migration"
echo "   (this machine's OpenCL device is PoCL on the CPU, with no kernel"
echo "    driver to unload: tests/guest/fake-modprobe.sh stands in for"
echo "    modprobe, and its device node appears 1 s after loading, like a"
echo "    GPU driver bringing its device up)"
mkdir -p "$T/mods/dev"
touch "$T/mods/fakegpu.loaded" "$T/mods/dev/fakegpu0"
echo 1 >"$T/mods/fakegpu.delay"
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
EOF
$B/bin/crane-proxy --listen "unix:$T/proxy.sock" 2>"$T/proxy.log" &
PIDS+=($!)
CRANE_FAKE_MODULES=$T/mods $B/bin/crane-guestd --config "$T/guestd.conf" \
    2>"$T/guestd.log" &
PIDS+=($!)
for _ in $(seq 100); do
    [ -S "$T/ctl.sock" ] && [ -S "$T/proxy.sock" ] && break
    sleep 0.05
done
ctl() { $B/bin/cranectl --connect "unix:$T/ctl.sock" "$@"; }
its() { cut -d' ' -f1 "$T/progress" 2>/dev/null || echo 0; }

echo "-- a program computing under the shim (cl_worker: a stencil over 3 MiB"
echo "   of buffers, checked against a CPU model every 50 iterations)"
CRANE_SOCKET=$T/guest.sock CRANE_LOG_LEVEL=warn $B/bin/crane-run \
    $B/tests/guest/cl_worker --stop-file "$T/stop" --progress "$T/progress" \
    --seconds 300 >"$T/worker.out" 2>&1 &
worker=$!
PIDS+=($worker)
for _ in $(seq 100); do
    ctl status 2>/dev/null | grep -q '^program ' && [ "$(its)" -gt 0 ] && break
    sleep 0.1
done
sleep 1
ctl status

echo
echo "-- cranectl prepare --live: onto the proxy, then the driver unloaded"
ctl prepare --live | tee "$T/prepare.out"
a=$(its); sleep 2; b=$(its)
echo "   while remoting through crane-proxy, with the GPU driver unloaded:"
echo "   iterations $a -> $b"
[ "$b" -gt "$a" ] || { echo "demo: the program did not compute"; exit 1; }

echo
echo "-- cranectl resume: driver loaded, GPU waited for, back to passthrough"
ctl resume | tee "$T/resume.out"
a=$(its); sleep 1; b=$(its)
echo "   back in passthrough: iterations $a -> $b"

echo
echo "-- the same, stop-and-copy: cranectl prepare --offline, then resume"
ctl prepare --offline | tee "$T/park.out"
a=$(its); sleep 1; b=$(its)
echo "   parked (state in RAM, calls held): iterations $a -> $b"
ctl resume | tee "$T/unpark.out"

touch "$T/stop"
wait "$worker" || true
result=$(cat "$T/worker.out")
# "held H ms = parked P + ...": the unpark itself took H - P.
unpark=$(awk '/^ +held/ { printf "%.1f", $2 - $6; exit }' "$T/unpark.out")
echo
echo "== result: $result"
echo "== stoppage (time the program's OpenCL calls were held):"
echo "   live prepare, passthrough -> proxy:  $(ms "$T/prepare.out") ms"
echo "   resume, proxy -> passthrough:        $(ms "$T/resume.out") ms"
echo "   offline, park to unpark:             $(ms "$T/unpark.out") ms" \
     "(park $(ms "$T/park.out") ms, parked while the driver was out," \
     "unpark ${unpark:-?} ms)"
case "$result" in
"PASS cl_worker"*) echo "== verified: every byte matched the CPU model" ;;
*) echo "== FAILED"; tail -20 "$T/guestd.log"; exit 1 ;;
esac

echo
echo "== 3. the whole mission, live: two libvirtd \"hosts\" on this machine and"
echo "   two real QEMU VMs (TCG, no KVM here) on one bridge: a proxy domain"
echo "   running crane-proxy on its own OpenCL device (PoCL), booted by"
echo "   crane-hostd; a guest whose cl_worker and pyopencl program compute"
echo "   under the shim; crane-migrate --live --p2p moves it while they run."
echo "   (a virtio-rng stands in for the GPU: no PCI passthrough here)"
rc=0
tests/e2e/run.sh "live.sh run live" > "$T/live.log" 2>&1 || rc=$?
L=${CRANE_E2E_DIR:-/tmp/crane-e2e}/live
if [ $rc = 0 ]; then
    echo "-- crane-migrate's phases (seconds from its start):"
    grep -E '^\[ *[0-9.]+s\]' "$L/migrate-live.out" | sed 's/^/   /'
    echo "-- the programs' own progress (iterations) while the VM moved, from"
    echo "   the GPU's unplug on the source to its return on the destination,"
    echo "   against the same span of guest time before the move:"
    awk '{ printf "   %-12s %6d during the move, %6d before (%s s)\n",
           $1 == "CL" ? "cl_worker" : "cl_pyworker", $3, $5, $7 }' "$L/progress-live"
    echo "-- stoppage (each program's OpenCL calls held) and the VM's downtime:"
    grep -E '^program|^stoppage' "$L/migrate-live.out" | sed 's/^/   /'
    awk '$1 == "step" && $2 == "downtime" { printf "   VM downtime (libvirt) %s ms\n", $6 }' \
        "$L/migrate-live.out"
    grep -hE 'RESULT' "$L/console-1.log" | sed 's/^/   /'
    echo "== live migration: done (history, metrics and dashboard checked;"
    echo "   logs in $L)"
elif [ $rc = 77 ]; then
    tail -n 1 "$T/live.log"
    echo "== live migration: skipped (needs root and vmimages/setup-vm-host.sh)"
else
    tail -n 40 "$T/live.log"
    echo "== live migration: FAILED"
    exit 1
fi
tests/e2e/live.sh cleanup > /dev/null 2>&1

echo
echo "== 4. the same program through a stop-and-copy migration (no --live):"
echo "   parked in RAM while the paused VM moves"
rc=0
tests/e2e/run.sh "$PWD/tests/e2e/hostd-opencl.sh" || rc=$?
tests/e2e/hostd-opencl.sh cleanup > /dev/null 2>&1
case $rc in
0) echo "== VM migration: done" ;;
77) echo "== VM migration: skipped (needs root and vmimages/setup-vm-host.sh)" ;;
*) echo "== VM migration: FAILED"; exit 1 ;;
esac
