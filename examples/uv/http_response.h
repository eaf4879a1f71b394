/* SPDX-License-Identifier: MIT */
/*
 * The strict HTTP/1.1 response parser of the example client
 * (http_client.c), a push parser with no I/O so that
 * tests/uv/test_http_client_parse.c can feed it raw bytes: bytes go in
 * with http_response_feed() in pieces of any size, the end of the
 * connection with http_response_eof(); the decoded body comes out through
 * a callback. Framing rules (RFC 9112; docs/HTTP-SERVER.md has the table):
 *
 *  - every line of the head, of a chunked body and of its trailer ends in
 *    CRLF; a bare CR or LF is an error;
 *  - status line "HTTP/1.x SP 3DIGIT SP reason": the code is exactly three
 *    digits in 100..599; another major version is an error;
 *  - 1xx interim responses (100 Continue, 103 Early Hints, ...) are
 *    skipped, at most HTTP_RESPONSE_MAX_INTERIM of them; 101 Switching
 *    Protocols is refused (the client asked for no upgrade);
 *  - fields: a token name right before the colon, value characters only;
 *    obs-fold is refused;
 *  - Content-Length: digits only; repeated (as fields or as a list) with
 *    identical values it is accepted as one (RFC 9110 8.6), different
 *    values are an error;
 *  - Transfer-Encoding: only "chunked", once; with Content-Length, or in
 *    an HTTP/1.0 response, it is an error (RFC 9112 6.3 lets a recipient
 *    let Transfer-Encoding win, but says such a message "ought to be
 *    handled as an error": it is how responses are split);
 *  - body: none for 204 and 304; chunked (chunk-size lines as
 *    http_parse_chunk_size(), CRLF after each chunk's data, a trailer
 *    section of field lines); else Content-Length bytes; else up to the
 *    end of the connection. More than max_body bytes is an error.
 */
#ifndef FUTOIN_EXAMPLE_HTTP_RESPONSE_H
#define FUTOIN_EXAMPLE_HTTP_RESPONSE_H

#include <stdarg.h>
#include <stdio.h>

#include "http_syntax.h"

#if defined(__GNUC__)
#define HTTP_RESPONSE_PRINTF __attribute__((format(printf, 2, 3)))
#else
#define HTTP_RESPONSE_PRINTF
#endif

/* A head (status line, fields, empty line), and a trailer section. */
#define HTTP_RESPONSE_MAX_HEAD 16384u
#define HTTP_RESPONSE_MAX_CHUNK_LINE 4096u
#define HTTP_RESPONSE_MAX_INTERIM 16

enum HttpResponseState {
    HR_HEAD = 0,
    HR_BODY_LENGTH,
    HR_BODY_EOF,
    HR_CHUNK_SIZE,
    HR_CHUNK_DATA,
    HR_CHUNK_CR,
    HR_CHUNK_LF,
    HR_TRAILER,
    HR_DONE,
    HR_ERROR
};

typedef void (*HttpResponseBody)(void* ctx, const char* p, size_t n);

typedef struct HttpResponse {
    /* the outcome */
    int state;         /* HR_DONE or HR_ERROR at the end */
    int truncated;     /* HR_ERROR: the connection ended early (worth a retry) */
    char error[128];   /* HR_ERROR: what was wrong */
    int head_complete; /* the final (non-1xx) head is parsed */
    int status;
    int minor;
    char reason[64];
    int interim; /* 1xx responses skipped */
    int has_length;
    uint64_t content_length;
    int chunked;
    uint64_t body_len; /* decoded body bytes so far */
    /* set by http_response_init() */
    uint64_t max_body;
    HttpResponseBody on_body;
    void* ctx;
    /* the line being read, without its CRLF */
    char line[HTTP_RESPONSE_MAX_HEAD];
    size_t line_len;
    int cr;         /* the previous byte was a CR */
    int lines;      /* lines of this head so far */
    size_t section; /* bytes of this head or trailer section so far */
    uint64_t left;  /* of the body or of the chunk */
    int codings;    /* Transfer-Encoding elements */
    int bad_coding;
    int any_byte;
} HttpResponse;

static inline void http_response_init(HttpResponse* r, uint64_t max_body, HttpResponseBody on_body,
        void* ctx)
{
    memset(r, 0, sizeof(*r));
    r->max_body = max_body;
    r->on_body = on_body;
    r->ctx = ctx;
}

static inline HTTP_RESPONSE_PRINTF void http_response_fail(HttpResponse* r, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
    r->state = HR_ERROR;
}

static inline const char* http_response_where(const HttpResponse* r)
{
    switch (r->state) {
    case HR_HEAD:
        return "the response head";
    case HR_CHUNK_SIZE:
        return "a chunk-size line";
    case HR_TRAILER:
        return "the trailer section";
    default:
        return "the chunked body";
    }
}

