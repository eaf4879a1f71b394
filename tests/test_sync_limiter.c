/* SPDX-License-Identifier: MIT */
/* Limiter (spec 1.11.7, 2.5) on the virtual clock: defaults, the two
 * rejection sources (concurrency queue, burst queue), a slot held while
 * waiting for the rate, release on error/timeout/cancel, FIFO, argument
 * plumbing, re-entrance, parallel branches, free() while busy, pooling, and
 * a flow aborted between its rate admission and its entry. */
#include "sync_support.h"

static FutoInSync* limiter(uint32_t concurrent, uint32_t max_queue, uint32_t rate,
        uint32_t period_ms, uint32_t burst)
{
    FutoInLimiterOptions o = { concurrent, max_queue, rate, period_ms, burst };
    FutoInSync* l = futoin_limiter_new(g_loop, &o);
    assert_non_null(l);
    return l;
}

static const char* const NAMES[10] = { "A", "B", "C", "D", "E", "F", "G", "H", "I", "J" };

static void test_options_defaults(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    memset(&o, 0xff, sizeof(o));
    futoin_limiter_options_init(&o);
    assert_int_equal(o.concurrent, 1);
    assert_int_equal(o.max_queue, 0);
    assert_int_equal(o.rate, 1);
    assert_int_equal(o.period_ms, 1000);
    assert_int_equal(o.burst, 0);
    FutoInLimiterOptions m = FUTOIN_LIMITER_OPTIONS_INIT;
    assert_memory_equal(&m, &o, sizeof(o));
}

/* Limiter(defaults): one flow inside, nobody waits, one entry per second. */
static void test_defaults_behaviour(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = futoin_limiter_new(g_loop, NULL);
    assert_non_null(l);
    Worker w[4] = { { .name = "A", .sync = l, .hold_ms = 10 },
        { .name = "B", .sync = l, .hold_ms = 10, .cs_eh = 1 },
        { .name = "C", .sync = l, .hold_ms = 10, .start_ms = 20 },
        { .name = "D", .sync = l, .hold_ms = 10, .start_ms = 1000 } };
    for (int i = 0; i < 4; ++i) {
        worker_run(&w[i]);
    }
    run();
    assert_trace("B!DefenseRejected@0|A>0|A<10|C!DefenseRejected@20|D>1000|D<1010");
    assert_string_equal(w[1].last_info, "Limiter: queue is full (concurrency)");
    assert_string_equal(w[2].last_info, "Limiter: burst queue is full (rate)");
    workers_free(w, 4);
    sync_free_ok(l);
}

/* Both stages at once (the scenario of examples/limiter_rejects.c):
 * concurrent 3, max_queue 1, rate 2 per 100 ms, burst 1; six flows at 0,
 * each inside for 10 ms.
 *   A, B: slot + rate -> in at 0.
 *   C: slot, rate used up -> waits in the burst queue holding its slot.
 *   D: no slot -> waits in the concurrency queue.
 *   E, F: concurrency queue full -> DefenseRejected at 0.
 *   10: A leaves, its slot goes to D, whose rate stage finds the burst
 *       queue full (C) -> DefenseRejected, slot freed. B leaves.
 *   100: next window: C enters. */
static void test_both_stages(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(3, 1, 2, 100, 1);
    Worker w[6];
    for (int i = 0; i < 6; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = l, .hold_ms = 10 };
        worker_run(&w[i]);
    }
    StatsAt at5 = { l, { 0 } }, at50 = { l, { 0 } };
    futoin_loop_deferred(g_loop, 5, &at5, stats_cb);
    futoin_loop_deferred(g_loop, 50, &at50, stats_cb);
    run();
    assert_trace("E!DefenseRejected@0|F!DefenseRejected@0|A>0|B>0|A<10|B<10|"
                 "D!DefenseRejected@10|C>100|C<110");
    assert_string_equal(w[3].last_info, "Limiter: burst queue is full (rate)");
    assert_string_equal(w[4].last_info, "Limiter: queue is full (concurrency)");
    assert_int_equal(at5.st.active, 2);
    assert_int_equal(at5.st.slots_used, 3);
    assert_int_equal(at5.st.queued, 2);
    assert_int_equal(at5.st.window_entries, 2);
    /* C holds a slot while it waits for the rate. */
    assert_int_equal(at50.st.active, 0);
    assert_int_equal(at50.st.slots_used, 1);
    assert_int_equal(at50.st.queued, 1);
    workers_free(w, 6);
    sync_free_ok(l);
}

