/* SPDX-License-Identifier: MIT */
/*
 * The 25-entry ABI function table (spec 2.7.2) of flow interfaces: the
 * root and the interfaces passed to callbacks. Each entry checks that it
 * is called in a context where the spec allows it, then hands over to the
 * engine core (declared in engine_internal.h: flow_calls.c, root.c,
 * dispatch.c). The
 * interface parallel() returns has its own table (abi_table_parallel.c),
 * which forwards to this one.
 */
#include "engine/engine_impl.h"
#include "engine/cross_thread_calls_impl.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Context checks                                                            */

static const char* cb_name(uint8_t cb)
{
    switch (cb) {
    case CB_EXEC:
        return "a step";
    case CB_ERROR:
        return "an error handler";
    case CB_CANCEL:
        return "a cancel handler";
    case CB_FINAL:
        return "the unhandled-error callback";
    default:
        return "no running step";
    }
}

/* A call that finds no running step of fl, on a root that was cancelled or
 * is being freed (perhaps by the very callback the call comes from, which
 * is still on the C stack): reported as such rather than as a call from
 * nowhere. Returns 0, reporting nothing, for any other flow. */
FUTOIN_COLD static int misuse_if_gone(Flow* fl, const char* what, const char* code)
{
    const Root* r = futoin__flow_root(fl);
    if (fl->cb != CB_NONE) {
        return 0;
    }
    const char* how = r->free_pending                  ? "freed"
            : futoin__root_is_gone(r) || r->cancelling ? "cancelled"
                                                       : NULL;
    if (!how) {
        return 0;
    }
    futoin__misuse(fl, "%s(%.64s) on an instance that was %s: ignored", what, code ? code : "",
            how);
    return 1;
}

/* Where add()-like calls put their step: the running step's sub-step queue,
 * or level 0 of a root that is not running. NULL after reporting misuse. */
Step** futoin__add_target_slow(Flow* fl, const char* what)
{
    Root* r = futoin__flow_root(fl);
    if (futoin__flow_in_step(fl)) {
        if (fl->out == OUT_SUCCESS) {
            futoin__misuse(fl, "%s() after success()", what);
            return NULL;
        }
        if (futoin__flow_step_settled(fl)) {
            futoin__misuse(fl, "%s() after error(), break() or continue()", what);
            return NULL;
        }
        /* Not cached for this callback: found from the queue's end. */
        return futoin__queue_end(&fl->frames[fl->depth].q_head);
    }
    if (futoin__flow_is_idle_root(fl)) {
        if (r->state != RS_IDLE) {
            r->state = RS_IDLE; /* a finished root is being reused */
        }
        /* Further adds before execute() take the fast path. */
        fl->add_link = futoin__queue_end(&fl->frames[0].q_head);
        return fl->add_link;
    }
    if (!misuse_if_gone(fl, what, NULL)) {
        futoin__misuse(fl, "%s() called from %s of a %s instance", what, cb_name(fl->cb),
                r->state == RS_RUNNING ? "running" : "finished");
    }
    return NULL;
}

/* Why a call valid only inside an execute callback was refused. */
FUTOIN_COLD static void report_not_in_exec(Flow* fl, const char* what)
{
    if (fl->cb == CB_ERROR) {
        futoin__misuse(fl, "%s() is not allowed in an error handler", what);
    } else if (!misuse_if_gone(fl, what, NULL)) {
        futoin__misuse(fl, "%s() called from %s (instance %s)", what, cb_name(fl->cb),
                fl->state == FS_DONE || futoin__flow_root(fl)->state != RS_RUNNING ? "not running"
                                                                                   : "waiting");
    }
}

