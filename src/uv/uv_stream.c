/* SPDX-License-Identifier: MIT */
/*
 * TCP streams: connect, read (line / delimiter / exact / some), write, close.
 *
 * Lifetime: a stream is reference counted (result values, queued steps and
 * the user hold references). The last release starts uv_close(); memory goes
 * in the close callback, or at the last release if that comes later. libuv
 * owns the handle until the close callback, whatever the steps do.
 *
 * Reading: once a read step has started, the stream keeps reading into its
 * own buffer even between read steps (up to read_ahead bytes, HIGH_WATER by
 * default), because
 * toggling uv_read_start/stop around every request would cost two epoll_ctl
 * calls per request on a keep-alive connection. A read step that finds its
 * data already buffered completes inside its own callback without waiting.
 *
 * Writing: uv_try_write first (loopback and idle sockets take everything at
 * once, so the step completes without a round trip through libuv); only the
 * remainder is queued with uv_write.
 */
#include "uv_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_READ (64u * 1024u)
#define INITIAL_BUF 4096u
#define MIN_FREE 1024u
/* An exact read at least this large takes the receive buffer over when it
 * holds nothing else, instead of copying it. */
#define ADOPT_MIN 4096u
/* With no read step waiting, stop reading beyond this many buffered bytes:
 * a peer that sends faster than we consume is pushed back by TCP. */
#define HIGH_WATER (256u * 1024u)
/* The largest read or write: result values have 32-bit lengths and
 * uv_buf_init() takes an unsigned int. */
#define MAX_IO_LEN UINT32_MAX

_Static_assert(UINT_MAX >= UINT32_MAX, "uv_buf_init() lengths must hold MAX_IO_LEN");

/* ------------------------------------------------------------------------ */
/* Reference counting and closing                                           */

FutoInUvStream* futoin__uv_stream_alloc(FutoInUv* uv)
{
    FutoInUvStream* s = calloc(1, sizeof(*s));
    if (!s) {
        return NULL;
    }
    if (uv_tcp_init(uv->uv, &s->tcp) != 0) {
        free(s);
        return NULL;
    }
    s->tcp.data = s;
    s->uv = uv;
    s->read_ahead = HIGH_WATER;
    return s;
}

/* ------------------------------------------------------------------------ */
/* Input budget                                                              */

FutoInUvBudget* futoin_uv_budget_new(size_t limit)
{
    FutoInUvBudget* b = calloc(1, sizeof(*b));
    if (!b) {
        return NULL;
    }
    b->limit = limit;
    atomic_init(&b->used, 0);
    atomic_init(&b->refusals, 0);
    atomic_init(&b->refs, 1);
    return b;
}

FutoInUvBudget* futoin_uv_budget_ref(FutoInUvBudget* b)
{
    if (b) {
        atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    }
    return b;
}

void futoin_uv_budget_release(FutoInUvBudget* b)
{
    if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        free(b);
    }
}

int futoin_uv_budget_take(FutoInUvBudget* b, size_t n)
{
    if (!b) {
        return -1;
    }
    size_t cur = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (cur > b->limit || n > b->limit - cur) {
            atomic_fetch_add_explicit(&b->refusals, 1, memory_order_relaxed);
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &cur, cur + n,
            memory_order_relaxed, memory_order_relaxed));
    return 0;
}

void futoin_uv_budget_give(FutoInUvBudget* b, size_t n)
{
    if (b && n) {
        atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
    }
}

size_t futoin_uv_budget_used(const FutoInUvBudget* b)
{
    return b ? atomic_load_explicit(&((FutoInUvBudget*)b)->used, memory_order_relaxed) : 0;
}

size_t futoin_uv_budget_limit(const FutoInUvBudget* b)
{
    return b ? b->limit : 0;
}

unsigned long futoin_uv_budget_refusals(const FutoInUvBudget* b)
{
    return b ? atomic_load_explicit(&((FutoInUvBudget*)b)->refusals, memory_order_relaxed) : 0;
}

/* The charge a receive buffer of cap bytes makes. */
static size_t charge_of(size_t cap)
{
    return cap > FUTOIN_UV_BUDGET_FREE_BYTES ? cap - FUTOIN_UV_BUDGET_FREE_BYTES : 0;
}

/* Moves the stream's charge to that of a buffer of cap bytes. Returns 0, or
 * -1 (nothing changed) when the budget cannot cover a larger buffer. */
