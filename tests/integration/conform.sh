#!/bin/bash
# Conformance in every mode: tests/programs/conformance --dump records what
# each info query, refusal and corner case answered (one line per probe);
# run natively, then under crane, every line must be the same but those
# tests/integration/conform-known.txt lists with their reasons.
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

# Switched, no native kernel: the device's capability changes under it.
ARGS=(--dump)
[ "${1:-}" = switch ] && ARGS+=(--no-native)
"$PROG" "${ARGS[@]}" >"$TMP/native" 2>"$TMP/native.err" ||
    fail "the program fails natively: $(tail -1 "$TMP/native")"
case "${1:-}" in
shim)
    "$RUN" "$PROG" "${ARGS[@]}" >"$TMP/out" 2>"$TMP/shim.log" ||
        fail "the program failed under the shim"
    ;;
remote)
    start_private_proxy
    CRANE_BACKEND="remote:unix:$TMP/proxy.sock" "$RUN" "$PROG" "${ARGS[@]}" \
        >"$TMP/out" 2>"$TMP/shim.log" || fail "the program failed remoted"
    ;;
switch)
    start_private_proxy
    CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$2" CRANE_REHOME_REPORT="$TMP/report" \
        "$RUN" "$PROG" "${ARGS[@]}" >"$TMP/out" 2>"$TMP/shim.log" ||
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
# Known differences (conform-known.txt) are reported, never failed on.
known() {
    local name=${1%%:*} pat why
    while read -r pat why; do
        case $pat in '#'* | '') continue ;; esac
        # shellcheck disable=SC2254 # the patterns are globs on purpose.
        case $name in $pat) return 0 ;; esac
    done <tests/integration/conform-known.txt
    return 1
}
lines=$(wc -l <"$TMP/native")
diff "$TMP/native" "$TMP/out" | grep '^[<>]' >"$TMP/diff"
bad=0
while read -r side line; do
    if known "$line"; then
        echo "known: $side $line"
    else
        echo "DIFFERS: $side $line"
        bad=$((bad + 1))
    fi
done <"$TMP/diff"
echo "$lines answers natively, $(wc -l <"$TMP/diff") lines differ, $bad unknown"
[ "$bad" -eq 0 ]
