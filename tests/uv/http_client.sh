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
# FUTOIN_TEST_EMULATOR (set by CTest in a cross build: the emulator and
# its options, separated by blanks) runs the canned server, a program of the
# build too.
#
# Times are scaled by tests/time_scale.sh (FUTOIN_TEST_TIME_SCALE, and
# valgrind's factor in a valgrind build).
#
# 1. Parallel requests, all settled: a 200, a large body, a 404, and a
#    request that the server does not answer within the test (the longest
#    sleep it takes): two attempts (the test waits each one out), each a
#    Timeout whose error_info names the read and the server.
# 2. A refused connection: ConnectError "ECONNREFUSED: connect ..." after
#    the configured number of attempts.
# 3. Retry with back-off: while slow requests hold the server's only
#    Limiter slot, a request gets 503, is retried and ends with 200. The
#    slot is held until the server has rejected the client once, however
#    long the client (under valgrind) takes to start.
# 4. Everything answered, a slow answer within its timeout among them:
#    exit status 0. The servers stop with 0 on SIGINT.
# 5. Raw responses, end to end: a chunked body decoded, 1xx skipped, a body
#    up to the close; malformed framing reported as a ProtocolError (not
#    retried); a response cut short is a CommError (retried). Every case of
#    the parser is in tests/uv/test_http_client_parse.c.
set -u
# shellcheck source=tests/time_scale.sh
. "$(dirname "$0")/../time_scale.sh"

USAGE="usage: http_client.sh SERVER CLIENT CANNED_SERVER [WRAPPER...]"
SERVER=${1:?$USAGE}
CLIENT=${2:?$USAGE}
CANNED=${3:?$USAGE}
shift 3
WRAP=("$@")
read -r -a EMU <<<"${FUTOIN_TEST_EMULATOR:-}"
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
    for _ in $(seq 1 "$(futoin_scale_ms 300)"); do
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

# server_stat PORT NAME: a counter of the server's /stats (which the
# Limiter does not count), or nothing if the server did not answer.
server_stat() {
    # shellcheck disable=SC2016 # $1 is the inner shell's
    timeout "$(futoin_scale_s 10)" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET /stats HTTP/1.0\r\nHost: x\r\n\r\n" >&3
        tr -d "\r" <&3' _ "$1" | awk -v k="$2" '$1 == k { print $2 }'
}

# wait_stat PORT NAME MIN: until the counter is at least MIN (or fail).
wait_stat() {
    local v
    for _ in $(seq 1 "$(futoin_scale_ms 300)"); do
        v=$(server_stat "$1" "$2")
        [ -n "$v" ] && [ "$v" -ge "$3" ] && return 0
        sleep 0.1
    done
    fail "server on $1: $2 stayed below $3"
}

# hold_slot PORT: takes the Limiter's slot with /sleep requests on one
# connection, the next one always queued behind the one in the slot, until
# $WORK/release exists; then the last ones end. Every answer must be 200.
hold_slot() {
    local req line len status='' out=2
    printf -v req 'GET /sleep?ms=%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(futoin_scale_ms 100)"
    exec 5<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf '%s%s' "$req" "$req" >&5
    while [ "$out" -gt 0 ]; do
        status='' len=0
        while IFS= read -r line <&5; do
            line=${line%$'\r'}
            [ -z "$line" ] && break
            [ -z "$status" ] && status=$line
            case $line in Content-Length:*) len=${line#*: } ;; esac
        done
        [ "${status#HTTP/1.1 200 }" != "$status" ] || exit 1
        read -r -N "$len" _ <&5 || exit 1
        out=$((out - 1))
        if [ ! -e "$WORK/release" ]; then
            printf '%s' "$req" >&5
            out=$((out + 1))
        fi
    done
    exit 0
}

# A short drain at the end: only the unanswered sleeps of 1. are left then.
start_server main -d 100
URL="http://127.0.0.1:$PORT_main"

echo "== 1. parallel requests, all settled"
# One attempt at a fast answer must fit in the timeout on a slow machine
# (a fresh server under valgrind translates its code on the first requests:
# seconds at a load of 12); the sleep (the server's longest) outlasts every
# attempt, however long the timeout became. Two attempts: the Timeout is
# retried, and the test waits out each attempt of the sleep.
client parallel 1 -t "$(futoin_scale_ms 1000)" -a 2 -b 20 "$URL/" "$URL/sleep?ms=60000" "$URL/bytes?n=100000" "$URL/nope"
expect_line parallel "^1\. $URL/ -> 200 OK, 22 bytes \(1 attempt\)$"
expect_line parallel "^2\. $URL/sleep\?ms=60000 -> Timeout: read 127\.0\.0\.1:$PORT_main \(2 attempts\)$"
expect_line parallel "^3\. $URL/bytes\?n=100000 -> 200 OK, 100000 bytes \(1 attempt\)$"
expect_line parallel "^4\. $URL/nope -> 404 Not Found, 10 bytes \(1 attempt\)$"
expect_line parallel "^all settled: 3 answered, 1 failed$"

echo "== 2. a refused connection"
client refused 1 -a 2 -b 10 "http://127.0.0.1:1/"
expect_line refused "^1\. http://127\.0\.0\.1:1/ -> ConnectError: ECONNREFUSED: connect 127\.0\.0\.1:1 \(2 attempts\)$"

echo "== 3. 503, retried with back-off"
start_server one -c 1 -q 0
ONE="http://127.0.0.1:$PORT_one"
hold_slot "$PORT_one" &
HOLDER=$!
PIDS+=("$HOLDER")
wait_stat "$PORT_one" limiter_active 1
"${WRAP[@]}" "$CLIENT" -a 12 -b "$(futoin_scale_ms 50)" -t "$(futoin_scale_ms 5000)" "$ONE/" \
    >"$WORK/retry.out" 2>&1 &
RETRY=$!
PIDS+=("$RETRY")
# Rejected once: the slot may come free now (the back-off, scaled, spans
# far more than the last two sleeps).
wait_stat "$PORT_one" rejected 1
touch "$WORK/release"
rc=0
wait "$RETRY" || rc=$?
sed 's/^/    /' "$WORK/retry.out"
[ "$rc" -eq 0 ] || fail "client retry: exit $rc, expected 0"
expect_line retry "^1\. $ONE/ -> 200 OK, 22 bytes \(([2-9]|1[0-2]) attempts\)$"
wait "$HOLDER" || fail "the slot's holder got an answer other than 200"
stop_server "$PID_one"

echo "== 4. everything answered"
client all_ok 0 -t "$(futoin_scale_ms 2000)" "$URL/" "$URL/stats" "$URL/bytes?n=0" "$URL/sleep?ms=200"
expect_line all_ok "^4\. $URL/sleep\?ms=200 -> 200 OK, 6 bytes \(1 attempt\)$"
expect_line all_ok "^all settled: 4 answered, 0 failed$"
stop_server "$PID_main"

echo "== 5. raw responses"
: >"$WORK/canned.log"
"${EMU[@]}" "$CANNED" \
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
