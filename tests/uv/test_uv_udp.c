/* SPDX-License-Identifier: MIT */
/*
 * UDP sockets as steps, on the loopback: a datagram and its sender, an
 * answer to that sender, an empty datagram; a receive that times out and
 * one whose root is cancelled, after which a late datagram reaches
 * nothing and waits for the next receive; datagrams queued between
 * receive steps, in order, the queue bounded and nothing dropped beyond
 * it; a datagram longer than the receive's limit; bind errors; a
 * connected socket whose peer is gone (ECONNREFUSED); a socket closed
 * under a waiting receive; refused arguments; the wait in the loop dump.
 * The multicast test runs alone ("multicast" argument, a CTest test of
 * its own) and exits 77 where the kernel gives the loopback no multicast.
 * After each test futoin_uv_free() must find no handle left open.
 */
#include "uv_tsupport.h"

#include <futoin/introspect.h>

#define SKIPPED 77

static FutoInUvUdp* bind_loopback(void)
{
    int err = 0;
    FutoInUvUdp* u = futoin_uv_udp_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(u);
    assert_int_equal(err, 0);
    assert_true(futoin_uv_udp_port(u) > 0);
    return u;
}

/* A plain UDP socket of the test's own, bound to a free loopback port. */
static int plain_socket(unsigned* port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr*)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr*)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

static void plain_send(int fd, unsigned port, const char* text)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    assert_int_equal(sendto(fd, text, strlen(text), 0, (struct sockaddr*)&a, sizeof(a)),
            (ssize_t)strlen(text));
}

/* ---- a receive and what it got ---- */

typedef struct Rx {
    FutoInUvUdp* u;
    size_t max;
    unsigned timeout_ms; /* 0: none */
    int got;
    int argtype;
    char data[256];
    size_t len;
    char sender[64];
    unsigned port;
    int failed;
    char code[32];
    char info[160];
    int num;
} Rx;

static void st_recv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Rx* rx = data;
    if (rx->timeout_ms) {
        futoin_set_timeout(as, rx->timeout_ms);
    }
    futoin_uv_udp_recv(as, rx->u, rx->max);
}

static void st_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Rx* rx = data;
    if (rx->failed) {
        return; /* its error handler recovered */
    }
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    assert_non_null(b);
    rx->argtype = futoin_arg_type(args, 0);
    rx->len = len;
    snprintf(rx->data, sizeof(rx->data), "%.*s", (int)len, b);
    snprintf(rx->sender, sizeof(rx->sender), "%s", futoin_arg_cstr(args, 1, "?"));
    assert_int_equal(futoin_arg_type(args, 2), FTN_TYPE_UINT32);
    rx->port = args->arg2.u32;
    ++rx->got;
}

static void eh_rx(FutoInAsyncSteps* as, void* data, const char* code)
{
    Rx* rx = data;
    rx->failed = 1;
    snprintf(rx->code, sizeof(rx->code), "%s", code);
    snprintf(rx->info, sizeof(rx->info), "%s", futoin_error_info(as));
    rx->num = futoin_uv_errno(as);
    futoin_success(as);
}

static void add_recv(FutoInAsyncSteps* as, Rx* rx)
{
    futoin_add(as, st_recv, eh_rx, rx);
    futoin_add(as, st_got, NULL, rx);
}

/* ---- a send ---- */

typedef struct Tx {
    FutoInUvUdp* u;
    const char* host;
    unsigned port;
    const char* text;
    size_t len;
    int failed;
    char code[32];
    char info[160];
    int num;
} Tx;

static void st_send(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Tx* tx = data;
    futoin_uv_udp_send(as, tx->u, tx->host, tx->port, tx->text, tx->len);
}

static void eh_tx(FutoInAsyncSteps* as, void* data, const char* code)
{
    Tx* tx = data;
    tx->failed = 1;
    snprintf(tx->code, sizeof(tx->code), "%s", code);
    snprintf(tx->info, sizeof(tx->info), "%s", futoin_error_info(as));
    tx->num = futoin_uv_errno(as);
    futoin_success(as);
}

static void add_send(FutoInAsyncSteps* as, Tx* tx)
{
    futoin_add(as, st_send, eh_tx, tx);
}

/* ---- tests ---- */

/* The echo's answer goes to the sender given by the receive. */
typedef struct Echo {
    FutoInUvUdp* u;
} Echo;

