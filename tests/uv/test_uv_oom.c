/* SPDX-License-Identifier: MIT */
/*
 * Out of memory in the libuv backend (docs/SEMANTICS.md "Memory"): every
 * allocation point of a program that connects to a server of its own on
 * loopback, exchanges a line both ways and reads a file is failed once and
 * from on (tests/oom_sweep.h), the allocations of libuv itself included;
 * then the same for the local kinds: a line over a Unix domain socket and
 * a datagram between two UDP sockets; then a child process whose stdout
 * is read through a pipe before its exit is waited for; then the file
 * steps: open, pwrite, pread, fstat, close, readdir, rename, unlink.
 *
 * The process and file programs also check what a failure must not leave
 * behind: every descriptor the run opened is closed again (the count of
 * open descriptors after futoin_uv_free() is the one before
 * futoin_uv_new()), and no child of the run is left, running or a zombie
 * (waitpid() finds none).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "oom_sweep.h"

#include "oom_pair.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <futoin/uv.h>

static const char file_text[] = "file contents\n";
static char file_path[64];
static char sock_path[64];
static char dir_path[64];

typedef OomSide Side;

typedef struct {
    OomPair p; /* first: oom_pair_run() */
    int line_ok;
    int file_ok; /* the local program: the datagram and its sender */
    int echo_ok;
    FutoInUvUdp* ua; /* the local program's UDP sockets: a sends to b */
    FutoInUvUdp* ub;
} UvRun;

/* ---- the server: accept, read a line, answer it, close ---- */

static void srv_accept(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_accept(as, ((UvRun*)data)->p.srv);
}

static void srv_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->p.server.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_read_line(as, r->p.server.s, 0);
}

static void srv_answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    char buf[80];
    int n = snprintf(buf, sizeof(buf), "echo:%s\n", futoin_arg_cstr(args, 0, "?"));
    futoin_uv_write(as, r->p.server.s, buf, (size_t)n);
    futoin_uv_close(as, r->p.server.s, 1);
    r->p.server.s = NULL;
}

static void srv_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((UvRun*)data)->p.server.finished = 1;
}

static void srv_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    UvRun* r = data;
    oom_pair_failed(&r->p, &r->p.server, as, code);
}

/* ---- the client: connect, send a line, read the answer, read a file ---- */

static void cl_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((UvRun*)data)->p.port);
}

static void cl_chat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->p.client.s = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    futoin_uv_write(as, r->p.client.s, "hello\n", 6);
    futoin_uv_read_line(as, r->p.client.s, 0);
}

static void cl_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->echo_ok = strcmp(futoin_arg_cstr(args, 0, ""), "echo:hello") == 0;
    futoin_uv_file_read(as, file_path, 0);
}

static void cl_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->file_ok = b && len == sizeof(file_text) - 1 && memcmp(b, file_text, len) == 0;
    futoin_uv_close(as, r->p.client.s, 1);
    r->p.client.s = NULL;
}

static void cl_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    UvRun* r = data;
    r->p.client.finished = 1;
    futoin_uv_server_close(r->p.srv);
}

static void cl_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    UvRun* r = data;
    oom_pair_failed(&r->p, &r->p.client, as, code);
}

/* Out of memory, and its error_info as docs/ERRORS.md says. */
static int side_oom(const Side* s)
{
    return oom_side_oom(s) && oom_text_ok(s->info);
}

/* A side's outcome, when the other side may have failed first: an error
 * is then allowed as long as the side ended. */
static OomResult uv_outcome(const void* run, char* why, size_t size)
{
    const UvRun* r = run;
    if (!oom_pair_ended(&r->p, why, size)) {
        return OOM_BAD;
    }
    if (r->p.client.finished && r->p.server.finished) {
        if (!r->echo_ok || !r->file_ok) {
            oom_bad(why, size, "success with values missing (echo %d, file %d)", r->echo_ok,
                    r->file_ok);
            return OOM_BAD;
        }
        return OOM_COMPLETED;
    }
    if (side_oom(&r->p.client) || side_oom(&r->p.server)) {
        return OOM_STEP_ERROR;
    }
    return oom_pair_bad(&r->p, "out-of-memory error", why, size);
}

static const FutoInAsyncSteps_execute_callback uv_server_steps[] = { srv_accept, srv_read,
    srv_answer, srv_done, NULL };

static OomResult uv_program(char* why, size_t size)
{
    static const FutoInAsyncSteps_execute_callback client[] = { cl_connect, cl_chat, cl_file,
        cl_close, cl_done, NULL };
    static const OomPairProgram prog = { oom_pair_tcp_server, NULL, uv_server_steps, client,
        srv_unhandled, cl_unhandled, uv_outcome };
    static UvRun r;
    memset(&r, 0, sizeof(r));
    return oom_pair_run(&prog, &r, why, size);
}

