/* SPDX-License-Identifier: MIT */
/*
 * UDP sockets: bind, send a datagram, receive one datagram with its
 * sender, a default peer, multicast membership.
 *
 * Receiving is like a stream's read-ahead, counted in datagrams: the first
 * receive step starts uv_udp_recv_start(), and the socket keeps reading
 * between receive steps into a ring of at most FUTOIN_UV_UDP_QUEUE_MAX
 * datagrams. A full ring stops reading, so what comes next waits in the
 * kernel's receive buffer (bounded by SO_RCVBUF, whose overflow the kernel
 * drops and counts): the library never drops a datagram it has read.
 *
 *   on_alloc ──► a buffer of FUTOIN_UV_UDP_DATAGRAM_MAX (+1 for a NUL),
 *                kept as the spare when recvmsg() finds nothing
 *   on_recv  ──► shrink to the datagram, push {data, len, sender} on the
 *                ring; a waiting receive step takes the oldest at once
 *   recv step ─► takes the oldest, or waits (owned by the socket)
 *   cancel   ──► uv_udp_recv_stop(): no late datagram reaches the step
 *
 * The datagram's buffer becomes the step's value as it is (no copy).
 * Out of memory: a receive buffer that cannot be allocated stops reading
 * (the datagram stays in the kernel) and fails a waiting receive step; a
 * sender's address that cannot be copied fails the step and leaves the
 * datagram queued.
 *
 * Lifetime: reference counted like a stream (values, steps and the user
 * hold references); the last release starts uv_close() and the memory goes
 * in the close callback, or at the last release if that comes later.
 */
#include "uv_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Dgram {
    char* data; /* malloc()ed: len bytes and a NUL */
    uint32_t len;
    uint8_t partial; /* UV_UDP_PARTIAL: larger than the buffer */
    struct sockaddr_storage from;
} Dgram;

struct FutoInUvUdp {
    uv_udp_t udp; /* udp.data points back here */
    FutoInUv* uv;
    uint32_t refs;
    uint8_t closing;      /* uv_close() was called */
    uint8_t closed;       /* the close callback ran */
    uint8_t reading;      /* uv_udp_recv_start() is active */
    uint8_t alloc_failed; /* on_alloc could not allocate a buffer */
    uint8_t connected;    /* futoin_uv_udp_connect() set a default peer */
    int error;            /* a receive error no receive step has seen yet */
    char* spare;          /* a receive buffer recvmsg() did not use */
    unsigned port;
    char name[64]; /* "host:port" bound, for wait descriptions and errors */
    char peer[64]; /* "host:port" of the default peer */
    /* The ring of received datagrams: q[head .. head + count). */
    unsigned head;
    unsigned count;
    Dgram q[FUTOIN_UV_UDP_QUEUE_MAX];
    /* The waiting receive step (one at a time) and its limit. */
    FutoInAsyncSteps* rc_as;
    size_t rc_max;
};

/* Parameter blocks of the steps hold a reference to the socket. */
typedef struct {
    FutoInUvUdp* u;
} UdpParams;

/* Frees the queued datagrams: nobody can receive them any more. */
static void drop_queue(FutoInUvUdp* u)
{
    for (unsigned i = 0; i < u->count; ++i) {
        free(u->q[(u->head + i) % FUTOIN_UV_UDP_QUEUE_MAX].data);
    }
    u->count = 0;
    u->head = 0;
}

static void udp_destroy(FutoInUvUdp* u)
{
    drop_queue(u);
    free(u->spare);
    free(u);
}

static void on_udp_closed(uv_handle_t* h)
{
    FutoInUvUdp* u = h->data;
    u->closed = 1;
    if (u->refs == 0) {
        udp_destroy(u);
    }
}

static void stop_reading(FutoInUvUdp* u)
{
    if (u->reading) {
        uv_udp_recv_stop(&u->udp);
        u->reading = 0;
    }
}

/* The socket keeps futoin_uv_run() going only while a receive step waits
 * on it (a queued send is a libuv request, which does so on its own): a
 * socket kept for later, still reading ahead, lets the run end. */
