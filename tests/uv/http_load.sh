#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Load and lifecycle test of the AsyncSteps HTTP server (examples/uv/http_server).
#
#   tests/uv/http_load.sh PATH/TO/http_server [--sanitized] [EMULATOR...]
#
# EMULATOR (CMAKE_CROSSCOMPILING_EMULATOR of a cross build, e.g. qemu-user)
# runs the server; there is no valgrind run then (5.).
#
# 1. curl: responses are well-formed (status line, CRLF headers, Content-Length
#    matches the body, keep-alive reuse, HEAD, 404/405/400, HTTP/1.0 close,
#    pipelined requests).
# 2. wrk, twice, 3 s each: no socket errors, every non-2xx is a Limiter 503,
#    the server counts no errors; server RSS after run 2 stays within a
#    tolerance of RSS after run 1 (no growth per request).
# 3. A half-open connection (sends nothing) and a slow client (dribbles a
#    header line every 300 ms) hit the 1 s idle and read timeouts: the server
#    closes them (the slow one with 408) and their flows are freed (/stats:
#    timeouts +2, active 1).
# 4. SIGINT with connections open (idle keep-alive, half-sent request): the
#    server exits 0.
# 5. When valgrind is installed (and the build is not sanitized): the same
#    lifecycle under valgrind memcheck, which must report no error or leak.
#
# Times are scaled by tests/time_scale.sh (FUTOIN_TEST_TIME_SCALE; the
# valgrind run of 5. adds valgrind's factor itself).
#
# Exit 77 (CTest SKIP_RETURN_CODE) when curl or wrk is missing.
set -u
# shellcheck source=tests/time_scale.sh
. "$(dirname "$0")/../time_scale.sh"

SERVER=${1:?usage: http_load.sh PATH/TO/http_server [--sanitized] [EMULATOR...]}
shift
SANITIZED=0
if [ "${1:-}" = --sanitized ]; then
    SANITIZED=1
    shift
fi
EMU=("$@")
for tool in curl wrk; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool is not installed (apt-get install -y curl wrk)"
        exit 77
    fi
done

WORK=$(mktemp -d)
SPID=
SLOW=
cleanup() {
    if [ -n "$SLOW" ]; then kill "$SLOW" 2>/dev/null; fi
    if [ -n "$SPID" ]; then kill -KILL "$SPID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    if [ -f "$WORK/server.log" ]; then
        echo "--- server log:"
        tail -n 40 "$WORK/server.log"
    fi
    exit 1
}

# start_server CMD...: starts it in the background (SPID) and waits for
# the "listening on http://127.0.0.1:PORT/" line (PORT).
start_server() {
    PORT=
    # Emptied here, not by the redirection below: that happens in the child,
    # maybe after the first look for the port (which would find the
    # previous server's line).
    : >"$WORK/server.log"
    "$@" >>"$WORK/server.log" 2>&1 &
    SPID=$!
    for _ in $(seq 1 "$(futoin_scale_ms 300)"); do
        PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/server.log")
        if [ -n "$PORT" ]; then
            URL="http://127.0.0.1:$PORT"
            return 0
        fi
        kill -0 "$SPID" 2>/dev/null || fail "server exited at start"
        sleep 0.1
    done
    fail "server did not start"
}

# stop_server: SIGINT, and the exit status must be 0.
stop_server() {
    kill -INT "$SPID"
    local rc=0
    wait "$SPID" || rc=$?
    SPID=
    if [ $rc -ne 0 ]; then
        fail "server exited with status $rc after SIGINT"
    fi
    grep -q "stopped:" "$WORK/server.log" || fail "server did not report a clean stop"
}

stats() {
    curl -s --max-time "$(futoin_scale_s 10)" "$URL/stats" >"$WORK/stats" || fail "GET /stats failed"
}
stat_of() {
    awk -v k="$1" '$1 == k { print $2 }' "$WORK/stats"
}
rss_kb() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$SPID/status"
}

