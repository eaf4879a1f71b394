#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The HTTP client example (examples/uv/http_client) against the example
# server (examples/uv/http_server), and against fixed responses of a test
# server (tests/uv/http_canned_server.c):
#
#   tests/uv/http_client.sh PATH/TO/http_server PATH/TO/http_client \
#       PATH/TO/http_canned_server [WRAPPER...]
#
# WRAPPER (e.g. valgrind and its options, from CTest in a valgrind build)
# runs both programs; a valgrind error makes a program exit 99.
#
# 1. Parallel requests, all settled: a 200, a large body, a 404, and a
#    request whose handler outlasts the per-attempt timeout: three attempts,
#    each a Timeout whose error_info names the read and the server.
# 2. A refused connection: ConnectError "ECONNREFUSED: connect ..." after
#    the configured number of attempts.
# 3. Retry with back-off: while a slow request holds the server's only
#    Limiter slot, a request gets 503, is retried and ends with 200.
# 4. Everything answered: exit status 0. The servers stop with 0 on SIGINT.
# 5. Raw responses, end to end: a chunked body decoded, 1xx skipped, a body
#    up to the close; malformed framing reported as a ProtocolError (not
#    retried); a response cut short is a CommError (retried). Every case of
#    the parser is in tests/uv/test_http_client_parse.c.
set -u