static int stream_charge(FutoInUvStream* s, size_t cap)
{
    size_t want = charge_of(cap);
    if (!s->budget || want == s->charged) {
        s->charged = s->budget ? want : 0;
        return 0;
    }
    if (want > s->charged) {
        if (futoin_uv_budget_take(s->budget, want - s->charged) != 0) {
            return -1;
        }
    } else {
        futoin_uv_budget_give(s->budget, s->charged - want);
    }
    s->charged = want;
    return 0;
}

void futoin_uv_stream_set_budget(FutoInUvStream* s, FutoInUvBudget* b)
{
    if (!s || s->budget == b) {
        return;
    }
    FutoInUvBudget* old = s->budget;
    futoin_uv_budget_give(old, s->charged);
    s->charged = 0;
    s->budget = futoin_uv_budget_ref(b);
    futoin_uv_budget_release(old);
    if (b) {
        /* Moved as it is, even beyond the limit: the memory exists. */
        s->charged = charge_of(s->cap);
        atomic_fetch_add_explicit(&b->used, s->charged, memory_order_relaxed);
    }
}

void futoin_uv_stream_set_read_ahead(FutoInUvStream* s, size_t bytes)
{
    if (s) {
        s->read_ahead = bytes;
    }
}

const char* futoin_uv_stream_peek(const FutoInUvStream* s, size_t* len)
{
    size_t n = s && s->buf ? s->len - s->off : 0;
    if (len) {
        *len = n;
    }
    return n ? s->buf + s->off : NULL;
}

/* Frees the receive buffer (nothing buffered) and returns its charge. */
static void drop_buffer(FutoInUvStream* s)
{
    free(s->buf);
    s->buf = NULL;
    s->cap = s->len = s->off = 0;
    stream_charge(s, 0);
}

static void stream_destroy(FutoInUvStream* s)
{
    drop_buffer(s);
    futoin_uv_budget_release(s->budget);
    free(s);
}

static void on_stream_closed(uv_handle_t* h)
{
    FutoInUvStream* s = h->data;
    s->closed = 1;
    FutoInAsyncSteps* as = s->close_as;
    s->close_as = NULL;
    if (s->refs == 0) {
        stream_destroy(s);
    }
    if (as) {
        futoin_success(as);
    }
}

/* Fails the pending read step, if any, with CommError err. */
static void fail_reader(FutoInUvStream* s, int err, const char* what)
{
    FutoInAsyncSteps* as = s->rd_as;
    if (!as) {
        return;
    }
    s->rd_as = NULL;
    s->rd_mode = RD_NONE;
    futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, what);
}

static void close_now(FutoInUvStream* s)
{
    if (!uv_is_closing((uv_handle_t*)&s->tcp)) {
        uv_close((uv_handle_t*)&s->tcp, on_stream_closed);
    }
}

void futoin__uv_stream_close(FutoInUvStream* s)
{
    if (s->closing) {
        return;
    }
    s->closing = 1;
    s->reading = 0;
    close_now(s);
    /* Queued uv_write requests get ECANCELED from libuv itself. */
    fail_reader(s, UV_ECANCELED, "read: stream closed");
}

void futoin_uv_stream_close(FutoInUvStream* s)
{
    if (s) {
        futoin__uv_stream_close(s);
    }
}

FutoInUvStream* futoin_uv_stream_ref(FutoInUvStream* s)
{
    if (s) {
        ++s->refs;
    }
    return s;
}

void futoin_uv_stream_release(FutoInUvStream* s)
{
    if (!s || --s->refs > 0) {
        return;
    }
    if (s->closed) {
        stream_destroy(s);
    } else {
        futoin__uv_stream_close(s);
    }
}

uv_tcp_t* futoin_uv_stream_handle(FutoInUvStream* s)
{
    return s ? &s->tcp : NULL;
}

size_t futoin_uv_stream_buffered(const FutoInUvStream* s)
{
    return s ? s->len - s->off : 0;
}

int futoin_uv_stream_is_open(const FutoInUvStream* s)
{
    return s && !s->closing;
}

/* "host:port" of the peer, cached: the connect target, or the address of
 * an accepted peer (looked up once). "" while unknown. */
