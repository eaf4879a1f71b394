/* SPDX-License-Identifier: MIT */
/*
 * The AsyncSteps engine: step queues, the per-flow frame stack, the ready
 * queue and its dispatcher, error unwinding, loops, parallel branches, sync
 * sections and cancellation. The ABI entry points live in engine/abi_table.c and
 * only validate the calling context before landing here.
 */
#include "engine/engine_internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BURST 100
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

static void advance(Flow* fl);
static void unwind(Flow* fl);
static int frame_pop_slow(Flow* fl, int aborted);

/* The step on top of fl ends; see frame_pop_slow(). Inline for the common
 * case of a plain step that holds nothing to release. Returns 0 if user
 * code run meanwhile (a cleanup, a cancel handler, unlock()) aborted the
 * flow or freed its root: the caller must not touch the flow any more. */
static inline int frame_pop(Flow* fl, int aborted)
{
    Frame* top = &fl->frames[fl->depth];
    if (!aborted && top->kind == SK_PLAIN && !(top->flags & FR_X) && !top->q_head) {
        if (top->node) {
            futoin__pool_put(&futoin__flow_ctx(fl)->steps, top->node);
        }
        --fl->depth;
        return 1;
    }
    return frame_pop_slow(fl, aborted);
}
static void flow_abort(Flow* fl);
static int start_unwind(Flow* fl, uint32_t k, int own);
static void flow_free_frames(Flow* fl);

/* ------------------------------------------------------------------------ */
/* Per-loop context                                                          */

static void ctx_free(void* p)
{
    EngineCtx* ctx = p;
    while (ctx->free_flows) {
        Flow* f = ctx->free_flows;
        ctx->free_flows = f->rq_next;
        flow_free_frames(f);
    }
    while (ctx->free_roots) {
        Root* r = ctx->free_roots;
        ctx->free_roots = (Root*)r->main.rq_next;
        flow_free_frames(&r->main);
        if (r->ext) {
            free(r->ext->info);
#if FUTOIN_TRACING
            futoin__trace_free(r->ext);
#endif
            free(r->ext);
        }
    }
    futoin__pool_destroy(&ctx->root_mem);
    futoin__pool_destroy(&ctx->branch_mem);
    futoin__pool_destroy(&ctx->steps);
    futoin__pool_destroy(&ctx->boxes);
    futoin__pool_destroy(&ctx->stacks);
    futoin__pool_destroy(&ctx->strs); /* ctx itself is the loop's memory */
    for (uint32_t i = 0; i < ctx->nxchunks; ++i) {
        free(ctx->xchunks[i]);
    }
    free(ctx->xchunks);
}

static void default_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    fprintf(stderr, "futoin: API misuse: %s\n", info);
}

EngineCtx* futoin__ctx_create(FutoInLoop* loop)
{
    void** slot = futoin__loop_engine_slot(loop);
    if (!*slot) {
        EngineCtx* ctx = (EngineCtx*)(void*)((FutoInLoopHead*)(void*)loop)->engine_mem;
        memset(ctx, 0, sizeof(*ctx));
        ctx->loop = loop;
        ctx->burst = DEFAULT_BURST;
        ctx->misuse = default_misuse;
        ctx->xfree = FUTOIN_XNONE;
        /* Steps, loop specs and parallels share one pool of nodes
         * (and error codes and labels the small-string pool), so memory
         * freed by one kind serves the others. */
        futoin__pool_init(&ctx->steps, sizeof(Step), _Alignof(Step), 256);
        futoin__pool_init(&ctx->boxes, sizeof(ArgsBox), _Alignof(ArgsBox), 32);
        /* stack() memory is the caller's: aligned for any type. */
        futoin__pool_init(&ctx->stacks, sizeof(StackBlock) + STACK_POOLED_SIZE,
                _Alignof(max_align_t), 32);
        futoin__pool_init(&ctx->strs, FUTOIN_SMALL_STR, _Alignof(void*), 64);
        futoin__pool_init(&ctx->root_mem, sizeof(Root), _Alignof(Root), 64);
        futoin__pool_init(&ctx->branch_mem, sizeof(Branch), _Alignof(Branch), 32);
        *slot = ctx;
        futoin__loop_set_engine_free(loop, ctx_free);
    }
    return *slot;
}

void futoin_set_burst(FutoInLoop* loop, unsigned steps)
{
    EngineCtx* ctx = futoin__ctx_get(loop);
    unsigned burst = steps ? steps : 1;
    if (ctx->dispatching) {
        /* The running dispatch counts burst - budget when it ends: keep
         * n_steps what the budget granted at its start makes it. */
        ctx->n_steps += (uint64_t)ctx->burst - burst;
    }
    ctx->burst = burst;
}

void futoin_set_misuse_handler(FutoInLoop* loop, FutoInMisuseHandler cb, void* data)
{
    EngineCtx* ctx = futoin__ctx_get(loop);
    ctx->misuse = cb ? cb : default_misuse;
    ctx->misuse_data = cb ? data : NULL;
}

Flow* futoin__flow_of(FutoInAsyncSteps* bsi)
{
    if (!bsi) {
        return NULL;
    }
    if (bsi->api == &futoin__flow_api) {
        return (Flow*)bsi;
    }
    if (bsi->api == &futoin__par_api) {
        return ((Parallel*)bsi)->owner;
    }
    return NULL;
}

