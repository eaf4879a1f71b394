/* SPDX-License-Identifier: MIT */
/*
 * A TCP echo server on one loop: the shape of a small network service
 * built from AsyncSteps on the libuv backend (docs/RECIPES.md walks
 * through it).
 *
 *   tcp_echo_server [-p PORT] [-i IDLE_MS] [-d DRAIN_MS] [-c CONNS] [-q QUEUE]
 *
 *   -p PORT      listen on 127.0.0.1:PORT (default 7007; 0: any free port)
 *   -i IDLE_MS   close a connection that sends nothing for this long
 *                (default 10000)
 *   -d DRAIN_MS  after SIGINT or SIGTERM, close the connections still open
 *                this long after (default 10000)
 *   -c CONNS     connections served at once (default 64): a Limiter
 *   -q QUEUE     connections waiting for one of those slots (default 64);
 *                beyond, a connection is closed at once
 *
 * Every line prints on stdout: "listening on 127.0.0.1:PORT" first (for
 * scripts that pass port 0), "draining" on the signal, "stopped: ..." with
 * the counts at the end.
 *
 * The pieces:
 *   - the acceptor: one root running futoin_uv_serve(), which hands each
 *     new connection to on_connection();
 *   - one root per connection: admission through the Limiter, then an echo
 *     loop of read-some and write, each under the idle timeout; the
 *     session's error handler tells the ends apart by futoin_uv_errno()
 *     (the peer closed: UV_EOF; a reset; a Timeout: idle);
 *   - the signal root: futoin_uv_signal_wait() for SIGINT or SIGTERM, then
 *     the drain: stop accepting, let the connections end (the peer closes,
 *     or the idle timeout does), close the rest after DRAIN_MS.
 * futoin_uv_run() returns once nothing is left: no listener, no
 * connection, no signal wait, no timer. Everything is freed, and the
 * program exits 0.
 *
 * A second SIGINT during the drain ends the process at once: the signal
 * step has ended, and with no watcher of the signal left libuv restores its
 * default action (futoin_uv_signal_wait()).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/sync.h>
#include <futoin/uv.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Conn Conn;

typedef struct Server {
    FutoInUv* uv;
    FutoInUvServer* listener;
    FutoInSync* limiter;
    FutoInAsyncSteps* acceptor;
    FutoInAsyncSteps* signals;
    Conn* conns; /* every connection root still alive */
    unsigned idle_ms;
    unsigned drain_ms;
    unsigned conns_max;
    unsigned queue_max;
    int draining;
    int acceptor_done;
    int finished; /* the signal root was cancelled: the run can end */
    /* Counts for the last line. */
    unsigned long accepted, rejected, peer_closed, idle_closed, errors, cut_at_deadline;
} Server;

struct Conn {
    Server* srv;
    FutoInUvStream* s; /* our reference */
    FutoInAsyncSteps* root;
    Conn* prev;
    Conn* next;
};

static void finish_if_done(Server* srv);

/* ------------------------------------------------------------------------ */
/* One connection                                                            */

/* Called from a callback of c->root or from outside any: freeing a root
 * inside its own callback is safe (it is released when the callback
 * returns), and the stream goes with our reference. */
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
    futoin_asyncsteps_free(c->root);
    futoin_uv_stream_release(c->s);
    free(c);
    finish_if_done(srv);
}

static void echo_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Conn* c = data;
    size_t len = 0;
    const char* bytes = futoin_uv_arg_bytes(args, 0, &len);
    /* A peer that stops reading must not hold the connection forever. */
    futoin_set_timeout(as, c->srv->idle_ms);
    futoin_uv_write(as, c->s, bytes, len); /* copied: args go after this step */
}

static void echo_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    futoin_set_timeout(as, c->srv->idle_ms); /* the idle timeout */
    futoin_uv_read_some(as, c->s, 64 * 1024);
}

static void echo_iteration(FutoInAsyncSteps* as, void* data)
{
    futoin_add(as, echo_read, NULL, data);
    futoin_add(as, echo_write, NULL, data);
}

/* The critical section of the Limiter: the connection holds one of its
 * slots while it echoes. */
static void conn_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, echo_iteration, data, NULL);
}

static void conn_session(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Conn* c = data;
    futoin_add_sync(as, c->srv->limiter, conn_section, NULL, c);
}

