#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The thread tests at their full stress sizes (FUTOIN_STRESS=1): 4 producer
# threads x 1,000,000 cross-thread completions (and 4 x 1,000,000 cross-thread
# immediates) with none lost, duplicated or reordered; 10,000 start/stop
# cycles of a loop thread; 3,000 success()-vs-timeout(-vs-cancel) races;
# larger shared-mutex and worker runs. Release build in its own directory;
# pass --asan to run them under ASan+UBSan instead (leaks are checked at
# exit), --tsan for ThreadSanitizer (slow: ~10-30x).
#
#   bash scripts/stress-threads.sh [--asan|--tsan]
#
# Environment: STRESS_BUILD_DIR=dir (default build-stress[-asan|-tsan]),
# JOBS=n (default 2).
set -euo pipefail

cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
MODE=${1:-}
ARGS=(-DCMAKE_BUILD_TYPE=Release -DFUTOIN_WERROR=ON -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF
    -DFUTOIN_WITH_UV=OFF)
case "$MODE" in
    "") BUILD=build-stress ;;
    --asan) BUILD=build-stress-asan
        ARGS+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUTOIN_SANITIZE=ON)
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 ;;
    --tsan) BUILD=build-stress-tsan
        ARGS+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUTOIN_TSAN=ON)
        export TSAN_OPTIONS=halt_on_error=1 ;;
    *) echo "usage: $0 [--asan|--tsan]" >&2; exit 2 ;;
esac

BUILD=${STRESS_BUILD_DIR:-$BUILD}
cmake -S . -B "$BUILD" "${ARGS[@]}"
cmake --build "$BUILD" -j"$JOBS"
export FUTOIN_STRESS=1
status=0
for t in "$BUILD"/tests/test_threads_*; do
    [ -x "$t" ] || continue
    echo "==> $(basename "$t") (FUTOIN_STRESS=1)"
    start=$(date +%s)
    if ! "$t"; then
        status=1
    fi
    echo "    $(( $(date +%s) - start )) s"
done
exit $status
