/*
 * SPDX-License-Identifier: MIT
 *
 * Self-tests of the foreign AsyncSteps (foreign_asyncsteps.h): before other
 * tests use it as the "other side" of interop runs, it has to be trusted on
 * its own. Every test drives a fresh virtual-clock loop and ends with no
 * live objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "foreign_asyncsteps.h"

/* ---- helpers ------------------------------------------------------------ */

static char g_log[1 << 16];
static size_t g_len;

static void lg(const char* fmt, ...)
{
    va_list ap;
    if (g_len && g_len < sizeof g_log - 1) {
        g_log[g_len++] = ' ';
        g_log[g_len] = '\0';
    }
    va_start(ap, fmt);
    int n = vsnprintf(g_log + g_len, sizeof g_log - g_len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        g_len += (size_t)n;
        if (g_len >= sizeof g_log) {
            g_len = sizeof g_log - 1;
        }
    }
}

static int g_cleanups;

static void count_cleanup(FutoInBinaryValue* v)
{
    (void)v;
    ++g_cleanups;
}

static const FutoInType T_CNT = { FTN_TYPE_INT32, count_cleanup };
static const FutoInType T_STR = { FTN_TYPE_STRING, NULL };

typedef struct Rec {
    int n;
    char last[256];
} Rec;

static Rec g_viol;
static Rec g_mis;

static void rec_cb(void* data, const char* what)
{
    Rec* r = data;
    r->n++;
    snprintf(r->last, sizeof r->last, "%s", what);
}

static FrnLoop* begin(void)
{
    g_len = 0;
    g_log[0] = '\0';
    g_cleanups = 0;
    memset(&g_viol, 0, sizeof g_viol);
    memset(&g_mis, 0, sizeof g_mis);
    return frn_loop_new();
}

static void finish(FrnLoop* l)
{
    assert_int_equal(frn_live_objects(l), 0);
    assert_int_equal(frn_loop_pending(l), 0);
    frn_loop_free(l);
}

static void run(FrnLoop* l)
{
    frn_loop_run_all(l, (size_t)1 << 30);
}

static FutoInArgs zargs(void)
{
    FutoInArgs a;
    memset(&a, 0, sizeof a);
    return a;
}

static const char* error_info(FutoInAsyncSteps* bsi)
{
    return bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
}

static void unhandled_log(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    lg("unhandled:%s", code);
}

static void noop_cleanup(void* p)
{
    (void)p;
}

static void log_data_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    lg("%s", (const char*)data);
}

/* ---- sequence and args -------------------------------------------------- */

static void seq_s1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    assert_null(args->arg0.type);
    lg("s1");
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = 42;
    a.arg1.type = &T_CNT;
    a.arg1.i32 = 7;
    bsi->api->success(bsi, &a);
}

static void seq_s2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    assert_ptr_equal(args->arg0.type, &T_CNT);
    lg("s2:%d,%d", args->arg0.i32, args->arg1.i32);
    /* the values live until this step returns */
    assert_int_equal(g_cleanups, 0);
}

static void seq_s3(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    /* implicit success carries nothing */
    assert_null(args->arg0.type);
    assert_int_equal(g_cleanups, 2);
    lg("s3");
}

static void test_sequence_args(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, seq_s1, NULL);
    root->api->add(root, NULL, seq_s2, NULL);
    root->api->add(root, NULL, seq_s3, NULL);
    root->api->execute(root, NULL, unhandled_log);
    /* nothing runs inside execute(), and one step per turn */
    assert_string_equal(g_log, "");
    assert_int_equal(frn_loop_run_ready(l), 1);
    assert_string_equal(g_log, "s1");
    assert_int_equal(frn_loop_run_ready(l), 1);
    assert_string_equal(g_log, "s1 s2:42,7");
    run(l);
    assert_string_equal(g_log, "s1 s2:42,7 s3");
    assert_int_equal(g_cleanups, 2);
    assert_true(root->api->isValid(root));
    root->api->free(root);
    finish(l);
}

/* ---- levels (spec 1.1) -------------------------------------------------- */

static void lv_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);

static void lv_branch(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    lg("%s", (const char*)data);
}

static void lv_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* name = data;
    lg("%s", name);
    if (strcmp(name, "L0#1") == 0) {
        bsi->api->add(bsi, "L1#1", lv_step, NULL);
        FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
        p->api->add(p, "L1par#2", lv_branch, NULL);
        bsi->api->add(bsi, "L1#3", lv_step, NULL);
    } else if (strcmp(name, "L1#1") == 0) {
        bsi->api->add(bsi, "L2#1", lv_step, NULL);
        FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
        p->api->add(p, "L2par#2", lv_branch, NULL);
        bsi->api->add(bsi, "L2#3", lv_step, NULL);
    }
}

static void test_levels(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, "L0#1", lv_step, NULL);
    FutoInAsyncSteps* p = root->api->parallel(root, NULL, NULL);
    p->api->add(p, "L0par#2", lv_branch, NULL);
    root->api->add(root, "L0#3", lv_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "L0#1 L1#1 L2#1 L2par#2 L2#3 L1par#2 L1#3 L0par#2 L0#3");
    root->api->free(root);
    finish(l);
}

/* ---- error handling (spec 1.2, 1.2.1) ----------------------------------- */

static void e_l1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("L1 func");
    bsi->api->handle_error(bsi, "myerror", "my info");
}

static void e_l1_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("L1 onerror: %s", code);
    bsi->api->handle_error(bsi, "newerror", NULL);
}

static void e_l0(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("L0 func");
    bsi->api->add(bsi, NULL, e_l1, e_l1_eh);
}

static void e_l0_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("L0 onerror: %s", code);
    FutoInArgs a = zargs();
    a.arg0.type = &T_STR;
    a.arg0.cstr = "Prm";
    bsi->api->success(bsi, &a);
}

