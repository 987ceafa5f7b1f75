#!/bin/sh
# The dashboard of a real crane-hostd, with its GPU pool, in headless
# Chromium, checked against its own API.
#
#   tests/hostd/dashboard-hostd.sh [--screenshots DIR]
#
# Runs build/bin/crane-hostd on libvirt's test driver (a node of five
# running VMs: four hold the pool's four GPUs, one arrived from gpu-host-b
# and waits for a GPU) with a history of 240 migrations of the last 14 days
# written by build/tests/hostd-seed, on a private port, control socket and
# state folder.  Loads the page in headless Chromium (the default view,
# the second and last pages, a filtered view, a range) and checks what it
# built against the API of the same daemon: every point of the stoppage
# trend (p50 and p95 of pre, post and downtime per bucket), the GPU pool
# (each GPU's state and holder, the waiting VM), the figures per kind, the
# rows of each page and of a filter with their totals, no error in the
# console.  With --screenshots DIR, also saves the views as
# DIR/dashboard-{overview,filtered,timeline}.png (docs/ has them).
#
# Exit status: 0 pass, 1 fail, 77 skipped (no Chromium, no crane-hostd).
# Environment: CHROMIUM (the browser), HOSTD (default build/bin/crane-hostd),
# HOSTD_SEED (default build/tests/hostd-seed).
set -eu

cd "$(dirname "$0")/../.."
. tests/wait.sh
hostd=${HOSTD:-build/bin/crane-hostd}
seed=${HOSTD_SEED:-build/tests/hostd-seed}
shots=
if [ "${1:-}" = --screenshots ] && [ -n "${2:-}" ]; then
    shots=$(cd "$2" && pwd)
elif [ $# -gt 0 ]; then
    echo "usage: $0 [--screenshots DIR]" >&2
    exit 2
fi

chrome=${CHROMIUM:-}
if [ -z "$chrome" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null 2>&1; then
            chrome=$(command -v "$c")
            break
        fi
    done
fi
if [ -z "$chrome" ]; then
    echo "dashboard-hostd.sh: skipped: no chromium or chromium-browser installed"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "dashboard-hostd.sh: skipped: python3 is needed to check the DOM"
    exit 77
fi
if [ ! -x "$hostd" ] || [ ! -x "$seed" ]; then
    echo "dashboard-hostd.sh: skipped: $hostd or $seed not built (libvirt, libmicrohttpd and SQLite are needed)"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dashboard-hostd.XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The node: gpu0..gpu3 held by four VMs, vm-render-03 without one.
python3 - "$tmp/node.xml" <<'EOF'
import sys
doms = [("vm-train-01", "0x65"), ("vm-train-02", "0x66"),
        ("vm-infer-07", "0xb3"), ("vm-infer-08", "0xb4"),
        ("vm-render-03", None)]
out = ["<node>"]
for i, (name, bus) in enumerate(doms):
    dev = ""
    if bus:
        dev = ("<hostdev mode='subsystem' type='pci' managed='yes'><source>"
               "<address domain='0x0000' bus='%s' slot='0x00' "
               "function='0x0'/></source><alias name='ua-crane-gpu%d'/>"
               "</hostdev>" % (bus, i))
    out.append("<domain type='test'><name>%s</name><memory>1048576</memory>"
               "<vcpu>2</vcpu><os><type>hvm</type></os><devices>%s</devices>"
               "</domain>" % (name, dev))
out.append("</node>")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
# No peers, no key; the waiting VM is not retried while the test runs
# (there is no free GPU for it anyway).
printf 'peer_key = none\npeer_listen = none\ngpu_retry_ms = 600000\n' \
    >"$tmp/hostd.conf"
"$seed" "$tmp/history.db" gpu-host-a 240

"$hostd" --config "$tmp/hostd.conf" --uri "test://$tmp/node.xml" \
    --control "unix:$tmp/hostd.sock" --http 127.0.0.1:0 \
    --history "$tmp/history.db" --host-name gpu-host-a \
    --gpu 'gpu0 pci:0000:65:00.0' --gpu 'gpu1 pci:0000:66:00.0' \
    --gpu 'gpu2 pci:0000:b3:00.0' --gpu 'gpu3 pci:0000:b4:00.0' \
    >"$tmp/hostd.log" 2>&1 &
pid=$!
port=
serving() {
    port=$(sed -n 's/.*http: serving on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' \
        "$tmp/hostd.log")
    [ -n "$port" ]
}
wait_until -q 10 -p "$pid" -e "$pid" -n "crane-hostd serves" -- serving
if [ -z "$port" ]; then
    echo "dashboard-hostd.sh: crane-hostd did not start:" >&2
    cat "$tmp/hostd.log" >&2
    exit 1
fi
base=http://127.0.0.1:$port

# dump NAME FRAGMENT [SCREENSHOT]: the DOM of $base/FRAGMENT after 5 s of
# virtual time into $tmp/NAME.html, the console into $tmp/NAME.log.
dump() {
    if ! run_bounded -q 60 -p "$pid" -n chromium -- \
        "$chrome" --headless=new --no-sandbox --disable-gpu \
        --no-first-run --disable-extensions --disable-dev-shm-usage \
        --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
        --window-size=1400,1000 --virtual-time-budget=5000 \
        --dump-dom "$base/$2" >"$tmp/$1.html" 2>"$tmp/$1.log"; then
        echo "dashboard-hostd.sh: chromium failed on $base/$2:" >&2
        tail -20 "$tmp/$1.log" >&2
        exit 1
    fi
}

# shot FILE FRAGMENT HEIGHT: a screenshot of the view, 1400 px wide.
shot() {
    run_bounded -q 60 -p "$pid" -n chromium -- \
        "$chrome" --headless=new --no-sandbox --disable-gpu \
        --no-first-run --disable-extensions --disable-dev-shm-usage \
        --user-data-dir="$tmp/profile" --hide-scrollbars \
        --window-size=1400,"$3" --virtual-time-budget=5000 \
        --screenshot="$1" "$base/$2" >/dev/null 2>&1
}

dump index ""
dump page2 "#page=2"
dump last "#page=5"
dump filtered "#host=gpu-host-c&mode=offline"
dump week "#range=7d&result=ok"

python3 - "$base" "$tmp" <<'EOF'
"""Checks the dumped DOMs against the API of the same crane-hostd."""
import json, os, sys, urllib.parse, urllib.request
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "hostd"))
import dom

