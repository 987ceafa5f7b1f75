#!/bin/sh
# run.sh: native vs remoted (crane-proxy) bandwidth, latency, launch rate and switch stoppage.

set -u

usage() {
    cat <<'EOF'
usage: run.sh [--reps N] [--proxy-endpoint tcp:127.0.0.1:PORT|unix:PATH]
              [--transport tcp|tls|unix|shm] [--lanes N]
              [--external] [--proxy-log-level L] [--scale S]
              [--iters N] [--mb "16 256"]
              [--platform N] [--build DIR] [--keep] [-v] [tests...]

Starts its own crane-proxy (killed at exit), then runs every test natively
(no shim) and remoted (crane-run with CRANE_BACKEND=remote:ENDPOINT)
alternately, N times each in ABBA order, and prints the medians, the
remote/native ratio and the target next to each.  The switch test runs
build/bench/switch under crane-run with CRANE_REHOME_TO=alternate and reads
the stoppage of each switch from CRANE_REHOME_REPORT.

  --reps N             runs per side (default 3)
  --proxy-endpoint E   where the proxy listens (default tcp:127.0.0.1:PORT
                       with a free PORT)
  --transport T        how the remoted side reaches the proxy when no
                       --proxy-endpoint is given: tcp (default, loopback
                       with a free port, TLS off: --tls none), tls (the
                       same through TLS, psk with a fresh key: the cost of
                       TLS is tls against tcp), unix (a unix socket, bulk bytes
                       on the stream: CRANE_SHM_MB=0) or shm (a unix socket
                       and a shared-memory area for bulk bytes,
                       CRANE_SHM_MB, default 64)
  --lanes N            over tcp and tls: CRANE_REMOTE_LANES=N extra streams
                       carry big reads' and writes' bytes (default 4; 0:
                       the one stream); the remoted write and read runs
                       must show every lane used (-v prints the bytes
                       per lane)
  --external           a proxy already listens at --proxy-endpoint: use it,
                       start none
  --proxy-log-level L  the proxy's --log-level (default info)
  --isolation MODE     the proxy's --isolation: tenant (its default, a
                       worker process per tenant) or none; compare the two
                       for what tenant isolation costs
  --scale S            clbench --scale for write, read, launch, setarg
                       (default 0.25)
  --iters N            latency calls timed per test (default 20000)
  --mb "A B"           switch sizes in MiB (default "16 256")
  --precopy "S:H ..."  precopy runs: S MiB written once, H MiB rewritten by a
                       thread all the while (default "4096:16")
  --precopy-rounds N   CRANE_PRECOPY_ROUNDS for them (default 8)
  --platform N         platform index, both sides (default 0)
  --build DIR          where bin/ and bench/ are (default build)
  --keep               keep the logs folder (kept anyway when a run fails)
  -v                   print every RESULT and report line as it comes
tests: write read latency launch setarg switch precopy (default all)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
all_tests="write read latency launch setarg switch precopy"

reps=3
lanes=4
endpoint=
transport=tcp
external=0
proxy_level=info
isolation=tenant
scale=0.25
iters=20000
mbs="16 256"
precopies="4096:16"
precopy_rounds=8
platform=0
build=$root/build
keep=0
verbose=0
tests=

while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=${2:?--reps needs a number}; shift 2 ;;
    --proxy-endpoint) endpoint=${2:?--proxy-endpoint needs E}; shift 2 ;;
    --transport) transport=${2:?--transport needs tcp, unix or shm}; shift 2 ;;
    --lanes) lanes=${2:?--lanes needs a number}; shift 2 ;;
    --external) external=1; shift ;;
    --proxy-log-level) proxy_level=${2:?needs a level}; shift 2 ;;
    --isolation) isolation=${2:?--isolation needs tenant or none}; shift 2 ;;
    --scale) scale=${2:?--scale needs a number}; shift 2 ;;
    --iters) iters=${2:?--iters needs a number}; shift 2 ;;
    --mb) mbs=${2:?--mb needs sizes}; shift 2 ;;
    --precopy) precopies=${2:?--precopy needs S:H}; shift 2 ;;
    --precopy-rounds) precopy_rounds=${2:?needs a number}; shift 2 ;;
    --platform) platform=${2:?--platform needs a number}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --keep) keep=1; shift ;;
    -v) verbose=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) tests="$tests $1"; shift ;;
    esac
