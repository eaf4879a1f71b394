/* SPDX-License-Identifier: MIT */
/*
 * The libuv backend: drives an AsyncTool loop from a uv_loop_t.
 *
 * The AsyncTool loop keeps scheduling everything (immediates in a ring,
 * timers in its heap); libuv is only told when to wake it up. That keeps
 * the cost independent of the number of step timeouts (one uv_timer_t in
 * total, not one per step) and keeps the engine's fairness rules intact.
 *
 *   wake-up callback (futoin_loop_set_wakeup), loop thread
 *               ──► arm(): idle on   (immediates pending: poll must not block)
 *                          timer on  (earliest AsyncTool timer)
 *   wake-up callback, another thread ──► uv_async_send()
 *   uv_check_t (after poll) ─► pump(): one futoin_loop_iterate() round
 *   uv_timer_t              ─► pump()
 *   uv_async_t              ─► pump()  (other threads posted)
 *
 * The round runs in the check phase, right after libuv has delivered I/O, so
 * every step resumed by an I/O callback of that poll runs in the same libuv
 * iteration, in one batch.
 */
#include "uv_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Waking the AsyncTool up                                                   */

static void pump(FutoInUv* u);

static void on_timer(uv_timer_t* t)
{
    FutoInUv* u = t->data;
    u->timer_due = 0;
    pump(u);
}

/* Only there so that libuv polls with a zero timeout while immediates are
 * pending; the round itself runs in on_check, after the poll. */
static void on_idle(uv_idle_t* h)
{
    (void)h;
}

static void on_check(uv_check_t* h)
{
    FutoInUv* u = h->data;
    if (u->idle_on) {
        pump(u);
    } else if (u->timer_due && futoin_loop_next_delay(u->loop) < 0) {
        /* Cancelling timers does not wake us up (it cannot make us late),
         * but when the last one is gone (roots freed from a signal handler,
         * say) the armed uv timer must not keep uv_run() alive until it
         * fires for nothing. Checked after every poll, while a timer is
         * armed: one clock read. */
        uv_timer_stop(&u->timer);
        u->timer_due = 0;
    }
}

/* Makes libuv wake the AsyncTool after delay ms (0: as soon as possible,
 * -1: never, nothing is pending). */
static void arm(FutoInUv* u, int64_t delay)
{
    if (delay == 0) {
        if (!u->idle_on) {
            uv_idle_start(&u->idle, on_idle);
            u->idle_on = 1;
        }
        return;
    }
    if (u->idle_on) {
        uv_idle_stop(&u->idle);
        u->idle_on = 0;
    }
    if (delay < 0) {
        if (u->timer_due) {
            uv_timer_stop(&u->timer);
            u->timer_due = 0;
        }
        return;
    }
    /* libuv adds the timeout to its cached loop time, which may be a whole
     * poll old: refresh it, or the timer fires early and we pump for nothing. */
    uv_update_time(u->uv);
    uint64_t due = uv_now(u->uv) + (uint64_t)delay;
    if (due != u->timer_due) {
        uv_timer_start(&u->timer, on_timer, (uint64_t)delay, 0);
        u->timer_due = due;
    }
}

static void pump(FutoInUv* u)
{
    int64_t delay = -1;
    u->in_pump = 1;
    int more = futoin_loop_iterate(u->loop, &delay);
    u->in_pump = 0;
    arm(u, delay);
    /* Work the AsyncTool has but cannot schedule (holds, a message from
     * another thread on its way) must keep uv_run() alive; the async handle
     * fires when it arrives. Otherwise it must not keep libuv running. */
    if (more && delay < 0) {
        uv_ref((uv_handle_t*)&u->xasync);
    } else {
        uv_unref((uv_handle_t*)&u->xasync);
    }
}

static void on_xasync(uv_async_t* h)
{
    /* iterate() runs what other threads posted. */
    pump(h->data);
}

/* The AsyncTool's wake-up callback. On the loop thread: new work may be due
 * earlier than planned (inside pump() the plan is made afterwards from
 * iterate()'s answer). On another thread: work was posted, at most once
 * per round; uv_async_send() is libuv's thread-safe wake-up. */
static void on_wakeup(void* data)
{
    FutoInUv* u = data;
    if (!futoin_loop_is_same_thread(u->loop)) {
        uv_async_send(&u->xasync);
        return;
    }
    if (!u->in_pump) {
        arm(u, futoin_loop_next_delay(u->loop));
    }
}

