/* SPDX-License-Identifier: MIT */
/* Re-entry matrix (docs/MISUSE.md, "Re-entry matrix"): every kind of user
 * callback the library calls x every call a user may make from it, on the
 * SAME root, on ANOTHER root, on a sync object and on the loop. One table
 * row per cell; each row states what must happen as an event log of both
 * roots plus the misuse reports and the call's return value, and the test
 * checks, for every row:
 *
 *   - the logs and counts match the row (the documented outcome);
 *   - every cleanup ran exactly once: result values of type cleanup,
 *     stack() blocks, state variables (each object is tracked, so a missed
 *     or a second cleanup is reported as such);
 *   - nothing of a root fires after it was cancelled or freed (such an
 *     event is logged with a LATE: prefix and fails the row);
 *   - the run terminates: the virtual loop runs for a bounded number of
 *     futoin_loop_run_next() calls (loop-stop rows: a bounded number of
 *     futoin_loop_run() calls), and CTest has a TIMEOUT on the test.
 *
 * The two roots. R1 ("same") runs an outer step with an error handler that
 * logs "eh:CODE" and recovers, then a step that logs "after"; the outer
 * step builds the kind's scenario, in which the callback under test makes
 * the call. R2 ("other") runs first a step that waits (cancel handler
 * logging "ch", timeout 500 ms, error handler logging "eh:CODE" and
 * recovering), then "after"; R2 is executed first, so its step waits
 * before any callback of R1 runs. Untouched, R2 logs "ch eh:Timeout
 * after". Other events: "added" (a step added by the call ran), "unh:CODE"
 * (unhandled-error callback). Mutex, Throttle and Limiter rows have a
 * third root that takes the object first, so that R1 queues.
 *
 * Two cells outside the table have tests of their own: stack() of sizes
 * that cannot be had (test_stack_size_max) and a root cancel through
 * 100,000 nested parallel() levels (test_deep_parallel_cancel;
 * REENTRY_DEEP_LEVELS overrides the depth).
 *
 * Callbacks never assert (cmocka would longjmp through the engine): they
 * record, and the test body checks.
 *
 * REENTRY_ONLY=substring runs only the rows whose name (kind/call/target)
 * contains it, REENTRY_EXACT=name only that row; REENTRY_DUMP=1 prints each
 * row's observed outcome, REENTRY_TRACE=1 each row's name before it runs. */
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
#define NTRACK 32
#define RUN_BOUND 100000
#define WATCHDOG 100000

typedef enum {
    K_STEP,           /* a step's execute callback */
    K_EH,             /* an error handler */
    K_CANCEL,         /* a cancel handler (the root is cancelled by a timer) */
    K_CANCEL_TIMEOUT, /* a cancel handler (its step's own timeout) */
    K_CANCEL_SIBLING, /* a cancel handler of a branch (its sibling branch fails) */
    K_UNHANDLED,      /* the unhandled-error callback of execute() */
    K_VALUE,          /* FutoInType.cleanup of a result value (after the next step) */
    K_VALUE_BRANCH,   /* the same, the value being a parallel branch's last result */
    K_STACK,          /* stack() cleanup (the step ends) */
    K_STATE_ALLOC,    /* state variable allocate (first futoin_state() in a step) */
    K_STATE_CLEANUP,  /* state variable cleanup (the root is freed by a timer) */
    K_MUTEX,          /* critical section of a Mutex, after a queued flow is woken */
    K_THROTTLE,       /* critical section of a Throttle, admitted by its window timer */
    K_LIMITER,        /* critical section of a Limiter, after a queued flow is woken */
    K_IMMEDIATE,      /* futoin_loop_immediate() callback while R1's step waits */
    K_DEFERRED,       /* futoin_loop_deferred() callback while R1's step waits */
    K_AWAIT_EH,       /* error handler of futoin_await() (completion rejected) */
    K_COUNT
} Kind;

static const char* const kind_names[K_COUNT] = { "step", "eh", "cancel", "cancel_timeout",
    "cancel_sibling", "unhandled", "value", "value_branch", "stack", "state_alloc", "state_cleanup",
    "mutex", "throttle", "limiter", "immediate", "deferred", "await_eh" };

typedef enum {
    C_SUCCESS,     /* success1(a tracked value) */
    C_ERROR,       /* error("ReErr", "reentry") */
    C_ADD,         /* add(a step that logs "added") */
    C_EXECUTE,     /* execute() */
    C_CANCEL,      /* cancel() */
    C_FREE,        /* futoin_asyncsteps_free() */
    C_STATE,       /* stateVariable("re", allocate, cleanup): a tracked value */
    C_STACK,       /* stack(16, cleanup): a tracked block */
    C_SET_TIMEOUT, /* setTimeout(5) */
    C_SYNC_FREE,   /* futoin_sync_free() of the kind's sync object (else an idle Mutex) */
    C_LOOP_STOP,   /* futoin_loop_stop() */
    C_COUNT
} CallKind;

static const char* const call_names[C_COUNT] = { "success", "error", "add", "execute", "cancel",
    "free", "state", "stack", "setTimeout", "sync_free", "loop_stop" };

typedef enum { T_SAME, T_OTHER, T_SYNC, T_LOOP } Target;

static const char* const target_names[] = { "same", "other", "sync", "loop" };

typedef struct Row {
    Kind kind;
    CallKind call;
    Target target;
    const char* expect; /* "r1[...] r2[...] mN [ret]" */
    const char* needle; /* in the misuse message or R1's error_info; NULL: none */
} Row;

typedef struct Fx Fx;

typedef struct RootCtx {
    Fx* fx;
    FutoInAsyncSteps* h;
    FutoInAsyncSteps* waiting; /* the flow whose step waits */
    char log[TXT];
    char info[TXT]; /* error_info seen by the outer error handler */
    int dead;       /* cancelled or freed: nothing may fire any more */
    int freed;
} RootCtx;

typedef struct Track {
    Fx* fx;
    int trigger; /* its cleanup is the callback under test */
    int cleaned;
} Track;

struct Fx {
    FutoInLoop* loop;
    const Row* row;
    RootCtx rc1, rc2, rc3;
    FutoInSync* sync;
    int sync_freed;
    FutoInCompletion* comp;
    int running;         /* the run phase: the callback under test may call */
    int called;          /* the call was made */
    int trigger_again;   /* the callback under test ran again */
    int trigger_outside; /* ... or outside the run phase */
    int target_gone;     /* the target root was freed before the call */
    int misuse;
    char msg[TXT];
    char ret[32];
    Track trk[NTRACK];
    int ntrk;
    long callbacks; /* watchdog for the loop-stop driver */
};

/* ------------------------------------------------------------------------ */
/* Recording                                                                 */

