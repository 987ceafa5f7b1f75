#!/bin/bash
# crane-hostd's command line and settings file: --help, bad options and
# values (exit 2), bad config lines named FILE:LINE (exit 1), --check-config.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
HOSTD=${HOSTD:-$B/bin/crane-hostd}
T=$(mktemp -d /tmp/crane-hostd-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; cat "$T/err" 2>/dev/null; exit 1; }

# run EXPECTED_STATUS PATTERN ARGS...: status and one stderr line.
run() {
    local want=$1 pat=$2
    shift 2
    "$HOSTD" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc -eq "$want" ] || die "'$*': exit $rc, not $want"
    grep -qE "$pat" "$T/err" || die "'$*': no '$pat'"
}

"$HOSTD" --help >"$T/out" 2>&1 || die "--help exit $?"
grep -q '^Usage: crane-hostd' "$T/out" || die "--help says no usage"
grep -q -- '--check-config' "$T/out" || die "--help names no --check-config"
run 2 "unknown option '--bogus' \(see --help\)$" --bogus
run 2 "bad log_level 'loud' \(error, warn, info or debug\)" \
    --config /dev/null --log-level loud --check-config
printf 'uri = qemu:///session\ncolour = red\n' >"$T/a.conf"
run 1 "a.conf:2: unknown key 'colour'$" --config "$T/a.conf" --check-config
printf '# ports\n\npeer_port = 0\n' >"$T/a.conf"
run 1 "a.conf:3: bad peer_port '0' \(1-65535\)$" --config "$T/a.conf" \
    --check-config
printf 'no equals sign\n' >"$T/a.conf"
run 1 "a.conf:1: expected key = value$" --config "$T/a.conf" --check-config
run 1 "cannot read $T/none.conf" --config "$T/none.conf" --check-config
printf 'uri = qemu:///session\npeer_listen = none\ngpu = g0 pci:0000:01:00.0 model:A100\n' \
    >"$T/a.conf"
"$HOSTD" --config "$T/a.conf" --check-config >"$T/out" 2>"$T/err" ||
    die "--check-config exit $?"
for line in 'uri = qemu:///session' 'peer_listen = none' \
    'gpu = g0 pci:0000:01:00.0 model:A100' 'peer_port = 7410' \
    'control_mode = 0600' 'http_allow_plain = no'; do
    grep -qxF "$line" "$T/out" || die "--check-config lacks '$line'"
done
echo "PASS hostd-cli"