/* ------------------------------------------------------------------------ */
/* Lifetime                                                                  */

FutoInUv* futoin_uv_new(uv_loop_t* uv_loop)
{
    FutoInUv* u = calloc(1, sizeof(*u));
    if (!u) {
        return NULL;
    }
    u->magic = FUTOIN_UV_MAGIC;
    if (uv_loop) {
        u->uv = uv_loop;
    } else {
        if (uv_loop_init(&u->own_loop) != 0) {
            free(u);
            return NULL;
        }
        u->uv = &u->own_loop;
        u->owns_uv = 1;
    }
    u->loop = futoin_loop_new();
    if (!u->loop) {
        if (u->owns_uv) {
            uv_loop_close(&u->own_loop);
        }
        free(u);
        return NULL;
    }
    /* The async handle needs a descriptor of libuv's (its first one on the
     * loop): the one init that can fail. */
    if (uv_async_init(u->uv, &u->xasync, on_xasync) != 0) {
        futoin_loop_free(u->loop);
        if (u->owns_uv) {
            uv_loop_close(&u->own_loop);
        }
        free(u);
        return NULL;
    }
    u->xasync.data = u;
    uv_unref((uv_handle_t*)&u->xasync);
    /* These inits cannot fail on a valid loop. */
    uv_timer_init(u->uv, &u->timer);
    uv_idle_init(u->uv, &u->idle);
    uv_check_init(u->uv, &u->check);
    u->timer.data = u;
    u->idle.data = u;
    u->check.data = u;
    u->open_handles = 4;
    uv_check_start(&u->check, on_check);
    /* The check handle runs on every iteration but must not keep uv_run()
     * alive by itself: only pending AsyncTool work (timer/idle) does. */
    uv_unref((uv_handle_t*)&u->check);
    futoin_loop_set_wakeup(u->loop, on_wakeup, u);
    return u;
}

static void on_handle_closed(uv_handle_t* h)
{
    FutoInUv* u = h->data;
    if (--u->open_handles == 0 && !u->owns_uv) {
        free(u);
    }
}

static void count_open_handle(uv_handle_t* h, void* arg)
{
    if (!uv_is_closing(h)) {
        ++*(int*)arg;
    }
}

static void close_leftover(uv_handle_t* h, void* arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

void futoin_uv_free(FutoInUv* u)
{
    if (!u) {
        return;
    }
    /* From here on no other thread calls on_wakeup(), so none touches the
     * async handle any more. */
    futoin_loop_set_wakeup(u->loop, NULL, NULL);
    if (futoin__uv_process_shutdown(u)) {
        futoin_log_write(FUTOIN_LOG_WARNING,
                "futoin_uv_free: child processes not released (killed and reaped)");
    }
    uv_close((uv_handle_t*)&u->timer, on_handle_closed);
    uv_close((uv_handle_t*)&u->idle, on_handle_closed);
    uv_close((uv_handle_t*)&u->check, on_handle_closed);
    uv_close((uv_handle_t*)&u->xasync, on_handle_closed);
    futoin_loop_free(u->loop);
    u->loop = NULL;
    u->magic = 0;
    if (!u->owns_uv) {
        return;
    }
    while (u->open_handles > 0) {
        uv_run(&u->own_loop, UV_RUN_NOWAIT);
    }
    /* Requests of cancelled steps may still be in libuv's thread pool (a
     * file step detached from its request, uv_fs.c, uv_file.c): they wind
     * down on their own. With no handle left that could keep the loop
     * running for ever, it runs until they have. */
    int handles_left = 0;
    uv_walk(&u->own_loop, count_open_handle, &handles_left);
    if (!handles_left) {
        uv_run(&u->own_loop, UV_RUN_DEFAULT);
    }
    if (uv_loop_close(&u->own_loop) == UV_EBUSY) {
        /* Streams or servers were not released (or a request is still in
         * the thread pool): close what is left so the loop can go. Their
         * memory is lost, which valgrind will point at. */
        futoin_log_write(FUTOIN_LOG_WARNING,
                "futoin_uv_free: libuv handles still open (streams or servers not released)");
        uv_walk(&u->own_loop, close_leftover, NULL);
        uv_run(&u->own_loop, UV_RUN_DEFAULT);
        uv_loop_close(&u->own_loop);
    }
    free(u);
}

FutoInLoop* futoin_uv_loop(const FutoInUv* u)
{
    return u ? u->loop : NULL;
}

uv_loop_t* futoin_uv_uv_loop(const FutoInUv* u)
{
    return u ? u->uv : NULL;
}

FutoInUv* futoin_uv_of_loop(FutoInLoop* loop)
{
    if (!loop) {
        return NULL;
    }
    FutoInUv* u = futoin_loop_wakeup_data(loop);
    return u && u->magic == FUTOIN_UV_MAGIC ? u : NULL;
}

FutoInUv* futoin_uv_of(FutoInAsyncSteps* as)
{
    return as ? futoin_uv_of_loop(futoin_asyncsteps_loop(as)) : NULL;
}

int futoin_uv_run(FutoInUv* u)
{
    if (!u) {
        return UV_EINVAL;
    }
    if (u->running || u->in_pump) {
        /* uv_run() is not reentrant, and a round inside a round would run
         * the calling step's own timeout under it. */
        futoin_log_write(FUTOIN_LOG_MISUSE,
                "futoin: API misuse: futoin_uv_run() called from inside a callback of the same "
                "loop: refused");
        return UV_EBUSY;
    }
    /* Work queued before the loop started (roots executed before this call)
     * has already armed the idle handle through the wakeup hook. */
    u->running = 1;
    int r = uv_run(u->uv, UV_RUN_DEFAULT);
    u->running = 0;
    return r;
}

/* ------------------------------------------------------------------------ */
/* Helpers shared by the I/O steps                                           */

FutoInUv* futoin__uv_require(FutoInAsyncSteps* as, const char* what)
{
    FutoInUv* u = futoin_uv_of(as);
    if (!u) {
        char info[128];
        snprintf(info, sizeof(info), "%s: the AsyncSteps loop is not driven by a FutoInUv", what);
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_EINVAL, info);
    }
    return u;
}

