#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Our rows against Boost.Asio's: runs futoin_bench (the rows that have a
# counterpart) and asio_bench (bench/asio/asio_bench.cpp) in turns, each
# in PROCS processes of its own, every process timing the floor F first,
# and prints the rows side by side: ns and multiples of F (median over the
# processes, and the lowest-highest in F), and the ratio ours/Asio of the
# F-normalised figures (median of the per-round ratios, and their range:
# a round is one process of each side, back to back).
#
#   bash bench/run.sh --vs-asio [--quick | --reps N]   (builds, then runs this)
#   bash bench/asio/vs_asio.sh FUTOIN_BENCH ASIO_BENCH [ARGS...]
#
# ARGS go to both programs (--quick, --scale X, --reps N). Environment:
#   PROCS=5              processes of each side (rounds)
#   MEMORY_TASKS=100000  parked tasks of the memory row, both sides
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
OURS=$1
ASIO=$2
shift 2
PROCS=${PROCS:-5}
MEMORY_TASKS=${MEMORY_TASKS:-100000}
OUR_ROWS=simple,chain100,parked30k,setTimeout,timer1M

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# collect SIDE ROUND: the F line and the rows of one program's output, as
# "SIDE ROUND NAME NS XF" lines (F: "SIDE ROUND F NS 1").
collect() {
    awk -v side="$1" -v round="$2" '
        /^F \(in-process floor/ { print side, round, "F", $(NF - 1), 1; next }
        /CHECK FAILED/ { print "vs_asio: " side ": " $0 > "/dev/stderr"; bad = 1 }
        $1 == "memory_parked" { print side, round, $1, $3, "-"; next }
        NF >= 4 && $3 ~ /^[0-9.]+$/ && $4 ~ /^[0-9.]+$/ { print side, round, $1, $3, $4 }
        END { exit bad }'
}

echo "vs_asio: $PROCS rounds, each one futoin_bench and one asio_bench process," \
    "in turns; $(nproc) CPUs, nothing pinned"
for r in $(seq 1 "$PROCS"); do
    order="ours asio"
    [ $((r % 2)) -eq 0 ] && order="asio ours"
    for side in $order; do
        if [ "$side" = ours ]; then
            { "$OURS" --only "$OUR_ROWS" "$@" && "$OURS" --run memory_parked "$MEMORY_TASKS"; } \
                >"$WORK/out.ours.$r"
        else
            "$ASIO" --memory "$MEMORY_TASKS" "$@" >"$WORK/out.asio.$r"
        fi
        collect "$side" "$r" <"$WORK/out.$side.$r" >>"$WORK/all"
    done
    printf '  round %d: F ours %s ns, Asio %s ns\n' "$r" \
        "$(awk -v r="$r" '$1 == "ours" && $2 == r && $3 == "F" { print $4 }' "$WORK/all")" \
        "$(awk -v r="$r" '$1 == "asio" && $2 == r && $3 == "F" { print $4 }' "$WORK/all")"
done

# row LABEL OURS_ROW ASIO_ROW [bytes]: one line of the table.
row() {
    awk -v label="$1" -v o="$2" -v a="$3" -v bytes="${4:-}" '
        function med(v, n,    i, j, t) {
            for (i = 2; i <= n; ++i) {
                t = v[i]
                for (j = i - 1; j >= 1 && v[j] > t; --j) v[j + 1] = v[j]
                v[j + 1] = t
            }
            return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        function lo(v, n,    i, m) { m = v[1]; for (i = 2; i <= n; ++i) if (v[i] < m) m = v[i]; return m }
        function hi(v, n,    i, m) { m = v[1]; for (i = 2; i <= n; ++i) if (v[i] > m) m = v[i]; return m }
        $1 == "ours" && $3 == o { ons[$2] = $4; ox[$2] = $5 }
        $1 == "asio" && $3 == a { ans[$2] = $4; ax[$2] = $5 }
        END {
            n = 0
            for (r in ons) {
                if (!(r in ans)) continue
                ++n
                on[n] = ons[r]; an[n] = ans[r]
                of[n] = bytes ? ons[r] : ox[r]; af[n] = bytes ? ans[r] : ax[r]
                q[n] = of[n] / af[n]
            }
            if (n == 0) { printf "%-36s (no figures)\n", label; exit }
            for (i = 1; i <= n; ++i) { of2[i] = of[i]; af2[i] = af[i]; q2[i] = q[i] }
            if (bytes) {
                printf "%-36s %8.0f %6s %-15s %8.0f %6s %-15s %9.3f %-15s x%.1f\n", label,
                    med(on, n), "B", sprintf("(%.0f-%.0f)", lo(of2, n), hi(of2, n)),
                    med(an, n), "B", sprintf("(%.0f-%.0f)", lo(af2, n), hi(af2, n)),
                    med(q, n), sprintf("(%.3f-%.3f)", lo(q2, n), hi(q2, n)), 1 / med(q2, n)
            } else {
                printf "%-36s %8.1f %6.2f %-15s %8.1f %6.2f %-15s %9.3f %-15s x%.1f\n", label,
                    med(on, n), med(of, n), sprintf("(%.2f-%.2f)", lo(of2, n), hi(of2, n)),
                    med(an, n), med(af, n), sprintf("(%.2f-%.2f)", lo(af2, n), hi(af2, n)),
                    med(q, n), sprintf("(%.3f-%.3f)", lo(q2, n), hi(q2, n)), 1 / med(q2, n)
            }
        }' "$WORK/all"
}

echo
echo "medians over the rounds; in brackets the lowest-highest of the F multiples"
echo "(bytes for the memory row) and of the per-round ratios"
printf '%-36s %8s %6s %-15s %8s %6s %-15s %9s %-15s %s\n' "row" "ours ns" "xF" "(range)" \
    "Asio ns" "xF" "(range)" "ours/Asio" "(range)" "Asio/ours"
printf '%.*s\n' 136 "$(printf '%0136d' 0 | tr 0 -)"
row "task: new, one step, run, done" simple spawn_coro
row "  Asio: one posted handler" simple spawn_post
row "30,000 parked, resumed with a value" parked30k parked30k
row "  Asio: handler called by the driver" parked30k parked30k_inline
row "chain of 100, per step: coroutine" chain100 chain100_coro
row "  Asio: plain posted handlers" chain100 chain100_post
row "deadline armed, then cancelled" setTimeout deadline
row "  the same, 1,000,000 timers pending" timer1M timer1M
row "memory per parked task ($MEMORY_TASKS)" memory_parked memory_parked bytes
echo
echo "ours: futoin_bench rows simple, parked30k, chain100, setTimeout, timer1M, memory_parked;"
echo "Asio: asio_bench rows (bench/asio/asio_bench --list); see docs/PERFORMANCE.md"
