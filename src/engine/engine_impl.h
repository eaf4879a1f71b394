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
#include "engine/values_impl.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(hidden)

/* ---- what the core's files share: flow state, adding steps, results ---- */
/* Whether a flow outlived the user code just called on it. Every place
 * that calls user code (a callback, a cleanup, lock()/unlock()) takes
 * the flow's mark first and asks afterwards: the code may have cancelled
 * or freed the root, or aborted the flow's branch, which bumps Flow.gen
 * (the flow's memory stays valid while Root.busy holds it). Once it has
 * not survived, the caller leaves the flow alone: the abort has done
 * what was left to do. */
static inline uint32_t futoin__flow_mark(const Flow* fl)
{
    return fl->gen;
}

static inline int futoin__flow_survived(const Flow* fl, uint32_t mark)
{
    return fl->gen == mark;
}

/* A step or an error handler of fl is on the C stack: what it calls
 * (success(), error(), add()...) decides its own outcome (Flow.out). */
static inline int futoin__flow_in_step(const Flow* fl)
{
    return fl->cb == CB_EXEC || fl->cb == CB_ERROR;
}

/* The running step (or error handler) has already decided its outcome:
 * success(), error(), break() or continue() was called (Flow.out). */
static inline int futoin__flow_step_settled(const Flow* fl)
{
    return fl->out != OUT_NONE;
}

/* break() and continue(): as a step's outcome (Flow.out) and as what the
 * unwind carries up to the loop (Flow.ctl). */
static inline uint8_t futoin__ctl_of_outcome(uint8_t out)
{
    return out == OUT_BREAK ? CTL_BREAK : CTL_CONTINUE;
}

static inline uint8_t futoin__outcome_of_ctl(uint8_t ctl)
{
    return ctl == CTL_BREAK ? OUT_BREAK : OUT_CONTINUE;
}

/* A root that was cancelled, or whose free() was called: its handle and
 * its flows answer isValid() with 0, and late calls on it are reported as
 * made on a cancelled or freed instance. */
static inline int futoin__root_is_gone(const Root* r)
{
    return r->free_pending || r->state == RS_CANCELLED;
}

/* fl is the main flow of a root that does not run, with no callback of it
 * on the C stack and no free() pending: add() and stack() go to level 0,
 * to be run by the next execute(). */
static inline int futoin__flow_is_idle_root(const Flow* fl)
{
    const Root* r = futoin__flow_root(fl);
    return fl->cb == CB_NONE && fl == &r->main && r->state != RS_RUNNING && !r->free_pending;
}

/* A running root's flow parked on a step that waits for an external
 * success() or error() (waitExternal(), setTimeout(), setCancel()), with
 * no callback of the flow on the C stack: the state in which a completion
 * from outside the step applies. On the loop thread that includes a root
 * whose cancel or free() is under way: a sync object's unlock() run by
 * that very abort may hand its slot to a waiter of the same root, and the
 * abort then releases the flow it woke. A completion from another thread
 * also needs the root not freed, and its epoch (cross_thread_calls.c). */
static inline int futoin__flow_waits_external(const Flow* fl)
{
    return fl->cb == CB_NONE && fl->state == FS_WAIT && fl->depth > 0
            && (fl->frames[fl->depth].flags & FR_WAIT)
            && futoin__flow_root(fl)->state == RS_RUNNING;
}

/* The wait on top of fl (futoin__flow_waits_external()) was armed by
 * futoin_wait_owned(): a completion through the interface is refused. */
static inline int futoin__flow_wait_is_owned(const Flow* fl)
{
    const Frame* f = &fl->frames[fl->depth];
    return (f->flags & FR_EXTRAS) && (f->extras_id & FUTOIN_EXTRAS_OWNED);
}

/* NULL if addSync() can use sync, else what is wrong with it. */
const char* futoin__sync_problem(const FutoInSync* sync);

RootExt* futoin__root_ext_make(Root* r);
static inline RootExt* futoin__root_ext(Root* r) /* created on first use */
{
    return r->ext ? r->ext : futoin__root_ext_make(r);
}

static inline RootDoneHook futoin__root_done(const Root* r)
{
    return r->ext ? r->ext->done : NULL;
}

/* Someone hears of the end of r's run: the internal completion hook or
 * the public end hook (futoin_set_on_end()). */
static inline int futoin__root_has_end_hook(const Root* r)
{
    return r->ext && (r->ext->done || r->ext->on_end);
}

