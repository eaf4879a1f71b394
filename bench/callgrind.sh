#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per op under valgrind --tool=callgrind, from the difference
# of two runs of different size (setup and teardown cancel out).
#
#   bench/callgrind.sh                    simple and chain (the headline rows)
#   bench/callgrind.sh NAME N1 N2 ...     any workload of `futoin_bench --list`
#                                         (N = units of its run(), see bench.c)
#   bench/callgrind.sh all                every workload, with the ratio to the
#                                         floor's instructions per record
#   ANNOTATE=1 bench/callgrind.sh ...     also the top functions (self cost)
#                                         of the larger run
#   bench/callgrind.sh cxx                the C++ layer (futoin_bench_cxx) against
#                                         the same steps through the C API
#   BENCH_TRACING=1 bench/callgrind.sh ... the tracing build (FUTOIN_TRACING)
# Builds build-bench/ (or build-bench-tracing/) first (through run.sh).
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/build-bench/bench/futoin_bench"
[ "${BENCH_TRACING:-0}" = 1 ] && bin="$root/build-bench-tracing/bench/futoin_bench"
"$root/bench/run.sh" --list >/dev/null
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# instr MODE-ARGS...: prints the total instruction count of one run
instr() {
    out="$tmp/cg.out"
    rm -f "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$@" >/dev/null 2>"$tmp/log" ||
        { cat "$tmp/log" >&2; exit 1; }
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

# measure LABEL OPS1 OPS2 ARGS1 -- ARGS2
report() {
    label=$1 ops1=$2 ops2=$3 i1=$4 i2=$5
    awk -v l="$label" -v a="$ops1" -v b="$ops2" -v x="$i1" -v y="$i2" 'BEGIN {
        printf "%-16s %10.1f instructions/op   (%d ops: %d Ir, %d ops: %d Ir)\n",
            l, (y - x) / (b - a), a, x, b, y }'
}

annotate() {
    if [ -n "$ANNOTATE" ]; then
        callgrind_annotate --inclusive=no --auto=no "$tmp/cg.out" 2>/dev/null |
            sed -n '/^Ir/,$p' | head -25
        echo
    fi
}

if [ $# -eq 0 ]; then
    i1=$(instr --callgrind-simple 2000)
    i2=$(instr --callgrind-simple 12000)
    report simple 2000 12000 "$i1" "$i2"
    annotate
    i1=$(instr --callgrind-chain 20000)
    i2=$(instr --callgrind-chain 220000)
    report chain100/step 20000 220000 "$i1" "$i2"
    annotate
    exit 0
fi

if [ "$1" = cxx ]; then
    # futoin_bench_cxx (bench/bench_cxx.cpp), built beside futoin_bench when
    # a C++ compiler is found; N = chains of 100 steps.
    cmake --build "$(dirname "$bin")/.." --target futoin_bench_cxx -j2 >/dev/null
    bin="$(dirname "$bin")/futoin_bench_cxx"
    set -- c_chain100 200 2200 cxx_chain100 200 2200 cxx_nocap100 200 2200 \
        cxx_cap3_100 200 2200 c_typed2_100 200 2200 cxx_typed2_100 200 2200 \
        c_typed100 200 2200 \
        cxx_typed100 200 2200 cxx_pooled100 200 2200 c_typed3_100 200 2200 \
        cxx_typed3_100 200 2200 c_recover100 200 2200 cxx_recover100 20 220 \
        cxx_recover_ret100 200 2200
fi

if [ "$1" = all ]; then
    set -- floor 1000000 11000000 simple 2000 12000 simple_abi 2000 12000 \
        chain100 200 2200 add+eh 200 2200 owned100 200 2200 error+recover 200 2200 \
        repeat1000 20 220 forEach1000 20 220 \
        parallel2 200 2200 parallel10 200 2200 parallel100 200 2200 \
        parked30k 100000 600000 setTimeout 200 2200 timer1M 20000 220000 \
        bounded1000 20 220 bounded1000_hand 20 220
    for w in mutex_uncont mutex_cont10 throttle_uncont throttle_10flows \
            limiter_uncont limiter_cont10; do
        if "$bin" --list | grep -qx "$w"; then
            set -- "$@" "$w" 200 2200
        fi
    done
fi

floor_ipo=
while [ $# -ge 3 ]; do
    name=$1 n1=$2 n2=$3
    shift 3
    i1=$(instr --run "$name" "$n1")
    o1=$("$bin" --run "$name" "$n1" | sed -n 's/.*: \([0-9]*\) ops$/\1/p')
    i2=$(instr --run "$name" "$n2")
    o2=$("$bin" --run "$name" "$n2" | sed -n 's/.*: \([0-9]*\) ops$/\1/p')
    line=$(report "$name" "$o1" "$o2" "$i1" "$i2")
    if [ "$name" = floor ]; then
        floor_ipo=$(awk -v a="$o1" -v b="$o2" -v x="$i1" -v y="$i2" 'BEGIN { print (y - x) / (b - a) }')
        echo "$line"
    elif [ -n "$floor_ipo" ]; then
        echo "$line" | awk -v f="$floor_ipo" '{ printf "%s  = %.1f x floor\n", $0, $2 / f }'
    else
        echo "$line"
    fi
    annotate
done
