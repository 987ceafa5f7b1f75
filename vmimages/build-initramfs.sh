#!/bin/sh
# Builds the minimal test guest: a Debian kernel and a busybox initramfs.
#
# Usage: vmimages/build-initramfs.sh OUTDIR
# Writes OUTDIR/vmlinuz, OUTDIR/initramfs.img and OUTDIR/kernel-version.
# The kernel .deb is downloaded once into $CRANE_VM_CACHE (default
# OUTDIR/cache; several guest images may share one) with apt-get download,
# so it comes from the machine's configured mirror, and unpacked with
# dpkg -x.
#
# The guest's /init mounts proc, sys and dev, loads the virtio modules
# (decompressed under /lib/modules/VERSION/ with a modules.dep, so busybox
# modprobe works in the guest too), prints "CRANE-GUEST-READY" on the
# serial console (ttyS0), reports the stand-in GPU (virtio-rng) appearing
# and disappearing as "CRANE-RNG present" / "CRANE-RNG absent" (and keeps
# the link /dev/crane-gpu0 while it is present: the node a GPU driver would
# make), powers off on the ACPI power button (virsh shutdown), and then
# idles.
#
# Hooks for later tests (crane-guestd in the guest):
#   CRANE_INITRAMFS_FILES="SRC[:DEST] ..."  extra files copied in (DEST
#       defaults to /SRC's basename under /opt/crane/)
#   CRANE_INITRAMFS_BINS="PROG ..."  host executables copied to /usr/bin
#       with the shared libraries ldd lists for them
#   CRANE_INITRAMFS_MODULES="mod ..."  extra kernel modules to load
#   Any executable file copied to /etc/crane-init.d/ is run in order by
#   /init after the modules are loaded and before the ready marker.
set -eu

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CACHE=${CRANE_VM_CACHE:-$OUT/cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

MODULES="virtio_pci virtio_console virtio_rng virtio_net virtio_blk evdev button
${CRANE_INITRAMFS_MODULES:-}"

for t in busybox dpkg-deb depmod modprobe cpio gzip apt-get; do
    command -v "$t" >/dev/null ||
        { echo "build-initramfs: $t missing (run vmimages/setup-vm-host.sh)" >&2; exit 1; }
done
BUSYBOX=/bin/busybox
if ! "$BUSYBOX" --list | grep -qx insmod || ldd "$BUSYBOX" >/dev/null 2>&1; then
    echo "build-initramfs: $BUSYBOX is not busybox-static" >&2
    exit 1
fi

# 1. The kernel: linux-image-amd64 is a metapackage; fetch what it depends on.
KPKG=$(apt-cache depends linux-image-amd64 |
    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1)
[ -n "$KPKG" ] || { echo "build-initramfs: cannot resolve linux-image-amd64" >&2; exit 1; }
KTREE=$CACHE/$KPKG
if [ ! -f "$KTREE/.unpacked" ]; then
    (cd "$CACHE" && rm -f "$KPKG"_*.deb &&
        apt-get -q -o APT::Sandbox::User=root download "$KPKG")
    rm -rf "$KTREE"
    dpkg -x "$CACHE"/"$KPKG"_*.deb "$KTREE"
    : > "$KTREE/.unpacked"
fi
KVER=$(ls "$KTREE/lib/modules" | head -1)
if [ ! -f "$KTREE/lib/modules/$KVER/modules.dep" ]; then
    depmod -b "$KTREE" "$KVER"
fi

# 2. The initramfs tree (staged in OUTDIR, as the cache may be shared).
ROOT=$OUT/root
KMOD=$ROOT/lib/modules/$KVER
rm -rf "$ROOT"
mkdir -p "$ROOT"/bin "$ROOT"/sbin "$ROOT"/usr/bin "$ROOT"/usr/sbin \
    "$ROOT"/proc "$ROOT"/sys "$ROOT"/dev "$ROOT"/tmp "$ROOT"/run \
    "$ROOT"/etc/crane-init.d "$ROOT"/etc/acpi/PWRF "$ROOT"/lib/crane-modules \
    "$KMOD" "$ROOT"/opt/crane "$ROOT"/root
cp "$BUSYBOX" "$ROOT/bin/busybox"
for app in $("$BUSYBOX" --list); do
    [ -e "$ROOT/bin/$app" ] || ln -s busybox "$ROOT/bin/$app"
done

# Modules in load order (dependencies first), decompressed so that busybox
# insmod and modprobe can load them whatever compression the kernel package
# uses, at their usual place under /lib/modules/VERSION/ (the order file
# lists those paths relative to it) with a modules.dep made by depmod.
: > "$ROOT/lib/crane-modules/order"
for m in $MODULES; do
    modprobe -d "$KTREE" -S "$KVER" --show-depends "$m" 2>/dev/null |
        sed -n 's/^insmod \([^ ]*\).*/\1/p' > "$OUT/deps" ||
        { echo "build-initramfs: no module $m" >&2; exit 1; }
    if [ ! -s "$OUT/deps" ]; then
        # Built into the kernel: nothing to load.
        continue
    fi
    while read -r ko; do
        rel=${ko#"$KTREE/lib/modules/$KVER/"}
        rel=${rel%.xz}; rel=${rel%.zst}; rel=${rel%.gz}
        grep -qx "$rel" "$ROOT/lib/crane-modules/order" && continue
        mkdir -p "$(dirname "$KMOD/$rel")"
        case $ko in
        *.xz) xz -dc "$ko" > "$KMOD/$rel" ;;
        *.zst) zstd -qdc "$ko" > "$KMOD/$rel" ;;
        *.gz) gzip -dc "$ko" > "$KMOD/$rel" ;;
        *) cp "$ko" "$KMOD/$rel" ;;
        esac
        echo "$rel" >> "$ROOT/lib/crane-modules/order"
    done < "$OUT/deps"