EngineCtx* futoin__ctx_create(FutoInLoop* loop);
/* The loop's engine context, created on first use. */
static inline EngineCtx* futoin__ctx_get(FutoInLoop* loop)
{
    EngineCtx* ctx = *futoin__loop_engine_slot(loop);
    return ctx ? ctx : futoin__ctx_create(loop);
}
/* The end of a step queue: the link a step appended to it is stored in. */
static inline Step** futoin__queue_end(Step** link)
{
    while (*link) {
        link = &(*link)->next;
    }
    return link;
}

Step** futoin__add_target_slow(Flow* fl, const char* what);

/* Hot helpers used by every add(): kept inline so that adding a step costs
 * a cursor load, a pool pop and two stores (see Flow.add_link). Returns
 * where the step goes, NULL after reporting misuse. */
static inline Step** futoin__add_target(Flow* fl, const char* what)
{
    Step** at = fl->add_link;
    return at ? at : futoin__add_target_slow(fl, what);
}

#if FUTOIN_TRACING
/* Below this depth a spent frame keeps its place in the tracing build, so
 * that traces show each step of a chain (dispatch.c, frame_spent()). */
#define FUTOIN_TRACE_KEEP_DEPTH 1024u

/* Where the steps being added come from (futoin_trace_at()). */
typedef struct TraceLoc {
    const char* file;
    uint32_t line;
} TraceLoc;
extern _Thread_local TraceLoc futoin__trace_loc;

static inline void futoin__trace_stamp(Step* s)
{
    s->file = futoin__trace_loc.file;
    s->line = futoin__trace_loc.line;
}
/* The error just raised in fl: its chain of frames, from frame `top` of fl
 * out to the root, becomes fl's trace. */
void futoin__trace_capture(Flow* fl, uint32_t top);
void futoin__trace_free(RootExt* x);
/* The traces of two flows change places (futoin__flow_take_error()). */
void futoin__trace_swap(Flow* a, Flow* b);
/* A recycled branch starts with no trace; a pooled one's buffer is freed
 * with the loop. */
void futoin__trace_branch_reset(Flow* fl);
void futoin__trace_branch_free(Flow* fl);
#else
static inline void futoin__trace_stamp(Step* s)
{
    (void)s;
}
static inline void futoin__trace_capture(Flow* fl, uint32_t top)
{
    (void)fl, (void)top;
}
#endif

/* A node from the step pool becomes a step of kind K, not queued yet. */
static FUTOIN_ALWAYS_INLINE void futoin__step_fill(Step* s, uint8_t kind, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* ext)
{
    s->next = NULL;
    s->f = f;
    s->eh = eh;
    s->data = data;
    futoin__step_set(s, kind, ext);
    futoin__trace_stamp(s);
}

static inline Step* futoin__step_new(EngineCtx* ctx, uint8_t kind, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* ext)
{
    Step* s = (Step*)futoin__pool_get(&ctx->steps);
    futoin__step_fill(s, kind, data, f, eh, ext);
    return s;
}

/* What add() on a flow or on a parallel step takes first: a node from the
 * step pool, where one is at hand and nothing calls for the slow path
 * (refuse: misuse or no place to add). NULL: the caller takes its slow
 * path, which reports or makes a new slab. */
static FUTOIN_ALWAYS_INLINE Step* futoin__step_pop_fast(EngineCtx* ctx, int refuse)
{
    SlabPool* pool = &ctx->steps;
    Step* s = pool->free_list;
    if (FUTOIN_UNLIKELY(refuse || !s)) {
        return NULL;
    }
    pool->free_list = *(void**)s;
    return s;
}

/* Appends s (its next NULL) where futoin__add_target() said: the next
 * add() goes after it. */
static inline void futoin__queue_step(Flow* fl, Step** at, Step* s)
{
    *at = s;
    fl->add_link = &s->next;
}

/* Adding a step of kind K: a new step node queued at `at`, which
 * futoin__add_target() returned for fl. */
static inline void futoin__add_step_at(Flow* fl, Step** at, uint8_t kind, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* ext)
{
    futoin__queue_step(fl, at, futoin__step_new(futoin__flow_ctx(fl), kind, data, f, eh, ext));
}

/* The same where nothing needs making once the target is known: returns 0,
 * or -1 if fl takes no steps now (reported). */