done
[ -n "$tests" ] || tests=$all_tests
for t in $tests; do
    case " $all_tests " in
    *" $t "*) ;;
    *) echo "run.sh: unknown test $t (known: $all_tests)" >&2; exit 2 ;;
    esac
done
case $reps in
''|*[!0-9]*|0) echo "run.sh: --reps must be a positive integer" >&2; exit 2 ;;
esac
case $lanes in
''|*[!0-9]*) echo "run.sh: --lanes must be 0 to 16" >&2; exit 2 ;;
esac
[ "$lanes" -le 16 ] || { echo "run.sh: --lanes must be 0 to 16" >&2; exit 2; }
# Lanes (docs/remoting.md, "Lanes") are for TCP; the proxy allows as many.
CRANE_REMOTE_LANES=$lanes
export CRANE_REMOTE_LANES
max_lanes=8
[ "$lanes" -gt 8 ] && max_lanes=$lanes
if [ $external = 1 ] && [ -z "$endpoint" ]; then
    echo "run.sh: --external needs --proxy-endpoint" >&2
    exit 2
fi

case $transport in
tcp|tls) ;;
unix|shm) [ -n "$endpoint" ] || endpoint=unix:@WORK@/proxy.sock ;;
*) echo "run.sh: --transport must be tcp, tls, unix or shm" >&2; exit 2 ;;
esac
# The shared area is the shim's to offer: unix: endpoints get one unless
# CRANE_SHM_MB=0.
if [ "$transport" = shm ]; then
    CRANE_SHM_MB=${CRANE_SHM_MB:-64}
else
    CRANE_SHM_MB=0
fi
export CRANE_SHM_MB

crane_run=$build/bin/crane-run
proxy=$build/bin/crane-proxy
clbench=$build/bench/clbench
latency=$build/bench/latency
switch=$build/bench/switch
for f in "$crane_run" "$clbench" "$latency" "$switch"; do
    [ -x "$f" ] || { echo "run.sh: $f missing: run make bench" >&2; exit 2; }
done
[ $external = 1 ] || [ -x "$proxy" ] ||
    { echo "run.sh: $proxy missing: run make" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/crane-remote-bench.XXXXXX") || exit 2
proxy_pid=
failed=0

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
    if [ -n "$proxy_pid" ]; then
        kill "$proxy_pid" 2>/dev/null
        wait "$proxy_pid" 2>/dev/null
    fi
    if [ "$failed" = 0 ] && [ "$keep" = 0 ]; then
        rm -rf "$work"
    else
        echo "logs kept in $work (proxy log: $work/proxy.log)" >&2
    fi
}
trap cleanup EXIT
endpoint=$(printf '%s' "$endpoint" | sed "s|@WORK@|$work|")
# TLS (proto/tls.c) or not, explicitly: tcp is in clear, tls is psk.
if [ "$transport" = tls ]; then
    head -c 32 /dev/urandom >"$work/tls.key"
    set -- --tls psk --auth-key "$work/tls.key"
    CRANE_TLS=psk CRANE_AUTH_KEY=$work/tls.key
    export CRANE_TLS CRANE_AUTH_KEY
else
    set -- --tls none
    CRANE_TLS=none
    export CRANE_TLS
fi
proxy_tls_args="$*"
trap 'exit 2' HUP INT TERM

# free_port: print a TCP port nobody listens on.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0));
print(s.getsockname()[1])' 2>/dev/null && return
    p=$(( ($$ % 20000) + 30000 ))
    while ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; do p=$((p + 1)); done
    echo "$p"
}

