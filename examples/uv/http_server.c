/* SPDX-License-Identifier: MIT */
/*
 * A small HTTP/1.1 server built from AsyncSteps on the libuv backend.
 *
 *   http_server [-t read_timeout_ms] [-c concurrent] [-q max_queue]
 *               [-r rate] [-p period_ms] [-b burst] [-L] [port]
 *
 * Listens on 127.0.0.1:port (default 8080; 0: any free port, printed at
 * start). Numbers are decimal digits only: the port 0..65535, -t
 * 1..4294967295, the limiter options 0..4294967295 (the limiter refuses a
 * concurrency, rate or period of 0); anything else is a usage error (exit
 * status 2). GET / answers
 * "Hello from AsyncSteps\n"; GET /stats prints the server's counters.
 *
 * Shape of the program:
 *  - one acceptor root running futoin_uv_serve() (an accept loop step);
 *  - one root per connection, whose single step is a loop with one
 *    iteration per request (keep-alive):
 *        read head (setTimeout = read timeout; covers idle keep-alive too)
 *        → parse, read and drop a Content-Length body
 *        → Limiter-synchronised step: write the response
 *          (DefenseRejected from the Limiter → 503 from its error handler)
 *        → break unless keep-alive;
 *  - any error of a connection (timeout, peer gone, write failure) ends its
 *    root: the unhandled-error callback counts it and frees the connection;
 *  - SIGINT/SIGTERM (uv_signal_t): stop listening, cancel every connection
 *    root (their cancel handlers stop the libuv reads), free everything;
 *    uv_run() then returns because nothing is left, and the program exits 0.
 *
 * -L disables the Limiter (for comparison runs). The limiter defaults are
 * meant for a demo: 256 concurrent requests with 1024 queued, 100000
 * requests per second with a burst queue of 1024.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/sync.h>
#include <futoin/uv.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_common.h"

typedef struct Conn Conn;

typedef struct Stats {
    unsigned long accepted;
    unsigned long active;
    unsigned long requests;
    unsigned long ok;
    unsigned long rejected;
    unsigned long client_errors;
    unsigned long timeouts;
    unsigned long peer_closed;
    unsigned long errors;
} Stats;

typedef struct Server {
    FutoInUv* uv;
    FutoInUvServer* listener;
    FutoInAsyncSteps* acceptor;
    FutoInSync* limiter;
    uv_signal_t sigint;
    uv_signal_t sigterm;
    Conn* conns;
    uint32_t read_timeout_ms;
    int stopping;
    Stats st;
} Server;

struct Conn {
    Server* srv;
    FutoInUvStream* s;
    FutoInAsyncSteps* root;
    Conn* prev;
    Conn* next;
    HttpRequest req;
    int head_too_large;
    char stats_buf[512];
};

/* ------------------------------------------------------------------------ */
/* Connection lifetime                                                       */

/* Called from inside a callback of c->root (or at shutdown): freeing the
 * root there is safe, the engine releases it when the callback returns. */
static void conn_free(Conn* c)
{
    Server* srv = c->srv;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    --srv->st.active;
    futoin_asyncsteps_free(c->root);
    futoin_uv_stream_release(c->s);
    free(c);
}

static int peer_gone(const char* info)
{
    return strncmp(info, "EOF:", 4) == 0 || strncmp(info, "ECONNRESET:", 11) == 0
            || strncmp(info, "EPIPE:", 6) == 0;
}

static void conn_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    Stats* st = &c->srv->st;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        ++st->timeouts;
    } else if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && peer_gone(futoin_error_info(as))) {
        /* The client closed (normally between requests) or reset the
         * connection (e.g. a benchmark tool stopping with replies in flight). */
        ++st->peer_closed;
    } else {
        ++st->errors;
    }
    conn_free(c);
}

static void conn_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    conn_free(data);
}

/* ------------------------------------------------------------------------ */
/* One request                                                               */

