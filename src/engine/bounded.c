/* SPDX-License-Identifier: MIT */
/*
 * futoin_parallel_bounded(): count items, at most k of them at a time,
 * each a parallel branch of its own, on the engine's parallel machinery.
 *
 * The helper's step is a parallel step (SK_PARALLEL) whose Parallel is the
 * head of a Bounded. Nothing is queued on it before it starts; when it
 * starts, the first k items become branches, and each time one of them
 * ends (futoin__bounded_branch_done(), which dispatch.c's branch_done()
 * hands a bounded branch to) the next item takes its place. So the live
 * branches, their flows and frames never number more than k, a recycled
 * branch flow serves the next item, and the work is linear in count.
 *
 * An item's branch runs one step: item_run() calls the user's item
 * function with the index kept in the branch's level 0 (Frame.item). In
 * FUTOIN_BOUNDED_ALL_SETTLED the step has an error handler, item_eh(),
 * which records the item's code and error_info as the item's flow sees
 * them when the error reaches it, and recovers. In FIRST_ERROR it has
 * none: the branch fails, and branch_failed() cancels the other branches
 * and fails the step, as for parallel(). Cancel, timeouts around the step,
 * break and continue are the parallel step's own business too
 * (futoin__flow_unwind_to() walks the live branches; no item starts after
 * an abort, since only a branch that ends with success feeds the next).
 *
 * Memory: the Bounded is malloc()ed when the step is added, the outcome
 * records when it starts (the one part that grows with count). The
 * records are the Bounded's until the last item has ended, then the
 * result value's: the Bounded's release (the step ends without success,
 * or never starts) or the value's cleanup releases them, never both.
 */
#include "engine/engine_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The outcome records and their header, in one block. */
typedef struct ResultBlock {
    FutoInBoundedResult head; /* first: the block is freed through it */
    size_t started;           /* records written: those of the items started */
    struct ResultBlock* next; /* while released: the next block to release */
    FutoInBoundedOutcome items[];
} ResultBlock;

typedef struct Bounded {
    Parallel par; /* first: the step's ext is &par */
    FutoInBoundedItemFn item;
    void* data;
    size_t count;
    size_t k;
    size_t next;                 /* the next item to start */
    Flow* tail;                  /* the last of par.branches, where a new one goes */
    FutoInBoundedResult* result; /* the outcomes, from the start until delivered */
    int mode;
#if FUTOIN_TRACING
    TraceLoc loc; /* where the helper was called: the item steps' origin */
#endif
} Bounded;

static const char oom_code[] = FUTOIN_INTERNAL_ERROR;
static const char oom_info[] =
        "futoin_parallel_bounded(): out of memory recording the item's error";

/* ------------------------------------------------------------------------ */
/* The outcomes                                                              */

static int count_fits(size_t count)
{
    return count <= (SIZE_MAX - sizeof(ResultBlock)) / sizeof(FutoInBoundedOutcome);
}

/* The records are written as their items start (record_start()): a
 * count that never runs costs its address space, not its pages. */
static FutoInBoundedResult* result_new(size_t count)
{
    ResultBlock* rb = malloc(sizeof(ResultBlock) + count * sizeof(FutoInBoundedOutcome));
    if (!rb) {
        return NULL;
    }
    rb->head.count = count;
    rb->head.failed = 0;
    rb->head.items = rb->items;
    rb->started = 0;
    rb->next = NULL;
    return &rb->head;
}

/* Item i starts: its record is empty until the item ends. */
static inline void record_start(FutoInBoundedResult* res, size_t i)
{
    ResultBlock* rb = (ResultBlock*)res;
    memset(&rb->items[i], 0, sizeof(rb->items[i]));
    rb->started = i + 1;
}

static void outcome_clear_error(FutoInBoundedOutcome* o)
{
    if (o->code && o->code != oom_code) {
        free((void*)(uintptr_t)o->code); /* the info shares the block */
    }
    o->code = NULL;
    o->info = NULL;
}

