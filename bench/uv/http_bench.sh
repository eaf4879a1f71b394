#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTP benchmark: the AsyncSteps server (examples/uv/http_server) against the
# same handler written as plain libuv callbacks (bench/uv/uv_plain_server),
# in the same run, on loopback, with wrk, at 1 and 2 loop threads (each
# thread its own libuv loop and listener, the port shared with
# SO_REUSEPORT). Prints requests/s and p99 latency of each side, the
# AsyncSteps/plain ratio at each thread count (target: >= 95 %) and the
# 2-vs-1 speedup of each side with their ratio (target: >= 90 % of plain's).
#
#   bash bench/uv/http_bench.sh
#
# Environment:
#   BUILD_DIR=dir     Release build directory (default: build-uv-bench);
#                     configured and built when needed
#   DURATION=3s       wrk duration of each measured run
#   CONNECTIONS=64    wrk connections; THREADS=2 wrk threads
#   ROUNDS=5          measured rounds; each round runs every configuration
#                     once, AsyncSteps and plain back to back (alternating
#                     which goes first), so that machine noise hits both
#                     sides alike; figures are medians of per-round ratios
#   LIMITER=both      with | without | both: the AsyncSteps server's Limiter
#                     with limits too high to reject anything vs. the plain
#                     server's equivalent counter check, or neither (-L)
#
# Nothing is pinned: the servers' threads and wrk share the machine's cores
# (with 2 cores, wrk takes a share of both, so 2 threads cannot reach 2x:
# compare the speedups, not an absolute 2x).
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD_DIR=${BUILD_DIR:-build-uv-bench}
DURATION=${DURATION:-3s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-5}
LIMITER=${LIMITER:-both}

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

# start NAME CMD...: starts a server; its port goes to $WORK/NAME.port.
start() {
    local name=$1
    shift
    "$@" >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        local port
        port=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/$name.log" 2>/dev/null || true)
        if [ -n "$port" ]; then
            echo "$port" >"$WORK/$name.port"
            return
        fi
        sleep 0.05
    done
    echo "http_bench: $name did not start" >&2
    cat "$WORK/$name.log" >&2
    exit 1
}

# wrk_once PORT: prints "rps p99_us"
wrk_once() {
    local out
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$1/")
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

HIGH=100000000
CONFIGS=()
if [ "$LIMITER" != without ]; then
    for n in 1 2; do
        start "a_lim$n" "$BUILD_DIR/examples/uv/http_server" -j "$n" -n 0 -c "$HIGH" -q 0 -r "$HIGH" -p 1000 -b 0 0
        start "p_lim$n" "$BUILD_DIR/bench/uv/uv_plain_server" -j "$n" -c "$HIGH" -r "$HIGH" -p 1000 0
    done
    CONFIGS+=(lim1 lim2)
fi
if [ "$LIMITER" != with ]; then
    for n in 1 2; do
        start "a_nol$n" "$BUILD_DIR/examples/uv/http_server" -j "$n" -n 0 -L 0
        start "p_nol$n" "$BUILD_DIR/bench/uv/uv_plain_server" -j "$n" -L 0
    done
    CONFIGS+=(nol1 nol2)
fi

# Warm-up: one short run each.
for c in "${CONFIGS[@]}"; do
    for side in a p; do
        wrk -t"$THREADS" -c"$CONNECTIONS" -d1s "http://127.0.0.1:$(cat "$WORK/${side}_$c.port")/" >/dev/null
    done
done

for r in $(seq 1 "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
        order="a p"
        [ $((r % 2)) -eq 0 ] && order="p a"
        for side in $order; do
            wrk_once "$(cat "$WORK/${side}_$c.port")" >>"$WORK/${side}_$c.runs"
        done
        a=$(tail -n 1 "$WORK/a_$c.runs" | cut -d' ' -f1)
        p=$(tail -n 1 "$WORK/p_$c.runs" | cut -d' ' -f1)
        awk -v a="$a" -v p="$p" 'BEGIN { printf "%.4f\n", a / p }' >>"$WORK/ratio_$c"
    done
    for l in lim nol; do
        [ -f "$WORK/a_${l}2.runs" ] || continue
        a1=$(tail -n 1 "$WORK/a_${l}1.runs" | cut -d' ' -f1)
        a2=$(tail -n 1 "$WORK/a_${l}2.runs" | cut -d' ' -f1)
        p1=$(tail -n 1 "$WORK/p_${l}1.runs" | cut -d' ' -f1)
        p2=$(tail -n 1 "$WORK/p_${l}2.runs" | cut -d' ' -f1)
        awk -v a1="$a1" -v a2="$a2" -v p1="$p1" -v p2="$p2" \
            'BEGIN { printf "%.4f %.4f %.4f\n", a2 / a1, p2 / p1, (a2 / a1) / (p2 / p1) }' >>"$WORK/speedup_$l"
    done
done

label() {
    case "$1" in
    lim1) echo "1 loop, limiter" ;;
    lim2) echo "2 loops, limiter" ;;
    nol1) echo "1 loop, no limiter" ;;
    nol2) echo "2 loops, no limiter" ;;
    esac
}

echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $ROUNDS rounds, medians; $(nproc) CPUs, nothing pinned"
printf '%-20s %14s %10s %14s %10s %9s  %s\n' "" "AsyncSteps r/s" "p99 (us)" "plain r/s" "p99 (us)" "ratio" "(target >= 95 %)"
for c in "${CONFIGS[@]}"; do
    a_rps=$(cut -d' ' -f1 "$WORK/a_$c.runs" | median)
    a_p99=$(cut -d' ' -f2 "$WORK/a_$c.runs" | median)
    p_rps=$(cut -d' ' -f1 "$WORK/p_$c.runs" | median)
    p_p99=$(cut -d' ' -f2 "$WORK/p_$c.runs" | median)
    ratio=$(median <"$WORK/ratio_$c")
    printf '%-20s %14.0f %10s %14.0f %10s %8.1f%%  %s\n' "$(label "$c")" "$a_rps" "$a_p99" "$p_rps" "$p_p99" \
        "$(awk -v r="$ratio" 'BEGIN { print 100 * r }')" \
        "$(awk -v r="$ratio" 'BEGIN { print (r >= 0.95) ? "PASS" : "below target" }')"
    echo "    per-round ratios: $(awk '{ printf "%.1f%% ", 100 * $1 }' "$WORK/ratio_$c")"
done
printf '%-20s %14s %14s %9s  %s\n' "2 vs 1 loops" "AsyncSteps" "plain" "ratio" "(target >= 90 %)"
for l in lim nol; do
    [ -f "$WORK/speedup_$l" ] || continue
    as=$(cut -d' ' -f1 "$WORK/speedup_$l" | median)
    ps=$(cut -d' ' -f2 "$WORK/speedup_$l" | median)
    sr=$(cut -d' ' -f3 "$WORK/speedup_$l" | median)
    name="limiter"
    [ "$l" = nol ] && name="no limiter"
    printf '%-20s %13.2fx %13.2fx %8.1f%%  %s\n' "$name" "$as" "$ps" "$(awk -v r="$sr" 'BEGIN { print 100 * r }')" \
        "$(awk -v r="$sr" 'BEGIN { print (r >= 0.90) ? "PASS" : "below target" }')"
    echo "    per-round speedup ratios: $(awk '{ printf "%.1f%% ", 100 * $3 }' "$WORK/speedup_$l")"
done
