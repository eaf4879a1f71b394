/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief Observability: walk the live roots of a loop and see where each
 * flow waits, dump them as text (also on a signal or from another thread),
 * and read the loop's always-on counters.
 *
 * Everything here reads what the engine keeps anyway: a root or frame
 * costs no extra memory for it, and the counters are bumped only where the
 * engine does more work already (per dispatch burst, per error, timeout,
 * cancel or failed lock), never per step.
 *
 * **Threads.** The walk, the dump and the counters are for the loop's
 * thread: they read engine state that only that thread may touch, and
 * return NULL / -1 on any other. Another thread (or a signal handler)
 * asks instead: futoin_loop_request_dump() queues a request that the loop
 * thread answers at the start of its next round by calling the handler set
 * with futoin_loop_set_dump_handler(). A loop that is stuck inside a
 * callback (an endless loop, a blocking call) never gets to its next round
 * and so cannot answer; a debugger is the tool then.
 *
 * **Walking.** Roots come from futoin_root_iter_next(), the flows of a root
 * (its main flow, then the parallel branches, depth first) from
 * futoin_flow_next(), and each flow's frames by level from
 * futoin_frame_info(). All of these are plain loops over the engine's own
 * links: no recursion and no allocation, whatever the nesting depth. The
 * handles they return are only valid until the engine runs again: do not
 * call into the library (other than the functions of this header) between
 * the calls of one walk, and never keep a branch handle past it.
 *
 * Struct arguments take their size (`sizeof(*out)`): the library writes at
 * most that many bytes, so a program built against these headers keeps
 * working when a later minor version adds members at the end.
 *
 * @ref md_OBSERVABILITY "docs/OBSERVABILITY.md" describes the dump's format
 * and how to use it.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
 */
#ifndef FUTOIN_INTROSPECT_H
#define FUTOIN_INTROSPECT_H

#include <futoin/asyncsteps.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/** @name States and kinds */
/** @{ */

/** The state of a root (futoin_flow_info() of any of its flows). */
typedef enum FutoInRootState {
    FUTOIN_ROOT_IDLE = 0, /**< made (or reused by add()), not executed */
    FUTOIN_ROOT_QUEUED,   /**< executed; a flow of it waits in the ready queue for its turn */
    FUTOIN_ROOT_RUNNING,  /**< a callback of it is on the C stack (seen from inside one) */
    FUTOIN_ROOT_WAITING,  /**< executed; every flow of it waits for something */
    FUTOIN_ROOT_DONE,     /**< finished: its last step completed */
    FUTOIN_ROOT_FAILED,   /**< finished: an error escaped level 0 */
    FUTOIN_ROOT_CANCELLED /**< finished: cancelled (or being freed) */
} FutoInRootState;

/** The state of one flow: a root's main flow or a parallel branch. */
typedef enum FutoInFlowState {
    FUTOIN_FLOW_IDLE = 0, /**< a root that was not executed */
    FUTOIN_FLOW_QUEUED,   /**< in the ready queue: runs on its next turn */
    FUTOIN_FLOW_RUNNING,  /**< one of its callbacks is on the C stack */
    FUTOIN_FLOW_WAITING,  /**< its top frame waits (futoin_flow_info() says for what) */
    FUTOIN_FLOW_FINISHED  /**< a root that finished (done, failed or cancelled) */
} FutoInFlowState;

/** What a waiting flow waits for: the wait of its top frame. */
typedef enum FutoInWaitKind {
    FUTOIN_WAIT_NONE = 0, /**< not waiting */
    FUTOIN_WAIT_EXTERNAL, /**< a success()/error() from outside the flow (waitExternal(),
                               setCancel(), setTimeout()); maybe its timeout */
    FUTOIN_WAIT_AWAIT,    /**< futoin_await(): a FutoInCompletion to be resolved */
    FUTOIN_WAIT_WORK,     /**< futoin_add_work(): a worker thread's result */
    FUTOIN_WAIT_SYNC,     /**< the lock() of a sync step: a Mutex, Throttle or Limiter queue */
    FUTOIN_WAIT_PARALLEL, /**< the branches of a parallel step */
    FUTOIN_WAIT_YIELD     /**< futoin_relinquish(): its trip through the loop */
} FutoInWaitKind;

