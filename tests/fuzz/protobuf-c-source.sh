#!/bin/bash
# Fetches the source of the installed libprotobuf-c (Debian's source
# package, by `apt-get source` from a private deb-src list: no root, no
# change to the system's apt configuration) and unpacks it into DEST, so
# that the fuzz targets compile protobuf-c's runtime (protobuf-c.c) with
# their own instrumentation instead of linking the uninstrumented library.
#
#   tests/fuzz/protobuf-c-source.sh DEST
#
# Offline, point PROTOBUF_C_SRC at an unpacked protobuf-c source tree of
# the same version instead (make fuzz-frame PROTOBUF_C_SRC=DIR).
set -euo pipefail

dest=$1
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
read -r src ver < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' \
    libprotobuf-c-dev)
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
echo "deb-src $mirror $suite main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list"
          -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists"
          -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
          -o APT::Sandbox::User=root)
apt-get -qq "${apt_opts[@]}" update
(cd "$work" && apt-get -qq "${apt_opts[@]}" source --download-only \
    "$src=$ver")
# dpkg-source checks the .dsc's checksums and applies Debian's changes.
(cd "$work" && dpkg-source -q -x ./*.dsc tree)
test -f "$work/tree/protobuf-c/protobuf-c.c"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/tree" "$dest"
echo "protobuf-c $ver source in $dest"
