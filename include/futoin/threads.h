/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief Threads: loops on threads of their own, a pool of such loops with
 * least-loaded placement of new roots, and blocking work on worker threads as
 * a step. The full contract is in @ref md_THREADS "docs/THREADS.md"; in
 * short:
 *
 *  - Cross-thread calls. futoin_loop_immediate/deferred/cancel/stop/hold/
 *    release (asynctool.h) and, on an AsyncSteps of this library, success(),
 *    error(), cancel() and free() may be called from any thread. From a
 *    thread other than the loop's they are queued (lock-free) and run by the
 *    loop thread in call order; the call returns at once.
 *  - Exactly one outcome. A cross-thread success()/error() and the step's
 *    timeout or a cancel are decided on the loop thread: the first to get
 *    there wins; a success()/error() that loses is dropped (its values are
 *    cleaned up exactly once) and reported to the loop's misuse handler.
 *    A success()/error() only applies to the step that was waiting when it
 *    was called: it never completes a later step of the flow.
 *  - Lifetime. Cross-thread calls need the loop, and the root they name, to
 *    be alive: a step waiting for another thread should hold the loop
 *    (futoin_loop_hold) so that run() does not return under it, and the
 *    other thread must be done calling before the root is freed.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
 */
#ifndef FUTOIN_THREADS_H
#define FUTOIN_THREADS_H

#include <futoin/asyncsteps.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* A loop on its own thread                                                  */

/** A loop running on a thread of its own (opaque). */
typedef struct FutoInLoopThread FutoInLoopThread;

/** Optional hooks, run on the loop thread: on_start before the loop runs
 * (add roots here, or later through futoin_loop_immediate), on_stop after
 * it has stopped and before it is freed: free the roots still on the loop
 * here (futoin_asyncsteps_free cancels a running one); roots left alive
 * leak. */
typedef struct FutoInLoopThreadHooks {
    void (*on_start)(FutoInLoop* loop, void* data); /**< Before the loop runs; may be NULL. */
    void (*on_stop)(FutoInLoop* loop, void* data);  /**< After it stopped; may be NULL. */
    void* data;                                     /**< Passed to both hooks. */
} FutoInLoopThreadHooks;

/**
 * @brief Starts a thread running a new real-clock loop (created on that
 * thread, so futoin_loop_is_same_thread() is true there). Returns once the
 * loop exists (after on_start has been called).
 *
 * The loop keeps running while it has nothing to do, until
 * futoin_loop_thread_stop(): post work to it with futoin_loop_immediate()
 * (or add roots in on_start).
 * @param hooks  on_start/on_stop and their data (NULL: none); copied
 * @return the thread, or NULL on failure (out of memory, no thread, no loop)
 * @par Ownership
 * The caller owns the thread object: futoin_loop_thread_join() frees it,
 * and the loop with it (on the loop's own thread). Roots still on the loop
 * when it stops are the on_stop hook's to free. hooks->data stays the
 * caller's, valid until the join returns.
 * @par Thread
 * Any thread; the hooks run on the new thread.
 */
FutoInLoopThread* futoin_loop_thread_start(const FutoInLoopThreadHooks* hooks);

/**
 * @brief The thread's loop.
 * @param t  the thread (not NULL)
 * @return its loop: valid until futoin_loop_thread_join() returns. Other
 *         threads may call its cross-thread functions (futoin_loop_immediate()
 *         and the others <futoin/asynctool.h> lists); everything else on it
 *         belongs to the loop's thread.
 * @par Ownership
 * Borrowed: the loop belongs to the thread (do not free it).
 * @par Thread
 * Any thread.
 */
FutoInLoop* futoin_loop_thread_loop(const FutoInLoopThread* t);

/** Modes of futoin_loop_thread_stop() and futoin_loop_pool_stop(). */
enum {
    /** Run until idle, then exit: no callback pending, nothing queued by
     * other threads, no hold (futoin_loop_hold, futoin_add_work). Roots
     * that still wait with none of these are handed to on_stop. */
    FUTOIN_LOOP_STOP_DRAIN = 0,
    /** Stop after the callback that is running: pending callbacks and
     * timers are dropped, roots are handed to on_stop as they are. */
    FUTOIN_LOOP_STOP_NOW = 1
};

/**
 * @brief Asks the thread to stop; returns at once.
 *
 * May be repeated: NOW after DRAIN makes it stop at once. After the loop
 * stopped and on_stop ran, the thread still receives what other threads
 * post while the loop is held (for instance work completing after a NOW
 * stop), so that nothing is posted to a freed loop; then it frees the loop
 * and exits.
 * @param t     the thread (NULL: nothing happens)
 * @param mode  FUTOIN_LOOP_STOP_DRAIN or FUTOIN_LOOP_STOP_NOW; any other
 *              value acts as DRAIN
 * @par Ownership
 * t stays the caller's: join it with futoin_loop_thread_join().
 * @par Thread
 * Any thread, the loop's own included.
 */
