/* SPDX-License-Identifier: MIT */
/* Steps, levels and ordering (spec 1.1), sub-steps, implicit success
 * (spec 1.6), result arguments and their cleanup. */
#include "tsupport.h"

#include <futoin/sync.h>

/* ---- spec 1.1: the exact execution sequence ---- */

static void par_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
}

static void l1_1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("L1 add #1");
    futoin_add(as, step_tag, NULL, "L2 add #1");
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, par_tag, NULL, "L2 parallel #2");
    futoin_add(as, step_tag, NULL, "L2 add #3");
}

static void l0_1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("L0 add #1");
    futoin_add(as, l1_1, NULL, NULL);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, par_tag, NULL, "L1 parallel #2");
    futoin_add(as, step_tag, NULL, "L1 add #3");
}

static void test_spec_1_1_levels(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, l0_1, NULL, NULL);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, par_tag, NULL, "L0 parallel #2");
    futoin_add(root, step_tag, NULL, "L0 add #3");
    futoin_execute(root, no_unhandled, NULL);
    assert_trace(""); /* nothing runs inside execute() */
    run();
    assert_trace("L0 add #1|L1 add #1|L2 add #1|L2 parallel #2|L2 add #3|"
                 "L1 parallel #2|L1 add #3|L0 parallel #2|L0 add #3");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- top-level callbacks get the root handle; sub-steps of a flow the same ---- */

static FutoInAsyncSteps* g_seen[4];

static void record_iface_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_seen[1] = as;
}

static void record_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_seen[0] = as;
    futoin_add(as, record_iface_sub, NULL, NULL);
}

static void test_root_handle_is_main_flow(void** state)
{
    (void)state;
    memset(g_seen, 0, sizeof(g_seen));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, record_iface, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_ptr_equal(g_seen[0], root);
    assert_ptr_equal(g_seen[1], root);
    assert_ptr_equal(futoin_asyncsteps_loop(root), g_loop);
    futoin_asyncsteps_free(root);
}

/* ---- sub-steps complete before the next step of the same level ---- */

static void nest_deep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int depth = (int)(intptr_t)data;
    tr("in%d", depth);
    if (depth < 4) {
        futoin_add(as, nest_deep, NULL, (void*)(intptr_t)(depth + 1));
        futoin_add(as, step_tag, NULL, depth == 1 ? "after1" : depth == 2 ? "after2" : "after3");
    }
}

static void test_deep_nesting_order(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, nest_deep, NULL, (void*)(intptr_t)1);
    futoin_add(root, step_tag, NULL, "end");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("in1|in2|in3|in4|after3|after2|after1|end");
    futoin_asyncsteps_free(root);
}

/* Deep nesting (the frame stack grows many times): an error at depth 200
 * unwinds through 100 handlers and is recovered at depth 100. */
#define DEEP 200
static int g_deep_eh_calls;

static void deep_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    int depth = (int)(intptr_t)data;
    assert_string_equal(code, "Deep");
    ++g_deep_eh_calls;
    if (depth == DEEP / 2) {
        tr("recovered@%d:%d", depth, g_deep_eh_calls);
        futoin_success1(as, futoin_val_i32(depth));
    }
}

static void deep_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("after:%d", (int)futoin_arg_i32(args, 0, -1));
}

static void deep_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int depth = (int)(intptr_t)data;
    if (depth == DEEP) {
        futoin_stack(as, 64, NULL);
        futoin_error(as, "Deep", NULL);
        return;
    }
    futoin_set_cancel(as, cancel_tag, "never"); /* armed but never aborted */
    futoin_add(as, deep_step, deep_eh, (void*)(intptr_t)(depth + 1));
    if (depth == DEEP / 2 - 1) {
        futoin_add(as, deep_after, NULL, NULL);
    }
}

