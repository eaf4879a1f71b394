/* SPDX-License-Identifier: MIT */
/* Shared Mutex / Throttle / Limiter used by flows on two loop threads at
 * once (futoin_*_new_shared, include/futoin/sync.h). */
#include "threads_support.h"

#include <futoin/sync.h>

/* ---- shared mutex: mutual exclusion across loops ---- */

typedef struct Shared {
    FutoInSync* mutex;
    unsigned max;
    /* Guarded by the shared mutex itself (the logical lock), not by a
     * pthread mutex: TSan checks the hand-over is a real happens-before. */
    unsigned inside;
    unsigned max_inside;
    unsigned long counter;
    unsigned long switches;
    FutoInLoop* last_loop;
    /* For max > 1 flows are inside together (maybe on both loops): the
     * same counts kept with atomics. */
    atomic_uint a_inside;
    atomic_uint a_max_inside;
    atomic_ulong a_counter;
    atomic_int roots_done;
    atomic_int roots_started;
    int roots;
    atomic_int rejected;
    atomic_int timed_out;
    unsigned iterations;
    int timeout_ms; /* 0: none; else on the step around the sync step */
} Shared;

typedef struct {
    Shared* sh;
    int loop_id;
} Worker;

/* Per entry, on the critical section step's stack: the cancel handler
 * (an abort by the timeout around the sync step) must not count a flow
 * out twice. */
typedef struct {
    Shared* sh;
    int left;
} Entry;

static void cs_leave(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Entry* e = data;
    e->left = 1;
    if (e->sh->max > 1) {
        atomic_fetch_sub(&e->sh->a_inside, 1);
    } else {
        --e->sh->inside;
    }
}

static void cs_aborted(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Entry* e = data;
    if (!e->left) {
        e->left = 1;
        if (e->sh->max > 1) {
            atomic_fetch_sub(&e->sh->a_inside, 1);
        } else {
            --e->sh->inside;
        }
    }
}

/* A 2 ms stay inside, on a loop timer that the step's cancel handler
 * cancels if the step is aborted (the 1 ms timeout around it). */
typedef struct {
    FutoInAsyncSteps* as;
    FutoInHandle timer;
} Nap;

static void nap_over(void* data)
{
    Nap* n = data;
    n->timer.data1 = NULL;
    futoin_success(n->as);
}

static void nap_cancel(FutoInAsyncSteps* as, void* data)
{
    Nap* n = data;
    futoin_loop_cancel(futoin_asyncsteps_loop(as), &n->timer);
}

static void nap_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    Nap* n = futoin_stack(as, sizeof(Nap), NULL);
    n->as = as;
    n->timer = futoin_loop_deferred(futoin_asyncsteps_loop(as), 2, n, nap_over);
    futoin_set_cancel(as, nap_cancel, n);
}

static void cs_enter(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Shared* sh = data;
    if (sh->max > 1) {
        unsigned in = atomic_fetch_add(&sh->a_inside, 1) + 1;
        unsigned seen = atomic_load(&sh->a_max_inside);
        while (in > seen && !atomic_compare_exchange_weak(&sh->a_max_inside, &seen, in)) {
        }
        atomic_fetch_add(&sh->a_counter, 1);
    } else {
        if (++sh->inside > sh->max_inside) {
            sh->max_inside = sh->inside;
        }
        ++sh->counter;
        FutoInLoop* loop = futoin_asyncsteps_loop(as);
        if (sh->last_loop && sh->last_loop != loop) {
            ++sh->switches;
        }
        sh->last_loop = loop;
    }
    Entry* e = futoin_stack(as, sizeof(Entry), NULL);
    e->sh = sh;
    futoin_set_cancel(as, cs_aborted, e);
    /* Stay inside across a trip through the loop, so that the other loop
     * really gets a chance to break in if the lock were broken. */
    futoin_relinquish(as);
    if (sh->timeout_ms && sh->max == 1 && sh->counter % 16 == 0) {
        futoin_add(as, nap_step, NULL, NULL); /* queues build up behind it */
    }
    futoin_add(as, cs_leave, NULL, e);
}

static void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Shared* sh = data;
    if (sh->timeout_ms) {
        futoin_set_timeout(as, (uint32_t)sh->timeout_ms);
    }
    futoin_add_sync(as, sh->mutex, cs_enter, NULL, sh);
}

static void outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Shared* sh = data;
    if (strcmp(code, FUTOIN_DEFENSE_REJECTED) == 0) {
        atomic_fetch_add(&sh->rejected, 1);
    } else if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        atomic_fetch_add(&sh->timed_out, 1);
    }
    futoin_success(as); /* keep iterating */
}

static void iteration(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)i;
    futoin_add(as, outer_step, outer_eh, data);
}