static void end_wait(FutoInUvUdp* u)
{
    u->rc_as = NULL;
    uv_unref((uv_handle_t*)&u->udp);
}

/* Fails the waiting receive step, if any (from a libuv callback). */
static void fail_receiver(FutoInUvUdp* u, const char* code, int err, const char* what)
{
    FutoInAsyncSteps* as = u->rc_as;
    if (as) {
        end_wait(u);
        futoin__uv_failf_owned(as, u, code, err, "udp_recv %s%s", u->name, what);
    }
}

static void udp_close(FutoInUvUdp* u)
{
    if (u->closing) {
        return;
    }
    u->closing = 1;
    u->reading = 0;
    /* As documented: the queue goes with the close, not with the last
     * reference (futoin_uv_udp_queued() is then 0). */
    drop_queue(u);
    uv_close((uv_handle_t*)&u->udp, on_udp_closed);
    fail_receiver(u, FUTOIN_COMM_ERROR, UV_ECANCELED, ": socket closed");
}

void futoin_uv_udp_close(FutoInUvUdp* u)
{
    if (u) {
        udp_close(u);
    }
}

FutoInUvUdp* futoin_uv_udp_ref(FutoInUvUdp* u)
{
    if (u) {
        ++u->refs;
    }
    return u;
}

void futoin_uv_udp_release(FutoInUvUdp* u)
{
    if (!u || --u->refs > 0) {
        return;
    }
    if (u->closed) {
        udp_destroy(u);
    } else {
        udp_close(u);
    }
}

unsigned futoin_uv_udp_port(const FutoInUvUdp* u)
{
    return u ? u->port : 0;
}

uv_udp_t* futoin_uv_udp_handle(FutoInUvUdp* u)
{
    return u ? &u->udp : NULL;
}

size_t futoin_uv_udp_queued(const FutoInUvUdp* u)
{
    return u ? u->count : 0;
}

static void udp_value_cleanup(FutoInBinaryValue* v)
{
    futoin_uv_udp_release(v->custom_data);
}

const FutoInType futoin_uv_udp_type = { FTN_TYPE_CUSTOM_OBJECT, udp_value_cleanup };

FutoInUvUdp* futoin_uv_arg_udp(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || args->args[i].type != &futoin_uv_udp_type) {
        return NULL;
    }
    return args->args[i].custom_data;
}

static void udp_params_release(void* p)
{
    futoin_uv_udp_release(((UdpParams*)p)->u);
}

/* Fills addr when host is a numeric IPv4 or IPv6 address. */
static int numeric_addr(const char* host, unsigned port, struct sockaddr_storage* addr)
{
    memset(addr, 0, sizeof(*addr));
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in*)addr) == 0) {
        return 0;
    }
    return uv_ip6_addr(host, (int)port, (struct sockaddr_in6*)addr);
}

