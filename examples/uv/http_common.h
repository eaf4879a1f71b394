/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 bits shared by the AsyncSteps server (examples/uv/http_srv.c),
 * the plain libuv server of the benchmark (bench/uv/uv_plain_server.c) and
 * the parser test (tests/uv/test_http_parse.c): strict request-head parsing
 * (RFC 9110/9112), chunk-size lines, and the canned responses. Sharing them
 * keeps the benchmark about the I/O and control flow, not about two
 * different parsers.
 *
 * Framing rules (RFC 9112), each answered before any body byte is read:
 *  - request line "METHOD SP request-target SP HTTP/1.x CRLF": single
 *    spaces, a token method, a target of visible characters; longer than
 *    max_line: 414; HTTP/1.2..1.9 are answered as 1.1; another major version:
 *    505; anything else malformed: 400;
 *  - header fields "name: value CRLF": a token name right before the colon,
 *    no line folding, no control characters but HTAB in values: else 400;
 *  - Content-Length: digits only (surrounding blanks allowed); a second
 *    Content-Length field (even an equal one), a list, a sign or anything
 *    else: 400; above max_body: 413;
 *  - Transfer-Encoding: exactly "chunked" is supported; any other coding or
 *    a second field: 501; together with Content-Length: 400; in an HTTP/1.0
 *    request: 400;
 *  - HTTP/1.1 without exactly one Host field: 400;
 *  - Expect: "100-continue" is answered with 100 Continue before the body
 *    is read (not for HTTP/1.0 requests, RFC 9110 10.1.1); another
 *    expectation: 417;
 *  - Connection: the tokens "close" and "keep-alive" (a list, any case);
 *  - every line ends in CRLF: a bare CR or LF anywhere in the head: 400.
 * A chunked body (http_srv.c, with http_syntax.h): chunk-size lines of
 * exactly RFC 9112 7.1 (http_parse_chunk_size()), CRLF after each chunk's
 * data, trailer field lines like header fields; else 400; chunks adding up
 * to more than max_body (a size beyond 64 bits included): 413; a trailer
 * section above max_head: 431.
 * Every error response closes the connection (the request's framing cannot
 * be trusted any more); 404/405 keep it open (the body is read first).
 */
#ifndef FUTOIN_EXAMPLE_HTTP_COMMON_H
#define FUTOIN_EXAMPLE_HTTP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_syntax.h"

#define HTTP_HELLO "Hello from AsyncSteps\n"
/* The longest /sleep?ms= accepted, the largest /bytes?n=. */
#define HTTP_MAX_SLEEP_MS 60000u
#define HTTP_MAX_BYTES (1024u * 1024u)

/* Size limits of a request. */
typedef struct HttpLimits {
    size_t max_line;   /* request line without its CRLF: 414 above */
    size_t max_head;   /* request line + fields + the empty line: 431 above */
    uint64_t max_body; /* Content-Length or chunked total: 413 above */
} HttpLimits;

#define HTTP_LIMITS_DEFAULT                                                                        \
    {                                                                                              \
        8192u, 16384u, 1024u * 1024u                                                               \
    }

enum HttpRoute {
    HTTP_HELLO_ROUTE = 0, /* GET/HEAD /: 200 */
    HTTP_STATS_ROUTE,     /* GET/HEAD /stats: 200, dynamic body */
    HTTP_POST_ROUTE,      /* POST /: 200 "received N bytes" (dynamic) */
    HTTP_SLEEP_ROUTE,     /* GET/HEAD /sleep?ms=N: 200 after N ms */
    HTTP_BYTES_ROUTE,     /* GET/HEAD /bytes?n=N: 200 with N bytes */
    HTTP_FLOWS_ROUTE,     /* GET/HEAD /debug/flows: 200, the loop's flow dump
                           * (a server that does not enable it answers 404) */
    HTTP_NOT_FOUND,       /* 404 */
    HTTP_BAD_METHOD,      /* 405 */
    HTTP_BAD_REQUEST,     /* 400 */
    HTTP_TIMEOUT,         /* 408 */
    HTTP_TOO_LARGE,       /* 413 */
    HTTP_URI_TOO_LONG,    /* 414 */
    HTTP_EXPECTATION,     /* 417 */
    HTTP_HEAD_TOO_LARGE,  /* 431 */
    HTTP_NOT_IMPLEMENTED, /* 501: transfer coding or method */
    HTTP_BUSY,            /* 503: the Limiter rejected the request */
    HTTP_OVERLOADED,      /* 503: input budget spent, or draining */
    HTTP_FULL,            /* 503: too many connections */
    HTTP_BAD_VERSION,     /* 505 */
    HTTP_ROUTES
};

