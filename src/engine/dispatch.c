/* SPDX-License-Identifier: MIT */
/*
 * The ready queue and the step runner: dispatch() runs ready flows for one
 * burst; advance() takes a flow from step to step while it keeps its turn,
 * starting frames by kind (plain, loop, sync, value, yield, parallel) and
 * completing them. The step path lives here, in one file, so that the
 * compiler sees it whole.
 */
#include "engine/engine_impl.h"

#include <stdio.h>

static void advance(EngineCtx* ctx, Flow* fl, unsigned* budget);

void futoin__rq_remove(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (!fl->in_rq) {
        return;
    }
    list_remove(&ctx->rq, fl, RQ_LINK);
    fl->in_rq = 0;
}

void futoin__dispatch(void* data)
{
    EngineCtx* ctx = data;
    ctx->dispatch_scheduled = 0;
    ++ctx->dispatching;
    /* Steps left in this burst, at least 1. Local to this call: the step
     * path is inlined here, and the one part out of line
     * (run_more_iterations()) takes it and gives it back by value. */
    unsigned budget = ctx->burst;
    while (ctx->rq.head) {
        Flow* fl = list_pop_front(&ctx->rq, RQ_LINK);
        fl->in_rq = 0;
        Root* r = futoin__flow_root(fl);
        futoin__root_hold(r);
        if (fl->pending == PD_UNWIND) {
            futoin__flow_unwind(fl);
        } else {
            advance(ctx, fl, &budget);
        }
        futoin__root_unhold(r);
        if (--budget == 0) {
            break;
        }
    }
    --ctx->dispatching;
    /* Deferred destructors run where the callback that aborted its own
     * flow returns (exec_leave(), futoin__flow_unwind()): none is left
     * once a burst ends. */
    assert(ctx->dispatching || !ctx->owners_deferred);
    /* Counted per burst, not per step: the budget it used. */
    ctx->n_steps += (uint64_t)ctx->burst - budget;
    if (ctx->rq.head) {
        schedule_dispatch(ctx);
    }
}

/* A frame for the step s, which starts now (the frame's place on the stack
 * is taken already); its node is set by kind (frame_push()). */
static FUTOIN_ALWAYS_INLINE void frame_start(Frame* f, Step* s, uint8_t kind)
{
    f->q_head = NULL;
    f->kind = kind;
    f->flags = 0;
#if FUTOIN_TRACING
    /* A loop's body shares the callback's place in the node. */
    f->fn = (void (*)(void))s->f;
    f->file = s->file;
    f->line = s->line;
#else
    (void)s;
#endif
}

/* A plain (or yield) step keeps its node only as its error handler: the
 * callback is called straight from the step, so without a handler nothing
 * of the node is needed once the frame has started. */
static FUTOIN_ALWAYS_INLINE void frame_take_node(EngineCtx* ctx, Frame* f, Step* s)
{
    if (s->eh) {
        f->node = s; /* its eh and data are the frame's handler */
    } else {
        f->node = NULL;
        futoin__pool_put(&ctx->steps, s);
    }
}

/* A plain step's frame that outlives its callback (it waits, has
 * sub-steps or extras, or failed) keeps its node only as its error
 * handler, as frame_take_node() would have decided at its start. */
static FUTOIN_ALWAYS_INLINE void frame_keep(EngineCtx* ctx, Frame* f)
{
    Step* s = f->node;
    if (s && !s->eh) {
        f->node = NULL;
        futoin__pool_put(&ctx->steps, s);
    }
}

static Frame* frame_push(Flow* fl, Step* s)
{
    if (fl->depth + 1 >= fl->cap) {
        uint32_t cap = fl->cap * 2;
        if (fl->frames == fl->inline_frames) {
            Frame* heap = futoin__xmalloc(sizeof(Frame) * cap);
            memcpy(heap, fl->inline_frames, sizeof(Frame) * fl->cap);
            fl->frames = heap;
        } else {
            fl->frames = futoin__xrealloc(fl->frames, sizeof(Frame) * cap);
        }
        fl->cap = cap;
        fl->add_link = NULL; /* the cache may point into the old array */
    }
    Frame* f = &fl->frames[++fl->depth];
    uint8_t kind = futoin__step_kind(s);
    frame_start(f, s, kind);
    switch (kind) {
    case SK_LOOP:
        f->node = s;
        s->i = 0;
        break;
    case SK_SYNC:
        f->node = s;
        s->held = NULL;
        break;
    case SK_PLAIN:
    case SK_YIELD:
        frame_take_node(futoin__flow_ctx(fl), f, s);
        break;
    default:
        f->node = s;
        break;
    }
    return f;
}