/** What a frame is: the kind of step that started it. */
typedef enum FutoInFrameKind {
    FUTOIN_FRAME_QUEUE = 0, /**< level 0: the root's (or branch's) own queue, no step */
    FUTOIN_FRAME_STEP,      /**< a step (add()) */
    FUTOIN_FRAME_LOOP,      /**< loop(), repeat() or a forEach helper */
    FUTOIN_FRAME_PARALLEL,  /**< parallel() */
    FUTOIN_FRAME_SYNC,      /**< addSync(): the lock and then the critical section */
    FUTOIN_FRAME_VALUE,     /**< futoin_success_step() */
    FUTOIN_FRAME_YIELD,     /**< futoin_relinquish() */
    FUTOIN_FRAME_AWAIT,     /**< futoin_await() */
    FUTOIN_FRAME_WORK       /**< futoin_add_work() */
} FutoInFrameKind;

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Walking the live roots of a loop (loop thread only) */
/** @{ */

/** A position among a loop's roots, kept by the caller (fields private). */
typedef struct FutoInRootIter {
    void* priv_[3]; /**< private: do not use */
} FutoInRootIter;

/**
 * @brief Starts a walk over the live roots of a loop: those made by
 * futoin_asyncsteps_new() and not yet freed, whatever their state.
 * @param it    the iterator to set up (the caller's memory)
 * @param loop  the loop; the call must be made on its thread
 * @return 0, or -1 when loop is NULL or this is not its thread (the walk
 *         then yields no root)
 * @par Ownership
 * it is the caller's memory; nothing is allocated, nothing to release.
 * @par Thread
 * The loop's thread (else -1).
 */
int futoin_root_iter_init(FutoInRootIter* it, FutoInLoop* loop);

/**
 * @brief The next live root of the walk. The order is unspecified (the
 * engine's root memory, not creation order). Each call is O(1) amortised:
 * the walk visits every root slot the loop ever made once.
 * @param it  an iterator set up by futoin_root_iter_init()
 * @return the root's handle, or NULL when there is none left
 * @par Ownership
 * The roots stay their owners'; do not call into the library (but this
 * header) between the calls of one walk.
 * @par Thread
 * The loop's thread.
 */
FutoInAsyncSteps* futoin_root_iter_next(FutoInRootIter* it);

/**
 * @brief The flows of a root, depth first: its main flow (the root handle
 * itself), then the branches of the parallel step its main flow waits
 * for, each followed by its own branches. Iterative: a million nested
 * parallels cost no C stack.
 * @param root  a root of this library (loop thread)
 * @param prev  NULL to start, else the flow this function returned last
 * @return the next flow's handle (a branch's handle is the FutoInAsyncSteps*
 *         its callbacks get), or NULL after the last one or when root or prev
 *         is not a flow of this library
 * @par Ownership
 * A branch handle is valid only until the engine runs again: never keep
 * it past the walk.
 * @par Thread
 * The loop's thread.
 */
FutoInAsyncSteps* futoin_flow_next(FutoInAsyncSteps* root, FutoInAsyncSteps* prev);

/** A root as a whole (futoin_root_info()). */
typedef struct FutoInRootInfo {
    FutoInAsyncSteps* root; /**< the root */
    FutoInRootState state;  /**< its state */
    uint32_t flows;         /**< its live flows: the main flow and every running branch */
    uint32_t depth;         /**< its main flow's depth (frames above level 0) */
    size_t queued;          /**< steps queued at level 0, not started yet */
    const char*
            error_code; /**< the main flow's error code ("" if none): why a FAILED root failed */
    const char* error_info; /**< its error_info, "" if none */
} FutoInRootInfo;

/**
 * @brief Describes a root as a whole. O(flows of the root), to tell a
 * queued root from a waiting one.
 * @param root  a root of this library (loop thread)
 * @param out   where the description goes; its strings stay valid until
 *              the engine runs again
 * @param size  sizeof(*out): at most that many bytes are written
 * @return 0, or -1 when root is not a live root of this library or the call
 *         is not made on its loop's thread (*out untouched)
 * @par Ownership
 * *out is the caller's memory; the handle and strings it gets are borrowed
 * from the engine.
 * @par Thread
 * The loop's thread (else -1).
 */
int futoin_root_info(FutoInAsyncSteps* root, FutoInRootInfo* out, size_t size);

