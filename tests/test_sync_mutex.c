/* SPDX-License-Identifier: MIT */
/* Mutex (spec 1.11, 2.3): mutual exclusion, argument plumbing, release on
 * success/error/timeout/cancel, queue limits, FIFO order, re-entrance,
 * parallel branches, free() while busy, node pooling, and flows aborted
 * between admission and entry. All on the virtual clock. */
#include "sync_support.h"

static FutoInSync* mutex(uint32_t max, uint32_t max_queue)
{
    FutoInSync* m = futoin_mutex_new(g_loop, max, max_queue);
    assert_non_null(m);
    return m;
}

/* ---- exclusion ---- */

static void test_serializes(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker w[3] = { { .name = "A", .sync = m, .hold_ms = 10 },
        { .name = "B", .sync = m, .hold_ms = 10 }, { .name = "C", .sync = m, .hold_ms = 10 } };
    for (int i = 0; i < 3; ++i) {
        worker_run(&w[i]);
    }
    run();
    assert_trace("A>0|A<10|B>10|B<20|C>20|C<30");
    assert_int_equal(g_max_inside, 1);
    assert_int_equal(g_misuse, 0);
    workers_free(w, 3);
    sync_free_ok(m);
}

static void test_max_two(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(2, FUTOIN_SYNC_UNLIMITED);
    Worker w[5];
    const char* names[5] = { "A", "B", "C", "D", "E" };
    for (int i = 0; i < 5; ++i) {
        w[i] = (Worker){ .name = names[i], .sync = m, .hold_ms = 10 };
        worker_run(&w[i]);
    }
    run();
    assert_trace("A>0|B>0|A<10|B<10|C>10|D>10|C<20|D<20|E>20|E<30");
    assert_int_equal(g_max_inside, 2);
    workers_free(w, 5);
    sync_free_ok(m);
}

/* ---- argument plumbing (spec 1.11.3) ---- */

typedef struct ArgsCase {
    Counted in;
    Counted out;
    int cs_ok;
    int after_ok;
} ArgsCase;

static void args_produce(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ArgsCase* ac = data;
    futoin_success2(as, futoin_val_i32(42), counted_val(&ac->out));
}

static void args_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ArgsCase* ac = data;
    assert_int_equal(futoin_args_count(args), 2);
    assert_int_equal(futoin_arg_i32(args, 0, -1), 7);
    assert_ptr_equal(futoin_arg_custom(args, 1), &ac->in);
    ac->cs_ok = 1;
    tr("cs@%llu", vt());
    futoin_add(as, args_produce, NULL, ac);
}

static void args_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    ArgsCase* ac = data;
    assert_int_equal(futoin_args_count(args), 2);
    assert_int_equal(futoin_arg_i32(args, 0, -1), 42);
    assert_ptr_equal(futoin_arg_custom(args, 1), &ac->out);
    ac->after_ok = 1;
    tr("after@%llu", vt());
}

/* Runs loop callbacks one by one until w is inside. */
static void run_until_entered(Worker* w)
{
    while (!w->entered) {
        assert_true(run_next());
    }
}

/* Worker A takes m and is inside when this returns (A leaves after
 * hold_ms): the args cases below queue behind it. */
static void hold_by_a(Worker* a, FutoInSync* m, uint32_t hold_ms)
{
    *a = (Worker){ .name = "A", .sync = m, .hold_ms = hold_ms };
    worker_run(a);
    run_until_entered(a);
}

static void run_args_case(FutoInSync* m, ArgsCase* ac)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_args_in, NULL, &ac->in);
    futoin_add_sync(root, m, args_cs, NULL, ac);
    futoin_add(root, args_after, NULL, ac);
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(root);
}

