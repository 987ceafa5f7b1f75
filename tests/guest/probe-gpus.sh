#!/bin/bash
# crane-guestd's GPU probe with `gpus`: a VM with several GPUs is usable
# only once the vendor library counts every one of them (PoCL with two
# devices stands in: two counted pass, three wanted fail with the count
# said), and a bad `gpus` setting is refused.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
GD=$B/bin/crane-guestd
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export POCL_DEVICES="pthread pthread"
VDIR=${CRANE_TEST_VENDORS_DIR:-/etc/OpenCL/vendors}
ls "$VDIR"/*.icd >/dev/null 2>&1 || { echo "skip: no OpenCL vendor in $VDIR"; exit 77; }

probe() { "$GD" --probe-gpu "" --gpu-type cpu --vendors-dir "$VDIR" "$@"; }

probe --gpus 2 2>"$TMP/two" || { echo "two wanted, two there: failed:"; cat "$TMP/two"; exit 1; }
grep -q '^2 cpu device' "$TMP/two" || { cat "$TMP/two"; exit 1; }
if probe --gpus 3 2>"$TMP/three"; then
    echo "three wanted, two there: the probe passed"; exit 1
fi
grep -q 'finds 2 of the 3 cpu devices' "$TMP/three" || { cat "$TMP/three"; exit 1; }
# The setting: 1 to 16, shown by --check-config.
printf 'gpus = 2\n' >"$TMP/ok.conf"
"$GD" --config "$TMP/ok.conf" --check-config 2>&1 | grep -q '^gpus = 2$' ||
    { echo "gpus = 2 not taken:"; "$GD" --config "$TMP/ok.conf" --check-config 2>&1 | tail -3; exit 1; }
for bad in 0 17 two -1; do
    printf 'gpus = %s\n' "$bad" >"$TMP/bad.conf"
    if "$GD" --config "$TMP/bad.conf" --check-config >/dev/null 2>&1; then
        echo "gpus = $bad accepted"; exit 1
    fi
done
echo "probe counts every GPU; gpus checked"
