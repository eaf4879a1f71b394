/* SPDX-License-Identifier: MIT */
/*
 * Servers: TCP and Unix socket listeners, accept, and an accept loop.
 *
 * Accepting is pull-based: libuv reports a pending connection, and if no
 * accept step waits the connection stays in the kernel (libuv pauses the
 * listening watcher until uv_accept() is called), so a server that cannot
 * keep up pushes back through its listen backlog instead of queueing
 * connections in memory.
 */
/* SO_REUSEPORT is not POSIX. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "uv_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Port sharing (FUTOIN_UV_SERVER_REUSEPORT). Where the kernel spreads the
 * connections of a port over the sockets bound to it (Linux SO_REUSEPORT,
 * FreeBSD SO_REUSEPORT_LB), each server has a socket of its own. Elsewhere
 * (macOS and the other BSDs, whose SO_REUSEPORT hands every connection to
 * one socket; on Linux the build with FUTOIN_PORTABLE_POSIX, which tests
 * this path) the servers of the process that ask for one address and port
 * share one listening socket, each through a descriptor of its own: all of
 * their loops hear of a new connection, and the one that accepts first
 * takes it (the others' accept() finds nothing, which libuv ignores). */
#if defined(__linux__) && !defined(FUTOIN_PORTABLE_POSIX) && defined(SO_REUSEPORT)
#define REUSEPORT_BALANCED SO_REUSEPORT
#elif defined(__FreeBSD__) && !defined(FUTOIN_PORTABLE_POSIX) && defined(SO_REUSEPORT_LB)
#define REUSEPORT_BALANCED SO_REUSEPORT_LB
#endif

