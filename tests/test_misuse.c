/* SPDX-License-Identifier: MIT */
/* API misuse (docs/SEMANTICS.md, "Misuse"): inside a step or an error
 * handler a mistake fails that step with InternalError and an error_info
 * naming the mistake; where no step of the flow is running the call is
 * ignored and reported to the loop's misuse handler. After each misuse the
 * rest of the flow must behave as documented, and nothing may crash, hang
 * or leak.
 *
 * Callbacks never assert (a failing assertion would longjmp through the
 * engine): they record what happened and the test body checks it.
 *
 * MISUSE_ONLY=name in the environment runs only that test (or, if no test has
 * that exact name, the tests whose names contain it). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>

/* ------------------------------------------------------------------------ */
/* Fixture                                                                   */

#define MSG_MAX 16
#define TXT 256
#define ORDER_MAX 32

typedef struct T {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    FutoInAsyncSteps* model; /* second root of some tests */
    FutoInCompletion* c;

    /* misuse handler */
    int misuse_count;
    char misuse_msg[MSG_MAX][TXT];
    FutoInAsyncSteps* misuse_as;

    /* the scenario run by run_scenario() */
    FutoInAsyncSteps_execute_callback body;
    FutoInAsyncSteps_error_callback body_eh;
    int outer_recover;

    /* what happened */
    int body_calls;
    int inner_eh_calls;
    char inner_code[64];
    char inner_info[TXT];
    int outer_eh_calls;
    char outer_code[64];
    char outer_info[TXT];
    int par_eh_calls;
    char par_code[64];
    char par_info[TXT];
    int await_eh_calls;
    char await_code[64];
    char await_info[TXT];
    int unhandled_calls;
    char unhandled_code[64];
    int never_calls; /* steps, handlers and callbacks that must not run */
    int after_calls;
    int after_nargs;
    uint64_t after_time;
    int cancel_calls;
    int cancel2_calls;
    int lock_calls;
    int alloc_calls;
    int var_cleanup_calls;
    int iterations;
    int flag;   /* scenario-specific: a check computed inside a callback, or a choice made by the test */
    int result; /* scenario-specific value */
    FutoInAsyncSteps* saved;
    FutoInAsyncSteps* saved2;

    /* order of notable events */
    char order[ORDER_MAX];
    int norder;
} T;

static void note(T* t, char c)
{
    if (t->norder < ORDER_MAX - 1) {
        t->order[t->norder++] = c;
        t->order[t->norder] = '\0';
    }
}

static void copy_str(char* dst, size_t n, const char* s)
{
    snprintf(dst, n, "%s", s ? s : "(null)");
}

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    T* t = data;
    if (t->misuse_count < MSG_MAX) {
        copy_str(t->misuse_msg[t->misuse_count], TXT, info);
    }
    t->misuse_as = as;
    ++t->misuse_count;
}

static int setup(void** state)
{
    T* t = calloc(1, sizeof(T));
    assert_non_null(t);
    t->loop = futoin_loop_new_virtual();
    assert_non_null(t->loop);
    futoin_set_misuse_handler(t->loop, on_misuse, t);
    t->root = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->root);
    *state = t;
    return 0;
}

static int teardown(void** state)
{
    T* t = *state;
    if (t->c) {
        futoin_completion_free(t->c);
    }
    if (t->model) {
        futoin_asyncsteps_free(t->model);
    }
    if (t->root) {
        futoin_asyncsteps_free(t->root);
    }
    futoin_loop_free(t->loop);
    free(t);
    return 0;
}

/* Runs the loop until it is empty; a runaway loop is a failure (hang). */
static void run_loop(T* t)
{
    int n = 0;
    while (futoin_loop_run_next(t->loop)) {
        if (++n > 100000) {
            fail_msg("the loop does not drain (hang)");
        }
    }
    assert_int_equal(futoin_loop_pending(t->loop), 0);
}

#define assert_contains(hay, needle)                                                    \
    do {                                                                                \
        const char* hay_ = (hay);                                                       \
        if (!hay_ || !strstr(hay_, (needle))) {                                         \
            fail_msg("'%s' does not contain '%s'", hay_ ? hay_ : "(null)", (needle));   \
        }                                                                               \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Common callbacks                                                          */

static void rec_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    T* t = data;
    ++t->unhandled_calls;
    copy_str(t->unhandled_code, sizeof(t->unhandled_code), code);
    note(t, 'U');
}

static void never_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++((T*)data)->never_calls;
}

static void never_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++((T*)data)->never_calls;
}

static void never_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++((T*)data)->never_calls;
}

static void never_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((T*)data)->never_calls;
}

static void never_loop_body(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((T*)data)->never_calls;
}

static void never_cb(void* data)
{
    ++((T*)data)->never_calls;
}

static void noop_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
}

static void after_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    T* t = data;
    ++t->after_calls;
    t->after_nargs = futoin_args_count(args);
    t->after_time = futoin_loop_now(futoin_asyncsteps_loop(as));
    note(t, 'A');
}

static void count_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    T* t = data;
    ++t->cancel_calls;
    note(t, 'C');
}

static void count_cancel2(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    T* t = data;
    ++t->cancel2_calls;
    note(t, 'O');
}

/* A step waiting for an external event (cancel handler counts). */
static void waiting_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    t->saved = as;
    futoin_set_cancel(as, count_cancel, t);
    futoin_wait_external(as);
}

static void* var_alloc(void* data)
{
    T* t = data;
    ++t->alloc_calls;
    return malloc(16);
}

static void var_cleanup(void* data, void* value)
{
    T* t = data;
    ++t->var_cleanup_calls;
    free(value);
}

/* A sync object whose lock() and unlock() only count. */
typedef struct DummySync {
    FutoInSync base;
    T* t;
} DummySync;

static void dummy_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    ++((DummySync*)sync)->t->lock_calls;
}

static void dummy_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    (void)sync;
}

static const FutoInSyncAPI dummy_sync_api = { .lock = dummy_lock, .unlock = dummy_unlock };

/* ------------------------------------------------------------------------ */
/* The standard scenario:                                                    */
/*   root: [outer (outer_eh)] [after]                                         */
/*   outer: [body (body_eh or inner_eh)] [never]                              */
/* body misuses; the InternalError must reach inner_eh, then outer_eh, then   */
/* unhandled_error (unless outer_recover: then "after" runs).                 */