static void result_cleanup(FutoInBinaryValue* v);

static const FutoInType result_type = { FTN_TYPE_CUSTOM_OBJECT, result_cleanup };

/* Runs the values' cleanups (user code, which may call the library: res
 * is nobody else's by now). An item that ran a bounded parallel of its
 * own as its last step has that result as its value, to any depth: those
 * blocks join the walk instead of being released from inside it, so the
 * C stack does not grow with the nesting. */
static void result_release(FutoInBoundedResult* res)
{
    ResultBlock* todo = (ResultBlock*)res;
    todo->next = NULL;
    while (todo) {
        ResultBlock* rb = todo;
        todo = rb->next;
        for (size_t i = 0; i < rb->started; ++i) {
            FutoInBoundedOutcome* o = &rb->items[i];
            outcome_clear_error(o);
            for (int a = 0; a < 4; ++a) {
                FutoInBinaryValue* v = &o->args.args[a];
                const FutoInType* t = v->type;
                if (!t) {
                    continue;
                }
                if (t == &result_type) {
                    ResultBlock* inner = v->custom_data;
                    inner->next = todo;
                    todo = inner;
                } else if (t->cleanup) {
                    t->cleanup(v); /* the block goes: no need to empty v */
                }
            }
        }
        free(rb);
    }
}

static void result_cleanup(FutoInBinaryValue* v)
{
    result_release(v->custom_data);
}

FutoInBoundedResult* futoin_bounded_result(const FutoInArgs* args)
{
    if (!args || args->arg0.type != &result_type) {
        return NULL;
    }
    return args->arg0.custom_data;
}

/* Item i failed with code and info: one block holds both. */
static void outcome_fail(FutoInBoundedResult* res, size_t i, const char* code, const char* info)
{
    FutoInBoundedOutcome* o = &res->items[i];
    if (o->code) {
        outcome_clear_error(o); /* never twice: its handler runs once */
    } else {
        ++res->failed;
    }
    size_t lc = strlen(code);
    size_t li = strlen(info);
    char* p = malloc(lc + li + 2);
    if (!p) {
        o->code = oom_code;
        o->info = oom_info;
        return;
    }
    memcpy(p, code, lc + 1);
    memcpy(p + lc + 1, info, li + 1);
    o->code = p;
    o->info = p + lc + 1;
}

/* ------------------------------------------------------------------------ */
/* The item's step                                                           */

static inline size_t item_of(FutoInAsyncSteps* as)
{
    /* Only ever the step of a bounded branch of ours. */
    return ((Flow*)as)->frames[0].item;
}

static void item_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args; /* a branch takes no input */
    const Bounded* b = data;
    b->item(as, b->data, item_of(as));
}

/* FUTOIN_BOUNDED_ALL_SETTLED: the item's error becomes its outcome. */
static void item_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Bounded* b = data;
    outcome_fail(b->result, item_of(as), code, futoin_error_info(as));
    futoin_success(as);
}

/* ------------------------------------------------------------------------ */
/* Branches fed one item at a time                                          */

/* The branch of the next item, behind the others in p's list and in the
 * ready queue. */
static void spawn(Bounded* b, Flow* fl, EngineCtx* ctx)
{
    size_t i = b->next++;
    record_start(b->result, i);
    Step* s = futoin__step_new(ctx, SK_PLAIN, b, item_run,
            b->mode == FUTOIN_BOUNDED_ALL_SETTLED ? item_eh : NULL, NULL);
#if FUTOIN_TRACING
    s->file = b->loc.file;
    s->line = b->loc.line;
#endif
    Flow* br = futoin__branch_new(ctx, futoin__flow_root(fl), fl, &b->par, s);
    br->frames[0].item = i;
    if (b->tail) {
        futoin__branch(b->tail)->sib_next = br;
    } else {
        b->par.branches = br;
    }
    b->tail = br;
    ++b->par.pending;
    list_push_back(&ctx->rq, br, RQ_LINK);
    if (!ctx->dispatching) {
        schedule_dispatch(ctx);
    }
}

