/* SPDX-License-Identifier: MIT */
/*
 * The example examples/uv/tcp_echo_server, run as a program and driven by
 * blocking socket clients:
 *
 *   test_tcp_echo_server PATH/TO/tcp_echo_server [WRAPPER...]
 *
 * WRAPPER (valgrind and its options in a valgrind build) runs the server;
 * a valgrind error or leak makes it exit 99, which fails the exit check.
 *
 *   - echo, the Limiter (two sessions at once, one waiting, the next one
 *     closed at once), a waiting connection admitted when a slot frees,
 *     SIGINT: the "draining" line, new connections refused, the open ones
 *     still served until their clients close, then exit 0 and the counts;
 *   - during the drain, an idle connection is closed by its idle timeout,
 *     and one that is not idle long enough is cut at the drain deadline;
 *   - SIGTERM with nothing open stops at once;
 *   - a bad command line exits 2.
 * Time limits are scaled (tests/time_scale.h); the checks wait for events,
 * never for a length of time, but for "nothing came" (a queued session).
 */
#include "uv_tsupport.h"

#include <fcntl.h>
#include <sys/wait.h>

static char** g_server_argv; /* WRAPPER..., SERVER */
static int g_server_argc;

typedef struct Server {
    pid_t pid;
    int out; /* its stdout */
    unsigned port;
    char buf[8192];
    size_t len;
} Server;

