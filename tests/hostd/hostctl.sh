#!/bin/bash
# crane-hostctl against a real crane-hostd on libvirt's test driver: the
# pool in its three formats (a domain holds one of two pool GPUs), the
# steps refused before anything changes (shared memory where no proxy
# domain runs included), bad usage, no daemon.
#
#   hostctl.sh     exit 0 pass, 1 fail, 77 skip
#
# The steps that change a VM (prepare, resume, abort around a real
# migration) need QEMU: tests/e2e/live.sh, phase `orchestrated`.
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
HOSTD=${HOSTD:-$B/bin/crane-hostd}
CTL=${HOSTCTL:-$B/bin/crane-hostctl}
for f in "$HOSTD" "$CTL"; do
    [ -x "$f" ] || { echo "skip: $f not built"; exit 77; }
done
command -v python3 > /dev/null || { echo "skip: python3 missing"; exit 77; }

T=$(mktemp -d /tmp/crane-hostctl-test.XXXXXX)
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
die() {
    echo "FAIL: $*"
    for f in out err hostd.log; do
        [ -s "$T/$f" ] && { echo "--- $f"; tail -n 20 "$T/$f"; }
    done
    exit 1
}
# ctl WANT ARGS...: crane-hostctl on the daemon's socket, exit status WANT.
ctl() {
    _want=$1
    shift
    "$CTL" --connect "unix:$T/c.sock" "$@" > "$T/out" 2> "$T/err"
    _rc=$?
    [ "$_rc" = "$_want" ] || die "crane-hostctl $*: exit $_rc, expected $_want"
}

# The test driver's node: "holder" runs with gpu0 (an rng aliased
# ua-gpu0, as the e2e tests' stand-in GPU), "nochan" runs without the
# guest channel.
rng() {
    echo "<rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-$1'/></rng>"
}
cat > "$T/node.xml" <<XML
<node>
  <domain type='test'>
    <name>holder</name><memory>65536</memory><os><type>hvm</type></os>
    <devices>$(rng gpu0)</devices>
  </domain>
  <domain type='test'>
    <name>nochan</name><memory>65536</memory><os><type>hvm</type></os>
  </domain>
</node>
XML
rng gpu0 > "$T/gpu0.xml"
rng gpu1 > "$T/gpu1.xml"

# --- usage and no daemon (nothing listens yet) -------------------------------
"$CTL" --help > "$T/out" 2>&1 || die "--help exit $?"
grep -q '^Exit status' "$T/out" || die "--help says no exit statuses"
"$CTL" --version > "$T/out" 2>&1 || die "--version exit $?"
grep -q '^crane-hostctl ' "$T/out" || die "--version"
for args in "" "frob vm" "prepare" "prepare a b" "pool vm" \
    "pool --format yaml" "prepare vm --format json" "abort vm --live" \
    "prepare vm --live --offline" "resume vm --proxy tcp:h:1" \
    "prepare vm --proxy nonsense" "prepare vm --id bad/id" \
    "resume vm --to h" "prepare vm --from h" "pool --id x" \
    "pool --wait -1" "pool --connect nonsense" "prepare vm --bogus" \
    "shm" "shm a b" "prepare vm --release" "shm vm --live" \
    "abort vm --lease 5" "pool --lease 5" "prepare vm --lease -1" \
    "prepare vm --lease x" "prepare vm --lease 604801" "prepare vm --lease" \
    "list vm" "history vm" "jobinfo" "jobinfo a b" "history --limit 0" \
    "history --limit 1001" "list --limit 5" "prepare vm --json" \
    "jobinfo vm --domain x" "list --format json" "pool --json --format placement" \
    "history --id x" "resume vm --gpus 0" "resume vm --gpus 17" \
    "resume vm --gpus x" "abort vm --gpus 2" "prepare vm --gpu-model A" \
    "resume vm --gpus 1 --gpu-model A --gpu-model B" "resume vm --gpu-model" \
    "resume vm --gpu-model a-model-name-of-sixty-four-characters-is-one-too-many-0123456789"; do
    ctl 2 $args
    [ "$(wc -l < "$T/err")" = 1 ] || die "'$args': not one line on stderr"
    grep -q '^crane-hostctl: .*(see --help)$' "$T/err" || die "'$args': $(cat "$T/err")"
