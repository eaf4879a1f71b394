/* SPDX-License-Identifier: MIT */
/*
 * The client and server of the libuv out-of-memory sweeps
 * (test_uv_oom.c, test_uv_tls_oom.c): two roots on one loop, a server of
 * the program's own on loopback and a client that connects to it, each
 * a list of steps that share one OomPair. oom_pair_run() makes the
 * backend, the server and the roots, runs the loop until both roots end,
 * lets the program judge the outcome, and releases everything, whatever
 * failed on the way. Include after oom_sweep.h.
 */
#ifndef FUTOIN_TEST_OOM_PAIR_H
#define FUTOIN_TEST_OOM_PAIR_H

#include <futoin/uv.h>

/* One root of the pair: its stream (a reference of its own) and how it
 * ended. */
typedef struct {
    FutoInUvStream* s;
    int finished;
    int unhandled;
    char code[64];
    char info[200];
} OomSide;

typedef struct {
    FutoInUvServer* srv;
    unsigned port;
    OomSide client;
    OomSide server;
} OomPair;

/* Records an unhandled error of a side. */
static inline void oom_side_record(OomSide* side, FutoInAsyncSteps* as, const char* code)
{
    side->unhandled = 1;
    snprintf(side->code, sizeof(side->code), "%s", code);
    snprintf(side->info, sizeof(side->info), "%s", futoin_error_info(as));
}

/* An unhandled error of a side of the pair: recorded, and its stream
 * closed, so that the other side sees the end rather than waits for it,
 * and the server, so that a connection still in the backlog is reset and
 * a pending accept does not keep the loop alive. */
static inline void oom_pair_failed(OomPair* p, OomSide* side, FutoInAsyncSteps* as,
        const char* code)
{
    oom_side_record(side, as, code);
    futoin_uv_server_close(p->srv);
    futoin_uv_stream_close(side->s);
}

/* docs/ERRORS.md: the error_info of out of memory ends in "out of memory",
 * and says it once. */
static inline int oom_text_ok(const char* info)
{
    const char* at = strstr(info, "out of memory");
    size_t len = strlen(info);
    return at && strstr(at + 1, "out of memory") == NULL && len >= 13
            && strcmp(info + len - 13, "out of memory") == 0;
}

/* The side ended with the InternalError of out of memory. */
static inline int oom_side_oom(const OomSide* s)
{
    return s->unhandled && strcmp(s->code, FUTOIN_INTERNAL_ERROR) == 0 && oom_info_ok(s->info);
}

/* 1 when both roots ended (completed or failed), else 0 with why set. */
static inline int oom_pair_ended(const OomPair* p, char* why, size_t size)
{
    const OomSide* c = &p->client;
    const OomSide* s = &p->server;
    if ((c->finished || c->unhandled) && (s->finished || s->unhandled)) {
        return 1;
    }
    oom_bad(why, size, "a root never completed (client %d/%d, server %d/%d)", c->finished,
            c->unhandled, s->finished, s->unhandled);
    return 0;
}

/* The failure of a run that ended with an error of a side that is not
 * allowed: the first side that failed, named with its code and info. */
static inline OomResult oom_pair_bad(const OomPair* p, const char* allowed, char* why, size_t size)
{
    const OomSide* f = p->client.unhandled ? &p->client : &p->server;
    oom_bad(why, size, "%s failed with %s \"%s\" and no %s", f == &p->client ? "client" : "server",
            f->code, f->info, allowed);
    return OOM_BAD;
}

/* A TCP server on a free loopback port: the make() of most programs. */
static inline int oom_pair_tcp_server(FutoInUv* uv, void* run, OomResult* res, char* why,
        size_t size)
{
    OomPair* p = run;
    int err = 0;
    p->srv = futoin_uv_server_new(uv, "127.0.0.1", 0, 0, &err);
    if (!p->srv) {
        *res = OOM_REPORTED;
        if (err != UV_ENOMEM) {
            oom_bad(why, size, "futoin_uv_server_new: %s", uv_err_name(err));
            *res = OOM_BAD;
        }
        return 0;
    }
    p->port = futoin_uv_server_port(p->srv);
    return 1;
}

typedef struct {
    /* Makes the server (p->srv) and whatever else the steps use; 0 with
     * *res set (OOM_REPORTED or OOM_BAD) when it could not, everything
     * it made released. */
    int (*make)(FutoInUv* uv, void* run, OomResult* res, char* why, size_t size);
    /* Releases what make() made besides the server (may be NULL). */
    void (*release)(void* run);
    const FutoInAsyncSteps_execute_callback* server; /* NULL-terminated */
    const FutoInAsyncSteps_execute_callback* client; /* NULL-terminated */
    FutoInAsyncSteps_error_callback server_unhandled;
    FutoInAsyncSteps_error_callback client_unhandled;
    /* Judges a run in which both roots ran (the loop is done). */
    OomResult (*outcome)(const void* run, char* why, size_t size);
} OomPairProgram;

/* Runs the program once. run starts with its OomPair, zeroed, and is what
 * every step gets as data. */
static inline OomResult oom_pair_run(const OomPairProgram* prog, void* run, char* why, size_t size)
{
    OomPair* p = run;
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return OOM_REPORTED;
    }
    OomResult res = OOM_REPORTED;
    if (!prog->make(uv, run, &res, why, size)) {
        futoin_uv_free(uv);
        return res;
    }
    FutoInLoop* loop = futoin_uv_loop(uv);
    FutoInAsyncSteps* server = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* client = server ? futoin_asyncsteps_new(loop) : NULL;
    if (client) {
        for (const FutoInAsyncSteps_execute_callback* f = prog->server; *f; ++f) {
            futoin_add(server, *f, NULL, run);
        }
        futoin_execute(server, prog->server_unhandled, run);
        for (const FutoInAsyncSteps_execute_callback* f = prog->client; *f; ++f) {
            futoin_add(client, *f, NULL, run);
        }
        futoin_execute(client, prog->client_unhandled, run);
        futoin_uv_run(uv);
        res = prog->outcome(run, why, size);
    }
    if (prog->release) {
        prog->release(run);
    }
    if (client) {
        futoin_asyncsteps_free(client);
    }
    if (server) {
        futoin_asyncsteps_free(server);
    }
    futoin_uv_stream_release(p->client.s);
    futoin_uv_stream_release(p->server.s);
    futoin_uv_server_release(p->srv);
    futoin_uv_free(uv);
    return res;
}

#endif
