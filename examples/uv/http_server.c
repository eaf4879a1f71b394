/* SPDX-License-Identifier: MIT */
/*
 * A hardened HTTP/1.1 server built from AsyncSteps on the libuv backend:
 * one loop thread per core, one root per connection, strict framing, a
 * timeout for every wait, a Limiter around request handling, an input
 * budget, a connection limit and a graceful drain on SIGINT/SIGTERM.
 *
 *   http_server [options] [port]        (http_server -h lists the options)
 *
 * Listens on 127.0.0.1:port (default 8080; 0: any free port, printed at
 * start). GET / answers "Hello from AsyncSteps\n", GET /stats prints the
 * server's and the engine's counters, GET /sleep?ms=N answers after N ms
 * inside the Limiter (a stand-in for a handler that waits for a backend),
 * POST / counts the body; with --debug-pages, GET /debug/flows dumps the
 * live flows of the loop that answers.
 * The server itself is examples/uv/http_srv.c; docs/HTTP-SERVER.md
 * documents every option and limit.
 *
 * Signals: the first SIGINT or SIGTERM drains (stop accepting, close idle
 * connections, let requests in flight finish within --drain-timeout, then
 * cancel the rest); a second one cancels everything at once. The program
 * exits 0 once every loop has ended cleanly.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "http_srv.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char** argv)
{
    HttpServerOptions o;
    http_server_options_init(&o);
    int rc = http_server_parse_args(&o, argc, argv, stdout, stderr);
    if (rc != 0) {
        return rc > 0 ? 0 : 2;
    }
    /* A peer that resets its connection must cost us an EPIPE, not the
     * process: libuv writes with plain write(). */
    signal(SIGPIPE, SIG_IGN);
    /* The loop threads inherit this mask: signals wait for sigtimedwait()
     * below, on this thread. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    char err[256];
    HttpServer* srv = http_server_start(&o, err, sizeof(err));
    if (!srv) {
        fprintf(stderr, "http_server: %s\n", err);
        return 1;
    }
    const char* host = o.host && *o.host ? o.host : "127.0.0.1";
    int v6 = strchr(host, ':') != NULL;
    printf("http_server: listening on %s://%s%s%s:%u/ (%u loop%s, limiter %s)\n",
            o.tls_cert ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "",
            http_server_port(srv), http_server_loops(srv), http_server_loops(srv) == 1 ? "" : "s",
            o.use_limiter ? "on" : "off");
    printf("http_server: timeouts idle %u read %u write %u drain %u ms; max %u requests per "
           "connection, %u connections; line %zu, head %zu, body %llu bytes; input budget %zu\n",
            o.idle_timeout_ms, o.read_timeout_ms, o.write_timeout_ms, o.drain_timeout_ms,
            o.max_requests, http_server_max_connections(srv), o.limits.max_line, o.limits.max_head,
            (unsigned long long)o.limits.max_body, o.input_budget);
    if (o.use_limiter) {
        printf("http_server: limiter concurrent=%u max_queue=%u rate=%u/%ums burst=%u\n",
                o.limiter.concurrent, o.limiter.max_queue, o.limiter.rate, o.limiter.period_ms,
                o.limiter.burst);
    }
    fflush(stdout);

    int signals = 0;
    while (!http_server_finished(srv)) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig <= 0) {
            continue;
        }
        ++signals;
        HttpStats st;
        http_server_stats(srv, &st);
        fprintf(stderr, "http_server: signal %d, %s (%lu connections open)\n", sig,
                signals == 1 ? "draining" : "cancelling everything", st.active);
        http_server_shutdown(srv, signals > 1);
    }
    rc = http_server_join(srv) == 0 ? 0 : 1;
    if (rc) {
        fprintf(stderr, "http_server: a limiter was still busy at exit\n");
    }
    HttpStats st;
    http_server_stats(srv, &st);
    http_server_free(srv);
    printf("http_server: stopped: accepted %lu, requests %lu, ok %lu, rejected %lu, "
           "timeouts %lu, errors %lu\n",
            st.accepted, st.requests, st.ok, st.rejected,
            st.idle_closed + st.read_timeouts + st.write_timeouts, st.errors);
    return rc;
}
