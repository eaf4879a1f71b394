/* SPDX-License-Identifier: MIT */
/*
 * Shared Mutex, Throttle and Limiter: the same objects as sync/mutex.c,
 * sync/throttle.c and sync/limiter.c, usable by flows on different loops
 * (threads). The only differences are in SyncCore's shared fields (see
 * sync_internal.h): a pthread mutex taken by every entry point, the
 * monotonic clock, waiters woken with a cross-thread success(), and the
 * rate timer hosted by the loop of the flow it will admit.
 */
#include "sync/sync_impl.h"

FutoInSync* futoin_mutex_new_shared(uint32_t max, uint32_t max_queue)
{
    if (!max) {
        return NULL;
    }
    SyncConfig cfg = futoin__mutex_config(max, max_queue);
    return futoin__sync_make(NULL, 1, &cfg);
}

FutoInSync* futoin_throttle_new_shared(uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    if (!max || !period_ms) {
        return NULL;
    }
    SyncConfig cfg = futoin__throttle_config(max, period_ms, max_queue);
    return futoin__sync_make(NULL, 1, &cfg);
}

FutoInSync* futoin_limiter_new_shared(const FutoInLimiterOptions* opts)
{
    SyncConfig cfg = futoin__limiter_config(opts);
    if (!cfg.conc_max || !cfg.rate_max || !cfg.period_ms) {
        return NULL;
    }
    return futoin__sync_make(NULL, 1, &cfg);
}
