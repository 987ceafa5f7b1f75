# The case table of tests/run-tests.sh, second part (sourced): crane-proxy
# and the programs remoted and switched through it.

echo "# remoting: crane-proxy"
# tests/proxy/proxy_test starts its own crane-proxy per case (on a fresh
# unix socket) and speaks the protocol to it; CRANE_PROXY picks the binary.
PROXY_TEST=$B/tests/proxy/proxy_test
# proxy_bad STATUS ARGS...: crane-proxy refuses ARGS with exit STATUS
# (2: the command line is wrong; 1: what it names cannot be used) and one
# line.
proxy_bad() {
    local want=$1 out rc
    shift
    out=$("$B/bin/crane-proxy" "$@" 2>&1)
    rc=$?
    echo "$out"
    echo "exit $rc"
    [ $rc -eq "$want" ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
        [[ "$out" == crane-proxy:* ]]
}
export -f proxy_bad
# A private socket path for the refusals (none of them should bind it; the
# no-device case binds it before its worker finds no device).
PXSOCK=$(mktemp -u /tmp/crane-px-XXXXXX.sock)
# No circles between crane-proxy's files, in calls or includes: the
# connection's lifecycle one way down (supervisor and worker, server,
# conn_tls, conn_start, conn_input, handshake, conn_lanes, conn_exec, conn,
# and under them server_state and transport; the roles reached through
# their hooks), the dispatch above the executors, the executors above what
# they all call (exec.c), validate.c above validate_create.c above
# validate_common.c (proxy-domain/README.md, "Layers").
case_ "proxy/acyclic" scripts/calls-graph.sh proxy-domain $B/obj/proxy-domain
for t in $($PROXY_TEST --list); do
    case_ "proxy/$t" $PROXY_TEST "$t"
    case_ "proxy-asan/$t" env CRANE_PROXY=$BA/bin/crane-proxy \
        ASAN_OPTIONS=abort_on_error=1 $PROXY_TEST "$t"
done
# One call per case that the vendor cannot safely take (PoCL aborts, exits
# or crashes on each) or the specification forbids: the error it names
# comes back and the proxy keeps serving (tests/proxy/refuse_test.c).
REFUSE_TEST=$B/tests/proxy/refuse_test
for t in $($REFUSE_TEST --list); do
    case_ "proxy-refuse/$t" $REFUSE_TEST "$t"
done
# The shared-memory path (tests/proxy/shm_test.c): a memfd and a file
# (the ivshmem shape) carry every byte, checked; an area found by its token
# among fake ivshmem BARs (--shm-pci), and one given up mid-connection with
# calls in flight; a host-memory region written and read in place; an
# unsealed memfd, names outside --shm-dir, tokens no BAR or two BARs hold,
# pieces out of place in the ring and ranges outside the host-memory
# region are refused.
SHM_TEST=$B/tests/proxy/shm_test
for t in $($SHM_TEST --list); do
    case_ "proxy-shm/$t" $SHM_TEST "$t"
    case_ "proxy-shm-asan/$t" env CRANE_PROXY=$BA/bin/crane-proxy \
        ASAN_OPTIONS=abort_on_error=1 $SHM_TEST "$t"
done
# Pre-authentication bounds (tests/proxy/flood.sh): 120 idle and
# slow-handshake TCP connections from 10 addresses, re-opened inside the
# handshake deadline, while 6 programs holding the key connect over TLS
# and compute; all 6 must pass.
case_ "proxy/preauth-flood" tests/proxy/flood.sh "$PROGS/buffers"
case_ "proxy-asan/preauth-flood" env CRANE_PROXY=$BA/bin/crane-proxy \
    ASAN_OPTIONS=abort_on_error=1 tests/proxy/flood.sh "$PROGS/buffers"
# A tenant's work ends with it (tests/proxy/endless.sh): a kernel that
# never ends, its program killed: the supervisor kills the worker
# (--release-timeout) and serves the next program; and --max-kernel-seconds
# fails the endless clFinish, the worker killed, the next program served.
for m in killed max; do
    case_ "proxy/endless-$m" tests/proxy/endless.sh $m \
        "$B/tests/integration/spin" "$PROGS/buffers"
    case_ "proxy-asan/endless-$m" env CRANE_PROXY=$BA/bin/crane-proxy \
        ASAN_OPTIONS=abort_on_error=1 tests/proxy/endless.sh $m \
        "$B/tests/integration/spin" "$PROGS/buffers"
done
case_ "proxy/help" $B/bin/crane-proxy --help
case_ "proxy/no-listen" proxy_bad 2
case_ "proxy/bad-endpoint" proxy_bad 2 --listen nowhere:1
case_ "proxy/bad-option" proxy_bad 2 --listen unix:$PXSOCK --frob
case_ "proxy/no-value" proxy_bad 2 --listen unix:$PXSOCK --quota
case_ "proxy/no-key-file" proxy_bad 1 --listen unix:$PXSOCK \
    --auth-key /nonexistent/key
case_ "proxy/empty-key-file" proxy_bad 1 --listen unix:$PXSOCK \
    --auth-key /dev/null
case_ "proxy/no-device" proxy_bad 1 --listen unix:$PXSOCK \
    --device 99:0
case_ "proxy/bad-quota" proxy_bad 2 --listen unix:$PXSOCK \
    --quota lots

echo "# remoting: the programs through a real crane-proxy"
# Remoted from their start, and switched passthrough <-> remoting at many
# points while they run (every 97th and 13th call), every byte verified by
# the programs; then a proxy killed under a remoting program.
for p in $PROGS/*; do
    n=$(basename "$p")
    [ "$n" = multidev ] && continue    # two devices: its own cases below
    case_ "remote/$n" tests/integration/remote.sh remote "$p"
    case_ "switch-97/$n" tests/integration/remote.sh switch 97 2 "$p"
    case_ "switch-13/$n" tests/integration/remote.sh switch 13 2 "$p"
done
case_ "switch-5/longrun" tests/integration/remote.sh switch 5 20 \
    $PROGS/longrun 300
case_ "remote/proxy-killed" tests/integration/remote.sh proxy-killed
# The two-device program remoted to a proxy with two devices, switched to
# it and back (each device onto its twin, both ways), and switched to a
# proxy with one device (both land on it, and the shim says so); on one
# device, two queues and two contexts on it re-homed and switched.
for t in remote "switch 97" "switch 13" "proxy-one 37" "one 37"; do
    case_ "multidev/${t// /-}" tests/integration/multidev.sh $t
done
# Kernels longer than every timeout (CRANE_PROXY_TIMEOUT_MS=2000, 8 s):
# remoted, switched out and back while they run, the proxy frozen under
# one; a prepare that meets one refused with its reason past
# CRANE_SWITCH_KERNEL_WAIT_MS, also through crane-hostd and crane-migrate
# (hostd-refused: the wait in its lines, the reason in its exit message;
# hostd-serial: the same through a channel that takes one client at a
# time, as QEMU's virtio-serial socket); a proxy that never answers named
# as such.
for t in remote switch-out switch-back frozen prepare-refused \
    hostd-refused hostd-serial never-answers; do
    case_ "longkernel/$t" tests/integration/longkernel.sh "$t"
done
# Conformance in every mode: every answer of tests/programs/conformance
# --dump the same as native but the differences conform-known.txt lists.
case_ "conform/shim" tests/integration/conform.sh shim
case_ "conform/remote" tests/integration/conform.sh remote
case_ "conform/switch-13" tests/integration/conform.sh switch 13
case_ "conform/switch-97" tests/integration/conform.sh switch 97
# Memory the program took back from released CL_MEM_USE_HOST_PTR buffers
# (freed at once) is never written by a switch either way: under ASan.
case_ "asan-switch/lenthost" env B=$BA CRANE_PRELOAD_FIRST=$ASAN_LIB \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:use_sigaltstack=0 \
    tests/integration/remote.sh switch 13 20 $PROGS/lenthost
# Buffers kept mapped for the whole run (x264's CL_MEM_ALLOC_HOST_PTR
# staging buffer, shim/mem_own.c): every switch happens, none refused,
# every word checked (also under ASan); with the vendor's memory under the
# map (CRANE_OWN_HOST_ALLOC=0) switches are refused, each with its reason
# in the report and one SWITCH_REFUSE line in the log.
case_ "maps/rehome-13" tests/integration/maps.sh rehome 13 20 $PROGS/mapped
case_ "maps/switch-13" tests/integration/maps.sh switch 13 20 $PROGS/mapped
case_ "maps/switch-5" tests/integration/maps.sh switch 5 40 $PROGS/mapped
case_ "maps/refusals" tests/integration/maps.sh refusals $PROGS/mapped
# The same with the vendor's memory and maps in shim memory from the start
# (a buffer under maps for writing whole moves no bytes either way).
case_ "maps/portable-switch-13" env CRANE_OWN_HOST_ALLOC=0 \
    CRANE_PORTABLE_MAPS=1 tests/integration/maps.sh switch 13 20 $PROGS/mapped
case_ "maps/portable-rehome-13" env CRANE_OWN_HOST_ALLOC=0 \
    CRANE_PORTABLE_MAPS=1 tests/integration/maps.sh rehome 13 20 $PROGS/mapped
case_ "asan-maps/switch-13" env B=$BA CRANE_PRELOAD_FIRST=$ASAN_LIB \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:use_sigaltstack=0 \
    tests/integration/maps.sh switch 13 20 $PROGS/mapped
# Pre-copy (shim/precopy.c): switches as above with copy rounds before each
# stop; and a program whose thread keeps rewriting a buffer through both
# switches, every word checked, its stop reading only the hot buffer.
for n in kernels buffers images threads; do
    case_ "switch-13-precopy/$n" env CRANE_PRECOPY_ROUNDS=3 \
        tests/integration/remote.sh switch 13 2 "$PROGS/$n"
done
case_ "precopy/hot-thread" tests/integration/precopy.sh
case_ "precopy/hot-thread-nopin" env CRANE_SHIM_PIN_RING=0 \
    tests/integration/precopy.sh
# The first switch to the proxy takes the objects made there ahead
# (shim/prebuild.c): all of them; none of what a program built again or
# made while the switch made them (stopped there by the test hook); none
# with CRANE_PREBUILD=0; none of the program's objects left on the proxy
# at its end.  ~1-2 s each.
for m in plain changes off; do
    case_ "switch/prebuild-$m" tests/integration/prebuild.sh "$m"
done
# A compiled + linked program (and a built one) switched back and forth
# three times: each switch back makes all four from kept binaries, none
# compiled or linked again (the report's programs_kept= and
# programs_compiled=); with CRANE_BINARY_CACHE=0 all four compiled.
# Every word checked; the kept units link and compile again at the end.
for m in kept off; do
    case_ "switch/kept-binaries-$m" tests/integration/kept-binaries.sh "$m"
done
# A switch's bytes with no CPU copy (shim/ringstream.c): 24 MiB through
# small rings both ways, every word checked and every streamed byte
# counted as moved the no-copy way; with CRANE_SHIM_PIN_RING=0 none is.
case_ "switch/nocopy" tests/integration/nocopy.sh
case_ "switch/nocopy-off" tests/integration/nocopy.sh nopin
# unix: endpoints carry bulk bytes through shared memory (CRANE_SHM_MB);
# the same programs with bulk bytes on the stream, and the proxy killed
# under each path.
for p in buffers images; do
    case_ "remote-stream/$p" env CRANE_SHM_MB=0 \
        tests/integration/remote.sh remote $PROGS/$p
done
case_ "remote-stream/proxy-killed" env CRANE_SHM_MB=0 \
    tests/integration/remote.sh proxy-killed
case_ "remote/proxy-killed-bulk" tests/integration/remote.sh proxy-killed-bulk
# Calls that poll for their answers and read them themselves (both sides
# spinning, CRANE_REMOTE_SPIN_US and CRANE_PROXY_SPIN_US, whatever the
# machine's default): a proxy killed, and one that stops answering.
# Writes through a full shared area: behind a user event set by another
# thread, and staged through the proxy's pinned buffers.
case_ "remote/ring-writes" tests/integration/remote.sh ring-writes staged
case_ "remote/ring-writes-pinned" tests/integration/remote.sh \
    ring-writes pinned
# A client's area over the proxy's pinning cap is used unpinned.
case_ "remote/pin-cap" tests/integration/remote.sh pin-cap
# Spare contexts warmed (a queue, a buffer, copies, a kernel) before they
# are offered, then a program computes on one.
case_ "remote/warm-spares" tests/integration/remote.sh warm-spares \
    "$PROGS/buffers"
case_ "remote/proxy-killed-spin" env CRANE_REMOTE_SPIN_US=200 \
    CRANE_PROXY_SPIN_US=200 tests/integration/remote.sh proxy-killed
case_ "remote/proxy-frozen-spin" env CRANE_REMOTE_SPIN_US=200 \
    CRANE_PROXY_SPIN_US=200 tests/integration/remote.sh proxy-frozen
# Mapped pointers in the host-memory region beside a memfd area
# (tests/integration/hostmem.sh): transfers of them in place, blocking and
# not, a map that finds no room and CRANE_SHM_HOST_MB=0 copied as before,
# maps in the region carried across switches, coarse-grained SVM in it,
# the proxy killed under it.
for t in phases off switch svm killed; do
    case_ "remote-hostmem/$t" tests/integration/hostmem.sh "$t"
done
# The ivshmem shape: TCP for control, a file both sides map for bulk.
for p in buffers images; do
    case_ "remote-shm-file/$p" tests/integration/remote.sh shm-file \
        $PROGS/$p
done
case_ "remote-stream/proxy-killed-bulk" env CRANE_SHM_MB=0 \
    tests/integration/remote.sh proxy-killed-bulk
case_ "remote/tls" tests/integration/remote.sh tls "$PROGS/buffers"
# Lanes (docs/remoting.md, "Lanes"): big reads and writes over 4 extra TCP
# streams, every byte checked and every lane's bytes counted alike by both
# sides, in clear and under TLS, landing in the proxy's pinned area (or its
# heap with CRANE_PROXY_PIN_RING=0); a lane that dies mid-piece and one that
# sends a piece out of place (the proxy refuses it) fail one call (a
# write; a read when the proxy's lane dies), the program goes on over the
# main stream. ~2 s each.
case_ "remote-lanes/bulk" env CRANE_LANES_WANT=yes \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 4
# 1.5 MiB (and 984 bytes) transfers: cut into 256 KiB pieces, the last
# short, so that every lane carries some.
case_ "remote-lanes/small" env CRANE_LANES_WANT=yes \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 4 - \
    1573848
# Every read non-blocking (its event waited for and checked): each takes
# the lanes too (all 5 x 24 MiB of them: LANES_READ_BYTES), every lane's
# bytes counted alike by both sides.
case_ "remote-lanes/nonblocking" env CRANE_LANES_WANT=yes \
    LANES_READ_BYTES=$((5 * (24 << 20))) \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 4 - \
    $((24 << 20)) nonblocking
# A rectangle of 12 MiB each round (half of every 4 KiB row), packed by
# the proxy into one transfer on the lanes, spread by the shim into the
# program's pitches; every byte checked, and all of them (with the
# buffer reads) left on the lanes.
case_ "remote-lanes/rect" env CRANE_LANES_WANT=yes \
    LANES_READ_BYTES=$((5 * (24 << 20) + 4 * (12 << 20))) \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 4 - \
    $((24 << 20)) rect
# A 4 MiB image each round, written and read back into wider rows: the
# read packed into one transfer on the lanes like a rectangle.
case_ "remote-lanes/image" env CRANE_LANES_WANT=yes \
    LANES_READ_BYTES=$((5 * (24 << 20) + 4 * (4 << 20))) \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 4 - \
    $((24 << 20)) image
case_ "remote-lanes/heap" env CRANE_LANES_WANT=yes CRANE_PROXY_PIN_RING=0 \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 2
case_ "remote-lanes/buffers" tests/integration/lanes.sh tcp "$PROGS/buffers"
case_ "remote-lanes/tls" env CRANE_LANES_WANT=yes \
    tests/integration/lanes.sh tls "$B/tests/integration/bulk_loop" 2
case_ "remote-lanes/killed" tests/integration/lanes.sh killed
case_ "remote-lanes/killed-read" tests/integration/lanes.sh killed-read
# The proxy's lane 0 shut down mid-piece while every read is non-blocking:
# the read fails with CL_OUT_OF_RESOURCES (never success over partial
# bytes), the program goes on over the stream, then on rejoined lanes.
case_ "remote-lanes/killed-nbread" tests/integration/lanes.sh killed-nbread
case_ "remote-lanes/hostile" tests/integration/lanes.sh hostile
# A switch's way back over TCP (80 MiB, more than the proxy's 64 MiB
# landing ring): every byte on the lanes out of the pinned area, every word
# right; and with the proxy's lane 0 shut down mid-way, that switch fails
# with nothing committed, the retry comes back over the stream. ~1.5 s each.
case_ "remote-lanes/switch" tests/integration/lanes.sh switch
case_ "remote-lanes/switch-killed" tests/integration/lanes.sh switch-killed
# Threads waiting (clWaitForEvents, clFinish) on a user event, and on work
# behind it, that another thread sets: natively and remoted.
case_ "native/user-events-threads" "$RUN" $B/tests/integration/user_events
case_ "remote/user-events-threads" tests/integration/remote.sh remote \
    $B/tests/integration/user_events
# An error only the proxy's vendor finds, in a batched call, crosses a
# switch back to the vendor: the switch works, the next clFinish reports
# it once (tests/integration/deferred.c); natively it comes at once.
case_ "native/deferred" $B/tests/integration/deferred
case_ "switch/deferred" tests/integration/remote.sh switch 1000000 2 \
    $B/tests/integration/deferred
# Devices matched by identity, not position: switched to a proxy offering
# PoCL and a fake accelerator platform (both orders) each program lands on
# PoCL; to a proxy offering only the fake, every move is refused first.
for p in kernels images; do
    case_ "devices/two-platforms/$p" tests/integration/devices.sh \
        two-platforms $PROGS/$p
done
case_ "devices/refused" tests/integration/devices.sh refused $PROGS/kernels
case_ "devices/refused-cranectl" tests/integration/devices.sh control
# Host access flags on a vendor that does not enforce them (fakecl.c
# wrapping PoCL, as NVIDIA's OpenCL): natively, under the shim and re-homed
# the program sees the same verdicts, its buffers keep every byte, and the
# vendor sees no forbidden host access the shim made itself.  Then maps in
# shim memory of buffers the host may only write, re-homed.
case_ "lenient/hostaccess" tests/integration/lenient.sh
case_ "lenient/maps-only" tests/integration/lenient.sh --maps-only
case_ "portable-maps/hostaccess" env CRANE_PORTABLE_MAPS=1 CRANE_STAGING_MB=0 \
    bash -c 'rehome_case 13 1 "$RUN" "$PROGS/hostaccess"'
# Coarse-grained SVM (maps, SVM kernel arguments, copies, fills, frees),
# the device/host timers and destructor callbacks: natively and remoted.
for t in svm timers callbacks; do
    case_ "native/$t" "$RUN" $B/tests/integration/$t
    case_ "remote/$t" tests/integration/remote.sh remote \
        $B/tests/integration/$t
done
# SVM capabilities: every one a device reports holds (fine-grained used
# with no map, atomics allocated), none it does not report is given; the
# shim reports the vendor's, remoted (shm, stream, TCP) coarse-grained only.
case_ "remote/svm-caps" tests/integration/svm-caps.sh
