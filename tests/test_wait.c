/* SPDX-License-Identifier: MIT */
/* Waiting for external events, timeouts, cancel handlers, root cancel and
 * free (spec 1.3, 1.4, 1.6), all on the virtual clock. */
#include "tsupport.h"

static FutoInAsyncSteps* g_as; /* the waiting interface to complete from outside */

/* ---- waitExternal completed from loop callbacks ---- */

static void wait_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("wait:%s@%d", (const char*)data, (int)now_ms());
    g_as = as;
    futoin_wait_external(as);
}

static void complete_i32(void* data)
{
    tr("complete@%d", (int)now_ms());
    futoin_success1(g_as, futoin_val_i32((int32_t)(intptr_t)data));
}

static void complete_error(void* data)
{
    tr("fail@%d", (int)now_ms());
    futoin_error(g_as, (const char*)data, "external failure");
}

static void show_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d@%d", (const char*)data, (int)futoin_arg_i32(args, 0, -1), (int)now_ms());
}

static void test_wait_external_immediate(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_step, NULL, "w");
    futoin_add(root, show_arg, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    /* the step runs in the first round; this immediate is queued after the
     * dispatcher, so it finds the step waiting */
    futoin_loop_immediate(g_loop, (void*)(intptr_t)11, complete_i32);
    run();
    assert_trace("wait:w@0|complete@0|next:11@0");
    assert_ptr_equal(g_as, root);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void test_wait_external_deferred(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_step, NULL, "w1");
    futoin_add(root, show_arg, NULL, "n1");
    futoin_add(root, wait_step, NULL, "w2");
    futoin_add(root, show_arg, NULL, "n2");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 50, (void*)(intptr_t)1, complete_i32);
    futoin_loop_deferred(g_loop, 70, (void*)(intptr_t)2, complete_i32);
    run();
    assert_trace("wait:w1@0|complete@50|n1:1@50|wait:w2@50|complete@70|n2:2@70");
    futoin_asyncsteps_free(root);
}

static void test_wait_external_error(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_step, eh_tag, "w");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, on_unhandled, &u);
    futoin_loop_deferred(g_loop, 25, (void*)"ConnectError", complete_error);
    run();
    assert_trace("wait:w@0|fail@25|eh:w:ConnectError|unhandled:ConnectError");
    assert_string_equal(u.info, "external failure");
    futoin_asyncsteps_free(root);
}

/* External completion only queues the flow: the next step runs in a later
 * dispatch, not inside success(). */
static void complete_and_mark(void* data)
{
    (void)data;
    futoin_success(g_as);
    tr("returned");
    futoin_error(g_as, "Late", NULL); /* already completed: ignored (misuse) */
}

static void test_external_completion_is_queued(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_step, NULL, "w");
    futoin_add(root, show_arg, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 1, NULL, complete_and_mark);
    run();
    assert_trace("wait:w@0|returned|next:-1@1");
    assert_int_equal(g_misuse, 1);
    futoin_asyncsteps_free(root);
}

/* A branch waiting for another root's step to complete it. */
static void complete_from_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("other");
    futoin_success1(g_as, futoin_val_i32(77));
}

static void test_wait_completed_by_other_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    futoin_add(a, wait_step, NULL, "a");
    futoin_add(a, show_arg, NULL, "a2");
    futoin_add(b, complete_from_step, NULL, NULL);
    futoin_execute(a, no_unhandled, NULL);
    futoin_execute(b, no_unhandled, NULL);
    run();
    assert_trace("wait:a@0|other|a2:77@0");
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
}

/* ---- setTimeout ---- */

static void timeout_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("start@%d", (int)now_ms());
    futoin_set_timeout(as, (uint32_t)(intptr_t)data);
}

static void eh_time(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s@%d:[%s]", code, (int)now_ms(), futoin_error_info(as));
    futoin_success(as);
}

static void test_timeout_exact_time(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timeout_step, eh_time, (void*)(intptr_t)100);
    futoin_add(root, show_arg, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("start@0|eh:Timeout@100:[]|after:-1@100");
    futoin_asyncsteps_free(root);
}

/* error_info is "" after a Timeout even when an earlier error set it. */
static void fail_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "Early", "early info");
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("recover:%s:[%s]", code, futoin_error_info(as));
    futoin_success(as);
}

static void test_timeout_clears_error_info(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_info, eh_recover, NULL);
    futoin_add(root, timeout_step, eh_time, (void*)(intptr_t)5);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("recover:Early:[early info]|start@0|eh:Timeout@5:[]");
    futoin_asyncsteps_free(root);
}