static void inner_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    copy_str(t->inner_info, sizeof(t->inner_info), futoin_error_info(as));
    note(t, 'I');
}

static void outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->outer_eh_calls;
    copy_str(t->outer_code, sizeof(t->outer_code), code);
    copy_str(t->outer_info, sizeof(t->outer_info), futoin_error_info(as));
    note(t, 'E');
    if (t->outer_recover) {
        futoin_success(as);
    }
}

static void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_add(as, t->body, t->body_eh ? t->body_eh : inner_eh, t);
    futoin_add(as, never_step, NULL, t);
}

static void run_scenario(T* t, FutoInAsyncSteps_execute_callback body,
        FutoInAsyncSteps_error_callback body_eh)
{
    t->body = body;
    t->body_eh = body_eh;
    futoin_add(t->root, outer_step, outer_eh, t);
    futoin_add(t->root, after_step, NULL, t);
    futoin_execute(t->root, rec_unhandled, t);
    run_loop(t);
}

/* The outer part of the flow after an InternalError with info naming what. */
static void assert_outer_internal_error(T* t, const char* what)
{
    assert_int_equal(t->outer_eh_calls, 1);
    assert_string_equal(t->outer_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->outer_info, what);
    assert_int_equal(t->never_calls, 0);
    if (t->outer_recover) {
        assert_int_equal(t->after_calls, 1);
        assert_int_equal(t->unhandled_calls, 0);
    } else {
        assert_int_equal(t->after_calls, 0);
        assert_int_equal(t->unhandled_calls, 1);
        assert_string_equal(t->unhandled_code, FUTOIN_INTERNAL_ERROR);
    }
    assert_int_equal(t->misuse_count, 0);
    assert_int_equal(futoin_loop_pending(t->loop), 0);
}

/* The body's own error handler saw the InternalError, then the outer one. */
static void assert_step_internal_error(T* t, const char* what)
{
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->inner_eh_calls, 1);
    assert_string_equal(t->inner_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->inner_info, what);
    assert_outer_internal_error(t, what);
}

/* ------------------------------------------------------------------------ */
/* success / error / add misuse inside a step                                */

static void body_success_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_success1(as, futoin_val_strdup("first"));
    futoin_success1(as, futoin_val_strdup("second")); /* both must be released */
}

static void test_success_twice(void** state)
{
    T* t = *state;
    run_scenario(t, body_success_twice, NULL);
    assert_step_internal_error(t, "twice");
}

static void body_error_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_error(as, "FirstError", "first");
    futoin_error(as, "SecondError", "second");
}

static void test_error_twice(void** state)
{
    T* t = *state;
    run_scenario(t, body_error_twice, NULL);
    assert_step_internal_error(t, "twice");
}

static void body_success_after_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_error(as, "SomeError", "x");
    futoin_success1(as, futoin_val_strdup("late"));
}

static void test_success_after_error(void** state)
{
    T* t = *state;
    run_scenario(t, body_success_after_error, NULL);
    assert_step_internal_error(t, "after error");
}

static void body_error_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_success1(as, futoin_val_strdup("result"));
    futoin_error(as, "SomeError", "x");
}

static void test_error_after_success(void** state)
{
    T* t = *state;
    run_scenario(t, body_error_after_success, NULL);
    assert_step_internal_error(t, "after success");
}

static void body_success_after_add(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_add(as, never_step, never_eh, t);
    futoin_success1(as, futoin_val_strdup("result"));
}

static void test_success_after_add(void** state)
{
    T* t = *state;
    run_scenario(t, body_success_after_add, NULL);
    assert_step_internal_error(t, "after add");
}

static void body_add_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_success(as);
    futoin_add(as, never_step, never_eh, t);
}

static void test_add_after_success(void** state)
{
    T* t = *state;
    run_scenario(t, body_add_after_success, NULL);
    assert_step_internal_error(t, "after success");
}

static void body_add_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    as->api->add(as, t, NULL, never_eh);
}

static void test_add_null_callback(void** state)
{
    T* t = *state;
    t->outer_recover = 1; /* recovery in the outer handler lets the flow go on */
    run_scenario(t, body_add_null, NULL);
    assert_step_internal_error(t, "NULL");
}

/* parallel() after success(): an inert interface whose calls do nothing. */
static void body_parallel_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_success(as);
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    int ok = p != NULL && p != as;
    if (ok) {
        DummySync ds = {{&dummy_sync_api}, t};
        p->api->add(p, t, never_step, never_eh);
        p->api->loop(p, t, never_loop_body, NULL);
        p->api->addSync(p, &ds.base, t, never_step, never_eh);
        FutoInAsyncSteps* pp = p->api->parallel(p, t, never_eh);
        ok = ok && pp != NULL;
        if (pp) {
            pp->api->add(pp, t, never_step, never_eh);
        }
        futoin_success1(p, futoin_val_strdup("dropped")); /* must be released */
        p->api->handle_error(p, "X", "y");
        p->api->setTimeout(p, 5);
        p->api->setCancel(p, t, never_cancel);
        p->api->waitExternal(p);
        p->api->breakLoop(p, NULL);
        p->api->continueLoop(p, NULL);
        p->api->execute(p, t, never_unhandled);
        p->api->cancel(p);
        p->api->free(p);
        ok = ok && p->api->stateVariable(p, t, "v", var_alloc, var_cleanup) == NULL;
        ok = ok && p->api->stack(p, 16, NULL) == NULL;
        ok = ok && p->api->isValid(p) == 0;
        FutoInHandle h = p->api->sched_immediate(p, t, never_cb);
        ok = ok && p->api->sched_is_valid(p, &h) == 0;
        h = p->api->sched_deferred(p, 1, t, never_cb);
        p->api->sched_cancel(p, &h);
    }
    t->flag = ok;
}

static void test_parallel_after_success_inert(void** state)
{
    T* t = *state;
    run_scenario(t, body_parallel_after_success, NULL);
    assert_true(t->flag);
    assert_int_equal(t->alloc_calls, 0);
    assert_int_equal(t->lock_calls, 0);
    assert_step_internal_error(t, "after success");
}

static void body_error_null_code(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    as->api->handle_error(as, NULL, "no code");
}

static void test_error_null_code(void** state)
{
    T* t = *state;
    run_scenario(t, body_error_null_code, NULL);
    assert_step_internal_error(t, "NULL");
}

