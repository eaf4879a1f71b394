/* SPDX-License-Identifier: MIT */
/* The libuv backend driving the AsyncTool loop through the core's
 * embedding API (futoin_loop_set_wakeup(), tested by itself in
 * tests/test_loop_embed.c): one libuv timer for any number of step timers,
 * keep-alive semantics of uv_run(), and embedding in a loop owned by the
 * program. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

/* ---- backend ---- */

static void step_sleep_n(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, (uint32_t)(uintptr_t)data);
}

static void test_backend_accessors(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_uv_loop(g_uv);
    assert_non_null(loop);
    assert_ptr_equal(futoin_uv_of_loop(loop), g_uv);
    assert_non_null(futoin_uv_uv_loop(g_uv));
    FutoInLoop* plain = futoin_loop_new();
    assert_null(futoin_uv_of_loop(plain));
    assert_null(futoin_uv_of_loop(NULL));
    futoin_loop_free(plain);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    assert_ptr_equal(futoin_uv_of(root), g_uv);
    futoin_asyncsteps_free(root);
}

/* Many steps with their own timeouts and sleeps: the backend still uses
 * exactly its own three libuv handles. Checked from the inside: one more
 * branch walks the libuv loop while the others wait. */
typedef struct Walk {
    int handles;
    size_t pending;
} Walk;

static Walk g_walk;
static int g_finished;

static void walk_cb(uv_handle_t* h, void* arg)
{
    (void)h;
    ++((Walk*)arg)->handles;
}

static void sleeper(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    uintptr_t i = (uintptr_t)data;
    /* Each branch: a timeout far away and a sleep of 20..59 ms, scaled:
     * starting the 1000 branches must take less than the shortest sleep,
     * so that the walk finds them pending. */
    futoin_set_timeout(as, futoin_test_ms(10000));
    futoin_uv_sleep(as, futoin_test_ms((uint32_t)(20 + i % 40)));
}

static void sleeper_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    ++g_finished;
}

static void walker(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInUv* uv = futoin_uv_of(as);
    g_walk.pending = futoin_loop_pending(futoin_uv_loop(uv));
    uv_walk(futoin_uv_uv_loop(uv), walk_cb, &g_walk);
}

static void spawn_sleepers(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (uintptr_t i = 0; i < 1000; ++i) {
        p->api->add(p, (void*)i, sleeper, NULL);
        p->api->add(p, NULL, sleeper_done, NULL);
    }
    p->api->add(p, (void*)(uintptr_t)5, step_sleep_n, NULL);
    p->api->add(p, NULL, walker, NULL);
}

static void test_one_uv_timer_for_many(void** state)
{
    (void)state;
    g_finished = 0;
    memset(&g_walk, 0, sizeof(g_walk));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, spawn_sleepers, NULL, NULL);
    uint64_t t0 = mono_ms();
    Outcome o;
    run_root(root, &o, 10000);
    uint64_t dt = mono_ms() - t0;
    assert_string_equal(o.code, "");
    assert_int_equal(g_finished, 1000);
    assert_true(dt >= 59);
    /* Hundreds of AsyncTool timers were pending at the walk... */
    assert_true(g_walk.pending > 100);
    /* ...and libuv had our timer, idle, check and cross-thread async
     * handle, plus run_until's guard. */
    assert_int_equal(g_walk.handles, 4 + 1);
    futoin_asyncsteps_free(root);
}

/* uv_run() returns by itself when the AsyncTool has nothing left. */
static void step_sleep10(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_uv_sleep(as, 10);
}

static void test_run_returns_when_idle(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_sleep10, NULL, NULL);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_add(root, outcome_ok, NULL, &o);
    futoin_execute(root, outcome_error, &o);
    futoin_uv_run(g_uv);
    assert_int_equal(o.done, 1);
    assert_string_equal(o.code, "");
    /* Nothing pending: returns at once. */
    uint64_t t0 = mono_ms();
    futoin_uv_run(g_uv);
    assert_true(mono_ms() - t0 < futoin_test_ms(100));
    futoin_asyncsteps_free(root);
}

