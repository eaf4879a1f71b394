#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTPS against plain HTTP: the example server (examples/uv/http_server)
# once with --tls-cert/--tls-key and once without, in the same run, on
# loopback, with wrk, one loop thread each, no Limiter. Two workloads:
#   keep-alive   wrk's connections stay open: the cost of the records
#                (AES-GCM, TLS 1.3) and of the memory BIOs;
#   close        "Connection: close" on every request: one handshake
#                (ECDHE P-256 or X25519, an ECDSA P-256 certificate) per
#                request, the cost of connection set-up.
# Prints requests/s of each side and the HTTPS/HTTP ratio per workload.
#
#   bash bench/uv/https_bench.sh
#
# Environment:
#   BUILD_DIR=dir     Release build directory (default: build-uv-bench);
#                     configured and built when needed
#   DURATION=3s       wrk duration of each measured run
#   CONNECTIONS=64    wrk connections; THREADS=2 wrk threads
#   ROUNDS=3          measured rounds, HTTPS and HTTP back to back
#                     (alternating which goes first); medians of the
#                     per-round ratios
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD_DIR=${BUILD_DIR:-build-uv-bench}
DURATION=${DURATION:-3s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}

for tool in wrk openssl; do
    command -v "$tool" >/dev/null || { echo "https_bench: $tool is not installed" >&2; exit 2; }
done

if [ ! -x "$BUILD_DIR/examples/uv/http_server" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFUTOIN_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target example_uv_http_server >/dev/null
SERVER="$BUILD_DIR/examples/uv/http_server"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$WORK/srv.key" -out "$WORK/srv.pem" -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1

# start NAME SCHEME ARGS...: starts a server; its port goes to $WORK/NAME.port.
start() {
    local name=$1 scheme=$2
    shift 2
    "$SERVER" -j 1 -n 0 -L "$@" 0 >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        local port
        port=$(sed -n "s#.*listening on $scheme://127\\.0\\.0\\.1:\\([0-9]*\\)/.*#\\1#p" \
            "$WORK/$name.log" 2>/dev/null || true)
        if [ -n "$port" ]; then
            echo "$port" >"$WORK/$name.port"
            return
        fi
        sleep 0.05
    done
    echo "https_bench: $name did not start" >&2
    cat "$WORK/$name.log" >&2
    exit 1
}

start https https --tls-cert "$WORK/srv.pem" --tls-key "$WORK/srv.key"
start http http

# rps SCHEME PORT WORKLOAD: requests per second of one wrk run.
rps() {
    local hdr=()
    [ "$3" = close ] && hdr=(-H "Connection: close")
    local out
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" "${hdr[@]}" "$1://127.0.0.1:$2/")
    if echo "$out" | grep -q -e "Non-2xx"; then
        echo "https_bench: errors in a run:" >&2
        echo "$out" >&2
        exit 1
    fi
    echo "$out" | awk '/Requests\/sec/ { print $2 }'
}

median() {
    sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

HP=$(cat "$WORK/https.port")
PP=$(cat "$WORK/http.port")
wrk -t"$THREADS" -c"$CONNECTIONS" -d1s "https://127.0.0.1:$HP/" >/dev/null
wrk -t"$THREADS" -c"$CONNECTIONS" -d1s "http://127.0.0.1:$PP/" >/dev/null
for r in $(seq 1 "$ROUNDS"); do
    for w in keep-alive close; do
        if [ $((r % 2)) -eq 1 ]; then
            s=$(rps https "$HP" "$w")
            p=$(rps http "$PP" "$w")
        else
            p=$(rps http "$PP" "$w")
            s=$(rps https "$HP" "$w")
        fi
        echo "$s" >>"$WORK/s_$w"
        echo "$p" >>"$WORK/p_$w"
        awk -v s="$s" -v p="$p" 'BEGIN { printf "%.4f\n", s / p }' >>"$WORK/r_$w"
    done
done

echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $ROUNDS rounds, medians; 1 server loop each;" \
    "$(nproc) CPUs, nothing pinned; $(openssl version | cut -d' ' -f1-2)"
printf '%-12s %12s %12s %14s\n' "workload" "HTTPS r/s" "HTTP r/s" "HTTPS / HTTP"
for w in keep-alive close; do
    printf '%-12s %12.0f %12.0f %13.1f%%\n' "$w" "$(median <"$WORK/s_$w")" \
        "$(median <"$WORK/p_$w")" "$(awk -v r="$(median <"$WORK/r_$w")" 'BEGIN { print 100 * r }')"
    echo "    per-round ratios: $(awk '{ printf "%.1f%% ", 100 * $1 }' "$WORK/r_$w")"
done
