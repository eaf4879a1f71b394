/* SPDX-License-Identifier: MIT */
/* Misuse matrix (docs/MISUSE.md): every ABI call x calling context where
 * docs/SEMANTICS.md ("Misuse") forbids the call and tests/test_misuse_*.c
 * do not already cover it. One table row per cell; each row asserts the
 * documented outcome:
 *
 *   IE      inside a step or an error handler: the step fails with
 *           InternalError, error_info names the call (checked by an outer
 *           step's error handler, which recovers; the flow goes on);
 *   MISUSE  where no step of the flow is running (cancel handler, a loop
 *           callback while the step waits, the unhandled-error callback):
 *           the call is ignored, the loop's misuse handler gets one message
 *           naming the call, no loop callback is armed by it, the flow goes
 *           on exactly as without the call;
 *   NOOP    documented no-op: nothing happens, no message;
 *   REPLACES error() is accepted and replaces the code (no InternalError):
 *           only CTX_EH/c_error_after_add, where the engine (and
 *           tests/test_abi_only.c) deliberately differ from the literal
 *           SEMANTICS.md list ("success or error after add" inside "a step
 *           or error handler"); see docs/MISUSE.md. The row pins the current
 *           behaviour until the contract is clarified.
 *
 * Callbacks never assert (cmocka would longjmp through the engine): they
 * record, and the test body checks.
 *
 * MATRIX_ONLY=substring runs only the rows whose name contains it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>
#include <futoin/sync.h>

#define TXT 256
#define MSG_MAX 8

typedef enum {
    CTX_STEP,           /* inside a step's execute callback */
    CTX_EH,             /* inside an error handler */
    CTX_CANCEL,         /* inside a cancel handler (root cancel) */
    CTX_OUTSIDE,        /* loop callback while the root's step waits (in a loop) */
    CTX_OUTSIDE_BRANCH, /* loop callback while a parallel branch waits */
    CTX_FINAL           /* inside the unhandled-error callback */
} Ctx;

typedef enum { EXP_IE, EXP_MISUSE, EXP_NOOP, EXP_REPLACES } Expect;

typedef struct Fx Fx;
typedef void (*CallFn)(Fx* fx, FutoInAsyncSteps* as);

typedef struct Cell {
    const char* name;
    Ctx ctx;
    CallFn call;
    Expect expect;
    const char* needle; /* in error_info (IE) or the misuse message */
} Cell;

struct Fx {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    FutoInSync* mutex;
    const Cell* cell;
    FutoInAsyncSteps* waiting; /* the flow whose step waits */
    int misuse_count;
    char misuse_msg[MSG_MAX][TXT];
    int outer_eh_calls;
    char outer_code[64];
    char outer_info[TXT];
    int after_calls; /* the step after the outer step (flow went on) */
    int never_calls; /* callbacks that must not run */
    int cancel_calls;
    int unhandled_calls;
    int branch_done;
    size_t pending_before;
    size_t pending_after;
    int called;
};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    Fx* fx = data;
    (void)as;
    if (fx->misuse_count < MSG_MAX) {
        snprintf(fx->misuse_msg[fx->misuse_count], TXT, "%s", info);
    }
    ++fx->misuse_count;
}

static void never_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ++((Fx*)data)->never_calls;
}

static void never_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)code;
    ++((Fx*)data)->never_calls;
}

static void never_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((Fx*)data)->never_calls;
}

static void never_loop(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((Fx*)data)->never_calls;
}

static void never_repeat(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as, (void)i;
    ++((Fx*)data)->never_calls;
}

static void after_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ++((Fx*)data)->after_calls;
}

static void do_call(Fx* fx, FutoInAsyncSteps* as)
{
    fx->pending_before = futoin_loop_pending(fx->loop);
    fx->cell->call(fx, as);
    fx->pending_after = futoin_loop_pending(fx->loop);
    fx->called = 1;
}

