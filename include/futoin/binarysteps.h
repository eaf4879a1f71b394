/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FTN12 universal binary interface, part 2: AsyncSteps and sync objects
 * (spec section 2.7.2 and 2.7.3).
 *
 * Every interface is a struct whose first member points to a table of plain C
 * functions that take the struct pointer as their first argument. Callers
 * never assume the size of FutoInAsyncSteps or FutoInSync: implementations
 * append their own members.
 *
 * C has no exceptions: after handle_error(), breakLoop() or continueLoop() the
 * caller must return from its callback straight away; the engine acts on the
 * recorded outcome when the callback returns.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
 */
#ifndef FUTOIN_BINARYSTEPS_H
#define FUTOIN_BINARYSTEPS_H

#include <futoin/binaryval.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @def FUTOIN_ANON_STRUCT
 * `struct`, for the anonymous structs of the function tables. ISO C11 has
 * anonymous structs; C++ has them only as a GNU extension, so C++ users
 * building with -Wpedantic get them marked as such.
 */
#if defined(__cplusplus) && defined(__GNUC__)
#define FUTOIN_ANON_STRUCT __extension__ struct
#else
#define FUTOIN_ANON_STRUCT struct
#endif
/* clang-format takes FUTOIN_ANON_STRUCT for a call and then misreads the
 * members: the anonymous structs below are marked clang-format off. */
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#endif

/** The function table of an AsyncSteps implementation (spec 2.7.2). */
typedef struct FutoInAsyncStepsAPI_ FutoInAsyncStepsAPI;
/** An AsyncSteps interface: a root or one flow of it (spec 2.7.2). */
typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
/** The function table of a sync object (spec 2.7.3). */
typedef struct FutoInSyncAPI_ FutoInSyncAPI;
/** A sync object: Mutex, Throttle, Limiter or another implementation's (spec 2.7.3). */
typedef struct FutoInSync_ FutoInSync;
/** The result arguments of a step (at most four). */
typedef struct FutoInArgs_ FutoInArgs;
/** An AsyncTool callback handle. */
typedef struct FutoInHandle_ FutoInHandle;

/** At most four result arguments travel from one step to the next. */
struct FutoInArgs_ {
    /** The four arguments, by name or by index. */
    union {
        /** The arguments by name. */
        /* clang-format off */
        FUTOIN_ANON_STRUCT {
            FutoInBinaryValue arg0; /**< The first argument. */
            FutoInBinaryValue arg1; /**< The second argument. */
            FutoInBinaryValue arg2; /**< The third argument. */
            FutoInBinaryValue arg3; /**< The fourth argument. */
        };
        /* clang-format on */
        FutoInBinaryValue args[4]; /**< The arguments by index: args[0] is arg0. */
    };
};

/** An AsyncTool callback handle, passed by value. All-zero is "no handle". */
struct FutoInHandle_ {
    void* data1;     /**< Implementation data. */
    void* data2;     /**< Implementation data. */
    ptrdiff_t data3; /**< Implementation data. */
};

/**
 * A step's execute callback: runs the step.
 * @param bsi  the flow the step runs in
 * @param data the data given with the step
 * @param args the result of the previous step (never NULL from this engine)
 *
 * Ownership: args and its values are borrowed for the call; the engine
 * runs each value's cleanup right after the callback returns. Copy what
 * you need to keep (or, for values with references such as the libuv
 * backend's streams, take a reference). Thread: the loop's thread.
 */
typedef void (*FutoInAsyncSteps_execute_callback)(FutoInAsyncSteps* bsi, void* data,
        const FutoInArgs* args);
/**
 * A step's error handler, and the unhandled-error callback of execute().
 * @param bsi  the flow the step runs in
 * @param data the data given with the step (for the unhandled-error
 *             callback: the data given to execute())
 * @param code the error code
 *
 * Ownership: code is borrowed for the call (the engine keeps its own
 * copy); the error's info is futoin_error_info(bsi). Thread: the loop's
 * thread.
 */
typedef void (*FutoInAsyncSteps_error_callback)(FutoInAsyncSteps* bsi, void* data,
        const char* code);
/**
 * A step's cancel handler (setCancel()).
 * @param bsi  the flow the step runs in
 * @param data the data given with setCancel()
 *
 * Called at most once, when the step is aborted before it completed;
 * stop the operation the step started and release what it held. The step
 * is over: success(), error() and add() on bsi are misuse here
 * (@ref md_MISUSE "docs/MISUSE.md"). Thread: the loop's thread.
 */
typedef void (*FutoInAsyncSteps_cancel_callback)(FutoInAsyncSteps* bsi, void* data);

/**
 * The function table of an AsyncSteps implementation: the spec's 25
 * functions in this order, each taking the interface as first argument.
 * The inline helpers of <futoin/asyncsteps.h> call through it.
 */