/* For calls valid only inside an execute callback (setTimeout & co). */
static inline int in_exec(Flow* fl, const char* what)
{
    if (fl->cb == CB_EXEC) {
        return 1;
    }
    report_not_in_exec(fl, what);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Flow interface                                                            */

FUTOIN_NOINLINE static void add_slow(Flow* fl, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    if (!f) {
        futoin__misuse(fl, "add() with a NULL execute callback");
        return;
    }
    futoin__add_step(fl, "add", SK_PLAIN, data, f, eh, NULL);
}

/* The step every program adds most: when the target is cached and the
 * pool has a node, a leaf that saves no register, whatever else (misuse,
 * a new slab, finding the target) is one tail call away. */
static void api_add(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    Flow* fl = (Flow*)as;
    Step** at = fl->add_link;
    /* A test and a jump each: written as one condition, gcc computes
     * !at || !f without a jump, 2 instructions more on every add(). */
    if (FUTOIN_UNLIKELY(!at)) {
        goto slow;
    }
    if (FUTOIN_UNLIKELY(!f)) {
        goto slow;
    }
    Step* s = futoin__step_pop_fast(futoin__flow_ctx(fl), 0);
    if (FUTOIN_LIKELY(s)) {
        futoin__step_fill(s, SK_PLAIN, data, f, eh, NULL);
        futoin__queue_step(fl, at, s);
        return;
    }
slow:
    add_slow(fl, data, f, eh);
}

static FutoInAsyncSteps* api_parallel(FutoInAsyncSteps* as, void* data,
        FutoInAsyncSteps_error_callback eh)
{
    Flow* fl = (Flow*)as;
    Step** at = futoin__add_target(fl, "parallel");
    if (!at) {
        return &futoin__inert_iface;
    }
    Parallel* p = futoin__parallel_new(futoin__flow_ctx(fl), fl);
    futoin__add_step_at(fl, at, SK_PARALLEL, data, NULL, eh, p);
    return &p->iface;
}

static void* api_state_variable(FutoInAsyncSteps* as, void* data, const char* name,
        void* (*allocate)(void* data), void (*cleanup)(void* data, void* value))
{
    Flow* fl = (Flow*)as;
    if (!name) {
        futoin__misuse(fl, "stateVariable() with a NULL name");
        return NULL;
    }
    return futoin__state_var(fl, data, name, allocate, cleanup);
}

static void* api_stack(FutoInAsyncSteps* as, size_t size, void (*cleanup)(void*))
{
    Flow* fl = (Flow*)as;
    if (!futoin__flow_in_step(fl) && !futoin__flow_is_idle_root(fl)) {
        if (!misuse_if_gone(fl, "stack", NULL)) {
            futoin__misuse(fl, "stack() called from %s", cb_name(fl->cb));
        }
        return NULL;
    }
    return futoin__flow_stack(fl, size, cleanup);
}

/* What an owned wait (futoin_wait_owned()) on top of fl is, for reports. */
static const char* owned_wait_name(const Flow* fl)
{
    switch (fl->frames[fl->depth].kind) {
    case SK_SYNC:
        return "a lock() of a sync object";
    case SK_YIELD:
        return "relinquish()";
    case SK_OWNED: {
        const StepOwner* o = futoin__step_ext(fl->frames[fl->depth].node);
        return futoin__owner_is(o, OWNER_AWAIT)   ? "await()"
                : futoin__owner_is(o, OWNER_WORK) ? "futoin_add_work()"
                                                  : "library code";
    }
    default:
        return "library code (an I/O step)";
    }
}

/* success() or error() through the interface on a step that library code
 * parked: only that code may end the wait. */
FUTOIN_COLD static void report_owned(Flow* fl, const char* what, const char* code)
{
    futoin__misuse(fl,
            "%s(%.64s) from outside a step that waits for %s, which completes "
            "it itself: ignored (a late completion meant for an earlier step?)",
            what, code ? code : "", owned_wait_name(fl));
}

/* success() or error() where no step of the flow runs or waits. */
FUTOIN_COLD static void report_late_success(Flow* fl, FutoInArgs* args)
{
    if (futoin__flow_waits_external(fl)) {
        report_owned(fl, "success", NULL);
    } else if (!misuse_if_gone(fl, "success", NULL)) {
        futoin__misuse(fl,
                "success() called from %s while the step is not waiting "
                "(completed twice, or the instance is not running)",
                cb_name(fl->cb));
    }
    futoin__args_drop_refused(fl, args);
}

FUTOIN_COLD static void report_late_error(Flow* fl, const char* code)
{
    if (futoin__flow_waits_external(fl)) {
        report_owned(fl, "error", code);
    } else if (!misuse_if_gone(fl, "error", code)) {
        futoin__misuse(fl,
                "error(%.64s) called from %s while the step is not waiting "
                "(completed twice, or the instance is not running)",
                code, cb_name(fl->cb));
    }
}

static void api_success(FutoInAsyncSteps* as, FutoInArgs* args)
{
    Flow* fl = (Flow*)as;
    /* Another thread: queued for the loop thread, nothing else is read. */
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_success(fl, args, NULL);
        return;
    }
    if (futoin__flow_in_step(fl)) {
        if (fl->out == OUT_SUCCESS) {
            futoin__misuse(fl, "success() called twice");
        } else if (futoin__flow_step_settled(fl)) {
            futoin__misuse(fl, "success() after error(), break() or continue()");
        } else if (fl->frames[fl->depth].q_head) {
            futoin__misuse(fl, "success() after add(): sub-steps were added");
        } else {
            futoin__flow_success(fl, args);
            return;
        }
        futoin__args_drop(args);
        return;
    }
    if (futoin__flow_waits_external(fl) && !futoin__flow_wait_is_owned(fl)) {
        Frame* f = &fl->frames[fl->depth];
        if (args && f->kind == SK_LOOP && !futoin__args_need_cleanup(args)) {
            args = NULL; /* a loop body's values go nowhere */
        }
        if (!args && !(f->flags & (FR_LOCK_PHASE | FR_EXTRAS)) && !fl->results) {
            /* The common resume: a plain wait, no value to keep, nothing
             * of the frame to settle. What futoin__flow_success() does
             * for it. */
            f->flags &= (uint8_t)~FR_WAIT;
            fl->pending = PD_NEXT;
            futoin__rq_push(fl);
            return;
        }
        futoin__flow_success(fl, args);
        return;
    }
    report_late_success(fl, args);
}

