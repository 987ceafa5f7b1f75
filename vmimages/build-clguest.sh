#!/bin/sh
# Builds the OpenCL e2e test guest and proxy domain: the crane-guestd initramfs guest plus a read-only ext4 disk with cl_worker, cl_pyworker, crane-proxy, the crane shim and PoCL.
#
# One image, two roles, chosen on the kernel command line: a guest
# (crane-guestd, then cl_worker and, with crane.py=1, cl_pyworker:
# vmimages/clguest/70-cl-worker), or with crane.role=proxy the proxy
# domain (crane-proxy on its own PoCL device, listening on TCP 7420 with
# the key it reads from its second disk: vmimages/clguest/60-crane-proxy).
# crane.ip=ADDR/LEN puts eth0 on the VMs' shared network
# (vmimages/clguest/20-crane-net).
#
# Usage: vmimages/build-clguest.sh OUTDIR
# Writes OUTDIR/vmlinuz, OUTDIR/initramfs.img, OUTDIR/kernel-version
# (vmimages/build-initramfs.sh; set CRANE_VM_CACHE to share the kernel
# download), OUTDIR/cl-root.img, the disk the domain gets read-only as
# vda, and OUTDIR/debs/ (the packages installed in it).  Needs
# build/tests/guest/cl_worker, PoCL (pocl-opencl-icd), busybox-static,
# mkfs.ext4 (e2fsprogs, for `mkfs.ext4 -d`: no loop device) and what
# `make deb` needs.
#
# crane comes from its Debian packages only, nothing of build/: the .debs
# of vmimages/build-debs.sh (cached in CRANE_DEB_CACHE, default
# build/e2e-vm/debs, keyed by the source; CRANE_DEB_DIR names a folder of
# ready ones instead) are installed into the disk's tree by
# vmimages/install-debs.sh (dpkg-deb -x, dpkg's database, the postinst's
# crane group and diversion of pocl.icd into /etc/crane/vendors.d),
# crane-guest and crane-proxy: /usr/sbin/crane-guestd, cranectl,
# crane-proxy, /usr/lib/crane/libcrane.so registered as the system's ICD
# (/etc/OpenCL/vendors/crane.icd), their units and /etc/crane.  Then, as
# an administrator would: /etc/crane/guestd.conf (a conffile) replaced by
# vmimages/guestd/guestd.conf (mode offline, gpu_type none, virtio_rng as
# the GPU driver, /dev/hwrng /dev/crane-gpu0 as its nodes) and its
# /usr/sbin/crane-modprobe.  The programs run plainly, no crane-run: the
# ICD loader brings libcrane in.
#
# The initramfs holds no crane file: its hooks (vmimages/clguest/)
# mount the disk (30-crane-root) and start the packaged units in a chroot
# of it (crane-unit-start, vmimages/clguest/unit-start: their ExecStart=,
# Environment= and folders read from the installed unit files), and
# crane-pkg-check (vmimages/clguest/pkg-check) prints, for crane-guestd,
# crane-proxy and each program, the packaged files it runs or maps with
# their md5 against dpkg's md5sums; plus the ext4 modules.
#
# cl-root.img holds the packages and what the programs need at run time,
# found by tracing them on this host (strace -f -e openat,execve):
#   crane-guest and crane-proxy as above, with the ldd closure of their
#       binaries and libcrane; /opt/crane/bin/cl_worker;
#   busybox (static) as /usr/bin/sh, env, modprobe, rmmod...: the units'
#       stand-in for systemd runs ExecStart= from sh, crane-modprobe is
#       a shell script;
#   the libpocl that pocl.icd names (the .icd itself diverted to
#       /etc/crane/vendors.d), PoCL's device plugins (LIBDIR/pocl/), its
#       headers (/usr/share/pocl/include) and one kernel library,
#       kernel-TRIPLE-$CRANE_CLGUEST_KERNELLIB.bc (default sse2: the guest
#       sets POCL_KERNELLIB_NAME to match);
#   the linker PoCL runs to turn each kernel into a shared object
#       (/usr/bin/ld, binutils' ld.bfd) and its inputs: libc.so and libm.so
#       (linker scripts) with what they name, and from the newest GCC of
#       /usr/lib/gcc/TRIPLE/: crtbegin.o (clang's driver looks for it to
#       find the GCC installation and its -L paths), libgcc.a, libgcc_s.so;
#   /etc/os-release, /etc/debian_version (clang's distribution check);
#   the ldd closure of every executable and library above, with symlinks
#       kept (the usr-merged /bin, /lib, /lib64 links too);
#   empty mount points /proc, /sys, /dev, /tmp, /run, /var/cache,
#       /lib/modules;
#   cl_pyworker (tests/guest/cl_pyworker.py) with /usr/bin/python3, numpy
#       and pyopencl: the files python opens to run it, found with strace
#       (-e openat,execve) on this host, and their ldd closure; left out
#       (with a warning) when python3-pyopencl or strace is missing.
# Then, when run as root, cl_worker and cl_pyworker run once in a chroot
# of the tree (unshare -m, CRANE_SOCKET=none, 1 s), as the guest runs
# them (libcrane through crane.icd, which must log that it loaded a
# vendor: "native: N platform(s) from", PoCL from /etc/crane/vendors.d,
# the only place left with pocl.icd), so a missing file stops the build, not the
# guest; CRANE_CLGUEST_CHECK=0 skips that.  Their PoCL kernel cache from
# that run is kept in /opt/crane/pocl-cache: the VMs copy it to their
# tmpfs cache, so that neither the guest nor the proxy domain compiles
# these kernels again under TCG (POCL_LLVM_CPU_NAME=x86-64 in both, so
# that the cache's keys match whatever CPU QEMU offers).
set -eu

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
WORKER=$TOP/build/tests/guest/cl_worker
PYWORKER=$TOP/tests/guest/cl_pyworker.py
PYTHON=/usr/bin/python3
KLIB=${CRANE_CLGUEST_KERNELLIB:-sse2}
GUESTD=$HERE/guestd
# What libcrane logs once it loaded the vendors (shim/native.c, info).
CHECK_VENDOR='native: [0-9]* platform(s) from'
T0=$(date +%s.%N)

