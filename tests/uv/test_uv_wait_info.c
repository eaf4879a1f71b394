/* SPDX-License-Identifier: MIT */
/*
 * Errors say what failed: when a timeout interrupts a
 * libuv operation of the backend, the Timeout's error_info names the
 * operation and its peer or object ("read 127.0.0.1:8080", "connect
 * localhost:80", "resolve localhost", "file_read /path", ...), whether the
 * timeout belongs to the I/O step's own parent or to a step further out.
 * CommError and ConnectError keep their "ENAME: ..." form. The loop dump
 * shows the same texts for the waits of UDP, Unix sockets, child processes
 * and files (test_dump_shows_local_waits).
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

#include "uv/uv_impl.h"

#include <fcntl.h>
#include <futoin/introspect.h>

static Peer g_peer;

/* Accepts, then waits (the gate) without reading or writing. */
static void script_silent(Peer* p, int fd)
{
    (void)fd;
    peer_wait_gate(p);
}

/* ---- one flow: an outer step with a timeout around an I/O step ---- */

typedef void (*IoFn)(FutoInAsyncSteps* as, void* ctx);

typedef struct Ctx {
    IoFn io;          /* adds the I/O step under test */
    uint32_t timeout; /* of the outer step */
    int nested;       /* one more plain step between the timeout and the I/O */
    FutoInUvStream* s;
    FutoInUvServer* srv;
    unsigned port;
    const char* host;
    char peer[128];
} Ctx;

static void inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    c->io(as, c);
}

static void outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    futoin_set_timeout(as, c->timeout);
    if (c->nested) {
        futoin_add(as, inner, NULL, c);
    } else {
        c->io(as, c);
    }
}

static void run_io(Ctx* c, Outcome* o)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, outer, NULL, c);
    run_root(root, o, 10000);
    futoin_asyncsteps_free(root);
    run_for(5);
}

/* Connects (a root of its own) and keeps the stream in c->s. */
static void cs_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ctx* c = data;
    futoin_uv_tcp_connect(as, c->host ? c->host : "127.0.0.1", c->port);
}

static void cs_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ctx* c = data;
    c->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    snprintf(c->peer, sizeof(c->peer), "%s", futoin_uv_stream_peer(c->s));
}

static void connect_stream(Ctx* c)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, cs_connect, NULL, c);
    futoin_add(root, cs_take, NULL, c);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_non_null(c->s);
    futoin_asyncsteps_free(root);
}

/* ---- streams ---- */

static void io_read_line(FutoInAsyncSteps* as, void* ctx)
{
    futoin_uv_read_line(as, ((Ctx*)ctx)->s, 0);
}

static void io_read_wait(FutoInAsyncSteps* as, void* ctx)
{
    futoin_uv_read_wait(as, ((Ctx*)ctx)->s);
}

static void test_read_names_the_peer(void** state)
{
    (void)state;
    peer_start(&g_peer, script_silent, 1);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.port = g_peer.port;
    connect_stream(&c);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%u", g_peer.port);
    assert_string_equal(c.peer, want);
    Outcome o;
    c.io = io_read_line;
    c.timeout = 50;
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    snprintf(want, sizeof(want), "read 127.0.0.1:%u", g_peer.port);
    assert_string_equal(o.info, want);
    /* The timeout of a step further out: the same description. */
    c.io = io_read_wait;
    c.nested = 1;
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    assert_string_equal(o.info, want);
    futoin_uv_stream_release(c.s);
    run_for(5);
    peer_join(&g_peer);
    assert_int_equal(g_misuse, 0);
}

/* Socket buffers on both sides that hold only a little of the write:
 * it cannot complete whatever the system's buffer limits. */
enum { SMALL_SOCKET_BUFFER = 64 << 10 };

static void io_write_big(FutoInAsyncSteps* as, void* ctx)
{
    static char big[4 * 1024 * 1024];
    Ctx* c = ctx;
    int sndbuf = SMALL_SOCKET_BUFFER;
    uv_send_buffer_size((uv_handle_t*)futoin_uv_stream_handle(c->s), &sndbuf);
    futoin_uv_write_static(as, c->s, big, sizeof(big));
}