/* "host:port" ("[v6]:port") into buf. */
static void host_port(char* buf, size_t size, const char* host, unsigned port)
{
    int v6 = strchr(host, ':') != NULL;
    snprintf(buf, size, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* The numeric address and port of a sockaddr. */
static unsigned addr_name(const struct sockaddr_storage* a, char* ip, size_t size)
{
    ip[0] = '\0';
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6* a6 = (const struct sockaddr_in6*)a;
        uv_ip6_name(a6, ip, size);
        return ntohs(a6->sin6_port);
    }
    const struct sockaddr_in* a4 = (const struct sockaddr_in*)a;
    uv_ip4_name(a4, ip, size);
    return ntohs(a4->sin_port);
}

#define UDP_FLAGS ((unsigned)(FUTOIN_UV_UDP_REUSEADDR | FUTOIN_UV_UDP_IPV6ONLY))

FutoInUvUdp* futoin_uv_udp_new(FutoInUv* uv, const char* host, unsigned port, unsigned flags,
        int* uv_error)
{
    int dummy;
    if (!uv_error) {
        uv_error = &dummy;
    }
    *uv_error = 0;
    if (!host || !*host) {
        host = "127.0.0.1";
    }
    struct sockaddr_storage addr;
    if (!uv || port > 65535 || (flags & ~UDP_FLAGS) || numeric_addr(host, port, &addr) != 0) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    FutoInUvUdp* u = calloc(1, sizeof(*u));
    if (!u) {
        *uv_error = UV_ENOMEM;
        return NULL;
    }
    int err = uv_udp_init(uv->uv, &u->udp);
    if (err) {
        free(u);
        *uv_error = err;
        return NULL;
    }
    u->udp.data = u;
    u->uv = uv;
    uv_unref((uv_handle_t*)&u->udp);
    unsigned uvflags = 0;
    if (flags & FUTOIN_UV_UDP_REUSEADDR) {
        uvflags |= UV_UDP_REUSEADDR;
    }
    if ((flags & FUTOIN_UV_UDP_IPV6ONLY) && addr.ss_family == AF_INET6) {
        uvflags |= UV_UDP_IPV6ONLY;
    }
    err = uv_udp_bind(&u->udp, (const struct sockaddr*)&addr, uvflags);
    if (!err) {
        struct sockaddr_storage bound;
        int len = (int)sizeof(bound);
        err = uv_udp_getsockname(&u->udp, (struct sockaddr*)&bound, &len);
        if (!err) {
            char ip[64];
            u->port = addr_name(&bound, ip, sizeof(ip));
            host_port(u->name, sizeof(u->name), host, u->port);
        }
    }
    if (err) {
        /* refs is 0: the close callback frees it. */
        udp_close(u);
        *uv_error = err;
        return NULL;
    }
    u->refs = 1;
    return u;
}

int futoin_uv_udp_connect(FutoInUvUdp* u, const char* host, unsigned port)
{
    if (!u || u->closing) {
        return UV_EINVAL;
    }
    if (!host) {
        int err = uv_udp_connect(&u->udp, NULL);
        if (!err) {
            u->connected = 0;
            u->peer[0] = '\0';
        }
        return err;
    }
    struct sockaddr_storage addr;
    if (port == 0 || port > 65535 || numeric_addr(host, port, &addr) != 0) {
        return UV_EINVAL;
    }
    int err = uv_udp_connect(&u->udp, (const struct sockaddr*)&addr);
    if (!err) {
        u->connected = 1;
        host_port(u->peer, sizeof(u->peer), host, port);
    }
    return err;
}

static int membership(FutoInUvUdp* u, const char* group, const char* iface, uv_membership m)
{
    if (!u || !group || u->closing) {
        return UV_EINVAL;
    }
    return uv_udp_set_membership(&u->udp, group, iface, m);
}

int futoin_uv_udp_join(FutoInUvUdp* u, const char* group, const char* iface)
{
    return membership(u, group, iface, UV_JOIN_GROUP);
}

int futoin_uv_udp_leave(FutoInUvUdp* u, const char* group, const char* iface)
{
    return membership(u, group, iface, UV_LEAVE_GROUP);
}

/* ------------------------------------------------------------------------ */
/* Bind step                                                                 */

typedef struct {
    unsigned port;
    unsigned flags;
    char host[];
} BindParams;

static void bind_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const BindParams* p = data;
    FutoInUv* uv = futoin__uv_require(as, "udp_bind");
    if (!uv) {
        return;
    }
    int err = 0;
    FutoInUvUdp* u = futoin_uv_udp_new(uv, p->host, p->port, p->flags, &err);
    if (!u) {
        char target[128];
        host_port(target, sizeof(target), *p->host ? p->host : "127.0.0.1", p->port);
        futoin__uv_failf(as, FUTOIN_CONNECT_ERROR, err, "bind %s", target);
        return;
    }
    futoin_success1(as, futoin_val_custom(&futoin_uv_udp_type, u));
}