static const char* stream_peer(FutoInUvStream* s)
{
    if (!s->peer[0] && !s->closing) {
        struct sockaddr_storage a;
        int len = (int)sizeof(a);
        if (uv_tcp_getpeername(&s->tcp, (struct sockaddr*)&a, &len) == 0) {
            char ip[64] = "";
            if (a.ss_family == AF_INET6) {
                const struct sockaddr_in6* a6 = (const struct sockaddr_in6*)&a;
                uv_ip6_name(a6, ip, sizeof(ip));
                snprintf(s->peer, sizeof(s->peer), "[%s]:%u", ip, (unsigned)ntohs(a6->sin6_port));
            } else {
                const struct sockaddr_in* a4 = (const struct sockaddr_in*)&a;
                uv_ip4_name(a4, ip, sizeof(ip));
                snprintf(s->peer, sizeof(s->peer), "%s:%u", ip, (unsigned)ntohs(a4->sin_port));
            }
        }
    }
    return s->peer[0] ? s->peer : "(unknown peer)";
}

const char* futoin_uv_stream_peer(FutoInUvStream* s)
{
    if (!s) {
        return "";
    }
    stream_peer(s);
    return s->peer;
}

/* A NULL stream given to a step function: the added step fails instead. */
static int stream_ok(FutoInAsyncSteps* as, const char* fn, const FutoInUvStream* s)
{
    if (s) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: s is NULL", fn);
    return 0;
}

static void stream_value_cleanup(FutoInBinaryValue* v)
{
    futoin_uv_stream_release(v->custom_data);
}

const FutoInType futoin_uv_stream_type = {FTN_TYPE_CUSTOM_OBJECT, stream_value_cleanup};

FutoInUvStream* futoin_uv_arg_stream(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || args->args[i].type != &futoin_uv_stream_type) {
        return NULL;
    }
    return args->args[i].custom_data;
}

/* Parameter blocks of steps that use a stream hold a reference to it. */
typedef struct {
    FutoInUvStream* s;
} StreamParams;

static void params_release(void* p)
{
    futoin_uv_stream_release(((StreamParams*)p)->s);
}

/* ------------------------------------------------------------------------ */
/* Connect                                                                   */

enum { CONNECT_RESOLVING = 1, CONNECT_CONNECTING };

typedef struct {
    uv_getaddrinfo_t gai;
    uv_connect_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled: libuv callbacks only free */
    FutoInUv* uv;
    struct addrinfo* res;
    struct addrinfo* next;
    FutoInUvStream* s; /* the attempt in progress */
    int phase;
    int last_err;
    unsigned port;
    char host[];
} ConnectOp;

static void connect_op_free(ConnectOp* op)
{
    if (op->res) {
        uv_freeaddrinfo(op->res);
    }
    free(op);
}

static void connect_fail(ConnectOp* op, int err)
{
    FutoInAsyncSteps* as = op->as;
    char what[160];
    snprintf(what, sizeof(what), "connect %s:%u", op->host, op->port);
    connect_op_free(op);
    futoin__uv_fail(as, FUTOIN_CONNECT_ERROR, err, what);
}

static void on_connected(uv_connect_t* req, int status);

/* Starts a connection attempt to addr. Returns 0, or a libuv error when it
 * could not even start (the attempt's stream is then already closing). */
static int connect_attempt(ConnectOp* op, const struct sockaddr* addr)
{
    FutoInUvStream* s = futoin__uv_stream_alloc(op->uv);
    if (!s) {
        return UV_ENOMEM;
    }
    op->req.data = op;
    int err = uv_tcp_connect(&op->req, &s->tcp, addr, on_connected);
    if (err) {
        futoin__uv_stream_close(s);
        return err;
    }
    op->s = s;
    op->phase = CONNECT_CONNECTING;
    return 0;
}

/* Tries the remaining resolved addresses in turn; fails the step when
 * none is left. */
static void connect_next(ConnectOp* op)
{
    while (op->next) {
        struct addrinfo* ai = op->next;
        op->next = ai->ai_next;
        int err = connect_attempt(op, ai->ai_addr);
        if (!err) {
            return;
        }
        op->last_err = err;
    }
    connect_fail(op, op->last_err ? op->last_err : UV_EAI_NONAME);
}