static inline int futoin__add_step(Flow* fl, const char* what, uint8_t kind, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* ext)
{
    Step** at = futoin__add_target(fl, what);
    if (!at) {
        return -1;
    }
    futoin__add_step_at(fl, at, kind, data, f, eh, ext);
    return 0;
}
void futoin__step_free(EngineCtx* ctx, Step* s);
Step* futoin__step_copy(EngineCtx* ctx, const Step* s, Flow* owner, const char** err);
Parallel* futoin__parallel_new(EngineCtx* ctx, Flow* owner);
/* Appends a branch step to a parallel that has not started. */
static inline void futoin__parallel_append(Parallel* p, Step* s)
{
    if (p->b_tail) {
        p->b_tail->next = s;
    } else {
        p->b_head = s;
    }
    p->b_tail = s;
}
/* A loop step: loop() with loop_fn, else repeat() of count iterations. */
LoopSpec* futoin__loopspec_new(EngineCtx* ctx, const char* label, void* data, size_t count,
        void (*loop_fn)(FutoInAsyncSteps*, void*),
        void (*repeat_fn)(FutoInAsyncSteps*, void*, size_t));
/* The flow's error record becomes code and info (NULL: ""); either may
 * point into the record itself. */
void futoin__flow_set_error(Flow* fl, const char* code, const char* info);
/* An error escaped the branch src into dst, the flow holding its parallel
 * step: dst takes src's error record (and trace), src the one dst had,
 * which goes with it. */
void futoin__flow_take_error(Flow* dst, Flow* src);
int futoin__find_loop(Flow* fl, const char* label);

void futoin__flow_success(Flow* fl, FutoInArgs* args);
void futoin__flow_error(Flow* fl, const char* code, const char* info);
void futoin__flow_set_timeout(Flow* fl, uint32_t ms);
void futoin__flow_set_cancel(Flow* fl, void* data, FutoInAsyncSteps_cancel_callback ch);
void futoin__flow_wait(Flow* fl);
/* fl's top frame waits on the owned wait armed with key
 * (futoin_wait_owned(), engine/owned_wait.c). */
int futoin__flow_owned_by(Flow* fl, const void* key);
/* Takes the cancel handler (ch, data) off fl's top frame if that is its
 * handler: it will not be called. Returns 1 if it was. */
int futoin__flow_drop_cancel(Flow* fl, FutoInAsyncSteps_cancel_callback ch, void* data);
void futoin__flow_ctl(Flow* fl, uint8_t ctl, const char* label);
void futoin__root_execute(Flow* fl, void* data, FutoInAsyncSteps_error_callback unhandled);
void futoin__root_cancel(Root* r);
void futoin__root_free(Root* r);
void* futoin__flow_stack(Flow* fl, size_t size, void (*cleanup)(void*));
int futoin__flow_wait_info(Flow* fl, const char* what);
/* The cleanup that marks a stack() block as futoin_set_wait_info() text. */
void futoin__wait_info_block(void* value);

/* engine/state_vars.c */
void* futoin__state_var(Flow* fl, void* data, const char* name, void* (*allocate)(void*),
        void (*cleanup)(void*, void*));
void futoin__state_copy(Root* dst, Root* src);
void futoin__state_free(Root* r);

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
/* Releases the flow's error record: code and info read as "" again. */
void futoin__flow_code_release(Flow* fl);
/* An allocation the running step asked for failed: the step fails with
 * InternalError, error_info "<what>: out of memory". Outside a step there
 * is nobody to tell: the process aborts with the message. */
FUTOIN_COLD void futoin__step_out_of_memory(Flow* fl, const char* what);

/* ---- owned_data.c ---- */
/* The step that owned o (an SK_OWNED step's ext) is done with: o is
 * released, unless it holds futoin_add_owned() data that the step's
 * callback may still be using (defer: the flow's step or error handler is
 * on the C stack, and the frame was just aborted under it), or other such
 * data waits already (kept in order): then its destructor runs at
 * futoin__owners_flush(). */
void futoin__owner_end(EngineCtx* ctx, StepOwner* o, int defer);
/* Runs the deferred destructors, oldest first: where a step or error
 * handler whose flow was aborted under it has returned (an abort always
 * moves the flow's gen, which that return checks), and when the loop is
 * freed. */
void futoin__owners_flush(EngineCtx* ctx);
static inline void futoin__owners_flush_if_any(EngineCtx* ctx)
{
    if (FUTOIN_UNLIKELY(ctx->owners_deferred != NULL)) {
        futoin__owners_flush(ctx);
    }
}