static void test_write_names_the_peer(void** state)
{
    (void)state;
    peer_start(&g_peer, script_silent, 1);
    /* Accepted connections take the listener's receive buffer. */
    int rcvbuf = SMALL_SOCKET_BUFFER;
    assert_int_equal(setsockopt(g_peer.lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.port = g_peer.port;
    connect_stream(&c);
    Outcome o;
    c.io = io_write_big;
    c.timeout = 200;
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    char want[64];
    snprintf(want, sizeof(want), "write 127.0.0.1:%u", g_peer.port);
    assert_string_equal(o.info, want);
    futoin_uv_stream_release(c.s);
    run_for(5);
    peer_join(&g_peer);
}

static void io_accept(FutoInAsyncSteps* as, void* ctx)
{
    futoin_uv_accept(as, ((Ctx*)ctx)->srv);
}

static void acc_take(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ctx* c = data;
    c->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    snprintf(c->peer, sizeof(c->peer), "%s", futoin_uv_stream_peer(c->s));
}

static void acc_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((Ctx*)data)->srv);
}

/* The server side: accept names the listening address, a read on an
 * accepted stream names the client's address. */
static void test_accept_and_accepted_peer(void** state)
{
    (void)state;
    int err = 0;
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.srv = futoin_uv_server_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(c.srv);
    unsigned port = futoin_uv_server_port(c.srv);
    Outcome o;
    c.io = io_accept;
    c.timeout = 50;
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    char want[64];
    snprintf(want, sizeof(want), "accept 127.0.0.1:%u", port);
    assert_string_equal(o.info, want);

    int fd = client_connect(port);
    assert_true(fd >= 0);
    struct sockaddr_in local;
    socklen_t len = sizeof(local);
    getsockname(fd, (struct sockaddr*)&local, &len);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, acc_start, NULL, &c);
    futoin_add(root, acc_take, NULL, &c);
    run_root(root, &o, 5000);
    futoin_asyncsteps_free(root);
    snprintf(want, sizeof(want), "127.0.0.1:%u", (unsigned)ntohs(local.sin_port));
    assert_string_equal(c.peer, want);
    c.io = io_read_line;
    c.nested = 1;
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    snprintf(want, sizeof(want), "read 127.0.0.1:%u", (unsigned)ntohs(local.sin_port));
    assert_string_equal(o.info, want);
    futoin_uv_stream_release(c.s);
    futoin_uv_server_release(c.srv);
    close(fd);
    run_for(5);
    assert_string_equal(futoin_uv_stream_peer(NULL), "");
}

/* ---- connect ---- */

static void io_connect(FutoInAsyncSteps* as, void* ctx)
{
    Ctx* c = ctx;
    futoin_uv_tcp_connect(as, c->host, c->port);
}

/* A listener whose accept queue is full: the kernel drops further SYNs,
 * so a connect waits until it is given up. */
static int full_listener(unsigned* port, int* fillers, int nfill)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(lfd, 0) != 0) {
        close(lfd);
        return -1;
    }
    socklen_t len = sizeof(a);
    getsockname(lfd, (struct sockaddr*)&a, &len);
    *port = ntohs(a.sin_port);
    for (int i = 0; i < nfill; ++i) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fillers[i], (struct sockaddr*)&a, sizeof(a));
    }
    /* Time for the kernel to queue the fillers' handshakes (there is
     * nothing to wait on: the SYNs beyond the queue are dropped). */
    sleep_ms(futoin_test_ms(50));
    return lfd;
}

