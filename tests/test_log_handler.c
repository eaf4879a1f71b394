/* SPDX-License-Identifier: MIT */
/*
 * The process-wide log handler (futoin_set_log_handler(), asynctool.h):
 * every line the library prints reaches it with its kind: the default
 * misuse handler's reports (of the engine and of a loop without one), the
 * default loop dump (on request and on a signal), the message before an
 * out-of-memory abort; NULL restores the default, which writes to stderr,
 * and the previous handler and its data come back from each call.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef _WIN32
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#endif

#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#ifndef _WIN32
#include "fault_alloc.h"
#endif
#include "log_capture.h"

/* Windows has no SIGUSR1: SIGINT there, raised by the test itself. */
#ifdef _WIN32
#define DUMP_SIGNAL SIGINT
#else
#define DUMP_SIGNAL SIGUSR1
#endif

/* ---- a handler that keeps what it is given ---- */

static Captured g_cap;

static int setup(void** state)
{
    (void)state;
    log_capture_start(&g_cap);
    return 0;
}

static int teardown(void** state)
{
    (void)state;
    log_capture_stop();
    return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* ---- stderr captured into a file ---- */

typedef struct {
    int saved;
    FILE* file;
} StderrCapture;

static void stderr_capture_start(StderrCapture* c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->file), 2) >= 0);
}

/* What was written to stderr since the start (buf NUL-terminated). */
static void stderr_capture_end(StderrCapture* c, char* buf, size_t size)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    rewind(c->file);
    size_t n = fread(buf, 1, size - 1, c->file);
    buf[n] = '\0';
    fclose(c->file);
#ifdef _WIN32
    /* stderr is in text mode there: its line ends were written as CRLF. */
    size_t to = 0;
    for (size_t i = 0; i < n; ++i) {
        if (buf[i] != '\r') {
            buf[to++] = buf[i];
        }
    }
    buf[to] = '\0';
#endif
}

/* ---- a root that fails with nobody to tell ---- */

static void step_fails(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "MyError", "the reason");
}

/* Runs a root whose error escapes with no unhandled-error callback: the
 * loop's misuse handler gets "unhandled error MyError (the reason)"; the
 * default one logs it as a warning, not as API misuse. */
static void run_unhandled_error(FutoInLoop* loop)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    assert_non_null(root);
    futoin_add(root, step_fails, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
}

static const char* const k_unhandled_line = "futoin: unhandled error MyError (the reason)";

static void step_succeeds_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_success(as);
    futoin_success(as);
}

/* Runs a root whose step misuses the API (success() twice); its
 * InternalError escapes with no unhandled-error callback. */
static void run_misuse_unhandled(FutoInLoop* loop)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    assert_non_null(root);
    futoin_add(root, step_succeeds_twice, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */

/* set() hands back the previous handler and its data; NULL restores the
 * default, which is futoin_log_stderr. */
static void test_set_returns_previous(void** state)
{
    (void)state;
    int other = 0;
    void* pdata = (void*)&other;
    assert_ptr_equal(futoin_set_log_handler(NULL, NULL, &pdata), log_capture);
    assert_ptr_equal(pdata, &g_cap);
    /* The default is reported as futoin_log_stderr with no data. */
    pdata = (void*)&other;
    assert_ptr_equal(futoin_set_log_handler(log_capture, &other, &pdata), futoin_log_stderr);
    assert_null(pdata);
    /* prev_data may be NULL. */
    assert_ptr_equal(futoin_set_log_handler(log_capture, &g_cap, NULL), log_capture);
    pdata = NULL;
    assert_ptr_equal(futoin_set_log_handler(futoin_log_stderr, NULL, &pdata), log_capture);
    assert_ptr_equal(pdata, &g_cap);
    /* Setting futoin_log_stderr itself is the same as NULL. */
    assert_ptr_equal(futoin_set_log_handler(NULL, &other, &pdata), futoin_log_stderr);
    assert_null(pdata);
}

/* A loop without a misuse handler of its own: an error that escapes a
 * root executed without an unhandled-error callback reaches the log
 * handler as a FUTOIN_LOG_WARNING line "futoin: unhandled error ...", with
 * the default's exact text: an unhandled error is not API misuse, and is
 * not worded as such. Nothing is written to stderr. */
static void test_default_misuse_handler_reports_through_log(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    StderrCapture sc;
    stderr_capture_start(&sc);
    run_unhandled_error(loop);
    char err[1024];
    stderr_capture_end(&sc, err, sizeof(err));
    assert_int_equal(g_cap.n, 1);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_WARNING);
    assert_string_equal(g_cap.lines[0], k_unhandled_line);
    assert_null(strstr(g_cap.lines[0], "misuse"));
    assert_string_equal(err, "");
    futoin_loop_free(loop);
}