static void test_deep_nesting_unwind(void** state)
{
    (void)state;
    g_deep_eh_calls = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, deep_step, deep_eh, (void*)(intptr_t)1);
    futoin_add(root, step_tag, NULL, "end");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* handlers of depths 200..101 pass it on (with their frames' cancel
     * handlers: "never" is recorded for each aborted frame), 100 recovers */
    assert_int_equal(g_deep_eh_calls, DEEP / 2 + 1);
    const char* rec = strstr(g_trace, "recovered@100:101|after:100|end");
    assert_non_null(rec);
    /* frames 101..199 had a cancel handler and were aborted: 99 of them */
    int cancels = 0;
    for (const char* q = g_trace; (q = strstr(q, "cancel:never")); ++q) {
        ++cancels;
    }
    assert_int_equal(cancels, DEEP / 2 - 1);
    futoin_asyncsteps_free(root);
}

/* ---- a step whose last act is adding one sub-step ----
 * An async recursion: each level adds the next as its only sub-step. The
 * levels in between hold nothing (no handler, cancel handler, timeout or
 * stack memory), so the engine lets each new level take its parent's place:
 * results and errors still reach the steps below the recursion, and the
 * memory used stays flat however deep it goes. */
#define TAIL_LEVELS 200000
static long g_tail_calls;

static void tail_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ++g_tail_calls;
    long left = (long)(intptr_t)data;
    if (left > 0) {
        futoin_add(as, tail_step, NULL, (void*)(intptr_t)(left - 1));
    } else if (g_tail_calls % 2) {
        futoin_error(as, "Bottom", NULL); /* odd total: fail at the bottom */
    } else {
        futoin_success1(as, futoin_val_i32(4242));
    }
}

static void tail_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s@%ld", code, g_tail_calls);
    futoin_success1(as, futoin_val_i32(-1));
}

/* Resident memory in KiB: the recursion must not grow it (frames are not
 * pooled: a stack that deepens grows a heap array, 32 bytes a level). */
static long rss_kib(void)
{
    FILE* f = fopen("/proc/self/status", "r");
    char line[128];
    long kib = -1;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) {
            break;
        }
    }
    fclose(f);
    assert_true(kib > 0);
    return kib;
}

static void run_tail(long levels, FutoInAsyncSteps_error_callback eh)
{
    g_tail_calls = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, tail_step, eh, (void*)(intptr_t)levels);
    futoin_add(root, deep_after, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(root);
}

static void test_tail_substep_results_and_memory(void** state)
{
    (void)state;
    run_tail(1001, NULL); /* warm up the pools: 1002 calls */
    assert_trace("after:4242");
    tr_reset();
    long before = rss_kib();
    run_tail(TAIL_LEVELS - 1, NULL); /* an even number of calls */
    long grown = rss_kib() - before;
    assert_int_equal(g_tail_calls, TAIL_LEVELS);
    /* the bottom's result reaches the step after the recursion */
    assert_trace("after:4242");
    /* a stack 32 bytes a level deep would be 6250 KiB */
    assert_true(grown < 1024);
}

static void test_tail_substep_error_reaches_handler(void** state)
{
    (void)state;
    /* the handler below the recursion catches the bottom's error once
     * and recovers: the next step runs with its result */
    run_tail(TAIL_LEVELS, tail_eh);
    assert_int_equal(g_tail_calls, TAIL_LEVELS + 1);
    char want[64];
    snprintf(want, sizeof(want), "eh:Bottom@%d|after:-1", TAIL_LEVELS + 1);
    assert_trace(want);
}

/* Each kind of step can be the last sub-step that takes a spent frame's
 * place: a parallel, a sync step, a loop left by a labelled break from a
 * sub-step that itself took its parent's place, an error that unwinds to
 * the handler below, and a timeout. */
static FutoInSync* g_tail_mutex;

static void tail_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("p");
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_tag, NULL, "b1");
    futoin_add(p, step_tag, NULL, "b2");
}

