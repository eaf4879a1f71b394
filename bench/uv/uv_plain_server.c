/* SPDX-License-Identifier: MIT */
/*
 * The benchmark's reference: the same HTTP/1.1 handler as
 * examples/uv/http_server.c, written as plain libuv callbacks (no
 * AsyncSteps). Same parser and canned responses (http_common.h), same
 * keep-alive rules, same per-request read timeout (one uv_timer_t per
 * connection, restarted per request), TCP_NODELAY, uv_try_write first,
 * and an equivalent admission check (concurrent requests + requests per
 * fixed window, over the limit: 503).
 *
 *   uv_plain_server [-t read_timeout_ms] [-c concurrent] [-r rate]
 *                   [-p period_ms] [-L] [port]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <uv.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../examples/uv/http_common.h"

static const HttpLimits g_limits = HTTP_LIMITS_DEFAULT;

typedef struct PConn PConn;

typedef struct PServer {
    uv_loop_t* loop;
    uv_tcp_t listener;
    uv_signal_t sigint;
    uv_signal_t sigterm;
    PConn* conns;
    uint64_t read_timeout_ms;
    int use_limiter;
    uint32_t concurrent;
    uint32_t rate;
    uint64_t period_ms;
    uint32_t inside;
    uint32_t window_count;
    uint64_t window_start;
    unsigned long requests;
    unsigned long rejected;
    unsigned long timeouts;
    unsigned long accepted;
    unsigned long active;
} PServer;

struct PConn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    PServer* srv;
    PConn* prev;
    PConn* next;
    char* buf;
    size_t off;
    size_t len;
    size_t cap;
    size_t scanned;
    size_t body_left;
    int handles_open;
    int closing;
    int close_after_write;
    int writes_pending;
};

static void on_conn_handle_closed(uv_handle_t* h)
{
    PConn* c = h->data;
    if (--c->handles_open == 0) {
        free(c->buf);
        free(c);
    }
}

static void conn_close(PConn* c)
{
    if (c->closing) {
        return;
    }
    c->closing = 1;
    PServer* srv = c->srv;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    --srv->active;
    uv_close((uv_handle_t*)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t*)&c->timer, on_conn_handle_closed);
}

static void on_timeout(uv_timer_t* t)
{
    PConn* c = t->data;
    ++c->srv->timeouts;
    conn_close(c);
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf)
{
    (void)suggested;
    PConn* c = h->data;
    if (c->cap - c->len < 1024) {
        if (c->off > 0) {
            memmove(c->buf, c->buf + c->off, c->len - c->off);
            c->len -= c->off;
            c->off = 0;
        }
        if (c->cap - c->len < 1024) {
            size_t cap = c->cap ? c->cap * 2 : 4096;
            char* nb = realloc(c->buf, cap);
            if (!nb) {
                *buf = uv_buf_init(NULL, 0);
                return;
            }
            c->buf = nb;
            c->cap = cap;
        }
    }
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

typedef struct PWrite {
    uv_write_t req;
    char data[];
} PWrite;

static void on_written(uv_write_t* req, int status)
{
    PConn* c = req->handle->data;
    free(req->data);
    --c->writes_pending;
    if (status < 0 || (c->close_after_write && c->writes_pending == 0)) {
        conn_close(c);
    }
}

/* Returns 0, or -1 when the connection was closed. */
static int send_response(PConn* c, const char* text, size_t len)
{
    uv_buf_t b = uv_buf_init((char*)text, (unsigned)len);
    int n = uv_try_write((uv_stream_t*)&c->tcp, &b, 1);
    if (n == (int)len) {
        return 0;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_close(c);
        return -1;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    PWrite* w = malloc(sizeof(*w) + len - done);
    if (!w) {
        conn_close(c);
        return -1;
    }
    memcpy(w->data, text + done, len - done);
    w->req.data = w;
    b = uv_buf_init(w->data, (unsigned)(len - done));
    if (uv_write(&w->req, (uv_stream_t*)&c->tcp, &b, 1, on_written) != 0) {
        free(w);
        conn_close(c);
        return -1;
    }
    ++c->writes_pending;
    return 0;
}

/* The same admission rule as a Limiter with no queues. */
static int admit(PServer* srv)
{
    if (!srv->use_limiter) {
        return 1;
    }
    uint64_t now = uv_now(srv->loop);
    if (now - srv->window_start >= srv->period_ms) {
        srv->window_start = now;
        srv->window_count = 0;
    }
    if (srv->inside >= srv->concurrent || srv->window_count >= srv->rate) {
        return 0;
    }
    ++srv->window_count;
    return 1;
}

static int respond(PConn* c, HttpRequest* r)
{
    PServer* srv = c->srv;
    ++srv->requests;
    if (r->route == HTTP_STATS_ROUTE) {
        char body[256];
        char text[512];
        snprintf(body, sizeof(body), "accepted %lu\nactive %lu\nrequests %lu\nrejected %lu\ntimeouts %lu\n",
                srv->accepted, srv->active, srv->requests, srv->rejected, srv->timeouts);
        size_t n = http_format(text, sizeof(text), HTTP_STATS_ROUTE, r->keep_alive, r->head_only, body,
                NULL);
        return send_response(c, text, n);
    }
    if (r->route == HTTP_HELLO_ROUTE) {
        if (!admit(srv)) {
            ++srv->rejected;
            r->route = HTTP_BUSY;
        } else {
            /* The write is the whole critical section here. */
            ++srv->inside;
            const HttpCanned* resp = http_response(r->route, r->keep_alive, r->head_only);
            int rc = send_response(c, resp->text, resp->len);
            --srv->inside;
            return rc;
        }
    }
    const HttpCanned* resp = http_response(r->route, r->keep_alive, r->head_only);
    return send_response(c, resp->text, resp->len);
}

static const char* find_head_end(const char* p, size_t n)
{
    for (size_t i = 0; i + 4 <= n; ++i) {
        const char* q = memchr(p + i, '\r', n - i - 3);
        if (!q) {
            return NULL;
        }
        if (memcmp(q, "\r\n\r\n", 4) == 0) {
            return q;
        }
        i = (size_t)(q - p);
    }
    return NULL;
}

/* Handles every complete request in the buffer. */
static void process(PConn* c)
{
    while (!c->closing && !c->close_after_write) {
        size_t avail = c->len - c->off;
        if (c->body_left) {
            size_t take = avail < c->body_left ? avail : c->body_left;
            c->off += take;
            c->body_left -= take;
            if (c->body_left) {
                return;
            }
            avail = c->len - c->off;
        }
        const char* data = c->buf + c->off;
        size_t from = c->scanned;
        const char* end = find_head_end(data + from, avail - from);
        if (!end) {
            if (avail >= g_limits.max_head) {
                /* As the AsyncSteps server: 431, then close. */
                const HttpCanned* resp = http_response(HTTP_HEAD_TOO_LARGE, 0, 0);
                if (send_response(c, resp->text, resp->len) == 0) {
                    if (c->writes_pending) {
                        c->close_after_write = 1;
                    } else {
                        conn_close(c);
                    }
                }
            } else {
                c->scanned = avail >= 3 ? avail - 3 : 0;
            }
            return;
        }
        size_t head_len = (size_t)(end - data) + 4;
        HttpRequest r;
        http_parse_head(data, head_len, &g_limits, &r);
        c->off += head_len;
        c->scanned = 0;
        if (r.chunked) {
            /* Not needed by the benchmark: refused. */
            r.route = HTTP_NOT_IMPLEMENTED;
            r.close = 1;
            r.keep_alive = 0;
        }
        if (!r.close) {
            c->body_left = r.content_length;
        }
        if (respond(c, &r) != 0) {
            return;
        }
        if (!r.keep_alive) {
            if (c->writes_pending) {
                c->close_after_write = 1;
            } else {
                conn_close(c);
            }
            return;
        }
        /* The read timeout covers the next request. */
        uv_timer_start(&c->timer, on_timeout, c->srv->read_timeout_ms, 0);
    }
}

static void on_read(uv_stream_t* h, ssize_t nread, const uv_buf_t* buf)
{
    (void)buf;
    PConn* c = h->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)nread;
    process(c);
    if (!c->closing && c->off == c->len) {
        c->off = c->len = 0;
    }
}

