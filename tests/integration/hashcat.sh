#!/bin/bash
# hashcat (Debian's `hashcat`), a program that dlopens libOpenCL itself,
# natively and under crane: it must crack the same hashes.
#
#   hashcat.sh shim | remote | switch EVERY
#
# The workload is tiny on purpose: three MD5 hashes against the mask
# ?l?l?d (6,760 candidates) on PoCL's CPU device, after hashcat's own
# self-test of its kernel.  Its first run ever compiles hashcat's kernels
# (about two minutes here) and caches their binaries; later runs, and so
# the runs under crane, load those binaries (clCreateProgramWithBinary, a
# 5.6 MB program) and take about ten seconds.  Exits 77 without hashcat.
# Its state is the test's own: a session named after the test's pid (its
# lock file), sessions, logs and restore files in the test's folder, the
# kernel binaries in build/hashcat-cache (kept between runs); nothing in
# HOME, so a hashcat elsewhere on the machine shares no lock with it.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
. tests/integration/modes.sh
trap mode_stop EXIT

mode_parse "$@" || { sed -n '2,6p' "$0"; exit 2; }
command -v hashcat >/dev/null || {
    echo "hashcat is not installed (apt-get install hashcat)"
    exit 77
}
mode_start || exit 1
HASHCAT_CACHE=$PWD/$B/hashcat-cache
mkdir -p "$MODE_TMP/data" "$HASHCAT_CACHE"

# Three passwords in the mask's space, one hash outside it.
for p in ab1 zz9 qx0 toolong; do
    printf '%s' "$p" | md5sum | cut -d' ' -f1
done >"$MODE_TMP/hashes"

# crack OUT CMD...: the cracked hash:password lines, sorted, into OUT.
crack() {
    local out=$1
    shift
    (cd "$MODE_TMP" && XDG_DATA_HOME=$MODE_TMP/data \
        XDG_CACHE_HOME=$HASHCAT_CACHE mode_bounded 120 hashcat \
        nice -n 10 "$@" hashcat -m 0 -a 3 --session "crane-test-$$" \
        --potfile-disable --quiet -D 1 --outfile "$out.cracked" \
        --outfile-format 1,2 hashes '?l?l?d') >"$out.log" 2>&1
    local rc=$?
    sort "$out.cracked" 2>/dev/null >"$out"
    return $rc
}

crack "$MODE_TMP/native"
native_rc=$?
crack "$MODE_TMP/crane" "${UNDER[@]}"
crane_rc=$?
echo "native (exit $native_rc):"; sed 's/^/    /' "$MODE_TMP/native"
echo "$MODE (exit $crane_rc):"; sed 's/^/    /' "$MODE_TMP/crane"
ok=1
# hashcat exits 1 when some hash was not cracked (the fourth never is).
[ "$native_rc" -le 1 ] && [ "$(wc -l <"$MODE_TMP/native")" -eq 3 ] || {
    echo "native run did not crack the three hashes:"
    tail -5 "$MODE_TMP/native.log"; ok=0; }
[ "$crane_rc" -eq "$native_rc" ] &&
    cmp -s "$MODE_TMP/native" "$MODE_TMP/crane" || {
    echo "different under crane:"; tail -5 "$MODE_TMP/crane.log"; ok=0; }
mode_proxy_alive || ok=0
[ "$MODE" = switch ] && { mode_switches || ok=0; }
[ "$ok" -eq 1 ]
