/* SPDX-License-Identifier: MIT */
/*
 * Child processes: stdout and stderr captured through read steps, cat's
 * stdin written and read back, exit codes and a child ended by a signal,
 * a Timeout on a child that ignores SIGTERM (SIGKILL after the grace
 * period), a child that closes stdout early, a program that does not
 * exist, a root cancelled while it waits, a process released while its
 * child runs, and a thousand short-lived children with at most 16 at
 * once and no descriptor left behind. Every child is reaped: waitpid()
 * finds none of them afterwards. After each test futoin_uv_free() must
 * find no handle left open.
 */
#include "uv_tsupport.h"

#include <dirent.h>
#include <sys/types.h>
#include <sys/wait.h>

/* The child was reaped: it is no child of ours any more. */
static void assert_reaped(long pid)
{
    int st;
    errno = 0;
    assert_int_equal(waitpid((pid_t)pid, &st, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static FutoInUvProcess* spawn_sh(const char* script, int in, int out, int err, uint32_t grace)
{
    const char* argv[] = { "/bin/sh", "-c", script, NULL };
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/sh";
    o.argv = argv;
    o.stdio[0] = in;
    o.stdio[1] = out;
    o.stdio[2] = err;
    o.kill_grace_ms = grace;
    int uerr = 1;
    FutoInUvProcess* p = futoin_uv_spawn(g_uv, &o, &uerr);
    assert_non_null(p);
    assert_int_equal(uerr, 0);
    assert_true(futoin_uv_process_pid(p) > 0);
    return p;
}

typedef struct Run {
    FutoInUvProcess* p;
    char out[64];
    char err[64];
    int64_t status;
    int signal;
    int waited;
    int failed;
    char code[32];
    char info[160];
    int num;
} Run;

static void eh_run(FutoInAsyncSteps* as, void* data, const char* code)
{
    Run* r = data;
    r->failed = 1;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", futoin_error_info(as));
    r->num = futoin_uv_errno(as);
}

/* The read's error is recorded and the flow goes on to the wait. */
static void eh_run_continue(FutoInAsyncSteps* as, void* data, const char* code)
{
    eh_run(as, data, code);
    futoin_success(as);
}

static void got_status(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Run* r = data;
    r->waited = 1;
    r->status = futoin_arg_int(args, 0, -1);
    r->signal = (int)futoin_arg_int(args, 1, -1);
}

static void add_wait(FutoInAsyncSteps* as, Run* r)
{
    futoin_uv_process_wait(as, r->p);
    futoin_add(as, got_status, NULL, r);
}

/* ---- stdout and stderr, an exit code ---- */

static void cap_read_out(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, futoin_uv_process_stdio(((Run*)data)->p, 1), 0);
}

static void cap_read_err(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Run* r = data;
    snprintf(r->out, sizeof(r->out), "%s", futoin_arg_cstr(args, 0, ""));
    futoin_uv_read_line(as, futoin_uv_process_stdio(r->p, 2), 0);
}

static void cap_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Run* r = data;
    snprintf(r->err, sizeof(r->err), "%s", futoin_arg_cstr(args, 0, ""));
    add_wait(as, r);
}

static void test_capture_and_exit_code(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    r.p = spawn_sh("echo to-out; echo to-err >&2; exit 3", FUTOIN_UV_STDIO_IGNORE,
            FUTOIN_UV_STDIO_PIPE, FUTOIN_UV_STDIO_PIPE, 0);
    assert_null(futoin_uv_process_stdio(r.p, 0));
    assert_null(futoin_uv_process_stdio(r.p, 3));
    char peer[64];
    snprintf(peer, sizeof(peer), "pid %ld stderr", futoin_uv_process_pid(r.p));
    assert_string_equal(futoin_uv_stream_peer(futoin_uv_process_stdio(r.p, 2)), peer);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, cap_read_out, eh_run, &r);
    futoin_add(root, cap_read_err, eh_run, &r);
    futoin_add(root, cap_wait, eh_run, &r);
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, "");
    assert_string_equal(r.out, "to-out");
    assert_string_equal(r.err, "to-err");
    assert_true(r.waited);
    assert_int_equal(r.status, 3);
    assert_int_equal(r.signal, 0);
    int64_t st = -1;
    int sig = -1;
    assert_int_equal(futoin_uv_process_exited(r.p, &st, &sig), 1);
    assert_int_equal(st, 3);
    assert_int_equal(sig, 0);
    /* Exited already: the wait completes at once, again. */
    r.waited = 0;
    FutoInAsyncSteps* again = uv_new_root();
    futoin_add(again, cap_wait, eh_run, &r);
    run_root(again, &o, 5000);
    assert_true(r.waited);
    assert_int_equal(r.status, 3);
    assert_int_equal(futoin_uv_process_kill(r.p, SIGTERM), UV_ESRCH);
    long pid = futoin_uv_process_pid(r.p);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(again);
    assert_reaped(pid);
}

