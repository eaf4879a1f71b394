/* SPDX-License-Identifier: MIT */
/*
 * Child processes as steps (docs/RECIPES.md "Running a child process"):
 * a command whose stdout is read line by line before its exit status is
 * waited for, and a second command that does not end by itself, ended by
 * the Timeout of its wait.
 *
 *   process_run
 *
 * The pieces:
 *   - futoin_uv_spawn() starts /bin/sh with stdin on /dev/null, stdout a
 *     pipe (futoin_uv_process_stdio(p, 1): a stream like any other) and
 *     stderr inherited;
 *   - the first child: a loop of futoin_uv_read_line() on its stdout until
 *     the end of input (CommError with futoin_uv_errno() UV_EOF, which the
 *     loop's error handler turns into a success), then
 *     futoin_uv_process_wait(): arg0 the exit status, arg1 the signal;
 *   - the second child sleeps: its wait runs under futoin_set_timeout(), and
 *     on the Timeout the kill policy of futoin_uv_spawn() sends SIGTERM
 *     (SIGKILL after kill_grace_ms if the child stayed) and libuv reaps the
 *     child; futoin_uv_process_exited() then tells how it ended.
 * futoin_uv_run() returns once the root is done and both children are
 * reaped: no zombie is left, and the program exits 0.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <futoin/uv.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct Job {
    const char* name;
    FutoInUvProcess* p; /* a reference of ours */
} Job;

/* Starts /bin/sh -c script, its stdout a pipe. */
static FutoInUvProcess* start(FutoInUv* uv, const char* script, int* err)
{
    const char* argv[] = { "/bin/sh", "-c", script, NULL };
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/sh";
    o.argv = argv;
    o.stdio[0] = FUTOIN_UV_STDIO_IGNORE;
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE;
    o.stdio[2] = FUTOIN_UV_STDIO_INHERIT;
    o.kill_grace_ms = 1000; /* SIGTERM, then SIGKILL 1 s later */
    return futoin_uv_spawn(uv, &o, err);
}

/* ---- the first child: its lines, then its exit status ---- */

static void print_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    printf("%s: %s\n", ((Job*)data)->name, futoin_arg_cstr(args, 0, ""));
}

static void read_iteration(FutoInAsyncSteps* as, void* data)
{
    Job* j = data;
    futoin_uv_read_line(as, futoin_uv_process_stdio(j->p, 1), 1024);
    futoin_add(as, print_line, NULL, j);
}

static void read_lines(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, read_iteration, data, NULL);
}

/* The end of the child's output ends the loop. */
static void on_eof(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    if (strcmp(code, FUTOIN_COMM_ERROR) == 0 && futoin_uv_errno(as) == UV_EOF) {
        futoin_success(as);
    }
}

static void wait_exit(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 10000);
    futoin_uv_process_wait(as, ((Job*)data)->p);
}

static void print_status(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    printf("%s: exited with status %d, signal %d\n", ((Job*)data)->name,
            (int)futoin_arg_int(args, 0, -1), (int)futoin_arg_int(args, 1, -1));
}

/* ---- the second child: a wait that times out ---- */

static void wait_briefly(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 200);
    futoin_uv_process_wait(as, ((Job*)data)->p);
}

static void on_timeout(FutoInAsyncSteps* as, void* data, const char* code)
{
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        /* error_info names the wait: "wait pid N /bin/sh". */
        printf("%s: %s after 200 ms, waiting for %s\n", ((Job*)data)->name, code,
                strncmp(futoin_error_info(as), "wait pid ", 9) == 0 ? "its exit" : "?");
        futoin_success(as);
    }
}

static int failed; /* the exit status */

static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    failed = 1;
    (void)data;
    fprintf(stderr, "failed: %s (%s)\n", code, futoin_error_info(as));
}

int main(void)
{
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return 1;
    }
    int err = 0;
    Job first = { "child 1", start(uv, "echo alpha; echo beta; echo gamma; exit 3", &err) };
    Job second = { "child 2", first.p ? start(uv, "exec sleep 30", &err) : NULL };
    if (!second.p) {
        fprintf(stderr, "spawn: %s\n", uv_strerror(err));
        futoin_uv_process_release(first.p);
        futoin_uv_free(uv);
        return 1;
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    if (!root) {
        return 1;
    }
    futoin_add(root, read_lines, on_eof, &first);
    futoin_add(root, wait_exit, NULL, &first);
    futoin_add(root, print_status, NULL, &first);
    futoin_add(root, wait_briefly, on_timeout, &second);
    futoin_execute(root, on_error, NULL);
    /* Returns when the root is done and libuv has reaped both children. */
    futoin_uv_run(uv);

    int64_t status = 0;
    int sig = 0;
    if (futoin_uv_process_exited(second.p, &status, &sig)) {
        printf("%s: ended by signal %d (%s)\n", second.name, sig,
                sig == SIGTERM ? "SIGTERM" : "another");
    }
    futoin_asyncsteps_free(root);
    futoin_uv_process_release(first.p);
    futoin_uv_process_release(second.p);
    futoin_uv_free(uv);
    return failed;
}
