/* SPDX-License-Identifier: MIT */
/*
 * Read steps on a stream: a line, up to a delimiter, an exact count, some
 * bytes, or until data is there.
 *
 * Once a read step has started, the stream keeps reading into its own
 * buffer even between read steps (up to read_ahead bytes,
 * FUTOIN_UV_HIGH_WATER by default), because toggling uv_read_start/stop
 * around every request would cost two epoll_ctl calls per request on a
 * keep-alive connection. A read step that finds its data already buffered
 * completes inside its own callback without waiting.
 */
#include "uv_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    StreamParams base;
    size_t n;
    size_t dlen;
    uint8_t mode;
    char delim[];
} ReadParams;

static const char* find_delim(const char* hay, size_t hlen, const char* d, size_t dlen)
{
    if (dlen == 0 || hlen < dlen) {
        return NULL;
    }
    const char* end = hay + hlen - dlen + 1;
    for (const char* p = hay; p < end; ++p) {
        p = memchr(p, d[0], (size_t)(end - p));
        if (!p) {
            return NULL;
        }
        if (memcmp(p, d, dlen) == 0) {
            return p;
        }
    }
    return NULL;
}

/* Room for try_read()'s failure text. */
#define READ_WHAT_SIZE 160

/* The text of a line or delimited read that reached its limit (rd_n bytes,
 * the terminator included). */
static void too_long(const FutoInUvStream* s, char* what)
{
    if (s->rd_mode == RD_LINE) {
        snprintf(what, READ_WHAT_SIZE, "read: line longer than %zu bytes", s->rd_n);
    } else {
        snprintf(what, READ_WHAT_SIZE, "read: delimiter not found within %zu bytes", s->rd_n);
    }
}

/* Result of try_read(). */
enum { RD_WAIT = 0, RD_DONE, RD_FAILED };

/* Checks whether the buffered data satisfies the pending read. On RD_DONE
 * *out holds the value and the bytes are consumed; on RD_FAILED *err and
 * what (READ_WHAT_SIZE bytes) describe the failure. */