die() { echo "build-clguest: $*" >&2; exit 1; }
[ -x "$WORKER" ] || die "$WORKER missing (make $WORKER)"
for t in mkfs.ext4 ldd busybox; do
    command -v "$t" > /dev/null || die "$t missing"
done
ICD=/etc/OpenCL/vendors/pocl.icd
[ -f "$ICD" ] || die "$ICD missing (apt-get install pocl-opencl-icd)"
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
if [ -n "${CRANE_DEB_DIR:-}" ]; then
    DEBS=$CRANE_DEB_DIR
else
    DEBS=$("$HERE/build-debs.sh" "${CRANE_DEB_CACHE:-$TOP/build/e2e-vm/debs}") ||
        die "no packages (vmimages/build-debs.sh)"
fi
set -- "$DEBS"/crane-guest_*.deb
[ -f "$1" ] || die "no crane-guest package in $DEBS"
GUEST_DEB=$1
set -- "$DEBS"/crane-proxy_*.deb
[ -f "$1" ] || die "no crane-proxy package in $DEBS"
PROXY_DEB=$1
ROOT=$OUT/cl-root
rm -rf "$ROOT"
mkdir -p "$ROOT/usr/bin" "$ROOT/usr/sbin" "$ROOT/usr/lib" "$ROOT/usr/lib64" \
    "$ROOT/proc" "$ROOT/sys" "$ROOT/dev" "$ROOT/tmp" "$ROOT/run/crane" \
    "$ROOT/etc" "$ROOT/opt/crane/bin" "$ROOT/var/cache" "$ROOT/usr/lib/modules"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOT/$d"; done

