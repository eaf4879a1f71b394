#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP benchmark: the AsyncSteps server (examples/uv/http_server) against the
# same handler written as plain libuv callbacks (bench/uv/uv_plain_server),
# in the same run, on loopback, with wrk. Prints requests/s, p99 latency and
# the AsyncSteps/plain ratio (target: >= 90% of the plain requests/s).
#
#   bash bench/uv/http_bench.sh
#
# Environment:
#   BUILD_DIR=dir     Release build directory (default: build-uv-bench);
#                     configured and built when needed
#   DURATION=3s       wrk duration of each measured run
#   CONNECTIONS=64    wrk connections; THREADS=1 wrk threads
#   ROUNDS=5          measured runs per server (interleaved A/B/A/B...,
#                     so that machine noise hits both sides alike)
#   PIN=1             pin every server to CPU 0 and wrk to CPU 1 (taskset;
#                     default when there are 2+ CPUs); PIN=0 to let them float
#
# Two pairs are measured: with the admission limiter (the AsyncSteps server's
# Limiter with limits too high to reject anything vs. the plain server's
# equivalent counter check) and without it (-L on both). Reported: median
# requests/s and p99 of each side, and the median of the per-round ratios
# (each AsyncSteps run divided by the plain run right after it).
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD_DIR=${BUILD_DIR:-build-uv-bench}
DURATION=${DURATION:-3s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-5}
PIN=${PIN:-auto}
SERVER_CPU=()
WRK_CPU=()
if [ "$PIN" != 0 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    SERVER_CPU=(taskset -c 0)
    WRK_CPU=(taskset -c 1)
fi

command -v wrk >/dev/null || { echo "http_bench: wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }

if [ ! -x "$BUILD_DIR/examples/uv/http_server" ] || [ ! -x "$BUILD_DIR/bench/uv/uv_plain_server" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFUTOIN_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target example_uv_http_server uv_plain_server >/dev/null

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME VAR CMD...: starts a server, sets VAR to the port it reports.
start() {
    local name=$1 var=$2
    shift 2
    "${SERVER_CPU[@]}" "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        local port
        # The log may not exist yet: the child creates it.
        port=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/$name.log" 2>/dev/null || true)
        if [ -n "$port" ]; then
            printf -v "$var" '%s' "$port"
            return
        fi
        sleep 0.05
    done
    echo "http_bench: $name did not start" >&2
    exit 1
}

# wrk_once PORT: prints "rps p99_us"
wrk_once() {
    local out
    out=$("${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$1/")
    if echo "$out" | grep -q -e "Socket errors" -e "Non-2xx"; then
        echo "http_bench: errors in a run:" >&2
        echo "$out" >&2
        exit 1
    fi
    local rps p99
    rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
    p99=$(echo "$out" | awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        f = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : 0; printf "%.0f", v * f }')
    echo "$rps $p99"
}

median() {
    sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# pair LABEL ASYNC_PORT PLAIN_PORT
pair() {
    local label=$1 ap=$2 pp=$3
    "${WRK_CPU[@]}" wrk -t1 -c"$CONNECTIONS" -d1s "http://127.0.0.1:$ap/" >/dev/null
    "${WRK_CPU[@]}" wrk -t1 -c"$CONNECTIONS" -d1s "http://127.0.0.1:$pp/" >/dev/null
    : >"$WORK/a" && : >"$WORK/p" && : >"$WORK/r"
    for _ in $(seq 1 "$ROUNDS"); do
        local a p
        a=$(wrk_once "$ap")
        p=$(wrk_once "$pp")
        echo "$a" >>"$WORK/a"
        echo "$p" >>"$WORK/p"
        awk -v a="${a%% *}" -v p="${p%% *}" 'BEGIN { printf "%.1f\n", 100 * a / p }' >>"$WORK/r"
    done
    local a_rps a_p99 p_rps p_p99
    a_rps=$(cut -d' ' -f1 "$WORK/a" | median)
    a_p99=$(cut -d' ' -f2 "$WORK/a" | median)
    p_rps=$(cut -d' ' -f1 "$WORK/p" | median)
    p_p99=$(cut -d' ' -f2 "$WORK/p" | median)
    local ratio
    ratio=$(median <"$WORK/r")
    echo "  per-round ratios (%): $(tr '\n' ' ' <"$WORK/r")" >&2
    printf '%-16s %14s %12s %14s %12s %9s%%  %s\n' "$label" "$a_rps" "$a_p99" "$p_rps" "$p_p99" "$ratio" \
        "$(awk -v r="$ratio" 'BEGIN { print (r >= 90) ? "PASS" : "below target" }')"
    echo "$ratio" >>"$WORK/ratios"
}

HIGH=100000000
start async_lim A_LIM "$BUILD_DIR/examples/uv/http_server" -c "$HIGH" -q 0 -r "$HIGH" -p 1000 -b 0 0
start plain_lim P_LIM "$BUILD_DIR/bench/uv/uv_plain_server" -c "$HIGH" -r "$HIGH" -p 1000 0
start async_nolim A_NOL "$BUILD_DIR/examples/uv/http_server" -L 0
start plain_nolim P_NOL "$BUILD_DIR/bench/uv/uv_plain_server" -L 0

echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $ROUNDS interleaved runs each, medians; $(nproc) CPUs${SERVER_CPU:+, servers on CPU 0, wrk on CPU 1}"
printf '%-16s %14s %12s %14s %12s %10s\n' "" "AsyncSteps r/s" "p99 (us)" "plain r/s" "p99 (us)" "ratio"
pair "with limiter" "$A_LIM" "$P_LIM"
pair "without limiter" "$A_NOL" "$P_NOL"
