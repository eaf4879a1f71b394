#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The timing rows with their spread: runs futoin_bench in PROCS processes,
# one after the other, and prints per workload the median over the
# processes of its multiple of F (each process times its own floor F
# first), with the lowest and highest, and the spread (highest / lowest).
# One binary on a shared machine runs some rows in two speed states,
# process by process: one process shows one state, several show both.
#
#   bash bench/run.sh --procs N [ARGS...]   (builds, then runs this)
#   bash bench/spread.sh FUTOIN_BENCH PROCS [ARGS...]
#
# ARGS go to every futoin_bench process (--quick, --only a,b, --reps N).
set -euo pipefail

if [ $# -lt 2 ] || ! [ "$2" -ge 1 ] 2>/dev/null; then
    sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
BENCH=$1
PROCS=$2
shift 2

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "spread: $PROCS futoin_bench processes, one after the other; $(nproc) CPUs," \
    "nothing pinned; $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"
for p in $(seq 1 "$PROCS"); do
    "$BENCH" "$@" >"$WORK/out.$p"
    # "PROC NAME PER NS XF" lines; the floor as "PROC F - NS 1".
    awk -v p="$p" '
        /^F \(in-process floor/ { print p, "F", "-", $(NF - 1), 1; next }
        /CHECK FAILED/ { print "spread: " $0 > "/dev/stderr"; bad = 1 }
        NF >= 4 && $3 ~ /^[0-9.]+$/ && $4 ~ /^[0-9.]+$/ { print p, $1, $2, $3, $4 }
        END { exit bad }' "$WORK/out.$p" >>"$WORK/all"
    printf '  process %d: F %s ns\n' "$p" \
        "$(awk -v p="$p" '$1 == p && $2 == "F" { print $4 }' "$WORK/all")"
done

awk '
    function sort(v, n,    i, j, t) {
        for (i = 2; i <= n; ++i) {
            t = v[i]
            for (j = i - 1; j >= 1 && v[j] > t; --j) v[j + 1] = v[j]
            v[j + 1] = t
        }
    }
    function med(v, n) { return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    {
        if (!($2 in seen)) { seen[$2] = 1; order[++rows] = $2; per[$2] = $3 }
        k = ++cnt[$2]
        x[$2, k] = ($2 == "F") ? $4 : $5
    }
    END {
        printf "\n%-18s %-8s %8s %8s %8s %8s\n", "workload", "per", "xF med", "lowest", "highest", "spread"
        for (r = 1; r <= rows; ++r) {
            name = order[r]
            n = cnt[name]
            delete v
            for (k = 1; k <= n; ++k) v[k] = x[name, k]
            sort(v, n)
            if (name == "F") {
                printf "%-18s %-8s %7.2fns %6.2fns %6.2fns %7.2fx\n", "F (floor)", "record",
                    med(v, n), v[1], v[n], (v[1] > 0 ? v[n] / v[1] : 0)
            } else {
                printf "%-18s %-8s %8.2f %8.2f %8.2f %7.2fx\n", name, per[name],
                    med(v, n), v[1], v[n], (v[1] > 0 ? v[n] / v[1] : 0)
            }
        }
    }' "$WORK/all"
