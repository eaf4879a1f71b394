/* SPDX-License-Identifier: MIT */
/* The engine through the raw ABI only (spec 2.7.2): every one of the 25
 * table entries, called on a root, on the interfaces passed to callbacks
 * (main flow and parallel branches) and on the interface parallel()
 * returns. Besides the table, only the constructor futoin_asyncsteps_new(),
 * the loop's constructor/destructor and futoin_loop_run() are used: no
 * inline helper of asyncsteps.h, so the table alone must be enough.
 * (asyncsteps.h is included for the constructor's prototype only.) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>

/* ---- trace & values, written against binaryval.h only ---- */

/* The trace helper is plain C over a buffer: it uses nothing of the library. */
#include "trace_support.h"

static FutoInLoop* g_loop;

static int setup(void** state)
{
    (void)state;
    tr_reset();
    g_loop = futoin_loop_new_virtual();
    return g_loop ? 0 : -1;
}

static int teardown(void** state)
{
    (void)state;
    futoin_loop_free(g_loop);
    return 0;
}

static const FutoInType i32_type = { FTN_TYPE_INT32, NULL };

static int g_cleanups;

static void count_cleanup(FutoInBinaryValue* v)
{
    (void)v;
    ++g_cleanups;
}

static const FutoInType counted_type = { FTN_TYPE_CUSTOM_OBJECT, count_cleanup };

static FutoInArgs args_i32(int32_t v)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0.type = &i32_type;
    a.arg0.i32 = v;
    return a;
}

static int arg_i32(const FutoInArgs* a)
{
    return a && a->arg0.type && a->arg0.type->flags == FTN_TYPE_INT32 ? a->arg0.i32 : -1;
}

static const char* error_info(FutoInAsyncSteps* as)
{
    const char* s = (const char*)as->api->stateVariable(as, NULL, "error_info", NULL, NULL);
    return s ? s : "(null)";
}

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("unhandled:%s:[%s]", code, error_info(as));
}

static void cancel_tag(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    tr("cancel:%s", (const char*)data);
}

static void step_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
}

static void must_not_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    fail_msg("step %s must not run", (const char*)data);
}

/* ---- a minimal sync object ---- */

typedef struct TestSync {
    FutoInSync base;
    int locks;
    int unlocks;
} TestSync;

static void ts_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    ++((TestSync*)sync)->locks;
    tr("lock");
}

static void ts_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    ++((TestSync*)sync)->unlocks;
    tr("unlock");
}

static const FutoInSyncAPI ts_api = { .lock = ts_lock, .unlock = ts_unlock };

/* ---- the tables are complete ---- */

static void par_noop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
}

static void test_tables_complete(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_non_null(root);
    assert_non_null(root->api);
    FutoInAsyncSteps* par = root->api->parallel(root, NULL, NULL);
    assert_non_null(par);
    assert_true(par->api != root->api);
    for (int i = 0; i < 25; ++i) {
        assert_non_null(root->api->funcs[i]);
        assert_non_null(par->api->funcs[i]);
    }
    /* the named members and funcs[] are the same storage */
    void (*add)(FutoInAsyncSteps*, void*, FutoInAsyncSteps_execute_callback,
            FutoInAsyncSteps_error_callback) = root->api->add;
    assert_memory_equal(&root->api->funcs[0], &add, sizeof(add));
    int (*same_thread)(FutoInAsyncSteps*) = root->api->is_same_thread;
    assert_memory_equal(&root->api->funcs[24], &same_thread, sizeof(same_thread));
    par->api->add(par, NULL, par_noop, NULL);
    root->api->free(root);
}

/* ---- entries on an idle root ---- */

static int g_allocs;

static void* alloc_int(void* data)
{
    ++g_allocs;
    int* p = (int*)malloc(sizeof(int));
    *p = (int)(intptr_t)data;
    return p;
}

static void free_int(void* data, void* value)
{
    (void)data;
    tr("state-free:%d", *(int*)value);
    free(value);
}

