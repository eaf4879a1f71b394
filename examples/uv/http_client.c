/* SPDX-License-Identifier: MIT */
/*
 * An HTTP/1.1 client built from AsyncSteps on the libuv backend, the recipe
 * of docs/RECIPES.md "A client: bounded parallel requests, timeouts and
 * retries": the URLs are fetched at most N at a time, each attempt under its
 * own timeout, a failed attempt is retried after an exponential back-off
 * when its error is one that a later try can cure, and the results are
 * collected "all settled": one URL failing neither cancels nor holds up the
 * others.
 *
 *   http_client [-c N] [-t timeout_ms] [-a attempts] [-b backoff_ms] [-v]
 *               [-k CA_FILE] URL...
 *
 * URL: http://host[:port][/path] or https://host[:port][/path] (host: a
 * name, an IPv4 address or [IPv6]). An https URL is fetched over TLS
 * (futoin_uv_tls_handshake() right after the connect, in the same
 * attempt and under its timeout): the server's certificate is verified
 * against -k CA_FILE (PEM), or the system's store without -k, and its name
 * against the URL's host.
 * -c: at most N requests at once (4); -t: timeout of one attempt, connect to
 * last body byte (2000 ms); -a: attempts per URL (3); -b: delay before the
 * second attempt (100 ms), doubled before each further one (at most
 * 5000 ms); -v: a line on stderr for each attempt that starts and each one
 * that fails, with the milliseconds since the start and the retry decision.
 *
 * What is retried (retryable()):
 *   - Timeout: the attempt took longer than -t;
 *   - HttpUnavailable: a 503 answer, the server asks to come back later
 *     (on the last attempt the 503 is the answer);
 *   - a response cut short: the server closed before its end (CommError
 *     "EOF: ...");
 *   - an error of the backend whose libuv number (futoin_uv_errno()) says
 *     that the next try may work: UV_ECONNREFUSED (nothing listens, yet),
 *     UV_ECONNRESET, UV_ECONNABORTED and UV_EPIPE (the peer dropped the
 *     connection), UV_ETIMEDOUT (the system's own connect timeout),
 *     UV_EAI_AGAIN (the resolver failed for now).
 * Anything else ends the URL at once: a name that does not exist
 * (UV_EAI_NONAME), any other libuv error, a ProtocolError (a response that
 * breaks HTTP/1.1 framing, the rules: http_response.h; the same server
 * would send the same bytes again). The numbers decide, not the text of
 * error_info, which is for people (it starts with the number's name:
 * "ECONNREFUSED: connect 127.0.0.1:1").
 *
 * Prints one line per URL, in command line order (status and body size, or
 * the error and its error_info, which names the operation and the peer,
 * and the number of attempts), then a summary. Exit status 0 when every URL
 * got an HTTP answer that is not 5xx, 1 otherwise, 2 on a usage error.
 *
 * Who owns what. A URL's record (Req: the request, the attempts so far,
 * the answer) is made from the command line and lives for the whole run.
 * An attempt's state (Attempt: the response parser, with its 16 KiB line
 * buffer, and the connection) is allocated when the attempt starts and owned
 * by the attempt's step (futoin_add_owned()): attempt_free() releases the
 * connection and frees it exactly once when that step ends, whichever way
 * (an answer, an error, its timeout, the root cancelled or freed), before
 * the back-off of the next attempt. So at most N of them exist, however
 * many URLs there are.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_response.h"

#define MAX_BODY (64u * 1024u * 1024u)
#define MAX_BACKOFF_MS 5000u
#define MAX_CONCURRENCY 10000u
/* The error code of a 503 answer that is worth retrying. */
#define HTTP_UNAVAILABLE "HttpUnavailable"
/* The error code of a response that breaks HTTP/1.1 framing. */
#define HTTP_PROTOCOL_ERROR "ProtocolError"

typedef struct Options {
    uint32_t concurrency;
    uint32_t timeout_ms;
    uint32_t attempts;
    uint32_t backoff_ms;
    int verbose;
    const char* ca_file;
} Options;

typedef struct Client Client;