static void ev(RootCtx* rc, const char* what, const char* code)
{
    char buf[96];
    snprintf(buf, sizeof(buf), "%s%s%s%s", rc->dead ? "LATE:" : "", what, code ? ":" : "",
            code ? code : "");
    size_t len = strlen(rc->log);
    snprintf(rc->log + len, sizeof(rc->log) - len, "%s%s", len ? " " : "", buf);
    if (++rc->fx->callbacks > WATCHDOG) {
        futoin_loop_stop(rc->fx->loop);
    }
}

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    Fx* fx = data;
    (void)as;
    if (fx->misuse == 0) {
        snprintf(fx->msg, sizeof(fx->msg), "%s", info);
    }
    ++fx->misuse;
}

static Track* track_new(Fx* fx, int trigger)
{
    if (fx->ntrk >= NTRACK) {
        return NULL;
    }
    Track* t = &fx->trk[fx->ntrk++];
    t->fx = fx;
    t->trigger = trigger;
    t->cleaned = 0;
    return t;
}

static void trigger(Fx* fx, FutoInAsyncSteps* as_same);

static void track_clean(Track* t)
{
    if (!t) {
        return;
    }
    ++t->cleaned;
    if (t->trigger) {
        trigger(t->fx, NULL);
    }
}

static void val_cleanup(FutoInBinaryValue* v)
{
    track_clean(v->custom_data);
}
static const FutoInType val_type = { FTN_TYPE_CUSTOM_OBJECT, val_cleanup };

static void stack_cleanup(void* block)
{
    track_clean(*(Track**)block);
}

static void* state_alloc(void* data)
{
    return track_new(data, 0);
}
static void* state_alloc_trigger(void* data)
{
    Track* t = track_new(data, 0);
    trigger(data, NULL);
    return t;
}
static void state_cleanup(void* data, void* value)
{
    (void)data;
    track_clean(value);
}
static void state_cleanup_trigger(void* data, void* value)
{
    (void)data;
    Track* t = value;
    if (t) {
        t->trigger = 1;
    }
    track_clean(t);
}

/* ------------------------------------------------------------------------ */
/* Plain callbacks of both roots                                             */

static void rec_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    RootCtx* rc = data;
    ev(rc, "eh", code);
    snprintf(rc->info, sizeof(rc->info), "%s", futoin_error_info(as));
    futoin_success(as);
}
static void rec_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ev(data, "after", NULL);
}
static void rec_added(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ev(data, "added", NULL);
}
static void rec_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ev(data, "ch", NULL);
}
static void rec_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    ev(data, "unh", code);
}
static void noop_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
}
static void fail_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "Orig", "orig");
}
static void wait_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RootCtx* rc = data;
    rc->waiting = as;
    futoin_set_cancel(as, rec_cancel, rc);
    futoin_set_timeout(as, 500);
}

/* ------------------------------------------------------------------------ */
/* The call                                                                  */

static void do_call(Fx* fx, RootCtx* rc, FutoInAsyncSteps* x)
{
    switch (fx->row->call) {
    case C_SUCCESS:
        futoin_success1(x, futoin_val_custom(&val_type, track_new(fx, 0)));
        break;
    case C_ERROR:
        futoin_error(x, "ReErr", "reentry");
        break;
    case C_ADD:
        futoin_add(x, rec_added, NULL, rc);
        break;
    case C_EXECUTE:
        futoin_execute(x, rec_unhandled, rc);
        break;
    case C_CANCEL: /* on a branch's interface: cancels its root */
        futoin_cancel(x);
        if (!rc->freed && !futoin_is_valid(rc->h)) {
            rc->dead = 1;
        }
        break;
    case C_FREE: /* on a branch's interface: refused */
        if (x == rc->h) {
            rc->freed = 1;
        }
        futoin_asyncsteps_free(x);
        rc->dead = rc->dead || x == rc->h;
        break;
    case C_STATE: {
        void* v = futoin_state(x, "re", state_alloc, state_cleanup, fx);
        snprintf(fx->ret, sizeof(fx->ret), "state=%s", v ? "ptr" : "null");
        break;
    }
    case C_STACK: {
        void* p = futoin_stack(x, 16, stack_cleanup);
        if (p) {
            *(Track**)p = track_new(fx, 0);
        }
        snprintf(fx->ret, sizeof(fx->ret), "stack=%s", p ? "ptr" : "null");
        break;
    }
    case C_SET_TIMEOUT:
        futoin_set_timeout(x, 5);
        break;
    case C_SYNC_FREE: {
        int r = futoin_sync_free(fx->sync);
        if (r == FUTOIN_SYNC_OK) {
            fx->sync_freed = 1;
        }
        snprintf(fx->ret, sizeof(fx->ret), "sync=%s",
                r == FUTOIN_SYNC_OK             ? "OK"
                        : r == FUTOIN_SYNC_BUSY ? "BUSY"
                                                : "INVALID");
        break;
    }
    case C_LOOP_STOP:
        futoin_loop_stop(fx->loop);
        break;
    case C_COUNT:
        break;
    }
}

/* The callback under test: as_same is the interface it was given (NULL for
 * callbacks without one: the same root is then R1's handle). */
static void trigger(Fx* fx, FutoInAsyncSteps* as_same)
{
    if (!fx->running) {
        ++fx->trigger_outside;
        return;
    }
    if (fx->called) {
        ++fx->trigger_again;
        return;
    }
    fx->called = 1;
    RootCtx* rc = fx->row->target == T_OTHER ? &fx->rc2 : &fx->rc1;
    FutoInAsyncSteps* x = fx->row->target == T_OTHER ? fx->rc2.h : as_same ? as_same : fx->rc1.h;
    if (rc->freed && (fx->row->target == T_OTHER || (fx->row->target == T_SAME && !as_same))) {
        ++fx->target_gone;
        return;
    }
    do_call(fx, rc, x);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                 */

static void trig_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    trigger(((RootCtx*)data)->fx, as);
}
static void trig_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    trigger(((RootCtx*)data)->fx, as);
}
static void trig_cancel(FutoInAsyncSteps* as, void* data)
{
    ev(data, "ch", NULL);
    trigger(((RootCtx*)data)->fx, as);
}
static void trig_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    ev(data, "unh", code);
    trigger(((RootCtx*)data)->fx, as);
}
static void trig_loop_cb(void* data)
{
    trigger(data, NULL);
}

static void wait_trig_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, trig_cancel, data);
    futoin_wait_external(as);
}
static void timeout_trig_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, trig_cancel, data);
    futoin_set_timeout(as, 5);
}
static void sibling_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "Sib", "sibling");
}
static void give_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    futoin_success1(as, futoin_val_custom(&val_type, track_new(fx, 1)));
}
static void stack_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    void* p = futoin_stack(as, 16, stack_cleanup);
    if (p) {
        *(Track**)p = track_new(fx, 1);
    }
}
static void state_alloc_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    futoin_state(as, "k", state_alloc_trigger, state_cleanup, fx);
}
static void state_cleanup_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    futoin_state(as, "k", state_alloc, state_cleanup_trigger, fx);
}
static void wait_sched_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RootCtx* rc = data;
    Fx* fx = rc->fx;
    rc->waiting = as;
    futoin_set_cancel(as, rec_cancel, rc);
    futoin_set_timeout(as, 50);
    if (fx->row->kind == K_IMMEDIATE) {
        futoin_loop_immediate(fx->loop, fx, trig_loop_cb);
    } else {
        futoin_loop_deferred(fx->loop, 1, fx, trig_loop_cb);
    }
}