static void st_echo_back(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Echo* e = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    futoin_uv_udp_send(as, e->u, futoin_arg_cstr(args, 1, NULL), args->arg2.u32, b, len);
}

static void test_udp_send_recv(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    FutoInUvUdp* b = bind_loopback();
    unsigned pa = futoin_uv_udp_port(a);
    unsigned pb = futoin_uv_udp_port(b);
    Tx tx = { b, "127.0.0.1", pa, "hello", 5, 0, "", "", 0 };
    Echo echo = { a };
    Rx back;
    memset(&back, 0, sizeof(back));
    back.u = b;
    Tx empty = { b, "127.0.0.1", pa, NULL, 0, 0, "", "", 0 };
    Rx rx_empty;
    memset(&rx_empty, 0, sizeof(rx_empty));
    rx_empty.u = a;

    FutoInAsyncSteps* root = uv_new_root();
    add_send(root, &tx);
    futoin_add(root, st_recv, NULL, &(Rx){ .u = a });
    futoin_add(root, st_echo_back, NULL, &echo);
    add_recv(root, &back);
    add_send(root, &empty);
    add_recv(root, &rx_empty);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(tx.failed, 0);
    /* b got its own datagram back from a, and knows it came from a. */
    assert_int_equal(back.got, 1);
    assert_int_equal(back.argtype, FTN_TYPE_UINT8 | FTN_TYPE_ARRAY);
    assert_string_equal(back.data, "hello");
    assert_int_equal(back.len, 5);
    assert_string_equal(back.sender, "127.0.0.1");
    assert_int_equal(back.port, pa);
    /* An empty datagram is a datagram. */
    assert_int_equal(rx_empty.got, 1);
    assert_int_equal(rx_empty.len, 0);
    assert_int_equal(rx_empty.port, pb);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
    futoin_uv_udp_release(b);
    assert_int_equal(g_misuse, 0);
}

/* The sender's address reaches the step: checked against a plain socket
 * of the test's own. */
static void test_udp_sender_address(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    unsigned pp = 0;
    int fd = plain_socket(&pp);
    plain_send(fd, futoin_uv_udp_port(a), "from plain");
    Rx rx;
    memset(&rx, 0, sizeof(rx));
    rx.u = a;
    FutoInAsyncSteps* root = uv_new_root();
    add_recv(root, &rx);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(rx.got, 1);
    assert_string_equal(rx.data, "from plain");
    assert_string_equal(rx.sender, "127.0.0.1");
    assert_int_equal(rx.port, pp);
    close(fd);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
}

/* A Timeout names the wait; reading stops, and a late datagram waits in
 * the kernel for the next receive step. */
static void test_udp_recv_timeout(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    Rx rx;
    memset(&rx, 0, sizeof(rx));
    rx.u = a;
    rx.timeout_ms = 30;
    FutoInAsyncSteps* root = uv_new_root();
    add_recv(root, &rx);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(rx.failed, 1);
    assert_string_equal(rx.code, FUTOIN_TIMEOUT);
    char expect[64];
    snprintf(expect, sizeof(expect), "udp_recv 127.0.0.1:%u", futoin_uv_udp_port(a));
    assert_string_equal(rx.info, expect);
    assert_int_equal(rx.num, 0); /* the engine's Timeout */
    assert_int_equal(rx.got, 0);
    futoin_asyncsteps_free(root);

    unsigned pp = 0;
    int fd = plain_socket(&pp);
    plain_send(fd, futoin_uv_udp_port(a), "late");
    run_for(30);
    assert_int_equal(futoin_uv_udp_queued(a), 0); /* not read: nobody asked */

    Rx next;
    memset(&next, 0, sizeof(next));
    next.u = a;
    root = uv_new_root();
    add_recv(root, &next);
    run_root(root, &o, 5000);
    assert_int_equal(next.got, 1);
    assert_string_equal(next.data, "late");
    close(fd);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
    assert_int_equal(g_misuse, 0);
}

static void st_cancel_other(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    futoin_cancel(*(FutoInAsyncSteps**)data);
}

static void unhandled_count(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++*(int*)data;
}

/* A root cancel ends the receive; a datagram after it changes nothing;
 * the loop dump showed what the receive waited for. */
