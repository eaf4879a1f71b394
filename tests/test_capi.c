/* SPDX-License-Identifier: MIT */
/* The C API around the engine: successStep, relinquish, copyFrom, await,
 * promise, state variables, stack(), newInstance, isValid, the scheduler
 * entries, execution burst and addSync. */
#include "tsupport.h"

#include <pthread.h>

static void show_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d:%d", (const char*)data, futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1));
}

static void give_int(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_i32((int32_t)(intptr_t)data));
}

/* ---- successStep ---- */

static Counted g_c[4];

static void reset_counted(void)
{
    for (int i = 0; i < 4; ++i) {
        g_c[i].id = i;
        g_c[i].cleanups = 0;
    }
}

static void inject(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, give_int, NULL, (void*)(intptr_t)5);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_i32(7);
    a.arg1 = counted_val(&g_c[0]);
    futoin_success_step(as, &a);
}

static void recv_injected(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    assert_ptr_equal(futoin_arg_custom(args, 1), &g_c[0]);
    tr("recv:%d:%d:c%d", futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1), g_c[0].cleanups);
}

static void inject_none(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, give_int, NULL, (void*)(intptr_t)5);
    futoin_success_step(as, NULL);
}

static void test_success_step(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, inject, NULL, NULL);
    futoin_add(root, recv_injected, NULL, NULL);
    futoin_add(root, inject_none, NULL, NULL);
    futoin_add(root, show_arg, NULL, "none");
    /* at level 0 of an idle root too */
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_i32(42);
    futoin_success_step(root, &a);
    futoin_add(root, show_arg, NULL, "lvl0");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("recv:2:7:c0|none:0:-1|lvl0:1:42");
    assert_int_equal(g_c[0].cleanups, 1);
    futoin_asyncsteps_free(root);
}

/* A successStep that never runs (root freed first) releases its values. */
static void test_success_step_dropped(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = counted_val(&g_c[1]);
    a.arg3 = futoin_val_strdup("owned");
    futoin_success_step(root, &a);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_c[1].cleanups, 1);
}

/* ---- relinquish ---- */

static void imm_tag(void* data)
{
    tr("%s", (const char*)data);
}

static void step_schedule_imm(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("A1");
    futoin_loop_immediate(g_loop, "imm", imm_tag);
    if (data) {
        futoin_relinquish(as);
    }
}

static void test_relinquish_lets_loop_run(void** state)
{
    (void)state;
    OWN_ONLY("our engine's burst: steps of one flow run back to back");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    /* without relinquish the flow runs on */
    futoin_add(root, step_schedule_imm, NULL, NULL);
    futoin_add(root, step_tag, NULL, "A2");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A1|A2|imm");
    tr_reset();
    futoin_add(root, step_schedule_imm, NULL, (void*)1);
    futoin_add(root, step_tag, NULL, "A2");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A1|imm|A2");
    futoin_asyncsteps_free(root);
}

static void step_relinquish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_relinquish(as);
}

static void test_relinquish_other_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    futoin_add(a, step_relinquish, NULL, "a1");
    futoin_add(a, step_tag, NULL, "a2");
    futoin_add(b, step_tag, NULL, "b1");
    futoin_add(b, step_tag, NULL, "b2");
    futoin_add(b, step_tag, NULL, "b3");
    futoin_execute(a, no_unhandled, NULL);
    futoin_execute(b, no_unhandled, NULL);
    run();
    assert_trace("a1|b1|b2|b3|a2");
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
}

/* A relinquishing root cancelled while it yields. */
static FutoInAsyncSteps* g_root;

static void cancel_g_root(void* data)
{
    (void)data;
    tr("cancel");
    futoin_cancel(g_root);
}

static void test_relinquish_cancelled(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add(root, step_relinquish, NULL, "a1");
    futoin_add(root, must_not_run, NULL, "a2");
    futoin_execute(root, no_unhandled, NULL);
    /* runs after the first dispatch, before the yield completes */
    futoin_loop_immediate(g_loop, NULL, cancel_g_root);
    run();
    assert_trace("a1|cancel");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
}

/* ---- copyFrom (spec 1.5) ---- */

typedef struct Biz {
    int value;
} Biz;

static int g_biz_allocs;
static int g_biz_cleanups;

