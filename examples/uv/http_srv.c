/* SPDX-License-Identifier: MIT */
/*
 * A hardened HTTP/1.1 server built from AsyncSteps on the libuv backend
 * (the module behind examples/uv/http_server.c; docs/HTTP-SERVER.md).
 *
 * Threads and loops. One loop thread per core (option loops), each with its
 * own FutoInUv (a FutoInLoop driven by its own uv_loop_t), its own listening
 * socket and its own Limiter. The listeners share the port with
 * SO_REUSEPORT: the kernel spreads new connections over them, so a
 * connection lives on one loop from accept to close and no request ever
 * crosses threads. What is shared is atomic: the connection count (for
 * max_connections), the input budget (a FutoInUvBudget) and the counters.
 *
 * One root per connection. Its first step is a loop with one iteration per
 * request:
 *     idle     wait for the first byte (idle timeout; nothing buffered yet)
 *     request  read the head, parse it, read the body (read timeout for all)
 *     handle   the handler, inside the Limiter: only request handling holds
 *              a slot, never a client's reading or writing speed
 *     respond  write the response (write timeout)
 *     after    count it; break unless the connection stays open
 * then a lingering close when the server ended the connection after a
 * response (shutdown, read and drop what the client still sends, briefly).
 * A connection that ends between requests (the client closes it, or it
 * stays idle past the idle timeout) ends normally: the idle step's error
 * handler counts it and leaves the loop, and the root completes. Any other
 * error of a connection (a timeout inside a request, the peer gone in the
 * middle of one) ends its root with that error; the unhandled-error
 * callback counts it and frees the connection. Limits end in
 * a status code: 408, 413, 414, 417, 431, 501, 503, 505, and framing errors
 * 400; a response that ends the connection says "Connection: close".
 *
 * HTTPS (options --tls-cert and --tls-key): each loop has its own TLS
 * configuration, and a connection's root starts with the TLS handshake
 * under the read timeout; the request loop then reads and writes the
 * plain text with the same steps, and the lingering close starts with a
 * close_notify (futoin_uv_shutdown() on a TLS stream).
 *
 * Output is bounded per connection by construction: a request is read only
 * after the previous response was handed to the kernel, so a client that
 * does not read holds at most one response and its socket buffers, until
 * the write timeout closes it. Input is bounded by the head and body limits
 * per request, by a 16 KiB read-ahead per connection, and across all
 * connections and loops by the input budget.
 */
/* glibc hides POSIX from -std=c11 without it; macOS and the BSDs would
 * then hide sysconf(_SC_NPROCESSORS_ONLN), which is not POSIX. */
#if defined(__linux__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "http_srv.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Body bytes read per step. */
#define BODY_CHUNK (16u * 1024u)
/* What a connection reads ahead while it is not reading a request. */
#define READ_AHEAD (16u * 1024u)
/* A chunk-size line. */
#define MAX_CHUNK_LINE 4096u
/* Lingering close: how long, and how much is read and dropped. */
#define LINGER_MS 1000u
#define LINGER_BYTES (256u * 1024u)

/* The error code that carries an HTTP status out of body-reading steps. */
#define HTTP_ERROR_CODE "HttpError"

typedef struct Worker Worker;
typedef struct Conn Conn;

/* Counters of one loop: written by its thread only, read by any. On cache
 * lines of their own (see Worker), so that one loop's counting does not
 * slow down what the other loops read. */
#define LINE 128
typedef struct Counters {
    atomic_ulong accepted;
    atomic_ulong refused;
    atomic_ulong requests;
    atomic_ulong ok;
    atomic_ulong rejected;
    atomic_ulong overloaded;
    atomic_ulong client_errors;
    atomic_ulong idle_closed;
    atomic_ulong read_timeouts;
    atomic_ulong write_timeouts;
    atomic_ulong peer_closed;
    atomic_ulong errors;
    atomic_ulong tls_failures;
} Counters;

static void inc(atomic_ulong* c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
            memory_order_relaxed);
}

/* The engine's counters (FutoInLoopCounters), one line per field. Not
 * for clang-format, which wraps such a list differently on every run. */
/* clang-format off */
#define ENGINE_COUNTERS(X) X(roots) X(steps) X(errors) X(timeouts) X(cancels) \
    X(sync_rejections) X(unhandled_errors) X(timers_pending) X(immediates_pending) X(xmsgs)
/* clang-format on */

/* A loop's engine counters as it last published them, for /stats served by
 * another loop: futoin_loop_counters() answers on the loop's own thread only. */
typedef struct EngineSnapshot {
#define ENGINE_FIELD(f) atomic_ullong f;
    ENGINE_COUNTERS(ENGINE_FIELD)
#undef ENGINE_FIELD
} EngineSnapshot;

enum { W_STARTING = 0, W_READY, W_FAILED };

struct Worker {
    _Alignas(LINE) HttpServer* srv;
    unsigned index;
    pthread_t thread;
    int thread_started;
    int state; /* W_*, under srv->lock */
    char error[160];
    FutoInUv* uv;
    FutoInUvServer* listener;
    FutoInAsyncSteps* acceptor;
    FutoInSync* limiter;
    FutoInSync* uploads; /* a Mutex: bodies read at once on this loop */
    FutoInUvTls* tls;    /* HTTPS: this loop's TLS configuration, else NULL */
    uv_async_t ctl;      /* wakes the loop for a shutdown request */
    int ctl_open;        /* under ctl_lock: other threads may send */
    pthread_mutex_t ctl_lock;
    uv_timer_t drain_timer;
    int drain_timer_open;
    uv_timer_t publish_timer; /* unreferenced: never keeps the loop alive */
    int publish_timer_open;
    Conn* conns;
    int draining;
    int finished;
    int busy_at_exit;
    _Alignas(LINE) Counters st;
    _Alignas(LINE) EngineSnapshot engine;
};

