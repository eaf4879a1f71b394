/* SPDX-License-Identifier: MIT */
/* Parallel steps (spec 1.4): interleaving, results through state, error
 * propagation and sibling cancel, flows and rootId, nesting, edge cases. */
#include "tsupport.h"

/* ---- branches interleave step by step ---- */

static void branch_with_subs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* name = (const char*)data;
    tr("%s", name);
    static char names[4][3][8];
    int b = name[0] - 'A';
    for (int i = 0; i < 3; ++i) {
        snprintf(names[b][i], sizeof(names[b][i]), "%s.%d", name, i + 1);
        futoin_add(as, step_tag, NULL, names[b][i]);
    }
}

static void test_branches_interleave(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "before");
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_with_subs, NULL, "A");
    futoin_add(p, branch_with_subs, NULL, "B");
    futoin_add(p, step_tag, NULL, "C");
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("before|A|B|C|A.1|B.1|A.2|B.2|A.3|B.3|after");
    futoin_asyncsteps_free(root);
}

/* A branch waiting for an external event does not hold the others up. */
static FutoInAsyncSteps* g_waiting_branch;

static void branch_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s@%d", (const char*)data, (int)now_ms());
    g_waiting_branch = as;
    futoin_wait_external(as);
}

static void complete_branch(void* data)
{
    (void)data;
    tr("complete@%d", (int)now_ms());
    futoin_success(g_waiting_branch);
}

static void branch_two_steps(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_add(as, step_tag, NULL, "fast2");
}

static void show_time(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s@%d", (const char*)data, (int)now_ms());
}

static void test_waiting_branch(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_wait, NULL, "slow");
    futoin_add(p, branch_two_steps, NULL, "fast1");
    futoin_add(root, show_time, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 30, NULL, complete_branch);
    run();
    assert_trace("slow@0|fast1|fast2|complete@30|after@30");
    futoin_asyncsteps_free(root);
}

/* ---- results through state; the parallel step itself has no result ---- */

typedef struct Results {
    int r[3];
    int allocs;
} Results;

static Results g_results;

static void* results_alloc(void* data)
{
    (void)data;
    ++g_results.allocs;
    memset(g_results.r, 0, sizeof(g_results.r));
    return &g_results;
}

static void branch_result(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    Results* res = (Results*)futoin_state(as, "results", results_alloc, NULL, NULL);
    res->r[i] = (i + 1) * 10;
    futoin_success1(as, futoin_val_i32(i)); /* dropped with the branch */
}

static void sum_results(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    Results* res = (Results*)futoin_state(as, "results", results_alloc, NULL, NULL);
    tr("sum:%d:args:%d", res->r[0] + res->r[1] + res->r[2], futoin_args_count(args));
}

static void give_before(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success1(as, futoin_val_i32(1234));
}

static void branch_no_input(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("branch-args:%d", futoin_args_count(args));
}

static void test_results_via_state(void** state)
{
    (void)state;
    g_results.allocs = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give_before, NULL, NULL);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_no_input, NULL, NULL);
    for (int i = 0; i < 3; ++i) {
        futoin_add(p, branch_result, NULL, (void*)(intptr_t)i);
    }
    futoin_add(root, sum_results, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* branches start with no input; the step after the parallel gets none */
    assert_trace("branch-args:0|sum:60:args:0");
    assert_int_equal(g_results.allocs, 1);
    futoin_asyncsteps_free(root);
}

/* ---- the first error cancels the siblings, then the parallel's eh ---- */

static void branch_fail_later(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_add(as, step_fail, NULL, "failing");
}

static void branch_sub_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, step_wait_tag, NULL, "deep");
}

static void eh_par(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("par-eh:%s:%s:[%s]", (const char*)data, code, futoin_error_info(as));
}

static void test_first_error_cancels_siblings(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par, "P");
    futoin_add(p, step_wait_tag, NULL, "w1");
    futoin_add(p, branch_sub_wait, NULL, "w2");
    futoin_add(p, branch_fail_later, NULL, "f");
    futoin_add(p, branch_two_steps, NULL, "late");
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, on_unhandled, &u);
    run();
    /* turns: w1, w2, f, late, deep, failing -> siblings aborted in order,
     * each innermost first; "fast2" of the last branch never runs */
    assert_trace("w1|w2|f|late|deep|failing|cancel:w1|cancel:deep|cancel:w2|"
                 "par-eh:P:Fail:[failing]|unhandled:Fail");
    assert_int_equal(u.calls, 1);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
}