static void root_end(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    atomic_fetch_add(&((Shared*)data)->roots_done, 1);
}

/* A start barrier across the loops: every root waits until all have
 * started, so that flows of both loops really compete from the start. */
typedef struct {
    FutoInAsyncSteps* as;
    Shared* sh;
} Barrier;

static void barrier_check(void* data)
{
    Barrier* b = data;
    if (atomic_load(&b->sh->roots_started) >= b->sh->roots) {
        futoin_success(b->as);
    } else {
        futoin_loop_deferred(futoin_asyncsteps_loop(b->as), 1, b, barrier_check);
    }
}

static void barrier_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Shared* sh = data;
    atomic_fetch_add(&sh->roots_started, 1);
    Barrier* b = futoin_stack(as, sizeof(Barrier), NULL);
    b->as = as;
    b->sh = sh;
    futoin_wait_external(as);
    futoin_loop_deferred(futoin_asyncsteps_loop(as), 0, b, barrier_check);
}

static void worker_setup(FutoInAsyncSteps* root, void* data)
{
    Shared* sh = data;
    futoin_add(root, barrier_step, NULL, sh);
    futoin_repeat(root, sh->iterations, iteration, sh, NULL);
    futoin_add(root, root_end, NULL, sh);
}

/* Runs `roots` roots spread over a pool of two loop threads. */
static void run_on_two_loops(Shared* sh, int roots)
{
    sh->roots = roots;
    FutoInLoopPool* pool = futoin_loop_pool_new(2);
    assert_non_null(pool);
    for (int i = 0; i < roots; ++i) {
        assert_true(futoin_loop_pool_spawn(pool, worker_setup, NULL, sh) >= 0);
    }
    while (atomic_load(&sh->roots_done) < roots) {
        sleep_us(1000);
    }
    futoin_loop_pool_free(pool);
}

static void test_shared_mutex_two_loops(void** state)
{
    (void)state;
    Shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.mutex = futoin_mutex_new_shared(1, FUTOIN_SYNC_UNLIMITED);
    sh.max = 1;
    assert_non_null(sh.mutex);
    sh.iterations = (unsigned)scaled(2000, 20000, 100);
    run_on_two_loops(&sh, 8);
    assert_int_equal(sh.max_inside, 1);
    assert_int_equal(sh.inside, 0);
    assert_int_equal(sh.counter, 8ul * sh.iterations);
    FutoInSyncStats st;
    assert_int_equal(futoin_sync_stats(sh.mutex, &st), FUTOIN_SYNC_OK);
    assert_int_equal(st.active, 0);
    assert_int_equal(st.queued, 0);
    /* How much the loops overlapped depends on the scheduler: reported,
     * not asserted (more lock records than one loop's roots = overlap). */
    print_message("mutex(1): %lu entries, %u lock records at peak, %lu loop switches\n", sh.counter,
            st.nodes_allocated, sh.switches);
    assert_int_equal(futoin_sync_free(sh.mutex), FUTOIN_SYNC_OK);
}

static void test_shared_mutex_of_three(void** state)
{
    (void)state;
    Shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.mutex = futoin_mutex_new_shared(3, FUTOIN_SYNC_UNLIMITED);
    sh.max = 3;
    sh.iterations = (unsigned)scaled(300, 3000, 30);
    run_on_two_loops(&sh, 8);
    assert_true(atomic_load(&sh.a_max_inside) <= 3);
    assert_int_equal(atomic_load(&sh.a_inside), 0);
    assert_int_equal(atomic_load(&sh.a_counter), 8ul * sh.iterations);
    assert_int_equal(futoin_sync_free(sh.mutex), FUTOIN_SYNC_OK);
}

/* Waiters time out (their places come back), a full queue rejects: the
 * object ends empty whatever the interleaving. */
static void test_shared_mutex_timeouts_and_rejects(void** state)
{
    (void)state;
    Shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.mutex = futoin_mutex_new_shared(1, 3);
    sh.max = 1;
    sh.iterations = (unsigned)scaled(500, 5000, 30);
    sh.timeout_ms = 1;
    run_on_two_loops(&sh, 8);
    assert_int_equal(sh.max_inside, 1);
    assert_int_equal(sh.inside, 0);
    /* Every iteration ends one way: in (then maybe timed out inside),
     * rejected, or timed out while queued. */
    assert_true(sh.counter + (unsigned long)atomic_load(&sh.rejected)
                    + (unsigned long)atomic_load(&sh.timed_out)
            >= 8ul * sh.iterations);
    FutoInSyncStats st;
    futoin_sync_stats(sh.mutex, &st);
    assert_int_equal(st.active + st.queued + st.slots_used, 0);
    assert_int_equal(futoin_sync_free(sh.mutex), FUTOIN_SYNC_OK);
    print_message("mutex(1, queue 3), 1 ms timeouts: %lu in, %d rejected, %d timed out, "
                  "%u lock records (concurrent lockers)\n",
            sh.counter, atomic_load(&sh.rejected), atomic_load(&sh.timed_out), st.nodes_allocated);
}

