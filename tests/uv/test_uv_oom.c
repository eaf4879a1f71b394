/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in the libuv backend (docs/SEMANTICS.md "Memory"): every
 * allocation point of a program that connects to a server of its own on
 * loopback, exchanges a line both ways and reads a file is failed once and
 * from on (tests/oom_sweep.h), the allocations of libuv itself included;
 * then the same for the local kinds: a line over a Unix domain socket and
 * a datagram between two UDP sockets.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "oom_sweep.h"

#include <futoin/uv.h>

static const char file_text[] = "file contents\n";
static char file_path[64];
static char sock_path[64];

typedef struct {
    FutoInUvStream* s;
    int finished;
    int unhandled;
    char code[64];
    char info[160];
} Side;

typedef struct {
    FutoInUvServer* srv;
    unsigned port;
    Side client;
    Side server;
    int line_ok;
    int file_ok; /* the local program: the datagram and its sender */
    int echo_ok;
    FutoInUvUdp* ua; /* the local program's UDP sockets: a sends to b */
    FutoInUvUdp* ub;
} UvRun;

static void side_failed(Side* side, FutoInAsyncSteps* as, const char* code)
{
    side->unhandled = 1;
    snprintf(side->code, sizeof(side->code), "%s", code);
    snprintf(side->info, sizeof(side->info), "%s", futoin_error_info(as));
}

/* ---- the server: accept, read a line, answer it, close ---- */

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((UvRun*)data)->srv);
}

static void srv_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->server.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_read_line(as, r->server.s, 0);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    char buf[80];
    int n = snprintf(buf, sizeof(buf), "echo:%s\n", futoin_arg_cstr(args, 0, "?"));
    futoin_uv_write(as, r->server.s, buf, (size_t)n);
    futoin_uv_close(as, r->server.s, 1);
    r->server.s = NULL;
}

static void srv_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((UvRun*)data)->server.finished = 1;
}

static void srv_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    UvRun* r = data;
    side_failed(&r->server, as, code);
    /* The client must not wait for an answer that will not come: a
     * connection still in the backlog is reset, an accepted one closed. */
    futoin_uv_server_close(r->srv);
    futoin_uv_stream_close(r->server.s);
}

/* ---- the client: connect, send a line, read the answer, read a file ---- */

static void cl_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((UvRun*)data)->port);
}

static void cl_chat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->client.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_write(as, r->client.s, "hello\n", 6);
    futoin_uv_read_line(as, r->client.s, 0);
}

static void cl_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->echo_ok = strcmp(futoin_arg_cstr(args, 0, ""), "echo:hello") == 0;
    futoin_uv_file_read(as, file_path, 0);
}

static void cl_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->file_ok = b && len == sizeof(file_text) - 1 && memcmp(b, file_text, len) == 0;
    futoin_uv_close(as, r->client.s, 1);
    r->client.s = NULL;
}

static void cl_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    UvRun* r = data;
    r->client.finished = 1;
    futoin_uv_server_close(r->srv);
}

static void cl_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    UvRun* r = data;
    side_failed(&r->client, as, code);
    /* An accept or a read still pending on the server would keep the
     * loop alive. */
    futoin_uv_server_close(r->srv);
    futoin_uv_stream_close(r->client.s);
}

static int side_oom(const Side* s)
{
    return s->unhandled && strcmp(s->code, FUTOIN_INTERNAL_ERROR) == 0 && oom_info_ok(s->info);
}

/* A side's outcome, when the other side may have failed first: an error
 * is then allowed as long as the side ended. */
static OomResult uv_outcome(const UvRun* r, char* why, size_t size)
{
    const Side* c = &r->client;
    const Side* s = &r->server;
    if (!(c->finished || c->unhandled) || !(s->finished || s->unhandled)) {
        oom_bad(why, size, "a root never completed (client %d/%d, server %d/%d)", c->finished,
                c->unhandled, s->finished, s->unhandled);
        return OOM_BAD;
    }
    if (c->finished && s->finished) {
        if (!r->echo_ok || !r->file_ok) {
            oom_bad(why, size, "success with values missing (echo %d, file %d)", r->echo_ok,
                    r->file_ok);
            return OOM_BAD;
        }
        return OOM_COMPLETED;
    }
    if (side_oom(c) || side_oom(s)) {
        return OOM_STEP_ERROR;
    }
    const Side* f = c->unhandled ? c : s;
    oom_bad(why, size, "%s failed with %s \"%s\" and no out-of-memory error",
            f == c ? "client" : "server", f->code, f->info);
    return OOM_BAD;
}

