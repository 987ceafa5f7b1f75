#!/bin/sh
# Installs crane's .debs into an image root the way dpkg -i would on a machine without systemd: the files, dpkg's database of them, and what the maintainer scripts do that matters there.
#
# Usage: vmimages/install-debs.sh ROOT DEB...
#
# For each DEB: its files into ROOT (`dpkg-deb -x`, with ROOT's
# usr-merged links kept as dpkg keeps them); its control files (md5sums,
# conffiles, postinst, ...) into ROOT/var/lib/dpkg/info/PACKAGE.*, the file
# list into PACKAGE.list and a `Status: install ok installed` entry into
# ROOT/var/lib/dpkg/status, so that `dpkg --root ROOT` (and a check in the
# VM against PACKAGE.md5sums) sees an installed package.  Then what the
# postinst does on `configure`, here by hand, as ROOT has no dpkg to run
# it with (each step is looked up in the package's postinst, so one that
# goes away there fails this build; debhelper's systemd snippet, which
# enables the units, has no systemd to act on here):
#   crane-guest: the system group crane (addgroup --system: /etc/group,
#     made if missing), /etc/crane/vendors.d, and every vendor .icd file of
#     /etc/OpenCL/vendors but crane.icd diverted into it with the real
#     dpkg-divert (`--root ROOT --package crane-guest --add --rename`), so
#     that ROOT/var/lib/dpkg/diversions records it as on a machine;
#   crane-host: /var/lib/crane (postinst's install -d);
#   crane-proxy: no postinst.
# The units are installed (/lib/systemd/system) but not enabled: the
# image's init hooks start them (vmimages/clguest/unit-start).
set -eu

[ $# -ge 2 ] || { echo "usage: $0 ROOT DEB..." >&2; exit 2; }
ROOT=$(cd "$1" && pwd)
shift
die() { echo "install-debs: $*" >&2; exit 1; }
INFO=$ROOT/var/lib/dpkg/info
mkdir -p "$INFO" "$ROOT/var/lib/dpkg/updates"
touch "$ROOT/var/lib/dpkg/status" "$ROOT/var/lib/dpkg/available"

# The postinst's steps this script does, per package: each must still be
# in the package's postinst (what else the postinst does is debhelper's
# systemd snippet: enabling units, with no systemd here).
steps() {
    case $1 in
    crane-guest) printf '%s\n' 'addgroup --system --quiet crane' \
        'install -d -m 0755 /etc/crane/vendors.d' \
        'dpkg-divert --package crane-guest --add --rename' ;;
    crane-host) printf '%s\n' 'install -d -m 0755 /var/lib/crane' ;;
    esac
}

divert_vendors() {
    for f in "$ROOT"/etc/OpenCL/vendors/*.icd; do
        [ -f "$f" ] || continue
        name=${f##*/}
        [ "$name" = crane.icd ] && continue
        dpkg-divert --root "$ROOT" --package crane-guest --add --rename \
            --divert "/etc/crane/vendors.d/$name" "/etc/OpenCL/vendors/$name" >&2
    done
}

add_group() {
    touch "$ROOT/etc/group"
    grep -q "^$1:" "$ROOT/etc/group" && return 0
    grep -q '^root:' "$ROOT/etc/group" || echo 'root:x:0:' >> "$ROOT/etc/group"
    echo "$1:x:$2:" >> "$ROOT/etc/group"
}

for deb in "$@"; do
    [ -f "$deb" ] || die "$deb missing"
    pkg=$(dpkg-deb -f "$deb" Package)
    ctl=$(mktemp -d)
    dpkg-deb -e "$deb" "$ctl"
    # dpkg-deb -x, but keeping ROOT's usr-merged links (/lib -> usr/lib):
    # tar would replace them by the package's ./lib/systemd folder, where
    # dpkg itself follows them.
    dpkg-deb --fsys-tarfile "$deb" | tar -xf - --keep-directory-symlink -C "$ROOT"
    for f in "$ctl"/*; do
        [ "${f##*/}" = control ] || cp "$f" "$INFO/$pkg.${f##*/}"
    done
    dpkg-deb --fsys-tarfile "$deb" | tar -tf - | sed -e 's|^\./|/|' -e 's|/$||' |
        sed 's|^$|/.|' > "$INFO/$pkg.list"
    { sed '/^Package:/a Status: install ok installed' "$ctl/control"; echo; } \
        >> "$ROOT/var/lib/dpkg/status"
    steps "$pkg" | while read -r step; do
        grep -qF -- "$step" "$ctl/postinst" ||
            die "$pkg's postinst no longer does '$step': follow it here"
    done
    case $pkg in
    crane-guest)
        add_group crane 999
        mkdir -p "$ROOT/etc/crane/vendors.d"
        divert_vendors ;;
    crane-host)
        mkdir -p "$ROOT/var/lib/crane" ;;
    esac
    rm -rf "$ctl"
    echo "install-debs: $pkg $(dpkg-deb -f "$deb" Version) into $ROOT" >&2
done