/* ---- cat: stdin written, stdout read back ---- */

static void cat_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Run* r = data;
    futoin_uv_write(as, futoin_uv_process_stdio(r->p, 0), "through cat\n", 12);
}

static void cat_close_in(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Run* r = data;
    /* The end of cat's input. */
    futoin_uv_stream_close(futoin_uv_process_stdio(r->p, 0));
    futoin_uv_read_line(as, futoin_uv_process_stdio(r->p, 1), 0);
}

static void cat_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Run* r = data;
    snprintf(r->out, sizeof(r->out), "%s", futoin_arg_cstr(args, 0, ""));
    add_wait(as, r);
}

static void test_cat_stdin(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/cat";
    o.stdio[0] = FUTOIN_UV_STDIO_PIPE;
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE;
    o.cwd = "/";
    r.p = futoin_uv_spawn(g_uv, &o, NULL);
    assert_non_null(r.p);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, cat_write, eh_run, &r);
    futoin_add(root, cat_close_in, eh_run, &r);
    futoin_add(root, cat_got, eh_run, &r);
    Outcome out;
    run_root(root, &out, 10000);
    assert_string_equal(out.code, "");
    assert_string_equal(r.out, "through cat");
    assert_int_equal(r.status, 0);
    assert_int_equal(r.signal, 0);
    long pid = futoin_uv_process_pid(r.p);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
    assert_reaped(pid);
}

/* ---- environment and working directory ---- */

static void env_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, futoin_uv_process_stdio(((Run*)data)->p, 1), 0);
}

static void env_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Run* r = data;
    snprintf(r->out, sizeof(r->out), "%s", futoin_arg_cstr(args, 0, ""));
    add_wait(as, r);
}

static void test_env_and_cwd(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    const char* argv[] = { "sh", "-c", "echo \"$FUTOIN_X $(pwd)\"", NULL };
    const char* env[] = { "FUTOIN_X=forty-two", "PATH=/bin:/usr/bin", NULL };
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/sh";
    o.argv = argv;
    o.env = env;
    o.cwd = "/tmp";
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE;
    r.p = futoin_uv_spawn(g_uv, &o, NULL);
    assert_non_null(r.p);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, env_read, eh_run, &r);
    futoin_add(root, env_got, eh_run, &r);
    Outcome out;
    run_root(root, &out, 10000);
    assert_string_equal(out.code, "");
    assert_string_equal(r.out, "forty-two /tmp");
    assert_int_equal(r.status, 0);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
}

/* ---- a signal ends the child ---- */

static void wait_only(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    add_wait(as, data);
}

static void test_killed_by_signal(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    r.p = spawn_sh("exec sleep 60", FUTOIN_UV_STDIO_IGNORE, FUTOIN_UV_STDIO_IGNORE,
            FUTOIN_UV_STDIO_INHERIT, 0);
    assert_int_equal(futoin_uv_process_kill(r.p, 0), 0);
    assert_int_equal(futoin_uv_process_kill(r.p, SIGUSR1), 0);
    assert_int_equal(futoin_uv_process_kill(r.p, -1), UV_EINVAL);
    assert_int_equal(futoin_uv_process_kill(NULL, SIGTERM), UV_EINVAL);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, wait_only, eh_run, &r);
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, "");
    assert_int_equal(r.status, 0);
    assert_int_equal(r.signal, SIGUSR1);
    long pid = futoin_uv_process_pid(r.p);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
    assert_reaped(pid);
}

/* ---- a Timeout on a child that ignores SIGTERM ---- */

static void stub_ready(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, futoin_uv_process_stdio(((Run*)data)->p, 1), 0);
}

static void stub_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 200);
    add_wait(as, data);
}

