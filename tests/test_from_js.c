/*
 * SPDX-License-Identifier: MIT
 *
 * The behaviours docs/FROM-JS.md promises, one test per section, so that
 * the page cannot drift from the engine.
 */
#include "tsupport.h"

static FutoInAsyncSteps* g_waiting;

static void fail_waiting(void* data)
{
    futoin_error(g_waiting, (const char*)data, NULL);
    tr("after error");
}

static void step_wait_then_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    g_waiting = as;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_loop_deferred(g_loop, 10, "Fail", fail_waiting);
}

static void eh_record(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:%s", (const char*)data, code, futoin_error_info(as));
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", (const char*)data, code);
    futoin_success(as);
}

/* A step that fails by itself does not get its own cancel handler; the
 * external error is handled at the flow's next turn. */
static void test_own_failure_no_cancel(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_wait_then_fail, eh_record, "s");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("after error|eh:s:Fail:|unhandled:Fail");
    futoin_asyncsteps_free(root);
}

static void outer_with_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, step_fail, NULL, "inner");
}

/* Both handlers on one step: the error handler first; recovery means no
 * cancel, no recovery means the cancel handler after it. */
static void test_both_handlers(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_with_cancel, eh_recover, "outer");
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("inner|eh:outer:Fail|next");
    tr_reset();
    Unhandled u = { 0 };
    futoin_add(root, outer_with_cancel, eh_record, "outer");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("inner|eh:outer:Fail:inner|cancel:outer|unhandled:Fail");
    futoin_asyncsteps_free(root);
}

static void branch_two(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* n = data;
    futoin_add(as, step_tag, NULL, (void*)(n[0] == 'a' ? "a1" : "b1"));
    futoin_add(as, step_tag, NULL, (void*)(n[0] == 'a' ? "a2" : "b2"));
}

/* Parallel branches take turns one step at a time. */
static void test_turns(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_two, NULL, "a");
    futoin_add(p, branch_two, NULL, "b");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("a1|b1|a2|b2");
    futoin_asyncsteps_free(root);
}

/* execute() only queues the root. */
static void test_execute_queues(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "step_a");
    futoin_execute(root, no_unhandled, NULL);
    tr("after execute");
    run();
    assert_trace("after execute|step_a");
    futoin_asyncsteps_free(root);
}

static void step_break_unknown(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_break(as, "outer");
}

/* break/continue outside a loop or with an unknown label: InternalError. */
static void test_break_unknown_label(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_break_unknown, eh_recover, "s");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:s:InternalError");
    futoin_asyncsteps_free(root);
}

/* An error in the first step of a branch reaches the parallel step's
 * handler; the sibling is cancelled. */
static void test_branch_error_at_start(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_recover, "par");
    futoin_add(p, step_wait_tag, NULL, "slow");
    futoin_add(p, step_fail, NULL, "bad");
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("slow|bad|cancel:slow|eh:par:Fail|next");
    futoin_asyncsteps_free(root);
}

static void inner_break(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_break(as, NULL);
}

static void body_breaks(FutoInAsyncSteps* as, void* data)
{
    futoin_add(as, inner_break, eh_record, data);
}

static void step_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, body_breaks, data, NULL);
}

/* break/continue do not reach error handlers. */
static void test_break_is_not_an_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_loop, NULL, "in");
    futoin_add(root, step_tag, NULL, "after loop");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("after loop");
    futoin_asyncsteps_free(root);
}

static void step_cancel_then_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_wait_external(as);
}

static void cancel_root(void* data)
{
    futoin_cancel((FutoInAsyncSteps*)data);
}

/* waitExternal() after setCancel() keeps the cancel handler. */
static void test_wait_keeps_cancel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_cancel_then_wait, NULL, "w");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, root, cancel_root);
    run();
    assert_trace("cancel:w");
    futoin_asyncsteps_free(root);
}

static void give7(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success1(as, futoin_val_i32(7));
}

static void body_never(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    (void)data;
    (void)i;
    tr("body");
}

static void step_repeat0(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_repeat(as, 0, body_never, data, NULL);
}

static void show_count(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("args:%d", futoin_args_count(args));
}

/* repeat(0) does not pass the previous result on. */
static void test_repeat0_no_result(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give7, NULL, NULL);
    futoin_add(root, step_repeat0, NULL, NULL);
    futoin_add(root, show_count, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("args:0");
    futoin_asyncsteps_free(root);
}

static void step_add_then_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, must_not_run, NULL, data);
    futoin_error(as, "Fail", NULL);
}

/* error() after add() is InternalError. */
static void test_error_after_add(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_add_then_error, eh_record, "s");
    futoin_execute(root, on_unhandled, &(Unhandled){ 0 });
    run();
    assert_trace(
            "eh:s:InternalError:error(Fail) after add(): sub-steps were added|unhandled:InternalError");
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_own_failure_no_cancel),
        ENV_TEST(test_both_handlers),
        ENV_TEST(test_turns),
        ENV_TEST(test_execute_queues),
        ENV_TEST(test_break_unknown_label),
        ENV_TEST(test_branch_error_at_start),
        ENV_TEST(test_break_is_not_an_error),
        ENV_TEST(test_wait_keeps_cancel),
        ENV_TEST(test_repeat0_no_result),
        ENV_TEST(test_error_after_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