/* The error a libuv failure becomes: its code, and info in buf. */
static const char* fail_text(char* buf, size_t size, const char* code, int err, const char* what)
{
    if (err == UV_ENOMEM) {
        /* Whoever failed to allocate (libuv, the backend), it is the
         * library's out-of-memory report, not an I/O error of the peer:
         * docs/SEMANTICS.md "Memory". */
        snprintf(buf, size, "%s: %s: out of memory", uv_err_name(err), what);
        return FUTOIN_INTERNAL_ERROR;
    }
    snprintf(buf, size, "%s: %s", uv_err_name(err), what);
    return code;
}

void futoin__uv_error(FutoInAsyncSteps* as, const char* code, int err, const char* info)
{
    futoin_error(as, code, info);
    futoin__uv_note_error(as, code, err, info);
}

void futoin__uv_fail(FutoInAsyncSteps* as, const char* code, int err, const char* what)
{
    char info[256];
    code = fail_text(info, sizeof(info), code, err, what);
    futoin__uv_error(as, code, err, info);
}

void futoin__uv_fail_owned(FutoInAsyncSteps* as, const void* key, const char* code, int err,
        const char* what)
{
    char info[256];
    code = fail_text(info, sizeof(info), code, err, what);
    if (futoin_owned_error(as, key, code, info) == 0) {
        futoin__uv_note_error(as, code, err, info);
    }
}

void futoin__uv_failf_owned(FutoInAsyncSteps* as, const void* key, const char* code, int err,
        const char* fmt, ...)
{
    char what[224];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    futoin__uv_fail_owned(as, key, code, err, what);
}

void futoin__uv_failf(FutoInAsyncSteps* as, const char* code, int err, const char* fmt, ...)
{
    char what[224];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    futoin__uv_fail(as, code, err, what);
}

void futoin__uv_wait_info(FutoInAsyncSteps* as, const char* op, const char* object)
{
    /* On every read that waits: no printf. */
    char info[320];
    size_t ol = strlen(op);
    size_t bl = strlen(object);
    if (ol + 1 + bl >= sizeof(info)) {
        bl = sizeof(info) - ol - 2;
    }
    memcpy(info, op, ol);
    info[ol] = ' ';
    memcpy(info + ol + 1, object, bl);
    info[ol + 1 + bl] = '\0';
    futoin_set_wait_info(as, info);
}

/* The steps that fail at once: an argument refused (EINVAL), or the
 * parameters of a step that could not be allocated (ENOMEM). */
static void fail_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_EINVAL, (const char*)data);
}

static void fail_step_nomem(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, (const char*)data);
}

