#!/bin/sh
# run.sh: interleaved native vs crane-run clbench timings, one row per test.

set -u

usage() {
    cat <<'EOF'
usage: run.sh [--shim CRANE_RUN_PATH] [--reps N] [--scale S] [--platform N]
              [--device N] [--device-type gpu|cpu|all] [--pageable]
              [--target SECONDS] [--stat median|min] [--bench CLBENCH]
              [--control] [-v] [tests...]

Runs every test native and under the shim alternately N times each (default
5; pairs in ABBA order: native shim, shim native, native shim, ...), takes
the median timed-region seconds of each side and prints shim/native.
Without --shim the "shim" column is a second native run, which measures the
noise floor.

  --platform, --device, --device-type, --scale, --pageable
                 are passed to clbench (see clbench --help)
  --target T     per test, one native calibration run at --scale, then
                 rescale so the timed region takes about T seconds; both
                 sides then use that same scale (for fast GPUs)
  --stat min     compare the fastest run of each side instead of the
                 median (more robust on a machine shared with other load)
  --bench PATH   use this clbench binary (default: build it from clbench*.c
                 into build/bench/overhead/clbench when missing or stale)
  --control      also run a second native side in the same rounds
                 (native shim native2, then native2 shim native, ...) and
                 print native2/native next to shim/native: the noise floor
                 of this very run
  -v             print every RESULT line on stderr as it comes, prefixed
                 with its side (calib, native, shim, native2)
tests: bus_h2d bus_d2h launch setarg stencil reduction sort gemm (default all)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
all_tests="bus_h2d bus_d2h launch setarg stencil reduction sort gemm"

shim=
reps=5
scale=1
platform=0
devtype=all
copts=
target=
stat=median
bench=
verbose=0
control=0
tests=

while [ $# -gt 0 ]; do
    case $1 in
    --shim) shim=${2:?--shim needs a path}; shift 2 ;;
    --reps) reps=${2:?--reps needs a number}; shift 2 ;;
    --scale) scale=${2:?--scale needs a number}; shift 2 ;;
    --platform) platform=${2:?--platform needs a number}; shift 2 ;;
    --device) copts="$copts --device ${2:?--device needs a number}"; shift 2 ;;
    --pageable) copts="$copts --pageable"; shift ;;
    --device-type) devtype=${2:?--device-type needs a value}; shift 2 ;;
    --target) target=${2:?--target needs seconds}; shift 2 ;;
    --stat) stat=${2:?--stat needs median or min}; shift 2 ;;
    --bench) bench=${2:?--bench needs a path}; shift 2 ;;
    --control) control=1; shift ;;
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
case $stat in
median|min) ;;
*) echo "run.sh: --stat must be median or min" >&2; exit 2 ;;
esac
case $reps in
''|*[!0-9]*|0) echo "run.sh: --reps must be a positive integer" >&2; exit 2 ;;
esac

if [ -z "$bench" ]; then
    bench=$root/build/bench/overhead/clbench
    if [ ! -x "$bench" ] ||
        [ -n "$(find "$here" -name 'clbench*.[ch]' -newer "$bench")" ]; then
        mkdir -p "$(dirname "$bench")" || exit 2
        echo "run.sh: building $bench" >&2
        ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
            "$here"/clbench*.c -o "$bench" -lOpenCL -lm || exit 2
    fi
fi
[ -x "$bench" ] || { echo "run.sh: $bench is not executable" >&2; exit 2; }

if [ -n "$shim" ]; then
    if [ ! -x "$shim" ]; then
        echo "run.sh: shim $shim is not executable" >&2
        exit 2
    fi
    shim_label=shim
else
    echo "note: no --shim given; the shim column is a second native run" \
        "(native vs native = noise floor)"
    shim_label=native2
fi