struct HttpServer {
    HttpServerOptions opt;
    char host[64];
    unsigned n;
    unsigned port;
    Worker* w;
    FutoInUvBudget* budget;
    /* Written by every loop on accept and close: away from what they read. */
    _Alignas(LINE) atomic_ulong active;
    _Alignas(LINE) atomic_int shutdown; /* 0, 1 drain, 2 now */
    atomic_uint finished;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

enum { PH_IDLE = 0, PH_HEAD, PH_BODY, PH_HANDLE, PH_WRITE, PH_LINGER };
enum { CH_SIZE = 0, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct Conn {
    Worker* w;
    FutoInUvStream* s;
    FutoInAsyncSteps* root;
    Conn* prev;
    Conn* next;
    int phase;
    int have_req;  /* c->req was set before the head was parsed (an error) */
    int skip;      /* only empty lines: no request, no response */
    int keep;      /* the response keeps the connection open */
    int linger;    /* close after a response: lingering close */
    int err_route; /* the status of an HTTP_ERROR_CODE error */
    int chunk_state;
    int timed;      /* the read timeout of this request is armed */
    int tls_failed; /* HTTPS: the handshake failed: no request */
    uint32_t requests;
    uint64_t body_left;
    uint64_t body_total;
    size_t trailer_bytes;
    size_t lingered;
    char* hbuf; /* a head that came in pieces, line by line */
    size_t hlen;
    size_t hcap;
    size_t hcharged; /* of hbuf, to the input budget */
    int in_hbuf;     /* the head to parse is in hbuf */
    int scan;        /* HTTP_SCAN_* of the buffered head when the request began */
    size_t scan_n;
    HttpRequest req;
    char dyn[900]; /* a dynamic response */
};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

void http_server_options_init(HttpServerOptions* o)
{
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->port = 8080;
    o->loops = 0;
    o->idle_timeout_ms = 5000;
    o->read_timeout_ms = 10000;
    o->write_timeout_ms = 10000;
    o->drain_timeout_ms = 5000;
    o->max_requests = 1000;
    o->max_connections = 0; /* as many as the descriptor limit allows */
    HttpLimits lim = HTTP_LIMITS_DEFAULT;
    o->limits = lim;
    o->input_budget = 64u * 1024u * 1024u;
    o->max_uploads = 64;
    o->use_limiter = 1;
    FutoInLimiterOptions l = { 256u, 1024u, 100000u, 1000u, 1024u };
    o->limiter = l;
}

static void usage(FILE* f, const char* argv0)
{
    fprintf(f,
            "usage: %s [options] [port]\n"
            "  port                      0..65535 (0: any free port; default 8080)\n"
            "  -a, --bind ADDR           numeric IPv4/IPv6 bind address (127.0.0.1)\n"
            "  -j, --loops N             loop threads, 0: one per CPU (0)\n"
            "  -i, --idle-timeout MS     wait for a request's first byte (5000)\n"
            "  -t, --read-timeout MS     the rest of the head and the body (10000)\n"
            "  -w, --write-timeout MS    each response (10000)\n"
            "  -d, --drain-timeout MS    requests in flight after SIGINT (5000)\n"
            "  -n, --max-requests N      per connection, 0: unlimited (1000)\n"
            "  -m, --max-connections N   open at once; 0: what the descriptor limit\n"
            "                            allows (0); more: 503 and close\n"
            "  -l, --max-line BYTES      request line (8192): 414 above\n"
            "  -H, --max-head BYTES      request head (16384): 431 above\n"
            "  -B, --max-body BYTES      request body (1048576): 413 above\n"
            "  -g, --input-budget BYTES  buffered input, all connections (67108864)\n"
            "  -u, --max-uploads N       bodies read at once, 0: unlimited (64)\n"
            "  -c, --concurrent N        Limiter: requests handled at once (256)\n"
            "  -q, --max-queue N         Limiter: requests waiting for a slot (1024)\n"
            "  -r, --rate N              Limiter: requests per period (100000)\n"
            "  -p, --period MS           Limiter: rate period (1000)\n"
            "  -b, --burst N             Limiter: requests waiting for the rate (1024)\n"
            "  -L, --no-limiter          no Limiter\n"
            "  -D, --debug-pages         serve GET /debug/flows: the flows of the\n"
            "                            loop that answers (off: 404)\n"
            "  -C, --tls-cert FILE       HTTPS: the certificate chain (PEM)\n"
            "  -K, --tls-key FILE        HTTPS: its private key (PEM); both or neither\n"
            "  -h, --help\n"
            "Numbers are decimal digits only. MS: 1..4294967295; N and BYTES:\n"
            "0..4294967295 (the Limiter refuses a concurrency, rate or period of 0;\n"
            "limits and the budget must be at least 1). The Limiter's numbers are\n"
            "for the whole server and are divided among the loops.\n",
            argv0);
}

/* Digits only, in min..max. */
static int parse_number(const char* text, unsigned long long min, unsigned long long max,
        unsigned long long* out)
{
    if (!text || !*text) {
        return -1;
    }
    unsigned long long v = 0;
    for (const char* p = text; *p; ++p) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        unsigned d = (unsigned)(*p - '0');
        if (d > max || v > (max - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    if (v < min) {
        return -1;
    }
    *out = v;
    return 0;
}

int http_server_parse_args(HttpServerOptions* o, int argc, char** argv, FILE* out, FILE* err)
{
    static const struct option longs[] = {
        { "bind", required_argument, NULL, 'a' },
        { "loops", required_argument, NULL, 'j' },
        { "idle-timeout", required_argument, NULL, 'i' },
        { "read-timeout", required_argument, NULL, 't' },
        { "write-timeout", required_argument, NULL, 'w' },
        { "drain-timeout", required_argument, NULL, 'd' },
        { "max-requests", required_argument, NULL, 'n' },
        { "max-connections", required_argument, NULL, 'm' },
        { "max-line", required_argument, NULL, 'l' },
        { "max-head", required_argument, NULL, 'H' },
        { "max-body", required_argument, NULL, 'B' },
        { "input-budget", required_argument, NULL, 'g' },
        { "max-uploads", required_argument, NULL, 'u' },
        { "concurrent", required_argument, NULL, 'c' },
        { "max-queue", required_argument, NULL, 'q' },
        { "rate", required_argument, NULL, 'r' },
        { "period", required_argument, NULL, 'p' },
        { "burst", required_argument, NULL, 'b' },
        { "no-limiter", no_argument, NULL, 'L' },
        { "debug-pages", no_argument, NULL, 'D' },
        { "tls-cert", required_argument, NULL, 'C' },
        { "tls-key", required_argument, NULL, 'K' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char* argv0 = argc > 0 ? argv[0] : "http_server";
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":a:j:i:t:w:d:n:m:l:H:B:g:u:c:q:r:p:b:C:K:LDh", longs,
                    NULL))
            != -1) {
        unsigned long long v = 0;
        unsigned long long min = 0;
        unsigned long long max = UINT32_MAX;
        switch (opt) {
        case 'h':
            usage(out, argv0);
            return 1;
        case 'L':
            o->use_limiter = 0;
            continue;
        case 'D':
            o->debug_pages = 1;
            continue;
        case 'a':
            o->host = optarg;
            continue;
        case 'C':
            o->tls_cert = optarg;
            continue;
        case 'K':
            o->tls_key = optarg;
            continue;
        case ':':
            fprintf(err, "%s: option %s needs a value\n", argv0, argv[optind - 1]);
            usage(err, argv0);
            return -1;
        case '?':
            fprintf(err, "%s: unknown option %s\n", argv0, argv[optind - 1]);
            usage(err, argv0);
            return -1;
        case 'j':
            max = 1024;
            break;
        case 'i':
        case 't':
        case 'w':
        case 'd':
        case 'l':
        case 'H':
        case 'B':
        case 'g':
            min = 1;
            break;
        default:
            break;
        }
        if (parse_number(optarg, min, max, &v) != 0) {
            fprintf(err, "%s: invalid -%c value '%s' (expected %llu..%llu)\n", argv0, opt, optarg,
                    min, max);
            usage(err, argv0);
            return -1;
        }
        switch (opt) {
        case 'j':
            o->loops = (unsigned)v;
            break;
        case 'i':
            o->idle_timeout_ms = (uint32_t)v;
            break;
        case 't':
            o->read_timeout_ms = (uint32_t)v;
            break;
        case 'w':
            o->write_timeout_ms = (uint32_t)v;
            break;
        case 'd':
            o->drain_timeout_ms = (uint32_t)v;
            break;
        case 'n':
            o->max_requests = (uint32_t)v;
            break;
        case 'm':
            o->max_connections = (uint32_t)v;
            break;
        case 'l':
            o->limits.max_line = (size_t)v;
            break;
        case 'H':
            o->limits.max_head = (size_t)v;
            break;
        case 'B':
            o->limits.max_body = v;
            break;
        case 'g':
            o->input_budget = (size_t)v;
            break;
        case 'u':
            o->max_uploads = (uint32_t)v;
            break;
        case 'c':
            o->limiter.concurrent = (uint32_t)v;
            break;
        case 'q':
            o->limiter.max_queue = (uint32_t)v;
            break;
        case 'r':
            o->limiter.rate = (uint32_t)v;
            break;
        case 'p':
            o->limiter.period_ms = (uint32_t)v;
            break;
        case 'b':
            o->limiter.burst = (uint32_t)v;
            break;
        default:
            break;
        }
    }
    if (optind < argc) {
        unsigned long long v;
        if (parse_number(argv[optind], 0, 65535, &v) != 0) {
            fprintf(err, "%s: invalid port '%s' (expected 0..65535)\n", argv0, argv[optind]);
            usage(err, argv0);
            return -1;
        }
        if (optind + 1 < argc) {
            fprintf(err, "%s: unexpected argument '%s'\n", argv0, argv[optind + 1]);
            usage(err, argv0);
            return -1;
        }
        o->port = (unsigned)v;
    }
    if (!o->tls_cert != !o->tls_key) {
        fprintf(err, "%s: --tls-cert and --tls-key go together\n", argv0);
        usage(err, argv0);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Connection lifetime                                                       */

static void worker_finish(Worker* w);

/* Drops a head buffer and returns its charge. */
static void head_free(Conn* c)
{
    futoin_uv_budget_give(c->w->srv->budget, c->hcharged);
    free(c->hbuf);
    c->hbuf = NULL;
    c->hlen = 0;
    c->hcap = 0;
    c->hcharged = 0;
    c->in_hbuf = 0;
}

/* Called from inside a callback of c->root or from outside any: freeing
 * the root inside its own callback is safe (released when it returns). */
static void conn_free(Conn* c)
{
    Worker* w = c->w;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        w->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    atomic_fetch_sub_explicit(&w->srv->active, 1, memory_order_relaxed);
    futoin_asyncsteps_free(c->root);
    futoin_uv_stream_release(c->s);
    head_free(c);
    free(c);
    if (w->draining && !w->conns) {
        worker_finish(w);
    }
}

static int peer_gone(const char* info)
{
    return strncmp(info, "EOF:", 4) == 0 || strncmp(info, "ECONNRESET:", 11) == 0
            || strncmp(info, "EPIPE:", 6) == 0 || strncmp(info, "ECANCELED:", 10) == 0;
}

static void conn_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    Counters* st = &c->w->st;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        inc(c->phase == PH_IDLE ? &st->idle_closed : &st->write_timeouts);
    } else if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && peer_gone(futoin_error_info(as))) {
        /* The client closed (normally between requests) or reset the
         * connection (e.g. a benchmark tool stopping with replies in flight). */
        inc(&st->peer_closed);
    } else {
        inc(&st->errors);
    }
    conn_free(c);
}

static void conn_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    conn_free(data);
}

/* Lingering close: FIN, then read and drop until the client closes. */
static void linger_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    futoin_uv_arg_bytes(args, 0, &len);
    c->lingered += len;
    if (c->lingered > LINGER_BYTES) {
        futoin_break(as, NULL);
    }
}