/* ------------------------------------------------------------------------ */
/* setTimeout / setCancel / waitExternal in an error handler                 */

static void body_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_error(as, "FirstError", "first");
}

static void record_first(T* t, FutoInAsyncSteps* as, const char* code)
{
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    copy_str(t->inner_info, sizeof(t->inner_info), futoin_error_info(as));
}

static void eh_set_timeout(FutoInAsyncSteps* as, void* data, const char* code)
{
    record_first(data, as, code);
    futoin_set_timeout(as, 10);
}

static void eh_set_cancel(FutoInAsyncSteps* as, void* data, const char* code)
{
    record_first(data, as, code);
    futoin_set_cancel(as, never_cancel, data);
}

static void eh_wait_external(FutoInAsyncSteps* as, void* data, const char* code)
{
    record_first(data, as, code);
    futoin_wait_external(as);
}

static void check_eh_misuse(T* t, const char* what)
{
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->inner_eh_calls, 1);
    assert_string_equal(t->inner_code, "FirstError");
    assert_string_equal(t->inner_info, "first");
    assert_outer_internal_error(t, "error handler");
    assert_contains(t->outer_info, what);
    /* nothing waited: no timer fired, the clock never moved */
    assert_int_equal(futoin_loop_now(t->loop), 0);
}

static void test_set_timeout_in_error_handler(void** state)
{
    T* t = *state;
    run_scenario(t, body_fail, eh_set_timeout);
    check_eh_misuse(t, "setTimeout");
}

static void test_set_cancel_in_error_handler(void** state)
{
    T* t = *state;
    run_scenario(t, body_fail, eh_set_cancel);
    check_eh_misuse(t, "setCancel");
}

static void test_wait_external_in_error_handler(void** state)
{
    T* t = *state;
    run_scenario(t, body_fail, eh_wait_external);
    check_eh_misuse(t, "waitExternal");
}

static void body_set_cancel_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    as->api->setCancel(as, data, NULL);
}

static void test_set_cancel_null(void** state)
{
    T* t = *state;
    run_scenario(t, body_set_cancel_null, NULL);
    assert_step_internal_error(t, "NULL");
}

/* ------------------------------------------------------------------------ */
/* Loops                                                                     */

static void body_loop_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    as->api->loop(as, data, NULL, "L");
}

static void test_loop_null_body(void** state)
{
    T* t = *state;
    run_scenario(t, body_loop_null, NULL);
    assert_step_internal_error(t, "NULL");
}

static void body_repeat_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    as->api->repeat(as, data, 3, NULL, NULL);
}

static void test_repeat_null_body(void** state)
{
    T* t = *state;
    run_scenario(t, body_repeat_null, NULL);
    assert_step_internal_error(t, "NULL");
}

static void body_break_outside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_break(as, NULL);
}

static void test_break_outside_loop(void** state)
{
    T* t = *state;
    run_scenario(t, body_break_outside, NULL);
    assert_step_internal_error(t, "outside of a loop");
}

static void body_continue_outside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_continue(as, NULL);
}

static void test_continue_outside_loop(void** state)
{
    T* t = *state;
    run_scenario(t, body_continue_outside, NULL);
    assert_step_internal_error(t, "outside of a loop");
}

static void loop_break_unknown(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->iterations;
    futoin_break(as, "NoSuchLoop");
}

static void loop_continue_unknown(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->iterations;
    futoin_continue(as, "NoSuchLoop");
}

static void body_break_unknown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_loop(as, loop_break_unknown, data, "Known");
}

static void body_continue_unknown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_loop(as, loop_continue_unknown, data, "Known");
}

static void test_break_unknown_label(void** state)
{
    T* t = *state;
    run_scenario(t, body_break_unknown, NULL);
    assert_int_equal(t->iterations, 1); /* the error ends the loop */
    assert_step_internal_error(t, "labelled");
    assert_contains(t->inner_info, "NoSuchLoop");
}

static void test_continue_unknown_label(void** state)
{
    T* t = *state;
    run_scenario(t, body_continue_unknown, NULL);
    assert_int_equal(t->iterations, 1);
    assert_step_internal_error(t, "labelled");
    assert_contains(t->inner_info, "NoSuchLoop");
}

/* ------------------------------------------------------------------------ */
/* execute / free in the wrong place                                         */

static void final_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->after_calls;
    futoin_error(as, "FinalError", "end");
}

static void ext_execute_and_complete(void* data)
{
    T* t = data;
    futoin_execute(t->root, never_unhandled, t); /* running root: misuse */
    futoin_success(t->saved);
}

static void test_execute_twice_from_outside(void** state)
{
    T* t = *state;
    futoin_add(t->root, waiting_step, NULL, t);
    futoin_add(t->root, final_step, NULL, t);
    futoin_execute(t->root, rec_unhandled, t);
    futoin_execute(t->root, never_unhandled, t); /* queued, not started yet */
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "already running");
    assert_ptr_equal(t->misuse_as, t->root);
    futoin_loop_deferred(t->loop, 5, t, ext_execute_and_complete);
    run_loop(t);
    assert_int_equal(t->misuse_count, 2);
    assert_contains(t->misuse_msg[1], "already running");
    /* the steps ran once; the first execute's unhandled_error got the error */
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->cancel_calls, 0);
    assert_int_equal(t->unhandled_calls, 1);
    assert_string_equal(t->unhandled_code, "FinalError");
    assert_int_equal(t->never_calls, 0);
}

static void body_execute_self(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((T*)data)->body_calls;
    futoin_execute(as, never_unhandled, data);
}

static void test_execute_twice_from_own_step(void** state)
{
    T* t = *state;
    run_scenario(t, body_execute_self, NULL);
    assert_step_internal_error(t, "already running");
}

static void rec_par_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->par_eh_calls;
    copy_str(t->par_code, sizeof(t->par_code), code);
    copy_str(t->par_info, sizeof(t->par_info), futoin_error_info(as));
    note(t, 'P');
}

static void branch_execute(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_execute(as, never_unhandled, data);
}

static void branch_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    futoin_asyncsteps_free(as);
}

/* body: a parallel step with a waiting branch and the misusing branch. */
static FutoInAsyncSteps_execute_callback g_branch_fn;

static void body_parallel_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, rec_par_eh, t);
    p->api->add(p, t, waiting_step, never_eh);
    p->api->add(p, t, g_branch_fn, NULL);
}