static void* biz_alloc(void* data)
{
    ++g_biz_allocs;
    Biz* b = (Biz*)malloc(sizeof(Biz));
    b->value = (int)(intptr_t)data;
    return b;
}

static void biz_cleanup(void* data, void* value)
{
    (void)data;
    ++g_biz_cleanups;
    free(value);
}

static void model_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Biz* b = (Biz*)futoin_state(as, "biz", NULL, NULL, NULL);
    tr("%s:%d:in%d", (const char*)data, b ? b->value++ : -1, futoin_args_count(args));
}

static void model_repeat(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    (void)data;
    tr("R%d", (int)i);
}

static FutoInAsyncSteps* make_model(void)
{
    FutoInAsyncSteps* model = futoin_asyncsteps_new(g_loop);
    futoin_state(model, "biz", biz_alloc, biz_cleanup, (void*)(intptr_t)100);
    futoin_add(model, model_step, NULL, "M1");
    FutoInAsyncSteps* p = futoin_parallel(model, NULL, NULL);
    futoin_add(p, step_tag, NULL, "Pa");
    futoin_add(p, step_tag, NULL, "Pb");
    futoin_repeat(model, 2, model_repeat, NULL, "RL");
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = futoin_val_i32(55);
    futoin_success_step(model, &a);
    return model;
}

static void copy_in_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("T1");
    futoin_copy_from(as, (FutoInAsyncSteps*)data);
}

static void test_copy_from(void** state)
{
    (void)state;
    OWN_ONLY("copyFrom: own objects only");
    g_biz_allocs = 0;
    g_biz_cleanups = 0;
    FutoInAsyncSteps* model = make_model();
    assert_int_equal(g_biz_allocs, 1);

    FutoInAsyncSteps* t1 = futoin_asyncsteps_new(g_loop);
    futoin_add(t1, copy_in_step, NULL, model);
    futoin_add(t1, show_arg, NULL, "T2");
    futoin_execute(t1, no_unhandled, NULL);
    run();
    assert_trace("T1|M1:100:in0|Pa|Pb|R0|R1|T2:1:55");
    /* the state variable was re-created for t1 by its allocator */
    assert_int_equal(g_biz_allocs, 2);
    Biz* mine = (Biz*)futoin_state(t1, "biz", NULL, NULL, NULL);
    Biz* models = (Biz*)futoin_state(model, "biz", NULL, NULL, NULL);
    assert_non_null(mine);
    assert_true(mine != models);
    assert_int_equal(mine->value, 101);
    assert_int_equal(models->value, 100);

    /* copied into an idle root's level 0; a root that has the variable
     * already keeps its own */
    tr_reset();
    FutoInAsyncSteps* t2 = futoin_asyncsteps_new(g_loop);
    futoin_state(t2, "biz", biz_alloc, biz_cleanup, (void*)(intptr_t)7);
    assert_int_equal(g_biz_allocs, 3);
    futoin_copy_from(t2, model);
    futoin_add(t2, show_arg, NULL, "T2");
    futoin_execute(t2, no_unhandled, NULL);
    run();
    assert_trace("M1:7:in0|Pa|Pb|R0|R1|T2:1:55");
    assert_int_equal(g_biz_allocs, 3);
    assert_int_equal(g_misuse, 0);

    futoin_asyncsteps_free(t1);
    futoin_asyncsteps_free(t2);
    assert_int_equal(g_biz_cleanups, 2);
    futoin_asyncsteps_free(model);
    assert_int_equal(g_biz_cleanups, 3);
}

/* copyFrom() of every loop form: loop() with a label that a sub-step
 * breaks by name, repeat() of 0 iterations (completes at once, the value
 * before it does not pass it), repeat() with a label longer than a small
 * block, and the copy still runs after the model is freed. */
#define LONG_LABEL "a-loop-label-longer-than-thirty-two-characters"

static void break_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_break(as, "outer");
}

static void model_loop(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    int* n = (int*)futoin_state(as, "n", NULL, NULL, NULL);
    tr("L%d", (*n)++);
    if (*n == 2) {
        futoin_add(as, break_outer, NULL, NULL);
    }
}

static void model_repeat_long(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("Q%d", (int)i);
    if (i == 1) {
        futoin_continue(as, LONG_LABEL);
    }
}