static void linger_iter(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    futoin_uv_read_some(as, c->s, 16384);
    futoin_add(as, linger_got, NULL, c);
}

static void conn_finish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (!c->linger) {
        return;
    }
    c->phase = PH_LINGER;
    futoin_set_timeout(as, LINGER_MS);
    futoin_uv_shutdown(as, c->s);
    futoin_add_loop(as, linger_iter, c, NULL);
}

/* The client closing (EOF), a reset, the timeout: the end either way. */
static void conn_finish_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    (void)code;
    futoin_success(as);
}

/* ------------------------------------------------------------------------ */
/* Reading a request                                                         */

/* Answers with route and closes: no more of this connection is read. */
static void set_error(Conn* c, int route)
{
    memset(&c->req, 0, sizeof(c->req));
    c->req.route = route;
    c->req.close = 1;
    c->have_req = 1;
}

/* Fails the current step with an HTTP status (caught by it_request_eh). */
static void http_error(FutoInAsyncSteps* as, Conn* c, int route)
{
    c->err_route = route;
    futoin_error(as, HTTP_ERROR_CODE, http_status_line(route));
}

/* The idle wait ended with an error: the client closed (or reset) the
 * connection between requests, or the idle timeout expired. Both are how a
 * keep-alive connection normally ends: counted, and the request loop is
 * left, so that the root completes instead of failing (the engine's
 * unhandled_errors then count only connections that failed). */
static void it_idle_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    Counters* st = &c->w->st;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        inc(&st->idle_closed);
    } else if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && peer_gone(futoin_error_info(as))) {
        inc(&st->peer_closed);
    } else {
        return; /* a failure: it ends the root */
    }
    futoin_break(as, NULL);
}

static void it_idle(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    c->phase = PH_IDLE;
    c->have_req = 0;
    c->skip = 0;
    head_free(c); /* left by a request of empty lines only */
    if (c->w->draining) {
        futoin_break(as, NULL);
        return;
    }
    if (futoin_uv_stream_buffered(c->s) > 0) {
        return; /* pipelined: the next request is there */
    }
    futoin_set_timeout(as, c->w->srv->opt.idle_timeout_ms);
    futoin_uv_read_wait(as, c->s);
}

/* What does not fit max_head: 414 while the request line is not complete
 * within max_line, 431 otherwise. */
static int too_large_route(Conn* c)
{
    if (c->in_hbuf) {
        for (size_t i = 0; i < c->hlen; ++i) {
            if (c->hbuf[i] != '\r' && c->hbuf[i] != '\n') {
                return HTTP_HEAD_TOO_LARGE; /* the request line is in already */
            }
        }
    }
    size_t len = 0;
    const char* p = futoin_uv_stream_peek(c->s, &len);
    size_t max_line = c->w->srv->opt.limits.max_line;
    size_t scan = len < max_line + 2 ? len : max_line + 2;
    const char* cr = p ? memchr(p, '\r', scan) : NULL;
    return cr && (size_t)(cr - p) <= max_line ? HTTP_HEAD_TOO_LARGE : HTTP_URI_TOO_LONG;
}

/* Scans what is buffered of the head (after the c->hlen bytes taken). */
static int head_scan(Conn* c, size_t* n)
{
    size_t len = 0;
    const char* p = futoin_uv_stream_peek(c->s, &len);
    return http_head_scan(p ? p : "", len, c->hlen, c->w->srv->opt.limits.max_head, n);
}

/* Appends to the head buffer, which grows with what came (a slow head holds
 * no more memory than its bytes did in the stream's buffer) and is charged
 * to the input budget like that buffer beyond its first bytes. Returns 0,
 * -1 when out of memory, -2 when the budget is spent. */
static int head_append(Conn* c, const char* p, size_t len)
{
    size_t need = c->hlen + len; /* <= max_head: the reads are limited to it */
    if (need > c->hcap) {
        size_t cap = c->hcap ? c->hcap : 256;
        while (cap < need) {
            cap *= 2;
        }
        size_t max = c->w->srv->opt.limits.max_head;
        cap = cap < max ? cap : max;
        size_t free_bytes = FUTOIN_UV_BUDGET_FREE_BYTES;
        size_t charge = (cap > free_bytes ? cap - free_bytes : 0) - c->hcharged;
        if (charge && futoin_uv_budget_take(c->w->srv->budget, charge) != 0) {
            return -2;
        }
        char* b = realloc(c->hbuf, cap);
        if (!b) {
            futoin_uv_budget_give(c->w->srv->budget, charge);
            return -1;
        }
        c->hbuf = b;
        c->hcap = cap;
        c->hcharged += charge;
    }
    memcpy(c->hbuf + c->hlen, p, len);
    c->hlen += len;
    return 0;
}

/* A head_append() failure as the step's error. */
static void head_append_failed(FutoInAsyncSteps* as, Conn* c, int rc)
{
    if (rc == -2) {
        http_error(as, c, HTTP_OVERLOADED);
    } else {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "out of memory for a head");
    }
}

static void head_line_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* line = futoin_uv_arg_bytes(args, 0, &len);
    size_t n = 0;
    size_t before = c->hlen;
    int scan = http_head_scan(line ? line : "", len, before, c->w->srv->opt.limits.max_head, &n);
    /* A line ends at its LF: it is either well-formed (MORE, or DONE when
     * it is the empty line) or holds a bare CR or ends in a bare LF. */
    if (scan == HTTP_SCAN_BAD || (scan == HTTP_SCAN_MORE && n != len)) {
        http_error(as, c, HTTP_BAD_REQUEST);
        return;
    }
    int rc = head_append(c, line, len);
    if (rc != 0) {
        head_append_failed(as, c, rc);
        return;
    }
    if (scan == HTTP_SCAN_DONE) {
        futoin_break(as, NULL);
    }
}