static void check_branch_misuse(T* t, const char* what)
{
    assert_int_equal(t->par_eh_calls, 1);
    assert_string_equal(t->par_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->par_info, what);
    assert_int_equal(t->cancel_calls, 1); /* the waiting sibling was cancelled */
    assert_step_internal_error(t, what);
}

static void test_execute_on_branch(void** state)
{
    T* t = *state;
    g_branch_fn = branch_execute;
    run_scenario(t, body_parallel_branch, NULL);
    check_branch_misuse(t, "parallel branch");
}

static void test_free_on_branch(void** state)
{
    T* t = *state;
    g_branch_fn = branch_free;
    run_scenario(t, body_parallel_branch, NULL);
    check_branch_misuse(t, "parallel branch");
    assert_true(futoin_is_valid(t->root));
}

/* The interface parallel() returns is not a flow: execute()/free() on it. */
static void body_execute_on_par_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, never_step, never_eh);
    p->api->execute(p, t, never_unhandled);
}

static void body_free_on_par_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, never_step, never_eh);
    p->api->free(p);
}

static void test_execute_on_parallel_iface(void** state)
{
    T* t = *state;
    run_scenario(t, body_execute_on_par_iface, NULL);
    assert_step_internal_error(t, "parallel");
    assert_contains(t->inner_info, "execute");
}

static void test_free_on_parallel_iface(void** state)
{
    T* t = *state;
    run_scenario(t, body_free_on_par_iface, NULL);
    assert_step_internal_error(t, "parallel");
    assert_contains(t->inner_info, "free");
    assert_true(futoin_is_valid(t->root));
}

/* ------------------------------------------------------------------------ */
/* success()/error() from outside on a step that is not waiting              */

static void result_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    t->saved = as;
    futoin_success1(as, futoin_val_i32(7));
}

static void test_late_success_after_completion(void** state)
{
    T* t = *state;
    futoin_add(t->root, result_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->body_calls, 1);
    assert_ptr_equal(t->saved, t->root);

    futoin_success1(t->saved, futoin_val_strdup("late")); /* value must be released */
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "success");
    assert_contains(t->misuse_msg[0], "not waiting");
    assert_ptr_equal(t->misuse_as, t->root);
    futoin_error(t->saved, "LateError", "late");
    assert_int_equal(t->misuse_count, 2);
    assert_contains(t->misuse_msg[1], "LateError");
    assert_contains(t->misuse_msg[1], "not waiting");

    run_loop(t);
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->never_calls, 0);
    assert_int_equal(t->unhandled_calls, 0);
}

/* A waiting step completed from outside twice in the same loop callback:
 * the flow is queued (no longer waiting) when the second call comes. */
static void ext_complete_twice(void* data)
{
    T* t = data;
    futoin_success1(t->saved, futoin_val_strdup("first"));
    futoin_success1(t->saved, futoin_val_strdup("second")); /* must be released */
    futoin_error(t->saved, "LateError", "late");
}

static void check_first_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    T* t = data;
    const char* s = futoin_arg_cstr(args, 0, NULL);
    t->flag = futoin_args_count(args) == 1 && s && strcmp(s, "first") == 0;
    after_step(as, data, args);
}

static void test_external_complete_twice(void** state)
{
    T* t = *state;
    futoin_add(t->root, waiting_step, never_eh, t);
    futoin_add(t->root, check_first_arg, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    futoin_loop_deferred(t->loop, 5, t, ext_complete_twice);
    run_loop(t);
    assert_int_equal(t->misuse_count, 2);
    assert_contains(t->misuse_msg[0], "success");
    assert_contains(t->misuse_msg[0], "not waiting");
    assert_contains(t->misuse_msg[1], "LateError");
    assert_contains(t->misuse_msg[1], "not waiting");
    /* the first completion stands: the next step got its value, once */
    assert_int_equal(t->after_calls, 1);
    assert_true(t->flag);
    assert_int_equal(t->cancel_calls, 0);
    assert_int_equal(t->never_calls, 0);
}

/* step1 times out at t=10 and its handler recovers; step2 is a parallel
 * step whose branch completes at t=40; a late success()/error() for step1
 * arrives at t=20, while the flow is not waiting on a step of its own. */
static int g_late_error;

static void late_complete(void* data)
{
    T* t = data;
    if (g_late_error) {
        futoin_error(t->saved, "LateError", "late");
    } else {
        futoin_success1(t->saved, futoin_val_strdup("late")); /* must be released */
    }
}

static void branch_complete(void* data)
{
    T* t = data;
    futoin_success(t->saved2);
}

static void timed_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    t->saved = as;
    futoin_set_timeout(as, 10);
    futoin_loop_deferred(t->loop, 20, t, late_complete);
}

static void timed_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    copy_str(t->inner_info, sizeof(t->inner_info), futoin_error_info(as));
    t->result = (int)futoin_loop_now(t->loop);
    futoin_success(as);
}

static void branch_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    t->saved2 = as;
    futoin_set_cancel(as, count_cancel, t);
    futoin_loop_deferred(t->loop, 30, t, branch_complete); /* t=40 */
}

static void par_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, branch_wait, never_eh);
}

static void run_late_after_timeout(T* t)
{
    futoin_add(t->root, timed_step, timed_eh, t);
    futoin_add(t->root, par_step, never_eh, t);
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);

    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->inner_eh_calls, 1);
    assert_string_equal(t->inner_code, FUTOIN_TIMEOUT);
    assert_string_equal(t->inner_info, "");
    assert_int_equal(t->result, 10);
    /* the late call was ignored and reported */
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "not waiting");
    /* the flow went on undisturbed: the branch completed at t=40 */
    assert_int_equal(t->cancel_calls, 0);
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->after_nargs, 0);
    assert_int_equal((int)t->after_time, 40);
    assert_int_equal(t->never_calls, 0);
}

static void test_late_success_after_timeout(void** state)
{
    g_late_error = 0;
    run_late_after_timeout(*state);
    assert_contains(((T*)*state)->misuse_msg[0], "success");
}

static void test_late_error_after_timeout(void** state)
{
    g_late_error = 1;
    run_late_after_timeout(*state);
    assert_contains(((T*)*state)->misuse_msg[0], "LateError");
}

/* ------------------------------------------------------------------------ */
/* Calls on a finished root, add() on a running root                         */