void futoin_uv_udp_bind(FutoInAsyncSteps* as, const char* host, unsigned port, unsigned flags)
{
    if (port > 65535) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_bind: port %u out of range (0..65535)",
                port);
        return;
    }
    if (flags & ~UDP_FLAGS) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_bind: unknown flags 0x%x", flags);
        return;
    }
    if (!host) {
        host = "";
    }
    size_t hlen = strlen(host);
    BindParams* p = futoin__uv_add_step(as, bind_start, sizeof(BindParams) + hlen + 1, NULL,
            "udp_bind: out of memory");
    if (p) {
        p->port = port;
        p->flags = flags;
        memcpy(p->host, host, hlen + 1);
    }
}

/* ------------------------------------------------------------------------ */
/* Send step                                                                 */

typedef struct {
    UdpParams base;
    unsigned port;
    size_t len;
    char* host; /* NULL: the default peer; else after bytes[] */
    char bytes[];
} SendParams;

typedef struct {
    uv_udp_send_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled */
    char target[64];
    char bytes[];
} SendOp;

static void on_sent(uv_udp_send_t* req, int status)
{
    SendOp* op = req->data;
    if (op->as) {
        if (status < 0) {
            futoin__uv_failf_owned(op->as, op, FUTOIN_COMM_ERROR, status, "udp_send %s",
                    op->target);
        } else {
            futoin_owned_success(op->as, op, NULL);
        }
    }
    free(op);
}

/* libuv cannot withdraw a queued send: it finishes and frees itself. */
static void send_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((SendOp*)data)->as = NULL;
}

static void send_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    SendParams* p = data;
    FutoInUvUdp* u = p->base.u;
    char target[64];
    struct sockaddr_storage addr;
    const struct sockaddr* to = NULL;
    if (p->host) {
        host_port(target, sizeof(target), p->host, p->port);
        if (numeric_addr(p->host, p->port, &addr) != 0) {
            futoin__uv_failf(as, FUTOIN_INTERNAL_ERROR, UV_EINVAL,
                    "udp_send %s: not a numeric address", target);
            return;
        }
        to = (const struct sockaddr*)&addr;
    } else if (u->connected) {
        snprintf(target, sizeof(target), "%s", u->peer);
    } else {
        futoin__uv_fail(as, FUTOIN_INTERNAL_ERROR, UV_EDESTADDRREQ, "udp_send: no default peer");
        return;
    }
    if (u->closing) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, UV_EBADF, "udp_send %s: socket closed", target);
        return;
    }
    uv_buf_t buf = uv_buf_init(p->bytes, (unsigned)p->len);
    int n = uv_udp_try_send(&u->udp, &buf, 1, to);
    if (n >= 0) {
        futoin_success(as);
        return;
    }
    if (n != UV_EAGAIN) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, n, "udp_send %s", target);
        return;
    }
    /* The kernel's buffer is full (or sends are queued): libuv queues it.
     * The parameters die with the step, but libuv keeps the bytes until it
     * is done: they move to the request. */
    SendOp* op = malloc(sizeof(*op) + p->len);
    if (!op) {
        futoin__uv_failf(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "udp_send %s", target);
        return;
    }
    op->req.data = op;
    op->as = as;
    memcpy(op->target, target, sizeof(target));
    memcpy(op->bytes, p->bytes, p->len);
    buf = uv_buf_init(op->bytes, (unsigned)p->len);
    int err = uv_udp_send(&op->req, &u->udp, &buf, 1, to, on_sent);
    if (err) {
        free(op);
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "udp_send %s", target);
        return;
    }
    futoin_wait_owned(as, send_cancel, op);
    futoin__uv_wait_info(as, "udp_send", target);
}

