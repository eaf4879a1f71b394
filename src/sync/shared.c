/* SPDX-License-Identifier: MIT */
/*
 * Shared Mutex, Throttle and Limiter: the same objects as sync/mutex.c,
 * sync/throttle.c and sync/limiter.c, usable by flows on different loops
 * (threads). The only differences are in SyncCore's shared fields (see
 * sync_internal.h): a pthread mutex taken by every entry point, the
 * monotonic clock, waiters woken with a cross-thread success(), and the
 * rate timer hosted by the loop of the flow it will admit.
 */
#include "sync/sync_internal.h"

#include <stdlib.h>

static SyncCore* shared_core_new(void)
{
    SyncCore* c = futoin__sync_core_new(NULL);
    if (!c) {
        return NULL;
    }
    c->mtx = malloc(sizeof(*c->mtx));
    if (!c->mtx || pthread_mutex_init(c->mtx, NULL) != 0) {
        free(c->mtx);
        c->mtx = NULL;
        futoin_sync_free(&c->base);
        return NULL;
    }
    return c;
}

FutoInSync* futoin_mutex_new_shared(uint32_t max, uint32_t max_queue)
{
    if (!max) {
        return NULL;
    }
    SyncCore* c = shared_core_new();
    if (!c) {
        return NULL;
    }
    c->conc_max = max;
    c->conc_qmax = max_queue;
    c->reject_conc = "Mutex: queue is full";
    c->reject_rate = "";
    return &c->base;
}

FutoInSync* futoin_throttle_new_shared(uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    if (!max || !period_ms) {
        return NULL;
    }
    SyncCore* c = shared_core_new();
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

FutoInSync* futoin_limiter_new_shared(const FutoInLimiterOptions* opts)
{
    FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
    if (opts) {
        o = *opts;
    }
    if (!o.concurrent || !o.rate || !o.period_ms) {
        return NULL;
    }
    SyncCore* c = shared_core_new();
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