static void outer1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RootCtx* rc = data;
    Fx* fx = rc->fx;
    switch (fx->row->kind) {
    case K_STEP:
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_EH:
        futoin_add(as, fail_step, trig_eh, rc);
        break;
    case K_CANCEL:
        futoin_add(as, wait_trig_cancel, NULL, rc);
        break;
    case K_CANCEL_TIMEOUT:
        futoin_add(as, timeout_trig_cancel, NULL, rc);
        break;
    case K_CANCEL_SIBLING: {
        FutoInAsyncSteps* p = futoin_parallel(as, NULL, rc);
        p->api->add(p, rc, wait_trig_cancel, NULL);
        p->api->add(p, rc, sibling_fail, NULL);
        break;
    }
    case K_VALUE:
        futoin_add(as, give_value, NULL, rc);
        futoin_add(as, noop_step, NULL, rc);
        break;
    case K_VALUE_BRANCH: {
        FutoInAsyncSteps* p = futoin_parallel(as, NULL, rc);
        p->api->add(p, rc, give_value, NULL);
        p->api->add(p, rc, noop_step, NULL);
        break;
    }
    case K_STACK:
        futoin_add(as, stack_step, NULL, rc);
        break;
    case K_STATE_ALLOC:
        futoin_add(as, state_alloc_step, NULL, rc);
        break;
    case K_STATE_CLEANUP:
        futoin_add(as, state_cleanup_step, NULL, rc);
        break;
    case K_MUTEX:
    case K_THROTTLE:
    case K_LIMITER:
        futoin_add_sync(as, fx->sync, trig_step, NULL, rc);
        break;
    case K_IMMEDIATE:
    case K_DEFERRED:
        futoin_add(as, wait_sched_step, NULL, rc);
        break;
    case K_AWAIT_EH:
        futoin_await(as, fx->comp, trig_eh, rc);
        break;
    case K_UNHANDLED:
    case K_COUNT:
        break;
    }
}

/* R3 holds the sync object first (Mutex, Limiter: until 5 ms; Throttle:
 * takes the window's only entry at 0 ms). */
static void holder_release(void* data)
{
    RootCtx* rc = data;
    futoin_success(rc->waiting);
}
static void holder_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RootCtx* rc = data;
    if (rc->fx->row->kind == K_THROTTLE) {
        return;
    }
    rc->waiting = as;
    futoin_loop_deferred(rc->fx->loop, 5, rc, holder_release);
    futoin_wait_external(as);
}

/* Harness timers */
static void harness_cancel_r1(void* data)
{
    Fx* fx = data;
    if (!fx->rc1.freed) {
        futoin_cancel(fx->rc1.h);
    }
    fx->rc1.dead = 1;
}
static void harness_free_r1(void* data)
{
    Fx* fx = data;
    if (!fx->rc1.freed) {
        fx->rc1.dead = 1; /* the state cleanup under test runs inside */
        futoin_asyncsteps_free(fx->rc1.h);
        fx->rc1.freed = 1;
    }
}
static void harness_reject(void* data)
{
    Fx* fx = data;
    futoin_completion_reject(fx->comp, "Rej", "rejected");
}

/* ------------------------------------------------------------------------ */
/* Running one row                                                           */

static void row_name(const Row* r, char* buf, size_t len)
{
    snprintf(buf, len, "%s/%s/%s", kind_names[r->kind], call_names[r->call],
            target_names[r->target]);
}

static char g_last_msg[TXT];
static char g_last_info[TXT];

static int drive(Fx* fx)
{
    if (fx->row->call == C_LOOP_STOP) {
        int runs = 0;
        while (runs < 16) {
            futoin_loop_run(fx->loop);
            ++runs;
            if (futoin_loop_pending(fx->loop) == 0) {
                break;
            }
        }
        snprintf(fx->ret, sizeof(fx->ret), "runs=%d", runs);
        if (futoin_loop_pending(fx->loop) != 0) {
            return 0;
        }
    }
    for (int n = 0; n < RUN_BOUND; ++n) {
        if (futoin_loop_run_next(fx->loop) != 1) {
            return 1;
        }
    }
    return 0;
}

/* Runs one row; fills sig with the observed outcome; returns NULL when the
 * hard checks hold (cleanups, no late events, termination), else why not. */
