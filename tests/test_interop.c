/*
 * SPDX-License-Identifier: MIT
 *
 * Interop (docs/INTEROP.md): flows of the strict foreign implementation
 * (tests/foreign/) and of our engine in the same Mutex, Throttle and
 * Limiter; foreign flows cancelled, timed out, rejected and freed while
 * they wait, with the foreign engine calling or not calling the cancel
 * handler of a step that fails by itself; re-entry from admission and
 * wake-up on foreign flows; the C helpers that refuse foreign objects.
 *
 * futoin_asyncsteps_new() makes foreign roots here (tsupport.h interop
 * mode); own_root() makes ours.
 */
#define FUTOIN_TEST_FOREIGN 1
#include "sync_support.h"

#include <futoin/threads.h>

static FutoInAsyncSteps* own_root(void)
{
    FutoInAsyncSteps* r = (futoin_asyncsteps_new)(g_loop);
    assert_non_null(r);
    return r;
}

static FutoInAsyncSteps* frn_root(void)
{
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    assert_non_null(r);
    assert_null(futoin_asyncsteps_loop(r));
    return r;
}

/* Runs worker w on a root of the chosen engine. */
static void worker_on(Worker* w, int foreign)
{
    w->root = foreign ? frn_root() : own_root();
    worker_add(w->root, w);
    futoin_execute(w->root, no_unhandled, NULL);
}

static const char* const NAMES[] = { "A", "B", "C", "D", "E", "F" };

/* ---- mixed engines in one FIFO ---- */

static void test_mutex_mixed_fifo(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker w[6];
    for (int i = 0; i < 6; ++i) {
        /* Arrivals 1 ms apart: the engines schedule their own steps
         * differently, so only arrival time orders flows across them. */
        w[i] = (Worker){ .name = NAMES[i], .sync = m, .hold_ms = 10, .start_ms = (uint32_t)i };
        worker_on(&w[i], i % 2);
    }
    run();
    assert_trace("A>0|A<10|B>10|B<20|C>20|C<30|D>30|D<40|E>40|E<50|F>50|F<60");
    assert_int_equal(g_max_inside, 1);
    assert_int_equal(g_misuse, 0);
    workers_free(w, 6);
    sync_free_ok(m);
}

static void test_mutex_two_slots_mixed(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 2, 1);
    Worker w[4];
    for (int i = 0; i < 4; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = m, .hold_ms = 10, .start_ms = (uint32_t)i };
        worker_on(&w[i], i >= 2);
    }
    run();
    /* A, B (ours) enter; C (foreign) queues; D (foreign) finds the queue
     * full and is rejected through its own engine. */
    assert_int_equal(w[0].entered + w[1].entered + w[2].entered, 3);
    assert_int_equal(w[3].entered, 0);
    assert_string_equal(w[3].last_error, FUTOIN_DEFENSE_REJECTED);
    assert_int_equal(w[2].entered_at, 10);
    assert_int_equal(w[0].entered_at, 0);
    assert_int_equal(w[1].entered_at, 1);
    assert_int_equal(g_max_inside, 2);
    workers_free(w, 4);
    sync_free_ok(m);
}

/* ---- a foreign flow leaves the queue through its own engine ---- */

static void test_foreign_cancelled_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10, .start_ms = 1 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 2 };
    worker_on(&a, 0);
    worker_on(&b, 1);
    worker_on(&c, 0);
    StatsAt at4 = { m, { 0 } };
    futoin_loop_deferred(g_loop, 4, &at4, stats_cb);
    cancel_at(b.root, 5);
    run();
    assert_trace("A>0|A<10|C>10|C<20");
    assert_int_equal(at4.st.queued, 2);
    assert_int_equal(b.entered, 0);
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

static void test_foreign_timeout_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10, .timeout_ms = 5, .start_ms = 1 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 2 };
    worker_on(&a, 1);
    worker_on(&b, 1);
    worker_on(&c, 0);
    run();
    assert_trace("A>0|B!Timeout@6|A<10|C>10|C<20");
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

static void free_root_cb(void* data)
{
    Worker* w = data;
    futoin_asyncsteps_free(w->root);
    w->root = NULL;
}