static void head_rest_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* rest = futoin_uv_arg_bytes(args, 0, &len);
    int rc = head_append(c, rest ? rest : "", len);
    if (rc != 0) {
        head_append_failed(as, c, rc);
        return;
    }
    futoin_break(as, NULL);
}

/* A head that is not all here: taken line by line, each line checked as it
 * comes, so that a bare CR or LF is answered at once (a head whose lines end
 * in bare LFs never brings the CRLFCRLF a delimited read would wait for). */
static void head_iter(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    size_t n = 0;
    switch (head_scan(c, &n)) {
    case HTTP_SCAN_DONE:
        futoin_uv_read_exact(as, c->s, n);
        futoin_add(as, head_rest_got, NULL, c);
        break;
    case HTTP_SCAN_BAD:
        http_error(as, c, HTTP_BAD_REQUEST);
        break;
    case HTTP_SCAN_FULL:
        http_error(as, c, too_large_route(c));
        break;
    default:
        futoin_uv_read_until(as, c->s, "\n", c->w->srv->opt.limits.max_head - c->hlen);
        futoin_add(as, head_line_got, NULL, c);
        break;
    }
}

static void rq_head_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    c->phase = PH_HEAD;
    c->hlen = 0;
    c->in_hbuf = 0;
    /* A verdict of head_buffered() stands: more bytes cannot change it. */
    size_t n = c->scan_n;
    int scan = c->scan != HTTP_SCAN_MORE ? c->scan : head_scan(c, &n);
    switch (scan) {
    case HTTP_SCAN_DONE:
        /* The common case: the whole head is here, read without a copy. */
        futoin_uv_read_exact(as, c->s, n);
        break;
    case HTTP_SCAN_BAD:
        set_error(c, HTTP_BAD_REQUEST);
        break;
    case HTTP_SCAN_FULL:
        set_error(c, too_large_route(c));
        break;
    default:
        c->in_hbuf = 1;
        futoin_add_loop(as, head_iter, c, NULL);
        break;
    }
}

/* A line that does not fit max_head: 414 or 431. */
static void rq_head_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    if (strcmp(code, FUTOIN_COMM_ERROR) != 0
            || strncmp(futoin_error_info(as), "ENOBUFS: read: delimiter", 24) != 0) {
        return;
    }
    set_error(c, too_large_route(c));
    futoin_success(as);
}

/* ---- bodies ---- */

static void body_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Conn* c = data;
    size_t len = 0;
    futoin_uv_arg_bytes(args, 0, &len);
    c->body_left -= len;
    c->body_total += len;
}

/* Reads the next piece of a body of c->body_left bytes (the handler of
 * this example only counts them). */
static void read_body_piece(FutoInAsyncSteps* as, Conn* c)
{
    size_t n = c->body_left < BODY_CHUNK ? (size_t)c->body_left : BODY_CHUNK;
    futoin_uv_read_exact(as, c->s, n);
    futoin_add(as, body_got, NULL, c);
}

static void body_cl_iter(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    if (c->body_left == 0) {
        futoin_break(as, NULL);
        return;
    }
    read_body_piece(as, c);
}

/* A line read up to its LF: its length without the CRLF, or -1 when it does
 * not end in CRLF or holds another CR. */
static long crlf_line(const char* line, size_t len)
{
    if (!line || len < 2 || line[len - 2] != '\r' || memchr(line, '\r', len - 2)) {
        return -1;
    }
    return (long)(len - 2);
}

/* 1 when the first line of what is buffered has a bare CR or LF already:
 * answered now rather than after the line limit or the read timeout. */
static int buffered_line_bad(Conn* c)
{
    size_t len = 0;
    const char* p = futoin_uv_stream_peek(c->s, &len);
    const char* lf = p ? memchr(p, '\n', len) : NULL;
    size_t n = 0;
    if (lf) {
        len = (size_t)(lf - p) + 1;
    }
    return p && http_head_scan(p, len, 1, SIZE_MAX, &n) == HTTP_SCAN_BAD;
}

static void chunk_size_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* line = futoin_uv_arg_bytes(args, 0, &len);
    long n = crlf_line(line, len);
    uint64_t size;
    if (n < 0 || http_parse_chunk_size(line, (size_t)n, &size) != 0) {
        http_error(as, c, HTTP_BAD_REQUEST);
        return;
    }
    if (size == 0) {
        c->chunk_state = CH_TRAILER;
        return;
    }
    if (size > c->w->srv->opt.limits.max_body - c->body_total) {
        http_error(as, c, HTTP_TOO_LARGE);
        return;
    }
    c->body_left = size;
    c->chunk_state = CH_DATA;
}

static void chunk_end_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* crlf = futoin_uv_arg_bytes(args, 0, &len);
    if (crlf_line(crlf, len) != 0) {
        http_error(as, c, HTTP_BAD_REQUEST);
        return;
    }
    c->chunk_state = CH_SIZE;
}

static void trailer_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* line = futoin_uv_arg_bytes(args, 0, &len);
    long n = crlf_line(line, len);
    if (n < 0) {
        http_error(as, c, HTTP_BAD_REQUEST);
        return;
    }
    c->trailer_bytes += len;
    if (n == 0) {
        c->chunk_state = CH_DONE;
        return;
    }
    const char *colon, *vs, *ve;
    if (http_field_line(line, (size_t)n, &colon, &vs, &ve) != 0) {
        http_error(as, c, HTTP_BAD_REQUEST);
    }
}

/* The trailer section (its lines and the empty line that ends it) is
 * limited by max_head like a head: 431 above. */
static void read_trailer_line(FutoInAsyncSteps* as, Conn* c)
{
    size_t max = c->w->srv->opt.limits.max_head;
    size_t len = 0;
    const char* p = futoin_uv_stream_peek(c->s, &len);
    size_t n = 0;
    /* before + 1: an empty first line ends a trailer section */
    switch (http_head_scan(p ? p : "", len, c->trailer_bytes + 1, max + 1, &n)) {
    case HTTP_SCAN_BAD:
        http_error(as, c, HTTP_BAD_REQUEST);
        return;
    case HTTP_SCAN_FULL:
        http_error(as, c, HTTP_HEAD_TOO_LARGE);
        return;
    default:
        break;
    }
    futoin_uv_read_until(as, c->s, "\n", max - c->trailer_bytes);
    futoin_add(as, trailer_got, NULL, c);
}

static void body_chunked_iter(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    switch (c->chunk_state) {
    case CH_SIZE:
        if (buffered_line_bad(c)) {
            http_error(as, c, HTTP_BAD_REQUEST);
            return;
        }
        futoin_uv_read_until(as, c->s, "\n", MAX_CHUNK_LINE);
        futoin_add(as, chunk_size_got, NULL, c);
        break;
    case CH_DATA:
        if (c->body_left > 0) {
            read_body_piece(as, c);
        } else {
            c->chunk_state = CH_DATA_END;
            if (buffered_line_bad(c)) {
                http_error(as, c, HTTP_BAD_REQUEST);
                return;
            }
            /* Exactly CRLF: anything else overflows the 2 bytes (400). */
            futoin_uv_read_until(as, c->s, "\n", 2);
            futoin_add(as, chunk_end_got, NULL, c);
        }
        break;
    case CH_TRAILER:
        read_trailer_line(as, c);
        break;
    default:
        futoin_break(as, NULL);
        break;
    }
}

/* Reads the body (an upload slot is held when there are slots). */
static void read_body(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    HttpRequest* r = &c->req;
    if (r->expect_continue) {
        /* Only now that the body will be read. */
        futoin_uv_write_static(as, c->s, HTTP_CONTINUE, sizeof(HTTP_CONTINUE) - 1);
    }
    if (r->chunked) {
        c->chunk_state = CH_SIZE;
        c->trailer_bytes = 0;
        c->body_left = 0;
        futoin_add_loop(as, body_chunked_iter, c, NULL);
    } else {
        c->body_left = r->content_length;
        futoin_add_loop(as, body_cl_iter, c, NULL);
    }
}

