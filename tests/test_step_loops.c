/* SPDX-License-Identifier: MIT */
/* Loops (spec 1.8): loop, repeat, forEach, break/continue with and without
 * labels, across sub-steps and parallel branches, waiting inside bodies. */
#include "tsupport.h"

#include <futoin/introspect.h>

static int g_n;

static void show_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    tr("%s:[%s]:%d", (const char*)data, futoin_error_info(as), futoin_args_count(args));
}

/* ---- loop + break, repeat ---- */

static void body_break_at3(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("it%d", g_n);
    if (g_n++ == 3) {
        futoin_break(as, NULL);
        return;
    }
    futoin_success1(as, futoin_val_i32(g_n)); /* dropped at iteration end */
}

static void test_loop_break(void** state)
{
    (void)state;
    g_n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_break_at3, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("it0|it1|it2|it3|after:[]:0");
    futoin_asyncsteps_free(root);
}

/* ---- futoin_loop(): the deprecated name of futoin_add_loop(), until 1.0 ---- */

/* data is the loop's label. The first iteration records the loop's frame
 * ("label@line": where the tracing build says the loop was added, else 0);
 * the third leaves the loop by its label. */
static void body_by_own_label(FutoInAsyncSteps* as, void* data)
{
    const char* label = data;
    if (g_n == 0) {
        FutoInFrameInfo fi;
        if (futoin_frame_info(as, 1, &fi, sizeof(fi)) == 0 && fi.kind == FUTOIN_FRAME_LOOP
                && fi.label && strcmp(fi.label, label) == 0) {
            tr("%s@%u", fi.label, (unsigned)fi.line);
        } else {
            tr("%s:no loop frame", label);
        }
    }
    tr("%s%d", label, g_n);
    if (++g_n == 3) {
        g_n = 0;
        futoin_break(as, label);
    }
}

/* Existing code keeps working: futoin_loop() adds the same loop step as
 * futoin_add_loop(), through the inline function and, in the tracing build,
 * through the macro that records the caller's line. The one deliberate use
 * of the old name; everything else must use futoin_add_loop(). */
static void test_deprecated_futoin_loop_alias(void** state)
{
    (void)state;
    g_n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    unsigned new_line = __LINE__ + 1; /* the line of the call below */
    futoin_add_loop(root, body_by_own_label, "new", "new");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    unsigned old_line = __LINE__ + 1; /* the line of the call below */
    futoin_loop(root, body_by_own_label, "old", "old");
#pragma GCC diagnostic pop
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
#if FUTOIN_TRACING
    if (!futoin_tracing_enabled()) {
        new_line = old_line = 0; /* the macros ran, but this library drops locations */
    }
#else
    new_line = old_line = 0;
#endif
    char want[128];
    snprintf(want, sizeof(want), "new@%u|new0|new1|new2|old@%u|old0|old1|old2|after:[old]:0",
            new_line, old_line);
    assert_trace(want);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void body_repeat(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    tr("%s%d", (const char*)data, (int)i);
}

static void test_repeat(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 5, body_repeat, "r", NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("r0|r1|r2|r3|r4|after:[]:0");
    futoin_asyncsteps_free(root);
}

static void test_repeat_zero(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "before");
    futoin_repeat(root, 0, body_repeat, "never", NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("before|after:[]:0");
    futoin_asyncsteps_free(root);
}

/* Break from a repeat before its count is reached. */
static void body_repeat_break(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("r%d", (int)i);
    if (i == 2) {
        futoin_break(as, NULL);
    }
}

static void test_repeat_break(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 10, body_repeat_break, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("r0|r1|r2|after:[]:0");
    futoin_asyncsteps_free(root);
}

/* ---- continue ---- */

static void sub_of_iter(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("sub%d", (int)(intptr_t)data);
}

static void body_continue_odd(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("r%d", (int)i);
    if (i % 2) {
        futoin_continue(as, NULL);
        return;
    }
    futoin_add(as, sub_of_iter, NULL, (void*)(intptr_t)i);
}

static void test_continue_in_body(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 4, body_continue_odd, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* the last continue left its label ("") as error_info */
    assert_trace("r0|sub0|r1|r2|sub2|r3|after:[]:0");
    futoin_asyncsteps_free(root);
}

/* continue from a sub-step skips the iteration's remaining sub-steps */
static void sub_continue_at1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    tr("s1-%d", i);
    if (i == 1) {
        futoin_continue(as, NULL);
    }
}

