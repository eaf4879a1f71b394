#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the client recipe of docs/RECIPES.md promises, checked on the
# example client (examples/uv/http_client) against a server that answers
# slowly or never and counts the requests it holds at once
# (tests/uv/http_slow_server.c):
#
#   tests/uv/http_client_recipe.sh PATH/TO/http_client \
#       PATH/TO/http_slow_server [WRAPPER...]
#
# WRAPPER (e.g. valgrind and its options, from CTest in a valgrind build)
# runs the client; a valgrind error makes it exit 99.
#
# FUTOIN_TEST_EMULATOR (set by CTest in a cross build: the emulator and
# its options, separated by blanks) runs the slow server, a program of the
# build too.
#
# Times are scaled by tests/time_scale.sh (FUTOIN_TEST_TIME_SCALE, and
# valgrind's factor in a valgrind build); only lower bounds of durations
# are checked, so a loaded machine slows the test down but does not fail it.
#
# 1. The bound: 6 slow URLs with -c 2 are held by the server 2 at a time,
#    never more, and take at least 3 answer delays; -c 1: one at a time,
#    at least one delay each; the default, 4. The URLs of the first wave
#    are held long, the later ones briefly (the bound is reached, or
#    broken, by the first wave already).
# 2. Retry with back-off on a refused connection: -a 3 makes 3 attempts,
#    the second at least -b after the first, the third at least 2 * -b
#    after the second; the failure line names ECONNREFUSED.
# 3. A name that does not resolve (EAI_NONAME) is not retried (skipped,
#    not failed, where the machine's resolver does not answer).
# 4. The per-attempt timeout against a server that never answers: a
#    Timeout naming the read, no earlier than -t, retried; the connection
#    of the first attempt is closed before the second one starts (the
#    server never holds two).
# 5. All settled: with -c 1, a URL that fails first neither cancels nor
#    stops the others; the exit status is 1.
set -u
# shellcheck source=tests/time_scale.sh
. "$(dirname "$0")/../time_scale.sh"

