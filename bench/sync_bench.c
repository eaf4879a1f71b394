/* SPDX-License-Identifier: MIT */
/*
 * Mutex / Throttle / Limiter workloads of futoin_bench. "contended": 10
 * roots run sync steps on the same object at once.
 */
#include "bench.h"

#include <futoin/asyncsteps.h>
#include <futoin/sync.h>

#include <stdlib.h>

/* Rates high enough that the uncontended rows never wait for a window. */
#define BIG_RATE 1000000000u

static FutoInSync* mutex_new(FutoInLoop* loop)
{
    return futoin_mutex_new(loop, 1, FUTOIN_SYNC_UNLIMITED);
}

static FutoInSync* throttle_new(FutoInLoop* loop, uint32_t max, uint32_t period_ms)
{
    return futoin_throttle_new(loop, max, period_ms, FUTOIN_SYNC_UNLIMITED);
}

static FutoInSync* limiter_new(FutoInLoop* loop, uint32_t concurrent)
{
    FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
    o.concurrent = concurrent;
    o.max_queue = FUTOIN_SYNC_UNLIMITED;
    o.rate = BIG_RATE;
    o.period_ms = 1000;
    o.burst = FUTOIN_SYNC_UNLIMITED;
    return futoin_limiter_new(loop, &o);
}

#define CONTENDERS 10

static FutoInLoop* L;
static FutoInAsyncSteps* roots[CONTENDERS];
static FutoInSync* S;
static uint64_t cnt;

static void st_noop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++*(uint64_t*)data;
}

static void setup_roots(void)
{
    L = futoin_loop_new();
    for (int i = 0; i < CONTENDERS; ++i) {
        roots[i] = futoin_asyncsteps_new(L);
    }
}

static void setup_mutex(void)
{
    setup_roots();
    S = mutex_new(L);
}

/* Never limits: 10 concurrent flows pass without waiting. */
static void setup_throttle(void)
{
    setup_roots();
    S = throttle_new(L, BIG_RATE, 1000);
}

/* Limits: 100 entries per 1 ms window, so flows wait for windows (CPU time
 * is reported, the loop sleeps in between). */
static void setup_throttle_limited(void)
{
    setup_roots();
    S = throttle_new(L, 100, 1);
}

static void setup_limiter(void)
{
    setup_roots();
    S = limiter_new(L, FUTOIN_SYNC_UNLIMITED);
}

/* One concurrent slot: flows queue like on a Mutex(1). */
static void setup_limiter1(void)
{
    setup_roots();
    S = limiter_new(L, 1);
}

static void teardown_sync(void)
{
    for (int i = 0; i < CONTENDERS; ++i) {
        futoin_asyncsteps_free(roots[i]);
    }
    bench_check(futoin_sync_free(S) == FUTOIN_SYNC_OK, "sync: object still busy");
    futoin_loop_free(L);
}

/* n chains of 100 sync steps on nroots roots running at once. */
static uint64_t run_sync(uint64_t n, int nroots)
{
    uint64_t before = cnt;
    for (uint64_t c = 0; c < n; ++c) {
        for (int r = 0; r < nroots; ++r) {
            for (int k = 0; k < 100 / nroots; ++k) {
                futoin_add_sync(roots[r], S, st_noop, NULL, &cnt);
            }
            futoin_execute(roots[r], NULL, NULL);
        }
        futoin_loop_run(L);
    }
    uint64_t ops = n * (uint64_t)nroots * (uint64_t)(100 / nroots);
    bench_check(cnt - before == ops, "sync: critical section count");
    return ops;
}

static uint64_t run_uncontended(uint64_t n)
{
    return run_sync(n, 1);
}
static uint64_t run_contended(uint64_t n)
{
    return run_sync(n, CONTENDERS);
}

static const BenchWorkload g_sync[] = {
    { "mutex_uncont", "step", setup_mutex, run_uncontended, teardown_sync, 10000, 1000, 6.0, 1,
            "<=6F, 0 malloc", 0 },
    { "mutex_cont10", "step", setup_mutex, run_contended, teardown_sync, 10000, 1000, 10.0, 1,
            "<=10F, 0 malloc", 0 },
    { "throttle_uncont", "step", setup_throttle, run_uncontended, teardown_sync, 10000, 1000, 0, 1,
            "0 malloc", 0 },
    { "throttle_10flows", "step", setup_throttle, run_contended, teardown_sync, 10000, 1000, 0, 1,
            "0 malloc", 0 },
    /* Warm-up of 20 units: at least two even at --quick's scale, since one
     * unit (100 steps) fits in a single window and never arms the loop's
     * first timer. */
    { "throttle_wait", "step", setup_throttle_limited, run_contended, teardown_sync, 100, 20, 0, 1,
            "0 malloc, CPU ns", 1 },
    { "limiter_uncont", "step", setup_limiter, run_uncontended, teardown_sync, 10000, 1000, 0, 1,
            "0 malloc", 0 },
    { "limiter_cont10", "step", setup_limiter1, run_contended, teardown_sync, 10000, 1000, 0, 1,
            "0 malloc", 0 },
};

const BenchWorkload* bench_sync_workloads(unsigned* count)
{
    *count = sizeof(g_sync) / sizeof(g_sync[0]);
    return g_sync;
}
