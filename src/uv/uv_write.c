/* SPDX-License-Identifier: MIT */
/*
 * Write, shutdown and close steps on a stream.
 *
 * Writing: uv_try_write first (loopback and idle sockets take everything at
 * once, so the step completes without a round trip through libuv); only the
 * remainder is queued with uv_write.
 */
#include "uv_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    StreamParams base;
    const char* data; /* points to bytes[] or to the caller's static data */
    size_t len;
    char bytes[];
} WriteParams;

typedef struct {
    uv_write_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled */
    char bytes[];
} WriteOp;

/* A write or shutdown request finished: it ends its step's wait (owned
 * by the request), unless the step was cancelled (as NULL). */
static void request_done(FutoInAsyncSteps* as, const void* op, int status, const char* what)
{
    if (!as) {
        return;
    }
    if (status < 0) {
        futoin__uv_fail_owned(as, op, FUTOIN_COMM_ERROR, status, what);
    } else {
        futoin_owned_success(as, op, NULL);
    }
}

static void on_written(uv_write_t* req, int status)
{
    WriteOp* op = req->data;
    request_done(op->as, op, status, "write");
    free(op);
}

/* libuv cannot withdraw a queued write: the request finishes on its own
 * and only frees itself. */
static void write_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((WriteOp*)data)->as = NULL;
}

static void write_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    WriteParams* p = data;
    FutoInUvStream* s = p->base.s;
    if (s->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBADF, "write: stream closed");
        return;
    }
    size_t done = 0;
    if (p->len == 0) {
        futoin_success(as);
        return;
    }
    if (s->tls) {
        futoin__uv_tls_write(as, s, p->data, p->len);
        return;
    }
    uv_buf_t buf = uv_buf_init((char*)p->data, (unsigned)p->len);
    int n = uv_try_write((uv_stream_t*)&s->tcp, &buf, 1);
    if (n >= 0) {
        done = (size_t)n;
        if (done == p->len) {
            futoin_success(as);
            return;
        }
    } else if (n != UV_EAGAIN) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, n, "write");
        return;
    }
    /* The parameters die with the step, but libuv may still need the bytes
     * after a cancel: the remainder moves to the request (static data is
     * referenced as it is). */
    size_t rest = p->len - done;
    int copy = p->data == p->bytes;
    WriteOp* op = malloc(sizeof(*op) + (copy ? rest : 0));
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "write: out of memory");
        return;
    }
    op->req.data = op;
    op->as = as;
    if (copy) {
        memcpy(op->bytes, p->data + done, rest);
        buf = uv_buf_init(op->bytes, (unsigned)rest);
    } else {
        buf = uv_buf_init((char*)p->data + done, (unsigned)rest);
    }
    int err = uv_write(&op->req, (uv_stream_t*)&s->tcp, &buf, 1, on_written);
    if (err) {
        free(op);
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "write");
        return;
    }
    futoin_wait_owned(as, write_cancel, op);
    futoin__uv_wait_info(as, "write", futoin__uv_stream_peer(s));
}

static void add_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len,
        int copy)
{
    const char* fn = copy ? "futoin_uv_write" : "futoin_uv_write_static";
    if (!futoin__uv_stream_ok(as, fn, s)) {
        return;
    }
    if (len > FUTOIN_UV_MAX_IO_LEN) {
        /* uv_buf_init() takes an unsigned int length. */
        futoin__uv_add_failf(as, "EINVAL: %s: len %zu out of range (0..%lu)", fn, len,
                (unsigned long)FUTOIN_UV_MAX_IO_LEN);
        return;
    }
    if (!data && len) {
        futoin__uv_add_failf(as, "EINVAL: %s: NULL data with len %zu", fn, len);
        return;
    }
    WriteParams* p = futoin__uv_add_step(as, write_start, sizeof(WriteParams) + (copy ? len : 0),
            futoin__uv_params_release, "write: out of memory");
    if (!p) {
        return;
    }
    p->base.s = futoin_uv_stream_ref(s);
    p->len = len;
    if (copy) {
        if (len) {
            memcpy(p->bytes, data, len);
        }
        p->data = p->bytes;
    } else {
        p->data = data;
    }
}