enum HttpMethod { HTTP_M_OTHER = 0, HTTP_M_GET, HTTP_M_HEAD, HTTP_M_POST, HTTP_M_KNOWN };

typedef struct HttpRequest {
    int route;
    int method;
    int head_only;  /* HEAD: headers without the body */
    int keep_alive; /* the connection may carry another request */
    int close;      /* framing broken or unknown: answer, then close */
    int minor;      /* HTTP/1.minor (0 or 1) */
    int chunked;    /* Transfer-Encoding: chunked */
    int expect_continue;
    uint64_t content_length;
    uint32_t sleep_ms;
    uint32_t bytes;
    const char* allow; /* 405: the Allow field value */
} HttpRequest;

/* Calls the token check on each comma-separated element of [s, e): sets
 * bits 1 (close) and 2 (keep-alive). */
static inline int http_connection_tokens(const char* s, const char* e)
{
    int bits = 0;
    while (s < e) {
        const char* comma = memchr(s, ',', (size_t)(e - s));
        const char* te = comma ? comma : e;
        const char* ts = s;
        http_trim(&ts, &te);
        if (http_ieq(ts, (size_t)(te - ts), "close")) {
            bits |= 1;
        } else if (http_ieq(ts, (size_t)(te - ts), "keep-alive")) {
            bits |= 2;
        }
        s = comma ? comma + 1 : e;
    }
    return bits;
}

/* Sets an error route: the response closes the connection. */
static inline void http_fail(HttpRequest* r, int route)
{
    r->route = route;
    r->close = 1;
    r->keep_alive = 0;
}