static void on_connected(uv_connect_t* req, int status)
{
    ConnectOp* op = req->data;
    FutoInUvStream* s = op->s;
    op->s = NULL;
    if (!op->as) {
        /* Cancelled: the cancel handler closed the stream (this is libuv
         * reporting ECANCELED for it); only the request memory is left. */
        connect_op_free(op);
        return;
    }
    if (status < 0) {
        op->last_err = status;
        futoin__uv_stream_close(s);
        connect_next(op);
        return;
    }
    FutoInAsyncSteps* as = op->as;
    int v6 = strchr(op->host, ':') != NULL;
    snprintf(s->peer, sizeof(s->peer), "%s%s%s:%u", v6 ? "[" : "", op->host, v6 ? "]" : "",
            op->port);
    connect_op_free(op);
    /* The value's reference is the only one: nobody keeping the stream
     * means it is closed once the receiving step returns. */
    s->refs = 1;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0 = futoin_val_custom(&futoin_uv_stream_type, s);
    as->api->success(as, &args);
}

static void on_resolved(uv_getaddrinfo_t* req, int status, struct addrinfo* res)
{
    ConnectOp* op = req->data;
    op->res = res;
    if (!op->as) {
        connect_op_free(op);
        return;
    }
    if (status < 0) {
        connect_fail(op, status);
        return;
    }
    op->next = res;
    connect_next(op);
}

static void connect_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ConnectOp* op = data;
    op->as = NULL;
    if (op->phase == CONNECT_RESOLVING) {
        /* If the lookup already runs in the thread pool this fails and the
         * callback comes when it ends; either way it frees op. */
        uv_cancel((uv_req_t*)&op->gai);
    } else if (op->s) {
        /* on_connected(ECANCELED) frees op, the close callback the stream. */
        futoin__uv_stream_close(op->s);
    }
}

/* Fills addr when host is a numeric IPv4 or IPv6 address. */
static int parse_numeric(const char* host, unsigned port, struct sockaddr_storage* addr)
{
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in*)addr) == 0) {
        return 0;
    }
    return uv_ip6_addr(host, (int)port, (struct sockaddr_in6*)addr);
}

static void connect_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* host = data;
    unsigned port;
    memcpy(&port, host + strlen(host) + 1, sizeof(port));
    FutoInUv* uv = futoin__uv_require(as, "connect");
    if (!uv) {
        return;
    }
    size_t hlen = strlen(host);
    ConnectOp* op = calloc(1, sizeof(*op) + hlen + 1);
    if (!op) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "connect: out of memory");
        return;
    }
    op->as = as;
    op->uv = uv;
    op->port = port;
    memcpy(op->host, host, hlen + 1);

    struct sockaddr_storage addr;
    int err;
    if (parse_numeric(host, port, &addr) == 0) {
        err = connect_attempt(op, (const struct sockaddr*)&addr);
    } else {
        struct addrinfo hints;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        char service[16];
        snprintf(service, sizeof(service), "%u", port);
        op->gai.data = op;
        op->phase = CONNECT_RESOLVING;
        err = uv_getaddrinfo(uv->uv, &op->gai, on_resolved, host, service, &hints);
    }
    if (err) {
        connect_fail(op, err);
        return;
    }
    futoin_set_cancel(as, connect_cancel, op);
    char target[300];
    int v6 = strchr(host, ':') != NULL;
    snprintf(target, sizeof(target), "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
    futoin__uv_wait_info(as, "connect", target);
}

void futoin_uv_tcp_connect(FutoInAsyncSteps* as, const char* host, unsigned port)
{
    if (!host) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_tcp_connect: host is NULL");
        return;
    }
    if (port == 0 || port > 65535) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_tcp_connect: port %u out of range (1..65535)",
                port);
        return;
    }
    size_t hlen = strlen(host);
    /* Layout: host string, NUL, then the port (aligned by the copy). */
    char* p = futoin__uv_add_step(as, connect_start, hlen + 1 + sizeof(unsigned), NULL,
            "connect: out of memory");
    if (p) {
        memcpy(p, host, hlen + 1);
        memcpy(p + hlen + 1, &port, sizeof(port));
    }
}

