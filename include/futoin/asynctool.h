/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief AsyncTool: the single-threaded event loop that drives AsyncSteps
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
 * Threads: the loop's thread is the one that created it. Unless stated
 * otherwise, functions must be called on that thread. futoin_loop_immediate,
 * futoin_loop_deferred, futoin_loop_cancel / futoin_loop_try_cancel,
 * futoin_loop_is_valid, futoin_loop_stop, futoin_loop_hold/release and
 * futoin_loop_is_same_thread may be called from any thread (see
 * @ref md_THREADS "docs/THREADS.md"): from another thread a call is queued
 * for the loop thread, which runs it at the start of its next round, in call
 * order per calling thread, and the call returns at once. The loop must
 * outlive every such call. Loops on threads of their own: <futoin/threads.h>.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
 */
#ifndef FUTOIN_ASYNCTOOL_H
#define FUTOIN_ASYNCTOOL_H

#include <futoin/binarysteps.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An AsyncTool event loop (opaque). */
typedef struct FutoInLoop FutoInLoop;
/**
 * A loop callback: immediate or deferred, called once with its data on the
 * loop's thread.
 * @param data  the data given when it was scheduled
 */
typedef void (*FutoInLoopCallback)(void* data);

/**
 * @brief Creates a loop on the real monotonic clock.
 * @return the loop, or NULL when out of memory
 * @par Ownership
 * The caller owns the loop and frees it with futoin_loop_free().
 * @par Thread
 * Any thread; the calling thread becomes the loop's thread, the only one
 * that may run it and use what lives on it (see the file's description).
 */
FutoInLoop* futoin_loop_new(void);

/**
 * @brief Creates a loop on a virtual clock starting at 0 ms (the test
 * variant): time moves only when nothing is runnable (it jumps to the next
 * timer) or by futoin_loop_advance().
 * @return the loop, or NULL when out of memory
 * @par Ownership
 * As futoin_loop_new().
 * @par Thread
 * As futoin_loop_new().
 */
FutoInLoop* futoin_loop_new_virtual(void);

/**
 * @brief Frees the loop.
 *
 * Pending callbacks are dropped without being called; messages that other
 * threads queued and the loop did not run yet are dropped too, and the
 * values they carry are cleaned up once. AsyncSteps roots still live on the
 * loop are freed first, as futoin_asyncsteps_free() frees them: a running
 * one is cancelled (its cancel handlers run, and its end hook,
 * futoin_set_on_end(), hears FUTOIN_END_FREED), and the cleanups of what
 * the roots hold (stack() memory, values, state variables, the data of
 * futoin_add_owned() steps) run. That code may call the library, on other
 * roots of the loop too; roots it makes are freed as well. Other objects
 * that live on the loop must be freed before it: sync objects made for it
 * (futoin_sync_free()), a backend built on it.
 * @param loop  the loop (NULL: nothing happens)
 * @par Ownership
 * Releases the loop, the roots left on it, its wake-up descriptor and its
 * pools. No other thread may call into it afterwards: stop and join the
 * threads that post to it first.
 * @par Thread
 * The loop's thread, outside the loop's own callbacks (not while
 * futoin_loop_run() or futoin_loop_iterate() runs).
 */
void futoin_loop_free(FutoInLoop* loop);

/**
 * @brief Queues cb(data) to run on the next round, after what is already
 * queued.
 * @param loop  the loop
 * @param data  passed to cb
 * @param cb    the callback (not NULL)
 * @return a handle for futoin_loop_cancel() and futoin_loop_is_valid();
 *         zeroed when out of memory (cb then never runs). From another
 *         thread it is a cross-thread handle (see futoin_loop_try_cancel()).
 *         A schedule another thread was given a handle for but that the
 *         loop thread then cannot queue aborts the process with "futoin:
 *         out of memory" through the log handler (futoin_set_log_handler();
 *         stderr unless replaced).
 * @par Ownership
 * data stays the caller's: the loop only passes it to cb, which runs once
 * unless cancelled (or dropped by futoin_loop_free()).
 * @par Thread
 * Any thread; cb runs on the loop's thread.
 */
FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb);

/**
 * @brief Queues cb(data) to run once delay_ms have passed.
 *
 * Due times are kept in 64-bit nanoseconds and saturate at the clock's end
 * (UINT64_MAX ns, about 584 years) instead of wrapping. Timers due at the
 * same time run in the order they were scheduled. From another thread the
 * delay counts from the call (real clock) or from when the loop thread
 * receives it (virtual clock).
 * @param loop      the loop
 * @param delay_ms  the delay: any uint32_t (up to about 49.7 days); 0 runs
 *                  it on the next round, after the immediates queued before it
 * @param data      passed to cb
 * @param cb        the callback (not NULL)
 * @return a handle, as futoin_loop_immediate() (zeroed when out of memory)
 * @par Ownership
 * As futoin_loop_immediate().
 * @par Thread
 * Any thread; cb runs on the loop's thread.
 */
FutoInHandle futoin_loop_deferred(FutoInLoop* loop, uint32_t delay_ms, void* data,
        FutoInLoopCallback cb);

/**
 * @brief Cancels a pending callback and zeroes *handle:
 * futoin_loop_try_cancel() without the answer.
 * @param loop    the loop the handle was made on
 * @param handle  the handle (NULL, a zeroed handle, or one whose callback
 *                ran or was cancelled: nothing happens)
 * @par Ownership
 * The data of a cancelled callback stays the caller's (cb never runs to
 * release it).
 * @par Thread
 * Any thread (see futoin_loop_try_cancel() for what a cancel from another
 * thread guarantees). Out of memory: as futoin_loop_try_cancel().
 */
void futoin_loop_cancel(FutoInLoop* loop, FutoInHandle* handle);

/**
 * @brief futoin_loop_cancel() that reports the outcome (and zeroes *handle).
 *
 * Cross-thread handles (made by a schedule call from another thread) are
 * decided on the spot from any thread: the cancel and the loop thread
 * starting the callback race on one atomic word, so exactly one of them
 * wins; 1 means the callback never runs, 0 means it runs (or ran).
 * @param loop    the loop the handle was made on
 * @param handle  the handle; NULL is answered with 0
 * @return
 *  -  1: cancelled: the callback will never run;
 *  -  0: it was not pending (already ran, is running now, was cancelled,
 *     or the handle is zero, stale or of another loop);
 *  - -1: queued: a handle made on the loop thread, cancelled from another
 *     thread. The loop thread decides when the cancel reaches it: if the
 *     callback has not run by then it never runs.
 *
 * Out of memory (only a queued cancel needs memory): the process aborts
 * with the message, since a lost cancel would let the callback run.
 * @par Ownership
 * As futoin_loop_cancel().
 * @par Thread
 * Any thread.
 */
int futoin_loop_try_cancel(FutoInLoop* loop, FutoInHandle* handle);

/**
 * @brief Whether the callback behind handle is still pending.
 * @param loop    the loop the handle was made on
 * @param handle  the handle (NULL or zeroed: 0)
 * @return 1 while it is pending, else 0. From another thread the answer is
 *         exact for cross-thread handles and always 0 for handles made on
 *         the loop thread.
 * @par Ownership
 * Reads only; *handle is left as it is.
 * @par Thread
 * Any thread.
 */
int futoin_loop_is_valid(const FutoInLoop* loop, const FutoInHandle* handle);

/**
 * @brief Whether the caller runs on the loop's thread.
 * @param loop  the loop
 * @return 1 when called on the thread that created the loop, else 0
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread.
 */
int futoin_loop_is_same_thread(const FutoInLoop* loop);

/**
 * @brief Counts one piece of outstanding work the loop cannot see (a step
 * waiting for another thread's success(), a request in flight elsewhere).
 *
 * While the count is above 0, futoin_loop_run() does not return when it
 * runs out of work but sleeps until another thread posts to it, and
 * futoin_loop_iterate() reports work.
 * @param loop  the loop
 * @par Ownership
 * The caller owes one futoin_loop_release() for each hold.
 * @par Thread
 * Any thread.
 */
