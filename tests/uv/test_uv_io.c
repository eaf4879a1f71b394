/* SPDX-License-Identifier: MIT */
/* The libuv I/O steps against real peers (blocking sockets in a thread,
 * real files in a temporary directory). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

#include <fcntl.h>
#include <sys/stat.h>

static Peer g_peer;

typedef struct Client {
    FutoInUvStream* s;
    FutoInAsyncSteps* root;
    uint64_t t0;
    size_t big_len;
    char* big;
} Client;

static void take_stream(FutoInAsyncSteps* as, Client* c, const FutoInArgs* args)
{
    (void)as;
    FutoInUvStream* s = futoin_uv_arg_stream(args, 0);
    assert_non_null(s);
    c->s = futoin_uv_stream_ref(s);
}

static void step_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", g_peer.port);
}

static void step_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    take_stream(as, data, args);
    tr("connected");
}

/* ------------------------------------------------------------------------ */
/* connect, read line / exact / some, write, graceful close                  */

static void script_chat(Peer* p, int fd)
{
    send_str(fd, "hello\r\n");
    sleep_ms(20);
    send_str(fd, "wor");
    sleep_ms(20);
    send_str(fd, "ld\nABCDEFGHIJtail");
    if (recv_until(p, fd, "ping\n") != 0) {
        p->status = 1;
        return;
    }
    send_str(fd, "pong\n");
    recv_to_eof(p, fd);
}

static void chat_connected(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    take_stream(as, c, args);
    tr("connected");
    futoin_uv_read_line(as, c->s, 0);
}

static void chat_line1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    assert_int_equal(futoin_arg_type(args, 0), FTN_TYPE_STRING);
    tr("line:%s", futoin_arg_cstr(args, 0, "?"));
    futoin_uv_read_line(as, c->s, 0);
}

static void chat_line2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    tr("line:%s", futoin_arg_cstr(args, 0, "?"));
    futoin_uv_read_exact(as, c->s, 10);
}

static void chat_exact(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    assert_int_equal(futoin_arg_type(args, 0), FTN_TYPE_UINT8 | FTN_TYPE_ARRAY);
    assert_int_equal(len, 10);
    tr("exact:%.*s", (int)len, b);
    futoin_uv_read_some(as, c->s, 100);
}

static void chat_some(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    tr("some:%.*s", (int)len, b);
    futoin_uv_write(as, c->s, "ping\n", 5);
    futoin_uv_read_line(as, c->s, 0);
}

static void chat_reply(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    tr("reply:%s", futoin_arg_cstr(args, 0, "?"));
    /* The close step takes over our reference. */
    futoin_uv_close(as, c->s, 1);
    c->s = NULL;
}

static void chat_closed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("closed");
}

static void test_connect_read_write_close(void** state)
{
    (void)state;
    peer_start(&g_peer, script_chat, 1);
    Client c = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, chat_connected, NULL, &c);
    futoin_add(root, chat_line1, NULL, &c);
    futoin_add(root, chat_line2, NULL, &c);
    futoin_add(root, chat_exact, NULL, &c);
    futoin_add(root, chat_some, NULL, &c);
    futoin_add(root, chat_reply, NULL, &c);
    futoin_add(root, chat_closed, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_trace("connected|line:hello|line:world|exact:ABCDEFGHIJ|some:tail|reply:pong|closed");
    peer_join(&g_peer);
    assert_int_equal(g_peer.status, 0);
    assert_string_equal(g_peer.got, "ping\n");
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

/* ------------------------------------------------------------------------ */
/* connect errors and name resolution                                        */

static void step_connect_closed_port(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", *(unsigned*)data);
}

static void test_connect_refused(void** state)
{
    (void)state;
    unsigned port = closed_port();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect_closed_port, NULL, &port);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, FUTOIN_CONNECT_ERROR);
    assert_non_null(strstr(o.info, "ECONNREFUSED"));
    char expect[64];
    snprintf(expect, sizeof(expect), "ECONNREFUSED: connect 127.0.0.1:%u", port);
    assert_string_equal(o.info, expect);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

static void script_idle_to_eof(Peer* p, int fd)
{
    recv_to_eof(p, fd);
}

static void step_connect_localhost(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, "localhost", g_peer.port);
}

static void step_close_client(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_close(as, c->s, 0);
    c->s = NULL;
}

/* "localhost" may resolve to ::1 first while the peer listens on IPv4 only:
 * each address is tried in turn. */