/** Where a flow is and what it waits for (futoin_flow_info()). */
typedef struct FutoInFlowInfo {
    FutoInAsyncSteps* flow; /**< the flow itself */
    FutoInAsyncSteps* root; /**< its root (== flow for a main flow) */
    FutoInAsyncSteps*
            parent; /**< the flow whose parallel step it is a branch of; NULL for a main flow */
    uint32_t depth; /**< frames above level 0 (futoin_frame_info() levels 0..depth) */
    FutoInFlowState state; /**< the flow's state */
    FutoInWaitKind wait;   /**< what its top frame waits for (FUTOIN_WAIT_NONE unless WAITING) */
    uint32_t timer_level;  /**< level of the frame whose timeout comes first; UINT32_MAX: none */
    uint64_t
            timer_left_ms; /**< ms until that timeout (rounded up; 0: due), if timer_level is set */
    const char* wait_info; /**< the innermost futoin_set_wait_info() text of the flow, "" if none */
    const char* error_code; /**< the flow's current error code or break label, "" if none */
    const char* error_info; /**< the flow's own error_info, "" if none */
    /** Step callbacks started on the flow so far, modulo 2^32: execute
     * callbacks, loop iterations and lock() of sync steps (not error,
     * cancel or unhandled-error callbacks). It stays put while a step
     * waits and while an error unwinds through the handlers, and changes
     * as soon as the flow starts another step: two readings that differ
     * mean the flow moved on in between. */
    uint32_t steps_started;
} FutoInFlowInfo;

/**
 * @brief Describes one flow. O(depth): the timers and wait texts of every
 * frame are looked at (its root's state: futoin_root_info()).
 * @param flow  a flow handle of this library (a root or a branch)
 * @param out   where the description goes; its strings stay valid until
 *              the engine runs again
 * @param size  sizeof(*out): at most that many bytes are written
 * @return 0, or -1 when flow is not a flow of this library or the call is
 *         not made on its loop's thread (*out untouched)
 * @par Ownership
 * *out is the caller's memory; the handles and strings it gets are borrowed
 * from the engine.
 * @par Thread
 * The loop's thread (else -1).
 */
int futoin_flow_info(FutoInAsyncSteps* flow, FutoInFlowInfo* out, size_t size);

/** @name Frame flags (FutoInFrameInfo::flags) */
/** @{ */
#define FUTOIN_FRAME_ERROR_HANDLER 0x01u /**< the step has an error handler (error_handler) */
#define FUTOIN_FRAME_EH_RAN 0x02u /**< its error handler has run (it is never called again) */
#define FUTOIN_FRAME_CANCEL_HANDLER 0x04u /**< a cancel handler is armed */
#define FUTOIN_FRAME_TIMEOUT 0x08u        /**< a timeout is armed (timeout_left_ms) */
#define FUTOIN_FRAME_STACK 0x10u          /**< it holds stack() memory */
#define FUTOIN_FRAME_WAITING 0x20u        /**< it waits (external completion, branches, lock) */
#define FUTOIN_FRAME_LOCKED 0x40u         /**< SYNC: lock() succeeded, unlock() is owed */
/** @} */

/** One frame of a flow's stack (futoin_frame_info()): what the engine
 * keeps for it. A frame does not keep its step's execute callback; what
 * it keeps is below. */
typedef struct FutoInFrameInfo {
    uint32_t level;           /**< 0: the queue of the root or branch; 1..depth: started steps */
    FutoInFrameKind kind;     /**< what started it */
    uint32_t flags;           /**< FUTOIN_FRAME_* flags */
    size_t queued;            /**< sub-steps queued in it, not started yet (O(n) count) */
    uint64_t timeout_left_ms; /**< with FUTOIN_FRAME_TIMEOUT: ms until it fires (rounded up) */
    /** The step's error handler; for level 0 of a root, its unhandled-error callback. */
    FutoInAsyncSteps_error_callback error_handler;
    /** The step's data where the frame keeps it (steps with an error handler, loops,
     * the critical section of a sync step, await and work steps), else NULL. */
    void* data;
    size_t iteration;  /**< LOOP: the current iteration (0 first) */
    size_t count;      /**< LOOP: repeat()'s count; 0 for loop() (until break) */
    const char* label; /**< LOOP: its label, NULL if none */
    uint32_t branches; /**< PARALLEL: branches still running (queued before it starts) */
    FutoInSync* sync;  /**< SYNC: the sync object */
    /** SYNC: "Mutex", "Throttle" or "Limiter" for this library's objects, else "sync". */
    const char* sync_kind;
    uint32_t
            sync_queue; /**< SYNC waiting: 1 in the concurrency queue, 2 in the rate queue, 0 not queued or unknown */
    uint32_t sync_position;     /**< its place in that queue: 1 is next */
    uint32_t sync_queue_length; /**< that queue's length */
    const char* wait_info;      /**< this frame's futoin_set_wait_info() text, NULL if none */
    /** Tracing build (FUTOIN_TRACING) only, else NULL: the step's execute callback
     * (a loop: its body; a sync step: the critical section; NULL for a parallel step). */
    void (*callback)(void);
    /** Tracing build only, else NULL: the file of the add() call that queued the step. */
    const char* file;
    uint32_t line; /**< tracing build only, else 0: its line */
} FutoInFrameInfo;

