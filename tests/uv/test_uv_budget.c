/* SPDX-License-Identifier: MIT */
/*
 * Stream controls used by the hardened HTTP server: the input
 * budget shared by streams (charges, refusal, memory given back), the
 * read-ahead limit, futoin_uv_read_wait() and futoin_uv_stream_peek()
 * (nothing consumed), futoin_uv_shutdown() (FIN, reading goes on), large
 * exact reads, and servers sharing a port with FUTOIN_UV_SERVER_REUSEPORT.
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

static Peer g_peer;

/* ---- peer scripts ---- */

/* "hello", then (after the gate) " world", then EOF. */
static void script_hello(Peer* p, int fd)
{
    send_str(fd, "hello");
    peer_wait_gate(p);
    send_str(fd, " world");
}

/* Counts what it receives until EOF (our FIN), then answers "bye". */
static void script_count_then_bye(Peer* p, int fd)
{
    recv_to_eof(p, fd);
    send_str(fd, "bye");
}

/* Sends g_big (g_big_len bytes), then waits for EOF. */
static char* g_big;
static size_t g_big_len;

static void script_big(Peer* p, int fd)
{
    size_t off = 0;
    while (off < g_big_len) {
        ssize_t n = send(fd, g_big + off, g_big_len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    recv_to_eof(p, fd);
}

static void big_make(size_t len, int line)
{
    g_big_len = len;
    g_big = malloc(len);
    assert_non_null(g_big);
    for (size_t i = 0; i < len; ++i) {
        g_big[i] = (char)('a' + i % 23);
    }
    if (line) {
        g_big[len - 1] = '\n';
    }
}

/* ---- a flow over one connection ---- */

typedef struct Ctx {
    FutoInUvStream* s;
    FutoInUvBudget* budget;
    size_t read_ahead; /* 0: leave the default */
    char got[64];
    size_t got_len;
    size_t peeked;
    char peek[16];
    size_t buffered;
    size_t used_mid;
    int wait_ok;
    int steps;
    int bad_value;
} Ctx;

static void c_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", g_peer.port);
}

static void c_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ctx* c = data;
    c->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_stream_set_budget(c->s, c->budget);
    if (c->read_ahead) {
        futoin_uv_stream_set_read_ahead(c->s, c->read_ahead);
    }
}

/* Runs the root to its end and frees everything. */
static void run_ctx(FutoInAsyncSteps* root, Ctx* c, Outcome* o)
{
    run_root(root, o, 10000);
    futoin_uv_stream_release(c->s);
    c->s = NULL;
    futoin_asyncsteps_free(root);
    run_for(5);
    peer_join(&g_peer);
    assert_int_equal(g_misuse, 0);
}

/* ---- read_wait and peek ---- */

static void w_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_wait(as, ((Ctx*)data)->s);
}

static void w_peek_then_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Ctx* c = data;
    c->wait_ok = futoin_args_count(args) == 0;
    size_t len = 0;
    const char* p = futoin_uv_stream_peek(c->s, &len);
    c->peeked = len;
    snprintf(c->peek, sizeof(c->peek), "%.*s", (int)(len < 15 ? len : 15), p ? p : "");
    c->buffered = futoin_uv_stream_buffered(c->s);
    futoin_uv_read_exact(as, c->s, 5);
}

static void w_got_hello(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Ctx* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    snprintf(c->got, sizeof(c->got), "%.*s", (int)len, b ? b : "");
    /* Nothing buffered now: the wait must really wait for the peer. */
    c->buffered = futoin_uv_stream_buffered(c->s);
    peer_open_gate(&g_peer);
    futoin_uv_read_wait(as, c->s);
}

static void w_read_rest(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    ++c->steps;
    futoin_uv_read_exact(as, c->s, 6);
}

static void w_got_world(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Ctx* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    size_t have = strlen(c->got);
    snprintf(c->got + have, sizeof(c->got) - have, "%.*s", (int)len, b ? b : "");
    /* The peer closes with nothing more: the wait fails with EOF. */
    futoin_uv_read_wait(as, c->s);
}

static void test_read_wait_and_peek(void** state)
{
    (void)state;
    peer_start(&g_peer, script_hello, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, w_wait, NULL, &c);
    futoin_add(root, w_peek_then_read, NULL, &c);
    futoin_add(root, w_got_hello, NULL, &c);
    futoin_add(root, w_read_rest, NULL, &c);
    futoin_add(root, w_got_world, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    assert_int_equal(c.wait_ok, 1);
    assert_int_equal(c.peeked, 5);
    assert_string_equal(c.peek, "hello");
    assert_int_equal(c.buffered, 0);
    assert_int_equal(c.steps, 1);
    assert_string_equal(c.got, "hello world");
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "EOF: read: connection closed by peer");
}

static void test_peek_null(void** state)
{
    (void)state;
    size_t len = 7;
    assert_null(futoin_uv_stream_peek(NULL, &len));
    assert_int_equal(len, 0);
    assert_null(futoin_uv_stream_peek(NULL, NULL));
    futoin_uv_stream_set_read_ahead(NULL, 1);
    futoin_uv_stream_set_budget(NULL, NULL);
}

