/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief Synchronization objects (FTN12 spec 1.11, 2.3-2.5): Mutex, Throttle and
 * Limiter as FutoInSync ABI objects (binarysteps.h), usable with
 * futoin_add_sync() / addSync() of any FTN12 binary AsyncSteps.
 *
 * @code
 *     FutoInSync* m = futoin_mutex_new(loop, 2, FUTOIN_SYNC_UNLIMITED);
 *     futoin_add_sync(as, m, critical_section, on_error, data);
 *     ...
 *     futoin_sync_free(m);   // once no flow uses it any more
 * @endcode
 *
 * Common rules (all three objects)
 * --------------------------------
 *  - Flows. A "flow" is what rootId() identifies: a root's main flow or one
 *    parallel branch. Parallel branches are separate flows and never inherit
 *    the lock held by the flow that created them (spec 1.11.4): a branch that
 *    enters a Mutex(1) its parent holds waits like any other flow (and a
 *    parent that waits for such a branch deadlocks; there is no deadlock
 *    detection, spec 1.11.5 makes it optional).
 *  - Critical section. The steps of the critical section step (f, eh) run
 *    between lock and unlock. Its input is the result of the step before the
 *    sync step, and its result goes to the step after it, exactly as without
 *    the sync object (the engine does the argument plumbing).
 *  - Release. A flow leaves the section when the sync step ends: on success,
 *    on error (the error still propagates to the handlers outside), on
 *    timeout and on cancel. A flow cancelled (or timed out) while queued
 *    leaves the queue and never enters.
 *  - Queues. Waiting flows enter in FIFO order; a new flow never overtakes a
 *    queued one. When a queue is full, the flow fails at once with
 *    FUTOIN_DEFENSE_REJECTED ("DefenseRejected"); error_info names the object
 *    and the queue. Such an error goes to the handlers outside the sync step,
 *    not to the critical section's eh.
 *  - Re-entrance (choice: counted re-entrance). A flow that is inside the
 *    section (or has been admitted and is about to enter it) and enters the
 *    same object again is let in at once: no queueing, no new concurrency
 *    slot, no new rate entry, never DefenseRejected. It leaves the object
 *    only when its outermost sync step ends. Reason: refusing would make
 *    nested library calls that share one sync object fail or self-deadlock,
 *    and a Limiter with burst 0 would reject its own holder.
 *  - Wake-ups. When a slot frees up (unlock, or a cancel handler of a flow
 *    that was admitted or queued) or a rate window rolls over, the next
 *    waiter is resumed directly with success() (or handle_error() with
 *    DefenseRejected, see Limiter) on its flow from inside that call or the
 *    loop timer, not through sched_immediate(): this
 *    engine's external success() only queues the flow, which then enters on
 *    its next turn, so no extra loop round is spent and FIFO order is kept
 *    exactly. The object's bookkeeping is complete before success() is
 *    called, so an AsyncSteps implementation that ran steps synchronously
 *    inside success() would still see a consistent object.
 *  - Protocol detail. lock() admits, queues or rejects the flow at once.
 *    The engine owes unlock() from the moment lock() succeeds (lock()
 *    returning after admission, or a queued flow woken with success()), so
 *    a flow aborted between admission and entry (a failing sibling branch,
 *    a root cancel, an outer timeout) still gives its place back. A queued
 *    flow has a cancel handler armed that takes it out of the queue.
 *  - Memory. Each lock in progress or held costs one fixed node from a
 *    free list owned by the object: after warm-up, waiting and entering
 *    allocate nothing. Nodes are released with the object. Finding the
 *    holder for re-entrance and unlock is O(1) (hash by rootId).
 *  - Threads. An object belongs to one loop: lock/unlock and every function
 *    below must be called on that loop's thread, and the flows using it
 *    should run on the same loop (Throttle and Limiter use its clock and
 *    timers). These take no lock. For flows on several loops (threads) use
 *    the *_new_shared variants at the end of this header.
 *  - Unlimited. FUTOIN_SYNC_UNLIMITED as a queue length means no limit.
 *
 * Errors: docs/ERRORS.md.
 */
#ifndef FUTOIN_SYNC_H
#define FUTOIN_SYNC_H