static int try_read(FutoInUvStream* s, FutoInBinaryValue* out, int* err, char* what)
{
    size_t avail = s->len - s->off;
    /* No buffer before the first read callback (buf is NULL). */
    const char* data = s->buf ? s->buf + s->off : "";
    size_t take = 0; /* bytes consumed */
    size_t keep = 0; /* bytes in the result */
    int ready = 0;
    int as_string = 0;
    switch (s->rd_mode) {
    case RD_EXACT:
        if (avail >= s->rd_n) {
            take = keep = s->rd_n;
            ready = 1;
        }
        break;
    case RD_SOME:
        if (avail > 0) {
            take = keep = avail < s->rd_n ? avail : s->rd_n;
            ready = 1;
        }
        break;
    case RD_WAITDATA:
        if (avail > 0) {
            /* Nothing consumed, no value. */
            memset(out, 0, sizeof(*out));
            s->scanned = 0;
            return RD_DONE;
        }
        break;
    case RD_LINE:
    case RD_UNTIL: {
        /* Resume the search where the last one stopped (scanned already
         * backs up by the delimiter length less one, so a delimiter split
         * across two reads is still found). */
        size_t from = s->scanned;
        const char* hit = find_delim(data + from, avail - from, s->rd_delim, s->rd_dlen);
        if (hit) {
            take = (size_t)(hit - data) + s->rd_dlen;
            if (take > s->rd_n) {
                *err = UV_ENOBUFS;
                too_long(s, what);
                return RD_FAILED;
            }
            keep = take;
            if (s->rd_mode == RD_LINE) {
                keep = take - 1;
                if (keep > 0 && data[keep - 1] == '\r') {
                    --keep;
                }
            }
            as_string = 1;
            ready = 1;
        } else if (avail >= s->rd_n) {
            *err = UV_ENOBUFS;
            too_long(s, what);
            return RD_FAILED;
        } else {
            s->scanned = avail >= s->rd_dlen ? avail - s->rd_dlen + 1 : 0;
        }
        break;
    }
    default:
        break;
    }
    if (ready) {
        if (s->rd_mode == RD_EXACT && s->off == 0 && take == s->len && take >= FUTOIN_UV_ADOPT_MIN
                && s->cap > take) {
            /* The whole buffer is the result: hand it over instead of
             * copying it (a large body would otherwise exist twice). */
            char* b = s->buf;
            /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): cap > 0: buf is allocated */
            b[take] = '\0';
            s->buf = NULL;
            s->cap = s->len = 0;
            futoin__uv_stream_charge(s, 0);
            *out = futoin__uv_bytes_adopt(b, keep, 0);
            s->scanned = 0;
            return RD_DONE;
        }
        *out = futoin__uv_bytes_value(data, keep, as_string);
        if (!out->type) {
            *err = UV_ENOMEM;
            snprintf(what, READ_WHAT_SIZE, "read");
            return RD_FAILED;
        }
        s->off += take;
        if (s->off == s->len) {
            s->off = s->len = 0;
            if (s->cap > FUTOIN_UV_INITIAL_BUF) {
                /* A large input was consumed: give the memory (and the
                 * budget) back rather than keep it per connection. */
                futoin__uv_stream_drop_buffer(s);
            }
        }
        s->scanned = 0;
        return RD_DONE;
    }
    if (s->read_error) {
        *err = s->read_error;
        if (s->tls && *err == UV_EPROTO) {
            snprintf(what, READ_WHAT_SIZE, "read: tls: %s", futoin__uv_tls_reason(s));
        } else {
            snprintf(what, READ_WHAT_SIZE, "read");
        }
        return RD_FAILED;
    }
    if (s->eof) {
        *err = UV_EOF;
        snprintf(what, READ_WHAT_SIZE, "read: connection closed by peer");
        return RD_FAILED;
    }
    if (s->closing) {
        *err = UV_ECANCELED;
        snprintf(what, READ_WHAT_SIZE, "read: stream closed");
        return RD_FAILED;
    }
    return RD_WAIT;
}

/* The capacity to grow the receive buffer to, 0 if it cannot grow. */
static size_t grow_target(const FutoInUvStream* s)
{
    if (s->cap > SIZE_MAX / 2) {
        return 0;
    }
    size_t cap = s->cap ? s->cap * 2 : FUTOIN_UV_INITIAL_BUF;
    if (s->rd_as && s->rd_mode == RD_EXACT && s->rd_n < SIZE_MAX) {
        /* An exact read knows its size: no growth beyond it (plus the NUL
         * of a result that takes the buffer over). */
        size_t want = s->rd_n + 1;
        if (want >= s->len + FUTOIN_UV_MIN_FREE && want < cap) {
            cap = want;
        }
    }
    return cap;
}

void futoin__uv_stream_room(FutoInUvStream* s, uv_buf_t* buf)
{
    if (s->cap - s->len < FUTOIN_UV_MIN_FREE) {
        /* Compact first: consumed bytes at the front are free space. */
        if (s->off > 0) {
            memmove(s->buf, s->buf + s->off, s->len - s->off);
            s->len -= s->off;
            s->off = 0;
        }
        int exact_fits = s->rd_as && s->rd_mode == RD_EXACT && s->len < s->rd_n
                && s->rd_n - s->len <= s->cap - s->len;
        if (s->cap - s->len < FUTOIN_UV_MIN_FREE && !exact_fits) {
            size_t cap = grow_target(s);
            if (cap == 0) {
                /* Cannot grow: libuv reports UV_ENOBUFS. */
                *buf = uv_buf_init(NULL, 0);
                return;
            }
            if (futoin__uv_stream_charge(s, cap) != 0) {
                if (s->cap > s->len) {
                    /* What is left of the buffer still takes a read. */
                    goto room;
                }
                /* The budget is spent: on_read() stops reading. */
                s->budget_blocked = 1;
                *buf = uv_buf_init(NULL, 0);
                return;
            }
            char* nb = realloc(s->buf, cap);
            if (!nb) {
                futoin__uv_stream_charge(s, s->cap);
                /* libuv turns an empty buffer into UV_ENOBUFS, which
                 * on_read() reports as the out of memory it is. */
                s->alloc_failed = 1;
                *buf = uv_buf_init(NULL, 0);
                return;
            }
            s->buf = nb;
            s->cap = cap;
        }
    }
room:;
    size_t room = s->cap - s->len;
    *buf = uv_buf_init(s->buf + s->len, room > UINT_MAX ? UINT_MAX : (unsigned)room);
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf)
{
    (void)suggested;
    FutoInUvStream* s = h->data;
    if (s->tls) {
        futoin__uv_tls_alloc(s, buf);
        return;
    }
    futoin__uv_stream_room(s, buf);
}