static void test_udp_recv_cancel(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    Rx rx;
    memset(&rx, 0, sizeof(rx));
    rx.u = a;
    FutoInAsyncSteps* waiting = uv_new_root();
    add_recv(waiting, &rx);
    int unhandled = 0;
    futoin_execute(waiting, unhandled_count, &unhandled);
    run_for(20);

    char* dump = NULL;
    size_t dump_len = 0;
    FILE* f = open_memstream(&dump, &dump_len);
    assert_non_null(f);
    futoin_loop_dump(futoin_uv_loop(g_uv), f, FUTOIN_DUMP_FRAMES_DEFAULT);
    fclose(f);
    char expect[64];
    snprintf(expect, sizeof(expect), "\"udp_recv 127.0.0.1:%u\"", futoin_uv_udp_port(a));
    assert_non_null(strstr(dump, expect));
    free(dump);

    FutoInAsyncSteps* canceller = uv_new_root();
    futoin_add(canceller, st_cancel_other, NULL, &waiting);
    Outcome o;
    run_root(canceller, &o, 5000);

    unsigned pp = 0;
    int fd = plain_socket(&pp);
    plain_send(fd, futoin_uv_udp_port(a), "after cancel");
    run_for(50);
    assert_int_equal(rx.got, 0);
    assert_int_equal(rx.failed, 0);
    assert_int_equal(unhandled, 0);
    assert_int_equal(futoin_uv_udp_queued(a), 0);
    futoin_asyncsteps_free(waiting);
    futoin_asyncsteps_free(canceller);

    /* The socket is as it was: the next receive gets the datagram. */
    Rx next;
    memset(&next, 0, sizeof(next));
    next.u = a;
    FutoInAsyncSteps* root = uv_new_root();
    add_recv(root, &next);
    run_root(root, &o, 5000);
    assert_int_equal(next.got, 1);
    assert_string_equal(next.data, "after cancel");
    assert_int_equal(next.port, pp);
    close(fd);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
    assert_int_equal(g_misuse, 0);
}

/* Datagrams that arrive between receive steps are queued in order, at
 * most FUTOIN_UV_UDP_QUEUE_MAX of them; the rest wait in the kernel and
 * are received after them: none is lost. */
#define MANY (FUTOIN_UV_UDP_QUEUE_MAX + 8u)

typedef struct Many {
    FutoInUvUdp* u;
    unsigned n;
    char got[MANY][16];
} Many;

static void many_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Many* m = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    snprintf(m->got[m->n++], sizeof(m->got[0]), "%.*s", (int)len, b);
}

static void many_recv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Many* m = data;
    futoin_uv_udp_recv(as, m->u, 0);
    futoin_add(as, many_got, NULL, m);
}

static void test_udp_queued(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    unsigned pa = futoin_uv_udp_port(a);
    unsigned pp = 0;
    int fd = plain_socket(&pp);
    /* A first receive starts reading. */
    plain_send(fd, pa, "first");
    Rx first;
    memset(&first, 0, sizeof(first));
    first.u = a;
    FutoInAsyncSteps* root = uv_new_root();
    add_recv(root, &first);
    Outcome o;
    run_root(root, &o, 5000);
    futoin_asyncsteps_free(root);
    assert_string_equal(first.data, "first");

    for (unsigned i = 0; i < MANY; ++i) {
        char text[16];
        snprintf(text, sizeof(text), "d%u", i);
        plain_send(fd, pa, text);
    }
    for (unsigned t = 0; t < 100 && futoin_uv_udp_queued(a) < FUTOIN_UV_UDP_QUEUE_MAX; ++t) {
        run_for(5);
    }
    run_for(20);
    assert_int_equal(futoin_uv_udp_queued(a), FUTOIN_UV_UDP_QUEUE_MAX);

    Many m;
    memset(&m, 0, sizeof(m));
    m.u = a;
    root = uv_new_root();
    for (unsigned i = 0; i < MANY; ++i) {
        futoin_add(root, many_recv, NULL, &m);
    }
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(m.n, MANY);
    for (unsigned i = 0; i < MANY; ++i) {
        char text[16];
        snprintf(text, sizeof(text), "d%u", i);
        assert_string_equal(m.got[i], text);
    }
    close(fd);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
}

/* A datagram longer than the receive's limit fails that receive and is
 * consumed; the next one is received. */
