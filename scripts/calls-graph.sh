#!/bin/sh
# Which file of one folder uses which other: calls (from the objects'
# symbol tables: X.c uses a function or variable defined in Y.c) and
# includes (X.c or X.h includes Y.h; X and Y are modules, a .c with its .h).
# Subfolders count as part of the folder: their files are named by their
# path below it (hv/hv_libvirt), a header found as the compiler finds it:
# beside the file, by its path from the root (host-daemon/hv/hv.h) or from
# the folder (shim/'s -iquote: remote/remote.h).
# Prints both graphs, then for each its size and its knots: the groups of
# files that all reach each other (strongly connected components), which
# no order of layers can separate.  Exits 1 when either graph has a knot.
# Usage: scripts/calls-graph.sh SRCDIR OBJDIR
#   e.g. scripts/calls-graph.sh guest-daemon build/obj/guest-daemon
set -eu
src=${1:?usage: $0 SRCDIR OBJDIR}
obj=${2:?usage: $0 SRCDIR OBJDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/defs"
: >"$tmp/uses"
for o in $(find "$obj" -name '*.o' | sort); do
    f=${o#"$obj"/}; f=${f%.o}
    nm -g --defined-only "$o" | awk -v f="$f" '{ print $3, f }' >>"$tmp/defs"
    nm -u "$o" | awk -v f="$f" '{ print f, $2 }' >>"$tmp/uses"
done
awk 'NR == FNR { def[$1] = $2; next }
     ($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
    "$tmp/defs" "$tmp/uses" | sort -u >"$tmp/calls"
for f in $(find "$src" -name '*.[ch]' | sort); do
    a=${f#"$src"/}; a=${a%.*}
    d=${a%/*}; [ "$d" != "$a" ] || d=
    # As the compiler finds it: beside the file, spelled from the root
    # (host-daemon/hv/hv.h), or from the folder (-iquote shim: remote/x.h);
    # a header of another folder (proto/...) is no edge.
    sed -n 's/^#include "\([a-z_0-9/-]*\)\.h".*/\1/p' "$f" |
        while read -r h; do
            if [ -n "$d" ] && [ -f "$src/$d/$h.h" ]; then
                echo "$a $d/$h"
            elif [ -f "$h.h" ] && [ "${h#"$src"/}" != "$h" ]; then
                echo "$a ${h#"$src"/}"
            elif [ -f "$src/$h.h" ]; then
                echo "$a $h"
            fi
        done | awk '$1 != $2'
done | sort -u >"$tmp/includes"
rc=0
for g in calls includes; do
    echo "$g:"
    awk '{ a[$1] = a[$1] " " $2 } END { for (k in a) print "  " k ":" a[k] }' \
        "$tmp/$g" | sort
    # Reachability by Floyd-Warshall (a folder has tens of files), then
    # each knot is a file with every file it reaches and is reached by.
    awk '{ node[$1]; node[$2]; r[$1, $2] = 1; edge[$1, $2]; edges++ }
         END {
             for (k in node) for (i in node) if ((i, k) in r)
                 for (j in node) if ((k, j) in r) r[i, j] = 1
             for (e in edge) {
                 split(e, ij, SUBSEP)
                 if ((ij[2], ij[1]) in r) looped++
             }
             for (i in node) {
                 files++
                 if (i in done) continue
                 size = 1; names = i
                 for (j in node)
                     if (j != i && (i, j) in r && (j, i) in r) {
                         done[j]; size++; names = names "\n" j
                     }
                 if (size > 1) {
                     knots++; inknots += size
                     cmd = "sort | tr \"\\n\" \" \""
                     printf "%s\n", names | cmd; close(cmd)
                     printf "\n"
                 }
             }
             printf "= %d files, %d edges; %d knots holding %d files, " \
                    "%d edges inside them\n", files, edges, knots, inknots,
                    looped
         }' "$tmp/$g" >"$tmp/knots"
    sed -n 's/^= /  /p' "$tmp/knots"
    if grep -q '^[a-z]' "$tmp/knots"; then
        awk '/^[a-z]/ { printf "  -> KNOT of %d files: %s\n", NF, $0 }' \
            "$tmp/knots"
        rc=1
    else
        echo "  -> acyclic"
    fi
done
exit $rc
