/* SPDX-License-Identifier: MIT */
/*
 * Misuse of a root's life: execute() and free() in the wrong place or on
 * the wrong interface, calls on a finished root, add() on a running root
 * from outside, and free() or cancel() from inside the root's own
 * callbacks, after which every further call is refused without harm.
 *
 * The fixture and the conventions are in misuse_support.h.
 */
#include "misuse_support.h"

/* ------------------------------------------------------------------------ */
/* execute / free in the wrong place                                         */

static void final_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++((MisuseFixture*)data)->after_calls;
    futoin_error(as, "FinalError", "end");
}

static void ext_execute_and_complete(void* data)
{
    MisuseFixture* t = data;
    futoin_execute(t->root, never_unhandled, t); /* running root: misuse */
    futoin_success(t->saved);
}

static void test_execute_twice_from_outside(void** state)
{
    MisuseFixture* t = *state;
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
    ++((MisuseFixture*)data)->body_calls;
    futoin_execute(as, never_unhandled, data);
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
    MisuseFixture* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, rec_par_eh, t);
    p->api->add(p, t, waiting_step, never_eh);
    p->api->add(p, t, g_branch_fn, NULL);
}

static void check_branch_misuse(MisuseFixture* t, const char* what)
{
    assert_int_equal(t->par_eh_calls, 1);
    assert_string_equal(t->par_code, FUTOIN_INTERNAL_ERROR);
    assert_contains(t->par_info, what);
    assert_int_equal(t->cancel_calls, 1); /* the waiting sibling was cancelled */
    assert_step_internal_error(t, what);
}

static void test_execute_on_branch(void** state)
{
    MisuseFixture* t = *state;
    g_branch_fn = branch_execute;
    run_scenario(t, body_parallel_branch, NULL);
    check_branch_misuse(t, "parallel branch");
}

static void test_free_on_branch(void** state)
{
    MisuseFixture* t = *state;
    g_branch_fn = branch_free;
    run_scenario(t, body_parallel_branch, NULL);
    check_branch_misuse(t, "parallel branch");
    assert_true(futoin_is_valid(t->root));
}

/* The interface parallel() returns is not a flow: execute()/free() on it. */
static void body_execute_on_par_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, never_step, never_eh);
    p->api->execute(p, t, never_unhandled);
}

static void body_free_on_par_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, never_eh, t);
    p->api->add(p, t, never_step, never_eh);
    p->api->free(p);
}

static void test_free_on_parallel_iface(void** state)
{
    MisuseFixture* t = *state;
    run_scenario(t, body_free_on_par_iface, NULL);
    assert_step_internal_error(t, "parallel");
    assert_contains(t->inner_info, "free");
    assert_true(futoin_is_valid(t->root));
}

/* ------------------------------------------------------------------------ */
/* Calls on a finished root, add() on a running root                         */

static void test_calls_on_completed_root(void** state)
{
    MisuseFixture* t = *state;
    futoin_add(t->root, noop_step, never_eh, t);
    futoin_execute(t->root, never_unhandled, t);
    run_loop(t);
    assert_int_equal(t->misuse_count, 0);

    static const char* const expect[] = { "success", "success", "error", "setTimeout", "setCancel",
        "waitExternal", "break", "continue" };
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
    MisuseFixture* t = data;
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
    MisuseFixture* t = *state;
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
/* free() from inside the root's own callbacks                               */

static void step_frees_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_asyncsteps_free(as);
    t->root = NULL;
}

static void step_outer_then_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, count_cancel2, t);
    futoin_add(as, step_frees_root, never_eh, t);
    futoin_add(as, never_step, never_eh, t);
}

static void test_free_in_own_step(void** state)
{
    MisuseFixture* t = *state;
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

static const FutoInType box_type = { FTN_TYPE_CUSTOM_OBJECT, box_cleanup };

static void calls_after_own_root_gone(FutoInAsyncSteps* as, MisuseFixture* t)
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
    MisuseFixture* t = data;
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
    MisuseFixture* t = data;
    ++t->inner_eh_calls;
    copy_str(t->inner_code, sizeof(t->inner_code), code);
    calls_after_own_root_gone(as, t);
}

static void check_calls_after_own_root_gone(MisuseFixture* t, int flag)
{
    static const char* const calls[] = { "success()", "error(Late)", "setTimeout()",
        "waitExternal()", "break()", "stack()", "add()" };
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
    MisuseFixture* t = data;
    ++t->cancel_calls;
    note(t, 'C');
    futoin_asyncsteps_free(as);
    t->root = NULL;
}

static void test_free_in_cancel_handler(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    futoin_state(as, "var", var_alloc, var_cleanup, t);
    futoin_set_cancel(as, cancel_frees_root, t);
    futoin_set_timeout(as, 10);
}

static void test_free_in_timeout_cancel_handler(void** state)
{
    MisuseFixture* t = *state;
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
/* The cases of the common shape: one row, one cmocka test (misuse_support.h) */

static const MisuseCase lifecycle_cases[] = {
    { "test_execute_twice_from_own_step", body_execute_self, NULL, IN_STEP, 0, "already running",
            NULL, -1 },
    { "test_execute_on_parallel_iface", body_execute_on_par_iface, NULL, IN_STEP, 0, "parallel",
            "execute", -1 },
};

int main(void)
{
    const struct CMUnitTest all[] = {
        MISUSE_TEST(test_execute_twice_from_outside),
        MISUSE_TEST(test_execute_on_branch),
        MISUSE_TEST(test_free_on_branch),
        MISUSE_TEST(test_free_on_parallel_iface),
        MISUSE_TEST(test_calls_on_completed_root),
        MISUSE_TEST(test_add_on_running_root_from_outside),
        MISUSE_TEST(test_free_in_own_step),
        MISUSE_TEST(test_calls_after_step_cancels_own_root),
        MISUSE_TEST(test_calls_after_step_frees_own_root),
        MISUSE_TEST(test_calls_after_eh_cancels_own_root),
        MISUSE_TEST(test_calls_after_eh_frees_own_root),
        MISUSE_TEST(test_free_in_cancel_handler),
        MISUSE_TEST(test_free_in_timeout_cancel_handler),
    };
    return misuse_run_cases("misuse_lifecycle", lifecycle_cases,
            sizeof(lifecycle_cases) / sizeof(lifecycle_cases[0]), all,
            sizeof(all) / sizeof(all[0]));
}