/* The route of a valid request: method and path. */
static inline void http_route(HttpRequest* r, const char* target, size_t tlen)
{
    /* absolute-form: http://authority/path -> /path */
    if (tlen >= 7
            && (http_ieq(target, 7, "http://") || (tlen >= 8 && http_ieq(target, 8, "https://")))) {
        const char* auth = target + (http_lower((unsigned char)target[4]) == 's' ? 8 : 7);
        const char* slash = memchr(auth, '/', tlen - (size_t)(auth - target));
        if (!slash) {
            target = "/";
            tlen = 1;
        } else {
            tlen -= (size_t)(slash - target);
            target = slash;
        }
    }
    if (tlen == 0 || target[0] != '/') {
        http_fail(r, HTTP_BAD_REQUEST);
        return;
    }
    const char* q = memchr(target, '?', tlen);
    size_t plen = q ? (size_t)(q - target) : tlen;
    int get_head = r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
    if (plen == 1) {
        if (get_head) {
            r->route = HTTP_HELLO_ROUTE;
        } else if (r->method == HTTP_M_POST) {
            r->route = HTTP_POST_ROUTE;
        } else {
            r->route = HTTP_BAD_METHOD;
            r->allow = "GET, HEAD, POST";
        }
        return;
    }
    if (plen == 6 && memcmp(target, "/stats", 6) == 0) {
        r->route = get_head ? HTTP_STATS_ROUTE : HTTP_BAD_METHOD;
        r->allow = "GET, HEAD";
        return;
    }
    if (plen == 12 && memcmp(target, "/debug/flows", 12) == 0) {
        r->route = get_head ? HTTP_FLOWS_ROUTE : HTTP_BAD_METHOD;
        r->allow = "GET, HEAD";
        return;
    }
    if (plen == 6 && memcmp(target, "/sleep", 6) == 0) {
        r->route = get_head ? HTTP_SLEEP_ROUTE : HTTP_BAD_METHOD;
        r->allow = "GET, HEAD";
        r->sleep_ms = 100;
        if (q) {
            const char* qs = q + 1;
            const char* qe = target + tlen;
            uint64_t ms;
            if ((size_t)(qe - qs) > 3 && memcmp(qs, "ms=", 3) == 0
                    && http_digits(qs + 3, qe, &ms) == 0 && ms <= HTTP_MAX_SLEEP_MS) {
                r->sleep_ms = (uint32_t)ms;
            } else if (r->route == HTTP_SLEEP_ROUTE) {
                r->route = HTTP_BAD_REQUEST; /* the body (if any) is still framed */
            }
        }
        return;
    }
    if (plen == 6 && memcmp(target, "/bytes", 6) == 0) {
        r->route = get_head ? HTTP_BYTES_ROUTE : HTTP_BAD_METHOD;
        r->allow = "GET, HEAD";
        r->bytes = 1024;
        if (q) {
            const char* qs = q + 1;
            const char* qe = target + tlen;
            uint64_t n;
            if ((size_t)(qe - qs) > 2 && memcmp(qs, "n=", 2) == 0
                    && http_digits(qs + 2, qe, &n) == 0 && n <= HTTP_MAX_BYTES) {
                r->bytes = (uint32_t)n;
            } else if (r->route == HTTP_BYTES_ROUTE) {
                r->route = HTTP_BAD_REQUEST;
            }
        }
        return;
    }
    r->route = HTTP_NOT_FOUND;
}

/* Parses a request head: the request line, the fields and the empty line
 * (len bytes, ending in "\r\n\r\n"). Fills *r; an error route sets
 * r->close. */