/* ------------------------------------------------------------------------ */
/* Read                                                                      */

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
#define READ_WHAT_SIZE 96

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
        if (s->rd_mode == RD_EXACT && s->off == 0 && take == s->len && take >= ADOPT_MIN
                && s->cap > take) {
            /* The whole buffer is the result: hand it over instead of
             * copying it (a large body would otherwise exist twice). */
            char* b = s->buf;
            b[take] = '\0';
            s->buf = NULL;
            s->cap = s->len = 0;
            stream_charge(s, 0);
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
            if (s->cap > INITIAL_BUF) {
                /* A large input was consumed: give the memory (and the
                 * budget) back rather than keep it per connection. */
                drop_buffer(s);
            }
        }
        s->scanned = 0;
        return RD_DONE;
    }
    if (s->read_error) {
        *err = s->read_error;
        snprintf(what, READ_WHAT_SIZE, "read");
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
    size_t cap = s->cap ? s->cap * 2 : INITIAL_BUF;
    if (s->rd_as && s->rd_mode == RD_EXACT && s->rd_n < SIZE_MAX) {
        /* An exact read knows its size: no growth beyond it (plus the NUL
         * of a result that takes the buffer over). */
        size_t want = s->rd_n + 1;
        if (want >= s->len + MIN_FREE && want < cap) {
            cap = want;
        }
    }
    return cap;
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf)
{
    (void)suggested;
    FutoInUvStream* s = h->data;
    if (s->cap - s->len < MIN_FREE) {
        /* Compact first: consumed bytes at the front are free space. */
        if (s->off > 0) {
            memmove(s->buf, s->buf + s->off, s->len - s->off);
            s->len -= s->off;
            s->off = 0;
        }
        int exact_fits = s->rd_as && s->rd_mode == RD_EXACT && s->len < s->rd_n
                && s->rd_n - s->len <= s->cap - s->len;
        if (s->cap - s->len < MIN_FREE && !exact_fits) {
            size_t cap = grow_target(s);
            if (cap == 0) {
                /* Cannot grow: libuv reports UV_ENOBUFS. */
                *buf = uv_buf_init(NULL, 0);
                return;
            }
            if (stream_charge(s, cap) != 0) {
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
                stream_charge(s, s->cap);
                /* libuv turns an empty buffer into UV_ENOBUFS. */
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

static void stop_reading(FutoInUvStream* s)
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
        as->api->success(as, &args);
    } else {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, what);
    }
}

static void on_read(uv_stream_t* h, ssize_t nread, const uv_buf_t* buf)
{
    (void)buf;
    FutoInUvStream* s = h->data;
    if (nread > 0) {
        s->len += (size_t)nread;
    } else if (nread == UV_ENOBUFS && s->budget_blocked) {
        /* Not sticky: the next read step tries again. */
        s->budget_blocked = 0;
        stop_reading(s);
        fail_reader(s, UV_ENOBUFS, "read: input budget spent");
        return;
    } else if (nread < 0) {
        if (nread == UV_EOF) {
            s->eof = 1;
        } else {
            s->read_error = (int)nread;
        }
        stop_reading(s);
    }
    if (s->rd_as) {
        serve_reader(s);
    } else if (s->len - s->off > s->read_ahead) {
        stop_reading(s);
    }
}

static void read_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInUvStream* s = data;
    s->rd_as = NULL;
    s->rd_mode = RD_NONE;
    stop_reading(s);
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
    futoin_set_cancel(as, read_cancel, s);
    futoin__uv_wait_info(as, "read", stream_peer(s));
}

static void add_read(FutoInAsyncSteps* as, FutoInUvStream* s, uint8_t mode, size_t n,
        const char* delim)
{
    size_t dlen = delim ? strlen(delim) : 0;
    ReadParams* p = futoin__uv_add_step(as, read_start, sizeof(ReadParams) + dlen + 1,
            params_release, "read: out of memory");
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

/* A read length above MAX_IO_LEN: the step fails instead. */
static int read_len_ok(FutoInAsyncSteps* as, const char* fn, const char* param, size_t n)
{
    if (n <= MAX_IO_LEN) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: %s %zu out of range (0..%lu)", fn, param, n,
            (unsigned long)MAX_IO_LEN);
    return 0;
}

void futoin_uv_read_line(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max_len)
{
    if (stream_ok(as, "futoin_uv_read_line", s) && read_len_ok(as, "futoin_uv_read_line", "max_len", max_len)) {
        add_read(as, s, RD_LINE, max_len ? max_len : DEFAULT_MAX_READ, "\n");
    }
}

void futoin_uv_read_until(FutoInAsyncSteps* as, FutoInUvStream* s, const char* delim,
        size_t max_len)
{
    if (!stream_ok(as, "futoin_uv_read_until", s)
            || !read_len_ok(as, "futoin_uv_read_until", "max_len", max_len)) {
        return;
    }
    if (!delim || !*delim) {
        delim = "\n";
    }
    add_read(as, s, RD_UNTIL, max_len ? max_len : DEFAULT_MAX_READ, delim);
}