/* A new TCP socket, non-blocking and closed on exec. */
static int new_socket(int family)
{
#if defined(__linux__) && !defined(FUTOIN_PORTABLE_POSIX)
    return socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
#else
    /* macOS has no SOCK_CLOEXEC and SOCK_NONBLOCK. */
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd >= 0
            && (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0
                    || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
#endif
}

static socklen_t addr_len(const struct sockaddr_storage* addr)
{
    return addr->ss_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                       : (socklen_t)sizeof(struct sockaddr_in);
}

#if !defined(REUSEPORT_BALANCED)
typedef struct PortShare PortShare;
struct PortShare {
    PortShare* next;
    struct sockaddr_storage addr; /* where it is bound (the real port) */
    int fd;                       /* the listening socket */
    unsigned users;               /* servers holding a descriptor of it */
};

static uv_once_t g_share_once = UV_ONCE_INIT;
static uv_mutex_t g_share_lock;
static PortShare* g_shares;

static void share_init(void)
{
    if (uv_mutex_init(&g_share_lock) != 0) {
        abort();
    }
}

static int same_addr(const struct sockaddr_storage* a, const struct sockaddr_storage* b)
{
    if (a->ss_family != b->ss_family) {
        return 0;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6* x = (const struct sockaddr_in6*)a;
        const struct sockaddr_in6* y = (const struct sockaddr_in6*)b;
        return x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id
                && memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    const struct sockaddr_in* x = (const struct sockaddr_in*)a;
    const struct sockaddr_in* y = (const struct sockaddr_in*)b;
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
}

static unsigned addr_port(const struct sockaddr_storage* addr)
{
    return ntohs(addr->ss_family == AF_INET6 ? ((const struct sockaddr_in6*)addr)->sin6_port
                                             : ((const struct sockaddr_in*)addr)->sin_port);
}

/* A descriptor of the shared socket bound to addr, made and bound first
 * if no server of the process has it (port 0: always a new one, on a
 * port of its own). Returns the descriptor or a libuv error. */
static int share_socket(const struct sockaddr_storage* addr, PortShare** out)
{
    uv_once(&g_share_once, share_init);
    uv_mutex_lock(&g_share_lock);
    int fd = -1;
    int err = 0;
    PortShare* sh = NULL;
    if (addr_port(addr) != 0) {
        for (sh = g_shares; sh && !same_addr(&sh->addr, addr); sh = sh->next) {
        }
    }
    if (!sh) {
        int one = 1;
        socklen_t len = (socklen_t)sizeof(struct sockaddr_storage);
        sh = calloc(1, sizeof(*sh));
        if (!sh) {
            err = UV_ENOMEM;
        } else if ((sh->fd = new_socket(addr->ss_family)) < 0
                || setsockopt(sh->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
                || bind(sh->fd, (const struct sockaddr*)addr, addr_len(addr)) != 0
                || getsockname(sh->fd, (struct sockaddr*)&sh->addr, &len) != 0) {
            err = uv_translate_sys_error(errno);
            if (sh->fd >= 0) {
                close(sh->fd);
            }
            free(sh);
            sh = NULL;
        } else {
            sh->next = g_shares;
            g_shares = sh;
        }
    }
    if (sh) {
        /* Closed on exec like the socket; O_NONBLOCK is the socket's own. */
        fd = fcntl(sh->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            err = uv_translate_sys_error(errno);
        } else {
            ++sh->users;
            *out = sh;
        }
        if (sh->users == 0) { /* a new share whose first descriptor failed */
            g_shares = sh->next;
            close(sh->fd);
            free(sh);
        }
    }
    uv_mutex_unlock(&g_share_lock);
    return fd >= 0 ? fd : err;
}

/* A server no longer holds a descriptor of the shared socket: the last
 * one closes it. */
static void share_release(void* share)
{
    PortShare* sh = share;
    if (!sh) {
        return;
    }
    uv_mutex_lock(&g_share_lock);
    if (--sh->users == 0) {
        PortShare** p = &g_shares;
        while (*p != sh) {
            p = &(*p)->next;
        }
        *p = sh->next;
        close(sh->fd);
        free(sh);
    }
    uv_mutex_unlock(&g_share_lock);
}
#else
static void share_release(void* share)
{
    (void)share;
}
#endif

static void server_destroy(FutoInUvServer* srv)
{
    free(srv);
}

static void on_server_closed(uv_handle_t* h)
{
    FutoInUvServer* srv = h->data;
    srv->closed = 1;
    share_release(srv->share);
    srv->share = NULL;
    if (srv->is_pipe && srv->name[0]) {
        /* The socket file is the server's: it goes with it. */
        unlink(srv->name);
    }
    if (srv->refs == 0) {
        server_destroy(srv);
    }
}

static void fail_acceptor(FutoInUvServer* srv, int err, const char* what)
{
    FutoInAsyncSteps* as = srv->acc_as;
    if (as) {
        srv->acc_as = NULL;
        futoin__uv_fail_owned(as, srv, FUTOIN_COMM_ERROR, err, what);
    }
}

static void server_close(FutoInUvServer* srv)
{
    if (srv->closing) {
        return;
    }
    srv->closing = 1;
    uv_close((uv_handle_t*)&srv->tcp, on_server_closed);
    fail_acceptor(srv, UV_ECANCELED, "accept: server closed");
}

void futoin_uv_server_close(FutoInUvServer* srv)
{
    if (srv) {
        server_close(srv);
    }
}

FutoInUvServer* futoin_uv_server_ref(FutoInUvServer* srv)
{
    if (srv) {
        ++srv->refs;
    }
    return srv;
}

void futoin_uv_server_release(FutoInUvServer* srv)
{
    if (!srv || --srv->refs > 0) {
        return;
    }
    if (srv->closed) {
        server_destroy(srv);
    } else {
        server_close(srv);
    }
}

unsigned futoin_uv_server_port(const FutoInUvServer* srv)
{
    return srv ? srv->port : 0;
}

static void server_value_cleanup(FutoInBinaryValue* v)
{
    futoin_uv_server_release(v->custom_data);
}

const FutoInType futoin_uv_server_type = { FTN_TYPE_CUSTOM_OBJECT, server_value_cleanup };

FutoInUvServer* futoin_uv_arg_server(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || args->args[i].type != &futoin_uv_server_type) {
        return NULL;
    }
    return args->args[i].custom_data;
}

/* Accepts one reported connection into a new stream (one reference). */
static int accept_one(FutoInUvServer* srv, FutoInUvStream** out)
{
    FutoInUvStream* s = srv->is_pipe ? futoin__uv_pipe_alloc(srv->uv, srv->name)
                                     : futoin__uv_stream_alloc(srv->uv);
    if (!s) {
        return UV_ENOMEM;
    }
    --srv->pending;
    int err = uv_accept((uv_stream_t*)&srv->tcp, (uv_stream_t*)&s->tcp);
    if (err) {
        futoin__uv_stream_close(s);
        return err;
    }
    s->refs = 1;
    *out = s;
    return 0;
}

static FutoInArgs stream_args(FutoInUvStream* s)
{
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0 = futoin_val_custom(&futoin_uv_stream_type, s);
    return args;
}

static void on_connection(uv_stream_t* h, int status)
{
    FutoInUvServer* srv = h->data;
    if (status < 0) {
        if (srv->acc_as) {
            fail_acceptor(srv, status, "accept");
        } else {
            srv->error = status;
        }
        return;
    }
    ++srv->pending;
    FutoInAsyncSteps* as = srv->acc_as;
    if (!as) {
        return;
    }
    srv->acc_as = NULL;
    FutoInUvStream* s = NULL;
    int err = accept_one(srv, &s);
    if (err) {
        futoin__uv_fail_owned(as, srv, FUTOIN_COMM_ERROR, err, "accept");
        return;
    }
    FutoInArgs args = stream_args(s);
    futoin_owned_success(as, srv, &args);
}

static int bind_addr(const char* host, unsigned port, struct sockaddr_storage* addr)
{
    if (!host || !*host) {
        host = "127.0.0.1";
    }
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in*)addr) == 0) {
        return 0;
    }
    return uv_ip6_addr(host, (int)port, (struct sockaddr_in6*)addr);
}