# add PATH: copies PATH to the same place under ROOT; a symlink is copied
# as a symlink and its target added too (a chain such as /usr/bin/ld ->
# x86_64-linux-gnu-ld -> x86_64-linux-gnu-ld.bfd, or libclang-cpp.so.15 ->
# ../llvm-15/lib/...). Directories are taken physically (/lib -> usr/lib),
# as ROOT has the same links.
add() {
    _p=$1
    while :; do
        _d=$(cd "$(dirname "$_p")" && pwd -P) || die "no directory for $_p"
        _p=$_d/$(basename "$_p")
        if [ -e "$ROOT$_p" ] || [ -L "$ROOT$_p" ]; then return 0; fi
        mkdir -p "$ROOT$_d"
        if [ -L "$_p" ]; then
            cp -P "$_p" "$ROOT$_p"
            _t=$(readlink "$_p")
            case $_t in /*) _p=$_t ;; *) _p=$_d/$_t ;; esac
        else
            [ -f "$_p" ] || die "$_p missing"
            cp "$_p" "$ROOT$_p"
            return 0
        fi
    done
}
# add_elf FILE...: each FILE and the shared libraries ldd lists for it.
add_elf() {
    for _f in "$@"; do
        add "$_f"
        for _l in $(ldd "$_f" | grep -o '/[^ ]*'); do add "$_l"; done
    done
}
# add_ldscript FILE: a linker script and the absolute paths it names.
add_ldscript() {
    add "$1"
    for _l in $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\/[a-z]/) print $i }' "$1"); do
        add "$_l"
    done
}

# The test program (crane itself comes from the packages, below).
cp "$WORKER" "$ROOT/opt/crane/bin/"
for l in $(ldd "$WORKER" | grep -o '/[^ ]*'); do add "$l"; done

# cl_pyworker: python3 with numpy and pyopencl, as much of them as running
# it opens (python's own site .pth files of this machine stay out).
PY=0
if [ -x "$PYTHON" ] && command -v strace > /dev/null &&
    "$PYTHON" -c 'import numpy, pyopencl' 2> /dev/null; then
    PY=1
    cp "$PYWORKER" "$ROOT/opt/crane/bin/"
    # A fresh HOME: pyopencl's own cache cold, as in the VM (a cold cache
    # imports more: pkg_resources).
    rm -rf "$OUT/trace-home"
    mkdir -p "$OUT/trace-home"
    env -i PATH=/usr/bin:/bin HOME="$OUT/trace-home" PYOPENCL_NO_CACHE=1 \
        POCL_CACHE_DIR=$OUT/trace-cache POCL_KERNELLIB_NAME=$KLIB \
        strace -f -qq -e trace=openat,execve -o "$OUT/py.strace" \
        "$PYTHON" "$PYWORKER" --seconds 0.5 --words 1024 > "$OUT/py.out" 2>&1 ||
        { cat "$OUT/py.out" >&2; die "cl_pyworker fails on this host"; }
    rm -rf "$OUT/trace-cache" "$OUT/trace-home"
    add_elf "$PYTHON"
    # The landmarks python finds its prefix by (stat, never opened: os is
    # a frozen module).
    PYLIB=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
    add "$PYLIB/os.py"
    mkdir -p "$ROOT$PYLIB/lib-dynload"
    # Every codec: the guest's locale is C (ASCII), this host's may not be.
    for f in "$PYLIB"/encodings/*.py; do add "$f"; done
    # pyopencl's OpenCL headers: passed to the compiler as -I (it checks
    # that the folder exists), opened only by kernels that include them.
    PYCL=$("$PYTHON" -c 'import os, pyopencl; print(os.path.dirname(pyopencl.__file__))')
    for f in $(find "$PYCL/cl" -type f); do add "$f"; done
    grep -v -e ENOENT -e ENOTDIR "$OUT/py.strace" |
        grep -oE '"/usr/lib/python3[^"]*"' | tr -d '"' | sort -u |
        while read -r f; do
            case $f in *.pth) [ "${f##*/}" = distutils-precedence.pth ] || continue ;; esac
            [ -f "$f" ] || continue
            case $f in *.so|*.so.*) add_elf "$f" ;; *) add "$f" ;; esac
            # A cached .pyc is used only next to its source (python stats
            # it to check the cache is fresh).
            case $f in */__pycache__/*.pyc)
                src=${f%/__pycache__/*}/$(basename "$f" | cut -d. -f1).py
                [ -f "$src" ] && add "$src" ;;
            esac
        done
    rm -f "$OUT/py.strace" "$OUT/py.out"
else
    echo "build-clguest: no python3-pyopencl, numpy or strace here:" \
        "cl_pyworker left out" >&2
fi

# PoCL: the vendor file, the library it names, its device plugins, headers
# and one kernel library.
add "$ICD"
POCL=$(head -n 1 "$ICD")
case $POCL in
/*) ;;
*)
    # A bare name: where the dynamic linker would look.
    for d in /usr/lib/*-linux-gnu /usr/lib /usr/local/lib /usr/lib64; do
        [ -f "$d/$POCL" ] && { POCL=$d/$POCL; break; }
    done ;;
esac
[ -n "$POCL" ] && [ -f "$POCL" ] || die "cannot find the library $ICD names"
PLIB=$(cd "$(dirname "$POCL")" && pwd -P)
add_elf "$POCL"
for so in "$PLIB"/pocl/*.so; do add_elf "$so"; done
PSHARE=$(cd "$PLIB/../../share/pocl" && pwd -P) || die "no share/pocl next to $PLIB"
for h in "$PSHARE"/include/*; do add "$h"; done
set -- "$PSHARE"/kernel-*-"$KLIB".bc
[ -f "$1" ] || die "no PoCL kernel library $KLIB in $PSHARE"
add "$1"

# The linker PoCL runs, and what it links each kernel with.
add_elf "$(command -v ld)"
add_ldscript "$PLIB/libc.so"
add_ldscript "$PLIB/libm.so"
GCCDIR=$(ls -d /usr/lib/gcc/*/*/crtbegin.o 2>/dev/null | sort -V | tail -n 1)
[ -n "$GCCDIR" ] || die "no GCC installation (crtbegin.o) under /usr/lib/gcc"
GCCDIR=$(dirname "$GCCDIR")
for f in crtbegin.o libgcc.a libgcc_s.so; do add "$GCCDIR/$f"; done
for f in /etc/os-release /etc/debian_version; do
    [ -e "$f" ] && add "$f"