static void test_timeout_sigkill_after_grace(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    /* "ready" once SIGTERM is ignored, so that it reaches the trap. */
    r.p = spawn_sh("trap '' TERM; echo ready; exec sleep 60", FUTOIN_UV_STDIO_IGNORE,
            FUTOIN_UV_STDIO_PIPE, FUTOIN_UV_STDIO_INHERIT, 100);
    long pid = futoin_uv_process_pid(r.p);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, stub_ready, eh_run, &r);
    futoin_add(root, stub_wait, eh_run, &r);
    Outcome o;
    uint64_t t0 = mono_ms();
    run_root(root, &o, 10000);
    assert_string_equal(o.code, "Timeout");
    assert_true(r.failed);
    assert_false(r.waited);
    char want[64];
    snprintf(want, sizeof(want), "wait pid %ld /bin/sh", pid);
    assert_non_null(strstr(o.info, want));
    /* SIGTERM was ignored: SIGKILL after the grace period, then reaped. */
    int64_t st = -1;
    int sig = 0;
    uint64_t guard = mono_ms() + scaled_ms(10000);
    while (!futoin_uv_process_exited(r.p, &st, &sig) && mono_ms() < guard) {
        uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_ONCE);
    }
    assert_int_equal(futoin_uv_process_exited(r.p, &st, &sig), 1);
    assert_int_equal(sig, SIGKILL);
    assert_true(mono_ms() - t0 >= 300);
    assert_false(r.waited); /* nothing reached the step late */
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
    assert_reaped(pid);
}

/* ---- a child that closes stdout early ---- */

static void early_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_some(as, futoin_uv_process_stdio(((Run*)data)->p, 1), 0);
}

static void early_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, early_read, eh_run_continue, data);
    futoin_add(as, wait_only, eh_run, data);
}

static void test_stdout_closed_early(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    r.p = spawn_sh("exec 1>&-; sleep 0.2; exit 0", FUTOIN_UV_STDIO_IGNORE, FUTOIN_UV_STDIO_PIPE,
            FUTOIN_UV_STDIO_INHERIT, 0);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, early_steps, NULL, &r);
    Outcome o;
    run_root(root, &o, 10000);
    assert_string_equal(o.code, "");
    assert_true(r.failed);
    assert_string_equal(r.code, "CommError");
    assert_int_equal(r.num, UV_EOF);
    assert_true(r.waited);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.signal, 0);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
}

/* ---- a program that does not exist; bad options ---- */

static void test_missing_program(void** state)
{
    (void)state;
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/nonexistent/futoin-no-such-program";
    int err = 0;
    assert_null(futoin_uv_spawn(g_uv, &o, &err));
    assert_int_equal(err, UV_ENOENT);
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE; /* the pipe is closed again */
    err = 0;
    assert_null(futoin_uv_spawn(g_uv, &o, &err));
    assert_int_equal(err, UV_ENOENT);
    o.file = "/bin/true";
    o.cwd = "/nonexistent/dir";
    err = 0;
    assert_null(futoin_uv_spawn(g_uv, &o, &err));
    assert_int_equal(err, UV_ENOENT);
    o.cwd = NULL;
    o.stdio[2] = 7;
    assert_null(futoin_uv_spawn(g_uv, &o, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_spawn(g_uv, NULL, &err));
    assert_int_equal(err, UV_EINVAL);
    assert_null(futoin_uv_spawn(NULL, &o, NULL));
    /* A NULL process given to the wait step. */
    Run r;
    memset(&r, 0, sizeof(r));
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, wait_only, eh_run, &r);
    Outcome out;
    run_root(root, &out, 5000);
    assert_string_equal(out.code, "InternalError");
    assert_string_equal(r.info, "EINVAL: futoin_uv_process_wait: p is NULL");
    assert_int_equal(r.num, UV_EINVAL);
    futoin_asyncsteps_free(root);
    run_for(50); /* the close callbacks of the failed spawns */
}

/* ---- the root cancelled while it waits ---- */

static void cancel_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    futoin_cancel(*(FutoInAsyncSteps**)data);
}

static void test_cancel_while_waiting(void** state)
{
    (void)state;
    Run r;
    memset(&r, 0, sizeof(r));
    r.p = spawn_sh("exec sleep 60", FUTOIN_UV_STDIO_IGNORE, FUTOIN_UV_STDIO_IGNORE,
            FUTOIN_UV_STDIO_INHERIT, 0);
    long pid = futoin_uv_process_pid(r.p);
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, wait_only, eh_run, &r);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_add(root, outcome_ok, NULL, &o);
    futoin_execute(root, outcome_error, &o);
    run_for(50);
    FutoInAsyncSteps* canceller = uv_new_root();
    futoin_add(canceller, cancel_root, NULL, &root);
    Outcome oc;
    run_root(canceller, &oc, 5000);
    uint64_t guard = mono_ms() + scaled_ms(10000);
    while (!futoin_uv_process_exited(r.p, NULL, NULL) && mono_ms() < guard) {
        uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_ONCE);
    }
    int sig = 0;
    assert_int_equal(futoin_uv_process_exited(r.p, NULL, &sig), 1);
    assert_int_equal(sig, SIGTERM);
    run_for(50);
    assert_false(o.done);
    assert_false(r.waited);
    assert_false(r.failed);
    futoin_uv_process_release(r.p);
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(canceller);
    assert_reaped(pid);
}

/* ---- released while the child runs ---- */

