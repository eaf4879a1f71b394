/* SPDX-License-Identifier: MIT */
/* Loops on threads of their own (start, stop: drain or now, join) and the
 * loop pool with least-loaded placement (include/futoin/threads.h). */
#include "threads_support.h"

#ifdef _WIN32
#include <windows.h>
#endif

/* ---- start / stop(DRAIN) / join ---- */

typedef struct {
    atomic_int started;
    atomic_int stopped;
    atomic_int steps;
    atomic_int on_thread; /* every callback saw is_same_thread() == 1 */
    atomic_int cancelled;
    FutoInAsyncSteps* root; /* loop thread */
} Life;

static void life_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Life* l = data;
    atomic_fetch_add(&l->steps, 1);
    if (!as->api->is_same_thread(as)) {
        atomic_store(&l->on_thread, 0);
    }
    if (atomic_load(&l->steps) < 3) {
        futoin_add(as, life_step, NULL, l);
        futoin_set_timeout(as, 100);
    }
}

static void life_start(FutoInLoop* loop, void* data)
{
    Life* l = data;
    atomic_store(&l->started, 1);
    if (!futoin_loop_is_same_thread(loop)) {
        atomic_store(&l->on_thread, 0);
    }
    l->root = futoin_asyncsteps_new(loop);
    futoin_add(l->root, life_step, NULL, l);
    futoin_execute(l->root, NULL, NULL);
}

static void life_stop(FutoInLoop* loop, void* data)
{
    (void)loop;
    Life* l = data;
    atomic_store(&l->stopped, 1);
    futoin_asyncsteps_free(l->root); /* roots are freed by on_stop */
}

static void test_thread_drain(void** state)
{
    (void)state;
    Life l;
    memset(&l, 0, sizeof(l));
    atomic_store(&l.on_thread, 1);
    FutoInLoopThreadHooks hooks = { life_start, life_stop, &l };
    FutoInLoopThread* t = futoin_loop_thread_start(&hooks);
    assert_non_null(t);
    FutoInLoop* loop = futoin_loop_thread_loop(t);
    assert_int_equal(futoin_loop_is_same_thread(loop), 0);
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_DRAIN);
    futoin_loop_thread_join(t);
    /* Drained: the root ran to the end before the loop stopped. */
    assert_int_equal(atomic_load(&l.steps), 3);
    assert_int_equal(atomic_load(&l.started), 1);
    assert_int_equal(atomic_load(&l.stopped), 1);
    assert_int_equal(atomic_load(&l.on_thread), 1);
}

/* ---- stop(NOW) with a root waiting forever: handed to on_stop ---- */

static void forever_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    atomic_fetch_add(&((Life*)data)->cancelled, 1);
}

static void forever_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Life* l = data;
    atomic_fetch_add(&l->steps, 1);
    futoin_set_cancel(as, forever_cancel, l);
    futoin_set_timeout(as, 3600 * 1000); /* a timer: DRAIN would wait an hour */
}

static void forever_start(FutoInLoop* loop, void* data)
{
    Life* l = data;
    l->root = futoin_asyncsteps_new(loop);
    futoin_add(l->root, forever_step, NULL, l);
    futoin_execute(l->root, NULL, NULL);
}

static void test_thread_stop_now(void** state)
{
    (void)state;
    Life l;
    memset(&l, 0, sizeof(l));
    FutoInLoopThreadHooks hooks = { forever_start, life_stop, &l };
    FutoInLoopThread* t = futoin_loop_thread_start(&hooks);
    assert_non_null(t);
    while (atomic_load(&l.steps) == 0) {
        sleep_us(200);
    }
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_NOW);
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_NOW); /* repeated: harmless */
    futoin_loop_thread_join(t);
    assert_int_equal(atomic_load(&l.cancelled), 1); /* by on_stop's free */
    assert_int_equal(atomic_load(&l.stopped), 1);
}

/* NOW after DRAIN: the drain would wait for the hour-long timer. */
static void test_thread_drain_then_now(void** state)
{
    (void)state;
    Life l;
    memset(&l, 0, sizeof(l));
    FutoInLoopThreadHooks hooks = { forever_start, life_stop, &l };
    FutoInLoopThread* t = futoin_loop_thread_start(&hooks);
    assert_non_null(t);
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_DRAIN);
    sleep_us(5000);
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_NOW);
    futoin_loop_thread_join(t);
    assert_int_equal(atomic_load(&l.cancelled), 1);
}