static void e_func2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    lg("L0 func2: %s", args->arg0.cstr);
}

static void test_error_recover_replace(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, e_l0, e_l0_eh);
    root->api->add(root, NULL, e_func2, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log,
            "L0 func L1 func L1 onerror: myerror L0 onerror: newerror L0 func2: Prm");
    root->api->free(root);
    finish(l);
}

static void h_l2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("L2 func");
    bsi->api->handle_error(bsi, "second", "second info");
}

static void h_l2_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    lg("L2 onerror: %s", code);
}

static void h_l1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("L1 func");
    bsi->api->handle_error(bsi, "first", NULL);
}

static void h_l1_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("L1 onerror: %s", code);
    bsi->api->add(bsi, NULL, h_l2, h_l2_eh);
}

static void h_l0(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("L0 func");
    bsi->api->add(bsi, NULL, h_l1, h_l1_eh);
}

static void h_l0_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("L0 onerror: %s info=%s", code, error_info(bsi));
}

static void test_error_steps_in_handler(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    assert_string_equal(error_info(root), "");
    root->api->add(root, NULL, h_l0, h_l0_eh);
    root->api->add(root, "never", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    /* "L1 onerror" is not executed a second time; nothing handles "second" */
    assert_string_equal(g_log,
            "L0 func L1 func L1 onerror: first L2 func L2 onerror: second "
            "L0 onerror: second info=second info unhandled:second");
    root->api->free(root);
    finish(l);
}

/* ---- setTimeout on the virtual clock ------------------------------------ */

static void to_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    lg("cancel");
}

static void to_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("wait");
    bsi->api->setCancel(bsi, NULL, to_cancel);
    bsi->api->setTimeout(bsi, 100);
}

static void to_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    lg("eh:%s", code);
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = *(int*)data;
    bsi->api->success(bsi, &a);
}

static void to_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    lg("after:%d", args->arg0.i32);
}

typedef struct Wake {
    FutoInAsyncSteps* bsi;
    int value;
} Wake;

static void wake_success(void* p)
{
    Wake* w = p;
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = w->value;
    w->bsi->api->success(w->bsi, &a);
}

static void to_early(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    Wake* w = data;
    w->bsi = bsi;
    bsi->api->setTimeout(bsi, 50);
    bsi->api->sched_deferred(bsi, 10, w, wake_success);
}

static void test_timeout(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    int v = 5;
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, &v, to_step, to_eh);
    root->api->add(root, NULL, to_after, NULL);
    root->api->execute(root, NULL, unhandled_log);
    assert_int_equal(frn_loop_run_ready(l), 1);
    assert_string_equal(g_log, "wait");
    assert_int_equal(frn_loop_pending(l), 1);
    assert_int_equal(frn_loop_next_due(l), 100);
    assert_int_equal(frn_loop_run_ready(l), 0);
    frn_loop_set_now(l, 99);
    assert_int_equal(frn_loop_run_ready(l), 0);
    frn_loop_set_now(l, (uint64_t)frn_loop_next_due(l));
    assert_int_equal(frn_loop_run_ready(l), 1); /* the timer only queues the flow */
    assert_string_equal(g_log, "wait");
    run(l);
    /* the timed-out step's cancel handler runs before its error handler */
    assert_string_equal(g_log, "wait cancel eh:Timeout after:5");
    assert_int_equal(frn_loop_now(l), 100);
    root->api->free(root);

    /* completed in time: the timer is gone, nothing fires at 50 */
    g_len = 0;
    g_log[0] = '\0';
    Wake w = { NULL, 9 };
    root = frn_root_new(l);
    root->api->add(root, &w, to_early, to_eh);
    root->api->add(root, NULL, to_after, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "after:9");
    assert_int_equal(frn_loop_now(l), 110);
    assert_int_equal(frn_loop_next_due(l), -1);
    root->api->free(root);
    finish(l);
}

/* ---- external completion ------------------------------------------------ */

static void ext_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    *(FutoInAsyncSteps**)data = bsi;
    bsi->api->waitExternal(bsi);
    lg("waiting");
}

static void ext_next(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    lg("next:%d cleanups=%d", args->arg0.i32, g_cleanups);
}

static void test_external_success(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    frn_set_violation_handler(l, rec_cb, &g_viol);
    FutoInAsyncSteps* waiter = NULL;
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, &waiter, ext_wait, NULL);
    root->api->add(root, NULL, ext_next, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "waiting");
    assert_non_null(waiter);
    assert_int_equal(frn_loop_pending(l), 0);
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = 11;
    waiter->api->success(waiter, &a);
    /* queued only: nothing ran inside success() */
    assert_string_equal(g_log, "waiting");
    assert_int_equal(frn_loop_pending(l), 1);
    /* a second completion before the flow's turn is a violation */
    assert_int_equal(g_viol.n, 0);
    FutoInArgs b = zargs();
    waiter->api->success(waiter, &b);
    assert_int_equal(g_viol.n, 1);
    waiter->api->handle_error(waiter, "Late", NULL);
    assert_int_equal(g_viol.n, 2);
    run(l);
    assert_string_equal(g_log, "waiting next:11 cleanups=0");
    assert_int_equal(g_cleanups, 1);
    /* and after completion (the step is gone; its shell is quarantined) */
    waiter->api->success(waiter, &b);
    assert_int_equal(g_viol.n, 3);
    assert_false(waiter->api->isValid(waiter));
    root->api->free(root);
    finish(l);
}

/* ---- cancel ------------------------------------------------------------- */

static int g_level_cancel[4];

static void cn_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    lg("c%d", *(int*)data);
}

static void cn_stack_cleanup(void* p)
{
    lg("k%d", *(int*)p);
}