/* How the session ended; every end is a normal one for an echo server. */
static void conn_session_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    Server* srv = c->srv;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        ++srv->idle_closed;
    } else if (strcmp(code, FUTOIN_DEFENSE_REJECTED) == 0) {
        ++srv->rejected; /* the Limiter's queue was full */
    } else {
        switch (futoin_uv_errno(as)) {
        case UV_EOF:        /* the peer closed its side */
        case UV_ECONNRESET: /* or reset the connection */
        case UV_EPIPE:
            ++srv->peer_closed;
            break;
        default:
            ++srv->errors;
            fprintf(stderr, "tcp_echo_server: %s: %s %s\n", futoin_uv_stream_peer(c->s), code,
                    futoin_error_info(as));
            break;
        }
    }
    futoin_success(as);
}

static void conn_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    conn_free(data);
}

/* Nothing of the session raises an error past its handler; this is for
 * completeness (and would free the connection all the same). */
static void conn_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Conn* c = data;
    ++c->srv->errors;
    fprintf(stderr, "tcp_echo_server: connection: %s %s\n", code, futoin_error_info(as));
    conn_free(c);
}

/* The acceptor hands over each new connection (s is borrowed). */
static void on_connection(void* data, FutoInUvStream* s)
{
    Server* srv = data;
    Conn* c = calloc(1, sizeof(*c));
    FutoInAsyncSteps* root = c ? futoin_asyncsteps_new(futoin_uv_loop(srv->uv)) : NULL;
    if (!root) {
        free(c);
        ++srv->errors;
        return; /* the connection closes with the accept step's value */
    }
    ++srv->accepted;
    c->srv = srv;
    c->s = futoin_uv_stream_ref(s);
    c->root = root;
    c->next = srv->conns;
    if (srv->conns) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    futoin_add(root, conn_session, conn_session_eh, c);
    futoin_add(root, conn_done, NULL, c);
    futoin_execute(root, conn_unhandled, c);
}

/* ------------------------------------------------------------------------ */
/* Accepting                                                                 */

static void acceptor_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Server* srv = data;
    /* The signal root's wait has started before this step (main()):
     * from this line on, SIGINT and SIGTERM drain. */
    printf("tcp_echo_server: listening on 127.0.0.1:%u (idle %u ms, drain %u ms, %u at once, "
           "%u waiting)\n",
            futoin_uv_server_port(srv->listener), srv->idle_ms, srv->drain_ms, srv->conns_max,
            srv->queue_max);
    fflush(stdout);
    futoin_uv_serve(as, srv->listener, on_connection, srv);
}

/* The serve step ends only with an error: "ECANCELED: accept: server
 * closed" when the drain closes the listener. */
static void acceptor_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Server* srv = data;
    if (!srv->draining) {
        fprintf(stderr, "tcp_echo_server: accept loop failed: %s %s\n", code,
                futoin_error_info(as));
        ++srv->errors;
    }
    srv->acceptor_done = 1;
    finish_if_done(srv);
}

/* ------------------------------------------------------------------------ */
/* Signals and the drain                                                     */

/* The drain is over when the acceptor and the last connection are gone:
 * the signal root may still wait for the drain deadline, which must not
 * keep the loop (and the process) alive any longer. */
static void finish_if_done(Server* srv)
{
    if (srv->draining && srv->acceptor_done && !srv->conns && !srv->finished) {
        srv->finished = 1;
        futoin_cancel(srv->signals); /* also from inside its own step */
    }
}

static void drain_deadline(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Server* srv = data;
    while (srv->conns) {
        ++srv->cut_at_deadline;
        conn_free(srv->conns); /* cancels its root, closes its stream */
    }
}

static void drain_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Server* srv = data;
    int sig = futoin_arg_i32(args, 0, 0);
    srv->draining = 1;
    /* Stop accepting: the port is closed at once (new connections are
     * refused), the serve step fails with ECANCELED and the acceptor root
     * ends. */
    futoin_uv_server_close(srv->listener);
    unsigned long open = 0;
    for (const Conn* c = srv->conns; c; c = c->next) {
        ++open;
    }
    printf("tcp_echo_server: %s: draining, %lu connection%s open\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", open, open == 1 ? "" : "s");
    fflush(stdout);
    /* The connections go on until their peer closes or their idle timeout;
     * whatever is left at the deadline is closed. */
    futoin_uv_sleep(as, srv->drain_ms);
    futoin_add(as, drain_deadline, NULL, srv);
}

static void signals_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Server* srv = data;
    fprintf(stderr, "tcp_echo_server: signal wait failed: %s %s\n", code, futoin_error_info(as));
    ++srv->errors;
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */

static int parse_uint(const char* s, unsigned long max, unsigned* out)
{
    if (!s || *s < '0' || *s > '9') {
        return -1;
    }
    char* end = NULL;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max) {
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: tcp_echo_server [-p PORT] [-i IDLE_MS] [-d DRAIN_MS] [-c CONNS] "
            "[-q QUEUE]\n");
    return 2;
}

int main(int argc, char** argv)
{
    unsigned port = 7007;
    Server srv;
    memset(&srv, 0, sizeof(srv));
    srv.idle_ms = 10000;
    srv.drain_ms = 10000;
    srv.conns_max = 64;
    srv.queue_max = 64;
    for (int i = 1; i < argc; i += 2) {
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(argv[i], "-p") == 0) {
            bad = parse_uint(v, 65535, &port);
        } else if (strcmp(argv[i], "-i") == 0) {
            bad = parse_uint(v, UINT32_MAX, &srv.idle_ms);
        } else if (strcmp(argv[i], "-d") == 0) {
            bad = parse_uint(v, UINT32_MAX, &srv.drain_ms);
        } else if (strcmp(argv[i], "-c") == 0) {
            bad = parse_uint(v, UINT32_MAX, &srv.conns_max) || srv.conns_max == 0;
        } else if (strcmp(argv[i], "-q") == 0) {
            bad = parse_uint(v, UINT32_MAX, &srv.queue_max);
        } else {
            bad = 1;
        }
        if (bad) {
            return usage();
        }
    }
    /* A peer that resets its connection must cost an EPIPE, not the
     * process: libuv writes with plain write(). */
    signal(SIGPIPE, SIG_IGN);

    srv.uv = futoin_uv_new(NULL);
    if (!srv.uv) {
        fprintf(stderr, "tcp_echo_server: out of memory\n");
        return 1;
    }
    FutoInLoop* loop = futoin_uv_loop(srv.uv);
    int err = 0;
    srv.listener = futoin_uv_server_new(srv.uv, "127.0.0.1", port, 0, &err);
    if (!srv.listener) {
        fprintf(stderr, "tcp_echo_server: listen 127.0.0.1:%u: %s\n", port, uv_strerror(err));
        futoin_uv_free(srv.uv);
        return 1;
    }
    /* CONNS sessions at once, QUEUE more waiting; the rate stage is left
     * wide open (a million entries a second). */
    FutoInLimiterOptions lo;
    futoin_limiter_options_init(&lo);
    lo.concurrent = srv.conns_max;
    lo.max_queue = srv.queue_max;
    lo.rate = 1000000;
    lo.period_ms = 1000;
    srv.limiter = futoin_limiter_new(loop, &lo);
    srv.acceptor = futoin_asyncsteps_new(loop);
    srv.signals = futoin_asyncsteps_new(loop);
    if (!srv.limiter || !srv.acceptor || !srv.signals) {
        fprintf(stderr, "tcp_echo_server: out of memory\n");
        return 1;
    }
    /* The signal root first: roots take turns in the order they are
     * executed, so its wait has started (libuv catches SIGINT and SIGTERM)
     * before the acceptor's first step says that we listen. Until then a
     * SIGINT still has its default action. */
    static const int stop[] = { SIGINT, SIGTERM };
    futoin_uv_signal_wait(srv.signals, stop, 2);
    futoin_add(srv.signals, drain_start, NULL, &srv);
    futoin_execute(srv.signals, signals_unhandled, &srv);
    futoin_add(srv.acceptor, acceptor_start, NULL, &srv);
    futoin_execute(srv.acceptor, acceptor_unhandled, &srv);

    futoin_uv_run(srv.uv); /* until the drain is over */

    int rc = srv.conns ? 1 : 0; /* cannot happen: the run ends with them */
    futoin_asyncsteps_free(srv.acceptor);
    futoin_asyncsteps_free(srv.signals);
    futoin_uv_server_release(srv.listener);
    if (futoin_sync_free(srv.limiter) != FUTOIN_SYNC_OK) {
        rc = 1;
    }
    futoin_uv_free(srv.uv);
    printf("tcp_echo_server: stopped: accepted %lu, rejected %lu, closed by peer %lu, idle %lu, "
           "cut at the deadline %lu, errors %lu\n",
            srv.accepted, srv.rejected, srv.peer_closed, srv.idle_closed, srv.cut_at_deadline,
            srv.errors);
    return rc;
}