static void tail_sync(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("s");
    futoin_add_sync(as, g_tail_mutex, step_tag, NULL, "section");
}

static void tail_break_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("break@%d", (int)(intptr_t)data);
    futoin_break(as, "outer");
}

static void tail_break_parent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, tail_break_outer, NULL, data);
}

static void tail_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("it%d", (int)i);
    if (i == 2) {
        futoin_add(as, tail_break_parent, NULL, (void*)(intptr_t)i);
    }
}

static void tail_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("l");
    futoin_repeat(as, 10, tail_body, NULL, "outer");
}

static void tail_fail_parent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("f");
    futoin_add(as, step_fail, NULL, data);
}

static void tail_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:%s", (const char*)data, code, futoin_error_info(as));
    futoin_success(as);
}

static void tail_fail_guarded(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, tail_fail_parent, NULL, "x");
}

static void tail_wait_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_set_timeout(as, 10);
}

static void tail_timeout_parent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, tail_wait_timeout, NULL, data);
}

static void tail_timeout_guarded(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, tail_timeout_parent, NULL, "w");
}

static void test_tail_substep_kinds(void** state)
{
    (void)state;
    g_tail_mutex = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    assert_non_null(g_tail_mutex);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, tail_parallel, NULL, NULL);
    futoin_add(root, tail_sync, NULL, NULL);
    futoin_add(root, tail_loop, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after-loop");
    futoin_add(root, tail_fail_guarded, tail_recover, "g");
    futoin_add(root, tail_timeout_guarded, tail_recover, "t");
    futoin_add(root, step_tag, NULL, "end");
    futoin_execute(root, no_unhandled, NULL);
    uint64_t t0 = now_ms();
    run();
    assert_trace("p|b1|b2|s|section|l|it0|it1|it2|break@2|after-loop"
                 "|f|x|eh:g:Fail:x|w|cancel:w|eh:t:Timeout:|end");
    assert_int_equal(now_ms() - t0, 10);
    futoin_asyncsteps_free(root);
    assert_int_equal(futoin_sync_free(g_tail_mutex), FUTOIN_SYNC_OK);
}

/* A recursion parked at its bottom, then cancelled: the bottom's cancel
 * handler runs once and nothing of the levels above is left behind (the
 * sanitizer and valgrind runs check the memory). */
static void tail_park(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    long left = (long)(intptr_t)data;
    if (left > 0) {
        futoin_add(as, tail_park, NULL, (void*)(intptr_t)(left - 1));
    } else {
        futoin_set_cancel(as, cancel_tag, "bottom");
    }
}

static void test_tail_substep_cancel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, tail_park, NULL, (void*)(intptr_t)1000);
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("");
    futoin_cancel(root);
    assert_trace("cancel:bottom");
    run();
    futoin_asyncsteps_free(root);
    assert_trace("cancel:bottom");
}

/* ---- implicit success and explicit success args ---- */

static void expect_no_args(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d", (const char*)data, futoin_args_count(args));
}

static void do_nothing(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
}

static void test_implicit_success(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, do_nothing, NULL, "a");
    futoin_add(root, expect_no_args, NULL, "b");
    futoin_add(root, do_nothing, NULL, "c");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("a|b:0|c");
    futoin_asyncsteps_free(root);
}

static void give4(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success4(as, futoin_val_i32(-42), futoin_val_double(2.5), futoin_val_cstr("str"),
            futoin_val_bool(true));
}