/* A flow cancelled while waiting for the rate gives its slot to the next
 * waiter for concurrency, and the window timer stays only as long as
 * someone waits for it. */
static void test_cancel_rate_waiter_passes_slot(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, FUTOIN_SYNC_UNLIMITED, 1, 100, 5);
    Worker a = { .name = "A", .sync = l, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = l, .hold_ms = 10 };
    Worker c = { .name = "C", .sync = l, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    StatsAt at40 = { l, { 0 } };
    futoin_loop_deferred(g_loop, 40, &at40, stats_cb);
    cancel_at(b.root, 50);
    run();
    assert_trace("A>0|A<10|C>100|C<110");
    assert_int_equal(b.entered, 0);
    assert_int_equal(at40.st.slots_used, 1); /* B: slot, waiting for the rate */
    assert_int_equal(at40.st.queued, 2);     /* B (rate), C (concurrency) */
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(l);
}

static void test_release_on_error_timeout_cancel(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, FUTOIN_SYNC_UNLIMITED, 100, 1000, 0);
    Worker a = { .name = "A", .sync = l, .hold_ms = 10, .fail_inside = 1 };
    Worker b = { .name = "B", .sync = l, .hold_ms = HOLD_FOREVER, .timeout_ms = 20 };
    Worker c = { .name = "C", .sync = l, .hold_ms = HOLD_FOREVER };
    Worker d = { .name = "D", .sync = l, .hold_ms = 10 };
    worker_run(&a);
    worker_run(&b);
    worker_run(&c);
    worker_run(&d);
    cancel_at(c.root, 30);
    run();
    /* B's timeout runs from its outer step (t=0), so it is inside 10..20.
     * Each next flow is woken while the previous one unwinds. */
    assert_trace("A>0|A<10|A!Fail@10|B>10|B~20|C>20|B!Timeout@20|C~30|D>30|D<40");
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    workers_free(&d, 1);
    sync_free_ok(l);
}

static void test_fifo_concurrency(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, FUTOIN_SYNC_UNLIMITED, 1000, 1000, 0);
    Worker w[5];
    for (int i = 0; i < 5; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = l, .hold_ms = 5 };
        worker_run(&w[i]);
    }
    run();
    assert_trace("A>0|A<5|B>5|B<10|C>10|C<15|D>15|D<20|E>20|E<25");
    workers_free(w, 5);
    sync_free_ok(l);
}

static void test_fifo_rate(void** state)
{
    (void)state;
    sync_counters_reset();
    Worker w[5];
    FutoInSync* l = limiter(10, FUTOIN_SYNC_UNLIMITED, 2, 100, FUTOIN_SYNC_UNLIMITED);
    for (int i = 0; i < 5; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = l, .hold_ms = 1 };
        worker_run(&w[i]);
    }
    run();
    assert_trace("A>0|B>0|A<1|B<1|C>100|D>100|C<101|D<101|E>200|E<201");
    workers_free(w, 5);
    sync_free_ok(l);
}

/* ---- argument plumbing through the rate queue ---- */

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

static void args_delay(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 2);
}

static void args_delay_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    /* Recover with the inputs of the sync step. */
    futoin_success2(as, futoin_val_i32(7), counted_val(&((ArgsCase*)data)->in));
}

static void test_args_through_rate_queue(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, 0, 1, 100, 1);
    Worker a = { .name = "A", .sync = l, .hold_ms = 1 };
    worker_run(&a);
    ArgsCase ac = { { 1, 0 }, { 2, 0 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    /* Arrives at 2, after A has left: a slot is free, the rate is not. */
    futoin_add(root, args_delay, args_delay_eh, &ac);
    futoin_add_sync(root, l, args_cs, NULL, &ac);
    futoin_add(root, args_after, NULL, &ac);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<1|cs@100|after@100");
    assert_int_equal(ac.in.cleanups, 1);
    assert_int_equal(ac.out.cleanups, 1);
    futoin_asyncsteps_free(root);
    workers_free(&a, 1);
    sync_free_ok(l);
}

/* ---- re-entrance: in at once, even with the rate used up and no queue ---- */

static void reent_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    FutoInSyncStats st = sync_stats((FutoInSync*)data);
    assert_int_equal(st.slots_used, 1);
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
    FutoInSync* l = futoin_limiter_new(g_loop, NULL);
    assert_non_null(l);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(root, l, reent_outer, NULL, l);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("in1@0|in2@0");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
    sync_free_ok(l);
}