/* Roots freed from a libuv callback while their step timers are pending:
 * the backend's uv timer must not keep uv_run() alive until those (now
 * cancelled) timers would have fired. */
static FutoInAsyncSteps* g_waiters[8];

static void long_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    /* Scaled like the test's limit on run(), which must stay below it. */
    futoin_set_timeout(as, futoin_test_ms(5000));
    futoin_uv_sleep(as, 100000);
}

static void free_waiters(uv_timer_t* t)
{
    for (int i = 0; i < 8; ++i) {
        futoin_asyncsteps_free(g_waiters[i]);
        g_waiters[i] = NULL;
    }
    uv_close((uv_handle_t*)t, NULL);
}

static void test_run_returns_after_free(void** state)
{
    (void)state;
    for (int i = 0; i < 8; ++i) {
        g_waiters[i] = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
        futoin_add(g_waiters[i], long_wait, NULL, NULL);
        futoin_execute(g_waiters[i], NULL, NULL);
    }
    uv_timer_t t;
    uv_timer_init(futoin_uv_uv_loop(g_uv), &t);
    /* libuv's cached time may be old (from the previous test's run). */
    uv_update_time(futoin_uv_uv_loop(g_uv));
    uv_timer_start(&t, free_waiters, 30, 0);
    uint64_t t0 = mono_ms();
    futoin_uv_run(g_uv);
    uint64_t dt = mono_ms() - t0;
    assert_true(dt >= 30);
    assert_true(dt < futoin_test_ms(1000));
    assert_int_equal(futoin_loop_pending(futoin_uv_loop(g_uv)), 0);
}

/* Embedding: the program owns the uv loop and has its own handles. */
static int g_user_timer_fired;

static void user_timer_cb(uv_timer_t* t)
{
    (void)t;
    ++g_user_timer_fired;
}

static void test_embedded_in_user_loop(void** state)
{
    (void)state;
    uv_loop_t mine;
    assert_int_equal(uv_loop_init(&mine), 0);
    uv_timer_t t;
    uv_timer_init(&mine, &t);
    uv_timer_start(&t, user_timer_cb, 30, 0);
    g_user_timer_fired = 0;

    FutoInUv* uv = futoin_uv_new(&mine);
    assert_non_null(uv);
    assert_ptr_equal(futoin_uv_uv_loop(uv), &mine);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    futoin_add(root, step_sleep10, NULL, NULL);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_add(root, outcome_ok, NULL, &o);
    futoin_execute(root, outcome_error, &o);
    uv_run(&mine, UV_RUN_DEFAULT);
    assert_int_equal(o.done, 1);
    assert_int_equal(g_user_timer_fired, 1);

    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    uv_close((uv_handle_t*)&t, NULL);
    /* The backend's handles close in this run, which frees its memory. */
    uv_run(&mine, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&mine), 0);
}

/* A foreign libuv callback completes a waiting step: the step resumes in
 * the same libuv iteration (no extra poll round trip). */
typedef struct Ext {
    FutoInAsyncSteps* waiting;
    uv_timer_t timer;
    int resumed;
} Ext;

static void ext_fire(uv_timer_t* t)
{
    Ext* e = t->data;
    FutoInAsyncSteps* as = e->waiting;
    e->waiting = NULL;
    futoin_success1(as, futoin_val_i32(42));
}

static void ext_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Ext* e = data;
    e->waiting = as;
    futoin_wait_external(as);
    uv_timer_start(&e->timer, ext_fire, 5, 0);
}

static void ext_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Ext* e = data;
    assert_int_equal(futoin_arg_i32(args, 0, 0), 42);
    e->resumed = 1;
}

static void test_external_completion(void** state)
{
    (void)state;
    Ext e;
    memset(&e, 0, sizeof(e));
    uv_timer_init(futoin_uv_uv_loop(g_uv), &e.timer);
    e.timer.data = &e;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, ext_wait, NULL, &e);
    futoin_add(root, ext_after, NULL, &e);
    Outcome o;
    run_root(root, &o, 2000);
    assert_int_equal(e.resumed, 1);
    uv_close((uv_handle_t*)&e.timer, NULL);
    uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_NOWAIT);
    futoin_asyncsteps_free(root);
}