static void rq_parse(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    if (c->have_req) {
        return;
    }
    size_t len = 0;
    const char* head = c->in_hbuf ? c->hbuf : futoin_uv_arg_bytes(args, 0, &len);
    if (c->in_hbuf) {
        len = c->hlen;
    }
    if (!head) {
        head = "";
    }
    /* RFC 9112 2.2: empty lines before the request line are ignored. */
    while (len >= 2 && head[0] == '\r' && head[1] == '\n') {
        head += 2;
        len -= 2;
    }
    if (len == 0) {
        c->skip = 1;
        return;
    }
    const HttpServerOptions* o = &c->w->srv->opt;
    http_parse_head(head, len, &o->limits, &c->req);
    c->have_req = 1;
    head_free(c); /* not kept while the request is handled */
    HttpRequest* r = &c->req;
    if (r->close || (!r->chunked && r->content_length == 0)) {
        return;
    }
    /* A body is coming: refuse new work while the input budget is spent. */
    FutoInUvBudget* b = c->w->srv->budget;
    if (futoin_uv_budget_used(b) >= futoin_uv_budget_limit(b)) {
        set_error(c, HTTP_OVERLOADED);
        return;
    }
    c->phase = PH_BODY;
    c->body_total = 0;
    if (!c->timed) {
        futoin_set_timeout(as, o->read_timeout_ms);
        c->timed = 1;
    }
    /* Bodies are read a few at a time (max_uploads): a flood of uploads
     * waits, pushed back by TCP, instead of filling every loop round with
     * body data while small requests wait their turn. The read timeout
     * keeps running while a body waits for its slot. */
    if (c->w->uploads) {
        futoin_add_sync(as, c->w->uploads, read_body, NULL, c);
    } else {
        read_body(as, c, NULL);
    }
}

/* 1 when what is buffered decides the head already (the common case: a
 * request arrives in one packet), so that reading it cannot wait. */
static int head_buffered(Conn* c)
{
    c->hlen = 0;
    c->in_hbuf = 0;
    c->scan_n = 0;
    c->scan = head_scan(c, &c->scan_n);
    return c->scan != HTTP_SCAN_MORE;
}

static void it_request(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    /* The whole request (head and body) must arrive within the read
     * timeout: slowloris and slow bodies end with 408. A timer only for
     * what may wait: not for a head that is here already (rq_parse arms
     * it for the body then). */
    c->timed = !head_buffered(c);
    if (c->timed) {
        futoin_set_timeout(as, c->w->srv->opt.read_timeout_ms);
    }
    futoin_add(as, rq_head_read, rq_head_eh, c);
    futoin_add(as, rq_parse, NULL, c);
}

/* Turns what can be answered into a response that closes the connection;
 * anything else (the peer gone) ends the connection. */
static void it_request_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    const char* info = futoin_error_info(as);
    if (c->skip) {
        return;
    }
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        inc(&c->w->st.read_timeouts);
        set_error(c, HTTP_TIMEOUT);
    } else if (strcmp(code, HTTP_ERROR_CODE) == 0) {
        set_error(c, c->err_route);
    } else if (strcmp(code, FUTOIN_COMM_ERROR) == 0
            && strncmp(info, "ENOBUFS: read: input budget", 27) == 0) {
        set_error(c, HTTP_OVERLOADED);
    } else if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && strncmp(info, "ENOBUFS:", 8) == 0) {
        /* A line that does not fit: a trailer line is part of the trailer
         * section, limited like a head; a chunk-size line or the CRLF after
         * chunk data is malformed. */
        set_error(c,
                c->phase == PH_BODY && c->chunk_state == CH_TRAILER ? HTTP_HEAD_TOO_LARGE
                                                                    : HTTP_BAD_REQUEST);
    } else {
        return;
    }
    futoin_success(as);
}

/* ------------------------------------------------------------------------ */
/* Handling and responding                                                   */

/* The handler: runs while the Limiter admits this request, and only as long
 * as the handler itself runs (the response is written after it). */
static void handle_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (c->req.route == HTTP_SLEEP_ROUTE && c->req.sleep_ms > 0) {
        futoin_uv_sleep(as, c->req.sleep_ms); /* stands for a backend call */
    }
}

static int needs_handler(int route)
{
    return route == HTTP_HELLO_ROUTE || route == HTTP_SLEEP_ROUTE || route == HTTP_POST_ROUTE
            || route == HTTP_BYTES_ROUTE;
}

/* The body of /bytes responses: one shared pattern, written without a copy. */
static char g_bytes[HTTP_MAX_BYTES];
static pthread_once_t g_bytes_once = PTHREAD_ONCE_INIT;

static void bytes_init(void)
{
    for (size_t i = 0; i < sizeof(g_bytes); ++i) {
        g_bytes[i] = (char)('a' + i % 26);
    }
    for (size_t i = 63; i < sizeof(g_bytes); i += 64) {
        g_bytes[i] = '\n';
    }
}

static void it_handle(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (c->skip || !needs_handler(c->req.route)) {
        return; /* /stats and error answers bypass the Limiter */
    }
    c->phase = PH_HANDLE;
    if (c->w->limiter) {
        futoin_add_sync(as, c->w->limiter, handle_section, NULL, c);
    } else {
        handle_section(as, c, NULL);
    }
}

/* An over-limit request gets 503 and the connection goes on. */
static void it_handle_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    if (strcmp(code, FUTOIN_DEFENSE_REJECTED) == 0) {
        c->req.route = HTTP_BUSY;
        futoin_success(as);
    }
}

/* Loop thread: what /stats of another loop reads of this one. */
static void publish_engine(Worker* w)
{
    FutoInLoopCounters lc;
    if (futoin_loop_counters(futoin_uv_loop(w->uv), &lc, sizeof(lc)) != 0) {
        return;
    }
#define ENGINE_PUBLISH(f) atomic_store_explicit(&w->engine.f, lc.f, memory_order_relaxed);
    ENGINE_COUNTERS(ENGINE_PUBLISH)
#undef ENGINE_PUBLISH
}

static void on_publish(uv_timer_t* t)
{
    publish_engine(t->data);
}

/* A dynamic page: the head and the body built with stdio in one malloc'ed
 * block (*out; NULL when out of memory), its length in *len. */
typedef void (*PageBody)(Conn* c, FILE* f);

static char* format_page(Conn* c, PageBody body_fn, size_t* len)
{
    char* body = NULL;
    size_t body_len = 0;
    FILE* f = open_memstream(&body, &body_len);
    if (!f) {
        return NULL;
    }
    body_fn(c, f);
    if (fclose(f) != 0) {
        free(body);
        return NULL;
    }
    char head[160];
    int k = snprintf(head, sizeof(head),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
            "Connection: %s\r\n\r\n",
            body_len, c->keep ? "keep-alive" : "close");
    size_t head_len = (size_t)k;
    size_t total = head_len + (c->req.head_only ? 0 : body_len);
    char* page = malloc(total);
    if (page) {
        memcpy(page, head, head_len);
        if (!c->req.head_only) {
            memcpy(page + head_len, body, body_len);
        }
        *len = total;
    }
    free(body);
    return page;
}