/* ------------------------------------------------------------------------ */
/* The calls (one or a short sequence ending with the misuse)               */

static void c_add(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add(as, never_step, never_eh, fx);
}
static void c_parallel(Fx* fx, FutoInAsyncSteps* as)
{
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, fx);
    p->api->add(p, fx, never_step, never_eh); /* inert interface: ignored */
}
static void c_loop(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add_loop(as, never_loop, fx, NULL);
}
static void c_repeat(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_repeat(as, 3, never_repeat, fx, "L");
}
static void c_add_sync(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add_sync(as, fx->mutex, never_step, never_eh, fx);
}
static void c_set_timeout(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_set_timeout(as, 1);
}
static void c_set_cancel(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_set_cancel(as, never_cancel, fx);
}
static void c_wait(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_wait_external(as);
}
static void c_break(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_break(as, NULL);
}
static void c_continue(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_continue(as, NULL);
}
static void c_stack(Fx* fx, FutoInAsyncSteps* as)
{
    if (futoin_stack(as, 32, NULL) != NULL) {
        ++fx->never_calls; /* must not hand out memory */
    }
}
static void c_execute(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_execute(as, NULL, NULL);
}
static void c_success(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_success1(as, futoin_val_strdup("dropped")); /* must be released */
}
static void c_error(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_error(as, "MatrixError", "x");
}
static void c_cancel(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_cancel(as);
}
/* Sequences valid only up to their last call. */
static void c_success_twice(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_success(as);
    futoin_success1(as, futoin_val_strdup("dropped"));
}
static void c_error_twice(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_error(as, "First", NULL);
    futoin_error(as, "Second", NULL);
}
static void c_success_after_error(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_error(as, "First", NULL);
    futoin_success(as);
}
static void c_error_after_success(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_success(as);
    futoin_error(as, "Second", NULL);
}
static void c_success_after_add(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add(as, never_step, never_eh, fx);
    futoin_success(as);
}
static void c_error_after_add(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add(as, never_step, never_eh, fx);
    futoin_error(as, "Second", NULL);
}
static void c_add_after_success(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_success(as);
    futoin_add(as, never_step, never_eh, fx);
}
static void c_add_after_error(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_error(as, "First", NULL);
    futoin_add(as, never_step, never_eh, fx);
}
static void c_parallel_after_error(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_error(as, "First", NULL);
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, fx);
    p->api->add(p, fx, never_step, never_eh);
}
static void c_loop_after_success(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_success(as);
    futoin_add_loop(as, never_loop, fx, NULL);
}
static void c_repeat_after_error(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_error(as, "First", NULL);
    futoin_repeat(as, 2, never_repeat, fx, NULL);
}
static void c_add_sync_after_success(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_success(as);
    futoin_add_sync(as, fx->mutex, never_step, never_eh, fx);
}
static void c_break_after_success(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_success(as);
    futoin_break(as, NULL);
}
static void c_continue_after_error(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_error(as, "First", NULL);
    futoin_continue(as, NULL);
}
static void c_success_after_break(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_break(as, NULL);
    futoin_success(as);
}
static void c_break_unknown_label(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_break(as, "nosuchlabel");
}
static void c_continue_unknown_label(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    futoin_continue(as, "nosuchlabel");
}
static void c_add_null(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add(as, NULL, never_eh, fx);
}
static void c_error_null(Fx* fx, FutoInAsyncSteps* as)
{
    (void)fx;
    as->api->handle_error(as, NULL, NULL);
}
static void c_loop_null(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add_loop(as, NULL, fx, NULL);
}
static void c_add_sync_null(Fx* fx, FutoInAsyncSteps* as)
{
    futoin_add_sync(as, NULL, never_step, never_eh, fx);
}

/* ------------------------------------------------------------------------ */
/* The table                                                                 */

#define ROW(ctx, call, exp, needle)                                                                \
    {                                                                                              \
#ctx "/" #call, ctx, call, exp, needle                                                     \
    }

