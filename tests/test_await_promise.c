/* SPDX-License-Identifier: MIT */
/* await(future) and promise() in C (spec 1.13, 2.2.3): completions resolved
 * or rejected before and after the await step, cancel and free on either
 * side, and running a root to its outcome. */
#include "capi_support.h"

static void give_int(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_i32((int32_t)(intptr_t)data));
}

/* ---- await ---- */

static FutoInCompletion* g_comp;

static void resolve_cb(void* data)
{
    tr("resolve@%d", (int)now_ms());
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_i32((int32_t)(intptr_t)data);
    assert_int_equal(futoin_completion_resolve(g_comp, &a), 0);
}

static void reject_cb(void* data)
{
    (void)data;
    tr("reject@%d", (int)now_ms());
    assert_int_equal(futoin_completion_reject(g_comp, "CommError", "link down"), 0);
}

static void show_arg_time(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d@%d", (const char*)data, (int)futoin_arg_i32(args, 0, -1), (int)now_ms());
}

static void eh_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:[%s]", (const char*)data, code, futoin_error_info(as));
}

static void test_await_resolve_before(void** state)
{
    (void)state;
    g_comp = futoin_completion_new();
    resolve_cb((void*)(intptr_t)5);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, NULL, NULL);
    futoin_add(root, show_arg_time, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("resolve@0|next:5@0");
    futoin_asyncsteps_free(root);
    futoin_completion_free(g_comp);
}

static void test_await_resolve_after(void** state)
{
    (void)state;
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, NULL, NULL);
    futoin_add(root, show_arg_time, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 30, (void*)(intptr_t)6, resolve_cb);
    run();
    assert_trace("resolve@30|next:6@30");
    /* a second resolve or reject fails and releases its args */
    reset_counted();
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = counted_val(&g_c[0]);
    assert_int_equal(futoin_completion_resolve(g_comp, &a), -1);
    assert_int_equal(g_c[0].cleanups, 1);
    assert_int_equal(futoin_completion_reject(g_comp, "X", NULL), -1);
    futoin_asyncsteps_free(root);
    futoin_completion_free(g_comp);
}

static void test_await_reject(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, eh_info, "await");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, on_unhandled, &u);
    futoin_loop_deferred(g_loop, 8, NULL, reject_cb);
    run();
    assert_trace("reject@8|eh:await:CommError:[link down]|unhandled:CommError");
    futoin_completion_free(g_comp);

    /* rejected before it is awaited */
    tr_reset();
    g_comp = futoin_completion_new();
    reject_cb(NULL);
    futoin_await(root, g_comp, eh_info, "await2");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("reject@8|eh:await2:CommError:[link down]|unhandled:CommError");
    futoin_asyncsteps_free(root);
    futoin_completion_free(g_comp);
}

static void test_await_cancel_detaches(void** state)
{
    (void)state;
    reset_counted();
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_await(root, g_comp, eh_info, "await");
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 10, NULL, cancel_g_root);
    run();
    assert_trace("cancel");
    /* resolving later reaches nobody; the values stay with the completion */
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = counted_val(&g_c[1]);
    assert_int_equal(futoin_completion_resolve(g_comp, &a), 0);
    run();
    assert_trace("cancel");
    assert_int_equal(g_misuse, 0);
    assert_int_equal(g_c[1].cleanups, 0);
    futoin_completion_free(g_comp);
    assert_int_equal(g_c[1].cleanups, 1);
    futoin_asyncsteps_free(root);
}

static void free_comp_cb(void* data)
{
    (void)data;
    tr("free");
    futoin_completion_free(g_comp);
}

static void test_await_completion_freed(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, eh_tag, "await");
    futoin_execute(root, on_unhandled, &u);
    futoin_loop_deferred(g_loop, 3, NULL, free_comp_cb);
    run();
    assert_trace("free|eh:await:InternalError|unhandled:InternalError");
    futoin_asyncsteps_free(root);
}

/* A completion freed while its await step is still queued. */
static void test_await_freed_before_step(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, eh_tag, "await");
    futoin_completion_free(g_comp);
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh:await:InternalError|unhandled:InternalError");
    futoin_asyncsteps_free(root);
}

/* A queued await step dropped with its root does not leak its completion
 * reference: freeing the completion afterwards releases it. */
