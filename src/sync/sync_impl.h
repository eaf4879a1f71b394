/* SPDX-License-Identifier: MIT */
/*
 * Shared machinery of Mutex, Throttle and Limiter (include/futoin/sync.h).
 *
 * The three objects are one engine with two optional stages a flow passes
 * through in order:
 *   1. concurrency (Mutex, Limiter): take one of conc_max slots, or wait in
 *      conc_q, or be rejected when conc_q is full;
 *   2. rate (Throttle, Limiter): be one of rate_max entries of the current
 *      window, or wait in rate_q, or be rejected when rate_q is full.
 * A Mutex has only stage 1, a Throttle only stage 2, a Limiter both. The
 * stage code lives in sync/mutex.c (stage 1) and sync/throttle.c (stage 2);
 * sync/core.c holds the lock/unlock protocol, the node pool, the FIFO queues
 * and the holder table.
 */
#ifndef FUTOIN_SYNC_IMPL_H
#define FUTOIN_SYNC_IMPL_H

#include <futoin/sync.h>

#include "common/list.h"
#include "sync/sync_internal.h"
#include "loop/loop_internal.h"
#include "engine/parked_steps_internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* Where a node is in its life; see sync/core.c for the transitions. */
enum {
    SN_NEW = 0, /* lock() ran, the admission sub-step has not yet */
    SN_Q_CONC,  /* waiting in conc_q */
    SN_Q_RATE,  /* in the holder table (has its slot, if any), waiting in rate_q */
    SN_HOLDER,  /* admitted: in the holder table, about to enter or inside */
    SN_REJECTED /* got DefenseRejected; waits for the engine to unwind */
};

/* Result of running a node through the stages. */
typedef enum { SYNC_ENTER, SYNC_WAIT, SYNC_REJECT_CONC, SYNC_REJECT_RATE } SyncVerdict;

typedef struct SyncNode SyncNode;
typedef struct SyncCore SyncCore;

/* One lock in progress or held: a fixed-size record from the object's free
 * list, so waiting costs no allocation once the list is warm. */
struct SyncNode {
    union {
        ListLink q;          /* in conc_q or rate_q (O(1) removal on cancel) */
        SyncNode* free_next; /* on the object's free list */
    };
    SyncNode* hnext; /* holder-table chain */
    SyncNode* outer; /* for a re-entry: the record it nests in */
    SyncCore* core;
    FutoInAsyncSteps* as;      /* the flow: resumed with success()/handle_error() */
    struct SyncTicket* ticket; /* a waiting flow of another implementation */
    ptrdiff_t root_id;
    uint8_t state;
    uint8_t slot; /* owns one concurrency slot */
};

/* FIFO of waiting nodes, linked through SyncNode.q. */
#define SYNC_Q_LINK offsetof(SyncNode, q)
typedef struct SyncQueue {
    List l;
    uint32_t len;
} SyncQueue;

/* The first waiter of q, NULL if none. */
static inline SyncNode* futoin__sync_queue_first(const SyncQueue* q)
{
    return q->l.head;
}

struct SyncCore {
    FutoInSync base; /* first: the object is passed around as FutoInSync* */
    FutoInLoop* loop;
    const char* reject_conc; /* error_info for a full conc_q */
    const char* reject_rate; /* error_info for a full rate_q */

    /* Stage 1, on when conc_max > 0. */
    uint32_t conc_max;
    uint32_t conc_qmax;
    uint32_t conc_used;
    SyncQueue conc_q;

    /* Stage 2, on when rate_max > 0. */
    uint32_t rate_max;
    uint32_t rate_qmax;
    uint32_t period_ms;
    uint32_t rate_used; /* entries in the window starting at win_start */
    uint8_t win_open;   /* a window has been opened (may have ended since) */
    uint64_t win_start;
    FutoInHandle win_timer; /* armed only while rate_q is not empty */
    SyncQueue rate_q;

    /* Holder table: rootId -> innermost holder record of that flow. */
    SyncNode** buckets;
    size_t nbuckets; /* power of two */
    size_t nflows;   /* distinct flows in the table */

    /* Node free list and accounting. */
    SyncNode* free_nodes;
    uint32_t nodes_allocated;
    uint32_t nodes_out; /* nodes not on the free list: the object is busy */

