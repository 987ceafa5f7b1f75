# Sourced by tests/guest/guestd.sh (its helpers and $T): the GPU's driver
# and devices: a module still busy, waiting for the GPU, no GPU probe
# (with one GPU, and with two counted by a gpu_device pattern).

# The driver module will not unload: abort, programs back in passthrough.
case_module_busy() {
    start_proxy
    start_daemon
    touch "$T/mods/fakegpu.busy"
    worker 1; worker 2
    wait_programs 2
    expect_fail 'is in use' prepare
    all_in passthrough || die "not back in passthrough"
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
    advances 2 || die "worker 2 stopped"
    finish_workers 1 2
}

# Of two modules the second will not unload: the first is loaded again
# and the GPU waited for before the programs return.
case_module_busy_second() {
    MODULES="fakeuvm fakegpu"
    start_proxy
    start_daemon
    touch "$T/mods/fakegpu.busy"
    worker 1
    wait_programs 1
    expect_fail 'modprobe -r fakegpu failed' prepare | tee "$T/prep.out"
    grep -q 'modprobe fakeuvm .*ok' "$T/prep.out" ||
        die "fakeuvm was not loaded again"
    grep -q 'wait for the GPU' "$T/prep.out" || die "no wait for the GPU"
    [ -e "$T/mods/fakeuvm.loaded" ] || die "fakeuvm is not loaded"
    all_in passthrough || die "not back in passthrough"
    finish_workers 1
}

# The driver takes 2 s to bring the GPU up after loading: resume waits for
# the device node and the vendor library (no fixed sleep), then resumes.
case_gpu_wait() {
    start_proxy
    start_daemon
    echo 2 >"$T/mods/fakegpu.delay"
    worker 1
    wait_programs 1
    expect_ok prepare
    expect_ok resume | tee "$T/resume.out"
    local waited
    waited=$(awk '/^step +wait for the GPU/ { print $(NF-1) }' "$T/resume.out")
    echo "waited ${waited} ms for the GPU"
    awk -v w="$waited" 'BEGIN { exit !(w >= 1500 && w < 10000) }' ||
        die "the GPU wait did not follow the device"
    all_in passthrough || die "not back in passthrough"
    finish_workers 1
}

# gpu_type = none (a guest without OpenCL, as the e2e guest): resume waits
# for the device node alone and runs no probe (the vendor library named
# does not exist, so a probe would fail); a node that comes too late fails
# the resume, which stays prepared and may be retried.
case_gpu_none() {
    start_daemon "gpu_type = none" "vendor_lib = $T/no-such-vendor.so" \
        "gpu_wait_ms = 3000"
    "$GUESTD" --config "$T/guestd.conf" --check-config |
        grep -q '^gpu_type = none$' || die "gpu_type none not read back"
    echo 1 >"$T/mods/fakegpu.delay"
    expect_ok prepare --offline
    [ ! -e "$T/mods/dev/fakegpu0" ] || die "device node still there"
    expect_ok resume | tee "$T/resume.out"
    grep -q '^step *wait for the GPU (device nodes) *ok' "$T/resume.out" ||
        die "no node-only GPU wait"
    local waited
    waited=$(awk '/^step +wait for the GPU/ { print $(NF-1) }' "$T/resume.out")
    awk -v w="$waited" 'BEGIN { exit !(w >= 700 && w < 2500) }' ||
        die "the GPU wait (${waited} ms) did not follow the device node"
    ! grep -q 'probe-gpu\|vendor library' "$T/guestd.log" ||
        die "a GPU probe ran"
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
    # The node comes after 5 s, the daemon waits 3 s: the resume fails
    # and stays prepared; retried once the node is there, it succeeds.
    expect_ok prepare --offline
    echo 5 >"$T/mods/fakegpu.delay"
    expect_fail 'fakegpu0 is missing' resume
    ctl status | grep -q '^phase: prepared' || die "phase is not prepared"
    until_ 10 test -e "$T/mods/dev/fakegpu0"
    rm -f "$T/mods/fakegpu.delay"
    expect_ok resume
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
}

# Two GPUs, gpu_type = none, a gpu_device pattern (the e2e guest with two
# stand-in GPUs): the resume waits until the pattern matches a node per
# GPU, not the first one; a process holding the second GPU's node open is
# accounted for at the prepare as one holding the first would be.
case_gpu_none_two() {
    start_daemon "gpu_type = none" "gpus = 2" "gpu_wait_ms = 2000" \
        "vendor_lib = $T/no-such-vendor.so" \
        "gpu_device = $T/mods/dev/fakegpu[0-9]*"
    touch "$T/mods/dev/fakegpu1"
    sleep 600 3<"$T/mods/dev/fakegpu1" &
    local holder=$!
    PIDS+=($holder)
    expect_fail "pid $holder (sleep) holds .*fakegpu1 but is not a registered program" \
        prepare --offline
    kill "$holder"; wait "$holder" 2>/dev/null
    expect_ok prepare --offline
    # The driver brings back fakegpu0 alone: one node of the two.
    rm -f "$T/mods/dev/fakegpu1"
    expect_fail 'fakegpu\[0-9\]\* matches 1 node of the 2 GPUs' resume
    ctl status | grep -q '^phase: prepared' || die "phase is not prepared"
    touch "$T/mods/dev/fakegpu1"
    expect_ok resume | grep -q '^step *wait for the GPU (device nodes) *ok' ||
        die "no node-only GPU wait"
    ctl status | grep -q '^phase: idle' || die "phase is not idle"
}