static void api_handle_error(FutoInAsyncSteps* as, const char* code, const char* info)
{
    Flow* fl = (Flow*)as;
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_error(fl, code, info, NULL);
        return;
    }
    if (!code) {
        futoin__misuse(fl, "error() with a NULL error code");
        return;
    }
    if (futoin__flow_in_step(fl)) {
        if (fl->out == OUT_SUCCESS) {
            futoin__misuse(fl, "error(%.64s) after success()", code);
        } else if (fl->out == OUT_ERROR) {
            futoin__misuse(fl, "error(%.64s) called twice", code);
        } else if (futoin__flow_step_settled(fl)) {
            futoin__misuse(fl, "error(%.64s) after break() or continue()", code);
        } else if (fl->cb == CB_EXEC && fl->frames[fl->depth].q_head) {
            futoin__misuse(fl, "error(%.64s) after add(): sub-steps were added", code);
        } else {
            futoin__flow_error(fl, code, info);
        }
        return;
    }
    if (futoin__flow_waits_external(fl) && !futoin__flow_wait_is_owned(fl)) {
        futoin__flow_error(fl, code, info);
        return;
    }
    report_late_error(fl, code);
}

static void api_set_timeout(FutoInAsyncSteps* as, uint32_t timeout_ms)
{
    Flow* fl = (Flow*)as;
    if (in_exec(fl, "setTimeout")) {
        futoin__flow_set_timeout(fl, timeout_ms);
    }
}

static void api_set_cancel(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    Flow* fl = (Flow*)as;
    if (!in_exec(fl, "setCancel")) {
        return;
    }
    if (!ch) {
        futoin__misuse(fl, "setCancel() with a NULL cancel handler");
        return;
    }
    futoin__flow_set_cancel(fl, data, ch);
}

static void api_wait_external(FutoInAsyncSteps* as)
{
    Flow* fl = (Flow*)as;
    if (in_exec(fl, "waitExternal")) {
        futoin__flow_wait(fl);
    }
}

