#!/bin/sh
# No tracked source, test or web file over 800 lines (issue 24): lists each
# offender with its length, exits 1 if there is one.
# Usage: scripts/file-lengths.sh [--self-test]     (from anywhere)
#   Counted: C (.c .h .def), schemas (.proto), shell, Python, make files,
#   the dashboard's HTML, CSS and JavaScript, and any other tracked file that
#   starts with "#!" (the VM images' scripts); not documentation, images or
#   data (fuzz corpora, dashboards' JSON).  CRANE_MAX_LINES sets the bound.
#   --self-test: a planted file one line over the bound must be named and an
#   exactly full one must not, so that the check is seen to work; then the
#   repository is checked.
set -eu
cd "$(dirname "$0")/.."
max=${CRANE_MAX_LINES:-800}

# counted FILE: whether FILE is one this bound is for.
counted() {
    case $1 in
    *.c | *.h | *.def | *.proto | *.sh | *.py | *.mk | Makefile | */Makefile | \
        *.html | *.css | *.js) return 0 ;;
    *.md | *.png | *.json | *.txt | tests/fuzz/*) return 1 ;;
    esac
    [ "$(head -c 2 "$1" 2>/dev/null)" = "#!" ]
}

# check: the files named on stdin, one a line; prints the offenders.
check() {
    while IFS= read -r f; do
        [ -f "$f" ] && counted "$f" && printf '%s\0' "$f"
    done | xargs -0 -r wc -l | awk -v max="$max" '
        { name = $0; sub(/^ *[0-9]+ /, "", name) }
        # wc adds a "total" line when it counts more than one file.
        name == "total" { next }
        { n++ }
        $1 + 0 > max + 0 {
            if (!bad) print "over " max " lines:"
            print "  " name ": " $1
            bad = 1
        }
        END {
            if (!bad) print n + 0 " files, none over " max " lines"
            exit bad
        }'
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    seq "$max" >"$tmp/full.c"
    seq $((max + 1)) >"$tmp/over.js"
    seq $((max + 1)) >"$tmp/notes.md"
    if printf '%s\n' "$tmp/full.c" "$tmp/notes.md" | check >"$tmp/out"; then
        :
    else
        echo "a file of exactly $max lines (or a .md) was named:"
        cat "$tmp/out"
        exit 1
    fi
    if printf '%s\n' "$tmp/full.c" "$tmp/over.js" | check >"$tmp/out"; then
        echo "a planted file of $((max + 1)) lines was not found"
        exit 1
    fi
    grep -q "over.js: $((max + 1))\$" "$tmp/out" ||
        { echo "the planted file was not named:"; cat "$tmp/out"; exit 1; }
    echo "a planted file is caught: $(grep over.js "$tmp/out" | sed "s/^ *//")"
fi
git ls-files | check