static void stats_body(Conn* c, FILE* f)
{
    publish_engine(c->w); /* this loop's figures as of now */
    HttpStats st;
    http_server_stats(c->w->srv, &st);
    FutoInSyncStats ls;
    FutoInSyncStats us;
    memset(&ls, 0, sizeof(ls));
    memset(&us, 0, sizeof(us));
    if (c->w->limiter) {
        futoin_sync_stats(c->w->limiter, &ls);
    }
    if (c->w->uploads) {
        futoin_sync_stats(c->w->uploads, &us);
    }
    fprintf(f,
            "accepted %lu\nactive %lu\nrefused %lu\nrequests %lu\nok %lu\nrejected %lu\n"
            "overloaded %lu\nclient_errors %lu\ntimeouts %lu\nidle_closed %lu\n"
            "read_timeouts %lu\nwrite_timeouts %lu\npeer_closed %lu\nerrors %lu\n"
            "budget_used %zu\nbudget_limit %zu\nbudget_refusals %lu\nlimiter_active %u\n"
            "limiter_queued %u\nuploads_active %u\nuploads_queued %u\nloops %u\n",
            st.accepted, st.active, st.refused, st.requests, st.ok, st.rejected, st.overloaded,
            st.client_errors, st.idle_closed + st.read_timeouts + st.write_timeouts, st.idle_closed,
            st.read_timeouts, st.write_timeouts, st.peer_closed, st.errors, st.budget_used,
            st.budget_limit, st.budget_refusals, ls.active, ls.queued, us.active, us.queued,
            st.loops);
    if (c->w->tls) {
        fprintf(f, "tls_failures %lu\n", st.tls_failures);
    }
#define ENGINE_PRINT(f) fprintf(f_, "engine_%s %llu\n", #f, (unsigned long long)st.engine.f);
    FILE* f_ = f;
    ENGINE_COUNTERS(ENGINE_PRINT)
#undef ENGINE_PRINT
}

/* /debug/flows: the live flows of the loop that serves the request (each
 * loop can only be walked on its own thread). */
static void flows_body(Conn* c, FILE* f)
{
    fprintf(f, "loop %u of %u (a connection is served by one loop; -j 1 shows them all)\n",
            c->w->index + 1, c->w->srv->n);
    futoin_loop_dump(futoin_uv_loop(c->w->uv), f, FUTOIN_DUMP_FRAMES_DEFAULT);
}

static void count_response(Conn* c)
{
    Counters* st = &c->w->st;
    inc(&st->requests);
    switch (c->req.route) {
    case HTTP_HELLO_ROUTE:
    case HTTP_STATS_ROUTE:
    case HTTP_POST_ROUTE:
    case HTTP_SLEEP_ROUTE:
    case HTTP_BYTES_ROUTE:
    case HTTP_FLOWS_ROUTE:
        inc(&st->ok);
        break;
    case HTTP_BUSY:
        inc(&st->rejected);
        break;
    case HTTP_OVERLOADED:
        inc(&st->overloaded);
        break;
    case HTTP_TIMEOUT:
        break; /* counted as read_timeouts */
    default:
        inc(&st->client_errors);
        break;
    }
}

static void it_respond(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (c->skip) {
        return;
    }
    const HttpServerOptions* o = &c->w->srv->opt;
    HttpRequest* r = &c->req;
    if (r->route == HTTP_FLOWS_ROUTE && !o->debug_pages) {
        r->route = HTTP_NOT_FOUND;
    }
    c->phase = PH_WRITE;
    ++c->requests;
    c->keep = r->keep_alive && !r->close && !c->w->draining
            && (o->max_requests == 0 || c->requests < o->max_requests);
    c->linger = !c->keep;
    count_response(c);
    /* The response: a head (canned, or formatted into c->dyn) and maybe a
     * body that is static memory. */
    const char* text = c->dyn;
    size_t len = 0;
    int copy = 1;
    const char* body = NULL;
    size_t body_len = 0;
    char* page = NULL; /* a dynamic page, freed once written or copied */
    if (r->route == HTTP_STATS_ROUTE || r->route == HTTP_FLOWS_ROUTE) {
        page = format_page(c, r->route == HTTP_STATS_ROUTE ? stats_body : flows_body, &len);
        if (!page) {
            inc(&c->w->st.errors);
            futoin_error(as, FUTOIN_INTERNAL_ERROR, "out of memory for a page");
            return;
        }
        text = page;
    } else if (r->route == HTTP_POST_ROUTE) {
        char msg[64];
        snprintf(msg, sizeof(msg), "received %llu bytes\n", (unsigned long long)c->body_total);
        len = http_format(c->dyn, sizeof(c->dyn), r->route, c->keep, 0, msg, NULL);
    } else if (r->route == HTTP_BYTES_ROUTE) {
        int k = snprintf(c->dyn, sizeof(c->dyn),
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %u\r\n"
                "Connection: %s\r\n\r\n",
                r->bytes, c->keep ? "keep-alive" : "close");
        len = (size_t)k;
        if (!r->head_only) {
            body = g_bytes;
            body_len = r->bytes;
        }
    } else if (r->route == HTTP_BAD_METHOD) {
        len = http_format(c->dyn, sizeof(c->dyn), r->route, c->keep, r->head_only,
                http_body(r->route), r->allow);
    } else {
        const HttpCanned* canned = http_response(r->route, c->keep, r->head_only);
        text = canned->text;
        len = canned->len;
        copy = 0;
    }
    /* What the kernel takes now needs no step and no timer; only a write
     * that has to wait gets one, under the write timeout. */
    long n = futoin_uv_try_write(c->s, text, len);
    size_t done = n > 0 ? (size_t)n : 0;
    size_t body_done = 0;
    if (done == len && body_len) {
        n = futoin_uv_try_write(c->s, body, body_len);
        body_done = n > 0 ? (size_t)n : 0;
    }
    if (done == len && body_done == body_len) {
        free(page);
        return;
    }
    futoin_set_timeout(as, o->write_timeout_ms);
    if (done < len) {
        if (copy) {
            futoin_uv_write(as, c->s, text + done, len - done);
        } else {
            futoin_uv_write_static(as, c->s, text + done, len - done);
        }
    }
    free(page); /* futoin_uv_write() copied what is left */
    if (body_done < body_len) {
        futoin_uv_write_static(as, c->s, body + body_done, body_len - body_done);
    }
}

static void it_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (!c->skip && !c->keep) {
        futoin_break(as, NULL);
    }
}

static void request_iteration(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    futoin_add(as, it_idle, it_idle_eh, c);
    futoin_add(as, it_request, it_request_eh, c);
    futoin_add(as, it_handle, it_handle_eh, c);
    futoin_add(as, it_respond, NULL, c);
    futoin_add(as, it_after, NULL, c);
}

static void conn_serve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (c->tls_failed) {
        return;
    }
    futoin_add_loop(as, request_iteration, data, NULL);
}

/* HTTPS: the handshake, under the read timeout. */
static void conn_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    c->phase = PH_HEAD;
    futoin_set_timeout(as, c->w->srv->opt.read_timeout_ms);
    futoin_uv_tls_handshake(as, c->s, c->w->tls, NULL);
}

/* A handshake that failed or timed out: counted, and the connection ends
 * normally without a request (its stream is closed already). */
static void conn_handshake_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    Conn* c = data;
    inc(&c->w->st.tls_failures);
    c->tls_failed = 1;
    futoin_success(as);
}

/* ------------------------------------------------------------------------ */
/* Accepting                                                                 */

static Conn* conn_new(Worker* w, FutoInUvStream* s)
{
    Conn* c = calloc(1, sizeof(*c));
    FutoInAsyncSteps* root = c ? futoin_asyncsteps_new(futoin_uv_loop(w->uv)) : NULL;
    if (!root) {
        free(c);
        inc(&w->st.errors);
        return NULL; /* s is closed when the accept step's value is dropped */
    }
    c->w = w;
    c->s = futoin_uv_stream_ref(s);
    c->root = root;
    c->next = w->conns;
    if (w->conns) {
        w->conns->prev = c;
    }
    w->conns = c;
    return c;
}

