/* SPDX-License-Identifier: MIT */
/*
 * Limiter (spec 1.11.7, 2.5): the concurrency stage (Mutex) followed by the
 * rate stage (Throttle) on one object, so that a flow waits for the rate
 * while holding its slot, as a Throttle nested in a Mutex would behave, but
 * with one node and one lock/unlock per entry.
 */
#include "sync/sync_internal.h"

void futoin_limiter_options_init(FutoInLimiterOptions* opts)
{
    const FutoInLimiterOptions defaults = FUTOIN_LIMITER_OPTIONS_INIT;
    *opts = defaults;
}

FutoInSync* futoin_limiter_new(FutoInLoop* loop, const FutoInLimiterOptions* opts)
{
    FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
    if (opts) {
        o = *opts;
    }
    if (!loop || !o.concurrent || !o.rate || !o.period_ms) {
        return NULL;
    }
    SyncCore* c = futoin__sync_core_new(loop);
    if (!c) {
        return NULL;
    }
    c->conc_max = o.concurrent;
    c->conc_qmax = o.max_queue;
    c->rate_max = o.rate;
    c->period_ms = o.period_ms;
    c->rate_qmax = o.burst;
    c->reject_conc = "Limiter: queue is full (concurrency)";
    c->reject_rate = "Limiter: burst queue is full (rate)";
    return &c->base;
}