static void timeout_replaced(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 100);
    futoin_set_timeout(as, 30);
}

static void test_timeout_replaced(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timeout_replaced, eh_time, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout@30:[]");
    /* the first timer is gone: the clock did not move on to 100 */
    assert_int_equal(now_ms(), 30);
    futoin_asyncsteps_free(root);
}

static void timeout_longer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 10);
    futoin_set_timeout(as, 60);
}

static void test_timeout_replaced_longer(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timeout_longer, eh_time, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout@60:[]");
    futoin_asyncsteps_free(root);
}

/* A timeout covers the step's sub-steps; frames above are aborted first
 * (innermost first), then the timed-out frame's cancel handler, then its
 * error handler. */
static void sub_waits(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s@%d", (const char*)data, (int)now_ms());
    futoin_set_cancel(as, cancel_tag, data);
}

static void sub_adds_waiter(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, sub_waits, NULL, "inner");
}

static void outer_timeout_with_subs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 50);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, step_tag, NULL, "first-sub");
    futoin_add(as, sub_adds_waiter, NULL, "middle");
    futoin_add(as, must_not_run, NULL, "third-sub");
}

static void eh_time_tag(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("eh:%s:%s@%d", (const char*)data, code, (int)now_ms());
}

static void test_timeout_covers_substeps(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_timeout_with_subs, eh_time_tag, "outer");
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("first-sub|inner@0|cancel:inner|cancel:middle|cancel:outer|"
                 "eh:outer:Timeout@50|unhandled:Timeout");
    futoin_asyncsteps_free(root);
}

/* Sub-steps completing in time: the timer is gone afterwards. */
static void outer_timeout_sub_in_time(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 50);
    futoin_add(as, wait_step, NULL, "sub");
}

static void test_timeout_substeps_in_time(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_timeout_sub_in_time, eh_time, NULL);
    futoin_add(root, show_arg, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 20, (void*)(intptr_t)3, complete_i32);
    run();
    assert_trace("wait:sub@0|complete@20|after:3@20");
    assert_int_equal(now_ms(), 20);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
}

/* An inner, shorter timeout fires first and is handled inside. */
static void inner_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 10);
}

static void outer_long_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 100);
    futoin_add(as, inner_timeout, eh_time, NULL);
    futoin_add(as, inner_timeout, eh_time, NULL);
}

static void test_nested_timeouts(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_long_timeout, eh_time_tag, "outer");
    futoin_add(root, show_arg, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout@10:[]|eh:Timeout@20:[]|after:-1@20");
    assert_int_equal(now_ms(), 20);
    futoin_asyncsteps_free(root);
}

/* The cancel handler of a timed-out step runs before its error handler. */
static void wait_with_timeout_and_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_set_timeout(as, 15);
}

static void test_timeout_cancel_before_eh(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_with_timeout_and_cancel, eh_time_tag, "s");
    futoin_add(root, step_tag, NULL, "never");
    Unhandled u = { 0 };
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("cancel:s|eh:s:Timeout@15|unhandled:Timeout");
    futoin_asyncsteps_free(root);
}

/* A late success() after the timeout is ignored and reported as misuse. */
static void test_late_success_after_timeout(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timeout_step, NULL, (void*)(intptr_t)10);
    futoin_execute(root, on_unhandled, &u);
    g_as = root;
    futoin_loop_deferred(g_loop, 30, (void*)(intptr_t)5, complete_i32);
    run();
    assert_trace("start@0|unhandled:Timeout|complete@30");
    assert_int_equal(g_misuse, 1);
    futoin_asyncsteps_free(root);
}

/* A step that arms a timeout and then succeeds at once is complete: the
 * timer must not fire, even when the dispatcher yields right after it. */
static void timeout_then_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("s1");
    futoin_set_timeout(as, 0);
    futoin_success(as);
}

static void test_timeout_then_sync_success(void** state)
{
    (void)state;
    /* burst 1 and a second root: after s1 the dispatcher yields, the next
     * round runs b1 and then the loop's due timers, before s1 is popped */
    futoin_set_burst(g_loop, 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* other = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timeout_then_success, eh_tag, "s1");
    futoin_add(root, step_tag, NULL, "s2");
    futoin_add(other, step_tag, NULL, "b1");
    futoin_add(other, step_tag, NULL, "b2");
    futoin_execute(root, no_unhandled, NULL);
    futoin_execute(other, no_unhandled, NULL);
    run();
    assert_trace("s1|b1|s2|b2");
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(other);
}

/* Likewise a cancel handler armed by a step that then succeeded at once. */
static FutoInAsyncSteps* g_root;

static void cancel_then_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_success(as);
}