static void test_foreign_freed_while_queued(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10, .start_ms = 1 };
    Worker c = { .name = "C", .sync = m, .hold_ms = 10, .start_ms = 2 };
    worker_on(&a, 0);
    worker_on(&b, 1);
    worker_on(&c, 1);
    futoin_loop_deferred(g_loop, 5, &b, free_root_cb);
    run();
    assert_trace("A>0|A<10|C>10|C<20");
    workers_free(&a, 1);
    workers_free(&c, 1);
    sync_free_ok(m);
}

/* ---- a waiting foreign flow rejected by a Limiter, both engine styles ---- */

static void limiter_reject_waiting(unsigned frn_opts)
{
    sync_counters_reset();
    frn_set_options(g_frn, frn_opts);
    /* One slot, one waiter for it; one entry per 100 ms and no burst queue:
     * B waits for the slot, gets it at 10 while the window is still full,
     * and is rejected while it waits. */
    FutoInLimiterOptions o = { 1, 1, 1, 100, 0 };
    FutoInSync* l = futoin_limiter_new(g_loop, &o);
    assert_non_null(l);
    Worker a = { .name = "A", .sync = l, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = l, .hold_ms = 10, .start_ms = 1 };
    Worker c = { .name = "C", .sync = l, .hold_ms = 10, .start_ms = 150 };
    worker_on(&a, 0);
    worker_on(&b, 1);
    worker_on(&c, 1);
    run();
    assert_trace("A>0|A<10|B!DefenseRejected@10|C>150|C<160");
    /* B's node went back exactly once: C could use the object afterwards,
     * and no node was allocated beyond the two flows that overlapped. */
    FutoInSyncStats st = sync_stats(l);
    assert_true(st.nodes_allocated <= 2);
    workers_free(&a, 1);
    workers_free(&b, 1);
    workers_free(&c, 1);
    sync_free_ok(l);
}

static void test_limiter_rejects_waiting_foreign(void** state)
{
    (void)state;
    limiter_reject_waiting(0);
}

static void test_limiter_rejects_waiting_foreign_js_style(void** state)
{
    (void)state;
    limiter_reject_waiting(FRN_OPT_CANCEL_ON_OWN_ERROR);
}

static void test_throttle_foreign_windows(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* t = futoin_throttle_new(g_loop, 1, 100, FUTOIN_SYNC_UNLIMITED);
    Worker w[3];
    for (int i = 0; i < 3; ++i) {
        w[i] = (Worker){ .name = NAMES[i], .sync = t, .hold_ms = 1, .start_ms = (uint32_t)i };
        worker_on(&w[i], i != 1);
    }
    run();
    assert_trace("A>0|A<1|B>100|B<101|C>200|C<201");
    workers_free(w, 3);
    sync_free_ok(t);
}

/* ---- parallel branches of the foreign engine are separate flows ---- */

static void test_foreign_branches_distinct(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Worker b = { .name = "B", .sync = m, .hold_ms = 10, .start_ms = 1 };
    FutoInAsyncSteps* root = frn_root();
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

/* ---- re-entry from admission and wake-up on foreign flows ---- */

typedef struct Reenter {
    FutoInSync* sync;
    uint32_t delay; /* ms before the sync step: orders arrivals */
    FutoInAsyncSteps* delayed;
    FutoInHandle timer;
    FutoInAsyncSteps* self;  /* the root of this flow */
    FutoInAsyncSteps* other; /* another root to act on */
    int action;
    int entered;
    int free_rc;
} Reenter;

enum { RE_FREE_SELF = 1, RE_CANCEL_OTHER, RE_SYNC_FREE, RE_FREE_OTHER };

static void re_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Reenter* r = data;
    ++r->entered;
    tr("in@%llu", vt());
    switch (r->action) {
    case RE_FREE_SELF:
        futoin_asyncsteps_free(r->self);
        r->self = NULL;
        break;
    case RE_CANCEL_OTHER:
        futoin_cancel(r->other);
        break;
    case RE_FREE_OTHER:
        futoin_asyncsteps_free(r->other);
        break;
    case RE_SYNC_FREE:
        r->free_rc = futoin_sync_free(r->sync);
        break;
    default:
        break;
    }
}

static void re_delay_done(void* data)
{
    Reenter* r = data;
    memset(&r->timer, 0, sizeof(r->timer));
    futoin_success(r->delayed);
}

