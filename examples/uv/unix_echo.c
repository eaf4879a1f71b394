/* SPDX-License-Identifier: MIT */
/*
 * A line echo over a Unix domain socket on one loop (docs/RECIPES.md
 * "Local sockets and pipes"): a server on a socket file in a temporary
 * directory, and a client that connects to it, sends three lines and
 * prints the answers.
 *
 *   unix_echo
 *
 * The pieces:
 *   - the server: futoin_uv_pipe_server_new() creates the socket file
 *     (a stale file would be refused with UV_EADDRINUSE), and a root
 *     accepts one connection (futoin_uv_accept()), checks with
 *     futoin_uv_stream_peer_cred() that the peer runs as our own user,
 *     then answers each line with "echo: LINE" until the peer's end of
 *     input (CommError "EOF: ...", turned into a success by its error
 *     handler);
 *   - the client: one root that connects to the path
 *     (futoin_uv_pipe_connect()), writes a line and reads the answer, three
 *     times, each part under a futoin_set_timeout(), then closes (graceful:
 *     the server sees the end of input);
 *   - the end: the server root closes the server after its one client
 *     (futoin_uv_server_close(): it stops listening and removes the socket
 *     file), and the directory is removed.
 * futoin_uv_run() returns once both roots are done: the program exits 0.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINES 3

static const char* const lines[LINES] = { "hello", "local", "world" };

typedef struct Server {
    FutoInUvServer* srv;
    FutoInUvStream* conn; /* the accepted connection: a reference of ours */
    unsigned answered;
} Server;

typedef struct Client {
    const char* path;
    FutoInUvStream* conn;
    unsigned sent;
} Client;

/* ---- the server: accept one connection, answer every line ---- */

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((Server*)data)->srv);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Server* s = data;
    char buf[96];
    int n = snprintf(buf, sizeof(buf), "echo: %s\n", futoin_arg_cstr(args, 0, ""));
    futoin_uv_write(as, s->conn, buf, (size_t)n);
    ++s->answered;
}

static void srv_iteration(FutoInAsyncSteps* as, void* data)
{
    Server* s = data;
    futoin_uv_read_line(as, s->conn, 256);
    futoin_add(as, srv_answer, NULL, s);
}

/* The peer's end of input ends the loop: a success, not an error. */
static void srv_on_eof(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && futoin_uv_errno(as) == UV_EOF) {
        futoin_success(as);
    }
}

static void srv_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, srv_iteration, data, NULL);
}

static void srv_check_peer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Server* s = data;
    s->conn = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    long uid = -1;
    if (futoin_uv_stream_peer_cred(s->conn, NULL, &uid, NULL) != 0 || uid != (long)getuid()) {
        futoin_error(as, "Unauthorized", "the peer runs as another user");
        return;
    }
    printf("server: a client of our own user connected\n");
    futoin_add(as, srv_loop, srv_on_eof, s);
}

static void srv_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Server* s = data;
    printf("server: the client closed after %u lines\n", s->answered);
    futoin_uv_close(as, s->conn, 1);
    s->conn = NULL;
    /* One client only: stop listening. A listening server keeps
     * futoin_uv_run() going; closing it also removes the socket file. */
    futoin_uv_server_close(s->srv);
}

/* ---- the client: connect, three lines there and back, close ---- */

static void cl_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 5000); /* covers the connect */
    futoin_uv_pipe_connect(as, ((Client*)data)->path);
}

static void cl_print(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    printf("client: %s\n", futoin_arg_cstr(args, 0, ""));
}

static void cl_iteration(FutoInAsyncSteps* as, void* data)
{
    Client* c = data;
    if (c->sent == LINES) {
        futoin_break(as, NULL);
        return;
    }
    char buf[64];
    int n = snprintf(buf, sizeof(buf), "%s\n", lines[c->sent++]);
    futoin_uv_write(as, c->conn, buf, (size_t)n); /* copied */
    futoin_uv_read_line(as, c->conn, 256);
    futoin_add(as, cl_print, NULL, c);
}

static void cl_talk(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* c = data;
    c->conn = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_set_timeout(as, 5000); /* covers the three lines there and back */
    futoin_add_loop(as, cl_iteration, c, NULL);
}

static void cl_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_uv_close(as, c->conn, 1); /* takes over our reference */
    c->conn = NULL;
}

static int failed; /* the exit status */

static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    failed = 1;
    fprintf(stderr, "%s failed: %s (%s)\n", (const char*)data, code, futoin_error_info(as));
}

/* The server root failed: stop listening, so that futoin_uv_run() ends. */
static void srv_on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    Server* s = data;
    on_error(as, "server", code);
    futoin_uv_server_close(s->srv);
    futoin_uv_stream_close(s->conn);
}

int main(void)
{
    /* The socket file goes in a directory of our own. */
    const char* tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/unix_echo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[300];
    snprintf(path, sizeof(path), "%s/echo.sock", dir);

    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return 1;
    }
    int err = 0;
    Server server = { futoin_uv_pipe_server_new(uv, path, 0, &err), NULL, 0 };
    if (!server.srv) {
        fprintf(stderr, "listen %s: %s\n", path, uv_strerror(err));
        futoin_uv_free(uv);
        rmdir(dir);
        return 1;
    }
    struct stat st;
    printf("server: listening, the socket file %s\n",
            stat(path, &st) == 0 && S_ISSOCK(st.st_mode) ? "exists" : "is missing");
    Client client = { path, NULL, 0 };

    FutoInAsyncSteps* server_root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    FutoInAsyncSteps* client_root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    if (!server_root || !client_root) {
        return 1;
    }
    futoin_add(server_root, srv_accept, NULL, &server);
    futoin_add(server_root, srv_check_peer, NULL, &server);
    futoin_add(server_root, srv_done, NULL, &server);
    futoin_add(client_root, cl_connect, NULL, &client);
    futoin_add(client_root, cl_talk, NULL, &client);
    futoin_add(client_root, cl_close, NULL, &client);
    futoin_execute(server_root, srv_on_error, &server);
    futoin_execute(client_root, on_error, "client");
    futoin_uv_run(uv);

    futoin_asyncsteps_free(server_root);
    futoin_asyncsteps_free(client_root);
    futoin_uv_stream_release(server.conn); /* NULL unless a root failed */
    futoin_uv_stream_release(client.conn);
    printf("server: closed, the socket file %s\n", stat(path, &st) == 0 ? "is left" : "is gone");
    /* The last reference frees the server (and would close it, and remove
     * the file, after a failure). */
    futoin_uv_server_release(server.srv);
    futoin_uv_run(uv);
    futoin_uv_free(uv);
    return rmdir(dir) == 0 ? failed : 1;
}