static void test_udp_too_long(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    unsigned pp = 0;
    int fd = plain_socket(&pp);
    plain_send(fd, futoin_uv_udp_port(a), "hello");
    plain_send(fd, futoin_uv_udp_port(a), "hi");
    Rx r1;
    Rx r2;
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    r1.u = r2.u = a;
    r1.max = r2.max = 4;
    FutoInAsyncSteps* root = uv_new_root();
    add_recv(root, &r1);
    add_recv(root, &r2);
    Outcome o;
    run_root(root, &o, 5000);
    assert_int_equal(r1.failed, 1);
    assert_string_equal(r1.code, FUTOIN_COMM_ERROR);
    char expect[128];
    snprintf(expect, sizeof(expect),
            "EMSGSIZE: udp_recv 127.0.0.1:%u: datagram of 5 bytes longer than 4",
            futoin_uv_udp_port(a));
    assert_string_equal(r1.info, expect);
    assert_int_equal(r1.num, UV_EMSGSIZE);
    assert_int_equal(r2.got, 1);
    assert_string_equal(r2.data, "hi");
    close(fd);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
}

/* ---- bind ---- */

typedef struct Bind {
    const char* host;
    unsigned port;
    unsigned flags;
    FutoInUvUdp* u; /* kept (a reference of the test's) */
    int failed;
    char code[32];
    char info[160];
    int num;
} Bind;

static void st_bind(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Bind* b = data;
    futoin_uv_udp_bind(as, b->host, b->port, b->flags);
}

static void st_bound(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Bind* b = data;
    b->u = futoin_uv_udp_ref(futoin_uv_arg_udp(args, 0));
}

static void eh_bind(FutoInAsyncSteps* as, void* data, const char* code)
{
    Bind* b = data;
    b->failed = 1;
    snprintf(b->code, sizeof(b->code), "%s", code);
    snprintf(b->info, sizeof(b->info), "%s", futoin_error_info(as));
    b->num = futoin_uv_errno(as);
    futoin_success(as);
}

static void run_binds(Bind* binds, size_t n)
{
    FutoInAsyncSteps* root = uv_new_root();
    for (size_t i = 0; i < n; ++i) {
        futoin_add(root, st_bind, eh_bind, &binds[i]);
        futoin_add(root, st_bound, NULL, &binds[i]);
    }
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    futoin_asyncsteps_free(root);
}

