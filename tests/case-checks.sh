# What the cases of tests/run-tests.sh run (sourced; exported, so that a
# case, run by bash -c, can call them): re-homes counted, outputs compared.

# Re-homes that happened, and that every attempt either worked or was
# refused for a documented reason (-EBUSY: a map or a pending user event).
rehomed() {
    local report=$1 min=$2
    local ok bad
    ok=$(grep -c ' rc=0 ' "$report" 2>/dev/null || true)
    bad=$(grep ' rc=-' "$report" 2>/dev/null | grep -vc ' rc=-16 ' || true)
    # A refusal says why (shim_switch_refuse).
    unsaid=$(grep ' rc=-16 ' "$report" 2>/dev/null | grep -vc ' reason="' ||
             true)
    echo "re-homes: $ok done, $bad failed, $unsaid refused without a reason"
    [ "${ok:-0}" -ge "$min" ] && [ "${bad:-0}" -eq 0 ] &&
        [ "${unsaid:-0}" -eq 0 ]
}

# A program under the shim, re-homed every N calls; passes when the program
# verified every byte itself and at least MIN re-homes really happened.
rehome_case() {
    local every=$1 min=$2
    shift 2
    local report
    report=$(mktemp)
    CRANE_REHOME_EVERY=$every CRANE_REHOME_REPORT=$report "$@" || {
        rm -f "$report"; return 1; }
    rehomed "$report" "$min"
    local rc=$?
    rm -f "$report"
    return $rc
}

same_output() {  # same_output NAME CMD...: shim output equals native output
    local a b
    a=$("${@:2}" 2>&1) || return 1
    b=$("$RUN" "${@:2}" 2>&1) || return 1
    [ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b") | head -20; return 1; }
}

strip_loader() { sed '/^ICD loader properties/,$d' | grep -v '^[[:space:]]*$'; }
clinfo_same() {
    diff <(clinfo | strip_loader) <("$RUN" clinfo | strip_loader) &&
    diff <(clinfo | strip_loader) \
         <(CRANE_REHOME_EVERY=7 "$RUN" clinfo 2>/dev/null | strip_loader)
}
py_same() {
    local a b c
    a=$(/usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    b=$("$RUN" /usr/bin/python3 tests/integration/pyopencl_app.py) || return 1
    c=$(CRANE_REHOME_EVERY=50 "$RUN" /usr/bin/python3 \
        tests/integration/pyopencl_app.py 2>/dev/null) || return 1
    echo "native $a"; echo "shim   $b"; echo "rehome $c"
    [ "$a" = "$b" ] && [ "$a" = "$c" ]
}
no_vendor() {
    local out
    out=$(CRANE_VENDORS_DIR=/nonexistent "$RUN" clinfo -l 2>&1)
    echo "$out"
    echo "$out" | grep -q '/nonexistent/\*.icd'
}

export -f rehomed rehome_case same_output clinfo_same py_same no_vendor \
    strip_loader
