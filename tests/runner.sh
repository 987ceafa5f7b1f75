# The runner of tests/run-tests.sh (sourced): each case run with private
# state and a watch on its progress, its verdict counted and printed.

# case_watch PGID LOG PRIV: ends process group PGID (TERM, then KILL) when
# LOG and PRIV stand still for CASE_TIMEOUT s; says so in LOG and PRIV/stalled.
case_watch() {
    local pgid=$1 log=$2 priv=$3 sl=
    trap 'kill "$sl" 2>/dev/null; exit 0' TERM
    # The case's stderr is its log: wait_until's give-up line lands there.
    wait_until -q "${CASE_TIMEOUT:-300}" -c "${CASE_CAP:-3600}" \
        -f "$log" -f "$priv" -n "case progress" -- false 2>>"$log"
    echo "case: stopped, its log and folder stood still" \
        "for ${CASE_TIMEOUT:-300} s (or it ran ${CASE_CAP:-3600} s)" >>"$log"
    : >"$priv/stalled"
    kill -TERM -- "-$pgid" 2>/dev/null
    sleep 5 & sl=$!
    wait "$sl"
    kill -KILL -- "-$pgid" 2>/dev/null
}

# case_run LOG CMD...: CMD with the private state above, its output into
# LOG; its status, or 124 when case_watch ended it.
case_run() {
    local log=$1 priv pid wpid rc
    shift
    priv=$(mktemp -d /tmp/crane-case-XXXXXX) || return 1
    mkdir -p "$priv/home" "$priv/tmp" "$priv/cache" "$priv/config" \
        "$priv/data"
    # bash -c, so that cases may be the shell functions exported below;
    # timeout(1) gives the case a process group of its own (its pid).
    # Appended to (O_APPEND), as the waits' lines are.
    : >"$log"
    HOME=$priv/home TMPDIR=$priv/tmp XDG_CACHE_HOME=$priv/cache \
        XDG_CONFIG_HOME=$priv/config XDG_DATA_HOME=$priv/data \
        CRANE_WAIT_LOG=$PWD/$log \
        timeout -k 10 "$(( ${CASE_CAP:-3600} + 60 ))" \
        bash -c '"$@"' case "$@" >>"$log" 2>&1 <&0 &
    pid=$!
    CRANE_WAIT_SAY=100000 case_watch "$pid" "$log" "$priv" &
    wpid=$!
    wait "$pid"
    rc=$?
    # KILL: a TERM would wait for the watcher's current poll to end.
    kill -KILL "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    [ -e "$priv/stalled" ] && rc=124
    rm -rf "$priv"
    return $rc
}

# case_ NAME CMD...: runs CMD (case_run) and records ok / not ok / skip.
# Exit 77 is a skip, printed with its reason (the log's last line that
# says skip, else its last line); a CMD
# given as a path that is not there fails: a missing binary is no skip.
case_() {
    local name=$1
    shift
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then
        unrun=$((unrun + 1)); return
    fi
    local log="$LOGDIR/${name//\//_}.log"
    if [[ "$1" == */* && ! -x "$1" ]]; then
        fail=$((fail + 1)); echo "not ok - $name (missing binary $1)"
        return
    fi
    case_run "$log" "$@"
    local rc=$?
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "ok - $name"
    elif [ $rc -eq 77 ]; then
        local why
        # The line that says why (a harness's summary line says nothing).
        why=$(grep -i 'skip' "$log" | grep -v 'skipped$' | tail -1)
        [ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$log" | tail -1)
        skip=$((skip + 1)); echo "ok - $name # SKIP ${why:-no reason given}"
    else
        fail=$((fail + 1)); echo "not ok - $name (exit $rc, log $log)"
        tail -5 "$log" | sed 's/^/#   /'
    fi
}

# skip_ NAME REASON: a case that cannot run here, said as a skip.
skip_() {
    [ -n "$ONLY" ] && ! [[ "$1" =~ $ONLY ]] && { unrun=$((unrun + 1)); return; }
    skip=$((skip + 1)); echo "ok - $1 # SKIP $2"
}

# fuzz_case NAME FUZZER ARGS...: libFuzzer exits 77 (or any non-zero) on a
# finding, so here every non-zero status fails; the artifact is named in
# the log.
fuzz_case() {
    local name=$1
    shift
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then
        unrun=$((unrun + 1)); return
    fi
    if [ ! -x "$1" ]; then
        fail=$((fail + 1)); echo "not ok - $name (missing fuzzer $1)"
        return
    fi
    case_ "$name" bash -c '"$@"; rc=$?; [ $rc -eq 77 ] && exit 1; exit $rc' \
        fuzz "$@"
}
