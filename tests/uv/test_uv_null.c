/* SPDX-License-Identifier: MIT */
/*
 * NULL arguments: a NULL stream, server, host or path given to a
 * step function must not crash when the step runs; the added step fails
 * with InternalError "EINVAL: <function>: <parameter> is NULL" and the flow
 * can recover. The plain functions return their documented value for NULL.
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

typedef struct Case Case;
typedef void (*CaseCall)(FutoInAsyncSteps* as, Case* c);

struct Case {
    CaseCall call; /* the call with a NULL argument, made inside a step */
    int eh_calls;
    char code[64];
    char info[256];
    int recover;   /* the handler recovers with a valid step */
    int recovered; /* the step after the failing one ran */
    int done;      /* the step after the call ran */
};

static void c_call(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Case* c = data;
    c->call(as, c);
}

static void c_call_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Case* c = data;
    ++c->eh_calls;
    snprintf(c->code, sizeof(c->code), "%s", code);
    snprintf(c->info, sizeof(c->info), "%s", futoin_error_info(as));
    if (c->recover) {
        /* A valid step: the flow goes on. */
        futoin_uv_sleep(as, 1);
    }
}

static void c_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Case*)data)->done = 1;
}

/* Runs c->call in a root of its own; the failing step's error reaches the
 * handler of the calling step with expect_info. Without recovery it
 * escapes (the step after it does not run); with recovery the flow ends
 * normally. */