/**
 * @brief Describes the frame at one level of a flow's stack. O(1) but for
 * counting the queued sub-steps and a sync object's queue position.
 * @param flow   a flow handle of this library (loop thread)
 * @param level  0 (the flow's own queue) to its depth
 * @param out    where the description goes; its strings stay valid until
 *               the engine runs again
 * @param size   sizeof(*out): at most that many bytes are written
 * @return 0, or -1 for a bad flow, a level above the depth or the wrong thread
 * @par Ownership
 * *out is the caller's memory; the pointers and strings it gets are borrowed
 * from the engine.
 * @par Thread
 * The loop's thread (else -1).
 */
int futoin_frame_info(FutoInAsyncSteps* flow, uint32_t level, FutoInFrameInfo* out, size_t size);

/** Text for a root state ("idle", "queued", "running", "waiting", "done", "failed", "cancelled").
 * @param state  a FutoInRootState
 * @return a static string ("?" for an unknown value)
 * @par Ownership
 * A static string: never freed.
 * @par Thread
 * Any thread. */
const char* futoin_root_state_name(FutoInRootState state);

/** Text for a frame kind ("queue", "step", "loop", "parallel", "sync", "value", "yield", "await", "work").
 * @param kind  a FutoInFrameKind
 * @return a static string ("?" for an unknown value)
 * @par Ownership
 * A static string: never freed.
 * @par Thread
 * Any thread. */
const char* futoin_frame_kind_name(FutoInFrameKind kind);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Counters */
/** @{ */

/** A loop's counters (futoin_loop_counters()). Totals count from the
 * loop's creation; the gauges (roots, timers, immediates) are current. */
typedef struct FutoInLoopCounters {
    uint64_t roots; /**< live roots: made and not yet freed */
    /** Dispatcher work: one per flow turn plus one per further step callback run in
     * that turn (the burst budget used), added once per dispatch burst. */
    uint64_t steps;
    /** Errors raised: error() calls that took effect and misuse InternalErrors
     * (not timeouts), recovered ones included (a libuv read's CommError "EOF"
     * that a handler turns into a normal end counts too); failures nobody
     * recovered from are unhandled_errors. */
    uint64_t errors;
    uint64_t timeouts; /**< steps that failed with Timeout */
    uint64_t cancels;  /**< roots cancelled: cancel(), or free() of a running root */
    uint64_t
            sync_rejections; /**< lock() of a sync step failed (DefenseRejected); also counted in errors */
    uint64_t unhandled_errors; /**< roots that failed: an error escaped level 0 */
    uint64_t
            timers_pending; /**< deferred callbacks pending on the loop (the engine's timeouts included) */
    uint64_t immediates_pending; /**< immediate callbacks pending */
    uint64_t xmsgs;              /**< cross-thread messages the loop thread has run */
} FutoInLoopCounters;

/**
 * @brief Reads the loop's counters: O(1), cheap enough to serve on every request.
 * @param loop  the loop; the call must be made on its thread
 * @param out   where they go
 * @param size  sizeof(*out): at most that many bytes are written
 * @return 0, or -1 when loop or out is NULL or this is not the loop's thread
 * @par Ownership
 * *out is the caller's memory; nothing else passes.
 * @par Thread
 * The loop's thread (else -1). Another thread reads them from a copy the
 * loop's thread publishes (the HTTP example's /stats does so).
 */
int futoin_loop_counters(FutoInLoop* loop, FutoInLoopCounters* out, size_t size);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Error traces (tracing build) */
/** @{ */