/* ---- the local program: the same chat over a Unix socket, then a
 * datagram from one UDP socket to another ---- */

static void lc_connect(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_pipe_connect(as, sock_path);
}

static void lc_udp_send(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    r->echo_ok = strcmp(futoin_arg_cstr(args, 0, ""), "echo:hello") == 0;
    futoin_uv_udp_send(as, r->ua, "127.0.0.1", futoin_uv_udp_port(r->ub), "ping", 4);
}

static void lc_udp_recv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_udp_recv(as, ((UvRun*)data)->ub, 0);
}

static void lc_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    UvRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->file_ok = b && len == 4 && memcmp(b, "ping", 4) == 0
            && strcmp(futoin_arg_cstr(args, 1, ""), "127.0.0.1") == 0
            && futoin_arg_int(args, 2, -1) == (int64_t)futoin_uv_udp_port(r->ua);
    futoin_uv_close(as, r->p.client.s, 1);
    r->p.client.s = NULL;
}

/* A Unix socket server and two UDP sockets. */
static int local_make(FutoInUv* uv, void* run, OomResult* res, char* why, size_t size)
{
    UvRun* r = run;
    int err = 0;
    r->p.srv = futoin_uv_pipe_server_new(uv, sock_path, 0, &err);
    r->ua = r->p.srv ? futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err) : NULL;
    r->ub = r->ua ? futoin_uv_udp_new(uv, "127.0.0.1", 0, 0, &err) : NULL;
    if (r->ub) {
        return 1;
    }
    *res = OOM_REPORTED;
    if (err != UV_ENOMEM) {
        oom_bad(why, size, "making the sockets: %s", uv_err_name(err));
        *res = OOM_BAD;
    }
    futoin_uv_udp_release(r->ua);
    futoin_uv_server_release(r->p.srv);
    return 0;
}

/* A UDP socket with no receive waiting does not keep the loop alive: a
 * failed root leaves none behind. */
static void local_release(void* run)
{
    UvRun* r = run;
    futoin_uv_udp_release(r->ua);
    futoin_uv_udp_release(r->ub);
}

static OomResult local_program(char* why, size_t size)
{
    static const FutoInAsyncSteps_execute_callback client[] = { lc_connect, cl_chat, lc_udp_send,
        lc_udp_recv, lc_close, cl_done, NULL };
    static const OomPairProgram prog = { local_make, local_release, uv_server_steps, client,
        srv_unhandled, cl_unhandled, uv_outcome };
    static UvRun r;
    memset(&r, 0, sizeof(r));
    /* A run that aborted left its socket file: the path is the program's. */
    unlink(sock_path);
    return oom_pair_run(&prog, &r, why, size);
}

/* ---- what a run must not leave behind: descriptors and children ---- */

/* The open descriptors below 1024 (no allocation: fcntl() only). */
static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; ++fd) {
        if (fcntl(fd, F_GETFD) != -1) {
            ++n;
        }
    }
    return n;
}

/* The end of a run: the result stands if no descriptor leaked and no child
 * is left; else OOM_BAD with why. */
static OomResult leak_check(OomResult res, int fds_before, char* why, size_t size)
{
    int fds = open_fds();
    if (fds != fds_before) {
        oom_bad(why, size, "%d descriptors open after the run, %d before", fds, fds_before);
        return OOM_BAD;
    }
    int st = 0;
    errno = 0;
    pid_t left = waitpid(-1, &st, WNOHANG);
    if (left != -1 || errno != ECHILD) {
        oom_bad(why, size, "a child is left after futoin_uv_free() (waitpid: %ld)", (long)left);
        return OOM_BAD;
    }
    return res;
}

/* ---- the process program: a child's stdout lines, then its exit ----
 * The child's stdin, stdout and stderr are pipes. */

typedef struct {
    FutoInUvProcess* p;
    Side side;
    int lines_ok;
    int status_ok;
} ProcRun;

static void pr_read1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ProcRun* r = data;
    futoin_uv_read_line(as, futoin_uv_process_stdio(r->p, 1), 0);
}

static void pr_read2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ProcRun* r = data;
    r->lines_ok = strcmp(futoin_arg_cstr(args, 0, ""), "one") == 0;
    futoin_uv_read_line(as, futoin_uv_process_stdio(r->p, 1), 0);
}