static void test_connect_names_the_target(void** state)
{
    (void)state;
    int fillers[4];
    unsigned port = 0;
    int lfd = full_listener(&port, fillers, 4);
    assert_true(lfd >= 0);
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.io = io_connect;
    c.timeout = 200;
    c.port = port;
    char want[64];
    Outcome o;
    c.host = "127.0.0.1";
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    snprintf(want, sizeof(want), "connect 127.0.0.1:%u", port);
    assert_string_equal(o.info, want);
    /* A name: the name as given, resolved or not yet. */
    c.host = "localhost";
    c.nested = 1;
    run_io(&c, &o);
    if (strcmp(o.code, FUTOIN_TIMEOUT) == 0) {
        snprintf(want, sizeof(want), "connect localhost:%u", port);
        assert_string_equal(o.info, want);
    } else {
        /* localhost resolved to ::1 first, where nothing listens. */
        assert_string_equal(o.code, FUTOIN_CONNECT_ERROR);
    }
    for (int i = 0; i < 4; ++i) {
        close(fillers[i]);
    }
    close(lfd);
    /* Errors keep their form. */
    c.host = "127.0.0.1";
    c.port = closed_port();
    c.nested = 0;
    c.timeout = futoin_test_ms(5000); /* must not fire */
    run_io(&c, &o);
    assert_string_equal(o.code, FUTOIN_CONNECT_ERROR);
    snprintf(want, sizeof(want), "ECONNREFUSED: connect 127.0.0.1:%u", c.port);
    assert_string_equal(o.info, want);
}

/* ---- the thread pool: resolve and files ---- */

static int g_block[2];

static void blocked_work(uv_work_t* w)
{
    (void)w;
    char ch;
    /* Until the test writes to the pipe. */
    while (read(g_block[0], &ch, 1) < 0 && errno == EINTR) {
    }
}

/* libuv's pool threads (UV_THREADPOOL_SIZE, set by main()). */
enum { POOL = 4 };

static int g_blocked_done;
static int g_all_blocked_done;

static void blocked_done(uv_work_t* w, int status)
{
    (void)status;
    (void)w;
    if (++g_blocked_done == POOL) {
        g_all_blocked_done = 1;
    }
}

static unsigned g_threads_max;

/* Lookups run on threads of their own unless too many run at once: with
 * no such thread allowed this one takes libuv's pool (the fallback). */
static void io_resolve(FutoInAsyncSteps* as, void* ctx)
{
    (void)ctx;
    g_threads_max = atomic_exchange(&futoin__uv_lookup_threads_max, 0);
    futoin_uv_resolve(as, "localhost");
}

static void io_file_read(FutoInAsyncSteps* as, void* ctx)
{
    (void)ctx;
    futoin_uv_file_read(as, "/etc/hostname", 0);
}

static void io_file_write(FutoInAsyncSteps* as, void* ctx)
{
    (void)ctx;
    futoin_uv_file_write(as, "/tmp/futoin_wait_info_test", "x", 1, 0);
}

static void io_sleep(FutoInAsyncSteps* as, void* ctx)
{
    (void)ctx;
    futoin_uv_sleep(as, 1000);
}