USAGE="usage: http_client.sh SERVER CLIENT CANNED_SERVER [WRAPPER...]"
SERVER=${1:?$USAGE}
CLIENT=${2:?$USAGE}
CANNED=${3:?$USAGE}
shift 3
WRAP=("$@")
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.log "$WORK"/*.out; do
        [ -f "$f" ] && { echo "--- $f:"; tail -n 30 "$f"; }
    done
    exit 1
}

# start_server NAME ARGS...: sets PORT_<NAME> and PID_<NAME>.
start_server() {
    local name=$1
    shift
    : >"$WORK/$name.log"
    "${WRAP[@]}" "$SERVER" -j 1 "$@" 0 >>"$WORK/$name.log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    printf -v "PID_$name" '%s' "$pid"
    for _ in $(seq 1 300); do
        local port
        port=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/$name.log")
        if [ -n "$port" ]; then
            printf -v "PORT_$name" '%s' "$port"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || fail "server $name exited at start"
        sleep 0.1
    done
    fail "server $name did not start"
}

stop_server() {
    local pid=$1
    kill -INT "$pid"
    local rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || fail "server exited with $rc after SIGINT"
}

# client NAME EXPECTED_RC ARGS...: output in $WORK/NAME.out
client() {
    local name=$1 want=$2
    shift 2
    local rc=0
    "${WRAP[@]}" "$CLIENT" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
    [ "$rc" -eq "$want" ] || fail "client $name: exit $rc, expected $want"
    sed 's/^/    /' "$WORK/$name.out"
}

expect_line() {
    local name=$1 pattern=$2
    grep -Eq -- "$pattern" "$WORK/$name.out" || fail "client $name: no line matching '$pattern'"
}

start_server main
URL="http://127.0.0.1:$PORT_main"

echo "== 1. parallel requests, all settled"
# The attempt timeout is long enough for a first request under valgrind on a
# loaded machine; the sleep outlasts all three attempts and their back-off.
client parallel 1 -t 2000 -b 20 "$URL/" "$URL/sleep?ms=10000" "$URL/bytes?n=100000" "$URL/nope"
expect_line parallel "^1\. $URL/ -> 200 OK, 22 bytes \(1 attempt\)$"
expect_line parallel "^2\. $URL/sleep\?ms=10000 -> Timeout: read 127\.0\.0\.1:$PORT_main \(3 attempts\)$"
expect_line parallel "^3\. $URL/bytes\?n=100000 -> 200 OK, 100000 bytes \(1 attempt\)$"
expect_line parallel "^4\. $URL/nope -> 404 Not Found, 10 bytes \(1 attempt\)$"
expect_line parallel "^all settled: 3 answered, 1 failed$"

echo "== 2. a refused connection"
client refused 1 -a 2 -b 10 "http://127.0.0.1:1/"
expect_line refused "^1\. http://127\.0\.0\.1:1/ -> ConnectError: ECONNREFUSED: connect 127\.0\.0\.1:1 \(2 attempts\)$"

echo "== 3. 503, retried with back-off"
start_server one -c 1 -q 0
ONE="http://127.0.0.1:$PORT_one"
"${WRAP[@]}" "$CLIENT" -t 10000 "$ONE/sleep?ms=1000" >"$WORK/holder.out" 2>&1 &
HOLDER=$!
PIDS+=("$HOLDER")
sleep 0.5
client retry 0 -a 12 -b 50 -t 5000 "$ONE/"
expect_line retry "^1\. $ONE/ -> 200 OK, 22 bytes \(([2-9]|1[0-2]) attempts\)$"
wait "$HOLDER" || fail "the holding client failed"
expect_line holder "^1\. $ONE/sleep\?ms=1000 -> 200 OK, 6 bytes \(1 attempt\)$"
stop_server "$PID_one"

echo "== 4. everything answered"
client all_ok 0 "$URL/" "$URL/stats" "$URL/bytes?n=0"
expect_line all_ok "^all settled: 3 answered, 0 failed$"
stop_server "$PID_main"

echo "== 5. raw responses"
: >"$WORK/canned.log"
"$CANNED" \
    $'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' \
    $'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nhello world, not chunked\r\n' \
    $'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok' \
    $'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 2\r\n\r\nhello' \
    $'HTTP/1.1 200 OK\r\nContent-Length: 2abc\r\n\r\nhello' \
    $'HTTP/1.1 99999999999 OK\r\nContent-Length: 0\r\n\r\n' \
    $'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n' \
    $'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n' \
    $'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc' \
    $'HTTP/1.1 200 OK\r\n\r\nto the end' \
    >>"$WORK/canned.log" 2>&1 &
PID_canned=$!
PIDS+=("$PID_canned")
for _ in $(seq 1 100); do
    PORT_canned=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/canned.log")
    [ -n "$PORT_canned" ] && break
    sleep 0.1
done
[ -n "$PORT_canned" ] || fail "the canned server did not start"
C="http://127.0.0.1:$PORT_canned"
client raw 1 -t 30000 -a 2 -b 10 "$C/1" "$C/2" "$C/3" "$C/4" "$C/5" "$C/6" "$C/7" "$C/8" "$C/9" "$C/10"
expect_line raw "^1\. $C/1 -> 200 OK, 5 bytes \(1 attempt\)$"
expect_line raw "^2\. $C/2 -> ProtocolError: malformed chunk-size line \(1 attempt\)$"
expect_line raw "^3\. $C/3 -> 200 OK, 2 bytes \(1 attempt\)$"
expect_line raw "^4\. $C/4 -> ProtocolError: conflicting Content-Length values \(1 attempt\)$"
expect_line raw "^5\. $C/5 -> ProtocolError: invalid Content-Length \(1 attempt\)$"
expect_line raw "^6\. $C/6 -> ProtocolError: status code is not 3 digits in 100\.\.599 followed by a space \(1 attempt\)$"
expect_line raw "^7\. $C/7 -> ProtocolError: 101 Switching Protocols: no upgrade was asked for \(1 attempt\)$"
expect_line raw "^8\. $C/8 -> ProtocolError: chunk data not followed by CRLF \(1 attempt\)$"
expect_line raw "^9\. $C/9 -> CommError: EOF: connection closed after 3 of 10 body bytes \(2 attempts\)$"
expect_line raw "^10\. $C/10 -> 200 OK, 10 bytes \(1 attempt\)$"
expect_line raw "^all settled: 3 answered, 7 failed$"
kill "$PID_canned"
wait "$PID_canned" 2>/dev/null
echo "PASS"