/* The same for an InternalError that misuse inside a step raised: the
 * misuse became the step's error (its info says what went wrong), and
 * what escapes the root is reported as an unhandled error, once. */
static void test_unhandled_internal_error_is_a_warning(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    run_misuse_unhandled(loop);
    assert_int_equal(g_cap.n, 1);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_WARNING);
    assert_non_null(strstr(g_cap.lines[0], "futoin: unhandled error InternalError ("));
    assert_non_null(strstr(g_cap.lines[0], "success() called twice"));
    futoin_loop_free(loop);
}

static int g_misuse;

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data, (void)as, (void)info;
    ++g_misuse;
}

/* A loop's own misuse handler takes the reports instead: nothing is logged;
 * setting it back to NULL sends them to the log handler again. */
static void test_loop_misuse_handler_takes_precedence(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    g_misuse = 0;
    futoin_set_misuse_handler(loop, on_misuse, NULL);
    run_unhandled_error(loop);
    assert_int_equal(g_misuse, 1);
    assert_int_equal(g_cap.n, 0);
    futoin_set_misuse_handler(loop, NULL, NULL);
    run_unhandled_error(loop);
    assert_int_equal(g_misuse, 1);
    assert_int_equal(g_cap.n, 1);
    assert_string_equal(g_cap.lines[0], k_unhandled_line);
    futoin_loop_free(loop);
}

static void imm_iterates(void* data)
{
    futoin_loop_iterate((FutoInLoop*)data, NULL);
}

/* A loop that has no engine yet (no root was ever made on it) reports
 * running it from its own callback through the log handler too. */
static void test_bare_loop_misuse(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    futoin_loop_immediate(loop, loop, imm_iterates);
    assert_int_equal(futoin_loop_iterate(loop, NULL), 0);
    assert_int_equal(g_cap.n, 1);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_MISUSE);
    assert_string_equal(g_cap.lines[0],
            "futoin: API misuse: futoin_loop_iterate() called from inside a callback of the same "
            "loop: refused (the loop is already running that callback)");
    futoin_loop_free(loop);
}

/* NULL restores the default: the same report goes to stderr as one line,
 * and the handler that was replaced gets nothing more. */
static void test_null_restores_stderr(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    assert_ptr_equal(futoin_set_log_handler(NULL, NULL, NULL), log_capture);
    StderrCapture sc;
    stderr_capture_start(&sc);
    run_unhandled_error(loop);
    futoin_log_write(FUTOIN_LOG_WARNING, "a line of a library on top");
    char err[1024];
    stderr_capture_end(&sc, err, sizeof(err));
    assert_int_equal(g_cap.n, 0);
    char want[1024];
    snprintf(want, sizeof(want), "%s\n%s\n", k_unhandled_line, "a line of a library on top");
    assert_string_equal(err, want);
    futoin_loop_free(loop);
}

/* futoin_log_write() passes kind and line on unchanged; a NULL line sends
 * nothing. */
static void test_log_write(void** state)
{
    (void)state;
    futoin_log_write(FUTOIN_LOG_WARNING, "first");
    futoin_log_write(FUTOIN_LOG_FATAL, "second");
    futoin_log_write(77, "a kind of a later version");
    futoin_log_write(FUTOIN_LOG_MISUSE, NULL);
    assert_int_equal(g_cap.n, 3);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_WARNING);
    assert_string_equal(g_cap.lines[0], "first");
    assert_int_equal(g_cap.kinds[1], FUTOIN_LOG_FATAL);
    assert_string_equal(g_cap.lines[1], "second");
    assert_int_equal(g_cap.kinds[2], 77);
}

/* ---- the default dump handler ---- */

static void step_waits(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_wait_info(as, "the answer");
    futoin_set_timeout(as, 1000);
}

