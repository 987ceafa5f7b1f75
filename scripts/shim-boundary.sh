#!/bin/sh
# The shim's backend boundary: no file of the shim outside its remote
# backend's folder (shim/remote/) names a shim_remote_* symbol or the
# remote backend's row; the switch and the rest ask the backend interface
# (shim/backend.h).  Comments are not code: they are left out.  Prints
# every offending line, exits 1 if there is one.
# Usage: scripts/shim-boundary.sh SHIMDIR      (e.g. shim)
#        scripts/shim-boundary.sh --self-test SHIMDIR
#   (--self-test: a copy of SHIMDIR with one planted call must fail, and
#   the real one pass, so that the check itself is seen to work)
set -eu
check() {
    dir=$1
    found=$(find "$dir" -path "$dir/remote" -prune -o \
                 \( -name '*.c' -o -name '*.h' -o -name '*.def' \) -print |
        sort | while read -r f; do
            # Block and line comments dropped, then the names looked for.
            perl -0777 -pe 's{/\*.*?\*/}{"\n" x (() = $& =~ /\n/g)}gse; s{//[^\n]*}{}g' "$f" |
                grep -n -E '\bshim_remote_[a-zA-Z0-9_]*' |
                sed "s|^|$f:|" || true
        done)
    if [ -n "$found" ]; then
        echo "outside $dir/remote/, names of the remote backend:"
        echo "$found"
        return 1
    fi
    echo "no file outside $dir/remote/ names a shim_remote_* symbol"
}
if [ "${1:-}" = --self-test ]; then
    shimdir=${2:?usage: $0 --self-test SHIMDIR}
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp -r "$shimdir" "$tmp/shim"
    printf '/* shim_remote_alive in a comment is fine */\n' >>"$tmp/shim/gate.c"
    check "$tmp/shim" >/dev/null || { echo "a comment was taken for code"; exit 1; }
    printf 'static void planted(void) { (void)shim_remote_alive(); }\n' \
        >>"$tmp/shim/gate.c"
    if check "$tmp/shim" >"$tmp/out"; then
        echo "a planted shim_remote_alive() call in gate.c was not found"
        exit 1
    fi
    grep -q 'gate.c:.*shim_remote_alive' "$tmp/out" ||
        { echo "the planted call was not named:"; cat "$tmp/out"; exit 1; }
    echo "a planted call is caught: $(grep gate.c "$tmp/out")"
    check "$shimdir"
    exit $?
fi
check "${1:?usage: $0 SHIMDIR}"