/* A URL and what became of it. */
typedef struct Req {
    Client* cl;
    const char* url;
    char host[256];
    unsigned port;
    int https;
    char request[2048];
    size_t request_len;
    uint32_t attempts; /* started so far */
    /* The answer, once one came (status 0 until then). */
    int status;
    char reason[64];
    uint64_t body_len;
} Req;

struct Client {
    const Options* opt;
    FutoInUvTls* tls; /* for https URLs: a client configuration, else NULL */
    Req* reqs;
    int n;
    int failed;
    struct timespec start;
};

/* One attempt, owned by its step. */
typedef struct Attempt {
    Req* r;
    FutoInUvStream* s; /* the connection, once there is one */
    HttpResponse resp;
} Attempt;

/* The destructor of an attempt's step: runs once, when the step ends. */
static void attempt_free(void* data)
{
    Attempt* a = data;
    futoin_uv_stream_release(a->s); /* the connection closes (NULL: none) */
    free(a);
}

/* For -v: the milliseconds since the start. */
static unsigned long long elapsed_ms(const Client* cl)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (unsigned long long)(now.tv_sec - cl->start.tv_sec) * 1000u
            + (unsigned long long)((now.tv_nsec - cl->start.tv_nsec) / 1000000);
}

/* ------------------------------------------------------------------------ */
/* One attempt: connect, request, response                                   */

/* The response is complete: the URL's answer. */
static void answered(Attempt* a)
{
    Req* r = a->r;
    r->status = a->resp.status;
    snprintf(r->reason, sizeof(r->reason), "%s", a->resp.reason);
    r->body_len = a->resp.body_len;
}

static void response_piece(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Attempt* a = data;
    size_t len = 0;
    const char* p = futoin_uv_arg_bytes(args, 0, &len);
    /* Bytes after a complete response are dropped: the request asked for
     * "Connection: close". */
    http_response_feed(&a->resp, p ? p : "", len);
    if (a->resp.state == HR_ERROR) {
        futoin_error(as, HTTP_PROTOCOL_ERROR, a->resp.error); /* copied */
        return;
    }
    if (a->resp.head_complete && a->resp.status == 503
            && a->r->attempts < a->r->cl->opt->attempts) {
        futoin_error(as, HTTP_UNAVAILABLE, "503 Service Unavailable");
        return;
    }
    if (a->resp.state == HR_DONE) {
        answered(a);
        futoin_break(as, NULL); /* out of the read loop: the attempt succeeds */
    }
}

static void response_iter(FutoInAsyncSteps* as, void* data)
{
    Attempt* a = data;
    futoin_uv_read_some(as, a->s, 65536);
    futoin_add(as, response_piece, NULL, a);
}

static void read_response(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, response_iter, data, NULL);
}

/* The server closed: the end of a body without a length, or a response cut
 * short. Any other error goes on as it is, its libuv number with it. */
static void read_response_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    Attempt* a = data;
    if (futoin_uv_errno(as) != UV_EOF) {
        return;
    }
    http_response_eof(&a->resp);
    if (a->resp.state == HR_DONE) {
        answered(a);
        futoin_success(as);
        return;
    }
    char info[160];
    snprintf(info, sizeof(info), "EOF: %s", a->resp.error);
    futoin_error(as, FUTOIN_COMM_ERROR, info); /* a->resp.truncated is set */
}

static void exchange(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Attempt* a = data;
    /* The attempt takes its own reference: the connect step's value holds
     * one only until this step returns. attempt_free() drops it. */
    a->s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    if (a->r->https) {
        /* SNI and the certificate's name: the URL's host. */
        futoin_uv_tls_handshake(as, a->s, a->r->cl->tls, a->r->host);
    }
    futoin_uv_write(as, a->s, a->r->request, a->r->request_len);
    futoin_add(as, read_response, read_response_eh, a);
}

static void attempt(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Attempt* a = data;
    /* One timeout for the whole attempt: connect, request, response. */
    futoin_set_timeout(as, a->r->cl->opt->timeout_ms);
    futoin_uv_tcp_connect(as, a->r->host, a->r->port);
    futoin_add(as, exchange, NULL, a);
}

