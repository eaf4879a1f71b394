#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Main demonstration of the libuv backend: installs the missing dependencies
# (Debian, as root or with sudo), builds the AsyncSteps HTTP/1.1 server and runs it in
# the foreground on 127.0.0.1 (Ctrl-C shuts it down gracefully).
#
#   bash scripts/serve.sh [PORT] [server options]
#
# Server options (see examples/uv/http_server.c):
#   -t ms      read timeout per request (default 5000)
#   -c N       Limiter: concurrent requests (256)   -q N  queued for a slot (1024)
#   -r N       Limiter: requests per period (100000) -p ms period (1000)
#   -b N       Limiter: queued for the rate (1024)   -L    no Limiter
#
# Environment:
#   BUILD_DIR=dir        build directory (default: build-demo, shared with scripts/demo.sh)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages (scripts/deps.sh)
#   FUTOIN_SERVE_PREBUILT=1  the server is built already (scripts/demo.sh): no cmake
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-demo}

PORT=8080
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
    PORT=$1
    shift
fi

. scripts/deps.sh
# build-essential: gcc and make; curl: to try the server.
futoin_need build-essential cmake pkg-config libuv1-dev curl

if [ "${FUTOIN_SERVE_PREBUILT:-0}" != 1 ]; then
    # The same configuration as scripts/demo.sh, in the same directory: after
    # the demonstration this is a no-op. The server needs the libuv backend:
    # asked for, configure says what is missing.
    echo "==> Building the server in $BUILD_DIR/"
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFUTOIN_WITH_UV=ON \
        -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_BUILD_EXAMPLES=ON >/dev/null
    cmake --build "$BUILD_DIR" -j"$(nproc 2>/dev/null || echo 2)" --target example_uv_http_server
fi
SERVER="$BUILD_DIR/examples/uv/http_server"
if [ ! -x "$SERVER" ]; then
    echo "serve.sh: $SERVER was not built (is libuv1-dev installed? pkg-config libuv)" >&2
    exit 1
fi

cat <<EOF

==> Starting the AsyncSteps HTTP server on http://127.0.0.1:$PORT/
    Try it from another terminal:
      curl -i http://127.0.0.1:$PORT/              # Hello from AsyncSteps
      curl -s http://127.0.0.1:$PORT/ http://127.0.0.1:$PORT/   # two requests, one keep-alive connection
      curl -s http://127.0.0.1:$PORT/stats         # counters: requests, 503s, timeouts, ...
      curl -i http://127.0.0.1:$PORT/nope          # 404
      wrk -t1 -c64 -d3s http://127.0.0.1:$PORT/    # load (apt-get install wrk)
    Over the Limiter's limits requests get 503; try: bash $0 $PORT -r 5 -b 0
    A silent connection is closed after the read timeout: nc 127.0.0.1 $PORT
    Ctrl-C (SIGINT) cancels every connection's flow, frees everything and exits 0.

EOF
exec "$SERVER" "$@" "$PORT"