static void test_connect_by_name(void** state)
{
    (void)state;
    peer_start(&g_peer, script_idle_to_eof, 1);
    Client c = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect_localhost, NULL, &c);
    futoin_add(root, step_take, NULL, &c);
    futoin_add(root, step_close_client, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_trace("connected");
    peer_join(&g_peer);
    futoin_asyncsteps_free(root);
}

static void step_resolve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_resolve(as, (const char*)data);
}

static void step_check_resolved(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    const char* first = futoin_arg_cstr(args, 0, "?");
    tr("first:%s", first);
    assert_true(strcmp(first, "127.0.0.1") == 0 || strcmp(first, "::1") == 0);
    assert_true(futoin_arg_int(args, 1, 0) >= 1);
    const char* all = futoin_arg_cstr(args, 2, "");
    assert_non_null(strstr(all, first));
}

static void test_resolve_localhost(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_resolve, NULL, (void*)"localhost");
    futoin_add(root, step_check_resolved, NULL, NULL);
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, "");
    futoin_asyncsteps_free(root);
}

static void test_resolve_failure(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_resolve, NULL, (void*)"");
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, FUTOIN_CONNECT_ERROR);
    /* An empty name is rejected before any lookup. */
    assert_true(strncmp(o.info, "EINVAL: getaddrinfo", 19) == 0);
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */
/* files                                                                     */

typedef struct FileCtx {
    char dir[64];
    char path[128];
    char missing[128];
} FileCtx;

static void f_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FileCtx* f = data;
    futoin_uv_file_write(as, f->path, "hello file\n", 11, 0);
}

static void f_written(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileCtx* f = data;
    assert_int_equal(futoin_arg_type(args, 0), FTN_TYPE_UINT64);
    tr("wrote:%d", (int)futoin_arg_int(args, 0, -1));
    futoin_uv_file_write(as, f->path, "more", 4, 1);
    futoin_uv_file_read(as, f->path, 0);
}

static void f_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileCtx* f = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    assert_non_null(b);
    assert_int_equal(len, 15);
    assert_int_equal(b[len], '\0');
    tr("read:%s", b);
    (void)f;
    (void)as;
}

static void f_too_big_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void f_read_too_big(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileCtx* f = data;
    (void)args;
    futoin_uv_file_read(as, f->path, 3);
}

static void f_read_missing(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FileCtx* f = data;
    futoin_uv_file_read(as, f->missing, 0);
}

static void test_file_write_read(void** state)
{
    (void)state;
    FileCtx f;
    snprintf(f.dir, sizeof(f.dir), "/tmp/futoin_uv_XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    snprintf(f.path, sizeof(f.path), "%s/a.txt", f.dir);
    snprintf(f.missing, sizeof(f.missing), "%s/missing.txt", f.dir);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, f_write, NULL, &f);
    futoin_add(root, f_written, NULL, &f);
    futoin_add(root, f_read, NULL, &f);
    futoin_add(root, f_read_too_big, f_too_big_eh, &f);
    futoin_add(root, f_read_missing, NULL, &f);
    Outcome o;
    run_root(root, &o, 5000);
    unlink(f.path);
    rmdir(f.dir);
    char expect[512];
    snprintf(expect, sizeof(expect),
            "wrote:11|read:hello file\nmore|CommError:EFBIG: read %s|unhandled:CommError", f.path);
    assert_trace(expect);
    snprintf(expect, sizeof(expect), "ENOENT: open %s", f.missing);
    assert_string_equal(o.info, expect);
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */
/* sleep, timeouts, cancellation                                             */

static void step_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, (uint32_t)(uintptr_t)data);
}

static void test_sleep(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_sleep, NULL, (void*)(uintptr_t)50);
    uint64_t t0 = mono_ms();
    Outcome o;
    run_root(root, &o, 5000);
    uint64_t dt = mono_ms() - t0;
    assert_string_equal(o.code, "");
    assert_true(dt >= 50);
    assert_true(dt < futoin_test_ms(1000));
    futoin_asyncsteps_free(root);
}

static void read_with_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    c->t0 = mono_ms();
    futoin_set_timeout(as, 50);
    futoin_uv_read_line(as, c->s, 0);
}