static void cn_level(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    int lvl = *(int*)data;
    lg("l%d", lvl);
    int* k = bsi->api->stack(bsi, sizeof(int), cn_stack_cleanup);
    *k = lvl;
    bsi->api->setCancel(bsi, data, cn_cancel);
    if (lvl < 3) {
        bsi->api->add(bsi, &g_level_cancel[lvl + 1], cn_level, NULL);
    } else {
        bsi->api->setTimeout(bsi, 1000);
    }
}

static void test_cancel(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    for (int i = 0; i < 4; ++i) {
        g_level_cancel[i] = i;
    }
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, &g_level_cancel[1], cn_level, NULL);
    root->api->add(root, "never", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    while (frn_loop_run_ready(l)) {
    }
    assert_string_equal(g_log, "l1 l2 l3");
    assert_int_equal(frn_loop_pending(l), 1); /* the timeout */
    root->api->cancel(root);
    /* innermost first: cancel handler, then the stack cleanups of that step */
    assert_string_equal(g_log, "l1 l2 l3 c3 k3 c2 k2 c1 k1");
    assert_int_equal(frn_loop_pending(l), 0);
    frn_loop_set_now(l, 5000);
    run(l);
    assert_string_equal(g_log, "l1 l2 l3 c3 k3 c2 k2 c1 k1");
    /* reusable after cancel */
    root->api->add(root, "again", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "l1 l2 l3 c3 k3 c2 k2 c1 k1 again");
    root->api->free(root);
    finish(l);
}

/* ---- parallel ----------------------------------------------------------- */

typedef struct ParCtx {
    ptrdiff_t ids[4];
    ptrdiff_t main_id;
} ParCtx;

static ParCtx g_par;

static void par_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* name = data;
    lg("%s.1", name);
    int idx = name[1] - '1';
    assert_int_equal(bsi->api->rootId(bsi), g_par.ids[idx]);
}

static void par_branch(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* name = data;
    lg("%s", name);
    g_par.ids[name[1] - '1'] = bsi->api->rootId(bsi);
    bsi->api->add(bsi, data, par_sub, NULL);
}

static void par_main(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_par.main_id = bsi->api->rootId(bsi);
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, "P1", par_branch, NULL);
    p->api->add(p, "P2", par_branch, NULL);
}

static void par_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    assert_null(args->arg0.type);
    assert_int_equal(bsi->api->rootId(bsi), g_par.main_id);
    lg("after");
}

static void test_parallel_success(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    memset(&g_par, 0, sizeof g_par);
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, par_main, NULL);
    root->api->add(root, NULL, par_after, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    /* branches take turns one step at a time */
    assert_string_equal(g_log, "P1 P2 P1.1 P2.1 after");
    assert_int_equal(root->api->rootId(root), g_par.main_id);
    assert_true(g_par.ids[0] != 0 && g_par.ids[1] != 0);
    assert_true(g_par.ids[0] != g_par.ids[1]);
    assert_true(g_par.ids[0] != g_par.main_id && g_par.ids[1] != g_par.main_id);
    root->api->free(root);
    finish(l);
}

static void pe_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    lg("cancel:%s", (const char*)data);
}

static void pe_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    lg("%s", (const char*)data);
    bsi->api->setCancel(bsi, data, pe_cancel);
}

static void pe_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    lg("%s", (const char*)data);
    bsi->api->handle_error(bsi, "Boom", "boom info");
}

static void pe_branch_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    lg("beh:%s:%s", (const char*)data, code);
}

static void pe_par_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("peh:%s:%s", code, error_info(bsi));
    FutoInArgs a = zargs();
    bsi->api->success(bsi, &a);
}

static void pe_main(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, pe_par_eh);
    p->api->add(p, "b1", pe_wait, NULL);
    p->api->add(p, "b2", pe_fail, pe_branch_eh);
    p->api->add(p, "b3", pe_wait, NULL);
}

static void test_parallel_error(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, pe_main, NULL);
    root->api->add(root, "next", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "b1 b2 b3 beh:b2:Boom cancel:b1 cancel:b3 peh:Boom:boom info next");
    root->api->free(root);
    finish(l);
}

/* ---- loops -------------------------------------------------------------- */

static int g_iter;

static void lp_body(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    lg("it%d", g_iter);
    if (++g_iter == 3) {
        bsi->api->breakLoop(bsi, NULL);
    }
}

static void rp_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    size_t i = (size_t)(uintptr_t)data;
    if (i == 2) {
        bsi->api->continueLoop(bsi, NULL);
        return;
    }
    lg("s%zu", i);
}

static void rp_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data;
    lg("b%zu", i);
    bsi->api->add(bsi, (void*)(uintptr_t)i, rp_sub, NULL);
}

static int g_outer;
static int g_outer_runs;

static void in_body(FutoInAsyncSteps* bsi, void* data, size_t j)
{
    (void)data;
    lg("o%dj%zu", g_outer, j);
    if (g_outer == 0 && j == 1) {
        bsi->api->continueLoop(bsi, "OUTER");
        return;
    }
    if (g_outer == 1 && j == 2) {
        bsi->api->breakLoop(bsi, "OUTER");
        return;
    }
}

static void out_tail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
    lg("tail%d", g_outer);
}

static void out_body(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    g_outer = g_outer_runs++;
    if (g_outer > 5) {
        bsi->api->breakLoop(bsi, NULL); /* safety net */
        return;
    }
    bsi->api->repeat(bsi, NULL, 3, in_body, "INNER");
    bsi->api->add(bsi, NULL, out_tail, NULL);
}

static void lbl_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("after:%s", error_info(bsi));
}

static void bad_body(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    bsi->api->breakLoop(bsi, "NOPE");
}

static void bad_holder(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->loop(bsi, NULL, bad_body, "REAL");
}

static void bad_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("eh:%s", code);
    assert_non_null(strstr(error_info(bsi), "NOPE"));
    FutoInArgs a = zargs();
    bsi->api->success(bsi, &a);
}