void futoin_loop_hold(FutoInLoop* loop);
/**
 * @brief Ends one futoin_loop_hold(); the last release wakes a loop that
 * sleeps in futoin_loop_run() (it may return then).
 * @param loop  the loop
 * @par Ownership
 * Ends what one futoin_loop_hold() owed.
 * @par Thread
 * Any thread, also another one than the hold's.
 */
void futoin_loop_release(FutoInLoop* loop);

/**
 * @brief A file descriptor that becomes readable when another thread
 * queues work for the loop: for driving the loop from an fd-based event
 * loop, instead of (or as well as) the wake-up callback below.
 *
 * The same "at most once between two futoin_loop_iterate() calls" rule as
 * the callback applies: poll it together with futoin_loop_next_delay(),
 * then call futoin_loop_iterate(), which consumes the signal.
 * @param loop  the loop
 * @return the descriptor (an eventfd, or a pipe's reading end), or -1 if
 *         none could be created. Always -1 on Windows, where the loop
 *         waits on a Win32 event: use futoin_loop_set_wakeup() there
 * @par Ownership
 * The loop owns the descriptor and closes it in futoin_loop_free(): do not
 * close it, read it or write it.
 * @par Thread
 * The loop's thread.
 */
int futoin_loop_wakeup_fd(FutoInLoop* loop);

/**
 * @brief The loop's clock.
 * @param loop  the loop
 * @return milliseconds on the monotonic clock (an arbitrary origin), or on
 *         the virtual clock for a loop of futoin_loop_new_virtual() (0 at
 *         its creation). Inside a round it is the round's time.
 * @par Ownership
 * Reads only.
 * @par Thread
 * The loop's thread.
 */
uint64_t futoin_loop_now(const FutoInLoop* loop);

/**
 * @brief Runs one round: what other threads queued, the immediate callbacks
 * that were queued when the round started, then every timer that is due.
 * Never sleeps.
 *
 * No round inside a round: futoin_loop_iterate(), futoin_loop_run(),
 * futoin_loop_run_next() and futoin_loop_advance() called from inside a
 * callback of the same loop (a step, a handler, a timer or an immediate)
 * are refused: they run nothing and report to the loop's misuse handler
 * (futoin_set_misuse_handler(), with as NULL). The inner round would run
 * the timeout and cancel handler of a step whose callback is still on the
 * stack.
 *
 * A C++ exception (or a forced unwind) that a callback lets escape passes
 * through to the caller of the call that ran it; the loop reports it once
 * to the misuse handler and is abandoned: every later futoin_loop_iterate(),
 * futoin_loop_run(), futoin_loop_run_next() and futoin_loop_advance() is
 * refused with a message naming the cause (docs/SEMANTICS.md "Exceptions
 * and longjmp"). Only freeing is left to do.
 * @param loop           the loop
 * @param next_delay_ms  if not NULL, receives the plan for the caller's
 *                       sleep: 0 when immediates are pending, the ms until
 *                       the next timer, or -1 when nothing is pending (use
 *                       it as the timeout of another program's poll())
 * @return 1 if work remains (callbacks, queued messages or holds), 0 if the
 *         loop is empty, -1 when refused (called from inside a callback of
 *         the same loop, or the loop is abandoned)
 * @par Ownership
 * Nothing passes to the caller; the callbacks that run release what they own.
 * @par Thread
 * The loop's thread; callbacks run inside the call.
 */
int futoin_loop_iterate(FutoInLoop* loop, int64_t* next_delay_ms);

/**
 * @brief Runs rounds until no work is left (no callback, nothing queued by
 * other threads, no hold) or futoin_loop_stop() is called.
 *
 * When nothing is runnable the real clock sleeps in the kernel until the
 * next timer or a cross-thread wake-up (no busy waiting); the virtual clock
 * jumps to the next timer. Called from inside a callback of the same loop,
 * or on a loop that a callback left by an exception, it is refused like
 * futoin_loop_iterate() (nothing runs, a misuse report).
 * @param loop  the loop
 * @par Ownership
 * Nothing passes to the caller; the callbacks that run release what they own.
 * @par Thread
 * The loop's thread; callbacks run inside the call.
 */
