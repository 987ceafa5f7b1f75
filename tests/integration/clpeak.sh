#!/bin/bash
# clpeak natively, under crane-run and re-homed: same report, numbers masked.
#
# Usage: tests/integration/clpeak.sh EVERY CLPEAK-OPTION...
# clpeak measures, so its numbers differ from run to run: every decimal
# number (all of its measurements print as %.2f, or inf) becomes N; the rest
# (platform, device, compute units, clock, test and column names) must
# equal the native report under the shim and re-homed every EVERY OpenCL
# calls, each run exiting 0. Exits 77 when clpeak is missing.
set -eu
cd "$(dirname "$0")/../.."
RUN=${RUN:-build/bin/crane-run}
[ $# -ge 2 ] || { echo "usage: $0 EVERY CLPEAK-OPTION..." >&2; exit 2; }
every=$1
shift
command -v clpeak >/dev/null || { echo "SKIP: no clpeak"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# timed NAME CMD...: CMD's stdout, numbers masked, into $tmp/NAME, its time
# on ours. Its stderr (PoCL's build warnings, only on a cache miss) goes to
# the log.
timed() {
    local t0=${EPOCHREALTIME/./} rc=0 ms
    "${@:2}" >"$tmp/$1.raw" || rc=$?
    ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
    sed -E 's/-?([0-9]+\.[0-9]+|\b(inf|nan)\b)/N/g' "$tmp/$1.raw" >"$tmp/$1"
    printf '%-12s %3d.%d s  exit %d\n' "$1" $((ms / 1000)) \
        $((ms % 1000 / 100)) $rc
    return $rc
}

timed native clpeak "$@"
cat "$tmp/native.raw"
measured=$(grep -cE ': N( [a-zA-Z]+)?$' "$tmp/native" || true)
[ "$measured" -gt 0 ] || { echo "native: no measurement"; exit 1; }

status=0
timed shim "$RUN" clpeak "$@" || status=1
diff "$tmp/native" "$tmp/shim" || status=1

report=$tmp/report
: >"$report"
timed "rehome-$every" env CRANE_REHOME_EVERY="$every" \
    CRANE_REHOME_REPORT="$report" "$RUN" clpeak "$@" || status=1
diff "$tmp/native" "$tmp/rehome-$every" || status=1
# Every re-home worked or was refused for a documented reason (-EBUSY: a
# mapped buffer), and at least one really happened.
ok=$(grep -c ' rc=0 ' "$report" || true)
busy=$(grep -c ' rc=-16 ' "$report" || true)
bad=$(grep ' rc=-' "$report" | grep -vc ' rc=-16 ' || true)
echo "rehome-$every: $ok re-homes done, $busy refused (busy), $bad failed"
[ "$ok" -ge 1 ] && [ "$bad" -eq 0 ] || status=1

[ $status -eq 0 ] && echo "PASS clpeak $*: same $measured measurements"
exit $status