long futoin_uv_try_write(FutoInUvStream* s, const void* data, size_t len)
{
    if (!s || (!data && len)) {
        return UV_EINVAL;
    }
    if (s->closing) {
        return UV_EBADF;
    }
    if (s->tls) {
        return futoin__uv_tls_try_write(s, data, len);
    }
    if (len == 0 || uv_stream_get_write_queue_size((uv_stream_t*)&s->tcp) > 0) {
        return 0; /* behind queued bytes: nothing may overtake them */
    }
    uv_buf_t buf = uv_buf_init((char*)data,
            (unsigned)(len > FUTOIN_UV_MAX_IO_LEN ? FUTOIN_UV_MAX_IO_LEN : len));
    int n = uv_try_write((uv_stream_t*)&s->tcp, &buf, 1);
    return n == UV_EAGAIN ? 0 : n;
}

void futoin_uv_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len)
{
    add_write(as, s, data, len, 1);
}

void futoin_uv_write_static(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len)
{
    add_write(as, s, data, len, 0);
}

typedef struct {
    uv_shutdown_t req;
    FutoInAsyncSteps* as; /* NULL once cancelled */
} ShutdownOp;

static void on_shutdown_done(uv_shutdown_t* req, int status)
{
    ShutdownOp* op = req->data;
    request_done(op->as, op, status, "shutdown");
    free(op);
}

/* libuv cannot withdraw a shutdown either: it completes (or gets ECANCELED
 * when the stream closes, before the close callback) and frees itself. */
static void shutdown_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((ShutdownOp*)data)->as = NULL;
}

static void shutdown_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInUvStream* s = ((StreamParams*)data)->s;
    if (s->closing) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBADF, "shutdown: stream closed");
        return;
    }
    ShutdownOp* op = malloc(sizeof(*op));
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "shutdown: out of memory");
        return;
    }
    op->req.data = op;
    op->as = as;
    if (s->tls) {
        futoin__uv_tls_close_notify(s);
    }
    int err = uv_shutdown(&op->req, (uv_stream_t*)&s->tcp, on_shutdown_done);
    if (err) {
        free(op);
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, err, "shutdown");
        return;
    }
    futoin_wait_owned(as, shutdown_cancel, op);
    futoin__uv_wait_info(as, "shutdown", futoin__uv_stream_peer(s));
}

void futoin_uv_shutdown(FutoInAsyncSteps* as, FutoInUvStream* s)
{
    if (!futoin__uv_stream_ok(as, "futoin_uv_shutdown", s)) {
        return;
    }
    StreamParams* p = futoin__uv_add_step(as, shutdown_start, sizeof(StreamParams),
            futoin__uv_params_release, "shutdown: out of memory");
    if (p) {
        p->s = futoin_uv_stream_ref(s);
    }
}

typedef struct {
    StreamParams base;
    int graceful;
} CloseParams;

static void close_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((FutoInUvStream*)data)->close_as = NULL;
}

static void on_shutdown(uv_shutdown_t* req, int status)
{
    (void)status;
    /* Whatever the outcome, the handle goes now: shutdown only flushed. */
    futoin__uv_stream_close_now(req->data);
}

static void close_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    CloseParams* p = data;
    FutoInUvStream* s = p->base.s;
    if (s->closed) {
        futoin_success(as);
        return;
    }
    if (s->close_as) {
        futoin__uv_fail(as, FUTOIN_COMM_ERROR, UV_EBUSY, "close: already being closed");
        return;
    }
    s->close_as = as;
    futoin_wait_owned(as, close_cancel, s);
    futoin__uv_wait_info(as, "close", futoin__uv_stream_peer(s));
    if (s->closing) {
        return;
    }
    if (p->graceful) {
        s->closing = 1;
        s->shutdown_req.data = s;
        futoin__uv_stream_stop_reading(s);
        futoin__uv_stream_fail_reader(s, UV_ECANCELED, "read: stream closed");
        if (s->tls) {
            futoin__uv_tls_close_notify(s);
        }
        if (uv_shutdown(&s->shutdown_req, (uv_stream_t*)&s->tcp, on_shutdown) == 0) {
            return;
        }
        futoin__uv_stream_close_now(s);
        return;
    }
    futoin__uv_stream_close(s);
}

void futoin_uv_close(FutoInAsyncSteps* as, FutoInUvStream* s, int graceful)
{
    if (!futoin__uv_stream_ok(as, "futoin_uv_close", s)) {
        return;
    }
    CloseParams* p = futoin__uv_add_step(as, close_start, sizeof(CloseParams),
            futoin__uv_params_release, "close: out of memory");
    if (!p) {
        /* The caller's reference is still ours to drop: close anyway. */
        futoin_uv_stream_release(s);
        return;
    }
    /* No new reference: the block takes over the caller's, so the stream is
     * closed even if the step never gets to run. */
    p->base.s = s;
    p->graceful = graceful;
}