static const char* run_row(const Row* r, char* sig, size_t sig_len, char* why, size_t why_len)
{
    Fx* fx = calloc(1, sizeof(Fx));
    fx->row = r;
    fx->loop = futoin_loop_new_virtual();
    futoin_set_misuse_handler(fx->loop, on_misuse, fx);
    fx->rc1.fx = fx->rc2.fx = fx->rc3.fx = fx;
    switch (r->kind) {
    case K_THROTTLE:
        fx->sync = futoin_throttle_new(fx->loop, 1, 10, FUTOIN_SYNC_UNLIMITED);
        break;
    case K_LIMITER: {
        FutoInLimiterOptions o;
        futoin_limiter_options_init(&o);
        o.max_queue = FUTOIN_SYNC_UNLIMITED;
        o.rate = 100;
        fx->sync = futoin_limiter_new(fx->loop, &o);
        break;
    }
    default:
        fx->sync = futoin_mutex_new(fx->loop, 1, FUTOIN_SYNC_UNLIMITED);
        break;
    }
    if (r->kind == K_MUTEX || r->kind == K_THROTTLE || r->kind == K_LIMITER) {
        fx->rc3.h = futoin_asyncsteps_new(fx->loop);
        futoin_add_sync(fx->rc3.h, fx->sync, holder_step, NULL, &fx->rc3);
        futoin_execute(fx->rc3.h, rec_unhandled, &fx->rc3);
    }
    if (r->kind == K_AWAIT_EH) {
        fx->comp = futoin_completion_new();
        futoin_loop_deferred(fx->loop, 5, fx, harness_reject);
    }
    fx->rc1.h = futoin_asyncsteps_new(fx->loop);
    fx->rc2.h = futoin_asyncsteps_new(fx->loop);
    if (r->kind == K_UNHANDLED) {
        futoin_add(fx->rc1.h, fail_step, NULL, &fx->rc1);
        futoin_add(fx->rc1.h, rec_after, NULL, &fx->rc1);
    } else {
        futoin_add(fx->rc1.h, outer1, rec_eh, &fx->rc1);
        futoin_add(fx->rc1.h, rec_after, NULL, &fx->rc1);
    }
    futoin_add(fx->rc2.h, wait_step, rec_eh, &fx->rc2);
    futoin_add(fx->rc2.h, rec_after, NULL, &fx->rc2);
    if (r->kind == K_CANCEL) {
        futoin_loop_deferred(fx->loop, 5, fx, harness_cancel_r1);
    }
    if (r->kind == K_STATE_CLEANUP) {
        futoin_loop_deferred(fx->loop, 100, fx, harness_free_r1);
    }
    fx->running = 1;
    /* R2 first: its step waits before any callback of R1 runs. */
    futoin_execute(fx->rc2.h, rec_unhandled, &fx->rc2);
    futoin_execute(fx->rc1.h, r->kind == K_UNHANDLED ? trig_unhandled : rec_unhandled, &fx->rc1);
    int terminated = drive(fx);
    fx->running = 0;

    /* Teardown (what a program would do at the end). */
    if (!fx->rc1.freed) {
        futoin_asyncsteps_free(fx->rc1.h);
    }
    if (!fx->rc2.freed) {
        futoin_asyncsteps_free(fx->rc2.h);
    }
    if (fx->rc3.h) {
        futoin_asyncsteps_free(fx->rc3.h);
    }
    futoin_completion_free(fx->comp);
    int sync_rc = fx->sync_freed ? FUTOIN_SYNC_OK : futoin_sync_free(fx->sync);
    futoin_loop_free(fx->loop);

    snprintf(sig, sig_len, "r1[%s] r2[%s] m%d%s%s%s", fx->rc1.log, fx->rc2.log, fx->misuse,
            fx->ret[0] ? " " : "", fx->ret, fx->trigger_again ? " again" : "");

    const char* err = NULL;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!err && !(cond)) {                                                                     \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
            err = why;                                                                             \
        }                                                                                          \
    } while (0)
    CHECK(terminated, "the run did not terminate within the bound");
    CHECK(fx->called, "the callback under test never made the call");
    CHECK(!fx->trigger_outside, "the callback under test ran after the run (teardown)");
    CHECK(!fx->target_gone, "the target root was gone before the call");
    CHECK(!fx->trigger_again, "the callback under test ran twice");
    CHECK(!strstr(fx->rc1.log, "LATE") && !strstr(fx->rc2.log, "LATE"),
            "a callback fired after cancel/free");
    CHECK(!strstr(fx->rc3.log, "unh"), "the sync holder failed: %s", fx->rc3.log);
    CHECK(sync_rc == FUTOIN_SYNC_OK, "the sync object was left busy");
    CHECK(fx->ntrk < NTRACK, "too many tracked objects");
    for (int i = 0; i < fx->ntrk; ++i) {
        CHECK(fx->trk[i].cleaned == 1, "tracked object %d (%s) cleaned up %d times", i,
                fx->trk[i].trigger ? "under test" : "made by the call", fx->trk[i].cleaned);
    }
    if (r->needle) {
        CHECK(strstr(fx->msg, r->needle) || strstr(fx->rc1.info, r->needle),
                "'%s' neither in the misuse message '%.200s' nor in error_info '%.200s'", r->needle,
                fx->msg, fx->rc1.info);
    }
#undef CHECK
    snprintf(g_last_msg, sizeof(g_last_msg), "%s", fx->msg);
    snprintf(g_last_info, sizeof(g_last_info), "%s", fx->rc1.info);
    free(fx);
    return err;
}

/* ------------------------------------------------------------------------ */
/* The table                                                                 */

#define R(k, c, t, exp, needle)                                                                    \
    {                                                                                              \
        k, c, t, exp, needle                                                                       \
    }

/* R2 untouched: its step times out (cancel handler, then its error handler). */
#define R2T "r2[ch eh:Timeout after]"