static void test_loops(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    g_iter = 0;
    root->api->loop(root, NULL, lp_body, NULL);
    root->api->repeat(root, NULL, 5, rp_body, NULL);
    root->api->repeat(root, NULL, 0, rp_body, NULL);
    root->api->add(root, "done", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "it0 it1 it2 b0 s0 b1 s1 b2 b3 s3 b4 s4 done");
    root->api->free(root);

    /* labels: continue and break an outer loop from an inner one */
    g_len = 0;
    g_log[0] = '\0';
    g_outer = 0;
    g_outer_runs = 0;
    root = frn_root_new(l);
    root->api->loop(root, NULL, out_body, "OUTER");
    root->api->add(root, NULL, lbl_after, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "o0j0 o0j1 o1j0 o1j1 o1j2 after:OUTER");
    root->api->free(root);

    /* unknown label: InternalError of the step that asked */
    g_len = 0;
    g_log[0] = '\0';
    root = frn_root_new(l);
    root->api->add(root, NULL, bad_holder, bad_eh);
    root->api->add(root, "done", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "eh:InternalError done");
    root->api->free(root);
    finish(l);
}

/* ---- state variables and stack ------------------------------------------ */

static int g_allocs;

static void* sv_alloc(void* data)
{
    ++g_allocs;
    return data;
}

static void sv_cleanup(void* data, void* value)
{
    assert_ptr_equal(data, value);
    lg("free:%s", (const char*)value);
}

static void st_cleanup(void* p)
{
    lg("k%d", *(int*)p);
}

static void st_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)bsi;
    lg("sub:%d", *(int*)data); /* the parent's stack memory is still alive */
}

static void st_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    assert_ptr_equal(bsi->api->stateVariable(bsi, "a", "a", sv_alloc, sv_cleanup), "a");
    int* k1 = bsi->api->stack(bsi, sizeof(int), st_cleanup);
    int* k2 = bsi->api->stack(bsi, sizeof(int), st_cleanup);
    assert_int_equal(*k1, 0); /* zeroed */
    *k1 = 1;
    *k2 = 2;
    bsi->api->add(bsi, k1, st_sub, NULL);
}

static void test_state_stack(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    frn_set_violation_handler(l, rec_cb, &g_viol);
    g_allocs = 0;
    FutoInAsyncSteps* root = frn_root_new(l);
    assert_ptr_equal(root->api->stateVariable(root, "a", "a", sv_alloc, sv_cleanup), "a");
    assert_ptr_equal(root->api->stateVariable(root, "b", "b", sv_alloc, sv_cleanup), "b");
    assert_int_equal(g_allocs, 2);
    /* lookup without allocate */
    assert_ptr_equal(root->api->stateVariable(root, NULL, "b", NULL, NULL), "b");
    assert_null(root->api->stateVariable(root, NULL, "zz", NULL, NULL));
    assert_null(root->api->stateVariable(root, NULL, "last_exception", NULL, NULL));
    assert_int_equal(g_viol.n, 0);
    assert_null(root->api->stateVariable(root, "x", NULL, sv_alloc, sv_cleanup));
    assert_int_equal(g_viol.n, 1);
    assert_null(root->api->stateVariable(root, "x", "", sv_alloc, sv_cleanup));
    assert_int_equal(g_viol.n, 2);
    assert_null(root->api->stateVariable(root, "x", "error_info", sv_alloc, NULL));
    assert_int_equal(g_viol.n, 3);
    root->api->add(root, NULL, st_step, NULL);
    root->api->add(root, "next", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_int_equal(g_allocs, 2);
    /* stack blocks go, newest first, when their step is destroyed */
    assert_string_equal(g_log, "sub:1 k2 k1 next");
    root->api->free(root);
    /* state variables: last created first */
    assert_string_equal(g_log, "sub:1 k2 k1 next free:b free:a");
    finish(l);
}

/* ---- free from inside callbacks ----------------------------------------- */

static void fr_cleanup(void* p)
{
    (void)p;
    lg("cleanup");
}

static void fr_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* root = data;
    bsi->api->stack(bsi, 16, fr_cleanup);
    lg("before");
    root->api->free(root);
    lg("after");
    assert_false(bsi->api->isValid(bsi));
}

static void fr_cancel_frees(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    FutoInAsyncSteps* root = data;
    lg("ch");
    root->api->free(root);
}

static void fr_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setCancel(bsi, data, fr_cancel_frees);
}

static void fr_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->handle_error(bsi, "Bad", NULL);
}

static void fr_unhandled_frees(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("unhandled:%s", code);
    bsi->api->free(bsi);
}

static void test_free_inside(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, root, fr_step, NULL);
    root->api->add(root, "never", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "before cleanup after");
    assert_int_equal(frn_live_objects(l), 0);

    /* free() from a cancel handler, which runs inside cancel() */
    g_len = 0;
    g_log[0] = '\0';
    root = frn_root_new(l);
    root->api->add(root, root, fr_wait, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    root->api->cancel(root);
    assert_string_equal(g_log, "ch");
    assert_int_equal(frn_live_objects(l), 0);

    /* free() from the unhandled-error callback */
    g_len = 0;
    g_log[0] = '\0';
    root = frn_root_new(l);
    root->api->add(root, NULL, fr_fail, NULL);
    root->api->execute(root, NULL, fr_unhandled_frees);
    run(l);
    assert_string_equal(g_log, "unhandled:Bad");
    finish(l);
}

/* ---- deep nesting ------------------------------------------------------- */

#define DEEP 100000

typedef struct Deep {
    size_t depth;
    size_t expect_cancel;
    size_t cancels;
    size_t cleanups;
    int wait_at_bottom;
    int bad_order;
} Deep;

static Deep g_deep;

