/* SPDX-License-Identifier: MIT */
/*
 * Streams (TCP, and local ones: uv_pipe.c): the stream object, its references and closing, its input
 * budget and read-ahead settings, its peer's name, and the stream as a
 * step result (futoin_uv_stream_type). The steps on a stream are in
 * uv_connect.c, uv_read.c and uv_write.c.
 *
 * Lifetime: a stream is reference counted (result values, queued steps and
 * the user hold references). The last release starts uv_close(); memory goes
 * in the close callback, or at the last release if that comes later. libuv
 * owns the handle until the close callback, whatever the steps do.
 */
#include "uv_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FutoInUvStream* futoin__uv_stream_alloc(FutoInUv* uv)
{
    FutoInUvStream* s = calloc(1, sizeof(*s));
    if (!s) {
        return NULL;
    }
    if (uv_tcp_init(uv->uv, &s->tcp) != 0) {
        free(s);
        return NULL;
    }
    s->tcp.data = s;
    s->uv = uv;
    s->read_ahead = FUTOIN_UV_HIGH_WATER;
    return s;
}

/* The charge a receive buffer of cap bytes makes. */
static size_t charge_of(size_t cap)
{
    return cap > FUTOIN_UV_BUDGET_FREE_BYTES ? cap - FUTOIN_UV_BUDGET_FREE_BYTES : 0;
}

/* Moves the stream's charge to that of a buffer of cap bytes. Returns 0, or
 * -1 (nothing changed) when the budget cannot cover a larger buffer. */
int futoin__uv_stream_charge(FutoInUvStream* s, size_t cap)
{
    size_t want = charge_of(cap);
    if (!s->budget || want == s->charged) {
        s->charged = s->budget ? want : 0;
        return 0;
    }
    if (want > s->charged) {
        if (futoin_uv_budget_take(s->budget, want - s->charged) != 0) {
            return -1;
        }
    } else {
        futoin_uv_budget_give(s->budget, s->charged - want);
    }
    s->charged = want;
    return 0;
}

void futoin_uv_stream_set_budget(FutoInUvStream* s, FutoInUvBudget* b)
{
    if (!s || s->budget == b) {
        return;
    }
    FutoInUvBudget* old = s->budget;
    futoin_uv_budget_give(old, s->charged);
    s->charged = 0;
    s->budget = futoin_uv_budget_ref(b);
    futoin_uv_budget_release(old);
    if (b) {
        /* Moved as it is, even beyond the limit: the memory exists. */
        s->charged = charge_of(s->cap);
        atomic_fetch_add_explicit(&b->used, s->charged, memory_order_relaxed);
    }
}

void futoin_uv_stream_set_read_ahead(FutoInUvStream* s, size_t bytes)
{
    if (s) {
        s->read_ahead = bytes;
    }
}

const char* futoin_uv_stream_peek(const FutoInUvStream* s, size_t* len)
{
    size_t n = s && s->buf ? s->len - s->off : 0;
    if (len) {
        *len = n;
    }
    return n ? s->buf + s->off : NULL;
}

/* Frees the receive buffer (nothing buffered) and returns its charge. */
void futoin__uv_stream_drop_buffer(FutoInUvStream* s)
{
    free(s->buf);
    s->buf = NULL;
    s->cap = s->len = s->off = 0;
    futoin__uv_stream_charge(s, 0);
}

static void stream_destroy(FutoInUvStream* s)
{
    if (s->tls) {
        futoin__uv_tls_free(s);
    }
    futoin__uv_stream_drop_buffer(s);
    futoin_uv_budget_release(s->budget);
    free(s);
}

static void on_stream_closed(uv_handle_t* h)
{
    FutoInUvStream* s = h->data;
    s->closed = 1;
    FutoInAsyncSteps* as = s->close_as;
    s->close_as = NULL;
    if (as) {
        futoin_owned_success(as, s, NULL); /* the close step's key */
    }
    if (s->refs == 0) {
        stream_destroy(s);
    }
}