/* What call_step() calls: the step's callback or lock() (a loop's body:
 * call_body()). */
typedef enum { CALL_EXEC, CALL_LOCK } CallKind;

/* What a step start or completion left the flow in. */
enum {
    GO_ON = 0, /* no user callback ran: keep advancing */
    HANDLED,   /* a callback ran; the flow is parked, requeued or gone */
    CONTINUE
}; /* a callback ran and the flow can take its next step */

static const FutoInArgs no_args;

/* Drops a step's input values once its callback has returned. Their
 * cleanups are user code: if the step has already completed (success() or
 * error() in its callback), a cleanup that cancels or frees the root must
 * not abort it again, so its cancel handler is disarmed first, as its
 * completion would do next. */
static void input_drop(Flow* fl, Frame* f, ArgsBox* in, uint32_t gen)
{
    /* gen: the flow as it was when the callback started; if the callback
     * aborted or freed it, the frame is not the step's any more. */
    if (futoin__flow_survived(fl, gen) && (fl->out == OUT_SUCCESS || fl->out == OUT_ERROR)
            && (f->flags & FR_EXTRAS)) {
        FrameExtra* x = futoin__frame_extras(fl, f);
        if (x) {
            x->on_cancel = NULL;
        }
    }
    futoin__box_free(futoin__flow_ctx(fl), in);
}

/* A callback of the top frame f starts: add() appends to f, success()
 * and error() settle it, and cross-thread calls made before now are
 * stale (xepoch: single writer, a plain increment published for other
 * threads). */
static FUTOIN_ALWAYS_INLINE void exec_enter(Flow* fl, Frame* f)
{
    assert(!f->q_head);
    fl->cb = CB_EXEC;
    fl->add_link = &f->q_head;
    atomic_store_explicit(&fl->xepoch, atomic_load_explicit(&fl->xepoch, memory_order_relaxed) + 1,
            memory_order_release);
}

/* The callback returned: 0 if it aborted or released the flow (gen is
 * the flow's as it was when the callback started), else the flow leaves
 * the EXEC context. */
static FUTOIN_ALWAYS_INLINE int exec_leave(Flow* fl, uint32_t gen)
{
    if (FUTOIN_UNLIKELY(!futoin__flow_survived(fl, gen))) {
        /* The step's own data, if the abort kept it for after the call. */
        futoin__owners_flush_if_any(futoin__flow_ctx(fl));
        return 0;
    }
    fl->cb = CB_NONE;
    fl->add_link = NULL;
    return 1;
}

/* Calls an execute-style callback for the top frame and reports whether the
 * flow survived it (0: it was aborted or released meanwhile). The incoming
 * results move to the C stack for the call, so a flow holds only the
 * results waiting for its next step. */
static inline int call_step(Flow* fl, Frame* f, CallKind kind, FutoInAsyncSteps_execute_callback fn,
        void* data)
{
    uint32_t gen = futoin__flow_mark(fl);
    ArgsBox* in = fl->results;
    const FutoInArgs* pin = &no_args;
    if (FUTOIN_UNLIKELY(in)) {
        fl->results = NULL;
        pin = &in->args;
    }
    fl->out = OUT_NONE;
    exec_enter(fl, f);
    switch (kind) {
    case CALL_EXEC:
        fn(&fl->iface, data, pin);
        break;
    case CALL_LOCK: {
        FutoInSync* sync = futoin__step_ext(f->node);
        sync->api->lock(&fl->iface, sync);
        break;
    }
    }
    if (FUTOIN_UNLIKELY(in)) {
        input_drop(fl, f, in, gen);
    }
    return exec_leave(fl, gen);
}

/* lock() of the sync frame f is done: the critical section becomes the
 * frame's sub-step and gets the results that came into the sync step
 * (whatever lock() itself produced is dropped). */
