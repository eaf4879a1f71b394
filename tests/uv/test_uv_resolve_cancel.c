/* SPDX-License-Identifier: MIT */
/*
 * A lookup against a resolver that never answers, given up by a cancel or
 * a timeout: futoin_uv_run() must return at once, not when the resolver
 * gives up (30 s here), and the lookup must still end and free its memory
 * once the resolver answers.
 *
 * The resolver is ours: the test enters new mount and network namespaces
 * (as root, or as a user through a user namespace), brings up loopback,
 * bind-mounts a resolv.conf naming 127.0.0.1 (timeout:30 attempts:1) and
 * an nsswitch.conf with "hosts: dns", and serves 127.0.0.1:53 from a
 * thread that keeps the queries it receives without answering, until the
 * test lets it refuse them. Where namespaces cannot be had (a container
 * without CAP_SYS_ADMIN, user namespaces disabled) the test is skipped:
 * exit code 77, CTest's SKIP_RETURN_CODE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare(), CLONE_* */
#endif

#include "uv_tsupport.h"

#include "uv/uv_impl.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define SKIPPED 77

/* ---- the namespaces ---- */

static char g_tmpdir[64];
static char g_resolv[96];
static char g_nsswitch[96];

static int write_file(const char* path, const char* text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok ? 0 : -1;
}

static int enter_user_namespace(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) {
        return -1;
    }
    char map[64];
    snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) != 0) {
        return -1;
    }
    /* Required before an unprivileged gid_map; may be absent on old kernels. */
    write_file("/proc/self/setgroups", "deny\n");
    snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
    return write_file("/proc/self/gid_map", map);
}

static int loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    int r = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (r == 0) {
        ifr.ifr_flags |= IFF_UP;
        r = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
    return r;
}

/* Binds path over target if target exists; 0 also when it does not
 * (glibc then uses its defaults: 127.0.0.1, and dns before files). */
static int bind_over(const char* path, const char* target, const char** why)
{
    struct stat st;
    if (stat(target, &st) != 0) {
        return errno == ENOENT ? 0 : -1;
    }
    if (mount(path, target, "none", MS_BIND, NULL) != 0) {
        *why = target;
        return -1;
    }
    return 0;
}