# listening: whether the proxy accepts connections at $endpoint yet.
listening() {
    case $endpoint in
    unix:*) [ -S "${endpoint#unix:}" ] ;;
    # ss may be missing (the GPU machine): the proxy says when it listens.
    tcp:*) grep -q 'listening on' "$work/proxy.log" 2>/dev/null ;;
    *) return 1 ;;
    esac
}

# start_proxy: start crane-proxy at $endpoint and wait until it listens.
start_proxy() {
    [ -n "$endpoint" ] || endpoint=tcp:127.0.0.1:$(free_port)
    case $endpoint in
    unix:*) [ -S "${endpoint#unix:}" ] && rm -f "${endpoint#unix:}" ;;
    esac
    # shellcheck disable=SC2086  # the TLS options, split on purpose
    "$proxy" --listen "$endpoint" --log-level "$proxy_level" \
        --isolation "$isolation" --max-lanes "$max_lanes" $proxy_tls_args \
        >"$work/proxy.log" 2>&1 &
    proxy_pid=$!
    i=0
    while ! listening; do
        if ! kill -0 "$proxy_pid" 2>/dev/null || [ $i -ge 200 ]; then
            echo "run.sh: crane-proxy did not come up at $endpoint:" >&2
            sed 's/^/    /' "$work/proxy.log" >&2
            failed=1
            exit 2
        fi
        sleep 0.05
        i=$((i + 1))
    done
}

# one_run SIDE TEST: run TEST once natively or remoted (SIDE native or
# remote) and append its "name value" results to $work/SIDE.res.
one_run() {
    side=$1
    test_name=$2
    case $test_name in
    write) set -- "$clbench" bus_h2d --scale "$scale" ;;
    read) set -- "$clbench" bus_d2h --scale "$scale" ;;
    launch) set -- "$clbench" launch --scale "$scale" ;;
    setarg) set -- "$clbench" setarg --scale "$scale" ;;
    latency) set -- "$latency" --iters "$iters" ;;
    esac
    set -- "$@" --platform "$platform"
    # A remoted run logs to its own file, at info at least, so that its
    # "remote: connected to" line proves it really ran on the proxy.
    shimlog=$work/shim-$test_name.log
    rm -f "$shimlog"
    if [ "$side" = remote ]; then
        out=$(CRANE_BACKEND=remote:$endpoint CRANE_LOG_FILE=$shimlog \
            CRANE_LOG_LEVEL=${CRANE_LOG_LEVEL:-info} "$crane_run" "$@" \
            2>"$work/stderr")
    else
        out=$("$@" 2>"$work/stderr")
    fi
    rc=$?
    if [ "$side" = remote ] && [ $rc = 0 ] &&
        ! grep -q 'remote: connected to' "$shimlog" 2>/dev/null; then
        echo "run.sh: $test_name (remote) did not connect to the proxy" \
            "(the shim ran it natively?)" >"$work/stderr"
        [ -f "$shimlog" ] && cat "$shimlog" >>"$work/stderr"
        rc=3
    fi
    # Likewise the shared-memory column must have used the area.
    if [ "$side" = remote ] && [ $rc = 0 ] && [ "$transport" = shm ] &&
        ! grep -q 'bulk bytes go through' "$shimlog" 2>/dev/null; then
        echo "run.sh: $test_name (remote) did not get a shared-memory" \
            "area from the proxy" >"$work/stderr"
        cat "$shimlog" >>"$work/stderr"
        rc=3
    fi
    # Over tcp and tls with lanes, writes and reads must have used every
    # lane (the shim's exit lines count each lane's bytes).
    if [ "$side" = remote ] && [ $rc = 0 ] && [ "$lanes" -ge 2 ] &&
        { [ "$transport" = tcp ] || [ "$transport" = tls ]; }; then
        case $test_name in
        write|read)
            used=$(grep -c 'remote: lane [0-9]* carried [1-9]' "$shimlog" \
                2>/dev/null)
            [ $verbose = 1 ] && grep -o 'remote: lane .*' "$shimlog" \
                2>/dev/null | sed "s/^/remote $test_name: /" >&2
            if [ "${used:-0}" -lt "$lanes" ]; then
                echo "run.sh: $test_name (remote) used ${used:-0} of" \
                    "$lanes lanes" >"$work/stderr"
                cat "$shimlog" >>"$work/stderr"
                rc=3
            fi
            ;;
        esac
    fi
    # Over shm, writes and reads of clbench's mapped buffer go in place in
    # the host-memory region (docs/remoting.md, "Host memory in the shared
    # area"), unless CRANE_SHM_HOST_MB=0: the shim's last line says how
    # many bytes went so.
    if [ "$side" = remote ] && [ $rc = 0 ] && [ "$transport" = shm ] &&
        [ "${CRANE_SHM_HOST_MB:-256}" != 0 ]; then
        case $test_name in
        write|read)
            bulk=$(grep -o 'bulk bytes: .*' "$shimlog" 2>/dev/null | tail -n 1)
            inplace=$(printf '%s\n' "$bulk" |
                sed -n 's/.*, \([0-9]*\) in place in host memory.*/\1/p')
            [ $verbose = 1 ] && echo "remote $test_name: $bulk" >&2
            if [ "${inplace:-0}" = 0 ]; then
                echo "run.sh: $test_name (remote) moved no bytes in place" \
                    "in host memory (${bulk:-no bulk line})" >"$work/stderr"
                cat "$shimlog" >>"$work/stderr"
                rc=3
            fi
            ;;
        esac
    fi
    [ $verbose = 1 ] && printf '%s\n' "$out" |
        sed -n "s/^\(RESULT\|DEVICE\) /$side &/p" >&2
    if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | grep -q '^RESULT '; then
        echo "run.sh: $test_name ($side) failed (exit $rc):" >&2
        [ "$side" = remote ] && [ -f "$shimlog" ] &&
            tail -n 20 "$shimlog" >>"$work/stderr"
        sed 's/^/    /' "$work/stderr" >&2
        cat "$work/stderr" >>"$work/failures.log"
        return 1
    fi
    # clbench names its results after the subcommand; latency per call.
    printf '%s\n' "$out" | awk -v t="$test_name" '$1 == "RESULT" {
        print ($2 ~ /^(finish|event|read4)$/ ? "sync_" $2 : t), $4 }' \
        >>"$work/$side.res"
}