static const Row rows[] = {
    /* step */
    R(K_STEP, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_STEP, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_STEP, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_STEP, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_STEP, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STEP, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STEP, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STEP, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_STEP, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_STEP, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_STEP, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_STEP, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_STEP, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_STEP, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STEP, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STEP, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STEP, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_STEP, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_STEP, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_STEP, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* eh */
    R(K_EH, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_EH, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_EH, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_EH, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_EH, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_EH, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_EH, C_STATE, T_SAME, "r1[eh:Orig after] " R2T " m0 state=ptr", NULL),
    R(K_EH, C_STACK, T_SAME, "r1[eh:Orig after] " R2T " m0 stack=ptr", NULL),
    R(K_EH, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] " R2T " m0",
            "not allowed in an error handler"),
    R(K_EH, C_SUCCESS, T_OTHER, "r1[eh:Orig after] r2[after] m0", NULL),
    R(K_EH, C_ERROR, T_OTHER, "r1[eh:Orig after] r2[eh:ReErr after] m0", NULL),
    R(K_EH, C_ADD, T_OTHER, "r1[eh:Orig after] " R2T " m1", "add()"),
    R(K_EH, C_EXECUTE, T_OTHER, "r1[eh:Orig after] " R2T " m1", "execute()"),
    R(K_EH, C_CANCEL, T_OTHER, "r1[eh:Orig after] r2[ch] m0", NULL),
    R(K_EH, C_FREE, T_OTHER, "r1[eh:Orig after] r2[ch] m0", NULL),
    R(K_EH, C_STATE, T_OTHER, "r1[eh:Orig after] " R2T " m0 state=ptr", NULL),
    R(K_EH, C_STACK, T_OTHER, "r1[eh:Orig after] " R2T " m1 stack=null", "stack()"),
    R(K_EH, C_SET_TIMEOUT, T_OTHER, "r1[eh:Orig after] " R2T " m1", "setTimeout()"),
    R(K_EH, C_SYNC_FREE, T_SYNC, "r1[eh:Orig after] " R2T " m0 sync=OK", NULL),
    R(K_EH, C_LOOP_STOP, T_LOOP, "r1[eh:Orig after] " R2T " m0 runs=2", NULL),
    /* cancel */
    R(K_CANCEL, C_SUCCESS, T_SAME, "r1[ch] " R2T " m1", "success()"),
    R(K_CANCEL, C_ERROR, T_SAME, "r1[ch] " R2T " m1", "error(ReErr)"),
    R(K_CANCEL, C_ADD, T_SAME, "r1[ch] " R2T " m1", "add()"),
    R(K_CANCEL, C_EXECUTE, T_SAME, "r1[ch] " R2T " m1", "execute()"),
    R(K_CANCEL, C_CANCEL, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_CANCEL, C_FREE, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_CANCEL, C_STATE, T_SAME, "r1[ch] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL, C_STACK, T_SAME, "r1[ch] " R2T " m1 stack=null", "stack()"),
    R(K_CANCEL, C_SET_TIMEOUT, T_SAME, "r1[ch] " R2T " m1", "setTimeout()"),
    R(K_CANCEL, C_SUCCESS, T_OTHER, "r1[ch] r2[after] m0", NULL),
    R(K_CANCEL, C_ERROR, T_OTHER, "r1[ch] r2[eh:ReErr after] m0", NULL),
    R(K_CANCEL, C_ADD, T_OTHER, "r1[ch] " R2T " m1", "add()"),
    R(K_CANCEL, C_EXECUTE, T_OTHER, "r1[ch] " R2T " m1", "execute()"),
    R(K_CANCEL, C_CANCEL, T_OTHER, "r1[ch] r2[ch] m0", NULL),
    R(K_CANCEL, C_FREE, T_OTHER, "r1[ch] r2[ch] m0", NULL),
    R(K_CANCEL, C_STATE, T_OTHER, "r1[ch] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL, C_STACK, T_OTHER, "r1[ch] " R2T " m1 stack=null", "stack()"),
    R(K_CANCEL, C_SET_TIMEOUT, T_OTHER, "r1[ch] " R2T " m1", "setTimeout()"),
    R(K_CANCEL, C_SYNC_FREE, T_SYNC, "r1[ch] " R2T " m0 sync=OK", NULL),
    R(K_CANCEL, C_LOOP_STOP, T_LOOP, "r1[ch] " R2T " m0 runs=2", NULL),
    /* cancel_timeout */
    R(K_CANCEL_TIMEOUT, C_SUCCESS, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "success()"),
    R(K_CANCEL_TIMEOUT, C_ERROR, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "error(ReErr)"),
    R(K_CANCEL_TIMEOUT, C_ADD, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_CANCEL_TIMEOUT, C_EXECUTE, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_CANCEL_TIMEOUT, C_CANCEL, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_CANCEL_TIMEOUT, C_FREE, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_CANCEL_TIMEOUT, C_STATE, T_SAME, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL_TIMEOUT, C_STACK, T_SAME, "r1[ch eh:Timeout after] " R2T " m1 stack=null",
            "stack()"),
    R(K_CANCEL_TIMEOUT, C_SET_TIMEOUT, T_SAME, "r1[ch eh:Timeout after] " R2T " m1",
            "setTimeout()"),
    R(K_CANCEL_TIMEOUT, C_SUCCESS, T_OTHER, "r1[ch eh:Timeout after] r2[after] m0", NULL),
    R(K_CANCEL_TIMEOUT, C_ERROR, T_OTHER, "r1[ch eh:Timeout after] r2[eh:ReErr after] m0", NULL),
    R(K_CANCEL_TIMEOUT, C_ADD, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_CANCEL_TIMEOUT, C_EXECUTE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_CANCEL_TIMEOUT, C_CANCEL, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_CANCEL_TIMEOUT, C_FREE, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_CANCEL_TIMEOUT, C_STATE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL_TIMEOUT, C_STACK, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1 stack=null",
            "stack()"),
    R(K_CANCEL_TIMEOUT, C_SET_TIMEOUT, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1",
            "setTimeout()"),
    R(K_CANCEL_TIMEOUT, C_SYNC_FREE, T_SYNC, "r1[ch eh:Timeout after] " R2T " m0 sync=OK", NULL),
    R(K_CANCEL_TIMEOUT, C_LOOP_STOP, T_LOOP, "r1[ch eh:Timeout after] " R2T " m0 runs=2", NULL),
    /* cancel_sibling */
    R(K_CANCEL_SIBLING, C_SUCCESS, T_SAME, "r1[ch eh:Sib after] " R2T " m1", "success()"),
    R(K_CANCEL_SIBLING, C_ERROR, T_SAME, "r1[ch eh:Sib after] " R2T " m1", "error(ReErr)"),
    R(K_CANCEL_SIBLING, C_ADD, T_SAME, "r1[ch eh:Sib after] " R2T " m1", "add()"),
    R(K_CANCEL_SIBLING, C_EXECUTE, T_SAME, "r1[ch eh:Sib after] " R2T " m1", "execute()"),
    R(K_CANCEL_SIBLING, C_CANCEL, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_CANCEL_SIBLING, C_FREE, T_SAME, "r1[ch eh:Sib after] " R2T " m1",
            "free() on a parallel branch"),
    R(K_CANCEL_SIBLING, C_STATE, T_SAME, "r1[ch eh:Sib after] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL_SIBLING, C_STACK, T_SAME, "r1[ch eh:Sib after] " R2T " m1 stack=null", "stack()"),
    R(K_CANCEL_SIBLING, C_SET_TIMEOUT, T_SAME, "r1[ch eh:Sib after] " R2T " m1", "setTimeout()"),
    R(K_CANCEL_SIBLING, C_SUCCESS, T_OTHER, "r1[ch eh:Sib after] r2[after] m0", NULL),
    R(K_CANCEL_SIBLING, C_ERROR, T_OTHER, "r1[ch eh:Sib after] r2[eh:ReErr after] m0", NULL),
    R(K_CANCEL_SIBLING, C_ADD, T_OTHER, "r1[ch eh:Sib after] " R2T " m1", "add()"),
    R(K_CANCEL_SIBLING, C_EXECUTE, T_OTHER, "r1[ch eh:Sib after] " R2T " m1", "execute()"),
    R(K_CANCEL_SIBLING, C_CANCEL, T_OTHER, "r1[ch eh:Sib after] r2[ch] m0", NULL),
    R(K_CANCEL_SIBLING, C_FREE, T_OTHER, "r1[ch eh:Sib after] r2[ch] m0", NULL),
    R(K_CANCEL_SIBLING, C_STATE, T_OTHER, "r1[ch eh:Sib after] " R2T " m0 state=ptr", NULL),
    R(K_CANCEL_SIBLING, C_STACK, T_OTHER, "r1[ch eh:Sib after] " R2T " m1 stack=null", "stack()"),
    R(K_CANCEL_SIBLING, C_SET_TIMEOUT, T_OTHER, "r1[ch eh:Sib after] " R2T " m1", "setTimeout()"),
    R(K_CANCEL_SIBLING, C_SYNC_FREE, T_SYNC, "r1[ch eh:Sib after] " R2T " m0 sync=OK", NULL),
    R(K_CANCEL_SIBLING, C_LOOP_STOP, T_LOOP, "r1[ch eh:Sib after] " R2T " m0 runs=2", NULL),
    /* unhandled */
    R(K_UNHANDLED, C_SUCCESS, T_SAME, "r1[unh:Orig] " R2T " m1", "success()"),
    R(K_UNHANDLED, C_ERROR, T_SAME, "r1[unh:Orig] " R2T " m1", "error(ReErr)"),
    R(K_UNHANDLED, C_ADD, T_SAME, "r1[unh:Orig] " R2T " m1", "add()"),
    R(K_UNHANDLED, C_EXECUTE, T_SAME, "r1[unh:Orig] " R2T " m1", "execute()"),
    R(K_UNHANDLED, C_CANCEL, T_SAME, "r1[unh:Orig] " R2T " m0", NULL),
    R(K_UNHANDLED, C_FREE, T_SAME, "r1[unh:Orig] " R2T " m0", NULL),
    R(K_UNHANDLED, C_STATE, T_SAME, "r1[unh:Orig] " R2T " m0 state=ptr", NULL),
    R(K_UNHANDLED, C_STACK, T_SAME, "r1[unh:Orig] " R2T " m1 stack=null", "stack()"),
    R(K_UNHANDLED, C_SET_TIMEOUT, T_SAME, "r1[unh:Orig] " R2T " m1", "setTimeout()"),
    R(K_UNHANDLED, C_SUCCESS, T_OTHER, "r1[unh:Orig] r2[after] m0", NULL),
    R(K_UNHANDLED, C_ERROR, T_OTHER, "r1[unh:Orig] r2[eh:ReErr after] m0", NULL),
    R(K_UNHANDLED, C_ADD, T_OTHER, "r1[unh:Orig] " R2T " m1", "add()"),
    R(K_UNHANDLED, C_EXECUTE, T_OTHER, "r1[unh:Orig] " R2T " m1", "execute()"),
    R(K_UNHANDLED, C_CANCEL, T_OTHER, "r1[unh:Orig] r2[ch] m0", NULL),
    R(K_UNHANDLED, C_FREE, T_OTHER, "r1[unh:Orig] r2[ch] m0", NULL),
    R(K_UNHANDLED, C_STATE, T_OTHER, "r1[unh:Orig] " R2T " m0 state=ptr", NULL),
    R(K_UNHANDLED, C_STACK, T_OTHER, "r1[unh:Orig] " R2T " m1 stack=null", "stack()"),
    R(K_UNHANDLED, C_SET_TIMEOUT, T_OTHER, "r1[unh:Orig] " R2T " m1", "setTimeout()"),
    R(K_UNHANDLED, C_SYNC_FREE, T_SYNC, "r1[unh:Orig] " R2T " m0 sync=OK", NULL),
    R(K_UNHANDLED, C_LOOP_STOP, T_LOOP, "r1[unh:Orig] " R2T " m0 runs=2", NULL),
    /* value */
    R(K_VALUE, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_VALUE, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_VALUE, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_VALUE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_VALUE, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_VALUE, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_VALUE, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_VALUE, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_VALUE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_VALUE, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_VALUE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_VALUE, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_VALUE, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_VALUE, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_VALUE, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_VALUE, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_VALUE, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_VALUE, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_VALUE, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_VALUE, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* value_branch */
    R(K_VALUE_BRANCH, C_SUCCESS, T_SAME, "r1[after] " R2T " m1", "success()"),
    R(K_VALUE_BRANCH, C_ERROR, T_SAME, "r1[after] " R2T " m1", "error(ReErr)"),
    R(K_VALUE_BRANCH, C_ADD, T_SAME, "r1[after] " R2T " m1", "add()"),
    R(K_VALUE_BRANCH, C_EXECUTE, T_SAME, "r1[after] " R2T " m1", "execute()"),
    R(K_VALUE_BRANCH, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_VALUE_BRANCH, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_VALUE_BRANCH, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_VALUE_BRANCH, C_STACK, T_SAME, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_VALUE_BRANCH, C_SET_TIMEOUT, T_SAME, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_VALUE_BRANCH, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_VALUE_BRANCH, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_VALUE_BRANCH, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_VALUE_BRANCH, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_VALUE_BRANCH, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_VALUE_BRANCH, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_VALUE_BRANCH, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_VALUE_BRANCH, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_VALUE_BRANCH, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_VALUE_BRANCH, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_VALUE_BRANCH, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* stack */
    R(K_STACK, C_SUCCESS, T_SAME, "r1[after] " R2T " m1", "success()"),
    R(K_STACK, C_ERROR, T_SAME, "r1[after] " R2T " m1", "error(ReErr)"),
    R(K_STACK, C_ADD, T_SAME, "r1[after] " R2T " m1", "add()"),
    R(K_STACK, C_EXECUTE, T_SAME, "r1[after] " R2T " m1", "execute()"),
    R(K_STACK, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STACK, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STACK, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STACK, C_STACK, T_SAME, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_STACK, C_SET_TIMEOUT, T_SAME, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_STACK, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_STACK, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_STACK, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_STACK, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_STACK, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STACK, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STACK, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STACK, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_STACK, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_STACK, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_STACK, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* state_alloc */
    R(K_STATE_ALLOC, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_STATE_ALLOC, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STATE_ALLOC, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_STATE_ALLOC, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_STATE_ALLOC, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_STATE_ALLOC, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_STATE_ALLOC, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_STATE_ALLOC, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_STATE_ALLOC, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STATE_ALLOC, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STATE_ALLOC, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STATE_ALLOC, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_STATE_ALLOC, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_STATE_ALLOC, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_STATE_ALLOC, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* state_cleanup */
    R(K_STATE_CLEANUP, C_SUCCESS, T_SAME, "r1[after] " R2T " m1", "was freed"),
    R(K_STATE_CLEANUP, C_ERROR, T_SAME, "r1[after] " R2T " m1", "was freed"),
    R(K_STATE_CLEANUP, C_ADD, T_SAME, "r1[after] " R2T " m1", "was freed"),
    R(K_STATE_CLEANUP, C_EXECUTE, T_SAME, "r1[after] " R2T " m1", "execute()"),
    R(K_STATE_CLEANUP, C_CANCEL, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_STATE_CLEANUP, C_FREE, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_STATE_CLEANUP, C_STATE, T_SAME, "r1[after] " R2T " m1 state=null", "was freed"),
    R(K_STATE_CLEANUP, C_STACK, T_SAME, "r1[after] " R2T " m1 stack=null", "was freed"),
    R(K_STATE_CLEANUP, C_SET_TIMEOUT, T_SAME, "r1[after] " R2T " m1", "was freed"),
    R(K_STATE_CLEANUP, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_STATE_CLEANUP, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_STATE_CLEANUP, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_STATE_CLEANUP, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_STATE_CLEANUP, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STATE_CLEANUP, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_STATE_CLEANUP, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_STATE_CLEANUP, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_STATE_CLEANUP, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_STATE_CLEANUP, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=OK", NULL),
    R(K_STATE_CLEANUP, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* mutex */
    R(K_MUTEX, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_MUTEX, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_MUTEX, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_MUTEX, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_MUTEX, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_MUTEX, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_MUTEX, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_MUTEX, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_MUTEX, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_MUTEX, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_MUTEX, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_MUTEX, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_MUTEX, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_MUTEX, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_MUTEX, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_MUTEX, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_MUTEX, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_MUTEX, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_MUTEX, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=BUSY", NULL),
    R(K_MUTEX, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* throttle */
    R(K_THROTTLE, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_THROTTLE, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_THROTTLE, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_THROTTLE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_THROTTLE, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_THROTTLE, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_THROTTLE, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_THROTTLE, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_THROTTLE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_THROTTLE, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_THROTTLE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_THROTTLE, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_THROTTLE, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_THROTTLE, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_THROTTLE, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_THROTTLE, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_THROTTLE, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_THROTTLE, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_THROTTLE, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=BUSY", NULL),
    R(K_THROTTLE, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* limiter */
    R(K_LIMITER, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_LIMITER, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_LIMITER, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_LIMITER, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_LIMITER, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_LIMITER, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_LIMITER, C_STATE, T_SAME, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_LIMITER, C_STACK, T_SAME, "r1[after] " R2T " m0 stack=ptr", NULL),
    R(K_LIMITER, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] " R2T " m0", NULL),
    R(K_LIMITER, C_SUCCESS, T_OTHER, "r1[after] r2[after] m0", NULL),
    R(K_LIMITER, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] m0", NULL),
    R(K_LIMITER, C_ADD, T_OTHER, "r1[after] " R2T " m1", "add()"),
    R(K_LIMITER, C_EXECUTE, T_OTHER, "r1[after] " R2T " m1", "execute()"),
    R(K_LIMITER, C_CANCEL, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_LIMITER, C_FREE, T_OTHER, "r1[after] r2[ch] m0", NULL),
    R(K_LIMITER, C_STATE, T_OTHER, "r1[after] " R2T " m0 state=ptr", NULL),
    R(K_LIMITER, C_STACK, T_OTHER, "r1[after] " R2T " m1 stack=null", "stack()"),
    R(K_LIMITER, C_SET_TIMEOUT, T_OTHER, "r1[after] " R2T " m1", "setTimeout()"),
    R(K_LIMITER, C_SYNC_FREE, T_SYNC, "r1[after] " R2T " m0 sync=BUSY", NULL),
    R(K_LIMITER, C_LOOP_STOP, T_LOOP, "r1[after] " R2T " m0 runs=2", NULL),
    /* immediate */
    R(K_IMMEDIATE, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_IMMEDIATE, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_IMMEDIATE, C_ADD, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_IMMEDIATE, C_EXECUTE, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_IMMEDIATE, C_CANCEL, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_IMMEDIATE, C_FREE, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_IMMEDIATE, C_STATE, T_SAME, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_IMMEDIATE, C_STACK, T_SAME, "r1[ch eh:Timeout after] " R2T " m1 stack=null", "stack()"),
    R(K_IMMEDIATE, C_SET_TIMEOUT, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "setTimeout()"),
    R(K_IMMEDIATE, C_SUCCESS, T_OTHER, "r1[ch eh:Timeout after] r2[after] m0", NULL),
    R(K_IMMEDIATE, C_ERROR, T_OTHER, "r1[ch eh:Timeout after] r2[eh:ReErr after] m0", NULL),
    R(K_IMMEDIATE, C_ADD, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_IMMEDIATE, C_EXECUTE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_IMMEDIATE, C_CANCEL, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_IMMEDIATE, C_FREE, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_IMMEDIATE, C_STATE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_IMMEDIATE, C_STACK, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1 stack=null", "stack()"),
    R(K_IMMEDIATE, C_SET_TIMEOUT, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "setTimeout()"),
    R(K_IMMEDIATE, C_SYNC_FREE, T_SYNC, "r1[ch eh:Timeout after] " R2T " m0 sync=OK", NULL),
    R(K_IMMEDIATE, C_LOOP_STOP, T_LOOP, "r1[ch eh:Timeout after] " R2T " m0 runs=2", NULL),
    /* deferred */
    R(K_DEFERRED, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_DEFERRED, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_DEFERRED, C_ADD, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_DEFERRED, C_EXECUTE, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_DEFERRED, C_CANCEL, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_DEFERRED, C_FREE, T_SAME, "r1[ch] " R2T " m0", NULL),
    R(K_DEFERRED, C_STATE, T_SAME, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_DEFERRED, C_STACK, T_SAME, "r1[ch eh:Timeout after] " R2T " m1 stack=null", "stack()"),
    R(K_DEFERRED, C_SET_TIMEOUT, T_SAME, "r1[ch eh:Timeout after] " R2T " m1", "setTimeout()"),
    R(K_DEFERRED, C_SUCCESS, T_OTHER, "r1[ch eh:Timeout after] r2[after] m0", NULL),
    R(K_DEFERRED, C_ERROR, T_OTHER, "r1[ch eh:Timeout after] r2[eh:ReErr after] m0", NULL),
    R(K_DEFERRED, C_ADD, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "add()"),
    R(K_DEFERRED, C_EXECUTE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "execute()"),
    R(K_DEFERRED, C_CANCEL, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_DEFERRED, C_FREE, T_OTHER, "r1[ch eh:Timeout after] r2[ch] m0", NULL),
    R(K_DEFERRED, C_STATE, T_OTHER, "r1[ch eh:Timeout after] " R2T " m0 state=ptr", NULL),
    R(K_DEFERRED, C_STACK, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1 stack=null", "stack()"),
    R(K_DEFERRED, C_SET_TIMEOUT, T_OTHER, "r1[ch eh:Timeout after] " R2T " m1", "setTimeout()"),
    R(K_DEFERRED, C_SYNC_FREE, T_SYNC, "r1[ch eh:Timeout after] " R2T " m0 sync=OK", NULL),
    R(K_DEFERRED, C_LOOP_STOP, T_LOOP, "r1[ch eh:Timeout after] " R2T " m0 runs=2", NULL),
    /* await_eh */
    R(K_AWAIT_EH, C_SUCCESS, T_SAME, "r1[after] " R2T " m0", NULL),
    R(K_AWAIT_EH, C_ERROR, T_SAME, "r1[eh:ReErr after] " R2T " m0", NULL),
    R(K_AWAIT_EH, C_ADD, T_SAME, "r1[added after] " R2T " m0", NULL),
    R(K_AWAIT_EH, C_EXECUTE, T_SAME, "r1[eh:InternalError after] " R2T " m0", "execute()"),
    R(K_AWAIT_EH, C_CANCEL, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_AWAIT_EH, C_FREE, T_SAME, "r1[] " R2T " m0", NULL),
    R(K_AWAIT_EH, C_STATE, T_SAME, "r1[eh:Rej after] " R2T " m0 state=ptr", NULL),
    R(K_AWAIT_EH, C_STACK, T_SAME, "r1[eh:Rej after] " R2T " m0 stack=ptr", NULL),
    R(K_AWAIT_EH, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] " R2T " m0",
            "not allowed in an error handler"),
    R(K_AWAIT_EH, C_SUCCESS, T_OTHER, "r1[eh:Rej after] r2[after] m0", NULL),
    R(K_AWAIT_EH, C_ERROR, T_OTHER, "r1[eh:Rej after] r2[eh:ReErr after] m0", NULL),
    R(K_AWAIT_EH, C_ADD, T_OTHER, "r1[eh:Rej after] " R2T " m1", "add()"),
    R(K_AWAIT_EH, C_EXECUTE, T_OTHER, "r1[eh:Rej after] " R2T " m1", "execute()"),
    R(K_AWAIT_EH, C_CANCEL, T_OTHER, "r1[eh:Rej after] r2[ch] m0", NULL),
    R(K_AWAIT_EH, C_FREE, T_OTHER, "r1[eh:Rej after] r2[ch] m0", NULL),
    R(K_AWAIT_EH, C_STATE, T_OTHER, "r1[eh:Rej after] " R2T " m0 state=ptr", NULL),
    R(K_AWAIT_EH, C_STACK, T_OTHER, "r1[eh:Rej after] " R2T " m1 stack=null", "stack()"),
    R(K_AWAIT_EH, C_SET_TIMEOUT, T_OTHER, "r1[eh:Rej after] " R2T " m1", "setTimeout()"),
    R(K_AWAIT_EH, C_SYNC_FREE, T_SYNC, "r1[eh:Rej after] " R2T " m0 sync=OK", NULL),
    R(K_AWAIT_EH, C_LOOP_STOP, T_LOOP, "r1[eh:Rej after] " R2T " m0 runs=2", NULL),
};

static void test_matrix(void** state)
{
    (void)state;
    const char* only = getenv("REENTRY_ONLY");
    const char* dump = getenv("REENTRY_DUMP");
    const char* exact = getenv("REENTRY_EXACT");
    const char* trace = getenv("REENTRY_TRACE");
    int failures = 0;
    int ran = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); ++i) {
        const Row* r = &rows[i];
        char name[96];
        row_name(r, name, sizeof(name));
        if (only && *only && !strstr(name, only)) {
            continue;
        }
        if (exact && *exact && strcmp(name, exact) != 0) {
            continue;
        }
        char sig[1024];
        char why[2560];
        if (trace && *trace) {
            fprintf(stderr, "ROW %s\n", name); /* names the row a crash is in */
        }
        const char* err = run_row(r, sig, sizeof(sig), why, sizeof(why));
        ++ran;
        if (dump && *dump) {
            printf("DUMP|%s|%s|%s|msg=%s|info=%s\n", name, sig, err ? err : "", g_last_msg,
                    g_last_info);
        }
        if (!err && strcmp(sig, r->expect) != 0) {
            snprintf(why, sizeof(why), "observed '%s', documented '%s'", sig, r->expect);
            err = why;
        }
        if (err) {
            ++failures;
            fprintf(stderr, "FAIL %-36s %s\n", name, err);
        }
    }
    printf("re-entry matrix: %d rows, %d failed\n", ran, failures);
    assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------------------ */
/* Two cells outside the table                                               */

/* stack() of a size that cannot be had, called from a step: NULL, no
 * cleanup registered, the step goes on (asyncsteps.h; it once returned a
 * tiny block because the size overflowed when rounded up). */
typedef struct StackMax {
    int step_ran;
    int got_block[3];
} StackMax;

static int g_stack_max_cleanups;

static void stack_max_cleanup(void* block)
{
    (void)block;
    ++g_stack_max_cleanups;
}

static void stack_max_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    StackMax* s = data;
    const size_t sizes[3] = { SIZE_MAX, SIZE_MAX - 7, SIZE_MAX / 2 + 1 };
    ++s->step_ran;
    for (int i = 0; i < 3; ++i) {
        s->got_block[i] = futoin_stack(as, sizes[i], stack_max_cleanup) != NULL;
    }
}

static void test_stack_size_max(void** state)
{
    (void)state;
    StackMax s;
    memset(&s, 0, sizeof(s));
    g_stack_max_cleanups = 0;
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, stack_max_step, NULL, &s);
    futoin_execute(root, NULL, NULL);
    int n = 0;
    while (n < RUN_BOUND && futoin_loop_run_next(loop) == 1) {
        ++n;
    }
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    assert_true(n < RUN_BOUND);
    assert_int_equal(s.step_ran, 1);
    assert_int_equal(s.got_block[0], 0);
    assert_int_equal(s.got_block[1], 0);
    assert_int_equal(s.got_block[2], 0);
    assert_int_equal(g_stack_max_cleanups, 0);
}

/* A cancel handler per level of 100,000 levels of parallel() nested in one
 * another (each level a step whose single branch is the next level), then a
 * root cancel: it terminates (it once recursed per level and overflowed the
 * C stack), every level's cancel handler runs exactly once, nothing runs
 * afterwards.
 * REENTRY_DEEP_LEVELS overrides the depth (e.g. 20000 under valgrind). */
typedef struct Deep {
    FutoInAsyncSteps* root;
    long levels;
    long started;
    long cancels;
    long late;
    int cancelled;
} Deep;

static void deep_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Deep* d = data;
    if (d->cancelled) {
        ++d->late;
    }
    ++d->cancels;
}

static void deep_level(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Deep* d = data;
    if (d->cancelled) {
        ++d->late;
    }
    ++d->started;
    futoin_set_cancel(as, deep_cancel, d);
    if (d->started < d->levels) {
        FutoInAsyncSteps* p = futoin_parallel(as, NULL, d);
        p->api->add(p, d, deep_level, NULL);
    }
}

static void deep_cancel_root(void* data)
{
    Deep* d = data;
    futoin_cancel(d->root);
    d->cancelled = 1;
}

static void test_deep_parallel_cancel(void** state)
{
    (void)state;
    Deep d;
    memset(&d, 0, sizeof(d));
    const char* env = getenv("REENTRY_DEEP_LEVELS");
    d.levels = env && *env ? atol(env) : 100000;
    FutoInLoop* loop = futoin_loop_new_virtual();
    d.root = futoin_asyncsteps_new(loop);
    futoin_add(d.root, deep_level, NULL, &d);
    futoin_execute(d.root, NULL, NULL);
    /* the cancel fires once every level waits */
    futoin_loop_deferred(loop, 10, &d, deep_cancel_root);
    long n = 0;
    while (n < 100L * d.levels + RUN_BOUND && futoin_loop_run_next(loop) == 1) {
        ++n;
    }
    futoin_asyncsteps_free(d.root);
    futoin_loop_free(loop);
    assert_true(n < 100L * d.levels + RUN_BOUND);
    assert_int_equal(d.started, d.levels);
    assert_int_equal(d.cancels, d.levels);
    assert_int_equal(d.late, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_stack_size_max),
        cmocka_unit_test(test_deep_parallel_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
