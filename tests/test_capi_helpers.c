/* SPDX-License-Identifier: MIT */
/* The C API helpers on steps: successStep, relinquish and copyFrom (spec 1.5). */
#include "capi_support.h"

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
    tr("recv:%d:%d:c%d", futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1),
            g_c[0].cleanups);
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
    futoin_add_loop(model, model_loop, NULL, "outer");
    futoin_success_step(model, &(FutoInArgs){ .arg0 = futoin_val_i32(1) });
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
    Unhandled u = { 0 };
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_success_step),
        ENV_TEST(test_success_step_dropped),
        ENV_TEST(test_relinquish_lets_loop_run),
        ENV_TEST(test_relinquish_other_root),
        ENV_TEST(test_relinquish_cancelled),
        ENV_TEST(test_copy_from),
        ENV_TEST(test_copy_from_loops),
        ENV_TEST(test_copy_from_owned_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