USAGE="usage: http_client_recipe.sh CLIENT SLOW_SERVER [WRAPPER...]"
CLIENT=${1:?$USAGE}
SLOW=${2:?$USAGE}
shift 2
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
    for f in "$WORK"/*.log "$WORK"/*.out "$WORK"/*.err; do
        [ -f "$f" ] && { echo "--- $f:"; tail -n 30 "$f"; }
    done
    exit 1
}

# client NAME EXPECTED_RC ARGS...: stdout in $WORK/NAME.out, stderr (-v) in
# $WORK/NAME.err, the wall time in ms in $ELAPSED.
client() {
    local name=$1 want=$2
    shift 2
    local rc=0 t0 t1
    t0=$(date +%s%N)
    "${WRAP[@]}" "$CLIENT" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
    t1=$(date +%s%N)
    ELAPSED=$(((t1 - t0) / 1000000))
    sed 's/^/    /' "$WORK/$name.out" "$WORK/$name.err"
    [ "$rc" -eq "$want" ] || fail "client $name: exit $rc, expected $want"
}

expect_line() {
    local name=$1 pattern=$2
    grep -Eq -- "$pattern" "$WORK/$name.out" || fail "client $name: no line matching '$pattern'"
}

expect_err() {
    local name=$1 pattern=$2
    grep -Eq -- "$pattern" "$WORK/$name.err" || fail "client $name: no stderr line matching '$pattern'"
}

# at_least WHAT VALUE MIN
at_least() {
    [ "$2" -ge "$3" ] || fail "$1: $2 ms, expected at least $3 ms"
    echo "    $1: $2 ms (at least $3)"
}

# attempt_ms NAME N: the client's time (-v) at which attempt N started.
attempt_ms() {
    sed -n "s/^http_client: \([0-9]*\) ms: .*: attempt $2\$/\1/p" "$WORK/$1.err" | head -n 1
}

# server_max: "max M held H" from the slow server (and a new count).
server_max() {
    # shellcheck disable=SC2016 # $1 is the inner shell's
    timeout "$(futoin_scale_s 10)" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET /max HTTP/1.1\r\nHost: x\r\n\r\n" >&3
        tr -d "\r" <&3 | tail -n 1' _ "$PORT"
}

# reset_max: waits until the server holds nothing (the closes of an
# earlier run may still be on their way), which starts a new count.
reset_max() {
    local m
    for _ in $(seq 1 "$(futoin_scale_ms 100)"); do
        m=$(server_max)
        [ "${m#* held }" = 0 ] && return 0
        sleep 0.1
    done
    fail "the server still holds requests: $m"
}

# expect_max K: the greatest number held at once since reset_max was K.
expect_max() {
    local m
    m=$(server_max)
    echo "    server: $m"
    [ "${m%% held *}" = "max $1" ] || fail "the server held '$m', expected max $1"
}

: >"$WORK/server.log"
"${EMU[@]}" "$SLOW" >"$WORK/server.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
PORT=
for _ in $(seq 1 100); do
    PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/server.log")
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || fail "the slow server did not start"
S="http://127.0.0.1:$PORT"

# The answer delay of the first wave: long enough for the requests of one
# wave to reach the server before the first of them is answered, also
# under valgrind (the client may have started one more by then if it
# breaks the bound). The later URLs wait d: they only add to the time.
D=$(futoin_scale_ms 300)
d=$(futoin_scale_ms 50)
# One attempt of a slow URL fits in its timeout on a loaded machine.
T=$(futoin_scale_ms 10000)

echo "== 1. at most N requests at once"
reset_max
client c2 0 -c 2 -t "$T" "$S/wait/$D" "$S/wait/$D" "$S/wait/$d" "$S/wait/$d" "$S/wait/$d" "$S/wait/$d"
expect_line c2 "^6\. $S/wait/$d -> 200 OK, 2 bytes \(1 attempt\)$"
expect_line c2 "^all settled: 6 answered, 0 failed$"
expect_max 2
at_least "-c 2, 6 URLs" "$ELAPSED" $((D + 2 * d))

reset_max
client c1 0 -c 1 -t "$T" "$S/wait/$D" "$S/wait/$d" "$S/wait/$d"
expect_line c1 "^all settled: 3 answered, 0 failed$"
expect_max 1
at_least "-c 1, 3 URLs" "$ELAPSED" $((D + 2 * d))

reset_max
client c_default 0 -t "$T" "$S/wait/$D" "$S/wait/$D" "$S/wait/$D" "$S/wait/$D" "$S/wait/$d"
expect_line c_default "^all settled: 5 answered, 0 failed$"
expect_max 4
at_least "default -c, 5 URLs" "$ELAPSED" $((D + d))

echo "== 2. a refused connection, retried with back-off"
B=$(futoin_scale_ms 100)
client refused 1 -v -a 3 -b "$B" "http://127.0.0.1:1/"
expect_line refused "^1\. http://127\.0\.0\.1:1/ -> ConnectError: ECONNREFUSED: connect 127\.0\.0\.1:1 \(3 attempts\)$"
expect_err refused "attempt 1 failed: ConnectError ECONNREFUSED, retry in $B ms$"
expect_err refused "attempt 2 failed: ConnectError ECONNREFUSED, retry in $((2 * B)) ms$"
expect_err refused "attempt 3 failed: ConnectError ECONNREFUSED, no attempts left$"
a1=$(attempt_ms refused 1)
a2=$(attempt_ms refused 2)
a3=$(attempt_ms refused 3)
if [ -z "$a1" ] || [ -z "$a2" ] || [ -z "$a3" ]; then
    fail "refused: an attempt is missing"
fi
# libuv's timers count from the loop's cached time, which may lag behind the
# clock the client prints by a little: 10 % of slack.
at_least "back-off before attempt 2" $((a2 - a1)) $((B * 9 / 10))
at_least "back-off before attempt 3" $((a3 - a2)) $((2 * B * 9 / 10))
[ -z "$(attempt_ms refused 4)" ] || fail "refused: a fourth attempt"

echo "== 3. a name that does not resolve is not retried"
client noname 1 -v -a 3 -b 10 -t "$(futoin_scale_ms 3000)" "http://nonexistent.invalid/"
if grep -Eq "attempt 1 failed: ConnectError EAI_(NONAME|NODATA), not retried$" "$WORK/noname.err"; then
    expect_line noname "^1\. http://nonexistent\.invalid/ -> ConnectError: EAI_(NONAME|NODATA): .* \(1 attempt\)$"
    [ -z "$(attempt_ms noname 2)" ] || fail "noname: retried"
else
    # No resolver that answers (EAI_AGAIN, a Timeout): not a verdict.
    echo "    skipped: the resolver gave no answer about nonexistent.invalid"
fi

echo "== 4. a server that never answers: the per-attempt timeout"
reset_max
TO=$(futoin_scale_ms 300)
client never 1 -v -a 2 -b "$B" -t "$TO" "$S/never"
expect_line never "^1\. $S/never -> Timeout: read 127\.0\.0\.1:$PORT \(2 attempts\)$"
expect_err never "attempt 1 failed: Timeout, retry in $B ms$"
expect_err never "attempt 2 failed: Timeout, no attempts left$"
f1=$(sed -n 's/^http_client: \([0-9]*\) ms: .*: attempt 1 failed: .*/\1/p' "$WORK/never.err")
a1=$(attempt_ms never 1)
a2=$(attempt_ms never 2)
if [ -z "$f1" ] || [ -z "$a1" ] || [ -z "$a2" ]; then
    fail "never: an attempt or its failure is missing"
fi
at_least "attempt 1 until its Timeout" $((f1 - a1)) $((TO * 9 / 10))
at_least "attempt 2 after attempt 1" $((a2 - a1)) $(((TO + B) * 9 / 10))
expect_max 1 # attempt 1's connection was closed before attempt 2

echo "== 5. all settled: a failure first, the others still run"
client settled 1 -c 1 -a 1 "http://127.0.0.1:1/" "$S/wait/10" "$S/nope" "$S/wait/10"
expect_line settled "^1\. http://127\.0\.0\.1:1/ -> ConnectError: ECONNREFUSED: connect 127\.0\.0\.1:1 \(1 attempt\)$"
expect_line settled "^2\. $S/wait/10 -> 200 OK, 2 bytes \(1 attempt\)$"
expect_line settled "^3\. $S/nope -> 404 Not Found, 0 bytes \(1 attempt\)$"
expect_line settled "^4\. $S/wait/10 -> 200 OK, 2 bytes \(1 attempt\)$"
expect_line settled "^all settled: 3 answered, 1 failed$"
kill "$SERVER"
wait "$SERVER" 2>/dev/null
echo "PASS"