void futoin_loop_run(FutoInLoop* loop);

/* ------------------------------------------------------------------------ */
/**
 * @name Embedding: driving a loop from another event loop
 *
 * Instead of futoin_loop_run(), an outer event loop (libuv, epoll, GLib, a
 * poll() loop; src/uv/ is one) can run a FutoInLoop on the loop's thread.
 * The outer loop does the waiting; the FutoInLoop says when it needs a round:
 *
 *   1. On the loop thread: futoin_loop_set_wakeup(loop, on_wakeup, ctx).
 *   2. Plan: d = futoin_loop_next_delay(loop)
 *      - d == 0:  run a round without blocking (immediates are pending);
 *      - d >  0:  run a round within d ms (arm a timer of the outer loop);
 *      - d == -1: nothing is scheduled: no timer.
 *   3. Run a round when the plan says so or on_wakeup asks for it:
 *      `more = futoin_loop_iterate(loop, &d);` (d is the new plan).
 *      more == 1 with d == -1 means work the loop cannot see (holds,
 *      cross-thread calls on their way): keep the outer loop alive, the
 *      callback fires when that work arrives. more == 0: the loop is empty.
 *   4. on_wakeup(ctx) means "the plan changed: do step 2 again (on the loop
 *      thread) before the outer loop blocks next". It is called
 *      - on the loop thread, inside the call that scheduled the work, when
 *        an immediate is queued while none was pending or a timer becomes
 *        the earliest one. That includes calls from loop callbacks inside
 *        futoin_loop_iterate(), whose returned plan already covers them (an
 *        embedder may ignore calls made while its iterate() runs);
 *      - on ANY OTHER thread, inside the call that made work visible to the
 *        loop (futoin_loop_immediate/deferred/stop from that thread, a cancel
 *        that has to be queued, a success()/error()/cancel() of a root, the
 *        release of the last hold; see @ref md_THREADS "docs/THREADS.md"), at
 *        most once between two futoin_loop_iterate() calls: the first such
 *        call after a round fires it, later ones only queue their work. Wake
 *        the outer loop's thread with a thread-safe primitive
 *        (uv_async_send(), g_main_context_wakeup(), a write to a pipe or an
 *        eventfd) and call futoin_loop_iterate() there.
 *   Cancelling a timer never fires it (the plan can only get later; a
 *   round that finds nothing to do is harmless).
 *
 * The callback must return quickly and must not block, run loop callbacks,
 * call futoin_loop_iterate()/run() or change the hook. On the loop thread it
 * may call futoin_loop_next_delay(); on other threads it may only touch
 * state that is safe to use from there. futoin_loop_run() still works on a
 * loop that has a hook (it waits by itself; the hook may fire meanwhile).
 * Example: tests/test_loop_embed.c drives a loop from a poll() loop.
 */
/** @{ */

/**
 * The wake-up callback of an embedded loop: "the plan changed" (see above).
 * It runs on the loop's thread or on another thread (see above), must
 * return quickly and must not block.
 * @param data  the data given to futoin_loop_set_wakeup()
 */
typedef void (*FutoInLoopWakeup)(void* data);

/**
 * @brief Sets (cb != NULL) or removes (cb == NULL) the wake-up callback; a
 * loop has at most one.
 *
 * After setting it, plan with futoin_loop_next_delay(): work may already
 * be pending.
 * @param loop  the loop
 * @param cb    the callback, or NULL to remove it
 * @param data  passed to cb
 * @par Ownership
 * data stays the caller's. When the call returns, no call of the previous
 * callback is running on another thread and none will start, so the
 * previous data may be freed.
 * @par Thread
 * The loop's thread.
 */
void futoin_loop_set_wakeup(FutoInLoop* loop, FutoInLoopWakeup cb, void* data);

