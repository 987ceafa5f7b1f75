# Sourced by tests/guest/guestd.sh (its helpers and $T): programs started
# plainly, with no crane-run, that reach crane through its ICD file
# (crane.icd naming libcrane in the loader's folder, the vendors in
# crane's own folder): one linked to libOpenCL, one that dlopens it, a
# Python one; each registers with crane-guestd and survives a live
# prepare and resume, every result checked.  CRANE_DISABLE=1 keeps a
# program out.  docs/packaging.md, "Every OpenCL program under crane".

# The loader's folder holds crane.icd only; crane's holds the vendors'.
icd_setup() {
    local f n=0
    mkdir -p "$T/icd" "$T/vendors.d"
    echo "$PWD/$B/lib/libcrane.so" >"$T/icd/crane.icd"
    for f in /etc/OpenCL/vendors/*.icd; do
        [ -e "$f" ] && grep -q pocl "$f" && { cp "$f" "$T/vendors.d/"; n=1; }
    done
    [ $n = 1 ] || skip "no PoCL .icd in /etc/OpenCL/vendors"
}

# plain N CMD...: CMD started as a service or a shell would: the ICD
# loader's and the shim's folders, the daemon's socket, no crane-run.
plain() {
    local n=$1
    shift
    OCL_ICD_VENDORS=$T/icd OCL_ICD_FILENAMES= CRANE_VENDORS_DIR=$T/vendors.d \
        CRANE_SOCKET=$T/guest.sock CRANE_LOG_LEVEL=info \
        CRANE_LOG_FILE=$T/shim$n.log LD_PRELOAD= "$@" \
        --stop-file "$T/stop" --progress "$T/progress$n" --seconds 240 \
        >"$T/w$n.out" 2>&1 &
    PIDS+=($!)
    eval "W$n=$!"
}

# icd_migrates NAME CMD...: one plain program through a live prepare and
# resume; it must end with "PASS NAME" (every result checked).
icd_migrates() {
    local name=$1
    shift
    icd_setup
    start_proxy
    start_daemon
    plain 1 "$@"
    wait_programs 1
    advances 1 || die "the program does not compute"
    ctl status | grep -q "^program $W1 " || die "pid $W1 is not registered"
    tr '\0' '\n' <"/proc/$W1/environ" | grep -q '^LD_PRELOAD=.' &&
        die "the program was preloaded"
    grep -q 'libcrane.so' "/proc/$W1/maps" || die "libcrane is not loaded"
    expect_ok prepare --live
    all_in remoting || die "the program is not remoting"
    advances 1 || die "the program stopped while remoting"
    expect_ok resume
    all_in passthrough || die "the program is not back in passthrough"
    advances 1 || die "the program stopped after the resume"
    touch "$T/stop"
    until_ 30 grep -qs '^PASS\|^FAIL\|^ERROR' "$T/w1.out"
    cat "$T/w1.out"
    grep -q "^PASS $name" "$T/w1.out" || die "$name did not pass"
}

case_icd_linked() { icd_migrates cl_worker "$WORKER"; }
case_icd_dlopen() {
    icd_migrates cl_worker "$B/tests/guest/dlopen_worker" \
        "$PWD/$B/tests/guest/cl_worker.so"
}
case_icd_python() {
    /usr/bin/python3 -c 'import pyopencl, numpy' 2>/dev/null ||
        skip "python3-pyopencl or numpy is not installed"
    # PoCL's pyopencl cache and kernels in this case's folder.
    export PYOPENCL_CACHE_DIR=$T/pycache
    icd_migrates cl_pyworker /usr/bin/python3 tests/guest/cl_pyworker.py
}

# CRANE_DISABLE=1: the program runs on PoCL, its results checked, and
# crane-guestd never sees it (the daemon sees a plain one beside it).
case_icd_disable() {
    icd_setup
    start_daemon
    plain 2 "$WORKER"
    wait_programs 1
    CRANE_DISABLE=1 plain 1 "$WORKER"
    advances 1 || die "the CRANE_DISABLE=1 program does not compute"
    grep -q 'CRANE_DISABLE: the program runs on its vendors' "$T/shim1.log" ||
        die "the shim did not step aside"
    ctl status | grep -q "^program $W1 " && die "pid $W1 registered anyway"
    ctl status | grep -q "^program $W2 " || die "pid $W2 is not registered"
    finish_workers 1 2
}