/* Checks the lines of one dump of a loop with one root waiting in a step. */
static void assert_dump_lines(const Captured* c)
{
    assert_true(c->n >= 4);
    assert_true(c->n <= LOG_CAPTURE_MAX);
    for (int i = 0; i < c->n; ++i) {
        assert_int_equal(c->kinds[i], FUTOIN_LOG_DUMP);
        assert_null(strchr(c->lines[i], '\n'));
    }
    assert_memory_equal(c->lines[0], "futoin loop ", 12);
    assert_non_null(strstr(c->lines[0], ": dump at 0 ms (virtual clock)"));
    assert_memory_equal(c->lines[1], "  counters: roots 1,", 20);
    int found_wait = 0;
    for (int i = 0; i < c->n; ++i) {
        found_wait |= strstr(c->lines[i], "\"the answer\"") != NULL;
    }
    assert_true(found_wait);
    assert_string_equal(c->lines[c->n - 1], "end of dump: 1 root, 1 running flow");
}

static FutoInAsyncSteps* start_waiting_root(FutoInLoop* loop)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    assert_non_null(root);
    futoin_add(root, step_waits, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    futoin_loop_iterate(loop, NULL);
    return root;
}

/* A dump request answered by the default dump handler: the dump reaches
 * the log handler line by line as FUTOIN_LOG_DUMP, nothing on stderr. */
static void test_default_dump_reports_through_log(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    FutoInAsyncSteps* root = start_waiting_root(loop);
    assert_int_equal(futoin_loop_set_dump_handler(loop, NULL, NULL), 0);
    assert_int_equal(futoin_loop_request_dump(loop), 1);
    StderrCapture sc;
    stderr_capture_start(&sc);
    futoin_loop_iterate(loop, NULL);
    char err[4096];
    stderr_capture_end(&sc, err, sizeof(err));
    assert_string_equal(err, "");
    assert_dump_lines(&g_cap);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* The same on a signal (futoin_loop_dump_on_signal()). */
static void test_signal_dump_reports_through_log(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    FutoInAsyncSteps* root = start_waiting_root(loop);
    assert_int_equal(futoin_loop_dump_on_signal(loop, DUMP_SIGNAL), 0);
    assert_int_equal(raise(DUMP_SIGNAL), 0);
    StderrCapture sc;
    stderr_capture_start(&sc);
    futoin_loop_iterate(loop, NULL);
    char err[4096];
    stderr_capture_end(&sc, err, sizeof(err));
    assert_string_equal(err, "");
    assert_dump_lines(&g_cap);
    assert_int_equal(futoin_loop_dump_on_signal(loop, 0), 0);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* With the default log handler the default dump still goes to stderr. */
static void test_default_dump_on_stderr(void** state)
{
    (void)state;
    futoin_set_log_handler(NULL, NULL, NULL);
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    FutoInAsyncSteps* root = start_waiting_root(loop);
    assert_int_equal(futoin_loop_set_dump_handler(loop, NULL, NULL), 0);
    assert_int_equal(futoin_loop_request_dump(loop), 1);
    StderrCapture sc;
    stderr_capture_start(&sc);
    futoin_loop_iterate(loop, NULL);
    char err[4096];
    stderr_capture_end(&sc, err, sizeof(err));
    assert_memory_equal(err, "futoin loop ", 12);
    assert_non_null(strstr(err, "\nend of dump: 1 root, 1 running flow\n"));
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* ---- out of memory: reported through the handler, then abort ---- */
/* POSIX only: a forked child with the allocator interposer of
 * fault_alloc.c. */
#ifndef _WIN32

static int g_oom_fd = -1;

/* Writes "<kind>:<line>\n" to a pipe: no allocation. */
static void oom_handler(void* data, int kind, const char* line)
{
    (void)data;
    char k = (char)('0' + kind);
    ssize_t w = write(g_oom_fd, &k, 1);
    w += write(g_oom_fd, ":", 1);
    w += write(g_oom_fd, line, strlen(line));
    w += write(g_oom_fd, "\n", 1);
    (void)w;
}

static void noop_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
}

/* In a child: the engine's own bookkeeping (step nodes) cannot grow. The
 * process aborts, after the FUTOIN_LOG_FATAL line reached the handler and
 * not stderr. */
static void test_out_of_memory_abort_reports_through_log(void** state)
{
    (void)state;
    if (!fault_works()) {
        skip(); /* the allocator is not interposed (valgrind) */
    }
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    FILE* err = tmpfile();
    assert_non_null(err);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        dup2(fileno(err), 2);
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        alarm(20);
        g_oom_fd = pfd[1];
        futoin_set_log_handler(oom_handler, NULL, NULL);
        FutoInLoop* loop = futoin_loop_new_virtual();
        FutoInAsyncSteps* root = loop ? futoin_asyncsteps_new(loop) : NULL;
        if (!root) {
            _exit(3);
        }
        fault_arm(FAULT_FROM, 1);
        /* The first pool that needs a new slab aborts. */
        for (int i = 0; i < 1000000; ++i) {
            futoin_add(root, noop_step, NULL, NULL);
        }
        _exit(4); /* never aborted */
    }
    close(pfd[1]);
    char got[1024];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(pfd[0], got + n, sizeof(got) - 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
    }
    got[n] = '\0';
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    char text[4096];
    rewind(err);
    size_t tn = fread(text, 1, sizeof(text) - 1, err);
    text[tn] = '\0';
    fclose(err);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
        fail_msg("the child did not abort (status %d); handler got: %s; stderr: %s", st, got, text);
    }
    /* One line, of kind FATAL, with the library's text. */
    char want[32];
    snprintf(want, sizeof(want), "%d:futoin: out of memory", FUTOIN_LOG_FATAL);
    assert_memory_equal(got, want, strlen(want));
    assert_non_null(strchr(got, '\n'));
    assert_string_equal(strchr(got, '\n'), "\n");
    assert_null(strstr(text, "futoin: out of memory"));
}
#endif

