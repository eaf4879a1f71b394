/* SPDX-License-Identifier: MIT */
/*
 * Child processes: futoin_uv_spawn() starts one (uv_spawn()) with its
 * standard descriptors inherited, ignored or piped; a piped one is a
 * FutoInUvStream on a uv_pipe_t (uv_pipe.c), read and written by the
 * steps of uv_read.c and uv_write.c as they are. futoin_uv_process_wait()
 * is a step that ends with the child's exit.
 *
 * Lifetime: a process is reference counted like a stream. Beside the
 * references, two libuv handles keep its memory: the uv_process_t (which
 * libuv reaps on SIGCHLD and reports to on_exit) and a uv_timer_t for the
 * grace period of a kill. Both are closed in on_exit, so the memory goes
 * with the last of: the last reference, the two close callbacks.
 *
 *   spawn ──► refs 1, open 2 ──► on_exit: status, uv_close(both) ──► open 0
 *   release to 0 while the child runs ──► terminate(): term signal, timer
 *       ──► grace over: SIGKILL ──► on_exit as above (never a zombie)
 *
 * The backend lists its live processes (FutoInUv.procs) so that
 * futoin_uv_free() can kill and reap those still running.
 */
#include "uv_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

struct FutoInUvProcess {
    uv_process_t h; /* .data: this record */
    uv_timer_t grace;
    FutoInUv* uv; /* NULL once futoin_uv_free() let go of it */
    FutoInUvProcess* next;
    FutoInUvProcess* prev;
    FutoInUvStream* stdio[3];
    FutoInAsyncSteps* wait_as; /* the pending wait step */
    uint32_t refs;
    unsigned open; /* handles whose close callback is still to come */
    uint32_t grace_ms;
    int term_signal;
    uint8_t exited;
    uint8_t terminating;
    int64_t exit_status;
    int exit_signal;
    long pid;
    char name[112]; /* "pid N FILE" for wait descriptions */
};

static const char* const stdio_names[3] = { "stdin", "stdout", "stderr" };

static void unlink_proc(FutoInUvProcess* p)
{
    if (!p->uv) {
        return;
    }
    if (p->prev) {
        p->prev->next = p->next;
    } else {
        p->uv->procs = p->next;
    }
    if (p->next) {
        p->next->prev = p->prev;
    }
    p->next = p->prev = NULL;
    p->uv = NULL;
}

static void proc_destroy(FutoInUvProcess* p)
{
    unlink_proc(p);
    for (int i = 0; i < 3; ++i) {
        futoin_uv_stream_release(p->stdio[i]);
    }
    free(p);
}

static void on_proc_closed(uv_handle_t* h)
{
    FutoInUvProcess* p = h->data;
    if (--p->open == 0 && p->refs == 0) {
        proc_destroy(p);
    }
}

static void close_handles(FutoInUvProcess* p)
{
    if (!uv_is_closing((uv_handle_t*)&p->grace)) {
        uv_close((uv_handle_t*)&p->grace, on_proc_closed);
    }
    if (!uv_is_closing((uv_handle_t*)&p->h)) {
        uv_close((uv_handle_t*)&p->h, on_proc_closed);
    }
}

static void on_exit_cb(uv_process_t* h, int64_t status, int term_signal)
{
    FutoInUvProcess* p = h->data;
    p->exited = 1;
    p->exit_status = status;
    p->exit_signal = term_signal;
    unlink_proc(p);
    close_handles(p);
    FutoInAsyncSteps* as = p->wait_as;
    p->wait_as = NULL;
    if (as) {
        FutoInArgs a;
        memset(&a, 0, sizeof(a));
        a.arg0 = futoin_val_i64(status);
        a.arg1 = futoin_val_i32(term_signal);
        futoin_owned_success(as, p, &a);
    }
}

static void on_grace_over(uv_timer_t* t)
{
    FutoInUvProcess* p = t->data;
    if (!p->exited) {
        uv_process_kill(&p->h, SIGKILL);
    }
}

/* The kill policy: the term signal now, SIGKILL when the grace period ends
 * first. on_exit_cb() reaps the child either way. */
