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
 * Lifetimes and rules (the full semantics:
 * @ref md_SEMANTICS "docs/SEMANTICS.md"):
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
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
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
 * @brief Marks a public helper as deprecated: a call to it compiles and
 * works as before, and the compiler warns with msg where it can.
 *
 * C23 and C++14 `[[deprecated]]`, GCC and clang
 * `__attribute__((deprecated))`, MSVC `__declspec(deprecated)`; empty for
 * other compilers. Define it yourself (e.g. empty) before the first futoin
 * header to change that. The deprecated names and when they go:
 * @ref md_ABI_POLICY "docs/ABI-POLICY.md" "Deprecations".
 * @param msg  a string literal: what to use instead
 * @return an attribute, placed before a declaration
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

/**
 * @brief A new root AsyncSteps on loop: idle, with no steps.
 * @param loop  the loop the root runs on (NULL: NULL)
 * @return the root, or NULL when out of memory
 * @par Ownership
 * The caller owns the root and frees it with futoin_asyncsteps_free(),
 * before the loop. It may be executed, and reused after it finished, any
 * number of times.
 * @par Thread
 * The loop's thread.
 */
FutoInAsyncSteps* futoin_asyncsteps_new(FutoInLoop* loop);

/**
 * @brief Frees a root, cancelling it first if it runs (cancel handlers are
 * called); the same as root->api->free(root).
 *
 * Safe from inside the root's own callbacks: the memory is released when
 * the callback returns, and nothing else of the root runs.
 * @param root  the root (NULL: nothing happens); not a parallel branch
 * @par Ownership
 * Releases the root, its queued steps, its state variables (their cleanups
 * run, last created first), its stack() memory and the result values it
 * still holds (their cleanups run once). The handle is invalid afterwards.
 * @par Thread
 * The loop's thread; or, for a root of this library, any thread: then the
 * free is queued and done by the loop thread (the loop must still exist,
 * and no other thread may call success() on the root afterwards).
 */
void futoin_asyncsteps_free(FutoInAsyncSteps* root);

/**
 * @brief The loop an instance of this library runs on.
 * @param as  a root or a branch
 * @return its loop, or NULL for another implementation's object
 * @par Ownership
 * Borrowed: the loop stays its creator's.
 * @par Thread
 * Any thread (the loop of a flow never changes).
 */
FutoInLoop* futoin_asyncsteps_loop(FutoInAsyncSteps* as);

/**
 * @brief Sets how many step callbacks the engine runs per loop round before
 * it lets other loop callbacks and timers in (spec 1.15 "execution burst").
 * Ready flows take turns one step at a time.
 * @param loop   the loop
 * @param steps  the burst: default 100; 0 counts as 1
 * @par Ownership
 * Nothing passes: a setting of the loop.
 * @par Thread
 * The loop's thread.
 */
void futoin_set_burst(FutoInLoop* loop, unsigned steps);

/**
 * Receives the reports that cannot become a step error because no step of
 * that flow is running: API misuse (@ref md_MISUSE "docs/MISUSE.md"), and
 * errors that escape a root executed without an unhandled-error callback
 * (info "unhandled error CODE (INFO)"). Called on the loop's thread.
 * @param data  the data given to futoin_set_misuse_handler()
 * @param as    the flow the report is about; it may be a stale pointer:
 *              do not call it. NULL for misuse of the loop itself
 *              (running it from inside one of its own callbacks).
 * @param info  what happened, borrowed for the call
 */
typedef void (*FutoInMisuseHandler)(void* data, FutoInAsyncSteps* as, const char* info);
/**
 * @brief Sets the loop's misuse handler, which receives the reports of
 * FutoInMisuseHandler.
 *
 * The default (cb NULL) sends misuse as a FUTOIN_LOG_MISUSE line
 * "futoin: API misuse: <info>", and an unhandled error as a
 * FUTOIN_LOG_WARNING line "futoin: unhandled error <code> (<info>)", to
 * the log handler (futoin_set_log_handler(), which writes to stderr unless
 * replaced).
 * @param loop  the loop
 * @param cb    the handler, or NULL for the default
 * @param data  passed to cb
 * @par Ownership
 * data stays the caller's; it must stay valid while the handler is set.
 * @par Thread
 * The loop's thread.
 */
void futoin_set_misuse_handler(FutoInLoop* loop, FutoInMisuseHandler cb, void* data);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Binary value constructors and typed getters */
/** @{ */

/**
 * @brief A plain int32_t value.
 * @param v  the value
 * @return a value of type FTN_TYPE_INT32 that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_i32(int32_t v)
{
    static const FutoInType t = { FTN_TYPE_INT32, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.i32 = v;
    return r;
}
/**
 * @brief A plain int64_t value.
 * @param v  the value
 * @return a value of type FTN_TYPE_INT64 that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_i64(int64_t v)
{
    static const FutoInType t = { FTN_TYPE_INT64, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.i64 = v;
    return r;
}
/**
 * @brief A plain uint32_t value.
 * @param v  the value
 * @return a value of type FTN_TYPE_UINT32 that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_u32(uint32_t v)
{
    static const FutoInType t = { FTN_TYPE_UINT32, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.u32 = v;
    return r;
}
/**
 * @brief A plain uint64_t value.
 * @param v  the value
 * @return a value of type FTN_TYPE_UINT64 that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_u64(uint64_t v)
{
    static const FutoInType t = { FTN_TYPE_UINT64, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.u64 = v;
    return r;
}
/**
 * @brief A plain bool value.
 * @param v  the value
 * @return a value of type FTN_TYPE_BOOL that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_bool(bool v)
{
    static const FutoInType t = { FTN_TYPE_BOOL, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.b = v;
    return r;
}
/**
 * @brief A plain double value.
 * @param v  the value
 * @return a value of type FTN_TYPE_DOUBLE that owns nothing (no cleanup)
 * @par Ownership
 * Nothing to free: pass it on (success(), successStep(), a completion) or
 * drop it.
 * @par Thread
 * Any thread.
 */
static inline FutoInBinaryValue futoin_val_double(double v)
{
    static const FutoInType t = { FTN_TYPE_DOUBLE, 0 };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t;
    r.d = v;
    return r;
}
/**
 * @brief A string the caller keeps alive (e.g. a literal): not copied, not
 * freed.
 * @param s  a NUL-terminated UTF-8 string, or NULL (a string value with
 *           cstr NULL and length 0)
 * @return a value of type FTN_TYPE_STRING, length strlen(s), no cleanup
 * @par Ownership
 * s stays the caller's and must stay valid and unchanged as long as the
 * value may be read: until the step that receives it returns (or until a
 * FutoInOutcome or a completion holding it is reset or freed). For a string
 * that does not live that long, use futoin_val_strdup().
 * @par Thread
 * Any thread.
 */
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
/**
 * @brief A heap copy of s, as a string value that frees it.
 * @param s  a NUL-terminated string (NULL: copied as "")
 * @return a value of type FTN_TYPE_STRING owning the copy; out of memory:
 *         a value whose type is NULL (no value)
 * @par Ownership
 * The value owns the copy. Passed to success() and friends it belongs to
 * the engine, which frees it exactly once (after the receiving step
 * returns, or when the value is dropped); a value you keep instead is
 * freed with futoin_reset_binval().
 * @par Thread
 * Any thread.
 */
