/* SPDX-License-Identifier: MIT */
/*
 * Local streams: a Unix domain socket server and a client in one loop,
 * echoing a line with the read and write steps of TCP streams; the peer's
 * credentials on both ends; a connect to a path nobody made (ENOENT); a
 * peer that vanishes in the middle of a line (EOF); a path in use; the
 * socket file removed with its server; pipe(2) ends wrapped as streams,
 * written, read, and read to their end. Everything in a temporary
 * directory of the test's own. After each test futoin_uv_free() must find
 * no handle left open.
 */
#include "uv_tsupport.h"

#include <sys/stat.h>
#include <sys/un.h>

static char g_dir[64];
static char g_path[128];

static int pipe_setup(void** state)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/futoin-pipe-XXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    snprintf(g_path, sizeof(g_path), "%s/s.sock", g_dir);
    return uv_setup_strict(state);
}

static int pipe_teardown(void** state)
{
    int rc = uv_teardown_strict(state);
    unlink(g_path);
    rmdir(g_dir);
    return rc;
}

#define PIPE_TEST(fn) cmocka_unit_test_setup_teardown(fn, pipe_setup, pipe_teardown)

static int path_exists(const char* path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- a server side and a client side of an echo ---- */

typedef struct Side {
    FutoInUvServer* srv;
    FutoInUvStream* s;
    char line[64];
    long pid;
    long uid;
    int cred_err;
    int failed;
    char code[32];
    char info[160];
    int num;
} Side;

static void eh_side(FutoInAsyncSteps* as, void* data, const char* code)
{
    Side* sd = data;
    sd->failed = 1;
    snprintf(sd->code, sizeof(sd->code), "%s", code);
    snprintf(sd->info, sizeof(sd->info), "%s", futoin_error_info(as));
    sd->num = futoin_uv_errno(as);
}

static void keep_stream(Side* sd, const FutoInArgs* args)
{
    sd->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    assert_non_null(sd->s);
    assert_null(futoin_uv_stream_handle(sd->s)); /* not a TCP stream */
    sd->cred_err = futoin_uv_stream_peer_cred(sd->s, &sd->pid, &sd->uid, NULL);
}

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((Side*)data)->srv);
}

static void srv_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    keep_stream(sd, args);
    futoin_uv_read_line(as, sd->s, 0);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    snprintf(sd->line, sizeof(sd->line), "%s", futoin_arg_cstr(args, 0, ""));
    futoin_uv_write(as, sd->s, "echo\n", 5);
    futoin_uv_close(as, sd->s, 1);
    sd->s = NULL;
}

static void srv_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, srv_accept, NULL, data);
    futoin_add(as, srv_read, NULL, data);
    futoin_add(as, srv_answer, NULL, data);
}

static void cli_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_pipe_connect(as, g_path);
}

static void cli_send(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    keep_stream(sd, args);
    futoin_uv_write(as, sd->s, "hello\n", 6);
    futoin_uv_read_line(as, sd->s, 0);
}

static void cli_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Side* sd = data;
    snprintf(sd->line, sizeof(sd->line), "%s", futoin_arg_cstr(args, 0, ""));
    futoin_uv_close(as, sd->s, 0);
    sd->s = NULL;
}

static void cli_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, cli_connect, NULL, data);
    futoin_add(as, cli_send, NULL, data);
    futoin_add(as, cli_got, NULL, data);
}

static void test_pipe_echo_and_cred(void** state)
{
    (void)state;
    int err = 0;
    Side srv;
    Side cli;
    memset(&srv, 0, sizeof(srv));
    memset(&cli, 0, sizeof(cli));
    srv.srv = futoin_uv_pipe_server_new(g_uv, g_path, 0, &err);
    assert_non_null(srv.srv);
    assert_int_equal(err, 0);
    assert_true(path_exists(g_path));
    assert_int_equal(futoin_uv_server_port(srv.srv), 0);

    FutoInAsyncSteps* rs = uv_new_root();
    FutoInAsyncSteps* rc = uv_new_root();
    futoin_add(rs, srv_steps, eh_side, &srv);
    futoin_add(rc, cli_steps, eh_side, &cli);
    Outcome os;
    memset(&os, 0, sizeof(os));
    futoin_add(rs, outcome_ok, NULL, &os);
    futoin_execute(rs, outcome_error, &os);
    Outcome oc;
    run_root(rc, &oc, 5000);
    assert_true(run_until(&os.done, scaled_ms(5000)));
    assert_int_equal(srv.failed, 0);
    assert_int_equal(cli.failed, 0);
    assert_string_equal(srv.line, "hello");
    assert_string_equal(cli.line, "echo");
    /* Both ends are this process. */
    assert_int_equal(srv.cred_err, 0);
    assert_int_equal(cli.cred_err, 0);
    assert_int_equal(srv.pid, (long)getpid());
    assert_int_equal(cli.pid, (long)getpid());
    assert_int_equal(srv.uid, (long)getuid());
    assert_int_equal(cli.uid, (long)getuid());
    futoin_asyncsteps_free(rs);
    futoin_asyncsteps_free(rc);

    /* The file goes with the server. */
    futoin_uv_server_release(srv.srv);
    run_for(10);
    assert_false(path_exists(g_path));
    assert_int_equal(g_misuse, 0);
}

/* ---- errors ---- */

static void st_connect_missing(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_pipe_connect(as, g_path);
}

static void test_pipe_connect_missing(void** state)
{
    (void)state;
    Side cli;
    memset(&cli, 0, sizeof(cli));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_connect_missing, eh_side, &cli);
    Outcome o;
    run_root(root, &o, 5000);
    assert_int_equal(cli.failed, 1);
    assert_string_equal(cli.code, FUTOIN_CONNECT_ERROR);
    char expect[192];
    snprintf(expect, sizeof(expect), "ENOENT: connect %s", g_path);
    assert_string_equal(cli.info, expect);
    assert_int_equal(cli.num, UV_ENOENT);
    futoin_asyncsteps_free(root);
}