/** One step of an error's trace. */
typedef struct FutoInTraceEntry {
    FutoInFrameKind kind; /**< what the step was */
    /** Its execute callback (a loop: its body; a sync step: the critical section),
     * NULL for a parallel step. */
    void (*callback)(void);
    /** Where it was added: the __FILE__ of the add() call, NULL when unknown (code
     * compiled without the tracing macros, or a step the library queued itself). */
    const char* file;
    uint32_t line; /**< the line of that call, 0 when unknown */
} FutoInTraceEntry;

/** Steps an error trace keeps at most: the innermost ones, nearest the failure. */
#define FUTOIN_TRACE_MAX 64u

/**
 * @brief Whether the library in use was built with tracing (FUTOIN_TRACING).
 * Without it frames keep no callback or location and errors carry no trace.
 * @return 1 for a tracing build of the library, else 0 (whatever the
 *         headers' FUTOIN_TRACING says)
 * @par Ownership
 * Nothing passes.
 * @par Thread
 * Any thread.
 */
int futoin_tracing_enabled(void);

/**
 * @brief The trace of the last error of the flow as: the chain of steps from
 * the root's outermost step to the one that failed (a parallel branch's chain
 * continues its parent's). Captured when the error is raised (error(), an
 * InternalError from misuse, a Timeout: then the step that timed out is the
 * last one) in the flow that raised it; an error that escapes a branch brings
 * its trace to the flow holding the parallel step. Kept until the flow's next
 * error, the end of a branch, or the root's free(). Read it in an error
 * handler or the unhandled-error callback. Tracing build only: otherwise
 * always 0.
 * @param as       a flow of this library (a root, or a branch: its own trace)
 * @param entries  set to the first (outermost) entry, valid until the engine runs
 *                 again; NULL when the count is 0
 * @param total    if not NULL, set to the length of the whole chain, which is more
 *                 than the count returned when the chain was longer than
 *                 FUTOIN_TRACE_MAX (the outermost steps were left out)
 * @return the number of entries (0: no trace, a foreign object or not a tracing build)
 * @par Ownership
 * The entries are the root's: valid until the engine runs again (read
 * them in the handler). Their file strings are the programs' __FILE__.
 * @par Thread
 * The loop's thread.
 */
size_t futoin_error_trace(FutoInAsyncSteps* as, const FutoInTraceEntry** entries, size_t* total);

/**
 * @brief Prints futoin_error_trace() one step a line, outermost first:
 * `  #1 step my_step (app.c:42)`. Callback names come from dladdr(): a
 * function the dynamic symbol table does not list (a static function, or a
 * program linked without -rdynamic) shows as its address; addr2line or a
 * debugger turn that into a name with the debug info. On Windows every
 * callback shows as its address (there is no dladdr()).
 * @param as   as for futoin_error_trace()
 * @param out  where to write
 * @return the number of steps printed (0 when there is no trace; then a line
 *         saying why is printed instead)
 * @par Ownership
 * out stays the caller's (not closed).
 * @par Thread
 * The loop's thread; the output goes to out directly, not through the log
 * handler.
 */
size_t futoin_error_trace_print(FutoInAsyncSteps* as, FILE* out);

/**
 * @brief The name of a callback, from dladdr(): a symbol the dynamic symbol
 * table lists, else its address in hexadecimal. On Windows always the
 * address (there is no dladdr()).
 * @param fn   the function (NULL gives "-")
 * @param buf  where the text goes
 * @param cap  its size in bytes
 * @return buf (the text cut to fit, always NUL-terminated when cap > 0)
 * @par Ownership
 * buf is the caller's memory.
 * @par Thread
 * Any thread.
 */
const char* futoin_callback_name(void (*fn)(void), char* buf, size_t cap);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Text dump, on demand, from another thread or on a signal */
/** @{ */

/** A sensible max_frames for futoin_loop_dump(): 32 frames per flow. */
#define FUTOIN_DUMP_FRAMES_DEFAULT 32u

/**
 * @brief Writes a text dump of the loop: its counters, then every live root
 * with its flows, each flow's state, what it waits for and its frames,
 * innermost first. The format is in
 * @ref md_OBSERVABILITY "docs/OBSERVABILITY.md". Iterative and
 * allocation-free itself (stdio may buffer); O(roots + flows + frames).
 * @param loop        the loop; the call must be made on its thread (a loop
 *                    callback, a step, or a dump handler)
 * @param out         where to write (e.g. stderr, or open_memstream())
 * @param max_frames  frames shown per flow, innermost and outermost halves
 *                    around a "... N frames ..." line; 0 for all of them
 * @return the number of roots dumped, or -1 when loop or out is NULL or
 *         this is not the loop's thread
 * @par Ownership
 * out stays the caller's (not closed); nothing is allocated by the dump
 * itself.
 * @par Thread
 * The loop's thread; the output goes to out directly, not through the log
 * handler.
 */