/* ---- root.c ---- */
/* Destroys r now: nothing of it runs (Root.busy is 0). */
void futoin__root_destroy(Root* r);
/* A branch flow is done with: recycled once no engine frame of its root
 * is on the C stack. */
void futoin__flow_release(Flow* fl);
/* The run of r ended (reason): its end hook (futoin_set_on_end()), if it
 * has one, is called, with code (FUTOIN_END_ERROR) and results
 * (FUTOIN_END_SUCCESS; NULL: none). The hook is user code: the caller
 * holds r (Root.busy) and touches it afterwards only as after any
 * callback. */
void futoin__root_report_end(Root* r, FutoInEndReason reason, const char* code,
        FutoInArgs* results);
/* Frees every root still live on ctx's loop (futoin_loop_free()). */
void futoin__roots_free_all(EngineCtx* ctx);

/* ---- frames.c ---- */
void futoin__extras_grow(EngineCtx* ctx);
void futoin__stack_free(EngineCtx* ctx, StackBlock** head);
const char* futoin__wait_info_of(Flow* fl, uint32_t k);
void futoin__call_cancel(Flow* fl, Frame* f);
int futoin__frame_pop_slow(Flow* fl, int aborted);
/* A loop frame's next iteration starts as a fresh step would: what the
 * last one left (sub-steps, timer, stack memory) is released. Returns 0
 * if a cleanup aborted the flow. */
int futoin__iteration_reset_slow(Flow* fl, Frame* f);

/* ---- bounded.c: futoin_parallel_bounded() on the parallel machinery ---- */
/* The bounded parallel step p on top of fl starts: its first items become
 * branches (or, with no item, the step completes with an empty result). */
void futoin__bounded_start(Flow* fl, Parallel* p);
/* A branch of a bounded parallel finished with success: its results
 * become its item's outcome, and the next item takes its place (or, after
 * the last one, the step completes with the outcomes). Runs no user code. */
void futoin__bounded_branch_done(Flow* fl);
/* Releases a bounded parallel (started or not) and the outcomes it still
 * holds: their cleanups are user code, run last. */
void futoin__bounded_free(Parallel* p);
/* copyFrom(): a bounded parallel with the same items, not started. */
Parallel* futoin__bounded_copy(const Parallel* src, Flow* owner);

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
/* Unwinds fl (futoin__start_unwind() has begun it); a flow that a
 * handler recovered is queued for its next step. */
void futoin__flow_unwind(Flow* fl);
/* The same, but a recovered flow is left to the caller to run or queue:
 * returns 1 then. */
int futoin__flow_unwind_run(Flow* fl);
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

/* Pops the top frame f of an owned step (SK_OWNED) that completed and
 * holds nothing else (no extras, no queue): the node goes back to its
 * pool, then the owner is released, which for futoin_add_owned() is user
 * code. Returns 0 if that code aborted the flow or freed its root. */
static inline int frame_pop_owned(Flow* fl, Frame* f)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    Step* node = f->node;
    StepOwner* o = futoin__step_ext(node);
    --fl->depth;
    futoin__pool_put(&ctx->steps, node);
    uint32_t gen = futoin__flow_mark(fl);
    futoin__owner_end(ctx, o, 0);
    return futoin__flow_survived(fl, gen);
}

/* The step on top of fl ends; see futoin__frame_pop_slow(). Inline for the common
 * case of a plain step that holds nothing to release. Returns 0 if user
 * code run meanwhile (a cleanup, a cancel handler, unlock()) aborted the
 * flow or freed its root: the caller must not touch the flow any more. */
static inline int frame_pop(Flow* fl, int aborted)
{
    Frame* top = &fl->frames[fl->depth];
    if (!aborted && top->kind == SK_PLAIN && !(top->flags & FR_EXTRAS) && !top->q_head) {
        frame_pop_plain(fl, top);
        return 1;
    }
    return futoin__frame_pop_slow(fl, aborted);
}

/* Keeps r from being destroyed while user code runs on it (Root.busy): a
 * free() meanwhile takes effect at the matching unhold, which may destroy
 * r. */
static inline void futoin__root_hold(Root* r)
{
    ++r->busy;
}

static inline void flow_recycle(EngineCtx* ctx, Flow* f)
{
    f->pool_next = ctx->free_flows;
    ctx->free_flows = f;
}

/* The last engine frame of r left the C stack: released branch flows are
 * recycled and a free() that came meanwhile is carried out. A branch's
 * error record goes only now, so that what a callback of it read (the
 * code its error handler was given, its error_info) stays readable until
 * that callback returns, even if it cancelled the root. */