/* A bound socket that other servers may share the port with, for
 * uv_tcp_open(): with the kernel's balancing, or a descriptor of the
 * process's shared socket (*share, released with share_release()).
 * Returns the descriptor or a libuv error. */
static int reuseport_socket(const struct sockaddr_storage* addr, void** share)
{
    *share = NULL;
#if defined(REUSEPORT_BALANCED)
    int fd = new_socket(addr->ss_family);
    if (fd < 0) {
        return uv_translate_sys_error(errno);
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0
            || setsockopt(fd, SOL_SOCKET, REUSEPORT_BALANCED, &one, sizeof(one)) != 0
            || bind(fd, (const struct sockaddr*)addr, addr_len(addr)) != 0) {
        int err = uv_translate_sys_error(errno);
        close(fd);
        return err;
    }
    return fd;
#else
    PortShare* sh = NULL;
    int fd = share_socket(addr, &sh);
    *share = sh;
    return fd;
#endif
}

FutoInUvServer* futoin_uv_server_new(FutoInUv* uv, const char* host, unsigned port, int backlog,
        int* uv_error)
{
    return futoin_uv_server_new_ex(uv, host, port, backlog, 0, uv_error);
}

FutoInUvServer* futoin_uv_server_new_ex(FutoInUv* uv, const char* host, unsigned port, int backlog,
        unsigned flags, int* uv_error)
{
    int dummy;
    if (!uv_error) {
        uv_error = &dummy;
    }
    *uv_error = 0;
    struct sockaddr_storage addr;
    if (!uv || port > 65535 || backlog < 0 || (flags & ~(unsigned)FUTOIN_UV_SERVER_REUSEPORT)
            || bind_addr(host, port, &addr) != 0) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    int fd = -1;
    void* share = NULL;
    if (flags & FUTOIN_UV_SERVER_REUSEPORT) {
        fd = reuseport_socket(&addr, &share);
        if (fd < 0) {
            *uv_error = fd;
            return NULL;
        }
    }
    FutoInUvServer* srv = calloc(1, sizeof(*srv));
    int err = srv ? uv_tcp_init(uv->uv, &srv->tcp) : UV_ENOMEM;
    if (err) {
        free(srv);
        if (fd >= 0) {
            close(fd);
        }
        share_release(share);
        *uv_error = err;
        return NULL;
    }
    srv->tcp.data = srv;
    srv->uv = uv;
    srv->share = share; /* released when the handle is closed */
    if (fd >= 0) {
        err = uv_tcp_open(&srv->tcp, fd);
        if (err) {
            close(fd);
        }
    } else {
        err = uv_tcp_bind(&srv->tcp, (const struct sockaddr*)&addr, 0);
    }
    if (!err) {
        err = uv_listen((uv_stream_t*)&srv->tcp, backlog > 0 ? backlog : 511, on_connection);
    }
    if (!err) {
        struct sockaddr_storage bound;
        int len = (int)sizeof(bound);
        err = uv_tcp_getsockname(&srv->tcp, (struct sockaddr*)&bound, &len);
        if (!err) {
            srv->port = ntohs(bound.ss_family == AF_INET6
                            ? ((struct sockaddr_in6*)&bound)->sin6_port
                            : ((struct sockaddr_in*)&bound)->sin_port);
            const char* h = host && *host ? host : "127.0.0.1";
            int v6 = strchr(h, ':') != NULL;
            snprintf(srv->name, sizeof(srv->name), "%s%s%s:%u", v6 ? "[" : "", h, v6 ? "]" : "",
                    srv->port);
        }
    }
    if (err) {
        /* refs is 0: the close callback frees it. */
        server_close(srv);
        *uv_error = err;
        return NULL;
    }
    srv->refs = 1;
    return srv;
}

