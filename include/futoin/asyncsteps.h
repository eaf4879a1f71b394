/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps for C: constructors, the execution-burst setting, and
 * inline helpers over the universal binary interface (binarysteps.h).
 *
 * Every helper is a thin call through the ABI table, so code written with
 * these helpers and code written against the raw ABI mix freely, and any
 * FutoInAsyncSteps* from another implementation works with them.
 *
 * Lifetimes and rules (the full semantics: docs/SEMANTICS.md):
 *  - The FutoInAsyncSteps* passed to a callback belongs to one flow (the root's
 *    main flow or one parallel branch). It stays valid while that flow runs;
 *    success()/error() may be called on it later, from another loop callback,
 *    to complete a step that called waitExternal()/setTimeout()/setCancel().
 *  - After futoin_error(), futoin_break() or futoin_continue() return from the
 *    callback at once: C cannot unwind the stack for you.
 *  - Strings passed in (error codes, error info, labels, state names) are
 *    copied when the engine keeps them.
 *  - Misuse inside a callback (success twice, success after add, NULL
 *    callback, break outside a loop, setTimeout in an error handler, ...)
 *    becomes an InternalError of the current step, with a descriptive
 *    error_info. Misuse where no step is running (e.g. success() on an
 *    instance that has completed) is ignored and reported to the loop's misuse
 *    handler (futoin_set_misuse_handler; by default one line through the log
 *    handler, futoin_set_log_handler(): stderr unless replaced).
 *
 * Errors: docs/ERRORS.md.
 */
#ifndef FUTOIN_ASYNCSTEPS_H
#define FUTOIN_ASYNCSTEPS_H

#include <futoin/asynctool.h>
#include <futoin/binarysteps.h>
#include <futoin/version.h>

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @def FUTOIN_DEPRECATED(msg)
 * Marks a public helper as deprecated: a call to it compiles and works as
 * before, and the compiler warns with msg where it can (C23 and C++14
 * `[[deprecated]]`, GCC and clang `__attribute__((deprecated))`, MSVC
 * `__declspec(deprecated)`; empty for other compilers). Define it yourself
 * (e.g. empty) before the first futoin header to change that. The
 * deprecated names and when they go: docs/ABI-POLICY.md "Deprecations".
 */
#ifndef FUTOIN_DEPRECATED
#if defined(__cplusplus) && __cplusplus >= 201402L
#define FUTOIN_DEPRECATED(msg) [[deprecated(msg)]]
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ > 201710L             \
        && defined(__has_c_attribute)
#if __has_c_attribute(deprecated)
#define FUTOIN_DEPRECATED(msg) [[deprecated(msg)]]
#endif
#endif
#endif
#ifndef FUTOIN_DEPRECATED
#if defined(__GNUC__) || defined(__clang__)
#define FUTOIN_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define FUTOIN_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define FUTOIN_DEPRECATED(msg)
#endif
#endif

/* ------------------------------------------------------------------------ */
/** @name Error codes of the spec (strings compared with strcmp). */
/** @{ */

#define FUTOIN_CONNECT_ERROR "ConnectError"                /**< "ConnectError" */
#define FUTOIN_COMM_ERROR "CommError"                      /**< "CommError" */
#define FUTOIN_UNKNOWN_INTERFACE "UnknownInterface"        /**< "UnknownInterface" */
#define FUTOIN_NOT_SUPPORTED_VERSION "NotSupportedVersion" /**< "NotSupportedVersion" */
#define FUTOIN_NOT_IMPLEMENTED "NotImplemented"            /**< "NotImplemented" */
#define FUTOIN_UNAUTHORIZED "Unauthorized"                 /**< "Unauthorized" */
#define FUTOIN_INTERNAL_ERROR "InternalError"              /**< "InternalError" */
#define FUTOIN_INVOKER_ERROR "InvokerError"                /**< "InvokerError" */
#define FUTOIN_INVALID_REQUEST "InvalidRequest"            /**< "InvalidRequest" */
#define FUTOIN_DEFENSE_REJECTED "DefenseRejected"          /**< "DefenseRejected" */
#define FUTOIN_PLEASE_REAUTH "PleaseReauth"                /**< "PleaseReauth" */
#define FUTOIN_SECURITY_ERROR "SecurityError"              /**< "SecurityError" */
#define FUTOIN_TIMEOUT "Timeout"                           /**< "Timeout" */

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Construction */
/** @{ */

/** A new root AsyncSteps on loop. Out of memory: returns NULL. */
FutoInAsyncSteps* futoin_asyncsteps_new(FutoInLoop* loop);

/** Frees a root (cancelling it first if it runs: cancel handlers are called).
 * Safe from inside the root's own callbacks: the memory is released when the
 * callback returns. Same as as->api->free(as). */
void futoin_asyncsteps_free(FutoInAsyncSteps* root);