static void sub_second(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("s2-%d", (int)(intptr_t)data);
}

static void body_two_subs(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("b%d", (int)i);
    futoin_add(as, sub_continue_at1, NULL, (void*)(intptr_t)i);
    futoin_add(as, sub_second, NULL, (void*)(intptr_t)i);
}

static void test_continue_from_substep(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, body_two_subs, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("b0|s1-0|s2-0|b1|s1-1|b2|s1-2|s2-2|after");
    futoin_asyncsteps_free(root);
}

/* continue from a sub-step aborts the iteration: a cancel handler the body
 * armed runs; an iteration that completes does not call it. */
static void sub_continue_first(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    tr("sub%d", i);
    if (i == 0) {
        futoin_continue(as, NULL);
    }
}

static void body_cancel_continue(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    static const char* names[] = { "iter0", "iter1" };
    futoin_set_cancel(as, cancel_tag, (void*)names[i]);
    futoin_add(as, sub_continue_first, NULL, (void*)(intptr_t)i);
}

static void test_continue_cancels_iteration(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 2, body_cancel_continue, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("sub0|cancel:iter0|sub1|after");
    futoin_asyncsteps_free(root);
}

/* ---- break from inside a sub-step; cancel handlers of aborted frames ---- */

static void sub_break(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data); /* own break: dropped */
    futoin_break(as, NULL);
}

static void sub_mid(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, sub_break, eh_tag, "brk");
    futoin_add(as, must_not_run, NULL, "mid2");
}

static void body_nested_break(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("body");
    futoin_set_cancel(as, cancel_tag, "iter");
    futoin_add(as, sub_mid, eh_tag, "mid");
    futoin_add(as, must_not_run, NULL, "body2");
}

static void test_break_from_substep(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_nested_break, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* no error handler sees a break; aborted frames' cancel handlers run */
    assert_trace("body|brk|cancel:mid|cancel:iter|after:[]:0");
    futoin_asyncsteps_free(root);
}

/* ---- labels through nested loops ---- */

static int g_outer;
static int g_inner;

static void inner_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("o%d.i%d", g_outer, g_inner);
    if (g_outer == 1 && g_inner == 1) {
        futoin_continue(as, "OUTER");
        return;
    }
    if (g_outer == 2 && g_inner == 0) {
        futoin_break(as, "OUTER");
        return;
    }
    if (g_inner == 2) {
        futoin_break(as, NULL); /* the innermost loop */
        return;
    }
    ++g_inner;
}

static void inner_body(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    futoin_add(as, inner_sub, NULL, NULL);
}

static void outer_after_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("o%d-end:[%s]", g_outer, futoin_error_info(as));
}

static void outer_body(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    ++g_outer;
    g_inner = 0;
    futoin_add_loop(as, inner_body, NULL, "INNER");
    futoin_add(as, outer_after_inner, NULL, NULL);
}

static void test_labels_nested(void** state)
{
    (void)state;
    g_outer = -1;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, outer_body, NULL, "OUTER");
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("o0.i0|o0.i1|o0.i2|o0-end:[]|"
                 "o1.i0|o1.i1|"
                 "o2.i0|after:[OUTER]:0");
    futoin_asyncsteps_free(root);
}

/* break("INNER") by name from the inner body; continue("INNER") too */
static void named_inner(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("in%d", (int)i);
    if (i == 0) {
        futoin_continue(as, "INNER");
    } else {
        futoin_break(as, "INNER");
    }
}

static void named_outer(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("out%d", (int)i);
    futoin_repeat(as, 5, named_inner, NULL, "INNER");
    futoin_add(as, show_info, NULL, "inner-done");
}

static void test_labels_by_name(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 2, named_outer, NULL, "OUTER");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("out0|in0|in1|inner-done:[INNER]:0|out1|in0|in1|inner-done:[INNER]:0");
    futoin_asyncsteps_free(root);
}

/* A long label (beyond any inline buffer) works and becomes error_info. */
#define LONG_LABEL "a-label-that-is-definitely-longer-than-thirty-two-characters"

static void long_label_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    (void)i;
    char label[80];
    snprintf(label, sizeof(label), "%s", LONG_LABEL); /* a stack copy */
    futoin_break(as, label);
}

static void test_long_label(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, long_label_body, NULL, LONG_LABEL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("after:[" LONG_LABEL "]:0");
    futoin_asyncsteps_free(root);
}

