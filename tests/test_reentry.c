/* SPDX-License-Identifier: MIT */
/*
 * Re-entry from callbacks other than steps: a result value's cleanup, a
 * state variable's cleanup or allocator, a stack() cleanup, each calling
 * back into the engine on the root it belongs to while the engine is in
 * the middle of its own bookkeeping. Every test asserts that each cleanup
 * runs exactly once and that the loop ends (a bounded run: a hang fails
 * the test instead of spinning).
 *
 * Callbacks never assert (cmocka would longjmp through the engine): they
 * count, and the test body checks.
 */
#include "tsupport.h"

#include <futoin/asynctool.h>

/* Runs the loop to the end, failing the test if it does not end within
 * max_callbacks loop callbacks. */
static void run_bounded(size_t max_callbacks)
{
    size_t n = 0;
    while (futoin_loop_run_next(g_loop)) {
        if (++n > max_callbacks) {
            fail_msg("the loop did not end within %zu callbacks", max_callbacks);
        }
    }
}

/* ---- a value whose cleanup acts on a root ---- */

enum Act { ACT_NONE, ACT_FREE, ACT_CANCEL, ACT_FREE_CANCEL };

typedef struct Actor {
    FutoInAsyncSteps* root;
    int act;
    int cleanups;
} Actor;

static void act_on(Actor* a)
{
    switch (a->act) {
    case ACT_FREE:
        futoin_asyncsteps_free(a->root);
        break;
    case ACT_CANCEL:
        futoin_cancel(a->root);
        break;
    case ACT_FREE_CANCEL:
        futoin_cancel(a->root);
        futoin_asyncsteps_free(a->root);
        break;
    default:
        break;
    }
}

static void actor_cleanup(FutoInBinaryValue* v)
{
    Actor* a = (Actor*)v->custom_data;
    ++a->cleanups;
    act_on(a);
}

static const FutoInType actor_type = { FTN_TYPE_CUSTOM_OBJECT, actor_cleanup };

static void branch_returns_actor(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_custom(&actor_type, data));
}

static int g_after_parallel;

static void after_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    ++g_after_parallel;
}

static void start_parallel_actor(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_returns_actor, NULL, data);
    futoin_add(as, after_parallel, NULL, NULL);
}

/* A parallel branch ends with a value whose cleanup frees (or cancels) the
 * root: the branch is released once, the cleanup runs once, the loop
 * ends and nothing of the root runs after it. */
static void branch_value_cleanup_acts_on_root(int act, int expect_after)
{
    g_after_parallel = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Actor a = { root, act, 0 };
    futoin_add(root, start_parallel_actor, NULL, &a);
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(1000);
    assert_int_equal(a.cleanups, 1);
    assert_int_equal(g_after_parallel, expect_after);
    if (act != ACT_FREE && act != ACT_FREE_CANCEL) {
        futoin_asyncsteps_free(root);
    }
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(a.cleanups, 1);
}

static void test_branch_value_cleanup_frees_root(void** state)
{
    (void)state;
    branch_value_cleanup_acts_on_root(ACT_FREE, 0);
    assert_int_equal(g_misuse, 0);
}

static void test_branch_value_cleanup_cancels_root(void** state)
{
    (void)state;
    branch_value_cleanup_acts_on_root(ACT_CANCEL, 0);
    assert_int_equal(g_misuse, 0);
}

static void test_branch_value_cleanup_cancels_and_frees_root(void** state)
{
    (void)state;
    branch_value_cleanup_acts_on_root(ACT_FREE_CANCEL, 0);
    assert_int_equal(g_misuse, 0);
}

/* The same root is reused after the cleanup freed it: a new root from the
 * pool runs normally (the pool's free list is intact). */
static void test_branch_value_cleanup_free_then_new_roots(void** state)
{
    (void)state;
    branch_value_cleanup_acts_on_root(ACT_FREE, 0);
    for (int i = 0; i < 3; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
        futoin_add(r, step_tag, NULL, (void*)"ok");
        futoin_execute(r, no_unhandled, NULL);
        run_bounded(100);
        futoin_asyncsteps_free(r);
    }
    assert_trace("ok|ok|ok");
}

/* ---- the root's last results, dropped when it finishes ---- */

static void last_step_returns_actor(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_custom(&actor_type, data));
}

static void test_final_result_cleanup_frees_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Actor a = { root, ACT_FREE, 0 };
    futoin_add(root, last_step_returns_actor, NULL, &a);
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    assert_int_equal(a.cleanups, 1);
    assert_int_equal(g_misuse, 0);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* A step's input value is dropped when its callback returns: the value's
 * cleanup frees the root while the engine still holds the step. */
