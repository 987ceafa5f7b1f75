#!/bin/bash
# Runs every test stage after `make check` has built everything; prints one
# line per case and ends with "N passed, M failed, K skipped".
set -u
cd "$(dirname "$0")/.."

B=build
BA=build-address
RUN=$B/bin/crane-run
PROGS=$B/tests/programs
LOGDIR=$B/test-logs
ASAN_LIB=$(gcc -print-file-name=libasan.so)
mkdir -p "$LOGDIR"
pass=0
fail=0
skip=0
unrun=0
# For developers: CRANE_TEST_ONLY=REGEX runs only the cases whose names
# match (the others are counted as not run, never as passed or skipped).
ONLY=${CRANE_TEST_ONLY:-}

# Every case runs with private state: HOME, TMPDIR and the XDG folders in a
# fresh folder of its own, removed after it, so that third-party programs
# (hashcat's sessions and locks, pyopencl's cache) share nothing with
# another case or another run on the machine; PoCL's kernel cache is this
# checkout's (build/pocl-cache), kept between cases and runs.
POCL_CACHE_DIR=$PWD/$B/pocl-cache
mkdir -p "$POCL_CACHE_DIR"
export POCL_CACHE_DIR
# A case is ended after CASE_TIMEOUT seconds (300) in which neither its log
# nor its private folder changed, or after CASE_CAP seconds (3600) in all;
# tests/wait.sh's waits add a line to the log (CRANE_WAIT_LOG) every 30 s
# while what they wait for moves, so a slow but working case is never cut
# short.
. tests/wait.sh

# case_watch PGID LOG PRIV: ends process group PGID (TERM, then KILL) when
# LOG and PRIV stand still for CASE_TIMEOUT s; says so in LOG and PRIV/stalled.
case_watch() {
    local pgid=$1 log=$2 priv=$3 sl=
    trap 'kill "$sl" 2>/dev/null; exit 0' TERM
    # The case's stderr is its log: wait_until's give-up line lands there.
    wait_until -q "${CASE_TIMEOUT:-300}" -c "${CASE_CAP:-3600}" \
        -f "$log" -f "$priv" -n "case progress" -- false 2>>"$log"
    echo "case: stopped, its log and folder stood still" \
        "for ${CASE_TIMEOUT:-300} s (or it ran ${CASE_CAP:-3600} s)" >>"$log"
    : >"$priv/stalled"
    kill -TERM -- "-$pgid" 2>/dev/null
    sleep 5 & sl=$!
    wait "$sl"
    kill -KILL -- "-$pgid" 2>/dev/null
}

# case_run LOG CMD...: CMD with the private state above, its output into
# LOG; its status, or 124 when case_watch ended it.
case_run() {
    local log=$1 priv pid wpid rc
    shift
    priv=$(mktemp -d /tmp/crane-case-XXXXXX) || return 1
    mkdir -p "$priv/home" "$priv/tmp" "$priv/cache" "$priv/config" \
        "$priv/data"
    # bash -c, so that cases may be the shell functions exported below;
    # timeout(1) gives the case a process group of its own (its pid).
    # Appended to (O_APPEND), as the waits' lines are.
    : >"$log"
    HOME=$priv/home TMPDIR=$priv/tmp XDG_CACHE_HOME=$priv/cache \
        XDG_CONFIG_HOME=$priv/config XDG_DATA_HOME=$priv/data \
        CRANE_WAIT_LOG=$PWD/$log \
        timeout -k 10 "$(( ${CASE_CAP:-3600} + 60 ))" \
        bash -c '"$@"' case "$@" >>"$log" 2>&1 <&0 &
    pid=$!
    CRANE_WAIT_SAY=100000 case_watch "$pid" "$log" "$priv" &
    wpid=$!
    wait "$pid"
    rc=$?
    # KILL: a TERM would wait for the watcher's current poll to end.
    kill -KILL "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    [ -e "$priv/stalled" ] && rc=124
    rm -rf "$priv"
    return $rc
}

