/* SPDX-License-Identifier: MIT */
/*
 * The file steps on what is not a regular file: FIFOs with and without the
 * other end, directories, devices, socket files. Each is refused with a
 * CommError that names the kind, and none may hold a libuv pool thread or
 * keep futoin_uv_run() alive: every root here runs under futoin_uv_run()
 * itself, with a guard that unblocks stuck FIFO opens (by opening the
 * other end) and fails the test when the run outlives its bound.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>

/* ---- a temporary directory with a FIFO, a regular file, a socket ---- */

typedef struct Files {
    char dir[64];
    char fifo[96];
    char regular[96];
    char sock[96];
    char missing_dir_file[128];
    int sock_fd;
} Files;

static Files g_f;

static void files_make(void)
{
    memset(&g_f, 0, sizeof(g_f));
    g_f.sock_fd = -1;
    snprintf(g_f.dir, sizeof(g_f.dir), "/tmp/futoin_uvf_XXXXXX");
    assert_non_null(mkdtemp(g_f.dir));
    snprintf(g_f.fifo, sizeof(g_f.fifo), "%s/fifo", g_f.dir);
    snprintf(g_f.regular, sizeof(g_f.regular), "%s/plain.txt", g_f.dir);
    snprintf(g_f.sock, sizeof(g_f.sock), "%s/sock", g_f.dir);
    assert_int_equal(mkfifo(g_f.fifo, 0600), 0);
    FILE* fp = fopen(g_f.regular, "w");
    assert_non_null(fp);
    fputs("plain", fp);
    fclose(fp);
}

static void files_remove(void)
{
    if (g_f.sock_fd >= 0) {
        close(g_f.sock_fd);
    }
    unlink(g_f.fifo);
    unlink(g_f.regular);
    unlink(g_f.sock);
    rmdir(g_f.dir);
}

static int files_setup(void** state)
{
    files_make();
    return uv_setup(state);
}

static int files_teardown(void** state)
{
    int r = uv_teardown(state);
    files_remove();
    return r;
}

/* fn with uv_setup() and the test files made first (files_setup()). */
#define FILES_TEST(fn) cmocka_unit_test_setup_teardown(fn, files_setup, files_teardown)

/* ---- one attempt per step: its outcome goes to the trace ---- */

typedef struct Attempt {
    const char* path;
    int writing;
    uint32_t timeout_ms; /* 0: none */
} Attempt;

static void attempt_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    const Attempt* a = data;
    if (a->writing) {
        tr("wrote:%d", (int)futoin_arg_int(args, 0, -1));
    } else {
        size_t len = 0;
        const char* b = futoin_uv_arg_bytes(args, 0, &len);
        tr("read:%s", b ? b : "(none)");
    }
}

static void attempt_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const Attempt* a = data;
    if (a->timeout_ms) {
        futoin_set_timeout(as, a->timeout_ms);
    }
    if (a->writing) {
        futoin_uv_file_write(as, a->path, "data", 4, 0);
    } else {
        futoin_uv_file_read(as, a->path, 0);
    }
    futoin_add(as, attempt_done, NULL, data);
}

static void attempt_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void add_attempt(FutoInAsyncSteps* root, Attempt* a)
{
    futoin_add(root, attempt_step, attempt_eh, a);
}

/* ---- running under futoin_uv_run() with a guard ---- */

typedef struct Guard {
    uv_timer_t t;
    int fired;
} Guard;

/* The run took too long: most likely a FIFO open() or read blocked in the
 * pool. Opening and closing the other end wakes the open, and the read
 * then sees the end of the FIFO, so the test fails instead of hanging
 * until CTest's timeout. */
static void on_run_guard(uv_timer_t* t)
{
    Guard* g = t->data;
    g->fired = 1;
    int fd = open(g_f.fifo, O_RDWR | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
    }
    uv_timer_start(t, on_run_guard, 100, 0);
}

/* Executes root (a final step recording success is added) and runs the
 * backend until nothing is left: futoin_uv_run() must return within
 * bound_ms, scaled. */