done
ctl 3 pool
grep -q 'cannot connect to crane-hostd' "$T/err" || die "no daemon: $(cat "$T/err")"
# A lease in range (0: none) passes the checks: no daemon then.
for l in 0 1 604800; do
    ctl 3 prepare vm --lease $l
done
# So do a resume's GPUs: a count, models up to it, models alone.
ctl 3 resume vm --gpus 16
ctl 3 resume vm --gpus 2 --gpu-model A100
ctl 3 resume vm --gpu-model A100 --gpu-model H100

# --- a daemon on the test driver ---------------------------------------------
"$HOSTD" --uri "test://$T/node.xml" --control "unix:$T/c.sock" \
    --peer-listen none --http none --history "$T/h.db" --host-name host-a \
    --peer-key none --gpu "gpu0 xml:$T/gpu0.xml" --gpu "gpu1 xml:$T/gpu1.xml" \
    > "$T/hostd.log" 2>&1 &
PID=$!
wait_until -q 10 -p "$PID" -e "$PID" -n "crane-hostd listens" \
    -- test -S "$T/c.sock"
[ $? = 2 ] && die "crane-hostd exited"
[ -S "$T/c.sock" ] || die "crane-hostd does not listen"

ctl 0 pool
grep -q '^ gpu0 .* held .* holder$' "$T/out" || die "pool table: $(cat "$T/out")"
grep -q '^ gpu1 .* free' "$T/out" || die "pool table: $(cat "$T/out")"
grep -q '^host host-a: 2 GPU(s), 1 free, 1 held, 0 reserved$' "$T/out" ||
    die "pool table's summary: $(cat "$T/out")"
ctl 0 pool --json
python3 - "$T/out" <<'PY' || die "pool (json): $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["host"] == "host-a" and p["error"] is None, p
assert (p["total"], p["free"], p["held"], p["reserved"]) == (2, 1, 1, 0), p
g = {x["name"]: x for x in p["gpus"]}
assert g["gpu0"]["state"] == "held" and g["gpu0"]["holder"] == "holder", g
assert g["gpu1"]["state"] == "free" and g["gpu1"]["holder"] is None, g
assert g["gpu0"]["alias"] == "ua-gpu0" and g["gpu0"]["pci"] is None, g
assert p["waiting"] == [] and p["prepared"] == [], p
PY
ctl 0 pool --format placement
python3 - "$T/out" <<'PY' || die "pool (placement): $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["root_provider_name"] == "host-a", p
rc = p["resource_class"]
prov = {x["name"]: x for x in p["providers"]}
assert set(prov) == {"host-a_crane_gpu0", "host-a_crane_gpu1"}, prov
for name, used in (("host-a_crane_gpu0", 1), ("host-a_crane_gpu1", 0)):
    x = prov[name]
    assert x["parent_provider_name"] == "host-a", x
    inv = x["inventories"][rc]
    assert (inv["total"], inv["reserved"], inv["max_unit"]) == (1, 0, 1), x
    assert x["usages"][rc] == used, x
    assert p["trait"] in x["traits"], x
PY
ctl 0 pool --format kubernetes
python3 - "$T/out" <<'PY' || die "pool (kubernetes): $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
l = p["metadata"]["labels"]
assert l["crane.io/gpus-total"] == "2" and l["crane.io/gpus-free"] == "1", l
assert p["status"]["allocatable"]["crane.io/gpu"] == "2", p
PY

# Steps refused before anything changes.
ctl 1 prepare nochan
grep -q '^result: rolled-back: nochan has no guest channel' "$T/out" || die "prepare nochan: $(cat "$T/out")"
grep -qE '^migration: m[0-9]' "$T/out" || die "prepare names no migration"
[ "$(wc -l < "$T/err")" = 1 ] &&
    grep -q '^crane-hostctl: prepare nochan refused or undone: it runs on here as before: ' "$T/err" ||
    die "prepare nochan: stderr $(cat "$T/err")"
ctl 1 prepare absent --live
grep -q '^result: rolled-back: no domain absent here' "$T/out" || die "prepare absent: $(cat "$T/out")"
ctl 1 prepare nochan --lease 1
grep -q '^result: rolled-back: nochan has no guest channel' "$T/out" || die "prepare nochan --lease: $(cat "$T/out")"
# A domain the hypervisor does not know: virsh's words, exit 1, nothing
# on stdout.
for step in resume abort jobinfo; do
    ctl 1 $step absent
    [ -s "$T/out" ] && die "$step absent: stdout $(cat "$T/out")"
    head -1 "$T/err" | grep -qx "error: failed to get domain 'absent'" ||
        die "$step absent: stderr $(cat "$T/err")"