errlog=$(mktemp "${TMPDIR:-/tmp}/crane-bench.XXXXXX") || exit 2
devlog=$(mktemp "${TMPDIR:-/tmp}/crane-bench.XXXXXX") || exit 2
# A signal must end the run (the EXIT trap then cleans up); a trap that only
# removed the files would leave run.sh going on with the next run.
trap 'rm -f "$errlog" "$devlog"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# one_run KIND TEST [SCALE]: run clbench once and print the timed-region
# seconds; on failure print the reason on stderr, return 1. KIND is shim
# (under --shim, when given) or native, native2, calib (all native; the
# name labels -v output).
one_run() {
    run_kind=$1
    test_name=$2
    test_scale=${3:-$scale}
    if [ "$1" = shim ] && [ -n "$shim" ]; then
        set -- "$shim" "$bench" "$test_name"
    else
        set -- "$bench" "$test_name"
    fi
    # shellcheck disable=SC2086
    out=$("$@" --platform "$platform" --device-type "$devtype" \
        --scale "$test_scale" $copts 2>"$errlog")
    rc=$?
    [ "$verbose" = 1 ] && printf '%s\n' "$out" |
        sed -n "s/^RESULT /$run_kind RESULT /p" >&2
    secs=$(printf '%s\n' "$out" |
        awk -v t="$test_name" '$1 == "RESULT" && $2 == t { print $3; n++ }
            END { exit n != 1 }')
    if [ $rc -ne 0 ] || [ -z "$secs" ]; then
        echo "run.sh: $test_name failed (exit $rc)" >&2
        sed 's/^/    /' "$errlog" >&2
        return 1
    fi
    # Every run, native or shim, must have opened the same device: platform
    # indices can differ between the system ICD loader and the shim.
    dev=$(printf '%s\n' "$out" | sed -n 's/^DEVICE //p')
    if [ ! -s "$devlog" ]; then
        printf '%s\n' "$dev" >"$devlog"
    elif [ "$dev" != "$(cat "$devlog")" ]; then
        echo "run.sh: $test_name ($run_kind) ran on '$dev'," \
            "not on '$(cat "$devlog")' like the first run" >&2
        return 1
    fi
    printf '%s\n' "$secs"
}

# stats "v1 v2 ...": print "median min max".
stats() {
    # shellcheck disable=SC2086
    printf '%s\n' $1 | sort -g | awk '
        { v[NR] = $1 }
        END {
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.6f %.6f %.6f\n", m, v[1], v[NR]
        }'
}

fmt='%-10s %7s %10s %10s %8s %10s %9s %9s'
cfmt=' %10s %8s %9s'
# shellcheck disable=SC2059
printf "$fmt" test scale "native_$stat" "${shim_label}_$stat" ratio \
    overhead% nat_sprd% shm_sprd%
# shellcheck disable=SC2059
[ $control = 1 ] && printf "$cfmt" "native2_$stat" ctl_ratio ctl_sprd%
echo
failed=0
ratios=
cratios=
for t in $tests; do
    nat='' shm='' ctl='' ok=1 r=0 ts=$scale
    if [ -n "$target" ]; then
        if s=$(one_run calib "$t"); then
            ts=$(awk -v s="$scale" -v t="$target" -v m="$s" \
                'BEGIN { printf "%.2g\n", s * t / m }')
        else
            ok=0 r=$reps
        fi
    fi
    # Pairs alternate in ABBA order (native shim, shim native, ...) so a
    # steady drift over the sequence falls equally on both sides. With
    # --control, rounds alternate native shim native2 / native2 shim native:
    # every side then sits, on average, in the middle of the round.
    while [ "$r" -lt "$reps" ]; do
        if [ $control = 1 ]; then
            order="native shim native2"
            [ $((r % 2)) = 1 ] && order="native2 shim native"
        else
            order="native shim"
            [ $((r % 2)) = 1 ] && order="shim native"
        fi
        for kind in $order; do
            s=$(one_run "$kind" "$t" "$ts") || { ok=0; break 2; }
            case $kind in
            native) nat="$nat $s" ;;
            native2) ctl="$ctl $s" ;;
            *) shm="$shm $s" ;;
            esac
        done
        r=$((r + 1))
    done
    if [ $ok = 0 ]; then
        printf '%-10s %7s %s\n' "$t" "$ts" FAILED
        failed=1
        continue
    fi
    row=$( { stats "$nat"; stats "$shm"; } | awk -v st="$stat" '
        NR == 1 { nm = st == "min" ? $2 : $1; nlo = $2; nhi = $3 }
        NR == 2 { sm = st == "min" ? $2 : $1; slo = $2; shi = $3 }
        END {
            printf "%.4f %.4f %.4f %+.2f %.1f %.1f\n", nm, sm, sm / nm,
                (sm / nm - 1) * 100, (nhi - nlo) / nm * 100,
                (shi - slo) / sm * 100
        }')
    # shellcheck disable=SC2086
    set -- $row
    # shellcheck disable=SC2059
    printf "$fmt" "$t" "$ts" "$1" "$2" "$3" "$4" "$5" "$6"
    ratios="$ratios $3"
    if [ $control = 1 ]; then
        crow=$( { stats "$nat"; stats "$ctl"; } | awk -v st="$stat" '
            NR == 1 { nm = st == "min" ? $2 : $1 }
            NR == 2 { cm = st == "min" ? $2 : $1; clo = $2; chi = $3 }
            END {
                printf "%.4f %.4f %.1f\n", cm, cm / nm, (chi - clo) / cm * 100
            }')
        # shellcheck disable=SC2086
        set -- $crow
        # shellcheck disable=SC2059
        printf "$cfmt" "$1" "$2" "$3"
        cratios="$cratios $2"
    fi
    echo
done

# geomean LABEL "r1 r2 ...": the geometric mean of the ratios.
geomean() {
    # shellcheck disable=SC2086
    printf '%s\n' $2 | awk -v l="$1" '
        { s += log($1); n++ }
        END {
            g = exp(s / n)
            printf "%s geomean ratio %.4f  mean overhead %+.2f%%  (%d tests)\n",
                l, g, (g - 1) * 100, n
        }'
}
[ -n "$ratios" ] && geomean "$shim_label/native" "$ratios"
[ -n "$cratios" ] && geomean "native2/native (control)" "$cratios"
[ -s "$devlog" ] && printf 'device: %s\n' "$(cat "$devlog")"
exit $failed