static const Cell cells[] = {
    /* inside a step: combinations test_misuse_*.c do not cover */
    ROW(CTX_STEP, c_error_after_add, EXP_IE, "after add"),
    ROW(CTX_STEP, c_add_after_error, EXP_IE, "add() after error"),
    ROW(CTX_STEP, c_parallel_after_error, EXP_IE, "parallel() after error"),
    ROW(CTX_STEP, c_loop_after_success, EXP_IE, "loop() after success"),
    ROW(CTX_STEP, c_repeat_after_error, EXP_IE, "repeat() after error"),
    ROW(CTX_STEP, c_add_sync_after_success, EXP_IE, "addSync() after success"),
    ROW(CTX_STEP, c_break_after_success, EXP_IE, "break"),
    ROW(CTX_STEP, c_continue_after_error, EXP_IE, "continue"),
    ROW(CTX_STEP, c_success_after_break, EXP_IE, "success() after"),
    /* inside an error handler */
    ROW(CTX_EH, c_success_twice, EXP_IE, "success() called twice"),
    ROW(CTX_EH, c_error_twice, EXP_IE, "called twice"),
    ROW(CTX_EH, c_success_after_error, EXP_IE, "success() after error"),
    ROW(CTX_EH, c_error_after_success, EXP_IE, "after success"),
    ROW(CTX_EH, c_success_after_add, EXP_IE, "after add"),
    ROW(CTX_EH, c_error_after_add, EXP_REPLACES, "Second"), /* contract conflict */
    ROW(CTX_EH, c_add_after_success, EXP_IE, "add() after success"),
    ROW(CTX_EH, c_add_after_error, EXP_IE, "add() after error"),
    ROW(CTX_EH, c_loop_after_success, EXP_IE, "loop() after success"),
    ROW(CTX_EH, c_add_sync_after_success, EXP_IE, "addSync() after success"),
    ROW(CTX_EH, c_break, EXP_IE, "break() outside"),
    ROW(CTX_EH, c_continue, EXP_IE, "continue() outside"),
    ROW(CTX_EH, c_break_unknown_label, EXP_IE, "nosuchlabel"),
    ROW(CTX_EH, c_continue_unknown_label, EXP_IE, "nosuchlabel"),
    ROW(CTX_EH, c_add_null, EXP_IE, "NULL"),
    ROW(CTX_EH, c_error_null, EXP_IE, "NULL error code"),
    ROW(CTX_EH, c_loop_null, EXP_IE, "NULL"),
    ROW(CTX_EH, c_add_sync_null, EXP_IE, "NULL"),
    ROW(CTX_EH, c_execute, EXP_IE, "execute"),
    /* inside a cancel handler */
    ROW(CTX_CANCEL, c_set_timeout, EXP_MISUSE, "setTimeout"),
    ROW(CTX_CANCEL, c_set_cancel, EXP_MISUSE, "setCancel"),
    ROW(CTX_CANCEL, c_wait, EXP_MISUSE, "waitExternal"),
    ROW(CTX_CANCEL, c_loop, EXP_MISUSE, "loop"),
    ROW(CTX_CANCEL, c_repeat, EXP_MISUSE, "repeat"),
    ROW(CTX_CANCEL, c_add_sync, EXP_MISUSE, "addSync"),
    ROW(CTX_CANCEL, c_break, EXP_MISUSE, "break"),
    ROW(CTX_CANCEL, c_continue, EXP_MISUSE, "continue"),
    ROW(CTX_CANCEL, c_stack, EXP_MISUSE, "stack"),
    ROW(CTX_CANCEL, c_execute, EXP_MISUSE, "execute"),
    /* from a loop callback while the root's step waits (inside a loop) */
    ROW(CTX_OUTSIDE, c_set_timeout, EXP_MISUSE, "setTimeout"),
    ROW(CTX_OUTSIDE, c_set_cancel, EXP_MISUSE, "setCancel"),
    ROW(CTX_OUTSIDE, c_wait, EXP_MISUSE, "waitExternal"),
    ROW(CTX_OUTSIDE, c_loop, EXP_MISUSE, "loop"),
    ROW(CTX_OUTSIDE, c_repeat, EXP_MISUSE, "repeat"),
    ROW(CTX_OUTSIDE, c_add_sync, EXP_MISUSE, "addSync"),
    ROW(CTX_OUTSIDE, c_break, EXP_MISUSE, "break"),
    ROW(CTX_OUTSIDE, c_continue, EXP_MISUSE, "continue"),
    ROW(CTX_OUTSIDE, c_stack, EXP_MISUSE, "stack"),
    /* ... while a parallel branch waits (calls on the branch's interface) */
    ROW(CTX_OUTSIDE_BRANCH, c_add, EXP_MISUSE, "add"),
    ROW(CTX_OUTSIDE_BRANCH, c_parallel, EXP_MISUSE, "parallel"),
    ROW(CTX_OUTSIDE_BRANCH, c_set_timeout, EXP_MISUSE, "setTimeout"),
    ROW(CTX_OUTSIDE_BRANCH, c_set_cancel, EXP_MISUSE, "setCancel"),
    ROW(CTX_OUTSIDE_BRANCH, c_loop, EXP_MISUSE, "loop"),
    ROW(CTX_OUTSIDE_BRANCH, c_break, EXP_MISUSE, "break"),
    ROW(CTX_OUTSIDE_BRANCH, c_stack, EXP_MISUSE, "stack"),
    ROW(CTX_OUTSIDE_BRANCH, c_execute, EXP_MISUSE, "execute"),
    /* inside the unhandled-error callback */
    ROW(CTX_FINAL, c_add, EXP_MISUSE, "add"),
    ROW(CTX_FINAL, c_parallel, EXP_MISUSE, "parallel"),
    ROW(CTX_FINAL, c_loop, EXP_MISUSE, "loop"),
    ROW(CTX_FINAL, c_repeat, EXP_MISUSE, "repeat"),
    ROW(CTX_FINAL, c_add_sync, EXP_MISUSE, "addSync"),
    ROW(CTX_FINAL, c_success, EXP_MISUSE, "success"),
    ROW(CTX_FINAL, c_error, EXP_MISUSE, "MatrixError"),
    ROW(CTX_FINAL, c_set_timeout, EXP_MISUSE, "setTimeout"),
    ROW(CTX_FINAL, c_set_cancel, EXP_MISUSE, "setCancel"),
    ROW(CTX_FINAL, c_wait, EXP_MISUSE, "waitExternal"),
    ROW(CTX_FINAL, c_break, EXP_MISUSE, "break"),
    ROW(CTX_FINAL, c_continue, EXP_MISUSE, "continue"),
    ROW(CTX_FINAL, c_stack, EXP_MISUSE, "stack"),
    ROW(CTX_FINAL, c_execute, EXP_MISUSE, "execute"),
    ROW(CTX_FINAL, c_cancel, EXP_NOOP, NULL),
};

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */

static void outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Fx* fx = data;
    ++fx->outer_eh_calls;
    snprintf(fx->outer_code, sizeof(fx->outer_code), "%s", code);
    snprintf(fx->outer_info, sizeof(fx->outer_info), "%s", futoin_error_info(as));
    futoin_success(as);
}

/* CTX_STEP */
static void misuse_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    do_call(data, as);
}

/* CTX_EH */
static void failing_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "Original", "orig");
}
static void misuse_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    do_call(data, as);
}

static void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = data;
    if (fx->cell->ctx == CTX_STEP) {
        futoin_add(as, misuse_step, NULL, fx);
    } else {
        futoin_add(as, failing_step, misuse_eh, fx);
    }
    futoin_add(as, never_step, NULL, fx); /* dropped by the error */
}

/* CTX_CANCEL, CTX_OUTSIDE, CTX_OUTSIDE_BRANCH: a waiting step */
static void misuse_cancel(FutoInAsyncSteps* as, void* data)
{
    Fx* fx = data;
    ++fx->cancel_calls;
    do_call(fx, as);
}
static void ok_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((Fx*)data)->cancel_calls;
}
static void waiting_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = data;
    fx->waiting = as;
    futoin_set_cancel(as, fx->cell->ctx == CTX_CANCEL ? misuse_cancel : ok_cancel, fx);
    futoin_wait_external(as);
}
static void wait_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)i;
    futoin_add(as, waiting_step, never_eh, data);
}
static void branch_other(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ++((Fx*)data)->branch_done;
}

