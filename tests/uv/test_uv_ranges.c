/* SPDX-License-Identifier: MIT */
/*
 * Ports, sizes and backlogs out of range: the step added by the
 * I/O function fails with InternalError "EINVAL: <function>: <parameter>
 * <value> ..." before anything starts; the stream, the peer and the
 * filesystem see nothing of it, and the flow can recover with a valid call.
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

#include <limits.h>

static Peer g_peer;

/* The peer sends "hi\n", then keeps what it receives until EOF. */
static void script_hi_then_collect(Peer* p, int fd)
{
    send_str(fd, "hi\n");
    while (p->got_len < sizeof(p->got) - 1) {
        ssize_t n = recv(fd, p->got + p->got_len, sizeof(p->got) - 1 - p->got_len, 0);
        if (n <= 0) {
            break;
        }
        p->got_len += (size_t)n;
        p->got[p->got_len] = '\0';
    }
}

/* ------------------------------------------------------------------------ */
/* One flow per test: connect, run the call under test, recover            */

typedef struct Case Case;
typedef void (*CaseCall)(FutoInAsyncSteps* as, Case* c);

struct Case {
    CaseCall call; /* the out-of-range call, made inside a step */
    FutoInUvStream* s;
    int eh_calls;
    char code[64];
    char info[256];
    int recover_write; /* the handler recovers with a valid write (else a valid read) */
    char line[64];     /* what the recovery read */
    int done;
};

static void c_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", g_peer.port);
}

static void c_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Case* c = data;
    c->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
}

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
    if (!c->s) {
        return;
    }
    /* The stream is untouched: a valid call works as if nothing happened. */
    if (c->recover_write) {
        futoin_uv_write(as, c->s, "ok\n", 3);
    } else {
        futoin_uv_read_line(as, c->s, 0);
    }
}

static void c_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Case* c = data;
    snprintf(c->line, sizeof(c->line), "%s", futoin_arg_cstr(args, 0, "(none)"));
}

static void c_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Case*)data)->done = 1;
}

/* Runs c->call on a connected stream; checks the InternalError, that the
 * recovery worked, and what the peer received. */
static void run_stream_case(Case* c, const char* expect_info, const char* expect_peer)
{
    peer_start(&g_peer, script_hi_then_collect, 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, c);
    futoin_add(root, c_take, NULL, c);
    futoin_add(root, c_call, c_call_eh, c);
    futoin_add(root, c_after, NULL, c);
    Outcome o;
    run_root(root, &o, 5000);
    futoin_uv_stream_release(c->s);
    c->s = NULL;
    futoin_asyncsteps_free(root);
    run_for(10);
    peer_join(&g_peer);
    assert_string_equal(o.code, "");
    assert_int_equal(c->eh_calls, 1);
    assert_string_equal(c->code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(c->info, expect_info);
    assert_string_equal(c->line, c->recover_write ? "(none)" : "hi");
    assert_string_equal(g_peer.got, expect_peer);
    assert_int_equal(g_misuse, 0);
}

/* Runs c->call in a root of its own (no stream) and expects the error to
 * escape with expect_info; the step after it must not run. */
static void run_plain_case(Case* c, const char* expect_info)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_call, c_call_eh, c);
    futoin_add(root, c_done, NULL, c);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_execute(root, outcome_error, &o);
    assert_true(run_until(&o.done, 5000));
    futoin_asyncsteps_free(root);
    run_for(10);
    assert_int_equal(c->eh_calls, 1);
    assert_string_equal(c->code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(c->info, expect_info);
    assert_string_equal(o.code, FUTOIN_INTERNAL_ERROR);
    assert_int_equal(c->done, 0);
    assert_int_equal(g_misuse, 0);
}

#define HUGE_LEN ((size_t)UINT32_MAX + 1u)

/* ------------------------------------------------------------------------ */
/* connect                                                                   */

static void call_connect_70000(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    /* 70000 & 0xFFFF = 4464: must not be reached. */
    futoin_uv_tcp_connect(as, "127.0.0.1", 70000);
}

static void call_connect_0(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_tcp_connect(as, "127.0.0.1", 0);
}

static void test_connect_port_out_of_range(void** state)
{
    (void)state;
    /* Someone listening on 4464 must not get a connection. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(70000 & 0xFFFF);
    int listening = bind(lfd, (struct sockaddr*)&a, sizeof(a)) == 0 && listen(lfd, 4) == 0;

    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_connect_70000;
    run_plain_case(&c, "EINVAL: futoin_uv_tcp_connect: port 70000 out of range (1..65535)");

    if (listening) {
        /* No connection is pending on 4464. */
        fd_set set;
        FD_ZERO(&set);
        FD_SET(lfd, &set);
        struct timeval tv = { 0, 0 };
        assert_int_equal(select(lfd + 1, &set, NULL, NULL, &tv), 0);
    }
    close(lfd);

    memset(&c, 0, sizeof(c));
    c.call = call_connect_0;
    run_plain_case(&c, "EINVAL: futoin_uv_tcp_connect: port 0 out of range (1..65535)");
}

/* ------------------------------------------------------------------------ */
/* reads                                                                     */

static void call_read_line_huge(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_read_line(as, c->s, HUGE_LEN);
}

static void call_read_until_huge(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_read_until(as, c->s, "\n", SIZE_MAX);
}

static void call_read_exact_huge(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_read_exact(as, c->s, HUGE_LEN);
}

static void call_read_some_huge(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_read_some(as, c->s, HUGE_LEN);
}

static void test_read_line_max_len_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_read_line_huge;
    run_stream_case(&c,
            "EINVAL: futoin_uv_read_line: max_len 4294967296 out of range (0..4294967295)", "");
#else
    skip();
#endif
}