/** The loop an instance of this library runs on (NULL for a foreign one). */
FutoInLoop* futoin_asyncsteps_loop(FutoInAsyncSteps* as);

/** Maximum number of step callbacks the engine runs per loop round before it
 * lets other loop callbacks and timers in (spec 1.15 "execution burst";
 * default 100, minimum 1). Ready flows take turns one step at a time. */
void futoin_set_burst(FutoInLoop* loop, unsigned steps);

/** Receives reports of API misuse that cannot become a step error because no
 * step of that flow is running. as may be a stale pointer: don't call it;
 * it is NULL for misuse of the loop itself (running it from inside one of
 * its own callbacks). */
typedef void (*FutoInMisuseHandler)(void* data, FutoInAsyncSteps* as, const char* info);
/** Sets the loop's misuse handler: cb(data, as, info) receives the reports
 * of FutoInMisuseHandler (NULL: the default, a FUTOIN_LOG_MISUSE line
 * "futoin: API misuse: <info>" to the log handler, futoin_set_log_handler(),
 * which writes it to stderr unless replaced). */
void futoin_set_misuse_handler(FutoInLoop* loop, FutoInMisuseHandler cb, void* data);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Binary value constructors and typed getters */
/** @{ */

/** A plain int32_t value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_i32(int32_t v)
{
    static const FutoInType t = { FTN_TYPE_INT32, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.i32 = v;
    return r;
}
/** A plain int64_t value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_i64(int64_t v)
{
    static const FutoInType t = { FTN_TYPE_INT64, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.i64 = v;
    return r;
}
/** A plain uint32_t value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_u32(uint32_t v)
{
    static const FutoInType t = { FTN_TYPE_UINT32, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.u32 = v;
    return r;
}
/** A plain uint64_t value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_u64(uint64_t v)
{
    static const FutoInType t = { FTN_TYPE_UINT64, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.u64 = v;
    return r;
}
/** A plain bool value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_bool(bool v)
{
    static const FutoInType t = { FTN_TYPE_BOOL, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.b = v;
    return r;
}
/** A plain double value: no cleanup is needed. */
static inline FutoInBinaryValue futoin_val_double(double v)
{
    static const FutoInType t = { FTN_TYPE_DOUBLE, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.d = v;
    return r;
}
/** A string the caller keeps alive (e.g. a literal): not copied, not freed. */
static inline FutoInBinaryValue futoin_val_cstr(const char* s)
{
    static const FutoInType t = { FTN_TYPE_STRING, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.cstr = s;
    r.length = s ? (uint32_t)strlen(s) : 0;
    return r;
}
/** A heap copy of s, freed by the value's cleanup (exactly once, by the
 * engine, after the receiving step returns). Out of memory: a value of type
 * NULL (no value). */
FutoInBinaryValue futoin_val_strdup(const char* s);
/** A custom object: the cleanup of type (may be NULL) is called with the value. */
FutoInBinaryValue futoin_val_custom(const FutoInType* type, void* object);

/** Number of leading arguments that hold a value (0..4); args may be NULL. */
static inline int futoin_args_count(const FutoInArgs* args)
{
    int n = 0;
    while (args && n < 4 && args->args[n].type) {
        ++n;
    }
    return n;
}
/** Base type code of argument i, 0 when absent. */
static inline int futoin_arg_type(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || !args->args[i].type) {
        return 0;
    }
    return args->args[i].type->flags;
}
/** Typed getter: the value when argument i exists with an integer or bool
 * type (converted to int64_t), else fallback. */
static inline int64_t futoin_arg_int(const FutoInArgs* args, int i, int64_t fallback)
{
    switch (futoin_arg_type(args, i)) {
    case FTN_TYPE_INT8:
        return args->args[i].i8;
    case FTN_TYPE_INT16:
        return args->args[i].i16;
    case FTN_TYPE_INT32:
        return args->args[i].i32;
    case FTN_TYPE_INT64:
        return args->args[i].i64;
    case FTN_TYPE_UINT8:
        return args->args[i].u8;
    case FTN_TYPE_UINT16:
        return args->args[i].u16;
    case FTN_TYPE_UINT32:
        return args->args[i].u32;
    case FTN_TYPE_UINT64:
        return (int64_t)args->args[i].u64;
    case FTN_TYPE_BOOL:
        return args->args[i].b;
    default:
        return fallback;
    }
}
/** Typed getter: futoin_arg_int() converted to int32_t. */
static inline int32_t futoin_arg_i32(const FutoInArgs* args, int i, int32_t fallback)
{
    return (int32_t)futoin_arg_int(args, i, fallback);
}
/** Typed getter: the value when argument i is a float or a double (or an
 * integer, converted), else fallback. */
static inline double futoin_arg_double(const FutoInArgs* args, int i, double fallback)
{
    switch (futoin_arg_type(args, i)) {
    case FTN_TYPE_FLOAT:
        return args->args[i].f;
    case FTN_TYPE_DOUBLE:
        return args->args[i].d;
    default:
        return (double)futoin_arg_int(args, i, (int64_t)fallback);
    }
}
/** Typed getter: the string when argument i is an FTN_TYPE_STRING, else fallback. */
static inline const char* futoin_arg_cstr(const FutoInArgs* args, int i, const char* fallback)
{
    return futoin_arg_type(args, i) == FTN_TYPE_STRING ? args->args[i].cstr : fallback;
}
/** Typed getter: futoin_arg_int() != 0; fallback when argument i is not an
 * integer or bool. */
static inline bool futoin_arg_bool(const FutoInArgs* args, int i, bool fallback)
{
    return futoin_arg_int(args, i, fallback) != 0;
}
/** Typed getter: the object of a custom-object argument i, else NULL. */
static inline void* futoin_arg_custom(const FutoInArgs* args, int i)
{
    return futoin_arg_type(args, i) == FTN_TYPE_CUSTOM_OBJECT ? args->args[i].custom_data
                                                              : (void*)0;
}

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Common API (spec 2.2.1) */
/** @{ */

/** Adds a step (f, optional error handler eh); data is passed to both.
 * Out of memory (a new slab of step nodes): the process aborts with
 * "futoin: out of memory" through the log handler (stderr unless replaced),
 * as for all of the engine's bookkeeping (docs/SEMANTICS.md "Memory"). */
static inline void futoin_add(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data)
{
    as->api->add(as, data, f, eh);
}
/**
 * @brief Releases the data of a step added with futoin_add_owned().
 * @param data  the step's data
 */
typedef void (*FutoInDataDestroy)(void* data);
/**
 * @brief Adds a step like futoin_add() whose data the step owns:
 * destroy(data) is called exactly once, when the step is done with it.
 *
 * When (docs/SEMANTICS.md "Owned step data"):
 *  - the step ran: once it has ended, completed or failed, with its
 *    sub-steps, its error handler (and the steps that handler added), its
 *    cancel handler and its futoin_stack() cleanups, all of which may still
 *    use data; before the next step of the flow starts, and before an
 *    error that goes on reaches the error handler of the step around it;
 *  - the step's own callback or error handler cancels or frees the root
 *    (directly or through what it calls): once that callback has returned,
 *    since it may still use data;
 *  - the step never ran: when it is dropped (an earlier step failed, the
 *    root was cancelled or freed, the loop was freed);
 *  - the call is refused (misuse, reported as by futoin_add(): a NULL f,
 *    a step that already completed, a running root from outside its
 *    steps...): before futoin_add_owned() returns.
 *
 * On the interface futoin_parallel() returns, the step is a branch.
 * destroy is user code like any callback: it may call back into the
 * library (add steps where adding is allowed, execute other roots, cancel
 * or free its own root). No malloc on this library's objects: the record
 * of the destructor comes from the loop's pool of step nodes. On another
 * implementation's object the step is wrapped, and data is destroyed when
 * that engine destroys the step (its stack() cleanup) or, if the step
 * never runs, when the root is freed (docs/INTEROP.md).
 * Traced like futoin_add() in a tracing build. Out of memory: as
 * futoin_add() (on another implementation: InternalError
 * "futoin_add_owned(): out of memory", and destroy runs).
 * @param as       the flow the callback runs in, the idle root, or a
 *                 futoin_parallel() interface
 * @param f        the step's execute callback (NULL: misuse, InternalError)
 * @param eh       the step's error handler, or NULL
 * @param data     passed to f, eh and destroy
 * @param destroy  releases data (NULL: futoin_add(), nothing is owned)
 * @par Ownership
 * data passes to the step on every call, refused ones included: the
 * caller must not use or release it afterwards, other than from the
 * step's own callbacks.
 * @par Thread
 * The loop's thread: where futoin_add() may be called.
 */
void futoin_add_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data, FutoInDataDestroy destroy);
/** Adds a parallel step; add steps to the returned interface to make branches.
 * The returned interface is valid until the current callback returns (or,
 * on a root that has not started, until execute()). Out of memory: the
 * process aborts with the message (engine bookkeeping). */