FutoInBinaryValue futoin_val_strdup(const char* s);
/**
 * @brief A custom object as a value.
 * @param type    its type descriptor: flags FTN_TYPE_CUSTOM_OBJECT, and a
 *                cleanup (may be NULL) that releases the object; it must
 *                outlive the value (a static const object)
 * @param object  the object; stored in custom_data (and p)
 * @return the value (type NULL makes it "no value")
 * @par Ownership
 * The value owns what type's cleanup releases: whoever holds the value
 * when it is dropped runs the cleanup once, with the value. Passed to
 * success() and friends, that is the engine (after the receiving step
 * returns, or when the value is dropped); a value you keep is released
 * with futoin_reset_binval().
 * @par Thread
 * Any thread; the cleanup runs on the thread that drops the value (the
 * loop's thread for values in the engine).
 */
FutoInBinaryValue futoin_val_custom(const FutoInType* type, void* object);

/**
 * @brief The number of leading arguments that hold a value.
 * @param args  the arguments a step received (may be NULL)
 * @return 0..4: the arguments before the first one whose type is NULL
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args (a step: the loop's thread).
 */
static inline int futoin_args_count(const FutoInArgs* args)
{
    int n = 0;
    while (args && n < 4 && args->args[n].type) {
        ++n;
    }
    return n;
}
/**
 * @brief The type flags of argument i.
 * @param args  the arguments (may be NULL)
 * @param i     the index, 0..3
 * @return its FutoInType::flags (an FTN_TYPE_* base type, or-ed with
 *         FTN_TYPE_ARRAY for a vector), 0 when args is NULL, i is out of
 *         range or the argument holds no value
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args.
 */
static inline int futoin_arg_type(const FutoInArgs* args, int i)
{
    if (!args || i < 0 || i > 3 || !args->args[i].type) {
        return 0;
    }
    return args->args[i].type->flags;
}
/**
 * @brief Typed getter: argument i as an integer.
 * @param args      the arguments (may be NULL)
 * @param i         the index, 0..3
 * @param fallback  what to return when argument i is not an integer or bool
 * @return the value when argument i has an integer or bool type (any
 *         width, converted to int64_t: a uint64_t above INT64_MAX wraps),
 *         else fallback
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args.
 */
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
/**
 * @brief Typed getter: futoin_arg_int() converted to int32_t.
 * @param args      the arguments (may be NULL)
 * @param i         the index, 0..3
 * @param fallback  what to return when argument i is not an integer or bool
 * @return the value converted to int32_t (truncated like a C conversion),
 *         else fallback
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args.
 */
static inline int32_t futoin_arg_i32(const FutoInArgs* args, int i, int32_t fallback)
{
    return (int32_t)futoin_arg_int(args, i, fallback);
}
/**
 * @brief Typed getter: argument i as a double.
 * @param args      the arguments (may be NULL)
 * @param i         the index, 0..3
 * @param fallback  what to return when argument i is not a number
 * @return the value when argument i is a float, a double, or an integer or
 *         bool (converted), else fallback
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args.
 */
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
/**
 * @brief Typed getter: argument i as a string.
 * @param args      the arguments (may be NULL)
 * @param i         the index, 0..3
 * @param fallback  what to return when argument i is not an FTN_TYPE_STRING
 * @return the string (its cstr), else fallback
 * @par Ownership
 * Borrowed: valid while the value lives (in a step: until the callback
 * returns). Copy it to keep it.
 * @par Thread
 * Any thread that may read args.
 */
static inline const char* futoin_arg_cstr(const FutoInArgs* args, int i, const char* fallback)
{
    return futoin_arg_type(args, i) == FTN_TYPE_STRING ? args->args[i].cstr : fallback;
}
/**
 * @brief Typed getter: argument i as a bool.
 * @param args      the arguments (may be NULL)
 * @param i         the index, 0..3
 * @param fallback  what to return when argument i is not an integer or bool
 * @return futoin_arg_int() != 0, else fallback
 * @par Ownership
 * Reads only; args stays borrowed.
 * @par Thread
 * Any thread that may read args.
 */
static inline bool futoin_arg_bool(const FutoInArgs* args, int i, bool fallback)
{
    return futoin_arg_int(args, i, fallback) != 0;
}
/**
 * @brief Typed getter: the object of a custom-object argument.
 * @param args  the arguments (may be NULL)
 * @param i     the index, 0..3
 * @return its custom_data when argument i is an FTN_TYPE_CUSTOM_OBJECT,
 *         else NULL
 * @par Ownership
 * Borrowed: the value's cleanup may release the object once the step
 * returns. Keep it only by means its type provides (a reference count).
 * @par Thread
 * Any thread that may read args.
 */
static inline void* futoin_arg_custom(const FutoInArgs* args, int i)
{
    return futoin_arg_type(args, i) == FTN_TYPE_CUSTOM_OBJECT ? args->args[i].custom_data
                                                              : (void*)0;
}

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Common API (spec 2.2.1) */
/** @{ */

