/* SPDX-License-Identifier: MIT */
/* Throttle (spec 1.11.2, 2.4) on the virtual clock: exact entry times of the
 * fixed-window rule documented in include/futoin/sync.h, queue limits,
 * FIFO, cancel/timeout while queued (and the window timer going away),
 * release on error/timeout/cancel, argument plumbing, re-entrance, parallel
 * branches, free() while busy, node pooling. */
#include "sync_support.h"

static FutoInSync* throttle(uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    FutoInSync* t = futoin_throttle_new(g_loop, max, period_ms, max_queue);
    assert_non_null(t);
    return t;
}

static const char* const NAMES[10] = { "A", "B", "C", "D", "E", "F", "G", "H", "I", "J" };

static void test_ten_at_once(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(3, 100, FUTOIN_SYNC_UNLIMITED);
    Worker w[10];
    for (int i = 0; i < 10; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = t, .hold_ms = 1 };
        worker_run(&w[i]);
    }
    run();
    const uint64_t expect[10] = { 0, 0, 0, 100, 100, 100, 200, 200, 200, 300 };
    for (int i = 0; i < 10; ++i) {
        assert_int_equal(w[i].entered, 1);
        assert_int_equal(w[i].entered_at, expect[i]);
    }
    /* The last one left at 301 and no window timer outlived the queue. */
    assert_int_equal(now_ms(), 301);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    workers_free(w, 10);
    sync_free_ok(t);
}

/* Windows open at the first admission after idle, and a window that ends
 * with flows queued opens the next one at its end time. */
static void test_window_rule(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(2, 100, FUTOIN_SYNC_UNLIMITED);
    const uint32_t start[8] = { 0, 10, 20, 250, 260, 300, 349, 350 };
    /* [0,100): A B, C queued -> [100,200): C; idle -> [250,350): D E, F G
     * queued -> [350,450): F G (H arrives at 350 too, but its arrival
     * timer ran before the window timer, and it finds the new window full
     * after F and G, admitted first from the queue) -> [450,550): H. */
    const uint64_t expect[8] = { 0, 10, 100, 250, 260, 350, 350, 450 };
    Worker w[8];
    for (int i = 0; i < 8; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = t, .hold_ms = 1, .start_ms = start[i] };
        worker_run(&w[i]);
    }
    run();
    for (int i = 0; i < 8; ++i) {
        assert_int_equal(w[i].entered_at, expect[i]);
    }
    workers_free(w, 8);
    sync_free_ok(t);
}

static void test_window_entries_stat(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(5, 100, FUTOIN_SYNC_UNLIMITED);
    Worker w[3];
    for (int i = 0; i < 3; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = t, .hold_ms = 10 };
        worker_run(&w[i]);
    }
    StatsAt at5 = { t, { 0 } }, at150 = { t, { 0 } };
    futoin_loop_deferred(g_loop, 5, &at5, stats_cb);
    futoin_loop_deferred(g_loop, 150, &at150, stats_cb);
    run();
    assert_int_equal(at5.st.window_entries, 3);
    assert_int_equal(at5.st.active, 3); /* a Throttle does not limit concurrency */
    assert_int_equal(at5.st.slots_used, 0);
    assert_int_equal(at150.st.window_entries, 0); /* window over */
    assert_int_equal(at150.st.active, 0);
    workers_free(w, 3);
    sync_free_ok(t);
}

static void test_queue_full_rejects_at_once(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, 1);
    Worker w[3] = { { .name = "A", .sync = t, .hold_ms = 1 },
        { .name = "B", .sync = t, .hold_ms = 1 },
        { .name = "C", .sync = t, .hold_ms = 1, .cs_eh = 1 } };
    for (int i = 0; i < 3; ++i) {
        worker_run(&w[i]);
    }
    run();
    /* Rejected on its admission turn (before A's entry turn), outside the
     * critical section (no "C?"). */
    assert_trace("C!DefenseRejected@0|A>0|A<1|B>100|B<101");
    assert_string_equal(w[2].last_info, "Throttle: queue is full");
    workers_free(w, 3);
    sync_free_ok(t);
}