static void cancel_root_cb(void* data)
{
    (void)data;
    tr("cancel-root");
    futoin_cancel(g_root);
}

static void test_cancel_after_sync_success(void** state)
{
    (void)state;
    futoin_set_burst(g_loop, 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, cancel_then_success, NULL, "s1");
    futoin_add(root, must_not_run, NULL, "s2");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_immediate(g_loop, NULL, cancel_root_cb);
    run();
    assert_trace("s1|cancel-root");
    futoin_asyncsteps_free(root);
}

/* ---- root cancel ---- */

static void l2_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_set_timeout(as, 1000);
}

static void l1_add(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, l2_wait, eh_tag, "L2");
}

static void l0_add(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, l1_add, eh_tag, "L1");
    futoin_add(as, must_not_run, NULL, "L1b");
}

static void test_root_cancel_innermost_first(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, l0_add, eh_tag, "L0");
    futoin_add(root, must_not_run, NULL, "L0b");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 40, NULL, cancel_root_cb);
    run();
    /* no error handler, no unhandled_error, the 1000 ms timer is dropped */
    assert_trace("L0|L1|L2|cancel-root|cancel:L2|cancel:L1|cancel:L0");
    assert_int_equal(now_ms(), 40);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(futoin_is_valid(root), 0);
    /* cancel on a root that is not running is a no-op */
    futoin_cancel(root);
    assert_trace("L0|L1|L2|cancel-root|cancel:L2|cancel:L1|cancel:L0");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* After cancel nothing of the root runs: a completion arriving later is
 * ignored (reported as misuse). */
static void test_no_callback_after_cancel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, wait_step, eh_tag, "w");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 10, NULL, cancel_root_cb);
    futoin_loop_deferred(g_loop, 20, (void*)(intptr_t)1, complete_i32);
    run();
    assert_trace("wait:w@0|cancel-root|complete@20");
    assert_int_equal(g_misuse, 1);
    futoin_asyncsteps_free(root);
}

/* Cancel of an idle root, and before its first step ran. */
static void test_cancel_before_first_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, must_not_run, NULL, "s1");
    futoin_cancel(root); /* idle: no-op */
    futoin_execute(root, no_unhandled, NULL);
    futoin_cancel(root); /* queued, not yet started */
    run();
    assert_trace("");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    /* the cancelled root can be reused */
    futoin_add(root, step_tag, NULL, "again");
    assert_int_equal(futoin_is_valid(root), 1);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("again");
    futoin_asyncsteps_free(root);
}

/* Cancel from inside the root's own step. */
static void cancel_self(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("self");
    futoin_set_cancel(as, cancel_tag, "self");
    futoin_cancel(as);
    tr("returned");
}

static void test_cancel_from_own_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, cancel_self, eh_tag, "s");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("self|cancel:self|returned");
    futoin_asyncsteps_free(root);
}

/* ---- free ---- */

static void test_free_running_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, l0_add, eh_tag, "L0");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_run_next(g_loop); /* one dispatch: L0, L1, L2 back to back */
    assert_trace("L0|L1|L2");
    futoin_asyncsteps_free(root);
    assert_trace("L0|L1|L2|cancel:L2|cancel:L1|cancel:L0");
    run();
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(now_ms(), 0);
}

static void free_self(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_asyncsteps_free(g_root);
    tr("after-free");
    /* memory is released when the callback returns: still usable here */
    (void)futoin_error_info(as);
}

static void sub_then_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_cancel(as, cancel_tag, "outer");
    futoin_add(as, free_self, NULL, "inner");
    futoin_add(as, must_not_run, NULL, "inner2");
}

static void test_free_from_own_callback(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, sub_then_free, eh_tag, NULL);
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("inner|cancel:inner|cancel:outer|after-free");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

static void eh_free(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("eh:%s", code);
    futoin_asyncsteps_free(g_root);
}

static void test_free_from_error_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, step_fail, eh_free, "s");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s|eh:Fail");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

static void unhandled_free(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("unhandled:%s", code);
    futoin_asyncsteps_free(as);
}

static void test_free_from_unhandled_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_fail, NULL, "s");
    futoin_execute(root, unhandled_free, NULL);
    run();
    assert_trace("s|unhandled:Fail");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* A cancel handler run by a timeout frees the root. */
static void cancel_free(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    tr("cancel:%s", (const char*)data);
    futoin_asyncsteps_free(g_root);
}

static void wait_cancel_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_free, data);
    futoin_set_timeout(as, 5);
}

static void test_free_from_cancel_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, wait_cancel_free, eh_tag, "w");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("cancel:w");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* Free from a loop callback while the root waits: the cancel handler runs
 * and a pending external completion must not be attempted afterwards. */
