/* SPDX-License-Identifier: MIT */
/*
 * The hardened HTTP/1.1 server of examples/uv/http_server.c as a module, so
 * that tests/uv/test_http_server.c runs the very same code in-process.
 * docs/HTTP-SERVER.md describes the options, the limits and the design.
 */
#ifndef FUTOIN_EXAMPLE_HTTP_SRV_H
#define FUTOIN_EXAMPLE_HTTP_SRV_H

#include <futoin/introspect.h>
#include <futoin/sync.h>
#include <futoin/uv.h>

#include <stdio.h>

#include "http_common.h"

typedef struct HttpServerOptions {
    const char* host;             /* bind address (numeric IPv4/IPv6): 127.0.0.1 */
    unsigned port;                /* 8080; 0: any free port */
    unsigned loops;               /* loop threads; 0: one per online CPU */
    uint32_t idle_timeout_ms;     /* wait for a request's first byte: 5000 */
    uint32_t read_timeout_ms;     /* the rest of the head and the body: 10000 */
    uint32_t write_timeout_ms;    /* each response: 10000 */
    uint32_t drain_timeout_ms;    /* in-flight requests after a shutdown: 5000 */
    uint32_t max_requests;        /* per connection; 0: unlimited: 1000 */
    uint32_t max_connections;     /* open at once, all loops; 0: the descriptor
                                  limit less room for the loops: 0 */
    HttpLimits limits;            /* 8 KiB line, 16 KiB head, 1 MiB body */
    size_t input_budget;          /* buffered input, all connections: 64 MiB */
    uint32_t max_uploads;         /* bodies read at once, all loops; 0: any: 64 */
    int use_limiter;              /* 1 */
    FutoInLimiterOptions limiter; /* whole server; divided among the loops */
    int debug_pages;              /* serve GET /debug/flows (else 404): 0 */
    const char* tls_cert;         /* HTTPS with this certificate chain (PEM) */
    const char* tls_key;          /* and its key; both or neither: NULL */
} HttpServerOptions;

/* Counters (summed over the loops) and gauges. */
typedef struct HttpStats {
    unsigned long accepted;
    unsigned long active;         /* connections open now */
    unsigned long refused;        /* over max_connections: 503 */
    unsigned long requests;       /* responses sent */
    unsigned long ok;             /* 2xx */
    unsigned long rejected;       /* 503 from the Limiter */
    unsigned long overloaded;     /* 503: input budget spent */
    unsigned long client_errors;  /* 4xx, 501, 505 */
    unsigned long idle_closed;    /* idle keep-alive connections closed */
    unsigned long read_timeouts;  /* 408 */
    unsigned long write_timeouts; /* a client that did not read its response */
    unsigned long peer_closed;
    unsigned long errors;
    unsigned long budget_refusals;
    unsigned long tls_failures; /* TLS handshakes that failed or timed out */
    size_t budget_used;
    size_t budget_limit;
    unsigned loops;
    /* The engine's counters of every loop, summed: the serving loop's as
     * of now, the others' as each loop last published them (at most
     * HTTP_ENGINE_PUBLISH_MS ago). */
    FutoInLoopCounters engine;
} HttpStats;

#define HTTP_ENGINE_PUBLISH_MS 500

typedef struct HttpServer HttpServer;

/* Fills *o with the defaults above. */
void http_server_options_init(HttpServerOptions* o);

/* Parses a command line into *o (see usage); returns 0, 1 for -h (usage
 * printed to out), or -1 (message and usage on err). */
int http_server_parse_args(HttpServerOptions* o, int argc, char** argv, FILE* out, FILE* err);

/* Starts the loop threads, each with its own FutoInUv, listener (sharing
 * the port with SO_REUSEPORT when there are several) and Limiter. Returns
 * once every loop listens, or NULL with a message in err. */
HttpServer* http_server_start(const HttpServerOptions* o, char* err, size_t err_len);

unsigned http_server_port(const HttpServer* srv);
unsigned http_server_loops(const HttpServer* srv);
/* max_connections as applied: at most the descriptor limit (RLIMIT_NOFILE)
 * less room for the loops' own descriptors. */
uint32_t http_server_max_connections(const HttpServer* srv);

/* Any thread, any number of times. now == 0: drain (stop accepting, close
 * idle connections, let requests in flight finish with "Connection: close"
 * within drain_timeout_ms, then cancel the rest); now != 0: cancel every
 * connection at once. */
void http_server_shutdown(HttpServer* srv, int now);

/* 1 once every loop thread has ended (after a shutdown). */
int http_server_finished(const HttpServer* srv);

/* Waits for every loop thread; returns 0, or -1 when a loop ended with
 * something left busy (a Limiter in use). */
int http_server_join(HttpServer* srv);

void http_server_stats(HttpServer* srv, HttpStats* out);

/* After http_server_join(). */
void http_server_free(HttpServer* srv);

#endif