# Checks one response saved by curl -D headers -o body: status code, CRLF
# header lines, Content-Length equal to the body length.
check_response() {
    local headers=$1 body=$2 code=$3 head_only=${4:-0}
    local status
    status=$(head -n 1 "$headers")
    case "$status" in
    "HTTP/1.1 $code "*$'\r') ;;
    *) fail "status line '$status' is not 'HTTP/1.1 $code ...' ending in CRLF" ;;
    esac
    if grep -v $'\r$' "$headers" | grep -q .; then
        fail "a header line does not end in CRLF"
    fi
    local clen
    clen=$(tr -d '\r' <"$headers" | awk -F': ' 'tolower($1) == "content-length" { print $2 }')
    [ -n "$clen" ] || fail "no Content-Length"
    local blen
    blen=$(wc -c <"$body")
    if [ "$head_only" = 1 ]; then
        [ "$blen" -eq 0 ] || fail "HEAD response has a body"
    elif [ "$clen" -ne "$blen" ]; then
        fail "Content-Length $clen but body of $blen bytes"
    fi
}

# wrk_run N: one bounded run; checks errors, prints a summary.
wrk_run() {
    local n=$1 out="$WORK/wrk$1.txt"
    stats
    local rej0 req0 err0 cerr0
    rej0=$(stat_of rejected)
    req0=$(stat_of requests)
    err0=$(stat_of errors)
    cerr0=$(stat_of client_errors)
    # A response slower than --timeout counts as a socket error.
    wrk -t1 -c32 -d3s --timeout "$WRK_TIMEOUT" "$URL/" >"$out" 2>&1 || fail "wrk failed: $(cat "$out")"
    sleep "$(futoin_scale_s 0.3)"
    stats
    local requests non2xx rej req
    requests=$(awk '/requests in/ { print $1 }' "$out")
    non2xx=$(awk -F': *' '/Non-2xx/ { print $2 }' "$out")
    non2xx=${non2xx:-0}
    rej=$(( $(stat_of rejected) - rej0 ))
    req=$(( $(stat_of requests) - req0 ))
    if grep -q "Socket errors" "$out"; then
        fail "wrk run $n: $(grep 'Socket errors' "$out")"
    fi
    [ -n "$requests" ] && [ "$requests" -gt 0 ] || fail "wrk run $n made no requests"
    [ "$non2xx" -le "$rej" ] || fail "wrk run $n: $non2xx non-2xx responses but only $rej Limiter rejections"
    [ "$req" -ge "$requests" ] || fail "wrk run $n: server counted $req requests, wrk $requests"
    [ "$(stat_of errors)" = "$err0" ] || fail "server counted errors: $(cat "$WORK/stats")"
    [ "$(stat_of client_errors)" = "$cerr0" ] || fail "server counted client errors: $(cat "$WORK/stats")"
    echo "wrk run $n: $requests requests ($(awk '/Requests\/sec/ { print $2 }' "$out") req/s), $non2xx rejected with 503 by the Limiter"
}

# ---------------------------------------------------------------------------
# Safety limits of curl and timeout(1); wrk's takes whole seconds.
T5=$(futoin_scale_s 5)
WRK_TIMEOUT=$(( ($(futoin_scale_ms 2000) + 999) / 1000 ))s
# The idle and read timeouts must fire in 3. and nowhere else.
TIMEOUT_MS=$(futoin_scale_ms 1000)

echo "== 1. curl: well-formed responses"
start_server "${EMU[@]}" "$SERVER" -j 1 -i "$TIMEOUT_MS" -t "$TIMEOUT_MS" -c 64 -q 64 -r 50000 -p 1000 -b 100 0
echo "server on port $PORT"

curl -s --max-time "$T5" -D "$WORK/h" -o "$WORK/b" "$URL/" || fail "GET / failed"
check_response "$WORK/h" "$WORK/b" 200
[ "$(cat "$WORK/b")" = "Hello from AsyncSteps" ] || fail "unexpected body: $(cat "$WORK/b")"
grep -qi $'^Connection: keep-alive\r$' "$WORK/h" || fail "no keep-alive on HTTP/1.1"

curl -s --max-time "$T5" -I -D "$WORK/h" -o /dev/null "$URL/" || fail "HEAD / failed"
: >"$WORK/b"
check_response "$WORK/h" "$WORK/b" 200 1

