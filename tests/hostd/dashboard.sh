#!/bin/sh
# The dashboard of crane-hostd in headless Chromium, checked against the API.
#
#   tests/hostd/dashboard.sh [HISTORY.db]
#
# Serves HISTORY.db (with hostd-serve's stand-in pool of two GPUs; without
# it: a fixture written by `hostd-serve --fixture`: an ok, a rolled-back with markup in its error, a failed and a
# running migration) with build/tests/hostd-serve on an ephemeral port,
# loads the page in headless Chromium (the newest migration, then each one
# by #id=ID) and checks the DOM it built against the JSON API of the same
# server: a row per migration with its result, a timeline bar per step with
# its exact duration, the live panel for running migrations, untrusted text
# shown as text, no error in the browser's console.  The fixture adds exact
# expectations of its own, and a live run: one page stays open (driven over
# the DevTools protocol) while `hostd-serve --advance` moves the running
# migration on step by step, as the daemon would, until it finishes; each
# step must show up in place within a few seconds.
#
# Exit status: 0 pass, 1 fail, 77 skipped (no Chromium).  Environment:
# HOSTD_SERVE (default build/tests/hostd-serve), CHROMIUM (the browser),
# DASHBOARD_MAX_PAGES (migrations loaded one by one, default 20).
set -eu

cd "$(dirname "$0")/../.."
. tests/wait.sh
serve=${HOSTD_SERVE:-build/tests/hostd-serve}

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
    echo "dashboard.sh: skipped: no chromium or chromium-browser installed"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "dashboard.sh: skipped: python3 is needed to check the DOM"
    exit 77
fi
if [ ! -x "$serve" ]; then
    echo "dashboard.sh: $serve is missing: make $serve" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dashboard.XXXXXX")
pid=
cleanup() {
    exec 3>&- 2>/dev/null || true
    if [ -n "$pid" ]; then
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if [ $# -ge 1 ]; then
    db=$1
    fixture=0
    if [ ! -f "$db" ]; then
        echo "dashboard.sh: no history file $db" >&2
        exit 1
    fi
else
    db=$tmp/history.db
    fixture=1
    "$serve" --fixture "$db"
fi

# The server runs until its stdin (fd 3 here) closes; its first line of
# output says which port it took.
mkfifo "$tmp/stdin" "$tmp/stdout"
"$serve" "$db" 0 <"$tmp/stdin" >"$tmp/stdout" 2>"$tmp/serve.log" &
pid=$!
exec 3>"$tmp/stdin"
port=
read -r word port <"$tmp/stdout" || true
if [ "${word:-}" != port ] || [ -z "$port" ]; then
    echo "dashboard.sh: hostd-serve did not start:" >&2
    cat "$tmp/serve.log" >&2
    exit 1
fi
base=http://127.0.0.1:$port

# dump NAME FRAGMENT: the DOM of $base/FRAGMENT after 5 s of virtual time
# into $tmp/NAME.html, the browser's console into $tmp/NAME.log.
dump() {
    if ! run_bounded -q 60 -p "$pid" -n chromium -- \
        "$chrome" --headless=new --no-sandbox --disable-gpu \
        --no-first-run --disable-extensions --disable-dev-shm-usage \
        --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
        --window-size=1400,1000 --virtual-time-budget=5000 \
        --dump-dom "$base/$2" >"$tmp/$1.html" 2>"$tmp/$1.log"; then
        echo "dashboard.sh: chromium failed on $base/$2:" >&2
        tail -20 "$tmp/$1.log" >&2
        exit 1
    fi
}

# The pages to load: the default view, each migration by #id= (the newest
# first, at most DASHBOARD_MAX_PAGES), and an unknown id.
python3 - "$base" "${DASHBOARD_MAX_PAGES:-20}" >"$tmp/pages" <<'EOF'
import json, sys, urllib.request
base, most = sys.argv[1], int(sys.argv[2])
with urllib.request.urlopen(base + "/api/migrations?limit=50") as r:
    ms = json.load(r)["migrations"]
print("index")
for i, m in enumerate(ms[:most]):
    print("id-%d #id=%s" % (i, m["id"]))
print("unknown #id=no-such-migration")
EOF
while read -r name fragment; do
    dump "$name" "${fragment:-}"
done <"$tmp/pages"

python3 - "$base" "$tmp" "$fixture" <<'EOF'
"""Checks the dumped DOMs against the API of the same server."""
import json, os, re, sys, urllib.request
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "hostd"))
import dom
from dom import Node

