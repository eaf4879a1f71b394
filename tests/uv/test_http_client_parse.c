/* SPDX-License-Identifier: MIT */
/*
 * The response parser of the example client (examples/uv/http_response.h),
 * fed raw response bytes in-process. Each row is one response as it would
 * come from a server, and what the client must make of it: the status and
 * the decoded body, or the error it reports. Every row runs with the bytes
 * in one piece, one byte at a time, 7 at a time and in 8 fixed sequences of
 * pieces of 1..16 bytes, with the same expected outcome (where a read
 * happens to split a response must not matter).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "../../examples/uv/http_response.h"

/* The body limit of these tests (the client's is 64 MiB). */
#define MAX_BODY_T 1000u

enum { ENDS_OPEN = 0, ENDS_EOF = 1 };
#define WAITS (-1)

typedef struct RespCase {
    const char* what;
    const char* bytes;
    size_t len;        /* 0: strlen(bytes) */
    int eof;           /* ENDS_EOF: the server closes after the bytes */
    int status;        /* > 0: a response with this status; WAITS: none yet, more
                        * bytes are needed; 0: an error */
    const char* body;  /* the decoded body (status > 0) */
    const char* error; /* status 0: a part of the error text */
    int truncated;     /* status 0: the error is a response cut short */
} RespCase;

typedef struct Sink {
    char buf[2048];
    size_t len;
    int overflow;
} Sink;