static void test_udp_bind_errors(void** state)
{
    (void)state;
    unsigned taken = 0;
    int fd = plain_socket(&taken);
    Bind binds[] = {
        { "127.0.0.1", taken, 0, NULL, 0, "", "", 0 },
        { "not-an-ip", 0, 0, NULL, 0, "", "", 0 },
        { "127.0.0.1", 70000, 0, NULL, 0, "", "", 0 },
        { "127.0.0.1", 0, 8, NULL, 0, "", "", 0 },
        { NULL, 0, 0, NULL, 0, "", "", 0 },
    };
    run_binds(binds, sizeof(binds) / sizeof(binds[0]));
    char expect[128];
    snprintf(expect, sizeof(expect), "EADDRINUSE: bind 127.0.0.1:%u", taken);
    assert_string_equal(binds[0].code, FUTOIN_CONNECT_ERROR);
    assert_string_equal(binds[0].info, expect);
    assert_int_equal(binds[0].num, UV_EADDRINUSE);
    assert_string_equal(binds[1].code, FUTOIN_CONNECT_ERROR);
    assert_string_equal(binds[1].info, "EINVAL: bind not-an-ip:0");
    assert_int_equal(binds[1].num, UV_EINVAL);
    assert_string_equal(binds[2].code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(binds[2].info,
            "EINVAL: futoin_uv_udp_bind: port 70000 out of range (0..65535)");
    assert_int_equal(binds[2].num, UV_EINVAL);
    assert_string_equal(binds[3].code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(binds[3].info, "EINVAL: futoin_uv_udp_bind: unknown flags 0x8");
    /* NULL host: the loopback, any port. */
    assert_int_equal(binds[4].failed, 0);
    assert_non_null(binds[4].u);
    assert_true(futoin_uv_udp_port(binds[4].u) > 0);
    futoin_uv_udp_release(binds[4].u);
    close(fd);

    /* The plain function: the same numbers. */
    int err = 0;
    FutoInUvUdp* first = futoin_uv_udp_new(g_uv, "127.0.0.1", 0, 0, &err);
    assert_non_null(first);
    unsigned port = futoin_uv_udp_port(first);
    assert_null(futoin_uv_udp_new(g_uv, "127.0.0.1", port, 0, &err));
    assert_int_equal(err, UV_EADDRINUSE);
    assert_null(futoin_uv_udp_new(g_uv, "::x", 0, 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_udp_new(NULL, NULL, 0, 0, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_udp_new(g_uv, NULL, 65536, 0, NULL));
    futoin_uv_udp_release(first);

    /* Two sockets on one port with FUTOIN_UV_UDP_REUSEADDR. */
    FutoInUvUdp* r1 = futoin_uv_udp_new(g_uv, "127.0.0.1", 0, FUTOIN_UV_UDP_REUSEADDR, &err);
    assert_non_null(r1);
    FutoInUvUdp* r2 = futoin_uv_udp_new(g_uv, "127.0.0.1", futoin_uv_udp_port(r1),
            FUTOIN_UV_UDP_REUSEADDR, &err);
    assert_non_null(r2);
    assert_int_equal(err, 0);
    futoin_uv_udp_release(r1);
    futoin_uv_udp_release(r2);
    assert_int_equal(g_misuse, 0);
}

/* A connected socket learns from the kernel that nobody listens at its
 * peer (the ICMP port unreachable of the loopback): the receive fails
 * with ECONNREFUSED. A send without a peer is refused. */
static void test_udp_connected_refused(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    unsigned gone = 0;
    int fd = plain_socket(&gone);
    close(fd);
    assert_int_equal(futoin_uv_udp_connect(a, "127.0.0.1", gone), 0);
    assert_int_equal(futoin_uv_udp_connect(a, "127.0.0.1", gone), UV_EISCONN);
    assert_int_equal(futoin_uv_udp_connect(a, "127.0.0.1", 0), UV_EINVAL);
    assert_int_equal(futoin_uv_udp_connect(NULL, "127.0.0.1", 1), UV_EINVAL);
    Tx tx = { a, NULL, 0, "ping", 4, 0, "", "", 0 };
    Rx rx;
    memset(&rx, 0, sizeof(rx));
    rx.u = a;
    rx.timeout_ms = 2000;
    FutoInAsyncSteps* root = uv_new_root();
    add_send(root, &tx);
    add_recv(root, &rx);
    Outcome o;
    run_root(root, &o, 5000);
    assert_int_equal(tx.failed, 0);
    assert_int_equal(rx.failed, 1);
    assert_string_equal(rx.code, FUTOIN_COMM_ERROR);
    char expect[64];
    snprintf(expect, sizeof(expect), "ECONNREFUSED: udp_recv 127.0.0.1:%u", futoin_uv_udp_port(a));
    assert_string_equal(rx.info, expect);
    assert_int_equal(rx.num, UV_ECONNREFUSED);
    futoin_asyncsteps_free(root);

    /* No default peer any more: a send to "nowhere" is refused. */
    assert_int_equal(futoin_uv_udp_connect(a, NULL, 0), 0);
    Tx none = { a, NULL, 0, "x", 1, 0, "", "", 0 };
    root = uv_new_root();
    add_send(root, &none);
    run_root(root, &o, 5000);
    assert_int_equal(none.failed, 1);
    assert_string_equal(none.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(none.info, "EDESTADDRREQ: udp_send: no default peer");
    assert_int_equal(none.num, UV_EDESTADDRREQ);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
}

/* Closing the socket under a waiting receive fails it; a send after the
 * close fails too. */
static void st_close_udp(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, 10);
    futoin_uv_udp_close(data);
}

static void st_recv_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    add_recv(as, data);
}

static void st_recv_and_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Rx* rx = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, st_recv_branch, NULL, rx);
    futoin_add(p, st_close_udp, NULL, rx->u);
}

static void test_udp_closed(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    Rx rx;
    memset(&rx, 0, sizeof(rx));
    rx.u = a;
    Tx tx = { a, "127.0.0.1", 9, "x", 1, 0, "", "", 0 };
    Rx again;
    memset(&again, 0, sizeof(again));
    again.u = a;
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_recv_and_close, NULL, &rx);
    add_send(root, &tx);
    add_recv(root, &again);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    char expect[96];
    snprintf(expect, sizeof(expect), "ECANCELED: udp_recv 127.0.0.1:%u: socket closed",
            futoin_uv_udp_port(a));
    assert_string_equal(rx.code, FUTOIN_COMM_ERROR);
    assert_string_equal(rx.info, expect);
    assert_int_equal(rx.num, UV_ECANCELED);
    assert_string_equal(again.info, expect);
    assert_string_equal(tx.code, FUTOIN_COMM_ERROR);
    assert_string_equal(tx.info, "EBADF: udp_send 127.0.0.1:9: socket closed");
    assert_int_equal(tx.num, UV_EBADF);
    assert_int_equal(futoin_uv_udp_connect(a, "127.0.0.1", 9), UV_EINVAL);
    assert_int_equal(futoin_uv_udp_join(a, "239.255.0.1", NULL), UV_EINVAL);
    futoin_asyncsteps_free(root);
    futoin_uv_udp_release(a);
}

