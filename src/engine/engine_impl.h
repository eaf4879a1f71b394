/* SPDX-License-Identifier: MIT */
/*
 * What the files of the engine core (src/engine/: context, steps, root,
 * frames, dispatch, unwind, flow_calls) share among themselves
 * and nobody else: the functions they call in each other and the small
 * helpers of the hot paths, inline here so that splitting the engine into
 * files costs the step path no call. The other subsystems use
 * engine_internal.h only.
 *
 * Every function here that runs user code (a cleanup, a cancel handler,
 * lock()/unlock()) returns whether the flow survived it, or says in its
 * comment how the caller must check (Flow.gen, Root.busy): user code may
 * cancel or free the root.
 */
#ifndef FUTOIN_ENGINE_IMPL_H
#define FUTOIN_ENGINE_IMPL_H

#include "common/compiler.h"
#include "engine/engine_internal.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(hidden)

/* stack() requests up to this size come from a pool: helpers such as
 * forEach and the I/O steps keep their small state there on every call. */
#define STACK_POOLED_SIZE 96
typedef union StackHeader {
    struct {
        StackBlock* next;
        void (*cleanup)(void* value);
        uint8_t pooled;
    } h;
    max_align_t align;
} StackHeader;

struct StackBlock {
    StackHeader hdr;
};

/* ---- context.c ---- */
/* Releases the flow's code buffer: it reads as "" again. */
void futoin__flow_code_release(Flow* fl);
/* An allocation the running step asked for failed: the step fails with
 * InternalError, error_info "<what>: out of memory". Outside a step there
 * is nobody to tell: the process aborts with the message. */
FUTOIN_COLD void futoin__step_out_of_memory(Flow* fl, const char* what);

/* ---- steps.c ---- */
/* Releases a chain of steps that never started (user cleanups run). */

/* ---- root.c ---- */
/* Destroys r now: nothing of it runs (Root.busy is 0). */
void futoin__root_destroy(Root* r);
/* A branch flow is done with: recycled once no engine frame of its root
 * is on the C stack. */
void futoin__flow_release(Flow* fl);

/* ---- frames.c ---- */
void futoin__xtable_grow(EngineCtx* ctx);
void futoin__stack_free(EngineCtx* ctx, StackBlock** head);
const char* futoin__wait_info_of(Flow* fl, uint32_t k);
void futoin__call_cancel(Flow* fl, Frame* f);
int futoin__frame_pop_slow(Flow* fl, int aborted);
/* A loop frame's next iteration starts as a fresh step would: what the
 * last one left (sub-steps, timer, stack memory) is released. Returns 0
 * if a cleanup aborted the flow. */
int futoin__iteration_reset_slow(Flow* fl, Frame* f);

/* ---- dispatch.c ---- */
/* The loop callback that runs ready flows for one burst. */
void futoin__dispatch(void* data);
void futoin__rq_remove(Flow* fl);
/* lock() of the sync frame f succeeded: from now on the engine owes
 * unlock(). */
/* An error (or break/continue) escaped level 0 of the flow. */
void futoin__flow_failed(Flow* fl);
/* Takes a branch flow out of its parallel's list of live branches. */
void futoin__branch_unlink(Flow* fl);

/* ---- unwind.c ---- */
int futoin__start_unwind(Flow* fl, uint32_t k, int own);
void futoin__flow_unwind(Flow* fl);
int futoin__flow_unwind_to(Flow* base, uint32_t k);
void futoin__flow_abort(Flow* fl);

/* ---- inline helpers ---- */

/* Pops the top frame f of a plain step that holds nothing but, perhaps,
 * its node (kept for its error handler): the whole release. */
static inline void frame_pop_plain(Flow* fl, Frame* f)
{
    if (f->node) {
        futoin__pool_put(&futoin__flow_ctx(fl)->steps, f->node);
    }
    --fl->depth;
}

/* The step on top of fl ends; see futoin__frame_pop_slow(). Inline for the common
 * case of a plain step that holds nothing to release. Returns 0 if user
 * code run meanwhile (a cleanup, a cancel handler, unlock()) aborted the
 * flow or freed its root: the caller must not touch the flow any more. */
static inline int frame_pop(Flow* fl, int aborted)
{
    Frame* top = &fl->frames[fl->depth];
    if (!aborted && top->kind == SK_PLAIN && !(top->flags & FR_X) && !top->q_head) {
        frame_pop_plain(fl, top);
        return 1;
    }
    return futoin__frame_pop_slow(fl, aborted);
}

static inline void root_enter(Root* r)
{
    ++r->busy;
}

static inline void flow_recycle(EngineCtx* ctx, Flow* f)
{
    f->pool_next = ctx->free_flows;
    ctx->free_flows = f;
}