/**
 * @brief Adds a step (the spec's add()).
 *
 * Called in an execute callback, the step is a sub-step of the running
 * step: sub-steps run in order once the callback returns, and the running
 * step completes with the result of the last one. Called in an error
 * handler, the steps replace the failed step (spec 1.2.1). On a root that
 * was not executed, they queue at its top level.
 *
 * In a tracing build (futoin/version.h: FUTOIN_TRACING 1) futoin_add is
 * also a macro that records the caller's file and line for error traces
 * and dumps, then calls this function; `(futoin_add)(...)` calls the
 * function itself.
 *
 * Out of memory (a new slab of step nodes): the process aborts with
 * "futoin: out of memory" through the log handler (stderr unless replaced),
 * as for all of the engine's bookkeeping (@ref md_SEMANTICS "docs/SEMANTICS.md"
 * "Memory").
 * @param as    the flow the callback runs in (or the idle root)
 * @param f     the step's execute callback (NULL: misuse, InternalError)
 * @param eh    the step's error handler, or NULL
 * @param data  passed to f and eh
 * @par Ownership
 * data stays the caller's: keep it valid until the step has ended (its
 * callbacks may run until then, and its error handler even after its
 * sub-steps failed).
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
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
/**
 * @brief Adds a parallel step (the spec's parallel()); steps added to the
 * returned interface become its branches.
 *
 * Every futoin_add() (or futoin_parallel(), futoin_add_loop(),
 * futoin_repeat(), futoin_add_sync()) on the returned interface adds one
 * branch; every other call on it acts on the flow that created it. When
 * the parallel step runs, its branches start together, each a flow of its
 * own with its own rootId(), and it succeeds (with no result) when all of
 * them succeeded; the first error cancels the other branches and unwinds
 * from the parallel step. Traced like futoin_add() in a tracing build. Out
 * of memory: the process aborts with the message (engine bookkeeping).
 * @param as    the flow the callback runs in (or the idle root)
 * @param eh    the parallel step's error handler, or NULL
 * @param data  passed to eh
 * @return the interface to add branches to: valid until the current
 *         callback returns (on a root that has not started, until
 *         execute()); under misuse an inert interface whose calls do nothing
 * @par Ownership
 * The returned interface is the engine's: never free it. data stays the
 * caller's, valid until the parallel step has ended.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
static inline FutoInAsyncSteps* futoin_parallel(FutoInAsyncSteps* as,
        FutoInAsyncSteps_error_callback eh, void* data)
{
    return as->api->parallel(as, data, eh);
}
/**
 * @brief A named state variable of the root (the spec's state()): created
 * on first use, shared by every step and branch of the root.
 *
 * Both callbacks may call the library, on this root too: an allocate()
 * that frees the root still gets its variable recorded, and cleaned up
 * with the others. Once the root's free() has been called (also from a
 * cleanup run while it is freed) no variable is created: NULL, allocate()
 * is not called, and the misuse handler is told; existing variables can
 * still be looked up. Out of memory: what allocate() returns (NULL if it
 * failed) is returned and recorded; the engine's own table of variables
 * aborts the process with the message.
 * @param as        a flow of the root (the root itself or a branch)
 * @param name      the variable's name: non-NULL (NULL: InternalError of the
 *                  running step), NUL-terminated, any length; copied
 * @param allocate  creates the value on first use: allocate(data); NULL:
 *                  look up only (NULL when the variable does not exist)
 * @param cleanup   releases the value with the root: cleanup(data, value),
 *                  last created first; may be NULL
 * @param data      passed to allocate and cleanup
 * @return the variable's value (what allocate() returned when it was
 *         created), or NULL
 * @par Ownership
 * The value belongs to the root: cleanup runs when the root is freed, not
 * when it finishes (a reused root keeps its variables). data stays the
 * caller's and must stay valid until then.
 * @par Thread
 * The loop's thread.
 */
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
/**
 * @brief The error_info of the flow as: the info of its last error, or the
 * label of a break/continue on its way.
 *
 * A parallel branch reads its own errors, and an error that escapes a
 * branch brings its info to the flow holding the parallel step
 * (docs/SEMANTICS.md "Whose error a flow reads").
 * @param as  a flow (a root, a branch, or the interface parallel() returned)
 * @return the text, "" when none (never NULL)
 * @par Ownership
 * Borrowed from the flow: valid until that flow's next error or
 * break/continue, or until the root is freed. Copy it to keep it.
 * @par Thread
 * The loop's thread.
 */
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
/**
 * @brief Memory that lives as long as the current step (the spec's stack()).
 *
 * Out of memory: NULL for a block larger than the pooled size; a new slab
 * of pooled blocks aborts the process with the message.
 * @param as       the flow whose step is running (or an idle root)
 * @param size     bytes: 0 to PTRDIFF_MAX less a small header
 * @param cleanup  runs with the block's address before it is released
 *                 (may be NULL)
 * @return the block, zero-filled and aligned for any type; NULL for a size
 *         too large or memory that cannot be had (no cleanup is registered,
 *         the step goes on), and under misuse (no step of the flow runs)
 * @par Ownership
 * The engine owns the block: it runs cleanup and frees the block when the
 * current step is destroyed (after its sub-steps, its error handler and
 * its cancel handler). On a root that was not executed, when the root
 * finishes or is freed. Never free it yourself.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
static inline void* futoin_stack(FutoInAsyncSteps* as, size_t size, void (*cleanup)(void* value))
{
    /* Other implementations may call the cleanup without a NULL check. */
    return as->api->stack(as, size, cleanup ? cleanup : futoin_stack_no_cleanup_);
}
/**
 * @brief Adds a step synchronized on a sync object (the spec's addSync()):
 * Mutex, Throttle, Limiter (<futoin/sync.h>) or another implementation's.
 *
 * When the step starts it locks sync for the flow: admitted at once,
 * queued, or rejected. Once admitted, the critical section (f, eh) runs as
 * a sub-step with the input of the sync step, and its result goes to the
 * step after it; the flow leaves sync when the sync step ends (success,
 * error, timeout or cancel).
 *
 * **A rejection skips eh.** When the object refuses the flow (a full queue of
 * a Mutex, Throttle or Limiter: DefenseRejected; a wait record that cannot be
 * had: InternalError "sync object: out of memory"), the critical section
 * never ran, so its error handler eh is not called: the error goes to the
 * handlers of the steps around the sync step. Catch DefenseRejected there,
 * e.g. with a step that wraps the sync step:
 * @code
 * static void guarded(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
 * {
 *     futoin_add_sync(as, limiter, handle_request, on_handler_error, data);
 * }
 * static void on_busy(FutoInAsyncSteps* as, void* data, const char* code)
 * {
 *     if (strcmp(code, FUTOIN_DEFENSE_REJECTED) == 0) {
 *         futoin_success1(as, futoin_val_cstr("busy")); // e.g. answer 503
 *     }
 * }
 * ...
 * futoin_add(as, guarded, on_busy, data);
 * @endcode
 * Errors of the critical section itself go to eh first, then outwards.
 *
 * Traced like futoin_add() in a tracing build. Out of memory: a wait record
 * that cannot be had fails the step with InternalError "sync object: out
 * of memory"; a Throttle window timer that cannot be armed aborts the
 * process with the message.
 * @param as    the flow the callback runs in (or the idle root)
 * @param sync  the sync object (NULL: misuse, InternalError)
 * @param f     the critical section's execute callback (NULL: misuse)
 * @param eh    the critical section's error handler, or NULL; not called
 *              for a rejection (above)
 * @param data  passed to f and eh
 * @par Ownership
 * sync stays the caller's: it must outlive every sync step that uses it
 * (futoin_sync_free() answers FUTOIN_SYNC_BUSY while flows use it). data
 * stays the caller's, valid until the step has ended.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the flow
 * as, or on a root that was not executed yet. A sync object of this library
 * that is not shared must belong to the same loop (<futoin/sync.h>).
 */
static inline void futoin_add_sync(FutoInAsyncSteps* as, FutoInSync* sync,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* data)
{
    as->api->addSync(as, sync, data, f, eh);
}
/**
 * @brief A new independent root on the same loop (the spec's newInstance()).
 * @param as  any flow (of a root on the loop wanted)
 * @return the new root, idle, or NULL when out of memory
 * @par Ownership
 * The caller owns the new root and frees it with futoin_asyncsteps_free().
 * @par Thread
 * The loop's thread.
 */
static inline FutoInAsyncSteps* futoin_new_instance(FutoInAsyncSteps* as)
{
    return as->api->newInstance(as);
}
/**
 * @brief The spec's isValid(): whether the root or branch can still be used.
 * @param as  a root or a branch
 * @return 1 for an idle, running or finished root and for a live branch;
 *         0 after cancel() (until add() makes the root idle again), after
 *         free() was requested, and for a finished branch
 * @par Ownership
 * Reads only.
 * @par Thread
 * The loop's thread.
 */
static inline int futoin_is_valid(FutoInAsyncSteps* as)
{
    return as->api->isValid(as);
}
/**
 * @brief The spec's rootId(): identifies the flow.
 * @param as  a root's main flow or one parallel branch
 * @return a value that identifies the flow (each branch has its own)
 *         while it lives; the id of a flow that ended may be given to a new
 *         one
 * @par Ownership
 * Reads only; the id is a number, not a handle to keep.
 * @par Thread
 * The loop's thread.
 */
static inline ptrdiff_t futoin_root_id(FutoInAsyncSteps* as)
{
    return as->api->rootId(as);
}

