#!/bin/sh
# Builds every crane OpenCL test program into the directory given as $1.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
src=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
cflags="-std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror"

mkdir -p "$out"
for file in "$src"/*.c; do
    name=$(basename "$file" .c)
    case $name in
    dlopen_app) libs="-ldl" ;;          # Must not link libOpenCL itself.
    longkernel) libs="-ldl -lOpenCL" ;; # crane_rehome, when under crane.
    threads | events) libs="-pthread -lOpenCL" ;;
    *) libs="-lOpenCL" ;;
    esac
    # shellcheck disable=SC2086 # cflags and libs are word lists.
    $cc $cflags -I"$src" -o "$out/$name" "$file" $libs
    echo "built $out/$name"
done
