#!/bin/bash
# One spelling of the logger: every fixed-level line of the shim, the
# daemons, the proxy, their CLIs, tests and benchmarks becomes
# CRN_ERROR/CRN_WARN/CRN_INFO/CRN_DEBUG (proto/log.h), in place of the
# folders' LOG_*, GD_*, HD_*, PX_* and crn_log(CRN_LOG_<LEVEL>, ...); the
# folders' log.h (short names only) go, their includes become
# proto/log.h.  Idempotent: a second run changes nothing, so it can be run
# again after merging branches written with the old names.
#
#   scripts/one-logger.sh        (from the repository root)
set -eu
cd "$(dirname "$0")/.."
dirs="shim guest-daemon host-daemon proxy-domain proto tests bench"

# The one family, in proto/log.h (once).
if ! grep -q '^#define CRN_ERROR(' proto/log.h; then
    sed -i 's|^#endif /\* CRANE_PROTO_LOG_H \*/|/* The one spelling for a line of a fixed level; CRN_DEBUG formats\
 * nothing unless debug lines are on. */\
#define CRN_ERROR(...) crn_log(CRN_LOG_ERROR, __VA_ARGS__)\
#define CRN_WARN(...) crn_log(CRN_LOG_WARN, __VA_ARGS__)\
#define CRN_INFO(...) crn_log(CRN_LOG_INFO, __VA_ARGS__)\
#define CRN_DEBUG(...)                                                       \\\
    do {                                                                     \\\
        if (crn_log_enabled(CRN_LOG_DEBUG))                                  \\\
            crn_log(CRN_LOG_DEBUG, __VA_ARGS__);                             \\\
    } while (0)\
\
#endif /* CRANE_PROTO_LOG_H */|' proto/log.h
fi
grep -q '^#define CRN_ERROR(' proto/log.h ||
    { echo "one-logger: proto/log.h's end not found" >&2; exit 1; }

# The folders' log.h (short names only) go.
for d in shim guest-daemon host-daemon proxy-domain; do
    [ ! -f "$d/log.h" ] || git rm -qf "$d/log.h"
done
pats=()
for d in $dirs; do pats+=("$d/*.c" "$d/*.h"); done
files=$(git ls-files -- "${pats[@]}" | grep -v '^proto/log\.[ch]$')
# shellcheck disable=SC2086
sed -i -E \
    -e 's/\b(LOG|GD|HD|PX)_(ERROR|WARN|INFO|DEBUG)\(/CRN_\2(/g' \
    -e 's/\bcrn_log\(CRN_LOG_(ERROR|WARN|INFO|DEBUG), */CRN_\1(/g' \
    $files
# Their includes: the shared one.
# shellcheck disable=SC2086
sed -i -E \
    -e 's@^#include "((shim|guest-daemon|host-daemon|proxy-domain)/)?log\.h"@#include "proto/log.h"@' \
    $(echo "$files" | grep -v '^proto/')
# Their rows in the folders' READMEs.
sed -i -E '/^\| `?log\.h`? \|/d' shim/README.md guest-daemon/README.md \
    host-daemon/README.md proxy-domain/README.md
left=$(git grep -nE '\b(LOG|GD|HD|PX)_(ERROR|WARN|INFO|DEBUG)\(' -- $dirs || true)
[ -z "$left" ] || { echo "one-logger: left over:"; echo "$left"; exit 1; }
echo "one-logger: done"