static void terminate(FutoInUvProcess* p)
{
    if (p->exited || p->terminating) {
        return;
    }
    p->terminating = 1;
    if (uv_process_kill(&p->h, p->term_signal) != 0 || p->term_signal == SIGKILL) {
        return;
    }
    uv_timer_start(&p->grace, on_grace_over, p->grace_ms, 0);
}

FutoInUvProcess* futoin_uv_spawn(FutoInUv* uv, const FutoInUvSpawnOptions* opts, int* uv_error)
{
    int dummy;
    if (!uv_error) {
        uv_error = &dummy;
    }
    *uv_error = 0;
    if (!uv || !opts || !opts->file || !opts->file[0]) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    for (int i = 0; i < 3; ++i) {
        if (opts->stdio[i] < FUTOIN_UV_STDIO_INHERIT || opts->stdio[i] > FUTOIN_UV_STDIO_PIPE) {
            *uv_error = UV_EINVAL;
            return NULL;
        }
    }
    if (opts->term_signal < 0 || opts->term_signal > FUTOIN_UV_SIGNAL_NUMBER_MAX) {
        *uv_error = UV_EINVAL;
        return NULL;
    }
    FutoInUvProcess* p = calloc(1, sizeof(*p));
    if (!p) {
        *uv_error = UV_ENOMEM;
        return NULL;
    }
    uv_stdio_container_t stdio[3];
    for (int i = 0; i < 3; ++i) {
        switch (opts->stdio[i]) {
        case FUTOIN_UV_STDIO_PIPE:
            p->stdio[i] = futoin__uv_pipe_alloc(uv, opts->file);
            if (!p->stdio[i]) {
                for (int j = 0; j < i; ++j) {
                    if (p->stdio[j]) {
                        futoin__uv_stream_close(p->stdio[j]); /* refs 0: freed when closed */
                    }
                }
                free(p);
                *uv_error = UV_ENOMEM;
                return NULL;
            }
            stdio[i].flags = (uv_stdio_flags)(UV_CREATE_PIPE
                    | (i == 0 ? UV_READABLE_PIPE : UV_WRITABLE_PIPE));
            stdio[i].data.stream = (uv_stream_t*)&p->stdio[i]->pipe;
            break;
        case FUTOIN_UV_STDIO_IGNORE:
            stdio[i].flags = UV_IGNORE;
            break;
        default:
            stdio[i].flags = UV_INHERIT_FD;
            stdio[i].data.fd = i;
            break;
        }
    }
    char* default_argv[2] = { (char*)opts->file, NULL };
    uv_process_options_t o;
    memset(&o, 0, sizeof(o));
    o.exit_cb = on_exit_cb;
    o.file = opts->file;
    /* libuv's prototypes lack the const; it does not write them. */
    o.args = opts->argv ? (char**)opts->argv : default_argv;
    o.env = (char**)opts->env;
    o.cwd = opts->cwd;
    o.stdio = stdio;
    o.stdio_count = 3;
    uv_timer_init(uv->uv, &p->grace);
    p->grace.data = p;
    p->h.data = p;
    p->open = 2;
    int err = uv_spawn(uv->uv, &p->h, &o);
    if (err) {
        /* The handle is initialised even on failure: close it. refs is 0,
         * so the last close callback frees the record, and the pipe
         * streams (refs 0 too) go with their own. */
        for (int i = 0; i < 3; ++i) {
            if (p->stdio[i]) {
                futoin__uv_stream_close(p->stdio[i]);
                p->stdio[i] = NULL;
            }
        }
        close_handles(p);
        *uv_error = err;
        return NULL;
    }
    p->uv = uv;
    p->refs = 1;
    p->pid = (long)p->h.pid;
    p->grace_ms = opts->kill_grace_ms ? opts->kill_grace_ms : FUTOIN_UV_KILL_GRACE_MS_DEFAULT;
    p->term_signal = opts->term_signal ? opts->term_signal : SIGTERM;
    snprintf(p->name, sizeof(p->name), "pid %ld %s", p->pid, opts->file);
    for (int i = 0; i < 3; ++i) {
        if (p->stdio[i]) {
            p->stdio[i]->refs = 1; /* the process's own */
            snprintf(p->stdio[i]->peer, sizeof(p->stdio[i]->peer), "pid %ld %s", p->pid,
                    stdio_names[i]);
        }
    }
    p->next = uv->procs;
    if (p->next) {
        p->next->prev = p;
    }
    uv->procs = p;
    return p;
}