done

# crane: its packages, installed as dpkg would (pocl.icd, added above,
# diverted into /etc/crane/vendors.d by crane-guest's postinst steps), and
# the libraries their binaries need.
"$HERE/install-debs.sh" "$ROOT" "$GUEST_DEB" "$PROXY_DEB"
for f in usr/sbin/crane-guestd usr/sbin/cranectl usr/sbin/crane-proxy \
    usr/lib/crane/libcrane.so; do
    [ -f "$ROOT/$f" ] || die "/$f not in the packages"
    for l in $(ldd "$ROOT/$f" | grep -o '/[^ ]*'); do add "$l"; done
done
[ -f "$ROOT/etc/crane/vendors.d/pocl.icd" ] && [ ! -e "$ROOT$ICD" ] ||
    die "pocl.icd was not diverted into /etc/crane/vendors.d"
mkdir -p "$OUT/debs.tmp"
cp "$GUEST_DEB" "$PROXY_DEB" "$OUT/debs.tmp/"
rm -rf "$OUT/debs"
mv "$OUT/debs.tmp" "$OUT/debs"
# The administrator's part: the guest daemon's config (the conffile
# replaced, as an edit would) and the modprobe it names.
cp "$GUESTD/guestd.conf" "$ROOT/etc/crane/guestd.conf"
cp "$GUESTD/crane-modprobe" "$ROOT/usr/sbin/crane-modprobe"
"$ROOT/usr/sbin/crane-guestd" --config "$ROOT/etc/crane/guestd.conf" --check-config > /dev/null ||
    die "the packaged crane-guestd refuses $GUESTD/guestd.conf"

# busybox for the units' ExecStart (sh), crane-modprobe (modprobe, rmmod)
# and the hooks (env).
cp "$(command -v busybox)" "$ROOT/usr/bin/busybox"
for app in $("$ROOT/usr/bin/busybox" --list); do
    [ -e "$ROOT/usr/bin/$app" ] || [ -L "$ROOT/usr/bin/$app" ] ||
        ln -s busybox "$ROOT/usr/bin/$app"
done

