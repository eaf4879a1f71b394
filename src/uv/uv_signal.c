/* SPDX-License-Identifier: MIT */
/*
 * futoin_uv_signal_wait(): a step that waits for one of a set of signals.
 *
 * The step starts one uv_signal_t per signal of its set and parks on an
 * owned wait. The first signal libuv dispatches to one of them ends the
 * wait with the signal's number; a timeout, cancel or break ends it
 * through the cancel handler. Either way every watcher is closed at once
 * (so that no later signal reaches the step), and the memory of the
 * watchers goes with the last of their close callbacks:
 *
 *   step ──► SignalWait { as, open, h[n] } ──uv_signal_start──► libuv
 *   on_signal / cancel ──► as = NULL, uv_close(h[i]) ──► on_closed: --open, free at 0
 *
 * The signals of the set are copied into the calling step's stack when the
 * step is added (SignalParams), and read when it starts.
 */
#include "uv_impl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct SignalParams {
    unsigned n;
    int signals[];
} SignalParams;

typedef struct SignalWait {
    FutoInAsyncSteps* as; /* NULL once the step is done with the watchers */
    unsigned n;           /* watchers initialised: h[0..n) */
    unsigned open;        /* of them, those whose close callback is still to come */
    uv_signal_t h[];      /* .data: this record */
} SignalWait;

static const struct {
    int signo;
    const char* name;
} signal_names[] = {
    { SIGHUP, "SIGHUP" },
    { SIGINT, "SIGINT" },
    { SIGQUIT, "SIGQUIT" },
    { SIGILL, "SIGILL" },
    { SIGABRT, "SIGABRT" },
    { SIGFPE, "SIGFPE" },
    { SIGKILL, "SIGKILL" },
    { SIGSEGV, "SIGSEGV" },
    { SIGPIPE, "SIGPIPE" },
    { SIGALRM, "SIGALRM" },
    { SIGTERM, "SIGTERM" },
    { SIGUSR1, "SIGUSR1" },
    { SIGUSR2, "SIGUSR2" },
    { SIGCHLD, "SIGCHLD" },
    { SIGCONT, "SIGCONT" },
    { SIGSTOP, "SIGSTOP" },
    { SIGTSTP, "SIGTSTP" },
    { SIGTTIN, "SIGTTIN" },
    { SIGTTOU, "SIGTTOU" },
#ifdef SIGWINCH
    { SIGWINCH, "SIGWINCH" },
#endif
};

/* Appends " SIGNAME" (or " <number>") to buf of size bytes at *len. */
static void append_signal(char* buf, size_t size, size_t* len, int signo)
{
    const char* name = NULL;
    for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); ++i) {
        if (signal_names[i].signo == signo) {
            name = signal_names[i].name;
            break;
        }
    }
    int n = name ? snprintf(buf + *len, size - *len, "%s%s", *len ? " " : "", name)
                 : snprintf(buf + *len, size - *len, "%s%d", *len ? " " : "", signo);
    if (n > 0) {
        *len += (size_t)n < size - *len ? (size_t)n : size - *len - 1;
    }
}

static void on_closed(uv_handle_t* h)
{
    SignalWait* w = h->data;
    if (--w->open == 0) {
        free(w);
    }
}

/* Stops every watcher (uv_close() stops it at once); the record is freed
 * by the last close callback. Called once. */
static void detach(SignalWait* w)
{
    w->as = NULL;
    if (w->n == 0) {
        free(w);
        return;
    }
    for (unsigned i = 0; i < w->n; ++i) {
        if (!uv_is_closing((uv_handle_t*)&w->h[i])) {
            uv_close((uv_handle_t*)&w->h[i], on_closed);
        }
    }
}

static void on_signal(uv_signal_t* h, int signum)
{
    SignalWait* w = h->data;
    FutoInAsyncSteps* as = w->as;
    if (!as) {
        return; /* another watcher of the set was first in this iteration */
    }
    /* All of them, so that nothing reaches the step after this. */
    detach(w);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_i32(signum);
    futoin_owned_success(as, w, &a);
}

static void signal_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    detach(data);
}

static void signal_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const SignalParams* p = data;
    FutoInUv* uv = futoin__uv_require(as, "signal_wait");
    if (!uv) {
        return;
    }
    char names[160];
    size_t len = 0;
    names[0] = '\0';
    for (unsigned i = 0; i < p->n; ++i) {
        append_signal(names, sizeof(names), &len, p->signals[i]);
    }
    SignalWait* w = calloc(1, sizeof(*w) + p->n * sizeof(uv_signal_t));
    if (!w) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "signal_wait: out of memory");
        return;
    }
    w->as = as;
    for (unsigned i = 0; i < p->n; ++i) {
        int err = uv_signal_init(uv->uv, &w->h[i]);
        if (err == 0) {
            w->h[i].data = w;
            ++w->n;
            ++w->open;
            err = uv_signal_start(&w->h[i], on_signal, p->signals[i]);
        }
        if (err) {
            detach(w);
            char one[32];
            size_t olen = 0;
            append_signal(one, sizeof(one), &olen, p->signals[i]);
            /* A signal that cannot be watched (SIGKILL, SIGSTOP, beyond the
             * platform's last) is the caller's mistake; anything else
             * (descriptors, memory) is the system's. */
            futoin__uv_failf(as, err == UV_EINVAL ? FUTOIN_INTERNAL_ERROR : FUTOIN_COMM_ERROR, err,
                    "signal %s", one);
            return;
        }
    }
    futoin_wait_owned(as, signal_cancel, w);
    futoin__uv_wait_info(as, "signal", names);
}

void futoin_uv_signal_wait(FutoInAsyncSteps* as, const int* signals, size_t count)
{
    if (!as) {
        return;
    }
    if (!signals) {
        futoin__uv_add_fail(as, "EINVAL: futoin_uv_signal_wait: signals is NULL");
        return;
    }
    if (count < 1 || count > FUTOIN_UV_SIGNALS_MAX) {
        futoin__uv_add_failf(as, "EINVAL: futoin_uv_signal_wait: count %zu out of range (1..%u)",
                count, (unsigned)FUTOIN_UV_SIGNALS_MAX);
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        if (signals[i] < 1 || signals[i] > FUTOIN_UV_SIGNAL_NUMBER_MAX) {
            futoin__uv_add_failf(as,
                    "EINVAL: futoin_uv_signal_wait: signal %d out of range (1..%d)", signals[i],
                    FUTOIN_UV_SIGNAL_NUMBER_MAX);
            return;
        }
    }
    SignalParams* p = futoin__uv_add_step(as, signal_start,
            sizeof(SignalParams) + count * sizeof(int), NULL, "signal_wait: out of memory");
    if (p) {
        p->n = (unsigned)count;
        memcpy(p->signals, signals, count * sizeof(int));
    }
}
