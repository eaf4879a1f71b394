/* SPDX-License-Identifier: MIT */
/*
 * The error_info of line and delimited reads that reach their limit:
 * uv.h documents "ENOBUFS: read: line longer than N bytes" (N =
 * max_len, or its 64 KiB default) and "ENOBUFS: read: delimiter not found
 * within N bytes"; a line that fits exactly, terminator included, is read.
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

static Peer g_peer;

/* What the peer sends before it waits for EOF (set by each test). */
static const char* g_send;
static size_t g_send_len;

static void script_send(Peer* p, int fd)
{
    size_t off = 0;
    while (off < g_send_len) {
        ssize_t n = send(fd, g_send + off, g_send_len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    recv_to_eof(p, fd);
}

typedef struct Flow Flow;
typedef void (*FlowRead)(FutoInAsyncSteps* as, Flow* f);

struct Flow {
    FutoInUvStream* s;
    FlowRead first;  /* a read that must succeed (or NULL) */
    FlowRead second; /* the read that must reach its limit */
    char first_got[64];
    int second_ok; /* the second read succeeded (must not) */
};

static void f_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", g_peer.port);
}

static void f_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Flow* f = data;
    f->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    if (f->first) {
        f->first(as, f);
    }
}

static void f_second(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Flow* f = data;
    snprintf(f->first_got, sizeof(f->first_got), "%s", futoin_arg_cstr(args, 0, "(none)"));
    f->second(as, f);
}

static void f_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Flow*)data)->second_ok = 1;
}

/* Runs the flow against a peer sending data; returns the outcome. */
static void run_flow(Flow* f, const char* data, size_t len, Outcome* o)
{
    g_send = data;
    g_send_len = len;
    peer_start(&g_peer, script_send, 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, f_connect, NULL, f);
    futoin_add(root, f_take, NULL, f);
    futoin_add(root, f_second, NULL, f);
    futoin_add(root, f_after, NULL, f);
    run_root(root, o, 5000);
    futoin_uv_stream_release(f->s);
    f->s = NULL;
    futoin_asyncsteps_free(root);
    run_for(5);
    peer_join(&g_peer);
    assert_int_equal(g_misuse, 0);
}

static void read_line_10(FutoInAsyncSteps* as, Flow* f)
{
    futoin_uv_read_line(as, f->s, 10);
}

static void read_line_8(FutoInAsyncSteps* as, Flow* f)
{
    futoin_uv_read_line(as, f->s, 8);
}

static void read_line_default(FutoInAsyncSteps* as, Flow* f)
{
    futoin_uv_read_line(as, f->s, 0);
}

static void read_head_16(FutoInAsyncSteps* as, Flow* f)
{
    futoin_uv_read_until(as, f->s, "\r\n\r\n", 16);
}

static void test_line_longer_than_max_len(void** state)
{
    (void)state;
    /* 10 bytes with "\n" fit max_len 10; the next line does not fit 8. */
    static const char data[] = "abcdefghi\n0123456789abcdefghij\n";
    Flow f;
    memset(&f, 0, sizeof(f));
    f.first = read_line_10;
    f.second = read_line_8;
    Outcome o;
    run_flow(&f, data, sizeof(data) - 1, &o);
    assert_string_equal(f.first_got, "abcdefghi");
    assert_int_equal(f.second_ok, 0);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ENOBUFS: read: line longer than 8 bytes");
}

static void test_line_terminator_beyond_max_len(void** state)
{
    (void)state;
    /* "abcdefg\r\n" is 9 bytes: one more than max_len 8, although the line
     * without its terminator would fit. */
    static const char data[] = "abcdefg\r\n";
    Flow f;
    memset(&f, 0, sizeof(f));
    f.second = read_line_8;
    Outcome o;
    run_flow(&f, data, sizeof(data) - 1, &o);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ENOBUFS: read: line longer than 8 bytes");
}

static void test_line_longer_than_default(void** state)
{
    (void)state;
    size_t len = 70000;
    char* data = malloc(len);
    assert_non_null(data);
    memset(data, 'a', len);
    Flow f;
    memset(&f, 0, sizeof(f));
    f.second = read_line_default;
    Outcome o;
    run_flow(&f, data, len, &o);
    free(data);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ENOBUFS: read: line longer than 65536 bytes");
}

static void test_delimiter_not_found_within_max_len(void** state)
{
    (void)state;
    static const char data[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    Flow f;
    memset(&f, 0, sizeof(f));
    f.second = read_head_16;
    Outcome o;
    run_flow(&f, data, sizeof(data) - 1, &o);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ENOBUFS: read: delimiter not found within 16 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_line_longer_than_max_len),
        UV_TEST(test_line_terminator_beyond_max_len),
        UV_TEST(test_line_longer_than_default),
        UV_TEST(test_delimiter_not_found_within_max_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
