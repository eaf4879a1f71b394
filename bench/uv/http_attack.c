/* SPDX-License-Identifier: MIT */
/*
 * Attack clients for bench/uv/http_attack.sh: N connections to
 * 127.0.0.1:PORT that misbehave in one way each, reconnecting whenever the
 * server closes them, for a given time. Plain libuv, one thread.
 *
 *   http_attack MODE CONNECTIONS SECONDS PORT
 *
 * MODE:
 *   pipeline   4 KB receive buffer, pipelines GET /bytes?n=65536 and never
 *              reads (the responses pile up on the server)
 *   bigbody    POST with a 1 MiB body, as fast as possible, again and again
 *   slowloris  a request head dribbled one field every 200 ms, never ending
 *   idle       connects and sends nothing
 *   header     one header line that never ends (1 MiB and more)
 *   garbage    64 KiB of random bytes
 *   reset      GET /bytes?n=1000000, then a reset after the first bytes
 * Prints the number of connections made and bytes sent at the end.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include <uv.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { M_PIPELINE, M_BIGBODY, M_SLOWLORIS, M_IDLE, M_HEADER, M_GARBAGE, M_RESET };

static const char* const g_modes[] = { "pipeline", "bigbody", "slowloris", "idle", "header",
    "garbage", "reset", NULL };

#define BODY_SIZE (1024u * 1024u)
#define PIPELINE_DEPTH 64

static int g_mode;
static unsigned g_port;
static int g_stopping;
static unsigned long g_connects;
static unsigned long long g_sent;
static uv_loop_t* g_loop;
static char* g_body; /* BODY_SIZE bytes: bodies, header lines, garbage */
static char g_pipeline[PIPELINE_DEPTH * 64];
static size_t g_pipeline_len;

typedef struct AConn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t creq;
    int open; /* the tcp handle is initialised and not closing */
    int timer_open;
    unsigned step;
    char rbuf[65536];
} AConn;

static void start_conn(AConn* c);

static void on_closed(uv_handle_t* h)
{
    AConn* c = h->data;
    if (!g_stopping) {
        start_conn(c);
    }
}

static void drop(AConn* c)
{
    if (c->open) {
        c->open = 0;
        uv_timer_stop(&c->timer);
        uv_close((uv_handle_t*)&c->tcp, on_closed);
    }
}

static void on_written(uv_write_t* req, int status)
{
    AConn* c = req->data;
    free(req);
    if (status < 0) {
        drop(c);
    }
}

static void send_bytes(AConn* c, const char* data, size_t len)
{
    if (!c->open) {
        return;
    }
    uv_write_t* req = malloc(sizeof(*req));
    if (!req) {
        return;
    }
    req->data = c;
    uv_buf_t b = uv_buf_init((char*)data, (unsigned)len);
    g_sent += len;
    if (uv_write(req, (uv_stream_t*)&c->tcp, &b, 1, on_written) != 0) {
        free(req);
        drop(c);
    }
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf)
{
    (void)suggested;
    AConn* c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

static int has_status(const char* p, size_t n)
{
    for (size_t i = 0; i + 9 <= n; ++i) {
        if (memcmp(p + i, "HTTP/1.1 ", 9) == 0) {
            return 1;
        }
    }
    return 0;
}

static void send_bigbody(AConn* c)
{
    static const char head[] = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\n";
    send_bytes(c, head, sizeof(head) - 1);
    send_bytes(c, g_body, BODY_SIZE);
}

static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf)
{
    (void)buf;
    AConn* c = s->data;
    if (n < 0) {
        drop(c);
        return;
    }
    if (g_mode == M_RESET && n > 0 && c->open) {
        c->open = 0;
        uv_timer_stop(&c->timer);
        uv_tcp_close_reset(&c->tcp, on_closed);
        return;
    }
    if (g_mode == M_BIGBODY && n > 0 && has_status(c->rbuf, (size_t)n)) {
        send_bigbody(c); /* answered: the next one on the same connection */
    }
}

static void on_tick(uv_timer_t* t)
{
    AConn* c = t->data;
    switch (g_mode) {
    case M_SLOWLORIS: {
        static const char dribble[] = "X-slow: y\r\n";
        send_bytes(c, dribble, sizeof(dribble) - 1);
        break;
    }
    case M_HEADER:
        send_bytes(c, g_body, 65536);
        break;
    case M_PIPELINE:
        send_bytes(c, g_pipeline, g_pipeline_len);
        break;
    default:
        break;
    }
}

