/* SPDX-License-Identifier: MIT */
/*
 * An HTTP/1.1 client built from AsyncSteps on the libuv backend: every URL
 * is fetched in parallel, each attempt under its own timeout, failed
 * attempts are retried with an exponential back-off from the error handler,
 * and the results are collected "all settled": each branch recovers its own
 * error, so one failure never cancels the other requests.
 *
 *   http_client [-t timeout_ms] [-a attempts] [-b backoff_ms] URL...
 *
 * URL: http://host[:port][/path] (host: a name, an IPv4 address or [IPv6]).
 * -t: timeout of one attempt, connect to last body byte (2000 ms);
 * -a: attempts per URL (3); -b: delay before the first retry (100 ms),
 * doubled before each further one (at most 5000 ms). Retried: Timeout,
 * ConnectError, CommError (a response cut short included) and 503 answers;
 * a response that breaks HTTP/1.1 framing is a ProtocolError, not retried
 * (the rules: http_response.h). Prints one line per URL (status
 * and body size, or the last error and its error_info, which names the
 * operation and the peer that timed out), then a summary. Exit status 0
 * when every URL got an HTTP answer that is not 5xx, 1 otherwise, 2 on a
 * usage error.
 *
 * The connection is owned by a step: the step that receives the stream from
 * futoin_uv_tcp_connect() takes a reference and keeps it in a stack() block
 * whose cleanup drops it. The stream then lives exactly as long as that
 * step and its sub-steps (write, read the response), however they end:
 * success, an error, the attempt's timeout, or the root being cancelled.
 * No other code releases it.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http_response.h"

#define MAX_BODY (64u * 1024u * 1024u)
#define MAX_BACKOFF_MS 5000u
/* The error code of an answer that is worth retrying (503). */
#define HTTP_UNAVAILABLE "HttpUnavailable"
/* The error code of a response that breaks HTTP/1.1 framing: not retried,
 * the same server would send the same bytes again. */
#define HTTP_PROTOCOL_ERROR "ProtocolError"

typedef struct Options {
    uint32_t timeout_ms;
    uint32_t attempts;
    uint32_t backoff_ms;
} Options;

typedef struct Req {
    const Options* opt;
    const char* url;
    char host[256];
    unsigned port;
    char request[2048];
    size_t request_len;
    uint32_t attempts;
    int settled;
    /* The outcome: an HTTP status, or an error code and its info. */
    int status;
    char reason[64];
    uint64_t body_len;
    char code[32];
    char info[256];
    /* The info of an error this client raises itself: error_info is a
     * state of the root, shared by the parallel branches, so another
     * branch failing in the same loop round could overwrite it. */
    char own_info[160];
    /* The stream of the attempt in progress: borrowed from the owning
     * step's stack block, valid while that step runs. */
    FutoInUvStream* s;
    HttpResponse resp; /* the response of the attempt in progress */
} Req;

/* ------------------------------------------------------------------------ */
/* A stream owned by a step                                                  */

typedef struct StreamHold {
    FutoInUvStream* s;
} StreamHold;

/* Runs when the owning step ends, whichever way: the reference goes, the
 * connection closes. */
static void hold_cleanup(void* p)
{
    futoin_uv_stream_release(((StreamHold*)p)->s);
}

/* ------------------------------------------------------------------------ */
/* One attempt: connect, exchange                                            */

/* The response is complete: the outcome of the request. */
static void settle_response(Req* r)
{
    r->status = r->resp.status;
    snprintf(r->reason, sizeof(r->reason), "%s", r->resp.reason);
    r->body_len = r->resp.body_len;
    r->code[0] = '\0';
    r->info[0] = '\0';
    r->settled = 1;
}

static void response_piece(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Req* r = data;
    size_t len = 0;
    const char* p = futoin_uv_arg_bytes(args, 0, &len);
    /* Bytes after a complete response are dropped: the request asked for
     * "Connection: close". */
    http_response_feed(&r->resp, p ? p : "", len);
    if (r->resp.state == HR_ERROR) {
        snprintf(r->own_info, sizeof(r->own_info), "%s", r->resp.error);
        futoin_error(as, HTTP_PROTOCOL_ERROR, r->own_info);
        return;
    }
    if (r->resp.head_complete && r->resp.status == 503 && r->attempts < r->opt->attempts) {
        /* The server asks to come back later: retried like an error. */
        snprintf(r->own_info, sizeof(r->own_info), "503 Service Unavailable");
        futoin_error(as, HTTP_UNAVAILABLE, r->own_info);
        return;
    }
    if (r->resp.state == HR_DONE) {
        settle_response(r);
        futoin_break(as, NULL);
    }
}

