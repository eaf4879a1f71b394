#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Main demonstration: installs the missing build tools (Debian, as root),
# builds the library and its examples once, in build-demo/ (tests off: a
# build/ of your own is left alone), and runs every example program; then
# starts the AsyncSteps HTTP/1.1 server on 127.0.0.1 (scripts/serve.sh) in
# the foreground: try it with curl, stop it with Ctrl-C.
#
#   bash scripts/demo.sh [PORT]
#
# Environment:
#   BUILD_DIR=dir        build directory (default: build-demo)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages (scripts/deps.sh)
#   DEMO_NO_SERVER=1     stop after the examples
#
# Each example whose spec output is in examples/expected/NAME.txt is checked
# against it; the script exits non-zero if any example fails or differs.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-demo}

. scripts/deps.sh
# build-essential: gcc and make; libuv1-dev and curl: the HTTP server at the
# end (without libuv the examples still build and run).
# The server needs the libuv backend: asked for (ON), configure stops with
# what is missing; without the server it is built when libuv is there.
if [ "${DEMO_NO_SERVER:-0}" = 1 ]; then
    futoin_need build-essential cmake pkg-config
    WITH_UV=AUTO
else
    futoin_need build-essential cmake pkg-config libuv1-dev curl
    WITH_UV=ON
fi

echo "==> Configuring and building in $BUILD_DIR/"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFUTOIN_WITH_UV=$WITH_UV \
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
    # Some examples end with an unhandled error on purpose and say so on
    # stderr; examples/expected/NAME.stderr holds what they must print.
    if [ -f "examples/expected/$name.stderr" ]; then
        if cmp -s "$err" "examples/expected/$name.stderr"; then
            echo "-- stderr as expected: $(tr '\n' ' ' <"$err")"
        else
            echo "!! stderr differs from examples/expected/$name.stderr:"
            diff -u "examples/expected/$name.stderr" "$err" || true
            failed+=("$name")
        fi
    elif [ -s "$err" ]; then
        echo "!! unexpected output on stderr:"
        cat "$err"
        failed+=("$name")
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
    # The server was built above with the examples: serve.sh only runs it.
    BUILD_DIR="$BUILD_DIR" FUTOIN_SERVE_PREBUILT=1 FUTOIN_SKIP_DEPS=1 exec bash scripts/serve.sh "$@"
fi