static void test_args_enter_at_once(void** state)
{
    (void)state;
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    ArgsCase ac = { { 1, 0 }, { 2, 0 }, 0, 0 };
    run_args_case(m, &ac);
    assert_trace("cs@0|after@0");
    assert_true(ac.cs_ok && ac.after_ok);
    /* Each value cleaned up exactly once, after the step that received it. */
    assert_int_equal(ac.in.cleanups, 1);
    assert_int_equal(ac.out.cleanups, 1);
    sync_free_ok(m);
}

static void test_args_after_waiting(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a;
    hold_by_a(&a, m, 25);
    ArgsCase ac = { { 1, 0 }, { 2, 0 }, 0, 0 };
    run_args_case(m, &ac); /* queued behind A: the inputs wait with it */
    assert_trace("A>0|A<25|cs@25|after@25");
    assert_true(ac.cs_ok && ac.after_ok);
    assert_int_equal(ac.in.cleanups, 1);
    assert_int_equal(ac.out.cleanups, 1);
    workers_free(&a, 1);
    sync_free_ok(m);
}

/* Inputs of a flow that never gets in are still cleaned up once. */
static void test_args_dropped_on_reject(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, 0);
    Worker a;
    hold_by_a(&a, m, 5);
    Counted in = { 1, 0 };
    Unhandled u;
    memset(&u, 0, sizeof(u));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_args_in, NULL, &in);
    futoin_add_sync(root, m, must_not_run, NULL, "cs");
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, FUTOIN_DEFENSE_REJECTED);
    assert_string_equal(u.info, "Mutex: queue is full");
    assert_int_equal(in.cleanups, 1);
    futoin_asyncsteps_free(root);
    workers_free(&a, 1);
    sync_free_ok(m);
}

/* Inputs held for the critical section of a flow cancelled while it
 * waits in the queue are cleaned up once, at the cancel, and the flow
 * leaves the queue: the holder's unlock admits nobody. */
static void test_args_dropped_on_cancel_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a;
    hold_by_a(&a, m, 10);
    Counted in = { 1, 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_args_in, NULL, &in);
    futoin_add_sync(root, m, must_not_run, NULL, "cs");
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    FutoInSyncStats st;
    do {
        assert_true(run_next());
        assert_int_equal(futoin_sync_stats(m, &st), FUTOIN_SYNC_OK);
    } while (st.queued == 0);
    assert_int_equal(in.cleanups, 0); /* held for the section */
    futoin_cancel(root);
    assert_int_equal(in.cleanups, 1);
    assert_int_equal(futoin_sync_stats(m, &st), FUTOIN_SYNC_OK);
    assert_int_equal(st.queued, 0);
    run();
    assert_trace("A>0|A<10");
    assert_int_equal(in.cleanups, 1);
    futoin_asyncsteps_free(root);
    workers_free(&a, 1);
    sync_free_ok(m);
}

/* ---- release on error, timeout, cancel ---- */

static void test_release_on_error(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10, .fail_inside = 1, .cs_eh = 1 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    run();
    /* The critical section's own eh sees the error first, then the handler
     * outside the sync step; the lock is already free for B by then. */
    assert_trace("A>0|A<10|A?Fail|A!Fail@10|B>10|B<20");
    assert_string_equal(a.last_info, "A");
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(m);
}

/* An error that escapes the root still releases the lock. */
static void test_release_on_unhandled_error(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10, .fail_inside = 1, .no_recover = 1 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    Unhandled u;
    memset(&u, 0, sizeof(u));
    a.root = futoin_asyncsteps_new(g_loop);
    worker_add(a.root, &a);
    futoin_execute(a.root, on_unhandled, &u);
    worker_run(&b);
    run();
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, "Fail");
    assert_trace("A>0|A<10|A!Fail@10|unhandled:Fail|B>10|B<20");
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(m);
}

static void test_release_on_timeout(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = HOLD_FOREVER, .timeout_ms = 50 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    run();
    /* The timeout aborts A's critical section (its cancel handler runs) and
     * unlocks; B is woken during that unwinding, so it is ahead of A's
     * error handler in the ready queue. */
    assert_trace("A>0|A~50|B>50|A!Timeout@50|B<60");
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(m);
}