static void response_iter(FutoInAsyncSteps* as, void* data)
{
    Req* r = data;
    futoin_uv_read_some(as, r->s, 65536);
    futoin_add(as, response_piece, NULL, r);
}

static void read_response(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, response_iter, data, NULL);
}

/* The server closed: the end of a body without a length, or a response cut
 * short (a CommError like a reset: retried). */
static void read_response_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Req* r = data;
    if (strcmp(code, FUTOIN_COMM_ERROR) != 0 || strncmp(futoin_error_info(as), "EOF:", 4) != 0) {
        return;
    }
    http_response_eof(&r->resp);
    if (r->resp.state == HR_DONE) {
        settle_response(r);
        futoin_success(as);
        return;
    }
    snprintf(r->own_info, sizeof(r->own_info), "EOF: %s", r->resp.error);
    futoin_error(as, FUTOIN_COMM_ERROR, r->own_info);
}

/* The step that owns the connection for the rest of the attempt. */
static void exchange(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Req* r = data;
    StreamHold* h = futoin_stack(as, sizeof(*h), hold_cleanup);
    if (!h) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "out of memory");
        return; /* the stream goes with the connect step's value */
    }
    h->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    r->s = h->s;
    futoin_uv_write(as, r->s, r->request, r->request_len);
    http_response_init(&r->resp, MAX_BODY, NULL, NULL);
    futoin_add(as, read_response, read_response_eh, r);
}

static void attempt(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Req* r = data;
    /* One timeout for the whole attempt: connect, request, response. */
    futoin_set_timeout(as, r->opt->timeout_ms);
    futoin_uv_tcp_connect(as, r->host, r->port);
    futoin_add(as, exchange, NULL, r);
}

/* A failed attempt: remember why; retry after a back-off (the sleep step
 * replaces the failed one, and the loop goes on), or settle with the error. */
static void attempt_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Req* r = data;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", r->own_info[0] ? r->own_info : futoin_error_info(as));
    r->own_info[0] = '\0';
    r->s = NULL;
    int retryable = strcmp(code, FUTOIN_TIMEOUT) == 0 || strcmp(code, FUTOIN_CONNECT_ERROR) == 0
            || strcmp(code, FUTOIN_COMM_ERROR) == 0 || strcmp(code, HTTP_UNAVAILABLE) == 0;
    if (retryable && r->attempts < r->opt->attempts) {
        uint64_t delay = (uint64_t)r->opt->backoff_ms
                << (r->attempts - 1 < 16 ? r->attempts - 1 : 16);
        futoin_uv_sleep(as, (uint32_t)(delay < MAX_BACKOFF_MS ? delay : MAX_BACKOFF_MS));
        return;
    }
    r->settled = 1;
    futoin_success(as); /* all settled: this branch ends with its error noted */
}

static void retry_iteration(FutoInAsyncSteps* as, void* data)
{
    Req* r = data;
    if (r->settled) {
        futoin_break(as, NULL);
        return;
    }
    ++r->attempts;
    futoin_add(as, attempt, attempt_eh, r);
}

static void branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, retry_iteration, data, NULL);
}

/* ------------------------------------------------------------------------ */
/* All URLs in parallel, all settled                                         */

typedef struct Client {
    Req* reqs;
    int n;
    int failed;
} Client;

static void fetch_all(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Client* cl = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < cl->n; ++i) {
        futoin_add(p, branch, NULL, &cl->reqs[i]);
    }
}

static void report(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Client* cl = data;
    int ok = 0;
    for (int i = 0; i < cl->n; ++i) {
        Req* r = &cl->reqs[i];
        if (r->code[0]) {
            printf("%d. %s -> %s: %s (%u attempt%s)\n", i + 1, r->url, r->code, r->info,
                    r->attempts, r->attempts == 1 ? "" : "s");
            ++cl->failed;
        } else {
            printf("%d. %s -> %d %s, %llu bytes (%u attempt%s)\n", i + 1, r->url, r->status,
                    r->reason, (unsigned long long)r->body_len, r->attempts,
                    r->attempts == 1 ? "" : "s");
            if (r->status >= 500) {
                ++cl->failed;
            } else {
                ++ok;
            }
        }
    }
    printf("all settled: %d answered, %d failed\n", ok, cl->failed);
}