# stats NAME FILE: "median min max" of the values recorded for NAME in
# FILE, or "nan nan nan".
stats() {
    awk -v n="$1" '$1 == n { print $2 }' "$2" | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (!NR) { print "nan nan nan"; exit }
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            print m, v[1], v[NR]
        }'
}

# row NAME UNIT KIND: one table row; KIND says how to compare: bw (higher
# is better, target >= 70% of native), lat (remote <= 30 us), rate (time
# per call, target >= 70% of native throughput).  The spreads are
# (max - min) / median of each side.
row() {
    { stats "$1" "$work/native.res"; stats "$1" "$work/remote.res"; } |
        awk -v n="$1" -v u="$2" -v k="$3" '
        NR == 1 { a = $1; alo = $2; ahi = $3 }
        NR == 2 { b = $1; blo = $2; bhi = $3 }
        END {
            f = "%-12s %-10s %10s %10s  %-15s %-17s %-7s %5s %5s\n"
            if (a == "nan" || b == "nan") {
                printf f, n, u, a == "nan" ? "-" : sprintf("%.3f", a),
                    b == "nan" ? "-" : sprintf("%.3f", b), "-", "-",
                    "FAILED", "-", "-"
                exit
            }
            if (k == "bw") {
                r = b / a * 100; rs = sprintf("%.1f%% thr", r)
                tg = ">= 70% of native"; ok = r >= 70
            } else if (k == "rate") {
                r = a / b * 100; rs = sprintf("%.1f%% thr", r)
                tg = ">= 70% of native"; ok = r >= 70
            } else {
                rs = sprintf("%.1fx time", b / a)
                tg = "remote <= 30 us"; ok = b <= 30
            }
            printf f, n, u, sprintf("%.3f", a), sprintf("%.3f", b), rs, tg,
                ok ? "ok" : "MISS", sprintf("%.0f", (ahi - alo) / a * 100),
                sprintf("%.0f", (bhi - blo) / b * 100)
        }'
}