static void test_release_on_cancel(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = HOLD_FOREVER };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    cancel_at(a.root, 20);
    run();
    assert_trace("A>0|A~20|B>20|B<30");
    assert_int_equal(a.errors, 0);
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(m);
}

/* Freeing a running root cancels it, which must release the lock too. */
static void free_root_cb(void* data)
{
    Worker* w = data;
    futoin_asyncsteps_free(w->root);
    w->root = NULL;
}

static void test_release_on_root_free(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = HOLD_FOREVER };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    futoin_loop_deferred(g_loop, 5, &a, free_root_cb);
    run();
    assert_trace("A>0|A~5|B>5|B<15");
    workers_free(&b, 1);
    sync_free_ok(m);
}

static void test_cancel_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 30 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    StatsAt before = { m, { 0 } }, after = { m, { 0 } };
    futoin_loop_deferred(g_loop, 9, &before, stats_cb);
    cancel_at(b.root, 10);
    futoin_loop_deferred(g_loop, 11, &after, stats_cb);
    run();
    assert_int_equal(before.st.queued, 2);
    assert_int_equal(after.st.queued, 1); /* B left the queue */
    assert_int_equal(after.st.active, 1);
    assert_trace("A>0|A<30|C>30|C<40");
    assert_int_equal(b.entered, 0);
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

static void test_timeout_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 30 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10, .timeout_ms = 10, .cs_eh = 1 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    run();
    /* B's timeout is not an error of its critical section: no "B?". */
    assert_trace("A>0|B!Timeout@10|A<30|C>30|C<40");
    assert_int_equal(b.entered, 0);
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

/* ---- queue limits (spec 1.11.6) ---- */

static void test_queue_full_rejects_at_once(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, 1);
    Worker w[3] = { { .name = "A", .sync = m, .hold_ms = 10 },
        { .name = "B", .sync = m, .hold_ms = 10 },
        { .name = "C", .sync = m, .hold_ms = 10, .cs_eh = 1 } };
    for (int i = 0; i < 3; ++i) {
        worker_run(&w[i]);
    }
    run();
    /* C gets DefenseRejected at 0, from outside its critical section. All
     * three are admitted/queued/rejected on their admission turns, which
     * come before A's turn that enters, hence C's error is traced first. */
    assert_trace("C!DefenseRejected@0|A>0|A<10|B>10|B<20");
    assert_string_equal(w[2].last_info, "Mutex: queue is full");
    assert_int_equal(w[2].entered, 0);
    workers_free(w, 3);
    sync_free_ok(m);
}

static void test_queue_zero(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, 0);
    Worker w[3] = { { .name = "A", .sync = m, .hold_ms = 10 },
        { .name = "B", .sync = m, .hold_ms = 10 },
        { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 11 } };
    for (int i = 0; i < 3; ++i) {
        worker_run(&w[i]);
    }
    run();
    /* B finds A's slot taken and may not wait (rejected on its admission
     * turn, before A's entry turn); C comes after A has left. */
    assert_trace("B!DefenseRejected@0|A>0|A<10|C>11|C<21");
    workers_free(w, 3);
    sync_free_ok(m);
}

/* ---- FIFO ---- */

static void test_fifo_with_cancelled_waiter(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    const char* names[6] = { "A", "B", "C", "D", "E", "F" };
    Worker w[6];
    for (int i = 0; i < 6; ++i) {
        w[i] = (Worker){ .name = names[i], .sync = m, .hold_ms = 5 };
        worker_run(&w[i]);
    }
    cancel_at(w[2].root, 2);
    run();
    assert_trace("A>0|A<5|B>5|B<10|D>10|D<15|E>15|E<20|F>20|F<25");
    workers_free(w, 6);
    sync_free_ok(m);
}

