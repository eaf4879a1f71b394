/* SPDX-License-Identifier: MIT */
/*
 * The inert interface: what parallel() returns when the call was misuse
 * (abi_table.c, abi_table_parallel.c), so that a caller chaining calls on
 * the result cannot crash. Every entry ignores its arguments and returns
 * zero or NULL; the misuse itself was already reported.
 */
#include "engine/engine_impl.h"

static const FutoInAsyncStepsAPI inert_api;
FutoInAsyncSteps futoin__inert_iface = { &inert_api };

static void inert_add(FutoInAsyncSteps* b, void* d, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    (void)b, (void)d, (void)f, (void)eh;
}
static FutoInAsyncSteps* inert_parallel(FutoInAsyncSteps* b, void* d,
        FutoInAsyncSteps_error_callback eh)
{
    (void)b, (void)d, (void)eh;
    return &futoin__inert_iface;
}
static void* inert_state(FutoInAsyncSteps* b, void* d, const char* n, void* (*a)(void*),
        void (*c)(void*, void*))
{
    (void)b, (void)d, (void)n, (void)a, (void)c;
    return NULL;
}
static void* inert_stack(FutoInAsyncSteps* b, size_t s, void (*c)(void*))
{
    (void)b, (void)s, (void)c;
    return NULL;
}
static void inert_success(FutoInAsyncSteps* b, FutoInArgs* a)
{
    (void)b;
    futoin__args_drop(a);
}
static void inert_error(FutoInAsyncSteps* b, const char* c, const char* i)
{
    (void)b, (void)c, (void)i;
}
static void inert_timeout(FutoInAsyncSteps* b, uint32_t ms)
{
    (void)b, (void)ms;
}
static void inert_set_cancel(FutoInAsyncSteps* b, void* d, FutoInAsyncSteps_cancel_callback ch)
{
    (void)b, (void)d, (void)ch;
}
static void inert_void(FutoInAsyncSteps* b)
{
    (void)b;
}
static void inert_loop(FutoInAsyncSteps* b, void* d, void (*f)(FutoInAsyncSteps*, void*),
        const char* l)
{
    (void)b, (void)d, (void)f, (void)l;
}
static void inert_repeat(FutoInAsyncSteps* b, void* d, size_t n,
        void (*f)(FutoInAsyncSteps*, void*, size_t), const char* l)
{
    (void)b, (void)d, (void)n, (void)f, (void)l;
}
static void inert_label(FutoInAsyncSteps* b, const char* l)
{
    (void)b, (void)l;
}
static void inert_execute(FutoInAsyncSteps* b, void* d, FutoInAsyncSteps_error_callback eh)
{
    (void)b, (void)d, (void)eh;
}
static void inert_add_sync(FutoInAsyncSteps* b, FutoInSync* s, void* d,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    (void)b, (void)s, (void)d, (void)f, (void)eh;
}
static ptrdiff_t inert_root_id(FutoInAsyncSteps* b)
{
    (void)b;
    return 0;
}
static int inert_int(FutoInAsyncSteps* b)
{
    (void)b;
    return 0;
}
static FutoInAsyncSteps* inert_new_instance(FutoInAsyncSteps* b)
{
    (void)b;
    return NULL;
}
static FutoInHandle inert_immediate(FutoInAsyncSteps* b, void* d, void (*cb)(void*))
{
    (void)b, (void)d, (void)cb;
    FutoInHandle h = { 0, 0, 0 };
    return h;
}
static FutoInHandle inert_deferred(FutoInAsyncSteps* b, uint32_t ms, void* d, void (*cb)(void*))
{
    (void)ms;
    return inert_immediate(b, d, cb);
}
static void inert_sched_cancel(FutoInAsyncSteps* b, FutoInHandle* h)
{
    (void)b, (void)h;
}
static int inert_sched_is_valid(FutoInAsyncSteps* b, FutoInHandle* h)
{
    (void)b, (void)h;
    return 0;
}

static const FutoInAsyncStepsAPI inert_api = {
    .add = inert_add,
    .parallel = inert_parallel,
    .stateVariable = inert_state,
    .stack = inert_stack,
    .success = inert_success,
    .handle_error = inert_error,
    .setTimeout = inert_timeout,
    .setCancel = inert_set_cancel,
    .waitExternal = inert_void,
    .loop = inert_loop,
    .repeat = inert_repeat,
    .breakLoop = inert_label,
    .continueLoop = inert_label,
    .execute = inert_execute,
    .cancel = inert_void,
    .addSync = inert_add_sync,
    .rootId = inert_root_id,
    .isValid = inert_int,
    .newInstance = inert_new_instance,
    .free = inert_void,
    .sched_immediate = inert_immediate,
    .sched_deferred = inert_deferred,
    .sched_cancel = inert_sched_cancel,
    .sched_is_valid = inert_sched_is_valid,
    .is_same_thread = inert_int,
};