static void test_thread_pool_and_sleep(void** state)
{
    (void)state;
    /* Every pool thread busy: lookups and file operations wait in the
     * queue until they are given up. */
    assert_int_equal(pipe(g_block), 0);
    g_blocked_done = 0;
    g_all_blocked_done = 0;
    uv_work_t work[POOL];
    for (int i = 0; i < POOL; ++i) {
        assert_int_equal(uv_queue_work(futoin_uv_uv_loop(g_uv), &work[i], blocked_work,
                                 blocked_done),
                0);
    }
    static const struct {
        IoFn io;
        const char* info;
    } cases[] = {
        { io_resolve, "resolve localhost" },
        { io_file_read, "file_read /etc/hostname" },
        { io_file_write, "file_write /tmp/futoin_wait_info_test" },
        { io_sleep, "sleep 1000 ms" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        Ctx c;
        memset(&c, 0, sizeof(c));
        c.io = cases[i].io;
        c.timeout = 50;
        c.nested = (int)(i % 2);
        Outcome o;
        run_io(&c, &o);
        if (cases[i].io == io_resolve) {
            atomic_store(&futoin__uv_lookup_threads_max, g_threads_max);
        }
        assert_string_equal(o.code, FUTOIN_TIMEOUT);
        assert_string_equal(o.info, cases[i].info);
    }
    char ch[POOL] = { 0 };
    assert_int_equal(write(g_block[1], ch, POOL), POOL);
    /* work[] lives on this stack: every request must be done before the
     * function returns (a fixed 50 ms was not always enough on a loaded
     * machine, and teardown then ran callbacks on a dead stack). */
    assert_true(run_until(&g_all_blocked_done, scaled_ms(10000)));
    close(g_block[0]);
    close(g_block[1]);
    unlink("/tmp/futoin_wait_info_test");
}

/* ---- the loop dump: what the local kinds wait for ---- */

/* One flow waits on every local kind at once: a Unix socket connect, a UDP
 * receive, a child's exit and the file steps, each a branch of a parallel
 * step. The last branch runs in the same round, after the others have
 * started and before any can complete (libuv reports completions on a
 * later iteration), and dumps the loop: each wait must be there, as
 * docs/OBSERVABILITY.md and futoin/uv.h list them. It then lets the
 * branches end: a datagram for the receive, SIGKILL for the child. */
typedef struct DumpRun {
    char dir[64];
    char sock[96]; /* a futoin_uv_pipe_server_new() server */
    char a[96];    /* the file the handles are opened on */
    char b[96];    /* opened by a branch */
    char c[96];    /* renamed to c2 */
    char c2[96];
    char d[96]; /* unlinked */
    FutoInUvServer* srv;
    FutoInUvUdp* u;
    int ufd; /* a plain UDP socket: the sender */
    FutoInUvProcess* p;
    FutoInUvFile* f;  /* read, written, fstat */
    FutoInUvFile* f2; /* closed */
    char* dump;
    int killed;
} DumpRun;

static DumpRun g_dr;

static void touch(const char* path)
{
    FILE* f = fopen(path, "w");
    assert_non_null(f);
    fputs("data\n", f);
    fclose(f);
}

static void dr_keep1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    DumpRun* r = data;
    r->f = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
    futoin_uv_file_open(as, r->a, O_RDONLY, 0);
}

static void dr_keep2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    ((DumpRun*)data)->f2 = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
}

static void br_dump(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    DumpRun* r = data;
    size_t len = 0;
    FILE* f = open_memstream(&r->dump, &len);
    if (f) {
        futoin_loop_dump(futoin_uv_loop(g_uv), f, FUTOIN_DUMP_FRAMES_DEFAULT);
        fclose(f);
    }
    /* Now let the waits end. */
    struct sockaddr_in to;
    memset(&to, 0, sizeof(to));
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons((uint16_t)futoin_uv_udp_port(r->u));
    sendto(r->ufd, "dgram", 5, 0, (struct sockaddr*)&to, sizeof(to));
    r->killed = futoin_uv_process_kill(r->p, SIGKILL) == 0;
}

/* The I/O steps are the branches themselves: they start in the order they
 * were added, all in one round, the dump last. */
static void dr_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    DumpRun* r = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_uv_pipe_connect(p, r->sock);
    futoin_uv_udp_recv(p, r->u, 0);
    futoin_uv_process_wait(p, r->p);
    futoin_uv_file_open(p, r->b, O_RDONLY, 0);
    futoin_uv_file_pread(p, r->f, 0, 4);
    futoin_uv_file_pwrite(p, r->f, 100, "x", 1);
    futoin_uv_file_fstat(p, r->f);
    futoin_uv_file_close(p, r->f2);
    futoin_uv_readdir(p, r->dir);
    futoin_uv_stat(p, r->a);
    futoin_uv_rename(p, r->c, r->c2);
    futoin_uv_unlink(p, r->d);
    futoin_add(p, br_dump, NULL, r);
}