/* ---- threads ---- */

#define LOG_THREADS 4
#define LOG_LINES 2000

static _Atomic int g_count_a;
static _Atomic int g_count_b;

static _Atomic int g_mismatched;

/* (No cmocka assertion here: these run on the writer threads.) */
static void count_a(void* data, int kind, const char* line)
{
    (void)kind, (void)line;
    if (data != (void*)&g_count_a) {
        ++g_mismatched; /* handler and data must stay a pair */
    }
    ++g_count_a;
}

static void count_b(void* data, int kind, const char* line)
{
    (void)kind, (void)line;
    if (data != (void*)&g_count_b) {
        ++g_mismatched;
    }
    ++g_count_b;
}

static void* writer(void* arg)
{
    (void)arg;
    for (int i = 0; i < LOG_LINES; ++i) {
        futoin_log_write(FUTOIN_LOG_WARNING, "line");
    }
    return NULL;
}

/* Lines written on several threads while the handler is swapped back and
 * forth: each line reaches exactly one handler, with that handler's data. */
static void test_threads(void** state)
{
    (void)state;
    g_count_a = 0;
    g_count_b = 0;
    g_mismatched = 0;
    futoin_set_log_handler(count_a, &g_count_a, NULL);
    pthread_t th[LOG_THREADS];
    for (int i = 0; i < LOG_THREADS; ++i) {
        assert_int_equal(pthread_create(&th[i], NULL, writer, NULL), 0);
    }
    for (int i = 0; i < 1000; ++i) {
        futoin_set_log_handler(i % 2 ? count_a : count_b,
                i % 2 ? (void*)&g_count_a : (void*)&g_count_b, NULL);
    }
    for (int i = 0; i < LOG_THREADS; ++i) {
        pthread_join(th[i], NULL);
    }
    assert_int_equal(g_count_a + g_count_b, LOG_THREADS * LOG_LINES);
    assert_int_equal(g_mismatched, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_set_returns_previous),
        T(test_default_misuse_handler_reports_through_log),
        T(test_unhandled_internal_error_is_a_warning),
        T(test_loop_misuse_handler_takes_precedence),
        T(test_bare_loop_misuse),
        T(test_null_restores_stderr),
        T(test_log_write),
        T(test_default_dump_reports_through_log),
        T(test_signal_dump_reports_through_log),
        T(test_default_dump_on_stderr),
#ifndef _WIN32
        T(test_out_of_memory_abort_reports_through_log),
#endif
        T(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