done
rm -f "$OUT/deps"
for f in modules.builtin modules.builtin.modinfo modules.order; do
    [ -f "$KTREE/lib/modules/$KVER/$f" ] && cp "$KTREE/lib/modules/$KVER/$f" "$KMOD/"
done
depmod -b "$ROOT" "$KVER"

# Hooks: extra files, executables with their libraries.
for spec in ${CRANE_INITRAMFS_FILES:-}; do
    src=${spec%%:*}
    if [ "$src" = "$spec" ]; then dst=/opt/crane/$(basename "$src"); else dst=${spec#*:}; fi
    mkdir -p "$ROOT$(dirname "$dst")"
    cp -a "$src" "$ROOT$dst"
done
for prog in ${CRANE_INITRAMFS_BINS:-}; do
    cp "$prog" "$ROOT/usr/bin/"
    for lib in $(ldd "$prog" 2>/dev/null | grep -o '/[^ ]*'); do
        [ -e "$ROOT$lib" ] && continue
        mkdir -p "$ROOT$(dirname "$lib")"
        cp -L "$lib" "$ROOT$lib"
    done
done

cat > "$ROOT/etc/acpi/PWRF/00000080" <<'SH'
#!/bin/sh
echo "CRANE-GUEST-POWEROFF" > /dev/console
sync
poweroff -f
SH
chmod +x "$ROOT/etc/acpi/PWRF/00000080"

cat > "$ROOT/init" <<'SH'
#!/bin/sh
# /init of the crane test guest (vmimages/build-initramfs.sh).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
exec < /dev/console > /dev/console 2>&1
while read -r ko; do
    insmod "/lib/modules/$(uname -r)/$ko" || echo "CRANE-INSMOD-FAILED $ko"
done < /lib/crane-modules/order
# busybox mdev populates /dev/vport* and /dev/virtio-ports/ names.
[ -w /proc/sys/kernel/hotplug ] && echo /bin/mdev > /proc/sys/kernel/hotplug
mdev -s
mkdir -p /dev/virtio-ports
for p in /sys/class/virtio-ports/*; do
    [ -e "$p/name" ] || continue
    ln -sf "/dev/$(basename "$p")" "/dev/virtio-ports/$(cat "$p/name")"
    echo "CRANE-PORT $(cat "$p/name")"
done
acpid -c /etc/acpi -l /run/acpid.log 2>/dev/null
for h in /etc/crane-init.d/*; do
    [ -x "$h" ] && "$h"
done
# The stand-in GPU watcher: one line on the console per change, and the
# link /dev/crane-gpu0 -> hwrng while virtio_rng drives a device (as a GPU
# driver's node: /dev/hwrng itself is built into the kernel and stays).
(
    last=""
    while :; do
        if [ -e /sys/bus/virtio/drivers/virtio_rng ] &&
           ls /sys/bus/virtio/drivers/virtio_rng | grep -q virtio; then
            now=present
            # Made once, never replaced: `ln -sf` would remove it for an
            # instant on every round, and a watcher could see it gone.
            [ -L /dev/crane-gpu0 ] || ln -s hwrng /dev/crane-gpu0
        else
            now=absent
            rm -f /dev/crane-gpu0
        fi
        if [ "$now" != "$last" ]; then
            echo "CRANE-RNG $now $(cut -d' ' -f1 /proc/uptime)"
            last=$now
        fi
        usleep 100000
    done
) &
echo "CRANE-GUEST-READY $(cut -d' ' -f1 /proc/uptime) kernel $(uname -r)"
while :; do sleep 3600; done
SH
chmod +x "$ROOT/init"

(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) \
    > "$OUT/initramfs.img.tmp"
mv "$OUT/initramfs.img.tmp" "$OUT/initramfs.img"
cp "$KTREE/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
echo "$KVER" > "$OUT/kernel-version"
echo "build-initramfs: $OUT/vmlinuz $OUT/initramfs.img ($KVER," \
    "$(wc -l < "$ROOT/lib/crane-modules/order") modules," \
    "$(du -k "$OUT/initramfs.img" | cut -f1) KiB)"