static void dp_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    size_t lvl = *(size_t*)data;
    if (lvl != g_deep.expect_cancel) {
        g_deep.bad_order = 1;
    }
    g_deep.expect_cancel--;
    g_deep.cancels++;
}

static void dp_cleanup(void* p)
{
    (void)p;
    g_deep.cleanups++;
}

static void dp_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    size_t lvl = ++g_deep.depth;
    size_t* mine = bsi->api->stack(bsi, sizeof(size_t), dp_cleanup);
    *mine = lvl;
    if (g_deep.wait_at_bottom) {
        bsi->api->setCancel(bsi, mine, dp_cancel);
    }
    if (lvl < DEEP) {
        bsi->api->add(bsi, NULL, dp_step, NULL);
    } else if (!g_deep.wait_at_bottom) {
        FutoInArgs a = zargs();
        a.arg0.type = &T_CNT;
        bsi->api->success(bsi, &a);
    }
}

static void dp_last(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    /* the innermost result travels up through 100,000 completions */
    assert_ptr_equal(args->arg0.type, &T_CNT);
    lg("last");
}

static void test_deep_nesting(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    /* wait at the bottom, then cancel: handlers innermost first */
    memset(&g_deep, 0, sizeof g_deep);
    g_deep.wait_at_bottom = 1;
    g_deep.expect_cancel = DEEP;
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, dp_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_int_equal(g_deep.depth, DEEP);
    root->api->cancel(root);
    assert_int_equal(g_deep.cancels, DEEP);
    assert_int_equal(g_deep.cleanups, DEEP);
    assert_false(g_deep.bad_order);
    root->api->free(root);
    assert_int_equal(frn_live_objects(l), 0);

    /* complete from the bottom */
    memset(&g_deep, 0, sizeof g_deep);
    root = frn_root_new(l);
    root->api->add(root, NULL, dp_step, NULL);
    root->api->add(root, NULL, dp_last, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_int_equal(g_deep.depth, DEEP);
    assert_int_equal(g_deep.cleanups, DEEP);
    assert_string_equal(g_log, "last");
    assert_int_equal(g_cleanups, 1);
    root->api->free(root);
    finish(l);
}

/* ---- addSync with a minimal sync object --------------------------------- */

typedef struct TSync {
    FutoInSync base;
    int park;
    int reject;
    int locks;
    int unlocks;
    int cancels;
    ptrdiff_t lock_id;
    ptrdiff_t unlock_id;
    FutoInAsyncSteps* waiter;
} TSync;

static void ts_cancel(FutoInAsyncSteps* bsi, void* data)
{
    TSync* s = data;
    assert_ptr_equal(bsi, s->waiter);
    s->waiter = NULL;
    s->cancels++;
}

static void ts_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    TSync* s = (TSync*)sync;
    s->locks++;
    s->lock_id = bsi->api->rootId(bsi);
    if (s->reject) {
        bsi->api->handle_error(bsi, "DefenseRejected", "queue full");
        return;
    }
    if (s->park) {
        s->waiter = bsi;
        bsi->api->setCancel(bsi, s, ts_cancel);
    }
}

static void ts_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    TSync* s = (TSync*)sync;
    s->unlocks++;
    s->unlock_id = bsi->api->rootId(bsi);
    lg("unlock");
}

static const FutoInSyncAPI ts_api = { .lock = ts_lock, .unlock = ts_unlock };

static void sy_before(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = 3;
    bsi->api->success(bsi, &a);
}

static void sy_section(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    TSync* s = data;
    /* incoming args reach the critical section */
    lg("section:%d locks=%d unlocks=%d", args->arg0.i32, s->locks, s->unlocks);
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    a.arg0.i32 = 4;
    bsi->api->success(bsi, &a);
}

static void sy_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    /* the section's result passes through as if there were no lock */
    lg("after:%d", args->arg0.i32);
}

static void sy_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("section");
    bsi->api->handle_error(bsi, "Oops", NULL);
}

static void sy_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    TSync* s = data;
    /* still inside the critical section */
    lg("eh:%s unlocks=%d", code, s->unlocks);
}

static void sync_case(FrnLoop* l, TSync* s, FutoInAsyncSteps_execute_callback section)
{
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, sy_before, NULL);
    root->api->addSync(root, &s->base, s, section, sy_eh);
    root->api->add(root, NULL, sy_after, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    if (s->waiter) {
        lg("parked");
        FutoInArgs z = zargs();
        s->waiter->api->success(s->waiter, &z);
        s->waiter = NULL;
        run(l);
    }
    assert_int_equal(s->unlock_id == 0 || s->unlock_id == s->lock_id, 1);
    assert_int_equal(s->lock_id, root->api->rootId(root));
    root->api->free(root);
}

static void test_sync(void** state)
{
    (void)state;
    FrnLoop* l = begin();

    TSync a = { .base = { &ts_api } };
    sync_case(l, &a, sy_section);
    assert_string_equal(g_log, "section:3 locks=1 unlocks=0 unlock after:4");
    assert_int_equal(a.unlocks, 1);
    assert_int_equal(g_cleanups, 2);

    g_len = 0;
    g_log[0] = '\0';
    TSync p = { .base = { &ts_api }, .park = 1 };
    sync_case(l, &p, sy_section);
    assert_string_equal(g_log, "parked section:3 locks=1 unlocks=0 unlock after:4");
    assert_int_equal(p.unlocks, 1);
    assert_int_equal(p.cancels, 0);

    g_len = 0;
    g_log[0] = '\0';
    TSync e = { .base = { &ts_api } };
    sync_case(l, &e, sy_fail);
    assert_string_equal(g_log, "section eh:Oops unlocks=0 unlock unhandled:Oops");
    assert_int_equal(e.unlocks, 1);

    g_len = 0;
    g_log[0] = '\0';
    TSync r = { .base = { &ts_api }, .reject = 1 };
    sync_case(l, &r, sy_section);
    assert_string_equal(g_log, "unhandled:DefenseRejected");
    assert_int_equal(r.unlocks, 0);
    finish(l);
}