static void pr_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ProcRun* r = data;
    r->lines_ok = r->lines_ok && strcmp(futoin_arg_cstr(args, 0, ""), "two") == 0;
    futoin_uv_process_wait(as, r->p);
}

static void pr_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    ProcRun* r = data;
    r->status_ok = futoin_arg_int(args, 0, -1) == 3 && futoin_arg_int(args, 1, -1) == 0;
    r->side.finished = 1;
}

static void pr_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    oom_side_record(&((ProcRun*)data)->side, as, code);
}

static OomResult proc_program_run(char* why, size_t size)
{
    static ProcRun r;
    memset(&r, 0, sizeof(r));
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return OOM_REPORTED;
    }
    const char* argv[] = { "/bin/sh", "-c", "echo one; echo two; exit 3", NULL };
    FutoInUvSpawnOptions o;
    memset(&o, 0, sizeof(o));
    o.file = "/bin/sh";
    o.argv = argv;
    /* Three pipes: a failure after the first or the second must close
     * those made already. stdin and stderr are not used. */
    o.stdio[0] = FUTOIN_UV_STDIO_PIPE;
    o.stdio[1] = FUTOIN_UV_STDIO_PIPE;
    o.stdio[2] = FUTOIN_UV_STDIO_PIPE;
    o.kill_grace_ms = 200;
    int err = 0;
    r.p = futoin_uv_spawn(uv, &o, &err);
    if (!r.p) {
        futoin_uv_free(uv);
        if (err == UV_ENOMEM) {
            return OOM_REPORTED;
        }
        oom_bad(why, size, "futoin_uv_spawn: %s", uv_err_name(err));
        return OOM_BAD;
    }
    OomResult res = OOM_REPORTED;
    FutoInAsyncSteps* as = futoin_asyncsteps_new(futoin_uv_loop(uv));
    if (as) {
        futoin_add(as, pr_read1, NULL, &r);
        futoin_add(as, pr_read2, NULL, &r);
        futoin_add(as, pr_wait, NULL, &r);
        futoin_add(as, pr_done, NULL, &r);
        futoin_execute(as, pr_unhandled, &r);
        futoin_uv_run(uv);
        if (r.side.finished) {
            res = r.lines_ok && r.status_ok ? OOM_COMPLETED : OOM_BAD;
            if (res == OOM_BAD) {
                oom_bad(why, size, "success with values missing (lines %d, status %d)", r.lines_ok,
                        r.status_ok);
            }
        } else if (side_oom(&r.side)) {
            res = OOM_STEP_ERROR;
        } else if (r.side.unhandled) {
            oom_bad(why, size, "failed with %s \"%s\" and no out-of-memory error", r.side.code,
                    r.side.info);
            res = OOM_BAD;
        } else {
            oom_bad(why, size, "the root never completed");
            res = OOM_BAD;
        }
        futoin_asyncsteps_free(as);
    }
    /* Released while the child may run (a failed read): the kill policy
     * ends it, and the run reaps it. */
    futoin_uv_process_release(r.p);
    futoin_uv_run(uv);
    futoin_uv_free(uv);
    return res;
}

static OomResult proc_program(char* why, size_t size)
{
    int fds = open_fds();
    return leak_check(proc_program_run(why, size), fds, why, size);
}

/* ---- the file program: the file steps of uv.h, one after another ---- */

static char file_a[96];
static char file_b[96];

typedef struct {
    FutoInUvFile* f;
    Side side;
    int ok; /* each step's result, one bit per check */
} FileRun;

static void fr_open(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_file_open(as, file_a, O_RDWR | O_CREAT | O_TRUNC, 0600);
}

static void fr_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileRun* r = data;
    r->f = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
    futoin_uv_file_pwrite(as, r->f, 0, "0123456789", 10);
}

static void fr_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileRun* r = data;
    r->ok |= futoin_arg_int(args, 0, -1) == 10 ? 1 : 0;
    futoin_uv_file_pread(as, r->f, 2, 4);
}

static void fr_fstat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->ok |= b && len == 4 && memcmp(b, "2345", 4) == 0 ? 2 : 0;
    futoin_uv_file_fstat(as, r->f);
}

static void fr_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileRun* r = data;
    r->ok |= futoin_arg_int(args, 0, -1) == 10 ? 4 : 0;
    futoin_uv_file_close(as, r->f);
}

static void fr_readdir(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_readdir(as, dir_path);
}

static void fr_rename(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FileRun* r = data;
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    r->ok |= b && len == 2 && strcmp(b, "a") == 0 && futoin_arg_int(args, 1, -1) == 1 ? 8 : 0;
    futoin_uv_rename(as, file_a, file_b);
}

static void fr_unlink(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_unlink(as, file_b);
}

