/* SPDX-License-Identifier: MIT */
/*
 * The hardened example HTTP server (examples/uv/http_srv.c), run
 * in-process on its own loop threads and driven by plain blocking sockets
 * from the test thread. Each test asserts behaviour, not speed: a limit
 * answers with its status or closes the connection, the Limiter slot and
 * the input budget come back, the server ends cleanly (http_server_join()
 * finds every Limiter idle), and during each attack a well-behaved client
 * keeps getting every answer within its timeout.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../time_scale.h"
#include "http_srv.h"

/* How long a client waits for any answer before it calls the server hung;
 * scaled like every other real-time limit here (futoin_test_ms()). */
#define CLIENT_TIMEOUT_MS 8000

static HttpServer* g_srv;
static unsigned g_port;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Options for a test: one loop, port 0, short timeouts. The timeouts here
 * must not fire in a test that does not expect them: scaled, so that a slow
 * machine or valgrind does not turn a slow client into a timed-out one. */
static void test_options(HttpServerOptions* o)
{
    http_server_options_init(o);
    o->port = 0;
    o->loops = 1;
    o->idle_timeout_ms = futoin_test_ms(5000);
    o->read_timeout_ms = futoin_test_ms(5000);
    o->write_timeout_ms = futoin_test_ms(5000);
    o->drain_timeout_ms = futoin_test_ms(2000);
}

static void start(const HttpServerOptions* o)
{
    char err[256] = "";
    g_srv = http_server_start(o, err, sizeof(err));
    if (!g_srv) {
        print_error("http_server_start: %s\n", err);
        fail();
    }
    g_port = http_server_port(g_srv);
    assert_true(g_port > 0);
}

/* Drains, waits for every loop and checks that each ended clean. */
static void stop(void)
{
    http_server_shutdown(g_srv, 0);
    assert_int_equal(http_server_join(g_srv), 0);
    assert_true(http_server_finished(g_srv));
    http_server_free(g_srv);
    g_srv = NULL;
}

static HttpStats stats(void)
{
    HttpStats st;
    http_server_stats(g_srv, &st);
    return st;
}

/* ---- clients ---- */