/* ---- refused arguments ---- */

static void test_udp_refused(void** state)
{
    (void)state;
    FutoInUvUdp* a = bind_loopback();
    Tx bad_tx[] = {
        { NULL, "127.0.0.1", 1, "x", 1, 0, "", "", 0 },
        { a, "127.0.0.1", 0, "x", 1, 0, "", "", 0 },
        { a, "127.0.0.1", 9, NULL, 3, 0, "", "", 0 },
        { a, "127.0.0.1", 9, "x", FUTOIN_UV_UDP_DATAGRAM_MAX + 1, 0, "", "", 0 },
        { a, "localhost", 9, "x", 1, 0, "", "", 0 },
    };
    const char* expect_tx[] = {
        "EINVAL: futoin_uv_udp_send: u is NULL",
        "EINVAL: futoin_uv_udp_send: port 0 out of range (1..65535)",
        "EINVAL: futoin_uv_udp_send: NULL data with len 3",
        "EINVAL: futoin_uv_udp_send: len 65537 out of range (0..65536)",
        "EINVAL: udp_send localhost:9: not a numeric address",
    };
    Rx bad_rx[2];
    memset(bad_rx, 0, sizeof(bad_rx));
    bad_rx[1].u = a;
    bad_rx[1].max = FUTOIN_UV_UDP_DATAGRAM_MAX + 1;
    FutoInAsyncSteps* root = uv_new_root();
    for (size_t i = 0; i < sizeof(bad_tx) / sizeof(bad_tx[0]); ++i) {
        add_send(root, &bad_tx[i]);
    }
    futoin_add(root, st_recv, eh_rx, &bad_rx[0]);
    futoin_add(root, st_recv, eh_rx, &bad_rx[1]);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    for (size_t i = 0; i < sizeof(bad_tx) / sizeof(bad_tx[0]); ++i) {
        assert_string_equal(bad_tx[i].code, FUTOIN_INTERNAL_ERROR);
        assert_string_equal(bad_tx[i].info, expect_tx[i]);
        assert_int_equal(bad_tx[i].num, UV_EINVAL);
    }
    assert_string_equal(bad_rx[0].info, "EINVAL: futoin_uv_udp_recv: u is NULL");
    assert_string_equal(bad_rx[1].info,
            "EINVAL: futoin_uv_udp_recv: max 65537 out of range (0..65536)");
    assert_int_equal(bad_rx[1].num, UV_EINVAL);
    futoin_asyncsteps_free(root);

    /* The plain functions and NULL. */
    assert_int_equal(futoin_uv_udp_join(NULL, "239.255.0.1", NULL), UV_EINVAL);
    assert_int_equal(futoin_uv_udp_join(a, NULL, NULL), UV_EINVAL);
    assert_int_equal(futoin_uv_udp_leave(NULL, "239.255.0.1", NULL), UV_EINVAL);
    assert_int_equal(futoin_uv_udp_port(NULL), 0);
    assert_int_equal(futoin_uv_udp_queued(NULL), 0);
    assert_null(futoin_uv_udp_handle(NULL));
    assert_non_null(futoin_uv_udp_handle(a));
    assert_null(futoin_uv_udp_ref(NULL));
    assert_null(futoin_uv_arg_udp(NULL, 0));
    futoin_uv_udp_release(NULL);
    futoin_uv_udp_close(NULL);
    futoin_uv_udp_release(a);
    assert_int_equal(g_misuse, 0);
}

/* ---- multicast (run alone: may be skipped) ---- */