static OomResult uv_program(char* why, size_t size)
{
    static UvRun r;
    memset(&r, 0, sizeof(r));
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return OOM_REPORTED;
    }
    int err = 0;
    r.srv = futoin_uv_server_new(uv, "127.0.0.1", 0, 0, &err);
    if (!r.srv) {
        futoin_uv_free(uv);
        if (err == UV_ENOMEM) {
            return OOM_REPORTED;
        }
        oom_bad(why, size, "futoin_uv_server_new: %s", uv_err_name(err));
        return OOM_BAD;
    }
    r.port = futoin_uv_server_port(r.srv);
    FutoInLoop* loop = futoin_uv_loop(uv);
    FutoInAsyncSteps* server = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* client = server ? futoin_asyncsteps_new(loop) : NULL;
    OomResult res = OOM_REPORTED;
    if (client) {
        futoin_add(server, srv_accept, NULL, &r);
        futoin_add(server, srv_read, NULL, &r);
        futoin_add(server, srv_answer, NULL, &r);
        futoin_add(server, srv_done, NULL, &r);
        futoin_execute(server, srv_unhandled, &r);
        futoin_add(client, cl_connect, NULL, &r);
        futoin_add(client, cl_chat, NULL, &r);
        futoin_add(client, cl_file, NULL, &r);
        futoin_add(client, cl_close, NULL, &r);
        futoin_add(client, cl_done, NULL, &r);
        futoin_execute(client, cl_unhandled, &r);
        futoin_uv_run(uv);
        res = uv_outcome(&r, why, size);
    }
    if (client) {
        futoin_asyncsteps_free(client);
    }
    if (server) {
        futoin_asyncsteps_free(server);
    }
    futoin_uv_stream_release(r.client.s);
    futoin_uv_stream_release(r.server.s);
    futoin_uv_server_release(r.srv);
    futoin_uv_free(uv);
    return res;
}

/* ---- the local program: the same chat over a Unix socket, then a
 * datagram from one UDP socket to another ---- */

static void lc_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_pipe_connect(as, sock_path);
}

static void lc_udp_send(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->echo_ok = strcmp(futoin_arg_cstr(args, 0, ""), "echo:hello") == 0;
    futoin_uv_udp_send(as, r->ua, "127.0.0.1", futoin_uv_udp_port(r->ub), "ping", 4);
}

static void lc_udp_recv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_udp_recv(as, ((UvRun*)data)->ub, 0);
}

static void lc_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->file_ok = b && len == 4 && memcmp(b, "ping", 4) == 0
            && strcmp(futoin_arg_cstr(args, 1, ""), "127.0.0.1") == 0
            && futoin_arg_int(args, 2, -1) == (int64_t)futoin_uv_udp_port(r->ua);
    futoin_uv_close(as, r->client.s, 1);
    r->client.s = NULL;
}

static OomResult local_program(char* why, size_t size)
{
    static UvRun r;
    memset(&r, 0, sizeof(r));
    /* A run that aborted left its socket file: the path is the program's. */
    unlink(sock_path);
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return OOM_REPORTED;
    }
    int err = 0;
    OomResult res = OOM_REPORTED;
    r.srv = futoin_uv_pipe_server_new(uv, sock_path, 0, &err);
    r.ua = r.srv ? futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err) : NULL;
    r.ub = r.ua ? futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err) : NULL;
    if (!r.ub) {
        if (err != UV_ENOMEM) {
            oom_bad(why, size, "making the sockets: %s", uv_err_name(err));
            res = OOM_BAD;
        }
        futoin_uv_udp_release(r.ua);
        futoin_uv_server_release(r.srv);
        futoin_uv_free(uv);
        return res;
    }
    FutoInLoop* loop = futoin_uv_loop(uv);
    FutoInAsyncSteps* server = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* client = server ? futoin_asyncsteps_new(loop) : NULL;
    if (client) {
        futoin_add(server, srv_accept, NULL, &r);
        futoin_add(server, srv_read, NULL, &r);
        futoin_add(server, srv_answer, NULL, &r);
        futoin_add(server, srv_done, NULL, &r);
        futoin_execute(server, srv_unhandled, &r);
        futoin_add(client, lc_connect, NULL, &r);
        futoin_add(client, cl_chat, NULL, &r);
        futoin_add(client, lc_udp_send, NULL, &r);
        futoin_add(client, lc_udp_recv, NULL, &r);
        futoin_add(client, lc_close, NULL, &r);
        futoin_add(client, cl_done, NULL, &r);
        futoin_execute(client, cl_unhandled, &r);
        /* A UDP socket with no receive waiting does not keep the loop
         * alive: a failed root leaves none behind. */
        futoin_uv_run(uv);
        res = uv_outcome(&r, why, size);
    }
    futoin_uv_udp_release(r.ua);
    futoin_uv_udp_release(r.ub);
    if (client) {
        futoin_asyncsteps_free(client);
    }
    if (server) {
        futoin_asyncsteps_free(server);
    }
    futoin_uv_stream_release(r.client.s);
    futoin_uv_stream_release(r.server.s);
    futoin_uv_server_release(r.srv);
    futoin_uv_free(uv);
    return res;
}

static void test_oom_uv_local(void** state)
{
    (void)state;
    oom_sweep_ex("uv local", local_program, OOM_ALLOW_LIBUV_ABORT);
}

static void test_oom_uv(void** state)
{
    (void)state;
    oom_sweep_ex("uv", uv_program, OOM_ALLOW_LIBUV_ABORT);
}

int main(void)
{
    oom_require_fault_injection();
    /* As futoin/uv.h asks of every program: a peer that a failed run
     * closed must not kill the writer. */
    signal(SIGPIPE, SIG_IGN);
    snprintf(file_path, sizeof(file_path), "/tmp/futoin-oom-%ld.txt", (long)getpid());
    snprintf(sock_path, sizeof(sock_path), "/tmp/futoin-oom-%ld.sock", (long)getpid());
    FILE* f = fopen(file_path, "w");
    if (!f || fputs(file_text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", file_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_uv),
        cmocka_unit_test(test_oom_uv_local),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(file_path);
    unlink(sock_path);
    return rc;
}