/* ---- shutdown ---- */

static void s_write_shutdown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    futoin_uv_write(as, c->s, "abc", 3);
    futoin_uv_shutdown(as, c->s);
}

static void s_read_bye(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_exact(as, ((Ctx*)data)->s, 3);
}

static void s_got_bye(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Ctx* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    snprintf(c->got, sizeof(c->got), "%.*s", (int)len, b ? b : "?");
    /* A second shutdown fails: the sending side is gone. */
    futoin_uv_shutdown(as, c->s);
}

/* futoin_uv_try_write(): what the kernel takes now, no step. */
static void t_try_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    c->steps = (int)futoin_uv_try_write(c->s, "abc", 3);
    c->used_mid = (size_t)-futoin_uv_try_write(NULL, "x", 1);
    c->buffered = (size_t)futoin_uv_try_write(c->s, NULL, 0);
    futoin_uv_shutdown(as, c->s);
}

static void t_after_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Ctx* c = data;
    futoin_uv_stream_close(c->s);
    c->got_len = (size_t)-futoin_uv_try_write(c->s, "x", 1);
}

static void test_try_write(void** state)
{
    (void)state;
    peer_start(&g_peer, script_count_then_bye, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, t_try_write, NULL, &c);
    futoin_add(root, s_read_bye, NULL, &c);
    futoin_add(root, t_after_close, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    assert_string_equal(o.code, "");
    assert_int_equal(c.steps, 3);
    assert_int_equal(g_peer.total, 3);
    assert_int_equal(c.used_mid, (size_t)-UV_EINVAL);
    assert_int_equal(c.buffered, 0);
    assert_int_equal(c.got_len, (size_t)-UV_EBADF);
}

static void test_shutdown_keeps_reading(void** state)
{
    (void)state;
    peer_start(&g_peer, script_count_then_bye, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, s_write_shutdown, NULL, &c);
    futoin_add(root, s_read_bye, NULL, &c);
    futoin_add(root, s_got_bye, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    assert_int_equal(g_peer.total, 3);
    assert_string_equal(c.got, "bye");
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_true(strstr(o.info, ": shutdown") != NULL);
}

/* ---- budget ---- */

static void b_read_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, ((Ctx*)data)->s, 1024 * 1024);
}

static void b_got_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ctx* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    c->got_len = len;
    c->bad_value = !b || memcmp(b, g_big, len) != 0;
    c->used_mid = futoin_uv_budget_used(c->budget);
}