/* Takes a branch that ended out of the list, keeping the tail. */
static void unlink_branch(Bounded* b, Flow* br)
{
    Flow* prev = NULL;
    for (Flow** pp = &b->par.branches; *pp; pp = &futoin__branch(*pp)->sib_next) {
        if (*pp == br) {
            *pp = futoin__branch(br)->sib_next;
            if (b->tail == br) {
                b->tail = prev;
            }
            return;
        }
        prev = *pp;
    }
}

/* Every item has ended: the step on top of fl succeeds with the outcomes,
 * which the value owns from now on. */
static void deliver(Bounded* b, Flow* fl)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    ArgsBox* box = futoin__pool_get(&ctx->boxes);
    memset(box, 0, sizeof(*box));
    box->args.arg0 = futoin_val_custom(&result_type, b->result);
    box->nargs = 1;
    b->result = NULL;
    /* A waiting parallel step holds no results: its start took them. */
    assert(!fl->results);
    fl->results = box;
    fl->frames[fl->depth].flags &= (uint8_t)~FR_PAR_WAIT;
    futoin__rq_push(fl);
}

void futoin__bounded_start(Flow* fl, Parallel* p)
{
    Bounded* b = (Bounded*)p;
    Root* r = futoin__flow_root(fl);
    EngineCtx* ctx = futoin__root_ctx(r);
    Frame* f = &fl->frames[fl->depth];
    /* Branches take no input (dropped last: user cleanups). */
    ArgsBox* dropped = fl->results;
    fl->results = NULL;
    p->started = 1;
    p->branches = NULL;
    p->pending = 0;
    b->next = 0;
    b->tail = NULL;
    b->result = result_new(b->count);
    if (FUTOIN_UNLIKELY(!b->result)) {
        /* As a step of the flow that cannot have what it needs: its
         * error goes to the handlers around it. */
        futoin__trace_capture(fl, fl->depth);
        futoin__flow_set_error(fl, FUTOIN_INTERNAL_ERROR,
                "futoin_parallel_bounded(): out of memory");
        ++ctx->n_errors;
        fl->ctl = CTL_NONE;
        if (futoin__start_unwind(fl, fl->depth, 1)) {
            futoin__rq_push(fl);
        }
    } else if (b->count == 0) {
        deliver(b, fl);
    } else {
        size_t n = b->k < b->count ? b->k : b->count;
        if (n > UINT32_MAX) {
            n = UINT32_MAX; /* Parallel.pending; far beyond any memory */
        }
        f->flags |= FR_PAR_WAIT;
        fl->state = FS_WAIT;
        while (n--) {
            spawn(b, fl, ctx);
        }
    }
    if (dropped) {
        futoin__box_free(ctx, dropped);
    }
}

void futoin__bounded_branch_done(Flow* fl)
{
    Bounded* b = (Bounded*)futoin__branch(fl)->par;
    Flow* parent = futoin__branch(fl)->parent;
    EngineCtx* ctx = futoin__flow_ctx(fl);
    FutoInBoundedOutcome* o = &b->result->items[fl->frames[0].item];
    ArgsBox* res = fl->results;
    fl->results = NULL;
    unlink_branch(b, fl);
    /* Ended in its own turn (dispatch.c, branch_done()): unless another
     * engine frame of the root is on the C stack, nothing can read it any
     * more, and the next item may take its memory at once. */
    if (futoin__flow_root(fl)->busy == 1) {
        branch_recycle_now(fl);
    } else {
        futoin__flow_release(fl);
    }
    if (res) {
        /* The values move to the record: no cleanup runs here. An item
         * recorded as failed recovered with none (item_eh()). */
        assert(!o->code);
        for (uint8_t a = 0; a < res->nargs; ++a) {
            o->args.args[a] = res->args.args[a];
        }
        futoin__pool_put(&ctx->boxes, res);
    }
    if (!o->code) {
        o->info = "";
    }
    --b->par.pending;
    if (b->next < b->count) {
        spawn(b, parent, ctx);
    } else if (b->par.pending == 0) {
        deliver(b, parent);
    }
}