static void add_loop(Flow* fl, void* data, size_t count, void (*loop_fn)(FutoInAsyncSteps*, void*),
        void (*repeat_fn)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    const char* what = loop_fn ? "loop" : "repeat";
    if (!loop_fn && !repeat_fn) {
        futoin__misuse(fl, "%s() with a NULL loop body", what);
        return;
    }
    Step** at = futoin__add_target(fl, what);
    if (!at) {
        return;
    }
    EngineCtx* ctx = futoin__flow_ctx(fl);
    futoin__queue_step(fl, at, futoin__loopspec_new(ctx, label, data, count, loop_fn, repeat_fn));
}

static void api_loop(FutoInAsyncSteps* as, void* data, void (*f)(FutoInAsyncSteps*, void*),
        const char* label)
{
    Flow* fl = (Flow*)as;
    if (!f) {
        futoin__misuse(fl, "loop() with a NULL loop body");
        return;
    }
    add_loop(fl, data, 0, f, NULL, label);
}

static void api_repeat(FutoInAsyncSteps* as, void* data, size_t count,
        void (*f)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    Flow* fl = (Flow*)as;
    if (!f) {
        futoin__misuse(fl, "repeat() with a NULL loop body");
        return;
    }
    add_loop(fl, data, count, NULL, f, label);
}

static void loop_control(Flow* fl, uint8_t ctl, const char* label)
{
    const char* what = ctl == CTL_BREAK ? "break" : "continue";
    if (!futoin__flow_in_step(fl)) {
        if (!misuse_if_gone(fl, what, NULL)) {
            futoin__misuse(fl, "%s() called from %s", what, cb_name(fl->cb));
        }
        return;
    }
    if (futoin__flow_step_settled(fl)) {
        futoin__misuse(fl, "%s() after the step already completed", what);
        return;
    }
    if (!futoin__find_loop(fl, label)) {
        if (label && *label) {
            futoin__misuse(fl, "%s(): no enclosing loop labelled '%.64s'", what, label);
        } else {
            futoin__misuse(fl, "%s() outside of a loop", what);
        }
        return;
    }
    futoin__flow_ctl(fl, ctl, label);
}

static void api_break(FutoInAsyncSteps* as, const char* label)
{
    loop_control((Flow*)as, CTL_BREAK, label);
}

static void api_continue(FutoInAsyncSteps* as, const char* label)
{
    loop_control((Flow*)as, CTL_CONTINUE, label);
}

/* Why execute() of a root was refused. */
FUTOIN_COLD static void report_bad_execute(Flow* fl)
{
    const Root* r = futoin__flow_root(fl);
    if (r->free_pending) {
        futoin__misuse(fl, "execute() on an instance that was freed: ignored");
    } else if (fl->cb == CB_FINAL) {
        futoin__misuse(fl,
                "execute() from the unhandled-error callback: the root is still "
                "finishing; execute it again once the callback has returned");
    } else {
        futoin__misuse(fl, "execute() on a root that is already running");
    }
}

static void api_execute(FutoInAsyncSteps* as, void* data, FutoInAsyncSteps_error_callback unhandled)
{
    Flow* fl = (Flow*)as;
    if (fl->is_branch) {
        futoin__misuse(fl, "execute() on a parallel branch: only a root can be executed");
        return;
    }
    if (!futoin__flow_is_idle_root(fl)) {
        report_bad_execute(fl);
        return;
    }
    futoin__root_execute(fl, data, unhandled);
}

static void api_cancel(FutoInAsyncSteps* as)
{
    Flow* fl = (Flow*)as;
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_cancel(fl);
        return;
    }
    futoin__root_cancel(futoin__flow_root(fl));
}

/* NULL if sync can be used, else what is wrong with it. Its alignment is
 * checked before its api is read: the step keeps the object's address
 * with the step kind in the low bits (Step.tag). */