/* The last engine frame of r left the C stack: released branch flows are
 * recycled and a free() that came meanwhile is carried out. */
static inline void recycle_zombies(Root* r)
{
    RootExt* x = r->ext;
    while (x && x->zombies) {
        Flow* z = x->zombies;
        x->zombies = futoin__branch(z)->sib_next;
        flow_recycle(futoin__root_ctx(r), z);
    }
}

static inline void root_left(Root* r)
{
    recycle_zombies(r);
    if (r->free_pending) {
        futoin__root_destroy(r);
    }
}

static inline void root_leave(Root* r)
{
    if (--r->busy == 0 && (r->free_pending || (r->ext && r->ext->zombies))) {
        root_left(r);
    }
}

/* No callback on the C stack, no outcome, nothing pending: a flow between
 * two lives (state FS_IDLE) or at the end of one (FS_DONE). */
static inline void flow_clear(Flow* fl, uint8_t state)
{
    fl->state = state;
    fl->pending = PD_NEXT;
    fl->cb = CB_NONE;
    fl->out = OUT_NONE;
    fl->ctl = CTL_NONE;
}

/* Prepares a fresh or recycled flow. A recycled one keeps a grown frame
 * array and its generation count (bumped, so stale checks keep failing). */
static inline void flow_init(Flow* fl, Root* r, int fresh)
{
    if (fresh) {
        fl->frames = fl->inline_frames;
        fl->cap = FUTOIN_INLINE_FRAMES;
        fl->gen = 0;
        /* Written once: another thread may read them while the flow is
         * recycled (a late cross-thread success()). */
        *(const FutoInAsyncStepsAPI**)&fl->iface.api = &futoin__flow_api;
        fl->loop = r->main.loop;
        atomic_init(&fl->xepoch, 0);
    }
    fl->depth = 0;
    fl->rq_link.next = fl->rq_link.prev = NULL;
    fl->is_branch = 0;
    ++fl->gen;
    flow_clear(fl, FS_IDLE);
    fl->in_rq = 0;
    fl->results = NULL;
    fl->add_fr = NULL;
    fl->q_tail = NULL;
    if (fresh) {
        fl->code_heap = 0;
    }
    /* A recycled branch released its code in futoin__flow_release(). */
    memset(&fl->frames[0], 0, sizeof(Frame));
}

static inline void flow_free_frames(Flow* fl)
{
    if (fl->frames != fl->inline_frames) {
        free(fl->frames);
    }
}

/* The dispatcher runs on the loop's next round, unless it is scheduled. */
static inline void schedule_dispatch(EngineCtx* ctx)
{
    if (!ctx->dispatch_scheduled) {
        ctx->dispatch_scheduled = 1;
        futoin__loop_post_local(ctx->loop, ctx, futoin__dispatch);
    }
}

/* Queues fl to run (FS_READY); a no-op if it is queued already. */
static inline void futoin__rq_push(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    fl->state = FS_READY;
    if (fl->in_rq) {
        return;
    }
    fl->in_rq = 1;
    list_push_back(&ctx->rq, fl, RQ_LINK);
    if (!ctx->dispatching) {
        schedule_dispatch(ctx);
    }
}

/* id may carry FUTOIN_XID_OWNED. */
static inline FrameExtra* xslot(EngineCtx* ctx, uint32_t id)
{
    id &= ~FUTOIN_XID_OWNED;
    return &ctx->xchunks[id / FUTOIN_XCHUNK][id % FUTOIN_XCHUNK];
}

/* The frame's extras, NULL if it has none. */
static inline FrameExtra* frame_xp(Flow* fl, const Frame* f)
{
    return f->flags & FR_X ? xslot(futoin__flow_ctx(fl), f->xid) : NULL;
}

/* The frame's extras, made on first use. */
static inline FrameExtra* frame_x(Flow* fl, Frame* f)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (f->flags & FR_X) {
        return xslot(ctx, f->xid);
    }
    if (ctx->xfree == FUTOIN_XNONE) {
        futoin__xtable_grow(ctx);
    }
    uint32_t id = ctx->xfree;
    FrameExtra* x = xslot(ctx, id);
    ctx->xfree = x->next_free;
    memset(x, 0, sizeof(*x));
    f->xid = id;
    f->flags |= FR_X;
    return x;
}

/* Stops the frame's timer (FR_TIMER), whose extras are x. */
static inline void frame_stop_timer_x(Flow* fl, Frame* f, FrameExtra* x)
{
    FutoInLoop* loop = fl->loop;
    FutoInHandle h = futoin__loop_handle(loop, x->timer);
    futoin__loop_cancel_local(loop, &h);
    x->timer.slot = 0;
    f->flags &= (uint8_t)~FR_TIMER;
}