static void sched_tag(void* data)
{
    tr("%s", (const char*)data);
}

static void loop_body_twice(FutoInAsyncSteps* as, void* data)
{
    int* n = (int*)data;
    tr("loop%d", *n);
    if ((*n)++ == 1) {
        as->api->breakLoop(as, NULL);
    }
}

static void repeat_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    tr("%s%d", (const char*)data, (int)i);
}

static void critical(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    tr("cs:%d", arg_i32(args));
    FutoInArgs a = args_i32(arg_i32(args) + 1);
    as->api->success(as, &a);
}

static void give(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInArgs a = args_i32((int32_t)(intptr_t)data);
    as->api->success(as, &a);
}

static void show(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d", (const char*)data, arg_i32(args));
}

static void test_root_entries(void** state)
{
    (void)state;
    g_allocs = 0;
    g_cleanups = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    const FutoInAsyncStepsAPI* api = root->api;

    /* 17 isValid, 16 rootId, 24 is_same_thread */
    assert_int_equal(api->isValid(root), 1);
    ptrdiff_t id = api->rootId(root);
    assert_int_equal(api->is_same_thread(root), 1);

    /* 2 stateVariable: allocated once, released with the root */
    int* v = (int*)api->stateVariable(root, (void*)(intptr_t)5, "v", alloc_int, free_int);
    assert_non_null(v);
    assert_ptr_equal(api->stateVariable(root, (void*)(intptr_t)6, "v", alloc_int, free_int), v);
    assert_int_equal(g_allocs, 1);
    assert_string_equal(error_info(root), "");

    /* 3 stack on an idle root: zeroed memory */
    int* mem = (int*)api->stack(root, 4 * sizeof(int), NULL);
    assert_non_null(mem);
    assert_int_equal(mem[0] | mem[1] | mem[2] | mem[3], 0);

    /* 4-8, 11, 12: no step is running, so these are ignored; success()
     * releases the values it was given */
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0.type = &counted_type;
    api->success(root, &a);
    assert_int_equal(g_cleanups, 1);
    api->handle_error(root, "Ignored", "not running");
    api->setTimeout(root, 1);
    api->setCancel(root, "ignored", cancel_tag);
    api->waitExternal(root);
    api->breakLoop(root, NULL);
    api->continueLoop(root, "X");
    api->cancel(root); /* 14: not running, a no-op */

    /* 0 add, 9 loop, 10 repeat, 15 addSync, 1 parallel at level 0 */
    int n = 0;
    TestSync sync = { { &ts_api }, 0, 0 };
    api->add(root, "s1", step_tag, NULL);
    api->loop(root, &n, loop_body_twice, "L");
    api->repeat(root, "r", 2, repeat_body, NULL);
    api->add(root, (void*)(intptr_t)41, give, NULL);
    api->addSync(root, &sync.base, NULL, critical, NULL);
    api->add(root, "after-sync", show, NULL);
    FutoInAsyncSteps* par = api->parallel(root, NULL, NULL);
    par->api->add(par, "b1", step_tag, NULL);
    par->api->add(par, "b2", step_tag, NULL);

    /* 20-23 scheduler entries */
    FutoInHandle h1 = api->sched_immediate(root, "imm", sched_tag);
    FutoInHandle h2 = api->sched_deferred(root, 5, "def", sched_tag);
    FutoInHandle h3 = api->sched_deferred(root, 3, "cancelled", sched_tag);
    assert_int_equal(api->sched_is_valid(root, &h1), 1);
    assert_int_equal(api->sched_is_valid(root, &h3), 1);
    api->sched_cancel(root, &h3);
    assert_int_equal(api->sched_is_valid(root, &h3), 0);

    /* 13 execute */
    api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace,
            "imm|s1|loop0|loop1|r0|r1|lock|cs:41|unlock|after-sync:42|b1|b2|def");
    assert_int_equal(api->sched_is_valid(root, &h1), 0);
    assert_int_equal(api->sched_is_valid(root, &h2), 0);
    assert_int_equal(sync.unlocks, 1);
    assert_int_equal(api->rootId(root), id);
    assert_string_equal(error_info(root), ""); /* the unlabelled break */

    /* 18 newInstance: an independent root on the same loop */
    g_trace[0] = '\0';
    FutoInAsyncSteps* other = api->newInstance(root);
    assert_non_null(other);
    assert_true(other != root);
    assert_true(other->api->rootId(other) != id);
    other->api->add(other, "other", step_tag, NULL);
    other->api->execute(other, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "other");

    /* 19 free */
    other->api->free(other);
    g_trace[0] = '\0';
    api->free(root);
    assert_string_equal(g_trace, "state-free:5");
}