static void test_release_while_running(void** state)
{
    (void)state;
    FutoInUvProcess* p = spawn_sh("trap '' TERM; exec sleep 60", FUTOIN_UV_STDIO_PIPE,
            FUTOIN_UV_STDIO_PIPE, FUTOIN_UV_STDIO_INHERIT, 100);
    long pid = futoin_uv_process_pid(p);
    run_for(100); /* the trap is set */
    futoin_uv_process_release(p);
    /* The process keeps futoin_uv_run() alive until the child is reaped:
     * SIGTERM, ignored, then SIGKILL after 100 ms. */
    assert_int_equal(futoin_uv_run(g_uv), 0);
    assert_reaped(pid);
}

/* ---- futoin_uv_free() with a child still running ---- */

static void test_free_kills_children(void** state)
{
    (void)state;
    FutoInUvProcess* p = spawn_sh("exec sleep 60", FUTOIN_UV_STDIO_PIPE, FUTOIN_UV_STDIO_PIPE,
            FUTOIN_UV_STDIO_INHERIT, 0);
    long pid = futoin_uv_process_pid(p);
    futoin_uv_process_release(p); /* SIGTERM sent; the child not yet reaped */
    futoin_uv_free(g_uv);
    g_uv = futoin_uv_new(NULL);
    assert_non_null(g_uv);
    assert_reaped(pid);
}

/* ---- a thousand short-lived children ---- */

/* 1000 children; 200 under valgrind, where each fork() copies valgrind's
 * large address space (about 30 ms a child): a leaked descriptor or an
 * unreaped child shows in the counts after 200 as well. */
static unsigned many_count(void)
{
    const char* vg = getenv("FUTOIN_TEST_VALGRIND");
    return vg && strcmp(vg, "1") == 0 ? 200u : 1000u;
}

typedef struct Many {
    unsigned ok;
    unsigned bad;
    unsigned n;
} Many;

static void many_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Many* m = data;
    if (futoin_arg_int(args, 0, -1) == 0 && futoin_arg_int(args, 1, -1) == 0) {
        ++m->ok;
    } else {
        ++m->bad;
    }
}

static void many_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)i;
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/true";
    o.stdio[0] = FUTOIN_UV_STDIO_IGNORE;
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE; /* a descriptor to leak, if any */
    int err = 0;
    FutoInUvProcess* p = futoin_uv_spawn(futoin_uv_of(as), &o, &err);
    if (!p) {
        futoin_error(as, "SpawnError", uv_err_name(err));
        return;
    }
    futoin_uv_process_wait(as, p);
    futoin_uv_process_release(p); /* the wait step holds its own */
    futoin_add(as, many_got, NULL, data);
}

static void many_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Many* m = data;
    futoin_parallel_bounded(as, m->n, 16, many_item, data, FUTOIN_BOUNDED_FIRST_ERROR);
}

static int count_fds(void)
{
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (!d) {
        return -1;
    }
    while (readdir(d)) {
        ++n;
    }
    closedir(d);
    return n;
}

static void test_many_children(void** state)
{
    (void)state;
    /* libuv's SIGCHLD pipe and signal handling exist from the first spawn
     * on, and the descriptor a loop keeps in reserve for EMFILE from its
     * first stream: one child with a pipe first, so that they are in the
     * count before. */
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/true";
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE;
    FutoInUvProcess* first = futoin_uv_spawn(g_uv, &o, NULL);
    assert_non_null(first);
    futoin_uv_process_release(first);
    futoin_uv_run(g_uv);
    int before = count_fds();
    assert_true(before > 0);
    Many m;
    memset(&m, 0, sizeof(m));
    m.n = many_count();
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, many_steps, NULL, &m);
    Outcome out;
    run_root(root, &out, 60000);
    assert_string_equal(out.code, "");
    assert_int_equal(m.ok, m.n);
    assert_int_equal(m.bad, 0);
    futoin_asyncsteps_free(root);
    run_for(20);
    assert_int_equal(count_fds(), before);
    int st;
    errno = 0;
    assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_STRICT_TEST(test_capture_and_exit_code),
        UV_STRICT_TEST(test_cat_stdin),
        UV_STRICT_TEST(test_env_and_cwd),
        UV_STRICT_TEST(test_killed_by_signal),
        UV_STRICT_TEST(test_timeout_sigkill_after_grace),
        UV_STRICT_TEST(test_stdout_closed_early),
        UV_STRICT_TEST(test_missing_program),
        UV_STRICT_TEST(test_cancel_while_waiting),
        UV_STRICT_TEST(test_release_while_running),
        UV_STRICT_TEST(test_free_kills_children),
        UV_STRICT_TEST(test_many_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
