/* SPDX-License-Identifier: MIT */
/*
 * Limiter (spec 1.11.7, 2.5): the concurrency stage (Mutex) followed by the
 * rate stage (Throttle) on one object, so that a flow waits for the rate
 * while holding its slot, as a Throttle nested in a Mutex would behave, but
 * with one node and one lock/unlock per entry.
 */
#include "sync/sync_impl.h"

void futoin_limiter_options_init(FutoInLimiterOptions* opts)
{
    const FutoInLimiterOptions defaults = FUTOIN_LIMITER_OPTIONS_INIT;
    *opts = defaults;
}

FutoInSync* futoin_limiter_new(FutoInLoop* loop, const FutoInLimiterOptions* opts)
{
    SyncConfig cfg = futoin__limiter_config(opts);
    if (!loop || !cfg.conc_max || !cfg.rate_max || !cfg.period_ms) {
        return NULL;
    }
    return futoin__sync_make(loop, 0, &cfg);
}