const char* futoin__sync_problem(const FutoInSync* sync)
{
    if (!sync) {
        return "addSync() with a NULL sync object";
    }
    if ((uintptr_t)sync % _Alignof(FutoInSync)) {
        return "addSync() with a misaligned sync object";
    }
    return sync->api ? NULL : "addSync() with a sync object whose api is NULL";
}

static void api_add_sync(FutoInAsyncSteps* as, FutoInSync* sync, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    Flow* fl = (Flow*)as;
    const char* problem = futoin__sync_problem(sync);
    if (problem) {
        futoin__misuse(fl, "%s", problem);
        return;
    }
    if (!f) {
        futoin__misuse(fl, "addSync() with a NULL execute callback");
        return;
    }
    futoin__add_step(fl, "addSync", SK_SYNC, data, f, eh, sync);
}

static ptrdiff_t api_root_id(FutoInAsyncSteps* as)
{
    return (ptrdiff_t)(uintptr_t)as;
}

static int api_is_valid(FutoInAsyncSteps* as)
{
    Flow* fl = (Flow*)as;
    Root* r = futoin__flow_root(fl);
    if (futoin__root_is_gone(r)) {
        return 0;
    }
    return fl == &r->main || fl->state != FS_DONE;
}

static FutoInAsyncSteps* api_new_instance(FutoInAsyncSteps* as)
{
    return futoin_asyncsteps_new(((Flow*)as)->loop);
}

static void api_free(FutoInAsyncSteps* as)
{
    Flow* fl = (Flow*)as;
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_free(fl);
        return;
    }
    if (fl->is_branch) {
        futoin__misuse(fl, "free() on a parallel branch: only a root can be freed");
        return;
    }
    futoin__root_free(futoin__flow_root(fl));
}

static FutoInHandle api_sched_immediate(FutoInAsyncSteps* as, void* data, void (*cb)(void*))
{
    return futoin_loop_immediate(((Flow*)as)->loop, data, cb);
}

static FutoInHandle api_sched_deferred(FutoInAsyncSteps* as, uint32_t delay_ms, void* data,
        void (*cb)(void*))
{
    return futoin_loop_deferred(((Flow*)as)->loop, delay_ms, data, cb);
}

static void api_sched_cancel(FutoInAsyncSteps* as, FutoInHandle* handle)
{
    futoin_loop_cancel(((Flow*)as)->loop, handle);
}

static int api_sched_is_valid(FutoInAsyncSteps* as, FutoInHandle* handle)
{
    return futoin_loop_is_valid(((Flow*)as)->loop, handle);
}

static int api_is_same_thread(FutoInAsyncSteps* as)
{
    return futoin_loop_is_same_thread(((Flow*)as)->loop);
}

/* futoin_success() of asyncsteps.h: a flow of ours takes "no result" as
 * NULL, so the empty FutoInArgs that other implementations need is built
 * only for them. */
void futoin_success_empty(FutoInAsyncSteps* as)
{
    if (as->api == &futoin__flow_api) {
        api_success(as, NULL);
        return;
    }
    FutoInArgs none;
    memset(&none, 0, sizeof(none));
    as->api->success(as, &none);
}

const FutoInAsyncStepsAPI futoin__flow_api = {
    .add = api_add,
    .parallel = api_parallel,
    .stateVariable = api_state_variable,
    .stack = api_stack,
    .success = api_success,
    .handle_error = api_handle_error,
    .setTimeout = api_set_timeout,
    .setCancel = api_set_cancel,
    .waitExternal = api_wait_external,
    .loop = api_loop,
    .repeat = api_repeat,
    .breakLoop = api_break,
    .continueLoop = api_continue,
    .execute = api_execute,
    .cancel = api_cancel,
    .addSync = api_add_sync,
    .rootId = api_root_id,
    .isValid = api_is_valid,
    .newInstance = api_new_instance,
    .free = api_free,
    .sched_immediate = api_sched_immediate,
    .sched_deferred = api_sched_deferred,
    .sched_cancel = api_sched_cancel,
    .sched_is_valid = api_sched_is_valid,
    .is_same_thread = api_is_same_thread,
};