FutoInLoop* futoin_asyncsteps_loop(FutoInAsyncSteps* as)
{
    Flow* fl = futoin__flow_of(as);
    /* Flow.loop is written once, when the flow's memory is first used, so
     * other threads (shared sync objects) may ask too. */
    return fl ? fl->loop : NULL;
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

char futoin__no_code[1];

/* Where the flow's code buffer pointer lives (see futoin__flow_code());
 * a root's RootExt is made if it has none. */
static char** flow_code_slot(Flow* fl)
{
    if (fl->is_branch) {
        return &futoin__branch(fl)->code;
    }
    return &futoin__root_ext((Root*)fl)->code;
}

/* Releases the flow's code buffer: it reads as "" again. */
static void flow_code_release(Flow* fl)
{
    char* code = futoin__flow_code(fl);
    if (code != futoin__no_code) {
        if (fl->code_heap) {
            free(code);
        } else {
            futoin__pool_put(&futoin__flow_ctx(fl)->strs, code);
        }
        *flow_code_slot(fl) = futoin__no_code;
        fl->code_heap = 0;
    }
}

void futoin__flow_set_code(Flow* fl, const char* s)
{
    if (!s) {
        s = "";
    }
    char* code = futoin__flow_code(fl);
    if (s == code) {
        return; /* re-raising the code we handed out */
    }
    size_t len = strlen(s);
    if (len < FUTOIN_SMALL_STR && code != futoin__no_code && !fl->code_heap) {
        memmove(code, s, len + 1);
        return;
    }
    if (len == 0 && code == futoin__no_code) {
        return;
    }
    /* s may point into the old buffer: copy before releasing it. */
    char* p = len < FUTOIN_SMALL_STR ? futoin__pool_get(&futoin__flow_ctx(fl)->strs)
                                     : futoin__xmalloc(len + 1);
    memcpy(p, s, len + 1);
    flow_code_release(fl);
    *flow_code_slot(fl) = p;
    fl->code_heap = len >= FUTOIN_SMALL_STR;
}

RootExt* futoin__root_ext_make(Root* r)
{
    r->ext = futoin__xmalloc(sizeof(RootExt));
    memset(r->ext, 0, sizeof(RootExt));
    r->ext->code = futoin__no_code;
    return r->ext;
}

/* Empties error_info: nothing to do while the root has no text. */
static inline void info_clear(Root* r)
{
    if (r->ext && r->ext->info) {
        r->ext->info[0] = 0;
    }
}

void futoin__set_info(Root* r, const char* info)
{
    if (!info || !*info) {
        info_clear(r);
        return;
    }
    RootExt* x = futoin__root_ext(r);
    if (info == x->info) {
        return;
    }
    size_t len = strlen(info);
    if (len + 1 > x->info_cap) {
        size_t cap = x->info_cap ? x->info_cap : 64;
        while (cap < len + 1) {
            cap *= 2;
        }
        /* info may point into the old buffer: copy before releasing it. */
        char* p = futoin__xmalloc(cap);
        memcpy(p, info, len + 1);
        free(x->info);
        x->info = p;
        x->info_cap = cap;
    } else {
        memmove(x->info, info, len + 1);
    }
}

void futoin__args_reset(FutoInArgs* a, uint8_t n)
{
    for (uint8_t i = 0; i < n; ++i) {
        futoin_reset_binval(&a->args[i]);
    }
}

/* Moves the values of src into dst (which must be empty); returns the count
 * of argument slots used. */
uint8_t futoin__args_take(FutoInArgs* dst, FutoInArgs* src)
{
    uint8_t n = 0;
    if (!src) {
        return 0;
    }
    for (uint8_t i = 0; i < 4; ++i) {
        if (src->args[i].type) {
            dst->args[i] = src->args[i];
            n = (uint8_t)(i + 1);
        }
    }
    return n;
}

void futoin__misuse(Flow* fl, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (fl && (fl->cb == CB_EXEC || fl->cb == CB_ERROR)) {
        /* The running step fails: the spec's InternalError. */
        futoin__trace_capture(fl, fl->depth);
        futoin__flow_set_code(fl, FUTOIN_INTERNAL_ERROR);
        futoin__set_info(futoin__flow_root(fl), buf);
        ++futoin__flow_ctx(fl)->n_errors;
        fl->out = OUT_ERROR;
        fl->add_fr = NULL;
        fl->ctl = CTL_NONE;
        return;
    }
    if (fl) {
        EngineCtx* ctx = futoin__flow_ctx(fl);
        ctx->misuse(ctx->misuse_data, &fl->iface, buf);
    } else {
        default_misuse(NULL, NULL, buf);
    }
}

/* ------------------------------------------------------------------------ */
/* Steps and their extensions                                                */

Parallel* futoin__parallel_new(EngineCtx* ctx, Flow* owner)
{
    Parallel* p = futoin__pool_get(&ctx->steps);
    memset(p, 0, sizeof(*p));
    *(const FutoInAsyncStepsAPI**)&p->iface.api = &futoin__par_api;
    p->owner = owner;
    return p;
}

LoopSpec* futoin__loopspec_new(EngineCtx* ctx, const char* label, void* data, size_t count,
        void (*loop_fn)(FutoInAsyncSteps*, void*),
        void (*repeat_fn)(FutoInAsyncSteps*, void*, size_t))
{
    LoopSpec* l = futoin__pool_get(&ctx->steps);
    l->next = NULL;
    if (!loop_fn) {
        /* repeat(0) has no iteration to call anything for. */
        l->repeat_fn = count ? repeat_fn : NULL;
        l->count = count;
    } else {
        l->loop_fn = loop_fn;
        l->count = 0;
    }
    l->loop_data = data;
    char* copy = NULL;
    if (label && *label) {
        size_t len = strlen(label);
        /* Set once and never changed: the length tells where it lives. */
        copy = len < FUTOIN_SMALL_STR ? futoin__pool_get(&ctx->strs) : futoin__xmalloc(len + 1);
        memcpy(copy, label, len + 1);
    }
    futoin__step_set(l, SK_LOOP, copy);
    futoin__trace_stamp(l);
    return l;
}

static void loopspec_free(EngineCtx* ctx, LoopSpec* l)
{
    char* label = futoin__loop_label(l);
    if (label) {
        if (strlen(label) < FUTOIN_SMALL_STR) {
            futoin__pool_put(&ctx->strs, label);
        } else {
            free(label);
        }
    }
    futoin__pool_put(&ctx->steps, l);
}

/* Runs the cleanups of the values in a[0..n). The holders are left as
 * they are: a box is written in full before it is used again. */
static void args_release(FutoInArgs* a, uint8_t n)
{
    for (uint8_t i = 0; i < n; ++i) {
        const FutoInType* tp = a->args[i].type;
        if (tp && tp->cleanup) {
            tp->cleanup(&a->args[i]);
        }
    }
}

static void box_free(EngineCtx* ctx, ArgsBox* b)
{
    args_release(&b->args, b->nargs);
    futoin__pool_put(&ctx->boxes, b);
}

/* The values' cleanups are user code that may call back into the engine,
 * on this flow too: the box is the caller's alone before they run. */
void futoin__results_drop_slow(Flow* fl)
{
    ArgsBox* b = fl->results;
    fl->results = NULL;
    box_free(futoin__flow_ctx(fl), b);
}

/* Takes ownership of args' values (none: the flow has no results). The
 * new results are in place before the old ones' cleanups run. */
void futoin__results_set(Flow* fl, FutoInArgs* args)
{
    FutoInBinaryValue* a = args ? args->args : NULL;
    uint8_t n = !a ? 0 : a[3].type ? 4 : a[2].type ? 3 : a[1].type ? 2 : a[0].type ? 1 : 0;
    if (!n) {
        futoin__results_drop(fl);
        return;
    }
    ArgsBox* b = futoin__pool_get(&futoin__flow_ctx(fl)->boxes);
    b->args = *args;
    for (uint8_t i = 0; i < n; ++i) {
        if (!a[i].type) {
            memset(&b->args.args[i], 0, sizeof(FutoInBinaryValue)); /* a gap */
        }
    }
    b->nargs = n;
    ArgsBox* old = fl->results;
    fl->results = b;
    if (old) {
        box_free(futoin__flow_ctx(fl), old);
    }
}

static void queue_free(EngineCtx* ctx, Step* s)
{
    while (s) {
        Step* next = s->next;
        futoin__step_free(ctx, s);
        s = next;
    }
}

static void parallel_free(EngineCtx* ctx, Parallel* p)
{
    if (!p->started) {
        queue_free(ctx, p->b_head);
    }
    futoin__pool_put(&ctx->steps, p);
}

/* Releases a step that never started, with whatever it owns. */
void futoin__step_free(EngineCtx* ctx, Step* s)
{
    void* ext = futoin__step_ext(s);
    switch (futoin__step_kind(s)) {
    case SK_PARALLEL:
        parallel_free(ctx, ext);
        break;
    case SK_LOOP:
        loopspec_free(ctx, s); /* the node itself */
        return;
    case SK_VALUE:
        if (ext) {
            box_free(ctx, ext);
        }
        break;
    case SK_OWNED:
        ((StepOwner*)ext)->release(ext);
        break;
    default:
        break;
    }
    futoin__pool_put(&ctx->steps, s);
}

/* Deep copy for copyFrom(). *err is set when a step cannot be copied. */
static Step* step_copy_kind(EngineCtx* ctx, const Step* s, Flow* owner, const char** err);

Step* futoin__step_copy(EngineCtx* ctx, const Step* s, Flow* owner, const char** err)
{
    Step* c = step_copy_kind(ctx, s, owner, err);
#if FUTOIN_TRACING
    if (c) { /* where the model's step was added */
        c->file = s->file;
        c->line = s->line;
    }
#endif
    return c;
}

static Step* step_copy_kind(EngineCtx* ctx, const Step* s, Flow* owner, const char** err)
{
    void* ext = futoin__step_ext(s);
    switch (futoin__step_kind(s)) {
    case SK_OWNED:
        *err = "copyFrom(): an await() step cannot be copied";
        return NULL;
    case SK_PARALLEL: {
        const Parallel* src = ext;
        Parallel* p = futoin__parallel_new(ctx, owner);
        for (const Step* b = src->b_head; b; b = b->next) {
            Step* c = futoin__step_copy(ctx, b, owner, err);
            if (c) {
                if (p->b_tail) {
                    p->b_tail->next = c;
                } else {
                    p->b_head = c;
                }
                p->b_tail = c;
            }
        }
        ext = p;
        break;
    }
    case SK_LOOP:
        /* loop_fn is NULL for repeat(0) as well. */
        return futoin__loopspec_new(ctx, futoin__loop_label(s), s->loop_data, s->count,
                s->count ? NULL : s->loop_fn, s->count ? s->repeat_fn : NULL);
    case SK_VALUE:
        if (ext) {
            const ArgsBox* src = ext;
            ArgsBox* b = futoin__pool_get(&ctx->boxes);
            memset(b, 0, sizeof(*b));
            for (uint8_t i = 0; i < src->nargs; ++i) {
                if (src->args.args[i].type && src->args.args[i].type->cleanup) {
                    *err = "copyFrom(): a successStep() value with a cleanup cannot be copied";
                    continue;
                }
                b->args.args[i] = src->args.args[i];
            }
            b->nargs = src->nargs;
            ext = b;
        }
        break;
    default:
        break;
    }
    return futoin__step_new(ctx, futoin__step_kind(s), s->data, s->f, s->eh, ext);
}

/* ------------------------------------------------------------------------ */
/* Roots, flows, ready queue                                                 */

static void root_enter(Root* r)
{
    ++r->busy;
}

static inline void root_leave(Root* r);

void futoin__root_hold(Root* r)
{
    root_enter(r);
}

void futoin__root_unhold(Root* r)
{
    root_leave(r);
}

static void flow_recycle(EngineCtx* ctx, Flow* f)
{
    f->rq_next = ctx->free_flows;
    ctx->free_flows = f;
}

static inline void root_destroy(Root* r);
static void flow_init(Flow* fl, Root* r, int fresh);

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

/* Gives r the state futoin_asyncsteps_new() hands out, but for
 * free_pending, its pool link and add_fr. Done when a root is first made and
 * when it is destroyed, so that taking one from the pool is a pop. */
static inline void root_reset(Root* r, int fresh)
{
    r->state = RS_IDLE;
    r->cancelling = 0;
    if (fresh) {
        /* Read only while the root runs, and set by execute(): a
         * destroyed root keeps the last ones. */
        r->unhandled_data = NULL; /* flow_init() clears level 0's callback */
        r->busy = 0;
        flow_init(&r->main, r, 1);
        return;
    }
    /* A destroyed root: root_destroy() has already left these as a new
     * root has them (nothing runs, no state variables, no branches; the
     * flow finished or was aborted, so it holds no frame, queue, results,
     * code or ready-queue place). Only what that does not cover is
     * written. */
    Flow* fl = &r->main;
    assert(r->busy == 0
            && (!r->ext || (!r->ext->nvars && !r->ext->cap_vars && !r->ext->vars && !r->ext->zombies)));
    assert(fl->depth == 0 && !fl->in_rq && !fl->rq_next && !fl->rq_prev && !fl->results);
    assert(!fl->frames[0].q_head && !fl->frames[0].flags
            && fl->frames[0].kind == SK_PLAIN && futoin__flow_code(fl) == futoin__no_code
            && !fl->is_branch);
    ++fl->gen;
    flow_clear(fl, FS_IDLE);
}

/* The last engine frame of r left the C stack: released branch flows are
 * recycled and a free() that came meanwhile is carried out. */
static void recycle_zombies(Root* r)
{
    RootExt* x = r->ext;
    while (x && x->zombies) {
        Flow* z = x->zombies;
        x->zombies = futoin__branch(z)->sib_next;
        flow_recycle(futoin__root_ctx(r), z);
    }
}

static void root_left(Root* r)
{
    recycle_zombies(r);
    if (r->free_pending) {
        root_destroy(r);
    }
}

static inline void root_leave(Root* r)
{
    if (--r->busy == 0 && (r->free_pending || (r->ext && r->ext->zombies))) {
        root_left(r);
    }
}

/* Prepares a fresh or recycled flow. A recycled one keeps a grown frame
 * array and its generation count (bumped, so stale checks keep failing). */
static void flow_init(Flow* fl, Root* r, int fresh)
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
    fl->rq_next = fl->rq_prev = NULL;
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
    /* A recycled branch released its code in flow_release(). */
    memset(&fl->frames[0], 0, sizeof(Frame));
}

