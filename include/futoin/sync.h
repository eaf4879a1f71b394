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
 *    and the queue.
 *  - Rejections skip eh. A rejected flow never entered the critical
 *    section, so the eh given to futoin_add_sync() is not called: the error
 *    goes to the handlers of the steps around the sync step. Catch
 *    DefenseRejected there (the example at futoin_add_sync()).
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
 *  - Unlimited. FUTOIN_SYNC_UNLIMITED as a queue length means no limit; as a
 *    Limiter's rate it turns the rate stage off (a concurrency limit only),
 *    as its concurrency it leaves a rate limit only.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
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

/**
 * @brief A Mutex (spec 2.3): at most max flows are inside the critical
 * section at a time; up to max_queue more wait in FIFO order.
 *
 * Spec defaults: max = 1, max_queue = unlimited. A flow that must wait
 * when its wait record cannot be had fails with InternalError "sync object:
 * out of memory".
 * @param loop       the loop whose flows use it; a Mutex does not use the
 *                   loop itself (it may be NULL)
 * @param max        flows inside at once, 1..UINT32_MAX (0: NULL)
 * @param max_queue  flows waiting: FUTOIN_SYNC_UNLIMITED (no limit, the
 *                   spec's default), or a limit; 0: no waiting, a busy
 *                   mutex rejects at once
 * @return the Mutex, or NULL when max is 0 or out of memory
 * @par Rejections skip the critical section's error handler
 * A flow that the object refuses (DefenseRejected when the queue is full;
 * InternalError "sync object: out of memory" when its wait record cannot
 * be had) never entered the critical section, so the eh given to
 * futoin_add_sync() is not called: the error goes to the handlers of the
 * steps around the sync step. Catch DefenseRejected there (the example at
 * futoin_add_sync()).
 * @par Ownership
 * The caller owns the object and frees it with futoin_sync_free() once no
 * flow uses it (FUTOIN_SYNC_BUSY before that), before the loop.
 * @par Thread
 * The loop's thread: the object belongs to the loop, and it, its sync
 * steps and futoin_sync_free()/futoin_sync_stats() are used on that thread
 * only (the *_new_shared() variants are for flows on several loops).
 */
FutoInSync* futoin_mutex_new(FutoInLoop* loop, uint32_t max, uint32_t max_queue);

/* ------------------------------------------------------------------------ */
/* Throttle (spec 2.4)                                                        */

/**
 * @brief A Throttle (spec 2.4): at most max entries into the critical
 * section per period; up to max_queue flows wait for a later period.
 *
 * A Throttle does not limit how many flows are inside at once, nor how
 * long they stay.
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
 * Spec defaults: period_ms = 1000, max_queue = unlimited. Out of memory: a
 * flow's wait record as for futoin_mutex_new(); a window timer that cannot
 * be armed (it admits the waiting flows) aborts the process with "futoin:
 * out of memory" through the log handler (stderr unless replaced).
 * @param loop       the loop whose flows use it: its clock and timers
 *                   measure the windows (not NULL)
 * @param max        entries per window, 1..UINT32_MAX (0: NULL)
 * @param period_ms  the window's length in ms (0: NULL)
 * @param max_queue  flows waiting for a later window: FUTOIN_SYNC_UNLIMITED
 *                   (no limit, the spec's default), or a limit (0: a flow
 *                   over the rate is rejected at once)
 * @return the Throttle, or NULL when loop is NULL, max or period_ms is 0,
 *         or out of memory
 * @par Rejections skip the critical section's error handler
 * A flow that the object refuses (DefenseRejected when the queue is full;
 * InternalError "sync object: out of memory" when its wait record cannot
 * be had) never entered the critical section, so the eh given to
 * futoin_add_sync() is not called: the error goes to the handlers of the
 * steps around the sync step. Catch DefenseRejected there (the example at
 * futoin_add_sync()).
 * @par Ownership
 * The caller owns the object and frees it with futoin_sync_free() once no
 * flow uses it (FUTOIN_SYNC_BUSY before that), before the loop.
 * @par Thread
 * The loop's thread: the object belongs to the loop, and it, its sync
 * steps and futoin_sync_free()/futoin_sync_stats() are used on that thread
 * only (the *_new_shared() variants are for flows on several loops).
 */
