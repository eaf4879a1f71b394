#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ThreadSanitizer stage for the thread tests: a clang build with
# -fsanitize=thread in its own directory (TSan cannot be combined with the
# ASan build) of the library and the programs of the CTest label
# "threads", then those tests (small sizes, set by CMake).
#
#   bash scripts/tsan.sh            thread tests only
#   bash scripts/tsan.sh --all      every CTest test under TSan
#
# Environment:
#   TSAN_BUILD_DIR=dir   build directory (default: build-tsan)
#   JOBS=n               parallel build/test jobs (default: 2)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${TSAN_BUILD_DIR:-build-tsan}
JOBS=${JOBS:-2}
LABEL=(-L threads)
if [ "${1:-}" = "--all" ]; then
    LABEL=()
fi

# halt_on_error: the first race fails the test; second_deadlock_stack:
# both stacks of a lock-order inversion.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DFUTOIN_TSAN=ON -DFUTOIN_WERROR=ON \
    -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_WITH_UV=OFF
if [ ${#LABEL[@]} -gt 0 ]; then
    # Only the programs of the tests that run (each test is named after
    # its program): not the rest of the tree, a TSan build of which would
    # take longer than the tests.
    mapfile -t TARGETS < <(cd "$BUILD" && ctest -N "${LABEL[@]}" | sed -n 's/^ *Test *#[0-9]*: //p')
    if [ ${#TARGETS[@]} -eq 0 ]; then
        echo "tsan.sh: no test labelled ${LABEL[*]}" >&2
        exit 1
    fi
    cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"
else
    cmake --build "$BUILD" -j"$JOBS"
fi
(cd "$BUILD" && ctest --output-on-failure -j"$JOBS" "${LABEL[@]}")