void futoin_uv_read_exact(FutoInAsyncSteps* as, FutoInUvStream* s, size_t n)
{
    if (stream_ok(as, "futoin_uv_read_exact", s)
            && read_len_ok(as, "futoin_uv_read_exact", "n", n)) {
        add_read(as, s, RD_EXACT, n, NULL);
    }
}

void futoin_uv_read_wait(FutoInAsyncSteps* as, FutoInUvStream* s)
{
    if (stream_ok(as, "futoin_uv_read_wait", s)) {
        add_read(as, s, RD_WAITDATA, 0, NULL);
    }
}

void futoin_uv_read_some(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max)
{
    if (stream_ok(as, "futoin_uv_read_some", s)
            && read_len_ok(as, "futoin_uv_read_some", "max", max)) {
        add_read(as, s, RD_SOME, max ? max : DEFAULT_MAX_READ, NULL);
    }
}

/* ------------------------------------------------------------------------ */
/* Write                                                                     */

typedef struct {
    StreamParams base;
    const char* data; /* points to bytes[] or to the caller's static data */
    size_t len;
    char bytes[];
} WriteParams;

typedef struct {
    uv_write_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled */
    char bytes[];
} WriteOp;

static void on_written(uv_write_t* req, int status)
{
    WriteOp* op = req->data;
    FutoInAsyncSteps* as = op->as;
    free(op);
    if (!as) {
        return;
    }
    if (status < 0) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, status, "write");
    } else {
        futoin_success(as);
    }
}

/* libuv cannot withdraw a queued write: the request finishes on its own
 * and only frees itself. */
static void write_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((WriteOp*)data)->as = NULL;
}

static void write_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    WriteParams* p = data;
    FutoInUvStream* s = p->base.s;
    if (s->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBADF, "write: stream closed");
        return;
    }
    size_t done = 0;
    if (p->len == 0) {
        futoin_success(as);
        return;
    }
    uv_buf_t buf = uv_buf_init((char*)p->data, (unsigned)p->len);
    int n = uv_try_write((uv_stream_t*)&s->tcp, &buf, 1);
    if (n >= 0) {
        done = (size_t)n;
        if (done == p->len) {
            futoin_success(as);
            return;
        }
    } else if (n != UV_EAGAIN) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, n, "write");
        return;
    }
    /* The parameters die with the step, but libuv may still need the bytes
     * after a cancel: the remainder moves to the request (static data is
     * referenced as it is). */
    size_t rest = p->len - done;
    int copy = p->data == p->bytes;
    WriteOp* op = malloc(sizeof(*op) + (copy ? rest : 0));
    if (!op) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "write: out of memory");
        return;
    }
    op->req.data = op;
    op->as = as;
    if (copy) {
        memcpy(op->bytes, p->data + done, rest);
        buf = uv_buf_init(op->bytes, (unsigned)rest);
    } else {
        buf = uv_buf_init((char*)p->data + done, (unsigned)rest);
    }
    int err = uv_write(&op->req, (uv_stream_t*)&s->tcp, &buf, 1, on_written);
    if (err) {
        free(op);
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "write");
        return;
    }
    futoin_set_cancel(as, write_cancel, op);
    futoin__uv_wait_info(as, "write", stream_peer(s));
}

static void add_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len,
        int copy)
{
    const char* fn = copy ? "futoin_uv_write" : "futoin_uv_write_static";
    if (!stream_ok(as, fn, s)) {
        return;
    }
    if (len > MAX_IO_LEN) {
        /* uv_buf_init() takes an unsigned int length. */
        futoin__uv_add_failf(as, "EINVAL: %s: len %zu out of range (0..%lu)", fn, len,
                (unsigned long)MAX_IO_LEN);
        return;
    }
    if (!data && len) {
        futoin__uv_add_failf(as, "EINVAL: %s: NULL data with len %zu", fn, len);
        return;
    }
    WriteParams* p = futoin__uv_add_step(as, write_start,
            sizeof(WriteParams) + (copy ? len : 0), params_release, "write: out of memory");
    if (!p) {
        return;
    }
    p->base.s = futoin_uv_stream_ref(s);
    p->len = len;
    if (copy) {
        if (len) {
            memcpy(p->bytes, data, len);
        }
        p->data = p->bytes;
    } else {
        p->data = data;
    }
}

