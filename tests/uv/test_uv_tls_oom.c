/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in TLS streams (docs/TLS.md "Memory"): a program whose
 * server and client, on one loop, handshake over loopback (TLS 1.3, the
 * client verifying the server's certificate and name) and exchange a line
 * both ways, run once per allocation point with that allocation failed
 * once and from on (tests/oom_sweep.h), OpenSSL's own allocations
 * included: fault_alloc.c interposes malloc() for the whole process.
 *
 * The TLS configurations are made before the sweep (in the parent: the
 * forked runs inherit them), so the runs sweep what a connection costs.
 * A handshake makes thousands of allocations, most of them OpenSSL's:
 * every one of the first SWEEP_ALL points is failed, then one point in
 * every stride, so that about SWEEP_STRIDED more are (the whole sweep
 * would take minutes). Every run must end in one of the outcomes of
 * docs/SEMANTICS.md "Memory", or, for a failure inside OpenSSL that it
 * does not report as an allocation failure, in CommError "EPROTO: ..."
 * with OpenSSL's reason; never a stall or a crash.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#define OOM_TIME_LIMIT 20
#include "oom_sweep.h"

#include "oom_pair.h"

#include <futoin/uv.h>

#include "tls_tsupport.h"

#define SWEEP_ALL 64ul
#define SWEEP_STRIDED 150ul

static FutoInUvTls* g_srv_tls;
static FutoInUvTls* g_cli_tls;

typedef struct {
    OomPair p; /* first: oom_pair_run() */
    int echo_ok;
    int line_ok;
} TlsRun;

/* ---- the server: accept, handshake, read a line, answer, close ---- */

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((TlsRun*)data)->p.srv);
}

static void srv_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    TlsRun* r = data;
    r->p.server.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_tls_handshake(as, r->p.server.s, g_srv_tls, NULL);
}

static void srv_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, ((TlsRun*)data)->p.server.s, 0);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    TlsRun* r = data;
    r->line_ok = strcmp(futoin_arg_cstr(args, 0, ""), "hello") == 0;
    futoin_uv_write(as, r->p.server.s, "echo:hello\n", 11);
    futoin_uv_close(as, r->p.server.s, 1);
    r->p.server.s = NULL;
}

static void srv_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((TlsRun*)data)->p.server.finished = 1;
}

static void srv_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    TlsRun* r = data;
    oom_pair_failed(&r->p, &r->p.server, as, code);
}

/* ---- the client: connect, handshake, send a line, read the answer ---- */

static void cl_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((TlsRun*)data)->p.port);
}

static void cl_handshake(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    TlsRun* r = data;
    r->p.client.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_tls_handshake(as, r->p.client.s, g_cli_tls, "localhost");
}

static void cl_chat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    TlsRun* r = data;
    futoin_uv_write(as, r->p.client.s, "hello\n", 6);
    futoin_uv_read_line(as, r->p.client.s, 0);
}

static void cl_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    TlsRun* r = data;
    r->echo_ok = strcmp(futoin_arg_cstr(args, 0, ""), "echo:hello") == 0;
    futoin_uv_close(as, r->p.client.s, 1);
    r->p.client.s = NULL;
}

static void cl_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    TlsRun* r = data;
    r->p.client.finished = 1;
    futoin_uv_server_close(r->p.srv);
}

static void cl_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    TlsRun* r = data;
    oom_pair_failed(&r->p, &r->p.client, as, code);
}

/* A failure inside OpenSSL that it reported with another reason. */
static int side_tls_failed(const OomSide* s)
{
    return s->unhandled && strcmp(s->code, FUTOIN_COMM_ERROR) == 0
            && strncmp(s->info, "EPROTO: ", 8) == 0;
}

static OomResult tls_outcome(const void* run, char* why, size_t size)
{
    const TlsRun* r = run;
    const OomSide* c = &r->p.client;
    const OomSide* s = &r->p.server;
    if (!oom_pair_ended(&r->p, why, size)) {
        return OOM_BAD;
    }
    if (c->finished && s->finished) {
        if (!r->echo_ok || !r->line_ok) {
            oom_bad(why, size, "success with values missing (echo %d, line %d)", r->echo_ok,
                    r->line_ok);
            return OOM_BAD;
        }
        return OOM_COMPLETED;
    }
    if (oom_side_oom(c) || oom_side_oom(s) || side_tls_failed(c) || side_tls_failed(s)) {
        return OOM_STEP_ERROR;
    }
    return oom_pair_bad(&r->p, "out-of-memory or TLS error", why, size);
}

static OomResult tls_program(char* why, size_t size)
{
    static const FutoInAsyncSteps_execute_callback server[] = { srv_accept, srv_handshake, srv_read,
        srv_answer, srv_done, NULL };
    static const FutoInAsyncSteps_execute_callback client[] = { cl_connect, cl_handshake, cl_chat,
        cl_close, cl_done, NULL };
    static const OomPairProgram prog = { oom_pair_tcp_server, NULL, server, client, srv_unhandled,
        cl_unhandled, tls_outcome };
    static TlsRun r;
    memset(&r, 0, sizeof(r));
    return oom_pair_run(&prog, &r, why, size);
}

static void test_oom_tls(void** state)
{
    (void)state;
    OomTally t;
    memset(&t, 0, sizeof(t));
    unsigned long counted = 0;
    unsigned long injected = 0;
    int ok = oom_run("tls", tls_program, OOM_ALLOW_LIBUV_ABORT, FAULT_OFF, 0, &t, &counted,
            &injected);
    assert_true(ok);
    unsigned long clean = counted;
    assert_true(clean > SWEEP_ALL);
    unsigned long stride = (clean - SWEEP_ALL) / SWEEP_STRIDED + 1;
    unsigned long points = 0;
    for (unsigned long n = 1; n <= clean; n += n < SWEEP_ALL ? 1 : stride) {
        oom_run("tls", tls_program, OOM_ALLOW_LIBUV_ABORT, FAULT_ONCE, n, &t, &counted, &injected);
        oom_run("tls", tls_program, OOM_ALLOW_LIBUV_ABORT, FAULT_FROM, n, &t, &counted, &injected);
        ++points;
    }
    print_message("tls: %lu of %lu allocation points (the first %lu, then every %lu-th), %lu "
                  "runs: %lu completed, %lu reported to the caller, %lu step errors, %lu aborted "
                  "with the message, %lu aborted by libuv, %lu failed\n",
            points, clean, SWEEP_ALL, stride, t.runs, t.completed, t.reported, t.step_errors,
            t.aborts, t.libuv_aborts, t.failures);
    assert_int_equal(t.failures, 0);
}

static int setup(void** state)
{
    if (make_certs(state) != 0) {
        return -1;
    }
    int err = 0;
    g_srv_tls = futoin_uv_tls_new(FUTOIN_UV_TLS_SERVER, &err);
    g_cli_tls = futoin_uv_tls_new(0, &err);
    if (!g_srv_tls || !g_cli_tls || futoin_uv_tls_set_cert(g_srv_tls, g_srv_crt, g_srv_key) != 0
            || futoin_uv_tls_set_ca(g_cli_tls, g_ca) != 0) {
        return -1;
    }
    return 0;
}

static int teardown(void** state)
{
    futoin_uv_tls_release(g_srv_tls);
    futoin_uv_tls_release(g_cli_tls);
    return remove_certs(state);
}

int main(void)
{
    oom_require_fault_injection();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_tls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