struct FutoInAsyncStepsAPI_ {
    /** The functions by name or by index. */
    union {
        /** The functions by name. */
        /* clang-format off */
        FUTOIN_ANON_STRUCT {
            /** 0: add(): adds a step (spec add()); futoin_add(). */
            void (*add)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /** 1: parallel(): adds a parallel step and returns the interface to add its
             * branches to; futoin_parallel(). */
            FutoInAsyncSteps* (*parallel)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_error_callback eh);
            /** 2: stateVariable(): the root's named state variable, created by allocate
             * on first use; futoin_state(). */
            void* (*stateVariable)(FutoInAsyncSteps* bsi, void* data,
                    const char* name, void* (*allocate)(void* data),
                    void (*cleanup)(void* data, void* value));
            /** 3: stack(): memory that lives until the current step is destroyed;
             * futoin_stack(). */
            void* (*stack)(FutoInAsyncSteps* bsi, size_t data_size,
                    void (*cleanup)(void* value));
            /** 4: success(): completes the step with up to four values;
             * futoin_success_args(). */
            void (*success)(FutoInAsyncSteps* bsi, FutoInArgs* args);
            /** 5: handle_error(): fails the step with code and info (the spec's
             * error()); futoin_error(). */
            void (*handle_error)(
                    FutoInAsyncSteps* bsi, const char* code, const char* info);
            /** 6: setTimeout(): fails the step with Timeout unless it completes in time;
             * futoin_set_timeout(). */
            void (*setTimeout)(FutoInAsyncSteps* bsi, uint32_t timeout_ms);
            /** 7: setCancel(): sets the step's cancel handler; futoin_set_cancel(). */
            void (*setCancel)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_cancel_callback ch);
            /** 8: waitExternal(): the step completes only by a later success()/error();
             * futoin_wait_external(). */
            void (*waitExternal)(FutoInAsyncSteps* bsi);
            /** 9: loop(): runs f until breakLoop(); futoin_add_loop(). */
            void (*loop)(FutoInAsyncSteps* bsi, void* data,
                    void (*f)(FutoInAsyncSteps* bsi, void* data),
                    const char* label);
            /** 10: repeat(): runs f for i = 0 .. count-1; futoin_repeat(). */
            void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t count,
                    void (*f)(FutoInAsyncSteps* bsi, void* data, size_t i),
                    const char* label);
            /** 11: breakLoop(): leaves the innermost loop or the one named label;
             * futoin_break(). */
            void (*breakLoop)(FutoInAsyncSteps* bsi, const char* label);
            /** 12: continueLoop(): starts the next iteration of a loop;
             * futoin_continue(). */
            void (*continueLoop)(FutoInAsyncSteps* bsi, const char* label);
            /** 13: execute(): starts a root; futoin_execute(). */
            void (*execute)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_error_callback unhandled_error);
            /** 14: cancel(): cancels a running root; futoin_cancel(). */
            void (*cancel)(FutoInAsyncSteps* bsi);
            /** 15: addSync(): adds a step synchronized on a sync object;
             * futoin_add_sync(). */
            void (*addSync)(FutoInAsyncSteps* bsi, FutoInSync* sync,
                    void* data, FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /** 16: rootId(): identifies the flow (a root's main flow or a parallel
             * branch); futoin_root_id(). */
            ptrdiff_t (*rootId)(FutoInAsyncSteps* bsi);
            /** 17: isValid(): 1 while the root or branch is usable, 0 after cancel() or
             * free() and for a finished branch
             * (@ref md_SEMANTICS "docs/SEMANTICS.md"); futoin_is_valid(). */
            int (*isValid)(FutoInAsyncSteps* bsi);
            /** 18: newInstance(): a new independent root on the same loop;
             * futoin_new_instance(). */
            FutoInAsyncSteps* (*newInstance)(FutoInAsyncSteps* bsi);
            /** 19: free(): frees a root; futoin_asyncsteps_free(). */
            void (*free)(FutoInAsyncSteps* bsi);
            /** 20: sched_immediate(): queues cb(data) on the loop (AsyncTool
             * immediate()). */
            FutoInHandle (*sched_immediate)(
                    FutoInAsyncSteps* bsi, void* data, void (*cb)(void* data));
            /** 21: sched_deferred(): queues cb(data) after delay_ms (AsyncTool
             * deferred()). */
            FutoInHandle (*sched_deferred)(FutoInAsyncSteps* bsi,
                    uint32_t delay_ms, void* data, void (*cb)(void* data));
            /** 22: sched_cancel(): cancels a scheduled callback (AsyncTool cancel()). */
            void (*sched_cancel)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /** 23: sched_is_valid(): whether a scheduled callback is still pending
             * (AsyncTool is_valid()). */
            int (*sched_is_valid)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /** 24: is_same_thread(): whether the caller runs on the loop's thread
             * (AsyncTool is_same_thread()). */
            int (*is_same_thread)(FutoInAsyncSteps* bsi);
        };
        /* clang-format on */
        void* funcs[25]; /**< The functions by index. */
    };
    /* Implementations may append members here. */
};

/**
 * An AsyncSteps interface: the function table, then the implementation's
 * own members.
 */
struct FutoInAsyncSteps_ {
#ifdef __cplusplus
    FutoInAsyncSteps_(const FutoInAsyncStepsAPI* api) noexcept
        : api(api)
    {
    }
#endif
    /** The implementation's function table. */
    const FutoInAsyncStepsAPI* const api;
    /* Implementation members follow; never assume the size. */
};

/** The function table of a sync object (spec 2.7.3). */
struct FutoInSyncAPI_ {
    /** The functions by name or by index. */
    union {
        /** The functions by name. */
        /* clang-format off */
        FUTOIN_ANON_STRUCT {
            /** 0: enters the sync object for the flow bsi: admits, queues or rejects it. */
            void (*lock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
            /** 1: leaves the sync object (the flow's sync step ended). */
            void (*unlock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
        };
        /* clang-format on */
        void* funcs[2]; /**< The functions by index. */
    };
    /* Implementations may append members here. */
};

/**
 * A sync object: the function table, then the implementation's own members.
 */
struct FutoInSync_ {
#ifdef __cplusplus
    FutoInSync_() noexcept
        : api(nullptr)
    {
    }
    FutoInSync_(const FutoInSyncAPI* api) noexcept
        : api(api)
    {
    }
#endif
    /** The implementation's function table. */
    const FutoInSyncAPI* const api;
    /* Implementation members follow; never assume the size. */
};

#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_BINARYSTEPS_H */