/* Returns the UDP socket serving 127.0.0.1:53, or -1 with a reason. */
static int enter_namespaces(const char** why)
{
    snprintf(g_tmpdir, sizeof(g_tmpdir), "/tmp/futoin_dns_XXXXXX");
    if (!mkdtemp(g_tmpdir)) {
        *why = "mkdtemp";
        return -1;
    }
    snprintf(g_resolv, sizeof(g_resolv), "%s/resolv.conf", g_tmpdir);
    snprintf(g_nsswitch, sizeof(g_nsswitch), "%s/nsswitch.conf", g_tmpdir);
    if (write_file(g_resolv, "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n") != 0
            || write_file(g_nsswitch, "hosts: dns\n") != 0) {
        *why = "writing the configuration files";
        return -1;
    }
    /* For a system without /etc/resolv.conf (glibc reads RES_OPTIONS too). */
    setenv("RES_OPTIONS", "timeout:30 attempts:1", 1);
    if (unshare(CLONE_NEWNS | CLONE_NEWNET) != 0 && enter_user_namespace() != 0) {
        *why = "unshare(CLONE_NEWNS | CLONE_NEWNET) refused, also with CLONE_NEWUSER";
        return -1;
    }
    /* Nothing mounted here may reach the parent namespace. */
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0) {
        *why = "making / private in the new mount namespace";
        return -1;
    }
    if (bind_over(g_resolv, "/etc/resolv.conf", why) != 0
            || bind_over(g_nsswitch, "/etc/nsswitch.conf", why) != 0) {
        return -1;
    }
    if (loopback_up() != 0) {
        *why = "bringing up lo in the new network namespace";
        return -1;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
        *why = "binding 127.0.0.1:53";
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

static void remove_files(void)
{
    unlink(g_resolv);
    unlink(g_nsswitch);
    rmdir(g_tmpdir);
}

/* ---- the resolver: keeps queries, answers REFUSED when told ---- */

enum { DNS_DROP, DNS_REFUSE, DNS_STOP };

typedef struct Query {
    struct sockaddr_in from;
    size_t len;
    unsigned char msg[512];
} Query;

static int g_dns_fd;
static pthread_t g_dns_th;
static atomic_int g_dns_mode;
static atomic_int g_queries; /* received while dropping */
static Query g_kept[16];
static int g_nkept;

static void refuse(const Query* q)
{
    if (q->len < 12) {
        return;
    }
    unsigned char msg[512];
    memcpy(msg, q->msg, q->len);
    msg[2] |= 0x80;                                /* QR: a response */
    msg[3] = (unsigned char)((msg[3] & 0xf0) | 5); /* RCODE: REFUSED */
    sendto(g_dns_fd, msg, q->len, 0, (const struct sockaddr*)&q->from, sizeof(q->from));
}

static void* dns_main(void* arg)
{
    (void)arg;
    for (;;) {
        int mode = atomic_load(&g_dns_mode);
        if (mode == DNS_STOP) {
            return NULL;
        }
        if (mode == DNS_REFUSE) {
            for (int i = 0; i < g_nkept; ++i) {
                refuse(&g_kept[i]);
            }
            g_nkept = 0;
        }
        struct pollfd p = { g_dns_fd, POLLIN, 0 };
        if (poll(&p, 1, 20) <= 0) {
            continue;
        }
        Query q;
        socklen_t fl = sizeof(q.from);
        ssize_t n = recvfrom(g_dns_fd, q.msg, sizeof(q.msg), 0, (struct sockaddr*)&q.from, &fl);
        if (n <= 0) {
            continue;
        }
        q.len = (size_t)n;
        if (atomic_load(&g_dns_mode) == DNS_REFUSE) {
            refuse(&q);
        } else {
            atomic_fetch_add(&g_queries, 1);
            if (g_nkept < (int)(sizeof(g_kept) / sizeof(g_kept[0]))) {
                g_kept[g_nkept++] = q;
            }
        }
    }
}

/* ---- per test ---- */

static int rc_setup(void** state)
{
    atomic_store(&g_queries, 0);
    atomic_store(&g_dns_mode, DNS_DROP);
    return uv_setup(state);
}

/* Lets the resolver answer, so that the lookups given up by the test end:
 * each must free its memory (valgrind and ASan look) and its thread. */
static int rc_teardown(void** state)
{
    int r = uv_teardown(state);
    atomic_store(&g_dns_mode, DNS_REFUSE);
    uint64_t until = mono_ms() + scaled_ms(10000);
    while (futoin__uv_lookup_threads() != 0 && mono_ms() < until) {
        sleep_ms(10);
    }
    if (futoin__uv_lookup_threads() != 0) {
        fprintf(stderr, "lookup threads still running after the resolver answered\n");
        r = -1;
    }
    return r;
}

/* fn with the controlled resolver of this file (rc_setup() and rc_teardown()). */
#define RESOLVE_TEST(fn) cmocka_unit_test_setup_teardown(fn, rc_setup, rc_teardown)

static void step_resolve(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_resolve(as, (const char*)data);
}

static void step_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, (const char*)data, 80);
}

static void step_not_reached(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("resolved");
}

typedef struct Timed {
    FutoInAsyncSteps_execute_callback io;
    const char* name;
    uint32_t ms;
} Timed;

static void step_timed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const Timed* t = data;
    futoin_set_timeout(as, t->ms);
    futoin_add(as, t->io, NULL, (void*)(uintptr_t)t->name);
}

/* Cancels the root once the resolver has the query (or after 5 s). */
typedef struct Canceller {
    uv_timer_t t;
    FutoInAsyncSteps* root;
    uint64_t started;
    uint64_t cancelled_at;
} Canceller;

static void on_poll_queries(uv_timer_t* t)
{
    Canceller* c = t->data;
    if (atomic_load(&g_queries) == 0 && mono_ms() - c->started < scaled_ms(5000)) {
        return;
    }
    tr("cancel");
    c->cancelled_at = mono_ms();
    futoin_cancel(c->root);
    uv_close((uv_handle_t*)t, NULL);
}

/* The run must end within this long after the lookup was given up: the
 * resolver would hold it for 30 s. */
#define ENDS_WITHIN_MS 5000u

/* Static: a failed assertion must not leave a handle on a dead stack. */
static Canceller g_canceller;

/* Resolves name, cancels the root from poll (a timer callback of period
 * 5 ms), runs until futoin_uv_run() returns and checks that nothing
 * reached the step; returns the resolver's mode when the run returned. */
static int run_cancelled(const char* name, uv_timer_cb poll)
{
    Canceller* c = &g_canceller;
    memset(c, 0, sizeof(*c));
    c->root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(c->root, step_resolve, NULL, (void*)name);
    futoin_add(c->root, step_not_reached, NULL, NULL);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_execute(c->root, outcome_error, &o);
    uv_timer_init(futoin_uv_uv_loop(g_uv), &c->t);
    c->t.data = c;
    c->started = mono_ms();
    uv_timer_start(&c->t, poll, 5, 5);
    assert_int_equal(futoin_uv_run(g_uv), 0);
    int mode = atomic_load(&g_dns_mode);
    futoin_asyncsteps_free(c->root);
    assert_int_equal(o.done, 0);
    return mode;
}