/**
 * @brief Adds a step that succeeds with args, the spec's successStep():
 * result injection after sub-steps.
 *
 * Works on any implementation of the interface
 * (@ref md_INTEROP "docs/INTEROP.md"). Traced like futoin_add() in a tracing
 * build. Out of memory: on another implementation the step fails with
 * InternalError "successStep(): out of memory" (the values are cleaned up);
 * the engine's own records abort the process with the message.
 * @param as    the flow the callback runs in (or the idle root)
 * @param args  up to four values (NULL: none)
 * @par Ownership
 * The values pass to the engine at the call, which cleans them up exactly
 * once: after the step after this one returns, or when the step is dropped
 * unstarted (an error, a cancel; on another implementation, at the latest
 * when the root is freed). The FutoInArgs struct itself stays the caller's
 * and is not touched afterwards.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
void futoin_success_step(FutoInAsyncSteps* as, FutoInArgs* args);

/**
 * @brief Adds a step that yields to the loop once (spec 1.15 relinquish()):
 * other flows and loop callbacks run before the flow continues.
 *
 * Any implementation: elsewhere the step waits for sched_immediate().
 * Traced like futoin_add() in a tracing build. Out of memory: when the loop
 * cannot queue the trip, the flow goes through the ready queue instead
 * (other flows and loop work still run first); a new step node aborts the
 * process with the message.
 * @param as  the flow the callback runs in (or the idle root)
 * @par Ownership
 * Nothing passes: the engine owns the step it adds.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
void futoin_relinquish(FutoInAsyncSteps* as);

/**
 * @brief The spec's copyFrom() (spec 1.5; deprecated upstream): copies a
 * model's top-level steps into as and re-creates its state variables.
 *
 * The steps go to the root's queue before execute(), or become sub-steps
 * of the running step. The model's state variables that as does not have
 * are re-created by calling their allocators again. Values with a cleanup
 * in a model's successStep cannot be copied: InternalError. Out of memory:
 * the process aborts with the message.
 * @param as     the flow the callback runs in (or an idle root); an object
 *               of this library
 * @param model  a root of this library that is not running (a model is
 *               one that is never executed); a running root or a branch is
 *               misuse. When as is another implementation's object, as
 *               gets InternalError and nothing is copied
 * @par Ownership
 * The model stays the caller's and is left unchanged: copy it as often as
 * needed, free it with futoin_asyncsteps_free(). The data pointers of its
 * steps are shared by the copies: keep them valid while any copy may run.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet. The model is read
 * there: keep it on the same loop.
 */
void futoin_copy_from(FutoInAsyncSteps* as, FutoInAsyncSteps* model);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Execution API (spec 2.2.2): inside an execute callback */
/** @{ */

/**
 * @brief Completes the step with no result (the spec's success()).
 *
 * Sends a zeroed FutoInArgs, never NULL, to other implementations of the
 * interface (they may read it).
 * @param as  the flow whose step completes
 * @par Ownership
 * Nothing passes (no values).
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
void futoin_success_empty(FutoInAsyncSteps* as);
/**
 * @brief Completes the step with no result: futoin_success_empty().
 * @param as  the flow whose step completes
 * @par Ownership
 * Nothing passes (no values).
 * @par Thread
 * As futoin_success_empty().
 */
static inline void futoin_success(FutoInAsyncSteps* as)
{
    futoin_success_empty(as);
}
/**
 * @brief Completes the step with up to four values (the spec's success()).
 *
 * Out of memory (a box for the values): the process aborts with the
 * message, as for futoin_success1() to futoin_success4().
 * @param as    the flow whose step completes
 * @param args  the values, NULL: none (futoin_success())
 * @par Ownership
 * The values pass to the engine at the call, whatever happens: the next
 * step's callback borrows them, and each value's cleanup runs exactly once
 * after it returns, or when the values are dropped (an error, a cancel, a
 * call refused as misuse, a cross-thread call that lost its race). The
 * FutoInArgs struct itself stays the caller's and is not touched after the
 * call.
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_success_args(FutoInAsyncSteps* as, FutoInArgs* args)
{
    if (!args) {
        futoin_success(as);
        return;
    }
    as->api->success(as, args);
}
/**
 * @brief Completes the step with one value (the spec's success()).
 *
 * Out of memory (a box for the values): the process aborts with the
 * message.
 * @param as  the flow whose step completes
 * @param a0  the first value
 * @par Ownership
 * The values pass to the engine at the call, whatever happens: the next
 * step's callback borrows them, and each value's cleanup runs exactly once
 * after it returns, or when the values are dropped (an error, a cancel, a
 * call refused as misuse, a cross-thread call that lost its race).
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_success1(FutoInAsyncSteps* as, FutoInBinaryValue a0)
{
    FutoInArgs a;
    a.arg0 = a0; /* the rest emptied one by one: stores, not a string op */
    memset(&a.arg1, 0, sizeof(a.arg1));
    memset(&a.arg2, 0, sizeof(a.arg2));
    memset(&a.arg3, 0, sizeof(a.arg3));
    as->api->success(as, &a);
}
/**
 * @brief Completes the step with two values (the spec's success()).
 *
 * Out of memory (a box for the values): the process aborts with the
 * message.
 * @param as  the flow whose step completes
 * @param a0  the first value
 * @param a1  the second value
 * @par Ownership
 * The values pass to the engine at the call, whatever happens: the next
 * step's callback borrows them, and each value's cleanup runs exactly once
 * after it returns, or when the values are dropped (an error, a cancel, a
 * call refused as misuse, a cross-thread call that lost its race).
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_success2(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1)
{
    FutoInArgs a;
    a.arg0 = a0;
    a.arg1 = a1;
    memset(&a.arg2, 0, sizeof(a.arg2));
    memset(&a.arg3, 0, sizeof(a.arg3));
    as->api->success(as, &a);
}
/**
 * @brief Completes the step with three values (the spec's success()).
 *
 * Out of memory (a box for the values): the process aborts with the
 * message.
 * @param as  the flow whose step completes
 * @param a0  the first value
 * @param a1  the second value
 * @param a2  the third value
 * @par Ownership
 * The values pass to the engine at the call, whatever happens: the next
 * step's callback borrows them, and each value's cleanup runs exactly once
 * after it returns, or when the values are dropped (an error, a cancel, a
 * call refused as misuse, a cross-thread call that lost its race).
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_success3(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1,
        FutoInBinaryValue a2)
{
    FutoInArgs a;
    a.arg0 = a0;
    a.arg1 = a1;
    a.arg2 = a2;
    memset(&a.arg3, 0, sizeof(a.arg3));
    as->api->success(as, &a);
}
/**
 * @brief Completes the step with four values (the spec's success()).
 *
 * Out of memory (a box for the values): the process aborts with the
 * message.
 * @param as  the flow whose step completes
 * @param a0  the first value
 * @param a1  the second value
 * @param a2  the third value
 * @param a3  the fourth value
 * @par Ownership
 * The values pass to the engine at the call, whatever happens: the next
 * step's callback borrows them, and each value's cleanup runs exactly once
 * after it returns, or when the values are dropped (an error, a cancel, a
 * call refused as misuse, a cross-thread call that lost its race).
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_success4(FutoInAsyncSteps* as, FutoInBinaryValue a0, FutoInBinaryValue a1,
        FutoInBinaryValue a2, FutoInBinaryValue a3)
{
    FutoInArgs a;
    a.arg0 = a0;
    a.arg1 = a1;
    a.arg2 = a2;
    a.arg3 = a3;
    as->api->success(as, &a);
}
/**
 * @brief Fails the step (the spec's error()). Return from the callback
 * right after: C cannot unwind the stack for you.
 *
 * The flow unwinds from the step: frames above it are aborted, then the error
 * handlers are called from the innermost outwards
 * (@ref md_SEMANTICS "docs/SEMANTICS.md" "Errors"). In an error handler it
 * replaces the code (and drops the steps the handler added). Out of memory
 * (copies of code and info): the process aborts with the message.
 * @param as    the flow whose step fails
 * @param code  the error code: one of the FUTOIN_* codes or your own (not
 *              NULL: misuse)
 * @param info  the error's info, read back with futoin_error_info(); may
 *              be NULL ("")
 * @par Ownership
 * code and info are copied during the call.
 * @par Thread
 * The loop's thread: in the step's execute callback or error handler (in an
 * error handler it recovers), or later, from any loop callback, for a step
 * that waits (waitExternal(), setTimeout(), setCancel()). For a waiting step
 * of a root of this library also any other thread: the call is queued and
 * decided on the loop thread, where it, the step's timeout or a cancel wins
 * (@ref md_THREADS "docs/THREADS.md"). A step parked on an owned wait refuses
 * it (futoin_wait_owned()).
 */
