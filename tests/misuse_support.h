/* SPDX-License-Identifier: MIT */
/*
 * Shared fixture of the API misuse tests (test_misuse_*.c; docs/MISUSE.md):
 * inside a step or an error handler a mistake fails that step with
 * InternalError and an error_info naming the mistake; where no step of the
 * flow is running the call is ignored and reported to the loop's misuse
 * handler. After each misuse the rest of the flow must behave as
 * documented, and nothing may crash, hang or leak.
 *
 * Callbacks never assert (a failing assertion would longjmp through the
 * engine): they record what happened and the test body checks it.
 *
 * Misuse of the common shape (a body misuses the flow, the step fails with
 * InternalError naming the mistake) is a row of a MisuseCase table, run by
 * misuse_case_test() as a cmocka test of its own; the other cases are
 * functions.
 *
 * MISUSE_ONLY=name in the environment runs only that test (or, if no test
 * has that exact name, the tests whose names contain it).
 */
#ifndef FUTOIN_MISUSE_SUPPORT_H
#define FUTOIN_MISUSE_SUPPORT_H

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

/* One test's state: made by setup(), passed to the test as *state and to
 * the callbacks as data, checked by the test body, freed by teardown(). */
typedef struct MisuseFixture {
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
    int flag; /* scenario-specific: a check computed inside a callback, or a choice made by the test */
    int result; /* scenario-specific value */
    FutoInAsyncSteps* saved;
    FutoInAsyncSteps* saved2;

    /* order of notable events */
    char order[ORDER_MAX];
    int norder;

    const struct MisuseCase* mcase; /* the table row this test runs, if any */
} MisuseFixture;

static inline void note(MisuseFixture* t, char c)
{
    if (t->norder < ORDER_MAX - 1) {
        t->order[t->norder++] = c;
        t->order[t->norder] = '\0';
    }
}

static inline void copy_str(char* dst, size_t n, const char* s)
{
    snprintf(dst, n, "%s", s ? s : "(null)");
}

static inline void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    MisuseFixture* t = data;
    if (t->misuse_count < MSG_MAX) {
        copy_str(t->misuse_msg[t->misuse_count], TXT, info);
    }
    t->misuse_as = as;
    ++t->misuse_count;
}

static inline int setup(void** state)
{
    MisuseFixture* t = calloc(1, sizeof(MisuseFixture));
    assert_non_null(t);
    t->mcase = *state; /* a table row (misuse_case_test()), or NULL */
    t->loop = futoin_loop_new_virtual();
    assert_non_null(t->loop);
    futoin_set_misuse_handler(t->loop, on_misuse, t);
    t->root = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->root);
    *state = t;
    return 0;
}

static inline int teardown(void** state)
{
    MisuseFixture* t = *state;
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
static inline void run_loop(MisuseFixture* t)
{
    int n = 0;
    while (futoin_loop_run_next(t->loop)) {
        if (++n > 100000) {
            fail_msg("the loop does not drain (hang)");
        }
    }
    assert_int_equal(futoin_loop_pending(t->loop), 0);
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        const char* hay_ = (hay);                                                                  \
        if (!hay_ || !strstr(hay_, (needle))) {                                                    \
            fail_msg("'%s' does not contain '%s'", hay_ ? hay_ : "(null)", (needle));              \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Common callbacks                                                          */

static inline void rec_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    MisuseFixture* t = data;
    ++t->unhandled_calls;
    copy_str(t->unhandled_code, sizeof(t->unhandled_code), code);
    note(t, 'U');
}

static inline void never_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++((MisuseFixture*)data)->never_calls;
}

static inline void never_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++((MisuseFixture*)data)->never_calls;
}

static inline void never_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++((MisuseFixture*)data)->never_calls;
}

static inline void never_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((MisuseFixture*)data)->never_calls;
}

static inline void never_loop_body(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((MisuseFixture*)data)->never_calls;
}