curl -s --max-time "$T5" -D "$WORK/h" -o "$WORK/b" "$URL/nope" || fail "GET /nope failed"
check_response "$WORK/h" "$WORK/b" 404

curl -s --max-time "$T5" -D "$WORK/h" -o "$WORK/b" -X PUT --data 'a=1&b=2' "$URL/" || fail "PUT failed"
check_response "$WORK/h" "$WORK/b" 405
grep -qi $'^Allow: GET, HEAD, POST\r$' "$WORK/h" || fail "405 without Allow"

curl -s --max-time "$T5" -D "$WORK/h" -o "$WORK/b" -X POST --data 'a=1&b=2' "$URL/" || fail "POST failed"
check_response "$WORK/h" "$WORK/b" 200
[ "$(cat "$WORK/b")" = "received 7 bytes" ] || fail "unexpected POST body: $(cat "$WORK/b")"

curl -s --max-time "$T5" --http1.0 -D "$WORK/h" -o "$WORK/b" "$URL/" || fail "HTTP/1.0 GET failed"
check_response "$WORK/h" "$WORK/b" 200
grep -qi $'^Connection: close\r$' "$WORK/h" || fail "HTTP/1.0 without keep-alive must close"

conns=$(curl -s --max-time "$T5" -o /dev/null -o /dev/null -w '%{num_connects} ' "$URL/" "$URL/")
[ "$conns" = "1 0 " ] || fail "keep-alive not reused (connects per request: $conns)"

# Pipelined requests in one packet, then a malformed one: 200, 200 (HEAD,
# so no body may follow its headers), 404, 400 and close.
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\ngarbage\r\n\r\n' >&3
timeout "$T5" cat <&3 >"$WORK/pipe" || fail "pipelined connection not closed after the bad request"
exec 3<&-
codes=$(grep -a '^HTTP/1.1' "$WORK/pipe" | cut -d' ' -f2 | tr '\n' ' ')
[ "$codes" = "200 200 404 400 " ] || fail "pipelined responses: '$codes'"
[ "$(grep -ac 'Hello from AsyncSteps' "$WORK/pipe")" = 1 ] || fail "HEAD response carried a body"

