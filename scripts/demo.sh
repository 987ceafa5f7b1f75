#!/bin/sh
# The demo: a long-running OpenCL program is re-homed many times while it
# runs (its GPU state taken out, the vendor library unloaded and reloaded,
# every object rebuilt, every byte put back) and still verifies every byte.
set -e
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
echo "== native run"
build/tests/programs/longrun 1500
echo "== the same program under crane, re-homed every 200 OpenCL calls"
CRANE_REHOME_EVERY=200 CRANE_REHOME_REPORT="$report" CRANE_LOG_LEVEL=warn \
    build/bin/crane-run build/tests/programs/longrun 1500
echo "== re-homes (seconds the program's OpenCL calls were held)"
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       n++; t += v["total"]; if (v["total"] > m) m = v["total"]
       printf "  #%-3s %s  total %.1f ms (finish %.1f, extract %.1f, release %.1f, unload %.1f, load %.1f, rebuild %.1f, reinject %.1f)  %s bytes\n",
           v["n"], v["rc"] == 0 ? "ok " : "ERR", v["total"]*1e3, v["finish"]*1e3,
           v["extract"]*1e3, v["release"]*1e3, v["unload"]*1e3, v["load"]*1e3,
           v["rebuild"]*1e3, v["reinject"]*1e3, v["bytes_out"] }
     END { if (n) printf "  %d re-homes, mean %.1f ms, max %.1f ms\n", n, t/n*1e3, m*1e3 }' "$report"