base, tmp, fixture = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
failures = []


def fail(msg):
    failures.append(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def get(path):
    with urllib.request.urlopen(base + path) as r:
        return r.status, dict(r.headers), r.read()


def load(name):
    return dom.load(tmp, name)


def console_errors(name):
    return dom.console_errors(tmp, name)


def near(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(
        1.0, abs(b))


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def steps_of(m):
    return [s for s in m.get("steps") or []
            if isinstance(s.get("start_offset"), (int, float))
            and isinstance(s.get("duration"), (int, float))]


# --- the server's side: headers and the data ------------------------------
status, headers, page = get("/")
h = {k.lower(): v for k, v in headers.items()}
check(status == 200, "GET / answered %d" % status)
check(h.get("content-type") == "text/html; charset=utf-8",
      "GET /: content type %r" % h.get("content-type"))
csp = h.get("content-security-policy", "")
for directive in ("default-src 'none'", "script-src 'unsafe-inline'",
                  "connect-src 'self'",
                  "require-trusted-types-for 'script'"):
    check(directive in csp, "GET /: CSP %r lacks %r" % (csp, directive))
check(h.get("x-content-type-options") == "nosniff", "GET /: no nosniff")
check(get("/dashboard")[2] == page, "GET /dashboard differs from GET /")
# (The SVG namespace is a name, not something loaded.)
check(not re.search(rb"<(link|img|iframe)\b|\bsrc=|https?://(?!www\.w3\.org/"
                    rb"2000/svg')", page),
      "the page refers to something outside itself")

migrations = json.loads(get("/api/migrations?limit=50")[2])["migrations"]
details = {m["id"]: json.loads(get("/api/migrations/" + m["id"])[2])
           for m in migrations}
running = [m["id"] for m in migrations if details[m["id"]]["result"] ==
           "running"]


def check_common(name, raw, root):
    """What holds on every page: no data turned into elements, no errors."""
    scripts = root.find_all(lambda n: n.tag == "script")
    check(len(scripts) == 1, "%s: %d script elements, not the page's one" %
          (name, len(scripts)))
    for tag in ("img", "iframe", "object", "embed", "link", "a", "form"):
        check(not root.find_all(lambda n, t=tag: n.tag == t),
              "%s: a <%s> element came from the data" % (name, tag))
    for line in console_errors(name):
        fail("%s: console: %s" % (name, line))


# --- the default view -----------------------------------------------------
raw, root = load("index")
check_common("index", raw, root)
heading = root.by_id("heading")
check(heading is not None and heading.text().startswith("crane — migrations"),
      "index: heading %r" % (heading.text() if heading else None))
rows = root.find_all(lambda n: n.tag == "tr" and "data-migration-id" in
                     n.attrs)
check([r.attrs["data-migration-id"] for r in rows] ==
      [m["id"] for m in migrations],
      "index: rows %r, the API has %r" %
      ([r.attrs["data-migration-id"] for r in rows],
       [m["id"] for m in migrations]))
for r in rows:
    m = details.get(r.attrs["data-migration-id"])
    if m is None:
        continue
    cells = {c: r.find_all(lambda n, c=c: n.tag == "td" and c in n.classes())
             for c in ("domain", "result", "bytes", "worst-pre", "worst-post",
                       "downtime")}
    check(r.attrs.get("data-result") == m["result"],
          "row %s: result %r, the API says %r" %
          (m["id"], r.attrs.get("data-result"), m["result"]))
    check(cells["domain"] and cells["domain"][0].text() == m["domain"] and
          not [c for c in cells["domain"][0].children if isinstance(c, Node)],
          "row %s: domain not shown as its text %r" % (m["id"], m["domain"]))
    check(cells["result"] and m["result"] in cells["result"][0].text(),
          "row %s: no result text" % m["id"])
    if m["error"]:
        err = r.find_all(lambda n: "error-text" in n.classes())
        check(err and err[0].text() == m["error"] and
              not [c for c in err[0].children if isinstance(c, Node)],
              "row %s: error not shown as its text %r" % (m["id"],
                                                          m["error"]))
    check(cells["bytes"] and
          cells["bytes"][0].attrs.get("data-bytes") == str(m["bytes_moved"]),
          "row %s: bytes moved" % m["id"])
    for phase in ("pre", "post"):
        worst = [s["duration"] for s in steps_of(m)
                 if s["pid"] is not None and s["phase"] == phase]
        cell = cells["worst-" + phase]
        got = num(cell[0].attrs.get("data-seconds")) if cell else None
        check((not worst and got is None) or near(got, max(worst or [0])),
              "row %s: worst %s %r, expected %r" %
              (m["id"], phase, got, max(worst) if worst else None))
    down = [s["duration"] for s in steps_of(m)
            if s["pid"] is None and s["phase"] == "downtime"]
    cell = cells["downtime"]
    got = num(cell[0].attrs.get("data-seconds")) if cell else None
    check(cell and ((not down and got is None) or near(got, down[-1])),
          "row %s: downtime %r, expected %r" %
          (m["id"], got, down[-1] if down else None))
live = root.by_id("live")
check(live is not None and live.attrs.get("data-running") ==
      str(len(running)), "index: live panel counts %r running, not %d" %
      (live.attrs.get("data-running") if live else None, len(running)))
if live is not None:
    shown = [n.attrs["data-migration-id"] for n in live.find_all(
        lambda n: "run" in n.classes())]
    check(shown == running, "index: live panel shows %r, running: %r" %
          (shown, running))
    for n in live.find_all(lambda n: "run" in n.classes()):
        m = details[n.attrs["data-migration-id"]]
        check(n.attrs.get("data-bytes") == str(m["bytes_moved"]),
              "live %s: bytes %r" % (m["id"], n.attrs.get("data-bytes")))
        check(bool(n.attrs.get("data-step")) and
              num(n.attrs.get("data-elapsed")) is not None,
              "live %s: no step or elapsed time" % m["id"])
detail = root.by_id("detail")
check(detail is not None and detail.attrs.get("data-migration-id") ==
      (migrations[0]["id"] if migrations else ""),
      "index: the newest migration is not the one shown")
if not migrations:
    check("No migrations recorded yet." in root.by_id("history").text(),
          "index: an empty history does not say so")


# --- each migration's timeline ----------------------------------------------
def check_timeline(name, m):
    raw, root = load(name)
    check_common(name, raw, root)
    detail = root.by_id("detail")
    if not check(detail is not None and
                 detail.attrs.get("data-migration-id") == m["id"],
                 "%s: does not show %s" % (name, m["id"])):
        return
    sel = root.find_all(lambda n: n.tag == "tr" and
                        "selected" in n.classes())
    check([n.attrs.get("data-migration-id") for n in sel] == [m["id"]],
          "%s: row %s not the one selected" % (name, m["id"]))
    tl = root.by_id("timeline")
    bars = tl.find_all(lambda n: "bar" in n.classes()) if tl else []
    got = [(b.attrs.get("data-phase"), int(b.attrs.get("data-pid", "-1")),
            num(b.attrs.get("data-start")), num(b.attrs.get("data-seconds")))
           for b in bars]
    for b in bars:
        check(b.attrs.get("title", "").strip() != "",
              "%s: a bar without a tooltip" % name)
    want = [(s["phase"], s["pid"] or 0, s["start_offset"], s["duration"])
            for s in steps_of(m)]
    left = list(got)
    for w in want:
        hit = [g for g in left if g[0] == w[0] and g[1] == w[1] and
               near(g[2], w[2]) and near(g[3], w[3])]
        if check(hit, "%s: no bar for step %r (bars: %r)" % (name, w, got)):
            left.remove(hit[0])
    check(not left, "%s: bars for no step: %r" % (name, left))
    pids = {s["pid"] for s in steps_of(m) if s["pid"]}
    lanes = {int(n.attrs["data-pid"]) for n in tl.find_all(
        lambda n: "lane" in n.classes() and "data-pid" in n.attrs)} \
        if tl else set()
    check(lanes == pids | {0}, "%s: lanes %r for pids %r" % (name, lanes,
                                                             pids))
    table = root.by_id("steps")
    trs = table.find_all(lambda n: n.tag == "tr" and "data-phase" in
                         n.attrs) if table else []
    check([t.attrs["data-phase"] for t in trs] ==
          [s["phase"] for s in m["steps"]],
          "%s: the steps table lists %r" %
          (name, [t.attrs["data-phase"] for t in trs]))
    for t, s in zip(trs, m["steps"]):
        if s["pid"]:
            check(str(s["pid"]) in t.text() and s["program"] in t.text(),
                  "%s: steps table misses program %r" % (name, s["program"]))
    if m["result"] == "running":
        check(tl is not None and tl.find_all(
            lambda n: "pending" in n.classes() and n.attrs.get("data-step")),
            "%s: no step under way on the timeline" % name)
    if m["error"]:
        err = [n for n in root.by_id("summary").find_all(
            lambda n: "error-text" in n.classes())]
        check(err and err[0].text() == m["error"],
              "%s: error not shown as its text" % name)
    return root


timelines = {}
for line in open(os.path.join(tmp, "pages")):
    name, _, frag = line.strip().partition(" ")
    if name.startswith("id-"):
        mid = frag[len("#id="):]
        timelines[mid] = check_timeline(name, details[mid])

raw, root = load("unknown")
check_common("unknown", raw, root)
summary = root.by_id("summary")
check(summary is not None and "No migration no-such-migration" in
      summary.text(), "an unknown #id= does not say so")


# --- exact expectations of the fixture --------------------------------------
if fixture:
    raw, root = load("index")
    check(root.by_id("heading").text() == "crane — migrations on gpu-host-a",
          "fixture: heading %r" % root.by_id("heading").text())
    check([m["id"] for m in migrations] ==
          ["m-running", "m-failed", "m-rolled-back", "m-ok"],
          "fixture: migrations %r" % [m["id"] for m in migrations])
    check(running == ["m-running"], "fixture: running %r" % running)
    # The error's markup is text: escaped in the serialized DOM.
    check('attach failed: &lt;script&gt;alert("pwned")&lt;/script&gt; '
          "&amp; 'quotes'" in raw, "fixture: the error is not escaped text")
    check("<script>alert" not in raw, "fixture: the error became markup")
    run = root.by_id("live").find_all(lambda n: "run" in n.classes())
    check(run and run[0].attrs.get("data-step") == "migrate" and
          run[0].attrs.get("data-bytes") == "1288490188",
          "fixture: live panel %r" % (run[0].attrs if run else None))
    ok = timelines.get("m-ok")
    if check(ok is not None, "fixture: m-ok was not loaded"):
        def seconds(phase, pid):
            return [num(b.attrs["data-seconds"]) for b in ok.find_all(
                lambda n: "bar" in n.classes() and
                n.attrs.get("data-phase") == phase and
                n.attrs.get("data-pid") == str(pid))]
        for phase, pid, want in (("pre", 4242, 0.0123), ("pre", 4343, 0.0311),
                                 ("post", 4242, 0.045),
                                 ("post", 4343, 0.0622),
                                 ("migrate", 0, 6.2)):
            check(seconds(phase, pid) == [want], "fixture: m-ok %s of %d: %r"
                  % (phase, pid, seconds(phase, pid)))
        lane = [n for n in ok.find_all(lambda n: "lane-name" in n.classes())
                if "4343" in n.text()]
        check(lane and "resnet <img src=x onerror=alert(1)>" in lane[0].text(),
              "fixture: program name not shown as text")
    rb = timelines.get("m-rolled-back")
    if check(rb is not None, "fixture: m-rolled-back was not loaded"):
        check(rb.find_all(lambda n: "bar" in n.classes() and
                          n.attrs.get("data-phase") == "rollback"),
              "fixture: no rollback bar")

for f in failures:
    print("FAIL: " + f)
print("dashboard.sh: %d migrations, %d pages checked, %d failures" %
      (len(migrations), len(timelines) + 2, len(failures)))
sys.exit(1 if failures else 0)
EOF

[ "$fixture" = 1 ] || exit 0

python3 - "$chrome" "$serve" "$tmp" <<'EOF'
"""The live run: one page open while the running migration moves on."""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "hostd"))
from dom import Browser