static inline FutoInAsyncSteps* futoin_parallel(FutoInAsyncSteps* as,
        FutoInAsyncSteps_error_callback eh, void* data)
{
    return as->api->parallel(as, data, eh);
}
/** Named state variable of the root: allocate(data) creates it on first use,
 * cleanup(data, value) releases it with the root (last created first).
 * name: non-NULL, NUL-terminated, any length. Both callbacks may call the
 * library, on this root too: an allocate() that frees the root still gets
 * its variable recorded, and cleaned up with the others. Once the root's
 * free() has been called (also from a cleanup run while it is freed) no
 * variable is created: NULL, allocate() is not called, and the misuse
 * handler is told; existing variables can still be looked up. Out of
 * memory: what allocate() returns (NULL if it failed) is returned and
 * recorded; the engine's own table of variables aborts the process with
 * the message. */
static inline void* futoin_state(FutoInAsyncSteps* as, const char* name,
        void* (*allocate)(void* data), void (*cleanup)(void* data, void* value), void* data)
{
    if (!name) {
        /* Never sent across the interface. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "stateVariable() with a NULL name");
        return 0;
    }
    return as->api->stateVariable(as, data, name, allocate, cleanup);
}
/** The last error's info (or break/continue label); "" when none. */
static inline const char* futoin_error_info(FutoInAsyncSteps* as)
{
    const char* s = (const char*)as->api->stateVariable(as, 0, "error_info", 0, 0);
    return s ? s : "";
}
/** @cond FUTOIN_INTERNAL */
static inline void futoin_stack_no_cleanup_(void* value)
{
    (void)value;
}
/** @endcond */
/** Memory that lives until the current step is destroyed; cleanup (optional)
 * runs first. Zero-filled, aligned for any type. size: 0 to PTRDIFF_MAX
 * less a small header; a larger size, or memory that cannot be had, gives
 * NULL (no cleanup is registered, the step goes on). Out of memory: NULL for
 * a block larger than the pooled size; a new slab of pooled blocks aborts
 * the process with the message. */
static inline void* futoin_stack(FutoInAsyncSteps* as, size_t size, void (*cleanup)(void* value))
{
    /* Other implementations may call the cleanup without a NULL check. */
    return as->api->stack(as, size, cleanup ? cleanup : futoin_stack_no_cleanup_);
}
/** Adds a step synchronized on a FutoInSync object (Mutex, Throttle, ...).
 * Out of memory: a wait record that cannot be had fails the step with
 * InternalError "sync object: out of memory"; a Throttle window timer that
 * cannot be armed aborts the process with the message. */
static inline void futoin_add_sync(FutoInAsyncSteps* as, FutoInSync* sync,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* data)
{
    as->api->addSync(as, sync, data, f, eh);
}
/** A new independent root on the same loop. Out of memory: NULL. */
static inline FutoInAsyncSteps* futoin_new_instance(FutoInAsyncSteps* as)
{
    return as->api->newInstance(as);
}
/** The spec's isValid(): 1 for an idle, running or finished root and for a
 * live branch; 0 after cancel() (until add() makes the root idle again),
 * after free() was requested, and for a finished branch. */
static inline int futoin_is_valid(FutoInAsyncSteps* as)
{
    return as->api->isValid(as);
}
/** The spec's rootId(): identifies the flow, a root's main flow or one
 * parallel branch (each has its own). */
static inline ptrdiff_t futoin_root_id(FutoInAsyncSteps* as)
{
    return as->api->rootId(as);
}

/** Adds a step that succeeds with args (NULL: none), the spec's successStep():
 * result injection after sub-steps. Ownership of the values passes to the
 * engine, which cleans them up exactly once. Works on any implementation
 * of the interface: there, values of a step that never runs are cleaned
 * up when the root is freed (docs/INTEROP.md). Out of memory: on another
 * implementation the step fails with InternalError "successStep(): out of
 * memory" (the values are cleaned up); the engine's own records abort the
 * process with the message. */
void futoin_success_step(FutoInAsyncSteps* as, FutoInArgs* args);

/** Adds a step that yields to the loop once (spec 1.15 relinquish()): other
 * flows and loop callbacks run before the flow continues. Any
 * implementation: elsewhere the step waits for sched_immediate(). Out of
 * memory: when the loop cannot queue the trip, the flow goes through the
 * ready queue instead (other flows and loop work still run first); a new
 * step node aborts the process with the message. */
void futoin_relinquish(FutoInAsyncSteps* as);

/** Copies the model's top-level steps into as (the root's queue before
 * execute(), or as sub-steps of the running step), and re-creates the model's
 * state variables that as does not have by calling their allocators again
 * (spec 1.5; deprecated upstream). A model must not have been executed.
 * Values with a cleanup in a model's successStep cannot be copied:
 * InternalError. Both as and model must be objects of this library: another
 * implementation's object gets InternalError (on as), nothing is copied.
 * Out of memory: the process aborts with the message. */
void futoin_copy_from(FutoInAsyncSteps* as, FutoInAsyncSteps* model);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Execution API (spec 2.2.2): inside an execute callback */
/** @{ */

/** Completes the step with no result. Sends a zeroed FutoInArgs, never NULL,
 * to other implementations of the interface (they may read it). */
void futoin_success_empty(FutoInAsyncSteps* as);
/** Completes the step with no result: futoin_success_empty(). */
static inline void futoin_success(FutoInAsyncSteps* as)
{
    futoin_success_empty(as);
}
/** Completes the step with up to four values (args NULL: none); ownership
 * passes to the engine. Out of memory (a box for the values): the process
 * aborts with the message, as for futoin_success1() to futoin_success4(). */
static inline void futoin_success_args(FutoInAsyncSteps* as, FutoInArgs* args)
{
    if (!args) {
        futoin_success(as);
        return;
    }
    as->api->success(as, args);
}
/** Completes the step with one value; ownership passes to the engine. */
static inline void futoin_success1(FutoInAsyncSteps* as, FutoInBinaryValue a0)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = a0;
    as->api->success(as, &a);
}
/** Completes the step with two values; ownership passes to the engine. */
static inline void futoin_success2(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = a0;
    a.arg1 = a1;
    as->api->success(as, &a);
}
/** Completes the step with three values; ownership passes to the engine. */
static inline void futoin_success3(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1,
        FutoInBinaryValue a2)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = a0;
    a.arg1 = a1;
    a.arg2 = a2;
    as->api->success(as, &a);
}
/** Completes the step with four values; ownership passes to the engine. */
static inline void futoin_success4(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1,
        FutoInBinaryValue a2, FutoInBinaryValue a3)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = a0;
    a.arg1 = a1;
    a.arg2 = a2;
    a.arg3 = a3;
    as->api->success(as, &a);
}
/** Fails the step with code (one of FUTOIN_* or your own) and optional info,
 * which becomes error_info. Return from the callback right after. Out of
 * memory (copies of code and info): the process aborts with the message. */
