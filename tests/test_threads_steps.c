/* SPDX-License-Identifier: MIT */
/* Cross-thread success()/error()/cancel() on AsyncSteps: basic behaviour,
 * exactly one outcome when racing a timeout or a cancel, values cleaned up
 * exactly once, and a many-producer completion stress (docs/THREADS.md). */
#include "threads_support.h"

#include "engine/cross_thread_calls_impl.h"

/* ---- a root whose step waits for another thread ---- */

typedef struct {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    _Atomic(FutoInAsyncSteps*) waiting; /* published by the waiting step */
    int got;                            /* loop thread */
    char err[64];                       /* loop thread */
    int cancelled;                      /* loop thread */
    int done;
} Single;

static void on_cancel_count(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((Single*)data)->cancelled++;
}

static void wait_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Single* s = data;
    futoin_set_cancel(as, on_cancel_count, s);
    atomic_store(&s->waiting, as);
}

static void got_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Single* s = data;
    if (s->err[0]) {
        return; /* the error handler recovered: it released the hold */
    }
    s->got = futoin_arg_i32(args, 0, -1);
    const char* str = futoin_arg_cstr(args, 1, NULL);
    assert_string_equal(str, "from a thread");
    s->done = 1;
    futoin_loop_release(s->loop);
}

static void wait_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Single* s = data;
    snprintf(s->err, sizeof(s->err), "%s:%s", code, futoin_error_info(as));
    s->done = 1;
    futoin_loop_release(s->loop);
    futoin_success(as);
}

static FutoInAsyncSteps* wait_published(Single* s)
{
    FutoInAsyncSteps* as;
    while ((as = atomic_load(&s->waiting)) == NULL) {
        sleep_us(100);
    }
    return as;
}

static void* complete_success(void* arg)
{
    Single* s = arg;
    FutoInAsyncSteps* as = wait_published(s);
    assert_int_equal(as->api->is_same_thread(as), 0);
    futoin_success2(as, futoin_val_i32(42), futoin_val_strdup("from a thread"));
    return NULL;
}

static void* complete_error(void* arg)
{
    Single* s = arg;
    FutoInAsyncSteps* as = wait_published(s);
    char code[16], info[300];
    snprintf(code, sizeof(code), "MyError");
    memset(info, 'i', sizeof(info) - 1); /* long: goes to the heap copy */
    info[sizeof(info) - 1] = '\0';
    futoin_error(as, code, info);
    memset(code, 0, sizeof(code)); /* the call copied them */
    memset(info, 0, sizeof(info));
    return NULL;
}

static void release_loop(void* loop)
{
    futoin_loop_release(loop);
}

static void* complete_cancel(void* arg)
{
    Single* s = arg;
    wait_published(s);
    futoin_cancel(s->root);
    /* cancel() is queued: release once it has reached the loop thread. */
    futoin_loop_immediate(s->loop, s->loop, release_loop);
    return NULL;
}

static void run_single(void* (*fn)(void*), Single* s)
{
    memset(s, 0, sizeof(*s));
    s->loop = futoin_loop_new();
    futoin_set_misuse_handler(s->loop, count_misuse, NULL);
    s->root = futoin_asyncsteps_new(s->loop);
    futoin_add(s->root, wait_step, wait_eh, s);
    futoin_add(s->root, got_step, NULL, s);
    futoin_loop_hold(s->loop); /* the step waits for another thread */
    futoin_execute(s->root, NULL, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fn, s), 0);
    futoin_loop_run(s->loop);
    pthread_join(th, NULL);
}

static void end_single(Single* s)
{
    futoin_asyncsteps_free(s->root);
    futoin_loop_free(s->loop);
}

static void test_success_from_thread(void** state)
{
    (void)state;
    Single s;
    atomic_store(&g_xmisuse, 0);
    run_single(complete_success, &s);
    assert_int_equal(s.got, 42);
    assert_int_equal(s.cancelled, 0);
    assert_int_equal(atomic_load(&g_xmisuse), 0);
    end_single(&s);
}

static void test_error_from_thread(void** state)
{
    (void)state;
    Single s;
    run_single(complete_error, &s);
    assert_int_equal(strncmp(s.err, "MyError:iiii", 12), 0);
    assert_int_equal(strlen(s.err), sizeof(s.err) - 1);
    assert_int_equal(s.cancelled, 0); /* failed by itself: no cancel handler */
    end_single(&s);
}

static void test_cancel_from_thread(void** state)
{
    (void)state;
    Single s;
    run_single(complete_cancel, &s);
    assert_int_equal(s.cancelled, 1);
    assert_int_equal(s.done, 0);
    assert_int_equal(futoin_is_valid(s.root), 0);
    end_single(&s);
}

