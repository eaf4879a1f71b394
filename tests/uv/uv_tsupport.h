/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the libuv backend tests: one FutoInUv per test, a root runner
 * with a wall-clock guard, and "real peers": plain blocking POSIX sockets in
 * a thread, so the other end of every connection is independent of the code
 * under test.
 */
#ifndef FUTOIN_UV_TSUPPORT_H
#define FUTOIN_UV_TSUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <futoin/uv.h>

#include "../time_scale.h"
#include "../trace_support.h"

/* ---- per-test backend ---- */

static FutoInUv* g_uv;
static int g_misuse;
static char g_misuse_msg[256];

static inline void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    ++g_misuse;
    snprintf(g_misuse_msg, sizeof(g_misuse_msg), "%s", info);
}

static inline int uv_setup(void** state)
{
    (void)state;
    /* A peer that resets a connection must not kill the test. */
    signal(SIGPIPE, SIG_IGN);
    tr_reset();
    g_misuse = 0;
    g_misuse_msg[0] = '\0';
    g_uv = futoin_uv_new(NULL);
    if (!g_uv) {
        return -1;
    }
    futoin_set_misuse_handler(futoin_uv_loop(g_uv), on_misuse, NULL);
    return 0;
}

static inline int uv_teardown(void** state)
{
    (void)state;
    futoin_uv_free(g_uv);
    g_uv = NULL;
    return 0;
}

/* fn as a cmocka test on a fresh FutoInUv (uv_setup() and uv_teardown()). */
#define UV_TEST(fn) cmocka_unit_test_setup_teardown(fn, uv_setup, uv_teardown)

/* ---- strict tests: futoin_uv_free() must find nothing left open ----
 * The backend reports handles still open, and processes still held, as
 * warnings of the log handler when it is freed: a strict test fails in
 * its teardown on any warning logged meanwhile. */

static int g_uv_warnings;
static char g_uv_warning[256];

static inline void uv_warning_capture(void* data, int kind, const char* line)
{
    (void)data;
    if (kind == FUTOIN_LOG_WARNING) {
        ++g_uv_warnings;
        snprintf(g_uv_warning, sizeof(g_uv_warning), "%s", line);
    }
}

static inline int uv_setup_strict(void** state)
{
    g_uv_warnings = 0;
    g_uv_warning[0] = '\0';
    futoin_set_log_handler(uv_warning_capture, NULL, NULL);
    return uv_setup(state);
}

static inline int uv_teardown_strict(void** state)
{
    uv_teardown(state);
    futoin_set_log_handler(NULL, NULL, NULL);
    if (g_uv_warnings) {
        fprintf(stderr, "futoin_uv_free logged: %s\n", g_uv_warning);
        return -1;
    }
    return 0;
}

/* fn as a strict cmocka test (uv_setup_strict() and uv_teardown_strict()). */
#define UV_STRICT_TEST(fn) cmocka_unit_test_setup_teardown(fn, uv_setup_strict, uv_teardown_strict)

/* A root on the test's backend. */
static inline FutoInAsyncSteps* uv_new_root(void)
{
    FutoInAsyncSteps* r = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    assert_non_null(r);
    return r;
}

static inline uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wall-clock bounds scaled by tests/time_scale.h (FUTOIN_TEST_TIME_SCALE,
 * and valgrind's factor): they only catch what takes far longer or never
 * ends; they never measure speed. */
static inline unsigned scaled_ms(unsigned ms)
{
    return futoin_test_ms(ms);
}

static inline void sleep_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- running a root ---- */

typedef struct Outcome {
    int done;
    char code[64]; /* "" on success */
    char info[256];
} Outcome;

static inline void outcome_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    Outcome* o = (Outcome*)data;
    o->done = 1;
    snprintf(o->code, sizeof(o->code), "%s", code);
    snprintf(o->info, sizeof(o->info), "%s", futoin_error_info(as));
    tr("unhandled:%s", code);
}

static inline void outcome_ok(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((Outcome*)data)->done = 1;
}

static inline void on_guard(uv_timer_t* t)
{
    *(int*)t->data = 1;
}

/* Runs libuv until *flag is set or ms passed; returns *flag. ms is a
 * limit, scaled by futoin_test_ms(): a slow machine makes it longer. */
