#!/bin/bash
# Fails unless DOC names every key DAEMON's settings table has, as `key`.
#
#   conf-keys-documented.sh DAEMON DOC [CONFIG_LINE...]
#   conf-keys-documented.sh --self-test DAEMON DOC [CONFIG_LINE...]
#
# The keys are what DAEMON --check-config prints (every row of its table:
# guest-daemon/config.c, host-daemon/config.c); CONFIG_LINEs go into its
# config file first (a row printed only when set, as gpu).  --self-test
# also checks that a copy of DOC with one key taken out fails.
set -u
self_test=0
if [ "${1:-}" = --self-test ]; then self_test=1; shift; fi
[ $# -ge 2 ] || { sed -n '2,10p' "$0"; exit 2; }
daemon=$1 doc=$2
shift 2
T=$(mktemp -d /tmp/crane-conf-keys.XXXXXX)
trap 'rm -rf "$T"' EXIT
for line in "$@"; do echo "$line"; done > "$T/conf"
"$daemon" --config "$T/conf" --check-config > "$T/out" ||
    { echo "FAIL: $daemon --check-config"; exit 1; }
keys=$(sed -n 's/^\([a-z_0-9]*\) =.*/\1/p' "$T/out" | sort -u)
n=$(echo "$keys" | grep -c .)
[ "$n" -ge 10 ] || { echo "FAIL: only $n keys from $daemon"; exit 1; }

# missing DOC: the keys DOC does not name.
missing() {
    for k in $keys; do grep -qF "\`$k\`" "$1" || echo "$k"; done
}
gone=$(missing "$doc")
[ -z "$gone" ] || { echo "FAIL: $doc does not name:" $gone; exit 1; }
if [ $self_test = 1 ]; then
    first=$(echo "$keys" | head -1)
    sed "s/\`$first\`/\`x\`/g" "$doc" > "$T/doc"
    [ "$(missing "$T/doc")" = "$first" ] ||
        { echo "FAIL: self-test: $first taken out, not seen"; exit 1; }
fi
echo "ok: $doc names all $n keys of $daemon"