#include <futoin/asynctool.h>
#include <futoin/binarysteps.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A queue length (or concurrency) with no limit. */
#define FUTOIN_SYNC_UNLIMITED UINT32_MAX

/** Return codes of futoin_sync_free() and futoin_sync_stats(). */
enum {
    FUTOIN_SYNC_OK = 0, /**< Success. */
    /** The object still has flows inside, admitted, queued, or with a lock
     * in progress; nothing was freed. Free it once they have left (or after
     * cancelling or freeing their roots). */
    FUTOIN_SYNC_BUSY = -1,
    /** Not an object made by this header's constructors. */
    FUTOIN_SYNC_INVALID = -2
};

/* ------------------------------------------------------------------------ */
/* Mutex (spec 2.3)                                                           */

/** At most max flows are inside the critical section at a time; up to
 * max_queue more wait in FIFO order (FUTOIN_SYNC_UNLIMITED: no limit, the
 * spec's default; 0: no waiting, a busy mutex rejects at once).
 * Spec defaults: max = 1, max_queue = unlimited. A Mutex does not use the
 * loop (it may be NULL).
 * Returns NULL when max is 0. Out of memory: NULL. A flow that must wait
 * when its wait record cannot be had fails with InternalError "sync object:
 * out of memory". */
FutoInSync* futoin_mutex_new(FutoInLoop* loop, uint32_t max, uint32_t max_queue);

/* ------------------------------------------------------------------------ */
/* Throttle (spec 2.4)                                                        */

/** At most max entries into the critical section per period; up to
 * max_queue flows wait for a later period (FUTOIN_SYNC_UNLIMITED: no limit,
 * the spec's default). A Throttle does not limit how many flows are inside
 * at once, nor how long they stay.
 *
 * Periods are fixed windows on the loop's clock (futoin_loop_now):
 *  - When a flow is admitted and no window is open (none yet, or the last
 *    one has ended), a window [t, t + period_ms) opens at that time t.
 *  - Inside a window at most max flows are admitted; later ones queue (or
 *    are rejected when the queue is full).
 *  - When a window ends with flows queued, the next window opens at once,
 *    at the end time of the previous one, and the first max queued flows
 *    (FIFO) are admitted at that moment by a loop timer. When it ends with
 *    none queued, no window is open until the next admission, and no timer
 *    is pending.
 * So Throttle(3, 100) with ten flows arriving at 0 admits them at
 * 0,0,0, 100,100,100, 200,200,200, 300. Within any single window at most
 * max flows enter; a sliding interval of period_ms that straddles two
 * windows may see up to 2 * max entries.
 * An admission counts as an entry even if the flow is cancelled before its
 * critical section starts (the place is not given back).
 * Spec defaults: period_ms = 1000, max_queue = unlimited.
 * Returns NULL when max or period_ms is 0. Out of memory: NULL; a flow's wait
 * record as for futoin_mutex_new(); a window timer that cannot be armed
 * (it admits the waiting flows) aborts the process with "futoin: out of
 * memory" through the log handler (stderr unless replaced). */
FutoInSync* futoin_throttle_new(FutoInLoop* loop, uint32_t max, uint32_t period_ms,
        uint32_t max_queue);

/* ------------------------------------------------------------------------ */
/* Limiter (spec 1.11.7, 2.5)                                                 */

/** The options of a Limiter (futoin_limiter_new()). */
typedef struct FutoInLimiterOptions {
    uint32_t concurrent; /**< flows inside at once (Mutex max); default 1 */
    uint32_t max_queue;  /**< flows waiting for concurrency; default 0 */
    uint32_t rate;       /**< entries per period (Throttle max); default 1 */
    uint32_t period_ms;  /**< rate window length; default 1000 */
    uint32_t burst;      /**< flows waiting for the rate (Throttle max_queue); default 0 */
} FutoInLimiterOptions;

/** The spec's defaults, as an initializer: {1, 0, 1, 1000, 0}. */
#define FUTOIN_LIMITER_OPTIONS_INIT                                                                \
    {                                                                                              \
        1u, 0u, 1u, 1000u, 0u                                                                      \
    }

/** Fills *opts with the spec's defaults. */
void futoin_limiter_options_init(FutoInLimiterOptions* opts);

