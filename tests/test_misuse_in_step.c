/* SPDX-License-Identifier: MIT */
/*
 * Misuse inside a step, an error handler or a loop body: calls that do not
 * belong there (success() twice, add() after success(), setTimeout() in an
 * error handler, break outside a loop...) fail the step with InternalError
 * and an error_info naming the mistake, and the flow goes on as documented.
 *
 * The fixture and the conventions are in misuse_support.h.
 */
#include "misuse_support.h"

/* ------------------------------------------------------------------------ */
/* success / error / add misuse inside a step                                */

static void body_success_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_success1(as, futoin_val_strdup("first"));
    futoin_success1(as, futoin_val_strdup("second")); /* both must be released */
}

static void body_error_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_error(as, "FirstError", "first");
    futoin_error(as, "SecondError", "second");
}

static void body_success_after_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_error(as, "SomeError", "x");
    futoin_success1(as, futoin_val_strdup("late"));
}

static void body_error_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_success1(as, futoin_val_strdup("result"));
    futoin_error(as, "SomeError", "x");
}

static void body_success_after_add(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_add(as, never_step, never_eh, t);
    futoin_success1(as, futoin_val_strdup("result"));
}

static void body_add_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_success(as);
    futoin_add(as, never_step, never_eh, t);
}

static void body_add_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    as->api->add(as, t, NULL, never_eh);
}

/* parallel() after success(): an inert interface whose calls do nothing. */
static void body_parallel_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_success(as);
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    int ok = p != NULL && p != as;
    if (ok) {
        DummySync ds = { { &dummy_sync_api }, t };
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
    MisuseFixture* t = *state;
    run_scenario(t, body_parallel_after_success, NULL);
    assert_true(t->flag);
    assert_int_equal(t->alloc_calls, 0);
    assert_int_equal(t->lock_calls, 0);
    assert_step_internal_error(t, "after success");
}

static void body_error_null_code(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    as->api->handle_error(as, NULL, "no code");
}

/* ------------------------------------------------------------------------ */
/* setTimeout / setCancel / waitExternal in an error handler                 */

static void body_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_error(as, "FirstError", "first");
}

static void record_first(MisuseFixture* t, FutoInAsyncSteps* as, const char* code)
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

static void body_set_cancel_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    as->api->setCancel(as, data, NULL);
}

/* ------------------------------------------------------------------------ */
/* Loops                                                                     */

static void body_loop_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    as->api->loop(as, data, NULL, "L");
}

static void body_repeat_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    as->api->repeat(as, data, 3, NULL, NULL);
}

static void body_break_outside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_break(as, NULL);
}

static void body_continue_outside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_continue(as, NULL);
}

static void loop_break_unknown(FutoInAsyncSteps* as, void* data)
{
    MisuseFixture* t = data;
    ++t->iterations;
    futoin_break(as, "NoSuchLoop");
}

static void loop_continue_unknown(FutoInAsyncSteps* as, void* data)
{
    MisuseFixture* t = data;
    ++t->iterations;
    futoin_continue(as, "NoSuchLoop");
}

static void body_break_unknown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_add_loop(as, loop_break_unknown, data, "Known");
}

static void body_continue_unknown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->body_calls;
    futoin_add_loop(as, loop_continue_unknown, data, "Known");
}

/* ------------------------------------------------------------------------ */
/* The cases of the common shape: one row, one cmocka test (misuse_support.h) */

static const MisuseCase in_step_cases[] = {
    { "test_success_twice", body_success_twice, NULL, IN_STEP, 0, "twice", NULL, -1 },
    { "test_error_twice", body_error_twice, NULL, IN_STEP, 0, "twice", NULL, -1 },
    { "test_success_after_error", body_success_after_error, NULL, IN_STEP, 0, "after error", NULL,
            -1 },
    { "test_error_after_success", body_error_after_success, NULL, IN_STEP, 0, "after success", NULL,
            -1 },
    { "test_success_after_add", body_success_after_add, NULL, IN_STEP, 0, "after add", NULL, -1 },
    { "test_add_after_success", body_add_after_success, NULL, IN_STEP, 0, "after success", NULL,
            -1 },
    { "test_add_null_callback", body_add_null, NULL, IN_STEP, 1, "NULL", NULL, -1 },
    { "test_error_null_code", body_error_null_code, NULL, IN_STEP, 0, "NULL", NULL, -1 },
    { "test_set_timeout_in_error_handler", body_fail, eh_set_timeout, IN_ERROR_HANDLER, 0,
            "setTimeout", NULL, -1 },
    { "test_set_cancel_in_error_handler", body_fail, eh_set_cancel, IN_ERROR_HANDLER, 0,
            "setCancel", NULL, -1 },
    { "test_wait_external_in_error_handler", body_fail, eh_wait_external, IN_ERROR_HANDLER, 0,
            "waitExternal", NULL, -1 },
    { "test_set_cancel_null", body_set_cancel_null, NULL, IN_STEP, 0, "NULL", NULL, -1 },
    { "test_loop_null_body", body_loop_null, NULL, IN_STEP, 0, "NULL", NULL, -1 },
    { "test_repeat_null_body", body_repeat_null, NULL, IN_STEP, 0, "NULL", NULL, -1 },
    { "test_break_outside_loop", body_break_outside, NULL, IN_STEP, 0, "outside of a loop", NULL,
            -1 },
    { "test_continue_outside_loop", body_continue_outside, NULL, IN_STEP, 0, "outside of a loop",
            NULL, -1 },
    { "test_break_unknown_label", body_break_unknown, NULL, IN_STEP, 0, "labelled", "NoSuchLoop",
            1 },
    { "test_continue_unknown_label", body_continue_unknown, NULL, IN_STEP, 0, "labelled",
            "NoSuchLoop", 1 },
};

int main(void)
{
    const struct CMUnitTest all[] = {
        MISUSE_TEST(test_parallel_after_success_inert),
    };
    return misuse_run_cases("misuse_in_step", in_step_cases,
            sizeof(in_step_cases) / sizeof(in_step_cases[0]), all, sizeof(all) / sizeof(all[0]));
}