long futoin_uv_try_write(FutoInUvStream* s, const void* data, size_t len)
{
    if (!s || (!data && len)) {
        return UV_EINVAL;
    }
    if (s->closing) {
        return UV_EBADF;
    }
    if (len == 0 || uv_stream_get_write_queue_size((uv_stream_t*)&s->tcp) > 0) {
        return 0; /* behind queued bytes: nothing may overtake them */
    }
    uv_buf_t buf = uv_buf_init((char*)data, (unsigned)(len > MAX_IO_LEN ? MAX_IO_LEN : len));
    int n = uv_try_write((uv_stream_t*)&s->tcp, &buf, 1);
    return n == UV_EAGAIN ? 0 : n;
}

void futoin_uv_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len)
{
    add_write(as, s, data, len, 1);
}

void futoin_uv_write_static(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data,
        size_t len)
{
    add_write(as, s, data, len, 0);
}

/* ------------------------------------------------------------------------ */
/* Shutdown                                                                  */

typedef struct {
    uv_shutdown_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled */
} ShutdownOp;

static void on_shutdown_done(uv_shutdown_t* req, int status)
{
    ShutdownOp* op = req->data;
    FutoInAsyncSteps* as = op->as;
    free(op);
    if (!as) {
        return;
    }
    if (status < 0) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, status, "shutdown");
    } else {
        futoin_success(as);
    }
}

/* libuv cannot withdraw a shutdown either: it completes (or gets ECANCELED
 * when the stream closes, before the close callback) and frees itself. */
static void shutdown_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((ShutdownOp*)data)->as = NULL;
}

static void shutdown_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInUvStream* s = ((StreamParams*)data)->s;
    if (s->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBADF, "shutdown: stream closed");
        return;
    }
    ShutdownOp* op = malloc(sizeof(*op));
    if (!op) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "shutdown: out of memory");
        return;
    }
    op->req.data = op;
    op->as = as;
    int err = uv_shutdown(&op->req, (uv_stream_t*)&s->tcp, on_shutdown_done);
    if (err) {
        free(op);
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "shutdown");
        return;
    }
    futoin_set_cancel(as, shutdown_cancel, op);
    futoin__uv_wait_info(as, "shutdown", stream_peer(s));
}

void futoin_uv_shutdown(FutoInAsyncSteps* as, FutoInUvStream* s)
{
    if (!stream_ok(as, "futoin_uv_shutdown", s)) {
        return;
    }
    StreamParams* p = futoin__uv_add_step(as, shutdown_start, sizeof(StreamParams),
            params_release, "shutdown: out of memory");
    if (p) {
        p->s = futoin_uv_stream_ref(s);
    }
}

/* ------------------------------------------------------------------------ */
/* Close                                                                     */

typedef struct {
    StreamParams base;
    int graceful;
} CloseParams;

static void close_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((FutoInUvStream*)data)->close_as = NULL;
}

static void on_shutdown(uv_shutdown_t* req, int status)
{
    (void)status;
    /* Whatever the outcome, the handle goes now: shutdown only flushed. */
    close_now(req->data);
}

static void close_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    CloseParams* p = data;
    FutoInUvStream* s = p->base.s;
    if (s->closed) {
        futoin_success(as);
        return;
    }
    if (s->close_as) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBUSY, "close: already being closed");
        return;
    }
    s->close_as = as;
    futoin_set_cancel(as, close_cancel, s);
    futoin__uv_wait_info(as, "close", stream_peer(s));
    if (s->closing) {
        return;
    }
    if (p->graceful) {
        s->closing = 1;
        s->shutdown_req.data = s;
        stop_reading(s);
        fail_reader(s, UV_ECANCELED, "read: stream closed");
        if (uv_shutdown(&s->shutdown_req, (uv_stream_t*)&s->tcp, on_shutdown) == 0) {
            return;
        }
        close_now(s);
        return;
    }
    futoin__uv_stream_close(s);
}

void futoin_uv_close(FutoInAsyncSteps* as, FutoInUvStream* s, int graceful)
{
    if (!stream_ok(as, "futoin_uv_close", s)) {
        return;
    }
    CloseParams* p = futoin__uv_add_step(as, close_start, sizeof(CloseParams), params_release,
            "close: out of memory");
    if (!p) {
        /* The caller's reference is still ours to drop: close anyway. */
        futoin_uv_stream_release(s);
        return;
    }
    /* No new reference: the block takes over the caller's, so the stream is
     * closed even if the step never gets to run. */
    p->base.s = s;
    p->graceful = graceful;
}