static inline void recycle_zombies(Root* r)
{
    RootExt* x = r->ext;
    while (x && x->zombies) {
        Flow* z = x->zombies;
        x->zombies = futoin__branch(z)->sib_next;
        if (futoin__branch(z)->code != futoin__no_code) {
            futoin__flow_code_release(z);
        }
#if FUTOIN_TRACING
        futoin__trace_branch_reset(z);
#endif
        flow_recycle(futoin__root_ctx(r), z);
    }
}

/* A branch flow released where nothing can still read it: no callback of
 * it on the C stack and no engine frame of its root but the caller's
 * (Root.busy is 1). It is recycled at once, as recycle_zombies() would
 * when that frame leaves, without passing through the zombie list. */
static inline void branch_recycle_now(Flow* fl)
{
    Root* r = futoin__flow_root(fl);
    assert(r->busy == 1 && fl->cb == CB_NONE && !fl->in_rq);
    ++fl->gen;
    fl->add_link = NULL;
    fl->state = FS_DONE;
    if (futoin__branch(fl)->code != futoin__no_code) {
        futoin__flow_code_release(fl);
    }
#if FUTOIN_TRACING
    futoin__trace_branch_reset(fl);
#endif
    flow_recycle(futoin__root_ctx(r), fl);
}

static inline void root_released(Root* r)
{
    recycle_zombies(r);
    if (r->free_pending) {
        futoin__root_destroy(r);
    } else {
        r->unhold_due = 0;
    }
}

static inline void futoin__root_unhold(Root* r)
{
    assert(r->unhold_due == (r->free_pending || (r->ext && r->ext->zombies)));
    if (--r->busy == 0 && r->unhold_due) {
        root_released(r);
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

/* What a flow's memory gets when it is first used. Written once: another
 * thread may read api, loop and xepoch while the flow is recycled (a late
 * cross-thread success()). */
static FUTOIN_ALWAYS_INLINE void flow_first_use(Flow* fl, Root* r)
{
    fl->frames = fl->inline_frames;
    fl->cap = FUTOIN_INLINE_FRAMES;
    fl->gen = 0;
    *(const FutoInAsyncStepsAPI**)&fl->iface.api = &futoin__flow_api;
    fl->loop = r->main.loop;
    atomic_init(&fl->xepoch, 0);
    fl->code_heap = 0;
}

/* Starts a flow's new life, in state FS_IDLE or FS_READY. A recycled flow
 * keeps a grown frame array and its generation count (bumped, so stale
 * checks keep failing). A ready flow is marked queued: its caller links
 * it into the ready queue. */
static FUTOIN_ALWAYS_INLINE void flow_reset(Flow* fl, uint8_t is_branch, uint8_t state)
{
    fl->depth = 0;
    fl->is_branch = is_branch;
    ++fl->gen;
    flow_clear(fl, state);
    fl->in_rq = state == FS_READY;
    if (state != FS_READY) {
        fl->rq_link.next = fl->rq_link.prev = NULL;
    }
    fl->results = NULL;
    fl->add_link = NULL;
    /* A recycled branch released its error record in recycle_zombies(). */
    memset(&fl->frames[0], 0, sizeof(Frame));
}

/* Prepares a fresh or recycled root's main flow. */
static inline void flow_init(Flow* fl, Root* r, int fresh)
{
    if (fresh) {
        flow_first_use(fl, r);
    }
    flow_reset(fl, 0, FS_IDLE);
}

static inline void flow_free_frames(Flow* fl)
{
    if (fl->frames != fl->inline_frames) {
        free(fl->frames);
    }
}

/* A branch flow of parallel p (its steps run in fl, whose parallel frame
 * holds p) of root r, to run the step s: recycled from the pool or new.
 * It is ready and marked queued, but the caller links it into the ready
 * queue and into p's list of branches, and sees that the dispatcher runs:
 * a parallel step's start queues all its branches in one go. */
static FUTOIN_ALWAYS_INLINE Flow* futoin__branch_new(EngineCtx* ctx, Root* r, Flow* fl, Parallel* p,
        Step* s)
{
    Flow* b = ctx->free_flows;
    if (FUTOIN_LIKELY(b)) {
        ctx->free_flows = b->pool_next;
    } else {
        b = futoin__pool_get(&ctx->branch_mem);
        flow_first_use(b, r);
        futoin__branch(b)->code = futoin__no_code;
#if FUTOIN_TRACING
        futoin__branch(b)->trace = NULL;
#endif
    }
    flow_reset(b, 1, FS_READY);
    futoin__branch(b)->root = r;
    futoin__branch(b)->parent = fl;
    futoin__branch(b)->par = p;
    futoin__branch(b)->sib_next = NULL;
    b->frames[0].q_head = s; /* its one step; nothing is added to level 0 */
    return b;
}

/* The dispatcher runs on the loop's next round, unless it is scheduled. */
static inline void schedule_dispatch(EngineCtx* ctx)
{
    if (!ctx->dispatch_scheduled) {
        ctx->dispatch_scheduled = 1;
        futoin__loop_post_local(ctx->loop, ctx, futoin__dispatch);
    }
}

/* Queues fl to run (FS_READY); a no-op if it is queued already. Returns
 * its context. */
static FUTOIN_ALWAYS_INLINE EngineCtx* rq_push_quiet(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    fl->state = FS_READY;
    if (!fl->in_rq) {
        fl->in_rq = 1;
        list_push_back(&ctx->rq, fl, RQ_LINK);
    }
    return ctx;
}

/* Queues fl to run, as rq_push_quiet(), and sees that the dispatcher
 * runs. */
static inline void futoin__rq_push(Flow* fl)
{
    EngineCtx* ctx = rq_push_quiet(fl);
    if (!ctx->dispatching) {
        schedule_dispatch(ctx);
    }
}

/* The frame's extras, made on first use. */
static inline FrameExtra* frame_extras_make(Flow* fl, Frame* f)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (f->flags & FR_EXTRAS) {
        return futoin__extras_slot(ctx, f->extras_id);
    }
    if (ctx->extras_free == FUTOIN_EXTRAS_NONE) {
        futoin__extras_grow(ctx);
    }
    uint32_t id = ctx->extras_free;
    FrameExtra* x = futoin__extras_slot(ctx, id);
    ctx->extras_free = x->next_free;
    memset(x, 0, sizeof(*x));
    f->extras_id = id;
    f->flags |= FR_EXTRAS;
    return x;
}

/* Stops the frame's timer (FR_TIMER), whose extras are x. */
static inline void frame_stop_timer_of(Flow* fl, Frame* f, FrameExtra* x)
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
        frame_stop_timer_of(fl, f, futoin__frame_extras(fl, f));
    }
}