done
ctl 5 resume holder
grep -q '^result: failed:' "$T/out" || die "resume holder: $(cat "$T/out")"
ctl 5 abort nochan
grep -q '^result: failed: the VM has no guest channel here' "$T/out" || die "abort nochan: $(cat "$T/out")"
# A refusal: its result line only, no empty summary.
[ "$(wc -l < "$T/out")" = 1 ] || die "abort nochan: a summary: $(cat "$T/out")"
grep -q 'refused: nothing changed' "$T/err" || die "abort nochan: $(cat "$T/err")"
ctl 0 abort holder
grep -q 'still holds its GPU: nothing to undo' "$T/out" || die "abort holder: $(cat "$T/out")"
[ -s "$T/err" ] && die "abort exit 0 with a line on stderr: $(cat "$T/err")"
# Shared memory: no proxy domain here (none configured), nothing to give;
# a release with nothing plugged is done at once.
ctl 1 shm holder
grep -q '^result: rolled-back: no shared memory to give' "$T/out" || die "shm holder: $(cat "$T/out")"
ctl 0 shm --release holder
# A cancel with no migration running: refused, exit 1, nothing changes.
ctl 1 cancel holder
grep -qx 'crane-hostctl: cannot cancel a migration of holder: no migration of holder runs here' "$T/err" ||
    die "cancel holder: stderr $(cat "$T/err")"
[ -s "$T/out" ] && die "a refused cancel printed: $(cat "$T/out")"
ctl 1 cancel --id m1 holder
grep -q 'runs here with id m1' "$T/err" || die "cancel --id: $(cat "$T/err")"
ctl 2 cancel
# The pool is as it was.
ctl 0 pool --format json
grep -q '"free":1,"held":1,"reserved":0' "$T/out" || die "pool changed: $(cat "$T/out")"

# --- virsh-like views ----------------------------------------------------------
ctl 0 list
grep -q '^ DOMAIN ' "$T/out" || die "list: no header: $(cat "$T/out")"
grep -qE '^ holder +running +gpu0 ' "$T/out" || die "list: $(cat "$T/out")"
grep -q '^pool: 2 GPU(s), 1 free$' "$T/out" || die "list: $(cat "$T/out")"
ctl 0 list --json
python3 - "$T/out" <<'PY' || die "list --json: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
d = {x["domain"]: x for x in p["domains"]}
assert d["holder"]["state"] == "running" and d["holder"]["gpu"] == "gpu0", d
assert (p["gpus"], p["free"]) == (2, 1), p
PY
# The three prepares above were refused and recorded (rolled back).
ctl 0 history
grep -q '^ ID  *DOMAIN  *RESULT ' "$T/out" || die "history: $(cat "$T/out")"
[ "$(grep -cE '^ m[^ ]+ +(nochan|absent) +rolled-back +(live|offline) ' "$T/out")" = 3 ] ||
    die "history rows: $(cat "$T/out")"
ctl 0 history --limit 1 --json
python3 - "$T/out" <<'PY' || die "history --json: $(cat "$T/out")"
import json, sys
p = json.load(open(sys.argv[1]))
assert len(p["migrations"]) == 1 and p["total"] >= 3, p
m = p["migrations"][0]
assert m["result"] == "rolled-back" and m["end"] is not None, m
assert m["domain"] in ("nochan", "absent"), m
PY
ctl 0 history --domain absent --json
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["total"] == 1 and p["migrations"][0]["domain"] == "absent", p' "$T/out" ||
    die "history --domain: $(cat "$T/out")"
ctl 0 jobinfo holder
grep -qE '^Job type: +None$' "$T/out" || die "jobinfo holder: $(cat "$T/out")"
ctl 0 jobinfo holder --json
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["domain"] == "holder" and p["migration"] is None and p["fields"]["Job type"] == "None", p' "$T/out" ||
    die "jobinfo --json: $(cat "$T/out")"
kill "$PID"
wait "$PID"
rc=$?
PID=
[ $rc = 0 ] || die "crane-hostd exit $rc on SIGTERM"
echo "PASS: crane-hostctl (pool as a table and in 3 formats, refused steps, unknown domains, list, history, jobinfo, usage)"
