/*
 * AsyncTool: the single-threaded event loop that drives AsyncSteps
 * (spec section 2.6).
 *
 * A loop holds two kinds of work: immediate callbacks (run in FIFO order on
 * the next round) and deferred callbacks (timers on a monotonic millisecond
 * clock, kept in a binary heap so that 100,000+ pending timers stay
 * O(log n)). Handles are small values; a stale or zeroed handle is always
 * safe to cancel or test.
 *
 * Two clocks: futoin_loop_new() uses CLOCK_MONOTONIC; futoin_loop_new_virtual()
 * starts a virtual clock at 0 that only moves when the loop has nothing
 * immediate to do and jumps straight to the next timer (or when
 * futoin_loop_advance() is called), so timeout tests are exact and instant.
 *
 * Unless stated otherwise, functions must be called on the loop's thread.
 */
#ifndef FUTOIN_ASYNCTOOL_H
#define FUTOIN_ASYNCTOOL_H

#include <futoin/binarysteps.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct FutoInLoop FutoInLoop;
typedef void (*FutoInLoopCallback)(void* data);

/* Creates a loop on the real monotonic clock. Returns NULL on allocation failure. */
FutoInLoop* futoin_loop_new(void);

/* Creates a loop on a virtual clock starting at 0 ms (the test variant). */
FutoInLoop* futoin_loop_new_virtual(void);

/* Frees the loop. Pending callbacks are dropped without being called.
 * AsyncSteps roots created on the loop must be freed before it. */
void futoin_loop_free(FutoInLoop* loop);

/* Queues cb(data) to run on the next round, after what is already queued. */
FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb);

/* Queues cb(data) to run once delay_ms have passed (0 is allowed: it runs on
 * the next round after the immediates queued before it). Timers due at the
 * same time run in the order they were scheduled. */
FutoInHandle futoin_loop_deferred(
        FutoInLoop* loop, uint32_t delay_ms, void* data, FutoInLoopCallback cb);

/* Cancels a pending callback and zeroes *handle. A no-op for a zeroed handle,
 * a handle whose callback already ran or was cancelled, or NULL. */
void futoin_loop_cancel(FutoInLoop* loop, FutoInHandle* handle);

/* 1 while the callback behind handle is still pending, else 0. */
int futoin_loop_is_valid(const FutoInLoop* loop, const FutoInHandle* handle);

/* 1 when called on the thread that created the loop. */
int futoin_loop_is_same_thread(const FutoInLoop* loop);

/* The loop's clock in milliseconds (monotonic; virtual for the test variant). */
uint64_t futoin_loop_now(const FutoInLoop* loop);

/* Runs one round: the immediate callbacks that were queued when the round
 * started, then every timer that is due. Never sleeps. Returns 1 if work
 * remains, 0 if the loop is empty. If next_delay_ms is not NULL it receives
 * 0 when immediates are pending, the ms until the next timer, or -1 when
 * nothing is pending: use it to sleep in another program's poll(). */
int futoin_loop_iterate(FutoInLoop* loop, int64_t* next_delay_ms);

/* Runs rounds until no work is left or futoin_loop_stop() is called.
 * The real clock sleeps until the next timer; the virtual clock jumps to it. */
void futoin_loop_run(FutoInLoop* loop);

/* Makes run() return after the current callback. */
void futoin_loop_stop(FutoInLoop* loop);

/* Number of pending callbacks (immediate + deferred). */
size_t futoin_loop_pending(const FutoInLoop* loop);

/* --- virtual clock only (return -1 / do nothing on a real loop) --- */

/* Runs exactly one callback: the first immediate, or else advances the
 * virtual clock to the earliest timer and runs it. Returns 1 if a callback
 * ran, 0 if the loop was empty. */
int futoin_loop_run_next(FutoInLoop* loop);

/* Moves the virtual clock forward by ms, running everything that becomes
 * due on the way (immediates first, then timers in due order, each at its
 * own due time). */
void futoin_loop_advance(FutoInLoop* loop, uint64_t ms);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_ASYNCTOOL_H */