static void check4(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    assert_int_equal(futoin_args_count(args), 4);
    assert_int_equal(futoin_arg_type(args, 0), FTN_TYPE_INT32);
    assert_int_equal(futoin_arg_type(args, 1), FTN_TYPE_DOUBLE);
    assert_int_equal(futoin_arg_type(args, 2), FTN_TYPE_STRING);
    assert_int_equal(futoin_arg_type(args, 3), FTN_TYPE_BOOL);
    assert_int_equal(futoin_arg_i32(args, 0, 0), -42);
    assert_true(futoin_arg_double(args, 1, 0.0) == 2.5);
    assert_string_equal(futoin_arg_cstr(args, 2, "x"), "str");
    assert_int_equal(args->arg2.length, 3);
    assert_true(futoin_arg_bool(args, 3, false));
    /* typed getters fall back on a type mismatch or a missing argument */
    assert_string_equal(futoin_arg_cstr(args, 0, "fallback"), "fallback");
    assert_int_equal(futoin_arg_i32(args, 2, 7), 7);
    assert_null(futoin_arg_custom(args, 0));
    tr("check4");
}

static void give_wide(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success3(as, futoin_val_i64(INT64_C(-5000000000)), futoin_val_u64(UINT64_C(1) << 40),
            futoin_val_u32(4000000000u));
}

static void check_wide(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    assert_int_equal(futoin_args_count(args), 3);
    assert_true(futoin_arg_int(args, 0, 0) == INT64_C(-5000000000));
    assert_true(futoin_arg_int(args, 1, 0) == (INT64_C(1) << 40));
    assert_true(futoin_arg_int(args, 2, 0) == INT64_C(4000000000));
    assert_int_equal(futoin_arg_type(args, 3), 0);
    tr("check_wide");
}

static void test_success_args(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give4, NULL, NULL);
    futoin_add(root, check4, NULL, NULL);
    futoin_add(root, expect_no_args, NULL, "after"); /* results are not carried further */
    futoin_add(root, give_wide, NULL, NULL);
    futoin_add(root, check_wide, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("check4|after:0|check_wide");
    futoin_asyncsteps_free(root);
}

/* A step with sub-steps passes on its last sub-step's result; the first
 * sub-step does not see the parent step's input. */
static void give_int(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_i32((int32_t)(intptr_t)data));
}

static void show_int(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d:%d", (const char*)data, futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1));
}

static void parent_with_subs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    tr("parent:%d", (int)futoin_arg_i32(args, 0, -1));
    futoin_add(as, show_int, NULL, "sub1");
    futoin_add(as, give_int, NULL, (void*)(intptr_t)2);
    futoin_add(as, show_int, NULL, "sub3");
    futoin_add(as, give_int, NULL, (void*)(intptr_t)99);
}

static void test_substep_result_passes_on(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give_int, NULL, (void*)(intptr_t)1);
    futoin_add(root, parent_with_subs, NULL, NULL);
    futoin_add(root, show_int, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("parent:1|sub1:0:-1|sub3:1:2|next:1:99");
    futoin_asyncsteps_free(root);
}

/* ---- cleanup of result values: exactly once ---- */

static Counted g_c[8];

static void give_counted(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, counted_val((Counted*)data));
}

static void receive_counted(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Counted* c = (Counted*)data;
    assert_ptr_equal(futoin_arg_custom(args, 0), c);
    /* the value is alive while the receiving callback runs */
    tr("recv%d:%d", c->id, c->cleanups);
}

static void check_cleanups(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Counted* c = (Counted*)data;
    tr("after%d:%d", c->id, c->cleanups);
}

static void reset_counted(void)
{
    for (int i = 0; i < 8; ++i) {
        g_c[i].id = i;
        g_c[i].cleanups = 0;
    }
}

static void test_cleanup_after_receiving_step(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give_counted, NULL, &g_c[0]);
    futoin_add(root, receive_counted, NULL, &g_c[0]);
    futoin_add(root, check_cleanups, NULL, &g_c[0]);
    /* the last step's result is dropped when the root finishes */
    futoin_add(root, give_counted, NULL, &g_c[1]);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("recv0:0|after0:1");
    assert_int_equal(g_c[0].cleanups, 1);
    assert_int_equal(g_c[1].cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_c[0].cleanups, 1);
    assert_int_equal(g_c[1].cleanups, 1);
}