static void* int_alloc(void* data)
{
    (void)data;
    return calloc(1, sizeof(int));
}

static void int_cleanup(void* data, void* value)
{
    (void)data;
    free(value);
}

static void test_copy_from_loops(void** state)
{
    (void)state;
    OWN_ONLY("copyFrom: own objects only");
    FutoInAsyncSteps* model = futoin_asyncsteps_new(g_loop);
    futoin_loop(model, model_loop, NULL, "outer");
    futoin_success_step(model, &(FutoInArgs){.arg0 = futoin_val_i32(1)});
    futoin_repeat(model, 0, model_repeat, NULL, "zero");
    futoin_add(model, show_arg, NULL, "after0");
    futoin_repeat(model, 3, model_repeat_long, NULL, LONG_LABEL);

    FutoInAsyncSteps* copies[2];
    for (int k = 0; k < 2; ++k) {
        copies[k] = futoin_asyncsteps_new(g_loop);
        futoin_state(copies[k], "n", int_alloc, int_cleanup, NULL);
        futoin_copy_from(copies[k], model);
    }
    futoin_asyncsteps_free(model);
    for (int k = 0; k < 2; ++k) {
        tr_reset();
        futoin_execute(copies[k], no_unhandled, NULL);
        run();
        assert_trace("L0|L1|after0:0:-1|Q0|Q1|Q2");
        futoin_asyncsteps_free(copies[k]);
    }
    assert_int_equal(g_misuse, 0);
}

static void eh_code(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("eh:%s", code);
}