static void test_read_timeout(void** state)
{
    (void)state;
    peer_start(&g_peer, script_idle_to_eof, 1);
    Client c = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, step_take, NULL, &c);
    futoin_add(root, read_with_timeout, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    uint64_t dt = mono_ms() - c.t0;
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    assert_true(dt >= 50);
    assert_true(dt < futoin_test_ms(1000));
    /* Nothing of the read may show up afterwards. */
    run_for(30);
    assert_trace("connected|unhandled:Timeout");
    assert_int_equal(g_misuse, 0);
    futoin_uv_stream_release(c.s);
    peer_join(&g_peer);
    futoin_asyncsteps_free(root);
}

/* The line comes when the test opens the gate, after its cancel. */
static void script_late_line(Peer* p, int fd)
{
    peer_wait_gate(p);
    send_str(fd, "late\n");
    recv_to_eof(p, fd);
}

static int g_reading; /* set once read_forever() has started its read */

static void read_forever(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_read_line(as, c->s, 0);
    g_reading = 1;
}

static void late_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("late step ran");
}

static void got_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("got:%s", futoin_arg_cstr(args, 0, "?"));
}

static void cancel_root_cb(uv_timer_t* t)
{
    Client* c = t->data;
    tr("cancel");
    futoin_cancel(c->root);
}

static void test_cancel_mid_read(void** state)
{
    (void)state;
    peer_start(&g_peer, script_late_line, 1);
    Client c = { 0 };
    c.root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(c.root, step_connect, NULL, &c);
    futoin_add(c.root, step_take, NULL, &c);
    futoin_add(c.root, read_forever, NULL, &c);
    futoin_add(c.root, late_step, NULL, &c);
    Outcome o;
    memset(&o, 0, sizeof(o));
    g_reading = 0;
    futoin_execute(c.root, outcome_error, &o);
    assert_true(run_until(&g_reading, 5000));
    /* The cancel comes from a libuv callback, as an I/O event's would. */
    uv_timer_t t;
    uv_timer_init(futoin_uv_uv_loop(g_uv), &t);
    t.data = &c;
    uv_timer_start(&t, cancel_root_cb, 0, 0);
    run_for(10);
    /* The peer's line arrives after the cancel: it must reach nobody. */
    peer_open_gate(&g_peer);
    run_for(100);
    uv_close((uv_handle_t*)&t, NULL);
    assert_trace("connected|cancel");
    assert_int_equal(o.done, 0);
    assert_int_equal(g_misuse, 0);
    /* The stream stays usable: the line is still there for a new reader. */
    FutoInAsyncSteps* again = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(again, read_forever, NULL, &c);
    futoin_add(again, got_line, NULL, &c);
    run_root(again, &o, 5000);
    assert_trace("connected|cancel|got:late");
    futoin_uv_stream_release(c.s);
    peer_join(&g_peer);
    futoin_asyncsteps_free(again);
    futoin_asyncsteps_free(c.root);
}

/* Every kind of pending operation, cancelled while in flight: nothing of
 * the flow runs afterwards, libuv winds its requests down, and teardown
 * finds no handle left open (ASan/valgrind check the memory). File reads
 * cancelled while libuv's pool runs or queues them take the "cannot be
 * withdrawn, detach" path (test_uv_files.c: FIFOs never block the pool). */
static int g_cancelled;

static void after_op(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    if (g_cancelled) {
        tr("%s ran after cancel", (const char*)data);
    }
}

static void branch_resolve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_resolve(as, "localhost");
    futoin_add(as, after_op, NULL, "resolve");
}

static void branch_tmp_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_file_read(as, (const char*)data, 0);
    futoin_add(as, after_op, NULL, "tmp file read");
}

static void branch_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_file_read(as, "/proc/self/status", 0);
    futoin_add(as, after_op, NULL, "file read");
}

static void branch_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_sleep(as, 1000);
    futoin_add(as, after_op, NULL, "sleep");
}

static void branch_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_connect(as, (const char*)data, g_peer.port);
    futoin_add(as, after_op, NULL, "connect");
}

static void branch_cancel_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Client* c = data;
    tr("cancel");
    g_cancelled = 1;
    futoin_cancel(c->root);
}

typedef struct CancelCase {
    Client* c;
    const char* tmp_file;
    int inline_cancel;
} CancelCase;

static void start_branches(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    CancelCase* cc = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_resolve, NULL, NULL);
    futoin_add(p, branch_tmp_file, NULL, (void*)cc->tmp_file);
    futoin_add(p, branch_file, NULL, NULL);
    futoin_add(p, branch_sleep, NULL, NULL);
    futoin_add(p, branch_connect, NULL, (void*)"127.0.0.1");
    futoin_add(p, branch_connect, NULL, (void*)"localhost");
    if (cc->inline_cancel) {
        /* Branches start in order: every operation above is in flight. */
        futoin_add(p, branch_cancel_root, NULL, cc->c);
    }
}