static inline void http_parse_head(const char* head, size_t len, const HttpLimits* lim,
        HttpRequest* r)
{
    memset(r, 0, sizeof(*r));
    r->route = HTTP_BAD_REQUEST;
    r->close = 1;
    const char* end = head + len;
    if (len > lim->max_head) {
        http_fail(r, HTTP_HEAD_TOO_LARGE);
        return;
    }
    /* ---- request line ---- */
    const char* cr = memchr(head, '\r', len);
    if (!cr || cr + 1 >= end || cr[1] != '\n') {
        return;
    }
    size_t llen = (size_t)(cr - head);
    if (llen > lim->max_line) {
        http_fail(r, HTTP_URI_TOO_LONG);
        return;
    }
    const char* sp1 = memchr(head, ' ', llen);
    if (!sp1 || sp1 == head) {
        return;
    }
    for (const char* p = head; p < sp1; ++p) {
        if (!http_tchar((unsigned char)*p)) {
            return;
        }
    }
    const char* target = sp1 + 1;
    const char* sp2 = memchr(target, ' ', (size_t)(cr - target));
    if (!sp2 || sp2 == target) {
        return;
    }
    for (const char* p = target; p < sp2; ++p) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c == 0x7f) {
            return;
        }
    }
    const char* ver = sp2 + 1;
    if (cr - ver != 8 || memcmp(ver, "HTTP/", 5) != 0 || ver[6] != '.' || ver[5] < '0'
            || ver[5] > '9' || ver[7] < '0' || ver[7] > '9') {
        return;
    }
    if (ver[5] != '1') {
        http_fail(r, HTTP_BAD_VERSION);
        return;
    }
    r->minor = ver[7] == '0' ? 0 : 1;
    size_t mlen = (size_t)(sp1 - head);
    if (mlen == 3 && memcmp(head, "GET", 3) == 0) {
        r->method = HTTP_M_GET;
    } else if (mlen == 4 && memcmp(head, "HEAD", 4) == 0) {
        r->method = HTTP_M_HEAD;
        r->head_only = 1;
    } else if (mlen == 4 && memcmp(head, "POST", 4) == 0) {
        r->method = HTTP_M_POST;
    } else if ((mlen == 3 && memcmp(head, "PUT", 3) == 0)
            || (mlen == 6 && memcmp(head, "DELETE", 6) == 0)
            || (mlen == 7 && memcmp(head, "OPTIONS", 7) == 0)
            || (mlen == 5 && memcmp(head, "PATCH", 5) == 0)
            || (mlen == 5 && memcmp(head, "TRACE", 5) == 0)
            || (mlen == 7 && memcmp(head, "CONNECT", 7) == 0)) {
        r->method = HTTP_M_KNOWN;
    } else {
        r->method = HTTP_M_OTHER;
    }
    /* ---- fields ---- */
    int hosts = 0, lengths = 0, codings = 0, conn = 0;
    int bad_coding = 0, bad_expect = 0, too_large = 0;
    for (const char* line = cr + 2;;) {
        const char* lcr = memchr(line, '\r', (size_t)(end - line));
        if (!lcr || lcr + 1 >= end || lcr[1] != '\n') {
            return; /* a bare CR */
        }
        if (lcr == line) {
            break; /* the empty line */
        }
        if (memchr(line, '\n', (size_t)(lcr - line))) {
            return; /* a bare LF */
        }
        const char* colon = memchr(line, ':', (size_t)(lcr - line));
        if (!colon || colon == line) {
            return; /* no name: also obs-fold (a line starting with a blank) */
        }
        for (const char* p = line; p < colon; ++p) {
            if (!http_tchar((unsigned char)*p)) {
                return; /* e.g. a blank before the colon */
            }
        }
        const char* vs = colon + 1;
        const char* ve = lcr;
        for (const char* p = vs; p < ve; ++p) {
            if (!http_vchar_or_blank((unsigned char)*p)) {
                return;
            }
        }
        http_trim(&vs, &ve);
        size_t nlen = (size_t)(colon - line);
        if (http_ieq(line, nlen, "host")) {
            ++hosts;
        } else if (http_ieq(line, nlen, "content-length")) {
            uint64_t v;
            if (++lengths > 1 || http_digits(vs, ve, &v) != 0) {
                return;
            }
            r->content_length = v;
            too_large = v > lim->max_body;
        } else if (http_ieq(line, nlen, "transfer-encoding")) {
            ++codings;
            if (!http_ieq(vs, (size_t)(ve - vs), "chunked")) {
                bad_coding = 1;
            }
        } else if (http_ieq(line, nlen, "connection")) {
            conn |= http_connection_tokens(vs, ve);
        } else if (http_ieq(line, nlen, "expect")) {
            if (http_ieq(vs, (size_t)(ve - vs), "100-continue")) {
                r->expect_continue = r->minor >= 1;
            } else {
                bad_expect = 1;
            }
        }
        line = lcr + 2;
    }
    if (r->minor >= 1 && hosts != 1) {
        return;
    }
    if (codings && (lengths || r->minor == 0)) {
        return;
    }
    if (codings > 1 || bad_coding) {
        http_fail(r, HTTP_NOT_IMPLEMENTED);
        return;
    }
    if (too_large) {
        http_fail(r, HTTP_TOO_LARGE);
        return;
    }
    if (bad_expect) {
        http_fail(r, HTTP_EXPECTATION);
        return;
    }
    r->chunked = codings == 1;
    if (r->method == HTTP_M_OTHER) {
        http_fail(r, HTTP_NOT_IMPLEMENTED);
        return;
    }
    r->close = 0;
    r->keep_alive = r->minor >= 1 ? !(conn & 1) : (conn & 2) && !(conn & 1);
    if (!r->chunked && r->content_length == 0) {
        r->expect_continue = 0; /* no body to wait for */
    }
    http_route(r, target, (size_t)(sp2 - target));
}

/* ---- responses ---- */