/* A successStep value with a cleanup cannot be copied. */
static void test_copy_from_owned_value(void** state)
{
    (void)state;
    OWN_ONLY("copyFrom: own objects only");
    reset_counted();
    FutoInAsyncSteps* model = futoin_asyncsteps_new(g_loop);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = counted_val(&g_c[2]);
    futoin_success_step(model, &a);
    Unhandled u = {0};
    FutoInAsyncSteps* t = futoin_asyncsteps_new(g_loop);
    futoin_add(t, copy_in_step, eh_code, model);
    futoin_execute(t, on_unhandled, &u);
    run();
    assert_trace("T1|eh:InternalError|unhandled:InternalError");
    assert_string_equal(u.code, FUTOIN_INTERNAL_ERROR);
    assert_non_null(strstr(u.info, "copyFrom"));
    futoin_asyncsteps_free(t);
    assert_int_equal(g_c[2].cleanups, 0); /* still the model's */
    futoin_asyncsteps_free(model);
    assert_int_equal(g_c[2].cleanups, 1);
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
    Unhandled u = {0};
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
    Unhandled u = {0};
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
    Unhandled u = {0};
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
    Unhandled u = {0};
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

/* ---- state variables ---- */

typedef struct VarLog {
    int allocs;
    int cleanups;
    char order[16];
} VarLog;

static VarLog g_vars;

static void* var_alloc(void* data)
{
    ++g_vars.allocs;
    int* v = (int*)malloc(sizeof(int));
    *v = (int)(intptr_t)data;
    return v;
}

static void var_cleanup(void* data, void* value)
{
    size_t n = strlen(g_vars.order);
    g_vars.order[n] = (char)('0' + (int)(intptr_t)data);
    g_vars.order[n + 1] = '\0';
    assert_int_equal(*(int*)value, (int)(intptr_t)data);
    ++g_vars.cleanups;
    free(value);
}

static void use_vars(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    int* a = (int*)futoin_state(as, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    int* a2 = (int*)futoin_state(as, "a", var_alloc, var_cleanup, (void*)(intptr_t)9);
    int* b = (int*)futoin_state(as, "b", var_alloc, var_cleanup, (void*)(intptr_t)2);
    assert_ptr_equal(a, a2);
    assert_int_equal(*a, 1);
    assert_int_equal(*b, 2);
    assert_null(futoin_state(as, "unknown", NULL, NULL, NULL));
    tr("allocs:%d", g_vars.allocs);
}

static void test_state_variables(void** state)
{
    (void)state;
    memset(&g_vars, 0, sizeof(g_vars));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    int* a = (int*)futoin_state(root, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    futoin_add(root, use_vars, NULL, NULL);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, use_vars, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("allocs:2|allocs:2");
    int* c = (int*)futoin_state(root, "c", var_alloc, var_cleanup, (void*)(intptr_t)3);
    assert_int_equal(*c, 3);
    assert_ptr_equal(futoin_state(root, "a", NULL, NULL, NULL), a);
    assert_int_equal(g_vars.cleanups, 0);
    futoin_asyncsteps_free(root);
    /* released with the root, last created first */
    assert_int_equal(g_vars.cleanups, 3);
    assert_string_equal(g_vars.order, "321");
}

/* A root handed out again after free() (roots are pooled) starts clean:
 * no error_info, no state variables, no steps, idle, and its old handle's
 * leftovers never run. */
static void step_fail_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "OldError", "old info");
}

static void test_reused_root_is_clean(void** state)
{
    (void)state;
    memset(&g_vars, 0, sizeof(g_vars));
    Unhandled u = {0};
    FutoInAsyncSteps* old = futoin_asyncsteps_new(g_loop);
    futoin_state(old, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    futoin_add(old, step_fail_info, NULL, NULL);
    futoin_execute(old, on_unhandled, &u);
    run();
    assert_string_equal(u.code, "OldError");
    assert_string_equal(futoin_error_info(old), "old info");
    futoin_add(old, step_tag, NULL, "never"); /* queued on the finished root */
    futoin_asyncsteps_free(old);
    assert_int_equal(g_vars.cleanups, 1);

    for (int i = 0; i < 4; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
        assert_string_equal(futoin_error_info(r), "");
        assert_null(futoin_state(r, "a", NULL, NULL, NULL));
        futoin_add(r, step_tag, NULL, "fresh");
        futoin_execute(r, no_unhandled, NULL);
        run();
        assert_string_equal(futoin_error_info(r), "");
        futoin_asyncsteps_free(r);
    }
    assert_trace("unhandled:OldError|fresh|fresh|fresh|fresh");
    assert_int_equal(g_vars.cleanups, 1);
}

/* ---- stack() ---- */

static int g_stack_cleanups;

static void stack_cleanup(void* value)
{
    ++g_stack_cleanups;
    assert_int_equal(*(int*)value, 77);
}

typedef struct Big {
    long double ld;
    char bytes[100];
} Big;

static void sub_uses_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("sub:%d:c%d", *(int*)data, g_stack_cleanups);
}

static void step_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int* p = (int*)futoin_stack(as, sizeof(int), stack_cleanup);
    assert_non_null(p);
    assert_int_equal(*p, 0);
    *p = 77;
    Big* big = (Big*)futoin_stack(as, sizeof(Big), NULL);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % _Alignof(max_align_t), 0);
    for (size_t i = 0; i < sizeof(big->bytes); ++i) {
        assert_int_equal(big->bytes[i], 0);
    }
    futoin_add(as, sub_uses_stack, NULL, p);
    if (data) {
        futoin_add(as, step_fail, NULL, "fail");
    }
}

static void show_cleanups(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s:c%d", (const char*)data, g_stack_cleanups);
}

static void eh_show_cleanups(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("eh:%s:c%d", code, g_stack_cleanups);
}

static void test_stack_memory(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    Unhandled u = {0};
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_stack, NULL, NULL);
    futoin_add(root, show_cleanups, NULL, "next");
    futoin_add(root, step_stack, eh_show_cleanups, (void*)1);
    futoin_add(root, must_not_run, NULL, "never");
    futoin_execute(root, on_unhandled, &u);
    run();
    /* released when the step ends (its sub-steps can use it); on error
     * after the failing step's own handler ran */
    assert_trace("sub:77:c0|next:c1|sub:77:c1|fail|eh:Fail:c1|unhandled:Fail");
    assert_int_equal(g_stack_cleanups, 2);
    futoin_asyncsteps_free(root);
}

/* ---- newInstance, isValid, loop accessor ---- */

static void spawn(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    assert_int_equal(futoin_is_valid(as), 1);
    FutoInAsyncSteps* child = futoin_new_instance(as);
    assert_non_null(child);
    assert_true(child != as);
#ifndef FUTOIN_TEST_FOREIGN
    assert_ptr_equal(futoin_asyncsteps_loop(child), g_loop);
#else
    assert_null(futoin_asyncsteps_loop(child)); /* a foreign root: no loop of ours */
#endif
    assert_int_equal(futoin_is_valid(child), 1);
    futoin_add(child, step_tag, NULL, "child");
    futoin_execute(child, no_unhandled, NULL);
    *(FutoInAsyncSteps**)futoin_state(as, "child", NULL, NULL, NULL) = child;
    tr("spawned");
}