static inline void frame_stop_timer(Flow* fl, Frame* f)
{
    if (f->flags & FR_TIMER) {
        frame_stop_timer_x(fl, f, frame_xp(fl, f));
    }
}

/* A step completed: its timeout and cancel handler no longer apply. */
static inline void frame_settle(Flow* fl, Frame* f)
{
    if (f->flags & FR_X) {
        FrameExtra* x = frame_xp(fl, f);
        if (f->flags & FR_TIMER) {
            frame_stop_timer_x(fl, f, x);
        }
        x->on_cancel = NULL;
    }
}

/* Releases what a frame that is off the stack (or level 0 at the end of
 * a flow) still holds out of line: stack() memory, then the record. */
static inline void frame_x_release(EngineCtx* ctx, Frame* f)
{
    if (f->flags & FR_X) {
        uint32_t id = f->xid & ~FUTOIN_XID_OWNED;
        FrameExtra* x = xslot(ctx, id);
        StackBlock* stack = x->stack;
        f->flags &= (uint8_t)~FR_X;
        x->next_free = ctx->xfree;
        ctx->xfree = id;
        if (stack) { /* cleanups are user code: x is not used after them */
            futoin__stack_free(ctx, &stack);
        }
    }
}

/* The live branches of the parallel frame on top of fl, if it is one. */
static inline Flow* live_branches(const Flow* fl)
{
    const Frame* top = &fl->frames[fl->depth];
    if (top->kind != SK_PARALLEL || !fl->depth) {
        return NULL;
    }
    const Parallel* p = futoin__step_ext(top->node);
    return p->started ? p->branches : NULL;
}

/* Runs the cleanups of the values in a[0..n). The holders are left as
 * they are: a box is written in full before it is used again. */
static inline void args_release(FutoInArgs* a, uint8_t n)
{
    for (uint8_t i = 0; i < n; ++i) {
        const FutoInType* tp = a->args[i].type;
        if (tp && tp->cleanup) {
            tp->cleanup(&a->args[i]);
        }
    }
}

static inline void box_free(EngineCtx* ctx, ArgsBox* b)
{
    args_release(&b->args, b->nargs);
    futoin__pool_put(&ctx->boxes, b);
}

/* Inline for the iteration that left only its wait behind (a loop that
 * parks on every turn): no call, no queue, no extras. Returns 0 if a
 * cleanup aborted the flow. */
static inline int iteration_reset(Flow* fl, Frame* f)
{
    if (f->q_head || (f->flags & FR_X)) {
        return futoin__iteration_reset_slow(fl, f);
    }
    f->flags &= (uint8_t)~FR_WAIT;
    return 1;
}

/* Empties error_info: nothing to do while the root has no text. */
static inline void info_clear(Root* r)
{
    if (r->ext && r->ext->info) {
        r->ext->info[0] = 0;
    }
}

/* Frames above level 0, queued steps or results: what aborting releases. */
static inline int flow_holds_work(const Flow* fl)
{
    return fl->depth || fl->frames[0].q_head || fl->results;
}

/* The engine owes unlock() once lock() succeeded; it runs in the CANCEL
 * context (nothing may be added to the flow from inside it). Inline: the
 * sync step path (dispatch.c) and frame_pop (frames.c) both call it. */
static inline int futoin__call_unlock(Flow* fl, FutoInSync* sync)
{
    uint8_t saved = fl->cb;
    Frame* saved_fr = fl->add_fr;
    uint32_t gen = futoin__flow_mark(fl);
    fl->cb = CB_CANCEL;
    fl->add_fr = NULL;
    sync->api->unlock(&fl->iface, sync);
    if (!futoin__flow_survived(fl, gen)) {
        return 0; /* aborted or revived meanwhile: its state is new */
    }
    fl->cb = saved;
    fl->add_fr = saved_fr;
    return 1;
}

/* lock() of a sync step succeeded: from now on the engine owes unlock(),
 * whatever happens before the critical section gets its turn. */
static inline void futoin__lock_acquired(Flow* fl, Frame* f)
{
    f->flags = (uint8_t)((f->flags & ~(FR_LOCK_PHASE | FR_WAIT)) | FR_LOCKED);
    frame_settle(fl, f);
}

/* Releases a queue of steps that never started (futoin__step_free()).
 * Inline: the frame pops call it for every frame, and the queue is
 * mostly empty. */
static inline void futoin__queue_free(EngineCtx* ctx, Step* s)
{
    while (s) {
        Step* next = s->next;
        futoin__step_free(ctx, s);
        s = next;
    }
}

#pragma GCC visibility pop

#endif