/* The engine's burst limit yields to libuv between rounds: a long CPU-only
 * flow does not starve libuv timers. */
static int g_ticks;
static int g_spins;
/* Far more iterations than 3 ms of spinning at any speed: the loop must
 * end because the ticks arrived, never because it ran out. */
#define SPIN_LIMIT 50000000

static void spin_iter(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    if (++g_spins >= SPIN_LIMIT || g_ticks >= 3) {
        futoin_break(as, NULL);
    }
}

static void spin(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add_loop(as, spin_iter, NULL, NULL);
}

static void tick_cb(uv_timer_t* t)
{
    (void)t;
    ++g_ticks;
}

static void test_burst_yields_to_libuv(void** state)
{
    (void)state;
    g_ticks = 0;
    g_spins = 0;
    uv_timer_t tick;
    uv_timer_init(futoin_uv_uv_loop(g_uv), &tick);
    uv_timer_start(&tick, tick_cb, 1, 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, spin, NULL, NULL);
    Outcome o;
    run_root(root, &o, 10000);
    uv_close((uv_handle_t*)&tick, NULL);
    uv_run(futoin_uv_uv_loop(g_uv), UV_RUN_NOWAIT);
    /* The loop ended because libuv's timer got to run in between. */
    assert_true(g_ticks >= 3);
    assert_true(g_spins < SPIN_LIMIT);
    futoin_asyncsteps_free(root);
}

/* Another thread resumes a waiting step through futoin_loop_immediate():
 * libuv sleeps in its poll and is woken through the AsyncTool's wake-up
 * callback (uv_async_send()); the
 * hold keeps uv_run() alive meanwhile, with no libuv handle of the user's. */
typedef struct XThread {
    FutoInAsyncSteps* waiting;
    FutoInLoop* loop;
    pthread_t th;
    int resumed_on_loop_thread;
} XThread;

static void x_resume(void* data)
{
    XThread* x = data;
    x->resumed_on_loop_thread = futoin_loop_is_same_thread(x->loop);
    futoin_success(x->waiting);
    futoin_loop_release(x->loop);
}

static void* x_thread(void* arg)
{
    XThread* x = arg;
    sleep_ms(30);
    futoin_loop_immediate(x->loop, x, x_resume);
    return NULL;
}

static void x_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    XThread* x = data;
    x->waiting = as;
    futoin_loop_hold(x->loop);
    futoin_wait_external(as);
    pthread_create(&x->th, NULL, x_thread, x);
}

static void test_cross_thread_wakeup(void** state)
{
    (void)state;
    XThread x;
    memset(&x, 0, sizeof(x));
    x.loop = futoin_uv_loop(g_uv);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(x.loop);
    futoin_add(root, x_wait, NULL, &x);
    Outcome o;
    memset(&o, 0, sizeof(o));
    futoin_add(root, outcome_ok, NULL, &o);
    futoin_execute(root, outcome_error, &o);
    uint64_t t0 = mono_ms();
    futoin_uv_run(g_uv);
    uint64_t dt = mono_ms() - t0;
    pthread_join(x.th, NULL);
    assert_int_equal(o.done, 1);
    assert_string_equal(o.code, "");
    assert_int_equal(x.resumed_on_loop_thread, 1);
    assert_true(dt >= 30);
    assert_true(dt < futoin_test_ms(2000));
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_backend_accessors),
        UV_TEST(test_one_uv_timer_for_many),
        UV_TEST(test_run_returns_when_idle),
        UV_TEST(test_run_returns_after_free),
        cmocka_unit_test(test_embedded_in_user_loop),
        UV_TEST(test_external_completion),
        UV_TEST(test_burst_yields_to_libuv),
        UV_TEST(test_cross_thread_wakeup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