static void test_budget_refuses_growth(void** state)
{
    (void)state;
    big_make(200 * 1024, 1);
    peer_start(&g_peer, script_big, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.budget = futoin_uv_budget_new(64 * 1024);
    assert_non_null(c.budget);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, b_read_line, NULL, &c);
    futoin_add(root, b_got_line, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    free(g_big);
    assert_int_equal(c.got_len, 0);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ENOBUFS: read: input budget spent");
    assert_true(futoin_uv_budget_refusals(c.budget) >= 1);
    /* Everything charged came back with the stream. */
    assert_int_equal(futoin_uv_budget_used(c.budget), 0);
    futoin_uv_budget_release(c.budget);
}

static void test_budget_given_back_after_read(void** state)
{
    (void)state;
    big_make(200 * 1024, 1);
    peer_start(&g_peer, script_big, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.budget = futoin_uv_budget_new(1024 * 1024);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, b_read_line, NULL, &c);
    futoin_add(root, b_got_line, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    free(g_big);
    assert_string_equal(o.code, "");
    assert_int_equal(c.got_len, 200 * 1024 - 1);
    assert_int_equal(c.bad_value, 0);
    /* The emptied buffer shrank right after the read. */
    assert_int_equal(c.used_mid, 0);
    assert_int_equal(futoin_uv_budget_refusals(c.budget), 0);
    assert_int_equal(futoin_uv_budget_used(c.budget), 0);
    futoin_uv_budget_release(c.budget);
}

/* Small inputs stay within the free bytes: a budget of 0 refuses nothing. */
static void test_budget_free_bytes(void** state)
{
    (void)state;
    peer_start(&g_peer, script_hello, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.budget = futoin_uv_budget_new(0);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, w_wait, NULL, &c);
    futoin_add(root, w_peek_then_read, NULL, &c);
    futoin_add(root, w_got_hello, NULL, &c);
    futoin_add(root, w_read_rest, NULL, &c);
    futoin_add(root, w_got_world, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    assert_string_equal(c.got, "hello world");
    assert_int_equal(futoin_uv_budget_refusals(c.budget), 0);
    assert_int_equal(futoin_uv_budget_used(c.budget), 0);
    futoin_uv_budget_release(c.budget);
}

static void test_budget_api(void** state)
{
    (void)state;
    FutoInUvBudget* b = futoin_uv_budget_new(100);
    assert_non_null(b);
    assert_int_equal(futoin_uv_budget_limit(b), 100);
    assert_int_equal(futoin_uv_budget_take(b, 60), 0);
    assert_int_equal(futoin_uv_budget_take(b, 41), -1);
    assert_int_equal(futoin_uv_budget_take(b, 40), 0);
    assert_int_equal(futoin_uv_budget_take(b, 1), -1);
    assert_int_equal(futoin_uv_budget_used(b), 100);
    assert_int_equal(futoin_uv_budget_refusals(b), 2);
    futoin_uv_budget_give(b, 100);
    assert_int_equal(futoin_uv_budget_used(b), 0);
    assert_int_equal(futoin_uv_budget_take(b, (size_t)-1), -1);
    assert_ptr_equal(futoin_uv_budget_ref(b), b);
    futoin_uv_budget_release(b);
    futoin_uv_budget_release(b);
    assert_int_equal(futoin_uv_budget_take(NULL, 1), -1);
    futoin_uv_budget_give(NULL, 1);
    assert_int_equal(futoin_uv_budget_used(NULL), 0);
    assert_int_equal(futoin_uv_budget_limit(NULL), 0);
    assert_int_equal(futoin_uv_budget_refusals(NULL), 0);
    assert_null(futoin_uv_budget_ref(NULL));
    futoin_uv_budget_release(NULL);
}

/* ---- read-ahead and a large exact read ---- */

static void r_first(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_exact(as, ((Ctx*)data)->s, 1);
}

static void r_pause(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    /* No read step waits: the stream reads ahead, up to its limit. */
    futoin_uv_sleep(as, futoin_test_ms(150));
}

static void r_rest(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    c->buffered = futoin_uv_stream_buffered(c->s);
    futoin_uv_read_exact(as, c->s, g_big_len - 1);
}

static void r_got_rest(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ctx* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    c->got_len = len;
    c->bad_value = !b || memcmp(b, g_big + 1, len) != 0 || b[len] != '\0';
}

static void test_read_ahead_limit(void** state)
{
    (void)state;
    big_make(1024 * 1024, 0);
    peer_start(&g_peer, script_big, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.read_ahead = 8192;
    c.budget = futoin_uv_budget_new(4 * 1024 * 1024);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, c_connect, NULL, &c);
    futoin_add(root, c_take, NULL, &c);
    futoin_add(root, r_first, NULL, &c);
    futoin_add(root, r_pause, NULL, &c);
    futoin_add(root, r_rest, NULL, &c);
    futoin_add(root, r_got_rest, NULL, &c);
    Outcome o;
    run_ctx(root, &c, &o);
    free(g_big);
    assert_string_equal(o.code, "");
    /* Stopped soon after the limit: one read beyond it at most. */
    assert_true(c.buffered > 0);
    assert_true(c.buffered <= 3 * 8192);
    assert_int_equal(c.got_len, 1024 * 1024 - 1);
    assert_int_equal(c.bad_value, 0);
    assert_int_equal(futoin_uv_budget_used(c.budget), 0);
    futoin_uv_budget_release(c.budget);
}

/* ---- SO_REUSEPORT ---- */

static void test_server_reuseport(void** state)
{
    (void)state;
    int err = 0;
    FutoInUvServer* a = futoin_uv_server_new_ex(g_uv, "127.0.0.1", 0, 0, FUTOIN_UV_SERVER_REUSEPORT,
            &err);
    assert_non_null(a);
    assert_int_equal(err, 0);
    unsigned port = futoin_uv_server_port(a);
    assert_true(port > 0);
    FutoInUvServer* b = futoin_uv_server_new_ex(g_uv, "127.0.0.1", port, 0,
            FUTOIN_UV_SERVER_REUSEPORT, &err);
    assert_non_null(b);
    assert_int_equal(futoin_uv_server_port(b), port);
    /* Without the flag the port is taken. */
    assert_null(futoin_uv_server_new(g_uv, "127.0.0.1", port, 0, &err));
    assert_int_equal(err, UV_EADDRINUSE);
    assert_null(futoin_uv_server_new_ex(g_uv, "127.0.0.1", 0, 0, 2u, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_server_new_ex(g_uv, "not an address", 0, 0, FUTOIN_UV_SERVER_REUSEPORT,
            &err));
    assert_int_equal(err, UV_EINVAL);
    /* Both accept: a connection lands on one of them. */
    int fd = client_connect(port);
    assert_true(fd >= 0);
    close(fd);
    futoin_uv_server_release(a);
    futoin_uv_server_release(b);
    run_for(5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_read_wait_and_peek),
        UV_TEST(test_peek_null),
        UV_TEST(test_shutdown_keeps_reading),
        UV_TEST(test_try_write),
        UV_TEST(test_budget_refuses_growth),
        UV_TEST(test_budget_given_back_after_read),
        UV_TEST(test_budget_free_bytes),
        UV_TEST(test_budget_api),
        UV_TEST(test_read_ahead_limit),
        UV_TEST(test_server_reuseport),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
