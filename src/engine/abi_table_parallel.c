/* SPDX-License-Identifier: MIT */
/*
 * The 25-entry table of the interface parallel() returns (spec 2.7.2).
 * Its step-adding calls (add, parallel, loop, repeat, addSync) queue
 * branches until the parallel step starts; every other entry acts on the
 * flow that created the parallel step, through that flow's own table
 * (abi_table.c), so the context checks live in one place.
 */
#include "engine/engine_internal.h"

static Parallel* par_of(FutoInAsyncSteps* bsi)
{
    return (Parallel*)bsi;
}

static int par_can_add(Parallel* p, const char* what)
{
    if (p->started) {
        futoin__misuse(p->owner, "%s() on a parallel step that has already started", what);
        return 0;
    }
    return 1;
}

static void par_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(bsi);
    if (!f) {
        futoin__misuse(p->owner, "add() with a NULL execute callback");
        return;
    }
    if (par_can_add(p, "add")) {
        futoin__parallel_append(p, futoin__step_new(futoin__flow_ctx(p->owner), SK_PLAIN, data, f, eh, NULL));
    }
}

static FutoInAsyncSteps* par_parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(bsi);
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

static void par_loop(FutoInAsyncSteps* bsi, void* data, void (*f)(FutoInAsyncSteps*, void*),
        const char* label)
{
    par_loop_branch(par_of(bsi), data, 0, f, NULL, label);
}

static void par_repeat(FutoInAsyncSteps* bsi, void* data, size_t count,
        void (*f)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    par_loop_branch(par_of(bsi), data, count, NULL, f, label);
}

static void par_add_sync(FutoInAsyncSteps* bsi, FutoInSync* sync, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    Parallel* p = par_of(bsi);
    const char* problem = f ? futoin__sync_problem(sync) : "addSync() with a NULL execute callback";
    if (problem) {
        futoin__misuse(p->owner, "%s", problem);
        return;
    }
    if (par_can_add(p, "addSync")) {
        futoin__parallel_append(p, futoin__step_new(futoin__flow_ctx(p->owner), SK_SYNC, data, f, eh, sync));
    }
}

#define OWNER(bsi) (&par_of(bsi)->owner->iface)

static void* par_state_variable(FutoInAsyncSteps* bsi, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*))
{
    return futoin__flow_api.stateVariable(OWNER(bsi), data, name, allocate, cleanup);
}
static void* par_stack(FutoInAsyncSteps* bsi, size_t size, void (*cleanup)(void*))
{
    return futoin__flow_api.stack(OWNER(bsi), size, cleanup);
}
static void par_success(FutoInAsyncSteps* bsi, FutoInArgs* args)
{
    futoin__flow_api.success(OWNER(bsi), args);
}
static void par_handle_error(FutoInAsyncSteps* bsi, const char* code, const char* info)
{
    futoin__flow_api.handle_error(OWNER(bsi), code, info);
}
static void par_set_timeout(FutoInAsyncSteps* bsi, uint32_t ms)
{
    futoin__flow_api.setTimeout(OWNER(bsi), ms);
}
static void par_set_cancel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    futoin__flow_api.setCancel(OWNER(bsi), data, ch);
}
static void par_wait_external(FutoInAsyncSteps* bsi)
{
    futoin__flow_api.waitExternal(OWNER(bsi));
}
static void par_break(FutoInAsyncSteps* bsi, const char* label)
{
    futoin__flow_api.breakLoop(OWNER(bsi), label);
}
static void par_continue(FutoInAsyncSteps* bsi, const char* label)
{
    futoin__flow_api.continueLoop(OWNER(bsi), label);
}
static void par_execute(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    futoin__misuse(par_of(bsi)->owner, "execute() on a parallel step interface");
    (void)data, (void)eh;
}
static void par_cancel(FutoInAsyncSteps* bsi)
{
    futoin__flow_api.cancel(OWNER(bsi));
}
static ptrdiff_t par_root_id(FutoInAsyncSteps* bsi)
{
    return futoin__flow_api.rootId(OWNER(bsi));
}
static int par_is_valid(FutoInAsyncSteps* bsi)
{
    return futoin__flow_api.isValid(OWNER(bsi));
}
static FutoInAsyncSteps* par_new_instance(FutoInAsyncSteps* bsi)
{
    return futoin__flow_api.newInstance(OWNER(bsi));
}
static void par_free(FutoInAsyncSteps* bsi)
{
    futoin__misuse(par_of(bsi)->owner, "free() on a parallel step interface");
}
static FutoInHandle par_sched_immediate(FutoInAsyncSteps* bsi, void* data, void (*cb)(void*))
{
    return futoin__flow_api.sched_immediate(OWNER(bsi), data, cb);
}
static FutoInHandle par_sched_deferred(FutoInAsyncSteps* bsi, uint32_t ms, void* data, void (*cb)(void*))
{
    return futoin__flow_api.sched_deferred(OWNER(bsi), ms, data, cb);
}
static void par_sched_cancel(FutoInAsyncSteps* bsi, FutoInHandle* h)
{
    futoin__flow_api.sched_cancel(OWNER(bsi), h);
}
static int par_sched_is_valid(FutoInAsyncSteps* bsi, FutoInHandle* h)
{
    return futoin__flow_api.sched_is_valid(OWNER(bsi), h);
}
static int par_is_same_thread(FutoInAsyncSteps* bsi)
{
    return futoin__flow_api.is_same_thread(OWNER(bsi));
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