static void test_read_until_max_len_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_read_until_huge;
    char expect[160];
    snprintf(expect, sizeof(expect),
            "EINVAL: futoin_uv_read_until: max_len %zu out of range (0..4294967295)",
            (size_t)SIZE_MAX);
    run_stream_case(&c, expect, "");
#else
    skip();
#endif
}

static void test_read_exact_n_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_read_exact_huge;
    run_stream_case(&c, "EINVAL: futoin_uv_read_exact: n 4294967296 out of range (0..4294967295)",
            "");
#else
    skip();
#endif
}

static void test_read_some_max_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_read_some_huge;
    run_stream_case(&c, "EINVAL: futoin_uv_read_some: max 4294967296 out of range (0..4294967295)",
            "");
#else
    skip();
#endif
}

/* ------------------------------------------------------------------------ */
/* writes                                                                    */

static void call_write_huge(FutoInAsyncSteps* as, Case* c)
{
    static const char small[] = "x";
    /* Nothing may be copied: the buffer is only 2 bytes. */
    futoin_uv_write(as, c->s, small, HUGE_LEN);
}

static void call_write_null(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_write(as, c->s, NULL, 5);
}

static void call_write_static_huge(FutoInAsyncSteps* as, Case* c)
{
    futoin_uv_write_static(as, c->s, "x", HUGE_LEN);
}

static void test_write_len_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_write_huge;
    c.recover_write = 1;
    run_stream_case(&c, "EINVAL: futoin_uv_write: len 4294967296 out of range (0..4294967295)",
            "ok\n");
#endif
    Case n;
    memset(&n, 0, sizeof(n));
    n.call = call_write_null;
    n.recover_write = 1;
    run_stream_case(&n, "EINVAL: futoin_uv_write: NULL data with len 5", "ok\n");
}

static void test_write_static_len_out_of_range(void** state)
{
    (void)state;
#if SIZE_MAX > UINT32_MAX
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_write_static_huge;
    c.recover_write = 1;
    run_stream_case(&c,
            "EINVAL: futoin_uv_write_static: len 4294967296 out of range (0..4294967295)", "ok\n");
#else
    skip();
#endif
}

/* ------------------------------------------------------------------------ */
/* listen                                                                    */

static void call_listen_70000(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_tcp_listen(as, "127.0.0.1", 70000, 8);
}

static void call_listen_negative_backlog(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_tcp_listen(as, "127.0.0.1", 0, -1);
}

static void test_listen_port_and_backlog_out_of_range(void** state)
{
    (void)state;
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_listen_70000;
    run_plain_case(&c, "EINVAL: futoin_uv_tcp_listen: port 70000 out of range (0..65535)");
    memset(&c, 0, sizeof(c));
    c.call = call_listen_negative_backlog;
    run_plain_case(&c,
            "EINVAL: futoin_uv_tcp_listen: backlog -1 out of range (0: default, 1..INT_MAX)");
}

static void test_server_new_out_of_range(void** state)
{
    (void)state;
    int err = 0;
    FutoInUvServer* srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, -1, &err);
    if (srv) {
        futoin_uv_server_release(srv);
        run_for(10);
    }
    assert_null(srv);
    assert_int_equal(err, UV_EINVAL);
    err = 0;
    srv = futoin_uv_server_new(g_uv, "127.0.0.1", 65536, 8, &err);
    assert_null(srv);
    assert_int_equal(err, UV_EINVAL);
    /* The bounds themselves are fine. */
    srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(srv);
    assert_int_equal(err, 0);
    futoin_uv_server_release(srv);
    run_for(10);
}

/* ------------------------------------------------------------------------ */
/* files                                                                     */

static void call_file_read_huge(FutoInAsyncSteps* as, Case* c)
{
    (void)c;
    futoin_uv_file_read(as, "/dev/null", (size_t)UINT32_MAX);
}

static void call_file_write_null(FutoInAsyncSteps* as, Case* c)
{
    /* c->line holds the path here; the file must not be created. */
    futoin_uv_file_write(as, c->line, NULL, 5, 0);
}

static void test_file_read_max_bytes_out_of_range(void** state)
{
    (void)state;
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_file_read_huge;
    char expect[160];
    snprintf(expect, sizeof(expect),
            "EINVAL: futoin_uv_file_read: max_bytes 4294967295 out of range (0..%llu)",
            SIZE_MAX > UINT32_MAX ? 4294967294ull : 4294967293ull);
    run_plain_case(&c, expect);
}

static void test_file_write_null_data(void** state)
{
    (void)state;
    char dir[32];
    snprintf(dir, sizeof(dir), "/tmp/futoin_uv_XXXXXX");
    assert_non_null(mkdtemp(dir));
    Case c;
    memset(&c, 0, sizeof(c));
    c.call = call_file_write_null;
    snprintf(c.line, sizeof(c.line), "%s/f", dir);
    char path[sizeof(c.line)];
    memcpy(path, c.line, sizeof(path));
    run_plain_case(&c, "EINVAL: futoin_uv_file_write: NULL data with len 5");
    int created = unlink(path) == 0;
    rmdir(dir);
    assert_false(created);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_connect_port_out_of_range),
        UV_TEST(test_read_line_max_len_out_of_range),
        UV_TEST(test_read_until_max_len_out_of_range),
        UV_TEST(test_read_exact_n_out_of_range),
        UV_TEST(test_read_some_max_out_of_range),
        UV_TEST(test_write_len_out_of_range),
        UV_TEST(test_write_static_len_out_of_range),
        UV_TEST(test_listen_port_and_backlog_out_of_range),
        UV_TEST(test_server_new_out_of_range),
        UV_TEST(test_file_read_max_bytes_out_of_range),
        UV_TEST(test_file_write_null_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