static void* child_slot_alloc(void* data)
{
    return data;
}

static void test_new_instance(void** state)
{
    (void)state;
    FutoInAsyncSteps* child = NULL;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_int_equal(futoin_is_valid(root), 1);
    futoin_state(root, "child", child_slot_alloc, NULL, &child);
    futoin_add(root, spawn, NULL, NULL);
    futoin_add(root, step_tag, NULL, "parent2");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("spawned|child|parent2");
    assert_non_null(child);
    futoin_asyncsteps_free(child);
    futoin_asyncsteps_free(root);
}

/* ---- scheduler entries, is_same_thread ---- */

static void sched_cb(void* data)
{
    tr("%s@%d", (const char*)data, (int)now_ms());
}

static void step_sched(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInHandle h1 = as->api->sched_immediate(as, "imm", sched_cb);
    FutoInHandle h2 = as->api->sched_deferred(as, 20, "def", sched_cb);
    FutoInHandle h3 = as->api->sched_deferred(as, 10, "cancelled", sched_cb);
    assert_int_equal(as->api->sched_is_valid(as, &h1), 1);
    assert_int_equal(as->api->sched_is_valid(as, &h2), 1);
    assert_int_equal(as->api->sched_is_valid(as, &h3), 1);
    as->api->sched_cancel(as, &h3);
    assert_int_equal(as->api->sched_is_valid(as, &h3), 0);
    as->api->sched_cancel(as, &h3); /* zeroed handle: no-op */
    assert_int_equal(as->api->is_same_thread(as), 1);
    FutoInHandle* keep = (FutoInHandle*)futoin_state(as, "h", NULL, NULL, NULL);
    keep[0] = h1;
    keep[1] = h2;
}

static FutoInHandle g_handles[2];

static void* handles_alloc(void* data)
{
    (void)data;
    return g_handles;
}

static void* thread_is_same(void* arg)
{
    FutoInAsyncSteps* as = (FutoInAsyncSteps*)arg;
    return (void*)(intptr_t)as->api->is_same_thread(as);
}

static void test_sched_entries(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_state(root, "h", handles_alloc, NULL, NULL);
    futoin_add(root, step_sched, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("imm@0|def@20");
    assert_int_equal(root->api->sched_is_valid(root, &g_handles[0]), 0);
    assert_int_equal(root->api->sched_is_valid(root, &g_handles[1]), 0);
    assert_int_equal(root->api->is_same_thread(root), 1);
#ifdef FUTOIN_TEST_FOREIGN
    /* The foreign implementation is single-threaded: always 1. */
    futoin_asyncsteps_free(root);
    return;
#endif
    pthread_t th;
    void* res = (void*)1;
    assert_int_equal(pthread_create(&th, NULL, thread_is_same, root), 0);
    assert_int_equal(pthread_join(th, &res), 0);
    assert_int_equal((int)(intptr_t)res, 0);
    futoin_asyncsteps_free(root);
}

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
    static const char* names[] = {"s1", "s2", "s3", "s4", "s5"};
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
    static const int counts[] = {1, 126, 127, 128, 300};
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

/* ---- addSync ---- */

static uint64_t g_base; /* virtual time at the start of a sync scenario */

typedef struct TestSync {
    FutoInSync base;
    int mode; /* 0: acquire at once, 1: wait for a deferred grant, 2: reject */
    int locks;
    int unlocks;
    FutoInAsyncSteps* waiter;
} TestSync;

static void lock_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    TestSync* s = (TestSync*)data;
    s->waiter = NULL;
    tr("lock-cancel");
}

static void grant(void* data)
{
    TestSync* s = (TestSync*)data;
    if (s->waiter) {
        tr("grant@%d", (int)(now_ms() - g_base));
        futoin_success(s->waiter);
    }
}

static void ts_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    TestSync* s = (TestSync*)sync;
    ++s->locks;
    tr("lock");
    if (s->mode == 1) {
        s->waiter = as;
        futoin_set_cancel(as, lock_cancel, s);
        futoin_loop_deferred(g_loop, 10, s, grant);
    } else if (s->mode == 2) {
        futoin_error(as, FUTOIN_DEFENSE_REJECTED, "queue full");
    }
}