/* ---- break/continue from a parallel branch into the outer loop ---- */

static void branch_breaks(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_add(as, sub_break, NULL, "brk");
}

static void body_with_parallel(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("body");
    FutoInAsyncSteps* p = futoin_parallel(as, eh_tag, "par");
    futoin_add(p, step_wait_tag, NULL, "b1");
    futoin_add(p, branch_breaks, NULL, "b2");
    futoin_add(as, must_not_run, NULL, "after-par");
}

static void test_break_from_branch(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_with_parallel, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* the sibling is cancelled; the parallel's eh is not called */
    assert_trace("body|b1|b2|brk|cancel:b1|after:[]:0");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void branch_continue_or_break(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("br%d", g_n);
    if (g_n++ < 2) {
        futoin_continue(as, "L");
    } else {
        futoin_break(as, "L");
    }
}

static void body_inner_loop_parallel(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_wait_tag, NULL, "w");
    futoin_add(p, branch_continue_or_break, NULL, NULL);
}

static void test_continue_from_branch_with_label(void** state)
{
    (void)state;
    g_n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_inner_loop_parallel, NULL, "L");
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("w|br0|cancel:w|w|br1|cancel:w|w|br2|cancel:w|after:[L]:0");
    futoin_asyncsteps_free(root);
}

/* A branch with a loop of its own: break without label ends the branch's
 * loop, not the one outside. */
static void branch_own_loop_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("own%d", (int)i);
    if (i == 1) {
        futoin_break(as, NULL);
    }
}

static void branch_with_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_repeat(as, 5, branch_own_loop_body, NULL, NULL);
}

static void outer_once(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("outer%d", (int)i);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_with_loop, NULL, NULL);
}

static void test_branch_own_loop(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 2, outer_once, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("outer0|own0|own1|outer1|own0|own1|after");
    futoin_asyncsteps_free(root);
}

/* ---- misuse: no loop, unknown label ---- */

static void break_outside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_break(as, (const char*)data);
}

static void break_no_label(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_break(as, NULL);
}

static void unknown_label_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    (void)i;
    futoin_add(as, break_outside, eh_tag, "NOPE");
}

static void test_break_misuse(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, break_no_label, eh_tag, "top");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh:top:InternalError|unhandled:InternalError");
    assert_non_null(strstr(u.info, "break"));

    tr_reset();
    memset(&u, 0, sizeof(u));
    futoin_repeat(root, 3, unknown_label_body, NULL, "KNOWN");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh:NOPE:InternalError|unhandled:InternalError");
    assert_non_null(strstr(u.info, "NOPE"));
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- errors end a loop; break from an error handler ---- */

static void body_fail_at2(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("r%d", (int)i);
    if (i == 2) {
        futoin_error(as, "LoopFail", "in body");
    }
}

static void outer_holding_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_repeat(as, 10, body_fail_at2, NULL, NULL);
    futoin_add(as, must_not_run, NULL, "after-loop");
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:[%s]", (const char*)data, code, futoin_error_info(as));
    futoin_success(as);
}

static void test_error_ends_loop(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_holding_loop, eh_recover, "outer");
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("r0|r1|r2|eh:outer:LoopFail:[in body]|next");
    futoin_asyncsteps_free(root);
}

static void eh_break(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s", code);
    futoin_break(as, (const char*)data);
}

static void body_fail_eh_break(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("r%d", (int)i);
    if (i == 1) {
        futoin_add(as, step_fail, eh_break, "X");
    }
}

static void test_break_from_error_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 5, body_fail_eh_break, NULL, "X");
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("r0|r1|X|eh:Fail|after:[X]:0");
    futoin_asyncsteps_free(root);
}

/* ---- forEach ---- */

static void each_int(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)as;
    tr("%s%d=%d", (const char*)data, (int)i, *(const int*)elem);
}