static void test_calls_on_completed_root(void** state)
{
    T* t = *state;
    futoin_add(t->root, noop_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->misuse_count, 0);

    static const char* const expect[] = {"success", "success", "error", "setTimeout",
            "setCancel", "waitExternal", "break", "continue"};
    futoin_success(t->root);
    futoin_success1(t->root, futoin_val_strdup("late")); /* must be released */
    futoin_error(t->root, "LateError", "x");
    futoin_set_timeout(t->root, 5);
    futoin_set_cancel(t->root, never_cancel, t);
    futoin_wait_external(t->root);
    futoin_break(t->root, NULL);
    futoin_continue(t->root, "L");
    assert_int_equal(t->misuse_count, 8);
    for (int i = 0; i < 8; ++i) {
        assert_contains(t->misuse_msg[i], expect[i]);
    }
    assert_ptr_equal(t->misuse_as, t->root);
    assert_int_equal(futoin_loop_pending(t->loop), 0); /* no timer armed */
    run_loop(t);
    assert_int_equal(t->never_calls, 0);

    /* the root is still reusable */
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->never_calls, 0);
    assert_int_equal(t->misuse_count, 8);
}

static void ext_add_and_complete(void* data)
{
    T* t = data;
    futoin_add(t->root, never_step, never_eh, t);
    FutoInAsyncSteps* p = futoin_parallel(t->root, never_eh, t);
    if (p) {
        p->api->add(p, t, never_step, never_eh);
        t->flag = p != t->root && p->api->isValid(p) == 0;
    }
    futoin_success(t->saved);
}

static void test_add_on_running_root_from_outside(void** state)
{
    T* t = *state;
    futoin_add(t->root, waiting_step, never_eh, t);
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    /* executed but not started yet: running as well */
    futoin_add(t->root, never_step, never_eh, t);
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "add");
    assert_contains(t->misuse_msg[0], "running");

    futoin_loop_deferred(t->loop, 5, t, ext_add_and_complete);
    run_loop(t);
    assert_int_equal(t->misuse_count, 3);
    assert_contains(t->misuse_msg[1], "add");
    assert_contains(t->misuse_msg[1], "running");
    assert_contains(t->misuse_msg[2], "parallel");
    assert_true(t->flag); /* parallel() gave an inert interface */
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->cancel_calls, 0);
    assert_int_equal(t->never_calls, 0);
}

/* ------------------------------------------------------------------------ */
/* Cancel handlers                                                           */

static void cancel_adds(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->cancel_calls;
    futoin_add(as, never_step, never_eh, t);
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    if (p) {
        p->api->add(p, t, never_step, never_eh);
    }
}

static void step_cancel_adds(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_adds, data);
    futoin_wait_external(as);
}

static void test_add_in_cancel_handler(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_cancel_adds, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    futoin_cancel(t->root);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->misuse_count, 2);
    assert_contains(t->misuse_msg[0], "add");
    assert_contains(t->misuse_msg[0], "cancel handler");
    assert_contains(t->misuse_msg[1], "parallel");
    run_loop(t);
    assert_int_equal(t->never_calls, 0);

    /* the misuse left nothing behind: the reused root runs only new steps */
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->never_calls, 0);
    assert_int_equal(t->misuse_count, 2);
}

static void cancel_succeeds(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_success1(as, futoin_val_strdup("from cancel")); /* must be released */
}

static void step_timeout_cancel_succeeds(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_set_cancel(as, cancel_succeeds, t);
    futoin_set_timeout(as, 10);
}

static void test_success_in_cancel_handler(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_timeout_cancel_succeeds, inner_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, rec_unhandled, t);
    run_loop(t);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "success");
    assert_contains(t->misuse_msg[0], "cancel handler");
    /* the timeout went on undisturbed: cancel handler, error handler, unhandled */
    assert_int_equal(t->inner_eh_calls, 1);
    assert_string_equal(t->inner_code, FUTOIN_TIMEOUT);
    assert_int_equal(t->unhandled_calls, 1);
    assert_string_equal(t->unhandled_code, FUTOIN_TIMEOUT);
    assert_string_equal(t->order, "CIU");
    assert_int_equal(t->never_calls, 0);
}

static void cancel_errors(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->cancel_calls;
    futoin_error(as, "CancelError", "from cancel");
}

static void step_cancel_errors(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_errors, data);
    futoin_wait_external(as);
}

static void test_error_in_cancel_handler(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_cancel_errors, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    futoin_cancel(t->root);
    run_loop(t);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "CancelError");
    assert_contains(t->misuse_msg[0], "cancel handler");
    assert_int_equal(t->never_calls, 0);
    assert_false(futoin_is_valid(t->root));
}

/* outer step (cancel handler O) with a waiting sub-step (cancel handler C). */
static FutoInAsyncSteps_cancel_callback g_inner_cancel;

static void step_inner_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    t->saved = as;
    futoin_set_cancel(as, g_inner_cancel, t);
    futoin_wait_external(as);
}

static void step_outer_cancelable(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, count_cancel2, t);
    futoin_add(as, step_inner_wait, never_eh, t);
    futoin_add(as, never_step, never_eh, t);
}

static void start_nested(T* t)
{
    futoin_add(t->root, step_outer_cancelable, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->alloc_calls, 1);
    assert_int_equal(t->cancel_calls + t->cancel2_calls, 0);
}

static void cancel_cancels_root(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_cancel(as);
}

static void test_cancel_in_cancel_handler(void** state)
{
    T* t = *state;
    g_inner_cancel = cancel_cancels_root;
    start_nested(t);
    futoin_cancel(t->root);
    run_loop(t);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->cancel2_calls, 1);
    assert_string_equal(t->order, "CO"); /* innermost first, once each */
    assert_int_equal(t->never_calls, 0);
    assert_false(futoin_is_valid(t->root));
}

/* cancel() of the root from a cancel handler that a timeout triggered: the
 * root is running, so it is cancelled: no error handler, no unhandled_error,
 * no further callback. */
static void step_timeout_cancel_cancels(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_set_cancel(as, cancel_cancels_root, t);
    futoin_set_timeout(as, 10);
}

static void test_cancel_root_in_timeout_cancel_handler(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_timeout_cancel_cancels, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->never_calls, 0);
    assert_false(futoin_is_valid(t->root));
}

