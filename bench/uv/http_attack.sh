#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The example HTTP server under attack: for each attack, a fresh
# server with its default options (one loop per core) is attacked by
# bench/uv/http_attack while a well-behaved client (wrk, 4 connections, 2 s
# timeout) measures what it still gets; then the server gets SIGINT in the
# middle of the attack and must exit 0 within its drain deadline.
#
#   bash bench/uv/http_attack.sh [ATTACK...]
#
# Attacks (connections): none, pipeline (260), bigbody (1000), slowloris
# (5000), idle (16000), fds (idle connections beyond the server's
# descriptor limit: ulimit -n 1024 for the server, 2000 connections),
# header (100 never-ending header lines), garbage (100), reset (100).
# Printed per attack: the good client's requests/s (and as a share of the
# same run's "none" row, when it ran first), its p99 latency, its errors (timeouts, socket
# errors) and non-2xx answers, the server's peak RSS (VmHWM), and the
# SIGINT exit status and time.
#
# Environment:
#   BUILD_DIR=dir   Release build directory (default: build-uv-bench);
#                   configured and built when needed. An ASan build there
#                   makes the SIGINT exits leak checks too.
#   DURATION=5      seconds of good-client measurement per attack
#   SERVER_ARGS=... extra server options (e.g. "-j 1")
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD_DIR=${BUILD_DIR:-build-uv-bench}
DURATION=${DURATION:-5}
SERVER_ARGS=${SERVER_ARGS:-}
ATTACKS=("$@")
if [ ${#ATTACKS[@]} -eq 0 ]; then
    ATTACKS=(none pipeline bigbody slowloris idle fds header garbage reset)
fi
command -v wrk >/dev/null || { echo "http_attack: wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }

if [ ! -x "$BUILD_DIR/examples/uv/http_server" ] || [ ! -x "$BUILD_DIR/bench/uv/uv_http_attack" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFUTOIN_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target example_uv_http_server uv_http_attack >/dev/null
SERVER="$BUILD_DIR/examples/uv/http_server"
ATTACK="$BUILD_DIR/bench/uv/uv_http_attack"

WORK=$(mktemp -d)
SPID=
APID=
cleanup() {
    [ -n "$APID" ] && kill "$APID" 2>/dev/null || true
    [ -n "$SPID" ] && kill -KILL "$SPID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# start_server [NOFILE]: a fresh server on a free port (PORT, SPID).
start_server() {
    local nofile=${1:-}
    : >"$WORK/server.log"
    if [ -n "$nofile" ]; then
        (ulimit -n "$nofile" && exec "$SERVER" $SERVER_ARGS 0) >>"$WORK/server.log" 2>&1 &
    else
        "$SERVER" $SERVER_ARGS 0 >>"$WORK/server.log" 2>&1 &
    fi
    SPID=$!
    PORT=
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/server.log")
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    echo "http_attack: the server did not start" >&2
    cat "$WORK/server.log" >&2
    exit 1
}

hwm_mb() {
    awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$SPID/status"
}

BASE=
printf '%-10s %6s %10s %8s %9s %7s %8s %10s %s\n' attack conns "good r/s" "of none" "p99" errors "non-2xx" "peak RSS" "SIGINT"
run_attack() {
    local name=$1 mode=$1 conns=0 nofile=
    case "$name" in
    none) conns=0 ;;
    pipeline) conns=260 ;;
    bigbody) conns=1000 ;;
    slowloris) conns=5000 ;;
    idle) conns=16000 ;;
    fds) mode=idle conns=2000 nofile=1024 ;;
    header | garbage | reset) conns=100 ;;
    *) echo "http_attack: unknown attack $name" >&2; exit 2 ;;
    esac
    start_server $nofile
    APID=
    if [ "$conns" -gt 0 ]; then
        "$ATTACK" "$mode" "$conns" $((DURATION + 30)) "$PORT" >"$WORK/attack.log" 2>&1 &
        APID=$!
        sleep 2
    fi
    wrk -t1 -c4 -d"${DURATION}s" --timeout 2s --latency "http://127.0.0.1:$PORT/" >"$WORK/wrk.txt" 2>&1 || true
    local rps errors non2xx
    rps=$(awk '/Requests\/sec/ { printf "%.0f", $2 }' "$WORK/wrk.txt")
    errors=$(awk -F'[ ,]+' '/Socket errors/ { print $5 + $7 + $9 + $11 }' "$WORK/wrk.txt")
    non2xx=$(awk -F': *' '/Non-2xx/ { print $2 }' "$WORK/wrk.txt")
    local p99
    p99=$(awk '$1 == "99%" { print $2 }' "$WORK/wrk.txt")
    local hwm
    hwm=$(hwm_mb)
    # SIGINT in the middle of the attack.
    local t0 t1 rc=0
    t0=$(date +%s.%N)
    kill -INT "$SPID"
    wait "$SPID" || rc=$?
    t1=$(date +%s.%N)
    SPID=
    if [ -n "$APID" ]; then
        kill "$APID" 2>/dev/null || true
        wait "$APID" 2>/dev/null || true
        APID=
    fi
    if [ "$name" = none ]; then
        BASE=${rps:-0}
    fi
    local share="-"
    if [ -n "$BASE" ] && [ "$BASE" -gt 0 ]; then
        share=$(awk -v r="${rps:-0}" -v b="$BASE" 'BEGIN { printf "%.1f%%", 100 * r / b }')
    fi
    printf '%-10s %6s %10s %8s %9s %7s %8s %7s MB exit %d after %.1f s\n' "$name" "$conns" "${rps:-0}" \
        "$share" "${p99:--}" "${errors:-0}" "${non2xx:-0}" "$hwm" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
    if [ "$rc" -ne 0 ]; then
        echo "--- server log:"
        tail -n 20 "$WORK/server.log"
    fi
}

for a in "${ATTACKS[@]}"; do
    run_attack "$a"
done
