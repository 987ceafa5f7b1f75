#!/bin/sh
# Builds crane's Debian packages once (make deb) into a cache keyed by the source they are made from, and prints the folder that holds them.
#
# Usage: vmimages/build-debs.sh CACHEDIR
# Prints CACHEDIR/KEY (holding crane-guest_*.deb, crane-proxy_*.deb,
# crane-host_*.deb, the build's log build.log and the key's file list
# key.files), building it with `make deb DEB_DIR=CACHEDIR/KEY` when it
# does not exist yet.  KEY is the sha256 of the names and contents of the
# files `make deb` packs (the tree but build/, build-*/ and .git/) except
# those no package is made from: tests/ (but tests/*.mk, which the
# Makefile includes), vmimages/ and the documentation (*.md).  So editing
# an e2e test, an image script or a doc reuses the packages; any change
# to the code, debian/, the Makefiles, units or config files rebuilds them
# (about 3-6 minutes on 2 cores).  Older keys' folders are removed, so the
# cache holds one set.  The log goes to stderr, the folder to stdout.
set -eu

[ $# -eq 1 ] || { echo "usage: $0 CACHEDIR" >&2; exit 2; }
TOP=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
CACHE=$(cd "$1" && pwd)
die() { echo "build-debs: $*" >&2; exit 1; }
for t in dpkg-buildpackage dh sha256sum; do
    command -v $t > /dev/null || die "$t missing (scripts/setup-debian.sh installs it)"
done

# The key's files: what make deb's tar takes, less what no package holds.
LIST=$CACHE/key.files.tmp
(cd "$TOP" && find . \( -path ./build -o -path './build-*' -o -path ./.git \) -prune \
    -o -type f -print) | LC_ALL=C sort |
    awk '/^\.\/vmimages\// { next }
         /^\.\/tests\// && !/^\.\/tests\/[^\/]*\.mk$/ { next }
         /\.md$/ { next }
         { print }' > "$LIST"
KEY=$(cd "$TOP" && tr '\n' '\0' < "$LIST" | xargs -0 sha256sum | sha256sum | cut -c1-16)
OUT=$CACHE/$KEY
if ls "$OUT"/crane-guest_*.deb "$OUT"/crane-proxy_*.deb > /dev/null 2>&1; then
    rm -f "$LIST"
    echo "build-debs: cached packages of key $KEY ($OUT)" >&2
    echo "$OUT"
    exit 0
fi

T0=$(date +%s)
echo "build-debs: building the packages of key $KEY (make deb, a few minutes)" >&2
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"
# A make of its own: a parent's jobserver (make check) is not passed down.
if ! (cd "$TOP" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make --no-print-directory deb DEB_DIR="$OUT.tmp") > "$OUT.tmp/build.log" 2>&1; then
    tail -n 30 "$OUT.tmp/build.log" >&2
    die "make deb failed (log: $OUT.tmp/build.log)"
fi
mv "$LIST" "$OUT.tmp/key.files"
# One set in the cache: the packages of older sources go.
for d in "$CACHE"/*/; do
    [ -d "$d" ] && [ "${d%/}" != "$OUT.tmp" ] && rm -rf "${d%/}"
done
mv "$OUT.tmp" "$OUT"
echo "build-debs: $(cd "$OUT" && ls ./*.deb | tr '\n' ' ')in $(($(date +%s) - T0)) s" >&2
echo "$OUT"
