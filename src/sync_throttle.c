/*
 * Throttle (spec 1.11.2, 2.4) and the rate stage it shares with the
 * Limiter: at most rate_max admissions per fixed window of period_ms on the
 * loop's clock (the exact rules are in include/futoin/sync.h).
 *
 * Windows are evaluated lazily: an admission that finds the last window
 * over opens a new one at its own time, so an idle throttle has no timer.
 * A timer exists only while flows wait; it fires at the window's end, opens
 * the next window at that end time and admits the head of the queue.
 */
#include "sync_internal.h"

static void window_end(void* data);

static uint64_t window_end_time(const SyncCore* c)
{
    return c->win_start + c->period_ms;
}

static void arm_timer(SyncCore* c)
{
    if (futoin_loop_is_valid(c->loop, &c->win_timer)) {
        return;
    }
    uint64_t now = futoin_loop_now(c->loop);
    uint64_t end = window_end_time(c);
    uint64_t delay = end > now ? end - now : 0;
    c->win_timer = futoin_loop_deferred(c->loop, (uint32_t)delay, c, window_end);
}

void futoin__sync_rate_cancel_timer(SyncCore* c)
{
    if (c->loop) {
        futoin_loop_cancel(c->loop, &c->win_timer);
    }
}

SyncVerdict futoin__sync_rate_admit(SyncCore* c, SyncNode* n)
{
    /* With flows queued the window is full (or just ending and the timer
     * has not run yet on a late real clock): newcomers go behind them. */
    if (!c->rate_q.len) {
        uint64_t now = futoin_loop_now(c->loop);
        if (!c->win_open || now >= window_end_time(c)) {
            c->win_open = 1;
            c->win_start = now;
            c->rate_used = 0;
        }
        if (c->rate_used < c->rate_max) {
            ++c->rate_used;
            return SYNC_ENTER;
        }
    }
    if (c->rate_q.len < c->rate_qmax) {
        futoin__sync_enqueue(&c->rate_q, n);
        n->state = SN_Q_RATE;
        arm_timer(c);
        return SYNC_WAIT;
    }
    return SYNC_REJECT_RATE;
}

/* The window ended with flows queued: open the next one and admit. */
static void window_end(void* data)
{
    SyncCore* c = data;
    uint64_t now = futoin_loop_now(c->loop);
    uint64_t start = window_end_time(c);
    if (now < start) {
        arm_timer(c); /* fired early: not expected, but keep the rule exact */
        return;
    }
    if (now - start >= c->period_ms) {
        /* The loop was blocked for more than a whole window: start afresh
         * rather than admitting for windows that are long gone. */
        start = now;
    }
    c->win_start = start;
    c->win_open = 1;
    c->rate_used = 0;
    SyncNode* n;
    while (c->rate_used < c->rate_max && (n = futoin__sync_dequeue(&c->rate_q)) != NULL) {
        ++c->rate_used;
        futoin__sync_wake(n);
    }
    if (c->rate_q.len) {
        arm_timer(c);
    }
}

uint32_t futoin__sync_rate_window_entries(const SyncCore* c)
{
    if (!c->rate_max || !c->win_open || futoin_loop_now(c->loop) >= window_end_time(c)) {
        return 0;
    }
    return c->rate_used;
}

FutoInSync* futoin_throttle_new(
        FutoInLoop* loop, uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    if (!loop || !max || !period_ms) {
        return NULL;
    }
    SyncCore* c = futoin__sync_core_new(loop);
    if (!c) {
        return NULL;
    }
    c->rate_max = max;
    c->period_ms = period_ms;
    c->rate_qmax = max_queue;
    c->reject_conc = "";
    c->reject_rate = "Throttle: queue is full";
    return &c->base;
}