static inline void futoin_error(FutoInAsyncSteps* as, const char* code, const char* info)
{
    as->api->handle_error(as, code, info);
}
/**
 * @brief Fails the step with Timeout unless it completes in time (the spec's
 * setTimeout()); the step then waits for a success() or error() from
 * outside once its callback returns, unless it added sub-steps.
 *
 * The timeout covers the step's sub-steps too. A second call replaces the
 * first. When it fires, the step's cancel handler runs first, then its
 * error handler gets FUTOIN_TIMEOUT, with error_info set from
 * futoin_set_wait_info(). Out of memory: the timer cannot be armed and the
 * step fails with InternalError "setTimeout(): out of memory" (it never
 * waits without its timeout).
 * @param as          the flow whose step is running
 * @param timeout_ms  the time limit: any uint32_t (see futoin_loop_deferred())
 * @par Ownership
 * The timer is the engine's: dropped when the step completes or is aborted.
 * @par Thread
 * The loop's thread, in the step's execute callback (in an error handler
 * it is misuse).
 */
static inline void futoin_set_timeout(FutoInAsyncSteps* as, uint32_t timeout_ms)
{
    as->api->setTimeout(as, timeout_ms);
}
/**
 * @brief Sets the step's cancel handler (the spec's setCancel()); the step
 * then waits for a success() or error() from outside once its callback
 * returns, unless it added sub-steps.
 *
 * ch(as, data) runs if the step is aborted before it completes: root
 * cancel, a timeout (its own or an outer one), a sibling branch failing,
 * break/continue out of it, an error of a sub-step that it does not
 * recover. Not when the step fails by its own error(). A second call
 * replaces the first. Out of memory (the frame's side record): the process
 * aborts with the message.
 * @param as    the flow whose step is running
 * @param ch    the cancel handler (NULL: misuse, InternalError)
 * @param data  passed to ch
 * @par Ownership
 * data stays the caller's; release what it holds in ch, or after the step
 * completed.
 * @par Thread
 * The loop's thread, in the step's execute callback (in an error handler
 * it is misuse); ch runs on the loop's thread.
 */
static inline void futoin_set_cancel(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch,
        void* data)
{
    as->api->setCancel(as, data, ch);
}
/**
 * @brief Makes the step wait for a later success() or error() (the spec's
 * waitExternal()), with no timeout and no cancel handler.
 * @param as  the flow whose step is running
 * @par Ownership
 * Nothing passes.
 * @par Thread
 * The loop's thread, in the step's execute callback (in an error handler
 * it is misuse). A step that waits for another thread should hold the loop
 * (futoin_loop_hold()) until that thread has called.
 */
static inline void futoin_wait_external(FutoInAsyncSteps* as)
{
    as->api->waitExternal(as);
}
/**
 * @brief Describes what the running step waits for, for the error it gets
 * if it times out: an operation and its peer, e.g. "read 127.0.0.1:8080".
 *
 * When a timeout (of this step or of a step around it) fails the flow, the
 * Timeout's error_info is the description of the innermost step of the
 * flow that has one (the latest, if a step gave several), instead of "".
 * Dumps and futoin_flow_info() show it too.
 * @param as    the flow whose step is running
 * @param what  the description (NULL: -1)
 * @return 0, or -1 (nothing recorded) when what is NULL, no execute
 *         callback of as is running, as is another implementation's
 *         object, or memory is short
 * @par Ownership
 * what is copied; the copy is kept until the step ends.
 * @par Thread
 * The loop's thread, in the step's own execute callback.
 */
int futoin_set_wait_info(FutoInAsyncSteps* as, const char* what);

/**
 * @brief Parks the running step on a wait that only its owner ends.
 *
 * For code that completes a step from a callback of its own (an I/O
 * completion, a lock, a queue), so that a late success() or error() meant
 * for an earlier step of the same flow cannot end this wait instead (a
 * flow's handle is the same for all its steps). Like
 * futoin_set_cancel(as, ch, key) (ch NULL: like futoin_wait_external());
 * from then until the step stops waiting, success() and error() on as from
 * outside the step are refused as misuse and change nothing, and only
 * futoin_owned_success() and futoin_owned_error() with the same key end the
 * wait. A later futoin_set_cancel() in the same step replaces ch and key;
 * futoin_set_timeout() keeps the wait owned. On another implementation's
 * object it is futoin_set_cancel() (or futoin_wait_external()): no
 * protection. @ref md_SEMANTICS "docs/SEMANTICS.md" "Whose wait it is".
 * @param as   the flow whose step is running
 * @param ch   the cancel handler, called with key; may be NULL
 * @param key  identifies the wait (not NULL: misuse); typically the
 *             owner's record of the operation
 * @par Ownership
 * key stays the owner's: keep it valid until the wait ends (ch runs, or
 * the owner's completion is applied).
 * @par Thread
 * The loop's thread, in the step's own execute callback; anywhere else it
 * is misuse.
 */
void futoin_wait_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* key);
/**
 * @brief Ends the owned wait armed with key (futoin_wait_owned()) by
 * success(args).
 *
 * Called from inside the step's own execute callback or error handler (an
 * operation that finished at once), it is that step's success(), with the
 * key unchecked. On another implementation's object it is success().
 * @param as    the flow whose step waits
 * @param key   the key the wait was armed with
 * @param args  up to four values (NULL: none)
 * @return 0 if it was applied or queued; -1 if as waits on no owned wait
 *         with this key (it ended first by a timeout or cancel, or the key
 *         is wrong). -1 is not reported anywhere: losing such a race is
 *         the owner's normal case.
 * @par Ownership
 * The values pass to the engine at the call: they go to the next step, or
 * they are cleaned up (on -1 at once, or when a queued call finds the wait
 * gone). The FutoInArgs struct stays the caller's.
 * @par Thread
 * Any thread: from another thread it is queued and applied on the loop
 * thread if that wait still waits then.
 */
int futoin_owned_success(FutoInAsyncSteps* as, const void* key, FutoInArgs* args);
/**
 * @brief Ends the owned wait armed with key (futoin_wait_owned()) by
 * error(code, info); as futoin_owned_success() otherwise.
 * @param as    the flow whose step waits
 * @param key   the key the wait was armed with
 * @param code  the error code (NULL: -1)
 * @param info  the error's info, may be NULL
 * @return 0 if it was applied or queued, -1 as for futoin_owned_success()
 * @par Ownership
 * code and info are copied during the call.
 * @par Thread
 * Any thread, as futoin_owned_success().
 */