/* free() of a root from another thread: queued, cancels it on the loop. */
static void* free_root(void* arg)
{
    Single* s = arg;
    wait_published(s);
    futoin_asyncsteps_free(s->root);
    futoin_loop_immediate(s->loop, s->loop, release_loop);
    return NULL;
}

static void test_free_from_thread(void** state)
{
    (void)state;
    Single s;
    run_single(free_root, &s);
    assert_int_equal(s.cancelled, 1);
    futoin_loop_free(s.loop);
}

/* ---- races: success() vs timeout, success() vs cancel() ----
 *
 * Step A waits with a 1-6 ms timeout and a cancel handler; one thread calls
 * success() on it after a random 0-6 ms, another (optionally) cancels the
 * root after a random 0-6 ms, while the loop runs. Whatever the timing,
 * A ends exactly one way: the success() is applied (and not reported), or
 * the timeout hits (A's error handler sees Timeout; the late success() is
 * dropped and reported), or the cancel hits (A's cancel handler alone; the
 * success() is dropped and reported). The success value is cleaned up
 * exactly once in all cases. */

typedef struct {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    _Atomic(FutoInAsyncSteps*) waiting;
    uint32_t seed_a;
    uint32_t seed_b;
    /* loop thread */
    int eh_ran;
    int cancel_ran;
} Race;

static void race_cancel_handler(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((Race*)data)->cancel_ran++;
}

static void race_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Race* r = data;
    futoin_set_timeout(as, 1 + (r->seed_a >> 3) % 6);
    futoin_set_cancel(as, race_cancel_handler, r);
    atomic_store(&r->waiting, as);
}

static void race_next(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Race* r = data;
    if (!r->eh_ran) { /* else the handler recovered with no value */
        assert_int_equal(futoin_arg_type(args, 0), FTN_TYPE_CUSTOM_OBJECT);
    }
}

static void race_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Race* r = data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    r->eh_ran++;
    futoin_success(as);
}

static FutoInAsyncSteps* race_wait_published(Race* r)
{
    FutoInAsyncSteps* as;
    while ((as = atomic_load(&r->waiting)) == NULL) {
        sched_yield();
    }
    return as;
}

static void* race_completer(void* arg)
{
    Race* r = arg;
    FutoInAsyncSteps* as = race_wait_published(r);
    sleep_us(xrand(&r->seed_a) % 6000);
    futoin_success1(as, counted_val(1));
    futoin_loop_release(r->loop);
    return NULL;
}

static void* race_canceller(void* arg)
{
    Race* r = arg;
    race_wait_published(r);
    sleep_us(xrand(&r->seed_b) % 6000);
    futoin_cancel(r->root);
    futoin_loop_release(r->loop);
    return NULL;
}

static void run_races(int use_cancel, unsigned n)
{
    Race r;
    memset(&r, 0, sizeof(r));
    r.loop = futoin_loop_new();
    futoin_set_misuse_handler(r.loop, count_misuse, NULL);
    atomic_store(&g_xmisuse, 0);
    counted_reset();
    int applied = 0, timeouts = 0, cancels = 0;
    for (unsigned i = 0; i < n; ++i) {
        r.root = futoin_asyncsteps_new(r.loop);
        atomic_store(&r.waiting, NULL);
        r.seed_a = 2654435761u * (i + 1);
        r.seed_b = 40503u * (i + 7);
        r.eh_ran = r.cancel_ran = 0;
        futoin_add(r.root, race_wait, race_eh, &r);
        futoin_add(r.root, race_next, NULL, &r);
        long misuse_before = atomic_load(&g_xmisuse);
        futoin_execute(r.root, NULL, NULL);
        pthread_t a, b;
        /* Each thread releases its hold after its call: run() returns
         * only once both calls have been run by the loop thread. */
        futoin_loop_hold(r.loop);
        assert_int_equal(pthread_create(&a, NULL, race_completer, &r), 0);
        if (use_cancel) {
            futoin_loop_hold(r.loop);
            assert_int_equal(pthread_create(&b, NULL, race_canceller, &r), 0);
        }
        futoin_loop_run(r.loop);
        pthread_join(a, NULL);
        if (use_cancel) {
            pthread_join(b, NULL);
        }
        long dropped = atomic_load(&g_xmisuse) - misuse_before;
        assert_true(dropped == 0 || dropped == 1);
        /* A timeout calls the cancel handler too (before the error
         * handler): only a cancel handler without an error handler is a
         * cancel. */
        int by_success = dropped == 0;
        int by_timeout = r.eh_ran;
        int by_cancel = r.cancel_ran && !r.eh_ran;
        assert_true(r.eh_ran <= 1 && r.cancel_ran <= 1);
        assert_int_equal(by_success + by_timeout + by_cancel, 1);
        applied += by_success;
        timeouts += by_timeout;
        cancels += by_cancel;
        futoin_asyncsteps_free(r.root);
    }
    assert_int_equal(applied + timeouts + cancels, (int)n);
    /* Values of applied and dropped success() calls: cleaned exactly once. */
    assert_int_equal(atomic_load(&g_counted_made), (long)n);
    assert_counted_balanced();
    print_message("races (%s): %d success, %d timeout, %d cancel\n",
            use_cancel ? "vs timeout and cancel" : "vs timeout", applied, timeouts, cancels);
    futoin_loop_free(r.loop);
}

