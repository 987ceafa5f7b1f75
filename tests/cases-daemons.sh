# The case table of tests/run-tests.sh, last part (sourced): fault
# injection, the daemons, installation, end-to-end VMs, fuzzing.
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
