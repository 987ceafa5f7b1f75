#!/bin/sh
# A stand-in for modprobe in crane-guestd's tests: "modules" are files under
# $CRANE_FAKE_MODULES.  modprobe -r M removes M.loaded and the device node
# dev/M0, unless M.busy exists (then it fails as a module in use does);
# modprobe M creates M.loaded and, after M.delay seconds (default 0) in the
# background, dev/M0, as a driver that takes a while to bring a GPU up.
set -u
dir=${CRANE_FAKE_MODULES:?CRANE_FAKE_MODULES is not set}
mkdir -p "$dir/dev"
echo "modprobe $*" >>"$dir/log"
if [ "${1:-}" = "-r" ]; then
    m=$2
    if [ -e "$dir/$m.busy" ]; then
        echo "modprobe: FATAL: Module $m is in use." >&2
        exit 1
    fi
    rm -f "$dir/$m.loaded" "$dir/dev/${m}0"
    exit 0
fi
m=$1
touch "$dir/$m.loaded"
delay=$(cat "$dir/$m.delay" 2>/dev/null || echo 0)
if [ "$delay" = 0 ]; then
    touch "$dir/dev/${m}0"
else
    (sleep "$delay"; touch "$dir/dev/${m}0") >/dev/null 2>&1 &
fi
exit 0