void futoin_loop_thread_stop(FutoInLoopThread* t, int mode);

/**
 * @brief Waits for the thread to exit and frees t. A thread that was never
 * stopped is stopped with FUTOIN_LOOP_STOP_DRAIN first.
 * @param t  the thread (NULL: nothing happens)
 * @par Ownership
 * Frees t; its loop was freed by the thread before it exited.
 * @par Thread
 * Any thread but the loop's own (it would wait for itself).
 */
void futoin_loop_thread_join(FutoInLoopThread* t);

/* ------------------------------------------------------------------------ */
/* A pool of loop threads                                                    */

/** A pool of loop threads (opaque). */
typedef struct FutoInLoopPool FutoInLoopPool;

/** Most threads a loop pool or the worker pool runs (the limit of
 * futoin_loop_pool_new() and futoin_work_pool_configure(); defaults taken
 * from the CPU count are capped at it). */
#define FUTOIN_THREADS_MAX 1024u

/**
 * @brief A pool of n loops on n threads of their own (loop threads).
 * @param n  the number of loops, 0..FUTOIN_THREADS_MAX; 0: one per online
 *           CPU (sysconf(), GetSystemInfo() on Windows; at most
 *           FUTOIN_THREADS_MAX)
 * @return the pool, or NULL on failure (out of memory, a thread that cannot
 *         be started); n above FUTOIN_THREADS_MAX: NULL with errno EINVAL,
 *         no thread started
 * @par Ownership
 * The caller owns the pool and frees it with futoin_loop_pool_free().
 * @par Thread
 * Any thread.
 */
FutoInLoopPool* futoin_loop_pool_new(unsigned n);
/**
 * @brief The number of loops (threads) of the pool.
 * @param pool  the pool
 * @return its size, fixed at futoin_loop_pool_new()
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread.
 */
unsigned futoin_loop_pool_size(const FutoInLoopPool* pool);
/**
 * @brief Loop i of the pool.
 * @param pool  the pool
 * @param i     the index, 0..size-1
 * @return the loop (valid until futoin_loop_pool_free()), NULL for
 *         i >= futoin_loop_pool_size(). Other threads may only use its
 *         cross-thread functions.
 * @par Ownership
 * Borrowed: the loop belongs to the pool (do not free it).
 * @par Thread
 * Any thread.
 */
FutoInLoop* futoin_loop_pool_loop(const FutoInLoopPool* pool, unsigned i);

/**
 * @brief The load of loop i: the roots placed there by
 * futoin_loop_pool_spawn() that have not finished yet (counted atomically
 * from the spawn call on).
 * @param pool  the pool
 * @param i     the index, 0..size-1
 * @return the count, 0 for i >= futoin_loop_pool_size()
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread (a snapshot).
 */
unsigned futoin_loop_pool_load(const FutoInLoopPool* pool, unsigned i);

/**
 * Called on the chosen loop's thread with a fresh root: add its steps (the
 * pool executes it when this returns).
 * @param root  the new root; the pool owns it and frees it after done
 * @param data  the data given to futoin_loop_pool_spawn()
 */
typedef void (*FutoInPoolSetup)(FutoInAsyncSteps* root, void* data);
/**
 * Called on the root's loop thread when the root ends. The root is freed
 * right after. May be NULL.
 * @param data  the data given to futoin_loop_pool_spawn(): release it here
 * @param code  NULL on success, the unhandled error code, or
 *              FUTOIN_POOL_CANCELLED when the pool stopped before the root
 *              finished (borrowed for the call)
 */
typedef void (*FutoInPoolDone)(void* data, const char* code);
/** The code FutoInPoolDone gets for a root that the pool's stop cancelled. */
#define FUTOIN_POOL_CANCELLED "Cancelled"

/**
 * @brief Places a new root on the least-loaded loop (ties: the next loop
 * after the last choice): counts it there, creates it on that loop's
 * thread, runs setup(root, data), executes it and frees it when it ends
 * (after done).
 *
 * Out of memory: -1 when the record or the message to the loop cannot be
 * had (nothing runs); once accepted, a root that cannot be made on the
 * loop thread gets done(data, "InternalError") at once, without setup.
 * @param pool   the pool
 * @param setup  adds the root's steps (NULL: -1)
 * @param done   told how the root ended (may be NULL)
 * @param data   passed to setup and done
 * @return the loop's index, or -1 (the pool is NULL or stopping, setup is
 *         NULL, or out of memory)
 * @par Ownership
 * The pool owns the root. data stays the caller's: once spawn returned an
 * index, done (if given) is called exactly once, the place to release it;
 * on -1 neither setup nor done is called.
 * @par Thread
 * Any thread; setup and done run on the chosen loop's thread.
 */
int futoin_loop_pool_spawn(FutoInLoopPool* pool, FutoInPoolSetup setup, FutoInPoolDone done,
        void* data);