static inline void futoin_error(FutoInAsyncSteps* as, const char* code, const char* info)
{
    as->api->handle_error(as, code, info);
}
/** Fails the step with Timeout unless it completes within timeout_ms
 * (covers its sub-steps too; any uint32_t, see futoin_loop_deferred()).
 * A second call replaces the first. Out of memory: the timer cannot be
 * armed and the step fails with InternalError "setTimeout(): out of
 * memory" (it never waits without its timeout). */
static inline void futoin_set_timeout(FutoInAsyncSteps* as, uint32_t timeout_ms)
{
    as->api->setTimeout(as, timeout_ms);
}
/** ch(as, data) runs if the step is aborted (root cancel, timeout, a sibling
 * branch failing, break/continue out of it) before it completes. Out of
 * memory (the frame's side record): the process aborts with the message. */
static inline void futoin_set_cancel(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch,
        void* data)
{
    as->api->setCancel(as, data, ch);
}
/** The step completes only by a later success()/error(). */
static inline void futoin_wait_external(FutoInAsyncSteps* as)
{
    as->api->waitExternal(as);
}
/** Describes what the running step waits for, for the error it gets if it
 * times out: an operation and its peer, e.g. "read 127.0.0.1:8080". When
 * a timeout (of this step or of a step around it) fails the flow, the
 * Timeout's error_info is the description of the innermost step of the
 * flow that has one (the latest, if a step gave several), instead of "".
 * what is copied and kept until the step ends. Call it from the step's
 * own execute callback. Returns 0, or -1 (nothing recorded) when what is
 * NULL, no execute callback of as is running, as is another
 * implementation's object, or memory is short. */
