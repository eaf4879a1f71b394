/* SPDX-License-Identifier: MIT */
/*
 * DNS resolution step on futoin__uv_lookup() (uv_lookup.c): a cancelled
 * step lets go of its lookup at once, and the lookup ends on its own.
 */
#include "uv_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    FutoInUvLookup* lookup;
    FutoInAsyncSteps* as;
    char host[];
} ResolveOp;

/* Formats every address of res, one per line; returns the number of
 * addresses and stores the text (malloc) in *text. */
static uint32_t format_addresses(const struct addrinfo* res, char** text, size_t* text_len)
{
    uint32_t n = 0;
    size_t cap = 0;
    for (const struct addrinfo* ai = res; ai; ai = ai->ai_next) {
        cap += INET6_ADDRSTRLEN + 1;
    }
    char* out = malloc(cap + 1);
    size_t len = 0;
    if (out) {
        for (const struct addrinfo* ai = res; ai; ai = ai->ai_next) {
            char ip[INET6_ADDRSTRLEN] = "";
            if (ai->ai_family == AF_INET) {
                uv_ip4_name((const struct sockaddr_in*)ai->ai_addr, ip, sizeof(ip));
            } else if (ai->ai_family == AF_INET6) {
                uv_ip6_name((const struct sockaddr_in6*)ai->ai_addr, ip, sizeof(ip));
            } else {
                continue;
            }
            size_t l = strlen(ip);
            if (len) {
                out[len++] = '\n';
            }
            memcpy(out + len, ip, l);
            len += l;
            ++n;
        }
        out[len] = '\0';
    }
    *text = out;
    *text_len = len;
    return n;
}

/* The lookup worked but its result could not be copied: the backend's
 * error for a failed allocation (like "resolve: out of memory" before the
 * lookup), never a success with a value missing. */
static void resolve_oom(FutoInAsyncSteps* as, ResolveOp* op)
{
    futoin__uv_failf_owned(as, op, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "resolve %s", op->host);
    free(op);
}

static void on_resolved(void* data, int status, struct addrinfo* res)
{
    ResolveOp* op = data;
    FutoInAsyncSteps* as = op->as;
    if (status < 0) {
        futoin__uv_failf_owned(as, op, FUTOIN_CONNECT_ERROR, status, "getaddrinfo %s", op->host);
        free(op);
        return;
    }
    char* text = NULL;
    size_t text_len = 0;
    uint32_t n = format_addresses(res, &text, &text_len);
    uv_freeaddrinfo(res);
    if (!text) {
        resolve_oom(as, op);
        return;
    }
    if (n == 0) {
        futoin__uv_failf_owned(as, op, FUTOIN_CONNECT_ERROR, UV_EAI_NODATA, "getaddrinfo %s",
                op->host);
        free(text);
        free(op);
        return;
    }
    size_t first = strcspn(text, "\n");
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0 = futoin__uv_bytes_value(text, first, 1);
    if (!args.arg0.type) {
        /* A success without its first value would hand the next step a
         * missing argument where the contract promises an address. */
        free(text);
        resolve_oom(as, op);
        return;
    }
    args.arg1 = futoin_val_u32(n);
    args.arg2 = futoin__uv_bytes_adopt(text, text_len, 1);
    futoin_owned_success(as, op, &args); /* owned by op: only this lookup ends the wait */
    free(op);
}

static void resolve_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ResolveOp* op = data;
    futoin__uv_lookup_cancel(op->lookup);
    free(op);
}

static void resolve_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* host = data;
    FutoInUv* uv = futoin__uv_require(as, "resolve");
    if (!uv) {
        return;
    }
    size_t hlen = strlen(host);
    ResolveOp* op = malloc(sizeof(*op) + hlen + 1);
    if (!op) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "resolve: out of memory");
        return;
    }
    memcpy(op->host, host, hlen + 1);
    op->as = as;
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int err = futoin__uv_lookup(uv, host, NULL, &hints, on_resolved, op, &op->lookup);
    if (err) {
        free(op);
        futoin__uv_failf(as, FUTOIN_CONNECT_ERROR, err, "getaddrinfo %s", host);
        return;
    }
    futoin_wait_owned(as, resolve_cancel, op);
    futoin__uv_wait_info(as, "resolve", host);
}

void futoin_uv_resolve(FutoInAsyncSteps* as, const char* host)
{
    if (!host) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_resolve: host is NULL");
        return;
    }
    size_t hlen = strlen(host);
    char* p = futoin__uv_add_step(as, resolve_start, hlen + 1, NULL, "resolve: out of memory");
    if (p) {
        memcpy(p, host, hlen + 1);
    }
}