static void flow_free_frames(Flow* fl)
{
    if (fl->frames != fl->inline_frames) {
        free(fl->frames);
    }
}

static void dispatch(void* data);

static void schedule_dispatch(EngineCtx* ctx)
{
    if (!ctx->dispatch_scheduled) {
        ctx->dispatch_scheduled = 1;
        futoin__loop_post_local(ctx->loop, ctx, dispatch);
    }
}

static void rq_push(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    fl->state = FS_READY;
    if (fl->in_rq) {
        return;
    }
    fl->in_rq = 1;
    fl->rq_next = NULL;
    fl->rq_prev = ctx->rq_tail;
    if (ctx->rq_tail) {
        ctx->rq_tail->rq_next = fl;
    } else {
        ctx->rq_head = fl;
    }
    ctx->rq_tail = fl;
    if (!ctx->dispatching) {
        schedule_dispatch(ctx);
    }
}

static void rq_remove(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (!fl->in_rq) {
        return;
    }
    if (fl->rq_prev) {
        fl->rq_prev->rq_next = fl->rq_next;
    } else {
        ctx->rq_head = fl->rq_next;
    }
    if (fl->rq_next) {
        fl->rq_next->rq_prev = fl->rq_prev;
    } else {
        ctx->rq_tail = fl->rq_prev;
    }
    fl->in_rq = 0;
    fl->rq_next = fl->rq_prev = NULL;
}

static void dispatch(void* data)
{
    EngineCtx* ctx = data;
    ctx->dispatch_scheduled = 0;
    ++ctx->dispatching;
    ctx->budget = ctx->burst;
    while (ctx->budget && ctx->rq_head) {
        /* Pop the head (rq_remove() for the first element). */
        Flow* fl = ctx->rq_head;
        ctx->rq_head = fl->rq_next;
        if (fl->rq_next) {
            fl->rq_next->rq_prev = NULL;
            fl->rq_next = NULL;
        } else {
            ctx->rq_tail = NULL;
        }
        fl->in_rq = 0;
        Root* r = futoin__flow_root(fl);
        root_enter(r);
        if (fl->pending == PD_UNWIND) {
            unwind(fl);
        } else {
            advance(fl);
        }
        root_leave(r);
        if (ctx->budget) {
            --ctx->budget;
        }
    }
    --ctx->dispatching;
    /* Counted per burst, not per step: the budget it used. */
    ctx->n_steps += (uint64_t)ctx->burst - ctx->budget;
    if (ctx->rq_head) {
        schedule_dispatch(ctx);
    }
}

/* A root never handed out before: carved from the root slabs. */
__attribute__((noinline)) static Root* root_make(EngineCtx* ctx)
{
    Root* r = futoin__pool_try_get(&ctx->root_mem);
    if (r) {
        r->main.loop = ctx->loop; /* flow_init() keeps it */
        r->ext = NULL;
        root_reset(r, 1);
    }
    return r;
}

FutoInAsyncSteps* futoin_asyncsteps_new(FutoInLoop* loop)
{
    if (!loop) {
        return NULL;
    }
    EngineCtx* ctx = futoin__ctx_get(loop);
    Root* r = ctx->free_roots;
    if (r) {
        /* Reset when it was destroyed: unlinking is all that is left. */
        ctx->free_roots = (Root*)r->main.rq_next;
        r->main.rq_next = NULL;
    } else {
        r = root_make(ctx);
        if (!r) {
            return NULL;
        }
    }
    /* Counted while ctx is at hand (root_pool() takes it back). */
    ++ctx->n_roots;
    r->free_pending = 0;
    r->main.add_fr = &r->main.frames[0]; /* idle: add() appends to level 0 */
    return &r->main.iface;
}

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */

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
        fl->add_fr = NULL; /* the cache may point into the old array */
    }
    Frame* f = &fl->frames[++fl->depth];
    f->q_head = NULL;
    f->node = s;
    f->kind = futoin__step_kind(s);
    f->flags = 0;
#if FUTOIN_TRACING
    /* A loop's body shares the callback's place in the node. */
    f->fn = (void (*)(void))s->f;
    f->file = s->file;
    f->line = s->line;
#endif
    switch (f->kind) {
    case SK_LOOP:
        s->i = 0;
        break;
    case SK_SYNC:
        s->held = NULL;
        break;
    case SK_PLAIN:
    case SK_YIELD:
        if (!s->eh) {
            f->node = NULL; /* nothing of it is needed any more */
            futoin__pool_put(&futoin__flow_ctx(fl)->steps, s);
        }
        break;
    default:
        break;
    }
    return f;
}

static inline FrameExtra* xslot(EngineCtx* ctx, uint32_t id)
{
    return &ctx->xchunks[id / FUTOIN_XCHUNK][id % FUTOIN_XCHUNK];
}

/* The frame's extras, NULL if it has none. */
static inline FrameExtra* frame_xp(Flow* fl, const Frame* f)
{
    return f->flags & FR_X ? xslot(futoin__flow_ctx(fl), f->xid) : NULL;
}

/* Another chunk of unused extras, put in front of the free list. */
static void xtable_grow(EngineCtx* ctx)
{
    uint32_t n = ctx->nxchunks;
    if (n == FUTOIN_XNONE / FUTOIN_XCHUNK) {
        /* 2^32 frames with extras at once: over 200 GB, like an OOM. */
        fputs("futoin: out of frame extras\n", stderr);
        abort();
    }
    if ((n & (n - 1)) == 0) { /* 0, 1, 2, 4...: the array is full, double it */
        ctx->xchunks = futoin__xrealloc(ctx->xchunks, sizeof(*ctx->xchunks) * (n ? 2 * n : 1));
    }
    FrameExtra* chunk = futoin__xmalloc(sizeof(FrameExtra) * FUTOIN_XCHUNK);
    ctx->xchunks[n] = chunk;
    ctx->nxchunks = n + 1;
    uint32_t base = n * FUTOIN_XCHUNK;
    for (uint32_t i = 0; i + 1 < FUTOIN_XCHUNK; ++i) {
        chunk[i].next_free = base + i + 1;
    }
    chunk[FUTOIN_XCHUNK - 1].next_free = ctx->xfree;
    ctx->xfree = base;
}

/* The frame's extras, made on first use. */
static inline FrameExtra* frame_x(Flow* fl, Frame* f)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (f->flags & FR_X) {
        return xslot(ctx, f->xid);
    }
    if (ctx->xfree == FUTOIN_XNONE) {
        xtable_grow(ctx);
    }
    uint32_t id = ctx->xfree;
    FrameExtra* x = xslot(ctx, id);
    ctx->xfree = x->next_free;
    memset(x, 0, sizeof(*x));
    f->xid = id;
    f->flags |= FR_X;
    return x;
}

static void frame_stop_timer_x(Flow* fl, Frame* f, FrameExtra* x)
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

static void stack_free(EngineCtx* ctx, StackBlock** head)
{
    while (*head) {
        StackBlock* b = *head;
        *head = b->hdr.h.next;
        if (b->hdr.h.cleanup) {
            b->hdr.h.cleanup(b + 1);
        }
        if (b->hdr.h.pooled) {
            futoin__pool_put(&ctx->stacks, b);
        } else {
            free(b);
        }
    }
}