static void test_foreach_array(void** state)
{
    (void)state;
    static const int arr[] = { 10, 20, 30 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_foreach_array(root, arr, 3, sizeof(int), each_int, "a", NULL);
    futoin_foreach_array(root, arr, 0, sizeof(int), each_int, "never", NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("a0=10|a1=20|a2=30|after");
    futoin_asyncsteps_free(root);
}

/* forEach added from inside a step (the iterator lives on that step's
 * stack), with a break by label. */
typedef struct Point {
    int x;
    int y;
} Point;

static void each_point(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)data;
    const Point* p = (const Point*)elem;
    tr("p%d:%d,%d", (int)i, p->x, p->y);
    if (p->x < 0) {
        futoin_break(as, "PTS");
    }
}

static void step_foreach(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_foreach_array(as, data, 4, sizeof(Point), each_point, NULL, "PTS");
}

static void test_foreach_array_in_step(void** state)
{
    (void)state;
    static const Point pts[] = { { 1, 2 }, { 3, 4 }, { -1, 0 }, { 9, 9 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_foreach, NULL, (void*)pts);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("p0:1,2|p1:3,4|p2:-1,0|after:[PTS]:0");
    futoin_asyncsteps_free(root);
}

static void each_pair(FutoInAsyncSteps* as, void* data, const char* key,
        const FutoInBinaryValue* value)
{
    (void)as;
    (void)data;
    if (value->type->flags == FTN_TYPE_STRING) {
        tr("%s=%s", key, value->cstr);
    } else {
        tr("%s=%d", key, (int)value->i32);
    }
}

static void test_foreach_pairs(void** state)
{
    (void)state;
    FutoInKeyValue pairs[3];
    pairs[0].key = "apple";
    pairs[0].value = futoin_val_i32(1);
    pairs[1].key = "banana";
    pairs[1].value = futoin_val_cstr("yellow");
    pairs[2].key = "cherry";
    pairs[2].value = futoin_val_i32(3);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_foreach_pairs(root, pairs, 3, each_pair, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("apple=1|banana=yellow|cherry=3|after");
    futoin_asyncsteps_free(root);
}

/* ---- loop body waiting for external events ---- */

static FutoInAsyncSteps* g_body_as;

static void complete_body(void* data)
{
    (void)data;
    futoin_success(g_body_as);
}

static void body_wait(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("it%d@%d", g_n, (int)now_ms());
    if (g_n++ == 3) {
        futoin_break(as, NULL);
        return;
    }
    g_body_as = as;
    futoin_wait_external(as);
    futoin_loop_deferred(g_loop, 10, NULL, complete_body);
}

static void test_loop_body_wait_external(void** state)
{
    (void)state;
    g_n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_wait, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("it0@0|it1@10|it2@20|it3@30|after");
    futoin_asyncsteps_free(root);
}

/* Each iteration's timeout is its own: a timed-out iteration recovers with
 * continue() in a sub-step's handler. */
static void sub_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 5);
}

static void eh_timeout_continue(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("%s@%d", code, (int)now_ms());
    futoin_continue(as, NULL);
}

static void body_timeouts(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    (void)i;
    futoin_add(as, sub_timeout, eh_timeout_continue, NULL);
    futoin_add(as, must_not_run, NULL, "after-timeout");
}

static void test_loop_timeouts(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, body_timeouts, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("Timeout@5|Timeout@10|Timeout@15|after");
    futoin_asyncsteps_free(root);
}

/* An iteration's timeout set on the body itself ends with the iteration. */
static void body_timeout_success(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    (void)i;
    futoin_set_timeout(as, 50);
    g_body_as = as;
    futoin_loop_deferred(g_loop, 10, NULL, complete_body);
}

static void test_loop_iteration_timer_dropped(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, body_timeout_success, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("after");
    assert_int_equal(now_ms(), 30);
    futoin_asyncsteps_free(root);
}

/* Stack memory of an iteration is released at the iteration's end. */
static int g_stack_cleanups;

static void stack_cleanup(void* value)
{
    (void)value;
    ++g_stack_cleanups;
}

static void body_stack(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    int* p = (int*)futoin_stack(as, sizeof(int), stack_cleanup);
    assert_non_null(p);
    assert_int_equal(*p, 0);
    *p = (int)i;
    tr("i%d:c%d", (int)i, g_stack_cleanups);
}

static void test_loop_stack_per_iteration(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 3, body_stack, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("i0:c0|i1:c1|i2:c2");
    assert_int_equal(g_stack_cleanups, 3);
    futoin_asyncsteps_free(root);
}

/* ---- iterations that complete at once run back to back ---- */

/* A loop body's own results go nowhere: each value is released exactly
 * once, by the time the next iteration starts, and the step after the loop
 * receives nothing. */
static Counted g_loop_vals[4];

static void body_give_counted(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    if (i > 0) {
        tr("i%d:prev%d", (int)i, g_loop_vals[i - 1].cleanups);
    }
    futoin_success1(as, counted_val(&g_loop_vals[i]));
}

static void test_loop_body_results_released(void** state)
{
    (void)state;
    for (int i = 0; i < 4; ++i) {
        g_loop_vals[i].id = i;
        g_loop_vals[i].cleanups = 0;
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 4, body_give_counted, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("i1:prev1|i2:prev1|i3:prev1|after:[]:0");
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(g_loop_vals[i].cleanups, 1);
    }
    futoin_asyncsteps_free(root);
}

/* Two roots looping at once still take turns iteration by iteration. */
static void body_tag_i(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    tr("%s%d", (const char*)data, (int)i);
}

static void test_concurrent_loops_interleave(void** state)
{
    (void)state;
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    futoin_repeat(a, 3, body_tag_i, "a", NULL);
    futoin_repeat(b, 3, body_tag_i, "b", NULL);
    futoin_execute(a, no_unhandled, NULL);
    futoin_execute(b, no_unhandled, NULL);
    run();
    assert_trace("a0|b0|a1|b1|a2|b2");
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
}

/* Iterations that run back to back hand over to the general path as soon
 * as one of them adds sub-steps, waits or sets a timeout, and come back to
 * it afterwards; the count stays exact. */
static void sub_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("sub%d", (int)(intptr_t)data);
}