static void test_cancel_idle_root(void** state)
{
    T* t = *state;
    futoin_add(t->root, after_step, never_eh, t);
    futoin_cancel(t->root); /* never executed: no-op */
    run_loop(t);
    assert_int_equal(t->after_calls, 0);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->after_calls, 1);
    futoin_cancel(t->root); /* finished: no-op */
    futoin_cancel(t->root);
    run_loop(t);
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->never_calls, 0);
    /* still usable */
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->after_calls, 2);
}

/* ------------------------------------------------------------------------ */
/* free() from inside the root's own callbacks                               */

static void step_frees_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_asyncsteps_free(as);
    t->root = NULL;
}

static void step_outer_then_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, count_cancel2, t);
    futoin_add(as, step_frees_root, never_eh, t);
    futoin_add(as, never_step, never_eh, t);
}

static void test_free_in_own_step(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_outer_then_free, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_null(t->root);
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->cancel2_calls, 1); /* cancelled first */
    assert_int_equal(t->alloc_calls, 1);
    assert_int_equal(t->var_cleanup_calls, 1);
    assert_int_equal(t->never_calls, 0);
    assert_int_equal(t->misuse_count, 0);
}

/* A callback that cancelled or freed its own root may still call the
 * flow's entries before it returns: each call is refused with a message
 * that says why, and a value handed to success() is released.
 * t->flag & 1: free() rather than cancel(); t->flag & 2: from the step's
 * error handler rather than from the step. */
static int g_box_cleanups;

static void box_cleanup(FutoInBinaryValue* v)
{
    free(v->custom_data);
    v->custom_data = NULL;
    ++g_box_cleanups;
}

static const FutoInType box_type = {FTN_TYPE_CUSTOM_OBJECT, box_cleanup};

static void calls_after_own_root_gone(FutoInAsyncSteps* as, T* t)
{
    if (t->flag & 1) {
        futoin_asyncsteps_free(t->root);
        t->root = NULL;
    } else {
        futoin_cancel(t->root);
    }
    t->result = futoin_is_valid(as);
    int* v = malloc(sizeof(int));
    assert_non_null(v);
    *v = 7;
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.args[0] = futoin_val_custom(&box_type, v);
    as->api->success(as, &a);
    as->api->handle_error(as, "Late", "after the root went");
    as->api->setTimeout(as, 5);
    as->api->waitExternal(as);
    as->api->breakLoop(as, NULL);
    /* stack() on a cancelled root is allowed (it is idle, and reusable,
     * as a finished root is); a root being freed has none to give */
    t->saved = as->api->stack(as, 16, NULL) ? as : NULL;
    if (t->flag & 1) {
        /* on a cancelled root add() would be the reuse of an idle root */
        as->api->add(as, t, never_step, never_eh);
    }
}

static void step_then_root_gone(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_set_cancel(as, count_cancel, t);
    if (t->flag & 2) {
        futoin_error(as, "Boom", NULL);
        return;
    }
    calls_after_own_root_gone(as, t);
}

static void eh_then_root_gone(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    calls_after_own_root_gone(as, t);
}

static void check_calls_after_own_root_gone(T* t, int flag)
{
    static const char* const calls[] = {
            "success()", "error(Late)", "setTimeout()", "waitExternal()", "break()", "stack()",
            "add()"};
    int nmsg = (flag & 1) ? 7 : 5;
    const char* how = (flag & 1) ? "was freed" : "was cancelled";
    t->flag = flag;
    g_box_cleanups = 0;
    futoin_add(t->root, step_then_root_gone, eh_then_root_gone, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->inner_eh_calls, (flag & 2) ? 1 : 0);
    assert_int_equal(t->result, 0); /* isValid() */
    /* the step's cancel handler ran once, unless the step had already
     * failed (a failed step's handler is dropped before its error handler) */
    assert_int_equal(t->cancel_calls, (flag & 2) ? 0 : 1);
    assert_int_equal(g_box_cleanups, 1);
    if (flag & 1) {
        assert_null(t->saved);
    } else {
        assert_non_null(t->saved);
    }
    assert_int_equal(t->never_calls, 0);
    if (t->misuse_count != nmsg) {
        for (int i = 0; i < t->misuse_count && i < MSG_MAX; ++i) {
            print_message("misuse %d: %s\n", i, t->misuse_msg[i]);
        }
    }
    assert_int_equal(t->misuse_count, nmsg);
    for (int i = 0; i < nmsg; ++i) {
        assert_contains(t->misuse_msg[i], calls[i]);
        assert_contains(t->misuse_msg[i], how);
    }
    assert_int_equal(futoin_loop_pending(t->loop), 0);
    if (!(flag & 1)) {
        /* a cancelled root is reused as usual */
        futoin_add(t->root, after_step, never_eh, t);
        futoin_execute(t->root, never_unhandled, t);
        run_loop(t);
        assert_int_equal(t->after_calls, 1);
    }
}

static void test_calls_after_step_cancels_own_root(void** state)
{
    check_calls_after_own_root_gone(*state, 0);
}

static void test_calls_after_step_frees_own_root(void** state)
{
    check_calls_after_own_root_gone(*state, 1);
}

static void test_calls_after_eh_cancels_own_root(void** state)
{
    check_calls_after_own_root_gone(*state, 2);
}

static void test_calls_after_eh_frees_own_root(void** state)
{
    check_calls_after_own_root_gone(*state, 3);
}

static void cancel_frees_root(FutoInAsyncSteps* as, void* data)
{
    T* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_asyncsteps_free(as);
    t->root = NULL;
}

static void test_free_in_cancel_handler(void** state)
{
    T* t = *state;
    g_inner_cancel = cancel_frees_root;
    start_nested(t);
    futoin_cancel(t->root);
    run_loop(t);
    assert_null(t->root);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->cancel2_calls, 1);
    assert_string_equal(t->order, "CO");
    assert_int_equal(t->var_cleanup_calls, 1);
    assert_int_equal(t->never_calls, 0);
}

static void step_timeout_cancel_frees(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, cancel_frees_root, t);
    futoin_set_timeout(as, 10);
}