static void st_listen(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_pipe_listen(as, g_path, 0);
}

static void test_pipe_listen_errors(void** state)
{
    (void)state;
    int err = 0;
    FutoInUvServer* first = futoin_uv_pipe_server_new(g_uv, g_path, 0, &err);
    assert_non_null(first);
    /* A path in use: refused, and the first server's file stays. */
    assert_null(futoin_uv_pipe_server_new(g_uv, g_path, 0, &err));
    assert_int_equal(err, UV_EADDRINUSE);
    Side s;
    memset(&s, 0, sizeof(s));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_listen, eh_side, &s);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(s.code, FUTOIN_CONNECT_ERROR);
    char expect[192];
    snprintf(expect, sizeof(expect), "EADDRINUSE: listen %s", g_path);
    assert_string_equal(s.info, expect);
    assert_int_equal(s.num, UV_EADDRINUSE);
    futoin_asyncsteps_free(root);
    assert_true(path_exists(g_path));

    char long_path[256];
    memset(long_path, 'x', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    assert_null(futoin_uv_pipe_server_new(g_uv, long_path, 0, &err));
    assert_int_equal(err, UV_ENAMETOOLONG);
    assert_null(futoin_uv_pipe_server_new(g_uv, "", 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_pipe_server_new(NULL, g_path, 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_int_equal(futoin_uv_stream_peer_cred(NULL, NULL, NULL, NULL), UV_EINVAL);
    futoin_uv_server_release(first);
    run_for(10);
    assert_false(path_exists(g_path));
}

/* A client that sends half a line and goes away: the server's read ends
 * with EOF, not a hang. */
static void* vanishing_client(void* arg)
{
    (void)arg;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    size_t n = strlen(g_path);
    memcpy(a.sun_path, g_path, n < sizeof(a.sun_path) ? n : sizeof(a.sun_path) - 1);
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) == 0) {
        (void)!write(fd, "half a li", 9);
        sleep_ms(20);
    }
    close(fd);
    return NULL;
}

static void test_pipe_peer_vanishes(void** state)
{
    (void)state;
    int err = 0;
    Side srv;
    memset(&srv, 0, sizeof(srv));
    srv.srv = futoin_uv_pipe_server_new(g_uv, g_path, 0, &err);
    assert_non_null(srv.srv);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, vanishing_client, NULL), 0);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, srv_steps, eh_side, &srv);
    Outcome o;
    run_root(root, &o, 5000);
    pthread_join(th, NULL);
    assert_int_equal(srv.failed, 1);
    assert_string_equal(srv.code, FUTOIN_COMM_ERROR);
    assert_string_equal(srv.info, "EOF: read: connection closed by peer");
    assert_int_equal(srv.num, UV_EOF);
    assert_int_equal(srv.cred_err, 0);
    futoin_uv_stream_release(srv.s);
    futoin_asyncsteps_free(root);
    futoin_uv_server_release(srv.srv);
}

/* ---- pipe(2) ---- */

typedef struct Pipes {
    FutoInUvStream* r;
    FutoInUvStream* w;
    char line[32];
    int failed;
    char info[160];
    int num;
} Pipes;

static void eh_pipes(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    Pipes* p = data;
    p->failed = 1;
    snprintf(p->info, sizeof(p->info), "%s", futoin_error_info(as));
    p->num = futoin_uv_errno(as);
    futoin_success(as);
}

static void pp_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Pipes* p = data;
    futoin_uv_write(as, p->w, "through the pipe\n", 17);
    futoin_uv_read_line(as, p->r, 0);
}

static void pp_close_writer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Pipes* p = data;
    snprintf(p->line, sizeof(p->line), "%s", futoin_arg_cstr(args, 0, ""));
    futoin_uv_close(as, p->w, 0);
    p->w = NULL;
}

static void pp_read_end(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_some(as, ((Pipes*)data)->r, 0);
}

static void test_pipe_open(void** state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int err = 0;
    Pipes p;
    memset(&p, 0, sizeof(p));
    p.r = futoin_uv_pipe_open(g_uv, fds[0], &err);
    assert_non_null(p.r);
    p.w = futoin_uv_pipe_open(g_uv, fds[1], &err);
    assert_non_null(p.w);
    char name[32];
    snprintf(name, sizeof(name), "fd %d", fds[0]);
    assert_string_equal(futoin_uv_stream_peer(p.r), name);
    /* No peer to ask about: a pipe is not a socket. */
    assert_int_equal(futoin_uv_stream_peer_cred(p.r, NULL, NULL, NULL), UV_ENOTSUP);

    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, pp_write, NULL, &p);
    futoin_add(root, pp_close_writer, NULL, &p);
    futoin_add(root, pp_read_end, eh_pipes, &p);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(p.line, "through the pipe");
    assert_int_equal(p.failed, 1);
    assert_string_equal(p.info, "EOF: read: connection closed by peer");
    assert_int_equal(p.num, UV_EOF);
    futoin_asyncsteps_free(root);
    futoin_uv_stream_release(p.r);

    assert_null(futoin_uv_pipe_open(g_uv, -1, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_pipe_open(NULL, 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_int_equal(g_misuse, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        PIPE_TEST(test_pipe_echo_and_cred),
        PIPE_TEST(test_pipe_connect_missing),
        PIPE_TEST(test_pipe_listen_errors),
        PIPE_TEST(test_pipe_peer_vanishes),
        PIPE_TEST(test_pipe_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