static FUTOIN_ALWAYS_INLINE int enter_section(Flow* fl, Frame* f)
{
    if (f->flags & FR_LOCK_PHASE) {
        futoin__lock_acquired(fl, f);
    }
    Step* s = f->node;
    ArgsBox* dropped = fl->results;
    fl->results = s->held;
    s->held = NULL;
    f->flags |= FR_SECTION;
    assert(!f->q_head); /* lock() left no sub-step behind */
    f->q_head = futoin__step_new(futoin__flow_ctx(fl), SK_PLAIN, s->data, s->f, s->eh, NULL);
    if (dropped) { /* user cleanups: last */
        uint32_t gen = futoin__flow_mark(fl);
        futoin__box_free(futoin__flow_ctx(fl), dropped);
        return futoin__flow_survived(fl, gen);
    }
    return 1;
}

/* The plain step on top failed by itself, and its frame holds nothing but
 * its node with an error handler that has not run: no sub-step, timer,
 * cancel handler, stack memory or incoming results to release first.
 * What futoin__start_unwind() and futoin__flow_unwind_run() would do for
 * it, without their general walk: the handler runs at once, and what it
 * decides is carried out as the walk would. */
static inline int own_handler_only(const Flow* fl, const Frame* f)
{
    return f->kind == SK_PLAIN && !f->flags && !f->q_head && !fl->results && f->node && f->node->eh;
}

static int error_to_own_handler(Flow* fl, Frame* f)
{
    Step* node = f->node;
    uint32_t gen = futoin__flow_mark(fl);
    f->flags = FR_EH_USED;
    fl->cb = CB_ERROR;
    fl->out = OUT_NONE;
    fl->add_link = &f->q_head;
    node->eh(&fl->iface, node->data, futoin__flow_code(fl));
    if (!futoin__flow_survived(fl, gen)) {
        futoin__owners_flush_if_any(futoin__flow_ctx(fl));
        return HANDLED;
    }
    fl->cb = CB_NONE;
    fl->add_link = NULL;
    switch (fl->out) {
    case OUT_SUCCESS:
        return frame_pop(fl, 0) && !fl->in_rq ? CONTINUE : HANDLED;
    case OUT_ERROR:
        break; /* a new error: the walk goes on outwards */
    case OUT_BREAK:
    case OUT_CONTINUE:
        fl->ctl = futoin__ctl_of_outcome(fl->out);
        break;
    default:
        if (fl->frames[fl->depth].q_head) {
            return fl->in_rq ? HANDLED : CONTINUE; /* its steps replace the step */
        }
        break;
    }
    if (!frame_pop(fl, 1)) {
        return HANDLED;
    }
    return futoin__flow_unwind_run(fl) && !fl->in_rq ? CONTINUE : HANDLED;
}

/* Decides what happens after an execute callback of the top frame returned. */
static int exec_outcome(Flow* fl)
{
    Frame* f = &fl->frames[fl->depth];
    if (fl->out == OUT_ERROR && own_handler_only(fl, f)) {
        return error_to_own_handler(fl, f);
    }
    switch (fl->out) {
    case OUT_BREAK:
    case OUT_CONTINUE:
        fl->ctl = futoin__ctl_of_outcome(fl->out);
        /* fall through */
    case OUT_ERROR:
        /* A handler that recovers, or the loop that a break or continue
         * reaches, lets the flow go on in this turn, as a step that
         * completes does; else it is queued, parked or gone. */
        if (futoin__start_unwind(fl, fl->depth, 1) && futoin__flow_unwind_run(fl) && !fl->in_rq) {
            return CONTINUE;
        }
        return HANDLED;
    case OUT_SUCCESS:
        /* The step is complete now, though its frame is popped only on the
         * flow's next turn: other flows, the loop's timers or a root cancel
         * may come first, and must not see its timeout or cancel handler. */
        if (f->flags & FR_LOCK_PHASE) {
            futoin__lock_acquired(fl, f);
        }
        frame_settle(fl, f);
        f->flags &= (uint8_t)~FR_WAIT;
        return CONTINUE;
    default:
        if (f->q_head) {
            f->flags &= (uint8_t)~FR_WAIT;
            return CONTINUE;
        }
        if (f->flags & FR_WAIT) {
            fl->state = FS_WAIT;
            return HANDLED;
        }
        if (f->flags & FR_LOCK_PHASE) {
            futoin__lock_acquired(fl, f);
        }
        return CONTINUE; /* implicit success */
    }
}