/* ---- shared throttle: the rate holds across loops ---- */

typedef struct {
    FutoInSync* throttle;
    pthread_mutex_t m;
    uint64_t times[256];
    int n;
    atomic_int done;
} Rate;

static void rate_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Rate* r = data;
    pthread_mutex_lock(&r->m);
    r->times[r->n++] = now_ns();
    pthread_mutex_unlock(&r->m);
}

static void rate_end(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    atomic_fetch_add(&((Rate*)data)->done, 1);
}

static void rate_setup(FutoInAsyncSteps* root, void* data)
{
    Rate* r = data;
    futoin_add_sync(root, r->throttle, rate_cs, NULL, r);
    futoin_add(root, rate_end, NULL, r);
}

static int cmp_u64(const void* a, const void* b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static void run_rate(FutoInSync* sync, int flows, int max, int period_ms)
{
    Rate r;
    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.m, NULL);
    r.throttle = sync;
    FutoInLoopPool* pool = futoin_loop_pool_new(2);
    uint64_t t_start = now_ns(); /* before any flow can ask for the lock */
    for (int i = 0; i < flows; ++i) {
        assert_true(futoin_loop_pool_spawn(pool, rate_setup, NULL, &r) >= 0);
    }
    while (atomic_load(&r.done) < flows) {
        sleep_us(1000);
    }
    futoin_loop_pool_free(pool);
    assert_int_equal(r.n, flows);
    qsort(r.times, (size_t)r.n, sizeof(r.times[0]), cmp_u64);
    /* Lower bounds only. Windows follow each other at least a period
     * apart from the first admission (after t_start), at most max flows are
     * admitted per window, and a flow enters at or after its admission (on
     * its own loop, maybe much later). So the i-th entry is in window
     * i / max or later: not before t_start + (i / max) periods (minus 1 ms
     * for the millisecond clock). Differences between entries are not
     * bounded: a late entry of one window can be followed at once by an
     * early one of the next. */
    for (int i = 0; i < r.n; ++i) {
        uint64_t earliest = t_start + (uint64_t)(i / max) * (uint64_t)period_ms * 1000000u;
        assert_true(r.times[i] + 1000000u >= earliest);
    }
    pthread_mutex_destroy(&r.m);
}

static void test_shared_throttle_two_loops(void** state)
{
    (void)state;
    FutoInSync* t = futoin_throttle_new_shared(3, 20, FUTOIN_SYNC_UNLIMITED);
    assert_non_null(t);
    run_rate(t, 15, 3, 20);
    FutoInSyncStats st;
    futoin_sync_stats(t, &st);
    assert_int_equal(st.queued, 0);
    /* A cancelled window timer may still be finishing: retry until free. */
    while (futoin_sync_free(t) == FUTOIN_SYNC_BUSY) {
        sleep_us(1000);
    }
}

static void test_shared_limiter_two_loops(void** state)
{
    (void)state;
    FutoInLimiterOptions o;
    futoin_limiter_options_init(&o);
    o.concurrent = 2;
    o.max_queue = FUTOIN_SYNC_UNLIMITED;
    o.rate = 4;
    o.period_ms = 20;
    o.burst = FUTOIN_SYNC_UNLIMITED;
    FutoInSync* l = futoin_limiter_new_shared(&o);
    assert_non_null(l);
    run_rate(l, 16, 4, 20);
    while (futoin_sync_free(l) == FUTOIN_SYNC_BUSY) {
        sleep_us(1000);
    }
}

/* A queued waiter whose loop is stopped NOW: its root is freed in on_stop,
 * the waiter leaves the queue, and the flow holding the mutex on the other
 * loop is unaffected. */
typedef struct {
    FutoInSync* mutex;
    FutoInAsyncSteps* root;
    atomic_int inside;
    atomic_int released;
    _Atomic(FutoInAsyncSteps*) step; /* the critical section, for success() */
} Holder;

static void hold_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Holder* h = data;
    atomic_store(&h->step, as);
    atomic_store(&h->inside, 1);
    futoin_set_timeout(as, 3600 * 1000); /* held until the root is freed */
}

static void holder_cs_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    (void)code;
}

static void holder_start(FutoInLoop* loop, void* data)
{
    Holder* h = data;
    h->root = futoin_asyncsteps_new(loop);
    futoin_add_sync(h->root, h->mutex, hold_cs, holder_cs_eh, h);
    futoin_execute(h->root, NULL, NULL);
}