void futoin_uv_udp_send(FutoInAsyncSteps* as, FutoInUvUdp* u, const char* host, unsigned port,
        const void* data, size_t len)
{
    if (!u) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_udp_send: u is NULL");
        return;
    }
    if (host && (port == 0 || port > 65535)) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_send: port %u out of range (1..65535)",
                port);
        return;
    }
    if (len > FUTOIN_UV_UDP_DATAGRAM_MAX) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_send: len %zu out of range (0..%u)", len,
                (unsigned)FUTOIN_UV_UDP_DATAGRAM_MAX);
        return;
    }
    if (!data && len) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_send: NULL data with len %zu", len);
        return;
    }
    size_t hlen = host ? strlen(host) + 1 : 0;
    SendParams* p = futoin__uv_add_step(as, send_start, sizeof(SendParams) + len + hlen,
            udp_params_release, "udp_send: out of memory");
    if (!p) {
        return;
    }
    p->base.u = futoin_uv_udp_ref(u);
    p->port = port;
    p->len = len;
    if (len) {
        memcpy(p->bytes, data, len);
    }
    if (host) {
        p->host = p->bytes + len;
        memcpy(p->host, host, hlen);
    }
}

/* ------------------------------------------------------------------------ */
/* Receive step                                                              */

/* Room for the text of a receive failure. */
#define RECV_WHAT_SIZE 96

/* Takes the oldest datagram into args, or says why not (RD_* of
 * uv_read.c's kind: 1 done, -1 failed with *err, *code and what). */
static int take(FutoInUvUdp* u, size_t max, FutoInArgs* args, const char** code, int* err,
        char* what)
{
    Dgram* d = &u->q[u->head];
    if (d->partial || d->len > max) {
        if (d->partial) {
            snprintf(what, RECV_WHAT_SIZE, ": datagram truncated");
        } else {
            snprintf(what, RECV_WHAT_SIZE, ": datagram of %lu bytes longer than %zu",
                    (unsigned long)d->len, max);
        }
        /* Consumed: it cannot be received any other way. */
        free(d->data);
        u->head = (u->head + 1) % FUTOIN_UV_UDP_QUEUE_MAX;
        --u->count;
        *code = FUTOIN_COMM_ERROR;
        *err = UV_EMSGSIZE;
        return -1;
    }
    char ip[64];
    unsigned port = addr_name(&d->from, ip, sizeof(ip));
    FutoInBinaryValue sender = futoin_val_strdup(ip);
    if (!sender.type) {
        /* The datagram stays queued for the next receive step. */
        what[0] = '\0';
        *code = FUTOIN_INTERNAL_ERROR;
        *err = UV_ENOMEM;
        return -1;
    }
    memset(args, 0, sizeof(*args));
    args->arg0 = futoin__uv_bytes_adopt(d->data, d->len, 0);
    args->arg1 = sender;
    args->arg2 = futoin_val_u32(port);
    u->head = (u->head + 1) % FUTOIN_UV_UDP_QUEUE_MAX;
    --u->count;
    return 1;
}