int futoin_set_wait_info(FutoInAsyncSteps* as, const char* what);

/** Parks the running step on a wait that only its owner ends: for code
 * that completes a step from a callback of its own (an I/O completion, a
 * lock, a queue), so that a late success() or error() meant for an earlier
 * step of the same flow cannot end this wait instead (a flow's handle is
 * the same for all its steps). Like futoin_set_cancel(as, ch, key) (ch may
 * be NULL: like futoin_wait_external()); from then until the step stops
 * waiting, success() and error() on as from outside the step are refused
 * as misuse and change nothing, and only futoin_owned_success() and
 * futoin_owned_error() with the same key end the wait. key must not be
 * NULL; it is passed to ch. A later futoin_set_cancel() in the same step
 * replaces ch and key; futoin_set_timeout() keeps the wait owned. Call it
 * from the step's own execute callback; anywhere else, or with a NULL key,
 * it is misuse. On another implementation's object it is
 * futoin_set_cancel() (or futoin_wait_external()): no protection. */
void futoin_wait_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* key);
/** Ends the owned wait armed with key by success(args) (args may be NULL).
 * From any thread; across threads it is queued and applied on the loop
 * thread if that wait still waits then. Returns 0 if it was applied or
 * queued, -1 if as waits on no owned wait with this key (it ended first by
 * a timeout or cancel, or the key is wrong): the values of args are then
 * cleaned up, and nothing is reported, since losing such a race is the
 * owner's normal case. Called from inside the step's own execute callback
 * or error handler (an operation that finished at once), it is that
 * step's success(), with the key unchecked. On another implementation's
 * object it is success(). */