static void on_connected(uv_connect_t* req, int status)
{
    AConn* c = req->data;
    if (status < 0) {
        drop(c);
        return;
    }
    ++g_connects;
    uv_read_start((uv_stream_t*)&c->tcp, on_alloc, on_read);
    switch (g_mode) {
    case M_PIPELINE:
        uv_read_stop((uv_stream_t*)&c->tcp); /* never read */
        send_bytes(c, g_pipeline, g_pipeline_len);
        uv_timer_start(&c->timer, on_tick, 1000, 1000);
        break;
    case M_BIGBODY:
        send_bigbody(c);
        break;
    case M_SLOWLORIS: {
        static const char head[] = "GET / HTTP/1.1\r\nHost: a\r\n";
        send_bytes(c, head, sizeof(head) - 1);
        uv_timer_start(&c->timer, on_tick, 200, 200);
        break;
    }
    case M_HEADER: {
        static const char head[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Long: ";
        send_bytes(c, head, sizeof(head) - 1);
        uv_timer_start(&c->timer, on_tick, 1, 10);
        break;
    }
    case M_GARBAGE:
        send_bytes(c, g_body, 65536);
        break;
    case M_RESET: {
        static const char get[] = "GET /bytes?n=1000000 HTTP/1.1\r\nHost: a\r\n\r\n";
        send_bytes(c, get, sizeof(get) - 1);
        break;
    }
    default:
        break;
    }
}

static void start_conn(AConn* c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return; /* out of descriptors: this slot stays empty */
    }
    if (g_mode == M_PIPELINE) {
        int small = 4096;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    }
    uv_tcp_init(g_loop, &c->tcp);
    c->tcp.data = c;
    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd);
        uv_close((uv_handle_t*)&c->tcp, NULL);
        return;
    }
    c->open = 1;
    c->step = 0;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", (int)g_port, &a);
    c->creq.data = c;
    if (uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr*)&a, on_connected) != 0) {
        drop(c);
    }
}

static AConn* g_conns;
static unsigned g_n;

static void close_all(uv_handle_t* h, void* arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static void on_end(uv_timer_t* t)
{
    (void)t;
    g_stopping = 1;
    uv_walk(g_loop, close_all, NULL);
}

int main(int argc, char** argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODE CONNECTIONS SECONDS PORT\n", argv[0]);
        return 2;
    }
    g_mode = -1;
    for (int i = 0; g_modes[i]; ++i) {
        if (strcmp(argv[1], g_modes[i]) == 0) {
            g_mode = i;
        }
    }
    g_n = (unsigned)strtoul(argv[2], NULL, 10);
    unsigned seconds = (unsigned)strtoul(argv[3], NULL, 10);
    g_port = (unsigned)strtoul(argv[4], NULL, 10);
    if (g_mode < 0 || g_n == 0 || g_port == 0) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    g_body = malloc(BODY_SIZE);
    g_conns = calloc(g_n, sizeof(*g_conns));
    if (!g_body || !g_conns) {
        return 1;
    }
    srand(1);
    for (size_t i = 0; i < BODY_SIZE; ++i) {
        g_body[i] = g_mode == M_GARBAGE ? (char)(rand() & 0xff) : 'a';
    }
    for (int i = 0; i < PIPELINE_DEPTH; ++i) {
        static const char get[] = "GET /bytes?n=65536 HTTP/1.1\r\nHost: a\r\n\r\n";
        memcpy(g_pipeline + g_pipeline_len, get, sizeof(get) - 1);
        g_pipeline_len += sizeof(get) - 1;
    }
    g_loop = uv_default_loop();
    for (unsigned i = 0; i < g_n; ++i) {
        uv_timer_init(g_loop, &g_conns[i].timer);
        g_conns[i].timer.data = &g_conns[i];
        start_conn(&g_conns[i]);
    }
    uv_timer_t end;
    uv_timer_init(g_loop, &end);
    uv_timer_start(&end, on_end, (uint64_t)seconds * 1000u, 0);
    uv_run(g_loop, UV_RUN_DEFAULT);
    uv_loop_close(g_loop);
    printf("http_attack %s: %u connections, %lu connects, %llu bytes sent\n", argv[1], g_n,
            g_connects, g_sent);
    free(g_conns);
    free(g_body);
    return 0;
}