void futoin__uv_add_fail(FutoInAsyncSteps* as, const char* what)
{
    if (!as) {
        return;
    }
    /* what is a string literal of the caller: it outlives the step. */
    futoin_add(as, fail_step, NULL, (void*)(uintptr_t)what);
}

void futoin__uv_add_failf(FutoInAsyncSteps* as, const char* fmt, ...)
{
    if (!as) {
        return;
    }
    char info[224];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(info, sizeof(info), fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(info) ? (size_t)n : sizeof(info) - 1;
    info[len] = '\0';
    /* Lives as long as the step that adds the failing one. */
    char* copy = futoin_stack(as, len + 1, NULL);
    if (!copy) {
        futoin__uv_add_fail(as, "EINVAL: argument out of range");
        return;
    }
    memcpy(copy, info, len + 1);
    futoin_add(as, fail_step, NULL, copy);
}

void* futoin__uv_add_step(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f, size_t size,
        void (*cleanup)(void*), const char* what)
{
    if (!as) {
        return NULL;
    }
    void* p = futoin_stack(as, size, cleanup);
    if (!p) {
        /* what is a string literal of the caller. */
        futoin_add(as, fail_step_nomem, NULL, (void*)(uintptr_t)what);
        return NULL;
    }
    futoin_add(as, f, NULL, p);
    return p;
}

static void free_bytes(FutoInBinaryValue* v)
{
    free((void*)v->p);
}

static const FutoInType string_type = { FTN_TYPE_STRING, free_bytes };
static const FutoInType bytes_type = { FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, free_bytes };

FutoInBinaryValue futoin__uv_bytes_adopt(char* data, size_t n, int as_string)
{
    FutoInBinaryValue v;
    memset(&v, 0, sizeof(v));
    if (!data) {
        return v;
    }
    v.type = as_string ? &string_type : &bytes_type;
    v.p = data;
    v.length = (uint32_t)n;
    return v;
}

FutoInBinaryValue futoin__uv_bytes_value(const char* data, size_t n, int as_string)
{
    if (n > UINT32_MAX || n == SIZE_MAX) {
        /* A value's length is 32 bits (and n + 1 must not wrap). */
        FutoInBinaryValue none;
        memset(&none, 0, sizeof(none));
        return none;
    }
    char* p = malloc(n + 1);
    if (p) {
        memcpy(p, data, n);
        p[n] = '\0';
    }
    return futoin__uv_bytes_adopt(p, n, as_string);
}

const char* futoin_uv_arg_bytes(const FutoInArgs* args, int i, size_t* len)
{
    int t = futoin_arg_type(args, i);
    if (t != FTN_TYPE_STRING && t != (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY)) {
        if (len) {
            *len = 0;
        }
        return NULL;
    }
    if (len) {
        *len = args->args[i].length;
    }
    return (const char*)args->args[i].p;
}

/* ------------------------------------------------------------------------ */
/* sleep: an AsyncTool timer, reached through the ABI                       */

/* The sleep's handle (in the step's stack) is its owned wait's key: what
 * the timer gets, with the flow next to it. */
typedef struct SleepWait {
    FutoInHandle h;
    FutoInAsyncSteps* as;
} SleepWait;

static void sleep_done(void* data)
{
    SleepWait* w = data;
    futoin_owned_success(w->as, w, NULL);
}

static void sleep_cancel(FutoInAsyncSteps* as, void* data)
{
    as->api->sched_cancel(as, &((SleepWait*)data)->h);
}

static void sleep_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    uint32_t ms = (uint32_t)(uintptr_t)data;
    /* The handle lives in this step's own stack, which outlasts its cancel
     * handler (which stops the timer): the timer never sees it freed. */
    SleepWait* w = futoin_stack(as, sizeof(*w), NULL);
    if (!w) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "sleep: out of memory");
        return;
    }
    w->as = as;
    w->h = as->api->sched_deferred(as, ms, w, sleep_done);
    if (!as->api->sched_is_valid(as, &w->h)) {
        futoin__uv_error(as, FUTOIN_INTERNAL_ERROR, UV_ENOMEM, "sleep: out of memory");
        return;
    }
    futoin_wait_owned(as, sleep_cancel, w);
    char what[32];
    snprintf(what, sizeof(what), "%lu ms", (unsigned long)ms);
    futoin__uv_wait_info(as, "sleep", what);
}

void futoin_uv_sleep(FutoInAsyncSteps* as, uint32_t ms)
{
    if (!as) {
        return;
    }
    futoin_add(as, sleep_start, NULL, (void*)(uintptr_t)ms);
}