/* ------------------------------------------------------------------------ */
/* The step's record                                                         */

static Bounded* bounded_new(Flow* owner, size_t count, size_t k, FutoInBoundedItemFn item,
        void* data, int mode)
{
    Bounded* b = futoin__xmalloc(sizeof(Bounded));
    memset(b, 0, sizeof(*b));
    *(const FutoInAsyncStepsAPI**)&b->par.iface.api = &futoin__par_api;
    b->par.owner = owner;
    b->par.bounded = 1;
    b->item = item;
    b->data = data;
    b->count = count;
    b->k = k;
    b->mode = mode;
#if FUTOIN_TRACING
    b->loc = futoin__trace_loc;
#endif
    return b;
}

Parallel* futoin__bounded_copy(const Parallel* src, Flow* owner)
{
    const Bounded* s = (const Bounded*)src;
    Bounded* b = bounded_new(owner, s->count, s->k, s->item, s->data, s->mode);
#if FUTOIN_TRACING
    b->loc = s->loc;
#endif
    return &b->par;
}

void futoin__bounded_free(Parallel* p)
{
    Bounded* b = (Bounded*)p;
    FutoInBoundedResult* res = b->result;
    /* Its branches are gone (see futoin__frame_pop_slow()). */
    assert(!p->started || !p->branches);
    free(b);
    if (res) {
        result_release(res);
    }
}

/* What is wrong with the arguments, written into buf; NULL if nothing. */
static const char* args_problem(char* buf, size_t cap, size_t count, size_t k,
        FutoInBoundedItemFn item, int mode)
{
    if (!item) {
        return "futoin_parallel_bounded() with a NULL item callback";
    }
    if (k == 0) {
        return "futoin_parallel_bounded() with k 0: at least one item must be allowed to run";
    }
    if (mode != FUTOIN_BOUNDED_FIRST_ERROR && mode != FUTOIN_BOUNDED_ALL_SETTLED) {
        snprintf(buf, cap,
                "futoin_parallel_bounded() with an unknown mode %d (FUTOIN_BOUNDED_FIRST_ERROR "
                "or FUTOIN_BOUNDED_ALL_SETTLED)",
                mode);
        return buf;
    }
    if (!count_fits(count)) {
        snprintf(buf, cap,
                "futoin_parallel_bounded() with count %zu: its outcome records would not fit in "
                "memory",
                count);
        return buf;
    }
    return NULL;
}

void futoin_parallel_bounded(FutoInAsyncSteps* as, size_t count, size_t k, FutoInBoundedItemFn item,
        void* data, int mode)
{
    if (!as) {
        return;
    }
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        /* The items are branches fed into our parallel step: another
         * engine's flows cannot hold them. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "futoin_parallel_bounded() needs an AsyncSteps of this library (its items are "
                "branches of the engine's own parallel step)");
        return;
    }
    char buf[200];
    const char* problem = args_problem(buf, sizeof(buf), count, k, item, mode);
    if (problem) {
        futoin__misuse(fl, "%s", problem);
        return;
    }
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (as->api == &futoin__par_api) {
        /* One branch of the parallel step parallel() returned. */
        Parallel* outer = (Parallel*)as;
        if (outer->started) {
            futoin__misuse(fl,
                    "futoin_parallel_bounded() on a parallel step that has already started");
            return;
        }
        Bounded* b = bounded_new(fl, count, k, item, data, mode);
        futoin__parallel_append(outer,
                futoin__step_new(ctx, SK_PARALLEL, NULL, NULL, NULL, &b->par));
        return;
    }
    Step** at = futoin__add_target(fl, "futoin_parallel_bounded");
    if (!at) {
        return;
    }
    Bounded* b = bounded_new(fl, count, k, item, data, mode);
    futoin__add_step_at(fl, at, SK_PARALLEL, NULL, NULL, NULL, &b->par);
}
