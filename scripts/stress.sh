#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the stress programs (tests/stress/, not part of ctest): one million
# roots parked in waitExternal() and completed in random order, one million
# timers with half cancelled, a parallel step of 100,000 branches with one
# failing. Each checks completeness and prints its peak RSS (getrusage).
# Then the deep-nesting cases of tests/test_deep.c at 1,000,000 levels
# (nested parallel(), add() and loops, each ended by cancel, timeout, error,
# free and completion), once with the default 8 MB stack and once under
# `ulimit -s 1024`, both on the main thread: teardown must not recurse per
# level.
#
#   bash scripts/stress.sh [plain|asan|valgrind]     default: plain
#
#   plain     gcc Release build
#   asan      clang ASan+UBSan build (LeakSanitizer on)
#   valgrind  gcc build run under valgrind memcheck, with smaller counts
#             (STRESS_SCALE, default 10: counts divided by it)
# Environment: STRESS_BUILD_DIR (default build-stress-MODE).
set -euo pipefail

cd "$(dirname "$0")/.."
MODE=${1:-plain}
BUILD_DIR=${STRESS_BUILD_DIR:-build-stress-$MODE}
SCALE=${STRESS_SCALE:-10}
COMMON=(-DFUTOIN_WERROR=ON -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_WITH_UV=OFF -DFUTOIN_BUILD_TESTS=ON)
case "$MODE" in
    plain)
        cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc \
            -DCMAKE_CXX_COMPILER=g++ "${COMMON[@]}" >/dev/null ;;
    asan)
        cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
            -DCMAKE_CXX_COMPILER=clang++ -DFUTOIN_SANITIZE=ON "${COMMON[@]}" >/dev/null
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} ;;
    valgrind)
        cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
            -DCMAKE_CXX_COMPILER=g++ "${COMMON[@]}" >/dev/null ;;
    *) echo "usage: $0 [plain|asan|valgrind]" >&2; exit 2 ;;
esac
cmake --build "$BUILD_DIR" --target stress_roots stress_timers stress_parallel test_deep -j"$(nproc)"

# timed LABEL STACK_KB COMMAND...: runs COMMAND (under valgrind in that mode),
# with `ulimit -s STACK_KB` unless STACK_KB is empty, and prints how long it
# took.
timed() {
    local label=$1 stack_kb=$2
    shift 2
    echo "==> $label ($MODE)"
    local start
    start=$(date +%s)
    if [ "$MODE" = valgrind ]; then
        set -- valgrind --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --quiet "$@"
    fi
    if [ -n "$stack_kb" ]; then
        (ulimit -s "$stack_kb" && "$@")
    else
        "$@"
    fi
    echo "    ($(( $(date +%s) - start )) s)"
}

run() {
    timed "$1 $2" "" "$BUILD_DIR/tests/stress/$1" "$2"
}

# The variables are exported to the command for this call only.
deep() {
    FUTOIN_DEEP_MAIN_THREAD=1 FUTOIN_DEEP_LEVELS=$1 \
        timed "test_deep $1 levels, main thread, ulimit -s $2" "$2" "$BUILD_DIR/tests/test_deep"
}

div=1
[ "$MODE" = valgrind ] && div=$SCALE
run stress_roots $(( 1000000 / div ))
run stress_timers $(( 1000000 / div ))
run stress_parallel $(( 100000 / div ))
deep $(( 1000000 / div )) 8192
deep $(( 1000000 / div )) 1024
echo "==> stress: all passed ($MODE)"