int futoin_owned_error(FutoInAsyncSteps* as, const void* key, const char* code, const char* info);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Loops (spec 2.2.4): inside an execute callback */
/** @{ */

/**
 * @brief Adds a loop step (the spec's loop()): it runs f(as, data) again and
 * again until futoin_break().
 *
 * Each iteration is a step: the body may add sub-steps, wait, set a
 * timeout; its stack() memory and timers end with the iteration, and its
 * results are dropped. Not to be confused with the event loop (FutoInLoop,
 * futoin_loop_*()). Traced like futoin_add() in a tracing build. Out of
 * memory: the process aborts with the message (engine bookkeeping).
 * @param as     the flow the callback runs in (or the idle root)
 * @param f      the body: f(as, data) per iteration (NULL: misuse)
 * @param data   passed to f
 * @param label  names the loop for futoin_break() and futoin_continue()
 *               from nested loops and branches; may be NULL
 * @par Ownership
 * data stays the caller's, valid until the loop step has ended. label is
 * copied.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
static inline void futoin_add_loop(FutoInAsyncSteps* as,
        void (*f)(FutoInAsyncSteps* as, void* data), void* data, const char* label)
{
    as->api->loop(as, data, f, label);
}
/**
 * @brief The former name of futoin_add_loop(), which it calls.
 * @deprecated Use futoin_add_loop(): futoin_loop_*() names the event loop.
 * Kept until 1.0 (@ref md_ABI_POLICY "docs/ABI-POLICY.md" "Deprecations").
 * @param as     as futoin_add_loop()
 * @param f      as futoin_add_loop()
 * @param data   as futoin_add_loop()
 * @param label  as futoin_add_loop()
 * @par Thread
 * As futoin_add_loop().
 */
FUTOIN_DEPRECATED("use futoin_add_loop()")
static inline void futoin_loop(FutoInAsyncSteps* as, void (*f)(FutoInAsyncSteps* as, void* data),
        void* data, const char* label)
{
    (futoin_add_loop)(as, f, data, label);
}
/**
 * @brief Adds a loop step that runs f(as, data, i) for i = 0 .. count-1
 * (the spec's repeat()); futoin_break() ends it early.
 *
 * Iterations are steps, as for futoin_add_loop(). Traced like futoin_add()
 * in a tracing build. Out of memory: the process aborts with the message
 * (engine bookkeeping).
 * @param as     the flow the callback runs in (or the idle root)
 * @param count  the number of iterations (0: the step does nothing)
 * @param f      the body: f(as, data, i) (NULL: misuse)
 * @param data   passed to f
 * @param label  names the loop, may be NULL
 * @par Ownership
 * data stays the caller's, valid until the loop step has ended. label is
 * copied.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
static inline void futoin_repeat(FutoInAsyncSteps* as, size_t count,
        void (*f)(FutoInAsyncSteps* as, void* data, size_t i), void* data, const char* label)
{
    as->api->repeat(as, data, count, f, label);
}
/**
 * @brief Leaves the innermost loop, or the one named label (the spec's
 * break()). Return from the callback right after.
 *
 * Frames between the step and the loop are aborted (their cancel
 * handlers run; no error handler is called), also across parallel
 * branches into the parent flow's loop. No enclosing loop, or no loop with
 * that label: InternalError.
 * @param as     the flow whose step is running
 * @param label  the loop's label, NULL for the innermost loop; copied (it
 *               becomes error_info on the way)
 * @par Ownership
 * The aborted frames' cancel handlers release what those steps held; the
 * values they held are cleaned up.
 * @par Thread
 * The loop's thread, in an execute callback or error handler of the flow.
 */
static inline void futoin_break(FutoInAsyncSteps* as, const char* label)
{
    as->api->breakLoop(as, label);
}
/**
 * @brief Starts the next iteration of the innermost loop, or of the one named
 * label (the spec's continue()). Return from the callback right after.
 *
 * Unwinds like futoin_break(); a repeat() or forEach goes on with the next
 * index, and one at its last index ends.
 * @param as     the flow whose step is running
 * @param label  the loop's label, NULL for the innermost loop; copied
 * @par Ownership
 * As futoin_break().
 * @par Thread
 * The loop's thread, in an execute callback or error handler of the flow.
 */
static inline void futoin_continue(FutoInAsyncSteps* as, const char* label)
{
    as->api->continueLoop(as, label);
}

/**
 * The body of futoin_foreach_array(), run as a loop iteration.
 * @param as    the flow of the iteration
 * @param data  the data given to futoin_foreach_array()
 * @param i     the element's index, 0 first
 * @param elem  the element: base + i * elem_size, borrowed from the caller's
 *              array
 */
typedef void (*FutoInForEachArrayFn)(FutoInAsyncSteps* as, void* data, size_t i, const void* elem);
/**
 * @brief Adds a loop step over a C array (the spec's forEach()):
 * f(as, data, i, element) for each element, in order.
 *
 * Ranges: with count > 0, elem_size >= 1, count * elem_size must fit in
 * size_t and the array must not wrap around the address space; otherwise
 * the step fails with InternalError naming the value (a misuse report
 * where no step runs) and no loop is added. Traced like futoin_add() in a
 * tracing build. Out of memory: the process aborts with the message
 * (engine bookkeeping), as for futoin_foreach_pairs().
 * @param as         the flow the callback runs in (or the idle root)
 * @param base       the first element
 * @param count      the number of elements (0: the step does nothing)
 * @param elem_size  the size of one element in bytes
 * @param f          the body (NULL: misuse)
 * @param data       passed to f
 * @param label      names the loop, may be NULL; copied
 * @par Ownership
 * The array is not copied: it stays the caller's and must stay valid until
 * the loop step has ended. data as well.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
void futoin_foreach_array(FutoInAsyncSteps* as, const void* base, size_t count, size_t elem_size,
        FutoInForEachArrayFn f, void* data, const char* label);

/** A key/value pair for futoin_foreach_pairs(). */
typedef struct FutoInKeyValue {
    const char* key;         /**< The key. */
    FutoInBinaryValue value; /**< The value. */
} FutoInKeyValue;
/**
 * The body of futoin_foreach_pairs(), run as a loop iteration.
 * @param as     the flow of the iteration
 * @param data   the data given to futoin_foreach_pairs()
 * @param key    the pair's key, borrowed from the caller's array
 * @param value  the pair's value, borrowed from the caller's array (not
 *               cleaned up by the loop)
 */
typedef void (*FutoInForEachPairFn)(FutoInAsyncSteps* as, void* data, const char* key,
        const FutoInBinaryValue* value);