FutoInSync* futoin_throttle_new(FutoInLoop* loop, uint32_t max, uint32_t period_ms,
        uint32_t max_queue);

/* ------------------------------------------------------------------------ */
/* Limiter (spec 1.11.7, 2.5)                                                 */

/** The options of a Limiter (futoin_limiter_new()). */
typedef struct FutoInLimiterOptions {
    uint32_t concurrent; /**< flows inside at once (Mutex max); default 1 */
    uint32_t max_queue;  /**< flows waiting for concurrency; default 0 */
    /** entries per period (Throttle max); default 1; FUTOIN_SYNC_UNLIMITED:
     * no rate limit, the Limiter then limits concurrency only */
    uint32_t rate;
    uint32_t period_ms; /**< rate window length; default 1000 */
    uint32_t burst;     /**< flows waiting for the rate (Throttle max_queue); default 0 */
} FutoInLimiterOptions;

/** The spec's defaults, as an initializer: {1, 0, 1, 1000, 0}. */
#define FUTOIN_LIMITER_OPTIONS_INIT                                                                \
    {                                                                                              \
        1u, 0u, 1u, 1000u, 0u                                                                      \
    }

/**
 * @brief Fills *opts with the spec's defaults, {1, 0, 1, 1000, 0}
 * (FUTOIN_LIMITER_OPTIONS_INIT).
 * @param opts  the options to fill (not NULL)
 * @par Ownership
 * *opts is the caller's memory.
 * @par Thread
 * Any thread.
 */
void futoin_limiter_options_init(FutoInLimiterOptions* opts);

/**
 * @brief A Limiter (spec 1.11.7, 2.5): a Mutex(concurrent, max_queue) and a
 * Throttle(rate, period_ms, burst) combined, the Throttle nested inside the
 * Mutex.
 *
 * A flow first takes one of the concurrent slots (waiting in the max_queue
 * FIFO or rejected when it is full), then, holding the slot, passes the
 * rate limit (waiting in the burst FIFO or rejected when it is full, which
 * frees the slot again), then runs the critical section and frees the slot
 * when it leaves. Rate windows behave as described for the Throttle. With
 * the defaults, a second flow is rejected while one is inside, and a
 * second entry within the same second is rejected too.
 *
 * **The rate limit is always on.** Its default is the spec's 1 entry per
 * 1000 ms, so a Limiter meant to bound concurrency only, like a Mutex with
 * a bounded queue, must set rate = FUTOIN_SYNC_UNLIMITED:
 * @code
 * FutoInLimiterOptions o = FUTOIN_LIMITER_OPTIONS_INIT;
 * o.concurrent = 8;                  // at most 8 inside
 * o.max_queue = 100;                 // 100 more wait, then DefenseRejected
 * o.rate = FUTOIN_SYNC_UNLIMITED;    // no rate limit: concurrency only
 * FutoInSync* lim = futoin_limiter_new(loop, &o);
 * @endcode
 * Left at 1, the second flow of every second would be rejected (burst 0)
 * however few flows are inside. Likewise concurrent = FUTOIN_SYNC_UNLIMITED
 * leaves a rate limit only.
 *
 * Out of memory: as futoin_mutex_new() and futoin_throttle_new().
 * @param loop  the loop whose flows use it: its clock and timers measure
 *              the rate windows (not NULL)
 * @param opts  the limits (FutoInLimiterOptions; NULL: all defaults);
 *              copied
 * @return the Limiter, or NULL when loop is NULL, concurrent, rate or
 *         period_ms is 0, or out of memory
 * @par Rejections skip the critical section's error handler
 * A flow that the object refuses (DefenseRejected when the concurrency queue
 * (max_queue) or the burst queue (burst) is full; InternalError "sync object:
 * out of memory" when its wait record cannot be had) never entered the
 * critical section, so the eh given to futoin_add_sync() is not called: the
 * error goes to the handlers of the steps around the sync step. Catch
 * DefenseRejected there (the example at futoin_add_sync()).
 * @par Ownership
 * The caller owns the object and frees it with futoin_sync_free() once no
 * flow uses it (FUTOIN_SYNC_BUSY before that), before the loop.
 * @par Thread
 * The loop's thread: the object belongs to the loop, and it, its sync
 * steps and futoin_sync_free()/futoin_sync_stats() are used on that thread
 * only (the *_new_shared() variants are for flows on several loops).
 */