static void fr_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((FileRun*)data)->side.finished = 1;
}

static void fr_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    oom_side_record(&((FileRun*)data)->side, as, code);
}

static OomResult file_program_run(char* why, size_t size)
{
    static FileRun r;
    memset(&r, 0, sizeof(r));
    /* What an earlier run left (one that aborted). */
    unlink(file_a);
    unlink(file_b);
    FutoInUv* uv = futoin_uv_new(NULL);
    if (!uv) {
        return OOM_REPORTED;
    }
    OomResult res = OOM_REPORTED;
    FutoInAsyncSteps* as = futoin_asyncsteps_new(futoin_uv_loop(uv));
    if (as) {
        futoin_add(as, fr_open, NULL, &r);
        futoin_add(as, fr_write, NULL, &r);
        futoin_add(as, fr_read, NULL, &r);
        futoin_add(as, fr_fstat, NULL, &r);
        futoin_add(as, fr_close, NULL, &r);
        futoin_add(as, fr_readdir, NULL, &r);
        futoin_add(as, fr_rename, NULL, &r);
        futoin_add(as, fr_unlink, NULL, &r);
        futoin_add(as, fr_done, NULL, &r);
        futoin_execute(as, fr_unhandled, &r);
        futoin_uv_run(uv);
        if (r.side.finished) {
            res = r.ok == 15 ? OOM_COMPLETED : OOM_BAD;
            if (res == OOM_BAD) {
                oom_bad(why, size, "success with values missing (checks 0x%x of 0xf)", r.ok);
            }
        } else if (side_oom(&r.side)) {
            res = OOM_STEP_ERROR;
        } else if (r.side.unhandled) {
            oom_bad(why, size, "failed with %s \"%s\" and no out-of-memory error", r.side.code,
                    r.side.info);
            res = OOM_BAD;
        } else {
            oom_bad(why, size, "the root never completed");
            res = OOM_BAD;
        }
        futoin_asyncsteps_free(as);
    }
    /* The last reference closes a descriptor that no close step closed:
     * on the pool, so the loop runs once more before the backend goes. */
    futoin_uv_file_release(r.f);
    futoin_uv_run(uv);
    futoin_uv_free(uv);
    return res;
}

static OomResult file_program(char* why, size_t size)
{
    int fds = open_fds();
    return leak_check(file_program_run(why, size), fds, why, size);
}

static void test_oom_uv_process(void** state)
{
    (void)state;
    oom_sweep_ex("uv process", proc_program, OOM_ALLOW_LIBUV_ABORT);
}

static void test_oom_uv_files(void** state)
{
    (void)state;
    oom_sweep_ex("uv files", file_program, OOM_ALLOW_LIBUV_ABORT);
}

static void test_oom_uv_local(void** state)
{
    (void)state;
    oom_sweep_ex("uv local", local_program, OOM_ALLOW_LIBUV_ABORT);
}

static void test_oom_uv(void** state)
{
    (void)state;
    oom_sweep_ex("uv", uv_program, OOM_ALLOW_LIBUV_ABORT);
}

int main(void)
{
    oom_require_fault_injection();
    /* As futoin/uv.h asks of every program: a peer that a failed run
     * closed must not kill the writer. */
    signal(SIGPIPE, SIG_IGN);
    snprintf(file_path, sizeof(file_path), "/tmp/futoin-oom-%ld.txt", (long)getpid());
    snprintf(sock_path, sizeof(sock_path), "/tmp/futoin-oom-%ld.sock", (long)getpid());
    snprintf(dir_path, sizeof(dir_path), "/tmp/futoin-oom-%ld.d", (long)getpid());
    snprintf(file_a, sizeof(file_a), "%s/a", dir_path);
    snprintf(file_b, sizeof(file_b), "%s/b", dir_path);
    if (mkdir(dir_path, 0700) != 0) {
        fprintf(stderr, "cannot make %s\n", dir_path);
        return 1;
    }
    /* libuv's process-wide state (the lock of its signal handling, made
     * with the first loop and remade in a forked child): made here, so
     * that the descriptor counts of the runs see only their own. */
    FutoInUv* warm = futoin_uv_new(NULL);
    futoin_uv_free(warm);
    FILE* f = fopen(file_path, "w");
    if (!f || fputs(file_text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", file_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_uv),
        cmocka_unit_test(test_oom_uv_local),
        cmocka_unit_test(test_oom_uv_process),
        cmocka_unit_test(test_oom_uv_files),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(file_path);
    unlink(sock_path);
    unlink(file_a);
    unlink(file_b);
    rmdir(dir_path);
    return rc;
}