static void timer_cancel_root(void* data)
{
    Fx* fx = data;
    futoin_cancel(fx->root);
}
static void timer_misuse_then_complete(void* data)
{
    Fx* fx = data;
    do_call(fx, fx->waiting);
    futoin_success(fx->waiting);
}

/* CTX_FINAL */
static void final_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Fx* fx = data;
    (void)code;
    ++fx->unhandled_calls;
    do_call(fx, as);
}
static void rec_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)code;
    ++((Fx*)data)->unhandled_calls;
}

static void run_loop(Fx* fx)
{
    while (futoin_loop_run_next(fx->loop) == 1) {
    }
}

static int contains(const char* hay, const char* needle)
{
    return strstr(hay, needle) != NULL;
}

/* Runs one cell; returns NULL when it behaved as documented, else why not. */
static const char* run_cell(const Cell* c, char* why, size_t why_len)
{
    Fx fx;
    memset(&fx, 0, sizeof(fx));
    fx.cell = c;
    fx.loop = futoin_loop_new_virtual();
    futoin_set_misuse_handler(fx.loop, on_misuse, &fx);
    fx.mutex = futoin_mutex_new(fx.loop, 1, FUTOIN_SYNC_UNLIMITED);
    fx.root = futoin_asyncsteps_new(fx.loop);
    FutoInAsyncSteps_error_callback unhandled = rec_unhandled;
    switch (c->ctx) {
    case CTX_STEP:
    case CTX_EH:
        futoin_add(fx.root, outer_step, outer_eh, &fx);
        futoin_add(fx.root, after_step, NULL, &fx);
        break;
    case CTX_CANCEL:
        futoin_add(fx.root, waiting_step, never_eh, &fx);
        futoin_add(fx.root, never_step, NULL, &fx);
        futoin_loop_deferred(fx.loop, 5, &fx, timer_cancel_root);
        break;
    case CTX_OUTSIDE:
        futoin_repeat(fx.root, 1, wait_body, &fx, "L");
        futoin_add(fx.root, after_step, NULL, &fx);
        futoin_loop_deferred(fx.loop, 5, &fx, timer_misuse_then_complete);
        break;
    case CTX_OUTSIDE_BRANCH: {
        FutoInAsyncSteps* p = futoin_parallel(fx.root, never_eh, &fx);
        p->api->add(p, &fx, waiting_step, never_eh);
        p->api->add(p, &fx, branch_other, never_eh);
        futoin_add(fx.root, after_step, NULL, &fx);
        futoin_loop_deferred(fx.loop, 5, &fx, timer_misuse_then_complete);
        break;
    }
    case CTX_FINAL:
        futoin_add(fx.root, failing_step, NULL, &fx);
        futoin_add(fx.root, never_step, NULL, &fx);
        unhandled = final_unhandled;
        break;
    }
    futoin_execute(fx.root, unhandled, &fx);
    run_loop(&fx);

    const char* err = NULL;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!err && !(cond)) {                                                                     \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
            err = why;                                                                             \
        }                                                                                          \
    } while (0)
    CHECK(fx.called, "the misuse call was never reached");
    CHECK(fx.never_calls == 0, "a callback that must not run ran (%d)", fx.never_calls);
    switch (c->expect) {
    case EXP_IE:
        CHECK(fx.misuse_count == 0, "unexpected misuse report: %s", fx.misuse_msg[0]);
        CHECK(fx.outer_eh_calls == 1, "outer error handler calls: %d", fx.outer_eh_calls);
        CHECK(strcmp(fx.outer_code, FUTOIN_INTERNAL_ERROR) == 0, "code %s, not InternalError",
                fx.outer_code);
        CHECK(contains(fx.outer_info, c->needle), "error_info '%s' lacks '%s'", fx.outer_info,
                c->needle);
        CHECK(fx.after_calls == 1, "the flow did not go on after recovery");
        break;
    case EXP_MISUSE:
        CHECK(fx.misuse_count == 1, "misuse reports: %d (first: %s)", fx.misuse_count,
                fx.misuse_count ? fx.misuse_msg[0] : "-");
        CHECK(contains(fx.misuse_msg[0], c->needle), "misuse message '%s' lacks '%s'",
                fx.misuse_msg[0], c->needle);
        CHECK(fx.pending_after == fx.pending_before, "the ignored call armed a loop callback");
        break;
    case EXP_NOOP:
        CHECK(fx.misuse_count == 0, "unexpected misuse report: %s", fx.misuse_msg[0]);
        CHECK(fx.pending_after == fx.pending_before, "the no-op armed a loop callback");
        break;
    case EXP_REPLACES:
        CHECK(fx.misuse_count == 0, "unexpected misuse report: %s", fx.misuse_msg[0]);
        CHECK(fx.outer_eh_calls == 1, "outer error handler calls: %d", fx.outer_eh_calls);
        CHECK(strcmp(fx.outer_code, c->needle) == 0, "code %s, not %s", fx.outer_code, c->needle);
        CHECK(fx.after_calls == 1, "the flow did not go on after recovery");
        break;
    }
    /* How the flow ends is that of the context, untouched by the misuse. */
    switch (c->ctx) {
    case CTX_CANCEL:
        CHECK(fx.cancel_calls == 1, "cancel handler calls: %d", fx.cancel_calls);
        CHECK(!futoin_is_valid(fx.root), "root not cancelled");
        CHECK(fx.unhandled_calls == 0, "unhandled_error after cancel");
        break;
    case CTX_OUTSIDE:
    case CTX_OUTSIDE_BRANCH:
        CHECK(fx.after_calls == 1, "the waiting step did not complete normally");
        CHECK(fx.cancel_calls == 0, "a cancel handler ran");
        CHECK(fx.unhandled_calls == 0, "unhandled_error called");
        CHECK(c->ctx != CTX_OUTSIDE_BRANCH || fx.branch_done == 1, "other branch did not run");
        break;
    case CTX_FINAL:
        CHECK(fx.unhandled_calls == 1, "unhandled_error calls: %d", fx.unhandled_calls);
        break;
    default:
        CHECK(fx.unhandled_calls == 0, "unhandled_error called");
        break;
    }
    CHECK(futoin_loop_pending(fx.loop) == 0, "loop callbacks left pending");
#undef CHECK
    futoin_asyncsteps_free(fx.root);
    if (futoin_sync_free(fx.mutex) != FUTOIN_SYNC_OK && !err) {
        snprintf(why, why_len, "mutex left busy");
        err = why;
    }
    futoin_loop_free(fx.loop);
    return err;
}

static void test_matrix(void** state)
{
    (void)state;
    const char* only = getenv("MATRIX_ONLY");
    int failures = 0;
    int ran = 0;
    for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); ++i) {
        const Cell* c = &cells[i];
        if (only && *only && !strstr(c->name, only)) {
            continue;
        }
        char why[512];
        const char* err = run_cell(c, why, sizeof(why));
        ++ran;
        if (err) {
            ++failures;
            fprintf(stderr, "FAIL %-40s %s\n", c->name, err);
        }
    }
    printf("misuse matrix: %d cells, %d failed\n", ran, failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