static void cancel_by_timer(uv_timer_t* t)
{
    g_cancelled = 1;
    cancel_root_cb(t);
}

static void test_cancel_every_kind(void** state)
{
    (void)state;
    peer_start(&g_peer, script_idle_to_eof, 1);
    char dir[64];
    char tmp_file[96];
    snprintf(dir, sizeof(dir), "/tmp/futoin_uv_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(tmp_file, sizeof(tmp_file), "%s/data", dir);
    FILE* fp = fopen(tmp_file, "w");
    assert_non_null(fp);
    for (int i = 0; i < 4096; ++i) {
        fputs("0123456789abcdef", fp);
    }
    fclose(fp);
    for (int round = 0; round < 3; ++round) {
        Client c = { 0 };
        CancelCase cc = { &c, tmp_file, round == 0 };
        g_cancelled = 0;
        c.root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
        futoin_add(c.root, start_branches, NULL, &cc);
        futoin_add(c.root, after_op, NULL, "root");
        Outcome o;
        memset(&o, 0, sizeof(o));
        futoin_execute(c.root, outcome_error, &o);
        uv_timer_t t;
        uv_timer_init(futoin_uv_uv_loop(g_uv), &t);
        t.data = &c;
        if (round > 0) {
            uv_timer_start(&t, cancel_by_timer, (uint64_t)(round * 2 - 1), 0);
        }
        /* The cancel, then a while in which nothing of the flow may run. */
        assert_true(run_until(&g_cancelled, 5000));
        run_for(30);
        assert_int_equal(g_cancelled, 1);
        /* Detached requests close their files and free themselves. */
        run_for(30);
        uv_close((uv_handle_t*)&t, NULL);
        /* t is reused on the next round: let libuv finish closing it. */
        uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_NOWAIT);
        futoin_asyncsteps_free(c.root);
        assert_int_equal(o.done, 0);
    }
    assert_trace("cancel|cancel|cancel");
    assert_int_equal(g_misuse, 0);
    unlink(tmp_file);
    rmdir(dir);
    /* Release the peer if no connection reached it. */
    int fd = client_connect(g_peer.port);
    if (fd >= 0) {
        close(fd);
    }
    peer_join(&g_peer);
}

/* ------------------------------------------------------------------------ */
/* big writes: uv_write behind uv_try_write; a stuck write times out         */

/* Counts the bytes until EOF; any byte other than 'z' is an error (the
 * client overwrites its buffer right after adding the write step). */
static void script_count_z(Peer* p, int fd)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
            return;
        }
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] != 'z') {
                p->status = 2;
            }
        }
        p->total += (size_t)n;
    }
}

static void big_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    take_stream(as, c, args);
    futoin_uv_write(as, c->s, c->big, c->big_len);
    /* The step copied the data: the caller's buffer may change now. */
    memset(c->big, 'y', c->big_len);
    futoin_uv_close(as, c->s, 1);
    c->s = NULL;
}

static void test_large_write(void** state)
{
    (void)state;
    peer_start(&g_peer, script_count_z, 1);
    Client c = { 0 };
    c.big_len = 8u << 20;
    c.big = malloc(c.big_len);
    assert_non_null(c.big);
    memset(c.big, 'z', c.big_len);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, big_write, NULL, &c);
    Outcome o;
    run_root(root, &o, 10000);
    free(c.big);
    assert_string_equal(o.code, "");
    peer_join(&g_peer);
    assert_int_equal(g_peer.total, 8u << 20);
    assert_int_equal(g_peer.status, 0);
    futoin_asyncsteps_free(root);
}

static void script_never_read(Peer* p, int fd)
{
    (void)fd;
    /* Reads nothing, and keeps the connection open, until the test has
     * seen the client's timeout: a close would end the write with an
     * error before the timeout on a slow machine. */
    peer_wait_gate(p);
}

/* The socket buffers on both sides hold only a little of the write, so
 * that it cannot complete whatever the system's buffer limits. */
enum { SMALL_SOCKET_BUFFER = 64 << 10, STUCK_WRITE_LEN = 4 << 20 };