/* Four values with cleanup, two of them strdup'ed strings (leak checkers
 * verify those), all released once. */
static void give4_owned(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success4(as, counted_val(&g_c[0]), futoin_val_strdup("heap-one"), counted_val(&g_c[1]),
            futoin_val_strdup("heap-two"));
}

static void recv4_owned(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    assert_int_equal(futoin_args_count(args), 4);
    assert_string_equal(futoin_arg_cstr(args, 1, ""), "heap-one");
    assert_string_equal(futoin_arg_cstr(args, 3, ""), "heap-two");
    tr("recv:%d:%d", g_c[0].cleanups, g_c[1].cleanups);
}

static void test_cleanup_four_owned_values(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give4_owned, NULL, NULL);
    futoin_add(root, recv4_owned, NULL, NULL);
    futoin_add(root, check_cleanups, NULL, &g_c[0]);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("recv:0:0|after0:1");
    assert_int_equal(g_c[1].cleanups, 1);
    futoin_asyncsteps_free(root);
}

/* Dropped on error: a branch holding a result (between two of its steps)
 * is aborted by a failing sibling. Turns: b1, b2, b1:give, b2:fail. */
static void branch_fail_later(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, step_fail, NULL, data);
}

static void branch_give_then_more(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    futoin_add(as, give_counted, NULL, &g_c[2]);
    futoin_add(as, must_not_run, NULL, "b1-second");
}

static void test_cleanup_on_error(void** state)
{
    (void)state;
    reset_counted();
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, branch_give_then_more, NULL, NULL);
    futoin_add(p, branch_fail_later, NULL, "b2");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, "Fail");
    assert_trace("b2|unhandled:Fail");
    assert_int_equal(g_c[2].cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_c[2].cleanups, 1);
}

/* success(values) then a misuse in the same callback: the step fails and
 * the values it had handed over are released once. */
static void give_then_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success1(as, counted_val(&g_c[3]));
    futoin_error(as, "Late", NULL); /* misuse: error after success */
}

static void test_cleanup_on_step_failure(void** state)
{
    (void)state;
    reset_counted();
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, give_then_error, NULL, NULL);
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, FUTOIN_INTERNAL_ERROR);
    assert_int_equal(g_c[3].cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_c[3].cleanups, 1);
}

/* Dropped on cancel: root A holds a result between two steps when root B
 * (which takes turns with it) cancels A. */
static FutoInAsyncSteps* g_victim;

static void cancel_victim(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("cancel-A:%d", g_c[4].cleanups);
    futoin_cancel(g_victim);
    tr("cancelled-A:%d", g_c[4].cleanups);
}

static void test_cleanup_on_cancel(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    g_victim = a;
    futoin_add(a, give_counted, NULL, &g_c[4]);
    futoin_add(a, must_not_run, NULL, "A2");
    futoin_add(b, cancel_victim, NULL, NULL);
    futoin_execute(a, no_unhandled, NULL);
    futoin_execute(b, no_unhandled, NULL);
    run();
    assert_trace("cancel-A:0|cancelled-A:1");
    assert_int_equal(g_c[4].cleanups, 1);
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
    assert_int_equal(g_c[4].cleanups, 1);
}

/* Dropped by a parallel step: branch results do not leave the branch; the
 * step after the parallel gets no arguments. */
static void test_cleanup_parallel_results(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, give_counted, NULL, &g_c[5]);
    futoin_add(p, give_counted, NULL, &g_c[6]);
    futoin_add(root, expect_no_args, NULL, "after-par");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("after-par:0");
    assert_int_equal(g_c[5].cleanups, 1);
    assert_int_equal(g_c[6].cleanups, 1);
    futoin_asyncsteps_free(root);
}

/* Dropped at each loop iteration's end; the step after the loop gets none. */
static Counted g_iter[5];