static void re_delay_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Reenter* r = data;
    futoin_loop_cancel(g_loop, &r->timer);
}

static void re_delay(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Reenter* r = data;
    if (r->delay) {
        r->delayed = as;
        r->timer = futoin_loop_deferred(g_loop, r->delay, r, re_delay_done);
        futoin_set_cancel(as, re_delay_cancel, r);
    }
}

static void re_add(FutoInAsyncSteps* root, Reenter* r)
{
    r->self = root;
    futoin_add(root, re_delay, NULL, r);
    futoin_add_sync(root, r->sync, re_cs, NULL, r);
}

/* A foreign flow frees its own root inside the section it entered on a
 * wake-up: the section is left once, the next waiter (ours) enters. */
static void test_reentry_free_self_in_section(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    worker_on(&a, 0);
    Reenter b = { .sync = m, .action = RE_FREE_SELF, .delay = 1 };
    re_add(frn_root(), &b);
    futoin_execute(b.self, no_unhandled, NULL);
    Reenter c = { .sync = m, .delay = 2 };
    re_add(own_root(), &c);
    futoin_execute(c.self, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<10|in@10|in@10");
    assert_int_equal(b.entered, 1);
    assert_int_equal(c.entered, 1);
    workers_free(&a, 1);
    futoin_asyncsteps_free(c.self);
    sync_free_ok(m);
}

/* Inside the section, a foreign flow cancels (then frees) a foreign root
 * that waits behind it: that waiter leaves the queue, the one after it
 * enters next. */
static void test_reentry_cancel_waiter_from_section(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Reenter a = { .sync = m, .action = RE_CANCEL_OTHER };
    Reenter b = { .sync = m, .delay = 1 };
    Reenter c = { .sync = m, .action = RE_FREE_OTHER, .delay = 2 };
    Reenter d = { .sync = m, .delay = 3 };
    re_add(frn_root(), &a);
    re_add(frn_root(), &b);
    re_add(own_root(), &c);
    re_add(frn_root(), &d);
    a.other = b.self;
    c.other = d.self;
    futoin_execute(a.self, no_unhandled, NULL);
    futoin_execute(b.self, no_unhandled, NULL);
    futoin_execute(c.self, no_unhandled, NULL);
    futoin_execute(d.self, no_unhandled, NULL);
    run();
    assert_int_equal(a.entered, 1);
    assert_int_equal(b.entered, 0);
    assert_int_equal(c.entered, 1);
    assert_int_equal(d.entered, 0);
    futoin_asyncsteps_free(a.self);
    futoin_asyncsteps_free(b.self);
    futoin_asyncsteps_free(c.self);
    sync_free_ok(m);
}

/* futoin_sync_free() from inside a foreign flow's section: BUSY, nothing
 * changes, and the object is idle and freeable afterwards. */
static void test_reentry_sync_free_in_section(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Reenter a = { .sync = m, .action = RE_SYNC_FREE };
    re_add(frn_root(), &a);
    futoin_execute(a.self, no_unhandled, NULL);
    run();
    assert_int_equal(a.entered, 1);
    assert_int_equal(a.free_rc, FUTOIN_SYNC_BUSY);
    futoin_asyncsteps_free(a.self);
    sync_free_ok(m);
}

/* A foreign waiter is woken (success() from our unlock) and its root is
 * freed before its engine runs its next step: by the step that follows
 * the holder's sync step on our engine, which runs in the same turn. The
 * foreign engine owes unlock() for the granted lock; the object ends
 * idle and the next waiter (ours) enters. */
static void free_other_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Reenter* r = data;
    tr("free B@%llu", vt());
    futoin_asyncsteps_free(r->self);
    r->self = NULL;
}