/* ---- parallel branches are separate flows ---- */

static void test_branches_contend(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, FUTOIN_SYNC_UNLIMITED, 100, 1000, 0);
    Worker a = { .name = "A", .sync = l, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = l, .hold_ms = 10 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    worker_branch(p, &a);
    worker_branch(p, &b);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<10|B>10|B<20");
    futoin_asyncsteps_free(root);
    sync_free_ok(l);
}

/* With the defaults a branch of a flow inside the Limiter is rejected (no
 * queue): it does not inherit its parent's place. */
static void ni_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("P>%llu", vt());
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    worker_branch(p, (Worker*)data);
}

static void test_branch_does_not_inherit(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = futoin_limiter_new(g_loop, NULL);
    Worker b = { .name = "B", .sync = l, .hold_ms = 1 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(root, l, ni_cs, NULL, &b);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("P>0|B!DefenseRejected@0");
    assert_int_equal(b.entered, 0);
    futoin_asyncsteps_free(root);
    sync_free_ok(l);
}

/* ---- free() while busy ---- */

typedef struct FreeBusy {
    FutoInSync* l;
    Worker* a;
    Worker* b;
    int checks;
} FreeBusy;

static void fb_check(void* data)
{
    FreeBusy* fb = data;
    assert_int_equal(futoin_sync_free(fb->l), FUTOIN_SYNC_BUSY); /* A in, B waiting */
    futoin_cancel(fb->a->root);
    /* A's slot went to B, which now waits for the rate while holding it. */
    assert_int_equal(futoin_sync_free(fb->l), FUTOIN_SYNC_BUSY);
    futoin_cancel(fb->b->root);
    ++fb->checks;
}

static void test_free_busy(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, 1, 1, 100, 1);
    Worker a = { .name = "A", .sync = l, .hold_ms = HOLD_FOREVER };
    Worker b = { .name = "B", .sync = l, .hold_ms = 1 };
    FreeBusy fb = { l, &a, &b, 0 };
    worker_run(&a);
    worker_run(&b);
    futoin_loop_deferred(g_loop, 10, &fb, fb_check);
    run();
    assert_int_equal(fb.checks, 1);
    assert_trace("A>0|A~10");
    assert_int_equal(now_ms(), 10);
    workers_free(&a, 1);
    workers_free(&b, 1);
    sync_free_ok(l);
}

static void test_invalid_options(void** state)
{
    (void)state;
    FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
    assert_null(futoin_limiter_new(NULL, &o));
    o.concurrent = 0;
    assert_null(futoin_limiter_new(g_loop, &o));
    o = (FutoInLimiterOptions)FUTOIN_LIMITER_OPTIONS_INIT;
    o.rate = 0;
    assert_null(futoin_limiter_new(g_loop, &o));
    o = (FutoInLimiterOptions)FUTOIN_LIMITER_OPTIONS_INIT;
    o.period_ms = 0;
    assert_null(futoin_limiter_new(g_loop, &o));
}

static void test_nodes_pooled(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(2, FUTOIN_SYNC_UNLIMITED, 3, 10, FUTOIN_SYNC_UNLIMITED);
    Worker w[10];
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 10; ++i) {
            w[i] = (Worker){ .name = "w", .sync = l, .hold_ms = 1 };
            worker_run(&w[i]);
        }
        run();
        for (int i = 0; i < 10; ++i) {
            assert_int_equal(w[i].entered, 1);
        }
        workers_free(w, 10);
        assert_int_equal(sync_stats(l).nodes_allocated, 10);
    }
    sync_free_ok(l);
}

/* ---- aborted after the rate timer admitted it, before it entered ----
 * Its slot must go to the next waiter; its rate entry stays counted. */

typedef struct Window {
    FutoInSync* l;
    Worker* w;
} Window;