static FutoInAsyncSteps* g_waiter;

static void wait_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_waiter = as;
    futoin_wait_external(as);
}

static void results_then_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_custom(&actor_type, data));
}

static void test_results_cleanup_in_external_success_frees_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Actor a = { root, ACT_FREE, 0 };
    futoin_add(root, results_then_wait, NULL, &a);
    futoin_add(root, wait_step, NULL, NULL);
    futoin_add(root, must_not_run, NULL, (void*)"after the free");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    /* The waiting step got the value as its input, which was dropped when
     * its callback returned. */
    assert_int_equal(a.cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(a.cleanups, 1);
}

/* ---- state variables ---- */

typedef struct StateBox {
    FutoInAsyncSteps* root;
    int allocs;
    int cleanups;
    int create_in_cleanup; /* the cleanup creates another variable */
    int free_in_alloc;     /* the allocator frees the root */
    int created_in_cleanup;
    void* got_in_cleanup;
} StateBox;

static void* sb_alloc(void* data)
{
    StateBox* b = (StateBox*)data;
    ++b->allocs;
    if (b->free_in_alloc) {
        futoin_asyncsteps_free(b->root);
    }
    return b;
}

static void sb_cleanup2(void* data, void* value)
{
    (void)value;
    ++((StateBox*)data)->cleanups;
}

static void* sb_alloc2(void* data)
{
    ++((StateBox*)data)->allocs;
    return data;
}

static void sb_cleanup(void* data, void* value)
{
    (void)value;
    StateBox* b = (StateBox*)data;
    ++b->cleanups;
    if (b->create_in_cleanup) {
        b->got_in_cleanup = futoin_state(b->root, "late", sb_alloc2, sb_cleanup2, b);
        ++b->created_in_cleanup;
    }
}

/* A state variable's cleanup, run while its root is freed, asks for a new
 * variable on that root: nothing is created (the root is going away),
 * the misuse handler says so, and every variable is cleaned once. */
static void test_state_cleanup_creates_state_while_freeing(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StateBox b = { root, 0, 0, 1, 0, 0, NULL };
    assert_ptr_equal(futoin_state(root, "first", sb_alloc, sb_cleanup, &b), &b);
    assert_ptr_equal(futoin_state(root, "second", sb_alloc2, sb_cleanup2, &b), &b);
    assert_int_equal(b.allocs, 2);
    futoin_asyncsteps_free(root);
    /* "second" is cleaned first (no re-entry), then "first", whose
     * cleanup's request is refused. */
    assert_int_equal(b.created_in_cleanup, 1);
    assert_null(b.got_in_cleanup);
    assert_int_equal(b.allocs, 2);
    assert_int_equal(b.cleanups, 2);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "late"));
    assert_non_null(strstr(g_misuse_msg, "freed"));
}

/* The same while a running root is freed from a step. */
static void free_own_root_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    StateBox* b = (StateBox*)data;
    futoin_state(as, "first", sb_alloc, sb_cleanup, b);
    futoin_asyncsteps_free(b->root);
}

static void test_state_cleanup_creates_state_while_freeing_running(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StateBox b = { root, 0, 0, 1, 0, 0, NULL };
    futoin_add(root, free_own_root_step, NULL, &b);
    futoin_add(root, must_not_run, NULL, (void*)"after free");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    assert_int_equal(b.allocs, 1);
    assert_int_equal(b.cleanups, 1);
    assert_null(b.got_in_cleanup);
}

/* A state variable's allocator frees its (idle) root: the variable is
 * still recorded, and cleaned once when the free takes effect. */
static void test_state_alloc_frees_idle_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StateBox b = { root, 0, 0, 0, 1, 0, NULL };
    assert_ptr_equal(futoin_state(root, "v", sb_alloc, sb_cleanup, &b), &b);
    assert_int_equal(b.allocs, 1);
    assert_int_equal(b.cleanups, 1);
    /* The pool hands the memory out again: a fresh root has no "v". */
    FutoInAsyncSteps* r2 = futoin_asyncsteps_new(g_loop);
    assert_null(futoin_state(r2, "v", NULL, NULL, NULL));
    futoin_asyncsteps_free(r2);
    assert_int_equal(b.cleanups, 1);
}

/* ---- stack() sizes ---- */

static int g_stack_cleanups;
static void* g_stack_got[4];

static void stack_cleanup(void* p)
{
    (void)p;
    ++g_stack_cleanups;
}