/**
 * @brief Adds a loop step over key/value pairs, in array order (the spec's
 * forEach() over an object).
 *
 * count * sizeof(FutoInKeyValue) must fit in size_t without wrapping the
 * address space (else InternalError, as for futoin_foreach_array()). Out
 * of memory: as futoin_foreach_array().
 * @param as     the flow the callback runs in (or the idle root)
 * @param pairs  the first pair
 * @param count  the number of pairs (0: the step does nothing)
 * @param f      the body: f(as, data, key, &value) (NULL: misuse)
 * @param data   passed to f
 * @param label  names the loop, may be NULL; copied
 * @par Ownership
 * The pairs (keys and values) are not copied and not cleaned up: they stay
 * the caller's and must stay valid until the loop step has ended.
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
void futoin_foreach_pairs(FutoInAsyncSteps* as, const FutoInKeyValue* pairs, size_t count,
        FutoInForEachPairFn f, void* data, const char* label);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Bounded parallel: count items, at most k at a time, every outcome kept */
/** @{ */

/** Modes of futoin_parallel_bounded(): what an item's error does. */
enum {
    /** The first item that fails ends the helper as a failing branch ends
     * parallel(): the items still running are cancelled (their cancel
     * handlers run), no further item starts, and the error goes on from
     * the helper's step with the item's code and error_info. */
    FUTOIN_BOUNDED_FIRST_ERROR = 0,
    /** Every item runs to its end: an item's error is recorded in its
     * outcome and stops nothing else; the next step gets all outcomes and
     * decides. */
    FUTOIN_BOUNDED_ALL_SETTLED = 1
};

/** The step of item i of futoin_parallel_bounded(): called with the
 * item's own flow as the execute callback of its step, it may do what a
 * step does (add sub-steps, wait, set a timeout or a cancel handler,
 * succeed with values, fail). */
typedef void (*FutoInBoundedItemFn)(FutoInAsyncSteps* as, void* data, size_t i);

/** What one item of futoin_parallel_bounded() ended with. */
typedef struct FutoInBoundedOutcome {
    /** NULL if the item succeeded, else its error code. */
    const char* code;
    /** The error_info of the item's error as its flow saw it ("" when it
     * succeeded or gave none). */
    const char* info;
    /** The values the item's step succeeded with (those of its last
     * sub-step, as a next step would get them); zeroed if it failed.
     * They belong to the result: a step may take one over by copying it
     * and setting the record's type to NULL, so that the result's release
     * skips it. */
    FutoInArgs args;
} FutoInBoundedOutcome;

/** The outcomes of a futoin_parallel_bounded() step: futoin_bounded_result()
 * reads them from the step's result. */
typedef struct FutoInBoundedResult {
    size_t count;                /**< the number of items */
    size_t failed;               /**< how many of them failed (0 in FUTOIN_BOUNDED_FIRST_ERROR) */
    FutoInBoundedOutcome* items; /**< count outcomes, in index order */
} FutoInBoundedResult;

/** Adds a step that runs count items, item(as, data, i) for every index
 * i below count, with at most k of them running at once. Each item is a
 * parallel branch of its own (its own flow and rootId); the items start
 * in index order, k at first and then one each time a
 * running item ends, so the branches, flows and frames in use are bounded
 * by k rather than count, and the work is linear in count. Running items
 * interleave step by step as parallel() branches do.
 *
 * The step succeeds with one value, the outcomes of all items in index
 * order: futoin_bounded_result(args) in the next step (or whatever step
 * gets the result, as a step with sub-steps passes its last sub-step's
 * on). count 0 succeeds at once with no outcome. The outcomes are
 * released exactly once: with the value, like any result value (right
 * after the step that receives it returns); or, if the helper's step
 * does not succeed (an error, a timeout or break around it, cancel, free),
 * with the step, when it ends.
 *
 * mode: FUTOIN_BOUNDED_FIRST_ERROR or FUTOIN_BOUNDED_ALL_SETTLED. In both,
 * break() or continue() out of an item leave the helper as they leave a
 * parallel() (the other items are cancelled), and a cancel, a timeout
 * around the helper or a root free() cancel the running items (their
 * cancel handlers run) and start no other.
 *
 * Where and when: as add(): from a step or an error handler of as, on a
 * root that is not running, or on the interface parallel() returns (the
 * helper is then one branch of that parallel step). Misuse (item NULL, k
 * 0, an unknown mode, a count whose outcome records cannot fit in memory,
 * a call where add() is not allowed) fails the running step with
 * InternalError naming it (a misuse report where no step runs); nothing
 * is added. Objects of this library only: another implementation's
 * object gets InternalError through its own handle_error() (docs/INTEROP.md).
 * Out of memory: the outcome records are allocated when the step starts;
 * if they cannot be had, the step fails with InternalError
 * "futoin_parallel_bounded(): out of memory". The step's own record and
 * the branches are engine bookkeeping: the process aborts with the
 * message. as NULL: nothing happens. docs/SEMANTICS.md "Bounded parallel"
 * has an example.
 * @param as     the flow to add the step to (or the interface parallel()
 *               returned)
 * @param count  the number of items
 * @param k      at most this many items run at once (1 or more)
 * @param item   adds the steps of item i on the item's own flow
 * @param data   passed to every call of item
 * @param mode   FUTOIN_BOUNDED_FIRST_ERROR or FUTOIN_BOUNDED_ALL_SETTLED
 * @par Ownership
 * data stays the caller's and must live until the step ends. The outcome
 * records belong to the step's result value and are released with it.
 * @par Thread
 * The loop's thread, where add() may be called.
 */
void futoin_parallel_bounded(FutoInAsyncSteps* as, size_t count, size_t k, FutoInBoundedItemFn item,
        void* data, int mode);

/** The outcomes in the result of a futoin_parallel_bounded() step.
 * @param args  the arguments a step received
 * @return args' first value if it is that result, else NULL (also for
 *         args NULL)
 * @par Ownership
 * Borrowed from args: valid while args is (in the receiving step's
 * callback). Copy what must outlive it, or take a value over as
 * FutoInBoundedOutcome.args says.
 * @par Thread
 * The loop's thread.
 */
FutoInBoundedResult* futoin_bounded_result(const FutoInArgs* args);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Control API (spec 2.2.3): on a root */
/** @{ */

/**
 * @brief Starts the root (the spec's execute()): its steps run from the
 * next loop round on, never inside this call.
 *
 * Out of memory: starting never needs memory (the loop keeps room for the
 * engine's dispatcher); a step that needs more frames than the flow has
 * aborts the process with the message.
 * @param root             an idle root (running: misuse); a branch cannot
 *                         be executed
 * @param unhandled_error  called as unhandled_error(root, data, code) on the
 *                         loop's thread if an error escapes every handler
 *                         (futoin_error_info(root) has its info); NULL: the
 *                         loop's misuse handler gets "unhandled error CODE
 *                         (INFO)" (by default a FUTOIN_LOG_WARNING line)
 * @param data             passed to unhandled_error
 * @par Ownership
 * The root stays the caller's: free it when it finished, or from its own
 * callbacks (the unhandled-error callback included). data stays the
 * caller's, valid until the root finished.
 * @par Thread
 * The loop's thread.
 */
static inline void futoin_execute(FutoInAsyncSteps* root,
        FutoInAsyncSteps_error_callback unhandled_error, void* data)
{
    root->api->execute(root, data, unhandled_error);
}
/**
 * @brief Cancels a running root (the spec's cancel()): cancel handlers run
 * innermost first, timers are dropped, nothing of the root runs later, and
 * no error is reported (cancel is not an error).
 *
 * A root that is not running is left alone. From inside one of the root's
 * own steps, the step's cancel handler runs while its callback is still on
 * the stack. The root may then be freed or reused (add() makes it idle).
 * @param root  the root (not a branch)
 * @par Ownership
 * The root stays the caller's: cancel does not free it. The cancel handlers
 * release what the steps held; the values the flows held are cleaned up.
 * @par Thread
 * The loop's thread; or, for a root of this library, any thread: the
 * cancel is then queued and applied to whatever the root does when the
 * loop thread runs it.
 */
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

