/* SPDX-License-Identifier: MIT */
/*
 * Completions that come at the wrong time: success() or error() from
 * outside on a step that does not wait (any more), and what a cancel
 * handler may and may not call.
 *
 * The fixture and the conventions are in misuse_support.h.
 */
#include "misuse_support.h"

/* ------------------------------------------------------------------------ */
/* success()/error() from outside on a step that is not waiting              */

static void result_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    t->saved = as;
    futoin_success1(as, futoin_val_i32(7));
}

static void test_late_success_after_completion(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    futoin_success1(t->saved, futoin_val_strdup("first"));
    futoin_success1(t->saved, futoin_val_strdup("second")); /* must be released */
    futoin_error(t->saved, "LateError", "late");
}

static void test_external_complete_twice(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    if (g_late_error) {
        futoin_error(t->saved, "LateError", "late");
    } else {
        futoin_success1(t->saved, futoin_val_strdup("late")); /* must be released */
    }
}

static void branch_complete(void* data)
{
    MisuseFixture* t = data;
    futoin_success(t->saved2);
}

static void timed_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    t->saved = as;
    futoin_set_timeout(as, 10);
    futoin_loop_deferred(t->loop, 20, t, late_complete);
}

static void timed_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    MisuseFixture* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    copy_str(t->inner_info, sizeof(t->inner_info), futoin_error_info(as));
    t->result = (int)futoin_loop_now(t->loop);
    futoin_success(as);
}

static void branch_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    t->saved2 = as;
    futoin_set_cancel(as, count_cancel, t);
    futoin_loop_deferred(t->loop, 30, t, branch_complete); /* t=40 */
}

static void par_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, branch_wait, never_eh);
}

static void run_late_after_timeout(MisuseFixture* t)
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
    assert_contains(((MisuseFixture*)*state)->misuse_msg[0], "success");
}

static void test_late_error_after_timeout(void** state)
{
    g_late_error = 1;
    run_late_after_timeout(*state);
    assert_contains(((MisuseFixture*)*state)->misuse_msg[0], "LateError");
}

/* ------------------------------------------------------------------------ */
/* Cancel handlers                                                           */

static void cancel_adds(FutoInAsyncSteps* as, void* data)
{
    MisuseFixture* t = data;
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
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_success1(as, futoin_val_strdup("from cancel")); /* must be released */
}

static void step_timeout_cancel_succeeds(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_set_cancel(as, cancel_succeeds, t);
    futoin_set_timeout(as, 10);
}

static void test_success_in_cancel_handler(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
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
    MisuseFixture* t = *state;
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

static void cancel_cancels_root(FutoInAsyncSteps* as, void* data)
{
    MisuseFixture* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_cancel(as);
}

static void test_cancel_in_cancel_handler(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    futoin_set_cancel(as, cancel_cancels_root, t);
    futoin_set_timeout(as, 10);
}

static void test_cancel_root_in_timeout_cancel_handler(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = *state;
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

int main(void)
{
    const struct CMUnitTest all[] = {
        MISUSE_TEST(test_late_success_after_completion),
        MISUSE_TEST(test_external_complete_twice),
        MISUSE_TEST(test_late_success_after_timeout),
        MISUSE_TEST(test_late_error_after_timeout),
        MISUSE_TEST(test_add_in_cancel_handler),
        MISUSE_TEST(test_success_in_cancel_handler),
        MISUSE_TEST(test_error_in_cancel_handler),
        MISUSE_TEST(test_cancel_in_cancel_handler),
        MISUSE_TEST(test_cancel_root_in_timeout_cancel_handler),
        MISUSE_TEST(test_cancel_idle_root),
    };
    return misuse_run("misuse_completion", all, sizeof(all) / sizeof(all[0]));
}