static int connect_to(const char* ip, unsigned port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    uint32_t limit = futoin_test_ms(CLIENT_TIMEOUT_MS);
    struct timeval tv = { (time_t)(limit / 1000), (suseconds_t)(limit % 1000) * 1000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a.sin_addr);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int conn(void)
{
    int fd = connect_to("127.0.0.1", g_port, 0);
    assert_true(fd >= 0);
    return fd;
}

static int send_all(int fd, const char* data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void send_str(int fd, const char* s)
{
    assert_int_equal(send_all(fd, s, strlen(s)), 0);
}

typedef struct Resp {
    int status; /* 0: nothing (EOF or timeout before a status line) */
    int close;  /* "Connection: close" */
    char head[1024];
    char body[1024];
    size_t body_len;
} Resp;

/* The response being read answers a HEAD request: no body. */
static int g_head_request;

/* Reads one response (byte by byte up to the blank line, then the
 * Content-Length body). Returns the status, 0 when none came. */
static int read_resp(int fd, Resp* r)
{
    memset(r, 0, sizeof(*r));
    size_t n = 0;
    while (n < sizeof(r->head) - 1) {
        ssize_t k = recv(fd, r->head + n, 1, 0);
        if (k <= 0) {
            return 0;
        }
        ++n;
        if (n >= 4 && memcmp(r->head + n - 4, "\r\n\r\n", 4) == 0) {
            break;
        }
    }
    r->head[n] = '\0';
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1) {
        return 0;
    }
    r->close = strstr(r->head, "\r\nConnection: close\r\n") != NULL;
    const char* cl = strstr(r->head, "\r\nContent-Length: ");
    size_t len = cl ? (size_t)strtoul(cl + 18, NULL, 10) : 0;
    if (r->status == 100 || g_head_request) {
        len = 0;
    }
    while (r->body_len < len && r->body_len < sizeof(r->body) - 1) {
        ssize_t k = recv(fd, r->body + r->body_len, len - r->body_len, 0);
        if (k <= 0) {
            break;
        }
        r->body_len += (size_t)k;
    }
    r->body[r->body_len] = '\0';
    return r->status;
}

/* 1 when the server closed (EOF or reset) with nothing more to read. */
static int at_eof(int fd)
{
    char c;
    ssize_t k = recv(fd, &c, 1, 0);
    return k == 0 || (k < 0 && errno == ECONNRESET);
}

/* Sends request on fd and expects status; when closes, EOF must follow. */
static void expect(int fd, const char* request, int status, int closes)
{
    send_str(fd, request);
    Resp r;
    g_head_request = strncmp(request, "HEAD ", 5) == 0;
    int got = read_resp(fd, &r);
    g_head_request = 0;
    if (got != status || r.close != closes) {
        print_error("request %s: status %d close %d (expected %d close %d)\nhead: %s\n", request,
                got, r.close, status, closes, r.head);
        fail();
    }
    if (closes) {
        assert_true(at_eof(fd));
    }
}

/* A one-shot request on a new connection: the status. */
static int request_once(const char* request, Resp* r)
{
    int fd = conn();
    send_str(fd, request);
    int status = read_resp(fd, r);
    close(fd);
    return status;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: t\r\n\r\n"
#define GET_CLOSE(path) "GET " path " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"

/* The well-behaved client: n requests on new connections, each must be
 * answered 200 within its timeout. */
static void good_client(int n)
{
    for (int i = 0; i < n; ++i) {
        Resp r;
        uint64_t t0 = now_ms();
        int status = request_once(GET_CLOSE("/"), &r);
        if (status != 200) {
            print_error("good client request %d: status %d after %llu ms\n", i, status,
                    (unsigned long long)(now_ms() - t0));
            fail();
        }
    }
}

/* A counter of /stats (which bypasses the Limiter), e.g. "limiter_active". */
static long stat_line(const char* key)
{
    Resp r;
    int fd = conn();
    send_str(fd, GET_CLOSE("/stats"));
    assert_int_equal(read_resp(fd, &r), 200);
    close(fd);
    char pat[64];
    snprintf(pat, sizeof(pat), "%s ", key);
    for (const char* p = r.body; p && *p;) {
        if (strncmp(p, pat, strlen(pat)) == 0) {
            return strtol(p + strlen(pat), NULL, 10);
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return -1;
}

/* The number after "key " on a line of its own in a /stats body, -1 if
 * there is no such line. */
static long body_stat(const char* body, const char* key)
{
    size_t n = strlen(key);
    for (const char* p = body; p && *p;) {
        if (strncmp(p, key, n) == 0 && p[n] == ' ') {
            return strtol(p + n + 1, NULL, 10);
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return -1;
}

/* How long a /sleep handler runs for a test that acts while it runs: ms
 * scaled, so that on a slow machine the handler is still running when the
 * test gets to it, at most what the server accepts. */
static uint32_t handler_ms(uint32_t ms)
{
    uint32_t v = futoin_test_ms(ms);
    return v < HTTP_MAX_SLEEP_MS ? v : HTTP_MAX_SLEEP_MS;
}

/* Sends "GET /sleep?ms=ms" on fd. */
static void send_sleep(int fd, uint32_t ms)
{
    char req[128];
    snprintf(req, sizeof(req), "GET /sleep?ms=%lu HTTP/1.1\r\nHost: t\r\n\r\n", (unsigned long)ms);
    send_str(fd, req);
}

/* Polls until cond() holds or ms (scaled: a safety limit) pass. */
#define WAIT_FOR(cond, ms)                                                                         \
    do {                                                                                           \
        uint64_t until_ = now_ms() + futoin_test_ms(ms);                                           \
        while (!(cond) && now_ms() < until_) {                                                     \
            sleep_ms(10);                                                                          \
        }                                                                                          \
        if (!(cond)) {                                                                             \
            print_error("timed out waiting for %s\n", #cond);                                      \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------ */

static void test_framing(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.limits.max_line = 100;
    o.limits.max_head = 512;
    o.limits.max_body = 1000;
    start(&o);

    int fd = conn();
    expect(fd, GET("/"), 200, 0);
    expect(fd, "\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", 200, 0); /* a leading empty line */
    expect(fd, "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", 200, 0);
    expect(fd, GET("/nope"), 404, 0);
    expect(fd, "PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", 405, 0);
    /* A chunked body with an extension and a trailer, then the next request. */
    send_str(fd,
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n");
    Resp r;
    assert_int_equal(read_resp(fd, &r), 200);
    assert_string_equal(r.body, "received 11 bytes\n");
    expect(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nabcd", 200, 0);
    expect(fd, GET_CLOSE("/"), 200, 1);
    close(fd);

    /* Expect: 100-continue: the interim response comes before the body is sent. */
    fd = conn();
    send_str(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    assert_int_equal(read_resp(fd, &r), 100);
    send_str(fd, "hello");
    assert_int_equal(read_resp(fd, &r), 200);
    assert_string_equal(r.body, "received 5 bytes\n");
    /* Too large: 413 at once, no 100 Continue. */
    expect(fd, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n",
            413, 1);
    close(fd);

    /* Each framing error: its status, then the connection closes. */
    static const struct {
        const char* request;
        int status;
    } bad[] = {
        { "POST / HTTP/1.1\r\nHost: t\r\nContent-Length:\r\n5\r\n\r\nhello", 400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
                400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
                400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501 },
        { "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n", 400 },
        { "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", 413 },
        { "GET / HTTP/1.1\r\n\r\n", 400 },
        { "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505 },
        { "GET / HTTP/1.1\r\nHost: t\r\nExpect: tea\r\n\r\n", 417 },
        { "BREW / HTTP/1.1\r\nHost: t\r\n\r\n", 501 },
        { "garbage\r\n\r\n", 400 },
        { "GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          " HTTP/1.1\r\nHost: t\r\n\r\n",
                414 },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        fd = conn();
        expect(fd, bad[i].request, bad[i].status, 1);
        close(fd);
    }
    /* A request line or a head that does not even fit max_head. */
    char big[2048];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /", 5);
    big[sizeof(big) - 1] = '\0';
    fd = conn();
    expect(fd, big, 414, 1);
    close(fd);
    snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: t\r\nX-Big: %0900d\r\n\r\n", 0);
    fd = conn();
    expect(fd, big, 431, 1);
    close(fd);
    /* HTTP/1.0: answered, then closed. */
    fd = conn();
    expect(fd, "GET / HTTP/1.0\r\n\r\n", 200, 1);
    close(fd);
    fd = conn();
    expect(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, 0);
    close(fd);

    HttpStats st = stats();
    assert_int_equal(st.errors, 0);
    assert_true(st.client_errors >= 17);
    stop();
}

/* ---- strict framing, table-driven ---- */

/* One request as raw bytes and what the server must answer. Unless
 * `alone`, a pipelined "GET / ... Connection: close" follows the bytes in
 * the same send: after a 2xx it must be answered too (the framing ended
 * where it should), after an error it must not be (the connection closes
 * right after the error response). split > 0: the bytes go in two sends
 * with a pause between, so that the server sees a partial head or body
 * (whatever it sees, the outcome must be the same); split BYTEWISE: one
 * byte per send, with a pause after each. */
#define BYTEWISE ((size_t)-1)
typedef struct FramingCase {
    const char* what;
    const char* request;
    int status;
    const char* body; /* NULL: not checked */
    int alone;
    size_t split;
} FramingCase;

#define POSTC "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
#define HELLO_BODY "Hello from AsyncSteps\n"

static const FramingCase g_framing[] = {
    /* well-framed: answered, and the pipelined request after them too */
    { "chunked", POSTC "5\r\nhello\r\n0\r\n\r\n", 200, "received 5 bytes\n", 0, 0 },
    { "two chunks", POSTC "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 200, "received 11 bytes\n", 0,
            0 },
    { "extension", POSTC "5;a=b\r\nhello\r\n0\r\n\r\n", 200, "received 5 bytes\n", 0, 0 },
    { "BWS before ;", POSTC "5 ;a\r\nhello\r\n0\r\n\r\n", 200, "received 5 bytes\n", 0, 0 },
    { "BWS around =, quoted", POSTC "5; a = \"x y\"\r\nhello\r\n0\r\n\r\n", 200,
            "received 5 bytes\n", 0, 0 },
    { "leading zeros", POSTC "000005\r\nhello\r\n0\r\n\r\n", 200, "received 5 bytes\n", 0, 0 },
    { "upper-case hex", POSTC "A\r\n0123456789\r\n0\r\n\r\n", 200, "received 10 bytes\n", 0, 0 },
    { "last-chunk extension", POSTC "5\r\nhello\r\n0;end\r\n\r\n", 200, "received 5 bytes\n", 0,
            0 },
    { "trailers", POSTC "5\r\nhello\r\n0\r\nX-T: 1\r\nY-T: two words\r\n\r\n", 200,
            "received 5 bytes\n", 0, 0 },
    { "empty chunked body", POSTC "0\r\n\r\n", 200, "received 0 bytes\n", 0, 0 },
    { "chunked in pieces", POSTC "5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", 200, "received 5 bytes\n", 0,
            sizeof(POSTC) + 4 },
    { "head in pieces", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", 200, HELLO_BODY, 0, 16 },
    { "head split in a CRLF", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", 200, HELLO_BODY, 0, 15 },
    { "leading empty line", "\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", 200, HELLO_BODY, 0, 0 },
    { "Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 200,
            "received 5 bytes\n", 0, 0 },
    { "leading empty line, byte by byte", "\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", 200, HELLO_BODY,
            0, BYTEWISE },
    { "chunked with a trailer, byte by byte", POSTC "5;a=\"b\"\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
            200, "received 5 bytes\n", 0, BYTEWISE },

    /* a bare LF ending a line of the chunked body */
    { "bare LF after chunk size", POSTC "5\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "bare LF after chunk data", POSTC "5\r\nhello\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "bare LF after chunk data, alone", POSTC "5\r\nhello\n", 400, NULL, 1, 0 },
    { "bare LF after last chunk", POSTC "5\r\nhello\r\n0\n\r\n", 400, NULL, 0, 0 },
    { "bare LF ending the trailer", POSTC "5\r\nhello\r\n0\r\n\n", 400, NULL, 0, 0 },
    { "bare LF after a trailer line", POSTC "5\r\nhello\r\n0\r\nX-T: 1\n\r\n", 400, NULL, 0, 0 },
    { "bare LF after trailer lines", POSTC "5\r\nhello\r\n0\r\nX-T: 1\r\n\n", 400, NULL, 0, 0 },
    { "bare LF after chunk size, in pieces", POSTC "5\nhello\r\n0\r\n\r\n", 400, NULL, 0,
            sizeof(POSTC) - 1 },
    { "bare LF after chunk data, byte by byte", POSTC "5\r\nhello\n0\r\n\r\n", 400, NULL, 0,
            BYTEWISE },
    { "bare LF in a trailer, byte by byte", POSTC "0\r\nX-T: 1\n\r\n", 400, NULL, 0, BYTEWISE },
    /* a bare CR */
    { "bare CR after chunk size", POSTC "5\rhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR after chunk data", POSTC "5\r\nhello\r0\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR after last chunk", POSTC "5\r\nhello\r\n0\r\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR in a trailer line", POSTC "5\r\nhello\r\n0\r\nX-T: a\rb\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR ending a trailer line", POSTC "5\r\nhello\r\n0\r\nX-T: 1\r\r\n\r\n", 400, NULL, 0,
            0 },
    { "chunk data longer than its size", POSTC "5\r\nhelloXX\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    /* heads: 400 at once (the read timeout is 30 s: a 408 cannot come) */
    { "head of bare LFs", "GET / HTTP/1.1\nHost: t\n\n", 400, NULL, 1, 0 },
    { "head of bare LFs, in pieces", "GET / HTTP/1.1\nHost: t\n\n", 400, NULL, 1, 8 },
    { "head of bare LFs, byte by byte", "GET / HTTP/1.1\nHost: t\n\n", 400, NULL, 1, BYTEWISE },
    { "bare CR in a field, byte by byte", "GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n", 400, NULL, 1,
            BYTEWISE },
    { "head with CRLF then bare LFs, in pieces", "GET / HTTP/1.1\r\nHost: t\n\n", 400, NULL, 1,
            16 },
    { "bare LF ending a field", "GET / HTTP/1.1\r\nHost: t\n\r\n", 400, NULL, 1, 0 },
    { "bare LF as the empty line", "GET / HTTP/1.1\r\nHost: t\r\n\n", 400, NULL, 1, 0 },
    { "bare LF as the empty line, pipelined", "GET / HTTP/1.1\r\nHost: t\r\n\n", 400, NULL, 0, 0 },
    { "bare CR after the request line", "GET / HTTP/1.1\rHost: t\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR in a field", "GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n", 400, NULL, 0, 0 },
    { "bare CR, no LF after it", "GET / HTTP/1.1\r\nHost: t\rX", 400, NULL, 1, 0 },
    /* chunk-size syntax (RFC 9112 7.1) */
    { "blank after chunk size", POSTC "5 \r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "tab after chunk size", POSTC "5\t\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "blank before chunk size", POSTC " 5\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "plus sign", POSTC "+5\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "minus sign", POSTC "-5\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "0x prefix", POSTC "0x5\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "empty chunk size", POSTC "\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "not hex", POSTC "zz\r\n", 400, NULL, 0, 0 },
    { "';' without a name", POSTC "5;\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "blank after an extension", POSTC "5;a \r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "'=' without a value", POSTC "5;a=\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "unterminated quoted-string", POSTC "5;a=\"x\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "two names without ';'", POSTC "5;a b\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "a control in an extension", POSTC "5;a=\x01\r\nhello\r\n0\r\n\r\n", 400, NULL, 0, 0 },
    { "size above max_body", POSTC "3e9\r\n", 413, NULL, 0, 0 },
    { "size of 64 bits", POSTC "ffffffffffffffff\r\n", 413, NULL, 0, 0 },
    { "size overflowing 64 bits", POSTC "10000000000000000\r\nhello\r\n", 413, NULL, 0, 0 },
    /* trailer section syntax */
    { "folded trailer line", POSTC "0\r\nX-T: 1\r\n folded\r\n\r\n", 400, NULL, 0, 0 },
    { "trailer line without a colon", POSTC "0\r\nNoColon\r\n\r\n", 400, NULL, 0, 0 },
    { "blank before a trailer colon", POSTC "0\r\nX-T : 1\r\n\r\n", 400, NULL, 0, 0 },
};

/* Sends a case's bytes and checks the answer, the pipelined request's and
 * the close. */
static void framing_case(const FramingCase* k)
{
    size_t len = strlen(k->request);
    const char* tail = k->alone ? "" : GET_CLOSE("/");
    char* bytes = malloc(len + strlen(tail) + 1);
    assert_non_null(bytes);
    memcpy(bytes, k->request, len);
    strcpy(bytes + len, tail);
    size_t total = strlen(bytes);
    int fd = conn();
    size_t split = k->split < total ? k->split : 0;
    if (k->split == BYTEWISE) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        for (size_t i = 0; i < total; ++i) {
            if (send_all(fd, bytes + i, 1) != 0) {
                break; /* the server answered and closed already */
            }
            sleep_ms(1);
        }
    } else {
        assert_int_equal(send_all(fd, bytes, split ? split : total), 0);
    }
    if (split) {
        sleep_ms(30);
        assert_int_equal(send_all(fd, bytes + split, total - split), 0);
    }
    Resp r;
    int status = read_resp(fd, &r);
    int ok = status == k->status && (!k->body || strcmp(r.body, k->body) == 0);
    if (ok && status >= 300) {
        ok = r.close && at_eof(fd); /* and the pipelined request is not answered */
    } else if (ok && !k->alone) {
        Resp next;
        ok = !r.close && read_resp(fd, &next) == 200 && next.close && at_eof(fd);
    }
    if (!ok) {
        print_error("case \"%s\": status %d close %d body \"%s\" (expected %d%s%s)\nhead: %s\n",
                k->what, status, r.close, r.body, k->status, k->body ? " and " : "",
                k->body ? k->body : "", r.head);
    }
    close(fd);
    free(bytes);
    if (!ok) {
        fail();
    }
}

/* A trailer section (after "0\r\n") of `lines` lines "N: aaa...", each
 * `line_len` bytes with its CRLF, then the empty line. */
static char* trailer_case(size_t lines, size_t line_len)
{
    size_t head = strlen(POSTC "0\r\n");
    char* s = malloc(head + lines * line_len + 3);
    assert_non_null(s);
    memcpy(s, POSTC "0\r\n", head);
    char* p = s + head;
    for (size_t i = 0; i < lines; ++i) {
        memset(p, 'a', line_len - 2);
        p[0] = (char)('A' + i % 26);
        p[1] = ':';
        p[2] = ' ';
        memcpy(p + line_len - 2, "\r\n", 2);
        p += line_len;
    }
    memcpy(p, "\r\n", 3);
    return s;
}

static void test_strict_framing(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.limits.max_line = 100;
    o.limits.max_head = 512;
    o.limits.max_body = 1000;
    /* Long: an answer that waited for more bytes would be a 408 after 30 s
     * (and the client gives up after CLIENT_TIMEOUT_MS); a 400 comes only
     * from the parser. Scaled like the client's limit, so that it stays
     * the longer of the two. */
    o.read_timeout_ms = futoin_test_ms(30000);
    o.idle_timeout_ms = futoin_test_ms(30000);
    start(&o);
    size_t n = sizeof(g_framing) / sizeof(g_framing[0]);
    for (size_t i = 0; i < n; ++i) {
        framing_case(&g_framing[i]);
    }

    /* Built at run time: limits. The trailer section (its lines and the
     * empty line) is limited by max_head (512) like a head. */
    char* exact = trailer_case(1, 510);       /* 510 + 2: exactly max_head */
    char* over_by_one = trailer_case(1, 511); /* the limit falls on the empty line */
    char* in_line = trailer_case(1, 600);     /* ... inside the only line */
    char* second = trailer_case(2, 300);      /* ... inside the second line */
    char* many = trailer_case(40, 20);        /* ... after many short lines */
    char big_head[1024];
    snprintf(big_head, sizeof(big_head), "GET / HTTP/1.1\r\nHost: t\r\nX-Big: %0600d\r\n\r\n", 0);
    char long_line[1024];
    snprintf(long_line, sizeof(long_line), "GET /%0300d HTTP/1.1\r\nHost: t\r\n\r\n", 0);
    char sum_over[1200];
    snprintf(sum_over, sizeof(sum_over), POSTC "3e8\r\n%01000d\r\n1\r\nx\r\n0\r\n\r\n", 0);
    char sum_exact[1200];
    snprintf(sum_exact, sizeof(sum_exact), POSTC "3e7\r\n%0999d\r\n1\r\nx\r\n0\r\n\r\n", 0);
    const FramingCase built[] = {
        { "trailer of exactly max_head", exact, 200, "received 0 bytes\n", 0, 0 },
        { "trailer over max_head by its empty line", over_by_one, 431, NULL, 0, 0 },
        { "trailer over max_head inside a line", in_line, 431, NULL, 0, 0 },
        { "trailer over max_head inside a line, in pieces", in_line, 431, NULL, 0, 100 },
        { "trailer over max_head inside the second line", second, 431, NULL, 0, 0 },
        { "trailer over max_head after many lines", many, 431, NULL, 0, 0 },
        { "head over max_head", big_head, 431, NULL, 0, 0 },
        { "head over max_head, in pieces", big_head, 431, NULL, 0, 30 },
        { "request line over max_line, in pieces", long_line, 414, NULL, 0, 10 },
        { "chunks adding up to max_body", sum_exact, 200, "received 1000 bytes\n", 0, 0 },
        { "chunks adding up to more than max_body", sum_over, 413, NULL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); ++i) {
        framing_case(&built[i]);
    }
    free(exact);
    free(over_by_one);
    free(in_line);
    free(second);
    free(many);

    HttpStats st = stats();
    assert_int_equal(st.read_timeouts, 0);
    assert_int_equal(st.errors, 0);
    stop();
}

static void test_idle_and_read_timeouts(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    /* Expected to fire, but only after the requests below that must be
     * answered first (the keep-alive one's and the good client's): scaled,
     * so that a slow machine does not close them before they are sent. */
    o.idle_timeout_ms = futoin_test_ms(200);
    o.read_timeout_ms = futoin_test_ms(300);
    start(&o);
    /* Idle: closed without a word. */
    int idle = conn();
    /* Slowloris: part of a head, then nothing: 408. */
    int slow_head = conn();
    send_str(slow_head, "GET / HTTP/1.1\r\nHost: t\r\n");
    /* A slow body: 408 too. */
    int slow_body = conn();
    send_str(slow_body, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    /* A keep-alive connection after one answer is idle again. */
    int ka = conn();
    expect(ka, GET("/"), 200, 0);

    good_client(3);
    uint64_t t0 = now_ms();
    assert_true(at_eof(idle));
    assert_true(now_ms() - t0 < futoin_test_ms(CLIENT_TIMEOUT_MS));
    Resp r;
    assert_int_equal(read_resp(slow_head, &r), 408);
    assert_int_equal(r.close, 1);
    assert_true(at_eof(slow_head));
    assert_int_equal(read_resp(slow_body, &r), 408);
    assert_true(at_eof(slow_body));
    assert_true(at_eof(ka));
    close(idle);
    close(slow_head);
    close(slow_body);
    close(ka);
    WAIT_FOR(stats().active == 0, 3000);
    HttpStats st = stats();
    assert_int_equal(st.read_timeouts, 2);
    assert_int_equal(st.idle_closed, 2);
    assert_int_equal(st.errors, 0);
    stop();
}

/* Connections that end between requests, closed by the client after its
 * answers or by the idle timeout, are the normal end of a connection: the
 * roots complete, and /stats after such clean traffic shows no unhandled
 * error of the engine (each such connection used to end its root with an
 * error that escaped it, so engine_unhandled_errors grew with the
 * connections). engine_errors still counts the CommError "EOF" with which
 * the idle wait learns that the client closed: it counts every error
 * raised in a flow, handled ones included. */
static void test_clean_ends_are_not_errors(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.idle_timeout_ms = futoin_test_ms(300);
    start(&o);
    /* Two clean requests, each on a keep-alive connection that the client
     * closes after its answer. */
    for (int i = 0; i < 2; ++i) {
        int fd = conn();
        expect(fd, GET("/"), 200, 0);
        close(fd);
    }
    WAIT_FOR(stats().peer_closed == 2, 3000);
    /* A connection that never sends a request: the idle timeout closes it. */
    int idle = conn();
    assert_true(at_eof(idle));
    close(idle);
    WAIT_FOR(stats().idle_closed == 1, 3000);
    /* /stats from the one loop: its engine counters as of the request. */
    int fd = conn();
    send_str(fd, GET("/stats"));
    Resp r;
    assert_int_equal(read_resp(fd, &r), 200);
    close(fd);
    assert_int_equal(body_stat(r.body, "requests"), 3);
    assert_int_equal(body_stat(r.body, "errors"), 0);
    assert_int_equal(body_stat(r.body, "peer_closed"), 2);
    assert_int_equal(body_stat(r.body, "idle_closed"), 1);
    assert_int_equal(body_stat(r.body, "engine_unhandled_errors"), 0);
    assert_int_equal(body_stat(r.body, "engine_errors"), 2);
    assert_int_equal(body_stat(r.body, "engine_timeouts"), 1);
    stop();
}

static void test_max_requests(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.max_requests = 3;
    start(&o);
    int fd = conn();
    send_str(fd, GET("/") GET("/") GET("/") GET("/"));
    Resp r;
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(read_resp(fd, &r), 200);
        assert_int_equal(r.close, i == 2);
    }
    assert_true(at_eof(fd));
    close(fd);
    stop();
}

/* Pipelining clients that never read their responses (a known attack on servers):
 * their writes time out, and they never hold the Limiter. */
static void test_pipelined_readers_that_never_read(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    /* Expected to fire, but not before the attackers have all blocked and
     * the good client has been served: scaled with the waits below. */
    o.write_timeout_ms = futoin_test_ms(1000);
    o.max_requests = 0;       /* else the 1000th response would end them */
    o.limiter.concurrent = 1; /* one blocked write holding it would starve everyone */
    o.limiter.max_queue = 0;
    start(&o);
    /* Large responses, so that the kernel's socket buffers (several MB
     * on loopback) fill after a few of them. */
    enum { ATTACKERS = 4, PIPELINE = 12 };
#define BIG GET("/bytes?n=1000000")
    static char reqs[PIPELINE * (sizeof(BIG) - 1)];
    for (int i = 0; i < PIPELINE; ++i) {
        memcpy(reqs + (size_t)i * (sizeof(BIG) - 1), BIG, sizeof(BIG) - 1);
    }
    int fds[ATTACKERS];
    for (int i = 0; i < ATTACKERS; ++i) {
        fds[i] = connect_to("127.0.0.1", g_port, 4096);
        assert_true(fds[i] >= 0);
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        size_t off = 0;
        uint64_t until = now_ms() + futoin_test_ms(300);
        while (off < sizeof(reqs) && now_ms() < until) {
            ssize_t n = send(fds[i], reqs + off, sizeof(reqs) - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += (size_t)n;
            } else {
                struct pollfd p = { fds[i], POLLOUT, 0 };
                poll(&p, 1, 20);
            }
        }
    }
    /* The attackers' responses pile up: wait until the server has stopped
     * answering them (every write blocked). A quiet interval means blocked
     * only if the server could have answered one within it: scaled. */
    unsigned long before = stats().requests;
    for (;;) {
        sleep_ms(futoin_test_ms(200));
        unsigned long after = stats().requests;
        if (after == before) {
            break;
        }
        before = after;
    }
    assert_true(before > 0);
    assert_int_equal(stats().write_timeouts, 0);
    /* (The attackers competed for the one slot among themselves: some of
     * their requests were rejected with 503 before they blocked.) */
    unsigned long rejected = stats().rejected;
    assert_int_equal(stat_line("limiter_active"), 0);
    good_client(10);
    assert_int_equal(stat_line("limiter_active"), 0);
    assert_int_equal(stats().rejected, rejected);
    /* Then the write timeout closes them. */
    WAIT_FOR(stats().write_timeouts == ATTACKERS, 5000);
    for (int i = 0; i < ATTACKERS; ++i) {
        close(fds[i]);
    }
    good_client(2);
    assert_int_equal(stats().errors, 0);
    stop();
}

/* The Limiter guards handling only: a slot is taken for the handler's
 * time, a request over the limit gets 503 and its connection goes on. */
static void test_limiter_slot_released(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.limiter.concurrent = 1;
    o.limiter.max_queue = 0;
    start(&o);
    int a = conn();
    /* a must hold the slot until b has been refused: long enough for that
     * on a slow machine, then a's handler has taken the slot. */
    send_sleep(a, handler_ms(1000));
    WAIT_FOR(stat_line("limiter_active") == 1, 3000);
    int b = conn();
    Resp r;
    send_str(b, GET("/"));
    assert_int_equal(read_resp(b, &r), 503);
    assert_int_equal(r.close, 0);
    assert_non_null(strstr(r.head, "\r\nRetry-After: 1\r\n"));
    assert_int_equal(read_resp(a, &r), 200);
    assert_string_equal(r.body, "Slept\n");
    expect(b, GET("/"), 200, 0);
    assert_int_equal(stat_line("limiter_active"), 0);
    /* A client that leaves during its handler: the slot comes back when
     * the handler ends. */
    send_str(a, GET("/sleep?ms=200"));
    close(a);
    WAIT_FOR(stat_line("limiter_active") == 0, 3000);
    expect(b, GET_CLOSE("/"), 200, 1);
    close(b);
    assert_int_equal(stats().rejected, 1);
    stop();
}

/* Large bodies from many clients: the input budget bounds the memory,
 * refuses with 503, and comes back; small requests never need it. */
static void test_input_budget(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.input_budget = 64 * 1024;
    /* Ends the attackers that the budget admitted, but only after it has
     * refused some: scaled, so that a slow server still gets that far. */
    o.read_timeout_ms = futoin_test_ms(1000);
    start(&o);
    enum { ATTACKERS = 12 };
    static char body[15000];
    memset(body, 'b', sizeof(body));
    int fds[ATTACKERS];
    for (int i = 0; i < ATTACKERS; ++i) {
        fds[i] = conn();
        send_str(fds[i], "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n");
        assert_int_equal(send_all(fds[i], body, sizeof(body)), 0);
    }
    good_client(5);
    WAIT_FOR(stats().budget_refusals > 0, 3000);
    assert_true(stats().budget_used <= 64 * 1024);
    /* Every attacker gets an answer: 503 now, or 408 when its read
     * timeout ends; then the server closes. */
    int overloaded = 0, timed_out = 0;
    for (int i = 0; i < ATTACKERS; ++i) {
        Resp r;
        int status = read_resp(fds[i], &r);
        overloaded += status == 503;
        timed_out += status == 408;
        assert_int_equal(r.close, 1);
        close(fds[i]);
    }
    assert_true(overloaded >= 1);
    assert_int_equal(overloaded + timed_out, ATTACKERS);
    good_client(2);
    WAIT_FOR(stats().budget_used == 0, 3000);
    WAIT_FOR(stats().active == 0, 3000);
    assert_int_equal(stats().overloaded, (unsigned long)overloaded);
    stop();
}

/* Bodies are read a few at a time: a second upload waits for the slot
 * (100 Continue only once it has it), small requests do not wait at all. */
static void test_upload_slots(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.max_uploads = 1;
    start(&o);
    int a = conn();
    send_str(a, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    /* a first: b must find the one slot taken. */
    WAIT_FOR(stat_line("uploads_active") == 1, 3000);
    int b = conn();
    send_str(b, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    WAIT_FOR(stat_line("uploads_queued") == 1, 3000);
    assert_int_equal(stat_line("uploads_active"), 1);
    good_client(3);
    send_str(a, "world");
    Resp r;
    assert_int_equal(read_resp(a, &r), 200);
    assert_string_equal(r.body, "received 10 bytes\n");
    assert_int_equal(read_resp(b, &r), 100); /* now that the slot is free */
    send_str(b, "hello");
    assert_int_equal(read_resp(b, &r), 200);
    assert_string_equal(r.body, "received 5 bytes\n");
    assert_int_equal(stat_line("uploads_active"), 0);
    close(a);
    close(b);
    stop();
}

static void test_max_connections(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.max_connections = 3;
    start(&o);
    int fds[3];
    for (int i = 0; i < 3; ++i) {
        fds[i] = conn();
    }
    WAIT_FOR(stats().active == 3, 3000);
    int extra = conn();
    Resp r;
    assert_int_equal(read_resp(extra, &r), 503);
    assert_string_equal(r.body, "Too many connections\n");
    assert_int_equal(r.close, 1);
    assert_true(at_eof(extra));
    close(extra);
    assert_int_equal(stats().refused, 1);
    /* The admitted ones work. */
    expect(fds[0], GET("/"), 200, 0);
    /* One leaves: room for a new one. */
    close(fds[1]);
    WAIT_FOR(stats().active == 2, 3000);
    good_client(1);
    close(fds[0]);
    close(fds[2]);
    stop();
}

/* Shutdown: idle connections close at once, requests in flight finish
 * with "Connection: close", what is left at the deadline is cancelled. */
static void test_drain(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    /* Expected to fire for slow only: quick must still be running when the
     * shutdown comes and end before this deadline. Both scaled, with quick
     * half-way, so that a slow machine has room on either side. */
    o.drain_timeout_ms = futoin_test_ms(500);
    start(&o);
    int idle = conn();
    expect(idle, GET("/"), 200, 0);
    int quick = conn();
    send_sleep(quick, handler_ms(250));
    int slow = conn();
    send_sleep(slow, handler_ms(10000));
    /* Both handlers running: the shutdown finds them in flight. */
    WAIT_FOR(stat_line("limiter_active") == 2, 3000);
    uint64_t t0 = now_ms();
    http_server_shutdown(g_srv, 0);
    assert_true(at_eof(idle));
    Resp r;
    assert_int_equal(read_resp(quick, &r), 200);
    assert_int_equal(r.close, 1);
    assert_true(at_eof(quick));
    assert_int_equal(read_resp(slow, &r), 0); /* cancelled: no response */
    assert_true(now_ms() - t0 >= 400);
    assert_true(now_ms() - t0 < futoin_test_ms(5000));
    /* No longer listening. */
    assert_int_equal(connect_to("127.0.0.1", g_port, 0), -1);
    close(idle);
    close(quick);
    close(slow);
    assert_int_equal(http_server_join(g_srv), 0);
    http_server_free(g_srv);
    g_srv = NULL;
}

static void test_shutdown_now(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    start(&o);
    /* partial first: the one loop accepts it before slow's handler can
     * take the slot waited for below. slow's handler outlasts the bound
     * on the shutdown below (both scaled), so that a shutdown that waited
     * for it would fail. */
    int partial = conn();
    send_str(partial, "GET / HTT");
    int slow = conn();
    send_sleep(slow, handler_ms(10000));
    WAIT_FOR(stat_line("limiter_active") == 1, 3000);
    uint64_t t0 = now_ms();
    http_server_shutdown(g_srv, 0);
    http_server_shutdown(g_srv, 1);
    assert_true(at_eof(slow));
    assert_true(at_eof(partial));
    assert_int_equal(http_server_join(g_srv), 0);
    assert_true(now_ms() - t0 < futoin_test_ms(2000));
    close(slow);
    close(partial);
    http_server_free(g_srv);
    g_srv = NULL;
}

static void test_bind_address(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.host = "127.0.0.2";
    start(&o);
    int fd = connect_to("127.0.0.2", g_port, 0);
    assert_true(fd >= 0);
    expect(fd, GET_CLOSE("/"), 200, 1);
    close(fd);
    assert_int_equal(connect_to("127.0.0.1", g_port, 0), -1);
    stop();
    /* A bad address is refused at start. */
    o.host = "not-an-address";
    char err[256];
    assert_null(http_server_start(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "cannot listen on not-an-address"));
}

/* Slowloris: many connections dribbling a head. */
static void test_slowloris(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    /* Expected to fire, after the dribbling and the good clients below:
     * scaled, so that a slow machine still gets through them first. */
    o.read_timeout_ms = futoin_test_ms(600);
    start(&o);
    enum { SLOW = 40 };
    int fds[SLOW];
    for (int i = 0; i < SLOW; ++i) {
        fds[i] = conn();
        send_str(fds[i], "G");
    }
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < SLOW; ++i) {
            send_all(fds[i], "E", 1);
        }
        good_client(2);
        sleep_ms(50);
    }
    for (int i = 0; i < SLOW; ++i) {
        Resp r;
        assert_int_equal(read_resp(fds[i], &r), 408);
        close(fds[i]);
    }
    good_client(2);
    WAIT_FOR(stats().active == 0, 3000);
    assert_int_equal(stats().read_timeouts, SLOW);
    stop();
}

/* Two loops sharing the port: every request is answered and counted. */
static void test_two_loops(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    o.loops = 2;
    start(&o);
    assert_int_equal(http_server_loops(g_srv), 2);
    good_client(20);
    int fd = conn();
    for (int i = 0; i < 5; ++i) {
        expect(fd, GET("/"), 200, 0);
    }
    close(fd);
    assert_int_equal(stat_line("loops"), 2);
    WAIT_FOR(stats().active == 0, 3000);
    HttpStats st = stats();
    assert_int_equal(st.accepted, 22);
    assert_int_equal(st.ok, 26);
    stop();
}

/* Reads a whole "Connection: close" response (head and body) into buf. */
static size_t read_all(int fd, char* buf, size_t cap)
{
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0) {
            break;
        }
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

static void test_debug_pages(void** state)
{
    (void)state;
    HttpServerOptions o;
    test_options(&o);
    start(&o);
    /* Off unless asked for. */
    int fd = conn();
    expect(fd, GET("/debug/flows"), 404, 0);
    close(fd);
    stop();

    o.debug_pages = 1;
    start(&o);
    /* A request parked on a timer inside the Limiter's section, still
     * parked while the pages below are read, however slow the machine:
     * the longest sleep the server takes. The shutdown below cancels it,
     * so that the test does not wait it out. */
    uint32_t sleeper_ms = HTTP_MAX_SLEEP_MS;
    char sleeping[96];
    snprintf(sleeping, sizeof(sleeping), "waiting for an external completion: \"sleep %lu ms\"",
            (unsigned long)sleeper_ms);
    int sleeper = conn();
    send_sleep(sleeper, sleeper_ms);
    WAIT_FOR(stat_line("limiter_active") == 1, 3000);
    static char page[16384];
    fd = conn();
    send_str(fd, GET_CLOSE("/debug/flows"));
    size_t n = read_all(fd, page, sizeof(page));
    close(fd);
    assert_true(n > 0);
    if (!strstr(page, "HTTP/1.1 200 OK\r\n") || !strstr(page, "\r\n\r\nloop 1 of 1 ")
            || !strstr(page, "waiting for an external completion: \"accept 127.0.0.1:")
            || !strstr(page, sleeping) || !strstr(page, "sync Limiter ")
            || !strstr(page, "end of dump: 3 roots")) {
        print_error("unexpected /debug/flows page:\n%s\n", page);
        fail();
    }
    /* Content-Length is the body's. */
    const char* body = strstr(page, "\r\n\r\n") + 4;
    const char* cl = strstr(page, "\r\nContent-Length: ");
    assert_non_null(cl);
    assert_int_equal(strtoul(cl + 18, NULL, 10), strlen(body));
    /* HEAD: the same head, no body; other methods: 405. */
    fd = conn();
    expect(fd, "HEAD /debug/flows HTTP/1.1\r\nHost: t\r\n\r\n", 200, 0);
    expect(fd, "POST /debug/flows HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", 405, 0);
    close(fd);
    /* The engine's counters on /stats: the acceptor, the sleeper and the
     * connection asking. */
    assert_int_equal(stat_line("engine_roots"), 3);
    assert_true(stat_line("engine_steps") > 0);
    assert_int_equal(stat_line("engine_timers_pending"), 1);
    /* Shut down at once: the sleeper is cancelled without an answer, its
     * Limiter slot comes back (join finds every Limiter idle). */
    http_server_shutdown(g_srv, 1);
    Resp r;
    assert_int_equal(read_resp(sleeper, &r), 0);
    close(sleeper);
    assert_int_equal(http_server_join(g_srv), 0);
    assert_true(http_server_finished(g_srv));
    http_server_free(g_srv);
    g_srv = NULL;

    /* Two loops: /stats adds up what each loop last published. */
    o.loops = 2;
    start(&o);
    WAIT_FOR(stat_line("engine_roots") >= 3, 3000); /* two acceptors and the asker */
    HttpStats st = stats();
    assert_true(st.engine.roots >= 2);
    assert_true(st.engine.steps > 0);
    stop();
}

static void test_args(void** state)
{
    (void)state;
    HttpServerOptions o;
    http_server_options_init(&o);
    FILE* null = fopen("/dev/null", "w");
    assert_non_null(null);
    char* ok[] = { "s", "-a", "::1", "--loops", "2", "-i", "1", "-t", "2", "-w", "3", "-d", "4",
        "-n", "0", "-m", "5", "-l", "6", "-H", "7", "-B", "8", "-g", "9", "--no-limiter", "-u",
        "10", "0", NULL };
    assert_int_equal(http_server_parse_args(&o, 29, ok, null, null), 0);
    assert_int_equal(o.max_uploads, 10);
    assert_string_equal(o.host, "::1");
    assert_int_equal(o.loops, 2);
    assert_int_equal(o.idle_timeout_ms, 1);
    assert_int_equal(o.read_timeout_ms, 2);
    assert_int_equal(o.write_timeout_ms, 3);
    assert_int_equal(o.drain_timeout_ms, 4);
    assert_int_equal(o.max_requests, 0);
    assert_int_equal(o.max_connections, 5);
    assert_int_equal(o.limits.max_line, 6);
    assert_int_equal(o.limits.max_head, 7);
    assert_int_equal(o.limits.max_body, 8);
    assert_int_equal(o.input_budget, 9);
    assert_int_equal(o.use_limiter, 0);
    assert_int_equal(o.port, 0);
    char* bad1[] = { "s", "-i", "0", NULL };
    assert_int_equal(http_server_parse_args(&o, 3, bad1, null, null), -1);
    char* bad2[] = { "s", "-g", "1x", NULL };
    assert_int_equal(http_server_parse_args(&o, 3, bad2, null, null), -1);
    char* bad3[] = { "s", "--max-body", NULL };
    assert_int_equal(http_server_parse_args(&o, 2, bad3, null, null), -1);
    char* bad4[] = { "s", "--loops", "1025", NULL };
    assert_int_equal(http_server_parse_args(&o, 3, bad4, null, null), -1);
    char* dbg[] = { "s", "--debug-pages", NULL };
    assert_int_equal(http_server_parse_args(&o, 2, dbg, null, null), 0);
    assert_int_equal(o.debug_pages, 1);
    char* help[] = { "s", "-h", NULL };
    assert_int_equal(http_server_parse_args(&o, 2, help, null, null), 1);
    fclose(null);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_strict_framing),
        cmocka_unit_test(test_idle_and_read_timeouts),
        cmocka_unit_test(test_clean_ends_are_not_errors),
        cmocka_unit_test(test_max_requests),
        cmocka_unit_test(test_pipelined_readers_that_never_read),
        cmocka_unit_test(test_limiter_slot_released),
        cmocka_unit_test(test_input_budget),
        cmocka_unit_test(test_upload_slots),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_shutdown_now),
        cmocka_unit_test(test_bind_address),
        cmocka_unit_test(test_slowloris),
        cmocka_unit_test(test_two_loops),
        cmocka_unit_test(test_debug_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