static void test_cancelled_resolve(void** state)
{
    (void)state;
    int mode_at_return = run_cancelled("hang.futoin.test", on_poll_queries);
    uint64_t took = mono_ms() - g_canceller.cancelled_at;
    assert_true(atomic_load(&g_queries) >= 1);
    assert_true(took < scaled_ms(ENDS_WITHIN_MS));
    assert_int_equal(mode_at_return, DNS_DROP);
    assert_trace("cancel");
    /* The lookup still runs: the run did not wait for it. */
    assert_int_equal(futoin__uv_lookup_threads(), 1);
}

static void run_timed(const Timed* t, Outcome* o)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_timed, NULL, (void*)t);
    futoin_add(root, step_not_reached, NULL, NULL);
    memset(o, 0, sizeof(*o));
    futoin_execute(root, outcome_error, o);
    uint64_t t0 = mono_ms();
    assert_int_equal(futoin_uv_run(g_uv), 0);
    uint64_t took = mono_ms() - t0;
    assert_true(took < t->ms + scaled_ms(ENDS_WITHIN_MS));
    assert_int_equal(o->done, 1);
    futoin_asyncsteps_free(root);
}

static void test_timed_out_resolve(void** state)
{
    (void)state;
    Timed t = { step_resolve, "hang2.futoin.test", 100 };
    Outcome o;
    run_timed(&t, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    assert_string_equal(o.info, "resolve hang2.futoin.test");
    assert_trace("unhandled:Timeout");
}

/* futoin_uv_tcp_connect() resolves names the same way. */
static void test_timed_out_connect_by_name(void** state)
{
    (void)state;
    Timed t = { step_connect, "hang3.futoin.test", 100 };
    Outcome o;
    run_timed(&t, &o);
    assert_string_equal(o.code, FUTOIN_TIMEOUT);
    assert_string_equal(o.info, "connect hang3.futoin.test:80");
    assert_trace("unhandled:Timeout");
}

/* Beyond futoin__uv_lookup_threads_max lookups run on libuv's pool, where
 * a lookup given up while it runs keeps the run alive until it ends: the
 * bound is the resolver's. Here the lookup is cancelled once the resolver
 * has its query (so a pool thread runs it), and the resolver refuses 300 ms
 * later: the run ends then, and the step hears nothing. */
static uv_timer_t g_refuse_later;

static void on_let_refuse(uv_timer_t* t)
{
    atomic_store(&g_dns_mode, DNS_REFUSE);
    uv_close((uv_handle_t*)t, NULL);
}

static void on_poll_then_refuse(uv_timer_t* t)
{
    Canceller* c = t->data;
    on_poll_queries(t);
    if (c->cancelled_at) {
        uv_timer_init(futoin_uv_uv_loop(g_uv), &g_refuse_later);
        uv_timer_start(&g_refuse_later, on_let_refuse, 300, 0);
        /* Only the lookup may keep the run going. */
        uv_unref((uv_handle_t*)&g_refuse_later);
    }
}

static void test_pool_fallback_ends_with_the_lookup(void** state)
{
    (void)state;
    unsigned max = atomic_exchange(&futoin__uv_lookup_threads_max, 0);
    int mode_at_return = run_cancelled("hang4.futoin.test", on_poll_then_refuse);
    atomic_store(&futoin__uv_lookup_threads_max, max);
    assert_true(atomic_load(&g_queries) >= 1);
    assert_int_equal(mode_at_return, DNS_REFUSE);
    assert_trace("cancel");
    if (!uv_is_closing((uv_handle_t*)&g_refuse_later)) {
        uv_close((uv_handle_t*)&g_refuse_later, NULL);
    }
    uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_NOWAIT);
}

int main(void)
{
    const char* why = NULL;
    g_dns_fd = enter_namespaces(&why);
    if (g_dns_fd < 0) {
        printf("SKIPPED: no private resolver: %s (%s)\n", why, strerror(errno));
        if (g_tmpdir[0]) {
            remove_files();
        }
        return SKIPPED;
    }
    atomic_store(&g_dns_mode, DNS_DROP);
    if (pthread_create(&g_dns_th, NULL, dns_main, NULL) != 0) {
        printf("SKIPPED: no resolver thread\n");
        remove_files();
        return SKIPPED;
    }
    const struct CMUnitTest tests[] = {
        RESOLVE_TEST(test_cancelled_resolve),
        RESOLVE_TEST(test_timed_out_resolve),
        RESOLVE_TEST(test_timed_out_connect_by_name),
        RESOLVE_TEST(test_pool_fallback_ends_with_the_lookup),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    atomic_store(&g_dns_mode, DNS_STOP);
    pthread_join(g_dns_th, NULL);
    close(g_dns_fd);
    remove_files();
    return r;
}