    /* Shared objects only (sync/shared.c), NULL/0 otherwise: flows on any
     * loop use the object, so every entry point takes mtx, "now" is the
     * monotonic clock and waiters are woken with cross-thread success().
     * The rate timer lives on the loop of the flow at the head of rate_q
     * (alive while that flow waits) and is re-homed when that flow
     * leaves. timer_seq tells a firing that lost to a cancel (it waits for
     * mtx meanwhile) that it is stale; timer_inflight keeps the object
     * from being freed under such a firing. */
    pthread_mutex_t* mtx;
    FutoInLoop* timer_loop;
    uint32_t timer_seq;
    uint32_t timer_inflight;
    uint8_t timer_armed;
};

/* What makes a Mutex, a Throttle or a Limiter: the stages it has (a
 * stage with a zero maximum is absent) and the error_info of each stage's
 * rejection. */
typedef struct SyncConfig {
    uint32_t conc_max;
    uint32_t conc_qmax;
    uint32_t rate_max;
    uint32_t period_ms;
    uint32_t rate_qmax;
    const char* reject_conc;
    const char* reject_rate;
} SyncConfig;

static inline SyncConfig futoin__mutex_config(uint32_t max, uint32_t max_queue)
{
    SyncConfig c = { .conc_max = max,
        .conc_qmax = max_queue,
        .reject_conc = "Mutex: queue is full",
        .reject_rate = "" };
    return c;
}

static inline SyncConfig futoin__throttle_config(uint32_t max, uint32_t period_ms,
        uint32_t max_queue)
{
    SyncConfig c = { .rate_max = max,
        .period_ms = period_ms,
        .rate_qmax = max_queue,
        .reject_conc = "",
        .reject_rate = "Throttle: queue is full" };
    return c;
}

/* opts NULL: the defaults (FUTOIN_LIMITER_OPTIONS_INIT). */
static inline SyncConfig futoin__limiter_config(const FutoInLimiterOptions* opts)
{
    FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
    if (opts) {
        o = *opts;
    }
    SyncConfig c = { .conc_max = o.concurrent,
        .conc_qmax = o.max_queue,
        .rate_max = o.rate,
        .period_ms = o.period_ms,
        .rate_qmax = o.burst,
        .reject_conc = "Limiter: queue is full (concurrency)",
        .reject_rate = "Limiter: burst queue is full (rate)" };
    return c;
}

/* sync/core.c */
/* The object cfg describes, for flows of loop, or of any loop when shared
 * (loop NULL); NULL on allocation failure. The constructors check their
 * arguments first. */
FutoInSync* futoin__sync_make(FutoInLoop* loop, int shared, const SyncConfig* cfg);
void futoin__sync_enqueue(SyncQueue* q, SyncNode* n);
SyncNode* futoin__sync_dequeue(SyncQueue* q);
/* Runs a node through the stages it still needs (after the concurrency
 * stage if after_conc, i.e. the node was just handed a slot). Records the
 * new state in the node. On a rejection the node is out of the holder table
 * but keeps n->slot as it was: the caller frees or passes on that slot. */
SyncVerdict futoin__sync_progress(SyncCore* c, SyncNode* n, int after_conc);
/* The flow behind n is admitted (success) or rejected (handle_error) while
 * it waits: called from unlock()/cancel handlers and loop timers. */
void futoin__sync_wake(SyncNode* n);
void futoin__sync_reject_waiting(SyncNode* n, const char* info);

/* sync/mutex.c: stage 1 */
SyncVerdict futoin__sync_conc_admit(SyncCore* c, SyncNode* n);
void futoin__sync_conc_release(SyncCore* c);

/* The clock of the rate windows: the object's loop, or the monotonic
 * clock for a shared object (its flows run on several loops). */
static inline uint64_t futoin__sync_now(const SyncCore* c)
{
    return c->mtx ? futoin__monotonic_ms() : futoin_loop_now(c->loop);
}

/* Entry points of a shared object hold its mutex; others take no lock. */
static inline void futoin__sync_enter(SyncCore* c)
{
    if (c->mtx) {
        pthread_mutex_lock(c->mtx);
    }
}

static inline void futoin__sync_leave(SyncCore* c)
{
    if (c->mtx) {
        pthread_mutex_unlock(c->mtx);
    }
}

/* sync/throttle.c: stage 2 */
SyncVerdict futoin__sync_rate_admit(SyncCore* c, SyncNode* n);
void futoin__sync_rate_cancel_timer(SyncCore* c);
void futoin__sync_rate_arm_timer(SyncCore* c);
uint32_t futoin__sync_rate_window_entries(const SyncCore* c);

#pragma GCC visibility pop

#endif /* FUTOIN_SYNC_IMPL_H */