static void holder_stop(FutoInLoop* loop, void* data)
{
    (void)loop;
    Holder* h = data;
    futoin_asyncsteps_free(h->root);
    atomic_store(&h->released, 1);
}

static void test_shared_mutex_waiter_loop_stops(void** state)
{
    (void)state;
    FutoInSync* m = futoin_mutex_new_shared(1, FUTOIN_SYNC_UNLIMITED);
    Holder a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.mutex = b.mutex = m;
    FutoInLoopThreadHooks ha = { holder_start, holder_stop, &a };
    FutoInLoopThreadHooks hb = { holder_start, holder_stop, &b };
    FutoInLoopThread* ta = futoin_loop_thread_start(&ha);
    while (!atomic_load(&a.inside)) {
        sleep_us(200);
    }
    FutoInLoopThread* tb = futoin_loop_thread_start(&hb);
    FutoInSyncStats st;
    do {
        sleep_us(200);
        futoin_sync_stats(m, &st);
    } while (st.queued != 1);
    futoin_loop_thread_stop(tb, FUTOIN_LOOP_STOP_NOW); /* the waiter's loop */
    futoin_loop_thread_join(tb);
    futoin_sync_stats(m, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.active, 1);
    assert_int_equal(atomic_load(&b.inside), 0);
    futoin_loop_thread_stop(ta, FUTOIN_LOOP_STOP_NOW);
    futoin_loop_thread_join(ta);
    futoin_sync_stats(m, &st);
    assert_int_equal(st.active + st.queued + st.slots_used, 0);
    assert_int_equal(futoin_sync_free(m), FUTOIN_SYNC_OK);
}

/* ---- a rejection that loses to a cancel on the waiter's loop ---- */

/* A shared Limiter rejects, on the holder's loop thread, a flow that waits
 * for the slot on another loop (rate spent, no burst queue); that flow's
 * root is cancelled on its own loop before the rejection gets there. The
 * flow's record comes back to the Limiter exactly once (it ends idle and
 * can be freed), and the late rejection is dropped without a report. */
static void never_inside(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    fail_msg("the rejected flow entered the Limiter");
}

static void count_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++*(int*)data;
}

static int g_reports;

static void count_report(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    (void)info;
    ++g_reports;
}

static void test_shared_reject_loses_to_cancel(void** state)
{
    (void)state;
    FutoInLimiterOptions o = { 1, 1, 1, 3600u * 1000u, 0 };
    FutoInSync* l = futoin_limiter_new_shared(&o);
    assert_non_null(l);
    Holder h;
    memset(&h, 0, sizeof(h));
    h.mutex = l;
    FutoInLoopThreadHooks hooks = { holder_start, holder_stop, &h };
    FutoInLoopThread* t = futoin_loop_thread_start(&hooks);
    while (!atomic_load(&h.inside)) {
        sleep_us(200);
    }
    FutoInLoop* loop = futoin_loop_new_virtual();
    futoin_set_misuse_handler(loop, count_report, NULL);
    g_reports = 0;
    int errors = 0;
    FutoInAsyncSteps* w = futoin_asyncsteps_new(loop);
    futoin_add_sync(w, l, never_inside, count_error, &errors);
    futoin_execute(w, NULL, NULL);
    futoin_loop_run(loop);
    FutoInSyncStats st;
    futoin_sync_stats(l, &st);
    assert_int_equal(st.queued, 1);
    /* The holder leaves on its own loop thread: the waiter is rejected
     * there and the error is queued for this loop. */
    futoin_success(atomic_load(&h.step));
    do {
        sleep_us(200);
        futoin_sync_stats(l, &st);
    } while (st.active || st.queued);
    futoin_cancel(w);      /* comes first on this loop */
    futoin_loop_run(loop); /* then the rejection, which no longer applies */
    assert_int_equal(errors, 0);
    assert_int_equal(g_reports, 0);
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_NOW);
    futoin_loop_thread_join(t);
    futoin_asyncsteps_free(w);
    futoin_loop_free(loop);
    futoin_sync_stats(l, &st);
    assert_int_equal(st.active + st.queued + st.slots_used, 0);
    assert_int_equal(futoin_sync_free(l), FUTOIN_SYNC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_mutex_two_loops),
        cmocka_unit_test(test_shared_mutex_of_three),
        cmocka_unit_test(test_shared_mutex_timeouts_and_rejects),
        cmocka_unit_test(test_shared_throttle_two_loops),
        cmocka_unit_test(test_shared_limiter_two_loops),
        cmocka_unit_test(test_shared_reject_loses_to_cancel),
        cmocka_unit_test(test_shared_mutex_waiter_loop_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