/* The parallel step's eh can recover. */
static void eh_par_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("par-eh:%s", code);
    futoin_success1(as, futoin_val_i32(5));
}

static void show_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d", (const char*)data, (int)futoin_arg_i32(args, 0, -1));
}

static void test_parallel_eh_recovers(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par_recover, NULL);
    futoin_add(p, step_fail, NULL, "f");
    futoin_add(p, step_wait_tag, NULL, "w");
    futoin_add(root, show_arg, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* the failing branch runs first: its sibling never started */
    assert_trace("f|par-eh:Fail|after:5");
    futoin_asyncsteps_free(root);
}

/* A branch's own eh recovering keeps the parallel step alive. */
static void eh_recover_plain(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("branch-eh:%s:%s", (const char*)data, code);
    futoin_success(as);
}

static void test_branch_recovers_itself(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par, "P");
    futoin_add(p, step_fail, eh_recover_plain, "f");
    futoin_add(p, branch_two_steps, NULL, "other");
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("f|branch-eh:f:Fail|other|fast2|after");
    futoin_asyncsteps_free(root);
}

/* A waiting branch failing from outside cancels its siblings too. */
static void fail_branch(void* data)
{
    (void)data;
    tr("fail@%d", (int)now_ms());
    futoin_error(g_waiting_branch, "External", "from loop");
}

static void test_external_branch_error(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par, "P");
    futoin_add(p, step_wait_tag, NULL, "w1");
    futoin_add(p, branch_wait, NULL, "w2");
    futoin_execute(root, on_unhandled, &u);
    futoin_loop_deferred(g_loop, 12, NULL, fail_branch);
    run();
    assert_trace("w1|w2@0|fail@12|cancel:w1|par-eh:P:External:[from loop]|unhandled:External");
    futoin_asyncsteps_free(root);
}

/* A timeout on the step that holds the parallel aborts every branch. */
static void step_with_timed_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 25);
    FutoInAsyncSteps* p = futoin_parallel(as, eh_par, "P");
    futoin_add(p, step_wait_tag, NULL, "b1");
    futoin_add(p, step_wait_tag, NULL, "b2");
}

static void eh_outer_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("outer-eh:%s@%d", code, (int)now_ms());
    futoin_success(as);
}

static void test_timeout_aborts_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_with_timed_parallel, eh_outer_recover, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* the parallel step is above the timed-out frame: aborted, not failed,
     * so its eh is not called */
    assert_trace("b1|b2|cancel:b1|cancel:b2|outer-eh:Timeout@25|after");
    futoin_asyncsteps_free(root);
}

/* ---- rootId: distinct per branch, equal within a flow ---- */

static ptrdiff_t g_ids[8];

static void record_id_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    assert_int_equal(futoin_root_id(as), g_ids[i]);
    tr("same%d", i);
}

static void record_id(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    g_ids[i] = futoin_root_id(as);
    futoin_add(as, record_id_sub, NULL, data);
}

static void record_root_ids(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_ids[0] = futoin_root_id(as);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    /* the parallel interface acts on the flow that created it */
    assert_int_equal(futoin_root_id(p), g_ids[0]);
    for (intptr_t i = 1; i <= 3; ++i) {
        futoin_add(p, record_id, NULL, (void*)i);
    }
    futoin_add(as, record_id_sub, NULL, (void*)(intptr_t)0);
}

static void test_root_ids(void** state)
{
    (void)state;
    memset(g_ids, 0, sizeof(g_ids));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, record_root_ids, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("same1|same2|same3|same0");
    assert_int_equal(g_ids[0], futoin_root_id(root));
    for (int i = 0; i <= 3; ++i) {
        for (int j = i + 1; j <= 3; ++j) {
            assert_true(g_ids[i] != g_ids[j]);
        }
    }
    FutoInAsyncSteps* other = futoin_asyncsteps_new(g_loop);
    assert_true(futoin_root_id(other) != futoin_root_id(root));
    futoin_asyncsteps_free(other);
    futoin_asyncsteps_free(root);
}