static void on_connection(uv_stream_t* server, int status)
{
    PServer* srv = server->data;
    if (status < 0) {
        return;
    }
    PConn* c = calloc(1, sizeof(*c));
    if (!c) {
        return;
    }
    c->srv = srv;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->handles_open = 2;
    c->next = srv->conns;
    if (srv->conns) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    ++srv->accepted;
    ++srv->active;
    if (uv_accept(server, (uv_stream_t*)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_start(&c->timer, on_timeout, srv->read_timeout_ms, 0);
    uv_read_start((uv_stream_t*)&c->tcp, on_alloc, on_read);
}

static void on_signal(uv_signal_t* h, int signum)
{
    (void)signum;
    PServer* srv = h->data;
    while (srv->conns) {
        conn_close(srv->conns);
    }
    uv_close((uv_handle_t*)&srv->listener, NULL);
    uv_close((uv_handle_t*)&srv->sigint, NULL);
    uv_close((uv_handle_t*)&srv->sigterm, NULL);
}

int main(int argc, char** argv)
{
    PServer srv;
    memset(&srv, 0, sizeof(srv));
    srv.read_timeout_ms = 5000;
    srv.use_limiter = 1;
    srv.concurrent = 256;
    srv.rate = 100000;
    srv.period_ms = 1000;
    unsigned port = 8081;
    int opt;
    while ((opt = getopt(argc, argv, "t:c:r:p:L")) != -1) {
        unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;
        switch (opt) {
        case 't': srv.read_timeout_ms = v; break;
        case 'c': srv.concurrent = (uint32_t)v; break;
        case 'r': srv.rate = (uint32_t)v; break;
        case 'p': srv.period_ms = v ? v : 1; break;
        case 'L': srv.use_limiter = 0; break;
        default:
            fprintf(stderr, "usage: %s [-t ms] [-c concurrent] [-r rate] [-p period_ms] [-L] [port]\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        port = (unsigned)strtoul(argv[optind], NULL, 10);
    }
    signal(SIGPIPE, SIG_IGN);
    http_canned_init();
    srv.loop = uv_default_loop();
    uv_tcp_init(srv.loop, &srv.listener);
    srv.listener.data = &srv;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", (int)port, &addr);
    int err = uv_tcp_bind(&srv.listener, (const struct sockaddr*)&addr, 0);
    if (!err) {
        err = uv_listen((uv_stream_t*)&srv.listener, 1024, on_connection);
    }
    if (err) {
        fprintf(stderr, "uv_plain_server: cannot listen on 127.0.0.1:%u: %s\n", port, uv_strerror(err));
        return 1;
    }
    uv_signal_init(srv.loop, &srv.sigint);
    uv_signal_init(srv.loop, &srv.sigterm);
    srv.sigint.data = &srv;
    srv.sigterm.data = &srv;
    uv_signal_start(&srv.sigint, on_signal, SIGINT);
    uv_signal_start(&srv.sigterm, on_signal, SIGTERM);
    /* Port 0 picks a free port: report the real one. */
    struct sockaddr_storage bound;
    int blen = (int)sizeof(bound);
    if (uv_tcp_getsockname(&srv.listener, (struct sockaddr*)&bound, &blen) == 0) {
        port = ntohs(((struct sockaddr_in*)&bound)->sin_port);
    }
    printf("uv_plain_server: listening on http://127.0.0.1:%u/\n", port);
    fflush(stdout);
    uv_run(srv.loop, UV_RUN_DEFAULT);
    uv_loop_close(srv.loop);
    printf("uv_plain_server: stopped: accepted %lu, requests %lu, rejected %lu, timeouts %lu\n",
            srv.accepted, srv.requests, srv.rejected, srv.timeouts);
    return 0;
}