static inline void never_cb(void* data)
{
    ++((MisuseFixture*)data)->never_calls;
}

static inline void noop_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
}

static inline void after_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    MisuseFixture* t = data;
    ++t->after_calls;
    t->after_nargs = futoin_args_count(args);
    t->after_time = futoin_loop_now(futoin_asyncsteps_loop(as));
    note(t, 'A');
}

static inline void count_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    MisuseFixture* t = data;
    ++t->cancel_calls;
    note(t, 'C');
}

static inline void count_cancel2(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    MisuseFixture* t = data;
    ++t->cancel2_calls;
    note(t, 'O');
}

/* A step waiting for an external event (cancel handler counts). */
static inline void waiting_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    t->saved = as;
    futoin_set_cancel(as, count_cancel, t);
    futoin_wait_external(as);
}

static inline void* var_alloc(void* data)
{
    MisuseFixture* t = data;
    ++t->alloc_calls;
    return malloc(16);
}

static inline void var_cleanup(void* data, void* value)
{
    MisuseFixture* t = data;
    ++t->var_cleanup_calls;
    free(value);
}

/* A sync object whose lock() and unlock() only count. */
typedef struct DummySync {
    FutoInSync base;
    MisuseFixture* t;
} DummySync;

static inline void dummy_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    ++((DummySync*)sync)->t->lock_calls;
}

static inline void dummy_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
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

static inline void inner_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    MisuseFixture* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    copy_str(t->inner_info, sizeof(t->inner_info), futoin_error_info(as));
    note(t, 'I');
}

static inline void outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    MisuseFixture* t = data;
    ++t->outer_eh_calls;
    copy_str(t->outer_code, sizeof(t->outer_code), code);
    copy_str(t->outer_info, sizeof(t->outer_info), futoin_error_info(as));
    note(t, 'E');
    if (t->outer_recover) {
        futoin_success(as);
    }
}

static inline void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_add(as, t->body, t->body_eh ? t->body_eh : inner_eh, t);
    futoin_add(as, never_step, NULL, t);
}

static inline void run_scenario(MisuseFixture* t, FutoInAsyncSteps_execute_callback body,
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
static inline void assert_outer_internal_error(MisuseFixture* t, const char* what)
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
static inline void assert_step_internal_error(MisuseFixture* t, const char* what)
{
    assert_int_equal(t->body_calls, 1);
    assert_int_equal(t->inner_eh_calls, 1);
    assert_string_equal(t->inner_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->inner_info, what);
    assert_outer_internal_error(t, what);
}

/* The step's error handler ran once for the step's own error
 * ("FirstError"), then misused the flow, which the outer handler saw as
 * InternalError naming the error handler and the call. */
static inline void check_eh_misuse(MisuseFixture* t, const char* what)
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

/* ------------------------------------------------------------------------ */
/* Table-driven cases                                                        */

/* Where a tabled misuse happens, and so what the flow shows for it. */
typedef enum {
    IN_STEP,         /* in the step: its own handler gets the InternalError
                      * (assert_step_internal_error()) */
    IN_ERROR_HANDLER /* in the step's error handler, after the step failed
                      * with FirstError (check_eh_misuse()) */
} MisuseWhere;

/* One misuse of the common shape: run_scenario() with the body (and the
 * body's error handler), then the InternalError checked as `where` says. */
typedef struct MisuseCase {
    const char* name; /* the cmocka test's name */
    FutoInAsyncSteps_execute_callback body;
    FutoInAsyncSteps_error_callback body_eh; /* NULL: the fixture's */
    MisuseWhere where;
    int outer_recover; /* the outer handler recovers: the flow goes on */
    const char* info;  /* the error_info names this */
    const char* info2; /* and this (the step's error_info); NULL: no more */
    int iterations;    /* loop iterations run before the error; -1: no loop */
} MisuseCase;

static inline void misuse_case_test(void** state)
{
    MisuseFixture* t = *state;
    const MisuseCase* c = t->mcase;
    assert_non_null(c);
    t->outer_recover = c->outer_recover;
    run_scenario(t, c->body, c->body_eh);
    if (c->iterations >= 0) {
        assert_int_equal(t->iterations, c->iterations);
    }
    if (c->where == IN_STEP) {
        assert_step_internal_error(t, c->info);
    } else {
        check_eh_misuse(t, c->info);
    }
    if (c->info2) {
        assert_contains(t->inner_info, c->info2);
    }
}

static inline void check_first_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    MisuseFixture* t = data;
    const char* s = futoin_arg_cstr(args, 0, NULL);
    t->flag = futoin_args_count(args) == 1 && s && strcmp(s, "first") == 0;
    after_step(as, data, args);
}

