#!/bin/bash
# gpu-session.sh: every GPU-machine measurement in one run, logs to $OUT.
#
# On the build machine: make all, then
#   bench/gpu-session.sh pack   (build/carry/: libprotobuf-c, libuv, clpeak
#                                and Debian's ICD loader, libOpenCL.so.1)
# The loader travels too: the GPU machine's own libOpenCL.so.1 (CUDA's)
# ignores OCL_ICD_VENDORS, so "NVIDIA alone" would still list PoCL.
# On the GPU machine (NVIDIA's OpenCL not registered, PoCL installed), from
# the repository root with build/ carried:
#   bench/gpu-session.sh PART...
# Parts (each writes $OUT/PART.log and prints its tail):
#   info        nvidia-smi, the platforms each vendor set offers
#   shimcost    bench/shimcost/run.sh (the shim's added ns per call), then
#               bench/shimcost/remote.sh (instructions per remoted call,
#               program and proxy, where valgrind is installed)
#   programs    tests/programs natively, under the shim, re-homed every 97
#               calls, on NVIDIA alone
#   remote      bench/remote/run.sh --reps 5 --mb "16 256 1024" on NVIDIA
#               alone (proxy on the same machine, TCP loopback): every
#               test but precopy, with the switch's stoppage and where it
#               went inside each phase (the "inside the phases" table);
#               then bench/remote/sockbw (GB/s of one stream of bytes
#               through a unix socket and loopback TCP, of 2, 4 and 8 TCP
#               streams at once, and memcpy); the TCP rows use 4 lanes
#               and bench/remote/hostptr (the device's copies to and from
#               a memfd mapping, unpinned and wrapped as the proxy pins it)
#   shm         bench/remote/run.sh --transport shm (write read latency
#               launch setarg switch, --reps 5, switch at 16/256/1024 MiB
#               with its phases), then --transport unix (write read
#               latency launch setarg) on NVIDIA alone: the shared-memory
#               path next to the unix stream, then shm's small calls with
#               CRANE_REMOTE_SPIN_US=0 CRANE_PROXY_SPIN_US=0 (no polling
#               for answers), then write read with CRANE_SHM_HOST_MB=0
#               (clbench's mapped buffer in the heap, copied through the
#               rings, as before host memory in the area); `remote` gives
#               the TCP rows.  Over shm, run.sh fails a write or read whose
#               bytes did not go in place in host memory
#   phases      the switch over shm at 256/1024 MiB (--reps 3) as shipped
#               (streamed both ways through the shared area pinned on both
#               sides, no CPU copy: the report's nocopy=), then with
#               CRANE_SHIM_PIN_RING=0 (out through pinned chunks and a CPU
#               copy into the ring, back through the RAM copy),
#               CRANE_STREAM_SWITCH=0 (the way out through the RAM
#               copy), CRANE_STAGING_MB=0 (no pinned chunks: the vendor
#               copies straight into the RAM copy) and CRANE_COPY_THREADS=1
#               (every bulk copy on one core): what each part is worth
#   lanes       bench/remote/run.sh --transport tcp write read (--reps 5)
#               with --lanes 0 (the one stream), 2, 4 (the default) and 8,
#               then --transport tls with 0 and 4: what the lanes bring
#               over TCP and TLS (docs/remoting.md, "Lanes"); sockbw's
#               tcp-xN rows are their ceiling
#   pcopy       bench/pcopybw 64 1024: crn_pcopy's GB/s with 1-16 threads
#               (pageable <-> memfd, 8 MiB calls, a fresh memfd, raw
#               threads, NVIDIA's pinned chunk -> memfd)
#   precopy     bench/remote/run.sh precopy --precopy 4096:16 --reps 3
#               (4 GiB held, 16 MiB hot) over TCP loopback, then over the
#               shared-memory path (--transport shm): minutes
#   overhead    bench/overhead/run.sh --shim crane-run on NVIDIA alone (the
#               shim against native, with native2 as the noise floor)
#   cross       bench/remote/cross-vendor.sh (NVIDIA <-> PoCL moves)
#   issue21     on NVIDIA alone: bench/remote/progswitch.sh 5 3 (a compiled
#               and linked program's switch back, binaries kept against
#               compiled again), bench/remote/userevent.sh 100 3 (a user
#               event's wake-up, native against remoted; BASE_LIB=PATH of
#               an older libcrane.so adds it), tests/integration/svm-caps.sh
#               and tests/programs/waitlists remoted (make
#               build/tests/integration/kept_binaries
#               build/tests/integration/svm_caps build/bench/userevent)
#   hostaccess  tests/integration/lenient.sh --vendors on NVIDIA alone: a
#               program's reads, writes and maps that host access flags
#               forbid get NVIDIA's verdicts natively, under the shim,
#               re-homed and switched to a proxy and back (build it first:
#               make build/tests/integration/hostaccess_lenient)
#   rehome      bench/rehome/dlloop --lib libnvidia-opencl.so.1 --loads 200
#               (then with --context), then bench/rehome/budget.sh --lib
#               libnvidia-opencl.so.1 --rehomes 1000 both ways with
#               CRANE_VENDOR_UNLOAD=auto and =always, and on the vendor
#               (--to native) with each: issue 21 item 2 (minutes)
#   maps        bench/maps/run.sh --portable --reps 5 on NVIDIA alone: a program
#               keeping its CL_MEM_ALLOC_HOST_PTR staging buffer mapped (as
#               x264 does) against one with nothing mapped, switched every
#               37 calls, each against native
#   multigpu    bench/multigpu/run.sh on NVIDIA alone: two programs of one
#               VM at once on the one GPU (longrun 3000 each) and two
#               contexts of one program on it (multidev --one-device),
#               re-homed and switched to a proxy here every 37 calls; a
#               RESULT line each (PASS: every word checked), issue 26
# Which platform each part used is in its log (the DEVICE lines, or the
# vendor set named at its top).
set -u
cd "$(dirname "$0")/.."
root=$PWD
B=${B:-build}
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"

