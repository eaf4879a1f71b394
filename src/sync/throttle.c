/* SPDX-License-Identifier: MIT */
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
#include "sync/sync_impl.h"

#include "common/slab_pool.h"

#include <futoin/asyncsteps.h>

static void window_end(void* data);
static void shared_window_end(void* data, uintptr_t seq);

static uint64_t window_end_time(const SyncCore* c)
{
    return c->win_start + c->period_ms;
}

static uint32_t delay_to_window_end(const SyncCore* c)
{
    uint64_t now = futoin__sync_now(c);
    uint64_t end = window_end_time(c);
    return (uint32_t)(end > now ? end - now : 0);
}

/* Shared object (mtx held): the timer goes on the loop of the flow at the
 * head of the queue, which stays alive while that flow waits, and gets a
 * cross-thread handle so any waiter's thread can cancel it exactly. */
static void shared_arm_timer(SyncCore* c)
{
    if (c->timer_armed || !c->rate_q.l.head) {
        return;
    }
    FutoInLoop* loop = futoin_asyncsteps_loop(futoin__sync_queue_first(&c->rate_q)->as);
    uint32_t seq = ++c->timer_seq;
    c->win_timer = futoin__loop_deferred_aux_x(loop, delay_to_window_end(c), c, seq,
            shared_window_end);
    if (!c->win_timer.data1) {
        /* Without it the queued flows are never admitted, and the flow
         * whose lock() queued it may not be the one running. */
        futoin__out_of_memory("a throttle's window timer");
    }
    c->timer_loop = loop;
    c->timer_armed = 1;
}

static void shared_cancel_timer(SyncCore* c)
{
    if (!c->timer_armed) {
        return;
    }
    c->timer_armed = 0;
    ++c->timer_seq;
    if (futoin_loop_try_cancel(c->timer_loop, &c->win_timer) != 1) {
        /* It is firing on its loop and waits for mtx: it will find the
         * sequence changed and only count itself out. */
        ++c->timer_inflight;
    }
}

static void arm_timer(SyncCore* c)
{
    if (c->mtx) {
        shared_arm_timer(c);
        return;
    }
    if (futoin_loop_is_valid(c->loop, &c->win_timer)) {
        return;
    }
    c->win_timer = futoin_loop_deferred(c->loop, delay_to_window_end(c), c, window_end);
    if (!c->win_timer.data1) {
        futoin__out_of_memory("a throttle's window timer");
    }
}

void futoin__sync_rate_arm_timer(SyncCore* c)
{
    arm_timer(c);
}

void futoin__sync_rate_cancel_timer(SyncCore* c)
{
    if (c->mtx) {
        shared_cancel_timer(c);
    } else if (c->loop) {
        futoin_loop_cancel(c->loop, &c->win_timer);
    }
}

SyncVerdict futoin__sync_rate_admit(SyncCore* c, SyncNode* n)
{
    /* With flows queued the window is full (or just ending and the timer
     * has not run yet on a late real clock): newcomers go behind them. */
    if (!c->rate_q.len) {
        uint64_t now = futoin__sync_now(c);
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
static void window_roll(SyncCore* c)
{
    uint64_t now = futoin__sync_now(c);
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

static void window_end(void* data)
{
    window_roll(data);
}

static void shared_window_end(void* data, uintptr_t seq)
{
    SyncCore* c = data;
    pthread_mutex_lock(c->mtx);
    if ((uint32_t)seq != c->timer_seq) {
        --c->timer_inflight; /* lost to a cancel: nothing to do */
    } else {
        c->timer_armed = 0;
        window_roll(c);
    }
    pthread_mutex_unlock(c->mtx);
}

uint32_t futoin__sync_rate_window_entries(const SyncCore* c)
{
    if (!c->rate_max || !c->win_open || futoin__sync_now(c) >= window_end_time(c)) {
        return 0;
    }
    return c->rate_used;
}

FutoInSync* futoin_throttle_new(FutoInLoop* loop, uint32_t max, uint32_t period_ms,
        uint32_t max_queue)
{
    if (!loop || !max || !period_ms) {
        return NULL;
    }
    SyncConfig cfg = futoin__throttle_config(max, period_ms, max_queue);
    return futoin__sync_make(loop, 0, &cfg);
}