chrome, serve, tmp = sys.argv[1:4]
failures = []


# What the page shows, as one object.
STATE = """(() => {
    if (document.getElementById('live') === null)
        return null;   /* not loaded yet */
    const run = document.querySelector('#live .run');
    const row = document.querySelector('tr[data-migration-id="m-running"]');
    return {
        marker: window.liveTestMarker === 1,
        running: document.getElementById('live').dataset.running,
        step: run ? run.dataset.step : null,
        bytes: run ? run.dataset.bytes : null,
        bars: [...document.querySelectorAll('#timeline .bar')].map(
            (b) => b.dataset.phase + '/' + b.dataset.pid),
        pending: document.querySelector('#timeline .pending') !== null,
        shown: document.getElementById('detail').dataset.migrationId,
        result: row ? row.dataset.result : null,
        status: document.getElementById('status').textContent,
    };
})()"""


def wait_for(b, what, pred, timeout):
    """Polls the page until PRED(state) holds; returns the seconds taken."""
    start = time.monotonic()
    while True:
        st = b.eval(STATE)
        if st and pred(st):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            failures.append("live: %s: not within %d s; the page shows %s" %
                            (what, timeout, json.dumps(st)))
            return None
        time.sleep(0.05)


def advance(db):
    rc = subprocess.run([serve, "--advance", db]).returncode
    if rc != 0:
        failures.append("live: hostd-serve --advance exited %d" % rc)