int futoin_owned_success(FutoInAsyncSteps* as, const void* key, FutoInArgs* args);
/** Ends the owned wait armed with key by error(code, info); as
 * futoin_owned_success() otherwise. code must not be NULL (-1). */
int futoin_owned_error(FutoInAsyncSteps* as, const void* key, const char* code, const char* info);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Loops (spec 2.2.4): inside an execute callback */
/** @{ */

/** Adds a loop step (the spec's loop()): it runs f(as, data) again and
 * again until futoin_break(); label (may be NULL) names the loop. Not to be
 * confused with the event loop (FutoInLoop, futoin_loop_*()). Out of
 * memory: the process aborts with the message (engine bookkeeping). */
static inline void futoin_add_loop(FutoInAsyncSteps* as,
        void (*f)(FutoInAsyncSteps* as, void* data), void* data, const char* label)
{
    as->api->loop(as, data, f, label);
}
/** The former name of futoin_add_loop(), which it calls.
 * @deprecated Use futoin_add_loop(): futoin_loop_*() names the event loop.
 * Kept until 1.0 (docs/ABI-POLICY.md "Deprecations"). */
FUTOIN_DEPRECATED("use futoin_add_loop()")
static inline void futoin_loop(FutoInAsyncSteps* as, void (*f)(FutoInAsyncSteps* as, void* data),
        void* data, const char* label)
{
    (futoin_add_loop)(as, f, data, label);
}
/** Runs f(as, data, i) for i = 0 .. count-1; label (may be NULL) names the loop.
 * Out of memory: the process aborts with the message (engine bookkeeping). */
static inline void futoin_repeat(FutoInAsyncSteps* as, size_t count,
        void (*f)(FutoInAsyncSteps* as, void* data, size_t i), void* data, const char* label)
{
    as->api->repeat(as, data, count, f, label);
}
/** Leaves the innermost loop, or the one named label. Return right after. */
static inline void futoin_break(FutoInAsyncSteps* as, const char* label)
{
    as->api->breakLoop(as, label);
}
/** Starts the next iteration of the innermost loop, or of the one named label.
 * Return right after. */
static inline void futoin_continue(FutoInAsyncSteps* as, const char* label)
{
    as->api->continueLoop(as, label);
}

/** The body of futoin_foreach_array(): called with element i at elem. */
typedef void (*FutoInForEachArrayFn)(FutoInAsyncSteps* as, void* data, size_t i, const void* elem);
/** forEach over a C array: f(as, data, i, element) for each of count elements
 * of elem_size bytes at base. The array must outlive the loop. Ranges: with
 * count > 0, elem_size >= 1, count * elem_size must fit in size_t and the
 * array must not wrap around the address space; otherwise the step fails
 * with InternalError naming the value (misuse report where no step runs)
 * and no loop is added. Out of memory: the process aborts with the message
 * (engine bookkeeping), as for futoin_foreach_pairs(). */
void futoin_foreach_array(FutoInAsyncSteps* as, const void* base, size_t count, size_t elem_size,
        FutoInForEachArrayFn f, void* data, const char* label);

/** A key/value pair for futoin_foreach_pairs(). */
typedef struct FutoInKeyValue {
    const char* key;         /**< The key. */
    FutoInBinaryValue value; /**< The value. */
} FutoInKeyValue;
/** The body of futoin_foreach_pairs(): called with each key and value. */
typedef void (*FutoInForEachPairFn)(FutoInAsyncSteps* as, void* data, const char* key,
        const FutoInBinaryValue* value);
/** forEach over key/value pairs, in array order. count * sizeof(FutoInKeyValue)
 * must fit in size_t without wrapping the address space (else InternalError,
 * as for futoin_foreach_array). Out of memory: as futoin_foreach_array(). */
void futoin_foreach_pairs(FutoInAsyncSteps* as, const FutoInKeyValue* pairs, size_t count,
        FutoInForEachPairFn f, void* data, const char* label);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Control API (spec 2.2.3): on a root */
/** @{ */

/** Starts the root; unhandled_error(as, data, code) is called if an error
 * escapes every handler (NULL: reported to the misuse handler). Out of
 * memory: starting never needs memory (the loop keeps room for the engine's
 * dispatcher); a step that needs more frames than the flow has aborts the
 * process with the message. */
static inline void futoin_execute(FutoInAsyncSteps* root,
        FutoInAsyncSteps_error_callback unhandled_error, void* data)
{
    root->api->execute(root, data, unhandled_error);
}
/** Cancels a running root: cancel handlers run innermost first, timers are
 * dropped, nothing fires later. The root may then be freed or reused. */
static inline void futoin_cancel(FutoInAsyncSteps* root)
{
    root->api->cancel(root);
}