static void test_sync_cancel(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    /* parked and cancelled: the sync object's cancel handler, no unlock */
    TSync p = { .base = { &ts_api }, .park = 1 };
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->addSync(root, &p.base, &p, sy_section, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_non_null(p.waiter);
    root->api->cancel(root);
    assert_null(p.waiter);
    assert_int_equal(p.cancels, 1);
    assert_int_equal(p.unlocks, 0);

    /* granted (success() on the waiting lock step) then cancelled before the
     * flow's turn: the lock is held, so unlock() is owed exactly once */
    TSync q = { .base = { &ts_api }, .park = 1 };
    root->api->addSync(root, &q.base, &q, sy_section, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    FutoInArgs z = zargs();
    q.waiter->api->success(q.waiter, &z);
    root->api->cancel(root);
    assert_int_equal(q.cancels, 0);
    assert_int_equal(q.unlocks, 1);
    run(l);
    assert_int_equal(q.unlocks, 1);

    /* cancelled inside the critical section */
    TSync c = { .base = { &ts_api } };
    FutoInAsyncSteps* w = NULL;
    root->api->free(root);
    root = frn_root_new(l);
    root->api->addSync(root, &c.base, &w, ext_wait, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_non_null(w);
    assert_int_equal(c.unlocks, 0);
    root->api->cancel(root);
    assert_int_equal(c.unlocks, 1);
    root->api->free(root);
    assert_int_equal(c.unlocks, 1);
    assert_string_equal(g_log, "unlock waiting unlock");
    finish(l);
}

/* ---- strict checks ------------------------------------------------------ */

static void vi_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->success(bsi, NULL);
    assert_int_equal(g_viol.n, 1);
    assert_non_null(strstr(g_viol.last, "success"));
    assert_null(bsi->api->stack(bsi, 8, NULL));
    assert_int_equal(g_viol.n, 2);
    assert_non_null(strstr(g_viol.last, "stack"));
    bsi->api->add(bsi, NULL, NULL, NULL);
    assert_int_equal(g_viol.n, 3);
    static const FutoInSyncAPI half = { .lock = ts_lock, .unlock = NULL };
    FutoInSync s = { &half };
    bsi->api->addSync(bsi, &s, NULL, vi_step, NULL);
    assert_int_equal(g_viol.n, 4);
    bsi->api->loop(bsi, NULL, NULL, NULL);
    bsi->api->repeat(bsi, NULL, 1, NULL, NULL);
    assert_int_equal(g_viol.n, 6);
    /* none of these had any effect: the step completes implicitly */
    lg("vi");
}

static void test_violations(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    frn_set_violation_handler(l, rec_cb, &g_viol);
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, vi_step, NULL);
    root->api->add(root, "next", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "vi next");
    assert_int_equal(g_viol.n, 6);
    /* completion calls on a root interface */
    FutoInArgs z = zargs();
    root->api->success(root, &z);
    root->api->handle_error(root, "X", NULL);
    assert_int_equal(g_viol.n, 8);
    root->api->free(root);
    finish(l);
}

static FutoInAsyncSteps* g_done_step;

static void mi_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_done_step = bsi;
}

static void test_misuse(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    frn_set_misuse_handler(l, rec_cb, &g_mis);
    frn_set_violation_handler(l, rec_cb, &g_viol);
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->setTimeout(root, 10);
    root->api->setCancel(root, NULL, NULL);
    root->api->waitExternal(root);
    assert_null(root->api->stack(root, 4, noop_cleanup));
    root->api->breakLoop(root, NULL);
    root->api->continueLoop(root, NULL);
    assert_int_equal(g_mis.n, 6);
    assert_int_equal(frn_loop_pending(l), 0);
    root->api->add(root, NULL, mi_step, NULL);
    root->api->execute(root, NULL, NULL);
    root->api->execute(root, NULL, NULL);
    assert_int_equal(g_mis.n, 7);
    run(l);
    /* the step has completed: calls that need it running are misuse */
    g_done_step->api->add(g_done_step, NULL, mi_step, NULL);
    g_done_step->api->setTimeout(g_done_step, 5);
    assert_null(g_done_step->api->stack(g_done_step, 4, noop_cleanup));
    assert_int_equal(g_mis.n, 10);
    assert_int_equal(g_viol.n, 0);
    assert_int_equal(frn_loop_pending(l), 0);
    root->api->free(root);
    root->api->cancel(root); /* freed root (quarantined shell) */
    assert_int_equal(g_mis.n, 11);
    finish(l);
}

static void ie_success_after_add(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, "never", log_data_step, NULL);
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    bsi->api->success(bsi, &a); /* the value is cleaned up: nobody receives it */
}

static void ie_add_after_success(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs a = zargs();
    a.arg0.type = &T_CNT;
    bsi->api->success(bsi, &a);
    bsi->api->add(bsi, "never", log_data_step, NULL);
}

static void ie_twice(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs a = zargs();
    bsi->api->success(bsi, &a);
    bsi->api->success(bsi, &a);
}

static void ie_eh_then_wait(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    lg("eh1:%s", code);
    bsi->api->setCancel(bsi, NULL, NULL);
}

static void ie_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->handle_error(bsi, "First", NULL);
}

static void ie_inner_holder(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->add(bsi, NULL, ie_fail, ie_eh_then_wait);
}

static void ie_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    lg("%s:%s:%s", (const char*)data, code, error_info(bsi));
    FutoInArgs a = zargs();
    bsi->api->success(bsi, &a);
}