/* The acceptor's callback: one new root per connection. */
static void on_connection(void* data, FutoInUvStream* s)
{
    Worker* w = data;
    HttpServer* srv = w->srv;
    if (w->draining) {
        return;
    }
    /* Responses are single writes: don't let Nagle hold them back. */
    uv_tcp_nodelay(futoin_uv_stream_handle(s), 1);
    futoin_uv_stream_set_budget(s, srv->budget);
    futoin_uv_stream_set_read_ahead(s, READ_AHEAD);
    unsigned long active = atomic_fetch_add_explicit(&srv->active, 1, memory_order_relaxed);
    if (active >= srv->opt.max_connections) {
        /* A refusal must cost nothing that lasts: a 503 if the kernel takes
         * it at once, then the connection closes when the accept step's
         * value goes (a client that has sent a request already may see a
         * reset instead). Holding refused connections open for a lingering
         * close would let a connection storm exhaust the descriptors. */
        atomic_fetch_sub_explicit(&srv->active, 1, memory_order_relaxed);
        inc(&w->st.refused);
        if (!w->tls) {
            /* (Over TLS, plain text would only be noise: just close.) */
            const HttpCanned* canned = http_response(HTTP_FULL, 0, 0);
            futoin_uv_try_write(s, canned->text, canned->len);
        }
        return;
    }
    Conn* c = conn_new(w, s);
    if (!c) {
        atomic_fetch_sub_explicit(&srv->active, 1, memory_order_relaxed);
        return;
    }
    inc(&w->st.accepted);
    if (w->tls) {
        futoin_add(c->root, conn_handshake, conn_handshake_eh, c);
    }
    futoin_add(c->root, conn_serve, NULL, c);
    futoin_add(c->root, conn_finish, conn_finish_eh, c);
    futoin_add(c->root, conn_done, NULL, c);
    futoin_execute(c->root, conn_unhandled, c);
}

static void acceptor_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Worker* w = data;
    if (!w->draining) {
        fprintf(stderr, "http_server: loop %u: accept loop failed: %s %s\n", w->index, code,
                futoin_error_info(as));
    }
}

static void acceptor_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = data;
    futoin_uv_serve(as, w->listener, on_connection, w);
}

/* ------------------------------------------------------------------------ */
/* Shutdown of one loop                                                      */

static void on_closed_ctl(uv_handle_t* h)
{
    (void)h;
}

/* The loop has nothing left: close the handles that keep uv_run() going. */
static void worker_finish(Worker* w)
{
    if (w->finished) {
        return;
    }
    w->finished = 1;
    pthread_mutex_lock(&w->ctl_lock);
    w->ctl_open = 0;
    pthread_mutex_unlock(&w->ctl_lock);
    uv_close((uv_handle_t*)&w->ctl, on_closed_ctl);
    if (w->drain_timer_open) {
        w->drain_timer_open = 0;
        uv_close((uv_handle_t*)&w->drain_timer, on_closed_ctl);
    }
    if (w->publish_timer_open) {
        w->publish_timer_open = 0;
        uv_close((uv_handle_t*)&w->publish_timer, on_closed_ctl);
    }
}

/* Cancels and frees every connection (their cancel handlers stop the libuv
 * operations; the Limiter and the budget get their share back). */
static void worker_drop_all(Worker* w)
{
    while (w->conns) {
        conn_free(w->conns);
    }
}

static void on_drain_deadline(uv_timer_t* t)
{
    Worker* w = t->data;
    worker_drop_all(w);
}

static void worker_drain(Worker* w)
{
    if (w->draining) {
        return;
    }
    w->draining = 1;
    /* Stop accepting: connections waiting in this listener's backlog are
     * reset by the kernel. */
    futoin_asyncsteps_free(w->acceptor);
    w->acceptor = NULL;
    futoin_uv_server_close(w->listener);
    futoin_uv_server_release(w->listener);
    w->listener = NULL;
    /* Idle connections have no request in flight: close them now. The
     * others see draining, answer with "Connection: close" and end. */
    for (Conn* c = w->conns; c;) {
        Conn* next = c->next;
        if (c->phase == PH_IDLE) {
            conn_free(c);
        }
        c = next;
    }
    if (!w->conns) {
        worker_finish(w);
        return;
    }
    uv_timer_start(&w->drain_timer, on_drain_deadline, w->srv->opt.drain_timeout_ms, 0);
}

static void on_ctl(uv_async_t* h)
{
    Worker* w = h->data;
    int mode = atomic_load(&w->srv->shutdown);
    if (mode >= 1) {
        worker_drain(w);
    }
    if (mode >= 2) {
        worker_drop_all(w);
    }
}

/* ------------------------------------------------------------------------ */
/* Loop threads                                                              */

static void worker_report(Worker* w, int state)
{
    pthread_mutex_lock(&w->srv->lock);
    w->state = state;
    pthread_cond_broadcast(&w->srv->cond);
    pthread_mutex_unlock(&w->srv->lock);
}

static int worker_setup(Worker* w)
{
    HttpServer* srv = w->srv;
    w->uv = futoin_uv_new(NULL);
    if (!w->uv) {
        snprintf(w->error, sizeof(w->error), "cannot create the event loop");
        return -1;
    }
    FutoInLoop* loop = futoin_uv_loop(w->uv);
    if (srv->opt.use_limiter) {
        FutoInLimiterOptions l = srv->opt.limiter;
        unsigned n = srv->n;
        l.concurrent = l.concurrent / n + (l.concurrent % n != 0);
        l.max_queue = l.max_queue / n + (l.max_queue % n != 0);
        l.rate = l.rate / n + (l.rate % n != 0);
        l.burst = l.burst / n + (l.burst % n != 0);
        w->limiter = futoin_limiter_new(loop, &l);
        if (!w->limiter) {
            snprintf(w->error, sizeof(w->error), "invalid limiter options");
            return -1;
        }
    }
    if (srv->opt.max_uploads) {
        uint32_t m = srv->opt.max_uploads;
        w->uploads = futoin_mutex_new(loop, m / srv->n + (m % srv->n != 0), FUTOIN_SYNC_UNLIMITED);
        if (!w->uploads) {
            snprintf(w->error, sizeof(w->error), "out of memory");
            return -1;
        }
    }
    int err = 0;
    if (srv->opt.tls_cert) {
        w->tls = futoin_uv_tls_new(FUTOIN_UV_TLS_SERVER, &err);
        if (!w->tls) {
            snprintf(w->error, sizeof(w->error), "TLS: %s", uv_strerror(err));
            return -1;
        }
        if (futoin_uv_tls_set_cert(w->tls, srv->opt.tls_cert, srv->opt.tls_key) != 0) {
            snprintf(w->error, sizeof(w->error), "TLS: %s", futoin_uv_tls_last_error(w->tls));
            return -1;
        }
    }
    w->listener = futoin_uv_server_new_ex(w->uv, srv->host, srv->port, 1024,
            srv->n > 1 ? FUTOIN_UV_SERVER_REUSEPORT : 0, &err);
    if (!w->listener) {
        snprintf(w->error, sizeof(w->error), "cannot listen on %s:%u: %s", srv->host, srv->port,
                uv_strerror(err));
        return -1;
    }
    uv_loop_t* l = futoin_uv_uv_loop(w->uv);
    uv_async_init(l, &w->ctl, on_ctl);
    w->ctl.data = w;
    uv_timer_init(l, &w->drain_timer);
    w->drain_timer.data = w;
    w->drain_timer_open = 1;
    uv_timer_init(l, &w->publish_timer);
    w->publish_timer.data = w;
    w->publish_timer_open = 1;
    uv_timer_start(&w->publish_timer, on_publish, HTTP_ENGINE_PUBLISH_MS, HTTP_ENGINE_PUBLISH_MS);
    uv_unref((uv_handle_t*)&w->publish_timer);
    pthread_mutex_lock(&w->ctl_lock);
    w->ctl_open = 1;
    pthread_mutex_unlock(&w->ctl_lock);
    w->acceptor = futoin_asyncsteps_new(loop);
    if (!w->acceptor) {
        snprintf(w->error, sizeof(w->error), "out of memory");
        return -1;
    }
    futoin_add(w->acceptor, acceptor_start, NULL, w);
    futoin_execute(w->acceptor, acceptor_unhandled, w);
    return 0;
}