/**
 * @brief A new completion, neither resolved nor rejected.
 * @return the completion, or NULL when out of memory
 * @par Ownership
 * The caller owns it and frees it with futoin_completion_free() (also
 * while a step awaits it: the memory then goes when that step ends).
 * @par Thread
 * Any thread; then used as futoin_completion_resolve() says.
 */
FutoInCompletion* futoin_completion_new(void);
/**
 * @brief Resolves the completion: the step awaiting it (now or later)
 * succeeds with args.
 * @param c     the completion (NULL, freed: -1)
 * @param args  up to four values (NULL: none)
 * @return 0, or -1 if the completion was already resolved or rejected, or
 *         freed
 * @par Ownership
 * The values pass on at the call: to the awaiting step, into c until a
 * step awaits it (and cleaned up with c if none ever does), or, on -1,
 * cleaned up at once. The FutoInArgs struct stays the caller's.
 * @par Thread
 * The loop's thread of the step that awaits it (a completion has no lock:
 * from another thread, post the call to that loop with
 * futoin_loop_immediate()).
 */
int futoin_completion_resolve(FutoInCompletion* c, FutoInArgs* args);
/**
 * @brief Rejects the completion: the step awaiting it (now or later) fails
 * with code and info.
 * @param c     the completion (NULL, freed: -1)
 * @param code  the error code (NULL: -1)
 * @param info  the error's info, may be NULL
 * @return 0, or -1 if the completion was already resolved or rejected,
 *         freed, or code is NULL
 * @par Ownership
 * code and info are copied.
 * @par Thread
 * The loop's thread of the step that awaits it (a completion has no lock:
 * from another thread, post the call to that loop with
 * futoin_loop_immediate()).
 */
int futoin_completion_reject(FutoInCompletion* c, const char* code, const char* info);
/**
 * @brief Frees the completion. A step still awaiting it fails with
 * InternalError ("completion freed while a step awaited it").
 * @param c  the completion (NULL, or freed already: nothing happens)
 * @par Ownership
 * Ends the caller's ownership at once. The memory (and values it still
 * holds) is released now, or, while an await step refers to c, when that
 * step ends. c must not be used afterwards.
 * @par Thread
 * The loop's thread of the step that awaits it (a completion has no lock:
 * from another thread, post the call to that loop with
 * futoin_loop_immediate()).
 */
void futoin_completion_free(FutoInCompletion* c);
/**
 * @brief Adds a step that waits for c (the spec's await()): it succeeds with
 * c's values or fails with its error.
 *
 * A completion resolved or rejected before the step runs completes it at
 * once. Cancelling the step detaches it from c (c stays pending). One
 * awaiting step at a time; a second one, a NULL or a freed c fails with
 * InternalError. Works on any implementation of the interface; there, a
 * registration whose step never runs is released when the root is freed
 * (until then c cannot be awaited again). Traced like futoin_add() in a
 * tracing build. Out of memory: on another implementation the step fails
 * with InternalError "await(): out of memory"; the engine's own records
 * abort the process with the message.
 * @param as    the flow the callback runs in (or the idle root)
 * @param c     the completion
 * @param eh    the await step's error handler, or NULL
 * @param data  passed to eh
 * @par Ownership
 * c stays the caller's; the step keeps a reference to it, so freeing c
 * while the step waits is safe (see futoin_completion_free()). The values
 * the step succeeds with are the next step's, as for success().
 * @par Thread
 * The loop's thread: inside an execute callback or error handler of the
 * flow as, or on a root that was not executed yet.
 */
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

/**
 * @brief Executes root and runs its loop until the root completes (the
 * spec's promise()): the blocking way to run a root from plain code.
 *
 * The loop runs everything that is on it meanwhile, not only this root.
 * Out of memory: as futoin_execute() and the root's steps (a step's
 * InternalError is FUTOIN_PROMISE_ERROR).
 * @param root  an idle root of this library
 * @param out   receives the outcome (zeroed first); not NULL
 * @return FUTOIN_PROMISE_OK, FUTOIN_PROMISE_ERROR (out->code and out->info
 *         say which), FUTOIN_PROMISE_STALLED (the loop ran out of work with
 *         the root still waiting: the root was cancelled), or
 *         FUTOIN_PROMISE_MISUSE (nothing ran: see its description)
 * @par Ownership
 * The root stays the caller's (free it afterwards). On FUTOIN_PROMISE_OK,
 * out->args holds the last step's values, which the caller now owns:
 * release them with futoin_outcome_reset().
 * @par Thread
 * The loop's thread, outside the loop's callbacks (not from a step). Not on
 * a loop driven by the libuv backend (it would not poll libuv).
 */
int futoin_promise(FutoInAsyncSteps* root, FutoInOutcome* out);
/**
 * @brief Releases the values held in an outcome (their cleanups run once)
 * and leaves its args empty.
 * @param out  the outcome (NULL: nothing happens)
 * @par Ownership
 * Ends the caller's ownership of the values in out->args; out itself is
 * the caller's memory.
 * @par Thread
 * The thread that owns the outcome (the cleanups run on it).
 */
void futoin_outcome_reset(FutoInOutcome* out);

/** @} */

/* ------------------------------------------------------------------------ */
/** @name Tracing build: where each step was added */
/** @{ */

/**
 * @brief Records file and line as where the steps added next on this thread
 * come from.
 *
 * The tracing macros call it around each add(); the library reads it only
 * when it was built with tracing (futoin_tracing_enabled()), so that code
 * compiled either way links with either library. Call it yourself only to
 * attribute steps that a helper of yours adds to its caller's location.
 * @param file  the file name (NULL: nothing recorded)
 * @param line  the line
 * @par Ownership
 * file is kept as a pointer, not copied: pass a string that lives for the
 * whole program (__FILE__).
 * @par Thread
 * Any thread; a thread-local store.
 */
void futoin_trace_at(const char* file, unsigned line);

/**
 * @brief Internal to the tracing macros: ends a traced call that returns a
 * flow (clears the location futoin_trace_at() recorded).
 * @param as  the flow the traced call returned
 * @return as
 * @par Ownership
 * Nothing passes.
 * @par Thread
 * Any thread.
 */
static inline FutoInAsyncSteps* futoin_trace_end_(FutoInAsyncSteps* as)
{
    futoin_trace_at(NULL, 0);
    return as;
}

#if FUTOIN_TRACING && !defined(FUTOIN_NO_TRACE_MACROS)
/* The tracing build: futoin_add() and its kin record the caller's file and
 * line beside the step. (name)(...) calls the function itself. Each macro
 * takes the parameters of the function of the same name and gives what it
 * returns (only futoin_parallel() returns something: the same interface);
 * the functions' comments above document them. Each argument is evaluated
 * once. Define FUTOIN_NO_TRACE_MACROS before the first futoin header to
 * call the functions directly (nothing is recorded then). */
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
#define futoin_parallel_bounded(as, count, k, item, data, mode)                                    \
    FUTOIN_TRACE_CALL_((futoin_parallel_bounded)((as), (count), (k), (item), (data), (mode)))
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