static inline int keep_turn(EngineCtx* ctx, unsigned* budget);

/* An iteration's body left something (an outcome, sub-steps, a wait). A
 * body that parks (waitExternal() and the like), what a loop of a
 * long-lived flow does most, gets exec_outcome()'s answer without the
 * call. */
static inline int iteration_outcome(Flow* fl, Frame* f)
{
    if (!futoin__flow_step_settled(fl) && !f->q_head && (f->flags & FR_WAIT)) {
        fl->state = FS_WAIT;
        return HANDLED;
    }
    return exec_outcome(fl);
}

/* call_step() for a loop's body, which takes no incoming results (the
 * previous iteration's are dropped first): 0 if the body aborted or
 * released the flow. */
static FUTOIN_ALWAYS_INLINE int call_body(Flow* fl, Frame* f, LoopSpec* l)
{
    uint32_t gen = futoin__flow_mark(fl);
    exec_enter(fl, f);
    if (l->count) {
        l->repeat_fn(&fl->iface, l->loop_data, l->i);
    } else {
        l->loop_fn(&fl->iface, l->loop_data);
    }
    return exec_leave(fl, gen);
}

/* What run_more_iterations() returns: the turn's outcome and the budget
 * left, by value, so that the dispatcher's budget never has its address
 * taken outside the inlined step path. */
typedef struct MoreIterations {
    int r;
    unsigned budget;
} MoreIterations;

/* The iterations after the first of one turn (run_iteration()), out of
 * line: a loop that parks after each iteration, the common long-lived
 * flow, does not pay for this loop's registers. */
FUTOIN_NOINLINE static MoreIterations run_more_iterations(Flow* fl, Frame* f, LoopSpec* l,
        unsigned budget)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    MoreIterations m = { CONTINUE, budget };
    for (;;) {
        /* The last iteration, or the turn ends: frame_complete() takes
         * it from here (it counts the iteration just run). */
        if ((l->count && l->i + 1 >= l->count) || !keep_turn(ctx, &m.budget)) {
            return m;
        }
        ++l->i;
        /* A clean previous iteration: the outcome is already OUT_NONE. */
        if (!call_body(fl, f, l)) {
            m.r = HANDLED;
            return m;
        }
        if (futoin__flow_step_settled(fl) || f->q_head || f->flags) {
            m.r = iteration_outcome(fl, f);
            return m;
        }
    }
}

/* Runs iterations of the loop on top of fl. While an iteration's body
 * completes at once and leaves nothing behind (no sub-steps, results,
 * timer, cancel handler or stack memory), the next one starts right here,
 * for as long as the flow keeps its turn: the same order and budget as
 * going round advance(), without its per-iteration bookkeeping. */
static int run_iteration(Flow* fl, unsigned* budget)
{
    Frame* f = &fl->frames[fl->depth];
    LoopSpec* l = f->node;
    /* Results of the previous iteration are not an input of the next. */
    if (fl->results) {
        uint32_t gen = futoin__flow_mark(fl);
        futoin__results_drop_slow(fl);
        if (!futoin__flow_survived(fl, gen)) {
            return HANDLED;
        }
    }
    fl->out = OUT_NONE;
    if (!call_body(fl, f, l)) {
        return HANDLED;
    }
    f = &fl->frames[fl->depth];
    if (futoin__flow_step_settled(fl) || f->q_head || f->flags) {
        return iteration_outcome(fl, f);
    }
    MoreIterations m = run_more_iterations(fl, f, f->node, *budget);
    *budget = m.budget;
    return m.r;
}

static void yield_resume(void* data, uintptr_t depth)
{
    Flow* fl = data;
    Frame* f = &fl->frames[depth];
    f->flags &= (uint8_t) ~(FR_TIMER | FR_WAIT);
    futoin__frame_extras(fl, f)->timer.slot = 0;
    futoin__rq_push(fl);
}