static int g_multicast_unavailable;

static void test_udp_multicast(void** state)
{
    (void)state;
    const char* group = "239.255.77.77";
    int err = 0;
    FutoInUvUdp* m1 = futoin_uv_udp_new(g_uv, "0.0.0.0", 0, FUTOIN_UV_UDP_REUSEADDR, &err);
    assert_non_null(m1);
    unsigned port = futoin_uv_udp_port(m1);
    FutoInUvUdp* m2 = futoin_uv_udp_new(g_uv, "0.0.0.0", port, FUTOIN_UV_UDP_REUSEADDR, &err);
    assert_non_null(m2);
    int j1 = futoin_uv_udp_join(m1, group, "127.0.0.1");
    int j2 = j1 ? j1 : futoin_uv_udp_join(m2, group, "127.0.0.1");
    FutoInUvUdp* tx_u = bind_loopback();
    int s1 = uv_udp_set_multicast_interface(futoin_uv_udp_handle(tx_u), "127.0.0.1");
    int s2 = uv_udp_set_multicast_loop(futoin_uv_udp_handle(tx_u), 1);
    if (j1 || j2 || s1 || s2) {
        fprintf(stderr, "test_uv_udp: no multicast on the loopback (%s): skipped\n",
                uv_err_name(j1       ? j1
                                : j2 ? j2
                                : s1 ? s1
                                     : s2));
        g_multicast_unavailable = 1;
        futoin_uv_udp_release(m1);
        futoin_uv_udp_release(m2);
        futoin_uv_udp_release(tx_u);
        return;
    }
    assert_int_equal(futoin_uv_udp_join(m1, group, "127.0.0.1"), UV_EADDRINUSE);
    Tx tx = { tx_u, group, port, "to the group", 12, 0, "", "", 0 };
    Rx r1;
    Rx r2;
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    r1.u = m1;
    r2.u = m2;
    r1.timeout_ms = r2.timeout_ms = 2000;
    FutoInAsyncSteps* root = uv_new_root();
    add_send(root, &tx);
    add_recv(root, &r1);
    add_recv(root, &r2);
    Outcome o;
    run_root(root, &o, 5000);
    futoin_asyncsteps_free(root);
    if (tx.failed && (tx.num == UV_ENETUNREACH || tx.num == UV_EPERM)) {
        fprintf(stderr, "test_uv_udp: multicast send refused (%s): skipped\n", tx.info);
        g_multicast_unavailable = 1;
    } else {
        assert_int_equal(tx.failed, 0);
        /* Both members got it. */
        assert_int_equal(r1.got, 1);
        assert_int_equal(r2.got, 1);
        assert_string_equal(r1.data, "to the group");
        assert_string_equal(r2.data, "to the group");
        assert_int_equal(r1.port, futoin_uv_udp_port(tx_u));
    }
    assert_int_equal(futoin_uv_udp_leave(m1, group, "127.0.0.1"), 0);
    assert_int_not_equal(futoin_uv_udp_leave(m1, group, "127.0.0.1"), 0);
    assert_int_equal(futoin_uv_udp_join(m1, "127.0.0.1", NULL), UV_EINVAL);
    futoin_uv_udp_release(m1);
    futoin_uv_udp_release(m2);
    futoin_uv_udp_release(tx_u);
}

int main(int argc, char** argv)
{
    if (argc > 1 && strcmp(argv[1], "multicast") == 0) {
        const struct CMUnitTest mc[] = {
            UV_STRICT_TEST(test_udp_multicast),
        };
        int failed = cmocka_run_group_tests(mc, NULL, NULL);
        return failed ? failed : g_multicast_unavailable ? SKIPPED : 0;
    }
    const struct CMUnitTest tests[] = {
        UV_STRICT_TEST(test_udp_send_recv),
        UV_STRICT_TEST(test_udp_sender_address),
        UV_STRICT_TEST(test_udp_recv_timeout),
        UV_STRICT_TEST(test_udp_recv_cancel),
        UV_STRICT_TEST(test_udp_queued),
        UV_STRICT_TEST(test_udp_too_long),
        UV_STRICT_TEST(test_udp_bind_errors),
        UV_STRICT_TEST(test_udp_connected_refused),
        UV_STRICT_TEST(test_udp_closed),
        UV_STRICT_TEST(test_udp_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
