/* SPDX-License-Identifier: MIT */
/*
 * Mutex (spec 1.11.1, 2.3) and the concurrency stage it shares with the
 * Limiter: at most conc_max flows hold a slot; the rest wait in a FIFO of at
 * most conc_qmax. A freed slot is handed straight to the first waiter, so
 * the count never drops while someone waits and a newcomer cannot take the
 * slot first.
 */
#include "sync/sync_impl.h"

SyncVerdict futoin__sync_conc_admit(SyncCore* c, SyncNode* n)
{
    /* A non-empty queue means every slot is taken or being handed over:
     * newcomers go behind the waiters (FIFO). */
    if (c->conc_used < c->conc_max && !c->conc_q.len) {
        ++c->conc_used;
        n->slot = 1;
        return SYNC_ENTER;
    }
    if (c->conc_q.len < c->conc_qmax) {
        futoin__sync_enqueue(&c->conc_q, n);
        n->state = SN_Q_CONC;
        return SYNC_WAIT;
    }
    n->state = SN_REJECTED;
    return SYNC_REJECT_CONC;
}

void futoin__sync_conc_release(SyncCore* c)
{
    /* A loop, not recursion: a Limiter waiter that gets the slot but finds
     * the rate queue full is rejected and the slot goes to the next one. */
    SyncNode* w;
    while ((w = futoin__sync_dequeue(&c->conc_q)) != NULL) {
        w->slot = 1;
        SyncVerdict v = futoin__sync_progress(c, w, 1);
        if (v == SYNC_ENTER) {
            futoin__sync_wake(w);
            return;
        }
        if (v == SYNC_WAIT) {
            return; /* keeps the slot while it waits for the rate */
        }
        w->slot = 0;
        futoin__sync_reject_waiting(w, v == SYNC_REJECT_CONC ? c->reject_conc : c->reject_rate);
    }
    --c->conc_used;
}

FutoInSync* futoin_mutex_new(FutoInLoop* loop, uint32_t max, uint32_t max_queue)
{
    if (!max) {
        return NULL; /* nobody could ever enter */
    }
    SyncConfig cfg = futoin__mutex_config(max, max_queue);
    return futoin__sync_make(loop, 0, &cfg);
}
