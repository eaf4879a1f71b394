/* SPDX-License-Identifier: MIT */
/*
 * futoin_uv_tcp_connect(): resolve (unless numeric), then try each address
 * in turn until one connects; the step gets the stream.
 */
#include "uv_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CONNECT_RESOLVING = 1, CONNECT_CONNECTING };

typedef struct {
    FutoInUvLookup* lookup;
    uv_connect_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled: libuv callbacks only free */
    FutoInUv* uv;
    struct addrinfo* res;
    struct addrinfo* next;
    FutoInUvStream* s; /* the attempt in progress */
    int phase;
    int last_err;
    unsigned port;
    char host[];
} ConnectOp;

static void connect_op_free(ConnectOp* op)
{
    if (op->res) {
        uv_freeaddrinfo(op->res);
    }
    free(op);
}

static void connect_fail(ConnectOp* op, int err)
{
    FutoInAsyncSteps* as = op->as;
    char what[160];
    snprintf(what, sizeof(what), "connect %s:%u", op->host, op->port);
    /* Owned by op (inside the step's callback: its own error). */
    futoin__uv_fail_owned(as, op, FUTOIN_CONNECT_ERROR, err, what);
    connect_op_free(op);
}

static void on_connected(uv_connect_t* req, int status);

/* Starts a connection attempt to addr. Returns 0, or a libuv error when it
 * could not even start (the attempt's stream is then already closing). */
static int connect_attempt(ConnectOp* op, const struct sockaddr* addr)
{
    FutoInUvStream* s = futoin__uv_stream_alloc(op->uv);
    if (!s) {
        return UV_ENOMEM;
    }
    op->req.data = op;
    int err = uv_tcp_connect(&op->req, &s->tcp, addr, on_connected);
    if (err) {
        futoin__uv_stream_close(s);
        return err;
    }
    op->s = s;
    op->phase = CONNECT_CONNECTING;
    return 0;
}

/* Tries the remaining resolved addresses in turn; fails the step when
 * none is left. */
static void connect_next(ConnectOp* op)
{
    while (op->next) {
        struct addrinfo* ai = op->next;
        op->next = ai->ai_next;
        int err = connect_attempt(op, ai->ai_addr);
        if (!err) {
            return;
        }
        op->last_err = err;
    }
    connect_fail(op, op->last_err ? op->last_err : UV_EAI_NONAME);
}

static void on_connected(uv_connect_t* req, int status)
{
    ConnectOp* op = req->data;
    FutoInUvStream* s = op->s;
    op->s = NULL;
    if (!op->as) {
        /* Cancelled: the cancel handler closed the stream (this is libuv
         * reporting ECANCELED for it); only the request memory is left. */
        connect_op_free(op);
        return;
    }
    if (status < 0) {
        op->last_err = status;
        futoin__uv_stream_close(s);
        connect_next(op);
        return;
    }
    FutoInAsyncSteps* as = op->as;
    int v6 = strchr(op->host, ':') != NULL;
    snprintf(s->peer, sizeof(s->peer), "%s%s%s:%u", v6 ? "[" : "", op->host, v6 ? "]" : "",
            op->port);
    /* The value's reference is the only one: nobody keeping the stream
     * means it is closed once the receiving step returns. */
    s->refs = 1;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0 = futoin_val_custom(&futoin_uv_stream_type, s);
    futoin_owned_success(as, op, &args);
    connect_op_free(op);
}

static void on_resolved(void* data, int status, struct addrinfo* res)
{
    ConnectOp* op = data;
    op->res = res;
    op->lookup = NULL;
    if (status < 0) {
        connect_fail(op, status);
        return;
    }
    op->next = res;
    connect_next(op);
}

static void connect_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ConnectOp* op = data;
    op->as = NULL;
    if (op->phase == CONNECT_RESOLVING) {
        /* The lookup ends on its own; nothing of it reaches op. */
        futoin__uv_lookup_cancel(op->lookup);
        connect_op_free(op);
    } else if (op->s) {
        /* on_connected(ECANCELED) frees op, the close callback the stream. */
        futoin__uv_stream_close(op->s);
    }
}

/* Fills addr when host is a numeric IPv4 or IPv6 address. */
static int parse_numeric(const char* host, unsigned port, struct sockaddr_storage* addr)
{
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in*)addr) == 0) {
        return 0;
    }
    return uv_ip6_addr(host, (int)port, (struct sockaddr_in6*)addr);
}

static void connect_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* host = data;
    unsigned port;
    memcpy(&port, host + strlen(host) + 1, sizeof(port));
    FutoInUv* uv = futoin__uv_require(as, "connect");
    if (!uv) {
        return;
    }
    size_t hlen = strlen(host);
    ConnectOp* op = calloc(1, sizeof(*op) + hlen + 1);
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "connect: out of memory");
        return;
    }
    op->as = as;
    op->uv = uv;
    op->port = port;
    memcpy(op->host, host, hlen + 1);

    struct sockaddr_storage addr;
    int err;
    if (parse_numeric(host, port, &addr) == 0) {
        err = connect_attempt(op, (const struct sockaddr*)&addr);
    } else {
        struct addrinfo hints;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        char service[16];
        snprintf(service, sizeof(service), "%u", port);
        op->phase = CONNECT_RESOLVING;
        err = futoin__uv_lookup(uv, host, service, &hints, on_resolved, op, &op->lookup);
    }
    if (err) {
        connect_fail(op, err);
        return;
    }
    futoin_wait_owned(as, connect_cancel, op);
    char target[300];
    int v6 = strchr(host, ':') != NULL;
    snprintf(target, sizeof(target), "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
    futoin__uv_wait_info(as, "connect", target);
}

void futoin_uv_tcp_connect(FutoInAsyncSteps* as, const char* host, unsigned port)
{
    if (!host) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_tcp_connect: host is NULL");
        return;
    }
    if (port == 0 || port > 65535) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_tcp_connect: port %u out of range (1..65535)",
                port);
        return;
    }
    size_t hlen = strlen(host);
    /* Layout: host string, NUL, then the port (aligned by the copy). */
    char* p = futoin__uv_add_step(as, connect_start, hlen + 1 + sizeof(unsigned), NULL,
            "connect: out of memory");
    if (p) {
        memcpy(p, host, hlen + 1);
        memcpy(p + hlen + 1, &port, sizeof(port));
    }
}