static inline void rec_par_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    MisuseFixture* t = data;
    ++t->par_eh_calls;
    copy_str(t->par_code, sizeof(t->par_code), code);
    copy_str(t->par_info, sizeof(t->par_info), futoin_error_info(as));
    note(t, 'P');
}

/* outer step (cancel handler O) with a waiting sub-step (cancel handler C). */
static FutoInAsyncSteps_cancel_callback g_inner_cancel; /* set by the test */

static inline void step_inner_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    t->saved = as;
    futoin_set_cancel(as, g_inner_cancel, t);
    futoin_wait_external(as);
}

static inline void step_outer_cancelable(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, count_cancel2, t);
    futoin_add(as, step_inner_wait, never_eh, t);
    futoin_add(as, never_step, never_eh, t);
}

static inline void start_nested(MisuseFixture* t)
{
    futoin_add(t->root, step_outer_cancelable, never_eh, t);
    futoin_add(t->root, never_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->alloc_calls, 1);
    assert_int_equal(t->cancel_calls + t->cancel2_calls, 0);
}

/* ------------------------------------------------------------------------ */

/* f as a cmocka test with a fresh MisuseFixture (setup() and teardown()). */
#define MISUSE_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* Runs the group's table rows, then its other tests, or those MISUSE_ONLY
 * selects. Each row is a cmocka test of its own, named after the row. */
static inline int misuse_run_cases(const char* group, const MisuseCase* cases, size_t ncases,
        const struct CMUnitTest* tests, size_t ntests)
{
    enum { N = 64 };
    struct CMUnitTest all[N];
    struct CMUnitTest selected[N];
    size_t count = ncases + ntests;
    if (count > N) {
        fprintf(stderr, "%s: more than %d tests\n", group, (int)N);
        return 1;
    }
    for (size_t i = 0; i < ncases; ++i) {
        struct CMUnitTest row = { cases[i].name, misuse_case_test, setup, teardown,
            (void*)(uintptr_t)&cases[i] };
        all[i] = row;
    }
    for (size_t i = 0; i < ntests; ++i) {
        all[ncases + i] = tests[i];
    }
    size_t n = 0;
    const char* only = getenv("MISUSE_ONLY");
    int exact = 0;
    for (size_t i = 0; only && i < count; ++i) {
        exact |= strcmp(all[i].name, only) == 0;
    }
    for (size_t i = 0; i < count; ++i) {
        if (!only || !*only
                || (exact ? strcmp(all[i].name, only) == 0 : strstr(all[i].name, only) != NULL)) {
            selected[n++] = all[i];
        }
    }
    if (n == 0) {
        /* Another group's test: nothing of this one runs. */
        fprintf(stderr, "MISUSE_ONLY=%s matches no test of %s\n", only, group);
        return 0;
    }
    return _cmocka_run_group_tests(group, selected, n, NULL, NULL);
}

/* A group without table rows. */
static inline int misuse_run(const char* group, const struct CMUnitTest* tests, size_t count)
{
    return misuse_run_cases(group, NULL, 0, tests, count);
}

#endif