static void start_parallel(Flow* fl, Frame* f)
{
    Parallel* p = futoin__step_ext(f->node);
    if (FUTOIN_UNLIKELY(p->bounded)) {
        futoin__bounded_start(fl, p);
        return;
    }
    Root* r = futoin__flow_root(fl);
    EngineCtx* ctx = futoin__root_ctx(r);
    assert(ctx->dispatching);
    /* The branch steps become branch flows, in the same words, linked to
     * one another in order in p's list of branches and in the ready queue,
     * which takes them all at once: this runs in a step's turn, so the
     * dispatcher will see them. */
    Step* queued = p->b_head;
    Flow* first = NULL;
    Flow* last = NULL;
    uint32_t n = 0;
    while (queued) {
        Step* s = queued;
        queued = s->next;
        s->next = NULL;
        Flow* b = futoin__branch_new(ctx, r, fl, p, s);
        b->rq_link.prev = last;
        b->rq_link.next = NULL;
        if (last) {
            last->rq_link.next = b;
            futoin__branch(last)->sib_next = b;
        } else {
            first = b;
        }
        last = b;
        ++n;
    }
    p->started = 1;
    p->branches = first;
    p->pending = n;
    /* Parallel branches take no input (dropped last: user cleanups). */
    ArgsBox* dropped = fl->results;
    fl->results = NULL;
    if (!n) {
        futoin__rq_push(fl);
    } else {
        list_push_back_chain(&ctx->rq, first, last, RQ_LINK);
        f->flags |= FR_PAR_WAIT;
        fl->state = FS_WAIT;
    }
    if (dropped) {
        futoin__box_free(ctx, dropped);
    }
}

void futoin__branch_unlink(Flow* fl)
{
    Parallel* p = futoin__branch(fl)->par;
    for (Flow** pp = &p->branches; *pp; pp = &futoin__branch(*pp)->sib_next) {
        if (*pp == fl) {
            *pp = futoin__branch(fl)->sib_next;
            break;
        }
    }
}

/* Branch flow finished with success. Its results are dropped last: their
 * cleanups may cancel or free the root, and find the branch gone and the
 * parent's bookkeeping done. */
static void branch_done(Flow* fl)
{
    Parallel* p = futoin__branch(fl)->par;
    if (FUTOIN_UNLIKELY(p->bounded)) {
        futoin__bounded_branch_done(fl);
        return;
    }
    Flow* parent = futoin__branch(fl)->parent;
    ArgsBox* res = fl->results;
    fl->results = NULL;
    futoin__branch_unlink(fl);
    if (--p->pending == 0) {
        Frame* pf = &parent->frames[parent->depth];
        pf->flags &= (uint8_t)~FR_PAR_WAIT;
        futoin__rq_push(parent);
    }
    /* Ended in its own turn (advance()): unless another engine frame of
     * the root is on the C stack, nothing can read it any more. */
    if (futoin__flow_root(fl)->busy == 1) {
        branch_recycle_now(fl);
    } else {
        futoin__flow_release(fl);
    }
    if (res) {
        futoin__box_free(futoin__flow_ctx(parent), res);
    }
}

/* Branch flow failed: the siblings are cancelled and the parallel step
 * fails in the parent flow with the same error (or break/continue): the
 * parent takes the branch's error record, code and info (and trace). */
static void branch_failed(Flow* fl)
{
    Flow* parent = futoin__branch(fl)->parent;
    futoin__branch_unlink(fl);
    futoin__flow_take_error(parent, fl);
    parent->ctl = fl->ctl;
    uint32_t gen = futoin__flow_mark(parent);
    futoin__flow_release(fl);
    /* The siblings, with the frame left in place (futoin__start_unwind() would
     * call a cancel handler of it; a parallel frame has none). */
    if (!futoin__flow_survived(parent, gen) || !futoin__flow_unwind_to(parent, parent->depth)) {
        return; /* a cleanup or cancel handler cancelled or freed the root */
    }
    Frame* pf = &parent->frames[parent->depth];
    pf->flags &= (uint8_t)~FR_PAR_WAIT;
    if (futoin__start_unwind(parent, parent->depth, 1)) {
        futoin__rq_push(parent);
    }
}