/* A step completed: its timeout and cancel handler no longer apply. */
static inline void frame_settle(Flow* fl, Frame* f)
{
    if (f->flags & FR_EXTRAS) {
        FrameExtra* x = futoin__frame_extras(fl, f);
        if (f->flags & FR_TIMER) {
            frame_stop_timer_of(fl, f, x);
        }
        x->on_cancel = NULL;
    }
}

/* Releases what a frame that is off the stack (or level 0 at the end of
 * a flow) still holds out of line: stack() memory, then the record. */
static inline void frame_extras_release(EngineCtx* ctx, Frame* f)
{
    if (f->flags & FR_EXTRAS) {
        uint32_t id = f->extras_id & ~FUTOIN_EXTRAS_OWNED;
        FrameExtra* x = futoin__extras_slot(ctx, id);
        StackBlock* stack = x->stack;
        f->flags &= (uint8_t)~FR_EXTRAS;
        x->next_free = ctx->extras_free;
        ctx->extras_free = id;
        if (stack) { /* cleanups are user code: x is not used after them */
            futoin__stack_free(ctx, &stack);
        }
    }
}

/* Inline for the iteration that left only its wait behind (a loop that
 * parks on every turn): no call, no queue, no extras. Returns 0 if a
 * cleanup aborted the flow. */
static inline int iteration_reset(Flow* fl, Frame* f)
{
    if (f->q_head || (f->flags & FR_EXTRAS)) {
        return futoin__iteration_reset_slow(fl, f);
    }
    f->flags &= (uint8_t)~FR_WAIT;
    return 1;
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
    Step** saved_at = fl->add_link;
    uint32_t gen = futoin__flow_mark(fl);
    fl->cb = CB_CANCEL;
    fl->add_link = NULL;
    sync->api->unlock(&fl->iface, sync);
    if (!futoin__flow_survived(fl, gen)) {
        return 0; /* aborted or revived meanwhile: its state is new */
    }
    fl->cb = saved;
    fl->add_link = saved_at;
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