static void test_reentry_woken_then_freed(void** state)
{
    (void)state;
    sync_counters_reset();
    FutoInSync* m = futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    Worker a = { .name = "A", .sync = m, .hold_ms = 10 };
    Reenter b = { .sync = m, .delay = 1 };
    a.root = own_root();
    worker_add(a.root, &a);
    futoin_add(a.root, free_other_step, NULL, &b);
    futoin_execute(a.root, no_unhandled, NULL);
    re_add(frn_root(), &b);
    futoin_execute(b.self, no_unhandled, NULL);
    Reenter c = { .sync = m, .delay = 2 };
    re_add(own_root(), &c);
    futoin_execute(c.self, no_unhandled, NULL);
    run();
    assert_trace("A>0|A<10|free B@10|in@10");
    assert_int_equal(b.entered, 0);
    assert_int_equal(c.entered, 1);
    workers_free(&a, 1);
    futoin_asyncsteps_free(c.self);
    sync_free_ok(m);
}

/* ---- C helpers on foreign objects ---- */

static void expect_internal(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", code, futoin_error_info(as));
    (void)data;
    futoin_success(as);
}

static void step_copy_from_own(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_copy_from(as, (FutoInAsyncSteps*)data);
}

static void test_copy_from_refuses_foreign(void** state)
{
    (void)state;
    FutoInAsyncSteps* model = own_root();
    futoin_add(model, must_not_run, NULL, "model");
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, step_copy_from_own, expect_internal, model);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:InternalError:copyFrom() needs an AsyncSteps of this library (the model's "
                 "steps cannot be copied into another implementation)");
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(model);
}

static void test_promise_refuses_foreign(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, must_not_run, NULL, "promised");
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_MISUSE);
    run();
    assert_trace("");
    futoin_asyncsteps_free(root);
}

static int g_released;

static void work_release(void* data)
{
    (void)data;
    ++g_released;
}

static void work_fn(void* data, FutoInWorkResult* out)
{
    (void)data;
    (void)out;
}

static void step_add_work(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add_work(as, work_fn, NULL, work_release);
}

static void test_add_work_refuses_foreign(void** state)
{
    (void)state;
    g_released = 0;
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, step_add_work, expect_internal, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:InternalError:futoin_add_work() needs an AsyncSteps of this library");
    assert_int_equal(g_released, 1);
    futoin_asyncsteps_free(root);
}

static void step_state_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    assert_null(futoin_state(as, NULL, NULL, NULL, NULL));
}

static void test_state_null_name_not_sent(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, step_state_null, expect_internal, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:InternalError:stateVariable() with a NULL name");
    futoin_asyncsteps_free(root);
}

static const int g_items[3] = { 3, 4, 5 };

static void each_item(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)as;
    (void)data;
    tr("%zu=%d", i, *(const int*)elem);
}

static void step_foreach(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_foreach_array(as, g_items, 3, sizeof(int), each_item, NULL, NULL);
}

static void test_foreach_on_foreign(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, step_foreach, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("0=3|1=4|2=5");
    futoin_asyncsteps_free(root);
}

static void step_foreach_null(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_foreach_array(as, g_items, 3, sizeof(int), NULL, NULL, NULL);
}

/* A NULL callback is refused by the helper itself: never passed on as
 * repeat(NULL), which a strict implementation treats as a violation. */
static void test_foreach_null_callback_not_sent(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = frn_root();
    futoin_add(root, step_foreach_null, expect_internal, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:InternalError:futoin_foreach_array() with a NULL callback");
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_mutex_mixed_fifo),
        ENV_TEST(test_mutex_two_slots_mixed),
        ENV_TEST(test_foreign_cancelled_while_queued),
        ENV_TEST(test_foreign_timeout_while_queued),
        ENV_TEST(test_foreign_freed_while_queued),
        ENV_TEST(test_limiter_rejects_waiting_foreign),
        ENV_TEST(test_limiter_rejects_waiting_foreign_js_style),
        ENV_TEST(test_throttle_foreign_windows),
        ENV_TEST(test_foreign_branches_distinct),
        ENV_TEST(test_reentry_free_self_in_section),
        ENV_TEST(test_reentry_cancel_waiter_from_section),
        ENV_TEST(test_reentry_sync_free_in_section),
        ENV_TEST(test_reentry_woken_then_freed),
        ENV_TEST(test_copy_from_refuses_foreign),
        ENV_TEST(test_promise_refuses_foreign),
        ENV_TEST(test_add_work_refuses_foreign),
        ENV_TEST(test_state_null_name_not_sent),
        ENV_TEST(test_foreach_on_foreign),
        ENV_TEST(test_foreach_null_callback_not_sent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