static void stuck_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    int sndbuf = SMALL_SOCKET_BUFFER;
    assert_int_equal(uv_send_buffer_size((uv_handle_t*)futoin_uv_stream_handle(c->s), &sndbuf), 0);
    futoin_set_timeout(as, 100);
    futoin_uv_write(as, c->s, c->big, c->big_len);
}

static void test_write_timeout(void** state)
{
    (void)state;
    peer_start(&g_peer, script_never_read, 1);
    /* Accepted connections take the listener's receive buffer. */
    int rcvbuf = SMALL_SOCKET_BUFFER;
    assert_int_equal(setsockopt(g_peer.lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    Client c = { 0 };
    c.big_len = STUCK_WRITE_LEN;
    c.big = calloc(1, c.big_len);
    assert_non_null(c.big);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, step_take, NULL, &c);
    futoin_add(root, stuck_write, NULL, &c);
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    free(c.big);
    /* Closing cancels the detached uv_write (libuv calls it back with
     * ECANCELED, which only frees the request). */
    futoin_uv_stream_release(c.s);
    run_for(20);
    assert_int_equal(g_misuse, 0);
    peer_join(&g_peer);
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */
/* end of stream, read limits                                                */

static void script_partial_then_close(Peer* p, int fd)
{
    (void)p;
    send_str(fd, "partial");
}

static void eof_read_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_read_line(as, c->s, 0);
}

static void eof_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void eof_read_some(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_read_some(as, c->s, 0);
}

static void eof_got_some(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    tr("some:%.*s", (int)len, b);
    futoin_uv_read_some(as, c->s, 0);
}

static void test_eof(void** state)
{
    (void)state;
    peer_start(&g_peer, script_partial_then_close, 1);
    Client c = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, step_take, NULL, &c);
    futoin_add(root, eof_read_line, eof_eh, &c);
    futoin_add(root, eof_read_some, NULL, &c);
    futoin_add(root, eof_got_some, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    assert_trace("connected|CommError:EOF: read: connection closed by peer|some:partial|"
                 "unhandled:CommError");
    assert_string_equal(o.info, "EOF: read: connection closed by peer");
    futoin_uv_stream_release(c.s);
    peer_join(&g_peer);
    futoin_asyncsteps_free(root);
}

static void script_long_line(Peer* p, int fd)
{
    send_str(fd, "0123456789abcdefghij\n");
    recv_to_eof(p, fd);
}

static void read_until_limited(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_read_until(as, c->s, "\r\n\r\n", 8);
}

static void test_read_limit(void** state)
{
    (void)state;
    peer_start(&g_peer, script_long_line, 1);
    Client c = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_connect, NULL, &c);
    futoin_add(root, step_take, NULL, &c);
    futoin_add(root, read_until_limited, NULL, &c);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_true(strncmp(o.info, "ENOBUFS: ", 9) == 0);
    futoin_uv_stream_release(c.s);
    peer_join(&g_peer);
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */
/* servers                                                                   */

typedef struct ServeCtx {
    FutoInUvServer* srv;
    FutoInUvStream* conns[8];
    int count;
    unsigned port;
    pthread_t th;
} ServeCtx;

static void on_conn(void* data, FutoInUvStream* s)
{
    ServeCtx* sc = data;
    assert_true(sc->count < 8);
    sc->conns[sc->count++] = futoin_uv_stream_ref(s);
    tr("conn%d", sc->count);
}

static void* three_clients(void* arg)
{
    ServeCtx* sc = arg;
    for (int i = 0; i < 3; ++i) {
        int fd = client_connect(sc->port);
        if (fd >= 0) {
            close(fd);
        }
    }
    return NULL;
}

static void step_serve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ServeCtx* sc = data;
    futoin_uv_serve(as, sc->srv, on_conn, sc);
}

static void test_serve(void** state)
{
    (void)state;
    ServeCtx sc;
    memset(&sc, 0, sizeof(sc));
    int err = 0;
    sc.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 16, &err);
    assert_non_null(sc.srv);
    assert_int_equal(err, 0);
    sc.port = futoin_uv_server_port(sc.srv);
    assert_true(sc.port > 0);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_serve, NULL, &sc);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_execute(root, outcome_error, &o);
    pthread_create(&sc.th, NULL, three_clients, &sc);
    int three = 0;
    for (uint64_t t0 = mono_ms(); sc.count < 3 && mono_ms() - t0 < futoin_test_ms(5000);) {
        run_for(5);
    }
    three = sc.count == 3;
    pthread_join(sc.th, NULL);
    assert_true(three);
    /* Closing the listener ends the accept loop with CommError. */
    futoin_uv_server_close(sc.srv);
    assert_true(run_until(&o.done, 1000));
    assert_string_equal(o.code, FUTOIN_COMM_ERROR);
    assert_string_equal(o.info, "ECANCELED: accept: server closed");
    assert_trace("conn1|conn2|conn3|unhandled:CommError");
    for (int i = 0; i < sc.count; ++i) {
        futoin_uv_stream_release(sc.conns[i]);
    }
    futoin_uv_server_release(sc.srv);
    futoin_asyncsteps_free(root);
    run_for(10);
}