/* Starts the frame just pushed: GO_ON, HANDLED or CONTINUE. */
static int start_frame(Flow* fl, FutoInAsyncSteps_execute_callback fn, void* data, unsigned* budget)
{
    Frame* f = &fl->frames[fl->depth];
    switch (f->kind) {
    case SK_PLAIN:
        return call_step(fl, f, CALL_EXEC, fn, data) ? exec_outcome(fl) : HANDLED;
    case SK_OWNED:
        if (!call_step(fl, f, CALL_EXEC, fn, data)) {
            return HANDLED;
        }
        if (fl->out <= OUT_SUCCESS && !f->q_head && !f->flags) {
            /* Completed, nothing left behind: popped at once, as advance()
             * pops a plain step, the owner released last. */
            return frame_pop_owned(fl, f) ? CONTINUE : HANDLED;
        }
        return exec_outcome(fl);
    case SK_LOOP: {
        LoopSpec* l = f->node;
        if (!l->loop_fn) {
            /* repeat(0) completes at once, as a finished loop does. */
            uint32_t gen = futoin__flow_mark(fl);
            futoin__results_drop(fl);
            return futoin__flow_survived(fl, gen) && frame_pop(fl, 0) ? GO_ON : HANDLED;
        }
        return run_iteration(fl, budget);
    }
    case SK_PARALLEL:
        start_parallel(fl, f);
        return HANDLED;
    case SK_SYNC: {
        /* Incoming results are for the critical section, not lock(). */
        f->node->held = fl->results;
        fl->results = NULL;
        f->flags |= FR_LOCK_PHASE;
        if (!call_step(fl, f, CALL_LOCK, NULL, NULL)) {
            return HANDLED;
        }
        f = &fl->frames[fl->depth];
        if (!futoin__flow_step_settled(fl) && !f->q_head && !(f->flags & FR_WAIT)) {
            /* Admitted at once: the critical section is queued now, so the
             * flow's next step (this turn or its next) is the section
             * itself, as frame_complete() would have arranged. */
            return enter_section(fl, f) ? CONTINUE : HANDLED;
        }
        return exec_outcome(fl);
    }
    case SK_VALUE: {
        ArgsBox* dropped = fl->results;
        fl->results = futoin__step_ext(f->node);
        futoin__step_set(f->node, SK_VALUE, NULL);
        if (dropped) {
            uint32_t gen = futoin__flow_mark(fl);
            futoin__box_free(futoin__flow_ctx(fl), dropped);
            return futoin__flow_survived(fl, gen) ? GO_ON : HANDLED;
        }
        return GO_ON;
    }
    case SK_YIELD: {
        FutoInHandle h = futoin__loop_immediate_aux(fl->loop, fl, fl->depth, yield_resume);
        if (FUTOIN_UNLIKELY(!h.data1)) {
            /* No memory for the trip through the loop: the ready queue
             * still lets the loop's other work run before the flow goes
             * on (the dispatcher's immediate never fails). */
            futoin__rq_push(fl);
            return HANDLED;
        }
        f->flags |= FR_WAIT | FR_TIMER;
        frame_extras_make(fl, f)->timer = futoin__loop_ref(h);
        /* Owned: only its immediate ends it, never a success() from outside. */
        f->extras_id |= FUTOIN_EXTRAS_OWNED;
        fl->state = FS_WAIT;
        return HANDLED;
    }
    default:
        return GO_ON;
    }
}

/* The top frame f (not level 0) finished without error: GO_ON once it is
 * popped (or has new sub-steps), or the result of the next loop iteration. */
static int frame_complete(Flow* fl, Frame* f, unsigned* budget)
{
    assert(f == &fl->frames[fl->depth]);
    if (f->kind == SK_LOOP) {
        LoopSpec* l = f->node;
        if (!iteration_reset(fl, f)) {
            return HANDLED;
        }
        ++l->i;
        if (!l->count || l->i < l->count) {
            return run_iteration(fl, budget);
        }
        if (fl->results) {
            uint32_t gen = futoin__flow_mark(fl);
            futoin__results_drop_slow(fl);
            if (!futoin__flow_survived(fl, gen)) {
                return HANDLED;
            }
        }
    } else if (f->kind == SK_SYNC && !(f->flags & FR_SECTION)) {
        /* lock() done: run the critical section as this frame's sub-step,
         * with the results that came into the sync step. */
        return enter_section(fl, f) ? GO_ON : HANDLED; /* lock() completed through sub-steps */
    } else if (f->kind == SK_SYNC && !(f->flags & FR_EXTRAS)) {
        /* The critical section is done: pop the frame, then unlock() (it
         * may wake other flows, never this one). */
        FutoInSync* sync = futoin__step_ext(f->node);
        uint8_t locked = f->flags & FR_LOCKED;
        futoin__pool_put(&futoin__flow_ctx(fl)->steps, f->node);
        --fl->depth;
        if (locked) {
            return futoin__call_unlock(fl, sync) ? GO_ON : HANDLED;
        }
        return GO_ON;
    }
    return frame_pop(fl, 0) ? GO_ON : HANDLED;
}