# switch_run MB: one switch run; appends "pre bg post pre_extract
# pre_rebuild pre_reinject post_extract post_release post_rebuild
# post_reinject pre_extract_dev pre_extract_copy pre_reinject_ship
# pre_reinject_ringwait post_extract_ship post_reinject_dev
# post_reinject_copy transport pre_reinject_dev pre_reinject_copy
# pre_nocopy post_nocopy pre_nocopy_dev post_nocopy_dev pre_twins
# pre_prebuilt pre_prebuild" to $work/switch-MB.
switch_run() {
    rep=$work/report
    rm -f "$rep"
    out=$(CRANE_PROXY=$endpoint CRANE_REHOME_TO=alternate \
        CRANE_REHOME_REPORT=$rep "$crane_run" "$switch" --mb "$1" \
        2>"$work/stderr")
    rc=$?
    if [ $verbose = 1 ]; then
        printf '%s\n' "$out" | sed "s/^/switch $1: /" >&2
        [ -f "$rep" ] && sed "s/^/switch $1: /" "$rep" >&2
    fi
    if [ $rc -ne 0 ]; then
        echo "run.sh: switch --mb $1 failed (exit $rc):" >&2
        sed 's/^/    /' "$work/stderr" >&2
        [ -f "$rep" ] && sed 's/^/    report: /' "$rep" >&2
        cat "$work/stderr" >>"$work/failures.log"
        return 1
    fi
    # The first re-home is native->remote, the second remote->native; only
    # the first leaves work (vendor release, unload) to a background line.
    awk '
        function fields(a,   i, kv) {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
        }
        /^rehome / { n++; if (n == 1) fields(pre); else if (n == 2) fields(post) }
        /^background / && !bgn { bgn = 1; fields(bg) }
        END {
            if (n != 2 || pre["rc"] != 0 || post["rc"] != 0) exit 1
            if (pre["from"] != "native" || pre["to"] != "remote" ||
                post["from"] != "remote" || post["to"] != "native") exit 1
            printf "%s %s %s %s %s %s %s %s %s %s", pre["total"],
                bgn ? bg["release"] + bg["unload"] : "nan", post["total"],
                pre["extract"], pre["rebuild"], pre["reinject"],
                post["extract"], post["release"], post["rebuild"],
                post["reinject"]
            # Inside the phases (shim/rehome.c report); 0 from a shim
            # that does not report them.
            printf " %s %s %s %s %s %s %s %s %s %s", pre["extract_dev"] + 0,
                pre["extract_copy"] + 0, pre["reinject_ship"] + 0,
                pre["reinject_ringwait"] + 0, post["extract_ship"] + 0,
                post["reinject_dev"] + 0, post["reinject_copy"] + 0,
                pre["transport"] == "" ? "?" : pre["transport"],
                pre["reinject_dev"] + 0, pre["reinject_copy"] + 0
            # Moved with no CPU copy (shim/ringstream.c), and the device
            # time for it: out, back.
            printf " %s %s %s %s", pre["nocopy"] + 0, post["nocopy"] + 0,
                pre["nocopy_dev"] + 0, post["nocopy_dev"] + 0
            # Objects the rebuild out took from twins, those made ahead
            # before the stop, and the time that took (shim/prebuild.c).
            printf " %s %s %s\n", pre["twins"] + 0, pre["prebuilt"] + 0,
                pre["prebuild"] + 0
        }' "$rep" >>"$work/switch-$1" || {
        echo "run.sh: switch --mb $1: unexpected report:" >&2
        sed 's/^/    /' "$rep" >&2
        return 1
    }
}

