/* SPDX-License-Identifier: MIT */
/*
 * Misuse of the C API's helpers and sync steps: addSync() with bad
 * arguments, stateVariable() without a name, copyFrom() of a running model,
 * promise() on a running root, await of a completion twice or after it
 * was freed.
 *
 * The fixture and the conventions are in misuse_support.h.
 */
#include "misuse_support.h"

/* ------------------------------------------------------------------------ */
/* addSync, stateVariable, copyFrom, promise                                 */

static void body_add_sync_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    as->api->addSync(as, NULL, t, never_step, never_eh);
}

static DummySync* g_sync;

static void body_add_sync_null_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    as->api->addSync(as, &g_sync->base, t, NULL, never_eh);
}

static void test_add_sync_null_callback(void** state)
{
    MisuseFixture* t = *state;
    DummySync ds = { { &dummy_sync_api }, t };
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
    MisuseFixture* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* target = t->flag ? futoin_parallel(as, NULL, NULL) : as;
    target->api->addSync(target, misaligned_sync(), t, never_step, never_eh);
}

static void check_add_sync_misaligned(MisuseFixture* t, int in_parallel)
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
    MisuseFixture* t = data;
    ++t->body_calls;
    t->flag = as->api->stateVariable(as, t, NULL, var_alloc, var_cleanup) == NULL;
}

static void test_state_variable_null_name(void** state)
{
    MisuseFixture* t = *state;
    run_scenario(t, body_state_null_name, NULL);
    assert_true(t->flag);
    assert_int_equal(t->alloc_calls, 0);
    assert_step_internal_error(t, "NULL");
}

static void test_state_variable_null_name_idle_root(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    ++t->iterations;
    futoin_set_cancel(as, count_cancel2, t);
    futoin_wait_external(as);
}

static void body_copy_running(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_copy_from(as, t->model);
}

static void test_copy_from_running_model(void** state)
{
    MisuseFixture* t = *state;
    t->model = futoin_asyncsteps_new(t->loop);
    assert_non_null(t->model);
    futoin_state(t->model, "var", var_alloc, var_cleanup, t);
    futoin_add(t->model, model_step, never_eh, t);
    futoin_execute(t->model, never_unhandled, t);
    run_scenario(t, body_copy_running, NULL);
    assert_int_equal(t->iterations, 1);  /* the model's step was not copied */
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
    MisuseFixture* t = data;
    FutoInOutcome out;
    ++t->body_calls;
    /* on its own running root, and on another idle root, from inside a step */
    t->flag = futoin_promise(as, &out) == FUTOIN_PROMISE_MISUSE
            && futoin_promise(t->model, &out) == FUTOIN_PROMISE_MISUSE;
    futoin_outcome_reset(&out);
}

static void test_promise_on_running_root(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    ++t->await_eh_calls;
    copy_str(t->await_code, sizeof(t->await_code), code);
    copy_str(t->await_info, sizeof(t->await_info), futoin_error_info(as));
}

/* Two parallel branches await the same completion: the second one fails. */
static void branch_await(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_await(as, t->c, NULL, NULL);
}

static void branch_await_later(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_add(as, noop_step, never_eh, t);
    futoin_add(as, branch_await, NULL, t);
}

static void body_await_twice_branches(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    FutoInAsyncSteps* p = futoin_parallel(as, rec_par_eh, t);
    p->api->add(p, t, branch_await, NULL);
    p->api->add(p, t, branch_await_later, NULL);
}

static void test_completion_awaited_twice(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_await(as, t->c, NULL, NULL);
    futoin_await(as, t->c, NULL, NULL);
}

static void test_completion_awaited_twice_same_step(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_add(as, step_fails_early, NULL, t);
    futoin_await(as, t->c, never_eh, t);
}

static void step_await_again(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    futoin_await(as, t->c, rec_await_eh, t);
}

static void test_completion_await_step_dropped(void** state)
{
    MisuseFixture* t = *state;
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
    MisuseFixture* t = data;
    FutoInCompletion* c = t->c;
    t->c = NULL;
    futoin_completion_free(c);
}

static void body_await_then_freed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    MisuseFixture* t = data;
    ++t->body_calls;
    futoin_await(as, t->c, rec_await_eh, t);
    futoin_loop_deferred(t->loop, 10, t, free_completion);
}

static void test_completion_freed_while_awaited(void** state)
{
    MisuseFixture* t = *state;
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
/* The cases of the common shape: one row, one cmocka test (misuse_support.h) */

static const MisuseCase helpers_cases[] = {
    { "test_add_sync_null_sync", body_add_sync_null, NULL, IN_STEP, 0, "NULL", NULL, -1 },
};

int main(void)
{
    const struct CMUnitTest all[] = {
        MISUSE_TEST(test_add_sync_null_callback),
        MISUSE_TEST(test_add_sync_misaligned),
        MISUSE_TEST(test_par_add_sync_misaligned),
        MISUSE_TEST(test_state_variable_null_name),
        MISUSE_TEST(test_state_variable_null_name_idle_root),
        MISUSE_TEST(test_copy_from_running_model),
        MISUSE_TEST(test_promise_on_running_root),
        MISUSE_TEST(test_completion_awaited_twice),
        MISUSE_TEST(test_completion_awaited_twice_same_step),
        MISUSE_TEST(test_completion_await_step_dropped),
        MISUSE_TEST(test_completion_freed_while_awaited),
    };
    return misuse_run_cases("misuse_helpers", helpers_cases,
            sizeof(helpers_cases) / sizeof(helpers_cases[0]), all, sizeof(all) / sizeof(all[0]));
}