/* Fails the pending read step, if any, with CommError err. */
void futoin__uv_stream_fail_reader(FutoInUvStream* s, int err, const char* what)
{
    FutoInAsyncSteps* as = s->rd_as;
    if (!as) {
        return;
    }
    s->rd_as = NULL;
    s->rd_mode = RD_NONE;
    futoin__uv_fail_owned(as, s, FUTOIN_COMM_ERROR, err, what);
}

void futoin__uv_stream_close_now(FutoInUvStream* s)
{
    if (!uv_is_closing((uv_handle_t*)&s->tcp)) {
        uv_close((uv_handle_t*)&s->tcp, on_stream_closed);
    }
}

void futoin__uv_stream_close(FutoInUvStream* s)
{
    if (s->closing) {
        return;
    }
    s->closing = 1;
    s->reading = 0;
    futoin__uv_stream_close_now(s);
    if (s->tls) {
        futoin__uv_tls_closing(s);
    }
    /* Queued uv_write requests get ECANCELED from libuv itself. */
    futoin__uv_stream_fail_reader(s, UV_ECANCELED, "read: stream closed");
}

void futoin_uv_stream_close(FutoInUvStream* s)
{
    if (s) {
        futoin__uv_stream_close(s);
    }
}

FutoInUvStream* futoin_uv_stream_ref(FutoInUvStream* s)
{
    if (s) {
        ++s->refs;
    }
    return s;
}

void futoin_uv_stream_release(FutoInUvStream* s)
{
    if (!s || --s->refs > 0) {
        return;
    }
    if (s->closed) {
        stream_destroy(s);
    } else {
        futoin__uv_stream_close(s);
    }
}

uv_tcp_t* futoin_uv_stream_handle(FutoInUvStream* s)
{
    return s && !s->is_pipe ? &s->tcp : NULL;
}

size_t futoin_uv_stream_buffered(const FutoInUvStream* s)
{
    return s ? s->len - s->off : 0;
}

int futoin_uv_stream_is_open(const FutoInUvStream* s)
{
    return s && !s->closing;
}

/* "host:port" of the peer, cached: the connect target, or the address of
 * an accepted peer (looked up once). "" while unknown. */
const char* futoin__uv_stream_peer(FutoInUvStream* s)
{
    if (!s->peer[0] && !s->closing && !s->is_pipe) {
        struct sockaddr_storage a;
        int len = (int)sizeof(a);
        if (uv_tcp_getpeername(&s->tcp, (struct sockaddr*)&a, &len) == 0) {
            char ip[64] = "";
            if (a.ss_family == AF_INET6) {
                const struct sockaddr_in6* a6 = (const struct sockaddr_in6*)&a;
                uv_ip6_name(a6, ip, sizeof(ip));
                snprintf(s->peer, sizeof(s->peer), "[%s]:%u", ip, (unsigned)ntohs(a6->sin6_port));
            } else {
                const struct sockaddr_in* a4 = (const struct sockaddr_in*)&a;
                uv_ip4_name(a4, ip, sizeof(ip));
                snprintf(s->peer, sizeof(s->peer), "%s:%u", ip, (unsigned)ntohs(a4->sin_port));
            }
        }
    }
    return s->peer[0] ? s->peer : "(unknown peer)";
}

const char* futoin_uv_stream_peer(FutoInUvStream* s)
{
    if (!s) {
        return "";
    }
    futoin__uv_stream_peer(s);
    return s->peer;
}

/* A NULL stream given to a step function: the added step fails instead. */
int futoin__uv_stream_ok(FutoInAsyncSteps* as, const char* fn, const FutoInUvStream* s)
{
    if (s) {
        return 1;
    }
    futoin__uv_add_failf(as, "EINVAL: %s: s is NULL", fn);
    return 0;
}

static void stream_value_cleanup(FutoInBinaryValue* v)
{
    futoin_uv_stream_release(v->custom_data);
}

const FutoInType futoin_uv_stream_type = { FTN_TYPE_CUSTOM_OBJECT, stream_value_cleanup };

FutoInUvStream* futoin_uv_arg_stream(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || args->args[i].type != &futoin_uv_stream_type) {
        return NULL;
    }
    return args->args[i].custom_data;
}

void futoin__uv_params_release(void* p)
{
    futoin_uv_stream_release(((StreamParams*)p)->s);
}