FutoInUvProcess* futoin_uv_process_ref(FutoInUvProcess* p)
{
    if (p) {
        ++p->refs;
    }
    return p;
}

void futoin_uv_process_release(FutoInUvProcess* p)
{
    if (!p || --p->refs > 0) {
        return;
    }
    if (p->open == 0) {
        proc_destroy(p);
        return;
    }
    /* Nobody can wait for it any more: end it by the kill policy. */
    terminate(p);
}

FutoInUvStream* futoin_uv_process_stdio(FutoInUvProcess* p, int fd)
{
    return p && fd >= 0 && fd < 3 ? p->stdio[fd] : NULL;
}

long futoin_uv_process_pid(const FutoInUvProcess* p)
{
    return p ? p->pid : 0;
}

int futoin_uv_process_kill(FutoInUvProcess* p, int signum)
{
    if (!p || signum < 0 || signum > FUTOIN_UV_SIGNAL_NUMBER_MAX) {
        return UV_EINVAL;
    }
    if (p->exited) {
        return UV_ESRCH;
    }
    return uv_process_kill(&p->h, signum);
}

int futoin_uv_process_exited(const FutoInUvProcess* p, int64_t* status, int* term_signal)
{
    if (!p || !p->exited) {
        return 0;
    }
    if (status) {
        *status = p->exit_status;
    }
    if (term_signal) {
        *term_signal = p->exit_signal;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Wait step                                                                 */

typedef struct {
    FutoInUvProcess* p;
} WaitParams;

static void wait_params_release(void* data)
{
    futoin_uv_process_release(((WaitParams*)data)->p);
}

static void wait_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInUvProcess* p = data;
    p->wait_as = NULL;
    terminate(p);
}

static void wait_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInUvProcess* p = ((WaitParams*)data)->p;
    if (p->exited) {
        FutoInArgs a;
        memset(&a, 0, sizeof(a));
        a.arg0 = futoin_val_i64(p->exit_status);
        a.arg1 = futoin_val_i32(p->exit_signal);
        futoin_success_args(as, &a);
        return;
    }
    if (p->wait_as) {
        futoin__uv_failf(as, FUTOIN_INTERNAL_ERROR, UV_EBUSY, "wait %s: another step waits for it",
                p->name);
        return;
    }
    p->wait_as = as;
    futoin_wait_owned(as, wait_cancel, p);
    futoin__uv_wait_info(as, "wait", p->name);
}

void futoin_uv_process_wait(FutoInAsyncSteps* as, FutoInUvProcess* p)
{
    if (!as) {
        return;
    }
    if (!p) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_process_wait: p is NULL");
        return;
    }
    WaitParams* w = futoin__uv_add_step(as, wait_start, sizeof(WaitParams), wait_params_release,
            "wait: out of memory");
    if (w) {
        w->p = futoin_uv_process_ref(p);
    }
}

/* ------------------------------------------------------------------------ */
/* futoin_uv_free(): children still running                                  */

unsigned futoin__uv_process_shutdown(FutoInUv* uv)
{
    unsigned held = 0;
    while (uv->procs) {
        FutoInUvProcess* p = uv->procs;
        unlink_proc(p);
        if (p->refs) {
            ++held;
        }
        /* SIGKILL cannot be caught: waitpid() returns as soon as the
         * kernel has ended the child. libuv's own SIGCHLD handling finds
         * it reaped (ECHILD) and skips it; its handle is closed here. */
        if (!p->exited && uv_process_kill(&p->h, SIGKILL) == 0) {
            int st;
            while (waitpid((pid_t)p->pid, &st, 0) < 0 && errno == EINTR) {
            }
        }
        p->exited = 1;
        p->exit_signal = SIGKILL;
        p->wait_as = NULL;
        if (!p->refs) {
            /* Closed now, with the backend's handles, rather than from the
             * record's last close callback. */
            for (int i = 0; i < 3; ++i) {
                futoin_uv_stream_release(p->stdio[i]);
                p->stdio[i] = NULL;
            }
        }
        close_handles(p);
    }
    return held;
}