void futoin__uv_stream_stop_reading(FutoInUvStream* s)
{
    if (s->reading) {
        uv_read_stop((uv_stream_t*)&s->tcp);
        s->reading = 0;
    }
}

/* Completes the pending read step if the buffer now satisfies it. */
static void serve_reader(FutoInUvStream* s)
{
    FutoInBinaryValue v;
    int err = 0;
    char what[READ_WHAT_SIZE];
    int r = try_read(s, &v, &err, what);
    if (r == RD_WAIT) {
        return;
    }
    FutoInAsyncSteps* as = s->rd_as;
    s->rd_as = NULL;
    s->rd_mode = RD_NONE;
    if (r == RD_DONE) {
        FutoInArgs args;
        memset(&args, 0, sizeof(args));
        args.arg0 = v;
        futoin_owned_success(as, s, &args);
    } else {
        futoin__uv_fail_owned(as, s, FUTOIN_COMM_ERROR, err, what);
    }
}

void futoin__uv_stream_input_done(FutoInUvStream* s)
{
    if (s->rd_as) {
        serve_reader(s);
    } else if (s->len - s->off > s->read_ahead) {
        futoin__uv_stream_stop_reading(s);
    }
}

static void on_read(uv_stream_t* h, ssize_t nread, const uv_buf_t* buf)
{
    FutoInUvStream* s = h->data;
    if (s->tls) {
        futoin__uv_tls_read(s, nread, buf);
        return;
    }
    if (nread > 0) {
        s->len += (size_t)nread;
    } else if (nread == UV_ENOBUFS && s->budget_blocked) {
        /* Not sticky: the next read step tries again. */
        s->budget_blocked = 0;
        futoin__uv_stream_stop_reading(s);
        futoin__uv_stream_fail_reader(s, UV_ENOBUFS, "read: input budget spent");
        return;
    } else if (nread == UV_ENOBUFS && s->alloc_failed) {
        /* Not sticky either: memory may be back for the next read step. */
        s->alloc_failed = 0;
        futoin__uv_stream_stop_reading(s);
        futoin__uv_stream_fail_reader(s, UV_ENOMEM, "read");
        return;
    } else if (nread < 0) {
        if (nread == UV_EOF) {
            s->eof = 1;
        } else {
            s->read_error = (int)nread;
        }
        futoin__uv_stream_stop_reading(s);
    }
    futoin__uv_stream_input_done(s);
}

int futoin__uv_stream_start_reading(FutoInUvStream* s)
{
    if (s->reading) {
        return 0;
    }
    int err = uv_read_start((uv_stream_t*)&s->tcp, on_alloc, on_read);
    if (err == 0) {
        s->reading = 1;
    }
    return err;
}

static void read_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInUvStream* s = data;
    s->rd_as = NULL;
    s->rd_mode = RD_NONE;
    futoin__uv_stream_stop_reading(s);
}

