# The case table of tests/run-tests.sh, first part (sourced): unit tests,
# the programs natively, under the shim and re-homed, third-party programs.

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
# No tracked source, test or web file over 800 lines (issue 24): the
# offenders named; a planted one must be caught first.
case_ "unit/file-lengths" scripts/file-lengths.sh --self-test
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