/* ---- entries on a step's interface: waiting, timeouts, errors ---- */

static FutoInAsyncSteps* g_as;

static void complete_ok(void* data)
{
    FutoInArgs a = args_i32((int32_t)(intptr_t)data);
    g_as->api->success(g_as, &a);
}

static void complete_err(void* data)
{
    g_as->api->handle_error(g_as, (const char*)data, "external info");
}

static void s1_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("S1");
    as->api->setCancel(as, data, cancel_tag);
    as->api->setTimeout(as, 10);
}

static void eh1_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh1:%s:[%s]", code, error_info(as));
    FutoInArgs a = args_i32(1);
    as->api->success(as, &a);
}

static void s2_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    tr("S2:%d", arg_i32(args));
    g_as = as;
    as->api->waitExternal(as);
    as->api->sched_deferred(as, 5, (void*)(intptr_t)2, complete_ok);
}

static void s3_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    tr("S3:%d", arg_i32(args));
    g_as = as;
    as->api->setTimeout(as, 20);
    as->api->sched_deferred(as, 5, "E1", complete_err);
}

static void eh3_pass(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh3:%s:[%s]", code, error_info(as));
}

static void test_step_wait_entries(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, "c1", s1_timeout, eh1_recover);
    root->api->add(root, NULL, s2_wait, NULL);
    root->api->add(root, NULL, s3_error, eh3_pass);
    root->api->add(root, "never", must_not_run, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace,
            "S1|cancel:c1|eh1:Timeout:[]|S2:1|S3:2|eh3:E1:[external info]|"
            "unhandled:E1:[external info]");
    root->api->free(root);
}

/* ---- entries on a step's interface: loops and loop control ---- */

static void sub_break_label(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("brk");
    as->api->breakLoop(as, "L");
}

static void body_continue_break(FutoInAsyncSteps* as, void* data)
{
    int* n = (int*)data;
    tr("it%d", *n);
    if ((*n)++ == 0) {
        as->api->continueLoop(as, NULL);
        return;
    }
    as->api->add(as, NULL, sub_break_label, NULL);
    as->api->add(as, "never", must_not_run, NULL);
}

static void step_with_loops(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    as->api->loop(as, data, body_continue_break, "L");
    as->api->repeat(as, "r", 3, repeat_body, NULL);
}

static void show_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s:[%s]", (const char*)data, error_info(as));
}

static void test_step_loop_entries(void** state)
{
    (void)state;
    int n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, &n, step_with_loops, NULL);
    root->api->add(root, "after", show_info, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "it0|it1|brk|r0|r1|r2|after:[L]");
    root->api->free(root);
}

/* ---- entries on a step's interface: state, stack, scheduler, misc ---- */

static int g_stack_cleanups;

static void stack_cleanup(void* value)
{
    ++g_stack_cleanups;
    tr("stack-cleanup:%d", *(int*)value);
}

static FutoInAsyncSteps* g_root;
static FutoInAsyncSteps* g_child;

static void sub_sees_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("sub:%d:c%d", *(int*)data, g_stack_cleanups);
}