/* The root's run ended (r->state says how). What it still holds is taken
 * off it before any of it is released: the cleanups are user code, which
 * may free the root or execute it again. */
FUTOIN_NOINLINE static void root_finish_slow(Root* r, const char* code)
{
    Flow* fl = &r->main;
    EngineCtx* ctx = futoin__root_ctx(r);
    Step* queued = fl->frames[0].q_head;
    ArgsBox* res = fl->results;
    Frame level0 = fl->frames[0];
    fl->frames[0].q_head = NULL;
    fl->frames[0].flags &= (uint8_t)~FR_EXTRAS;
    fl->results = NULL;
    /* The hooks hear of it while code and the results are still as they
     * ended: the public one first (its user may look at the root before
     * the internal user, a pool or promise(), lets it go). Either may
     * free the root or execute it again. */
    RootDoneHook hook = futoin__root_done(r);
    void* hook_data = hook ? r->ext->done_data : NULL;
    if (hook) {
        r->ext->done = NULL;
    }
    futoin__root_report_end(r, code ? FUTOIN_END_ERROR : FUTOIN_END_SUCCESS, code,
            res ? &res->args : NULL);
    if (hook) {
        hook(hook_data, r, code, res ? &res->args : NULL);
    }
    if (queued) {
        futoin__queue_free(ctx, queued);
    }
    frame_extras_release(ctx, &level0);
    if (res) {
        futoin__box_free(ctx, res);
    }
}

/* Inline for a root that ends holding nothing: no queued step, results,
 * level-0 extras or end hook. */
static inline void root_finish(Root* r, const char* code)
{
    Flow* fl = &r->main;
    fl->state = FS_DONE;
    if (fl->frames[0].q_head || (fl->frames[0].flags & FR_EXTRAS) || fl->results
            || futoin__root_has_end_hook(r)) {
        root_finish_slow(r, code);
    }
}

/* Level 0 is empty: the flow is complete. */
static void flow_finished(Flow* fl)
{
    if (fl->is_branch) {
        branch_done(fl);
        return;
    }
    Root* r = futoin__flow_root(fl);
    r->state = RS_DONE;
    root_finish(r, NULL);
}

/* An error (or break/continue) escaped level 0 of the flow. */
void futoin__flow_failed(Flow* fl)
{
    if (fl->is_branch) {
        branch_failed(fl);
        return;
    }
    Root* r = futoin__flow_root(fl);
    if (fl->ctl) {
        /* Cannot happen for a validated break: report it as misuse. */
        futoin__flow_set_error(fl, FUTOIN_INTERNAL_ERROR, futoin__flow_info(fl));
        fl->ctl = CTL_NONE;
    }
    r->state = RS_FAILED;
    ++futoin__root_ctx(r)->n_unhandled;
    Step* queued = fl->frames[0].q_head;
    fl->frames[0].q_head = NULL;
    futoin__queue_free(futoin__root_ctx(r), queued);
    futoin__results_drop(fl);
    if (r->state != RS_FAILED) {
        /* A cleanup just now executed the root again: the failed run has
         * ended all the same, before the new one runs. */
        futoin__root_report_end(r, FUTOIN_END_ERROR, futoin__flow_code(fl), NULL);
        return;
    }
    if (r->free_pending) {
        /* A cleanup just now freed the root: nothing of it is called. */
        root_finish(r, futoin__flow_code(fl));
        return;
    }
    FutoInAsyncSteps_error_callback unhandled = fl->frames[0].unhandled;
    if (unhandled) {
        uint32_t gen = futoin__flow_mark(fl);
        fl->cb = CB_FINAL;
        fl->add_link = NULL;
        unhandled(&fl->iface, r->unhandled_data, futoin__flow_code(fl));
        if (!futoin__flow_survived(fl, gen)) {
            return;
        }
        fl->cb = CB_NONE;
    } else if (!futoin__root_has_end_hook(r)) { /* else the hook hears of it */
        char buf[200];
        snprintf(buf, sizeof(buf), "unhandled error %.64s (%.100s)", futoin__flow_code(fl),
                futoin__root_info(r));
        futoin__report_unhandled(fl, buf);
    }
    if (r->state == RS_FAILED) {
        root_finish(r, futoin__flow_code(fl));
    }
}