# The check: each program for a second in a chroot of the tree, filling
# the PoCL kernel cache the VMs start with.
mkdir -p "$ROOT/opt/crane/pocl-cache"
if [ "${CRANE_CLGUEST_CHECK:-1}" != 0 ] && [ "$(id -u)" = 0 ] &&
    command -v unshare > /dev/null; then
    unshare -m sh -c '
        R=$1 K=$2 PY=$3
        mount -t proc proc "$R/proc" && mount -t sysfs sysfs "$R/sys" &&
        mount -o bind /dev "$R/dev" && mount -t tmpfs tmpfs "$R/tmp" || exit 1
        run() {
            chroot "$R" /usr/bin/env -i PATH=/usr/bin HOME=/tmp \
                POCL_CACHE_DIR=/opt/crane/pocl-cache POCL_KERNELLIB_NAME=$K \
                POCL_LLVM_CPU_NAME=x86-64 PYOPENCL_NO_CACHE=1 \
                CRANE_SOCKET=none CRANE_LOG_LEVEL=info "$@"
        }
        # The sizes the e2e tests run (PoCL caches a kernel per size).
        run /opt/crane/bin/cl_worker --seconds 1 --words 65536 &&
            run /opt/crane/bin/cl_worker --seconds 1 --words 262144 || exit 1
        [ "$PY" = 0 ] || run /usr/bin/python3 /opt/crane/bin/cl_pyworker.py \
            --seconds 1 --words 65536' \
        sh "$ROOT" "$KLIB" "$PY" > "$OUT/check.out" 2>&1 ||
        { cat "$OUT/check.out" >&2; die "a program fails in $ROOT"; }
    [ "$(grep -c '^PASS' "$OUT/check.out")" = $((2 + PY)) ] ||
        { cat "$OUT/check.out" >&2; die "a program did not pass in $ROOT"; }
    [ "$(grep -c "$CHECK_VENDOR" "$OUT/check.out")" -ge $((2 + PY)) ] ||
        { cat "$OUT/check.out" >&2; die "a program ran without the packaged libcrane (no '$CHECK_VENDOR')"; }
    find "$ROOT/opt/crane/pocl-cache" -maxdepth 1 -name 'tempfile*' -exec rm -rf {} + || true
fi

# The disk: no journal (read-only), no reserved blocks, room for 5 %.
KB=$(du -sk "$ROOT" | cut -f1)
INODES=$(find "$ROOT" | wc -l)
rm -f "$OUT/cl-root.img.tmp"
mkfs.ext4 -q -F -L crane-cl -O ^has_journal,^metadata_csum -m 0 \
    -N $((INODES + INODES / 4 + 256)) -E root_owner=0:0 -d "$ROOT" \
    "$OUT/cl-root.img.tmp" $((KB + KB / 20 + 2048))k > /dev/null
mv "$OUT/cl-root.img.tmp" "$OUT/cl-root.img"
rm -rf "$ROOT"

CRANE_INITRAMFS_BINS="${CRANE_INITRAMFS_BINS:-}" \
CRANE_INITRAMFS_FILES="$HERE/clguest/unit-start:/usr/sbin/crane-unit-start
$HERE/clguest/pkg-check:/usr/sbin/crane-pkg-check
$HERE/clguest/20-crane-net:/etc/crane-init.d/20-crane-net
$HERE/clguest/30-crane-root:/etc/crane-init.d/30-crane-root
$HERE/clguest/50-crane-guestd:/etc/crane-init.d/50-crane-guestd
$HERE/clguest/60-crane-proxy:/etc/crane-init.d/60-crane-proxy
$HERE/clguest/70-cl-worker:/etc/crane-init.d/70-cl-worker ${CRANE_INITRAMFS_FILES:-}" \
CRANE_INITRAMFS_MODULES="ext4 ${CRANE_INITRAMFS_MODULES:-}" \
    "$HERE/build-initramfs.sh" "$OUT"
echo "build-clguest: $OUT/cl-root.img ($((KB / 1024)) MiB of files," \
    "$INODES inodes, image $(du -k "$OUT/cl-root.img" | cut -f1) KiB used of" \
    "$(($(stat -c %s "$OUT/cl-root.img") / 1024)) KiB) in" \
    "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
