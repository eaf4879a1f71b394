/* SPDX-License-Identifier: MIT */
/*
 * The strict HTTP/1.1 request-head parser of the example server
 * (examples/uv/http_common.h): one case per framing rule of RFC
 * 9112 that the server enforces, each with the status it answers and
 * whether the connection survives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../examples/uv/http_common.h"

static const HttpLimits g_lim = { 64, 256, 1000 };

/* Parses head (a C string) with the test limits. */
static HttpRequest parse(const char* head)
{
    HttpRequest r;
    http_parse_head(head, strlen(head), &g_lim, &r);
    return r;
}

#define GET11 "GET / HTTP/1.1\r\nHost: x\r\n"

static void assert_error(const char* head, int route)
{
    HttpRequest r = parse(head);
    if (r.route != route || !r.close || r.keep_alive) {
        print_error("head %s: route %d close %d keep_alive %d, expected route %d and close\n", head,
                r.route, r.close, r.keep_alive, route);
        fail();
    }
}

static void test_simple_get(void** state)
{
    (void)state;
    HttpRequest r = parse(GET11 "\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
    assert_int_equal(r.keep_alive, 1);
    assert_int_equal(r.close, 0);
    assert_int_equal(r.minor, 1);
    assert_int_equal(r.head_only, 0);
    r = parse("HEAD /stats HTTP/1.1\r\nhOsT: x\r\nX-Other: a b\tc\r\n\r\n");
    assert_int_equal(r.route, HTTP_STATS_ROUTE);
    assert_int_equal(r.head_only, 1);
    /* HTTP/1.2 .. 1.9 are answered as 1.1. */
    r = parse("GET / HTTP/1.7\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
    assert_int_equal(r.minor, 1);
    /* absolute-form */
    r = parse("GET http://example.org/stats HTTP/1.1\r\nHost: example.org\r\n\r\n");
    assert_int_equal(r.route, HTTP_STATS_ROUTE);
    r = parse("GET https://example.org HTTP/1.1\r\nHost: example.org\r\n\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
}

static void test_http10(void** state)
{
    (void)state;
    HttpRequest r = parse("GET / HTTP/1.0\r\n\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
    assert_int_equal(r.keep_alive, 0);
    assert_int_equal(r.close, 0);
    r = parse("GET / HTTP/1.0\r\nConnection: Keep-Alive, Upgrade\r\n\r\n");
    assert_int_equal(r.keep_alive, 1);
    /* Expect is ignored in HTTP/1.0 requests. */
    r = parse("POST / HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    assert_int_equal(r.route, HTTP_POST_ROUTE);
    assert_int_equal(r.expect_continue, 0);
    assert_int_equal(r.content_length, 3);
    /* Transfer-Encoding in HTTP/1.0: faulty framing. */
    assert_error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_BAD_REQUEST);
}

static void test_connection_tokens(void** state)
{
    (void)state;
    HttpRequest r = parse(GET11 "Connection: close\r\n\r\n");
    assert_int_equal(r.keep_alive, 0);
    assert_int_equal(r.close, 0);
    r = parse(GET11 "Connection: upgrade, CLOSE\r\n\r\n");
    assert_int_equal(r.keep_alive, 0);
    /* Tokens, not substrings. */
    r = parse(GET11 "Connection: closed\r\n\r\n");
    assert_int_equal(r.keep_alive, 1);
}

static void test_host(void** state)
{
    (void)state;
    assert_error("GET / HTTP/1.1\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HTTP_BAD_REQUEST);
    HttpRequest r = parse("GET / HTTP/1.1\r\nHost:\r\n\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
}

static void test_content_length(void** state)
{
    (void)state;
    HttpRequest r = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  12 \r\n\r\n");
    assert_int_equal(r.route, HTTP_POST_ROUTE);
    assert_int_equal(r.content_length, 12);
    r = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0001000\r\n\r\n");
    assert_int_equal(r.content_length, 1000);
    /* The case that was found: strtoull skipped CR/LF and read 5 from the next line. */
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n5\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", HTTP_BAD_REQUEST);
    /* Duplicated, even with the same value, or conflicting. */
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
            HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n",
            HTTP_BAD_REQUEST);
    /* Above max_body (1000 here), and far above (saturated, no wrap). */
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", HTTP_TOO_LARGE);
    assert_error(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 123456789012345678901234567890\r\n\r\n",
            HTTP_TOO_LARGE);
    r = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n");
    assert_int_equal(r.route, HTTP_POST_ROUTE);
}

static void test_transfer_encoding(void** state)
{
    (void)state;
    HttpRequest r = parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n");
    assert_int_equal(r.route, HTTP_POST_ROUTE);
    assert_int_equal(r.chunked, 1);
    assert_int_equal(r.close, 0);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            HTTP_NOT_IMPLEMENTED);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            HTTP_NOT_IMPLEMENTED);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n",
            HTTP_NOT_IMPLEMENTED);
    /* Together with Content-Length: request smuggling territory. */
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n",
            HTTP_BAD_REQUEST);
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 "Content-Length: 5\r\n\r\n",
            HTTP_BAD_REQUEST);
}