static void sink_body(void* ctx, const char* p, size_t n)
{
    Sink* s = ctx;
    if (n > sizeof(s->buf) - 1 - s->len) {
        s->overflow = 1;
        return;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

#define OK200 "HTTP/1.1 200 OK\r\n"
#define CHUNKED OK200 "Transfer-Encoding: chunked\r\n\r\n"
#define CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

static const RespCase g_cases[] = {
    /* well-framed */
    { "Content-Length", OK200 "Content-Length: 5\r\n\r\nhello", 0, ENDS_OPEN, 200, "hello", NULL,
            0 },
    { "Content-Length 0", OK200 "Content-Length: 0\r\n\r\n", 0, ENDS_OPEN, 200, "", NULL, 0 },
    { "Content-Length with blanks and zeros", OK200 "Content-Length: \t0005 \r\n\r\nhello", 0,
            ENDS_OPEN, 200, "hello", NULL, 0 },
    { "chunked hello", CHUNKED "5\r\nhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 200, "hello", NULL, 0 },
    { "chunked, two chunks", CHUNKED "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 0, ENDS_OPEN, 200,
            "hello world", NULL, 0 },
    { "chunked, extensions", CHUNKED "5;a=b ; c=\"d e\"\r\nhello\r\n0;x\r\n\r\n", 0, ENDS_OPEN, 200,
            "hello", NULL, 0 },
    { "chunked, hex sizes", CHUNKED "A\r\n0123456789\r\n00001\r\nx\r\n0\r\n\r\n", 0, ENDS_OPEN, 200,
            "0123456789x", NULL, 0 },
    { "chunked, trailers", CHUNKED "2\r\nok\r\n0\r\nX-A: 1\r\nX-B: two words\r\n\r\n", 0, ENDS_OPEN,
            200, "ok", NULL, 0 },
    { "chunked, empty body", CHUNKED "0\r\n\r\n", 0, ENDS_OPEN, 200, "", NULL, 0 },
    { "chunked, any case", OK200 "transfer-encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 0,
            ENDS_OPEN, 200, "ok", NULL, 0 },
    { "chunked, empty list elements",
            OK200 "Transfer-Encoding: , chunked,\r\n\r\n2\r\nok\r\n0\r\n\r\n", 0, ENDS_OPEN, 200,
            "ok", NULL, 0 },
    { "body to the end", OK200 "Content-Type: text/plain\r\n\r\nabc", 0, ENDS_EOF, 200, "abc", NULL,
            0 },
    { "HTTP/1.0 body to the end", "HTTP/1.0 200 OK\r\n\r\nabc", 0, ENDS_EOF, 200, "abc", NULL, 0 },
    { "100 Continue skipped", CONTINUE OK200 "Content-Length: 2\r\n\r\nok", 0, ENDS_OPEN, 200, "ok",
            NULL, 0 },
    { "two 100 Continue skipped", CONTINUE CONTINUE OK200 "Content-Length: 2\r\n\r\nok", 0,
            ENDS_OPEN, 200, "ok", NULL, 0 },
    { "103 Early Hints skipped",
            "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n" OK200
            "Content-Length: 2\r\n\r\nok",
            0, ENDS_OPEN, 200, "ok", NULL, 0 },
    { "1xx with a Content-Length",
            "HTTP/1.1 100 Continue\r\nContent-Length: 9\r\n\r\n" OK200
            "Content-Length: 2\r\n\r\nok",
            0, ENDS_OPEN, 200, "ok", NULL, 0 },
    { "equal Content-Length fields", OK200 "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 0,
            ENDS_OPEN, 200, "hello", NULL, 0 },
    { "equal Content-Length list", OK200 "Content-Length: 5, 5\r\n\r\nhello", 0, ENDS_OPEN, 200,
            "hello", NULL, 0 },
    { "204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", 0, ENDS_OPEN, 204, "", NULL, 0 },
    { "304 has no body, whatever its length",
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 0, ENDS_OPEN, 304, "", NULL,
            0 },
    { "empty reason phrase", "HTTP/1.1 404 \r\nContent-Length: 1\r\n\r\nx", 0, ENDS_OPEN, 404, "x",
            NULL, 0 },
    { "status 599", "HTTP/1.1 599 Odd\r\nContent-Length: 0\r\n\r\n", 0, ENDS_OPEN, 599, "", NULL,
            0 },
    { "status 100 is interim, 199 too",
            "HTTP/1.1 199 Odd\r\n\r\n" OK200 "Content-Length: 0\r\n\r\n", 0, ENDS_OPEN, 200, "",
            NULL, 0 },
    { "Content-Length of max_body", OK200 "Content-Length: 1000\r\n\r\n", 0, ENDS_OPEN, WAITS, NULL,
            NULL, 0 },

    /* status line */
    { "status of 11 digits", "HTTP/1.1 99999999999 OK\r\nContent-Length: 0\r\n\r\n", 0, ENDS_OPEN,
            0, NULL, "status code is not 3 digits", 0 },
    { "status of 4 digits", "HTTP/1.1 2000 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "status of 2 digits", "HTTP/1.1 20 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "status below 100", "HTTP/1.1 099 Odd\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "status above 599", "HTTP/1.1 600 Odd\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "status not followed by a space", "HTTP/1.1 200\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "signed status", "HTTP/1.1 +20 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "status code is not 3 digits", 0 },
    { "HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL, "HTTP version 2.0 is not 1.x",
            0 },
    { "not HTTP", "ICY 200 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL, "not an HTTP/1.x status line", 0 },
    { "no space after the version", "HTTP/1.1200 OK\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "not an HTTP/1.x status line", 0 },
    { "control character in the reason", "HTTP/1.1 200 O\x01K\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "invalid character in the reason phrase", 0 },
    { "101 Switching Protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", 0,
            ENDS_OPEN, 0, NULL, "101 Switching Protocols: no upgrade was asked for", 0 },

    /* Content-Length and Transfer-Encoding */
    { "conflicting Content-Length fields",
            OK200 "Content-Length: 5\r\nContent-Length: 2\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "conflicting Content-Length values", 0 },
    { "conflicting Content-Length list", OK200 "Content-Length: 2, 5\r\n\r\nhello", 0, ENDS_OPEN, 0,
            NULL, "conflicting Content-Length values", 0 },
    { "Content-Length 2abc", OK200 "Content-Length: 2abc\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "invalid Content-Length", 0 },
    { "Content-Length -5", OK200 "Content-Length: -5\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "invalid Content-Length", 0 },
    { "Content-Length +5", OK200 "Content-Length: +5\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "invalid Content-Length", 0 },
    { "empty Content-Length", OK200 "Content-Length: \r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "invalid Content-Length", 0 },
    { "Content-Length list with a hole", OK200 "Content-Length: 5,\r\n\r\nhello", 0, ENDS_OPEN, 0,
            NULL, "invalid Content-Length", 0 },
    { "Content-Length 1 2", OK200 "Content-Length: 1 2\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "invalid Content-Length", 0 },
    { "Content-Length above max_body", OK200 "Content-Length: 1001\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "Content-Length above the 1000 bytes limit", 0 },
    { "Content-Length beyond 64 bits", OK200 "Content-Length: 99999999999999999999999\r\n\r\n", 0,
            ENDS_OPEN, 0, NULL, "Content-Length above the 1000 bytes limit", 0 },
    { "Transfer-Encoding with Content-Length",
            OK200 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            0, ENDS_OPEN, 0, NULL, "both Transfer-Encoding and Content-Length", 0 },
    { "Transfer-Encoding gzip", OK200 "Transfer-Encoding: gzip\r\n\r\nxx", 0, ENDS_EOF, 0, NULL,
            "unsupported Transfer-Encoding", 0 },
    { "Transfer-Encoding gzip, chunked", OK200 "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            0, ENDS_OPEN, 0, NULL, "unsupported Transfer-Encoding", 0 },
    { "chunked twice",
            OK200 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0,
            ENDS_OPEN, 0, NULL, "unsupported Transfer-Encoding", 0 },
    { "chunked with a parameter", OK200 "Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", 0,
            ENDS_OPEN, 0, NULL, "unsupported Transfer-Encoding", 0 },
    { "Transfer-Encoding in HTTP/1.0",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "Transfer-Encoding in an HTTP/1.0 response", 0 },

    /* the head */
    { "bare LF head", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in the response head", 0 },
    { "bare LF ending the head", OK200 "Content-Length: 0\r\n\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in the response head", 0 },
    { "bare CR in the head", OK200 "Content-Length: 0\rX: y\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare CR in the response head", 0 },
    { "bare CR after the status line", "HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", 0, ENDS_OPEN,
            0, NULL, "bare CR in the response head", 0 },
    { "obs-fold", OK200 "X-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "obsolete line folding", 0 },
    { "blank before the colon", OK200 "Content-Length : 5\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "malformed header field", 0 },
    { "field without a colon", OK200 "Content-Length 5\r\n\r\nhello", 0, ENDS_OPEN, 0, NULL,
            "malformed header field", 0 },
    { "NUL in a field value", OK200 "X-A: a\0b\r\nContent-Length: 0\r\n\r\n",
            sizeof(OK200 "X-A: a\0b\r\nContent-Length: 0\r\n\r\n") - 1, ENDS_OPEN, 0, NULL,
            "malformed header field", 0 },

    /* the chunked body */
    { "garbage as chunked", CHUNKED "hello world\r\n", 0, ENDS_EOF, 0, NULL,
            "malformed chunk-size line", 0 },
    { "bare LF after chunk size", CHUNKED "5\nhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in a chunk-size line", 0 },
    { "bare LF after chunk data", CHUNKED "5\r\nhello\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "chunk data not followed by CRLF", 0 },
    { "bare LF after the last chunk", CHUNKED "5\r\nhello\r\n0\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in a chunk-size line", 0 },
    { "bare LF ending the trailer", CHUNKED "5\r\nhello\r\n0\r\n\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in the trailer section", 0 },
    { "bare LF after a trailer line", CHUNKED "0\r\nX-A: 1\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare LF in the trailer section", 0 },
    { "bare CR after chunk size", CHUNKED "5\rhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare CR in a chunk-size line", 0 },
    { "bare CR after chunk data", CHUNKED "5\r\nhello\rX0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "chunk data not followed by CRLF", 0 },
    { "bare CR in the trailer", CHUNKED "0\r\nX-A: 1\rX\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "bare CR in the trailer section", 0 },
    { "blank after chunk size", CHUNKED "5 \r\nhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "malformed chunk-size line", 0 },
    { "signed chunk size", CHUNKED "+5\r\nhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "malformed chunk-size line", 0 },
    { "';' without a name", CHUNKED "5;\r\nhello\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "malformed chunk-size line", 0 },
    { "chunk data longer than its size", CHUNKED "5\r\nhelloXX\r\n0\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "chunk data not followed by CRLF", 0 },
    { "chunk size beyond 64 bits", CHUNKED "10000000000000000\r\n", 0, ENDS_OPEN, 0, NULL,
            "chunked body above the 1000 bytes limit", 0 },
    { "a chunk of max_body", CHUNKED "3e8\r\n", 0, ENDS_OPEN, WAITS, NULL, NULL, 0 },
    { "a chunk above max_body", CHUNKED "3e9\r\n", 0, ENDS_OPEN, 0, NULL,
            "chunked body above the 1000 bytes limit", 0 },
    { "malformed trailer field", CHUNKED "0\r\nNoColon\r\n\r\n", 0, ENDS_OPEN, 0, NULL,
            "malformed trailer field", 0 },

    /* cut short */
    { "nothing at all", "", 0, ENDS_EOF, 0, NULL, "connection closed without a response", 1 },
    { "closed in the head", OK200 "Content-Len", 0, ENDS_EOF, 0, NULL,
            "connection closed in the response head", 1 },
    { "closed in the body", OK200 "Content-Length: 5\r\n\r\nhe", 0, ENDS_EOF, 0, NULL,
            "connection closed after 2 of 5 body bytes", 1 },
    { "closed before the last chunk", CHUNKED "5\r\nhello\r\n", 0, ENDS_EOF, 0, NULL,
            "connection closed in the chunked body", 1 },
    { "closed in the trailer", CHUNKED "0\r\nX-A: 1\r\n", 0, ENDS_EOF, 0, NULL,
            "connection closed in the chunked body", 1 },
    { "closed after a 100 Continue", CONTINUE, 0, ENDS_EOF, 0, NULL,
            "connection closed in the response head", 1 },
};

/* Feeds a case whole (step 0), `step` bytes at a time, or (seed > 0) in
 * pieces of 1..16 bytes drawn from a fixed pseudo-random sequence, then the
 * EOF if the case has one. Returns 1 when the outcome matches. */
static int run_case_seeded(const RespCase* k, size_t step, uint32_t seed)
{
    const uint32_t seed0 = seed;
    size_t len = k->len ? k->len : strlen(k->bytes);
    HttpResponse* r = malloc(sizeof(*r));
    Sink* sink = calloc(1, sizeof(*sink));
    assert_non_null(r);
    assert_non_null(sink);
    http_response_init(r, MAX_BODY_T, sink_body, sink);
    size_t used = 0;
    for (size_t off = 0; off < len && r->state != HR_DONE && r->state != HR_ERROR;) {
        size_t piece = step;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            piece = 1 + (seed >> 16) % 16;
        }
        size_t n = piece && len - off > piece ? piece : len - off;
        size_t k_used = http_response_feed(r, k->bytes + off, n);
        used += k_used;
        off += n;
    }
    if (k->eof) {
        http_response_eof(r);
    }
    int ok;
    if (k->status > 0) {
        ok = r->state == HR_DONE && r->status == k->status && sink->len == strlen(k->body)
                && memcmp(sink->buf, k->body, sink->len) == 0 && r->body_len == sink->len
                && used == len; /* a complete response takes exactly its bytes */
    } else if (k->status == WAITS) {
        ok = r->state != HR_DONE && r->state != HR_ERROR && used == len;
    } else {
        ok = r->state == HR_ERROR && strstr(r->error, k->error) != NULL
                && r->truncated == k->truncated;
    }
    if (!ok) {
        print_error("case \"%s\" (pieces of %zu bytes, seed %u): state %d status %d body "
                    "\"%.*s\" error \"%s\"\n",
                k->what, step ? step : len, (unsigned)seed0, r->state, r->status, (int)sink->len,
                sink->buf, r->error);
    }
    free(r);
    free(sink);
    return ok;
}

static int run_case(const RespCase* k, size_t step)
{
    return run_case_seeded(k, step, 0);
}

static void test_response_table(void** state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(g_cases) / sizeof(g_cases[0]); ++i) {
        failed += !run_case(&g_cases[i], 0);
        failed += !run_case(&g_cases[i], 1);
        failed += !run_case(&g_cases[i], 7);
        for (uint32_t seed = 1; seed <= 8; ++seed) {
            failed += !run_case_seeded(&g_cases[i], 0, seed);
        }
    }
    assert_int_equal(failed, 0);
}

/* Bytes after a complete response are not taken (the client drops them:
 * it asked for Connection: close). */
static void test_bytes_after_the_response(void** state)
{
    (void)state;
    static const char bytes[] = OK200 "Content-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n";
    HttpResponse* r = malloc(sizeof(*r));
    assert_non_null(r);
    http_response_init(r, MAX_BODY_T, NULL, NULL);
    size_t used = http_response_feed(r, bytes, sizeof(bytes) - 1);
    assert_int_equal(r->state, HR_DONE);
    assert_int_equal(used, sizeof(OK200 "Content-Length: 2\r\n\r\nok") - 1);
    assert_int_equal(r->body_len, 2);
    free(r);
}

/* Built at run time: the limits of a head, a trailer section and the
 * number of interim responses. */
static void test_limits(void** state)
{
    (void)state;
    size_t cap = 40000;
    char* big = malloc(cap);
    assert_non_null(big);
    /* A head of exactly HTTP_RESPONSE_MAX_HEAD bytes, and one byte more. */
    for (int extra = 0; extra <= 1; ++extra) {
        size_t fixed = strlen(OK200 "X: \r\nContent-Length: 0\r\n\r\n");
        size_t pad = HTTP_RESPONSE_MAX_HEAD - fixed + (size_t)extra;
        int n = snprintf(big, cap, OK200 "X: %0*d\r\nContent-Length: 0\r\n\r\n", (int)pad, 0);
        assert_int_equal((size_t)n, HTTP_RESPONSE_MAX_HEAD + (size_t)extra);
        RespCase k = { "head at the limit", big, 0, ENDS_OPEN, 200, "", NULL, 0 };
        RespCase over = { "head over the limit", big, 0, ENDS_OPEN, 0, NULL,
            "the response head is longer than 16384 bytes", 0 };
        assert_true(run_case(extra ? &over : &k, 0));
        assert_true(run_case(extra ? &over : &k, 1000));
    }
    /* A trailer section over the limit. */
    int n = snprintf(big, cap, CHUNKED "0\r\nX: %020000d\r\n\r\n", 0);
    assert_true(n > 0);
    RespCase trailer = { "trailer over the limit", big, 0, ENDS_OPEN, 0, NULL,
        "the trailer section is longer than 16384 bytes", 0 };
    assert_true(run_case(&trailer, 0));
    /* A chunk-size line over its limit (long extensions). */
    n = snprintf(big, cap, CHUNKED "1;x=%05000d\r\nx\r\n0\r\n\r\n", 0);
    assert_true(n > 0);
    RespCase size_line = { "chunk-size line over the limit", big, 0, ENDS_OPEN, 0, NULL,
        "a chunk-size line is longer than 4096 bytes", 0 };
    assert_true(run_case(&size_line, 0));
    /* Interim responses: 16 are skipped, the 17th is too many. */
    for (int count = 16; count <= 17; ++count) {
        size_t off = 0;
        for (int i = 0; i < count; ++i) {
            off += (size_t)snprintf(big + off, cap - off, CONTINUE);
        }
        snprintf(big + off, cap - off, OK200 "Content-Length: 2\r\n\r\nok");
        RespCase fine = { "16 interim responses", big, 0, ENDS_OPEN, 200, "ok", NULL, 0 };
        RespCase many = { "17 interim responses", big, 0, ENDS_OPEN, 0, NULL,
            "more than 16 interim (1xx) responses", 0 };
        assert_true(run_case(count == 16 ? &fine : &many, 0));
    }
    /* A body to the end of the connection above max_body. */
    n = snprintf(big, cap, OK200 "\r\n%01001d", 0);
    assert_true(n > 0);
    RespCase to_eof = { "body to the end above max_body", big, 0, ENDS_EOF, 0, NULL,
        "response body above the 1000 bytes limit", 0 };
    assert_true(run_case(&to_eof, 0));
    assert_true(run_case(&to_eof, 100));
    /* Chunks that add up to max_body, and to one byte more. */
    n = snprintf(big, cap, CHUNKED "3e7\r\n%0999d\r\n1\r\nx\r\n0\r\n\r\n", 0);
    assert_true(n > 0);
    HttpResponse* r = malloc(sizeof(*r));
    assert_non_null(r);
    http_response_init(r, MAX_BODY_T, NULL, NULL);
    http_response_feed(r, big, (size_t)n);
    assert_int_equal(r->state, HR_DONE);
    assert_int_equal(r->body_len, 1000);
    n = snprintf(big, cap, CHUNKED "3e8\r\n%01000d\r\n1\r\nx\r\n0\r\n\r\n", 0);
    RespCase sum = { "chunks above max_body", big, 0, ENDS_OPEN, 0, NULL,
        "chunked body above the 1000 bytes limit", 0 };
    assert_true(run_case(&sum, 0));
    free(r);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_response_table),
        cmocka_unit_test(test_bytes_after_the_response),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