static void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Client* cl = data;
    /* Not expected: every branch recovers its own errors. */
    fprintf(stderr, "http_client: unhandled %s: %s\n", code, futoin_error_info(as));
    cl->failed = cl->n ? cl->n : 1;
}

/* ------------------------------------------------------------------------ */
/* Command line                                                              */

static int parse_url(Req* r, const char* url)
{
    if (strncmp(url, "http://", 7) != 0) {
        return -1;
    }
    const char* h = url + 7;
    const char* path = strchr(h, '/');
    size_t alen = path ? (size_t)(path - h) : strlen(h);
    if (!path) {
        path = "/";
    }
    const char* hend = h + alen;
    const char* colon = NULL;
    if (*h == '[') {
        const char* rb = memchr(h, ']', alen);
        if (!rb) {
            return -1;
        }
        snprintf(r->host, sizeof(r->host), "%.*s", (int)(rb - h - 1), h + 1);
        colon = rb + 1 < hend && rb[1] == ':' ? rb + 1 : NULL;
        if (rb + 1 < hend && !colon) {
            return -1;
        }
    } else {
        colon = memchr(h, ':', alen);
        size_t hl = colon ? (size_t)(colon - h) : alen;
        if (hl == 0 || hl >= sizeof(r->host)) {
            return -1;
        }
        snprintf(r->host, sizeof(r->host), "%.*s", (int)hl, h);
    }
    r->port = 80;
    if (colon) {
        unsigned long v = 0;
        const char* p = colon + 1;
        if (p == hend) {
            return -1;
        }
        for (; p < hend; ++p) {
            if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned long)(*p - '0')) > 65535) {
                return -1;
            }
        }
        if (v == 0) {
            return -1;
        }
        r->port = (unsigned)v;
    }
    int n = snprintf(r->request, sizeof(r->request),
            "GET %s HTTP/1.1\r\nHost: %.*s\r\nUser-Agent: futoin-http-client\r\n"
            "Connection: close\r\n\r\n",
            path, (int)alen, h);
    if (n < 0 || (size_t)n >= sizeof(r->request)) {
        return -1;
    }
    r->request_len = (size_t)n;
    r->url = url;
    return 0;
}

static int parse_u32(const char* text, uint32_t min, uint32_t* out)
{
    unsigned long long v = 0;
    if (!text || !*text) {
        return -1;
    }
    for (const char* p = text; *p; ++p) {
        if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned)(*p - '0')) > UINT32_MAX) {
            return -1;
        }
    }
    if (v < min) {
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static void usage(const char* argv0)
{
    fprintf(stderr,
            "usage: %s [-t timeout_ms] [-a attempts] [-b backoff_ms] URL...\n"
            "  URL: http://host[:port][/path]\n"
            "  -t: per attempt, 1..4294967295 (2000); -a: 1..100 (3);\n"
            "  -b: first retry delay, doubled each time up to 5000 (100)\n",
            argv0);
}

int main(int argc, char** argv)
{
    Options opt = { 2000u, 3u, 100u };
    int c;
    while ((c = getopt(argc, argv, "t:a:b:h")) != -1) {
        int bad = 0;
        switch (c) {
        case 't':
            bad = parse_u32(optarg, 1, &opt.timeout_ms);
            break;
        case 'a':
            bad = parse_u32(optarg, 1, &opt.attempts) || opt.attempts > 100;
            break;
        case 'b':
            bad = parse_u32(optarg, 0, &opt.backoff_ms);
            break;
        default:
            bad = 1;
            break;
        }
        if (bad) {
            usage(argv[0]);
            return 2;
        }
    }
    int n = argc - optind;
    if (n <= 0) {
        usage(argv[0]);
        return 2;
    }
    Client cl;
    memset(&cl, 0, sizeof(cl));
    cl.n = n;
    cl.reqs = calloc((size_t)n, sizeof(Req));
    if (!cl.reqs) {
        return 1;
    }
    for (int i = 0; i < n; ++i) {
        cl.reqs[i].opt = &opt;
        if (parse_url(&cl.reqs[i], argv[optind + i]) != 0) {
            fprintf(stderr, "%s: invalid URL '%s'\n", argv[0], argv[optind + i]);
            usage(argv[0]);
            free(cl.reqs);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        free(cl.reqs);
        return 1;
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    futoin_add(root, fetch_all, NULL, &cl);
    futoin_add(root, report, NULL, &cl);
    futoin_execute(root, on_unhandled, &cl);
    futoin_uv_run(uv);
    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    free(cl.reqs);
    return cl.failed ? 1 : 0;
}