/* Starts the server with args (NULL-terminated) after WRAPPER and SERVER. */
static void server_start(Server* s, const char* const* args)
{
    memset(s, 0, sizeof(*s));
    char* argv[32];
    int n = 0;
    for (int i = 0; i < g_server_argc; ++i) {
        argv[n++] = g_server_argv[i];
    }
    for (int i = 0; args[i]; ++i) {
        argv[n++] = (char*)(uintptr_t)args[i];
    }
    argv[n] = NULL;
    int p[2];
    assert_int_equal(pipe(p), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    s->out = p[0];
    fcntl(s->out, F_SETFL, fcntl(s->out, F_GETFL) | O_NONBLOCK);
}

/* Waits (up to ms, scaled) for a line of the server's stdout that contains
 * needle; copies it to line. 0, or -1 on timeout or end of output. */
static int server_line(Server* s, const char* needle, unsigned ms, char* line, size_t size)
{
    uint64_t until = mono_ms() + scaled_ms(ms);
    for (;;) {
        char* nl;
        while ((nl = memchr(s->buf, '\n', s->len)) != NULL) {
            *nl = '\0';
            int hit = strstr(s->buf, needle) != NULL;
            if (hit) {
                size_t l = strlen(s->buf);
                l = l < size - 1 ? l : size - 1;
                memcpy(line, s->buf, l);
                line[l] = '\0';
            }
            size_t used = (size_t)(nl - s->buf) + 1;
            memmove(s->buf, nl + 1, s->len - used);
            s->len -= used;
            if (hit) {
                return 0;
            }
        }
        uint64_t now = mono_ms();
        if (now >= until || s->len == sizeof(s->buf)) {
            return -1;
        }
        struct pollfd pfd = { s->out, POLLIN, 0 };
        poll(&pfd, 1, (int)(until - now));
        ssize_t r = read(s->out, s->buf + s->len, sizeof(s->buf) - s->len);
        if (r == 0) {
            return -1;
        }
        if (r > 0) {
            s->len += (size_t)r;
        }
    }
}

/* Waits (up to ms, scaled) for the server to exit; returns its exit
 * status, or -1 (killed, or still running: then it is killed). */
static int server_exit(Server* s, unsigned ms)
{
    uint64_t until = mono_ms() + scaled_ms(ms);
    int status = 0;
    pid_t r;
    while ((r = waitpid(s->pid, &status, WNOHANG)) == 0 && mono_ms() < until) {
        sleep_ms(10);
    }
    if (r == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void server_ready(Server* s)
{
    char line[256];
    assert_int_equal(server_line(s, "listening on 127.0.0.1:", 20000, line, sizeof(line)), 0);
    const char* p = strstr(line, "127.0.0.1:");
    s->port = (unsigned)strtoul(p + strlen("127.0.0.1:"), NULL, 10);
    assert_true(s->port > 0);
}

static void server_close(Server* s)
{
    close(s->out);
}

/* ---- clients ---- */

static void set_recv_timeout(int fd, unsigned ms)
{
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* Sends text and expects it back within ms (scaled). */
static void echo(int fd, const char* text, unsigned ms)
{
    assert_int_equal(send_str(fd, text), 0);
    size_t want = strlen(text);
    char got[256];
    size_t len = 0;
    set_recv_timeout(fd, scaled_ms(ms));
    while (len < want) {
        ssize_t n = recv(fd, got + len, want - len, 0);
        assert_true(n > 0);
        len += (size_t)n;
    }
    assert_memory_equal(got, text, want);
}

/* Expects the server to close fd (EOF or reset) within ms (scaled). */
static void expect_closed(int fd, unsigned ms)
{
    set_recv_timeout(fd, scaled_ms(ms));
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
}

/* Expects nothing from fd for ms (scaled). */
static void expect_silence(int fd, unsigned ms)
{
    struct pollfd pfd = { fd, POLLIN, 0 };
    assert_int_equal(poll(&pfd, 1, (int)scaled_ms(ms)), 0);
}

static int connect_ok(unsigned port)
{
    int fd = client_connect(port);
    assert_true(fd >= 0);
    return fd;
}

/* ---- tests ---- */

static void test_echo_limiter_and_drain(void** state)
{
    (void)state;
    Server s;
    static const char* const args[] = { "-p", "0", "-c", "2", "-q", "1", "-i", "60000", "-d",
        "60000", NULL };
    server_start(&s, args);
    server_ready(&s);

    int a = connect_ok(s.port);
    echo(a, "a1\n", 5000);
    int b = connect_ok(s.port);
    echo(b, "b1\n", 5000);
    /* Both slots are taken: c waits in the Limiter's queue, d finds the
     * queue full and is closed at once. */
    int c = connect_ok(s.port);
    assert_int_equal(send_str(c, "c1\n"), 0);
    int d = connect_ok(s.port);
    expect_closed(d, 5000);
    close(d);
    expect_silence(c, 200);
    /* a leaves: c gets its slot, and its echo. */
    close(a);
    char got[8] = "";
    set_recv_timeout(c, scaled_ms(5000));
    ssize_t n = recv(c, got, 3, MSG_WAITALL);
    assert_int_equal(n, 3);
    assert_memory_equal(got, "c1\n", 3);

    /* The drain: the port closes, the open connections go on. */
    assert_int_equal(kill(s.pid, SIGINT), 0);
    char line[256];
    assert_int_equal(server_line(&s, "draining", 10000, line, sizeof(line)), 0);
    assert_string_equal(line, "tcp_echo_server: SIGINT: draining, 2 connections open");
    assert_int_equal(client_connect(s.port), -1);
    echo(b, "b2\n", 5000);
    echo(c, "c2\n", 5000);
    close(b);
    close(c);
    assert_int_equal(server_exit(&s, 10000), 0);
    assert_int_equal(server_line(&s, "stopped:", 1000, line, sizeof(line)), 0);
    assert_string_equal(line,
            "tcp_echo_server: stopped: accepted 4, rejected 1, closed by peer 3, idle 0, cut at "
            "the deadline 0, errors 0");
    server_close(&s);
}

static void test_echo_drain_idle_and_deadline(void** state)
{
    (void)state;
    Server s;
    /* x goes idle and is closed by its idle timeout; y is kept busy and is
     * cut at the deadline, which comes later. Scaled: y's 20 ms between
     * sends must stay far below the idle time on a slow machine too. The
     * test waits for the deadline: the shorter both, the shorter the test. */
    char idle[16];
    char drain[16];
    snprintf(idle, sizeof(idle), "%u", scaled_ms(500));
    snprintf(drain, sizeof(drain), "%u", scaled_ms(1000));
    const char* const args[] = { "-p", "0", "-i", idle, "-d", drain, NULL };
    server_start(&s, args);
    server_ready(&s);
    int x = connect_ok(s.port);
    int y = connect_ok(s.port);
    echo(x, "x\n", 5000);
    echo(y, "y\n", 5000);
    assert_int_equal(kill(s.pid, SIGINT), 0);
    char line[256];
    assert_int_equal(server_line(&s, "draining", 10000, line, sizeof(line)), 0);
    assert_string_equal(line, "tcp_echo_server: SIGINT: draining, 2 connections open");
    /* y keeps busy (every 20 ms, well within its idle time) until the
     * server closes it; x is closed on its own meanwhile. */
    int y_closed = 0;
    uint64_t until = mono_ms() + scaled_ms(30000);
    while (!y_closed && mono_ms() < until) {
        if (send_str(y, "z") != 0) {
            y_closed = 1; /* reset by the close */
            break;
        }
        struct pollfd pfd = { y, POLLIN, 0 };
        if (poll(&pfd, 1, 20) > 0) {
            char buf[64];
            ssize_t n = recv(y, buf, sizeof(buf), 0);
            y_closed = n <= 0;
        }
    }
    assert_true(y_closed);
    expect_closed(x, 1000);
    close(x);
    close(y);
    assert_int_equal(server_exit(&s, 10000), 0);
    assert_int_equal(server_line(&s, "stopped:", 1000, line, sizeof(line)), 0);
    assert_string_equal(line,
            "tcp_echo_server: stopped: accepted 2, rejected 0, closed by peer 0, idle 1, cut at "
            "the deadline 1, errors 0");
    server_close(&s);
}

static void test_echo_sigterm_idle_server(void** state)
{
    (void)state;
    Server s;
    static const char* const args[] = { "-p", "0", NULL };
    server_start(&s, args);
    server_ready(&s);
    assert_int_equal(kill(s.pid, SIGTERM), 0);
    char line[256];
    assert_int_equal(server_line(&s, "draining", 10000, line, sizeof(line)), 0);
    assert_string_equal(line, "tcp_echo_server: SIGTERM: draining, 0 connections open");
    /* Nothing to wait for: not the idle time, not the drain deadline (10 s). */
    assert_int_equal(server_exit(&s, 5000), 0);
    server_close(&s);
}

static void test_echo_usage(void** state)
{
    (void)state;
    static const char* const bad[][3] = {
        { "-p", "65536", NULL },
        { "-c", "0", NULL },
        { "-i", "x", NULL },
        { "-x", "1", NULL },
        { "-p", NULL, NULL },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        Server s;
        server_start(&s, bad[i]);
        assert_int_equal(server_exit(&s, 10000), 2);
        server_close(&s);
    }
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_tcp_echo_server SERVER [WRAPPER...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* argv[1] is the server, argv[2..] the wrapper that runs it. */
    static char* cmd[24];
    int n = 0;
    for (int i = 2; i < argc && n < 20; ++i) {
        cmd[n++] = argv[i];
    }
    cmd[n++] = argv[1];
    g_server_argv = cmd;
    g_server_argc = n;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_limiter_and_drain),
        cmocka_unit_test(test_echo_drain_idle_and_deadline),
        cmocka_unit_test(test_echo_sigterm_idle_server),
        cmocka_unit_test(test_echo_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