static void test_internal_error(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root;
    root = frn_root_new(l);
    root->api->add(root, "A", ie_success_after_add, ie_eh);
    root->api->add(root, "B", ie_add_after_success, ie_eh);
    root->api->add(root, "C", ie_twice, ie_eh);
    root->api->add(root, "D", ie_inner_holder, ie_eh);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log,
            "A:InternalError:success() after adding sub-steps "
            "B:InternalError:add() after success()/error() in the same callback "
            "C:InternalError:success() after success()/error() "
            "eh1:First D:InternalError:setCancel() in an error handler");
    /* both values sent with the rejected successes were cleaned up */
    assert_int_equal(g_cleanups, 2);
    root->api->free(root);
    finish(l);
}

/* ---- scheduling through the interface ----------------------------------- */

static void sc_cb(void* data)
{
    lg("%s", (const char*)data);
}

static void test_sched(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    FutoInHandle zero;
    memset(&zero, 0, sizeof zero);
    assert_false(root->api->sched_is_valid(root, &zero));
    root->api->sched_cancel(root, &zero);
    FutoInHandle t2 = root->api->sched_deferred(root, 20, "t20", sc_cb);
    FutoInHandle t1 = root->api->sched_deferred(root, 10, "t10", sc_cb);
    FutoInHandle t1b = root->api->sched_deferred(root, 10, "t10b", sc_cb);
    FutoInHandle gone = root->api->sched_deferred(root, 5, "gone", sc_cb);
    FutoInHandle i1 = root->api->sched_immediate(root, "i1", sc_cb);
    FutoInHandle i2 = root->api->sched_immediate(root, "i2", sc_cb);
    assert_true(root->api->sched_is_valid(root, &i1));
    assert_true(root->api->sched_is_valid(root, &gone));
    root->api->sched_cancel(root, &gone);
    assert_false(root->api->sched_is_valid(root, &gone));
    root->api->sched_cancel(root, &gone); /* stale: harmless */
    assert_int_equal(frn_loop_pending(l), 5);
    assert_int_equal(frn_loop_run_ready(l), 2);
    assert_string_equal(g_log, "i1 i2");
    assert_false(root->api->sched_is_valid(root, &i2));
    assert_int_equal(frn_loop_next_due(l), 10);
    run(l);
    assert_string_equal(g_log, "i1 i2 t10 t10b t20");
    assert_false(root->api->sched_is_valid(root, &t1));
    assert_false(root->api->sched_is_valid(root, &t1b));
    assert_false(root->api->sched_is_valid(root, &t2));
    /* a handle of another loop is not ours */
    FrnLoop* other = frn_loop_new();
    FutoInAsyncSteps* r2 = frn_root_new(other);
    FutoInHandle h2 = r2->api->sched_immediate(r2, "x", sc_cb);
    assert_false(root->api->sched_is_valid(root, &h2));
    root->api->sched_cancel(root, &h2);
    assert_true(r2->api->sched_is_valid(r2, &h2));
    r2->api->sched_cancel(r2, &h2);
    r2->api->free(r2);
    finish(other);
    assert_true(root->api->is_same_thread(root));
    root->api->free(root);
    finish(l);
}

/* ---- the cancel-on-own-error option -------------------------------------- */

static void oe_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    lg("ch");
}

static void oe_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    *(FutoInAsyncSteps**)data = bsi;
    bsi->api->setCancel(bsi, NULL, oe_cancel);
}

static void oe_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    lg("eh:%s", code);
}

static void test_option_own_error(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    for (int opt = 0; opt < 2; ++opt) {
        frn_set_options(l, opt ? FRN_OPT_CANCEL_ON_OWN_ERROR : 0);
        FutoInAsyncSteps* w = NULL;
        FutoInAsyncSteps* root = frn_root_new(l);
        root->api->add(root, &w, oe_wait, oe_eh);
        root->api->execute(root, NULL, unhandled_log);
        run(l);
        w->api->handle_error(w, "Ext", NULL);
        run(l);
        root->api->free(root);
    }
    assert_string_equal(g_log, "eh:Ext unhandled:Ext ch eh:Ext unhandled:Ext");
    finish(l);
}

/* ---- several roots take turns ------------------------------------------- */

static void nr_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    lg("%s", (const char*)data);
}

static void test_roots_interleave(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* a = frn_root_new(l);
    FutoInAsyncSteps* b = a->api->newInstance(a);
    assert_true(a->api->rootId(a) != b->api->rootId(b));
    a->api->add(a, "A1", nr_step, NULL);
    a->api->add(a, "A2", nr_step, NULL);
    b->api->add(b, "B1", nr_step, NULL);
    b->api->add(b, "B2", nr_step, NULL);
    a->api->execute(a, NULL, unhandled_log);
    b->api->execute(b, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "A1 B1 A2 B2");
    a->api->free(a);
    b->api->free(b);
    finish(l);
}

/* ---- cancel from inside a step ------------------------------------------ */

static void ci_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    (void)data;
    lg("ch");
}

static void ci_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* root = data;
    bsi->api->setCancel(bsi, NULL, ci_cancel);
    bsi->api->setTimeout(bsi, 10);
    bsi->api->add(bsi, "never", log_data_step, NULL);
    root->api->cancel(root);
    lg("returned");
    assert_false(bsi->api->isValid(bsi));
}

static void test_cancel_inside_step(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, root, ci_step, NULL);
    root->api->add(root, "never", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "ch returned");
    assert_int_equal(frn_live_objects(l), 3); /* root, its main flow and top frame */
    root->api->add(root, "again", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_string_equal(g_log, "ch returned again");
    root->api->free(root);
    finish(l);
}

/* ---- a timeout above running parallel branches -------------------------- */

static void ta_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->setTimeout(bsi, 50);
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, pe_par_eh);
    p->api->add(p, "b1", pe_wait, NULL);
    p->api->add(p, "b2", pe_wait, NULL);
}

