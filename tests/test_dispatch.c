/* SPDX-License-Identifier: MIT */
/* The dispatcher: the execution burst (how many steps a flow runs before
 * others get their turn) and flows that leave the ready queue before their
 * turn. */
#include "tsupport.h"

/* ---- execution burst ---- */

static int g_imm_left;

static void recurring_imm(void* data)
{
    (void)data;
    tr("x");
    if (--g_imm_left > 0) {
        futoin_loop_immediate(g_loop, NULL, recurring_imm);
    }
}

static void burst_run(unsigned burst, int set)
{
    tr_reset();
    if (set) {
        futoin_set_burst(g_loop, burst);
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    static const char* names[] = { "s1", "s2", "s3", "s4", "s5" };
    for (int i = 0; i < 5; ++i) {
        futoin_add(root, step_tag, NULL, (void*)names[i]);
    }
    futoin_execute(root, no_unhandled, NULL);
    g_imm_left = 3;
    futoin_loop_immediate(g_loop, NULL, recurring_imm);
    run();
    futoin_asyncsteps_free(root);
}

static void test_burst(void** state)
{
    (void)state;
    OWN_ONLY("our engine's execution burst");
    burst_run(0, 0);
    assert_trace("s1|s2|s3|s4|s5|x|x|x");
    burst_run(1, 1);
    assert_trace("s1|x|s2|x|s3|x|s4|s5");
    burst_run(2, 1);
    assert_trace("s1|s2|x|s3|s4|x|s5|x");
    burst_run(0, 1); /* minimum 1 */
    assert_trace("s1|x|s2|x|s3|x|s4|s5");
}

static size_t g_pending_seen;

static void record_pending(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    g_pending_seen = futoin_loop_pending(g_loop);
}

static void test_burst_pending(void** state)
{
    (void)state;
    OWN_ONLY("our engine's burst");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    /* default burst: one dispatcher callback runs both steps */
    futoin_add(root, record_pending, NULL, NULL);
    futoin_add(root, step_tag, NULL, "s2");
    futoin_execute(root, no_unhandled, NULL);
    assert_int_equal(futoin_loop_pending(g_loop), 1); /* the dispatcher */
    assert_int_equal(futoin_loop_run_next(g_loop), 1);
    assert_int_equal(g_pending_seen, 0); /* nothing pending while a step runs */
    assert_trace("s2");
    assert_int_equal(futoin_loop_pending(g_loop), 0);

    /* burst 1: the dispatcher yields after each step and reschedules itself */
    tr_reset();
    futoin_set_burst(g_loop, 1);
    futoin_add(root, record_pending, NULL, NULL);
    futoin_add(root, step_tag, NULL, "s2");
    futoin_execute(root, no_unhandled, NULL);
    assert_int_equal(futoin_loop_run_next(g_loop), 1);
    assert_int_equal(g_pending_seen, 0);
    assert_trace("");
    assert_int_equal(futoin_loop_pending(g_loop), 1);
    assert_int_equal(futoin_loop_run_next(g_loop), 1);
    assert_trace("s2");
    run();
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
}

/* ---- ready queue: flows that leave it before their turn ---- */

/* Roots made ready and freed before their turn, many times over, inside a
 * step and outside the loop: the pool hands the same memory to the next
 * root, so one flow's memory enters and leaves the ready queue again and
 * again. None of them may run a step, and the flows still ready keep their
 * order. */
static FutoInAsyncSteps* g_survivor;

static void churn_roots(int n)
{
    for (int i = 0; i < n; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
        assert_non_null(r);
        futoin_add(r, step_tag, NULL, "never");
        futoin_execute(r, no_unhandled, NULL);
        futoin_asyncsteps_free(r);
    }
    g_survivor = futoin_asyncsteps_new(g_loop);
    futoin_add(g_survivor, step_tag, NULL, "s1");
    futoin_add(g_survivor, step_tag, NULL, "s2");
    futoin_execute(g_survivor, no_unhandled, NULL);
}

static void step_churn(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("churn");
    churn_roots((int)(intptr_t)data);
}

static void test_ready_queue_churn(void** state)
{
    (void)state;
    static const int counts[] = { 1, 126, 127, 128, 300 };
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        /* Inside a step: b is ready meanwhile, and a takes its next turn
         * after the survivor's first step. */
        tr_reset();
        FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
        FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
        futoin_add(a, step_churn, NULL, (void*)(intptr_t)counts[k]);
        futoin_add(a, step_tag, NULL, "a2");
        futoin_add(b, step_tag, NULL, "b1");
        futoin_add(b, step_tag, NULL, "b2");
        futoin_execute(a, no_unhandled, NULL);
        futoin_execute(b, no_unhandled, NULL);
        run();
        assert_trace("churn|b1|s1|a2|b2|s2");
        futoin_asyncsteps_free(g_survivor);
        futoin_asyncsteps_free(a);
        futoin_asyncsteps_free(b);

        /* Outside the loop: nothing live is left before the survivor. */
        tr_reset();
        churn_roots(counts[k]);
        run();
        assert_trace("s1|s2");
        futoin_asyncsteps_free(g_survivor);
        assert_int_equal(futoin_loop_pending(g_loop), 0);
    }
    assert_int_equal(g_misuse, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_burst),
        ENV_TEST(test_burst_pending),
        ENV_TEST(test_ready_queue_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