static void step_misc(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    /* the main flow's interface is the root handle */
    assert_ptr_equal(as, g_root);
    assert_int_equal(as->api->isValid(as), 1);
    assert_int_equal(as->api->rootId(as), g_root->api->rootId(g_root));
    assert_int_equal(as->api->is_same_thread(as), 1);
    int* v = (int*)as->api->stateVariable(as, (void*)(intptr_t)9, "v", alloc_int, free_int);
    assert_ptr_equal(v, g_root->api->stateVariable(g_root, NULL, "v", NULL, NULL));
    int* mem = (int*)as->api->stack(as, sizeof(int), stack_cleanup);
    assert_non_null(mem);
    *mem = 33;
    FutoInHandle h = as->api->sched_deferred(as, 7, "never", sched_tag);
    assert_int_equal(as->api->sched_is_valid(as, &h), 1);
    as->api->sched_cancel(as, &h);
    assert_int_equal(as->api->sched_is_valid(as, &h), 0);
    as->api->sched_immediate(as, "imm", sched_tag);
    /* a new root from inside a step */
    g_child = as->api->newInstance(as);
    g_child->api->add(g_child, "child", step_tag, NULL);
    g_child->api->execute(g_child, NULL, unhandled);
    as->api->add(as, mem, sub_sees_stack, NULL);
    /* 15 addSync on a step's interface; the section gets the sync step's
     * input: none here */
    static TestSync sync = { { &ts_api }, 0, 0 };
    as->api->addSync(as, &sync.base, NULL, critical, NULL);
    tr("misc");
}

static void test_step_misc_entries(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    root->api->add(root, NULL, step_misc, NULL);
    root->api->add(root, "next", step_tag, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    /* the child root takes turns with this one; the loop immediate runs
     * after the dispatcher's burst */
    assert_string_equal(g_trace,
            "misc|child|sub:33:c0|lock|cs:-1|unlock|stack-cleanup:33|next|imm");
    g_trace[0] = '\0';
    g_child->api->free(g_child);
    root->api->free(root);
    assert_string_equal(g_trace, "state-free:9");
}

/* cancel (14) and free (19) through a step's interface */
static void step_cancel_self(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("self");
    as->api->setCancel(as, "self", cancel_tag);
    as->api->cancel(as);
}

static void step_free_self(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("free-self");
    as->api->free(as);
    tr("still-here");
}

static void test_step_cancel_free(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, NULL, step_cancel_self, NULL);
    root->api->add(root, "never", must_not_run, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "self|cancel:self");
    assert_int_equal(root->api->isValid(root), 0);
    /* reused, then freed from inside its own step */
    g_trace[0] = '\0';
    root->api->add(root, NULL, step_free_self, NULL);
    root->api->add(root, "never", must_not_run, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "free-self|still-here");
}

/* ---- parallel branches: their own interfaces ---- */

static ptrdiff_t g_ids[4];

static void branch_entries(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(intptr_t)data;
    g_ids[i] = as->api->rootId(as);
    assert_true(as != g_root);
    assert_int_equal(as->api->isValid(as), 1);
    assert_int_equal(as->api->is_same_thread(as), 1);
    assert_ptr_equal(as->api->stateVariable(as, NULL, "v", NULL, NULL),
            g_root->api->stateVariable(g_root, NULL, "v", NULL, NULL));
    tr("b%d", i);
    as->api->add(as, NULL, give, NULL);
}

static void branch_loop_body(FutoInAsyncSteps* as, void* data)
{
    int* n = (int*)data;
    tr("bl%d", *n);
    if (++*n == 2) {
        as->api->breakLoop(as, NULL);
    }
}

static FutoInAsyncSteps* g_par;