static void test_success_races_timeout(void** state)
{
    (void)state;
    run_races(0, (unsigned)scaled(300, 3000, 60));
}

static void test_success_races_cancel(void** state)
{
    (void)state;
    run_races(1, (unsigned)scaled(300, 3000, 60));
}

/* ---- a late message never completes a later step of the flow ---- */

typedef struct {
    FutoInLoop* loop;
    int b_completed;
    int b_timed_out;
} Epoch;

static void step_a(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 10);
}

static void step_a_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    /* As if another thread's success() for A had been made while A waited
     * and reached the loop only now: it is queued with A's epoch. */
    futoin__xflow_success(futoin__flow_of(as), NULL, 0);
    futoin_success(as); /* recover: B starts and waits */
}

static void step_b(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 10);
}

static void step_b_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Epoch* e = data;
    assert_string_equal(code, FUTOIN_TIMEOUT);
    e->b_timed_out = 1;
    futoin_success(as);
}

static void step_c(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Epoch* e = data;
    e->b_completed = !e->b_timed_out;
}

static void test_late_success_skips_later_step(void** state)
{
    (void)state;
    Epoch e = { futoin_loop_new_virtual(), 0, 0 };
    futoin_set_misuse_handler(e.loop, count_misuse, NULL);
    atomic_store(&g_xmisuse, 0);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(e.loop);
    futoin_add(root, step_a, step_a_eh, &e);
    futoin_add(root, step_b, step_b_eh, &e);
    futoin_add(root, step_c, NULL, &e);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(e.loop);
    assert_int_equal(e.b_timed_out, 1); /* B was not completed by A's message */
    assert_int_equal(e.b_completed, 0);
    assert_int_equal(atomic_load(&g_xmisuse), 1);
    futoin_asyncsteps_free(root);
    futoin_loop_free(e.loop);
}

/* ---- parallel branches complete from threads ---- */

typedef struct {
    FutoInLoop* loop;
    _Atomic(FutoInAsyncSteps*) branch[4];
    int sum;
} Par;

typedef struct {
    Par* p;
    int i;
} BranchArg;

static void branch_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    BranchArg* b = data;
    futoin_wait_external(as);
    atomic_store(&b->p->branch[b->i], as);
}

static void branch_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    BranchArg* b = data;
    b->p->sum += futoin_arg_i32(args, 0, 0);
}

static void branch_main(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, branch_wait, NULL, data);
    futoin_add(as, branch_got, NULL, data);
}

static void par_setup(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    static BranchArg ba[4];
    Par* p = data;
    FutoInAsyncSteps* par = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < 4; ++i) {
        ba[i] = (BranchArg){ p, i };
        futoin_add(par, branch_main, NULL, &ba[i]); /* one branch each */
    }
}

static void par_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    futoin_loop_release(((Par*)data)->loop);
}

static void* complete_branches(void* arg)
{
    Par* p = arg;
    for (int i = 3; i >= 0; --i) {
        FutoInAsyncSteps* b;
        while ((b = atomic_load(&p->branch[i])) == NULL) {
            sleep_us(100);
        }
        futoin_success1(b, futoin_val_i32(1 << i));
    }
    return NULL;
}

static void test_parallel_branches_from_thread(void** state)
{
    (void)state;
    Par p;
    memset(&p, 0, sizeof(p));
    p.loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(p.loop);
    futoin_add(root, par_setup, NULL, &p);
    futoin_add(root, par_done, NULL, &p);
    futoin_loop_hold(p.loop);
    futoin_execute(root, NULL, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, complete_branches, &p), 0);
    futoin_loop_run(p.loop);
    pthread_join(th, NULL);
    assert_int_equal(p.sum, 15);
    futoin_asyncsteps_free(root);
    futoin_loop_free(p.loop);
}

