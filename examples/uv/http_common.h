/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 bits shared by the AsyncSteps server (examples/uv/
 * http_server.c) and the plain libuv server of the benchmark
 * (bench/uv/uv_plain_server.c): request-head parsing and the canned
 * responses. Sharing them keeps the benchmark about the I/O and control
 * flow, not about two different parsers.
 *
 * Deliberately small: a request head is read whole (up to the empty line),
 * a Content-Length body is read and ignored, chunked request bodies are
 * refused (501), everything else is GET / and GET /stats.
 */
#ifndef FUTOIN_EXAMPLE_HTTP_COMMON_H
#define FUTOIN_EXAMPLE_HTTP_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_MAX_HEAD 8192
#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_HELLO "Hello from AsyncSteps\n"

enum HttpRoute {
    HTTP_HELLO_ROUTE = 0, /* 200 */
    HTTP_STATS_ROUTE,     /* 200, dynamic body */
    HTTP_NOT_FOUND,       /* 404 */
    HTTP_BAD_METHOD,      /* 405 */
    HTTP_BAD_REQUEST,     /* 400 */
    HTTP_TOO_LARGE,       /* 413 */
    HTTP_HEAD_TOO_LARGE,  /* 431 */
    HTTP_NOT_IMPLEMENTED, /* 501 */
    HTTP_BUSY,            /* 503 */
    HTTP_ROUTES
};

typedef struct HttpRequest {
    int route;
    int head_only; /* HEAD: headers without the body */
    int keep_alive;
    size_t content_length;
} HttpRequest;

static inline int http_ieq_prefix(const char* s, const char* end, const char* lower_prefix)
{
    for (; *lower_prefix; ++s, ++lower_prefix) {
        if (s >= end) {
            return 0;
        }
        char c = *s;
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        }
        if (c != *lower_prefix) {
            return 0;
        }
    }
    return 1;
}

/* Case-insensitive search of a lower-case token within [s, end). */
static inline int http_has_token(const char* s, const char* end, const char* token)
{
    size_t n = strlen(token);
    for (; s + n <= end; ++s) {
        if (http_ieq_prefix(s, end, token)) {
            return 1;
        }
    }
    return 0;
}

/* Parses a request head (request line + headers + the empty line). Sets
 * route HTTP_BAD_REQUEST (and keep_alive 0) when it is malformed. */
static inline void http_parse_head(const char* head, size_t len, HttpRequest* r)
{
    const char* end = head + len;
    memset(r, 0, sizeof(*r));
    r->route = HTTP_BAD_REQUEST;
    const char* eol = memchr(head, '\n', len);
    if (!eol) {
        return;
    }
    /* METHOD SP TARGET SP HTTP/1.x */
    const char* sp1 = memchr(head, ' ', (size_t)(eol - head));
    const char* sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || eol - sp2 < 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        return;
    }
    int minor = sp2[8] - '0';
    if (minor < 0 || minor > 9) {
        return;
    }
    r->keep_alive = minor >= 1;
    size_t mlen = (size_t)(sp1 - head);
    const char* target = sp1 + 1;
    size_t tlen = (size_t)(sp2 - target);
    int method_ok = 1;
    if (mlen == 3 && memcmp(head, "GET", 3) == 0) {
        r->head_only = 0;
    } else if (mlen == 4 && memcmp(head, "HEAD", 4) == 0) {
        r->head_only = 1;
    } else {
        method_ok = 0;
    }
    /* Headers: one per line until the empty line. */
    for (const char* line = eol + 1; line < end;) {
        const char* next = memchr(line, '\n', (size_t)(end - line));
        const char* stop = next ? next : end;
        if (http_ieq_prefix(line, stop, "connection:")) {
            if (http_has_token(line + 11, stop, "close")) {
                r->keep_alive = 0;
            } else if (http_has_token(line + 11, stop, "keep-alive")) {
                r->keep_alive = 1;
            }
        } else if (http_ieq_prefix(line, stop, "content-length:")) {
            char* num_end = NULL;
            unsigned long long v = strtoull(line + 15, &num_end, 10);
            if (num_end == line + 15) {
                r->keep_alive = 0;
                return;
            }
            r->content_length = (size_t)v;
            if (v > HTTP_MAX_BODY) {
                r->route = HTTP_TOO_LARGE;
                r->keep_alive = 0;
                return;
            }
        } else if (http_ieq_prefix(line, stop, "transfer-encoding:")) {
            /* Without de-chunking we cannot find the next request. */
            r->route = HTTP_NOT_IMPLEMENTED;
            r->keep_alive = 0;
            return;
        }
        if (!next) {
            break;
        }
        line = next + 1;
    }
    if (!method_ok) {
        r->route = HTTP_BAD_METHOD;
    } else if (tlen == 1 && target[0] == '/') {
        r->route = HTTP_HELLO_ROUTE;
    } else if (tlen == 6 && memcmp(target, "/stats", 6) == 0) {
        r->route = HTTP_STATS_ROUTE;
    } else {
        r->route = HTTP_NOT_FOUND;
    }
}

/* ---- canned responses: [route][keep_alive][head_only] ---- */

typedef struct HttpCanned {
    char text[256];
    size_t len;
} HttpCanned;

static HttpCanned http_canned[HTTP_ROUTES][2][2];

static inline const char* http_status_line(int route)
{
    switch (route) {
    case HTTP_HELLO_ROUTE:
    case HTTP_STATS_ROUTE: return "200 OK";
    case HTTP_NOT_FOUND: return "404 Not Found";
    case HTTP_BAD_METHOD: return "405 Method Not Allowed";
    case HTTP_TOO_LARGE: return "413 Content Too Large";
    case HTTP_HEAD_TOO_LARGE: return "431 Request Header Fields Too Large";
    case HTTP_NOT_IMPLEMENTED: return "501 Not Implemented";
    case HTTP_BUSY: return "503 Service Unavailable";
    default: return "400 Bad Request";
    }
}

static inline const char* http_body(int route)
{
    switch (route) {
    case HTTP_HELLO_ROUTE: return HTTP_HELLO;
    case HTTP_NOT_FOUND: return "Not found\n";
    case HTTP_BAD_METHOD: return "Method not allowed\n";
    case HTTP_TOO_LARGE: return "Request body too large\n";
    case HTTP_HEAD_TOO_LARGE: return "Request head too large\n";
    case HTTP_NOT_IMPLEMENTED: return "Chunked requests are not supported\n";
    case HTTP_BUSY: return "Busy, try again later\n";
    default: return "Bad request\n";
    }
}

/* Formats a full response with the given body into buf (returns length). */
static inline size_t http_format(char* buf, size_t cap, int route, int keep_alive,
        int head_only, const char* body)
{
    size_t blen = strlen(body);
    int n = snprintf(buf, cap,
            "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
            "Connection: %s\r\n\r\n%s",
            http_status_line(route), blen, keep_alive ? "keep-alive" : "close",
            head_only ? "" : body);
    return n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
}

static inline void http_canned_init(void)
{
    for (int r = 0; r < HTTP_ROUTES; ++r) {
        for (int ka = 0; ka < 2; ++ka) {
            for (int ho = 0; ho < 2; ++ho) {
                HttpCanned* c = &http_canned[r][ka][ho];
                c->len = http_format(c->text, sizeof(c->text), r, ka, ho, http_body(r));
            }
        }
    }
}

static inline const HttpCanned* http_response(int route, int keep_alive, int head_only)
{
    return &http_canned[route][keep_alive ? 1 : 0][head_only ? 1 : 0];
}

#endif
