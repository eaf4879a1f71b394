#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Differential fuzzing of the engine against the reference model
# (tests/fuzz/): builds tests/fuzz/fuzz_engine with clang and
# -fsanitize=fuzzer,address,undefined (LeakSanitizer on), runs it for a
# bounded time on a copy of the seed corpus tests/fuzz/corpus/, prints
# execs/s and coverage, and exits non-zero on a crash (a trace difference,
# a sanitizer report or a protocol violation: see the artifact it names).
#
#   bash scripts/fuzz.sh [SECONDS]     default 90
#
# Environment:
#   FUZZ_BUILD_DIR=dir   build directory (default: build-fuzz)
#   FUZZ_WORK_DIR=dir    corpus copy + crash artifacts (default: $FUZZ_BUILD_DIR/run)
#   FUZZ_JOBS=n          parallel fuzzing processes (default 1)
#   FUZZ_EXTRA_CORPUS=d  also start from the inputs in directory d
#   FUZZ_KEEP_GOING=1    do not stop at the first crash, timeout or OOM (fork
#                        mode with FUZZ_JOBS processes, -ignore_crashes): every
#                        artifact is kept and listed with the second it came
#   FUZZ_TIMEOUT=s       libFuzzer -timeout per input (default 10)
#   FUZZ_MAX_C_STACK_KB=n  C stack a callback may find in use (default 512,
#                        0: unchecked; tests/fuzz/engine_run.c)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages (scripts/deps.sh)
# A crash input can be replayed with: $FUZZ_BUILD_DIR/tests/fuzz/fuzz_engine FILE
# (or FUTOIN_CORPUS_DIR=dir build/tests/test_model_replay for a directory).
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-90}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
WORK_DIR=${FUZZ_WORK_DIR:-$BUILD_DIR/run}
JOBS=${FUZZ_JOBS:-1}
KEEP_GOING=${FUZZ_KEEP_GOING:-0}
TIMEOUT=${FUZZ_TIMEOUT:-10}

. scripts/deps.sh

install_deps() {
    # libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for clang.
    futoin_need clang libclang-rt-14-dev llvm cmake make pkg-config
}

install_deps
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DFUTOIN_FUZZ=ON -DFUTOIN_WERROR=ON \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF \
    -DFUTOIN_WITH_UV=OFF >/dev/null
cmake --build "$BUILD_DIR" --target fuzz_engine -j"$(nproc)"

FUZZER="$BUILD_DIR/tests/fuzz/fuzz_engine"
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR/corpus" "$WORK_DIR/artifacts"
cp tests/fuzz/corpus/* "$WORK_DIR/corpus/"
if [ -n "${FUZZ_EXTRA_CORPUS:-}" ] && [ -d "$FUZZ_EXTRA_CORPUS" ]; then
    cp "$FUZZ_EXTRA_CORPUS"/* "$WORK_DIR/corpus/" 2>/dev/null || true
fi
LOG="$WORK_DIR/fuzz.log"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "==> fuzzing for ${SECONDS_TO_RUN}s ($JOBS job(s)), log: $LOG"
START=$(date +%s)
set +e
if [ "$JOBS" -gt 1 ] || [ "$KEEP_GOING" = 1 ]; then
    keep=()
    if [ "$KEEP_GOING" = 1 ]; then
        keep=(-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    fi
    "$FUZZER" -max_total_time="$SECONDS_TO_RUN" -fork="$JOBS" "${keep[@]}" -print_final_stats=1 \
        -max_len=512 -timeout="$TIMEOUT" -rss_limit_mb=2048 \
        -artifact_prefix="$WORK_DIR/artifacts/" "$WORK_DIR/corpus" >"$LOG" 2>&1
else
    "$FUZZER" -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 \
        -max_len=512 -timeout="$TIMEOUT" -rss_limit_mb=2048 \
        -artifact_prefix="$WORK_DIR/artifacts/" "$WORK_DIR/corpus" >"$LOG" 2>&1
fi
rc=$?
set -e

# The last status line carries cov (edges), ft (features), corpus and exec/s.
last=$(grep -E '^#[0-9]+.*(cov|exec/s)' "$LOG" | tail -n 1 || true)
# (fork mode prints no stat:: lines)
execs=$(grep -E '^stat::number_of_executed_units' "$LOG" | tail -n 1 | awk '{print $2}' || true)
rate=$(grep -E '^stat::average_exec_per_sec' "$LOG" | tail -n 1 | awk '{print $2}' || true)
echo "last status: ${last:-n/a}"
echo "executions:  ${execs:-n/a}   average exec/s: ${rate:-n/a}"
echo "corpus now:  $(ls "$WORK_DIR/corpus" | wc -l) files in $WORK_DIR/corpus"
artifacts=("$WORK_DIR"/artifacts/*)
if [ $rc -ne 0 ] || [ -e "${artifacts[0]}" ]; then
    echo "==> FUZZER FOUND A PROBLEM (exit $rc); artifacts (seconds after the start):"
    for a in "${artifacts[@]}"; do
        [ -e "$a" ] && echo "  $(( $(stat -c %Y "$a") - START ))s  $(stat -c %s "$a") bytes  $a"
    done
    grep -E 'MISMATCH|protocol violation|ERROR: |SUMMARY' "$LOG" | head -n 20 || true
    tail -n 60 "$LOG"
    exit 1
fi
echo "==> no crash"