static void test_dump_shows_local_waits(void** state)
{
    (void)state;
    DumpRun* r = &g_dr;
    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "/tmp/futoin-wdump-XXXXXX");
    assert_non_null(mkdtemp(r->dir));
    snprintf(r->sock, sizeof(r->sock), "%.40s/s.sock", r->dir);
    snprintf(r->a, sizeof(r->a), "%.40s/a", r->dir);
    snprintf(r->b, sizeof(r->b), "%.40s/b", r->dir);
    snprintf(r->c, sizeof(r->c), "%.40s/c", r->dir);
    snprintf(r->c2, sizeof(r->c2), "%.40s/c2", r->dir);
    snprintf(r->d, sizeof(r->d), "%.40s/d", r->dir);
    touch(r->a);
    touch(r->b);
    touch(r->c);
    touch(r->d);
    int err = 0;
    r->srv = futoin_uv_pipe_server_new(g_uv, r->sock, 0, &err);
    assert_non_null(r->srv);
    r->u = futoin_uv_udp_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(r->u);
    r->ufd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(r->ufd >= 0);
    const char* argv[] = { "/bin/sh", "-c", "exec sleep 30", NULL };
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/sh";
    o.argv = argv;
    o.stdio[0] = o.stdio[1] = FUTOIN_UV_STDIO_IGNORE;
    r->p = futoin_uv_spawn(g_uv, &o, &err);
    assert_non_null(r->p);

    FutoInAsyncSteps* root = uv_new_root();
    futoin_uv_file_open(root, r->a, O_RDWR, 0);
    futoin_add(root, dr_keep1, NULL, r);
    futoin_add(root, dr_keep2, NULL, r);
    futoin_add(root, dr_parallel, NULL, r);
    Outcome out;
    run_root(root, &out, 10000);
    assert_string_equal(out.code, "");
    assert_true(r->killed);
    assert_non_null(r->dump);

    char want[224];
    const char* const fixed[][2] = {
        { "connect", r->sock },
        { "file_open", r->b },
        { "file_pread", r->a },
        { "file_pwrite", r->a },
        { "file_fstat", r->a },
        { "file_close", r->a },
        { "readdir", r->dir },
        { "stat", r->a },
        { "rename", r->c },
        { "unlink", r->d },
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); ++i) {
        snprintf(want, sizeof(want), "waiting for an external completion: \"%s %s\"", fixed[i][0],
                fixed[i][1]);
        if (!strstr(r->dump, want)) {
            fail_msg("%s is not in the dump:\n%s", want, r->dump);
        }
    }
    snprintf(want, sizeof(want), "waiting for an external completion: \"udp_recv 127.0.0.1:%u\"",
            futoin_uv_udp_port(r->u));
    if (!strstr(r->dump, want)) {
        fail_msg("%s is not in the dump:\n%s", want, r->dump);
    }
    snprintf(want, sizeof(want), "waiting for an external completion: \"wait pid %ld /bin/sh\"",
            futoin_uv_process_pid(r->p));
    if (!strstr(r->dump, want)) {
        fail_msg("%s is not in the dump:\n%s", want, r->dump);
    }
    int64_t status = -1;
    int sig = 0;
    assert_true(futoin_uv_process_exited(r->p, &status, &sig));
    assert_int_equal(sig, SIGKILL);

    free(r->dump);
    futoin_asyncsteps_free(root);
    futoin_uv_file_release(r->f);
    futoin_uv_file_release(r->f2);
    futoin_uv_process_release(r->p);
    futoin_uv_udp_release(r->u);
    futoin_uv_server_release(r->srv);
    close(r->ufd);
    run_for(20);
    unlink(r->a);
    unlink(r->b);
    unlink(r->c2);
    unlink(r->sock);
    assert_int_equal(rmdir(r->dir), 0);
}

int main(void)
{
    /* The pool test blocks exactly the pool's threads. */
    setenv("UV_THREADPOOL_SIZE", "4", 1);
    const struct CMUnitTest tests[] = {
        UV_TEST(test_read_names_the_peer),
        UV_TEST(test_write_names_the_peer),
        UV_TEST(test_accept_and_accepted_peer),
        UV_TEST(test_connect_names_the_target),
        UV_TEST(test_thread_pool_and_sleep),
        UV_TEST(test_dump_shows_local_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