static void resume_later(void* data)
{
    futoin_success((FutoInAsyncSteps*)data);
}

static void body_mixed(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("m%d", (int)i);
    if (i == 2) {
        futoin_add(as, sub_tag, NULL, (void*)(intptr_t)i);
    } else if (i == 4) {
        futoin_set_timeout(as, 1000);
        futoin_loop_immediate(g_loop, as, resume_later);
    } else if (i == 6) {
        futoin_wait_external(as);
        futoin_loop_immediate(g_loop, as, resume_later);
    }
}

static void test_loop_fast_iterations_mixed(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 8, body_mixed, NULL, NULL);
    futoin_add(root, show_info, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("m0|m1|m2|sub2|m3|m4|m5|m6|m7|after:[]:0");
    assert_int_equal(futoin_loop_pending(g_loop), 0); /* the timeout is gone */
    futoin_asyncsteps_free(root);
}

/* A long loop completes and lets the event loop in between bursts. */
static int g_ticks;
static int g_n_at_tick;

static void tick(void* data)
{
    (void)data;
    ++g_ticks;
    g_n_at_tick = g_n;
}

static void body_count(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    if (g_n == 0) {
        futoin_loop_immediate(g_loop, NULL, tick);
    }
    if (++g_n == 1000) {
        futoin_break(as, NULL);
    }
}

static void test_long_loop(void** state)
{
    (void)state;
    g_n = 0;
    g_ticks = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_loop(root, body_count, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_int_equal(g_n, 1000);
    assert_int_equal(g_ticks, 1);
    /* queued during iteration 0; ran after the first burst of 100 */
    assert_int_equal(g_n_at_tick, 100);
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_loop_break),
        ENV_TEST(test_deprecated_futoin_loop_alias),
        ENV_TEST(test_repeat),
        ENV_TEST(test_repeat_zero),
        ENV_TEST(test_repeat_break),
        ENV_TEST(test_continue_in_body),
        ENV_TEST(test_continue_from_substep),
        ENV_TEST(test_break_from_substep),
        ENV_TEST(test_continue_cancels_iteration),
        ENV_TEST(test_labels_nested),
        ENV_TEST(test_labels_by_name),
        ENV_TEST(test_long_label),
        ENV_TEST(test_break_from_branch),
        ENV_TEST(test_continue_from_branch_with_label),
        ENV_TEST(test_branch_own_loop),
        ENV_TEST(test_break_misuse),
        ENV_TEST(test_error_ends_loop),
        ENV_TEST(test_break_from_error_handler),
        ENV_TEST(test_foreach_array),
        ENV_TEST(test_foreach_array_in_step),
        ENV_TEST(test_foreach_pairs),
        ENV_TEST(test_loop_body_wait_external),
        ENV_TEST(test_loop_timeouts),
        ENV_TEST(test_loop_iteration_timer_dropped),
        ENV_TEST(test_loop_stack_per_iteration),
        ENV_TEST(test_long_loop),
        ENV_TEST(test_loop_body_results_released),
        ENV_TEST(test_concurrent_loops_interleave),
        ENV_TEST(test_loop_fast_iterations_mixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