/** A Mutex(concurrent, max_queue) and a Throttle(rate, period_ms, burst)
 * combined, the Throttle nested inside the Mutex: a flow first takes one of
 * the concurrent slots (waiting in the max_queue FIFO or rejected when it
 * is full), then, holding the slot, passes the rate limit (waiting in the
 * burst FIFO or rejected when it is full, which frees the slot again), then
 * runs the critical section and frees the slot when it leaves. Rate windows
 * behave as described for the Throttle. With the defaults, a second flow is
 * rejected while one is inside, and a second entry within the same second
 * is rejected too.
 * opts NULL means all defaults. Returns NULL when concurrent, rate or
 * period_ms is 0. Out of memory: as futoin_mutex_new() and
 * futoin_throttle_new(). */
FutoInSync* futoin_limiter_new(FutoInLoop* loop, const FutoInLimiterOptions* opts);

/* ------------------------------------------------------------------------ */
/* Common                                                                     */

/** Frees a Mutex, Throttle or Limiter. Returns FUTOIN_SYNC_OK (also for
 * NULL), FUTOIN_SYNC_BUSY while any flow is inside, admitted, queued or in
 * the middle of lock() (the object is left intact and keeps working), or
 * FUTOIN_SYNC_INVALID for an object of another kind (left alone). */
int futoin_sync_free(FutoInSync* sync);

/* ------------------------------------------------------------------------ */
/* Shared variants: flows on different loops (threads)                        */

/** @name Shared variants: flows on different loops (threads)
 *
 * Mutex, Throttle and Limiter with the same rules as above, usable at once
 * by flows of this library running on any loops (any threads, see
 * <futoin/threads.h>). Differences:
 *  - every lock, unlock, cancel handler, free and stats call takes the
 *    object's pthread mutex for its bookkeeping (never across a step);
 *  - a waiter on another loop is resumed with a cross-thread success()
 *    (or error()), so it enters on its own loop's next round; if it is
 *    cancelled before that, its cancel handler gives the place back and
 *    the late success() is dropped without a misuse report;
 *  - rate windows run on the monotonic clock (CLOCK_MONOTONIC, ms), and the
 *    window timer runs on the loop of the first waiting flow (moved when
 *    that flow leaves the queue), so use real-clock loops;
 *  - only AsyncSteps of this library can lock them (InternalError else);
 *  - futoin_sync_free() also answers FUTOIN_SYNC_BUSY while a cancelled
 *    window timer is still finishing on its loop: retry later.
 * Free them with futoin_sync_free() once no flow uses them. */
/** @{ */
/** A shared Mutex: futoin_mutex_new() for flows on any loops (out of
 * memory: the same outcomes, as for the two below). */
FutoInSync* futoin_mutex_new_shared(uint32_t max, uint32_t max_queue);
/** A shared Throttle: futoin_throttle_new() for flows on any loops. */
FutoInSync* futoin_throttle_new_shared(uint32_t max, uint32_t period_ms, uint32_t max_queue);
/** A shared Limiter: futoin_limiter_new() for flows on any loops. */
FutoInSync* futoin_limiter_new_shared(const FutoInLimiterOptions* opts);
/** @} */

/** A snapshot of an object's state, for monitoring and tests. */
typedef struct FutoInSyncStats {
    /** Flows admitted and not yet left: inside the critical section or about
     * to enter it (re-entries are not counted again). */
    uint32_t active;
    /** Flows waiting: for a slot (Mutex, Limiter) or for a rate window
     * (Throttle, Limiter burst queue). */
    uint32_t queued;
    /** Concurrency slots in use (Mutex, Limiter; includes Limiter flows that
     * hold a slot while waiting for the rate); 0 for a Throttle. */
    uint32_t slots_used;
    /** Entries admitted in the current rate window (Throttle, Limiter); 0
     * when no window is open or for a Mutex. */
    uint32_t window_entries;
    /** Queue nodes ever allocated: stays flat once the free list is warm. */
    uint32_t nodes_allocated;
} FutoInSyncStats;

/** Fills *out. Returns FUTOIN_SYNC_OK, or FUTOIN_SYNC_INVALID (out zeroed)
 * for NULL or an object of another kind. */
int futoin_sync_stats(const FutoInSync* sync, FutoInSyncStats* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_SYNC_H */