static void* one_client_says_x(void* arg)
{
    ServeCtx* sc = arg;
    int fd = client_connect(sc->port);
    if (fd >= 0) {
        send_str(fd, "x\n");
        char b;
        while (recv(fd, &b, 1, 0) > 0) {
        }
        close(fd);
    }
    return NULL;
}

static void l_listen(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_tcp_listen(as, "127.0.0.1", 0, 8);
}

static void l_listening(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ServeCtx* sc = data;
    FutoInUvServer* srv = futoin_uv_arg_server(args, 0);
    assert_non_null(srv);
    sc->srv = futoin_uv_server_ref(srv);
    sc->port = futoin_uv_server_port(srv);
    pthread_create(&sc->th, NULL, one_client_says_x, sc);
    futoin_uv_accept(as, sc->srv);
}

static void l_accepted(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ServeCtx* sc = data;
    FutoInUvStream* s = futoin_uv_arg_stream(args, 0);
    assert_non_null(s);
    sc->conns[0] = futoin_uv_stream_ref(s);
    futoin_uv_read_line(as, s, 0);
}

static void l_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ServeCtx* sc = data;
    tr("server got:%s", futoin_arg_cstr(args, 0, "?"));
    futoin_uv_close(as, sc->conns[0], 0);
    sc->conns[0] = NULL;
}

static void test_listen_accept_steps(void** state)
{
    (void)state;
    ServeCtx sc;
    memset(&sc, 0, sizeof(sc));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, l_listen, NULL, &sc);
    futoin_add(root, l_listening, NULL, &sc);
    futoin_add(root, l_accepted, NULL, &sc);
    futoin_add(root, l_line, NULL, &sc);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_trace("server got:x");
    pthread_join(sc.th, NULL);
    futoin_uv_server_release(sc.srv);
    futoin_asyncsteps_free(root);
    run_for(10);
}

static void listen_busy_port(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_listen(as, "127.0.0.1", *(unsigned*)data, 8);
}

static void test_listen_in_use(void** state)
{
    (void)state;
    unsigned port = 0;
    int fd = listen_loopback(&port);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, listen_busy_port, NULL, &port);
    Outcome o;
    run_root(root, &o, 5000);
    close(fd);
    assert_string_equal(o.code, FUTOIN_CONNECT_ERROR);
    assert_true(strncmp(o.info, "EADDRINUSE: listen 127.0.0.1:", 29) == 0);
    futoin_asyncsteps_free(root);
    run_for(10);
}

/* ------------------------------------------------------------------------ */
/* not on a backend loop                                                     */

static void test_not_on_uv_loop(void** state)
{
    (void)state;
    FutoInLoop* plain = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(plain);
    futoin_uv_resolve(root, "localhost");
    FutoInOutcome out;
    memset(&out, 0, sizeof(out));
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_ERROR);
    assert_string_equal(out.code, FUTOIN_INTERNAL_ERROR);
    assert_non_null(strstr(out.info, "not driven by a FutoInUv"));
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(root);
    futoin_loop_free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_connect_read_write_close),
        UV_TEST(test_connect_refused),
        UV_TEST(test_connect_by_name),
        UV_TEST(test_resolve_localhost),
        UV_TEST(test_resolve_failure),
        UV_TEST(test_file_write_read),
        UV_TEST(test_sleep),
        UV_TEST(test_read_timeout),
        UV_TEST(test_cancel_mid_read),
        UV_TEST(test_cancel_every_kind),
        UV_TEST(test_large_write),
        UV_TEST(test_write_timeout),
        UV_TEST(test_eof),
        UV_TEST(test_read_limit),
        UV_TEST(test_serve),
        UV_TEST(test_listen_accept_steps),
        UV_TEST(test_listen_in_use),
        cmocka_unit_test(test_not_on_uv_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
