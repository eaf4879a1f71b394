/* SPDX-License-Identifier: MIT */
/* One million loop timers with random timeouts (0..60000 ms), half of them
 * cancelled (before the loop runs, and from inside other timers while it
 * runs): every timer not cancelled must fire exactly once, in due order,
 * and no cancelled one may fire.
 *   stress_timers [count]   (default 1000000) */
#include "stress_common.h"

#include <futoin/asynctool.h>

typedef struct {
    FutoInLoop* loop;
    FutoInHandle* h;
    uint32_t* due;
    uint8_t* fired;
    uint8_t* cancelled;
    uint64_t last_now;
    size_t out_of_order;
    size_t early;
    size_t n;
} Ctx;

static Ctx g;

static void on_timer(void* data)
{
    size_t i = (size_t)(uintptr_t)data;
    uint64_t now = futoin_loop_now(g.loop);
    if (now < g.last_now) {
        ++g.out_of_order;
    }
    if (now < g.due[i]) {
        ++g.early;
    }
    g.last_now = now;
    ++g.fired[i];
    /* Every 7th timer cancels a random timer that was meant to be
     * cancelled late (odd index, not yet cancelled). */
    if (i % 7 == 0) {
        size_t j = (size_t)(stress_rand() % g.n) | 1;
        if (j < g.n && !g.cancelled[j] && !g.fired[j]) {
            futoin_loop_cancel(g.loop, &g.h[j]);
            g.cancelled[j] = 1;
        }
    }
}

int main(int argc, char** argv)
{
    size_t n = stress_count(argc, argv, 1000000);
    g.n = n;
    g.loop = futoin_loop_new_virtual();
    g.h = calloc(n, sizeof(*g.h));
    g.due = calloc(n, sizeof(*g.due));
    g.fired = calloc(n, 1);
    g.cancelled = calloc(n, 1);
    STRESS_CHECK(g.loop && g.h && g.due && g.fired && g.cancelled, "out of memory");
    for (size_t i = 0; i < n; ++i) {
        g.due[i] = (uint32_t)(stress_rand() % 60001);
        g.h[i] = futoin_loop_deferred(g.loop, g.due[i], (void*)(uintptr_t)i, on_timer);
        STRESS_CHECK(futoin_loop_is_valid(g.loop, &g.h[i]), "timer %zu not scheduled", i);
    }
    /* Half cancelled: the even indices now (cancel of a stale handle after
     * that must be harmless), some odd ones later from inside timers. */
    size_t cancelled_now = 0;
    for (size_t i = 0; i < n; i += 2) {
        futoin_loop_cancel(g.loop, &g.h[i]);
        futoin_loop_cancel(g.loop, &g.h[i]);
        g.cancelled[i] = 1;
        ++cancelled_now;
    }
    STRESS_CHECK(futoin_loop_pending(g.loop) == n - cancelled_now, "pending %zu",
            futoin_loop_pending(g.loop));
    long rss_armed = stress_peak_rss_kb();
    futoin_loop_run(g.loop);
    size_t fired = 0, bad = 0, cancelled = 0;
    for (size_t i = 0; i < n; ++i) {
        cancelled += g.cancelled[i];
        if (g.cancelled[i] ? g.fired[i] != 0 : g.fired[i] != 1) {
            ++bad;
        }
        fired += g.fired[i];
    }
    STRESS_CHECK(!bad && !g.out_of_order && !g.early && futoin_loop_pending(g.loop) == 0,
            "bad %zu, out of order %zu, early %zu", bad, g.out_of_order, g.early);
    STRESS_CHECK(cancelled >= n / 2, "cancelled %zu", cancelled);
    futoin_loop_free(g.loop);
    printf("stress_timers: %zu timers, %zu cancelled, %zu fired exactly once in due order; "
           "peak RSS %ld KiB (%ld KiB when armed)\n",
            n, cancelled, fired, stress_peak_rss_kb(), rss_armed);
    free(g.h);
    free(g.due);
    free(g.fired);
    free(g.cancelled);
    return 0;
}