# precopy_run S H: one switch of a program whose H MiB hot set a thread
# rewrites all the while, over S MiB written once, with pre-copy; appends
# "pre post pre_rounds post_rounds pre_stop_out pre_stop_back post_stop_out
# post_stop_back pre_precopy_s post_precopy_s" (bytes in MiB) to
# $work/precopy-S-H.
precopy_run() {
    rep=$work/report
    rm -f "$rep"
    out=$(CRANE_PROXY=$endpoint CRANE_REHOME_TO=alternate \
        CRANE_PRECOPY_ROUNDS=$precopy_rounds CRANE_REHOME_REPORT=$rep \
        "$crane_run" "$switch" --mb "$1" --hot "$2" 2>"$work/stderr")
    rc=$?
    if [ $verbose = 1 ]; then
        printf '%s\n' "$out" | sed "s/^/precopy $1:$2: /" >&2
        [ -f "$rep" ] && sed "s/^/precopy $1:$2: /" "$rep" >&2
    fi
    if [ $rc -ne 0 ]; then
        echo "run.sh: switch --mb $1 --hot $2 failed (exit $rc):" >&2
        sed 's/^/    /' "$work/stderr" >&2
        [ -f "$rep" ] && sed 's/^/    report: /' "$rep" >&2
        cat "$work/stderr" >>"$work/failures.log"
        return 1
    fi
    awk '
        function fields(a,   i, kv) {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
        }
        /^rehome / { n++; if (n == 1) fields(pre); else if (n == 2) fields(post) }
        END {
            if (n != 2 || pre["rc"] != 0 || post["rc"] != 0) exit 1
            m = 1048576
            printf "%s %s %d %d %.1f %.1f %.1f %.1f %s %s\n", pre["total"],
                post["total"], pre["precopy"], post["precopy"],
                pre["bytes_out"] / m, pre["bytes_back"] / m,
                post["bytes_out"] / m, post["bytes_back"] / m,
                pre["precopy_s"] + 0, post["precopy_s"] + 0
        }' "$rep" >>"$work/precopy-$1-$2" || {
        echo "run.sh: switch --mb $1 --hot $2: unexpected report:" >&2
        sed 's/^/    /' "$rep" >&2
        return 1
    }
}

# column FILE N: the median of column N of FILE.
column() {
    awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (!NR) { print "nan"; exit }
            print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        }'
}

[ $external = 1 ] || start_proxy
: >"$work/native.res"
: >"$work/remote.res"

# Native and remote alternate in ABBA order, so drift falls on both sides.
for t in $tests; do
    [ "$t" = switch ] || [ "$t" = precopy ] && continue
    r=0
    while [ $r -lt "$reps" ]; do
        order="native remote"
        [ $((r % 2)) = 1 ] && order="remote native"
        for side in $order; do
            one_run "$side" "$t" || failed=1
        done
        r=$((r + 1))
    done
done

# shellcheck disable=SC2086  # one test per line
if printf '%s\n' $tests | grep -qvxE 'switch|precopy'; then
    lanes_note=
    case $transport in tcp|tls) lanes_note=", lanes $lanes" ;; esac
    echo "native vs remoted over $endpoint (transport $transport$lanes_note), median of $reps runs each" \
        "(clbench --scale $scale, latency --iters $iters)"
    printf '%-12s %-10s %10s %10s  %-15s %-17s %-7s %5s %5s\n' test unit \
        native remote remote/native target verdict n_sp% r_sp%
    for t in $tests; do
        case $t in
        write) row write GB/s bw ;;
        read) row read GB/s bw ;;
        latency)
            row sync_finish us/call lat
            row sync_event us/call lat
            row sync_read4 us/call lat
            ;;
        launch) row launch us/launch rate ;;
        setarg) row setarg us/iter rate ;;
        esac
    done
fi