/** How a root's run ended (FutoInRootEnd.reason). */
typedef enum FutoInEndReason {
    /** Its last step completed. */
    FUTOIN_END_SUCCESS = 0,
    /** An error escaped every handler (after the unhandled-error callback). */
    FUTOIN_END_ERROR = 1,
    /** cancel() while it ran. */
    FUTOIN_END_CANCELLED = 2,
    /** free() while it ran, futoin_loop_free() included. */
    FUTOIN_END_FREED = 3
} FutoInEndReason;

/** What the hook of futoin_set_on_end() is told about the run that ended.
 * Valid during the call only: copy what is needed later. */
typedef struct FutoInRootEnd {
    /** How it ended. */
    FutoInEndReason reason;
    /** FUTOIN_END_ERROR: the error code; NULL otherwise. */
    const char* code;
    /** FUTOIN_END_ERROR: its error_info ("" if none); "" otherwise. */
    const char* info;
    /** FUTOIN_END_SUCCESS: the last step's result values (never NULL; all
     * empty when there were none); NULL otherwise. The hook may take a
     * value over: copy it and set its type to NULL here, and it is not
     * cleaned up; the others are cleaned up after the hook returns. */
    FutoInArgs* results;
} FutoInRootEnd;

/**
 * @brief The hook of futoin_set_on_end(), called once for each run of the
 * root that ends.
 * @param root  the root's handle
 * @param data  the pointer given with the hook
 * @param end   how the run ended (valid during the call only)
 */
typedef void (*FutoInRootEndCallback)(FutoInAsyncSteps* root, void* data, const FutoInRootEnd* end);

/**
 * @brief Sets root's end hook: cb(root, data, end) is called exactly once
 * for each run of the root (from execute() to its end) that ends while the
 * hook is set.
 *
 * The reasons (docs/SEMANTICS.md "The end of a run"):
 * FUTOIN_END_SUCCESS when its last step completes, with the results;
 * FUTOIN_END_ERROR when an error escapes every handler, after the
 * unhandled-error callback (a root with a hook does not report an
 * unhandled error to the misuse handler); FUTOIN_END_CANCELLED or
 * FUTOIN_END_FREED when it is cancelled or freed while it runs, once the
 * cancel handlers, cleanups and destructors of its steps have run (but for
 * the data of a step that cancelled or freed its own root: that goes once
 * the step's callback has returned). A root that is freed or cancelled
 * while not running has no run to end. The hook stays set for the next
 * runs, until replaced (cb NULL removes it) or the root is freed. It is
 * user code like any callback: from inside it the root may be freed
 * (futoin_asyncsteps_free()), given steps and executed again (not after
 * FUTOIN_END_FREED), or given another hook. Out of memory (the root's side
 * record): the process aborts with the message.
 * @param root  the root (not a branch, not a futoin_parallel() interface)
 * @param cb    the hook, or NULL to remove it
 * @param data  passed to cb
 * @return 0, or -1 with nothing set: root NULL, a parallel branch or a
 *         futoin_parallel() interface, a root whose free() was called
 *         (these three are reported as misuse), a call from another
 *         thread, or a root of another implementation (the interface cannot
 *         tell its end, docs/INTEROP.md)
 * @par Ownership
 * data stays the caller's: keep it valid while the hook is set. The root
 * stays the caller's too; the hook may free it.
 * @par Thread
 * The loop's thread, anywhere: in the root's own callbacks, in the hook,
 * or outside them.
 */
int futoin_set_on_end(FutoInAsyncSteps* root, FutoInRootEndCallback cb, void* data);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name await (spec 1.13): a completion any callback can resolve or reject */
/** @{ */

/** A completion: resolved or rejected once, awaited by one step at a time (opaque). */
typedef struct FutoInCompletion FutoInCompletion;

/** A new completion, neither resolved nor rejected. Out of memory: NULL. */
FutoInCompletion* futoin_completion_new(void);
/** Resolves with args (may be NULL; ownership passes on). Returns 0, or -1 if
 * the completion was already resolved or rejected (args are then cleaned up). */
int futoin_completion_resolve(FutoInCompletion* c, FutoInArgs* args);
/** Rejects with an error code and optional info. Returns 0 or -1 as above. */
int futoin_completion_reject(FutoInCompletion* c, const char* code, const char* info);
/** Frees the completion. A step still awaiting it fails with InternalError. */
void futoin_completion_free(FutoInCompletion* c);
/** Adds a step that waits for c: it succeeds with c's args or fails with its
 * error; cancelling the step detaches it from c. One awaiting step at a time;
 * a second one fails with InternalError. Any implementation of the
 * interface; there, a registration whose step never runs is released when
 * the root is freed (until then c cannot be awaited again). Out of memory:
 * on another implementation the step fails with InternalError "await(): out
 * of memory"; the engine's own records abort the process with the message. */
