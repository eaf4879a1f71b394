#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds a Release (-O2) build in build-bench/ and runs futoin_bench.
# Extra arguments go to futoin_bench (e.g. --quick, --only chain100,simple).
#   BENCH_TRACING=1  the tracing build instead (-DFUTOIN_TRACING=ON), in
#                    build-bench-tracing/: what tracing costs
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-bench"
tracing=OFF
if [ "${BENCH_TRACING:-0}" = 1 ]; then
    build="$root/build-bench-tracing"
    tracing=ON
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG" -DFUTOIN_TRACING=$tracing \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_WERROR=OFF >/dev/null
cmake --build "$build" --target futoin_bench -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
exec "$build/bench/futoin_bench" "$@"