static void free_root_cb(void* data)
{
    (void)data;
    tr("free");
    futoin_asyncsteps_free(g_root);
}

static void test_free_waiting_root_from_loop(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, step_wait_tag, NULL, "w");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, free_root_cb);
    run();
    assert_trace("w|free|cancel:w");
}

/* Many frames at once with a timeout, a cancel handler and stack() memory
 * each (their extras span several of the engine's table chunks, and the
 * second round reuses the entries the first freed): every root's handlers
 * get its own data, at its own time, exactly once. */
enum { XROOTS = 1000 };

typedef struct XRoot {
    FutoInAsyncSteps* as;
    int index;
    int cancels;
    int cleanups;
    int timeouts;
    uint64_t timeout_at;
} XRoot;

static XRoot g_xr[XROOTS];

static void xr_cancel(FutoInAsyncSteps* as, void* data)
{
    XRoot* x = data;
    assert_ptr_equal(as, x->as);
    ++x->cancels;
}

static void xr_cleanup(void* value)
{
    XRoot* x = *(XRoot**)value;
    ++x->cleanups;
}

static void xr_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    XRoot* x = data;
    XRoot** slot = futoin_stack(as, sizeof(XRoot*), xr_cleanup);
    assert_non_null(slot);
    *slot = x;
    futoin_set_cancel(as, xr_cancel, x);
    futoin_set_timeout(as, (uint32_t)(10 + x->index % 7));
}

static void xr_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    XRoot* x = data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    /* The cancel handler ran first and the stack memory is still there. */
    assert_int_equal(x->cancels, 1);
    assert_int_equal(x->cleanups, 0);
    ++x->timeouts;
    x->timeout_at = now_ms();
    futoin_success(as);
}

static void xr_round(void)
{
    uint64_t t0 = now_ms();
    for (int i = 0; i < XROOTS; ++i) {
        XRoot* x = &g_xr[i];
        memset(x, 0, sizeof(*x));
        x->index = i;
        x->as = futoin_asyncsteps_new(g_loop);
        futoin_add(x->as, xr_step, xr_eh, x);
        futoin_execute(x->as, no_unhandled, NULL);
    }
    futoin_loop_advance(g_loop, 5);
    /* Free the even roots while their steps wait: cancel and cleanup. */
    for (int i = 0; i < XROOTS; i += 2) {
        futoin_asyncsteps_free(g_xr[i].as);
    }
    run();
    for (int i = 0; i < XROOTS; ++i) {
        XRoot* x = &g_xr[i];
        assert_int_equal(x->cancels, 1);
        assert_int_equal(x->cleanups, 1);
        if (i % 2 == 0) {
            assert_int_equal(x->timeouts, 0);
        } else {
            assert_int_equal(x->timeouts, 1);
            assert_int_equal(x->timeout_at - t0, 10 + i % 7);
            futoin_asyncsteps_free(x->as);
        }
    }
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

static void test_many_frames_with_extras(void** state)
{
    (void)state;
    xr_round();
    xr_round();
    assert_int_equal(g_misuse, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_wait_external_immediate),
        ENV_TEST(test_wait_external_deferred),
        ENV_TEST(test_wait_external_error),
        ENV_TEST(test_wait_completed_by_other_root),
        ENV_TEST(test_external_completion_is_queued),
        ENV_TEST(test_timeout_exact_time),
        ENV_TEST(test_timeout_clears_error_info),
        ENV_TEST(test_timeout_replaced),
        ENV_TEST(test_timeout_replaced_longer),
        ENV_TEST(test_timeout_covers_substeps),
        ENV_TEST(test_timeout_substeps_in_time),
        ENV_TEST(test_nested_timeouts),
        ENV_TEST(test_timeout_cancel_before_eh),
        ENV_TEST(test_late_success_after_timeout),
        ENV_TEST(test_timeout_then_sync_success),
        ENV_TEST(test_cancel_after_sync_success),
        ENV_TEST(test_root_cancel_innermost_first),
        ENV_TEST(test_no_callback_after_cancel),
        ENV_TEST(test_cancel_before_first_step),
        ENV_TEST(test_cancel_from_own_step),
        ENV_TEST(test_free_running_root),
        ENV_TEST(test_free_from_own_callback),
        ENV_TEST(test_free_from_error_handler),
        ENV_TEST(test_free_from_unhandled_error),
        ENV_TEST(test_free_from_cancel_handler),
        ENV_TEST(test_free_waiting_root_from_loop),
        ENV_TEST(test_many_frames_with_extras),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