static void worker_teardown(Worker* w)
{
    if (!w->uv) {
        return;
    }
    /* After a failed setup: what exists is closed the same way. */
    w->draining = 1;
    futoin_asyncsteps_free(w->acceptor);
    w->acceptor = NULL;
    if (w->listener) {
        futoin_uv_server_close(w->listener);
        futoin_uv_server_release(w->listener);
        w->listener = NULL;
    }
    worker_drop_all(w);
    if (w->ctl.data && !w->finished) {
        worker_finish(w);
    }
    uv_run(futoin_uv_uv_loop(w->uv), UV_RUN_DEFAULT);
    if (futoin_sync_free(w->limiter) != FUTOIN_SYNC_OK) {
        w->busy_at_exit = 1;
    }
    w->limiter = NULL;
    if (futoin_sync_free(w->uploads) != FUTOIN_SYNC_OK) {
        w->busy_at_exit = 1;
    }
    w->uploads = NULL;
    futoin_uv_tls_release(w->tls);
    w->tls = NULL;
    futoin_uv_free(w->uv);
    w->uv = NULL;
}

static void* worker_main(void* arg)
{
    Worker* w = arg;
    if (worker_setup(w) != 0) {
        worker_teardown(w);
        worker_report(w, W_FAILED);
        atomic_fetch_add(&w->srv->finished, 1);
        return NULL;
    }
    if (w->index == 0) {
        w->srv->port = futoin_uv_server_port(w->listener);
    }
    worker_report(w, W_READY);
    futoin_uv_run(w->uv);
    worker_teardown(w);
    atomic_fetch_add(&w->srv->finished, 1);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The server                                                                */

HttpServer* http_server_start(const HttpServerOptions* o, char* err, size_t err_len)
{
    unsigned n = o->loops;
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (unsigned)cpus : 1;
        if (n > 64) {
            n = 64;
        }
    }
    HttpServer* srv = aligned_alloc(LINE, (sizeof(HttpServer) + LINE - 1) / LINE * LINE);
    if (srv) {
        memset(srv, 0, sizeof(*srv));
    }
    /* Cache-line aligned, one line at least between two loops' data. */
    Worker* w = aligned_alloc(LINE, (n * sizeof(Worker) + LINE - 1) / LINE * LINE);
    if (w) {
        memset(w, 0, n * sizeof(Worker));
    }
    if (!srv || !w) {
        free(srv);
        free(w);
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    srv->opt = *o;
    /* Out of descriptors, a server can neither accept nor refuse: keep the
     * connection limit below the process's limit, with room for the
     * loops' own descriptors and for refusing. */
    rlim_t cap = UINT32_MAX;
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
        rlim_t room = 32u + 16u * n;
        cap = nofile.rlim_cur > 2 * room ? nofile.rlim_cur - room : nofile.rlim_cur / 2;
    }
    if (srv->opt.max_connections == 0 || srv->opt.max_connections > cap) {
        srv->opt.max_connections = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
    }
    snprintf(srv->host, sizeof(srv->host), "%s", o->host && *o->host ? o->host : "127.0.0.1");
    srv->opt.host = srv->host;
    srv->n = n;
    srv->w = w;
    srv->port = o->port;
    srv->budget = futoin_uv_budget_new(o->input_budget);
    atomic_init(&srv->active, 0);
    atomic_init(&srv->shutdown, 0);
    atomic_init(&srv->finished, 0);
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->cond, NULL);
    http_canned_init();
    pthread_once(&g_bytes_once, bytes_init);
    int failed = !srv->budget;
    if (failed) {
        snprintf(err, err_len, "out of memory");
    }
    /* Loop 0 first: with port 0 it picks the port the others join. */
    for (unsigned i = 0; i < n && !failed; ++i) {
        w[i].srv = srv;
        w[i].index = i;
        pthread_mutex_init(&w[i].ctl_lock, NULL);
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
            snprintf(err, err_len, "cannot start a loop thread");
            failed = 1;
            break;
        }
        w[i].thread_started = 1;
        pthread_mutex_lock(&srv->lock);
        while (w[i].state == W_STARTING) {
            pthread_cond_wait(&srv->cond, &srv->lock);
        }
        pthread_mutex_unlock(&srv->lock);
        if (w[i].state == W_FAILED) {
            snprintf(err, err_len, "%s", w[i].error);
            failed = 1;
        }
    }
    if (failed) {
        http_server_shutdown(srv, 1);
        http_server_join(srv);
        http_server_free(srv);
        return NULL;
    }
    return srv;
}

unsigned http_server_port(const HttpServer* srv)
{
    return srv->port;
}

unsigned http_server_loops(const HttpServer* srv)
{
    return srv->n;
}

uint32_t http_server_max_connections(const HttpServer* srv)
{
    return srv->opt.max_connections;
}

void http_server_shutdown(HttpServer* srv, int now)
{
    int mode = now ? 2 : 1;
    int cur = atomic_load(&srv->shutdown);
    while (cur < mode && !atomic_compare_exchange_weak(&srv->shutdown, &cur, mode)) {
    }
    for (unsigned i = 0; i < srv->n; ++i) {
        Worker* w = &srv->w[i];
        if (!w->thread_started) {
            continue;
        }
        pthread_mutex_lock(&w->ctl_lock);
        if (w->ctl_open) {
            uv_async_send(&w->ctl);
        }
        pthread_mutex_unlock(&w->ctl_lock);
    }
}

int http_server_finished(const HttpServer* srv)
{
    unsigned started = 0;
    for (unsigned i = 0; i < srv->n; ++i) {
        started += srv->w[i].thread_started ? 1u : 0u;
    }
    return atomic_load(&((HttpServer*)srv)->finished) >= started;
}

int http_server_join(HttpServer* srv)
{
    int rc = 0;
    for (unsigned i = 0; i < srv->n; ++i) {
        Worker* w = &srv->w[i];
        if (w->thread_started) {
            pthread_join(w->thread, NULL);
            w->thread_started = 0;
        }
        if (w->busy_at_exit) {
            rc = -1;
        }
    }
    return rc;
}

void http_server_stats(HttpServer* srv, HttpStats* out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned i = 0; i < srv->n; ++i) {
        Counters* c = &srv->w[i].st;
#define SUM(f) out->f += atomic_load_explicit(&c->f, memory_order_relaxed)
        SUM(accepted);
        SUM(refused);
        SUM(requests);
        SUM(ok);
        SUM(rejected);
        SUM(overloaded);
        SUM(client_errors);
        SUM(idle_closed);
        SUM(read_timeouts);
        SUM(write_timeouts);
        SUM(peer_closed);
        SUM(errors);
        SUM(tls_failures);
#undef SUM
#define ENGINE_SUM(f)                                                                              \
    out->engine.f += atomic_load_explicit(&srv->w[i].engine.f, memory_order_relaxed);
        ENGINE_COUNTERS(ENGINE_SUM)
#undef ENGINE_SUM
    }
    out->active = atomic_load_explicit(&srv->active, memory_order_relaxed);
    out->budget_used = futoin_uv_budget_used(srv->budget);
    out->budget_limit = futoin_uv_budget_limit(srv->budget);
    out->budget_refusals = futoin_uv_budget_refusals(srv->budget);
    out->loops = srv->n;
}

void http_server_free(HttpServer* srv)
{
    if (!srv) {
        return;
    }
    for (unsigned i = 0; i < srv->n; ++i) {
        if (srv->w[i].srv) {
            pthread_mutex_destroy(&srv->w[i].ctl_lock);
        }
    }
    futoin_uv_budget_release(srv->budget);
    pthread_mutex_destroy(&srv->lock);
    pthread_cond_destroy(&srv->cond);
    free(srv->w);
    free(srv);
}