static void step_parallel_entries(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    TestSync* sync = (TestSync*)data;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    g_par = p;
    /* entries that act on the creating flow */
    assert_int_equal(p->api->rootId(p), as->api->rootId(as));
    assert_int_equal(p->api->isValid(p), 1);
    assert_int_equal(p->api->is_same_thread(p), 1);
    assert_ptr_equal(p->api->stateVariable(p, NULL, "v", NULL, NULL),
            as->api->stateVariable(as, NULL, "v", NULL, NULL));
    int* mem = (int*)p->api->stack(p, sizeof(int), stack_cleanup);
    *mem = 44;
    FutoInHandle h = p->api->sched_deferred(p, 1, "never", sched_tag);
    assert_int_equal(p->api->sched_is_valid(p, &h), 1);
    p->api->sched_cancel(p, &h);
    assert_int_equal(p->api->sched_is_valid(p, &h), 0);
    p->api->sched_immediate(p, "p-imm", sched_tag);
    FutoInAsyncSteps* inst = p->api->newInstance(p);
    assert_non_null(inst);
    inst->api->free(inst);
    p->api->waitExternal(p); /* the step has sub-steps: no wait */
    /* entries that add branches */
    p->api->add(p, (void*)(intptr_t)1, branch_entries, NULL);
    p->api->add(p, (void*)(intptr_t)2, branch_entries, NULL);
    static int loop_n;
    loop_n = 0;
    p->api->loop(p, &loop_n, branch_loop_body, NULL);
    p->api->repeat(p, "br", 2, repeat_body, NULL);
    p->api->addSync(p, &sync->base, NULL, critical, NULL);
    FutoInAsyncSteps* pp = p->api->parallel(p, NULL, NULL);
    pp->api->add(pp, "nested1", step_tag, NULL);
    pp->api->add(pp, "nested2", step_tag, NULL);
    tr("added");
}

static void test_parallel_entries(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    memset(g_ids, 0, sizeof(g_ids));
    TestSync sync = { { &ts_api }, 0, 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    root->api->stateVariable(root, (void*)(intptr_t)3, "v", alloc_int, free_int);
    root->api->add(root, &sync, step_parallel_entries, NULL);
    root->api->add(root, "after", show, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace,
            "added|b1|b2|bl0|br0|lock|bl1|br1|cs:-1|nested1|nested2|"
            "unlock|stack-cleanup:44|after:-1|p-imm");
    assert_true(g_ids[1] != 0 && g_ids[2] != 0);
    assert_true(g_ids[1] != g_ids[2]);
    assert_true(g_ids[1] != root->api->rootId(root));
    assert_int_equal(sync.locks, 1);
    assert_int_equal(sync.unlocks, 1);
    g_trace[0] = '\0';
    root->api->free(root);
    assert_string_equal(g_trace, "state-free:3");
}

/* setTimeout and setCancel through the parallel interface arm the creating
 * step: the timeout aborts the branches. */
static void branch_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    as->api->setCancel(as, data, cancel_tag);
}

static void step_par_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "w1", branch_wait, NULL);
    p->api->add(p, "w2", branch_wait, NULL);
    p->api->setTimeout(p, 10);
    p->api->setCancel(p, data, cancel_tag);
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    as->api->success(as, NULL);
}

static void test_parallel_timeout_cancel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, "holder", step_par_timeout, eh_recover);
    root->api->add(root, "after", step_tag, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "w1|w2|cancel:w1|cancel:w2|cancel:holder|eh:Timeout|after");
    root->api->free(root);
}

/* breakLoop / continueLoop through the parallel interface control the
 * creating flow's loop. */
static void body_par_control(FutoInAsyncSteps* as, void* data)
{
    int* n = (int*)data;
    tr("it%d", *n);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "never", must_not_run, NULL);
    if ((*n)++ < 2) {
        p->api->continueLoop(p, NULL);
    } else {
        p->api->breakLoop(p, "PL");
    }
}

static void test_parallel_loop_control(void** state)
{
    (void)state;
    int n = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->loop(root, &n, body_par_control, "PL");
    root->api->add(root, "after", show_info, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "it0|it1|it2|after:[PL]");
    root->api->free(root);
}

/* success / handle_error through the parallel interface act on the
 * creating step: success() after adding a sub-step is misuse
 * (InternalError); handle_error() from an error handler replaces the code. */
static void step_par_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "never", must_not_run, NULL);
    p->api->success(p, NULL);
}

