/* SPDX-License-Identifier: MIT */
/*
 * The 25-entry table of the interface parallel() returns (spec 2.7.2).
 * Its step-adding calls (add, parallel, loop, repeat, addSync) queue
 * branches until the parallel step starts; every other entry acts on the
 * flow that created the parallel step, through that flow's own table
 * (abi_table.c), so the context checks live in one place.
 */
#include "engine/engine_impl.h"

static Parallel* par_of(FutoInAsyncSteps* as)
{
    return (Parallel*)as;
}

static int par_can_add(Parallel* p, const char* what)
{
    if (p->started) {
        futoin__misuse(p->owner, "%s() on a parallel step that has already started", what);
        return 0;
    }
    return 1;
}

FUTOIN_NOINLINE static void par_add_slow(Parallel* p, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    if (!f) {
        futoin__misuse(p->owner, "add() with a NULL execute callback");
        return;
    }
    if (par_can_add(p, "add")) {
        futoin__parallel_append(p,
                futoin__step_new(futoin__flow_ctx(p->owner), SK_PLAIN, data, f, eh, NULL));
    }
}

/* A branch added before the parallel step starts, the common case: a
 * leaf that saves no register, as the flow's add() (abi_table.c). */
static void par_add(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(as);
    Step* s = futoin__step_pop_fast(futoin__flow_ctx(p->owner), !f || p->started);
    if (FUTOIN_UNLIKELY(!s)) {
        par_add_slow(p, data, f, eh);
        return;
    }
    futoin__step_fill(s, SK_PLAIN, data, f, eh, NULL);
    futoin__parallel_append(p, s);
}

static FutoInAsyncSteps* par_parallel(FutoInAsyncSteps* as, void* data,
        FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(as);
    if (!par_can_add(p, "parallel")) {
        return &futoin__inert_iface;
    }
    EngineCtx* ctx = futoin__flow_ctx(p->owner);
    Parallel* inner = futoin__parallel_new(ctx, p->owner);
    futoin__parallel_append(p, futoin__step_new(ctx, SK_PARALLEL, data, NULL, eh, inner));
    return &inner->iface;
}

static void par_loop_branch(Parallel* p, void* data, size_t count,
        void (*loop_fn)(FutoInAsyncSteps*, void*),
        void (*repeat_fn)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    const char* what = loop_fn ? "loop" : "repeat";
    if (!loop_fn && !repeat_fn) {
        futoin__misuse(p->owner, "%s() with a NULL loop body", what);
        return;
    }
    if (!par_can_add(p, what)) {
        return;
    }
    EngineCtx* ctx = futoin__flow_ctx(p->owner);
    futoin__parallel_append(p, futoin__loopspec_new(ctx, label, data, count, loop_fn, repeat_fn));
}

static void par_loop(FutoInAsyncSteps* as, void* data, void (*f)(FutoInAsyncSteps*, void*),
        const char* label)
{
    par_loop_branch(par_of(as), data, 0, f, NULL, label);
}

static void par_repeat(FutoInAsyncSteps* as, void* data, size_t count,
        void (*f)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    par_loop_branch(par_of(as), data, count, NULL, f, label);
}

static void par_add_sync(FutoInAsyncSteps* as, FutoInSync* sync, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(as);
    const char* problem = f ? futoin__sync_problem(sync) : "addSync() with a NULL execute callback";
    if (problem) {
        futoin__misuse(p->owner, "%s", problem);
        return;
    }
    if (par_can_add(p, "addSync")) {
        futoin__parallel_append(p,
                futoin__step_new(futoin__flow_ctx(p->owner), SK_SYNC, data, f, eh, sync));
    }
}

#define OWNER(as) (&par_of(as)->owner->iface)