FutoInUvServer* futoin_uv_pipe_server_new(FutoInUv* uv, const char* path, int backlog,
        int* uv_error)
{
    int dummy;
    if (!uv_error) {
        uv_error = &dummy;
    }
    *uv_error = 0;
    if (!uv || !path || !*path || backlog < 0) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    if (strlen(path) >= FUTOIN_UV_PIPE_PATH_MAX) {
        *uv_error = UV_ENAMETOOLONG;
        return NULL;
    }
    FutoInUvServer* srv = calloc(1, sizeof(*srv));
    if (!srv) {
        *uv_error = UV_ENOMEM;
        return NULL;
    }
    int err = uv_pipe_init(uv->uv, &srv->pipe, 0);
    if (err) {
        free(srv);
        *uv_error = err;
        return NULL;
    }
    srv->pipe.data = srv;
    srv->uv = uv;
    srv->is_pipe = 1;
    err = uv_pipe_bind(&srv->pipe, path);
    if (!err) {
        /* Bound: from here on the file is the server's to remove. */
        snprintf(srv->name, sizeof(srv->name), "%s", path);
        err = uv_listen((uv_stream_t*)&srv->pipe, backlog > 0 ? backlog : 511, on_connection);
    }
    if (err) {
        server_close(srv);
        *uv_error = err;
        return NULL;
    }
    srv->refs = 1;
    return srv;
}

/* ------------------------------------------------------------------------ */
/* Steps                                                                     */

static void listen_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* host = data;
    size_t hlen = strlen(host);
    unsigned port;
    int backlog;
    memcpy(&port, host + hlen + 1, sizeof(port));
    memcpy(&backlog, host + hlen + 1 + sizeof(port), sizeof(backlog));
    FutoInUv* uv = futoin__uv_require(as, "listen");
    if (!uv) {
        return;
    }
    int err = 0;
    FutoInUvServer* srv = futoin_uv_server_new(uv, host, port, backlog, &err);
    if (!srv) {
        futoin__uv_failf(as, FUTOIN_CONNECT_ERROR, err, "listen %s:%u", *host ? host : "127.0.0.1",
                port);
        return;
    }
    futoin_success1(as, futoin_val_custom(&futoin_uv_server_type, srv));
}

void futoin_uv_tcp_listen(FutoInAsyncSteps* as, const char* host, unsigned port, int backlog)
{
    if (port > 65535) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_tcp_listen: port %u out of range (0..65535)",
                port);
        return;
    }
    if (backlog < 0) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_tcp_listen: backlog %d out of range (0: default, 1..INT_MAX)",
                backlog);
        return;
    }
    if (!host) {
        host = "";
    }
    size_t hlen = strlen(host);
    char* p = futoin__uv_add_step(as, listen_start, hlen + 1 + sizeof(port) + sizeof(backlog), NULL,
            "listen: out of memory");
    if (p) {
        memcpy(p, host, hlen + 1);
        memcpy(p + hlen + 1, &port, sizeof(port));
        memcpy(p + hlen + 1 + sizeof(port), &backlog, sizeof(backlog));
    }
}

