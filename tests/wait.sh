# Waits that follow what they wait for (sourced by the sh and bash tests): a bound counts seconds without progress, plus a cap.
#
# A fixed "within 30 s" fails on a loaded machine although what it waits
# for is still working.  Here a wait fails only after QUIET seconds in
# which none of its progress sources moved, or after CAP seconds in all:
#
#   wait_until [OPTION]... -- COMMAND [ARG]...
#       runs COMMAND (a program or a shell function) until it exits 0.
#       -q QUIET  seconds without progress (default $CRANE_WAIT_QUIET, 30)
#       -c CAP    seconds in all (default QUIET x $CRANE_WAIT_CAP_FACTOR, 10)
#       -f PATH   progress: PATH (a file, or the files under a folder)
#                 changed size or time
#       -p PID    progress: PID ran (below)
#       -g PGID   progress: the processes of process group PGID ran
#       -t PID    progress: PID and every process below it ran
#       -m REGEX  progress: processes whose command line matches
#                 (pgrep -f) ran
#       -e PID    give up (status 2) as soon as PID has ended
#       -n NAME   what is waited for, in the lines below
#     Status 0 once COMMAND exits 0, 1 past a bound, 2 when -e's PID
#     ended.  Past a bound one line on stderr says which; while it waits
#     and something moves it says so every $CRANE_WAIT_SAY seconds (30),
#     appended to the file $CRANE_WAIT_LOG (tests/run-tests.sh sets it to
#     the case's log, which it watches for progress), else on stderr.
#     Processes count as moving when their threads ran or waited on a run
#     queue (schedstat) at least $CRANE_WAIT_CPU_PCT percent (5) of the
#     time since the last progress: an idle guest's QEMU or a hung program
#     does not count, a busy one starved (or niced) on a loaded machine
#     does.  Without any progress source QUIET is a plain timeout.
#
#   pid_ended PID
#       true once PID has ended (a zombie has), a condition for wait_until.
#
#   run_bounded [-q QUIET] [-c CAP] [-s SIG] [PROGRESS]... [-n NAME] -- CMD...
#       runs CMD in its own process group and ends it (SIGNAL, default
#       TERM; KILL 5 s later) once neither its processes (CMD and all below
#       it) nor the PROGRESS sources (-f, -p, -g, -t, -m above: a server
#       CMD talks to) moved for QUIET seconds (default
#       $CRANE_BOUND_QUIET, 120), or after CAP seconds (default QUIET x
#       10).  Status: CMD's, or 124 when it was ended for a bound (one line
#       on stderr).
#
#   stall_kill [-q QUIET] [-c CAP] [-s SIGNAL] [PROGRESS]... -- PID &
#       for a program started in the background as its own process group
#       (timeout(1) does that: `timeout -s KILL CAP CMD & pid=$!`): ends
#       that group (SIGNAL, default KILL) once neither PID and all below it
#       nor PROGRESS moved for QUIET seconds (default 60), or after CAP
#       seconds; returns as soon as PID has ended.  Run it with `&`.
#
# POSIX sh: names are prefixed _wu_ (no locals); time from /proc/uptime,
# run time from /proc/PID/task/TID/schedstat, parents from /proc/PID/stat.