base, tmp = sys.argv[1], sys.argv[2]
failures = []
PAGE = 50


def check(cond, msg):
    if not cond:
        failures.append(msg)
    return cond


def api(path):
    with urllib.request.urlopen(base + path) as r:
        return json.load(r)


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def near(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(
        1.0, abs(b))


def page(name):
    raw, root = dom.load(tmp, name)
    for line in dom.console_errors(tmp, name):
        failures.append("%s: console: %s" % (name, line))
    return root


def rows(root):
    return [n.attrs["data-migration-id"] for n in root.find_all(
        lambda n: n.tag == "tr" and "data-migration-id" in n.attrs and
        n.parent is not None and n.parent.tag == "tbody" and
        n.parent.parent is not None and
        n.parent.parent.attrs.get("id") == "history")]


def check_page(name, root, query, offset):
    want = api("/api/migrations?limit=%d&offset=%d%s" % (PAGE, offset,
                                                         query))
    got = rows(root)
    check(got == [m["id"] for m in want["migrations"]],
          "%s: rows %r..., the API has %r..." %
          (name, got[:3], [m["id"] for m in want["migrations"]][:3]))
    table = root.by_id("history")
    check(table is not None and table.attrs.get("data-total") ==
          str(want["total"]) and table.attrs.get("data-offset") ==
          str(offset), "%s: total/offset %r, the API says %d at %d" %
          (name, table.attrs if table else None, want["total"], offset))
    return want


# --- the default view: every migration, the first page ---------------------
root = page("index")
stats = api("/api/stats?buckets=30")
want = check_page("index", root, "", 0)
check(want["total"] == 241, "the history has %d migrations, not 241" %
      want["total"])
check(len(rows(root)) == PAGE, "index: %d rows, not %d" %
      (len(rows(root)), PAGE))

# The trend: a point per bucket with a value, at the API's value.
trend = stats["trend"]
check(len(trend) == 30, "the API's trend has %d buckets" % len(trend))
for metric in ("pre", "post", "downtime_live", "downtime_offline"):
    svgs = root.find_all(lambda n: n.tag == "svg" and
                         n.attrs.get("data-metric") == metric)
    if not check(len(svgs) == 1, "index: %d %s charts" % (len(svgs),
                                                          metric)):
        continue
    for q in ("p50", "p95"):
        pts = {int(c.attrs["data-bucket"]): num(c.attrs["data-value"])
               for c in svgs[0].find_all(lambda n: n.tag == "circle" and
                                         q in n.classes())}
        expect = {i: b[metric][q] for i, b in enumerate(trend)
                  if b[metric]["n"] > 0}
        check(len(expect) >= 10, "%s: only %d buckets with a value" %
              (metric, len(expect)))
        check(set(pts) == set(expect), "index: %s %s points in buckets %r, "
              "the API has %r" % (metric, q, sorted(pts), sorted(expect)))
        for i, v in expect.items():
            check(near(pts.get(i), v), "index: %s %s of bucket %d: %r, the "
                  "API says %r" % (metric, q, i, pts.get(i), v))
# The regression seeded 4 to 6 days ago shows in the pre stoppage's p50.
pre = [b["pre"]["p50"] for b in trend if b["pre"]["n"] > 0]
check(max(pre) > 2 * sorted(pre)[len(pre) // 2],
      "the seeded regression does not stand out in the trend: %r" % pre)

# The overview and the kinds.
count = root.find_all(lambda n: n.attrs.get("data-figure") == "count")
check(count and count[0].attrs.get("data-value") == "241",
      "index: the overview counts %r" % (count[0].attrs if count else None))
for figure in ("pre", "post", "downtime"):
    t = root.find_all(lambda n, f=figure: n.attrs.get("data-figure") == f)
    check(t and near(num(t[0].attrs.get("data-p95")),
                     stats["all"][figure]["p95"]),
          "index: overview %s p95 %r, the API says %r" %
          (figure, t[0].attrs.get("data-p95") if t else None,
           stats["all"][figure]["p95"]))
for g in stats["modes"]:
    r = root.find_all(lambda n, g=g: n.tag == "tr" and
                      n.attrs.get("data-mode") == g["name"])
    check(r and r[0].attrs.get("data-count") == str(g["count"]) and
          r[0].attrs.get("data-bytes") == str(g["bytes_moved"]),
          "index: kind %s shows %r, the API says %d migrations, %d bytes" %
          (g["name"], r[0].attrs if r else None, g["count"],
           g["bytes_moved"]))
    check(g["count"] > 0 and g["bytes_moved"] > 0,
          "kind %s moved no bytes in the seeded history" % g["name"])
hosts = [n.attrs["data-host"] for n in root.find_all(
    lambda n: n.tag == "tr" and "data-host" in n.attrs)]
check(hosts == [h["name"] for h in stats["hosts"]] and
      "gpu-host-a" in hosts, "index: hosts %r" % hosts)
vms = [n.attrs["data-domain"] for n in root.by_id("domains").find_all(
    lambda n: n.tag == "tr" and "data-domain" in n.attrs)]
check(vms == [d["name"] for d in stats["domains"]], "index: VMs %r" % vms)

# The pool: each GPU's state and holder, the VM waiting here.
pool = api("/api/pool")
check(pool["host"] == "gpu-host-a" and pool["held"] == 4 and
      len(pool["waiting"]) == 1, "the API's pool: %r" % pool)
box = root.by_id("pool-box")
check(box is not None and box.attrs.get("data-known") == "true" and
      box.attrs.get("data-held") == "4" and
      box.attrs.get("data-free") == "0" and
      box.attrs.get("data-waiting") == "1",
      "index: the pool box says %r" % (box.attrs if box else None))
gpus = [(n.attrs["data-gpu"], n.attrs["data-state"], n.attrs["data-holder"])
        for n in root.find_all(lambda n: n.tag == "tr" and
                               "data-gpu" in n.attrs)]
check(gpus == [(g["name"], g["state"], g["holder"] or "")
               for g in pool["gpus"]],
      "index: GPUs %r, the API has %r" % (gpus, pool["gpus"]))
check(("gpu0", "held", "vm-train-01") in gpus, "index: gpu0 %r" % gpus)
waiting = root.by_id("waiting").find_all(
    lambda n: n.tag == "tr" and "data-domain" in n.attrs)
check([w.attrs["data-domain"] for w in waiting] == ["vm-render-03"] and
      waiting[0].attrs["data-migration-id"] ==
      pool["waiting"][0]["migration_id"],
      "index: waiting %r" % [w.attrs for w in waiting])
live = root.by_id("live")
check(live is not None and live.attrs.get("data-running") == "1",
      "index: the waiting VM's migration is not shown running")
heading = root.by_id("heading")
check(heading is not None and heading.text() ==
      "crane — migrations on gpu-host-a", "index: heading %r" %
      (heading.text() if heading else None))

# --- paging through the whole history --------------------------------------
check_page("page2", page("page2"), "", PAGE)
last = page("last")
check_page("last", last, "", 4 * PAGE)
check(len(rows(last)) == 41, "last page: %d rows, not 41" % len(rows(last)))
info = last.by_id("page-info")
check(info is not None and info.text() == "201–241 of 241",
      "last page: %r" % (info.text() if info else None))

# --- filters -----------------------------------------------------------------
root = page("filtered")
want = check_page("filtered", root, "&host=gpu-host-c&mode=offline", 0)
check(0 < want["total"] < 60, "filtered: %d migrations" % want["total"])
for m in want["migrations"]:
    check(m["mode"] == "offline" and "gpu-host-c" in (m["source"],
                                                      m["destination"]),
          "filtered: %r does not match" % m["id"])
s = root.by_id("f-summary")
check(s is not None and s.text().startswith(
    "host gpu-host-c, kind offline: %d migration" % want["total"]),
    "filtered: summary %r" % (s.text() if s else None))
charts = [n.attrs.get("data-metric") for n in root.find_all(
    lambda n: n.tag == "svg" and "data-metric" in n.attrs)]
check(charts == ["pre", "post", "downtime_offline"],
      "filtered: charts %r" % charts)

root = page("week")
want = api("/api/migrations?limit=50&result=ok&since=1")  # ids only
got = rows(root)
check(got and all(r in {m["id"] for m in api(
    "/api/migrations?limit=1000&result=ok")["migrations"]} for r in got),
    "week: a row that is not ok")
table = root.by_id("history")
total = int(table.attrs.get("data-total", "0")) if table else 0
check(0 < total < want["total"], "week: %d of %d ok migrations" %
      (total, want["total"]))

for f in failures:
    print("FAIL: " + f)
print("dashboard-hostd.sh: 5 pages of a crane-hostd with %d migrations "
      "checked, %d failures" % (241, len(failures)))
sys.exit(1 if failures else 0)
EOF

if [ -n "$shots" ]; then
    python3 - "$chrome" "$base" "$tmp" "$shots" <<'EOF'
"""Screenshots of the views, once each has rendered its data."""
import json, os, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "hostd"))
from dom import Browser

chrome, base, tmp, shots = sys.argv[1:5]
with urllib.request.urlopen(base + "/api/migrations?limit=1&result=ok"
                            "&mode=live") as r:
    chosen = json.load(r)["migrations"][0]["id"]
with open(os.path.join(tmp, "shots.log"), "w") as log:
    b = Browser(chrome, os.path.join(tmp, "shot-profile"), log)
    try:
        for name, fragment, selector, height, ready in (
                ("overview", "", None, 1500, "#trend svg"),
                ("filtered", "#host=gpu-host-c&mode=offline", None, 1250,
                 "#trend svg"),
                ("timeline", "#id=" + chosen, "#detail", None,
                 "#timeline .bar")):
            b.open(base + "/" + fragment)
            for _ in range(200):
                if b.eval("document.querySelector(%s) !== null" %
                          json.dumps(ready)):
                    break
                time.sleep(0.05)
            time.sleep(0.3)
            b.screenshot(os.path.join(shots, "dashboard-%s.png" % name),
                         selector, height)
    finally:
        b.close()
EOF
    echo "dashboard-hostd.sh: screenshots in $shots"
fi