/* Releases what a frame that is off the stack (or level 0 at the end of
 * a flow) still holds out of line: stack() memory, then the record. */
static inline void frame_x_release(EngineCtx* ctx, Frame* f)
{
    if (f->flags & FR_X) {
        uint32_t id = f->xid;
        FrameExtra* x = xslot(ctx, id);
        StackBlock* stack = x->stack;
        f->flags &= (uint8_t)~FR_X;
        x->next_free = ctx->xfree;
        ctx->xfree = id;
        if (stack) { /* cleanups are user code: x is not used after them */
            stack_free(ctx, &stack);
        }
    }
}

void* futoin__flow_stack(Flow* fl, size_t size, void (*cleanup)(void*))
{
    Frame* f = &fl->frames[fl->depth];
    StackBlock* b;
    if (size <= STACK_POOLED_SIZE) {
        b = futoin__pool_get(&futoin__flow_ctx(fl)->stacks);
        memset(b + 1, 0, size);
        b->hdr.h.pooled = 1;
    } else {
        /* No object may be larger than PTRDIFF_MAX (pointer differences
         * within it must be defined), and the header must not wrap the
         * size around: anything larger is a block that cannot be had. */
        b = size <= PTRDIFF_MAX - sizeof(StackBlock) ? calloc(1, sizeof(StackBlock) + size) : NULL;
        if (!b) {
            return NULL;
        }
        b->hdr.h.pooled = 0;
    }
    FrameExtra* x = frame_x(fl, f);
    b->hdr.h.cleanup = cleanup;
    b->hdr.h.next = x->stack;
    x->stack = b;
    return b + 1;
}

/* futoin_set_wait_info(): the text lives in a stack() block of the step,
 * told apart by this cleanup, so it costs nothing to steps that do not
 * use it and goes away with the step. */
void futoin__wait_info_block(void* value)
{
    (void)value;
}

int futoin__flow_wait_info(Flow* fl, const char* what)
{
    size_t len = strlen(what);
    char* copy = futoin__flow_stack(fl, len + 1, futoin__wait_info_block);
    if (!copy) {
        return -1;
    }
    memcpy(copy, what, len + 1);
    return 0;
}

/* Introspection: the futoin_set_wait_info() text of the frame at level d
 * (its latest one), NULL if it has none. */
const char* futoin__frame_wait_info(Flow* fl, uint32_t d)
{
    const Frame* f = &fl->frames[d];
    if (!(f->flags & FR_X)) {
        return NULL;
    }
    for (StackBlock* b = xslot(futoin__flow_ctx(fl), f->xid)->stack; b; b = b->hdr.h.next) {
        if (b->hdr.h.cleanup == futoin__wait_info_block) {
            return (const char*)(b + 1);
        }
    }
    return NULL;
}

/* The innermost wait description of the frames k..depth of fl: the latest
 * block of the highest frame that has one. */
static const char* wait_info_of(Flow* fl, uint32_t k)
{
    for (uint32_t d = fl->depth + 1; d-- > k;) {
        FrameExtra* x = frame_xp(fl, &fl->frames[d]);
        for (StackBlock* b = x ? x->stack : NULL; b; b = b->hdr.h.next) {
            if (b->hdr.h.cleanup == futoin__wait_info_block) {
                return (const char*)(b + 1);
            }
        }
    }
    return "";
}

/* Calls a cancel handler with the flow in the CANCEL context. */
static void call_cancel(Flow* fl, Frame* f)
{
    FrameExtra* x = frame_xp(fl, f);
    FutoInAsyncSteps_cancel_callback ch = x ? x->on_cancel : NULL;
    if (!ch) {
        return;
    }
    x->on_cancel = NULL;
    uint8_t saved = fl->cb;
    Frame* saved_fr = fl->add_fr;
    uint32_t gen = fl->gen;
    fl->cb = CB_CANCEL;
    fl->add_fr = NULL;
    ch(&fl->iface, x->cancel_data);
    if (gen == fl->gen) { /* else aborted or revived: its state is new */
        fl->cb = saved;
        fl->add_fr = saved_fr;
    }
}

static void flow_release(Flow* fl);

/* The engine owes unlock() once lock() succeeded; it runs in the CANCEL
 * context (nothing may be added to the flow from inside it). */
static int call_unlock(Flow* fl, FutoInSync* sync)
{
    uint8_t saved = fl->cb;
    Frame* saved_fr = fl->add_fr;
    uint32_t gen = fl->gen;
    fl->cb = CB_CANCEL;
    fl->add_fr = NULL;
    sync->api->unlock(&fl->iface, sync);
    if (gen != fl->gen) {
        return 0; /* aborted or revived meanwhile: its state is new */
    }
    fl->cb = saved;
    fl->add_fr = saved_fr;
    return 1;
}

static int flow_unwind_to(Flow* base, uint32_t k);

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

/* The step on top of fl ends. aborted: it did not complete, so its cancel
 * handler runs. Either way timers stop, queued sub-steps and stack memory
 * are released and a held sync lock is unlocked.
 * The frame is taken off the stack before any user code runs, so a cancel
 * handler or unlock() that cancels or frees the root cannot pop it twice. */
/* Stops the timer of a frame taken off the stack (FR_TIMER). */
static inline void popped_timer_stop(EngineCtx* ctx, const Frame* f)
{
    FutoInHandle h = futoin__loop_handle(ctx->loop, xslot(ctx, f->xid)->timer);
    futoin__loop_cancel_local(ctx->loop, &h);
}

static int frame_pop_slow(Flow* fl, int aborted)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (!aborted && (fl->frames[fl->depth].flags & FR_X)
            && fl->frames[fl->depth].kind == SK_PLAIN && !fl->frames[fl->depth].node
            && !fl->frames[fl->depth].q_head && !xslot(ctx, fl->frames[fl->depth].xid)->stack) {
        /* A completed plain step that kept only a timer or a spent cancel
         * handler (setTimeout()): no user code runs, so nothing is to be
         * re-checked after. */
        Frame f = fl->frames[fl->depth--];
        if (f.flags & FR_TIMER) {
            popped_timer_stop(ctx, &f);
        }
        frame_x_release(ctx, &f);
        return 1;
    }
    uint32_t gen = fl->gen;
    if (aborted && live_branches(fl)) {
        /* Every caller has already aborted them (flow_unwind_to()); were
         * one not to, they go first, without nesting C calls per level.
         * (A parallel that completed has none left.) */
        if (!flow_unwind_to(fl, fl->depth) || gen != fl->gen) {
            return 0;
        }
    }
    Frame f = fl->frames[fl->depth--];
    if (f.flags & FR_TIMER) {
        popped_timer_stop(ctx, &f);
    }
    if (aborted) {
        call_cancel(fl, &f);
    }
    queue_free(ctx, f.q_head);
    Step* node = f.node;
    switch (f.kind) {
    case SK_PARALLEL:
        /* Its branches are gone: see frame_pop_slow() and flow_unwind_to(). */
        assert(!((Parallel*)futoin__step_ext(node))->started
                || !((Parallel*)futoin__step_ext(node))->branches);
        futoin__step_free(ctx, node); /* and the Parallel */
        break;
    case SK_SYNC: {
        FutoInSync* sync = futoin__step_ext(node);
        if (node->held) {
            box_free(ctx, node->held);
        }
        futoin__pool_put(&ctx->steps, node);
        if (f.flags & FR_LOCKED) {
            call_unlock(fl, sync);
        }
        break;
    }
    default:
        /* The rest own nothing a started step has not used up but their
         * owner (SK_OWNED), loop label (SK_LOOP) or unused value. */
        if (node) {
            futoin__step_free(ctx, node);
        }
        break;
    }
    /* Last: a cancel handler may still use the step's stack memory. */
    frame_x_release(ctx, &f);
    return gen == fl->gen;
}

/* ------------------------------------------------------------------------ */
/* Running callbacks                                                         */

/* Calls an execute-style callback for the top frame and reports whether the
 * flow survived it (0: it was aborted or released meanwhile). */
typedef enum { CALL_EXEC, CALL_LOOP, CALL_REPEAT, CALL_LOCK } CallKind;

/* What a step start or completion left the flow in. */
enum { GO_ON = 0, /* no user callback ran: keep advancing */
    HANDLED,      /* a callback ran; the flow is parked, requeued or gone */
    CONTINUE };   /* a callback ran and the flow can take its next step */

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
    if (gen == fl->gen && (fl->out == OUT_SUCCESS || fl->out == OUT_ERROR) && (f->flags & FR_X)) {
        FrameExtra* x = frame_xp(fl, f);
        if (x) {
            x->on_cancel = NULL;
        }
    }
    box_free(futoin__flow_ctx(fl), in);
}

/* Calls an execute-style callback for the top frame and reports whether the
 * flow survived it (0: it was aborted or released meanwhile). The incoming
 * results move to the C stack for the call, so a flow holds only the
 * results waiting for its next step. */
