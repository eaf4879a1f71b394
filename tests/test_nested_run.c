/* SPDX-License-Identifier: MIT */
/*
 * No round inside a round: running a loop from inside one of its own
 * callbacks (a step, a timer, an immediate) is refused and reported, and
 * runs nothing: in particular not the timeout of the step whose callback
 * made the call, which would otherwise fire with that callback still on
 * the C stack and leave its later success() ignored.
 */
#include "tsupport.h"

static int g_iterate_rc;

/* A step with a timeout that has already expired by the virtual clock when
 * it tries to run the loop: a nested round would fire the timeout. */
static void step_iterates(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 0);
    int64_t delay = 123;
    g_iterate_rc = futoin_loop_iterate(g_loop, &delay);
    tr("iterate:%d", g_iterate_rc);
    futoin_loop_run(g_loop);
    tr("run-returned");
    assert_int_equal(futoin_loop_run_next(g_loop), -1);
    futoin_loop_advance(g_loop, 1000);
    assert_int_equal((int)now_ms(), 0);
    futoin_success1(as, futoin_val_i32(3));
}

static void after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data;
    tr("after:%lld", (long long)futoin_arg_int(args, 0, -1));
}

static void test_step_runs_its_loop(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, step_iterates, eh_tag, (void*)"S");
    futoin_add(r, after, NULL, NULL);
    futoin_execute(r, on_unhandled, &u);
    run();
    /* The step's own success() applied: no Timeout, no cancel. */
    assert_trace("iterate:-1|run-returned|after:3");
    assert_int_equal(u.calls, 0);
    assert_int_equal(g_misuse, 4);
    assert_non_null(strstr(g_misuse_msg, "futoin_loop_advance() called from inside a callback"));
    futoin_asyncsteps_free(r);
}

static FutoInAsyncSteps* g_idle_root;

static void timer_runs_loop(void* data)
{
    (void)data;
    futoin_loop_run(g_loop);
    tr("timer-after-run");
    FutoInOutcome out;
    assert_int_equal(futoin_promise(g_idle_root, &out), FUTOIN_PROMISE_MISUSE);
    futoin_outcome_reset(&out);
}

static void later_timer(void* data)
{
    (void)data;
    tr("later@%llu", (unsigned long long)now_ms());
}

static void test_timer_runs_its_loop(void** state)
{
    (void)state;
    g_idle_root = futoin_asyncsteps_new(g_loop);
    futoin_add(g_idle_root, step_tag, NULL, (void*)"idle-root-step");
    futoin_loop_deferred(g_loop, 5, NULL, timer_runs_loop);
    futoin_loop_deferred(g_loop, 10, NULL, later_timer);
    run();
    /* The nested run() ran nothing: the later timer at its own time. */
    assert_trace("timer-after-run|later@10");
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_loop_run() called from inside a callback"));
    /* Outside the loop's callbacks the same root runs. */
    FutoInOutcome out;
    assert_int_equal(futoin_promise(g_idle_root, &out), FUTOIN_PROMISE_OK);
    futoin_outcome_reset(&out);
    assert_trace("timer-after-run|later@10|idle-root-step");
    futoin_asyncsteps_free(g_idle_root);
}

static void imm_iterates(void* data)
{
    (void)data;
    tr("imm:%d", futoin_loop_iterate(g_loop, NULL));
}

/* Without an engine on the loop the report goes to stderr; still refused. */
static void test_bare_loop(void** state)
{
    (void)state;
    FutoInLoop* bare = futoin_loop_new_virtual();
    assert_non_null(bare);
    FutoInLoop* saved = g_loop;
    g_loop = bare;
    futoin_loop_immediate(bare, NULL, imm_iterates);
    assert_int_equal(futoin_loop_iterate(bare, NULL), 0);
    g_loop = saved;
    assert_trace("imm:-1");
    futoin_loop_free(bare);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_step_runs_its_loop),
        ENV_TEST(test_timer_runs_its_loop),
        ENV_TEST(test_bare_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