/* Keeps running the same flow in the current turn only while no other flow
 * is ready and the burst lasts: concurrent flows still take turns step by
 * step, and a lone flow runs its steps back to back. */
static inline int keep_turn(EngineCtx* ctx, unsigned* budget)
{
    if (FUTOIN_UNLIKELY(ctx->rq.head || *budget <= 1)) {
        return 0;
    }
    --*budget;
    return 1;
}

/* A frame that has nothing left to do once its last sub-step starts: a
 * plain step (not level 0) without handler, extras or flags, whose callback
 * has returned. That sub-step takes its place, as a tail call would: its
 * completion or error reaches the frame below just as it would have through
 * this one, and a step that ends by adding one sub-step (a loop inside a
 * step, a step that recurses) does not deepen the stack. */
static inline int frame_spent(const Flow* fl, const Frame* f)
{
#if FUTOIN_TRACING
    /* Traces show every step of a chain, as long as that costs no more
     * than a bounded stack: a deeper recursion still takes the shortcut. */
    if (fl->depth < FUTOIN_TRACE_KEEP_DEPTH) {
        return 0;
    }
#endif
    return fl->depth > 0 && f->kind == SK_PLAIN && !f->node && !f->flags;
}

/* Runs fl, a flow of the dispatcher's ctx, for its turn. */
static void advance(EngineCtx* ctx, Flow* fl, unsigned* budget)
{
    assert(ctx == futoin__flow_ctx(fl));
    Frame* top = &fl->frames[fl->depth];
    for (;;) {
        int r;
        Step* s = top->q_head;
        if (FUTOIN_LIKELY(s && futoin__step_kind(s) == SK_PLAIN && fl->depth + 1 < fl->cap)) {
            /* The common step, started and completed with the fewest
             * writes: a plain step whose callback neither waits nor leaves
             * anything behind is popped at once. Its frame holds its node
             * while the callback runs, whether it has an error handler or
             * not, so that neither the start nor the pop asks; a frame
             * that stays keeps it only for a handler (frame_keep()). */
            Frame* f = top + 1;
            FutoInAsyncSteps_execute_callback fn = s->f;
            void* data = s->data;
            top->q_head = s->next;
            ++fl->depth;
            frame_start(f, s, SK_PLAIN);
            f->node = s;
            if (FUTOIN_UNLIKELY(!call_step(fl, f, CALL_EXEC, fn, data))) {
                return;
            }
            if (FUTOIN_LIKELY(fl->out <= OUT_SUCCESS && !f->q_head && !f->flags)) {
                futoin__pool_put(&ctx->steps, f->node);
                --fl->depth;
                /* The frames do not move while a step's callback runs
                 * (only advance() pushes them): top is still the top. */
                if (keep_turn(ctx, budget)) {
                    continue;
                }
                break;
            }
            frame_keep(ctx, f);
            r = exec_outcome(fl);
        } else if (s) {
            /* Any other kind, or a plain step on a full stack: only here
             * may the last sub-step of a spent frame take its place, so
             * the common path above pays nothing for it, yet neither a
             * parked loop nor a recursion of plain steps deepens the stack
             * through frames that have nothing left to do. */
            FutoInAsyncSteps_execute_callback fn = s->f;
            void* data = s->data;
            top->q_head = s->next;
            if (!s->next && frame_spent(fl, top)) {
                --fl->depth;
            }
            frame_push(fl, s);
            r = start_frame(fl, fn, data, budget);
        } else if (fl->depth == 0) {
            flow_finished(fl);
            return;
        } else if (top->flags & (FR_WAIT | FR_PAR_WAIT)) {
            fl->state = FS_WAIT;
            return;
        } else {
            r = frame_complete(fl, top, budget);
        }
        if (r == GO_ON || (r == CONTINUE && keep_turn(ctx, budget))) {
            top = &fl->frames[fl->depth];
            continue;
        }
        if (r == CONTINUE) {
            break;
        }
        return;
    }
    rq_push_quiet(fl); /* the dispatcher runs: this is its turn */
}
