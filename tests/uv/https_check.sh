#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# HTTPS end to end: the example server (examples/uv/http_server) with
# --tls-cert/--tls-key, checked by other TLS implementations' clients and
# by the example client (examples/uv/http_client) with https:// URLs:
#
#   tests/uv/https_check.sh PATH/TO/http_server PATH/TO/http_client [WRAPPER...]
#
# WRAPPER (e.g. valgrind and its options, from CTest in a valgrind build)
# runs both programs; a valgrind error makes a program exit 99. Exits 77
# (skipped) without the openssl and curl programs.
#
# A test CA, a server certificate for localhost and 127.0.0.1 and a CA
# that signed nothing are made with the openssl program in a temporary
# directory. Then:
# 1. curl --cacert: a page, and two over one kept-alive connection;
#    without the CA, curl refuses the server (exit 60).
# 2. openssl s_client: the chain verifies (TLS 1.3, and TLS 1.2 forced),
#    and a request gets its answer.
# 3. The example client: https:// URLs verified against -k CA (a name and
#    an IP address), exit 0; against the other CA: CommError "EPROTO:
#    tls_handshake ...: certificate verify failed: ...", not retried.
# 4. Plain HTTP sent to the HTTPS port: a failed handshake, counted in
#    the server's /stats as tls_failures, not as an error.
# 5. The server stops with 0 on SIGINT.
set -u
# shellcheck source=tests/time_scale.sh
. "$(dirname "$0")/../time_scale.sh"

USAGE="usage: https_check.sh SERVER CLIENT [WRAPPER...]"
SERVER=${1:?$USAGE}
CLIENT=${2:?$USAGE}
shift 2
WRAP=("$@")
# Absolute: the script works in a directory of its own.
SERVER=$(cd "$(dirname "$SERVER")" && pwd)/$(basename "$SERVER")
CLIENT=$(cd "$(dirname "$CLIENT")" && pwd)/$(basename "$CLIENT")
for tool in openssl curl; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: $tool is not installed"
        exit 77
    fi
done
WORK=$(mktemp -d)
PID=
cleanup() {
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
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

# ---- certificates ----
cd "$WORK" || exit 1
gen_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -keyout "$1.key" -out "$1.pem" -subj "/CN=$2" >>certs.log 2>&1 \
        || fail "openssl: CA $1"
}
gen_ca ca "futoin https test CA"
gen_ca other "futoin other CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
    -subj "/CN=localhost" >>certs.log 2>&1 || fail "openssl: server key"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >srv.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile srv.ext -out srv.pem >>certs.log 2>&1 || fail "openssl: server certificate"

# ---- the server ----
"${WRAP[@]}" "$SERVER" -j 1 --tls-cert srv.pem --tls-key srv.key 0 >server.log 2>&1 &
PID=$!
PORT=
for _ in $(seq 1 "$(futoin_scale_ms 300)"); do
    PORT=$(sed -n 's#.*listening on https://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' server.log)
    [ -n "$PORT" ] && break
    kill -0 "$PID" 2>/dev/null || fail "the server exited at start"
    sleep 0.1
done
[ -n "$PORT" ] || fail "the server did not start"
T=$(futoin_scale_s 20)

# 1. curl
out=$(curl -sS --max-time "$T" --cacert ca.pem "https://localhost:$PORT/" 2>curl.log) \
    || fail "curl: $(cat curl.log)"
[ "$out" = "Hello from AsyncSteps" ] || fail "curl: got '$out'"
out=$(curl -sS -v --max-time "$T" --cacert ca.pem "https://localhost:$PORT/" \
    "https://localhost:$PORT/bytes?n=5" 2>curl.log) || fail "curl (two): $(cat curl.log)"
[ "$out" = "Hello from AsyncSteps"$'\n'"abcde" ] || fail "curl (two): got '$out'"
grep -q "Re-using existing connection" curl.log || fail "curl (two): the connection was not kept"
rc=0
curl -sS --max-time "$T" --capath /nonexistent --cacert other.pem "https://localhost:$PORT/" \
    >/dev/null 2>curl.log || rc=$?
[ "$rc" -eq 60 ] || fail "curl with another CA: exit $rc, expected 60 ($(cat curl.log))"
echo "curl: ok"

# 2. openssl s_client
for v in -tls1_3 -tls1_2; do
    printf 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' \
        | timeout "$T" openssl s_client "$v" -connect "127.0.0.1:$PORT" -servername localhost \
            -CAfile ca.pem -verify_return_error -ign_eof >s_client.out 2>&1 \
        || fail "s_client $v: exit $?"
    grep -q "Verify return code: 0 (ok)" s_client.out || fail "s_client $v: not verified"
    grep -q "^HTTP/1.1 200 OK" s_client.out || fail "s_client $v: no answer"
    grep -q "Hello from AsyncSteps" s_client.out || fail "s_client $v: no body"
done
echo "openssl s_client: ok"

# 3. the example client
rc=0
"${WRAP[@]}" "$CLIENT" -t "$(futoin_scale_ms 5000)" -k ca.pem "https://localhost:$PORT/" \
    "https://127.0.0.1:$PORT/bytes?n=100000" >client.out 2>&1 || rc=$?
sed 's/^/    /' client.out
[ "$rc" -eq 0 ] || fail "client: exit $rc"
grep -Eq "^1\. https://localhost:$PORT/ -> 200 OK, 22 bytes \(1 attempt\)$" client.out \
    || fail "client: no answer for localhost"
grep -Eq "^2\. https://127\.0\.0\.1:$PORT/bytes\?n=100000 -> 200 OK, 100000 bytes \(1 attempt\)$" \
    client.out || fail "client: no answer for 127.0.0.1"
rc=0
"${WRAP[@]}" "$CLIENT" -t "$(futoin_scale_ms 5000)" -k other.pem "https://localhost:$PORT/" \
    >client_bad.out 2>&1 || rc=$?
sed 's/^/    /' client_bad.out
[ "$rc" -eq 1 ] || fail "client (other CA): exit $rc, expected 1"
grep -Eq "^1\. https://localhost:$PORT/ -> CommError: EPROTO: tls_handshake localhost:$PORT: certificate verify failed: unable to get local issuer certificate \(1 attempt\)$" \
    client_bad.out || fail "client (other CA): not the verification failure"

# 4. plain HTTP to the HTTPS port
curl -sS --max-time "$T" "http://127.0.0.1:$PORT/" >/dev/null 2>&1 \
    && fail "plain HTTP got an answer"
stats=$(curl -sS --max-time "$T" --cacert ca.pem "https://localhost:$PORT/stats") \
    || fail "no /stats"
fails=$(awk '$1 == "tls_failures" { print $2 }' <<<"$stats")
errors=$(awk '$1 == "errors" { print $2 }' <<<"$stats")
# The other CA's client and the plain request (the server sees a refused
# handshake each time).
[ "${fails:-0}" -ge 2 ] || fail "tls_failures ${fails:-none}, expected at least 2"
[ "${errors:-x}" = 0 ] || fail "errors ${errors:-none}, expected 0"
echo "tls_failures $fails, errors $errors: ok"

# 5. stop
kill -INT "$PID"
rc=0
wait "$PID" || rc=$?
PID=
[ "$rc" -eq 0 ] || fail "the server exited with $rc after SIGINT"
echo "PASS"