static void test_expect(void** state)
{
    (void)state;
    HttpRequest r = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                          "Expect: 100-Continue\r\n\r\n");
    assert_int_equal(r.expect_continue, 1);
    /* Nothing to wait for without a body. */
    r = parse(GET11 "Expect: 100-continue\r\n\r\n");
    assert_int_equal(r.expect_continue, 0);
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
    assert_error(GET11 "Expect: something-else\r\n\r\n", HTTP_EXPECTATION);
    /* 413 wins over 100-continue: the body is never asked for. */
    assert_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n"
                 "Expect: 100-continue\r\n\r\n",
            HTTP_TOO_LARGE);
}

static void test_limits(void** state)
{
    (void)state;
    char head[600];
    /* A 64-byte request line fits; 65 bytes: 414. */
    snprintf(head, sizeof(head), "GET /%.*s HTTP/1.1\r\nHost: x\r\n\r\n", 64 - 14,
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    HttpRequest r = parse(head);
    assert_int_equal(r.route, HTTP_NOT_FOUND);
    assert_int_equal(r.close, 0);
    snprintf(head, sizeof(head), "GET /%.*s HTTP/1.1\r\nHost: x\r\n\r\n", 65 - 14,
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_error(head, HTTP_URI_TOO_LONG);
    /* The whole head above 256 bytes: 431. */
    memset(head, 0, sizeof(head));
    strcpy(head, GET11 "X-Pad: ");
    memset(head + strlen(head), 'p', 250);
    strcat(head, "\r\n\r\n");
    assert_error(head, HTTP_HEAD_TOO_LARGE);
}

static void test_request_line(void** state)
{
    (void)state;
    assert_error("GET / HTTP/2.0\r\nHost: x\r\n\r\n", HTTP_BAD_VERSION);
    assert_error("GET / HTTP/1.1x\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET / http/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET / HTTP/1.\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(" GET / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("GET / HTTP/1.1\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("garbage\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_BAD_REQUEST);
}

static void test_fields(void** state)
{
    (void)state;
    assert_error(GET11 "X-A : b\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 "X-A: b\r\n folded\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 "X-A: b\nX-B: c\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 "X-A: b\rX-B: c\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 "X-A: b\x01\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 ": b\r\n\r\n", HTTP_BAD_REQUEST);
    assert_error(GET11 "no colon\r\n\r\n", HTTP_BAD_REQUEST);
    /* obs-text is allowed in values. */
    HttpRequest r = parse(GET11 "X-A: caf\xc3\xa9\r\n\r\n");
    assert_int_equal(r.route, HTTP_HELLO_ROUTE);
}

static void test_methods_and_routes(void** state)
{
    (void)state;
    HttpRequest r = parse("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n");
    assert_int_equal(r.route, HTTP_BAD_METHOD);
    assert_string_equal(r.allow, "GET, HEAD, POST");
    assert_int_equal(r.close, 0);
    assert_int_equal(r.content_length, 2);
    r = parse("DELETE /stats HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_BAD_METHOD);
    assert_string_equal(r.allow, "GET, HEAD");
    assert_error("BREW / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_NOT_IMPLEMENTED);
    r = parse("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_NOT_FOUND);
    assert_int_equal(r.keep_alive, 1);
    r = parse("GET /sleep?ms=250 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_SLEEP_ROUTE);
    assert_int_equal(r.sleep_ms, 250);
    r = parse("GET /sleep HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_SLEEP_ROUTE);
    assert_int_equal(r.sleep_ms, 100);
    r = parse("GET /sleep?ms=60001 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_BAD_REQUEST);
    assert_int_equal(r.close, 0);
    r = parse("GET /bytes?n=1048576 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_BYTES_ROUTE);
    assert_int_equal(r.bytes, 1048576);
    r = parse("GET /bytes?n=1048577 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_BAD_REQUEST);
    r = parse("GET /bytes HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.bytes, 1024);
    r = parse("GET /stats?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_STATS_ROUTE);
    r = parse("HEAD /debug/flows HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_FLOWS_ROUTE);
    r = parse("POST /debug/flows HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(r.route, HTTP_BAD_METHOD);
    assert_string_equal(r.allow, "GET, HEAD");
    r = parse("GET /debug/flowsx HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(r.route, HTTP_NOT_FOUND);
}

/* A chunk-size line (without its CRLF) and what the parser makes of it:
 * the size, or -1 for malformed. A size that does not fit 64 bits
 * saturates, so the body limit refuses it (413). */
typedef struct ChunkCase {
    const char* line;
    int rc;
    uint64_t size;
} ChunkCase;

static const ChunkCase g_chunk_cases[] = {
    { "1a", 0, 26 },
    { "0", 0, 0 },
    { "A", 0, 10 },
    { "000000000000000000000005", 0, 5 }, /* leading zeros are digits, no overflow */
    { "ffffffffffffffff", 0, UINT64_MAX },
    { "10000000000000000", 0, UINT64_MAX }, /* 2^64: saturated */
    { "fffffffffffffffff", 0, UINT64_MAX },
    { "A;name=value", 0, 10 },
    { "A;name", 0, 10 },
    { "A;a;b=1;c=\"x y\"", 0, 10 },
    { "A ;x", 0, 10 },              /* BWS before ';' */
    { "A\t; x", 0, 10 },            /* BWS after ';' */
    { "A;x = y", 0, 10 },           /* BWS around '=' */
    { "A;x=\"q\\\"uote\"", 0, 10 }, /* a quoted-pair */
    { "A;x=\"\"", 0, 10 },          /* an empty quoted-string */
    { "", -1, 0 },
    { "g", -1, 0 },
    { "5 ", -1, 0 }, /* a blank without an extension after it */
    { " 5", -1, 0 },
    { "5\t", -1, 0 },
    { "10 x", -1, 0 },
    { "-1", -1, 0 },
    { "+1", -1, 0 },
    { "0x5", -1, 0 },
    { "5;", -1, 0 }, /* an extension without a name */
    { "5; ", -1, 0 },
    { "5;a ", -1, 0 }, /* a blank at the end */
    { "5;a=", -1, 0 }, /* '=' without a value */
    { "5;a=b c", -1, 0 },
    { "5;a b", -1, 0 },
    { "5;a=\"open", -1, 0 }, /* an unterminated quoted-string */
    { "5;a=\"x\"y", -1, 0 },
    { "5;a=\"\x01\"", -1, 0 },
    { "5;a@b", -1, 0 }, /* '@' is not a tchar */
    { "5;=b", -1, 0 },
    { "5,6", -1, 0 },
    { "1;\x01", -1, 0 },
    { "5\r", -1, 0 }, /* a bare CR */
    { "5;a\rb", -1, 0 },
    { "5\n", -1, 0 }, /* a bare LF */
    { "5;a=\"\n\"", -1, 0 },
};

static void test_chunk_size(void** state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(g_chunk_cases) / sizeof(g_chunk_cases[0]); ++i) {
        const ChunkCase* k = &g_chunk_cases[i];
        uint64_t v = 12345;
        int rc = http_parse_chunk_size(k->line, strlen(k->line), &v);
        if (rc != k->rc || (rc == 0 && v != k->size)) {
            print_error("chunk-size line \"%s\": rc %d size %llu, expected rc %d size %llu\n",
                    k->line, rc, (unsigned long long)v, k->rc, (unsigned long long)k->size);
            fail();
        }
    }
}

/* The line structure of heads and trailer sections: what is seen of it
 * (p, with `before` bytes taken already) and the verdict. */
typedef struct ScanCase {
    const char* bytes;
    size_t before;
    size_t max;
    int result;
    size_t n; /* DONE: the end; MORE: the complete lines */
} ScanCase;

static const ScanCase g_scan_cases[] = {
    { "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, 100, HTTP_SCAN_DONE, 27 },
    { "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", 0, 100, HTTP_SCAN_DONE, 27 },
    { "\r\n\r\n", 0, 100, HTTP_SCAN_DONE, 4 }, /* empty lines only */
    { "\r\nGET / HTTP/1.1\r\n\r\n", 0, 100, HTTP_SCAN_DONE, 20 },
    { "\r\n", 1, 100, HTTP_SCAN_DONE, 2 }, /* a trailer section's end */
    { "GET / HTTP/1.1\r\nHo", 0, 100, HTTP_SCAN_MORE, 16 },
    { "GET / HTTP/1.1\r", 0, 100, HTTP_SCAN_MORE, 0 }, /* a CR waits for its LF */
    { "GET / HTTP/1.1\nHost: x\n\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "GET / HTTP/1.1\r\nHost: x\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "GET / HTTP/1.1\rHost: x\r\n\r\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "GET / HTTP/1.1\r\n\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "GET / HTTP/1.1\r\n\r\r\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "\n", 0, 100, HTTP_SCAN_BAD, 0 },
    { "GET / HTTP/1.1\r\n\r\n", 0, 18, HTTP_SCAN_DONE, 18 }, /* exactly max */
    { "GET / HTTP/1.1\r\n\r\n", 0, 17, HTTP_SCAN_FULL, 0 },
    { "X: 1\r\n\r\n", 10, 17, HTTP_SCAN_FULL, 0 },
    { "X: 1\r\n\r\n", 10, 18, HTTP_SCAN_DONE, 8 },
    { "", 10, 10, HTTP_SCAN_FULL, 0 },
    { "", 0, 10, HTTP_SCAN_MORE, 0 },
};

static void test_head_scan(void** state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(g_scan_cases) / sizeof(g_scan_cases[0]); ++i) {
        const ScanCase* k = &g_scan_cases[i];
        size_t n = 999;
        int r = http_head_scan(k->bytes, strlen(k->bytes), k->before, k->max, &n);
        if (r != k->result || ((r == HTTP_SCAN_DONE || r == HTTP_SCAN_MORE) && n != k->n)) {
            print_error("scan of \"%s\" (before %zu, max %zu): %d n %zu, expected %d n %zu\n",
                    k->bytes, k->before, k->max, r, n, k->result, k->n);
            fail();
        }
    }
}

static void test_responses(void** state)
{
    (void)state;
    http_canned_init();
    const HttpCanned* c = http_response(HTTP_HELLO_ROUTE, 1, 0);
    assert_string_equal(c->text,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
            "Connection: keep-alive\r\n\r\nHello from AsyncSteps\n");
    c = http_response(HTTP_HELLO_ROUTE, 0, 1);
    assert_string_equal(c->text,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n"
            "Connection: close\r\n\r\n");
    c = http_response(HTTP_FULL, 0, 0);
    assert_non_null(strstr(c->text, "503 Service Unavailable\r\n"));
    assert_non_null(strstr(c->text, "Retry-After: 1\r\n"));
    for (int r = 0; r < HTTP_ROUTES; ++r) {
        assert_true(http_response(r, 1, 1)->len > 0);
    }
    char buf[256];
    size_t n = http_format(buf, sizeof(buf), HTTP_BAD_METHOD, 1, 0, "x\n", "GET, HEAD");
    assert_true(n > 0);
    assert_non_null(strstr(buf, "\r\nAllow: GET, HEAD\r\n"));
    volatile size_t small = 10; /* at run time: no truncation warning */
    assert_int_equal(http_format(buf, small, HTTP_BAD_METHOD, 1, 0, "x\n", NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_get),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_connection_tokens),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_transfer_encoding),
        cmocka_unit_test(test_expect),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_request_line),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_methods_and_routes),
        cmocka_unit_test(test_chunk_size),
        cmocka_unit_test(test_head_scan),
        cmocka_unit_test(test_responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
