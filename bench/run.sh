#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds a Release (-O2) build in build-bench/ and runs futoin_bench.
# Extra arguments go to futoin_bench (e.g. --quick, --only chain100,simple).
#   bench/run.sh --vs-asio [--quick | --reps N]
#                    our rows against Boost.Asio's (bench/asio/vs_asio.sh:
#                    PROCS processes of each side, default 5); installs g++
#                    and libboost-dev when missing (FUTOIN_SKIP_DEPS=1: not)
#   bench/run.sh --procs N [ARGS...]
#                    every timing row in N processes (bench/spread.sh): the
#                    median multiple of F, the lowest, the highest
#   BENCH_TRACING=1  the tracing build instead (-DFUTOIN_TRACING=ON), in
#                    build-bench-tracing/: what tracing costs
#   BENCH_BUILD_DIR=dir  the build directory (default build-bench/)
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-bench"
tracing=OFF
if [ "${BENCH_TRACING:-0}" = 1 ]; then
    build="$root/build-bench-tracing"
    tracing=ON
fi
build=${BENCH_BUILD_DIR:-$build}
vs_asio=0
procs=0
if [ "${1:-}" = --procs ]; then
    procs=${2:-}
    if ! [ "$procs" -ge 1 ] 2>/dev/null; then
        echo "usage: bench/run.sh --procs N [ARGS...]" >&2
        exit 2
    fi
    shift 2
elif [ "${1:-}" = --vs-asio ]; then
    vs_asio=1
    shift
    FUTOIN_DEPS_WHO=bench/run.sh bash -c '. "$1/scripts/deps.sh" && futoin_need g++ libboost-dev' \
        sh "$root"
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG" -DFUTOIN_TRACING=$tracing \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_WERROR=OFF >/dev/null
cmake --build "$build" --target futoin_bench -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
if [ $vs_asio = 1 ]; then
    if ! cmake --build "$build" --target asio_bench -j "$(nproc 2>/dev/null || echo 2)" >/dev/null; then
        echo "bench/run.sh: asio_bench could not be built: see the asio_bench line of" \
            "cmake -S $root -B $build" >&2
        exit 1
    fi
    exec bash "$root/bench/asio/vs_asio.sh" "$build/bench/futoin_bench" \
        "$build/bench/asio/asio_bench" "$@"
fi
if [ "$procs" -ge 1 ]; then
    exec bash "$root/bench/spread.sh" "$build/bench/futoin_bench" "$procs" "$@"
fi
exec "$build/bench/futoin_bench" "$@"