static inline int run_until(int* flag, unsigned ms)
{
    uv_loop_t* l = futoin_uv_uv_loop(g_uv);
    int expired = 0;
    uv_timer_t guard;
    uv_timer_init(l, &guard);
    guard.data = &expired;
    /* libuv's clock is the time of its last iteration: after slow work
     * outside uv_run() the guard would be due at once. */
    uv_update_time(l);
    uv_timer_start(&guard, on_guard, futoin_test_ms(ms), 0);
    while (!*flag && !expired) {
        uv_run(l, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t*)&guard, NULL);
    uv_run(l, UV_RUN_NOWAIT);
    return *flag;
}

/* Lets libuv run for ms, scaled (to see that nothing fires late). */
static inline void run_for(unsigned ms)
{
    int never = 0;
    run_until(&never, ms);
}

/* Adds a final recording step to root, executes it and runs until it ends.
 * guard_ms only catches a hang: it is scaled (scaled_ms()), so that
 * valgrind or a loaded machine does not trip it. */
static inline void run_root(FutoInAsyncSteps* root, Outcome* o, unsigned guard_ms)
{
    memset(o, 0, sizeof(*o));
    futoin_add(root, outcome_ok, NULL, o);
    futoin_execute(root, outcome_error, o);
    assert_true(run_until(&o->done, scaled_ms(guard_ms)));
}

/* ---- real peers: blocking sockets in a thread ---- */

typedef struct Peer Peer;
typedef void (*PeerScript)(Peer* p, int fd);

struct Peer {
    int lfd;
    unsigned port;
    int conns; /* connections to accept */
    pthread_t th;
    PeerScript script;
    void* data;
    char got[1 << 16]; /* what the script received */
    size_t got_len;
    size_t total; /* bytes received in total (scripts that count) */
    int status;   /* scripts report failures here (0: fine) */
    int gate[2];  /* a pipe: peer_open_gate() releases peer_wait_gate() */
};

static inline int listen_loopback(unsigned* port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr*)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A loopback port that nobody listens on (bound, then released). */
static inline unsigned closed_port(void)
{
    unsigned port = 0;
    int fd = listen_loopback(&port);
    close(fd);
    return port;
}

static inline void* peer_main(void* arg)
{
    Peer* p = (Peer*)arg;
    for (int i = 0; i < p->conns; ++i) {
        int fd = accept(p->lfd, NULL, NULL);
        if (fd < 0) {
            p->status = -1;
            break;
        }
        p->script(p, fd);
        close(fd);
    }
    return NULL;
}

static inline void peer_start(Peer* p, PeerScript script, int conns)
{
    memset(p, 0, sizeof(*p));
    p->script = script;
    p->conns = conns;
    p->lfd = listen_loopback(&p->port);
    assert_true(p->lfd >= 0);
    assert_int_equal(pipe(p->gate), 0);
    assert_int_equal(pthread_create(&p->th, NULL, peer_main, p), 0);
}

/* In a script: blocks until the test calls peer_open_gate() (peer_join()
 * does). No time limit: a peer that gave up would close its end, and the
 * test would see that instead of what it waits for (on a slow machine, a
 * timeout). A test that fails before peer_join() leaves the thread blocked
 * until the process ends. */
static inline void peer_wait_gate(Peer* p)
{
    /* Not read: once open, the gate stays open for every later wait. */
    struct pollfd pfd = { p->gate[0], POLLIN, 0 };
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
}

static inline void peer_open_gate(Peer* p)
{
    char c = 1;
    if (write(p->gate[1], &c, 1) != 1) {
        p->status = -2;
    }
}

static inline void peer_join(Peer* p)
{
    peer_open_gate(p);
    pthread_join(p->th, NULL);
    close(p->lfd);
    close(p->gate[0]);
    close(p->gate[1]);
}

static inline int send_str(int fd, const char* s)
{
    size_t len = strlen(s);
    while (len) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return -1;
        }
        s += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Receives into p->got until it ends with suffix (or EOF/error). */
static inline int recv_until(Peer* p, int fd, const char* suffix)
{
    size_t sl = strlen(suffix);
    while (p->got_len < sizeof(p->got) - 1) {
        ssize_t n = recv(fd, p->got + p->got_len, 1, 0);
        if (n <= 0) {
            return -1;
        }
        p->got_len += (size_t)n;
        p->got[p->got_len] = '\0';
        if (p->got_len >= sl && memcmp(p->got + p->got_len - sl, suffix, sl) == 0) {
            return 0;
        }
    }
    return -1;
}

/* Receives and counts until EOF. */
static inline void recv_to_eof(Peer* p, int fd)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
            return;
        }
        p->total += (size_t)n;
    }
}

/* A blocking client connection to 127.0.0.1:port (or -1). */
static inline int client_connect(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

#endif
