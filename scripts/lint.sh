#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# clang-tidy over the library: every source of src/ (the core and the libuv
# backend) and the project's headers they include, with the checks of
# .clang-tidy, every finding an error; then the sources with code of their
# own for the tracing build once more, as that build compiles them
# (FUTOIN_TRACING=1). Configures (no build) a clang, Debug build directory
# for its compile_commands.json; JOBS clang-tidy processes at a time. Exit 1
# when any file has a finding.
#
#   bash scripts/lint.sh              every library source
#   bash scripts/lint.sh FILE...      only these (sources of src/)
#
# A false positive is silenced where it is, with its reason:
#   /* NOLINTNEXTLINE(check-name): why */  on the line before, or
#   /* NOLINT(check-name): why */          at the end of the line.
#
# Environment:
#   LINT_BUILD_DIR=dir   the build directory (default: build-lint)
#   JOBS=n               clang-tidy processes at a time (default: 2)
#   CLANG_TIDY=path      the clang-tidy to use (default: clang-tidy)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages (scripts/deps.sh)
set -euo pipefail

# FILE arguments are relative to where we were called from.
args=()
for f in "$@"; do
    args+=("$(realpath -m -- "$f")")
done
cd "$(dirname "$0")/.."
ROOT_DIR=$(pwd)
BUILD=${LINT_BUILD_DIR:-build-lint}
JOBS=${JOBS:-2}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}

. "$ROOT_DIR/scripts/deps.sh"
# clang: the compile commands are clang's; libuv1-dev, libssl-dev: the backend
# and its TLS streams are linted too.
futoin_need clang clang-tidy cmake pkg-config libuv1-dev libssl-dev

if ! command -v "$CLANG_TIDY" >/dev/null; then
    echo "lint: $CLANG_TIDY not found: install clang-tidy (Debian: apt-get install clang-tidy)" >&2
    exit 1
fi

start=$(date +%s)
rm -rf "$BUILD"
mkdir -p "$BUILD"
# Debug: assert() stays in, and tells the analyzer what holds.
cmake -S "$ROOT_DIR" -B "$BUILD" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DFUTOIN_WITH_UV=ON \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF \
    -DFUTOIN_INSTALL=OFF >"$BUILD/configure.log" 2>&1 || {
    cat "$BUILD/configure.log" >&2
    echo "lint: cmake configure failed" >&2
    exit 1
}
DB="$BUILD/compile_commands.json"

# The library's translation units, as CMake configured them.
mapfile -t all < <(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$DB" |
    grep -F -- "$ROOT_DIR/src/" | LC_ALL=C sort -u)
if ! printf '%s\n' "${all[@]}" | grep -qF -- "$ROOT_DIR/src/uv/"; then
    echo "lint: the libuv backend was not configured (is libuv1-dev installed?)" \
        "and would not be linted" >&2
    exit 1
fi
if [ ${#args[@]} -gt 0 ]; then
    files=()
    for f in "${args[@]}"; do
        if ! printf '%s\n' "${all[@]}" | grep -qxF -- "$f"; then
            echo "lint: $f is not a library source in $DB" >&2
            exit 2
        fi
        files+=("$f")
    done
else
    files=("${all[@]}")
fi
# The tracing build's own code: `#if FUTOIN_TRACING` in the file.
mapfile -t traced < <(grep -l 'FUTOIN_TRACING' "${files[@]}" || true)

# One log per file, shown once all are done, so that parallel runs do not
# interleave their output.
LOGS="$BUILD/tidy"
mkdir -p "$LOGS"
export CLANG_TIDY BUILD LOGS
# lint_one FILE [tracing]
lint_one() {
    local log extra=()
    log="$LOGS/${2:+$2-}$(printf '%s' "$1" | tr '/' '_').log"
    if [ -n "${2:-}" ]; then
        extra=(--extra-arg=-DFUTOIN_TRACING=1)
    fi
    if "$CLANG_TIDY" -p "$BUILD" --quiet --warnings-as-errors='*' "${extra[@]}" "$1" \
            >"$log" 2>&1; then
        rm -f "$log"
    fi
    return 0
}
export -f lint_one
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$JOBS" bash -c 'lint_one "$1"' lint_one
if [ ${#traced[@]} -gt 0 ]; then
    printf '%s\0' "${traced[@]}" | xargs -0 -n 1 -P "$JOBS" bash -c 'lint_one "$1" tracing' lint_one
fi

bad=0
for log in "$LOGS"/*.log; do
    [ -e "$log" ] || continue
    bad=$((bad + 1))
    # Less clang's "N warnings generated." tallies, which count what the
    # checks filtered out as well.
    grep -Ev '^[0-9]+ (warning|error)s? (and [0-9]+ (warning|error)s? )?generated\.$' "$log" || true
done
elapsed=$(( $(date +%s) - start ))
if [ "$bad" -gt 0 ]; then
    echo "lint: findings in $bad of $((${#files[@]} + ${#traced[@]})) runs (${elapsed} s);" \
        "logs in $LOGS" >&2
    exit 1
fi
echo "lint: ${#files[@]} files (${#traced[@]} of them once more as the tracing build)," \
    "no findings (${elapsed} s)"