db = os.path.join(tmp, "live.db")
subprocess.run([serve, "--fixture", db], check=True)
log = open(os.path.join(tmp, "live.log"), "w")
srv = subprocess.Popen([serve, db, "0"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=log)
port = int(srv.stdout.readline().split()[1])
b = Browser(chrome, os.path.join(tmp, "live-profile"), log)
try:
    b.open("http://127.0.0.1:%d/" % port)
    wait_for(b, "the running migration, as written", lambda s:
             s["running"] == "1" and s["shown"] == "m-running" and
             s["step"] == "migrate" and s["bytes"] == "1288490188" and
             s["pending"] and len(s["bars"]) == 5, 20)
    b.eval("window.liveTestMarker = 1")
    stages = [
        ("the memory copy ends", lambda s: "migrate/0" in s["bars"] and
         s["bytes"] == "8600000000"),
        ("the GPU is attached", lambda s: "attach/0" in s["bars"]),
        ("the programs resume", lambda s: "post/4242" in s["bars"] and
         "post/4343" in s["bars"]),
        ("the migration finishes", lambda s: "resume/0" in s["bars"] and
         s["running"] == "0" and s["result"] == "ok" and
         not s["pending"] and "every 5 s" in s["status"]),
    ]
    for what, pred in stages:
        advance(db)
        took = wait_for(b, what, pred, 10)
        # Polled every second while running: a step shows within about 1 s.
        if took is not None and took > 3:
            failures.append("live: %s took %.1f s to show" % (what, took))
        if took is not None:
            print("live: %s: shown after %.2f s" % (what, took))
    st = b.eval(STATE)
    if not st["marker"]:
        failures.append("live: the page reloaded instead of growing")
    if len(st["bars"]) != 10:
        failures.append("live: %d bars at the end, not 10" % len(st["bars"]))
    for e in b.errors:
        failures.append("live: console: " + e)
finally:
    b.close()
    srv.stdin.close()
    srv.wait()
for f in failures:
    print("FAIL: " + f)
print("dashboard.sh: live run, %d failures" % len(failures))
sys.exit(1 if failures else 0)
EOF