static void huge_stack_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_stack_got[0] = futoin_stack(as, SIZE_MAX, stack_cleanup);
    g_stack_got[1] = futoin_stack(as, SIZE_MAX - 16, stack_cleanup);
    g_stack_got[2] = futoin_stack(as, SIZE_MAX / 2 + 1, stack_cleanup);
    g_stack_got[3] = futoin_stack(as, 1000, stack_cleanup);
    if (g_stack_got[3]) {
        memset(g_stack_got[3], 0xA5, 1000);
    }
}

/* A size that cannot be had is NULL (no wrap-around to a small block),
 * registers no cleanup and does not fail the step. */
static void test_stack_size_overflow_is_null(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, huge_stack_step, NULL, NULL);
    futoin_add(root, step_tag, NULL, (void*)"next");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    assert_null(g_stack_got[0]);
    assert_null(g_stack_got[1]);
    assert_null(g_stack_got[2]);
    assert_non_null(g_stack_got[3]);
    assert_int_equal(g_stack_cleanups, 1);
    assert_trace("next");
    futoin_asyncsteps_free(root);
}

/* The same on an idle root (stack() before execute()). */
static void test_stack_size_overflow_idle_root(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_null(futoin_stack(root, SIZE_MAX, stack_cleanup));
    assert_null(futoin_stack(root, SIZE_MAX - 100, stack_cleanup));
    futoin_asyncsteps_free(root);
    assert_int_equal(g_stack_cleanups, 0);
}

/* ---- a stack() cleanup that frees its root ---- */

typedef struct StackActor {
    FutoInAsyncSteps* root;
    int act;
    int cleanups;
} StackActor;

static void stack_actor_cleanup(void* p)
{
    StackActor* sa = *(StackActor**)p;
    ++sa->cleanups;
    Actor a = { sa->root, sa->act, 0 };
    act_on(&a);
}

static void stack_actor_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    StackActor** slot = (StackActor**)futoin_stack(as, sizeof(StackActor*), stack_actor_cleanup);
    *slot = (StackActor*)data;
}

static void test_stack_cleanup_frees_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StackActor sa = { root, ACT_FREE, 0 };
    futoin_add(root, stack_actor_step, NULL, &sa);
    futoin_add(root, must_not_run, NULL, (void*)"after the free");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    assert_int_equal(sa.cleanups, 1);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

static void test_stack_cleanup_cancels_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StackActor sa = { root, ACT_CANCEL, 0 };
    futoin_add(root, stack_actor_step, NULL, &sa);
    futoin_add(root, must_not_run, NULL, (void*)"after the cancel");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(100);
    assert_int_equal(sa.cleanups, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(sa.cleanups, 1);
}

/* free() of an idle root releases its level-0 stack() memory; the cleanup
 * asks promise() to run that very root. The root is being freed: promise()
 * refuses, and neither the queued step nor a second release happens. */
typedef struct PromiseActor {
    FutoInAsyncSteps* root;
    int cleanups;
    int rc;
} PromiseActor;

static void promise_actor_cleanup(void* p)
{
    PromiseActor* pa = *(PromiseActor**)p;
    FutoInOutcome out;
    ++pa->cleanups;
    pa->rc = futoin_promise(pa->root, &out);
    futoin_outcome_reset(&out);
}

static void test_stack_cleanup_promises_root_being_freed(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    PromiseActor pa = { root, 0, -1 };
    futoin_add(root, must_not_run, NULL, (void*)"the freed root's step");
    PromiseActor** slot = (PromiseActor**)futoin_stack(root, sizeof(PromiseActor*),
            promise_actor_cleanup);
    assert_non_null(slot);
    *slot = &pa;
    futoin_asyncsteps_free(root);
    assert_int_equal(pa.cleanups, 1);
    assert_int_equal(pa.rc, FUTOIN_PROMISE_MISUSE);
    run_bounded(100);
    assert_int_equal(pa.cleanups, 1);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    /* The loop and the root pool are still sound: a new root runs. */
    FutoInAsyncSteps* next = futoin_asyncsteps_new(g_loop);
    FutoInOutcome out;
    futoin_add(next, step_tag, NULL, (void*)"next");
    assert_int_equal(futoin_promise(next, &out), FUTOIN_PROMISE_OK);
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(next);
}

/* A stack() cleanup of a parallel branch's step frees the root while the
 * branch is being released. */
static void branch_stack_actor(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    stack_actor_step(as, data, args);
}

static void start_parallel_stack_actor(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_stack_actor, NULL, data);
    futoin_add(p, step_tag, NULL, (void*)"sibling");
    futoin_add(as, must_not_run, NULL, (void*)"after the parallel");
}