static void test_queue_zero(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, 0);
    Worker w[3] = { { .name = "A", .sync = t, .hold_ms = 1 },
        { .name = "B", .sync = t, .hold_ms = 1, .start_ms = 99 },
        { .name = "C", .sync = t, .hold_ms = 1, .start_ms = 100 } };
    for (int i = 0; i < 3; ++i) {
        worker_run(&w[i]);
    }
    run();
    assert_trace("A>0|A<1|B!DefenseRejected@99|C>100|C<101");
    workers_free(w, 3);
    sync_free_ok(t);
}

static void test_cancel_while_queued_drops_timer(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = 1 };
    Worker b = { .name = "B", .sync = t, .hold_ms = 1 };
    worker_run(&a);
    worker_run(&b);
    cancel_at(b.root, 50);
    run();
    assert_trace("A>0|A<1");
    assert_int_equal(b.entered, 0);
    /* Nothing waited any more, so no timer kept the loop going to 100. */
    assert_int_equal(now_ms(), 50);
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(t);
}

static void test_fifo_with_cancelled_waiter(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker w[5];
    for (int i = 0; i < 5; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = t, .hold_ms = 1 };
        worker_run(&w[i]);
    }
    cancel_at(w[2].root, 50);
    run();
    assert_trace("A>0|A<1|B>100|B<101|D>200|D<201|E>300|E<301");
    workers_free(w, 5);
    sync_free_ok(t);
}

static void test_timeout_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = 1 };
    Worker b = { .name = "B", .sync = t, .hold_ms = 1, .timeout_ms = 30, .cs_eh = 1 };
    worker_run(&a);
    worker_run(&b);
    run();
    assert_trace("A>0|A<1|B!Timeout@30");
    assert_int_equal(now_ms(), 30);
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(t);
}

/* A Throttle tracks the flows inside so that unlock() and re-entrance work:
 * every way out must clear them. */
static void test_release_on_error_timeout_cancel(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(5, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = 10, .fail_inside = 1, .cs_eh = 1 };
    Worker b = { .name = "B", .sync = t, .hold_ms = HOLD_FOREVER, .timeout_ms = 20 };
    Worker c = { .name = "C", .sync = t, .hold_ms = HOLD_FOREVER };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    cancel_at(c.root, 30);
    run();
    assert_trace("A>0|B>0|C>0|A<10|A?Fail|A!Fail@10|B~20|B!Timeout@20|C~30");
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(t);
}

/* ---- argument plumbing through a queued flow ---- */

typedef struct ArgsCase {
    Counted in;
    Counted out;
} ArgsCase;

static void args_produce(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success2(as, futoin_val_i32(42), counted_val(&((ArgsCase*)data)->out));
}

static void args_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ArgsCase* ac = data;
    assert_int_equal(futoin_args_count(args), 2);
    assert_int_equal(futoin_arg_i32(args, 0, -1), 7);
    assert_ptr_equal(futoin_arg_custom(args, 1), &ac->in);
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
    tr("after@%llu", vt());
}

static void test_args_through_queue(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = 1 };
    worker_run(&a);
    while (!a.entered) {
        assert_true(run_next());
    }
    ArgsCase ac = { { 1, 0 }, { 2, 0 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_args_in, NULL, &ac.in);
    futoin_add_sync(root, t, args_cs, NULL, &ac);
    futoin_add(root, args_after, NULL, &ac);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<1|cs@100|after@100");
    assert_int_equal(ac.in.cleanups, 1);
    assert_int_equal(ac.out.cleanups, 1);
    futoin_asyncsteps_free(root);
    workers_free(&a, 1);
    sync_free_ok(t);
}

/* ---- re-entrance: in at once, not counted again ---- */

static void reent_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    FutoInSyncStats st = sync_stats((FutoInSync*)data);
    assert_int_equal(st.window_entries, 1);
    assert_int_equal(st.active, 1);
    tr("in2@%llu", vt());
}

static void reent_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("in1@%llu", vt());
    futoin_add_sync(as, (FutoInSync*)data, reent_inner, NULL, data);
}