case " $tests " in
*" switch "*)
    echo
    echo "switch stoppage (s), median of $reps: pre = native->remote" \
        "(bg = vendor release+unload after resuming), post = remote->native"
    printf '%-7s %9s %9s %9s  %-22s %s\n' size pre bg post \
        "prototype pre/post" verdict
    for mb in $mbs; do
        : >"$work/switch-$mb"
        r=0
        while [ $r -lt "$reps" ]; do
            switch_run "$mb" || failed=1
            r=$((r + 1))
        done
        case $mb in
        16) proto="0.10/0.83" ;;
        256) proto="1.57/4.90" ;;
        *) proto="-" ;;
        esac
        if [ ! -s "$work/switch-$mb" ]; then
            printf '%-7s %9s %9s %9s  %-22s %s\n' "${mb}MB" - - - \
                "$proto" FAILED
            continue
        fi
        pre=$(column "$work/switch-$mb" 1)
        bg=$(column "$work/switch-$mb" 2)
        post=$(column "$work/switch-$mb" 3)
        awk -v m="${mb}MB" -v a="$pre" -v g="$bg" -v b="$post" \
            -v p="$proto" 'BEGIN {
            split(p, q, "/")
            v = p == "-" ? "-" : (a <= q[1] && b <= q[2] ? \
                "ok (<= prototype)" : "slower than prototype")
            printf "%-7s %9.3f %9.3f %9.3f  %-22s %s\n", m, a, g, b, p, v
        }'
    done
    echo
    echo "switch breakdown (s, medians): pre extract/rebuild/reinject," \
        "post extract/release/rebuild/reinject"
    for mb in $mbs; do
        [ -s "$work/switch-$mb" ] || continue
        printf '%-7s' "${mb}MB"
        for c in 4 5 6 7 8 9 10; do
            printf ' %8.3f' "$(column "$work/switch-$mb" $c)"
        done
        echo
    done
    echo
    echo "inside the phases (s, medians; GB/s = state / phase):" \
        "out = native->remote: extract = device waits + copies pinned->RAM" \
        "(+ queueing), reinject = device waits + handing chunks on (when" \
        "streamed) and within that the shim's copies into the proxy's" \
        "ring/socket + waits for ring room (+ the proxy's work);" \
        "back = remote->native: extract = the shim's copies out of the" \
        "ring/socket (+ the proxy's work), reinject = device waits +" \
        "copies RAM->pinned"
    printf '%-7s %-6s | %-26s | %-38s | %-17s | %-26s\n' size path \
        "out extract dev/copy GB/s" "out reinject dev/copy ship/wait GB/s" \
        "back extract ship GB/s" "back reinject dev/copy GB/s"
    for mb in $mbs; do
        f=$work/switch-$mb
        [ -s "$f" ] || continue
        awk -v m="${mb}MB" -v mb="$mb" -v t="$(awk '{ print $18 }' "$f" | tail -1)" \
            -v e1="$(column "$f" 4)" -v r1="$(column "$f" 6)" \
            -v e2="$(column "$f" 7)" -v r2="$(column "$f" 10)" \
            -v a="$(column "$f" 11)" -v b="$(column "$f" 12)" \
            -v c="$(column "$f" 13)" -v d="$(column "$f" 14)" \
            -v e="$(column "$f" 15)" -v g="$(column "$f" 16)" \
            -v h="$(column "$f" 17)" -v i="$(column "$f" 19)" \
            -v j="$(column "$f" 20)" 'BEGIN {
            B = mb * 1048576 / 1e9
            f = "%-7s %-6s | %5.3f/%5.3f %6.2f GB/s | %5.3f/%5.3f %5.3f/%5.3f"
            f = f " %6.2f GB/s | %5.3f %6.2f GB/s | %5.3f/%5.3f %6.2f GB/s\n"
            printf f, m, t,
                a, b, (e1 > 0.001 ? B / e1 : 0), i, j, c, d,
                (r1 > 0.001 ? B / r1 : 0),
                e, (e2 > 0.001 ? B / e2 : 0), g, h, (r2 > 0.001 ? B / r2 : 0)
        }'
    done
    echo
    echo "with no CPU copy (shim/ringstream.c, the report's nocopy=):" \
        "MiB moved device <-> shared area out/back, medians, and the" \
        "switch's wait for the vendor's device copies (s)"
    printf '%-7s | %-17s | %-17s\n' size "MiB out/back" "device s out/back"
    for mb in $mbs; do
        f=$work/switch-$mb
        [ -s "$f" ] || continue
        printf '%-7s | %8.1f/%-8.1f | %8.4f/%-8.4f\n' "${mb}MB" \
            "$(awk -v c="$(column "$f" 21)" 'BEGIN { print c / 1048576 }')" \
            "$(awk -v c="$(column "$f" 22)" 'BEGIN { print c / 1048576 }')" \
            "$(column "$f" 23)" "$(column "$f" 24)"
    done
    echo
    echo "made ahead (shim/prebuild.c): objects the rebuild out took from" \
        "twins / made ahead before the stop, medians, and the time that" \
        "took (s, not stoppage)"
    printf '%-7s | %-15s | %-10s\n' size "twins/prebuilt" "prebuild s"
    for mb in $mbs; do
        f=$work/switch-$mb
        [ -s "$f" ] || continue
        printf '%-7s | %6.0f/%-8.0f | %10.4f\n' "${mb}MB" \
            "$(column "$f" 25)" "$(column "$f" 26)" "$(column "$f" 27)"
    done
    ;;