static void test_branch_stack_cleanup_frees_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    StackActor sa = { root, ACT_FREE, 0 };
    futoin_add(root, start_parallel_stack_actor, NULL, &sa);
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(1000);
    assert_int_equal(sa.cleanups, 1);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* ---- a loop body's dropped result (found by the fuzzer) ----
 * A loop body's step waits with a cancel handler and is completed with a
 * value from outside (or completes with one itself); a loop iteration's
 * results are dropped, and the value's cleanup cancels or frees the root.
 * Completed from outside, the step has completed by then: its cancel
 * handler must not run. Completed inside its own callback, the callback
 * is still running, so it is aborted like any step whose callback cancels
 * its root after success() (docs/SEMANTICS.md): the handler runs once. */

typedef struct LoopDrop {
    Actor actor;
    FutoInAsyncSteps* waiting;
    int inline_success; /* success() inside the body's callback */
    int cancels;
    int iterations;
} LoopDrop;

static void ld_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((LoopDrop*)data)->cancels;
}

static void ld_complete(void* data)
{
    LoopDrop* ld = data;
    futoin_success1(ld->waiting, futoin_val_custom(&actor_type, &ld->actor));
}

static void ld_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    LoopDrop* ld = data;
    futoin_set_cancel(as, ld_cancel, ld);
    if (ld->inline_success) {
        futoin_success1(as, futoin_val_custom(&actor_type, &ld->actor));
        return;
    }
    ld->waiting = as;
    futoin_loop_immediate(g_loop, ld, ld_complete);
}

static void ld_body(FutoInAsyncSteps* as, void* data)
{
    LoopDrop* ld = data;
    if (++ld->iterations > 1) {
        futoin_break(as, NULL);
        return;
    }
    ld_step(as, data, NULL);
}

static void ld_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, ld_body, data, NULL);
}

static void loop_result_cleanup_acts(int act, int inline_success)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    LoopDrop ld = { { root, act, 0 }, NULL, inline_success, 0, 0 };
    futoin_add(root, ld_start, NULL, &ld);
    futoin_add(root, must_not_run, NULL, (void*)"after the loop");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(1000);
    assert_int_equal(ld.actor.cleanups, 1);
    assert_int_equal(ld.cancels, inline_success);
    assert_int_equal(ld.iterations, 1);
    if (act == ACT_CANCEL) {
        futoin_asyncsteps_free(root);
    }
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(ld.actor.cleanups, 1);
    assert_int_equal(ld.cancels, inline_success);
}

/* Two values: the first one's cleanup frees the root, the second one's
 * asks whether the root is valid. The root is only destroyed after both
 * cleanups (the second must not see freed memory: ASan). */
typedef struct Prober {
    FutoInAsyncSteps* root;
    int cleanups;
    int valid_seen;
    void* var_seen;
} Prober;

static void* prober_var_alloc(void* data)
{
    return data;
}

static void prober_cleanup(FutoInBinaryValue* v)
{
    Prober* p = (Prober*)v->custom_data;
    ++p->cleanups;
    p->valid_seen = futoin_is_valid(p->root);
    /* Still there while the root is only about to be destroyed. */
    p->var_seen = futoin_state(p->root, "probe", NULL, NULL, NULL);
}

static const FutoInType prober_type = { FTN_TYPE_CUSTOM_OBJECT, prober_cleanup };

typedef struct LoopDrop2 {
    Actor actor;
    Prober prober;
    FutoInAsyncSteps* waiting;
    int iterations;
} LoopDrop2;

static void ld2_complete(void* data)
{
    LoopDrop2* ld = data;
    futoin_success2(ld->waiting, futoin_val_custom(&actor_type, &ld->actor),
            futoin_val_custom(&prober_type, &ld->prober));
}

static void ld2_body(FutoInAsyncSteps* as, void* data)
{
    LoopDrop2* ld = data;
    if (++ld->iterations > 1) {
        futoin_break(as, NULL);
        return;
    }
    ld->waiting = as;
    futoin_loop_immediate(g_loop, ld, ld2_complete);
    futoin_wait_external(as);
}

static void ld2_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, ld2_body, data, NULL);
}