# _wu_now: centiseconds since boot in _wu_t.
_wu_now() {
    read -r _wu_up _wu_rest < /proc/uptime
    _wu_t=${_wu_up%.*}${_wu_up#*.}
}

# _wu_stat PID: its state in _wu_state ("" when gone).
_wu_stat() {
    _wu_state=
    [ -r "/proc/$1/stat" ] || return 0
    read -r _wu_line < "/proc/$1/stat" 2>/dev/null || return 0
    # shellcheck disable=SC2086
    set -- ${_wu_line##*) }
    [ $# -ge 3 ] || return 0
    _wu_state=$1
}

# _wu_alive PID: true while PID runs (a zombie has ended).
_wu_alive() {
    _wu_stat "$1"
    [ -n "$_wu_state" ] && [ "$_wu_state" != Z ]
}

# _wu_runcs PIDS PGIDS TREES: centiseconds the threads of the processes
# PIDS, of the groups PGIDS and of TREES (a pid and all below it) ran or
# waited to run (/proc/PID/task/TID/schedstat: time on a CPU, time on a
# run queue).  A process starved on a loaded machine, or niced, waits to
# run: it moves; one blocked (a hang, an idle guest) does neither.
_wu_runcs() {
    grep -H '' /proc/[0-9]*/stat /proc/[0-9]*/task/*/schedstat 2>/dev/null |
    awk -v pids=" $1 " -v pgids=" $2 " -v roots=" $3 " '
        { i = index($0, ":"); f = substr($0, 1, i - 1); l = substr($0, i + 1)
          split(f, a, "/"); pid = a[3] }
        f ~ /\/stat$/ { sub(/^.*\) /, "", l); split(l, v, " ")
                        up[pid] = v[2]; grp[pid] = v[3]; next }
        { split(l, v, " "); run[pid] += (v[1] + v[2]) / 1e7 }
        END {
            for (p in run) {
                hit = index(pids, " " p " ") || index(pgids, " " grp[p] " ")
                for (q = p; !hit && q != "" && q > 1; q = up[q])
                    hit = index(roots, " " q " ")
                if (hit) s += run[p]
            }
            printf "%d\n", s
        }'
}

# _wu_probe: the run time of the watched processes in _wu_cpu_now and a
# token of the watched paths in _wu_paths_now.
_wu_probe() {
    _wu_cpu_now=0 _wu_all=$_wu_pids
    if [ -n "$_wu_pats" ]; then
        _wu_all="$_wu_all $(printf '%s\n' "$_wu_pats" | while IFS= read -r _wu_x; do
                [ -n "$_wu_x" ] && pgrep -f -- "$_wu_x"; done | sort -u | tr '\n' ' ')"
    fi
    case "$_wu_all$_wu_pgids$_wu_trees" in
    *[0-9]*) _wu_cpu_now=$(_wu_runcs "$_wu_all" "$_wu_pgids" "$_wu_trees") ;;
    esac
    _wu_paths_now=
    [ -z "$_wu_paths" ] ||
        _wu_paths_now=$(printf '%s\n' "$_wu_paths" | while IFS= read -r _wu_x; do
            [ -n "$_wu_x" ] && find "$_wu_x" -printf '%s %T@ %p\n' 2>/dev/null
        done | cksum)
}

# _wu_opts ARGS...: the options above into _wu_* (sets _wu_shift).
_wu_opts() {
    _wu_quiet=${CRANE_WAIT_QUIET:-30} _wu_cap= _wu_paths= _wu_pids=
    _wu_pgids= _wu_trees= _wu_pats= _wu_end= _wu_name=${1:-} _wu_sig=TERM _wu_shift=0
    shift
    while [ $# -gt 0 ]; do
        [ "$1" = -- ] && { _wu_shift=$((_wu_shift + 1)); break; }
        [ $# -ge 2 ] || { echo "wait.sh: $1 needs a value" >&2; return 2; }
        case $1 in
        -q) _wu_quiet=$2 ;;
        -c) _wu_cap=$2 ;;
        -f) _wu_paths="$_wu_paths$2
" ;;
        -p) _wu_pids="$_wu_pids $2" ;;
        -g) _wu_pgids="$_wu_pgids $2" ;;
        -t) _wu_trees="$_wu_trees $2" ;;
        -m) _wu_pats="$_wu_pats$2
" ;;
        -e) _wu_end=$2 ;;
        -n) _wu_name=$2 ;;
        -s) _wu_sig=$2 ;;
        *) echo "wait.sh: unknown option $1" >&2; return 2 ;;
        esac
        shift 2
        _wu_shift=$((_wu_shift + 2))
    done
    [ -n "$_wu_cap" ] ||
        _wu_cap=$(( _wu_quiet * ${CRANE_WAIT_CAP_FACTOR:-10} ))
}

# _wu_moved: true when a source moved since the last mark (and marks it).
_wu_moved() {
    _wu_probe
    _wu_dcpu=$((_wu_cpu_now - _wu_mark_cpu))
    if [ "$_wu_paths_now" != "$_wu_mark_paths" ] ||
        { [ "$_wu_dcpu" -gt 0 ] && [ $((_wu_dcpu * 100)) -ge \
            $(( (_wu_t - _wu_mark_t) * ${CRANE_WAIT_CPU_PCT:-5} )) ]; } ||
        [ "$_wu_dcpu" -lt 0 ]; then
        _wu_mark_t=$_wu_t _wu_mark_cpu=$_wu_cpu_now
        _wu_mark_paths=$_wu_paths_now
        return 0
    fi
    return 1
}

# _wu_say LINE...: a line about a wait still going on.
_wu_say() {
    if [ -n "${CRANE_WAIT_LOG:-}" ]; then
        echo "$*" >> "$CRANE_WAIT_LOG"
    else
        echo "$*" >&2
    fi
}

# _wu_loop COND...: the polling loop of wait_until, options already read.
_wu_loop() {
    _wu_now; _wu_t0=$_wu_t _wu_check=$_wu_t _wu_said=$_wu_t
    _wu_probe
    _wu_mark_t=$_wu_t _wu_mark_cpu=$_wu_cpu_now _wu_mark_paths=$_wu_paths_now
    _wu_nap=2
    while :; do
        "$@" && return 0
        if [ -n "$_wu_end" ] && ! _wu_alive "$_wu_end"; then
            "$@" && return 0
            echo "wait: ${_wu_name:-$*}: pid $_wu_end ended first" >&2
            return 2
        fi
        _wu_now
        if [ $((_wu_t - _wu_check)) -ge 100 ]; then
            _wu_check=$_wu_t
            _wu_moved || :
            if [ $((_wu_t - _wu_mark_t)) -ge $((_wu_quiet * 100)) ]; then
                echo "wait: ${_wu_name:-$*}: gave up, nothing moved for" \
                    "${_wu_quiet} s ($(( (_wu_t - _wu_t0) / 100 )) s in all)" >&2
                return 1
            fi
            if [ $((_wu_t - _wu_t0)) -ge $((_wu_cap * 100)) ]; then
                echo "wait: ${_wu_name:-$*}: gave up at the cap of" \
                    "${_wu_cap} s (still moving)" >&2
                return 1
            fi
            if [ $((_wu_t - _wu_said)) -ge $(( ${CRANE_WAIT_SAY:-30} * 100 )) ] &&
                [ "$_wu_mark_t" -gt "$_wu_said" ]; then
                _wu_said=$_wu_t
                _wu_say "wait: ${_wu_name:-$*}: waiting $(( (_wu_t - _wu_t0) / 100 )) s," \
                    "last progress $(( (_wu_t - _wu_mark_t) / 100 )) s ago"
            fi
        fi
        # 20 ms at first, then up to 200 ms between polls.
        if [ "$_wu_nap" -lt 10 ]; then sleep "0.0$_wu_nap"; else sleep "0.$_wu_nap"; fi
        [ "$_wu_nap" -ge 20 ] || _wu_nap=$((_wu_nap + 2))
    done
}

wait_until() {
    _wu_opts "" "$@" || return 2
    shift "$_wu_shift"
    [ $# -ge 1 ] || { echo "wait_until: no command" >&2; return 2; }
    _wu_loop "$@"
}

pid_ended() { ! _wu_alive "$1"; }

stall_kill() {
    _wu_opts "" -q 60 -s KILL "$@" || return 2
    shift $((_wu_shift - 4))
    [ $# -eq 1 ] || { echo "stall_kill: no PID" >&2; return 2; }
    _wu_trees="$_wu_trees $1" _wu_end= _wu_name=${_wu_name:-"pid $1"}
    _wu_loop pid_ended "$1" && return 0
    echo "stall_kill: $_wu_name: ended (SIG$_wu_sig)" >&2
    kill -s "$_wu_sig" -- "-$1" 2>/dev/null
}

run_bounded() {
    _wu_opts "" -q "${CRANE_BOUND_QUIET:-120}" "$@" || return 2
    shift $((_wu_shift - 2))
    [ $# -ge 1 ] || { echo "run_bounded: no command" >&2; return 2; }
    _wu_rb_sig=$_wu_sig _wu_rb_name=${_wu_name:-$1}
    # timeout(1) puts CMD in a process group of its own (timeout's pid).
    timeout -s "$_wu_sig" -k 5 "$((_wu_cap + 5))" "$@" <&0 &
    _wu_rb=$!
    _wu_trees="$_wu_trees $_wu_rb" _wu_end= _wu_name="$_wu_rb_name"
    if _wu_loop pid_ended "$_wu_rb"; then
        wait "$_wu_rb"
        return $?
    fi
    echo "run_bounded: $_wu_rb_name: ended (SIG$_wu_rb_sig)" >&2
    kill -s "$_wu_rb_sig" -- "-$_wu_rb" 2>/dev/null
    _wu_i=0
    while [ $_wu_i -lt 50 ] && _wu_alive "$_wu_rb"; do
        sleep 0.1; _wu_i=$((_wu_i + 1))
    done
    kill -s KILL -- "-$_wu_rb" 2>/dev/null
    wait "$_wu_rb"
    return 124
}