/* ---- nested parallel ---- */

static void branch_nested(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_tag, NULL, "X1");
    futoin_add(p, step_tag, NULL, "X2");
    futoin_add(as, step_tag, NULL, "X-after");
}

static void test_nested_parallel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_nested, NULL, "X");
    /* a parallel added as a branch of a parallel */
    FutoInAsyncSteps* pp = futoin_parallel(p, NULL, NULL);
    futoin_add(pp, step_tag, NULL, "Y1");
    futoin_add(pp, step_tag, NULL, "Y2");
    futoin_add(p, step_tag, NULL, "Z");
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("X|Z|Y1|Y2|X1|X2|X-after|after");
    futoin_asyncsteps_free(root);
}

/* An error deep in a nested parallel reaches the outer parallel's eh after
 * both levels of siblings were cancelled. */
static void branch_nested_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    FutoInAsyncSteps* p = futoin_parallel(as, eh_par, "inner");
    futoin_add(p, step_wait_tag, NULL, "in-w");
    futoin_add(p, branch_fail_later, NULL, "in-f");
}

static void test_nested_parallel_error(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par, "outer");
    futoin_add(p, step_wait_tag, NULL, "out-w");
    futoin_add(p, branch_nested_fail, NULL, NULL);
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("out-w|in-w|in-f|failing|cancel:in-w|par-eh:inner:Fail:[failing]|"
                 "cancel:out-w|par-eh:outer:Fail:[failing]|unhandled:Fail");
    futoin_asyncsteps_free(root);
}

/* Root cancel: branches are aborted before the frame holding the parallel. */
static FutoInAsyncSteps* g_root;

static void holder(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_sub_wait, NULL, "b1");
    futoin_add(p, step_wait_tag, NULL, "b2");
}

static void cancel_root_cb(void* data)
{
    (void)data;
    tr("cancel-root");
    futoin_cancel(g_root);
}

static void test_root_cancel_with_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, holder, eh_tag, "holder");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 10, NULL, cancel_root_cb);
    run();
    assert_trace("b1|b2|deep|cancel-root|cancel:deep|cancel:b1|cancel:b2|cancel:holder");
    futoin_asyncsteps_free(root);
}

/* ---- parallel on an idle root, empty parallel, many branches ---- */

static void test_empty_parallel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give_before, NULL, NULL);
    futoin_parallel(root, eh_tag, "P");
    futoin_add(root, show_arg, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("after:-1");
    futoin_asyncsteps_free(root);
}

static void add_empty_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_parallel(as, NULL, NULL);
    futoin_add(as, step_tag, NULL, "sub-after");
}

static void test_empty_parallel_substep(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, add_empty_parallel, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("sub-after|after");
    futoin_asyncsteps_free(root);
}

static int g_branch_runs[100];
static int g_branch_order[100];
static int g_branch_n;

static void many_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++g_branch_runs[(intptr_t)data];
}

static void many_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    g_branch_order[g_branch_n++] = (int)(intptr_t)data;
    futoin_add(as, many_sub, NULL, data);
}

static void count_branches(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    int total = 0;
    for (int i = 0; i < 100; ++i) {
        total += g_branch_runs[i];
    }
    tr("total:%d", total);
}

static void test_hundred_branches(void** state)
{
    (void)state;
    memset(g_branch_runs, 0, sizeof(g_branch_runs));
    g_branch_n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    for (intptr_t i = 0; i < 100; ++i) {
        futoin_add(p, many_branch, NULL, (void*)i);
    }
    futoin_add(root, count_branches, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("total:100");
    assert_int_equal(g_branch_n, 100);
    for (int i = 0; i < 100; ++i) {
        assert_int_equal(g_branch_order[i], i);
        assert_int_equal(g_branch_runs[i], 1);
    }
    futoin_asyncsteps_free(root);
}

/* The same parallel step in a loop: new branches every iteration. */
static void loop_with_parallel(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    static char names[3][2][8];
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int b = 0; b < 2; ++b) {
        snprintf(names[i][b], sizeof(names[i][b]), "%d.%c", (int)i, 'a' + b);
        futoin_add(p, step_tag, NULL, names[i][b]);
    }
}