/* ---- re-entrance (spec 1.11.4): counted ---- */

typedef struct Reent {
    FutoInSync* m;
    Worker* waiter;
    int depth_seen;
} Reent;

static void reent_check_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Reent* r = data;
    FutoInSyncStats st = sync_stats(r->m);
    /* Still one flow holding one slot; the other root still waits. */
    assert_int_equal(st.active, 1);
    assert_int_equal(st.slots_used, 1);
    assert_int_equal(st.queued, 1);
    ++r->depth_seen;
    tr("in3@%llu", vt());
}

static void reent_level2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("in2@%llu", vt());
    futoin_add_sync(as, ((Reent*)data)->m, reent_check_inner, NULL, data);
}

static void reent_inner_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "Inner", "inner failed");
}

static void reent_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("recovered:%s", code);
    futoin_success(as);
}

static void reent_failing_nested(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_sync(as, ((Reent*)data)->m, reent_inner_fail, NULL, data);
}

static void reent_still_held(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Reent* r = data;
    FutoInSyncStats st = sync_stats(r->m);
    assert_int_equal(st.active, 1);
    assert_int_equal(st.slots_used, 1);
    assert_int_equal(r->waiter->entered, 0);
    tr("held@%llu", vt());
}

static void reent_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 10);
    futoin_set_cancel(as, cancel_tag, "sleep");
    (void)data;
}

static void reent_sleep_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    futoin_success(as);
}

static void reent_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Reent* r = data;
    tr("in1@%llu", vt());
    /* First let the other root arrive and queue. */
    futoin_add(as, reent_sleep, reent_sleep_eh, r);
    futoin_add_sync(as, r->m, reent_level2, NULL, r);
    /* A nested section that fails: the failure is recovered outside it and
     * the outer hold is untouched. */
    futoin_add(as, reent_failing_nested, reent_recover, r);
    futoin_add(as, reent_still_held, NULL, r);
}

static void reent_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("out@%llu", vt());
}

static void test_reentrance_counted(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker b = { .name = "B", .sync = m, .hold_ms = 5, .start_ms = 1 };
    Reent r = { m, &b, 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(root, m, reent_outer, NULL, &r);
    futoin_add(root, reent_done, NULL, &r);
    futoin_execute(root, no_unhandled, NULL);
    worker_run(&b);
    run();
    assert_int_equal(r.depth_seen, 1);
    assert_trace("in1@0|cancel:sleep|in2@10|in3@10|recovered:Inner|held@10|out@10|B>10|B<15");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
    workers_free(&b, 1);
    sync_free_ok(m);
}

/* ---- parallel branches are separate flows (spec 1.11.4) ---- */

static void test_branches_contend(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    worker_branch(p, &a);
    worker_branch(p, &b);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<10|B>10|B<20");
    assert_int_equal(g_max_inside, 1);
    futoin_asyncsteps_free(root);
    sync_free_ok(m);
}

typedef struct NoInherit {
    FutoInSync* m;
    Worker* branch;
    Worker* other;
} NoInherit;

static void ni_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    NoInherit* ni = data;
    tr("P>%llu", vt());
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    worker_branch(p, ni->branch);
}

static void ni_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 30);
    futoin_add_sync(as, ((NoInherit*)data)->m, ni_cs, NULL, data);
}

static void ni_outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("P!%s@%llu", code, vt());
    futoin_success(as);
}

static void test_branch_does_not_inherit_lock(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 1 };
    NoInherit ni = { m, &b, &c };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, ni_outer, ni_outer_eh, &ni);
    futoin_execute(root, no_unhandled, NULL);
    worker_run(&c);
    run();
    /* The branch waits for its own parent's lock (a deadlock broken only by
     * the timeout): it never enters, and it leaves the queue when aborted.
     * C, queued behind the branch, gets the mutex when the parent leaves
     * (woken during the parent's unwinding, so before its error handler). */
    assert_trace("P>0|C>30|P!Timeout@30|C<40");
    assert_int_equal(b.entered, 0);
    futoin_asyncsteps_free(root);
    workers_free(&c, 1);
    sync_free_ok(m);
}