static void pipe_listen_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* path = data;
    int backlog;
    memcpy(&backlog, path + strlen(path) + 1, sizeof(backlog));
    FutoInUv* uv = futoin__uv_require(as, "listen");
    if (!uv) {
        return;
    }
    int err = 0;
    FutoInUvServer* srv = futoin_uv_pipe_server_new(uv, path, backlog, &err);
    if (!srv) {
        futoin__uv_failf(as, FUTOIN_CONNECT_ERROR, err, "listen %s", path);
        return;
    }
    futoin_success1(as, futoin_val_custom(&futoin_uv_server_type, srv));
}

void futoin_uv_pipe_listen(FutoInAsyncSteps* as, const char* path, int backlog)
{
    if (!path) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_pipe_listen: path is NULL");
        return;
    }
    if (backlog < 0) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_pipe_listen: backlog %d out of range (0: default, 1..INT_MAX)",
                backlog);
        return;
    }
    size_t plen = strlen(path);
    char* p = futoin__uv_add_step(as, pipe_listen_start, plen + 1 + sizeof(backlog), NULL,
            "listen: out of memory");
    if (p) {
        memcpy(p, path, plen + 1);
        memcpy(p + plen + 1, &backlog, sizeof(backlog));
    }
}

typedef struct {
    FutoInUvServer* srv;
    FutoInUvConnectionCb cb;
    void* data;
} ServerParams;

static void server_params_release(void* p)
{
    futoin_uv_server_release(((ServerParams*)p)->srv);
}

static void accept_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((FutoInUvServer*)data)->acc_as = NULL;
}

static void accept_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInUvServer* srv = ((ServerParams*)data)->srv;
    if (srv->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_ECANCELED, "accept: server closed");
        return;
    }
    if (srv->acc_as) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBUSY, "accept: another accept is pending");
        return;
    }
    if (srv->pending > 0) {
        FutoInUvStream* s = NULL;
        int err = accept_one(srv, &s);
        if (err) {
            futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "accept");
            return;
        }
        FutoInArgs a = stream_args(s);
        futoin_success_args(as, &a);
        return;
    }
    if (srv->error) {
        int err = srv->error;
        srv->error = 0;
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "accept");
        return;
    }
    srv->acc_as = as;
    /* Owned by the server: only its connections end the wait. */
    futoin_wait_owned(as, accept_cancel, srv);
    futoin__uv_wait_info(as, "accept", srv->name);
}

void futoin_uv_accept(FutoInAsyncSteps* as, FutoInUvServer* srv)
{
    if (!srv) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_accept: srv is NULL");
        return;
    }
    ServerParams* p = futoin__uv_add_step(as, accept_start, sizeof(ServerParams),
            server_params_release, "accept: out of memory");
    if (p) {
        p->srv = futoin_uv_server_ref(srv);
    }
}

/* serve: loop { accept; hand the stream to cb } */

static void serve_dispatch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    ServerParams* p = data;
    FutoInUvStream* s = futoin_uv_arg_stream(args, 0);
    if (s) {
        p->cb(p->data, s);
    }
}

/* Accept failures that are not the server's end (EMFILE when out of file
 * descriptors, ECONNABORTED, ...) must not stop the server for good: pause
 * briefly, then accept again. */
static void serve_accept_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    ServerParams* p = data;
    if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && !p->srv->closing) {
        futoin_uv_sleep(as, 100);
    }
}

static void serve_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((ServerParams*)data)->srv);
}

static void serve_iteration(FutoInAsyncSteps* as, void* data)
{
    ServerParams* p = data;
    futoin_add(as, serve_accept, serve_accept_eh, p);
    futoin_add(as, serve_dispatch, NULL, p);
}

static void serve_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, serve_iteration, data, NULL);
}

void futoin_uv_serve(FutoInAsyncSteps* as, FutoInUvServer* srv, FutoInUvConnectionCb cb, void* data)
{
    if (!srv) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_serve: srv is NULL");
        return;
    }
    if (!cb) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_serve: cb is NULL");
        return;
    }
    ServerParams* p = futoin__uv_add_step(as, serve_start, sizeof(ServerParams),
            server_params_release, "serve: out of memory");
    if (p) {
        p->srv = futoin_uv_server_ref(srv);
        p->cb = cb;
        p->data = data;
    }
}
