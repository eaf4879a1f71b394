/* SPDX-License-Identifier: MIT */
/*
 * The benchmark's reference: the same HTTP/1.1 handler as
 * examples/uv/http_server.c, written as plain libuv callbacks (no
 * AsyncSteps). Same parser and canned responses (http_common.h), same
 * keep-alive rules, same per-request read timeout (one uv_timer_t per
 * connection, restarted per request), TCP_NODELAY, uv_try_write first,
 * and an equivalent admission check (concurrent requests + requests per
 * fixed window, over the limit: 503). With -j N it runs N threads, each
 * with its own uv_loop_t and listening socket sharing the port with
 * SO_REUSEPORT, as the AsyncSteps server does.
 *
 *   uv_plain_server [-j threads] [-t read_timeout_ms] [-c concurrent]
 *                   [-r rate] [-p period_ms] [-L] [port]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* SO_REUSEPORT */
#endif

#include <uv.h>

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../examples/uv/http_common.h"

static const HttpLimits g_limits = HTTP_LIMITS_DEFAULT;

typedef struct PConn PConn;

typedef struct PServer {
    uv_loop_t* loop;
    uv_loop_t own_loop;
    uv_tcp_t listener;
    uv_async_t stop;
    pthread_t thread;
    unsigned port;
    int reuseport;
    int ready; /* 1 listening, -1 failed */
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
        snprintf(body, sizeof(body),
                "accepted %lu\nactive %lu\nrequests %lu\nrejected %lu\ntimeouts %lu\n",
                srv->accepted, srv->active, srv->requests, srv->rejected, srv->timeouts);
        size_t n = http_format(text, sizeof(text), HTTP_STATS_ROUTE, r->keep_alive, r->head_only,
                body, NULL);
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

static void on_stop(uv_async_t* h)
{
    PServer* srv = h->data;
    while (srv->conns) {
        conn_close(srv->conns);
    }
    uv_close((uv_handle_t*)&srv->listener, NULL);
    uv_close((uv_handle_t*)&srv->stop, NULL);
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;

static int listen_on(PServer* srv)
{
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", (int)srv->port, &addr);
    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    int err;
    if (srv->reuseport) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
                || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0
                || bind(fd, (const struct sockaddr*)&addr, sizeof(addr)) != 0) {
            if (fd >= 0) {
                close(fd);
            }
            return -1;
        }
        err = uv_tcp_open(&srv->listener, fd);
    } else {
        err = uv_tcp_bind(&srv->listener, (const struct sockaddr*)&addr, 0);
    }
    if (!err) {
        err = uv_listen((uv_stream_t*)&srv->listener, 1024, on_connection);
    }
    if (err) {
        return -1;
    }
    /* Port 0 picks a free port: report the real one. */
    struct sockaddr_storage bound;
    int blen = (int)sizeof(bound);
    if (uv_tcp_getsockname(&srv->listener, (struct sockaddr*)&bound, &blen) == 0) {
        srv->port = ntohs(((struct sockaddr_in*)&bound)->sin_port);
    }
    return 0;
}

static void* server_main(void* arg)
{
    PServer* srv = arg;
    uv_loop_init(&srv->own_loop);
    srv->loop = &srv->own_loop;
    int ok = listen_on(srv) == 0;
    if (ok) {
        uv_async_init(srv->loop, &srv->stop, on_stop);
        srv->stop.data = srv;
    } else {
        uv_close((uv_handle_t*)&srv->listener, NULL);
    }
    pthread_mutex_lock(&g_lock);
    srv->ready = ok ? 1 : -1;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    uv_run(srv->loop, UV_RUN_DEFAULT);
    uv_loop_close(srv->loop);
    return NULL;
}

int main(int argc, char** argv)
{
    PServer base;
    memset(&base, 0, sizeof(base));
    base.read_timeout_ms = 5000;
    base.use_limiter = 1;
    base.concurrent = 256;
    base.rate = 100000;
    base.period_ms = 1000;
    unsigned port = 8081;
    unsigned threads = 1;
    int opt;
    while ((opt = getopt(argc, argv, "j:t:c:r:p:L")) != -1) {
        unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;
        switch (opt) {
        case 'j':
            threads = v >= 1 && v <= 64 ? (unsigned)v : 1;
            break;
        case 't':
            base.read_timeout_ms = v;
            break;
        case 'c':
            base.concurrent = (uint32_t)v;
            break;
        case 'r':
            base.rate = (uint32_t)v;
            break;
        case 'p':
            base.period_ms = v ? v : 1;
            break;
        case 'L':
            base.use_limiter = 0;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-j threads] [-t ms] [-c concurrent] [-r rate] [-p period_ms] [-L] "
                    "[port]\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        port = (unsigned)strtoul(argv[optind], NULL, 10);
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    http_canned_init();
    PServer* srv = calloc(threads, sizeof(*srv));
    if (!srv) {
        return 1;
    }
    unsigned started = 0;
    for (unsigned i = 0; i < threads; ++i) {
        srv[i] = base;
        srv[i].port = i == 0 ? port : srv[0].port;
        srv[i].reuseport = threads > 1;
        /* The admission limits are for the whole server, as the AsyncSteps
         * server's Limiter: divided among the threads. */
        srv[i].concurrent = base.concurrent / threads + (base.concurrent % threads != 0);
        srv[i].rate = base.rate / threads + (base.rate % threads != 0);
        if (pthread_create(&srv[i].thread, NULL, server_main, &srv[i]) != 0) {
            break;
        }
        ++started;
        pthread_mutex_lock(&g_lock);
        while (srv[i].ready == 0) {
            pthread_cond_wait(&g_cond, &g_lock);
        }
        pthread_mutex_unlock(&g_lock);
        if (srv[i].ready < 0) {
            break;
        }
    }
    int ok = started == threads && srv[threads - 1].ready > 0;
    if (ok) {
        printf("uv_plain_server: listening on http://127.0.0.1:%u/ (%u thread%s)\n", srv[0].port,
                threads, threads == 1 ? "" : "s");
        fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
    } else {
        fprintf(stderr, "uv_plain_server: cannot listen on 127.0.0.1:%u\n", port);
    }
    unsigned long accepted = 0, requests = 0, rejected = 0, timeouts = 0;
    for (unsigned i = 0; i < started; ++i) {
        if (srv[i].ready > 0) {
            uv_async_send(&srv[i].stop);
        }
        pthread_join(srv[i].thread, NULL);
        accepted += srv[i].accepted;
        requests += srv[i].requests;
        rejected += srv[i].rejected;
        timeouts += srv[i].timeouts;
    }
    free(srv);
    if (!ok) {
        return 1;
    }
    printf("uv_plain_server: stopped: accepted %lu, requests %lu, rejected %lu, timeouts %lu\n",
            accepted, requests, rejected, timeouts);
    return 0;
}