static void ts_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    TestSync* s = (TestSync*)sync;
    ++s->unlocks;
    tr("unlock");
}

static const FutoInSyncAPI ts_api = { .lock = ts_lock, .unlock = ts_unlock };

static void critical(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    tr("cs:%d@%d", (int)futoin_arg_i32(args, 0, -1), (int)(now_ms() - g_base));
    if (data) {
        futoin_error(as, (const char*)data, NULL);
        return;
    }
    futoin_success1(as, futoin_val_i32(futoin_arg_i32(args, 0, 0) + 1));
}

static void eh_outer(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("outer-eh:%s:[%s]", code, futoin_error_info(as));
    (void)data;
    futoin_success(as);
}

static void sync_holder(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    TestSync* s = (TestSync*)data;
    futoin_add(as, give_int, NULL, (void*)(intptr_t)9);
    futoin_add_sync(as, &s->base, critical, eh_tag,
            s->mode == 3 ? (void*)"CsFail" : NULL);
}

static void test_add_sync(void** state)
{
    (void)state;
    for (int mode = 0; mode <= 3; ++mode) {
        tr_reset();
        /* mode 3 acquires at once (like 0) and the critical section fails */
        TestSync s = {{&ts_api}, mode, 0, 0, NULL};
        g_base = now_ms();
        FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
        futoin_add(root, sync_holder, eh_outer, &s);
        futoin_add(root, show_arg, NULL, "next");
        futoin_execute(root, no_unhandled, NULL);
        run();
        switch (mode) {
        case 0:
            assert_trace("lock|cs:9@0|unlock|next:1:10");
            break;
        case 1:
            assert_trace("lock|grant@10|cs:9@10|unlock|next:1:10");
            break;
        case 2:
            /* the critical section's eh does not see lock's error */
            assert_trace("lock|outer-eh:DefenseRejected:[queue full]|next:0:-1");
            break;
        case 3:
            assert_trace("lock|cs:9@0|eh:CsFail:CsFail|unlock|outer-eh:CsFail:[]|next:0:-1");
            break;
        }
        assert_int_equal(s.locks, 1);
        assert_int_equal(s.unlocks, mode == 2 ? 0 : 1);
        futoin_asyncsteps_free(root);
    }
}

static void test_add_sync_cancel(void** state)
{
    (void)state;
    /* cancelled while waiting for the lock: lock's cancel handler, no unlock */
    TestSync s = {{&ts_api}, 1, 0, 0, NULL};
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add_sync(root, &s.base, critical, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, cancel_g_root);
    run();
    assert_trace("lock|cancel|lock-cancel");
    assert_int_equal(s.unlocks, 0);

    /* cancelled inside the critical section: unlock once */
    tr_reset();
    TestSync s2 = {{&ts_api}, 0, 0, 0, NULL};
    futoin_add_sync(root, &s2.base, step_wait_tag, NULL, "cs");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, cancel_g_root);
    run();
    assert_trace("lock|cs|cancel|cancel:cs|unlock");
    assert_int_equal(s2.unlocks, 1);
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(test_success_step),
            T(test_success_step_dropped),
            T(test_relinquish_lets_loop_run),
            T(test_relinquish_other_root),
            T(test_relinquish_cancelled),
            T(test_copy_from),
            T(test_copy_from_loops),
            T(test_copy_from_owned_value),
            T(test_await_resolve_before),
            T(test_await_resolve_after),
            T(test_await_reject),
            T(test_await_cancel_detaches),
            T(test_await_completion_freed),
            T(test_await_freed_before_step),
            T(test_await_step_dropped),
            T(test_await_twice),
            T(test_promise_ok),
            T(test_promise_error),
            T(test_promise_stalled),
            T(test_promise_timers),
            T(test_promise_misuse),
            T(test_state_variables),
            T(test_stack_memory),
            T(test_new_instance),
            T(test_sched_entries),
            T(test_burst),
            T(test_burst_pending),
            T(test_ready_queue_churn),
            T(test_add_sync),
            T(test_add_sync_cancel),
            T(test_reused_root_is_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