static void* par_state_variable(FutoInAsyncSteps* as, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*))
{
    return futoin__flow_api.stateVariable(OWNER(as), data, name, allocate, cleanup);
}
static void* par_stack(FutoInAsyncSteps* as, size_t size, void (*cleanup)(void*))
{
    return futoin__flow_api.stack(OWNER(as), size, cleanup);
}
static void par_success(FutoInAsyncSteps* as, FutoInArgs* args)
{
    futoin__flow_api.success(OWNER(as), args);
}
static void par_handle_error(FutoInAsyncSteps* as, const char* code, const char* info)
{
    futoin__flow_api.handle_error(OWNER(as), code, info);
}
static void par_set_timeout(FutoInAsyncSteps* as, uint32_t ms)
{
    futoin__flow_api.setTimeout(OWNER(as), ms);
}
static void par_set_cancel(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    futoin__flow_api.setCancel(OWNER(as), data, ch);
}
static void par_wait_external(FutoInAsyncSteps* as)
{
    futoin__flow_api.waitExternal(OWNER(as));
}
static void par_break(FutoInAsyncSteps* as, const char* label)
{
    futoin__flow_api.breakLoop(OWNER(as), label);
}
static void par_continue(FutoInAsyncSteps* as, const char* label)
{
    futoin__flow_api.continueLoop(OWNER(as), label);
}
static void par_execute(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_error_callback eh)
{
    futoin__misuse(par_of(as)->owner, "execute() on a parallel step interface");
    (void)data, (void)eh;
}
static void par_cancel(FutoInAsyncSteps* as)
{
    futoin__flow_api.cancel(OWNER(as));
}
static ptrdiff_t par_root_id(FutoInAsyncSteps* as)
{
    return futoin__flow_api.rootId(OWNER(as));
}
static int par_is_valid(FutoInAsyncSteps* as)
{
    return futoin__flow_api.isValid(OWNER(as));
}
static FutoInAsyncSteps* par_new_instance(FutoInAsyncSteps* as)
{
    return futoin__flow_api.newInstance(OWNER(as));
}
static void par_free(FutoInAsyncSteps* as)
{
    futoin__misuse(par_of(as)->owner, "free() on a parallel step interface");
}
static FutoInHandle par_sched_immediate(FutoInAsyncSteps* as, void* data, void (*cb)(void*))
{
    return futoin__flow_api.sched_immediate(OWNER(as), data, cb);
}
static FutoInHandle par_sched_deferred(FutoInAsyncSteps* as, uint32_t ms, void* data,
        void (*cb)(void*))
{
    return futoin__flow_api.sched_deferred(OWNER(as), ms, data, cb);
}
static void par_sched_cancel(FutoInAsyncSteps* as, FutoInHandle* h)
{
    futoin__flow_api.sched_cancel(OWNER(as), h);
}
static int par_sched_is_valid(FutoInAsyncSteps* as, FutoInHandle* h)
{
    return futoin__flow_api.sched_is_valid(OWNER(as), h);
}
static int par_is_same_thread(FutoInAsyncSteps* as)
{
    return futoin__flow_api.is_same_thread(OWNER(as));
}

const FutoInAsyncStepsAPI futoin__par_api = {
    .add = par_add,
    .parallel = par_parallel,
    .stateVariable = par_state_variable,
    .stack = par_stack,
    .success = par_success,
    .handle_error = par_handle_error,
    .setTimeout = par_set_timeout,
    .setCancel = par_set_cancel,
    .waitExternal = par_wait_external,
    .loop = par_loop,
    .repeat = par_repeat,
    .breakLoop = par_break,
    .continueLoop = par_continue,
    .execute = par_execute,
    .cancel = par_cancel,
    .addSync = par_add_sync,
    .rootId = par_root_id,
    .isValid = par_is_valid,
    .newInstance = par_new_instance,
    .free = par_free,
    .sched_immediate = par_sched_immediate,
    .sched_deferred = par_sched_deferred,
    .sched_cancel = par_sched_cancel,
    .sched_is_valid = par_sched_is_valid,
    .is_same_thread = par_is_same_thread,
};