static inline const char* http_status_line(int route)
{
    switch (route) {
    case HTTP_HELLO_ROUTE:
    case HTTP_STATS_ROUTE:
    case HTTP_POST_ROUTE:
    case HTTP_SLEEP_ROUTE:
    case HTTP_BYTES_ROUTE:
    case HTTP_FLOWS_ROUTE:
        return "200 OK";
    case HTTP_NOT_FOUND:
        return "404 Not Found";
    case HTTP_BAD_METHOD:
        return "405 Method Not Allowed";
    case HTTP_TIMEOUT:
        return "408 Request Timeout";
    case HTTP_TOO_LARGE:
        return "413 Content Too Large";
    case HTTP_URI_TOO_LONG:
        return "414 URI Too Long";
    case HTTP_EXPECTATION:
        return "417 Expectation Failed";
    case HTTP_HEAD_TOO_LARGE:
        return "431 Request Header Fields Too Large";
    case HTTP_NOT_IMPLEMENTED:
        return "501 Not Implemented";
    case HTTP_BUSY:
    case HTTP_OVERLOADED:
    case HTTP_FULL:
        return "503 Service Unavailable";
    case HTTP_BAD_VERSION:
        return "505 HTTP Version Not Supported";
    default:
        return "400 Bad Request";
    }
}

static inline const char* http_body(int route)
{
    switch (route) {
    case HTTP_HELLO_ROUTE:
        return HTTP_HELLO;
    case HTTP_SLEEP_ROUTE:
        return "Slept\n";
    case HTTP_NOT_FOUND:
        return "Not found\n";
    case HTTP_BAD_METHOD:
        return "Method not allowed\n";
    case HTTP_TIMEOUT:
        return "Request timeout\n";
    case HTTP_TOO_LARGE:
        return "Request body too large\n";
    case HTTP_URI_TOO_LONG:
        return "Request line too long\n";
    case HTTP_EXPECTATION:
        return "Expectation not supported\n";
    case HTTP_HEAD_TOO_LARGE:
        return "Request head too large\n";
    case HTTP_NOT_IMPLEMENTED:
        return "Not implemented\n";
    case HTTP_BUSY:
        return "Busy, try again later\n";
    case HTTP_OVERLOADED:
        return "Overloaded, try again later\n";
    case HTTP_FULL:
        return "Too many connections\n";
    case HTTP_BAD_VERSION:
        return "HTTP version not supported\n";
    default:
        return "Bad request\n";
    }
}

/* Formats a full response with the given body into buf (returns its
 * length, 0 if it does not fit). allow: the Allow field of a 405 or NULL. */
static inline size_t http_format(char* buf, size_t cap, int route, int keep_alive, int head_only,
        const char* body, const char* allow)
{
    size_t blen = strlen(body);
    int n = snprintf(buf, cap,
            "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
            "%s%s%s%sConnection: %s\r\n\r\n%s",
            http_status_line(route), blen, allow ? "Allow: " : "", allow ? allow : "",
            allow ? "\r\n" : "",
            route == HTTP_BUSY || route == HTTP_OVERLOADED || route == HTTP_FULL
                    ? "Retry-After: 1\r\n"
                    : "",
            keep_alive ? "keep-alive" : "close", head_only ? "" : body);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

#define HTTP_CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

/* ---- canned responses: [route][keep_alive][head_only] ---- */

typedef struct HttpCanned {
    char text[256];
    size_t len;
} HttpCanned;

static HttpCanned http_canned[HTTP_ROUTES][2][2];

static inline void http_canned_init(void)
{
    for (int r = 0; r < HTTP_ROUTES; ++r) {
        for (int ka = 0; ka < 2; ++ka) {
            for (int ho = 0; ho < 2; ++ho) {
                HttpCanned* c = &http_canned[r][ka][ho];
                c->len = http_format(c->text, sizeof(c->text), r, ka, ho, http_body(r), NULL);
            }
        }
    }
}

static inline const HttpCanned* http_response(int route, int keep_alive, int head_only)
{
    return &http_canned[route][keep_alive ? 1 : 0][head_only ? 1 : 0];
}

#endif