void futoin_await(FutoInAsyncSteps* as, FutoInCompletion* c, FutoInAsyncSteps_error_callback eh,
        void* data);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name promise (spec 2.2.3): run a root to completion */
/** @{ */

/** What futoin_promise() reports about the root it ran. */
typedef struct FutoInOutcome {
    /** NULL on success, else the unhandled error code. */
    const char* code;
    /** error_info of that error ("" if none). */
    char info[256];
    /** The last step's result values on success (the caller owns them:
     * futoin_outcome_reset releases them). */
    FutoInArgs args;
    /** Storage for code (internal). */
    char code_buf[64];
} FutoInOutcome;

/** Return values of futoin_promise. */
enum {
    FUTOIN_PROMISE_OK = 0,      /**< the root completed */
    FUTOIN_PROMISE_ERROR = 1,   /**< an error escaped: see out->code */
    FUTOIN_PROMISE_STALLED = 2, /**< the loop ran dry with the root still waiting: root cancelled */
    FUTOIN_PROMISE_MISUSE = 3   /**< NULL root, a root of another implementation (we cannot
                                 * run its loop), root not idle (running, or being freed:
                                 * a cleanup that free() runs), or called from inside a step */
};

/** Executes root and runs its loop until the root completes. Returns a
 * FUTOIN_PROMISE_* value; out receives the outcome. Out of memory: as
 * futoin_execute() and the root's steps (a step's InternalError is
 * FUTOIN_PROMISE_ERROR). */
int futoin_promise(FutoInAsyncSteps* root, FutoInOutcome* out);
/** Releases the values held in an outcome. */
void futoin_outcome_reset(FutoInOutcome* out);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Tracing build: where each step was added */
/** @{ */

/** Records file and line as where the steps added next on this thread come
 * from (NULL: nothing). Any thread; a thread-local store. The tracing
 * macros call it around each add(); the library reads it only when it was
 * built with tracing (futoin_tracing_enabled()), so that code compiled
 * either way links with either library. */
void futoin_trace_at(const char* file, unsigned line);

/** Internal to the tracing macros: ends a traced call that returns a flow. */
static inline FutoInAsyncSteps* futoin_trace_end_(FutoInAsyncSteps* as)
{
    futoin_trace_at(NULL, 0);
    return as;
}

#if FUTOIN_TRACING && !defined(FUTOIN_NO_TRACE_MACROS)
/* The tracing build: futoin_add() and its kin record the caller's file and
 * line beside the step. (name)(...) calls the function itself. */
#define FUTOIN_TRACE_CALL_(call)                                                                   \
    (futoin_trace_at(__FILE__, __LINE__), (call), futoin_trace_at(NULL, 0))
#define futoin_add(as, f, eh, data) FUTOIN_TRACE_CALL_((futoin_add)((as), (f), (eh), (data)))
#define futoin_add_owned(as, f, eh, data, destroy)                                                 \
    FUTOIN_TRACE_CALL_((futoin_add_owned)((as), (f), (eh), (data), (destroy)))
#define futoin_parallel(as, eh, data)                                                              \
    futoin_trace_end_((futoin_trace_at(__FILE__, __LINE__), (futoin_parallel)((as), (eh), (data))))
#define futoin_add_sync(as, sync, f, eh, data)                                                     \
    FUTOIN_TRACE_CALL_((futoin_add_sync)((as), (sync), (f), (eh), (data)))
#define futoin_add_loop(as, f, data, label)                                                        \
    FUTOIN_TRACE_CALL_((futoin_add_loop)((as), (f), (data), (label)))
/* The deprecated name: traced too, and its call still warns. */
#define futoin_loop(as, f, data, label)                                                            \
    FUTOIN_TRACE_CALL_((futoin_loop)((as), (f), (data), (label)))
#define futoin_repeat(as, count, f, data, label)                                                   \
    FUTOIN_TRACE_CALL_((futoin_repeat)((as), (count), (f), (data), (label)))
#define futoin_foreach_array(as, base, count, elem_size, f, data, label)                           \
    FUTOIN_TRACE_CALL_((futoin_foreach_array)((as), (base), (count), (elem_size), (f), (data),     \
            (label)))
#define futoin_foreach_pairs(as, pairs, count, f, data, label)                                     \
    FUTOIN_TRACE_CALL_((futoin_foreach_pairs)((as), (pairs), (count), (f), (data), (label)))
#define futoin_success_step(as, args) FUTOIN_TRACE_CALL_((futoin_success_step)((as), (args)))
#define futoin_relinquish(as) FUTOIN_TRACE_CALL_((futoin_relinquish)(as))
#define futoin_await(as, c, eh, data) FUTOIN_TRACE_CALL_((futoin_await)((as), (c), (eh), (data)))
#endif

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_ASYNCSTEPS_H */
