#!/bin/bash
# budget.sh: one process re-homed N times (default 1000) under crane, every
# word of its buffers checked after each re-home, its fds and mappings
# counted after each: are re-homes without a budget (issue 21, item 2)?
#
#   bench/rehome/budget.sh [--lib LIB] [--rehomes N] [--words W]
#                          [--to alternate|native|remote] [--unload MODE]
#                          [--slack-fds F] [--slack-maps M]
#
#   --lib LIB      the vendor library alone (libnvidia-opencl.so.1 on the
#                  GPU machine; default: the system's /etc/OpenCL/vendors),
#                  for the shim (CRANE_VENDOR_LIBS) and for the proxy (a
#                  private vendors folder for the ICD loader)
#   --to T         CRANE_REHOME_TO (default alternate: switches to the proxy
#                  and back, both ways; native: re-homes on the vendor)
#   --unload MODE  CRANE_VENDOR_UNLOAD: auto (default), always (every
#                  re-home off the vendor unloads it: a reload at each way
#                  back), never
#   --rehomes N, --words W   bench/rehome/budget.c's (defaults 1000, 1 Mi)
#   --slack-fds F, --slack-maps M  what the counts may grow between the
#                  tenth re-home and the last (defaults 2 and 16: a thread's
#                  arena or a lingering connection's fd)
#
# Prints the program's last lines, then one line
#   budget.sh: N re-homes, D done, F failed, loads=L, fds A -> B (max C),
#   maps A -> B (max C): PASS|FAIL (why)
# PASS: every word right, every re-home done, fds and mappings flat.
# Needs make all (build/bin/crane-run, build/bin/crane-proxy,
# build/bench/budget).  bench/rehome/README.md says how to read it.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
LIB=
N=1000
WORDS=$((1 << 20))
TO=alternate
UNLOAD=auto
SLACK_FDS=2
SLACK_MAPS=16
while [ $# -gt 0 ]; do
    case $1 in
    --lib) LIB=$2; shift ;;
    --rehomes) N=$2; shift ;;
    --words) WORDS=$2; shift ;;
    --to) TO=$2; shift ;;
    --unload) UNLOAD=$2; shift ;;
    --slack-fds) SLACK_FDS=$2; shift ;;
    --slack-maps) SLACK_MAPS=$2; shift ;;
    -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "budget.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
for f in $B/bin/crane-run $B/bin/crane-proxy $B/bench/budget; do
    [ -x "$f" ] || { echo "budget.sh: $f is not built (make all)" >&2; exit 2; }
done

T=$(mktemp -d /tmp/crane-budget.XXXXXX)
PROXY_PID=
cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
    wait 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

VENDOR_ENV=()
if [ -n "$LIB" ]; then
    mkdir -p "$T/vendors"
    echo "$LIB" >"$T/vendors/only.icd"
    VENDOR_ENV=(OCL_ICD_VENDORS="$T/vendors" CRANE_VENDORS_DIR="$T/vendors"
                CRANE_VENDOR_LIBS="$LIB")
fi
if [ "$TO" != native ]; then
    env "${VENDOR_ENV[@]}" $B/bin/crane-proxy --listen "unix:$T/proxy.sock" \
        >"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 600); do
        [ -S "$T/proxy.sock" ] && break
        kill -0 "$PROXY_PID" 2>/dev/null ||
            { echo "budget.sh: crane-proxy exited"; cat "$T/proxy.log"; exit 1; }
        sleep 0.05
    done
fi

env "${VENDOR_ENV[@]}" CRANE_SOCKET=none CRANE_REHOME_TO="$TO" \
    CRANE_VENDOR_UNLOAD="$UNLOAD" CRANE_PROXY="unix:$T/proxy.sock" \
    CRANE_LOG_FILE="$T/shim.log" CRANE_LOG_LEVEL=info \
    CRANE_REHOME_REPORT="$T/report" \
    $B/bin/crane-run $B/bench/budget --rehomes "$N" --words "$WORDS" \
    >"$T/out" 2>&1
RC=$?
tail -3 "$T/out"

# What the re-homes cost (the report's total = stoppage, and its load
# step), median per direction: auto against always is what keeping the
# vendor loaded saves.
for dir in native:native native:remote remote:native; do
    awk -v f="${dir%%:*}" -v t="${dir##*:}" '
    $1 == "rehome" && $3 == "rc=0" && $4 == "from=" f && $5 == "to=" t {
        split($6, a, "="); split($12, b, "="); n++; tot[n] = a[2]; ld[n] = b[2]
    }
    function median(v, n,   i, j, x) {
        for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    END { if (n) printf "budget.sh: %s -> %s: %d re-homes, median stoppage %.3f ms, load %.3f ms\n",
        f, t, n, median(tot, n) * 1e3, median(ld, n) * 1e3 }' "$T/report"
done

# The counts after the tenth re-home (the same way as the last: N and 10
# have the same parity, or the eleventh) against the last and the most.
awk -v n="$N" -v sf="$SLACK_FDS" -v sm="$SLACK_MAPS" -v rc="$RC" \
    -v loads="$(grep -o '[0-9]* load(s) of a library so far' "$T/shim.log" |
                tail -1 | cut -d' ' -f1)" '
$1 == "rehome" {
    i = $2; split($3, r, "="); split($4, f, "="); split($6, m, "=")
    last = i; fl = f[2]; ml = m[2]; if (r[2] != 0) failed++; else done++
    if (f[2] > fmax) fmax = f[2]; if (m[2] > mmax) mmax = m[2]
    if (i == (n % 2 ? 11 : 10) || (n < 10 && i == 1)) { f0 = f[2]; m0 = m[2] }
}
END {
    why = ""
    if (rc != 0) why = why " program exit " rc
    if (last != n) why = why " only " last + 0 " of " n " re-homes ran"
    if (failed) why = why " " failed " re-home(s) failed"
    if (fl - f0 > sf) why = why " fds grew by " fl - f0
    if (ml - m0 > sm) why = why " mappings grew by " ml - m0
    printf "budget.sh: %d re-homes, %d done, %d failed, loads=%s, fds %d -> %d (max %d), maps %d -> %d (max %d): %s\n",
        last, done, failed, loads == "" ? "?" : loads, f0, fl, fmax, m0,
        ml, mmax, why == "" ? "PASS" : "FAIL (" substr(why, 2) ")"
    exit why != ""
}' "$T/out"