static inline int call_step(
        Flow* fl, Frame* f, CallKind kind, FutoInAsyncSteps_execute_callback fn, void* data)
{
    uint32_t gen = fl->gen;
    ArgsBox* in = fl->results;
    const FutoInArgs* pin = &no_args;
    if (in) {
        fl->results = NULL;
        pin = &in->args;
    }
    fl->cb = CB_EXEC;
    fl->out = OUT_NONE;
    fl->add_fr = f;
    /* Single writer: a plain increment, published for other threads. */
    atomic_store_explicit(&fl->xepoch,
            atomic_load_explicit(&fl->xepoch, memory_order_relaxed) + 1, memory_order_release);
    switch (kind) {
    case CALL_EXEC:
        fn(&fl->iface, data, pin);
        break;
    case CALL_LOOP: {
        LoopSpec* l = f->node;
        l->loop_fn(&fl->iface, l->loop_data);
        break;
    }
    case CALL_REPEAT: {
        LoopSpec* l = f->node;
        l->repeat_fn(&fl->iface, l->loop_data, l->i);
        break;
    }
    case CALL_LOCK: {
        FutoInSync* sync = futoin__step_ext(f->node);
        sync->api->lock(&fl->iface, sync);
        break;
    }
    }
    if (in) {
        input_drop(fl, f, in, gen);
    }
    if (gen != fl->gen) {
        return 0;
    }
    fl->cb = CB_NONE;
    fl->add_fr = NULL;
    return 1;
}

/* lock() of a sync step succeeded: from now on the engine owes unlock(),
 * whatever happens before the critical section gets its turn. */
static void lock_acquired(Flow* fl, Frame* f)
{
    f->flags = (uint8_t)((f->flags & ~(FR_LOCK_PHASE | FR_WAIT)) | FR_LOCKED);
    frame_settle(fl, f);
}

/* lock() of the sync frame f is done: the critical section becomes the
 * frame's sub-step and gets the results that came into the sync step
 * (whatever lock() itself produced is dropped). */
static inline int enter_section(Flow* fl, Frame* f)
{
    if (f->flags & FR_LOCK_PHASE) {
        lock_acquired(fl, f);
    }
    Step* s = f->node;
    ArgsBox* dropped = fl->results;
    fl->results = s->held;
    s->held = NULL;
    f->flags |= FR_SECTION;
    futoin__queue_step(fl, f,
            futoin__step_new(futoin__flow_ctx(fl), SK_PLAIN, s->data, s->f, s->eh, NULL));
    if (dropped) { /* user cleanups: last */
        uint32_t gen = fl->gen;
        box_free(futoin__flow_ctx(fl), dropped);
        return gen == fl->gen;
    }
    return 1;
}

/* Decides what happens after an execute callback of the top frame returned. */
static int exec_outcome(Flow* fl)
{
    Frame* f = &fl->frames[fl->depth];
    switch (fl->out) {
    case OUT_ERROR:
        if (start_unwind(fl, fl->depth, 1)) {
            unwind(fl);
        }
        return HANDLED;
    case OUT_BREAK:
    case OUT_CONTINUE:
        fl->ctl = fl->out == OUT_BREAK ? CTL_BREAK : CTL_CONTINUE;
        if (start_unwind(fl, fl->depth, 1)) {
            unwind(fl);
        }
        return HANDLED;
    case OUT_SUCCESS:
        /* The step is complete now, though its frame is popped only on the
         * flow's next turn: other flows, the loop's timers or a root cancel
         * may come first, and must not see its timeout or cancel handler. */
        if (f->flags & FR_LOCK_PHASE) {
            lock_acquired(fl, f);
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
            lock_acquired(fl, f);
        }
        return CONTINUE; /* implicit success */
    }
}

static int keep_turn(EngineCtx* ctx);

/* Runs iterations of the loop on top of fl. While an iteration's body
 * completes at once and leaves nothing behind (no sub-steps, results,
 * timer, cancel handler or stack memory), the next one starts right here,
 * for as long as the flow keeps its turn: the same order and budget as
 * going round advance(), without its per-iteration bookkeeping. */
static int run_iteration(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    Frame* f = &fl->frames[fl->depth];
    LoopSpec* l = f->node;
    /* Results of the previous iteration are not an input of the next. */
    if (fl->results) {
        uint32_t gen = fl->gen;
        futoin__results_drop_slow(fl);
        if (gen != fl->gen) {
            return HANDLED;
        }
    }
    if (!call_step(fl, f, l->count ? CALL_REPEAT : CALL_LOOP, NULL, NULL)) {
        return HANDLED;
    }
    for (;;) {
        if (fl->out != OUT_NONE || f->q_head || f->flags) {
            return exec_outcome(fl);
        }
        /* The last iteration, or the turn ends: frame_complete() takes
         * it from here (it counts the iteration just run). */
        if ((l->count && l->i + 1 >= l->count) || !keep_turn(ctx)) {
            return CONTINUE;
        }
        ++l->i;
        /* call_step() for a clean previous iteration: no results to pass
         * or drop, and the outcome is already OUT_NONE. */
        uint32_t gen = fl->gen;
        fl->cb = CB_EXEC;
        fl->add_fr = f;
        atomic_store_explicit(&fl->xepoch,
                atomic_load_explicit(&fl->xepoch, memory_order_relaxed) + 1, memory_order_release);
        if (l->count) {
            l->repeat_fn(&fl->iface, l->loop_data, l->i);
        } else {
            l->loop_fn(&fl->iface, l->loop_data);
        }
        if (gen != fl->gen) {
            return HANDLED;
        }
        fl->cb = CB_NONE;
        fl->add_fr = NULL;
    }
}

/* Per-iteration state of a loop frame is that of a fresh step. */
static int iteration_reset_slow(Flow* fl, Frame* f)
{
    uint32_t gen = fl->gen;
    Step* queued = f->q_head;
    f->q_head = NULL;
    f->flags &= (uint8_t)~FR_WAIT;
    /* What the iteration held is taken off the frame, then released: the
     * cleanups are user code. */
    Frame spent = *f;
    if (f->flags & FR_X) {
        frame_stop_timer(fl, f);
        f->flags &= (uint8_t)~FR_X;
    }
    if (queued) {
        queue_free(futoin__flow_ctx(fl), queued);
    }
    frame_x_release(futoin__flow_ctx(fl), &spent);
    return gen == fl->gen;
}

/* Inline for the iteration that left only its wait behind (a loop that
 * parks on every turn): no call, no queue, no extras. Returns 0 if a
 * cleanup aborted the flow. */
static inline int iteration_reset(Flow* fl, Frame* f)
{
    if (f->q_head || (f->flags & FR_X)) {
        return iteration_reset_slow(fl, f);
    }
    f->flags &= (uint8_t)~FR_WAIT;
    return 1;
}

static void yield_resume(void* data, uintptr_t depth)
{
    Flow* fl = data;
    Frame* f = &fl->frames[depth];
    f->flags &= (uint8_t)~(FR_TIMER | FR_WAIT);
    frame_xp(fl, f)->timer.slot = 0;
    rq_push(fl);
}

static void start_parallel(Flow* fl, Frame* f)
{
    Parallel* p = futoin__step_ext(f->node);
    Root* r = futoin__flow_root(fl);
    EngineCtx* ctx = futoin__root_ctx(r);
    /* The branch steps become branch flows, in the same words. */
    Step* queued = p->b_head;
    p->started = 1;
    p->branches = NULL;
    p->pending = 0;
    /* Parallel branches take no input (dropped last: user cleanups). */
    ArgsBox* dropped = fl->results;
    fl->results = NULL;
    Flow** tail = &p->branches;
    while (queued) {
        Step* s = queued;
        queued = s->next;
        s->next = NULL;
        Flow* b = ctx->free_flows;
        int fresh = 0;
        if (b) {
            ctx->free_flows = b->rq_next;
        } else {
            b = futoin__pool_get(&ctx->branch_mem);
            fresh = 1;
        }
        flow_init(b, r, fresh);
        b->is_branch = 1;
        futoin__branch(b)->root = r;
        if (fresh) {
            futoin__branch(b)->code = futoin__no_code;
        }
        futoin__branch(b)->parent = fl;
        futoin__branch(b)->par = p;
        futoin__branch(b)->sib_next = NULL;
        futoin__queue_step(b, &b->frames[0], s);
        *tail = b;
        tail = &futoin__branch(b)->sib_next;
        ++p->pending;
    }
    if (!p->pending) {
        rq_push(fl);
    } else {
        f->flags |= FR_PAR_WAIT;
        fl->state = FS_WAIT;
        for (Flow* b = p->branches; b; b = futoin__branch(b)->sib_next) {
            rq_push(b);
        }
    }
    if (dropped) {
        box_free(ctx, dropped);
    }
}