/* A loop thread can stop itself from one of its callbacks. */
static void stop_self(void* data)
{
    futoin_loop_thread_stop(data, FUTOIN_LOOP_STOP_NOW);
}

static void test_thread_stops_itself(void** state)
{
    (void)state;
    FutoInLoopThread* t = futoin_loop_thread_start(NULL);
    assert_non_null(t);
    futoin_loop_deferred(futoin_loop_thread_loop(t), 5, t, stop_self);
    futoin_loop_thread_join(t);
}

/* ---- start/stop cycles: nothing leaks (checked by ASan/valgrind) ---- */

static void noop(void* data)
{
    (void)data;
}

static void test_thread_start_stop_cycles(void** state)
{
    (void)state;
    unsigned long n = scaled(1000, 10000, 100);
    /* Leaked descriptors (the loops' wake-up fds) would take the lowest
     * free numbers: the next free one must be the same afterwards. */
    int fd_before = dup(0);
    close(fd_before);
    for (unsigned long i = 0; i < n; ++i) {
        FutoInLoopThread* t = futoin_loop_thread_start(NULL);
        assert_non_null(t);
        /* Some work queued from here, some stops racing with it. */
        futoin_loop_immediate(futoin_loop_thread_loop(t), NULL, noop);
        futoin_loop_thread_stop(t, (i & 1) ? FUTOIN_LOOP_STOP_NOW : FUTOIN_LOOP_STOP_DRAIN);
        futoin_loop_thread_join(t);
    }
    int fd_after = dup(0);
    close(fd_after);
    assert_int_equal(fd_after, fd_before);
}

/* ---- pool: least-loaded placement ---- */

typedef struct {
    atomic_int loop_index_seen[8];
    atomic_int done_ok;
    atomic_int done_cancelled;
    atomic_int released;
    Gate gate;
    FutoInLoopPool* pool;
} PoolCtx;

static void pool_done(void* data, const char* code)
{
    PoolCtx* c = data;
    if (!code) {
        atomic_fetch_add(&c->done_ok, 1);
    } else if (strcmp(code, FUTOIN_POOL_CANCELLED) == 0) {
        atomic_fetch_add(&c->done_cancelled, 1);
    }
}

/* Completes every parked root of loop i from this (foreign) thread: the
 * roots publish themselves through the per-loop list below. */
typedef struct {
    FutoInAsyncSteps* as[64];
    atomic_int n;
} Parking;

static Parking g_parking[8];

static void parked_publish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    PoolCtx* c = data;
    FutoInLoop* loop = futoin_asyncsteps_loop(as);
    unsigned li = 0;
    for (unsigned i = 0; i < futoin_loop_pool_size(c->pool); ++i) {
        if (futoin_loop_pool_loop(c->pool, i) == loop) {
            li = i;
            atomic_fetch_add(&c->loop_index_seen[i], 1);
        }
    }
    futoin_wait_external(as);
    futoin_loop_hold(loop); /* released after the success below */
    int k = atomic_load(&g_parking[li].n);
    g_parking[li].as[k] = as;
    atomic_store(&g_parking[li].n, k + 1); /* single writer: the loop thread */
}

static void parked_setup(FutoInAsyncSteps* root, void* data)
{
    futoin_add(root, parked_publish, NULL, data);
}

