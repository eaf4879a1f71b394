#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Command line of the HTTP server example (examples/uv/http_server).
#
#   tests/uv/http_args.sh PATH/TO/http_server [EMULATOR...]
#
# EMULATOR (CMAKE_CROSSCOMPILING_EMULATOR of a cross build) runs the server.
#
# Numbers are parsed strictly: a port outside 0..65535 (e.g. 4294967377,
# which a (unsigned) cast used to turn into port 81), signs, blanks, hex,
# suffixes, empty values and out-of-range options are usage errors: exit
# status 2 and a usage message, nothing listens. Each bad case runs under
# `timeout`, so a server that starts anyway fails the test instead of
# hanging it. Valid bounds start the server, which stops on SIGINT with 0.
# The limits are scaled by tests/time_scale.sh.
set -u
# shellcheck source=tests/time_scale.sh
. "$(dirname "$0")/../time_scale.sh"

SERVER=${1:?usage: http_args.sh PATH/TO/http_server [EMULATOR...]}
shift
EMU=("$@")
WORK=$(mktemp -d)
SPID=
cleanup() {
    if [ -n "$SPID" ]; then kill -KILL "$SPID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0

# expect_usage ARGS...: the server must exit 2 and print a usage message.
expect_usage() {
    timeout "$(futoin_scale_s 5)" "${EMU[@]}" "$SERVER" "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ "$rc" -ne 2 ] || ! grep -q "usage:" "$WORK/err"; then
        echo "FAIL: http_server $(printf "'%s' " "$@"): exit $rc (expected 2 with a usage message)"
        sed 's/^/    /' "$WORK/out" "$WORK/err"
        FAILS=$((FAILS + 1))
    else
        echo "ok: $(printf "'%s' " "$@") -> usage error: $(head -n 1 "$WORK/err")"
    fi
}

# The port.
expect_usage 4294967377
expect_usage 4294967296
expect_usage 18446744073709551697
expect_usage 65536
expect_usage 70000
expect_usage -- -1
expect_usage +80
expect_usage " 80"
expect_usage "80 "
expect_usage 80x
expect_usage 0x50
expect_usage ""
expect_usage 0 0

# The other numeric options.
for opt in -t -c -q -r -p -b; do
    expect_usage "$opt" 4294967296 0
    expect_usage "$opt" 4294967297 0
    expect_usage "$opt" -1 0
    expect_usage "$opt" 12abc 0
    expect_usage "$opt" "" 0
    expect_usage "$opt" " 5" 0
done
expect_usage -t 0 0

# start_ok ARGS...: the server must start (port 0: any free port), report
# the port and stop with 0 on SIGINT.
start_ok() {
    : >"$WORK/log"
    "${EMU[@]}" "$SERVER" "$@" >>"$WORK/log" 2>&1 &
    SPID=$!
    local port=
    for _ in $(seq 1 "$(futoin_scale_ms 100)"); do
        port=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$WORK/log")
        if [ -n "$port" ] || ! kill -0 "$SPID" 2>/dev/null; then
            break
        fi
        sleep 0.05
    done
    kill -INT "$SPID" 2>/dev/null
    local rc=0
    wait "$SPID" || rc=$?
    SPID=
    if [ -z "$port" ] || [ "$port" -eq 0 ] || [ "$rc" -ne 0 ]; then
        echo "FAIL: http_server $(printf "'%s' " "$@"): port '$port', exit $rc"
        sed 's/^/    /' "$WORK/log"
        FAILS=$((FAILS + 1))
    else
        echo "ok: $(printf "'%s' " "$@") -> listened on $port, exit 0"
    fi
}

start_ok 0
start_ok -t 4294967295 -c 4294967295 -q 0 -r 4294967295 -p 1 -b 0 00

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS case(s) failed"
    exit 1
fi
echo "all cases passed"