static void req_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    /* Covers the whole head: a slow or silent client (slowloris, half-open
     * connection, idle keep-alive) ends with Timeout. */
    futoin_set_timeout(as, c->srv->read_timeout_ms);
    futoin_uv_read_until(as, c->s, "\r\n\r\n", HTTP_MAX_HEAD);
}

/* A head over HTTP_MAX_HEAD: recover, so that req_parse answers 431 and
 * the connection closes (its remaining bytes cannot be framed). */
static void req_read_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && strncmp(futoin_error_info(as), "ENOBUFS:", 8) == 0) {
        c->head_too_large = 1;
        futoin_success(as);
    }
}

static void req_parse(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    if (c->head_too_large) {
        memset(&c->req, 0, sizeof(c->req));
        c->req.route = HTTP_HEAD_TOO_LARGE;
        return;
    }
    size_t len = 0;
    const char* head = futoin_uv_arg_bytes(args, 0, &len);
    http_parse_head(head ? head : "", len, &c->req);
    if (c->req.content_length > 0 && c->req.route != HTTP_TOO_LARGE) {
        /* The body is not used, but it must be consumed to find the next
         * request on the connection. */
        futoin_set_timeout(as, c->srv->read_timeout_ms);
        futoin_uv_read_exact(as, c->s, c->req.content_length);
    }
}

static void count_response(Conn* c)
{
    Stats* st = &c->srv->st;
    ++st->requests;
    switch (c->req.route) {
    case HTTP_HELLO_ROUTE:
    case HTTP_STATS_ROUTE: ++st->ok; break;
    case HTTP_BUSY: ++st->rejected; break;
    default: ++st->client_errors; break;
    }
}

/* Writes the response for c->req (a canned one, or the stats text). */
static void write_response(FutoInAsyncSteps* as, Conn* c)
{
    count_response(c);
    if (c->req.route == HTTP_STATS_ROUTE) {
        const Stats* st = &c->srv->st;
        char body[384];
        snprintf(body, sizeof(body),
                "accepted %lu\nactive %lu\nrequests %lu\nok %lu\nrejected %lu\n"
                "client_errors %lu\ntimeouts %lu\npeer_closed %lu\nerrors %lu\n",
                st->accepted, st->active, st->requests, st->ok, st->rejected,
                st->client_errors, st->timeouts, st->peer_closed, st->errors);
        size_t n = http_format(c->stats_buf, sizeof(c->stats_buf), HTTP_STATS_ROUTE,
                c->req.keep_alive, c->req.head_only, body);
        futoin_uv_write(as, c->s, c->stats_buf, n);
        return;
    }
    const HttpCanned* r = http_response(c->req.route, c->req.keep_alive, c->req.head_only);
    futoin_uv_write_static(as, c->s, r->text, r->len);
}

/* The critical section: runs while the Limiter admits this request. */
static void req_handle(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    write_response(as, data);
}

/* Error handler of the step around the Limiter: an over-limit request gets
 * 503 and the connection goes on (the client may retry on it). */
static void req_limit_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    if (strcmp(code, FUTOIN_DEFENSE_REJECTED) == 0) {
        c->req.route = HTTP_BUSY;
        write_response(as, c);
    }
}

static void req_dispatch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    /* /stats and error answers bypass the Limiter: monitoring must work
     * under load, and malformed requests cost nothing to answer. */
    if (c->srv->limiter && c->req.route == HTTP_HELLO_ROUTE) {
        futoin_add_sync(as, c->srv->limiter, req_handle, NULL, c);
    } else {
        write_response(as, c);
    }
}

static void req_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    if (!c->req.keep_alive) {
        futoin_break(as, NULL);
    }
}

static void request_iteration(FutoInAsyncSteps* as, void* data)
{
    Conn* c = data;
    futoin_add(as, req_read, req_read_eh, c);
    futoin_add(as, req_parse, NULL, c);
    futoin_add(as, req_dispatch, req_limit_eh, c);
    futoin_add(as, req_after, NULL, c);
}

static void conn_serve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_loop(as, request_iteration, data, NULL);
}