static void test_loop_external_results_free_root_held(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    LoopDrop2 ld = { { root, ACT_FREE, 0 }, { root, 0, -1, NULL }, NULL, 0 };
    assert_ptr_equal(futoin_state(root, "probe", prober_var_alloc, NULL, &ld.prober), &ld.prober);
    futoin_add(root, ld2_start, NULL, &ld);
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(1000);
    assert_int_equal(ld.actor.cleanups, 1);
    assert_int_equal(ld.prober.cleanups, 1);
    assert_int_equal(ld.prober.valid_seen, 0); /* free() requested, not yet destroyed */
    assert_ptr_equal(ld.prober.var_seen, &ld.prober);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* A step's input value is dropped after its callback returned; its
 * cleanup cancels the root. A step that completed in its callback (success
 * or error) is not aborted again: its cancel handler does not run. One that
 * added sub-steps is still active: its cancel handler runs, once. */
typedef struct InputDrop {
    Actor actor;
    int mode; /* 0 success, 1 error, 2 add */
    int cancels;
    int handled;
} InputDrop;

static void id_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++((InputDrop*)data)->cancels;
}

static void id_give(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_custom(&actor_type, &((InputDrop*)data)->actor));
}

static void id_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_wait_external(as);
}

static void id_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)code;
    ++((InputDrop*)data)->handled;
}

static void id_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    InputDrop* d = data;
    futoin_set_cancel(as, id_cancel, d);
    if (d->mode == 0) {
        futoin_success(as);
    } else if (d->mode == 1) {
        futoin_error(as, "Fail", NULL);
    } else {
        futoin_add(as, id_sub, NULL, d);
    }
}

static void input_cleanup_cancels(int mode)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    InputDrop d = { { root, ACT_CANCEL, 0 }, mode, 0, 0 };
    futoin_add(root, id_give, NULL, &d);
    futoin_add(root, id_step, id_eh, &d);
    futoin_add(root, must_not_run, NULL, (void*)"after the cancel");
    futoin_execute(root, no_unhandled, NULL);
    run_bounded(1000);
    assert_int_equal(d.actor.cleanups, 1);
    assert_int_equal(d.cancels, mode == 2 ? 1 : 0);
    assert_int_equal(d.handled, 0);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
    assert_int_equal(d.actor.cleanups, 1);
}

static void test_input_cleanup_cancels_after_success(void** state)
{
    (void)state;
    input_cleanup_cancels(0);
}

static void test_input_cleanup_cancels_after_error(void** state)
{
    (void)state;
    input_cleanup_cancels(1);
}

static void test_input_cleanup_cancels_with_substeps(void** state)
{
    (void)state;
    input_cleanup_cancels(2);
}

static void test_loop_external_result_cleanup_frees_root(void** state)
{
    (void)state;
    loop_result_cleanup_acts(ACT_FREE, 0);
}

static void test_loop_external_result_cleanup_cancels_root(void** state)
{
    (void)state;
    loop_result_cleanup_acts(ACT_CANCEL, 0);
}

static void test_loop_inline_result_cleanup_frees_root(void** state)
{
    (void)state;
    loop_result_cleanup_acts(ACT_FREE, 1);
}

static void test_loop_inline_result_cleanup_cancels_root(void** state)
{
    (void)state;
    loop_result_cleanup_acts(ACT_CANCEL, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_branch_value_cleanup_frees_root),
        ENV_TEST(test_branch_value_cleanup_cancels_root),
        ENV_TEST(test_branch_value_cleanup_cancels_and_frees_root),
        ENV_TEST(test_branch_value_cleanup_free_then_new_roots),
        ENV_TEST(test_final_result_cleanup_frees_root),
        ENV_TEST(test_results_cleanup_in_external_success_frees_root),
        ENV_TEST(test_state_cleanup_creates_state_while_freeing),
        ENV_TEST(test_state_cleanup_creates_state_while_freeing_running),
        ENV_TEST(test_state_alloc_frees_idle_root),
        ENV_TEST(test_stack_size_overflow_is_null),
        ENV_TEST(test_stack_size_overflow_idle_root),
        ENV_TEST(test_stack_cleanup_frees_root),
        ENV_TEST(test_stack_cleanup_cancels_root),
        ENV_TEST(test_stack_cleanup_promises_root_being_freed),
        ENV_TEST(test_branch_stack_cleanup_frees_root),
        ENV_TEST(test_loop_external_result_cleanup_frees_root),
        ENV_TEST(test_loop_external_result_cleanup_cancels_root),
        ENV_TEST(test_loop_inline_result_cleanup_frees_root),
        ENV_TEST(test_loop_inline_result_cleanup_cancels_root),
        ENV_TEST(test_loop_external_results_free_root_held),
        ENV_TEST(test_input_cleanup_cancels_after_success),
        ENV_TEST(test_input_cleanup_cancels_after_error),
        ENV_TEST(test_input_cleanup_cancels_with_substeps),
    };
    if (getenv("TEST_FILTER")) {
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
