#!/bin/bash
# The shipped monitoring files: contrib/prometheus/crane.rules.yml passes
# `promtool check rules` (package prometheus; that part skipped with its
# reason without it), contrib/grafana/crane.json is valid JSON, and every
# crane_* metric either uses is one crane-hostd exports (the names in
# host-daemon/web/metrics.c, a histogram's with _bucket, _sum and _count); the
# dashboard's downtime tiles keep live and offline apart.
#
#   monitoring.sh     exit 0 pass, 1 fail
set -u
cd "$(dirname "$0")/../.."
RULES=contrib/prometheus/crane.rules.yml
DASH=contrib/grafana/crane.json
die() { echo "FAIL: $*"; exit 1; }
[ -f "$RULES" ] && [ -f "$DASH" ] || die "missing $RULES or $DASH"

python3 -m json.tool "$DASH" > /dev/null || die "$DASH is not valid JSON"
if command -v promtool > /dev/null; then
    promtool check rules "$RULES" || die "promtool check rules $RULES"
else
    echo "note: promtool missing (package prometheus): rules not checked by it"
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert "groups:" in t and "alert:" in t' "$RULES" ||
        die "$RULES has no groups of alerts"
fi

# What crane-hostd exports: the names in the exposition's source.
exported=$(grep -o 'crane_[a-z_]*' host-daemon/web/metrics.c | sort -u)
[ -n "$exported" ] || die "no metric names found in host-daemon/web/metrics.c"
# The histograms, as metrics.h's list of the exposition says them.
histograms=$(grep -oE 'crane_[a-z_]+(\{[a-z]+\})? +histogram' host-daemon/web/metrics.h |
    grep -oE '^crane_[a-z_]+')
[ -n "$histograms" ] || die "no histogram named in host-daemon/web/metrics.h"
known() {
    local m=$1 base
    grep -qx "$m" <<< "$exported" && return 0
    for suf in _bucket _sum _count; do
        base=${m%"$suf"}
        [ "$base" != "$m" ] && grep -qx "$base" <<< "$histograms" && return 0
    done
    return 1
}
n=0
for f in "$RULES" "$DASH"; do
    for m in $(grep -o 'crane_[a-z_]*' "$f" | sort -u); do
        n=$((n + 1))
        known "$m" || die "$f uses $m, which crane-hostd does not export"
    done
done
[ "$n" -ge 10 ] || die "only $n metric names used: the files lost their queries?"

python3 - "$DASH" <<'PY' || die "the dashboard's downtime tiles"
import json, sys
d = json.load(open(sys.argv[1]))
exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in d["panels"]}
live = [t for t, e in exprs.items() if "downtime" in e and 'mode="live"' in e]
off = [t for t, e in exprs.items() if "downtime" in e and 'mode="offline"' in e]
assert live and off, exprs
assert any(p["type"] == "stat" and "downtime" in p["title"].lower() for p in d["panels"]), d
PY
echo "ok: rules and dashboard checked ($n metric uses, all exported)"