# A head over 16 KiB: 431 and close.
big=$(head -c 20000 /dev/zero | tr '\0' 'a')
code=$(curl -s --max-time "$T5" -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$URL/")
[ "$code" = 431 ] || fail "oversized head: status $code, expected 431"
echo "curl checks passed"

# ---------------------------------------------------------------------------
echo "== 2. wrk: two bounded runs"
wrk_run 1
rss1=$(rss_kb)
wrk_run 2
rss2=$(rss_kb)
echo "server RSS after run 1: ${rss1} kB, after run 2: ${rss2} kB"
if [ "$SANITIZED" = 0 ]; then
    # Flat: run 2 must not add more than 10% + 2 MB (allocator noise).
    limit=$(( rss1 + rss1 / 10 + 2048 ))
    [ "$rss2" -le "$limit" ] || fail "RSS grew from $rss1 kB to $rss2 kB (limit $limit kB)"
else
    echo "(sanitized build: RSS check informational only)"
fi

# ---------------------------------------------------------------------------
echo "== 3. slow and half-open clients hit the read timeout"
stats
to0=$(stat_of timeouts)
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
exec 4<>"/dev/tcp/127.0.0.1/$PORT"
# Dribbles for three times the timeout.
(
    printf 'GET / HTTP/1.1\r\n'
    for i in 1 2 3 4 5 6 7 8 9 10; do
        printf 'X-Slow-%d: x\r\n' "$i"
        sleep "$(futoin_scale_s 0.3)"
    done
) >&4 2>/dev/null &
SLOW=$!
# Both connected (with this one for /stats), seen before their timeouts.
for _ in $(seq 1 "$(futoin_scale_ms 20)"); do
    stats
    [ "$(stat_of active)" -ge 3 ] && break
    sleep 0.05
done
[ "$(stat_of active)" -ge 3 ] || fail "slow clients not connected: $(cat "$WORK/stats")"
# Both time out; polled, with a limit well past the timeout.
for _ in $(seq 1 "$(futoin_scale_ms 50)"); do
    stats
    [ $(( $(stat_of timeouts) - to0 )) -ge 2 ] && break
    sleep 0.1
done
to=$(( $(stat_of timeouts) - to0 ))
[ "$to" -eq 2 ] || fail "expected 2 read timeouts, got $to: $(cat "$WORK/stats")"
# The slow one got 408 and lingers (up to 1 s) while the client dribbles on.
for _ in $(seq 1 "$(futoin_scale_ms 30)"); do
    stats
    [ "$(stat_of active)" = 1 ] && break
    sleep 0.1
done
[ "$(stat_of active)" = 1 ] || fail "timed-out flows not freed: $(cat "$WORK/stats")"
# The server closed both: reads see end of file at once.
timeout "$(futoin_scale_s 2)" cat <&3 >/dev/null || fail "half-open connection not closed by the server"
timeout "$(futoin_scale_s 2)" cat <&4 >/dev/null || fail "slow connection not closed by the server"
exec 3<&- 4<&-
kill "$SLOW" 2>/dev/null
wait "$SLOW" 2>/dev/null
SLOW=
echo "both timed out and were freed"

# ---------------------------------------------------------------------------
echo "== 4. SIGINT with connections open"
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' >&3
exec 4<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: ' >&4
sleep "$(futoin_scale_s 0.2)"
stop_server
exec 3<&- 4<&-
echo "clean exit: $(grep 'stopped:' "$WORK/server.log")"

# ---------------------------------------------------------------------------
if [ "$SANITIZED" = 1 ]; then
    echo "== 5. valgrind: skipped (sanitized build; ASan/LSan checked the exit instead)"
elif [ ${#EMU[@]} -gt 0 ]; then
    echo "== 5. valgrind: skipped (the server is a cross build, run by ${EMU[0]})"
elif ! command -v valgrind >/dev/null 2>&1; then
    echo "== 5. valgrind: skipped (not installed)"
else
    echo "== 5. valgrind memcheck: requests, a timeout, 503s and SIGINT"
    # This run is under valgrind whatever the build: its factor too.
    vg_ms() { FUTOIN_TEST_VALGRIND=1 futoin_scale_ms "$1"; }
    vg_s() { FUTOIN_TEST_VALGRIND=1 futoin_scale_s "$1"; }
    # The idle and read timeouts: long enough for the requests below, short
    # because the idle connection below waits one out.
    VG_TIMEOUT_MS=$(vg_ms 300)
    # A Limiter period longer than the run: its 21st request is rejected
    # however slowly valgrind serves them.
    FUTOIN_TEST_VALGRIND=1 start_server valgrind --quiet --error-exitcode=99 --leak-check=full \
        --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        "$SERVER" -j 1 -i "$VG_TIMEOUT_MS" -t "$VG_TIMEOUT_MS" -c 4 -q 0 -r 20 -p 3600000 -b 0 0
    curl -s --max-time "$(vg_s 20)" -D "$WORK/h" -o "$WORK/b" "$URL/" || fail "GET / under valgrind failed"
    check_response "$WORK/h" "$WORK/b" 200
    curl -s --max-time "$(vg_s 20)" "$URL/nope" "$URL/stats" --http1.0 "$URL/" >/dev/null || fail "curl under valgrind failed"
    # More than 20 requests in a period: the Limiter answers 503.
    urls=()
    for _ in $(seq 1 40); do urls+=(-o /dev/null "$URL/"); done
    curl -s --max-time "$(vg_s 60)" -o /dev/null -w '%{http_code}\n' "${urls[@]}" >"$WORK/codes"
    grep -q 503 "$WORK/codes" || fail "no 503 from the Limiter under valgrind"
    grep -qv '^\(200\|503\)$' "$WORK/codes" && fail "unexpected status under valgrind: $(sort "$WORK/codes" | uniq -c)"
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    timeout "$(vg_s 5)" cat <&3 >/dev/null || fail "idle connection not timed out under valgrind"
    exec 3<&-
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' >&3
    exec 4<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTT' >&4
    # Time for the server to take both in before the SIGINT (were it not
    # done, the exit would still have to be clean).
    sleep "$(vg_s 0.1)"
    stop_server
    exec 3<&- 4<&-
    echo "valgrind: no errors, no leaks"
fi

echo "PASS"