static void run_case(CaseCall call, int recover, const char* expect_info)
{
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call;
    c.recover = recover;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_call, c_call_eh, &c);
    futoin_add(root, c_done, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    futoin_asyncsteps_free(root);
    run_for(5);
    assert_int_equal(c.eh_calls, 1);
    assert_string_equal(c.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(c.info, expect_info);
    if (recover) {
        assert_string_equal(o.code, "");
        assert_int_equal(c.done, 1);
    } else {
        assert_string_equal(o.code, FUTOIN_INTERNAL_ERROR);
        assert_string_equal(o.info, expect_info);
        assert_int_equal(c.done, 0);
    }
    assert_int_equal(g_misuse, 0);
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */

static void call_read_line(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_read_line(as, NULL, 0);
}

static void call_read_until(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_read_until(as, NULL, "\r\n", 0);
}

static void call_read_exact(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_read_exact(as, NULL, 4);
}

static void call_read_some(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_read_some(as, NULL, 0);
}

static void call_write(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_write(as, NULL, "x", 1);
}

static void call_write_static(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_write_static(as, NULL, "x", 1);
}

static void call_close(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_close(as, NULL, 1);
}

static void call_close_abrupt(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_close(as, NULL, 0);
}

static void test_null_stream_reads(void** state)
{
    (void)state;
    run_case(call_read_line, 0, "EINVAL: futoin_uv_read_line: s is NULL");
    run_case(call_read_until, 0, "EINVAL: futoin_uv_read_until: s is NULL");
    run_case(call_read_exact, 0, "EINVAL: futoin_uv_read_exact: s is NULL");
    run_case(call_read_some, 1, "EINVAL: futoin_uv_read_some: s is NULL");
}

static void test_null_stream_writes(void** state)
{
    (void)state;
    run_case(call_write, 0, "EINVAL: futoin_uv_write: s is NULL");
    run_case(call_write_static, 1, "EINVAL: futoin_uv_write_static: s is NULL");
}

static void test_null_stream_close(void** state)
{
    (void)state;
    run_case(call_close, 0, "EINVAL: futoin_uv_close: s is NULL");
    run_case(call_close_abrupt, 1, "EINVAL: futoin_uv_close: s is NULL");
}

/* ------------------------------------------------------------------------ */
/* Servers                                                                   */

static void call_accept(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_accept(as, NULL);
}

static void ignore_connection(void* data, FutoInUvStream* s)
{
    (void)data;
    (void)s;
}

static void call_serve(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_serve(as, NULL, ignore_connection, NULL);
}

static void test_null_server_steps(void** state)
{
    (void)state;
    run_case(call_accept, 0, "EINVAL: futoin_uv_accept: srv is NULL");
    run_case(call_serve, 0, "EINVAL: futoin_uv_serve: srv is NULL");
    run_case(call_serve, 1, "EINVAL: futoin_uv_serve: srv is NULL");
}

/* ------------------------------------------------------------------------ */
/* Hosts and paths                                                           */

static void call_connect(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_tcp_connect(as, NULL, 80);
}

static void call_resolve(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_resolve(as, NULL);
}

static void call_file_read(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_file_read(as, NULL, 0);
}

static void call_file_write(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_file_write(as, NULL, "x", 1, 0);
}

static void test_null_host(void** state)
{
    (void)state;
    /* Was an attempt to connect to / resolve "" (ConnectError). */
    run_case(call_connect, 0, "EINVAL: futoin_uv_tcp_connect: host is NULL");
    run_case(call_resolve, 0, "EINVAL: futoin_uv_resolve: host is NULL");
}

static void test_null_path(void** state)
{
    (void)state;
    /* Was an attempt to open "" (CommError ENOENT). */
    run_case(call_file_read, 0, "EINVAL: futoin_uv_file_read: path is NULL");
    run_case(call_file_write, 1, "EINVAL: futoin_uv_file_write: path is NULL");
}

/* ------------------------------------------------------------------------ */
/* Plain functions                                                           */

static void test_null_plain_functions(void** state)
{
    (void)state;
    assert_null(futoin_uv_stream_ref(NULL));
    futoin_uv_stream_release(NULL);
    futoin_uv_stream_close(NULL);
    assert_null(futoin_uv_stream_handle(NULL));
    assert_int_equal(futoin_uv_stream_buffered(NULL), 0);
    assert_int_equal(futoin_uv_stream_is_open(NULL), 0);

    assert_null(futoin_uv_server_ref(NULL));
    futoin_uv_server_release(NULL);
    futoin_uv_server_close(NULL);
    assert_int_equal(futoin_uv_server_port(NULL), 0);

    int err = 0;
    assert_null(futoin_uv_server_new(NULL, "127.0.0.1", 0, 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_server_new(NULL, "127.0.0.1", 0, 0, NULL));

    assert_null(futoin_uv_loop(NULL));
    assert_null(futoin_uv_uv_loop(NULL));
    assert_int_equal(futoin_uv_run(NULL), UV_EINVAL);
    assert_null(futoin_uv_of_loop(NULL));
    assert_null(futoin_uv_of(NULL));
    futoin_uv_free(NULL);

    assert_null(futoin_uv_arg_stream(NULL, 0));
    assert_null(futoin_uv_arg_server(NULL, 0));
    size_t len = 7;
    assert_null(futoin_uv_arg_bytes(NULL, 0, &len));
    assert_int_equal(len, 0);

    /* Steps on no AsyncSteps at all add nothing and do not crash. */
    futoin_uv_read_line(NULL, NULL, 0);
    futoin_uv_write(NULL, NULL, "x", 1);
    futoin_uv_close(NULL, NULL, 0);
    futoin_uv_accept(NULL, NULL);
    futoin_uv_serve(NULL, NULL, NULL, NULL);
    futoin_uv_tcp_connect(NULL, NULL, 80);
    futoin_uv_tcp_listen(NULL, NULL, 0, 0);
    futoin_uv_resolve(NULL, NULL);
    futoin_uv_file_read(NULL, NULL, 0);
    futoin_uv_file_write(NULL, NULL, NULL, 0, 0);
    futoin_uv_sleep(NULL, 1);
}

/* A NULL host of a server means 127.0.0.1 (documented; not a misuse). */
static void test_server_new_null_host(void** state)
{
    (void)state;
    int err = -1;
    FutoInUvServer* srv = futoin_uv_server_new(g_uv, NULL, 0, 0, &err);
    assert_non_null(srv);
    assert_int_equal(err, 0);
    unsigned port = futoin_uv_server_port(srv);
    assert_true(port > 0);
    int fd = client_connect(port);
    assert_true(fd >= 0);
    close(fd);
    futoin_uv_server_release(srv);
    run_for(10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_null_stream_reads),
        UV_TEST(test_null_stream_writes),
        UV_TEST(test_null_stream_close),
        UV_TEST(test_null_server_steps),
        UV_TEST(test_null_host),
        UV_TEST(test_null_path),
        UV_TEST(test_null_plain_functions),
        UV_TEST(test_server_new_null_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