/* The acceptor's callback: one new root per connection. */
static void on_connection(void* data, FutoInUvStream* s)
{
    Server* srv = data;
    if (srv->stopping) {
        return;
    }
    Conn* c = calloc(1, sizeof(*c));
    FutoInAsyncSteps* root = c ? futoin_asyncsteps_new(futoin_uv_loop(srv->uv)) : NULL;
    if (!root) {
        free(c);
        ++srv->st.errors;
        return; /* s is closed when the accept step's value is dropped */
    }
    /* Responses are single writes: don't let Nagle hold them back. */
    uv_tcp_nodelay(futoin_uv_stream_handle(s), 1);
    c->srv = srv;
    c->s = futoin_uv_stream_ref(s);
    c->root = root;
    c->next = srv->conns;
    if (srv->conns) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    ++srv->st.accepted;
    ++srv->st.active;
    futoin_add(root, conn_serve, NULL, c);
    futoin_add(root, conn_done, NULL, c);
    futoin_execute(root, conn_unhandled, c);
}

/* ------------------------------------------------------------------------ */
/* Start and graceful shutdown                                               */

static void acceptor_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Server* srv = data;
    if (!srv->stopping) {
        fprintf(stderr, "http_server: accept loop failed: %s %s\n", code, futoin_error_info(as));
    }
}

static void acceptor_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Server* srv = data;
    futoin_uv_serve(as, srv->listener, on_connection, srv);
}

static void on_signal(uv_signal_t* h, int signum)
{
    Server* srv = h->data;
    if (srv->stopping) {
        return;
    }
    srv->stopping = 1;
    fprintf(stderr, "http_server: signal %d, shutting down (%lu connections open)\n", signum,
            srv->st.active);
    /* Cancelling a root runs its cancel handlers (reads stop, sleeps and
     * timeouts are dropped); freeing it releases its step memory and with it
     * the stream references held by queued steps. */
    futoin_asyncsteps_free(srv->acceptor);
    srv->acceptor = NULL;
    futoin_uv_server_close(srv->listener);
    futoin_uv_server_release(srv->listener);
    srv->listener = NULL;
    while (srv->conns) {
        conn_free(srv->conns);
    }
    uv_close((uv_handle_t*)&srv->sigint, NULL);
    uv_close((uv_handle_t*)&srv->sigterm, NULL);
}

static void usage(const char* argv0)
{
    fprintf(stderr,
            "usage: %s [-t read_timeout_ms] [-c concurrent] [-q max_queue] [-r rate]\n"
            "          [-p period_ms] [-b burst] [-L] [port]\n"
            "  port: 0..65535 (0: any free port; default 8080)\n"
            "  -t: 1..4294967295; -c -q -r -p -b: 0..4294967295\n",
            argv0);
}

/* Parses text as a decimal number in min..max: digits only (no sign, no
 * blanks, no suffix, not empty). Returns 0 and stores it in *out, or -1. */
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
            return -1; /* above max (and no wrap-around on the way) */
        }
        v = v * 10 + d;
    }
    if (v < min) {
        return -1;
    }
    *out = v;
    return 0;
}