static void eh_par_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "never", must_not_run, NULL);
    p->api->handle_error(p, "Replaced", "via parallel iface");
}

static void test_parallel_success_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, NULL, step_par_success, eh_par_error);
    root->api->add(root, "never", must_not_run, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "eh:InternalError|unhandled:Replaced:[via parallel iface]");
    root->api->free(root);
}

/* cancel through the parallel interface cancels the root. */
static void step_par_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    as->api->setCancel(as, data, cancel_tag);
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, "never", must_not_run, NULL);
    p->api->cancel(p);
    tr("cancelled");
}

static void test_parallel_cancel(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    root->api->add(root, "holder", step_par_cancel, NULL);
    root->api->add(root, "never", must_not_run, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "cancel:holder|cancelled");
    root->api->free(root);
}

/* execute and free where only a root may be executed or freed, called
 * from inside steps: InternalError of the calling step */
static void misuse_execute_running(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    as->api->execute(as, NULL, unhandled);
}

static void misuse_par_execute(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->execute(p, NULL, unhandled);
}

static void misuse_par_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->free(p);
}

static void misuse_branch_execute(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    as->api->execute(as, NULL, unhandled);
}

static void misuse_branch_free(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    as->api->free(as);
}

static void misuse_in_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = as->api->parallel(as, NULL, NULL);
    p->api->add(p, NULL, data ? misuse_branch_free : misuse_branch_execute, NULL);
}

static void test_root_only_entries_misuse(void** state)
{
    (void)state;
    static const struct {
        FutoInAsyncSteps_execute_callback f;
        void* data;
        const char* info;
    } cases[] = {
        { misuse_execute_running, NULL, "execute() on a root that is already running" },
        { misuse_par_execute, NULL, "execute() on a parallel step interface" },
        { misuse_par_free, NULL, "free() on a parallel step interface" },
        { misuse_in_branch, NULL, "execute() on a parallel branch" },
        { misuse_in_branch, (void*)"free", "free() on a parallel branch" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        g_trace[0] = '\0';
        FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
        root->api->add(root, cases[i].data, cases[i].f, NULL);
        root->api->add(root, "never", must_not_run, NULL);
        root->api->execute(root, NULL, unhandled);
        futoin_loop_run(g_loop);
        assert_non_null(strstr(g_trace, "unhandled:InternalError:["));
        assert_non_null(strstr(g_trace, cases[i].info));
        root->api->free(root);
    }
}

/* the parallel interface of an idle root */
static void test_parallel_on_idle_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = root->api->parallel(root, NULL, NULL);
    p->api->add(p, "a", step_tag, NULL);
    p->api->add(p, "b", step_tag, NULL);
    p->api->execute(p, NULL, unhandled); /* ignored: only a root executes */
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "");
    root->api->add(root, "after", step_tag, NULL);
    root->api->execute(root, NULL, unhandled);
    futoin_loop_run(g_loop);
    assert_string_equal(g_trace, "a|b|after");
    root->api->free(root);
}

int main(void)
{
/* fn on a fresh virtual loop with an empty trace (setup() and teardown()). */
#define ABI_ONLY_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        ABI_ONLY_TEST(test_tables_complete),
        ABI_ONLY_TEST(test_root_entries),
        ABI_ONLY_TEST(test_step_wait_entries),
        ABI_ONLY_TEST(test_step_loop_entries),
        ABI_ONLY_TEST(test_step_misc_entries),
        ABI_ONLY_TEST(test_step_cancel_free),
        ABI_ONLY_TEST(test_parallel_entries),
        ABI_ONLY_TEST(test_parallel_timeout_cancel),
        ABI_ONLY_TEST(test_parallel_loop_control),
        ABI_ONLY_TEST(test_parallel_success_error),
        ABI_ONLY_TEST(test_parallel_cancel),
        ABI_ONLY_TEST(test_parallel_on_idle_root),
        ABI_ONLY_TEST(test_root_only_entries_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