static void test_free_in_timeout_cancel_handler(void** state)
{
    T* t = *state;
    futoin_add(t->root, step_timeout_cancel_frees, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_null(t->root);
    assert_int_equal(t->cancel_calls, 1);
    assert_int_equal(t->var_cleanup_calls, 1);
    assert_int_equal(t->never_calls, 0);
}

/* ------------------------------------------------------------------------ */
/* addSync, stateVariable, copyFrom, promise                                 */

static void body_add_sync_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    as->api->addSync(as, NULL, t, never_step, never_eh);
}

static void test_add_sync_null_sync(void** state)
{
    T* t = *state;
    run_scenario(t, body_add_sync_null, NULL);
    assert_step_internal_error(t, "NULL");
}

static DummySync* g_sync;

static void body_add_sync_null_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    as->api->addSync(as, &g_sync->base, t, NULL, never_eh);
}

static void test_add_sync_null_callback(void** state)
{
    T* t = *state;
    DummySync ds = {{&dummy_sync_api}, t};
    g_sync = &ds;
    run_scenario(t, body_add_sync_null_cb, NULL);
    assert_int_equal(t->lock_calls, 0);
    assert_step_internal_error(t, "NULL");
}

/* A sync object at an address not aligned for FutoInSync is refused before
 * anything is read through it, by a flow and by a parallel step. */
static unsigned char g_misaligned_room[sizeof(DummySync) + _Alignof(DummySync)];

static FutoInSync* misaligned_sync(void)
{
    unsigned char* p = g_misaligned_room;
    while ((uintptr_t)p % _Alignof(DummySync) != 1) {
        ++p;
    }
    return (FutoInSync*)(void*)p;
}

/* t->flag chooses where: 0 the flow itself, 1 a parallel step of it. */
static void body_add_sync_misaligned(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* target = t->flag ? futoin_parallel(as, NULL, NULL) : as;
    target->api->addSync(target, misaligned_sync(), t, never_step, never_eh);
}

static void check_add_sync_misaligned(T* t, int in_parallel)
{
    t->flag = in_parallel;
    run_scenario(t, body_add_sync_misaligned, NULL);
    assert_int_equal(t->lock_calls, 0);
    assert_step_internal_error(t, "misaligned sync object");
}

static void test_add_sync_misaligned(void** state)
{
    check_add_sync_misaligned(*state, 0);
}

static void test_par_add_sync_misaligned(void** state)
{
    check_add_sync_misaligned(*state, 1);
}

static void body_state_null_name(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    t->flag = as->api->stateVariable(as, t, NULL, var_alloc, var_cleanup) == NULL;
}

static void test_state_variable_null_name(void** state)
{
    T* t = *state;
    run_scenario(t, body_state_null_name, NULL);
    assert_true(t->flag);
    assert_int_equal(t->alloc_calls, 0);
    assert_step_internal_error(t, "NULL");
}

static void test_state_variable_null_name_idle_root(void** state)
{
    T* t = *state;
    assert_null(t->root->api->stateVariable(t->root, t, NULL, var_alloc, var_cleanup));
    assert_int_equal(t->alloc_calls, 0);
    assert_int_equal(t->misuse_count, 1);
    assert_contains(t->misuse_msg[0], "NULL");
    /* the root is unaffected */
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->after_calls, 1);
}

static void model_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->iterations;
    futoin_set_cancel(as, count_cancel2, t);
    futoin_wait_external(as);
}

static void body_copy_running(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_copy_from(as, t->model);
}

static void test_copy_from_running_model(void** state)
{
    T* t = *state;
    t->model = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->model);
    futoin_state(t->model, "var", var_alloc, var_cleanup, t);
    futoin_add(t->model, model_step, never_eh, t);
    futoin_execute(t->model, never_unhandled, t);
    run_scenario(t, body_copy_running, NULL);
    assert_int_equal(t->iterations, 1); /* the model's step was not copied */
    assert_int_equal(t->alloc_calls, 1); /* nor its state variables */
    assert_step_internal_error(t, "running");
    assert_contains(t->inner_info, "copyFrom");
    /* the model is not disturbed: it still waits, and cancels cleanly */
    assert_true(futoin_is_valid(t->model));
    futoin_cancel(t->model);
    assert_int_equal(t->cancel2_calls, 1);
}

static void body_promise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    FutoInOutcome out;
    ++t->body_calls;
    /* on its own running root, and on another idle root, from inside a step */
    t->flag = futoin_promise(as, &out) == FUTOIN_PROMISE_MISUSE
            && futoin_promise(t->model, &out) == FUTOIN_PROMISE_MISUSE;
    futoin_outcome_reset(&out);
}

static void test_promise_on_running_root(void** state)
{
    T* t = *state;
    FutoInOutcome out;
    t->model = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->model);
    futoin_add(t->model, never_step, never_eh, t);

    futoin_add(t->root, body_promise, never_eh, t);
    futoin_add(t->root, after_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    assert_int_equal(futoin_promise(t->root, &out), FUTOIN_PROMISE_MISUSE);
    futoin_outcome_reset(&out);
    assert_int_equal(futoin_promise(NULL, &out), FUTOIN_PROMISE_MISUSE);
    run_loop(t);
    assert_int_equal(t->body_calls, 1);
    assert_true(t->flag);
    /* the root went on normally */
    assert_int_equal(t->after_calls, 1);
    assert_int_equal(t->never_calls, 0);
    /* the idle root was not started by the refused promise */
    assert_true(futoin_is_valid(t->model));
}

/* ------------------------------------------------------------------------ */
/* await                                                                     */

static void rec_await_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    T* t = data;
    ++t->await_eh_calls;
    copy_str(t->await_code, sizeof(t->await_code), code);
    copy_str(t->await_info, sizeof(t->await_info), futoin_error_info(as));
}

/* Two parallel branches await the same completion: the second one fails. */
static void branch_await(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_await(as, t->c, NULL, NULL);
}

static void branch_await_later(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_add(as, noop_step, never_eh, t);
    futoin_add(as, branch_await, NULL, t);
}

static void body_await_twice_branches(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, rec_par_eh, t);
    p->api->add(p, t, branch_await, NULL);
    p->api->add(p, t, branch_await_later, NULL);
}

static void test_completion_awaited_twice(void** state)
{
    T* t = *state;
    t->c = futoin_completion_new();
    assert_non_null(t->c);
    run_scenario(t, body_await_twice_branches, NULL);
    assert_int_equal(t->par_eh_calls, 1);
    assert_string_equal(t->par_code, FUTOIN_INTERNAL_ERROR);
    assert_step_internal_error(t, "await");
    /* the first awaiter was cancelled and detached: the completion can be
     * resolved (nobody receives it) and freed */
    assert_int_equal(futoin_completion_resolve(t->c, NULL), 0);
}