/* The delay before attempt number done + 1 (done >= 1). */
static uint32_t backoff_ms(const Options* opt, uint32_t done)
{
    uint32_t shift = done - 1 < 16 ? done - 1 : 16;
    uint64_t delay = (uint64_t)opt->backoff_ms << shift;
    return delay < MAX_BACKOFF_MS ? (uint32_t)delay : MAX_BACKOFF_MS;
}

/* Whether a later attempt may succeed where this one failed with code. */
static int retryable(FutoInAsyncSteps* as, const Attempt* a, const char* code)
{
    if (strcmp(code, FUTOIN_TIMEOUT) == 0 || strcmp(code, HTTP_UNAVAILABLE) == 0) {
        return 1;
    }
    if (a->resp.state == HR_ERROR) {
        return a->resp.truncated; /* cut short: yes; a ProtocolError: no */
    }
    switch (futoin_uv_errno(as)) {
    case UV_ECONNREFUSED:
    case UV_ECONNRESET:
    case UV_ECONNABORTED:
    case UV_EPIPE:
    case UV_ETIMEDOUT:
    case UV_EAI_AGAIN:
        return 1;
    default:
        return 0; /* UV_EAI_NONAME and the others; 0: not the backend's */
    }
}

/* A failed attempt: recover, so that the retry loop goes on to the next
 * attempt, or let the error go on: it ends the URL's item, and the item's
 * outcome is that error. */
static void attempt_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Attempt* a = data;
    Req* r = a->r;
    const Options* opt = r->cl->opt;
    int retry = retryable(as, a, code);
    int again = retry && r->attempts < opt->attempts;
    if (opt->verbose) {
        int err = futoin_uv_errno(as);
        char decision[48];
        if (again) {
            snprintf(decision, sizeof(decision), "retry in %u ms", backoff_ms(opt, r->attempts));
        } else {
            snprintf(decision, sizeof(decision), "%s", retry ? "no attempts left" : "not retried");
        }
        fprintf(stderr, "http_client: %llu ms: %s: attempt %u failed: %s%s%s, %s\n",
                elapsed_ms(r->cl), r->url, r->attempts, code, err ? " " : "",
                err ? uv_err_name(err) : "", decision);
    }
    if (again) {
        futoin_success(as);
    }
}

static void start_attempt(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Req* r = data;
    Attempt* a = calloc(1, sizeof(*a));
    if (!a) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "out of memory");
        return;
    }
    a->r = r;
    http_response_init(&a->resp, MAX_BODY, NULL, NULL);
    ++r->attempts;
    if (r->cl->opt->verbose) {
        fprintf(stderr, "http_client: %llu ms: %s: attempt %u\n", elapsed_ms(r->cl), r->url,
                r->attempts);
    }
    futoin_add_owned(as, attempt, attempt_eh, a, attempt_free);
}

static void retry_iteration(FutoInAsyncSteps* as, void* data)
{
    Req* r = data;
    if (r->status) {
        futoin_break(as, NULL); /* answered */
        return;
    }
    if (r->attempts > 0) {
        futoin_uv_sleep(as, backoff_ms(r->cl->opt, r->attempts));
    }
    futoin_add(as, start_attempt, NULL, r);
}

/* Item i of the bounded parallel step: URL i, every attempt it takes. */
static void fetch_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    Client* cl = data;
    futoin_add_loop(as, retry_iteration, &cl->reqs[i], NULL);
}

/* ------------------------------------------------------------------------ */
/* The outcomes                                                              */

static void report(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Client* cl = data;
    const FutoInBoundedResult* res = futoin_bounded_result(args);
    if (!res) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "no outcomes");
        return;
    }
    int ok = 0;
    for (size_t i = 0; i < res->count; ++i) {
        const FutoInBoundedOutcome* o = &res->items[i];
        const Req* r = &cl->reqs[i];
        const char* s = r->attempts == 1 ? "" : "s";
        if (o->code) {
            /* The error that ended the item: the last attempt's. */
            printf("%zu. %s -> %s: %s (%u attempt%s)\n", i + 1, r->url, o->code, o->info,
                    r->attempts, s);
            ++cl->failed;
            continue;
        }
        printf("%zu. %s -> %d %s, %llu bytes (%u attempt%s)\n", i + 1, r->url, r->status, r->reason,
                (unsigned long long)r->body_len, r->attempts, s);
        if (r->status >= 500) {
            ++cl->failed;
        } else {
            ++ok;
        }
    }
    printf("all settled: %d answered, %d failed\n", ok, cl->failed);
}