static void run_bounded(FutoInAsyncSteps* root, Outcome* o, unsigned bound_ms)
{
    memset(o, 0, sizeof(*o));
    futoin_add(root, outcome_ok, NULL, o);
    futoin_execute(root, outcome_error, o);
    Guard g;
    memset(&g, 0, sizeof(g));
    uv_loop_t* l = futoin_uv_uv_loop(g_uv);
    uv_timer_init(l, &g.t);
    g.t.data = &g;
    uv_timer_start(&g.t, on_run_guard, scaled_ms(bound_ms), 0);
    /* The guard watches; it must not be what keeps the run going. */
    uv_unref((uv_handle_t*)&g.t);
    uint64_t t0 = mono_ms();
    assert_int_equal(futoin_uv_run(g_uv), 0);
    uint64_t took = mono_ms() - t0;
    uv_close((uv_handle_t*)&g.t, NULL);
    uv_run(l, UV_RUN_NOWAIT);
    if (g.fired) {
        fail_msg("futoin_uv_run() returned only after %llu ms (bound %u ms): a file step held it",
                (unsigned long long)took, scaled_ms(bound_ms));
    }
}

/* Runs the attempts in one root; the run must end within 5 s (scaled). */
static void run_attempts(Attempt* a, size_t n, Outcome* o)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    for (size_t i = 0; i < n; ++i) {
        add_attempt(root, &a[i]);
    }
    run_bounded(root, o, 5000);
    assert_int_equal(o->done, 1);
    assert_string_equal(o->code, "");
    futoin_asyncsteps_free(root);
}

/* ------------------------------------------------------------------------ */

static void test_fifo_read_without_writer(void** state)
{
    (void)state;
    Attempt a[] = { { g_f.fifo, 0, 0 } };
    Outcome o;
    run_attempts(a, 1, &o);
    char expect[256];
    snprintf(expect, sizeof(expect), "CommError:EFTYPE: read %s: not a regular file (FIFO)",
            g_f.fifo);
    assert_trace(expect);
}

static void test_fifo_write_without_reader(void** state)
{
    (void)state;
    Attempt a[] = { { g_f.fifo, 1, 0 } };
    Outcome o;
    run_attempts(a, 1, &o);
    char expect[256];
    snprintf(expect, sizeof(expect),
            "CommError:ENXIO: write %s: not a regular file (FIFO without a reader, socket or device)",
            g_f.fifo);
    assert_trace(expect);
}

/* With the other end open the open() succeeds at once; the kind is still
 * refused, and nothing reaches the FIFO. */