int futoin_loop_dump(FutoInLoop* loop, FILE* out, uint32_t max_frames);

/** Called on the loop thread to answer a dump request (futoin_loop_request_dump()).
 * @param loop  the loop that was asked
 * @param data  the data given to futoin_loop_set_dump_handler() */
typedef void (*FutoInDumpHandler)(FutoInLoop* loop, void* data);

/**
 * @brief Sets what answers dump requests: cb(loop, data) on the loop
 * thread, at the start of the round after the request, with no engine
 * callback on the C stack (it may walk, dump, read counters, and use the
 * engine as any loop callback may). Also keeps the message that requests
 * travel in, so that asking allocates nothing.
 * @param loop  the loop; the call must be made on its thread
 * @param cb    the handler; NULL sets the default, which sends the dump
 *              (FUTOIN_DUMP_FRAMES_DEFAULT frames per flow) to the log
 *              handler, one FUTOIN_LOG_DUMP line per call
 *              (futoin_set_log_handler(); with the default log handler it
 *              is futoin_loop_dump(loop, stderr, FUTOIN_DUMP_FRAMES_DEFAULT))
 * @param data  passed to cb
 * @return 0, or -1 on the wrong thread, a NULL loop or out of memory
 * @par Ownership
 * data stays the caller's, valid while the handler is set.
 * @par Thread
 * The loop's thread; cb runs there too.
 */
int futoin_loop_set_dump_handler(FutoInLoop* loop, FutoInDumpHandler cb, void* data);

/**
 * @brief Asks the loop for a dump: the loop thread calls its dump handler at
 * the start of its next round. Any thread, and **async-signal-safe**: it
 * only swaps atomic words, links a message that was allocated beforehand
 * and, if the loop sleeps in futoin_loop_run(), writes to its wake-up
 * descriptor. A loop driven by another event loop through a wake-up
 * callback (futoin_loop_set_wakeup(), the libuv backend) is not woken from
 * here (that callback need not be signal-safe): it answers on its next
 * round; there, use the outer loop's own signal handling (uv_signal_t)
 * and call futoin_loop_dump() from it. Requests made while one is queued
 * are answered by that one. A loop stuck inside a callback cannot answer.
 * @param loop  a loop that has a dump handler (futoin_loop_set_dump_handler()
 *              or futoin_loop_dump_on_signal()); it must outlive the call
 * @return 1 queued, 0 a request was queued already, -1 the loop has no
 *         dump handler (or is NULL)
 * @par Ownership
 * Nothing is allocated: the request travels in the message that
 * futoin_loop_set_dump_handler() reserved.
 * @par Thread
 * Any thread, and signal handlers.
 */
int futoin_loop_request_dump(FutoInLoop* loop);

/**
 * @brief Installs a handler for signal signo (sigaction, SA_RESTART; on
 * Windows signal(), for SIGINT and SIGBREAK, Ctrl-C and Ctrl-Break of the
 * console, or what raise() sends) that
 * asks loop for a dump (futoin_loop_request_dump()); the loop gets the
 * default dump handler unless it has one. Several loops may share a
 * signal (each is asked); up to 64 registrations in the process. The
 * signal's previous disposition is replaced, and stays replaced after the
 * loop goes (the handler then asks nobody). futoin_loop_free() removes the
 * loop's registration.
 * Typical use: `futoin_loop_dump_on_signal(loop, SIGUSR1);` then
 * `kill -USR1 <pid>` prints every flow through the log handler
 * (futoin_set_log_handler(); stderr unless replaced).
 * @param loop   the loop; the call must be made on its thread
 * @param signo  the signal (SIGUSR1, SIGQUIT, ...), or 0 to remove the
 *               loop's registrations
 * @return 0, or -1 on the wrong thread, a bad signal, a full table or a
 *         failed sigaction() (signal() on Windows)
 * @par Ownership
 * The registration belongs to the loop: futoin_loop_free() (or signo 0)
 * removes it; the signal's previous disposition is not restored.
 * @par Thread
 * The loop's thread (the signal may arrive on any thread).
 */
int futoin_loop_dump_on_signal(FutoInLoop* loop, int signo);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_INTROSPECT_H */