/**
 * @brief Stops every loop; roots of the pool that have not finished are
 * cancelled and get FUTOIN_POOL_CANCELLED. Spawning is refused from then
 * on. Returns at once.
 * @param pool  the pool (NULL: nothing happens)
 * @param mode  as futoin_loop_thread_stop()
 * @par Ownership
 * The pool stays the caller's: free it with futoin_loop_pool_free().
 * @par Thread
 * Any thread.
 */
void futoin_loop_pool_stop(FutoInLoopPool* pool, int mode);

/**
 * @brief Stops the pool (DRAIN unless stopped already), joins every thread
 * and frees it.
 * @param pool  the pool (NULL: nothing happens)
 * @par Ownership
 * Frees the pool, its threads and loops; the loops it returned are gone.
 * @par Thread
 * Any thread but the pool's own loop threads.
 */
void futoin_loop_pool_free(FutoInLoopPool* pool);

/* ------------------------------------------------------------------------ */
/* Blocking work on worker threads                                           */

/** What a work function reports: success values or an error. */
typedef struct FutoInWorkResult {
    /** Success values (up to four); ownership passes to the engine. */
    FutoInArgs args;
    /** Non-NULL: the step fails with this code instead (args must then be
     * empty); copied right after the work function returns, so a string
     * literal or a buffer in work_data is fine. */
    const char* error;
    /** The error's info (may be NULL), copied like error. */
    const char* info;
} FutoInWorkResult;

/**
 * The work of futoin_add_work(): runs on a worker thread and may block. It
 * must not call into the loop or the step (only cross-thread functions).
 * @param work_data  the data given to futoin_add_work()
 * @param out        zeroed; set out->args (success values, which pass to
 *                   the engine) or out->error and out->info
 */
typedef void (*FutoInWorkFn)(void* work_data, FutoInWorkResult* out);
/**
 * Releases the work's data: runs on the loop thread exactly once, when
 * neither the step nor a worker will use work_data again. May be NULL.
 * @param work_data  the data given to futoin_add_work()
 */
typedef void (*FutoInWorkRelease)(void* work_data);

/**
 * @brief Adds a step that runs fn(work_data) on the worker pool and completes
 * with its result: success(out.args) or error(out.error, out.info), on the
 * step's own loop. Like uv_queue_work:
 *  - if the step is cancelled (root cancel, timeout of an outer step, ...)
 *    before a worker picks the work up, fn never runs;
 *  - if it is cancelled while fn runs, the result is dropped when fn
 *    returns: every value's cleanup runs exactly once;
 *  - release(work_data) runs once in every case, on the loop thread.
 * The loop is held while the work is outstanding, so run() waits for it.
 * as must be an object of this library: another implementation's object
 * gets InternalError (its handle_error()) and release(work_data) at once.
 * Traced like futoin_add() in a tracing build. Out of memory: the step
 * fails with InternalError ("futoin_add_work(): out of memory", or "...
 * cannot start worker threads (out of memory or threads)"),
 * release(work_data) runs; the step node aborts the process with "futoin:
 * out of memory".
 * @param as         the flow the callback runs in (or the idle root)
 * @param fn         the work (not NULL)
 * @param work_data  passed to fn and release
 * @param release    releases work_data (may be NULL)
 * @par Ownership
 * work_data is shared by the step and the worker until release runs,
 * exactly once, on the loop thread. The values fn puts in out->args pass
 * to the engine (the next step's, or cleaned up if the step is gone).
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet. fn runs on a worker.
 */
void futoin_add_work(FutoInAsyncSteps* as, FutoInWorkFn fn, void* work_data,
        FutoInWorkRelease release);

/**
 * @brief Sets the number of worker threads of the process-wide worker pool,
 * which starts them on the first futoin_add_work().
 * @param threads  0..FUTOIN_THREADS_MAX; 0: the default, one per online
 *                 CPU, at least 2 and at most FUTOIN_THREADS_MAX
 * @return 0, or -1 (setting unchanged) once the pool is running or when
 *         threads is above FUTOIN_THREADS_MAX
 * @par Ownership
 * A process-wide setting; nothing passes.
 * @par Thread
 * Any thread.
 */
int futoin_work_pool_configure(unsigned threads);

/**
 * @brief Waits until queued and running work has finished, then joins the
 * workers (for a clean exit under leak checkers); a later futoin_add_work()
 * starts them again.
 * @par Ownership
 * The worker threads are the library's: it joins them and frees what they
 * used.
 * @par Thread
 * Any thread but a worker. The results of the finished work still reach
 * their loops: run them (or free them) afterwards.
 */
void futoin_work_pool_shutdown(void);

#if FUTOIN_TRACING && !defined(FUTOIN_NO_TRACE_MACROS)
/* The tracing build records where the work step was added (see asyncsteps.h). */
#define futoin_add_work(as, fn, work_data, release)                                                \
    FUTOIN_TRACE_CALL_((futoin_add_work)((as), (fn), (work_data), (release)))
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_THREADS_H */
