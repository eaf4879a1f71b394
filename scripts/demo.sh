#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Main demonstration: installs the build tools (Debian, as root), builds the
# library and its examples in build/ and runs every example program; then
# starts the AsyncSteps HTTP/1.1 server on 127.0.0.1 (scripts/serve.sh) in
# the foreground: try it with curl, stop it with Ctrl-C.
#
#   bash scripts/demo.sh [PORT]
#
# Environment:
#   BUILD_DIR=dir        build directory (default: build)
#   FUTOIN_SKIP_DEPS=1   do not run apt-get (tools already installed)
#   DEMO_NO_SERVER=1     stop after the examples
#
# Each example whose spec output is in examples/expected/NAME.txt is checked
# against it; the script exits non-zero if any example fails or differs.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

install_deps() {
    if [ "${FUTOIN_SKIP_DEPS:-0}" = 1 ]; then
        return
    fi
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "demo.sh: not root and no sudo: skipping apt-get (set FUTOIN_SKIP_DEPS=1 to silence)" >&2
            return
        fi
    fi
    if ! command -v apt-get >/dev/null; then
        echo "demo.sh: no apt-get: install a C/C++ compiler, make and cmake yourself" >&2
        return
    fi
    echo "==> Installing build tools (apt-get)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    # The project declares C and C++ (tests/abi_cxx.cpp): build-essential
    # brings gcc, g++ and make. cmocka is only needed for the tests.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential cmake
}

install_deps

echo "==> Configuring and building in $BUILD_DIR/"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_BUILD_EXAMPLES=ON
cmake --build "$BUILD_DIR" -j2

failed=()
for src in examples/*.c; do
    name=$(basename "$src" .c)
    prog="$BUILD_DIR/examples/$name"
    expected="examples/expected/$name.txt"
    echo
    echo "=================================================================="
    echo "== $name  ($src)"
    echo "=================================================================="
    out=$(mktemp)
    err=$(mktemp)
    status=0
    "$prog" >"$out" 2>"$err" || status=$?
    cat "$out"
    if [ -s "$err" ]; then
        echo "-- stderr:"
        cat "$err"
    fi
    if [ $status -ne 0 ]; then
        echo "!! $name exited with status $status"
        failed+=("$name")
    elif [ -f "$expected" ]; then
        if cmp -s "$out" "$expected"; then
            echo "-- output matches $expected"
        else
            echo "!! output differs from $expected:"
            diff -u "$expected" "$out" || true
            failed+=("$name")
        fi
    fi
    rm -f "$out" "$err"
done

echo
if [ ${#failed[@]} -eq 0 ]; then
    echo "==> All examples ran and matched their expected output."
else
    echo "==> FAILED examples: ${failed[*]}"
    exit 1
fi

if [ "${DEMO_NO_SERVER:-0}" != 1 ]; then
    exec bash scripts/serve.sh "$@"
fi