/* Starts the frame just pushed: GO_ON, HANDLED or CONTINUE. */
static int start_frame(Flow* fl, FutoInAsyncSteps_execute_callback fn, void* data)
{
    Frame* f = &fl->frames[fl->depth];
    switch (f->kind) {
    case SK_PLAIN:
    case SK_OWNED:
        return call_step(fl, f, CALL_EXEC, fn, data) ? exec_outcome(fl) : HANDLED;
    case SK_LOOP: {
        LoopSpec* l = f->node;
        if (!l->loop_fn) {
            /* repeat(0) completes at once, as a finished loop does. */
            uint32_t gen = fl->gen;
            futoin__results_drop(fl);
            return gen == fl->gen && frame_pop(fl, 0) ? GO_ON : HANDLED;
        }
        return run_iteration(fl);
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
        if (fl->out == OUT_NONE && !f->q_head && !(f->flags & FR_WAIT)) {
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
            uint32_t gen = fl->gen;
            box_free(futoin__flow_ctx(fl), dropped);
            return gen == fl->gen ? GO_ON : HANDLED;
        }
        return GO_ON;
    }
    case SK_YIELD:
        f->flags |= FR_WAIT | FR_TIMER;
        frame_x(fl, f)->timer = futoin__loop_ref(
                futoin__loop_immediate2(fl->loop, fl, fl->depth, yield_resume));
        fl->state = FS_WAIT;
        return HANDLED;
    default:
        return GO_ON;
    }
}

/* The top frame (not level 0) finished without error: GO_ON once it is
 * popped (or has new sub-steps), or the result of the next loop iteration. */
static int frame_complete(Flow* fl)
{
    Frame* f = &fl->frames[fl->depth];
    if (f->kind == SK_LOOP) {
        LoopSpec* l = f->node;
        if (!iteration_reset(fl, f)) {
            return HANDLED;
        }
        ++l->i;
        if (!l->count || l->i < l->count) {
            return run_iteration(fl);
        }
        if (fl->results) {
            uint32_t gen = fl->gen;
            futoin__results_drop_slow(fl);
            if (gen != fl->gen) {
                return HANDLED;
            }
        }
    } else if (f->kind == SK_SYNC && !(f->flags & FR_SECTION)) {
        /* lock() done: run the critical section as this frame's sub-step,
         * with the results that came into the sync step. */
        return enter_section(fl, f) ? GO_ON : HANDLED; /* lock() completed through sub-steps */
    } else if (f->kind == SK_SYNC && !(f->flags & FR_X)) {
        /* The critical section is done: pop the frame, then unlock() (it
         * may wake other flows, never this one). */
        FutoInSync* sync = futoin__step_ext(f->node);
        uint8_t locked = f->flags & FR_LOCKED;
        futoin__pool_put(&futoin__flow_ctx(fl)->steps, f->node);
        --fl->depth;
        if (locked) {
            return call_unlock(fl, sync) ? GO_ON : HANDLED;
        }
        return GO_ON;
    }
    return frame_pop(fl, 0) ? GO_ON : HANDLED;
}

static void branch_unlink(Flow* fl)
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
    Flow* parent = futoin__branch(fl)->parent;
    ArgsBox* res = fl->results;
    fl->results = NULL;
    branch_unlink(fl);
    if (--p->pending == 0) {
        Frame* pf = &parent->frames[parent->depth];
        pf->flags &= (uint8_t)~FR_PAR_WAIT;
        rq_push(parent);
    }
    flow_release(fl);
    if (res) {
        box_free(futoin__flow_ctx(parent), res);
    }
}

/* Branch flow failed: the siblings are cancelled and the parallel step
 * fails in the parent flow with the same error (or break/continue). */
static void branch_failed(Flow* fl)
{
    Flow* parent = futoin__branch(fl)->parent;
    branch_unlink(fl);
    futoin__flow_set_code(parent, futoin__flow_code(fl));
    parent->ctl = fl->ctl;
    uint32_t gen = parent->gen;
    flow_release(fl);
    /* The siblings, with the frame left in place (start_unwind() would
     * call a cancel handler of it; a parallel frame has none). */
    if (gen != parent->gen || !flow_unwind_to(parent, parent->depth)) {
        return; /* a cleanup or cancel handler cancelled or freed the root */
    }
    Frame* pf = &parent->frames[parent->depth];
    pf->flags &= (uint8_t)~FR_PAR_WAIT;
    if (start_unwind(parent, parent->depth, 1)) {
        rq_push(parent);
    }
}

/* The root's run ended (r->state says how). What it still holds is taken
 * off it before any of it is released: the cleanups are user code, which
 * may free the root or execute it again. */
__attribute__((noinline)) static void root_finish_slow(Root* r, const char* code)
{
    Flow* fl = &r->main;
    EngineCtx* ctx = futoin__root_ctx(r);
    Step* queued = fl->frames[0].q_head;
    ArgsBox* res = fl->results;
    Frame level0 = fl->frames[0];
    fl->frames[0].q_head = NULL;
    fl->frames[0].flags &= (uint8_t)~FR_X;
    fl->results = NULL;
    RootDoneHook hook = futoin__root_done(r);
    if (hook) { /* while code and the results are still as they ended */
        r->ext->done = NULL;
        hook(r->ext->done_data, r, code, res ? &res->args : NULL);
    }
    if (queued) {
        queue_free(ctx, queued);
    }
    frame_x_release(ctx, &level0);
    if (res) {
        box_free(ctx, res);
    }
}

/* Inline for a root that ends holding nothing: no queued step, results,
 * level-0 extras or completion hook. */