/* ---- free() with holders or waiters ---- */

typedef struct FreeBusy {
    FutoInSync* m;
    Worker* a;
    Worker* b;
    int checks;
} FreeBusy;

static void fb_both(void* data)
{
    FreeBusy* fb = data;
    assert_int_equal(futoin_sync_free(fb->m), FUTOIN_SYNC_BUSY); /* holder + waiter */
    futoin_cancel(fb->b->root);
    assert_int_equal(futoin_sync_free(fb->m), FUTOIN_SYNC_BUSY); /* holder */
    ++fb->checks;
}

static void fb_waiter_only(void* data)
{
    FreeBusy* fb = data;
    /* A still holds; the object has survived the refused frees. */
    FutoInSyncStats st = sync_stats(fb->m);
    assert_int_equal(st.active, 1);
    futoin_cancel(fb->a->root);
    ++fb->checks;
}

static void test_free_busy(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = HOLD_FOREVER };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 30 };
    FreeBusy fb = { m, &a, &b, 0 };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    futoin_loop_deferred(g_loop, 10, &fb, fb_both);
    futoin_loop_deferred(g_loop, 20, &fb, fb_waiter_only);
    run();
    assert_int_equal(fb.checks, 2);
    /* It still works after the refused frees. */
    assert_trace("A>0|A~20|C>30|C<40");
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

static void test_free_other_objects(void** state)
{
    (void)state;
    assert_int_equal(futoin_sync_free(NULL), FUTOIN_SYNC_OK);
    /* A FutoInSync of another implementation is left alone. */
    static const FutoInSyncAPI foreign_api = { .lock = NULL, .unlock = NULL };
    FutoInSync foreign = { &foreign_api };
    assert_int_equal(futoin_sync_free(&foreign), FUTOIN_SYNC_INVALID);
    FutoInSyncStats st;
    assert_int_equal(futoin_sync_stats(&foreign, &st), FUTOIN_SYNC_INVALID);
    assert_int_equal(st.active, 0);
    assert_int_equal(futoin_sync_stats(NULL, &st), FUTOIN_SYNC_INVALID);
    assert_null(futoin_mutex_new(g_loop, 0, 1));
    /* A Mutex needs no loop. */
    FutoInSync* m = futoin_mutex_new(NULL, 1, FUTOIN_SYNC_UNLIMITED);
    assert_non_null(m);
    assert_int_equal(futoin_sync_free(m), FUTOIN_SYNC_OK);
}

/* ---- memory: nodes come from a free list ---- */

static void test_nodes_pooled(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = mutex(2, FUTOIN_SYNC_UNLIMITED);
    Worker w[10];
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 10; ++i) {
            w[i] = (Worker){ .name = "w", .sync = m, .hold_ms = 1 };
            worker_run(&w[i]);
        }
        run();
        for (int i = 0; i < 10; ++i) {
            assert_int_equal(w[i].entered, 1);
        }
        workers_free(w, 10);
        FutoInSyncStats st = sync_stats(m);
        /* One node per flow (all ten wait at once in the first round),
         * and none more in later rounds. */
        assert_int_equal(st.nodes_allocated, 10);
    }
    sync_free_ok(m);
}

/* ---- flows aborted between admission and entry ----
 * lock() admits at once and the engine owes unlock() from then on, but the
 * critical section runs only on the flow's next turn: a flow aborted in
 * between must still give its place back. (lock() has no intermediate
 * "node exists, not yet admitted" state any more.) */

typedef struct Window {
    FutoInSync* m;
    Worker* holder;
    int mode;
    int polls;
} Window;

/* Fails the sibling branch at the exact moment. mode 1: admitted, not yet
 * entered; mode 2: the waiter was handed the slot by the leaving holder. */