static void test_parallel_in_repeat(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, loop_with_parallel, NULL, NULL);
    futoin_add(root, step_tag, NULL, "done");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("0.a|0.b|1.a|1.b|2.a|2.b|done");
    futoin_asyncsteps_free(root);
}

/* Two roots, each with a parallel: all flows share one ready queue. */
static void test_parallel_two_roots(void** state)
{
    (void)state;
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* pa = futoin_parallel(a, NULL, NULL);
    futoin_add(pa, branch_two_steps, NULL, "a1");
    futoin_add(pa, step_tag, NULL, "a2");
    FutoInAsyncSteps* pb = futoin_parallel(b, NULL, NULL);
    futoin_add(pb, step_tag, NULL, "b1");
    futoin_add(pb, step_tag, NULL, "b2");
    futoin_execute(a, no_unhandled, NULL);
    futoin_execute(b, no_unhandled, NULL);
    run();
    assert_trace("a1|a2|b1|b2|fast2");
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
}

/* A branch's own timeout: the parallel fails with Timeout and the sibling
 * is cancelled. */
static void branch_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_set_timeout(as, 15);
}

static void eh_par_time(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("par-eh:%s@%d", code, (int)now_ms());
    futoin_success(as);
}

static void test_branch_timeout(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, eh_par_time, NULL);
    futoin_add(p, step_wait_tag, NULL, "w");
    futoin_add(p, branch_timeout, eh_tag, "t");
    futoin_add(root, show_time, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* the timed-out branch: its cancel handler, then its eh; then the
     * sibling is cancelled and the parallel's eh runs */
    assert_trace("w|t|cancel:t|eh:t:Timeout|cancel:w|par-eh:Timeout@15|after@15");
    futoin_asyncsteps_free(root);
}

/* Root cancel and free from inside a branch's own step. */
static void branch_cancel_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    if (strcmp((const char*)data, "free") == 0) {
        futoin_asyncsteps_free(g_root);
    } else {
        futoin_cancel(g_root);
    }
    tr("returned");
}

static void test_cancel_free_from_branch(void** state)
{
    (void)state;
    for (int i = 0; i < 2; ++i) {
        tr_reset();
        const char* what = i ? "free" : "cancel";
        FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
        g_root = root;
        FutoInAsyncSteps* p = futoin_parallel(root, eh_tag, "P");
        futoin_add(p, step_wait_tag, NULL, "w");
        futoin_add(p, branch_cancel_root, NULL, (void*)what);
        futoin_add(p, must_not_run, NULL, "third"); /* its turn never comes */
        futoin_add(root, must_not_run, NULL, "after");
        futoin_execute(root, no_unhandled, NULL);
        run();
        /* every branch is aborted, the running one included; no eh */
        char expected[128];
        snprintf(expected, sizeof(expected), "w|%s|cancel:w|cancel:%s|returned", what, what);
        assert_trace(expected);
        assert_int_equal(futoin_loop_pending(g_loop), 0);
        if (i == 0) {
            futoin_asyncsteps_free(root);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_branches_interleave),
        ENV_TEST(test_waiting_branch),
        ENV_TEST(test_results_via_state),
        ENV_TEST(test_first_error_cancels_siblings),
        ENV_TEST(test_parallel_eh_recovers),
        ENV_TEST(test_branch_recovers_itself),
        ENV_TEST(test_external_branch_error),
        ENV_TEST(test_timeout_aborts_branches),
        ENV_TEST(test_root_ids),
        ENV_TEST(test_nested_parallel),
        ENV_TEST(test_nested_parallel_error),
        ENV_TEST(test_root_cancel_with_branches),
        ENV_TEST(test_empty_parallel),
        ENV_TEST(test_empty_parallel_substep),
        ENV_TEST(test_hundred_branches),
        ENV_TEST(test_parallel_in_repeat),
        ENV_TEST(test_parallel_two_roots),
        ENV_TEST(test_branch_timeout),
        ENV_TEST(test_cancel_free_from_branch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