FutoInSync* futoin_limiter_new(FutoInLoop* loop, const FutoInLimiterOptions* opts);

/* ------------------------------------------------------------------------ */
/* Common                                                                     */

/**
 * @brief Frees a Mutex, Throttle or Limiter (plain or shared).
 * @param sync  the object (NULL: FUTOIN_SYNC_OK)
 * @return FUTOIN_SYNC_OK when freed (also for NULL); FUTOIN_SYNC_BUSY while
 *         any flow is inside, admitted, queued or in the middle of lock(),
 *         and for a shared object while a cancelled window timer is still
 *         finishing (the object is left intact and keeps working: free it
 *         later); FUTOIN_SYNC_INVALID for an object of another kind (left
 *         alone)
 * @par Ownership
 * On FUTOIN_SYNC_OK the object and its queue nodes are released; else it
 * stays the caller's.
 * @par Thread
 * A plain object: its loop's thread. A shared object: any thread.
 */
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
/**
 * @brief A shared Mutex: futoin_mutex_new() for flows on any loops.
 * @param max        as futoin_mutex_new()
 * @param max_queue  as futoin_mutex_new()
 * @return the Mutex, or NULL when max is 0 or out of memory
 *
 * Rejections skip the critical section's error handler, as for
 * futoin_mutex_new().
 * @par Ownership
 * The caller owns it and frees it with futoin_sync_free() once no flow on
 * any loop uses it.
 * @par Thread
 * Any thread; its sync steps may run on any loops of this library.
 */
FutoInSync* futoin_mutex_new_shared(uint32_t max, uint32_t max_queue);
/**
 * @brief A shared Throttle: futoin_throttle_new() for flows on any loops,
 * with windows on CLOCK_MONOTONIC (use real-clock loops).
 * @param max        as futoin_throttle_new()
 * @param period_ms  as futoin_throttle_new()
 * @param max_queue  as futoin_throttle_new()
 * @return the Throttle, or NULL when max or period_ms is 0 or out of memory
 *
 * Rejections skip the critical section's error handler, as for
 * futoin_throttle_new().
 * @par Ownership
 * As futoin_mutex_new_shared().
 * @par Thread
 * Any thread; its sync steps may run on any loops of this library.
 */
FutoInSync* futoin_throttle_new_shared(uint32_t max, uint32_t period_ms, uint32_t max_queue);
/**
 * @brief A shared Limiter: futoin_limiter_new() for flows on any loops, with
 * windows on CLOCK_MONOTONIC (use real-clock loops).
 *
 * As for futoin_limiter_new(), set rate = FUTOIN_SYNC_UNLIMITED to limit
 * concurrency only; rejections skip the critical section's error handler.
 * @param opts  as futoin_limiter_new() (NULL: all defaults); copied
 * @return the Limiter, or NULL when concurrent, rate or period_ms is 0 or
 *         out of memory
 * @par Ownership
 * As futoin_mutex_new_shared().
 * @par Thread
 * Any thread; its sync steps may run on any loops of this library.
 */
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

/**
 * @brief A snapshot of an object's state.
 * @param sync  a Mutex, Throttle or Limiter of this library
 * @param out   receives the snapshot (not NULL)
 * @return FUTOIN_SYNC_OK, or FUTOIN_SYNC_INVALID (out zeroed) for NULL or
 *         an object of another kind
 * @par Ownership
 * *out is the caller's memory; the object is left as it is.
 * @par Thread
 * A plain object: its loop's thread. A shared object: any thread (taken
 * under its lock: consistent, but old as soon as it is returned).
 */
int futoin_sync_stats(const FutoInSync* sync, FutoInSyncStats* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_SYNC_H */