export LD_LIBRARY_PATH=$root/$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$root/$B/carry:$PATH
# NVIDIA's ICD, registered for the system loader, and a folder holding only
# it for single-vendor runs (OCL_ICD_VENDORS and CRANE_VENDORS_DIR).
# Only on the GPU machine: elsewhere the entry would name a library that
# is not there.
if command -v nvidia-smi >/dev/null; then
    mkdir -p /etc/OpenCL/vendors
    echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
fi
mkdir -p /tmp/nv-only
echo libnvidia-opencl.so.1 >/tmp/nv-only/nvidia.icd
nv() { OCL_ICD_VENDORS=/tmp/nv-only CRANE_VENDORS_DIR=/tmp/nv-only "$@"; }
export B root

part_pack() {
    bench/remote/cross-vendor.sh --pack
    cp -L "$(ldd "$B/bench/clbench" | awk '$1 == "libOpenCL.so.1" { print $3 }')" \
        "$B/carry/" && echo "carry: libOpenCL.so.1 (the ICD loader)"
}

part_info() {
    nvidia-smi -L
    echo "# loader: $(ldd "$B/bench/clbench" | grep libOpenCL)"
    nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
    echo "# all vendors:"; ls /etc/OpenCL/vendors; cat /etc/OpenCL/vendors/*
    echo "# NVIDIA alone:"; nv clinfo -l 2>&1 | head
    nproc; uname -r
}

part_shimcost() {
    bench/shimcost/run.sh --reps 7 --build "$root/$B"
    echo "## the remoted path against the null vendor: instructions per call"
    echo "## (bench/shimcost/remote.sh; needs valgrind)"
    bench/shimcost/remote.sh --build "$root/$B" || true
}

part_maps() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    nv bench/maps/run.sh --portable --reps 5 --build "$root/$B"
}

part_programs() {
    echo "# vendor set: NVIDIA alone ($(cat /tmp/nv-only/nvidia.icd))"
    for p in "$B"/tests/programs/*; do
        n=$(basename "$p")
        r=$(mktemp)
        a=$(nv "$p" 2>&1 | tail -1)
        b=$(nv "$B/bin/crane-run" "$p" 2>&1 | tail -1)
        c=$(nv env CRANE_REHOME_EVERY=97 CRANE_REHOME_REPORT="$r" \
            "$B/bin/crane-run" "$p" 2>&1 | tail -1)
        echo "$n | native: $a | shim: $b | rehome-97: $c," \
            "$(grep -c ' rc=0 ' "$r") done, $(grep -c ' rc=-' "$r") refused/failed"
        rm -f "$r"
    done
}

part_remote() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    nv bench/remote/run.sh --reps 5 --mb "16 256 1024" --build "$root/$B" \
        write read latency launch setarg switch
    echo "## one stream through a local socket (sockbw: the bound of bulk"
    echo "## bytes over unix and TCP loopback), three runs"
    for _ in 1 2 3; do "$root/$B/bench/sockbw" 4096; done
    echo "## copies to and from a memfd mapping, unpinned then wrapped in a"
    echo "## CL_MEM_USE_HOST_PTR buffer (hostptr: what pinning the ring buys)"
    nv "$root/$B/bench/hostptr" 64
}

part_lanes() {
    echo "# vendor set: NVIDIA alone, proxy on this machine, TCP loopback"
    for n in 0 2 4 8; do
        echo "## --transport tcp --lanes $n"
        nv bench/remote/run.sh --transport tcp --lanes "$n" --reps 5 \
            --build "$root/$B" write read
    done
    for n in 0 4; do
        echo "## --transport tls --lanes $n"
        nv bench/remote/run.sh --transport tls --lanes "$n" --reps 5 \
            --build "$root/$B" write read
    done
    "$root/$B/bench/sockbw" 4096
}

part_pcopy() {
    echo "# crn_pcopy's GB/s by threads (pcopybw; the pinned chunk NVIDIA's)"
    nv "$root/$B/bench/pcopybw" 64 1024
}

part_shm() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    nv bench/remote/run.sh --transport shm --reps 5 --mb "16 256 1024" \
        --build "$root/$B" write read latency launch setarg switch
    nv bench/remote/run.sh --transport unix --reps 5 --build "$root/$B" \
        write read latency launch setarg
    echo "## shm without polling for answers (what the spin is worth)"
    nv env CRANE_REMOTE_SPIN_US=0 CRANE_PROXY_SPIN_US=0 \
        bench/remote/run.sh --transport shm --reps 5 --build "$root/$B" \
        latency launch setarg
    echo "## shm with mapped pointers in the heap (CRANE_SHM_HOST_MB=0: the"
    echo "## shim copies through the rings; what host memory in the area is"
    echo "## worth)"
    nv env CRANE_SHM_HOST_MB=0 bench/remote/run.sh --transport shm --reps 3 \
        --build "$root/$B" write read
}

part_phases() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    for v in CRANE_STAGING_MB=32 CRANE_SHIM_PIN_RING=0 CRANE_STREAM_SWITCH=0 \
        CRANE_STAGING_MB=0 CRANE_COPY_THREADS=1; do
        echo "## $v"
        nv env "$v" bench/remote/run.sh --transport shm --reps 3 \
            --mb "256 1024" --build "$root/$B" switch | tail -n 19
    done
}

part_precopy() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    for t in tcp shm; do
        echo "## --transport $t"
        nv bench/remote/run.sh --transport $t --reps 3 --precopy "4096:16" \
            --build "$root/$B" precopy
    done
}

part_overhead() {
    echo "# vendor set: NVIDIA alone"
    nv bench/overhead/run.sh --shim "$root/$B/bin/crane-run" \
        --bench "$root/$B/bench/clbench" 2>&1
}

part_cross() {
    bench/remote/cross-vendor.sh
}

part_issue21() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    nv bench/remote/progswitch.sh 5 3
    nv env ${BASE_LIB:+BASE_LIB=$BASE_LIB} bench/remote/userevent.sh 100 3
    nv tests/integration/svm-caps.sh
    nv tests/integration/remote.sh remote "$B/tests/programs/waitlists"
}

part_hostaccess() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    tests/integration/lenient.sh --vendors /tmp/nv-only
}

part_rehome() {
    local lib=libnvidia-opencl.so.1
    $B/bench/dlloop --lib $lib --loads 200 --every 10
    $B/bench/dlloop --lib $lib --loads 200 --every 10 --context
    for to in alternate native; do
        for u in auto always; do
            echo "# budget.sh --to $to --unload $u"
            nv bench/rehome/budget.sh --lib $lib --rehomes 1000 --to $to \
                --unload $u
        done
    done
}

part_multigpu() {
    echo "# vendor set: NVIDIA alone, proxy on this machine"
    nv bench/multigpu/run.sh --every 37 --rounds 3000
}

[ $# -gt 0 ] || set -- info shimcost programs remote cross
rc=0
for part in "$@"; do
    echo "=== $part $(date -u +%T)"
    timeout "${PART_TIMEOUT:-400}" bash -c "$(declare -f "part_$part" nv); \
        part_$part" >"$OUT/$part.log" 2>&1 ||
        { rc=1; echo "($part exited non-zero or timed out)"; }
    tail -66 "$OUT/$part.log"
done
exit $rc