static void test_fifo_with_other_end(void** state)
{
    (void)state;
    int rd = open(g_f.fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    int wr = open(g_f.fifo, O_WRONLY | O_NONBLOCK);
    assert_true(wr >= 0);
    Attempt a[] = { { g_f.fifo, 1, 0 }, { g_f.fifo, 0, 0 } };
    Outcome o;
    run_attempts(a, 2, &o);
    char expect[512];
    snprintf(expect, sizeof(expect),
            "CommError:EFTYPE: write %s: not a regular file (FIFO)|"
            "CommError:EFTYPE: read %s: not a regular file (FIFO)",
            g_f.fifo, g_f.fifo);
    assert_trace(expect);
    char c;
    errno = 0;
    assert_int_equal(read(rd, &c, 1), -1);
    assert_int_equal(errno, EAGAIN);
    close(wr);
    close(rd);
}

static void test_directory(void** state)
{
    (void)state;
    Attempt a[] = { { g_f.dir, 0, 0 }, { g_f.dir, 1, 0 } };
    Outcome o;
    run_attempts(a, 2, &o);
    char expect[512];
    snprintf(expect, sizeof(expect),
            "CommError:EISDIR: read %s: is a directory|CommError:EISDIR: write %s: is a directory",
            g_f.dir, g_f.dir);
    assert_trace(expect);
}

/* Devices are refused too, even the harmless /dev/null: a terminal or a
 * serial line would block a pool thread on read, and the steps promise
 * whole files (of /dev/zero there is no end). */
static void test_devices(void** state)
{
    (void)state;
    struct stat st;
    if (stat("/dev/null", &st) != 0 || !S_ISCHR(st.st_mode) || stat("/dev/zero", &st) != 0
            || !S_ISCHR(st.st_mode)) {
        skip();
    }
    Attempt a[] = { { "/dev/null", 0, 0 }, { "/dev/zero", 0, 0 }, { "/dev/null", 1, 0 } };
    Outcome o;
    run_attempts(a, 3, &o);
    assert_trace("CommError:EFTYPE: read /dev/null: not a regular file (character device)|"
                 "CommError:EFTYPE: read /dev/zero: not a regular file (character device)|"
                 "CommError:EFTYPE: write /dev/null: not a regular file (character device)");
}

static void test_socket_file(void** state)
{
    (void)state;
    g_f.sock_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(g_f.sock_fd >= 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_f.sock);
    assert_int_equal(bind(g_f.sock_fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(g_f.sock_fd, 1), 0);
    Attempt a[] = { { g_f.sock, 0, 0 }, { g_f.sock, 1, 0 } };
    Outcome o;
    run_attempts(a, 2, &o);
    char expect[512];
    snprintf(expect, sizeof(expect),
            "CommError:ENXIO: read %s: not a regular file (socket or device)|"
            "CommError:ENXIO: write %s: not a regular file (FIFO without a reader, socket or device)",
            g_f.sock, g_f.sock);
    assert_trace(expect);
}

/* More FIFO reads under a 100 ms timeout than libuv has pool threads (4 by
 * default), then a regular file: each FIFO read ends (refused, or timed out
 * on a very slow machine), the regular read and write still succeed, and
 * the run ends. */
static void test_fifo_reads_do_not_hold_the_pool(void** state)
{
    (void)state;
    Attempt a[] = {
        { g_f.fifo, 0, 100 },
        { g_f.fifo, 0, 100 },
        { g_f.fifo, 0, 100 },
        { g_f.fifo, 0, 100 },
        { g_f.fifo, 0, 100 },
        { g_f.regular, 1, 0 },
        { g_f.regular, 0, 0 },
    };
    Outcome o;
    run_attempts(a, sizeof(a) / sizeof(a[0]), &o);
    char refused[256];
    snprintf(refused, sizeof(refused), "CommError:EFTYPE: read %s: not a regular file (FIFO)",
            g_f.fifo);
    char timed_out[256];
    snprintf(timed_out, sizeof(timed_out), "Timeout:file_read %s", g_f.fifo);
    char* save = NULL;
    char* ev = strtok_r(g_trace, "|", &save);
    for (int i = 0; i < 5; ++i) {
        assert_non_null(ev);
        if (strcmp(ev, refused) != 0) {
            assert_string_equal(ev, timed_out);
        }
        ev = strtok_r(NULL, "|", &save);
    }
    assert_non_null(ev);
    assert_string_equal(ev, "wrote:4");
    ev = strtok_r(NULL, "|", &save);
    assert_non_null(ev);
    assert_string_equal(ev, "read:data");
    assert_null(strtok_r(NULL, "|", &save));
}

/* FIFO reads cancelled while in flight (the root freed right after it was
 * executed, and a parallel step whose sibling fails): the run still ends,
 * and a regular read afterwards succeeds. */
static void branch_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "Stop", NULL);
}

static Attempt g_read_attempt = { NULL, 0, 0 };

static void branch_fifo_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_file_read(as, (const char*)data, 0);
    futoin_add(as, attempt_done, NULL, &g_read_attempt);
}

static void start_fifo_branches(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < 5; ++i) {
        futoin_add(p, branch_fifo_read, NULL, data);
    }
    futoin_add(p, branch_fail, NULL, NULL);
}

static void test_cancelled_fifo_reads(void** state)
{
    (void)state;
    /* Cancelled at once: the opens are queued or running in the pool. */
    FutoInAsyncSteps* gone = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    for (int i = 0; i < 5; ++i) {
        futoin_uv_file_read(gone, g_f.fifo, 0);
    }
    Outcome og;
    memset(&og, 0, sizeof(og));
    futoin_execute(gone, outcome_error, &og);
    /* One libuv iteration: the first step has started its open; freeing
     * the root cancels it. */
    run_for(0);
    futoin_asyncsteps_free(gone);
    assert_int_equal(og.done, 0);

    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, start_fifo_branches, NULL, g_f.fifo);
    Outcome o;
    run_bounded(root, &o, 5000);
    assert_int_equal(o.done, 1);
    assert_string_equal(o.code, "Stop");
    futoin_asyncsteps_free(root);
    assert_trace("unhandled:Stop");

    tr_reset();
    Attempt a[] = { { g_f.regular, 0, 0 } };
    run_attempts(a, 1, &o);
    assert_trace("read:plain");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FILES_TEST(test_fifo_read_without_writer),
        FILES_TEST(test_fifo_write_without_reader),
        FILES_TEST(test_fifo_with_other_end),
        FILES_TEST(test_directory),
        FILES_TEST(test_devices),
        FILES_TEST(test_socket_file),
        FILES_TEST(test_fifo_reads_do_not_hold_the_pool),
        FILES_TEST(test_cancelled_fifo_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