static inline void root_finish(Root* r, const char* code)
{
    Flow* fl = &r->main;
    fl->state = FS_DONE;
    if (fl->frames[0].q_head || (fl->frames[0].flags & FR_X) || fl->results || futoin__root_done(r)) {
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
static void flow_failed(Flow* fl)
{
    if (fl->is_branch) {
        branch_failed(fl);
        return;
    }
    Root* r = futoin__flow_root(fl);
    if (fl->ctl) {
        /* Cannot happen for a validated break: report it as misuse. */
        futoin__flow_set_code(fl, FUTOIN_INTERNAL_ERROR);
        fl->ctl = CTL_NONE;
    }
    r->state = RS_FAILED;
    ++futoin__root_ctx(r)->n_unhandled;
    Step* queued = fl->frames[0].q_head;
    fl->frames[0].q_head = NULL;
    queue_free(futoin__root_ctx(r), queued);
    futoin__results_drop(fl);
    if (r->state != RS_FAILED) {
        return; /* a cleanup just now executed the root again */
    }
    if (r->free_pending) {
        /* A cleanup just now freed the root: nothing of it is called. */
        root_finish(r, futoin__flow_code(fl));
        return;
    }
    FutoInAsyncSteps_error_callback unhandled = fl->frames[0].unhandled;
    if (unhandled) {
        uint32_t gen = fl->gen;
        fl->cb = CB_FINAL;
        fl->add_fr = NULL;
        unhandled(&fl->iface, r->unhandled_data, futoin__flow_code(fl));
        if (gen != fl->gen) {
            return;
        }
        fl->cb = CB_NONE;
    } else if (!futoin__root_done(r)) {
        char buf[200];
        snprintf(buf, sizeof(buf), "unhandled error %.64s (%.100s)", futoin__flow_code(fl),
                futoin__root_info(r));
        futoin__root_ctx(r)->misuse(futoin__root_ctx(r)->misuse_data, &fl->iface, buf);
    }
    if (r->state == RS_FAILED) {
        root_finish(r, futoin__flow_code(fl));
    }
}

/* Keeps running the same flow in the current turn only while no other flow
 * is ready and the burst lasts: concurrent flows still take turns step by
 * step, and a lone flow runs its steps back to back. */
static int keep_turn(EngineCtx* ctx)
{
    if (ctx->rq_head || ctx->budget <= 1) {
        return 0;
    }
    --ctx->budget;
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

static void advance(Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    for (;;) {
        Frame* top = &fl->frames[fl->depth];
        int r;
        Step* s = top->q_head;
        if (s && futoin__step_kind(s) == SK_PLAIN && fl->depth + 1 < fl->cap) {
            /* The common step, started and completed with the fewest
             * writes: a plain step whose callback neither waits nor leaves
             * anything behind is popped at once. */
            Frame* f = top + 1;
            FutoInAsyncSteps_execute_callback fn = s->f;
            void* data = s->data;
            top->q_head = s->next;
            ++fl->depth;
            f->q_head = NULL;
            f->kind = SK_PLAIN;
            f->flags = 0;
#if FUTOIN_TRACING
            f->fn = (void (*)(void))fn;
            f->file = s->file;
            f->line = s->line;
#endif
            if (s->eh) {
                f->node = s; /* its eh and data are the frame's handler */
            } else {
                f->node = NULL;
                futoin__pool_put(&ctx->steps, s);
            }
            if (!call_step(fl, f, CALL_EXEC, fn, data)) {
                return;
            }
            if (fl->out <= OUT_SUCCESS && !f->q_head && !f->flags) {
                if (f->node) {
                    futoin__pool_put(&ctx->steps, f->node);
                }
                --fl->depth;
                r = CONTINUE;
            } else {
                r = exec_outcome(fl);
            }
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
            r = start_frame(fl, fn, data);
        } else if (fl->depth == 0) {
            flow_finished(fl);
            return;
        } else if (top->flags & (FR_WAIT | FR_PAR_WAIT)) {
            fl->state = FS_WAIT;
            return;
        } else {
            r = frame_complete(fl);
        }
        if (r == GO_ON || (r == CONTINUE && keep_turn(ctx))) {
            continue;
        }
        if (r == CONTINUE) {
            rq_push(fl);
        }
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Errors, break and continue                                                */

/* An error was raised at frame k: the frames above k are aborted innermost
 * first; frame k's own work stops (own: the step failed by itself, so its
 * cancel handler is dropped; else, e.g. a timeout, it is called). Returns 0
 * if a cancel handler aborted the whole flow meanwhile. */
static int start_unwind(Flow* fl, uint32_t k, int own)
{
    uint32_t gen = fl->gen;
    /* The frames above k and, if frame k is a parallel, its branches. */
    if ((fl->depth > k || live_branches(fl)) && !flow_unwind_to(fl, k)) {
        return 0;
    }
    Frame* f = &fl->frames[k];
    frame_stop_timer(fl, f);
    if (own) {
        if (f->flags & FR_X) {
            frame_xp(fl, f)->on_cancel = NULL;
        }
    } else {
        call_cancel(fl, f);
        if (gen != fl->gen) {
            return 0;
        }
        f = &fl->frames[k];
    }
    Step* queued = f->q_head;
    ArgsBox* dropped = fl->results;
    f->q_head = NULL;
    f->flags &= (uint8_t)~(FR_WAIT | FR_PAR_WAIT);
    fl->results = NULL;
    fl->pending = PD_UNWIND;
    if (queued || dropped) { /* user cleanups, once the flow is consistent */
        EngineCtx* ctx = futoin__flow_ctx(fl);
        queue_free(ctx, queued);
        if (dropped) {
            box_free(ctx, dropped);
        }
        return gen == fl->gen;
    }
    return 1;
}

/* The frame's error handler, if its step had one. A sync frame's node
 * holds the critical section's, which belongs to the section's own frame. */
static inline FutoInAsyncSteps_error_callback frame_eh(const Frame* f)
{
    return f->node && f->kind != SK_LOOP && f->kind != SK_SYNC ? f->node->eh : NULL;
}

static int label_matches(const LoopSpec* l, const char* label)
{
    if (!label || !*label) {
        return 1;
    }
    const char* own = futoin__loop_label(l);
    return own && strcmp(own, label) == 0;
}

/* Walks the stack from the top, calling error handlers (not for
 * break/continue), until the error is handled or escapes the flow. */
static void unwind(Flow* fl)
{
    fl->pending = PD_NEXT;
    for (;;) {
        if (fl->depth == 0) {
            flow_failed(fl);
            return;
        }
        Frame* f = &fl->frames[fl->depth];
        if (fl->ctl && f->kind == SK_LOOP
                && label_matches(f->node, futoin__flow_code(fl))) {
            uint8_t ctl = fl->ctl;
            uint32_t gen = fl->gen;
            fl->ctl = CTL_NONE;
            /* The iteration is abandoned: a cancel handler the body left
             * armed runs (the breaking step's own one was dropped). */
            if (ctl == CTL_BREAK) {
                frame_pop(fl, 1);
            } else {
                call_cancel(fl, f);
                if (gen == fl->gen) {
                    (void)iteration_reset(fl, &fl->frames[fl->depth]);
                }
            }
            if (gen == fl->gen) {
                /* CONTINUE: the loop frame is empty, so advance() completes
                 * the iteration and starts the next one. */
                rq_push(fl);
            }
            return;
        }
        /* Sub-steps of this frame that have not started yet are abandoned
         * with it: the error handler must see an empty queue, or it could
         * neither call success() nor tell its own added steps from them. */
        if (f->q_head) {
            Step* queued = f->q_head;
            uint32_t gen = fl->gen;
            f->q_head = NULL;
            queue_free(futoin__flow_ctx(fl), queued);
            if (gen != fl->gen) {
                return;
            }
            f = &fl->frames[fl->depth];
        }
        FutoInAsyncSteps_error_callback eh = frame_eh(f);
        if (!fl->ctl && eh && !(f->flags & FR_EH_USED)) {
            f->flags |= FR_EH_USED;
            uint32_t gen = fl->gen;
            fl->cb = CB_ERROR;
            fl->out = OUT_NONE;
            fl->add_fr = f;
            eh(&fl->iface, f->node->data, futoin__flow_code(fl));
            if (gen != fl->gen) {
                return;
            }
            fl->cb = CB_NONE;
            fl->add_fr = NULL;
            f = &fl->frames[fl->depth];
            switch (fl->out) {
            case OUT_SUCCESS:
                if (frame_pop(fl, 0)) {
                    rq_push(fl);
                }
                return;
            case OUT_ERROR:
                break; /* new code already stored; keep unwinding */
            case OUT_BREAK:
            case OUT_CONTINUE:
                fl->ctl = fl->out == OUT_BREAK ? CTL_BREAK : CTL_CONTINUE;
                break;
            default:
                if (f->q_head) {
                    /* Steps added in an error handler replace the step. */
                    rq_push(fl);
                    return;
                }
                break;
            }
        }
        if (!frame_pop(fl, 1)) {
            return;
        }
    }
}

int futoin__find_loop(Flow* fl, const char* label)
{
    if (label && !*label) {
        label = NULL;
    }
    for (Flow* cur = fl; cur; cur = cur->is_branch ? futoin__branch(cur)->parent : NULL) {
        for (uint32_t d = cur->depth; d > 0; --d) {
            Frame* f = &cur->frames[d];
            if (f->kind == SK_LOOP && label_matches(f->node, label)) {
                return 1;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Operations requested through the ABI (context already validated)         */

static inline int args_need_cleanup(const FutoInArgs* a)
{
    for (int i = 0; i < 4; ++i) {
        if (a->args[i].type && a->args[i].type->cleanup) {
            return 1;
        }
    }
    return 0;
}

/* success(args) of a loop body whose values are dropped: the step
 * completes with no result first, then the values' cleanups run, so a
 * cleanup that cancels or frees the root finds the step done (no cancel
 * handler for it). */
__attribute__((noinline)) static void success_then_drop(Flow* fl, FutoInArgs* args)
{
    /* The caller's args stay valid until its success() returns, and are
     * not cleared (the caller's holders are left as they are). Held: a
     * cleanup that frees the root must not destroy it under the others. */
    Root* r = futoin__flow_root(fl);
    root_enter(r);
    futoin__flow_success(fl, NULL);
    args_release(args, 4);
    root_leave(r);
}

void futoin__flow_success(Flow* fl, FutoInArgs* args)
{
    Frame* f = &fl->frames[fl->depth];
    if (f->kind == SK_LOOP && args) {
        /* A loop body's own results go nowhere: not into the next
         * iteration, nor past the loop. Like results_set(), this takes
         * the values over without clearing the caller's holders. Their
         * cleanups are user code that may cancel or free the root: they
         * run once the step is complete (success_then_drop). */
        if (args_need_cleanup(args)) {
            success_then_drop(fl, args);
            return;
        }
        args = NULL;
    }
    if (fl->cb == CB_EXEC || fl->cb == CB_ERROR) {
        fl->out = OUT_SUCCESS;
        fl->add_fr = NULL;
        futoin__results_set(fl, args);
        return;
    }
    /* External completion of a waiting step: resume on the next round.
     * One test of the flags for the common waiter, which holds no lock
     * phase, timer or cancel handler. */
    if (f->flags & (FR_LOCK_PHASE | FR_X)) {
        if (f->flags & FR_LOCK_PHASE) {
            lock_acquired(fl, f);
        }
        frame_settle(fl, f);
    }
    f->flags &= (uint8_t)~FR_WAIT;
    fl->pending = PD_NEXT;
    rq_push(fl);
    if (fl->results) {
        /* Last: results it replaces have cleanups, which are user code;
         * held, so that one that frees the root does not destroy it under
         * the others. */
        Root* r = futoin__flow_root(fl);
        root_enter(r);
        futoin__results_set(fl, args);
        root_leave(r);
    } else if (args) {
        futoin__results_set(fl, args);
    }
}

void futoin__flow_error(Flow* fl, const char* code, const char* info)
{
    ++futoin__flow_ctx(fl)->n_errors;
    futoin__trace_capture(fl, fl->depth);
    futoin__flow_set_code(fl, code);
    futoin__set_info(futoin__flow_root(fl), info);
    if (fl->cb == CB_EXEC || fl->cb == CB_ERROR) {
        fl->out = OUT_ERROR;
        fl->ctl = CTL_NONE;
        fl->add_fr = NULL;
        return;
    }
    fl->ctl = CTL_NONE;
    /* From outside the engine: the unwind runs user code (cleanups), which
     * may free the root; that takes effect once the unwind is done. */
    Root* r = futoin__flow_root(fl);
    root_enter(r);
    if (start_unwind(fl, fl->depth, 1)) {
        rq_push(fl);
    }
    root_leave(r);
}

static void on_timeout(void* data, uintptr_t k)
{
    Flow* fl = data;
    Root* r = futoin__flow_root(fl);
    Frame* f = &fl->frames[k];
    f->flags &= (uint8_t)~FR_TIMER;
    frame_xp(fl, f)->timer.slot = 0;
    ++futoin__flow_ctx(fl)->n_timeouts;
    futoin__trace_capture(fl, (uint32_t)k);
    root_enter(r);
    futoin__flow_set_code(fl, FUTOIN_TIMEOUT);
    futoin__set_info(r, wait_info_of(fl, (uint32_t)k));
    fl->ctl = CTL_NONE;
    rq_remove(fl);
    if (start_unwind(fl, (uint32_t)k, 0)) {
        rq_push(fl);
    }
    root_leave(r);
}

void futoin__flow_set_timeout(Flow* fl, uint32_t ms)
{
    Frame* f = &fl->frames[fl->depth];
    frame_stop_timer(fl, f);
    frame_x(fl, f)->timer = futoin__loop_ref(
            futoin__loop_deferred2(fl->loop, ms, fl, fl->depth, on_timeout));
    f->flags |= FR_TIMER | FR_WAIT;
}

void futoin__flow_set_cancel(Flow* fl, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    Frame* f = &fl->frames[fl->depth];
    FrameExtra* x = frame_x(fl, f);
    x->on_cancel = ch;
    x->cancel_data = data;
    f->flags |= FR_WAIT;
}

int futoin__flow_drop_cancel(Flow* fl, FutoInAsyncSteps_cancel_callback ch, void* data)
{
    FrameExtra* x = frame_xp(fl, &fl->frames[fl->depth]);
    if (!x || x->on_cancel != ch || x->cancel_data != data) {
        return 0;
    }
    x->on_cancel = NULL;
    return 1;
}

void futoin__flow_wait(Flow* fl)
{
    fl->frames[fl->depth].flags |= FR_WAIT;
}

void futoin__flow_ctl(Flow* fl, uint8_t ctl, const char* label)
{
    futoin__flow_set_code(fl, label ? label : "");
    futoin__set_info(futoin__flow_root(fl), label ? label : "");
    fl->out = ctl == CTL_BREAK ? OUT_BREAK : OUT_CONTINUE;
    fl->add_fr = NULL;
}

/* ------------------------------------------------------------------------ */
/* Root control                                                              */

void futoin__root_execute(Flow* fl, void* data, FutoInAsyncSteps_error_callback unhandled)
{
    Root* r = futoin__flow_root(fl);
    r->state = RS_RUNNING;
    fl->frames[0].unhandled = unhandled;
    r->unhandled_data = data;
    info_clear(r);
    fl->pending = PD_NEXT;
    fl->out = OUT_NONE;
    fl->ctl = CTL_NONE;
    fl->add_fr = NULL;
    rq_push(fl);
}

/* Stops a flow where it is: every frame is aborted innermost first. */
/* Frames above level 0, queued steps or results: what aborting releases. */
static inline int flow_holds_work(const Flow* fl)
{
    return fl->depth || fl->frames[0].q_head || fl->results;
}

/* A flow whose frames above level 0 are gone ends: its level-0 queue and
 * results are taken off it, it is marked done (a branch also leaves its
 * parallel and is released), and only then are they released, since
 * their cleanups are user code that may cancel or free the root. */
static void flow_end_aborted(Flow* fl)
{
    Step* queued = fl->frames[0].q_head;
    ArgsBox* dropped = fl->results;
    fl->frames[0].q_head = NULL;
    fl->results = NULL;
    fl->add_fr = NULL;
    flow_clear(fl, FS_DONE);
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (fl->is_branch) {
        branch_unlink(fl);
        flow_release(fl);
    }
    if (queued) {
        queue_free(ctx, queued);
    }
    if (dropped) {
        box_free(ctx, dropped);
    }
}

/* Aborts the frames of base above level k, innermost first, and the
 * branches of a parallel frame at level k. A parallel frame's branches go
 * before the frame, and theirs before them, to any depth: the walk goes
 * down into a branch and back up through Branch.parent rather than
 * nesting a C call per level, so neither the C stack nor the heap grows
 * with the depth (the tree of flows is the walk's stack).
 * A branch stays linked to its parallel until it has no frame left, so
 * that user code run on the way (a cancel handler, a cleanup, unlock())
 * which cancels or frees the root finds it, and aborts it with the rest.
 * Returns 0 if such code aborted base: that abort finished the walk. */
static int flow_unwind_to(Flow* base, uint32_t k)
{
    uint32_t gen = base->gen;
    Flow* cur = base;
    for (;;) {
        Flow* b = live_branches(cur);
        if (b) {
            /* Down into the first live branch; it is aborted from now on
             * (a callback of it still on the C stack sees its gen move). */
            futoin__branch(b)->par->pending = 0;
            rq_remove(b);
            ++b->gen;
            cur = b;
            continue;
        }
        if (cur->depth > (cur == base ? k : 0)) {
            frame_pop(cur, 1);
        } else if (cur == base) {
            return 1;
        } else {
            Flow* parent = futoin__branch(cur)->parent;
            flow_end_aborted(cur);
            cur = parent;
        }
        if (gen != base->gen) {
            return 0;
        }
    }
}

/* Stops a flow where it is: every frame is aborted innermost first. */
static void flow_abort(Flow* fl)
{
    rq_remove(fl);
    ++fl->gen;
    /* A finished flow (what free() mostly meets) has nothing to release. */
    if (flow_holds_work(fl)) {
        uint32_t gen = fl->gen;
        if (fl->depth && !flow_unwind_to(fl, 0)) {
            return;
        }
        if (gen == fl->gen) {
            flow_end_aborted(fl);
            return;
        }
    }
    fl->add_fr = NULL;
    flow_clear(fl, FS_DONE);
}

/* A branch flow is done with: its memory is recycled once no engine frame
 * of the root is on the C stack (a callback of it may still be running). */
static void flow_release(Flow* fl)
{
    Root* r = futoin__flow_root(fl);
    rq_remove(fl);
    ++fl->gen;
    fl->add_fr = NULL;
    flow_code_release(fl);
    fl->state = FS_DONE;
    RootExt* x = futoin__root_ext(r);
    futoin__branch(fl)->sib_next = x->zombies;
    x->zombies = fl;
    /* A branch's level 0 runs no step, so it holds no extras. */
    assert(!(fl->frames[0].flags & FR_X));
}

void futoin__root_cancel(Root* r)
{
    if (r->cancelling || r->state != RS_RUNNING) {
        return;
    }
    root_enter(r);
    r->cancelling = 1;
    ++futoin__root_ctx(r)->n_cancels;
    flow_abort(&r->main);
    frame_x_release(futoin__root_ctx(r), &r->main.frames[0]);
    r->state = RS_CANCELLED;
    r->cancelling = 0;
    root_leave(r);
}

/* What a destroyed root may hold beyond its frames: level 0's extras (an
 * idle root may have used stack()), an error code and the RootExt. */
static void root_release_extras(Root* r)
{
    Flow* fl = &r->main;
    frame_x_release(futoin__root_ctx(r), &fl->frames[0]);
    flow_code_release(fl);
    if (r->ext) {
        if (r->ext->vars) {
            futoin__state_free(r);
        }
        recycle_zombies(r);
        info_clear(r);
#if FUTOIN_TRACING
        futoin__trace_free(r->ext);
#endif
        r->ext->done = NULL;
        r->ext->done_data = NULL;
    }
}

/* Pooled with its frame array and extras for the next root. Its stale
 * handle keeps being refused: free_pending stays set until the root is
 * handed out again, and add_fr is NULL. */
static inline void root_pool(Root* r)
{
    EngineCtx* ctx = futoin__root_ctx(r);
    root_reset(r, 0);
    r->free_pending = 1;
    r->main.add_fr = NULL;
    r->main.rq_next = (Flow*)ctx->free_roots;
    ctx->free_roots = r;
    --ctx->n_roots;
}

static void root_destroy_slow(Root* r)
{
    Flow* fl = &r->main;
    if (fl->in_rq || flow_holds_work(fl)) {
        flow_abort(fl);
    }
    if ((fl->frames[0].flags & FR_X) || r->ext) { /* a code lives in r->ext */
        root_release_extras(r);
    }
    root_pool(r);
}

/* Inline for what free() mostly meets, a finished root that never needed
 * extras: it has nothing to abort or release, and root_reset() rewrites
 * the flow's state and bumps gen. */
static inline void root_destroy(Root* r)
{
    const Flow* fl = &r->main;
    if (fl->in_rq || flow_holds_work(fl) || fl->frames[0].flags || r->ext) {
        root_destroy_slow(r);
    } else {
        root_pool(r);
    }
}

void futoin__root_free(Root* r)
{
    if (r->free_pending) {
        return;
    }
    r->free_pending = 1;
    r->main.add_fr = NULL;
    if (!r->busy && r->state != RS_RUNNING) {
        root_destroy(r); /* nothing of it runs or is on the C stack */
        return;
    }
    root_enter(r);
    futoin__root_cancel(r); /* no-op if idle, finished or already cancelling */
    root_leave(r);          /* destroys now, or when the outermost callback returns */
}

void futoin_asyncsteps_free(FutoInAsyncSteps* root)
{
    if (root) {
        root->api->free(root);
    }
}