static void ta_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    lg("eh:%s", code);
}

static void test_timeout_above_parallel(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, NULL, ta_outer, ta_eh);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    /* the branches are cancelled in order; the parallel step's own handler
     * is not called, the timed-out step's is */
    assert_string_equal(g_log, "b1 b2 cancel:b1 cancel:b2 eh:Timeout unhandled:Timeout");
    assert_int_equal(frn_loop_now(l), 50);
    root->api->free(root);
    finish(l);
}

/* ---- break out of a loop from inside a parallel branch ------------------- */

static void bp_break(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    lg("break");
    bsi->api->breakLoop(bsi, "L");
}

static void bp_body(FutoInAsyncSteps* bsi, void* data)
{
    (void)data;
    lg("body");
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, pe_par_eh);
    p->api->add(p, "w", pe_wait, NULL);
    p->api->add(p, NULL, bp_break, NULL);
}

static void test_break_across_parallel(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->loop(root, NULL, bp_body, "L");
    root->api->add(root, "after", log_data_step, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    /* loop control skips error handlers, the parallel one included */
    assert_string_equal(g_log, "body w break cancel:w after");
    root->api->free(root);
    finish(l);
}

/* ---- addSync from parallel branches: each branch is a flow of its own ----- */

typedef struct IdSync {
    FutoInSync base;
    int n_lock;
    int n_unlock;
    ptrdiff_t locked[4];
    ptrdiff_t unlocked[4];
} IdSync;

static void ids_lock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    IdSync* s = (IdSync*)sync;
    s->locked[s->n_lock++] = bsi->api->rootId(bsi);
}

static void ids_unlock(FutoInAsyncSteps* bsi, FutoInSync* sync)
{
    IdSync* s = (IdSync*)sync;
    s->unlocked[s->n_unlock++] = bsi->api->rootId(bsi);
}

static const FutoInSyncAPI ids_api = { .lock = ids_lock, .unlock = ids_unlock };

static void ids_section(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
}

static void ids_branch(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    IdSync* s = data;
    bsi->api->addSync(bsi, &s->base, s, ids_section, NULL);
}

static void ids_main(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    p->api->add(p, data, ids_branch, NULL);
    p->api->add(p, data, ids_branch, NULL);
}

static void test_sync_branches(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    IdSync s = { .base = { &ids_api } };
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, &s, ids_main, NULL);
    root->api->addSync(root, &s.base, &s, ids_section, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    assert_int_equal(s.n_lock, 3);
    assert_int_equal(s.n_unlock, 3);
    assert_true(s.locked[0] != s.locked[1]);
    assert_true(s.locked[0] != s.locked[2] && s.locked[1] != s.locked[2]);
    assert_int_equal(s.locked[2], root->api->rootId(root));
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(s.locked[i], s.unlocked[i]);
    }
    root->api->free(root);
    finish(l);
}

/* ---- external use of a waiting step ------------------------------------- */

static void ew_cleanup(void* p)
{
    lg("k:%s", (const char*)*(const char**)p);
}

static void test_external_stack(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    FutoInAsyncSteps* waiter = NULL;
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->add(root, &waiter, ext_wait, NULL);
    root->api->add(root, NULL, ext_next, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    const char** mem = waiter->api->stack(waiter, sizeof(const char*), ew_cleanup);
    assert_non_null(mem);
    *mem = "ext";
    waiter->api->setTimeout(waiter, 5); /* re-armed from outside */
    assert_int_equal(frn_loop_next_due(l), 5);
    FutoInArgs z = zargs();
    waiter->api->success(waiter, &z);
    /* completion drops the timer; only the flow's turn is pending */
    assert_int_equal(frn_loop_next_due(l), -1);
    assert_int_equal(frn_loop_pending(l), 1);
    run(l);
    assert_string_equal(g_log, "waiting k:ext next:0 cleanups=0");

    /* left alone, the re-armed timeout fires */
    g_len = 0;
    g_log[0] = '\0';
    root->api->add(root, &waiter, ext_wait, NULL);
    root->api->execute(root, NULL, unhandled_log);
    run(l);
    waiter->api->setTimeout(waiter, 5);
    run(l);
    assert_string_equal(g_log, "waiting unhandled:Timeout");
    root->api->free(root);
    finish(l);
}

/* ---- re-entrant loop run ------------------------------------------------- */

static void rr_cb(void* data)
{
    assert_int_equal(frn_loop_run_ready((FrnLoop*)data), 0);
}

static void test_reentrant_run(void** state)
{
    (void)state;
    FrnLoop* l = begin();
    frn_set_violation_handler(l, rec_cb, &g_viol);
    FutoInAsyncSteps* root = frn_root_new(l);
    root->api->sched_immediate(root, l, rr_cb);
    run(l);
    assert_int_equal(g_viol.n, 1);
    assert_non_null(strstr(g_viol.last, "run_ready"));
    root->api->free(root);
    finish(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence_args),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_error_recover_replace),
        cmocka_unit_test(test_error_steps_in_handler),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_external_success),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_parallel_success),
        cmocka_unit_test(test_parallel_error),
        cmocka_unit_test(test_loops),
        cmocka_unit_test(test_state_stack),
        cmocka_unit_test(test_free_inside),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_sync),
        cmocka_unit_test(test_sync_cancel),
        cmocka_unit_test(test_violations),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_internal_error),
        cmocka_unit_test(test_sched),
        cmocka_unit_test(test_option_own_error),
        cmocka_unit_test(test_roots_interleave),
        cmocka_unit_test(test_cancel_inside_step),
        cmocka_unit_test(test_timeout_above_parallel),
        cmocka_unit_test(test_break_across_parallel),
        cmocka_unit_test(test_sync_branches),
        cmocka_unit_test(test_external_stack),
        cmocka_unit_test(test_reentrant_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