static void window_cancel(void* data)
{
    Window* wd = data;
    /* Runs right after the window timer (same due time, armed later): W has
     * been admitted and woken but has not had its turn yet. */
    FutoInSyncStats st = sync_stats(wd->l);
    assert_int_equal(st.window_entries, 1);
    assert_int_equal(st.slots_used, 1);
    assert_int_equal(st.queued, 1); /* L, waiting for the slot */
    assert_int_equal(wd->w->entered, 0);
    tr("cancel@%llu", vt());
    futoin_cancel(wd->w->root);
}

static void window_arm(void* data)
{
    futoin_loop_deferred(g_loop, 50, data, window_cancel);
}

static void test_abort_after_rate_admission_before_entry(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, FUTOIN_SYNC_UNLIMITED, 1, 100, 1);
    Worker h = { .name = "H", .sync = l, .hold_ms = 1 };
    Worker w = { .name = "W", .sync = l, .hold_ms = 1, .start_ms = 2 };
    Worker late = { .name = "L", .sync = l, .hold_ms = 1, .start_ms = 3 };
    Window wd = { l, &w };
    worker_run(&h);
    worker_run(&w);
    worker_run(&late);
    futoin_loop_deferred(g_loop, 50, &wd, window_arm);
    run();
    /* W: slot at 2, waits for the rate; L waits for the slot. At 100 the
     * window timer admits W, which is cancelled before its turn: W's slot
     * goes to L, whose rate stage finds the new window used by W's
     * admission, so L enters at 200. */
    assert_trace("H>0|H<1|cancel@100|L>200|L<201");
    assert_int_equal(w.entered, 0);
    assert_int_equal(g_misuse, 0);
    workers_free(&h, 1);
    workers_free(&w, 1);
    workers_free(&late, 1);
    sync_free_ok(l);
}

/* A flow queued for a slot is rejected by the rate stage (no burst queue)
 * just as its root is torn down: a branch failing aborts its sibling X,
 * whose inner parallel's first branch frees the root from its cancel
 * handler; the root's cancel completes, then the inner abort goes on to the
 * holder A, whose unlock passes the slot to the queued B, which the rate
 * stage rejects. B's step does not take the error (its root is gone) and
 * is aborted next: the Limiter must not be handed B's record twice. It ends
 * idle and can be freed, and nothing is reported as misuse. */
static FutoInAsyncSteps* g_torn_root;
static Worker g_torn_a;
static Worker g_torn_b;

static void freer_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    (void)data;
    tr("free@%llu", vt());
    futoin_asyncsteps_free(g_torn_root);
}

static void freer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_cancel(as, freer_cancel, NULL);
}

static void torn_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, freer_step, NULL, NULL);
    worker_branch(p, &g_torn_a);
    worker_branch(p, &g_torn_b);
}

static void fail_later(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 5);
}

static void test_reject_while_root_torn_down(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* l = limiter(1, 1, 1, 1000, 0);
    g_torn_a = (Worker){ .name = "A", .sync = l, .hold_ms = HOLD_FOREVER };
    g_torn_b = (Worker){ .name = "B", .sync = l, .hold_ms = 10 };
    g_torn_root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(g_torn_root, NULL, NULL);
    futoin_add(p, torn_inner, NULL, NULL);
    futoin_add(p, fail_later, NULL, NULL);
    futoin_execute(g_torn_root, no_unhandled, NULL);
    run();
    assert_trace("A>0|free@5|A~5");
    assert_int_equal(g_torn_a.entered, 1);
    assert_int_equal(g_torn_a.aborted, 1);
    assert_int_equal(g_torn_b.entered, 0);
    assert_int_equal(g_torn_b.errors, 0);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    sync_free_ok(l);
    assert_int_equal(g_misuse, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_options_defaults),
        ENV_TEST(test_defaults_behaviour),
        ENV_TEST(test_both_stages),
        ENV_TEST(test_cancel_rate_waiter_passes_slot),
        ENV_TEST(test_release_on_error_timeout_cancel),
        ENV_TEST(test_fifo_concurrency),
        ENV_TEST(test_fifo_rate),
        ENV_TEST(test_args_through_rate_queue),
        ENV_TEST(test_reentrance),
        ENV_TEST(test_branches_contend),
        ENV_TEST(test_branch_does_not_inherit),
        ENV_TEST(test_free_busy),
        ENV_TEST(test_invalid_options),
        ENV_TEST(test_nodes_pooled),
        ENV_TEST(test_abort_after_rate_admission_before_entry),
        ENV_TEST(test_reject_while_root_torn_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
