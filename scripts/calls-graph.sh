#!/bin/sh
# Which file of one folder uses which other: calls (from the objects'
# symbol tables: X.c uses a function or variable defined in Y.c) and
# includes (X.c or X.h includes Y.h; X and Y are modules, a .c with its .h).
# Prints both graphs; exits 1 when either has a cycle.
# Usage: scripts/calls-graph.sh SRCDIR OBJDIR
#   e.g. scripts/calls-graph.sh guest-daemon build/obj/guest-daemon
set -eu
src=${1:?usage: $0 SRCDIR OBJDIR}
obj=${2:?usage: $0 SRCDIR OBJDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/defs"
: >"$tmp/uses"
for o in "$obj"/*.o; do
    f=$(basename "$o" .o)
    nm -g --defined-only "$o" | awk -v f="$f" '{ print $3, f }' >>"$tmp/defs"
    nm -u "$o" | awk -v f="$f" '{ print f, $2 }' >>"$tmp/uses"
done
awk 'NR == FNR { def[$1] = $2; next }
     ($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
    "$tmp/defs" "$tmp/uses" | sort -u >"$tmp/calls"
for f in "$src"/*.c "$src"/*.h; do
    a=$(basename "$f"); a=${a%.*}
    sed -n 's/^#include "\([a-z_0-9]*\)\.h".*/\1/p' "$f" |
        awk -v a="$a" '$1 != a { print a, $1 }'
done | sort -u >"$tmp/includes"
rc=0
for g in calls includes; do
    echo "$g:"
    awk '{ a[$1] = a[$1] " " $2 } END { for (k in a) print "  " k ":" a[k] }' \
        "$tmp/$g" | sort
    if tsort "$tmp/$g" >/dev/null 2>"$tmp/err" && ! [ -s "$tmp/err" ]; then
        echo "  -> acyclic"
    else
        echo "  -> CYCLE:"; sed 's/^/  /' "$tmp/err"; rc=1
    fi
done
exit $rc