static void test_reentrance(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, 0);
    Worker b = { .name = "B", .sync = t, .hold_ms = 1, .start_ms = 100 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(root, t, reent_outer, NULL, t);
    futoin_execute(root, no_unhandled, NULL);
    worker_run(&b);
    run();
    /* Even with no queue allowed and the window full, the holder re-enters;
     * the window still has room for B in the next period. */
    assert_trace("in1@0|in2@0|B>100|B<101");
    futoin_asyncsteps_free(root);
    workers_free(&b, 1);
    sync_free_ok(t);
}

/* ---- parallel branches are separate flows ---- */

static void test_branches_contend(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = 1 };
    Worker b = { .name = "B", .sync = t, .hold_ms = 1 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    worker_branch(p, &a);
    worker_branch(p, &b);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<1|B>100|B<101");
    futoin_asyncsteps_free(root);
    sync_free_ok(t);
}

static void ni_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("P>%llu", vt());
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    worker_branch(p, (Worker*)data);
}

static void ni_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    tr("P<%llu", vt());
}

static void test_branch_does_not_inherit(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker b = { .name = "B", .sync = t, .hold_ms = 1 };
    b.sync = t;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(root, t, ni_cs, NULL, &b);
    futoin_add(root, ni_after, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* The branch is a new entry, not a re-entry of its parent: it waits for
     * the next window (no deadlock, a Throttle frees by time). */
    assert_trace("P>0|B>100|B<101|P<101");
    futoin_asyncsteps_free(root);
    sync_free_ok(t);
}

/* ---- free() while busy ---- */

typedef struct FreeBusy {
    FutoInSync* t;
    Worker* a;
    Worker* b;
    int checks;
} FreeBusy;

static void fb_check(void* data)
{
    FreeBusy* fb = data;
    assert_int_equal(futoin_sync_free(fb->t), FUTOIN_SYNC_BUSY); /* A inside, B queued */
    futoin_cancel(fb->b->root);
    assert_int_equal(futoin_sync_free(fb->t), FUTOIN_SYNC_BUSY); /* A inside */
    futoin_cancel(fb->a->root);
    ++fb->checks;
}

static void test_free_busy(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = t, .hold_ms = HOLD_FOREVER };
    Worker b = { .name = "B", .sync = t, .hold_ms = 1 };
    FreeBusy fb = { t, &a, &b, 0 };
    worker_run(&a);
    worker_run(&b);
    futoin_loop_deferred(g_loop, 10, &fb, fb_check);
    run();
    assert_int_equal(fb.checks, 1);
    assert_trace("A>0|A~10");
    assert_int_equal(now_ms(), 10); /* the window timer went with B */
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(t);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

static void test_invalid_args(void** state)
{
    (void)state;
    assert_null(futoin_throttle_new(NULL, 1, 100, 0));
    assert_null(futoin_throttle_new(g_loop, 0, 100, 0));
    assert_null(futoin_throttle_new(g_loop, 1, 0, 0));
}

static void test_nodes_pooled(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = throttle(4, 10, FUTOIN_SYNC_UNLIMITED);
    Worker w[10];
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 10; ++i) {
            w[i] = (Worker){ .name = "w", .sync = t, .hold_ms = 1 };
            worker_run(&w[i]);
        }
        run();
        for (int i = 0; i < 10; ++i) {
            assert_int_equal(w[i].entered, 1);
        }
        workers_free(w, 10);
        assert_int_equal(sync_stats(t).nodes_allocated, 10);
    }
    sync_free_ok(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_ten_at_once),
        ENV_TEST(test_window_rule),
        ENV_TEST(test_window_entries_stat),
        ENV_TEST(test_queue_full_rejects_at_once),
        ENV_TEST(test_queue_zero),
        ENV_TEST(test_cancel_while_queued_drops_timer),
        ENV_TEST(test_fifo_with_cancelled_waiter),
        ENV_TEST(test_timeout_while_queued),
        ENV_TEST(test_release_on_error_timeout_cancel),
        ENV_TEST(test_args_through_queue),
        ENV_TEST(test_reentrance),
        ENV_TEST(test_branches_contend),
        ENV_TEST(test_branch_does_not_inherit),
        ENV_TEST(test_free_busy),
        ENV_TEST(test_invalid_args),
        ENV_TEST(test_nodes_pooled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