esac

case " $tests " in
*" precopy "*)
    echo
    echo "pre-copy stoppage (s), median of $reps: a thread rewrites HOT MiB" \
        "all the while, SIZE MiB written once; CRANE_PRECOPY_ROUNDS=$precopy_rounds;" \
        "the stop's bytes out/back (MiB) and the rounds before it"
    printf '%-8s %-6s %9s %9s  %-13s %-19s %-19s %-15s %s\n' size hot pre \
        post "rounds pre/post" "pre stop out/back" "post stop out/back" \
        "precopy_s pre/post" "target (pre, post <= 0.003)"
    for pc in $precopies; do
        s_mb=${pc%%:*} h_mb=${pc##*:}
        f=$work/precopy-$s_mb-$h_mb
        : >"$f"
        r=0
        while [ $r -lt "$reps" ]; do
            precopy_run "$s_mb" "$h_mb" || failed=1
            r=$((r + 1))
        done
        if [ ! -s "$f" ]; then
            printf '%-8s %-6s %9s %9s  %s\n' "${s_mb}MB" "${h_mb}MB" - - FAILED
            continue
        fi
        awk -v m="${s_mb}MB" -v h="${h_mb}MB" -v a="$(column "$f" 1)" \
            -v b="$(column "$f" 2)" -v r1="$(column "$f" 3)" \
            -v r2="$(column "$f" 4)" -v o1="$(column "$f" 5)" \
            -v k1="$(column "$f" 6)" -v o2="$(column "$f" 7)" \
            -v k2="$(column "$f" 8)" -v s1="$(column "$f" 9)" \
            -v s2="$(column "$f" 10)" 'BEGIN {
            printf "%-8s %-6s %9.3f %9.3f  %-13s %-19s %-19s %-15s %s\n",
                m, h, a, b, r1 "/" r2, sprintf("%.1f/%.1f", o1, k1),
                sprintf("%.1f/%.1f", o2, k2), sprintf("%.2f/%.2f", s1, s2),
                (a <= 0.003 && b <= 0.003) ? "ok" : "MISS"
        }'
    done
    ;;
esac

if [ -n "$proxy_pid" ] && ! kill -0 "$proxy_pid" 2>/dev/null; then
    echo "run.sh: crane-proxy exited during the run:" >&2
    tail -n 20 "$work/proxy.log" | sed 's/^/    /' >&2
    failed=1
fi
exit $failed