/**
 * @brief The data given with the current wake-up callback: lets an embedder
 * find its own context from a FutoInLoop*.
 * @param loop  the loop
 * @return that data, NULL if no callback is set
 * @par Ownership
 * The data is the caller's own, given back; the loop does not own it.
 * @par Thread
 * The loop's thread.
 */
void* futoin_loop_wakeup_data(const FutoInLoop* loop);

/**
 * @brief What futoin_loop_iterate() reports in next_delay_ms, without
 * running anything.
 * @param loop  the loop
 * @return 0 when immediates or cross-thread calls are pending, the ms until
 *         the earliest timer (rounded up: a wait of that long never wakes
 *         too early), -1 when nothing is scheduled
 * @par Ownership
 * Reads only.
 * @par Thread
 * The loop's thread.
 */
int64_t futoin_loop_next_delay(const FutoInLoop* loop);

/** @} */

/**
 * @brief Makes futoin_loop_run() return after the current callback; what is
 * pending stays pending (a later run() goes on with it).
 *
 * From another thread run() returns when the request reaches the loop
 * thread (before the next callback it would have run). Out of memory (a
 * stop from another thread is queued): the process aborts with the
 * message, since a lost stop would leave the loop running.
 * @param loop  the loop
 * @par Ownership
 * Nothing passes: what is pending stays on the loop.
 * @par Thread
 * Any thread.
 */
void futoin_loop_stop(FutoInLoop* loop);

/**
 * @brief The number of pending callbacks.
 * @param loop  the loop (NULL: 0)
 * @return immediate plus deferred callbacks pending (the engine's own
 *         dispatcher and step timeouts included)
 * @par Ownership
 * Reads only.
 * @par Thread
 * The loop's thread.
 */
size_t futoin_loop_pending(const FutoInLoop* loop);

/** @name Virtual clock only (return -1 / do nothing on a real loop) */
/** @{ */

/**
 * @brief Runs exactly one callback: the first immediate, or else advances
 * the virtual clock to the earliest timer and runs it.
 * @param loop  a loop of futoin_loop_new_virtual()
 * @return 1 if a callback ran, 0 if the loop was empty, -1 on a real-clock
 *         loop or when refused (called from inside a callback of the same
 *         loop, see futoin_loop_iterate())
 * @par Ownership
 * As futoin_loop_iterate().
 * @par Thread
 * The loop's thread; the callback runs inside the call.
 */
int futoin_loop_run_next(FutoInLoop* loop);

/**
 * @brief Moves the virtual clock forward, running everything that becomes
 * due on the way (immediates first, then timers in due order, each at its
 * own due time).
 * @param loop  a loop of futoin_loop_new_virtual() (a real-clock loop:
 *              nothing happens)
 * @param ms    how far: any value (the clock stops at UINT64_MAX ns rather
 *              than wrapping)
 * @par Ownership
 * As futoin_loop_iterate().
 * @par Thread
 * The loop's thread; callbacks run inside the call. Refused from inside a
 * callback of the same loop (see futoin_loop_iterate()).
 */
void futoin_loop_advance(FutoInLoop* loop, uint64_t ms);

/** @} */

/* ------------------------------------------------------------------------ */
/**
 * @name Diagnostics: where the library's own messages go
 *
 * The library never writes to stderr by itself: every line it prints goes
 * through one process-wide log handler, which by default
 * (futoin_log_stderr()) writes the line and a newline to stderr. These lines
 * are: the default misuse handler's reports (futoin_set_misuse_handler() not
 * called on the loop), the message before an abort for out of memory, the
 * default dump handler's loop dump (futoin_loop_set_dump_handler(),
 * futoin_loop_dump_on_signal()) and the libuv backend's warnings. Replace the
 * handler to send them to a log of your own. What each kind means, and every
 * other way the library reports a failure: @ref md_ERRORS "docs/ERRORS.md".
 */
/** @{ */

/** What a line given to the log handler is about. Later versions may add
 * kinds: treat an unknown one like FUTOIN_LOG_WARNING. */
