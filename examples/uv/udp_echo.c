/* SPDX-License-Identifier: MIT */
/*
 * A UDP echo on one loop (docs/RECIPES.md "A UDP echo"): a socket that
 * sends every datagram back to its sender, and a client that sends three
 * and prints the answers, each under a timeout.
 *
 *   udp_echo
 *
 * The pieces:
 *   - two sockets bound on the loopback at ports the kernel picks
 *     (futoin_uv_udp_new()), each kept by a reference of the program;
 *   - the echo: one root with a loop of futoin_uv_udp_recv(), whose result
 *     is the datagram, the sender's address and its port, then
 *     futoin_uv_udp_send() back to that address; "quit" ends the loop;
 *   - the client: one root that sends "ping N" and waits for the answer
 *     under futoin_set_timeout() (UDP may lose a datagram: a real client
 *     sends again on the Timeout); then "quit".
 * futoin_uv_run() returns once both roots are done and the sockets are
 * released: the program exits 0.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <stdio.h>
#include <string.h>

#define PINGS 3

typedef struct Echo {
    FutoInUvUdp* sock;
    unsigned echoed;
} Echo;

typedef struct Client {
    FutoInUvUdp* sock;
    unsigned echo_port;
    unsigned sent;
    char text[32];
} Client;

/* ---- the echo: receive, send back, until "quit" ---- */

static void echo_back(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Echo* e = data;
    size_t len = 0;
    const char* bytes = futoin_uv_arg_bytes(args, 0, &len);
    if (len == 4 && memcmp(bytes, "quit", 4) == 0) {
        futoin_break(as, NULL);
        return;
    }
    /* arg1 and arg2: the sender's address and port, as a send takes them. */
    futoin_uv_udp_send(as, e->sock, futoin_arg_cstr(args, 1, ""), args->arg2.u32, bytes, len);
    ++e->echoed;
}

static void echo_iteration(FutoInAsyncSteps* as, void* data)
{
    Echo* e = data;
    futoin_uv_udp_recv(as, e->sock, 0);
    futoin_add(as, echo_back, NULL, e);
}

static void echo_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, echo_iteration, data, NULL);
}

/* ---- the client: send, wait for the answer under a timeout ---- */

static void client_print(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    size_t len = 0;
    const char* bytes = futoin_uv_arg_bytes(args, 0, &len);
    printf("reply from the echo: %.*s\n", (int)len, bytes);
}

static void client_await(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* c = data;
    futoin_set_timeout(as, 2000);
    futoin_uv_udp_recv(as, c->sock, 0);
}

static void client_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_break(as, NULL);
}

static void client_iteration(FutoInAsyncSteps* as, void* data)
{
    Client* c = data;
    if (c->sent == PINGS) {
        /* A break here would drop the send just added: break after it. */
        futoin_uv_udp_send(as, c->sock, "127.0.0.1", c->echo_port, "quit", 4);
        futoin_add(as, client_done, NULL, c);
        return;
    }
    snprintf(c->text, sizeof(c->text), "ping %u", ++c->sent);
    futoin_uv_udp_send(as, c->sock, "127.0.0.1", c->echo_port, c->text, strlen(c->text));
    futoin_add(as, client_await, NULL, c);
    futoin_add(as, client_print, NULL, c);
}

static void client_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, client_iteration, data, NULL);
}

static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    fprintf(stderr, "%s failed: %s (%s)\n", (const char*)data, code, futoin_error_info(as));
}

int main(void)
{
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return 1;
    }
    int err = 0;
    Echo echo = { futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err), 0 };
    Client client = { futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err), 0, 0, "" };
    if (!echo.sock || !client.sock) {
        fprintf(stderr, "bind: %s\n", uv_strerror(err));
        return 1;
    }
    client.echo_port = futoin_uv_udp_port(echo.sock);

    FutoInAsyncSteps* echo_root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    FutoInAsyncSteps* client_root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    if (!echo_root || !client_root) {
        return 1;
    }
    futoin_add(echo_root, echo_start, NULL, &echo);
    futoin_add(client_root, client_start, NULL, &client);
    futoin_execute(echo_root, on_error, "echo");
    futoin_execute(client_root, on_error, "client");
    /* The sockets keep futoin_uv_run() going while a step waits on them:
     * it returns when both roots are done. */
    futoin_uv_run(uv);
    printf("echo: stopped after %u datagrams\n", echo.echoed);

    futoin_asyncsteps_free(echo_root);
    futoin_asyncsteps_free(client_root);
    futoin_uv_udp_release(echo.sock);
    futoin_uv_udp_release(client.sock);
    futoin_uv_free(uv);
    return 0;
}
