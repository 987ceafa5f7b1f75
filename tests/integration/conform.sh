#!/bin/bash
# Conformance in every mode: tests/programs/conformance --dump records what
# each info query, refusal and corner case answered (one line per probe);
# run natively, then under crane, every line must be the same.
#
#   conform.sh shim              passthrough (crane-run, no proxy)
#   conform.sh remote            remoted from the start (a private proxy)
#   conform.sh switch EVERY      switched native <-> remote before every
#                                EVERY-th call; at least one switch each way
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/programs/conformance
TMP=$(mktemp -d)
. tests/integration/private-proxy.sh

"$PROG" --dump >"$TMP/native" 2>"$TMP/native.err" ||
    fail "the program fails natively: $(tail -1 "$TMP/native")"
case "${1:-}" in
shim)
    "$RUN" "$PROG" --dump >"$TMP/out" 2>"$TMP/shim.log" ||
        fail "the program failed under the shim"
    ;;
remote)
    start_private_proxy
    CRANE_BACKEND="remote:unix:$TMP/proxy.sock" "$RUN" "$PROG" --dump \
        >"$TMP/out" 2>"$TMP/shim.log" || fail "the program failed remoted"
    ;;
switch)
    start_private_proxy
    CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$2" CRANE_REHOME_REPORT="$TMP/report" \
        "$RUN" "$PROG" --dump >"$TMP/out" 2>"$TMP/shim.log" ||
        fail "the program failed switched every $2 calls"
    to_remote=$(grep -c 'rc=0 from=native to=remote' "$TMP/report")
    to_native=$(grep -c 'rc=0 from=remote to=native' "$TMP/report")
    echo "switches: $to_remote to the proxy, $to_native back"
    [ "$to_remote" -ge 1 ] && [ "$to_native" -ge 1 ] ||
        fail "too few switches"
    ;;
*)
    echo "usage: $0 shim | remote | switch EVERY" >&2
    exit 2
    ;;
esac
lines=$(wc -l <"$TMP/native")
if ! diff "$TMP/native" "$TMP/out" >"$TMP/diff"; then
    echo "answers that differ from native (< native, > crane):"
    grep '^[<>]' "$TMP/diff"
    exit 1
fi
echo "$lines answers as native"