static void read_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ReadParams* p = data;
    FutoInUvStream* s = p->base.s;
    if (s->rd_as) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBUSY, "read: another read is pending");
        return;
    }
    s->rd_mode = p->mode;
    s->rd_n = p->n;
    s->rd_delim = p->delim;
    s->rd_dlen = p->dlen;
    s->scanned = 0;
    if (s->tls) {
        /* Records a spent budget left undecrypted. */
        futoin__uv_tls_pump(s);
    }
    FutoInBinaryValue v;
    int err = 0;
    char what[READ_WHAT_SIZE];
    int r = try_read(s, &v, &err, what);
    if (r != RD_WAIT) {
        s->rd_mode = RD_NONE;
        if (r == RD_DONE) {
            if (v.type) {
                futoin_success1(as, v);
            } else {
                futoin_success(as);
            }
        } else {
            futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, what);
        }
        return;
    }
    if (!s->reading) {
        err = uv_read_start((uv_stream_t*)&s->tcp, on_alloc, on_read);
        if (err) {
            s->rd_mode = RD_NONE;
            futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "read");
            return;
        }
        s->reading = 1;
    }
    s->rd_as = as;
    /* Owned by the stream: only its reads end the wait. */
    futoin_wait_owned(as, read_cancel, s);
    futoin__uv_wait_info(as, "read", futoin__uv_stream_peer(s));
}

static void add_read(FutoInAsyncSteps* as, FutoInUvStream* s, uint8_t mode, size_t n,
        const char* delim)
{
    size_t dlen = delim ? strlen(delim) : 0;
    ReadParams* p = futoin__uv_add_step(as, read_start, sizeof(ReadParams) + dlen + 1,
            futoin__uv_params_release, "read: out of memory");
    if (!p) {
        return;
    }
    p->base.s = futoin_uv_stream_ref(s);
    p->mode = mode;
    p->n = n;
    p->dlen = dlen;
    if (dlen) {
        memcpy(p->delim, delim, dlen + 1);
    }
}

/* A read length above FUTOIN_UV_MAX_IO_LEN: the step fails instead. */
static int read_len_ok(FutoInAsyncSteps* as, const char* fn, const char* param, size_t n)
{
    if (n <= FUTOIN_UV_MAX_IO_LEN) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: %s %zu out of range (0..%lu)", fn, param, n,
            (unsigned long)FUTOIN_UV_MAX_IO_LEN);
    return 0;
}

void futoin_uv_read_line(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max_len)
{
    if (futoin__uv_stream_ok(as, "futoin_uv_read_line", s)
            && read_len_ok(as, "futoin_uv_read_line", "max_len", max_len)) {
        add_read(as, s, RD_LINE, max_len ? max_len : FUTOIN_UV_DEFAULT_MAX_READ, "\n");
    }
}

void futoin_uv_read_until(FutoInAsyncSteps* as, FutoInUvStream* s, const char* delim,
        size_t max_len)
{
    if (!futoin__uv_stream_ok(as, "futoin_uv_read_until", s)
            || !read_len_ok(as, "futoin_uv_read_until", "max_len", max_len)) {
        return;
    }
    if (!delim || !*delim) {
        delim = "\n";
    }
    add_read(as, s, RD_UNTIL, max_len ? max_len : FUTOIN_UV_DEFAULT_MAX_READ, delim);
}

void futoin_uv_read_exact(FutoInAsyncSteps* as, FutoInUvStream* s, size_t n)
{
    if (futoin__uv_stream_ok(as, "futoin_uv_read_exact", s)
            && read_len_ok(as, "futoin_uv_read_exact", "n", n)) {
        add_read(as, s, RD_EXACT, n, NULL);
    }
}

void futoin_uv_read_wait(FutoInAsyncSteps* as, FutoInUvStream* s)
{
    if (futoin__uv_stream_ok(as, "futoin_uv_read_wait", s)) {
        add_read(as, s, RD_WAITDATA, 0, NULL);
    }
}

void futoin_uv_read_some(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max)
{
    if (futoin__uv_stream_ok(as, "futoin_uv_read_some", s)
            && read_len_ok(as, "futoin_uv_read_some", "max", max)) {
        add_read(as, s, RD_SOME, max ? max : FUTOIN_UV_DEFAULT_MAX_READ, NULL);
    }
}