static void window_probe(FutoInAsyncSteps* as, void* data)
{
    Window* wd = data;
    FutoInSyncStats st = sync_stats(wd->m);
    int hit = 0;
    if (++wd->polls > 1000) {
        fail_msg("window %d never seen", wd->mode); /* would spin forever */
    }
    switch (wd->mode) {
    case 1:
        hit = st.slots_used == 1;
        break;
    default:
        hit = wd->holder->left == 1 && st.queued == 0 && st.slots_used == 1;
        break;
    }
    if (hit) {
        tr("probe:%d", wd->mode);
        futoin_error(as, "Sibling", NULL);
    }
}

static void window_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Window* wd = data;
    if (wd->mode == 2) {
        /* Sleep until the holder's timer (armed earlier, same due time). */
        futoin_set_timeout(as, 10);
    }
}

static void window_wait_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    futoin_success(as);
}

static void window_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, window_wait, window_wait_eh, data);
    futoin_add_loop(as, window_probe, data, NULL);
}

static void window_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("par!%s", code);
    futoin_success(as);
}

static void run_window_case(int mode)
{
    sync_counters_reset();
    tr_reset();
    FutoInSync* m = mutex(1, FUTOIN_SYNC_UNLIMITED);
    Worker h = { .name = "H", .sync = m, .hold_ms = 10 };
    Worker w = { .name = "W", .sync = m, .hold_ms = 10 };
    Worker late = { .name = "L", .sync = m, .hold_ms = 10, .start_ms = 50 };
    Window wd = { m, &h, mode, 0 };
    if (mode == 2) {
        worker_run(&h);
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, window_eh, NULL);
    worker_branch(p, &w);
    futoin_add(p, window_branch, NULL, &wd);
    futoin_execute(root, no_unhandled, NULL);
    worker_run(&late);
    run();
    assert_int_equal(w.entered, 0);
    if (mode == 2) {
        assert_trace("H>0|H<10|probe:2|par!Sibling|L>50|L<60");
    } else {
        char expect[64];
        snprintf(expect, sizeof(expect), "probe:%d|par!Sibling|L>50|L<60", mode);
        assert_trace(expect);
    }
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
    workers_free(&h, 1);
    workers_free(&late, 1);
    sync_free_ok(m);
}

static void test_abort_after_admission_before_entry(void** state)
{
    (void)state;
    OWN_ONLY("probes our engine's steps between admission and entry");
    run_window_case(1);
}

static void test_abort_after_handoff_before_entry(void** state)
{
    (void)state;
    OWN_ONLY("probes our engine's steps between admission and entry");
    run_window_case(2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_serializes),
        ENV_TEST(test_max_two),
        ENV_TEST(test_args_enter_at_once),
        ENV_TEST(test_args_after_waiting),
        ENV_TEST(test_args_dropped_on_reject),
        ENV_TEST(test_args_dropped_on_cancel_while_queued),
        ENV_TEST(test_release_on_error),
        ENV_TEST(test_release_on_unhandled_error),
        ENV_TEST(test_release_on_timeout),
        ENV_TEST(test_release_on_cancel),
        ENV_TEST(test_release_on_root_free),
        ENV_TEST(test_cancel_while_queued),
        ENV_TEST(test_timeout_while_queued),
        ENV_TEST(test_queue_full_rejects_at_once),
        ENV_TEST(test_queue_zero),
        ENV_TEST(test_fifo_with_cancelled_waiter),
        ENV_TEST(test_reentrance_counted),
        ENV_TEST(test_branches_contend),
        ENV_TEST(test_branch_does_not_inherit_lock),
        ENV_TEST(test_free_busy),
        ENV_TEST(test_free_other_objects),
        ENV_TEST(test_nodes_pooled),
        ENV_TEST(test_abort_after_admission_before_entry),
        ENV_TEST(test_abort_after_handoff_before_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