static void test_pool_least_loaded(void** state)
{
    (void)state;
    PoolCtx c;
    memset(&c, 0, sizeof(c));
    memset(g_parking, 0, sizeof(g_parking));
    c.pool = futoin_loop_pool_new(2);
    assert_non_null(c.pool);
    assert_int_equal(futoin_loop_pool_size(c.pool), 2);
    /* 8 roots that stay parked: placement must alternate, 4 and 4. */
    int placed[2] = { 0, 0 };
    for (int i = 0; i < 8; ++i) {
        int li = futoin_loop_pool_spawn(c.pool, parked_setup, pool_done, &c);
        assert_true(li == 0 || li == 1);
        ++placed[li];
    }
    assert_int_equal(placed[0], 4);
    assert_int_equal(placed[1], 4);
    assert_int_equal(futoin_loop_pool_load(c.pool, 0), 4);
    assert_int_equal(futoin_loop_pool_load(c.pool, 1), 4);
    while (atomic_load(&g_parking[0].n) + atomic_load(&g_parking[1].n) < 8) {
        sleep_us(200);
    }
    assert_int_equal(atomic_load(&c.loop_index_seen[0]), 4);
    assert_int_equal(atomic_load(&c.loop_index_seen[1]), 4);
    /* Loop 0 gets its roots completed: its load drops, the next spawns
     * go there. */
    for (int k = 0; k < 4; ++k) {
        FutoInAsyncSteps* as = g_parking[0].as[k];
        futoin_success(as);
        futoin_loop_release(futoin_loop_pool_loop(c.pool, 0));
    }
    while (futoin_loop_pool_load(c.pool, 0) != 0) {
        sleep_us(200);
    }
    assert_int_equal(atomic_load(&c.done_ok), 4);
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(futoin_loop_pool_spawn(c.pool, parked_setup, pool_done, &c), 0);
    }
    while (atomic_load(&g_parking[0].n) < 7) {
        sleep_us(200);
    }
    /* Stop NOW: the 7 parked roots are cancelled and told so. Their holds
     * are released by this test after the stop. */
    futoin_loop_pool_stop(c.pool, FUTOIN_LOOP_STOP_NOW);
    assert_int_equal(futoin_loop_pool_spawn(c.pool, parked_setup, pool_done, &c), -1);
    for (int k = 4; k < 7; ++k) {
        futoin_loop_release(futoin_loop_pool_loop(c.pool, 0));
    }
    for (int k = 0; k < 4; ++k) {
        futoin_loop_release(futoin_loop_pool_loop(c.pool, 1));
    }
    futoin_loop_pool_free(c.pool);
    assert_int_equal(atomic_load(&c.done_ok), 4);
    assert_int_equal(atomic_load(&c.done_cancelled), 7);
}

/* Default size: one loop per online CPU. Spawning from inside a pool
 * root places the new root too (same-thread schedule). */
typedef struct {
    FutoInLoopPool* pool;
    atomic_int children;
    atomic_int parents;
} Nest;

static void child_setup(FutoInAsyncSteps* root, void* data);

static void child_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    atomic_fetch_add(&((Nest*)data)->children, 1);
}

static void child_setup(FutoInAsyncSteps* root, void* data)
{
    futoin_add(root, child_step, NULL, data);
}

static void parent_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    Nest* n = data;
    assert_true(futoin_loop_pool_spawn(n->pool, child_setup, NULL, n) >= 0);
    atomic_fetch_add(&n->parents, 1);
}

static void parent_setup(FutoInAsyncSteps* root, void* data)
{
    futoin_add(root, parent_step, NULL, data);
}

static void test_pool_default_size_and_nested_spawn(void** state)
{
    (void)state;
    Nest n;
    memset(&n, 0, sizeof(n));
    n.pool = futoin_loop_pool_new(0);
    assert_non_null(n.pool);
#ifdef _WIN32
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    long cpus = (long)info.dwNumberOfProcessors;
#else
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    assert_int_equal(futoin_loop_pool_size(n.pool), (unsigned)(cpus > 0 ? cpus : 1));
    for (int i = 0; i < 20; ++i) {
        assert_true(futoin_loop_pool_spawn(n.pool, parent_setup, NULL, &n) >= 0);
    }
    while (atomic_load(&n.children) < 20) {
        sleep_us(200);
    }
    futoin_loop_pool_free(n.pool); /* DRAIN */
    assert_int_equal(atomic_load(&n.parents), 20);
    assert_int_equal(atomic_load(&n.children), 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_drain),
        cmocka_unit_test(test_thread_stop_now),
        cmocka_unit_test(test_thread_drain_then_now),
        cmocka_unit_test(test_thread_stops_itself),
        cmocka_unit_test(test_thread_start_stop_cycles),
        cmocka_unit_test(test_pool_least_loaded),
        cmocka_unit_test(test_pool_default_size_and_nested_spawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
