/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 syntax shared by the example server (http_common.h, http_srv.c),
 * the example client's response parser (http_response.h) and their tests:
 * the character classes of RFC 9110, field lines, the line structure of a
 * head and chunk-size lines (RFC 9112). One definition for both sides, so
 * that the server and the client cannot disagree on what a well-framed
 * message is.
 *
 * Every line of a head, of a chunked body and of a trailer ends in CRLF; a
 * CR not followed by LF, or an LF not preceded by CR, is a framing error
 * (RFC 9112 2.2 lets a recipient accept a bare LF; this code does not,
 * because two parsers that disagree on line ends are how requests are
 * smuggled).
 */
#ifndef FUTOIN_EXAMPLE_HTTP_SYNTAX_H
#define FUTOIN_EXAMPLE_HTTP_SYNTAX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int http_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Case-insensitive comparison of [s, s + n) with a lower-case literal. */
static inline int http_ieq(const char* s, size_t n, const char* lower)
{
    size_t i = 0;
    for (; i < n && lower[i]; ++i) {
        if (http_lower((unsigned char)s[i]) != lower[i]) {
            return 0;
        }
    }
    return i == n && lower[i] == '\0';
}

/* RFC 9110 tchar. */
static inline int http_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        return 1;
    }
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field value characters: HTAB, SP, VCHAR, obs-text. */
static inline int http_vchar_or_blank(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static inline int http_blank(char c)
{
    return c == ' ' || c == '\t';
}

static inline void http_trim(const char** s, const char** e)
{
    while (*s < *e && http_blank(**s)) {
        ++*s;
    }
    while (*e > *s && http_blank((*e)[-1])) {
        --*e;
    }
}

/* Digits only; returns 0 and the value (saturated at UINT64_MAX), or -1. */
static inline int http_digits(const char* s, const char* e, uint64_t* out)
{
    if (s == e) {
        return -1;
    }
    uint64_t v = 0;
    for (; s < e; ++s) {
        if (*s < '0' || *s > '9') {
            return -1;
        }
        unsigned d = (unsigned)(*s - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    *out = v;
    return 0;
}

/* A field line without its CRLF: "name: value", a token name right before
 * the colon, value characters only (no CR, LF or other controls but HTAB).
 * Returns 0 with the name in [line, *colon) and the trimmed value in
 * [*vs, *ve), or -1. A line starting with a blank (obs-fold) has no token
 * name: -1. */
static inline int http_field_line(const char* line, size_t len, const char** colon, const char** vs,
        const char** ve)
{
    const char* e = line + len;
    const char* p = line;
    while (p < e && http_tchar((unsigned char)*p)) {
        ++p;
    }
    if (p == line || p == e || *p != ':') {
        return -1;
    }
    *colon = p;
    const char* v = p + 1;
    for (const char* q = v; q < e; ++q) {
        if (!http_vchar_or_blank((unsigned char)*q)) {
            return -1;
        }
    }
    const char* ve_ = e;
    http_trim(&v, &ve_);
    *vs = v;
    *ve = ve_;
    return 0;
}

/* The line structure of a head (request or response) or of a trailer
 * section: lines ending in CRLF, the last one empty. */
enum {
    HTTP_SCAN_MORE = 0, /* well-formed so far, no end yet */
    HTTP_SCAN_DONE,     /* *n: the bytes of p up to and including the empty line */
    HTTP_SCAN_BAD,      /* a bare CR or LF */
    HTTP_SCAN_FULL      /* no end within max */
};

/* Scans p[0, len), which continues a section of which `before` bytes (whole
 * lines) were taken already, for its end within max bytes in all. An empty
 * line at the very start of the section (before == 0) does not end it: a
 * request head may be preceded by empty lines (RFC 9112 2.2); pass
 * before = 1 where an empty first line is the end (a trailer section). A
 * bare CR or LF is reported as soon as it is seen (a CR at the end of p
 * waits for the next byte), so an answer never has to wait for a head
 * end that a bare LF will never bring. */
static inline int http_head_scan(const char* p, size_t len, size_t before, size_t max, size_t* n)
{
    size_t lim = max > before ? max - before : 0;
    size_t line = 0;
    if (lim == 0) {
        return HTTP_SCAN_FULL;
    }
    for (size_t i = 0; i < len; ++i) {
        if (i >= lim) {
            return HTTP_SCAN_FULL;
        }
        if (p[i] == '\n') {
            return HTTP_SCAN_BAD;
        }
        if (p[i] != '\r') {
            continue;
        }
        if (i + 1 >= lim) {
            return HTTP_SCAN_FULL;
        }
        if (i + 1 == len) {
            break;
        }
        if (p[i + 1] != '\n') {
            return HTTP_SCAN_BAD;
        }
        if (i == line && before + line > 0) {
            *n = i + 2;
            return HTTP_SCAN_DONE;
        }
        ++i;
        line = i + 1;
    }
    *n = line;
    return HTTP_SCAN_MORE;
}

/* A token (1*tchar) at *p: advances *p past it; 0, or -1 when empty. */
static inline int http_skip_token(const char** p, const char* e)
{
    const char* s = *p;
    while (*p < e && http_tchar((unsigned char)**p)) {
        ++*p;
    }
    return *p > s ? 0 : -1;
}

/* A quoted-string (RFC 9110 5.6.4) at *p: advances *p past it; 0 or -1. */
static inline int http_skip_quoted(const char** p, const char* e)
{
    const char* q = *p;
    if (q == e || *q != '"') {
        return -1;
    }
    for (++q; q < e; ++q) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            *p = q + 1;
            return 0;
        }
        if (c == '\\') {
            if (++q == e) {
                return -1;
            }
            c = (unsigned char)*q;
            if (c != '\t' && (c < 0x20 || c == 0x7f)) {
                return -1;
            }
        } else if (c != '\t' && (c < 0x20 || c == 0x7f)) {
            return -1;
        }
    }
    return -1;
}

static inline void http_skip_bws(const char** p, const char* e)
{
    while (*p < e && http_blank(**p)) {
        ++*p;
    }
}

/* A chunk-size line without its CRLF, exactly RFC 9112 7.1:
 *     chunk-size [ chunk-ext ]
 *     chunk-size = 1*HEXDIG
 *     chunk-ext  = *( BWS ";" BWS name [ BWS "=" BWS value ] )
 *     name = token; value = token / quoted-string
 * Blanks (BWS: SP, HTAB) only before a ';', after it, and around '=';
 * none at the end of the line, none without a ';' after them ("5 " is
 * malformed), no sign, no "0x". Leading zeros are digits. Returns 0 and
 * the size, saturated at UINT64_MAX when it does not fit 64 bits (so a
 * caller's body limit refuses it like any other size too large), or -1
 * when malformed (a CR or LF inside included). */
static inline int http_parse_chunk_size(const char* s, size_t len, uint64_t* out)
{
    const char* e = s + len;
    const char* p = s;
    uint64_t v = 0;
    for (; p < e; ++p) {
        int c = http_lower((unsigned char)*p);
        unsigned d;
        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else {
            break;
        }
        v = v > (UINT64_MAX >> 4) ? UINT64_MAX : v * 16 + d;
    }
    if (p == s) {
        return -1;
    }
    while (p < e) {
        http_skip_bws(&p, e);
        if (p == e || *p != ';') {
            return -1;
        }
        ++p;
        http_skip_bws(&p, e);
        if (http_skip_token(&p, e) != 0) {
            return -1;
        }
        const char* q = p;
        http_skip_bws(&q, e);
        if (q < e && *q == '=') {
            p = q + 1;
            http_skip_bws(&p, e);
            if (p < e && *p == '"' ? http_skip_quoted(&p, e) != 0 : http_skip_token(&p, e) != 0) {
                return -1;
            }
        }
    }
    *out = v;
    return 0;
}

#endif