/* ---- stress: producers x completions, none lost or duplicated ---- */

#define PRODUCERS_X 4
#define LANES_PER_PRODUCER 32

typedef struct Lane {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    _Atomic(FutoInAsyncSteps*) ready; /* set by the waiting step */
    uint32_t quota;
    uint32_t sent;   /* producer */
    uint32_t expect; /* loop thread */
    uint32_t errors; /* loop thread */
} Lane;

typedef struct {
    Lane* lanes;
    unsigned nlanes;
    FutoInLoop* loop;
} LaneProducer;

static void lane_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Lane* l = data;
    futoin_wait_external(as);
    atomic_store_explicit(&l->ready, as, memory_order_release);
}

static void lane_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Lane* l = data;
    uint32_t seq = (uint32_t)futoin_arg_int(args, 0, -1);
    if (seq != l->expect) {
        ++l->errors;
    }
    l->expect = seq + 1;
    if (l->expect >= l->quota) {
        futoin_break(as, NULL);
    }
}

static void lane_body(FutoInAsyncSteps* as, void* data)
{
    futoin_add(as, lane_wait, NULL, data);
    futoin_add(as, lane_check, NULL, data);
}

static void lane_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, lane_body, data, NULL);
}

static void* lane_produce(void* arg)
{
    LaneProducer* p = arg;
    unsigned left = p->nlanes;
    while (left) {
        int progressed = 0;
        for (unsigned i = 0; i < p->nlanes; ++i) {
            Lane* l = &p->lanes[i];
            if (l->sent >= l->quota) {
                continue;
            }
            FutoInAsyncSteps* as = atomic_exchange_explicit(&l->ready, NULL, memory_order_acquire);
            if (!as) {
                continue;
            }
            futoin_success1(as, futoin_val_u32(l->sent++));
            progressed = 1;
            if (l->sent == l->quota) {
                --left;
            }
        }
        if (!progressed) {
            sched_yield();
        }
    }
    futoin_loop_release(p->loop);
    return NULL;
}

static void test_completion_stress(void** state)
{
    (void)state;
    unsigned long per_producer = scaled(100000, 1000000, 5000);
    FutoInLoop* loop = futoin_loop_new();
    Lane* lanes = calloc(PRODUCERS_X * LANES_PER_PRODUCER, sizeof(*lanes));
    assert_non_null(lanes);
    LaneProducer prod[PRODUCERS_X];
    pthread_t th[PRODUCERS_X];
    for (unsigned i = 0; i < PRODUCERS_X * LANES_PER_PRODUCER; ++i) {
        Lane* l = &lanes[i];
        l->loop = loop;
        l->quota = (uint32_t)(per_producer / LANES_PER_PRODUCER);
        l->root = futoin_asyncsteps_new(loop);
        futoin_add(l->root, lane_start, NULL, l);
        futoin_execute(l->root, NULL, NULL);
    }
    uint64_t t0 = now_ns();
    for (unsigned p = 0; p < PRODUCERS_X; ++p) {
        prod[p] = (LaneProducer){ &lanes[p * LANES_PER_PRODUCER], LANES_PER_PRODUCER, loop };
        futoin_loop_hold(loop);
        assert_int_equal(pthread_create(&th[p], NULL, lane_produce, &prod[p]), 0);
    }
    futoin_loop_run(loop);
    double secs = (double)(now_ns() - t0) / 1e9;
    unsigned long total = 0;
    for (unsigned p = 0; p < PRODUCERS_X; ++p) {
        pthread_join(th[p], NULL);
    }
    for (unsigned i = 0; i < PRODUCERS_X * LANES_PER_PRODUCER; ++i) {
        assert_int_equal(lanes[i].errors, 0);
        assert_int_equal(lanes[i].expect, lanes[i].quota);
        total += lanes[i].expect;
        futoin_asyncsteps_free(lanes[i].root);
    }
    print_message("%lu cross-thread completions from %d producers in %.2f s (%.0f/s)\n", total,
            PRODUCERS_X, secs, (double)total / secs);
    free(lanes);
    futoin_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_from_thread),
        cmocka_unit_test(test_error_from_thread),
        cmocka_unit_test(test_cancel_from_thread),
        cmocka_unit_test(test_free_from_thread),
        cmocka_unit_test(test_success_races_timeout),
        cmocka_unit_test(test_success_races_cancel),
        cmocka_unit_test(test_late_success_skips_later_step),
        cmocka_unit_test(test_parallel_branches_from_thread),
        cmocka_unit_test(test_completion_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