static void test_await_step_dropped(void** state)
{
    (void)state;
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_await(root, g_comp, NULL, NULL);
    futoin_asyncsteps_free(root);
    futoin_completion_free(g_comp);
}

static void await_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_await(as, g_comp, NULL, NULL);
    futoin_await(as, g_comp, NULL, NULL);
}

static void test_await_twice(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    g_comp = futoin_completion_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, await_twice, NULL, NULL);
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_string_equal(u.code, FUTOIN_INTERNAL_ERROR);
    futoin_asyncsteps_free(root);
    futoin_completion_free(g_comp);
}

/* ---- promise ---- */

static void give_two(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success2(as, futoin_val_i32(3), futoin_val_strdup("heap"));
}

static void test_promise_ok(void** state)
{
    (void)state;
    OWN_ONLY("promise: own roots only");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "s1");
    futoin_add(root, give_two, NULL, NULL);
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_OK);
    assert_null(out.code);
    assert_int_equal(futoin_args_count(&out.args), 2);
    assert_int_equal(futoin_arg_i32(&out.args, 0, -1), 3);
    assert_string_equal(futoin_arg_cstr(&out.args, 1, ""), "heap");
    futoin_outcome_reset(&out);
    assert_int_equal(futoin_args_count(&out.args), 0);
    assert_trace("s1");
    futoin_asyncsteps_free(root);
}

static void fail_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_error(as, "NotImplemented", (const char*)data);
}

static void test_promise_error(void** state)
{
    (void)state;
    OWN_ONLY("promise: own roots only");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_info, NULL, "not there yet");
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_ERROR);
    assert_string_equal(out.code, "NotImplemented");
    assert_string_equal(out.info, "not there yet");
    futoin_outcome_reset(&out);
    /* the root can be run again */
    futoin_add(root, give_int, NULL, (void*)(intptr_t)8);
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_OK);
    assert_int_equal(futoin_arg_i32(&out.args, 0, -1), 8);
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(root);
}

static void wait_with_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
}

static void test_promise_stalled(void** state)
{
    (void)state;
    OWN_ONLY("promise: own roots only");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_with_cancel, NULL, "w");
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_STALLED);
    assert_trace("cancel:w");
    futoin_asyncsteps_free(root);
}

static void wait_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 100);
}

static FutoInAsyncSteps* g_as;

static void complete_g_as(void* data)
{
    (void)data;
    futoin_success1(g_as, futoin_val_i32(40));
}

static void wait_timeout_completed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 100);
    g_as = as;
    futoin_loop_deferred(g_loop, 40, NULL, complete_g_as);
}

static void test_promise_timers(void** state)
{
    (void)state;
    OWN_ONLY("promise: own roots only");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, wait_timeout, NULL, NULL);
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_ERROR);
    assert_string_equal(out.code, FUTOIN_TIMEOUT);
    assert_string_equal(out.info, "");
    assert_int_equal(now_ms(), 100);
    futoin_add(root, wait_timeout_completed, NULL, NULL);
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_OK);
    assert_int_equal(futoin_arg_i32(&out.args, 0, -1), 40);
    assert_int_equal(now_ms(), 140);
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(root);
}

static void promise_inside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* other = futoin_new_instance(as);
    FutoInOutcome out;
    tr("inside:%d", futoin_promise(other, &out));
    futoin_asyncsteps_free(other);
}

static void test_promise_misuse(void** state)
{
    (void)state;
    OWN_ONLY("promise: own roots only");
    FutoInOutcome out;
    assert_int_equal(futoin_promise(NULL, &out), FUTOIN_PROMISE_MISUSE);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_int_equal(futoin_promise(root, NULL), FUTOIN_PROMISE_MISUSE);
    futoin_add(root, promise_inside, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    /* running root */
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_MISUSE);
    run();
    assert_trace("inside:3");
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_await_resolve_before),
        ENV_TEST(test_await_resolve_after),
        ENV_TEST(test_await_reject),
        ENV_TEST(test_await_cancel_detaches),
        ENV_TEST(test_await_completion_freed),
        ENV_TEST(test_await_freed_before_step),
        ENV_TEST(test_await_step_dropped),
        ENV_TEST(test_await_twice),
        ENV_TEST(test_promise_ok),
        ENV_TEST(test_promise_error),
        ENV_TEST(test_promise_stalled),
        ENV_TEST(test_promise_timers),
        ENV_TEST(test_promise_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