typedef enum FutoInLogKind {
    /** API misuse that no step could be told of: the default misuse handler
     * (futoin_set_misuse_handler()), a nested futoin_uv_run(). Starts with
     * "futoin: API misuse: ". An unhandled error is not misuse (see
     * FUTOIN_LOG_WARNING). */
    FUTOIN_LOG_MISUSE = 1,
    /** The process aborts right after the handler returns: memory that
     * nobody could be told of could not be had ("futoin: out of memory:
     * ...", "futoin: out of memory allocating N bytes", "futoin: out of
     * frame extras"). Reported while memory is exhausted: the handler must
     * not allocate. It may end the process itself (_exit()); if it returns,
     * the library calls abort(). */
    FUTOIN_LOG_FATAL = 2,
    /** Something went wrong that nobody was set up to hear, and the library
     * went on: an error that escaped a root executed without an
     * unhandled-error callback, on a loop without a misuse handler of its
     * own ("futoin: unhandled error CODE (INFO)"); futoin_uv_free() with
     * streams or servers not released; a loop dump that could not be
     * buffered. */
    FUTOIN_LOG_WARNING = 3,
    /** One line of a loop dump written by the default dump handler
     * (@ref md_OBSERVABILITY "docs/OBSERVABILITY.md" has the format), from
     * "futoin loop ...: dump at" to "end of dump: ...", one call per line, on
     * the loop's thread. */
    FUTOIN_LOG_DUMP = 4
} FutoInLogKind;

/**
 * @brief Receives every line the library prints.
 * @param data  the data given to futoin_set_log_handler()
 * @param kind  a FutoInLogKind value (an int, so that a handler compiled
 *              now can be given kinds added later)
 * @param line  one line, without a trailing newline; valid during the call
 *
 * Called on whatever thread made the report (a loop's thread, a worker or
 * pool thread), possibly on several threads at once: the handler must be
 * thread-safe. It is never called from a signal handler. It may call the
 * library (a misuse it makes is reported to it again, so do not recurse
 * without end); for FUTOIN_LOG_FATAL it must not allocate.
 */
typedef void (*FutoInLogHandler)(void* data, int kind, const char* line);

/**
 * @brief Sets the process-wide log handler.
 *
 * The handler and its data are swapped together under a lock. A report
 * already under way on another thread may still reach the previous
 * handler after this returns, so keep the previous data valid (static
 * data, or until those threads are done): setting the handler once at
 * start-up, before threads use the library, is simplest.
 * @param handler    the new handler; NULL restores the default,
 *                   futoin_log_stderr()
 * @param data       passed to handler (ignored when handler is NULL)
 * @param prev_data  if not NULL, receives the previous handler's data
 * @return the previous handler: futoin_log_stderr when the default was in
 *         effect, never NULL, so that futoin_set_log_handler(prev, pdata)
 *         restores it and a handler may pass lines on to it
 * @par Ownership
 * data stays the caller's; the library only passes it to handler.
 * @par Thread
 * Any thread, at any time (also from inside a handler).
 */
FutoInLogHandler futoin_set_log_handler(FutoInLogHandler handler, void* data, void** prev_data);

/**
 * @brief The default log handler: writes line and a newline to stderr in
 * one stdio call (lines of different threads do not mix), whatever the
 * kind.
 * @param data  unused
 * @param kind  unused
 * @param line  the line
 * @par Ownership
 * line is borrowed for the call.
 * @par Thread
 * Any thread (a handler of yours may pass lines on to it).
 */
void futoin_log_stderr(void* data, int kind, const char* line);

/**
 * @brief Sends one line through the current log handler: for libraries
 * built on this one (the libuv backend reports this way) that want their
 * messages to go where the application sends the library's.
 * Does not abort for FUTOIN_LOG_FATAL: that is the caller's to do.
 * @param kind  a FutoInLogKind value
 * @param line  one line without a trailing newline (NULL: nothing is sent)
 * @par Ownership
 * line is borrowed for the call.
 * @par Thread
 * Any thread.
 */
void futoin_log_write(int kind, const char* line);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_ASYNCTOOL_H */