static void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Client* cl = data;
    /* Not expected: the items' errors are their outcomes. Out of memory
     * for the outcomes would come here. */
    fprintf(stderr, "http_client: unhandled %s: %s\n", code, futoin_error_info(as));
    cl->failed = cl->n ? cl->n : 1;
}

/* ------------------------------------------------------------------------ */
/* Command line                                                              */

static int parse_url(Req* r, const char* url)
{
    const char* h;
    if (strncmp(url, "http://", 7) == 0) {
        h = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        h = url + 8;
        r->https = 1;
    } else {
        return -1;
    }
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
    r->port = r->https ? 443 : 80;
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
            "usage: %s [-c N] [-t timeout_ms] [-a attempts] [-b backoff_ms] [-v]\n"
            "       [-k CA_FILE] URL...\n"
            "  URL: http://host[:port][/path] or https://host[:port][/path]\n"
            "  -c: requests at once, 1..10000 (4); -t: per attempt, 1..4294967295 (2000);\n"
            "  -a: attempts per URL, 1..100 (3);\n"
            "  -b: first retry delay, doubled each time up to 5000 (100);\n"
            "  -v: each attempt and its failure on stderr;\n"
            "  -k: https: trust the CAs of this PEM file (default: the system's store)\n",
            argv0);
}

int main(int argc, char** argv)
{
    Options opt = { 4u, 2000u, 3u, 100u, 0, NULL };
    int c;
    while ((c = getopt(argc, argv, "c:t:a:b:k:vh")) != -1) {
        int bad = 0;
        switch (c) {
        case 'c':
            bad = parse_u32(optarg, 1, &opt.concurrency) || opt.concurrency > MAX_CONCURRENCY;
            break;
        case 't':
            bad = parse_u32(optarg, 1, &opt.timeout_ms);
            break;
        case 'a':
            bad = parse_u32(optarg, 1, &opt.attempts) || opt.attempts > 100;
            break;
        case 'b':
            bad = parse_u32(optarg, 0, &opt.backoff_ms);
            break;
        case 'v':
            opt.verbose = 1;
            break;
        case 'k':
            opt.ca_file = optarg;
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
    cl.opt = &opt;
    cl.n = n;
    cl.reqs = calloc((size_t)n, sizeof(Req));
    if (!cl.reqs) {
        return 1;
    }
    for (int i = 0; i < n; ++i) {
        cl.reqs[i].cl = &cl;
        if (parse_url(&cl.reqs[i], argv[optind + i]) != 0) {
            fprintf(stderr, "%s: invalid URL '%s'\n", argv[0], argv[optind + i]);
            usage(argv[0]);
            free(cl.reqs);
            return 2;
        }
    }
    int https = 0;
    for (int i = 0; i < n; ++i) {
        https |= cl.reqs[i].https;
    }
    if (https) {
        int err = 0;
        cl.tls = futoin_uv_tls_new(0, &err);
        if (!cl.tls) {
            fprintf(stderr, "%s: TLS: %s\n", argv[0], uv_strerror(err));
            free(cl.reqs);
            return 1;
        }
        if (opt.ca_file && futoin_uv_tls_set_ca(cl.tls, opt.ca_file) != 0) {
            fprintf(stderr, "%s: %s\n", argv[0], futoin_uv_tls_last_error(cl.tls));
            futoin_uv_tls_release(cl.tls);
            free(cl.reqs);
            return 1;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        futoin_uv_tls_release(cl.tls);
        free(cl.reqs);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &cl.start);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    /* Every URL, at most -c at once; report gets every outcome. */
    futoin_parallel_bounded(root, (size_t)n, opt.concurrency, fetch_item, &cl,
            FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, report, NULL, &cl);
    futoin_execute(root, on_unhandled, &cl);
    futoin_uv_run(uv);
    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    futoin_uv_tls_release(cl.tls);
    free(cl.reqs);
    return cl.failed ? 1 : 0;
}
