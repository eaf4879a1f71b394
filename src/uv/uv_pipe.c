/* SPDX-License-Identifier: MIT */
/*
 * Local streams: Unix domain sockets (connect; the server side is in
 * uv_server.c) and pipes wrapping a descriptor of the caller's, with the
 * peer's credentials. They are FutoInUvStream objects on a uv_pipe_t, so
 * the read, write, shutdown and close steps of uv_read.c and uv_write.c
 * work on them as they are; their peer's name in wait descriptions and
 * errors is the socket's path ("fd N" for a wrapped descriptor).
 */
/* struct ucred and SO_PEERCRED are not POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "uv_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

FutoInUvStream* futoin__uv_pipe_alloc(FutoInUv* uv, const char* peer)
{
    FutoInUvStream* s = calloc(1, sizeof(*s));
    if (!s) {
        return NULL;
    }
    if (uv_pipe_init(uv->uv, &s->pipe, 0) != 0) {
        free(s);
        return NULL;
    }
    s->pipe.data = s;
    s->uv = uv;
    s->is_pipe = 1;
    s->read_ahead = FUTOIN_UV_HIGH_WATER;
    snprintf(s->peer, sizeof(s->peer), "%s", peer);
    return s;
}

FutoInUvStream* futoin_uv_pipe_open(FutoInUv* uv, int fd, int* uv_error)
{
    int dummy;
    if (!uv_error) {
        uv_error = &dummy;
    }
    *uv_error = 0;
    if (!uv || fd < 0) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof(name), "fd %d", fd);
    FutoInUvStream* s = futoin__uv_pipe_alloc(uv, name);
    if (!s) {
        *uv_error = UV_ENOMEM;
        return NULL;
    }
    int err = uv_pipe_open(&s->pipe, fd);
    if (err) {
        /* The descriptor stays the caller's: nothing of it was taken. */
        futoin__uv_stream_close(s);
        *uv_error = err;
        return NULL;
    }
    s->refs = 1;
    return s;
}

int futoin_uv_stream_peer_cred(FutoInUvStream* s, long* pid, long* uid, long* gid)
{
    if (!s) {
        return UV_EINVAL;
    }
    if (!s->is_pipe) {
        return UV_ENOTSUP;
    }
    if (s->closing) {
        return UV_EBADF;
    }
#if defined(__linux__) && defined(SO_PEERCRED)
    uv_os_fd_t fd;
    int err = uv_fileno((const uv_handle_t*)&s->pipe, &fd);
    if (err) {
        return err;
    }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        /* ENOTSOCK for a pipe(2): no peer to ask about. */
        return errno == ENOTSOCK ? UV_ENOTSUP : uv_translate_sys_error(errno);
    }
    if (pid) {
        *pid = (long)cred.pid;
    }
    if (uid) {
        *uid = (long)cred.uid;
    }
    if (gid) {
        *gid = (long)cred.gid;
    }
    return 0;
#else
    (void)pid;
    (void)uid;
    (void)gid;
    return UV_ENOTSUP;
#endif
}

/* ------------------------------------------------------------------------ */
/* Connect step                                                              */

typedef struct {
    uv_connect_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled: the callback only frees */
    FutoInUvStream* s;
    char path[];
} PipeConnectOp;

static void on_pipe_connected(uv_connect_t* req, int status)
{
    PipeConnectOp* op = req->data;
    FutoInUvStream* s = op->s;
    FutoInAsyncSteps* as = op->as;
    if (!as) {
        /* Cancelled: the cancel handler closed the stream. */
        free(op);
        return;
    }
    if (status < 0) {
        futoin__uv_stream_close(s);
        futoin__uv_failf_owned(as, op, FUTOIN_CONNECT_ERROR, status, "connect %s", op->path);
        free(op);
        return;
    }
    /* The value's reference is the only one. */
    s->refs = 1;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0 = futoin_val_custom(&futoin_uv_stream_type, s);
    futoin_owned_success(as, op, &args);
    free(op);
}

static void pipe_connect_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    PipeConnectOp* op = data;
    op->as = NULL;
    /* on_pipe_connected(ECANCELED) frees op, the close callback the stream. */
    futoin__uv_stream_close(op->s);
}

static void pipe_connect_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* path = data;
    FutoInUv* uv = futoin__uv_require(as, "connect");
    if (!uv) {
        return;
    }
    size_t plen = strlen(path);
    PipeConnectOp* op = malloc(sizeof(*op) + plen + 1);
    FutoInUvStream* s = op ? futoin__uv_pipe_alloc(uv, path) : NULL;
    if (!s) {
        free(op);
        futoin__uv_failf(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "connect %s", path);
        return;
    }
    memcpy(op->path, path, plen + 1);
    op->as = as;
    op->s = s;
    op->req.data = op;
    /* Its errors come to the callback, in a later iteration. */
    uv_pipe_connect(&op->req, &s->pipe, path, on_pipe_connected);
    futoin_wait_owned(as, pipe_connect_cancel, op);
    futoin__uv_wait_info(as, "connect", path);
}

void futoin_uv_pipe_connect(FutoInAsyncSteps* as, const char* path)
{
    if (!path) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_pipe_connect: path is NULL");
        return;
    }
    size_t plen = strlen(path);
    if (plen == 0 || plen >= FUTOIN_UV_PIPE_PATH_MAX) {
        futoin__uv_add_failf(as,
                "EINVAL: futoin_uv_pipe_connect: path of %zu bytes out of range (1..%zu)", plen,
                (size_t)FUTOIN_UV_PIPE_PATH_MAX - 1);
        return;
    }
    char* p = futoin__uv_add_step(as, pipe_connect_start, plen + 1, NULL, "connect: out of memory");
    if (p) {
        memcpy(p, path, plen + 1);
    }
}