/* The same step awaits one completion twice. */
static void body_await_twice_same_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_await(as, t->c, NULL, NULL);
    futoin_await(as, t->c, NULL, NULL);
}

static void test_completion_awaited_twice_same_step(void** state)
{
    T* t = *state;
    t->c = futoin_completion_new();
    assert_non_null(t->c);
    run_scenario(t, body_await_twice_same_step, NULL);
    assert_step_internal_error(t, "await");
    /* teardown frees the completion: no step holds it any more (no leak) */
}

/* An await step that never starts (an earlier sibling fails) must let go of
 * the completion: it can be awaited again afterwards, and freed. */
static void step_fails_early(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "EarlyError", "early");
}

static void body_await_after_failing_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_add(as, step_fails_early, NULL, t);
    futoin_await(as, t->c, never_eh, t);
}

static void step_await_again(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    futoin_await(as, t->c, rec_await_eh, t);
}

static void test_completion_await_step_dropped(void** state)
{
    T* t = *state;
    t->c = futoin_completion_new();
    assert_non_null(t->c);
    futoin_add(t->root, body_await_after_failing_step, inner_eh, t);
    futoin_execute(t->root, rec_unhandled, t);
    run_loop(t);
    assert_int_equal(t->body_calls, 1);
    assert_string_equal(t->inner_code, "EarlyError");
    assert_string_equal(t->unhandled_code, "EarlyError");

    t->model = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->model);
    futoin_add(t->model, step_await_again, never_eh, t);
    futoin_add(t->model, check_first_arg, never_eh, t);
    futoin_execute(t->model, never_unhandled, t);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_strdup("first");
    assert_int_equal(futoin_completion_resolve(t->c, &a), 0);
    run_loop(t);
    assert_int_equal(t->await_eh_calls, 0);
    assert_int_equal(t->after_calls, 1);
    assert_true(t->flag);
    assert_int_equal(t->never_calls, 0);
}

static void free_completion(void* data)
{
    T* t = data;
    FutoInCompletion* c = t->c;
    t->c = NULL;
    futoin_completion_free(c);
}

static void body_await_then_freed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    T* t = data;
    ++t->body_calls;
    futoin_await(as, t->c, rec_await_eh, t);
    futoin_loop_deferred(t->loop, 10, t, free_completion);
}

static void test_completion_freed_while_awaited(void** state)
{
    T* t = *state;
    t->c = futoin_completion_new();
    assert_non_null(t->c);
    run_scenario(t, body_await_then_freed, NULL);
    assert_null(t->c);
    assert_int_equal(t->await_eh_calls, 1);
    assert_string_equal(t->await_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->await_info, "freed");
    assert_int_equal((int)futoin_loop_now(t->loop), 10);
    assert_step_internal_error(t, "freed");
}

/* ------------------------------------------------------------------------ */

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest all[] = {
            TEST(test_success_twice),
            TEST(test_error_twice),
            TEST(test_success_after_error),
            TEST(test_error_after_success),
            TEST(test_success_after_add),
            TEST(test_add_after_success),
            TEST(test_add_null_callback),
            TEST(test_parallel_after_success_inert),
            TEST(test_error_null_code),
            TEST(test_set_timeout_in_error_handler),
            TEST(test_set_cancel_in_error_handler),
            TEST(test_wait_external_in_error_handler),
            TEST(test_set_cancel_null),
            TEST(test_loop_null_body),
            TEST(test_repeat_null_body),
            TEST(test_break_outside_loop),
            TEST(test_continue_outside_loop),
            TEST(test_break_unknown_label),
            TEST(test_continue_unknown_label),
            TEST(test_execute_twice_from_outside),
            TEST(test_execute_twice_from_own_step),
            TEST(test_execute_on_branch),
            TEST(test_execute_on_parallel_iface),
            TEST(test_free_on_branch),
            TEST(test_free_on_parallel_iface),
            TEST(test_late_success_after_completion),
            TEST(test_external_complete_twice),
            TEST(test_late_success_after_timeout),
            TEST(test_late_error_after_timeout),
            TEST(test_calls_on_completed_root),
            TEST(test_add_on_running_root_from_outside),
            TEST(test_add_in_cancel_handler),
            TEST(test_success_in_cancel_handler),
            TEST(test_error_in_cancel_handler),
            TEST(test_cancel_in_cancel_handler),
            TEST(test_cancel_root_in_timeout_cancel_handler),
            TEST(test_cancel_idle_root),
            TEST(test_free_in_own_step),
            TEST(test_calls_after_step_cancels_own_root),
            TEST(test_calls_after_step_frees_own_root),
            TEST(test_calls_after_eh_cancels_own_root),
            TEST(test_calls_after_eh_frees_own_root),
            TEST(test_free_in_cancel_handler),
            TEST(test_free_in_timeout_cancel_handler),
            TEST(test_add_sync_null_sync),
            TEST(test_add_sync_null_callback),
            TEST(test_add_sync_misaligned),
            TEST(test_par_add_sync_misaligned),
            TEST(test_state_variable_null_name),
            TEST(test_state_variable_null_name_idle_root),
            TEST(test_copy_from_running_model),
            TEST(test_promise_on_running_root),
            TEST(test_completion_awaited_twice),
            TEST(test_completion_awaited_twice_same_step),
            TEST(test_completion_await_step_dropped),
            TEST(test_completion_freed_while_awaited),
    };
    enum { N = sizeof(all) / sizeof(all[0]) };
    struct CMUnitTest selected[N];
    size_t n = 0;
    const char* only = getenv("MISUSE_ONLY");
    int exact = 0;
    for (size_t i = 0; only && i < N; ++i) {
        exact |= strcmp(all[i].name, only) == 0;
    }
    for (size_t i = 0; i < N; ++i) {
        if (!only || !*only || (exact ? strcmp(all[i].name, only) == 0 : strstr(all[i].name, only) != NULL)) {
            selected[n++] = all[i];
        }
    }
    if (n == 0) {
        fprintf(stderr, "MISUSE_ONLY=%s matches no test\n", only);
        return 1;
    }
    return _cmocka_run_group_tests("misuse", selected, n, NULL, NULL);
}