static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf)
{
    (void)suggested;
    FutoInUvUdp* u = h->data;
    if (u->count == FUTOIN_UV_UDP_QUEUE_MAX) {
        /* Not expected (reading stops when the ring fills): libuv reports
         * UV_ENOBUFS and on_recv() stops reading. */
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    if (!u->spare) {
        u->spare = malloc(FUTOIN_UV_UDP_DATAGRAM_MAX + 1);
        if (!u->spare) {
            u->alloc_failed = 1;
            *buf = uv_buf_init(NULL, 0);
            return;
        }
    }
    *buf = uv_buf_init(u->spare, FUTOIN_UV_UDP_DATAGRAM_MAX);
}

/* Hands the oldest datagram (or the pending error) to the waiting step. */
static void serve_receiver(FutoInUvUdp* u)
{
    FutoInAsyncSteps* as = u->rc_as;
    if (!as || u->count == 0) {
        return;
    }
    end_wait(u);
    FutoInArgs args;
    const char* code = NULL;
    int err = 0;
    char what[RECV_WHAT_SIZE];
    if (take(u, u->rc_max, &args, &code, &err, what) > 0) {
        futoin_owned_success(as, u, &args);
    } else {
        futoin__uv_failf_owned(as, u, code, err, "udp_recv %s%s", u->name, what);
    }
}

static void on_recv(uv_udp_t* h, ssize_t nread, const uv_buf_t* buf, const struct sockaddr* addr,
        unsigned flags)
{
    (void)buf;
    FutoInUvUdp* u = h->data;
    if (nread == 0 && !addr) {
        return; /* nothing more to read now: the buffer stays the spare */
    }
    if (nread < 0) {
        if (nread == UV_ENOBUFS) {
            /* No buffer: out of memory, or the ring is full. Either way the
             * datagram stays in the kernel until the next receive step
             * reads again. */
            stop_reading(u);
            if (u->alloc_failed) {
                u->alloc_failed = 0;
                fail_receiver(u, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "");
            }
            return;
        }
        /* An error the kernel reports for the socket (an ICMP error of a
         * connected peer): once, to the waiting or the next receive step. */
        if (u->rc_as) {
            fail_receiver(u, FUTOIN_COMM_ERROR, (int)nread, "");
        } else {
            u->error = (int)nread;
        }
        return;
    }
    char* data = u->spare;
    u->spare = NULL;
    /* Shrink to the datagram; if that fails, the larger block does. */
    char* fit = realloc(data, (size_t)nread + 1);
    if (fit) {
        data = fit;
    }
    data[nread] = '\0';
    Dgram* d = &u->q[(u->head + u->count) % FUTOIN_UV_UDP_QUEUE_MAX];
    d->data = data;
    d->len = (uint32_t)nread;
    d->partial = (flags & UV_UDP_PARTIAL) != 0;
    memset(&d->from, 0, sizeof(d->from));
    memcpy(&d->from, addr,
            addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    ++u->count;
    serve_receiver(u);
    if (u->count == FUTOIN_UV_UDP_QUEUE_MAX) {
        stop_reading(u);
    }
}

static void recv_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInUvUdp* u = data;
    end_wait(u);
    /* Nothing is read for a step that is gone: a late datagram waits in
     * the kernel for the next receive step. */
    stop_reading(u);
}

typedef struct {
    UdpParams base;
    size_t max;
} RecvParams;

static void recv_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RecvParams* p = data;
    FutoInUvUdp* u = p->base.u;
    if (u->closing) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, UV_ECANCELED, "udp_recv %s: socket closed",
                u->name);
        return;
    }
    if (u->rc_as) {
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, UV_EBUSY, "udp_recv %s: another receive is pending",
                u->name);
        return;
    }
    if (u->count > 0) {
        FutoInArgs a;
        const char* code = NULL;
        int err = 0;
        char what[RECV_WHAT_SIZE];
        if (take(u, p->max, &a, &code, &err, what) > 0) {
            futoin_success_args(as, &a);
        } else {
            futoin__uv_failf(as, code, err, "udp_recv %s%s", u->name, what);
        }
        return;
    }
    if (u->error) {
        int err = u->error;
        u->error = 0;
        futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "udp_recv %s", u->name);
        return;
    }
    if (!u->reading) {
        int err = uv_udp_recv_start(&u->udp, on_alloc, on_recv);
        if (err) {
            futoin__uv_failf(as, FUTOIN_COMM_ERROR, err, "udp_recv %s", u->name);
            return;
        }
        u->reading = 1;
    }
    u->rc_as = as;
    u->rc_max = p->max;
    uv_ref((uv_handle_t*)&u->udp);
    /* Owned by the socket: only its datagrams end the wait. */
    futoin_wait_owned(as, recv_cancel, u);
    futoin__uv_wait_info(as, "udp_recv", u->name);
}

void futoin_uv_udp_recv(FutoInAsyncSteps* as, FutoInUvUdp* u, size_t max)
{
    if (!u) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_udp_recv: u is NULL");
        return;
    }
    if (max > FUTOIN_UV_UDP_DATAGRAM_MAX) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_udp_recv: max %zu out of range (0..%u)", max,
                (unsigned)FUTOIN_UV_UDP_DATAGRAM_MAX);
        return;
    }
    RecvParams* p = futoin__uv_add_step(as, recv_start, sizeof(RecvParams), udp_params_release,
            "udp_recv: out of memory");
    if (p) {
        p->base.u = futoin_uv_udp_ref(u);
        p->max = max ? max : FUTOIN_UV_UDP_DATAGRAM_MAX;
    }
}