/* "HTTP/1.x SP 3DIGIT SP reason-phrase" */
static inline void http_response_status_line(HttpResponse* r, const char* s, size_t len)
{
    if (len < 9 || memcmp(s, "HTTP/", 5) != 0 || s[6] != '.' || s[5] < '0' || s[5] > '9'
            || s[7] < '0' || s[7] > '9' || s[8] != ' ') {
        http_response_fail(r, "not an HTTP/1.x status line");
        return;
    }
    if (s[5] != '1') {
        http_response_fail(r, "HTTP version %c.%c is not 1.x", s[5], s[7]);
        return;
    }
    size_t digits = 0;
    while (9 + digits < len && s[9 + digits] >= '0' && s[9 + digits] <= '9') {
        ++digits;
    }
    int status = digits == 3 ? (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0') : 0;
    if (digits != 3 || status < 100 || status > 599 || len < 13 || s[12] != ' ') {
        http_response_fail(r, "status code is not 3 digits in 100..599 followed by a space");
        return;
    }
    for (size_t i = 13; i < len; ++i) {
        if (!http_vchar_or_blank((unsigned char)s[i])) {
            http_response_fail(r, "invalid character in the reason phrase");
            return;
        }
    }
    if (status == 101) {
        http_response_fail(r, "101 Switching Protocols: no upgrade was asked for");
        return;
    }
    r->status = status;
    r->minor = s[7] - '0';
    size_t rlen = len - 13 < sizeof(r->reason) - 1 ? len - 13 : sizeof(r->reason) - 1;
    memcpy(r->reason, s + 13, rlen);
    r->reason[rlen] = '\0';
}

static inline void http_response_content_length(HttpResponse* r, const char* s, const char* e)
{
    /* A list of identical values is one value (RFC 9110 8.6). */
    while (s <= e) {
        const char* comma = memchr(s, ',', (size_t)(e - s));
        const char* ve = comma ? comma : e;
        const char* vs = s;
        http_trim(&vs, &ve);
        uint64_t v;
        if (http_digits(vs, ve, &v) != 0) {
            http_response_fail(r, "invalid Content-Length");
            return;
        }
        if (r->has_length && v != r->content_length) {
            http_response_fail(r, "conflicting Content-Length values");
            return;
        }
        r->has_length = 1;
        r->content_length = v;
        if (!comma) {
            break;
        }
        s = comma + 1;
    }
}

static inline void http_response_transfer_encoding(HttpResponse* r, const char* s, const char* e)
{
    while (s < e) {
        const char* comma = memchr(s, ',', (size_t)(e - s));
        const char* ve = comma ? comma : e;
        const char* vs = s;
        http_trim(&vs, &ve);
        if (vs < ve) { /* empty list elements do not count (RFC 9110 5.6.1) */
            ++r->codings;
            if (!http_ieq(vs, (size_t)(ve - vs), "chunked")) {
                r->bad_coding = 1;
            }
        }
        s = comma ? comma + 1 : e;
    }
}

/* The head is complete: decide how the body is framed. */
static inline void http_response_head_end(HttpResponse* r)
{
    if (r->status < 200) {
        /* An interim response: the final one follows. */
        if (++r->interim > HTTP_RESPONSE_MAX_INTERIM) {
            http_response_fail(r, "more than %d interim (1xx) responses",
                    HTTP_RESPONSE_MAX_INTERIM);
            return;
        }
        r->lines = 0;
        r->section = 0;
        r->has_length = 0;
        r->content_length = 0;
        r->codings = 0;
        r->bad_coding = 0;
        return;
    }
    r->head_complete = 1;
    if (r->codings) {
        if (r->minor == 0) {
            http_response_fail(r, "Transfer-Encoding in an HTTP/1.0 response");
        } else if (r->has_length) {
            http_response_fail(r, "both Transfer-Encoding and Content-Length");
        } else if (r->codings > 1 || r->bad_coding) {
            http_response_fail(r, "unsupported Transfer-Encoding (only chunked is)");
        }
        if (r->state == HR_ERROR) {
            return;
        }
    }
    if (r->status == 204 || r->status == 304) {
        r->state = HR_DONE;
    } else if (r->codings) {
        r->chunked = 1;
        r->section = 0;
        r->state = HR_CHUNK_SIZE;
    } else if (r->has_length) {
        if (r->content_length > r->max_body) {
            http_response_fail(r, "Content-Length above the %llu bytes limit",
                    (unsigned long long)r->max_body);
            return;
        }
        r->left = r->content_length;
        r->state = r->left ? HR_BODY_LENGTH : HR_DONE;
    } else {
        r->state = HR_BODY_EOF;
    }
}

/* A complete line (without its CRLF) of a head, chunk-size line or trailer. */
static inline void http_response_line(HttpResponse* r, const char* s, size_t len)
{
    const char *colon, *vs, *ve;
    switch (r->state) {
    case HR_HEAD:
        if (r->lines++ == 0) {
            http_response_status_line(r, s, len);
            return;
        }
        if (len == 0) {
            http_response_head_end(r);
            return;
        }
        if (http_blank(s[0])) {
            http_response_fail(r, "obsolete line folding in the response head");
            return;
        }
        if (http_field_line(s, len, &colon, &vs, &ve) != 0) {
            http_response_fail(r, "malformed header field");
            return;
        }
        if (http_ieq(s, (size_t)(colon - s), "content-length")) {
            http_response_content_length(r, vs, ve);
        } else if (http_ieq(s, (size_t)(colon - s), "transfer-encoding")) {
            http_response_transfer_encoding(r, vs, ve);
        }
        return;
    case HR_CHUNK_SIZE: {
        uint64_t size;
        if (http_parse_chunk_size(s, len, &size) != 0) {
            http_response_fail(r, "malformed chunk-size line");
            return;
        }
        if (size > r->max_body - r->body_len) {
            http_response_fail(r, "chunked body above the %llu bytes limit",
                    (unsigned long long)r->max_body);
            return;
        }
        r->left = size;
        r->section = 0;
        r->state = size ? HR_CHUNK_DATA : HR_TRAILER;
        return;
    }
    default: /* HR_TRAILER */
        if (len == 0) {
            r->state = HR_DONE;
        } else if (http_field_line(s, len, &colon, &vs, &ve) != 0) {
            http_response_fail(r, "malformed trailer field");
        }
        return;
    }
}

/* One byte of a line: CRLF ends it, a bare CR or LF is an error. */
static inline void http_response_line_byte(HttpResponse* r, char c)
{
    size_t max = r->state == HR_CHUNK_SIZE ? HTTP_RESPONSE_MAX_CHUNK_LINE : HTTP_RESPONSE_MAX_HEAD;
    if (++r->section > max) {
        http_response_fail(r, "%s is longer than %zu bytes", http_response_where(r), max);
        return;
    }
    if (r->cr) {
        r->cr = 0;
        if (c != '\n') {
            http_response_fail(r, "bare CR in %s", http_response_where(r));
            return;
        }
        size_t len = r->line_len;
        r->line_len = 0;
        http_response_line(r, r->line, len);
        return;
    }
    if (c == '\r') {
        r->cr = 1;
    } else if (c == '\n') {
        http_response_fail(r, "bare LF in %s", http_response_where(r));
    } else {
        r->line[r->line_len++] = c; /* section <= max: it fits */
    }
}

static inline void http_response_body(HttpResponse* r, const char* p, size_t n)
{
    r->body_len += n;
    if (r->on_body) {
        r->on_body(r->ctx, p, n);
    }
}

/* Feeds n bytes; returns how many were used (fewer than n only once the
 * response is complete or wrong: r->state is then HR_DONE or HR_ERROR). */
static inline size_t http_response_feed(HttpResponse* r, const char* p, size_t n)
{
    size_t i = 0;
    if (n) {
        r->any_byte = 1;
    }
    while (i < n && r->state != HR_DONE && r->state != HR_ERROR) {
        switch (r->state) {
        case HR_BODY_LENGTH:
        case HR_CHUNK_DATA: {
            size_t k = n - i < r->left ? n - i : (size_t)r->left;
            http_response_body(r, p + i, k);
            i += k;
            r->left -= k;
            if (r->left == 0) {
                r->state = r->state == HR_BODY_LENGTH ? HR_DONE : HR_CHUNK_CR;
            }
            break;
        }
        case HR_BODY_EOF:
            if (n - i > r->max_body - r->body_len) {
                http_response_fail(r, "response body above the %llu bytes limit",
                        (unsigned long long)r->max_body);
                break;
            }
            http_response_body(r, p + i, n - i);
            i = n;
            break;
        case HR_CHUNK_CR:
        case HR_CHUNK_LF:
            if (p[i] != (r->state == HR_CHUNK_CR ? '\r' : '\n')) {
                http_response_fail(r, "chunk data not followed by CRLF");
                break;
            }
            ++i;
            r->section = 0;
            r->state = r->state == HR_CHUNK_CR ? HR_CHUNK_LF : HR_CHUNK_SIZE;
            break;
        default: /* lines: head, chunk-size, trailer */
            http_response_line_byte(r, p[i]);
            ++i;
            break;
        }
    }
    return i;
}

/* The connection ended: completes a body that runs to the end; anything
 * else unfinished is an error (marked truncated). */
static inline void http_response_eof(HttpResponse* r)
{
    switch (r->state) {
    case HR_DONE:
    case HR_ERROR:
        return;
    case HR_BODY_EOF:
        r->state = HR_DONE;
        return;
    case HR_HEAD:
        http_response_fail(r,
                r->any_byte ? "connection closed in the response head"
                            : "connection closed without a response");
        break;
    case HR_BODY_LENGTH:
        http_response_fail(r, "connection closed after %llu of %llu body bytes",
                (unsigned long long)r->body_len, (unsigned long long)r->content_length);
        break;
    default:
        http_response_fail(r, "connection closed in the chunked body");
        break;
    }
    r->truncated = 1;
}

#endif