static void iter_give(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    g_iter[i].id = (int)i;
    g_iter[i].cleanups = 0;
    if (i > 0) {
        tr("prev%d:%d", (int)i - 1, g_iter[i - 1].cleanups);
    }
    futoin_success1(as, counted_val(&g_iter[i]));
}

static void test_cleanup_loop_iteration(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_repeat(root, 5, iter_give, NULL, NULL);
    futoin_add(root, expect_no_args, NULL, "after-loop");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("prev0:1|prev1:1|prev2:1|prev3:1|after-loop:0");
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(g_iter[i].cleanups, 1);
    }
    futoin_asyncsteps_free(root);
}

/* A value handed to a waiting step from outside, then the root cancelled
 * before the next step runs: released once. */
static FutoInAsyncSteps* g_waiter;

static void wait_forever(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_wait_external(as);
}

static void complete_then_cancel(void* data)
{
    (void)data;
    futoin_success1(g_waiter, counted_val(&g_c[7]));
    assert_int_equal(g_c[7].cleanups, 0);
    futoin_cancel(g_waiter);
    tr("cancelled:%d", g_c[7].cleanups);
}

static void test_cleanup_external_then_cancel(void** state)
{
    (void)state;
    reset_counted();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_waiter = root;
    futoin_add(root, wait_forever, NULL, NULL);
    futoin_add(root, must_not_run, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 10, NULL, complete_then_cancel);
    run();
    assert_trace("cancelled:1");
    assert_int_equal(g_c[7].cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_c[7].cleanups, 1);
}

/* ---- a finished root can be reused ---- */

static void test_root_reuse(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "first");
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_add(root, step_tag, NULL, "second");
    futoin_execute(root, no_unhandled, NULL);
    run();
    Unhandled u = { 0 };
    futoin_add(root, step_fail, NULL, "third");
    futoin_execute(root, on_unhandled, &u);
    run();
    futoin_add(root, step_tag, NULL, "fourth");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("first|second|third|unhandled:Fail|fourth");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* An empty root completes without calling anything. */
static void test_empty_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("");
    assert_int_equal(g_misuse, 0);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
}

/* ---- two roots take turns one step at a time ---- */

static void test_roots_interleave(void** state)
{
    (void)state;
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    futoin_add(a, step_tag, NULL, "a1");
    futoin_add(a, step_tag, NULL, "a2");
    futoin_add(a, step_tag, NULL, "a3");
    futoin_add(b, step_tag, NULL, "b1");
    futoin_add(b, step_tag, NULL, "b2");
    futoin_execute(b, no_unhandled, NULL);
    futoin_execute(a, no_unhandled, NULL);
    run();
    assert_trace("b1|a1|b2|a2|a3");
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_spec_1_1_levels),
        ENV_TEST(test_root_handle_is_main_flow),
        ENV_TEST(test_deep_nesting_order),
        ENV_TEST(test_deep_nesting_unwind),
        ENV_TEST(test_tail_substep_results_and_memory),
        ENV_TEST(test_tail_substep_error_reaches_handler),
        ENV_TEST(test_tail_substep_kinds),
        ENV_TEST(test_tail_substep_cancel),
        ENV_TEST(test_implicit_success),
        ENV_TEST(test_success_args),
        ENV_TEST(test_substep_result_passes_on),
        ENV_TEST(test_cleanup_after_receiving_step),
        ENV_TEST(test_cleanup_four_owned_values),
        ENV_TEST(test_cleanup_on_error),
        ENV_TEST(test_cleanup_on_step_failure),
        ENV_TEST(test_cleanup_on_cancel),
        ENV_TEST(test_cleanup_parallel_results),
        ENV_TEST(test_cleanup_loop_iteration),
        ENV_TEST(test_cleanup_external_then_cancel),
        ENV_TEST(test_root_reuse),
        ENV_TEST(test_empty_root),
        ENV_TEST(test_roots_interleave),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