/* A numeric option: prints what is wrong and returns -1 if it is invalid. */
static int option_u32(const char* argv0, int opt, const char* text, unsigned long long min,
        uint32_t* out)
{
    unsigned long long v;
    if (parse_number(text, min, UINT32_MAX, &v) != 0) {
        fprintf(stderr, "%s: invalid -%c value '%s' (expected %llu..%lu)\n", argv0, opt, text,
                min, (unsigned long)UINT32_MAX);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int main(int argc, char** argv)
{
    Server srv;
    memset(&srv, 0, sizeof(srv));
    srv.read_timeout_ms = 5000;
    FutoInLimiterOptions lim = {256u, 1024u, 100000u, 1000u, 1024u};
    int use_limiter = 1;
    unsigned port = 8080;
    int opt;
    while ((opt = getopt(argc, argv, "t:c:q:r:p:b:Lh")) != -1) {
        int bad = 0;
        switch (opt) {
        case 't': bad = option_u32(argv[0], opt, optarg, 1, &srv.read_timeout_ms); break;
        case 'c': bad = option_u32(argv[0], opt, optarg, 0, &lim.concurrent); break;
        case 'q': bad = option_u32(argv[0], opt, optarg, 0, &lim.max_queue); break;
        case 'r': bad = option_u32(argv[0], opt, optarg, 0, &lim.rate); break;
        case 'p': bad = option_u32(argv[0], opt, optarg, 0, &lim.period_ms); break;
        case 'b': bad = option_u32(argv[0], opt, optarg, 0, &lim.burst); break;
        case 'L': use_limiter = 0; break;
        default: bad = -1; break;
        }
        if (bad) {
            usage(argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        unsigned long long v;
        if (parse_number(argv[optind], 0, 65535, &v) != 0) {
            fprintf(stderr, "%s: invalid port '%s' (expected 0..65535)\n", argv[0], argv[optind]);
            usage(argv[0]);
            return 2;
        }
        if (optind + 1 < argc) {
            fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind + 1]);
            usage(argv[0]);
            return 2;
        }
        port = (unsigned)v;
    }
    /* A peer that resets its connection must cost us an EPIPE, not the
     * process: libuv writes with plain write(). */
    signal(SIGPIPE, SIG_IGN);
    http_canned_init();

    srv.uv = futoin_uv_new(NULL);
    if (!srv.uv) {
        fprintf(stderr, "http_server: cannot create the event loop\n");
        return 1;
    }
    FutoInLoop* loop = futoin_uv_loop(srv.uv);
    if (use_limiter) {
        srv.limiter = futoin_limiter_new(loop, &lim);
        if (!srv.limiter) {
            fprintf(stderr, "http_server: invalid limiter options\n");
            futoin_uv_free(srv.uv);
            return 2;
        }
    }
    int err = 0;
    srv.listener = futoin_uv_server_new(srv.uv, "127.0.0.1", port, 1024, &err);
    if (!srv.listener) {
        fprintf(stderr, "http_server: cannot listen on 127.0.0.1:%u: %s\n", port, uv_strerror(err));
        futoin_sync_free(srv.limiter);
        futoin_uv_free(srv.uv);
        return 1;
    }
    uv_loop_t* l = futoin_uv_uv_loop(srv.uv);
    uv_signal_init(l, &srv.sigint);
    uv_signal_init(l, &srv.sigterm);
    srv.sigint.data = &srv;
    srv.sigterm.data = &srv;
    uv_signal_start(&srv.sigint, on_signal, SIGINT);
    uv_signal_start(&srv.sigterm, on_signal, SIGTERM);

    srv.acceptor = futoin_asyncsteps_new(loop);
    futoin_add(srv.acceptor, acceptor_start, NULL, &srv);
    futoin_execute(srv.acceptor, acceptor_unhandled, &srv);
    printf("http_server: listening on http://127.0.0.1:%u/ (read timeout %u ms, limiter %s)\n",
            futoin_uv_server_port(srv.listener), srv.read_timeout_ms,
            use_limiter ? "on" : "off");
    if (use_limiter) {
        printf("http_server: limiter concurrent=%u max_queue=%u rate=%u/%ums burst=%u\n",
                lim.concurrent, lim.max_queue, lim.rate, lim.period_ms, lim.burst);
    }
    fflush(stdout);

    futoin_uv_run(srv.uv);

    int rc = 0;
    if (futoin_sync_free(srv.limiter) != FUTOIN_SYNC_OK) {
        fprintf(stderr, "http_server: limiter still busy at exit\n");
        rc = 1;
    }
    futoin_uv_free(srv.uv);
    printf("http_server: stopped: accepted %lu, requests %lu, ok %lu, rejected %lu, "
           "timeouts %lu, errors %lu\n",
            srv.st.accepted, srv.st.requests, srv.st.ok, srv.st.rejected, srv.st.timeouts,
            srv.st.errors);
    return rc;
}
