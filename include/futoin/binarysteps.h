/* SPDX-License-Identifier: MIT */
/*
 * FTN12 universal binary interface, part 2: AsyncSteps and sync objects
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
 */
#ifndef FUTOIN_BINARYSTEPS_H
#define FUTOIN_BINARYSTEPS_H

#include <futoin/binaryval.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ISO C11 has anonymous structs; C++ has them only as a GNU extension, so
 * C++ users building with -Wpedantic get them marked as such. */
#if defined(__cplusplus) && defined(__GNUC__)
#define FUTOIN_ANON_STRUCT __extension__ struct
#else
#define FUTOIN_ANON_STRUCT struct
#endif
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#endif

typedef struct FutoInAsyncStepsAPI_ FutoInAsyncStepsAPI;
typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
typedef struct FutoInSyncAPI_ FutoInSyncAPI;
typedef struct FutoInSync_ FutoInSync;
typedef struct FutoInArgs_ FutoInArgs;
typedef struct FutoInHandle_ FutoInHandle;

/* At most four result arguments travel from one step to the next. */
struct FutoInArgs_ {
    union {
        FUTOIN_ANON_STRUCT {
            FutoInBinaryValue arg0;
            FutoInBinaryValue arg1;
            FutoInBinaryValue arg2;
            FutoInBinaryValue arg3;
        };
        FutoInBinaryValue args[4];
    };
};

/* An AsyncTool callback handle, passed by value. All-zero is "no handle". */
struct FutoInHandle_ {
    void* data1;
    void* data2;
    ptrdiff_t data3;
};

typedef void (*FutoInAsyncSteps_execute_callback)(
        FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);
typedef void (*FutoInAsyncSteps_error_callback)(
        FutoInAsyncSteps* bsi, void* data, const char* code);
typedef void (*FutoInAsyncSteps_cancel_callback)(
        FutoInAsyncSteps* bsi, void* data);

struct FutoInAsyncStepsAPI_ {
    union {
        FUTOIN_ANON_STRUCT {
            /* 0 */
            void (*add)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* 1 */
            FutoInAsyncSteps* (*parallel)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_error_callback eh);
            /* 2 */
            void* (*stateVariable)(FutoInAsyncSteps* bsi, void* data,
                    const char* name, void* (*allocate)(void* data),
                    void (*cleanup)(void* data, void* value));
            /* 3 */
            void* (*stack)(FutoInAsyncSteps* bsi, size_t data_size,
                    void (*cleanup)(void* value));
            /* 4 */
            void (*success)(FutoInAsyncSteps* bsi, FutoInArgs* args);
            /* 5 */
            void (*handle_error)(
                    FutoInAsyncSteps* bsi, const char* code, const char* info);
            /* 6 */
            void (*setTimeout)(FutoInAsyncSteps* bsi, uint32_t timeout_ms);
            /* 7 */
            void (*setCancel)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_cancel_callback ch);
            /* 8 */
            void (*waitExternal)(FutoInAsyncSteps* bsi);
            /* 9 */
            void (*loop)(FutoInAsyncSteps* bsi, void* data,
                    void (*f)(FutoInAsyncSteps* bsi, void* data),
                    const char* label);
            /* 10 */
            void (*repeat)(FutoInAsyncSteps* bsi, void* data, size_t count,
                    void (*f)(FutoInAsyncSteps* bsi, void* data, size_t i),
                    const char* label);
            /* 11 */
            void (*breakLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* 12 */
            void (*continueLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* 13 */
            void (*execute)(FutoInAsyncSteps* bsi, void* data,
                    FutoInAsyncSteps_error_callback unhandled_error);
            /* 14 */
            void (*cancel)(FutoInAsyncSteps* bsi);
            /* 15 */
            void (*addSync)(FutoInAsyncSteps* bsi, FutoInSync* sync,
                    void* data, FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* 16 */
            ptrdiff_t (*rootId)(FutoInAsyncSteps* bsi);
            /* 17 */
            int (*isValid)(FutoInAsyncSteps* bsi);
            /* 18 */
            FutoInAsyncSteps* (*newInstance)(FutoInAsyncSteps* bsi);
            /* 19 */
            void (*free)(FutoInAsyncSteps* bsi);
            /* 20 */
            FutoInHandle (*sched_immediate)(
                    FutoInAsyncSteps* bsi, void* data, void (*cb)(void* data));
            /* 21 */
            FutoInHandle (*sched_deferred)(FutoInAsyncSteps* bsi,
                    uint32_t delay_ms, void* data, void (*cb)(void* data));
            /* 22 */
            void (*sched_cancel)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* 23 */
            int (*sched_is_valid)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* 24 */
            int (*is_same_thread)(FutoInAsyncSteps* bsi);
        };
        void* funcs[25];
    };
    /* Implementations may append members here. */
};

struct FutoInAsyncSteps_ {
#ifdef __cplusplus
    FutoInAsyncSteps_(const FutoInAsyncStepsAPI* api) noexcept : api(api) {}
#endif
    const FutoInAsyncStepsAPI* const api;
    /* Implementation members follow; never assume the size. */
};

struct FutoInSyncAPI_ {
    union {
        FUTOIN_ANON_STRUCT {
            /* 0 */
            void (*lock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
            /* 1 */
            void (*unlock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
        };
        void* funcs[2];
    };
    /* Implementations may append members here. */
};

struct FutoInSync_ {
#ifdef __cplusplus
    FutoInSync_() noexcept : api(nullptr) {}
    FutoInSync_(const FutoInSyncAPI* api) noexcept : api(api) {}
#endif
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