# case_ NAME CMD...: runs CMD (case_run) and records ok / not ok / skip.
# Exit 77 is a skip, printed with its reason (the log's last line that
# says skip, else its last line); a CMD
# given as a path that is not there fails: a missing binary is no skip.
case_() {
    local name=$1
    shift
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then
        unrun=$((unrun + 1)); return
    fi
    local log="$LOGDIR/${name//\//_}.log"
    if [[ "$1" == */* && ! -x "$1" ]]; then
        fail=$((fail + 1)); echo "not ok - $name (missing binary $1)"
        return
    fi
    case_run "$log" "$@"
    local rc=$?
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "ok - $name"
    elif [ $rc -eq 77 ]; then
        local why
        # The line that says why (a harness's summary line says nothing).
        why=$(grep -i 'skip' "$log" | grep -v 'skipped$' | tail -1)
        [ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$log" | tail -1)
        skip=$((skip + 1)); echo "ok - $name # SKIP ${why:-no reason given}"
    else
        fail=$((fail + 1)); echo "not ok - $name (exit $rc, log $log)"
        tail -5 "$log" | sed 's/^/#   /'
    fi
}

# skip_ NAME REASON: a case that cannot run here, said as a skip.
skip_() {
    [ -n "$ONLY" ] && ! [[ "$1" =~ $ONLY ]] && { unrun=$((unrun + 1)); return; }
    skip=$((skip + 1)); echo "ok - $1 # SKIP $2"
}

# fuzz_case NAME FUZZER ARGS...: libFuzzer exits 77 (or any non-zero) on a
# finding, so here every non-zero status fails; the artifact is named in
# the log.
fuzz_case() {
    local name=$1
    shift
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then
        unrun=$((unrun + 1)); return
    fi
    if [ ! -x "$1" ]; then
        fail=$((fail + 1)); echo "not ok - $name (missing fuzzer $1)"
        return
    fi
    case_ "$name" bash -c '"$@"; rc=$?; [ $rc -eq 77 ] && exit 1; exit $rc' \
        fuzz "$@"
}

# Re-homes that happened, and that every attempt either worked or was
# refused for a documented reason (-EBUSY: a map or a pending user event).
rehomed() {
    local report=$1 min=$2
    local ok bad
    ok=$(grep -c ' rc=0 ' "$report" 2>/dev/null || true)
    bad=$(grep ' rc=-' "$report" 2>/dev/null | grep -vc ' rc=-16 ' || true)
    # A refusal says why (shim_switch_refuse).
    unsaid=$(grep ' rc=-16 ' "$report" 2>/dev/null | grep -vc ' reason="' ||
             true)
    echo "re-homes: $ok done, $bad failed, $unsaid refused without a reason"
    [ "${ok:-0}" -ge "$min" ] && [ "${bad:-0}" -eq 0 ] &&
        [ "${unsaid:-0}" -eq 0 ]
}

# A program under the shim, re-homed every N calls; passes when the program
# verified every byte itself and at least MIN re-homes really happened.
rehome_case() {
    local every=$1 min=$2
    shift 2
    local report
    report=$(mktemp)
    CRANE_REHOME_EVERY=$every CRANE_REHOME_REPORT=$report "$@" || {
        rm -f "$report"; return 1; }
    rehomed "$report" "$min"
    local rc=$?
    rm -f "$report"
    return $rc
}

same_output() {  # same_output NAME CMD...: shim output equals native output
    local a b
    a=$("${@:2}" 2>&1) || return 1
    b=$("$RUN" "${@:2}" 2>&1) || return 1
    [ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b") | head -20; return 1; }
}

strip_loader() { sed '/^ICD loader properties/,$d' | grep -v '^[[:space:]]*$'; }
clinfo_same() {
    diff <(clinfo | strip_loader) <("$RUN" clinfo | strip_loader) &&
    diff <(clinfo | strip_loader) \
         <(CRANE_REHOME_EVERY=7 "$RUN" clinfo 2>/dev/null | strip_loader)
}
py_same() {
    local a b c
    a=$(/usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    b=$("$RUN" /usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    c=$(CRANE_REHOME_EVERY=50 "$RUN" /usr/bin/python3 \
        tests/integration/pyopencl_app.py 2>/dev/null) || return 1
    echo "native $a"; echo "shim   $b"; echo "rehome $c"
    [ "$a" = "$b" ] && [ "$a" = "$c" ]
}
no_vendor() {
    local out
    out=$(CRANE_VENDORS_DIR=/nonexistent "$RUN" clinfo -l 2>&1)
    echo "$out"
    echo "$out" | grep -q '/nonexistent/\*.icd'
}

export -f rehomed rehome_case same_output clinfo_same py_same no_vendor \
    strip_loader
export RUN B BA PROGS

echo "# unit tests"
for t in $($B/tests/unit-tests --list); do
    case_ "unit/$t" $B/tests/unit-tests "$t"
done
# Under valgrind: every test but the two that push a MiB through a tiny
# socket buffer or race signals, which valgrind slows past any timeout.
case_ "unit/valgrind" valgrind -q --error-exitcode=1 --leak-check=full \
    $B/tests/unit-tests --no-fork $($B/tests/unit-tests --list |
        grep -v -e frame_partial_writes -e frame_survives_signals)
case_ "unit/asan" $BA/tests/unit-tests
# The shim's store calls into no kind's file: what depends on an object's
# kind goes through the kind rows (shim/README.md, "Object kinds").  It
# calls no file at all now (what it calls above itself is handed to it);
# the files that call it say the graph was read.
store_calls_no_kind() {
    local graph calls users
    graph=$(scripts/calls-graph.sh shim "$B/obj/shim" | sed '/^includes:/,$d')
    calls=$(echo "$graph" | sed -n 's/^  objects:\(.*\)/\1/p')
    users=$(echo "$graph" | grep -c '^  [a-z_/]*:.* objects\( \|$\)')
    echo "objects.c calls:${calls:- nothing}; $users files call it"
    [ "$users" -gt 10 ] && ! echo " $calls " | grep -Eq \
        ' (platform|devices|context|queue|mem|sampler|program|kernel|event) '
}
export -f store_calls_no_kind
case_ "unit/store-calls-no-kind" store_calls_no_kind
# No circles between the shim's files, in calls or includes: each layer
# calls only those below it (shim/README.md, "Layers").
case_ "shim/acyclic" scripts/calls-graph.sh shim $B/obj/shim
# The backend boundary: only shim/remote/ names the remote backend's
# functions and row; the rest asks shim/backend.h (shim/README.md,
# "Backends").  A planted call in a copy must be caught first.
case_ "shim/acyclic-backend-boundary" scripts/shim-boundary.sh --self-test shim

echo "# programs: native, under the shim, re-homed while they run"
for p in $PROGS/*; do
    n=$(basename "$p")
    [ "$n" = multidev ] && continue    # two devices: its own cases below
    case_ "native/$n" "$p"
    case_ "shim/$n" "$RUN" "$p"
    case_ "rehome-97/$n" rehome_case 97 1 "$RUN" "$p"
    case_ "rehome-13/$n" rehome_case 13 1 "$RUN" "$p"
done
case_ "rehome-5/longrun" rehome_case 5 20 "$RUN" $PROGS/longrun 300
# A program on two PoCL devices (POCL_DEVICES="pthread pthread"): one
# context over both, a context per device, copies between them; each
# re-home binds each device to its own twin.
for t in native shim "rehome 97" "rehome 13"; do
    case_ "multidev/${t// /-}" tests/integration/multidev.sh $t
done
# Fresh link-map namespace per load: 15 fresh copies, then the main one.
case_ "new-namespace/longrun" bash -c \
    'CRANE_VENDOR_NAMESPACE=new rehome_case 31 20 "$RUN" "$PROGS/longrun" 800'
# The first OpenCL call made by another library's constructor, before
# main: its platforms still carry the shim's ICD table (-z initfirst).
case_ "shim/early-constructor" "$RUN" $B/tests/integration/early_ctor

echo "# the shim under AddressSanitizer, re-homing"
for n in buffers kernels images events threads longrun lenthost mapped \
    binsizes nativekern; do
    # use_sigaltstack=0: ASan cannot free a thread's signal stack once a
    # second C library (the vendor's namespace) has run on that thread.
    case_ "asan-rehome/$n" bash -c "CRANE_PRELOAD_FIRST=$ASAN_LIB \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:use_sigaltstack=0 \
        rehome_case 41 1 $BA/bin/crane-run $PROGS/$n"
done

echo "# third-party programs from Debian packages"
if command -v clinfo >/dev/null; then
    case_ "thirdparty/clinfo" clinfo_same
else
    skip_ "thirdparty/clinfo" "clinfo is not installed"
fi
if /usr/bin/python3 -c 'import pyopencl' 2>/dev/null; then
    case_ "thirdparty/pyopencl" py_same
else
    skip_ "thirdparty/pyopencl" "python3-pyopencl is not installed"
fi
# Each script compares native, shim and re-homed runs itself and exits 77
# when its tool is missing. clpeak: one case per test, each with a period
# that lands a few re-homes in it (compute: ~170 calls, transfer: ~440
# calls around 512 MiB buffers, latency: ~100,000 calls).
case_ "thirdparty/ffmpeg" bash tests/integration/ffmpeg.sh
case_ "thirdparty/clpeak-compute" bash tests/integration/clpeak.sh 29 \
    --compute-integer
case_ "thirdparty/clpeak-transfer" bash tests/integration/clpeak.sh 151 \
    --transfer-bandwidth
case_ "thirdparty/clpeak-latency" bash tests/integration/clpeak.sh 20011 \
    --kernel-latency --use-event-timer

echo "# benchmarks run (no timing is asserted: bench/ prints ratios)"
# The null vendor works natively and under the shim, every kind printed.
shimcost_runs() {
    local out
    out=$(bench/shimcost/run.sh --reps 1 --iters 20000) || return 1
    echo "$out"
    [ "$(echo "$out" | grep -cE '^(setarg|setarg_mem|launch|launch_event|write4) ')" -eq 5 ]
}
export -f shimcost_runs
case_ "bench/shimcost" shimcost_runs

# piglit's OpenCL API tests and a set of its programs, native against the
# shim test by test (tests/integration/piglit.sh says why this set, and
# which tests it leaves out remoted and why): passthrough ~1 min, remoted
# from the start ~40 s, switched every 7 calls ~2 min.
case_ "thirdparty/piglit-shim" bash tests/integration/piglit.sh shim
case_ "thirdparty/piglit-remote" bash tests/integration/piglit.sh remote
case_ "thirdparty/piglit-switch-7" bash tests/integration/piglit.sh switch 7
# CLBlast's tests (axpy, dot, gemv against the reference BLAS; why these in
# the script): each routine's pass/skip/fail counts as natively, none
# failing. ~10 s passthrough (warm PoCL cache), ~90 s remoted, ~80 s
# switched every 199 calls (~400 switches each way).
case_ "thirdparty/clblast-shim" bash tests/integration/clblast.sh shim
case_ "thirdparty/clblast-remote" bash tests/integration/clblast.sh remote
case_ "thirdparty/clblast-switch-199" bash tests/integration/clblast.sh \
    switch 199
# x264 --opencl (its lookahead keeps a staging buffer mapped for the whole
# encode) on PoCL said to be a GPU (fakecl.c): under the shim, re-homed
# and switched every 37 calls with no switch refused, and, with the
# vendor's memory under the map, refused with reasons (the issue as
# found).  The first run builds x264's kernels (1-2 min; kept in
# build/tests/x264; a loaded machine may take longer, hence its own bound),
# each run then ~10-40 s.
CASE_TIMEOUT=900 case_ "thirdparty/x264-shim" bash tests/integration/x264.sh shim
case_ "thirdparty/x264-rehome-37" bash tests/integration/x264.sh rehome 37 20
case_ "thirdparty/x264-switch-37" bash tests/integration/x264.sh switch 37 20
case_ "thirdparty/x264-refused" bash tests/integration/x264.sh refused 37
# hashcat dlopens libOpenCL itself: three MD5 hashes cracked as natively,
# from the kernel binaries it cached (a 5.6 MB program). ~20 s passthrough,
# ~20 s remoted, ~60 s switched every 37 calls (11 switches each way); its
# first run ever compiles its kernels natively (~2 min).
case_ "thirdparty/hashcat-shim" bash tests/integration/hashcat.sh shim
case_ "thirdparty/hashcat-remote" bash tests/integration/hashcat.sh remote
case_ "thirdparty/hashcat-switch-37" bash tests/integration/hashcat.sh \
    switch 37
# pyopencl's own tests (test_wrapper, test_enqueue_copy,
# test_arrays_in_structs from python-pyopencl-doc; why these in the script):
# every test's outcome as natively. ~75 s per mode; remoted and switched
# (every 37 calls, ~200 switches each way) without the SVM tests.
case_ "thirdparty/pyopencl-tests-shim" bash tests/integration/pyopencl_tests.sh \
    shim
case_ "thirdparty/pyopencl-tests-remote" bash \
    tests/integration/pyopencl_tests.sh remote
case_ "thirdparty/pyopencl-tests-switch-37" bash \
    tests/integration/pyopencl_tests.sh switch 37

echo "# bad input"
case_ "badinput/no-vendor" no_vendor
case_ "badinput/crane-run-help" "$RUN" --help
case_ "badinput/crane-run-no-args" bash -c "! $RUN"

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
case_ "remote-lanes/heap" env CRANE_LANES_WANT=yes CRANE_PROXY_PIN_RING=0 \
    tests/integration/lanes.sh tcp "$B/tests/integration/bulk_loop" 2
case_ "remote-lanes/buffers" tests/integration/lanes.sh tcp "$PROGS/buffers"
case_ "remote-lanes/tls" env CRANE_LANES_WANT=yes \
    tests/integration/lanes.sh tls "$B/tests/integration/bulk_loop" 2
case_ "remote-lanes/killed" tests/integration/lanes.sh killed
case_ "remote-lanes/killed-read" tests/integration/lanes.sh killed-read
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

echo "# fault injection: switches failed, stopped, their peers killed"
# tests/fault/fault.sh: a switch failed by the shim's test hook at every
# step both ways, the proxy killed or frozen there, the program killed
# mid-switch, crane-guestd killed mid-prepare; each case checks every byte
# or a clear error, and a bound on the time (about 100 s in all).
for t in $(tests/fault/fault.sh --list); do
    case_ "fault/$t" tests/fault/fault.sh "$t"
done

# tests/fault/reload.sh: a reload that fails at each of its steps (the
# vendor's dlopen, its platforms, the device binding, a context's or
# queue's recreation, the arguments, the bytes put back), under the ASan
# shim: OpenCL errors, the proxy, or a second try from RAM; never a crash.
for t in $(tests/fault/reload.sh --list); do
    case_ "reload/$t" tests/fault/reload.sh "$t"
done
# bench/rehome/budget.sh, short: one process re-homed 60 times both ways
# (the vendor kept, then reloaded at every way back), and 60 times on the
# vendor reloaded each time: every word right, fds and mappings flat.
case_ "reload/budget-alternate" bench/rehome/budget.sh --rehomes 60 \
    --words 65536
case_ "reload/budget-always" bench/rehome/budget.sh --rehomes 60 \
    --words 65536 --unload always
case_ "reload/budget-always-native" bench/rehome/budget.sh --rehomes 60 \
    --words 65536 --unload always --to native

echo "# guest daemon"
# crane-guestd driven by cranectl, real programs under the shim, a real
# proxy, a fake modprobe; each case in tests/guest/guestd.sh.
for t in $(tests/guest/guestd.sh --list); do
    case_ "guest/$t" bash tests/guest/guestd.sh "$t"
done
# No circles between guest-daemon's files: neither in calls (symbols one
# object uses that another defines) nor in includes.
case_ "guest/acyclic" scripts/calls-graph.sh guest-daemon $B/obj/guest-daemon
# A VM with several GPUs: the probe counts every one of them (`gpus`).
case_ "guest/probe-gpus" bash tests/guest/probe-gpus.sh
# docs/guest.md names every key of crane-guestd's settings table.
case_ "guest/config-docs" scripts/conf-keys-documented.sh --self-test \
    $B/bin/crane-guestd docs/guest.md

echo "# host daemon: history, metrics and HTTP"
# SQLite history, Prometheus metrics, JSON and the HTTP server on loopback
# (tests/hostd/); built only where SQLite is (the http_* tests only where
# libmicrohttpd is too), so a missing binary skips.
HOSTD_TESTS=$B/tests/hostd-tests
if [ -x "$HOSTD_TESTS" ]; then
    for t in $($HOSTD_TESTS --list); do
        case_ "hostd/$t" $HOSTD_TESTS "$t"
    done
    case_ "hostd/valgrind" valgrind -q --error-exitcode=1 --leak-check=full \
        $HOSTD_TESTS --no-fork $($HOSTD_TESTS --list)
else
    case_ "hostd/tests" "$HOSTD_TESTS"  # fails: the binary is missing
fi

echo "# host daemon: crane-migrate, the dashboard, the libvirt backend"
# crane-migrate against a stand-in crane-hostd (every option, result and
# malformed answer); the dashboard in headless Chromium on a fixture
# history, live updates included (skips without chromium); the libvirt
# backend and its event loop against libvirt's test driver.
for t in $(tests/hostd/migrate-cli.sh --list); do
    case_ "hostd/migrate-cli/$t" bash tests/hostd/migrate-cli.sh "$t"
done
# crane-hostctl (the steps of a migration another tool performs, the pool
# for schedulers) against crane-hostd on libvirt's test driver: about 1 s.
case_ "hostd/hostctl" bash tests/hostd/hostctl.sh
# crane-hostd's --help, bad options, values and config lines.
case_ "hostd/hostd-cli" bash tests/hostd/hostd-cli.sh
# A prepare held by a program's long kernel (a stand-in crane-guestd):
# the wait in crane-migrate's lines, the refusal's reason, the step in /api.
case_ "hostd/kernel-wait" bash tests/hostd/kernel-wait.sh
# HTTPS with client certificates, a token, basic auth, plain only on loopback.
case_ "hostd/https" bash tests/hostd/https.sh
# contrib/: the Prometheus rules (promtool) and the Grafana dashboard.
case_ "contrib/monitoring" bash tests/contrib/monitoring.sh
case_ "hostd/history-disk" bash tests/hostd/history-disk.sh
case_ "hostd/dashboard" bash tests/hostd/dashboard.sh
# The dashboard of a real crane-hostd (libvirt's test driver, four GPUs,
# a VM waiting, 240 seeded migrations): trend, pool, kinds, pages, filters
# against its API (about 20 s).
case_ "hostd/dashboard-hostd" sh tests/hostd/dashboard-hostd.sh
HV_TESTS=$B/tests/hostd-hv-tests
if [ -x "$HV_TESTS" ]; then
    # libvirt_remote_* and e2e_* need two real libvirtd: e2e/hostd-hv
    # runs them (tests/hostd-hv/run-e2e.sh).
    for t in $($HV_TESTS --list | grep -vE '^(libvirt_remote_|e2e_)'); do
        case_ "hostd-hv/$t" $HV_TESTS "$t"
    done
    # Each test forked under valgrind, timeouts scaled for it.
    case_ "hostd-hv/valgrind" env HVT_SLOW=10 valgrind -q --error-exitcode=1 \
        --leak-check=full $HV_TESTS
else
    case_ "hostd-hv/tests" "$HV_TESTS"  # fails: the binary is missing
fi
# No circles between host-daemon's files, those of hv/, history/, web/ and
# cli/ included: neither in calls nor in includes.
case_ "hostd/acyclic" scripts/calls-graph.sh host-daemon $B/obj/host-daemon
# docs/host.md names every key of crane-hostd's settings table.
case_ "hostd/config-docs" scripts/conf-keys-documented.sh --self-test \
    $B/bin/crane-hostd docs/host.md "gpu = g0 pci:0000:01:00.0"

echo "# install: make install, units, man pages, --version, readiness"
# tests/install/install.sh: make install into a private DESTDIR, every file
# and path checked, systemd-analyze verify, groff, --version, exit 2.
case_ "install/make-install" tests/install/install.sh
# tests/install/deb.sh: make deb, lintian, and dpkg's install, upgrade,
# remove and purge inside a private mount namespace (docs/packaging.md).
case_ "install/deb" tests/install/deb.sh
# tests/install/notify.py: each daemon started as systemd starts a
# Type=notify unit says READY=1 once it listens, STOPPING=1 on SIGTERM.
for t in $(tests/install/notify.py --list); do
    case_ "install/notify-$t" tests/install/notify.py "$t"
done

echo "# end-to-end: real libvirtd and QEMU (TCG)"
# tests/e2e/run.sh builds the guest images once (build/e2e-vm) and exits 77
# (skip) when not root or without vmimages/setup-vm-host.sh's packages.
# hotplug, migrate, unplug-ignored: the hypervisor by hand; guestd: the
# guest daemon over its real virtio-serial channel; hostd: crane-hostd and
# crane-migrate between two libvirtd, a migration and every rollback.
for t in hotplug migrate guestd unplug-ignored hostd-lost; do
    case_ "e2e/$t" tests/e2e/run.sh "$t"
done
for t in $(tests/e2e/hostd.sh --list); do
    case_ "e2e/hostd/$t" tests/e2e/run.sh "hostd.sh $t"
done
# A real OpenCL program (cl_worker on PoCL, under the shim) in the guest,
# through a stop-and-copy migration by crane-hostd; it must print PASS on
# the destination.
case_ "e2e/hostd-opencl" tests/e2e/run.sh "$PWD/tests/e2e/hostd-opencl.sh"
# The whole mission live (tests/e2e/live.sh): a proxy domain VM, a guest
# whose cl_worker and pyopencl program compute through it while the VM
# live-migrates, and the faults of that path, all on one boot of each VM;
# each phase is a case of its own (read from the run's results).
case_ "e2e/live" tests/e2e/run.sh live
for t in $(tests/e2e/live.sh --list); do
    case_ "e2e/live/$t" tests/e2e/live.sh result "$t"
done
# crane-hostd built with AddressSanitizer, on both hosts, for the migration.
case_ "e2e/hostd-asan/migrate" env HOSTD=$BA/bin/crane-hostd \
    ASAN_OPTIONS=abort_on_error=1 tests/e2e/run.sh "hostd.sh migrate"
case_ "e2e/hostd/cleanup" tests/e2e/hostd.sh cleanup
# The libvirt backend's own tests against two real libvirtd: a booted
# guest's unplug/replug and a live migration through hv_libvirt_ops, under
# valgrind.
case_ "e2e/hostd-hv" tests/e2e/run.sh "$PWD/tests/hostd-hv/run-e2e.sh"
case_ "e2e/hostd-hv-valgrind" env VALGRIND=1 \
    tests/e2e/run.sh "$PWD/tests/hostd-hv/run-e2e.sh"

echo "# fuzzing: every past finding replayed"
# Each file in tests/fuzz/regress/TARGET/ once made its fuzzer fail; given
# as files, libFuzzer runs each once and fails if any still does.
for d in tests/fuzz/regress/*/; do
    target=$(basename "$d")
    fuzz_case "fuzz/regress-$target" build/fuzz/fuzz_$target "$d"*
done

echo "# fuzzing: a short pass of each target"
# Each starts from its corpus in the repository (tests/fuzz/corpus/TARGET,
# read only) and writes what it finds new to a corpus kept in the log
# folder between runs; a finding fails the case, its artifact named in the
# log.  frame: the frame decoder and Register unpacking; proto: every
# channel's top-level messages through protobuf-c's own (instrumented)
# decoder and encoder; remote: the proxy's decoding, validation and
# execution on PoCL.  tests/fuzz/README.md has the long run.
for target in frame proto remote; do
    mkdir -p "$LOGDIR/fuzz-$target-corpus"
    fuzz_case "fuzz/$target" build/fuzz/fuzz_$target -max_total_time=20 \
        -rss_limit_mb=2048 -artifact_prefix="$LOGDIR/fuzz-$target-" \
        "$LOGDIR/fuzz-$target-corpus" tests/fuzz/corpus/$target
done

total=$((pass + fail + skip))
[ $unrun -eq 0 ] ||
    echo "# CRANE_TEST_ONLY=$ONLY: $unrun cases not run"
echo "$pass passed, $fail failed, $skip skipped (of $total)"
[ $fail -eq 0 ]
