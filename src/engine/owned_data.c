/* SPDX-License-Identifier: MIT */
/*
 * futoin_add_owned(): a step whose data has a destructor, called exactly
 * once when the step is done with it.
 *
 * On our flows the step is an SK_OWNED step whose owner is a small record
 * (OwnedData) taken from the loop's pool of step nodes: adding one costs
 * two pool pops and no malloc, and the engine releases the owner once, as
 * the last thing its frame lets go of (engine/frames.c), or with the step
 * when it is dropped unstarted (engine/steps.c). On a parallel() interface
 * the step is a branch.
 *
 * On another implementation's object the interface says nothing about a
 * step being dropped, so the step is wrapped: the wrapper is recorded on
 * the root (engine/interop_impl.h) until it runs, and from then on tied to
 * the step's stack() memory, whose cleanup runs when that engine destroys
 * the step.
 */
#include "engine/engine_impl.h"
#include "engine/interop_impl.h"

#include <stdlib.h>

typedef struct OwnedData {
    StepOwner owner; /* first: the engine sees the record as a StepOwner */
    FutoInDataDestroy destroy;
    void* data;
    union {
        EngineCtx* ctx;         /* whose pool the record goes back to */
        struct OwnedData* next; /* while deferred: EngineCtx.owners_deferred */
    };
} OwnedData;

_Static_assert(sizeof(OwnedData) <= sizeof(Step), "an owner record must fit a step node");

/* The record goes back to the pool before the destructor runs: it is user
 * code, which may add steps (taking nodes from the pool) or free the root. */
static void owned_data_release(StepOwner* self)
{
    OwnedData* od = (OwnedData*)self;
    FutoInDataDestroy destroy = od->destroy;
    void* data = od->data;
    futoin__pool_put(&od->ctx->steps, od);
    destroy(data);
}

/* A step that aborts its own flow (cancel(), free() of its root, from its
 * callback or error handler, or from what they call) is still running
 * when its frame goes: its data, which the callback may still use (a C++
 * closure's captures), is destroyed once the callback has returned. Later
 * destructors wait behind it, so that the order stays that of the frames. */
void futoin__owner_end(EngineCtx* ctx, StepOwner* o, int defer)
{
    if (o->kind == OWNER_DATA && (defer || ctx->owners_deferred)) {
        OwnedData* od = (OwnedData*)o;
        od->next = (OwnedData*)ctx->owners_deferred;
        ctx->owners_deferred = &od->owner;
        return;
    }
    o->release(o);
}

void futoin__owners_flush(EngineCtx* ctx)
{
    while (ctx->owners_deferred) {
        /* Taken whole, then oldest first: a destructor may defer more. */
        OwnedData* od = (OwnedData*)ctx->owners_deferred;
        ctx->owners_deferred = NULL;
        OwnedData* oldest = NULL;
        while (od) {
            OwnedData* next = od->next;
            od->next = oldest;
            oldest = od;
            od = next;
        }
        while (oldest) {
            OwnedData* next = oldest->next;
            oldest->ctx = ctx;
            owned_data_release(&oldest->owner);
            oldest = next;
        }
    }
}

static StepOwner* owned_data_new(EngineCtx* ctx, void* data, FutoInDataDestroy destroy)
{
    OwnedData* od = futoin__pool_get(&ctx->steps);
    od->owner.release = owned_data_release;
    od->owner.kind = OWNER_DATA;
    od->destroy = destroy;
    od->data = data;
    od->ctx = ctx;
    return &od->owner;
}

/* A branch of a parallel step of ours. */
static void add_owned_branch(Parallel* p, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data, FutoInDataDestroy destroy)
{
    if (!f) {
        futoin__misuse(p->owner, "futoin_add_owned() with a NULL execute callback");
    } else if (p->started) {
        futoin__misuse(p->owner, "futoin_add_owned() on a parallel step that has already started");
    } else {
        EngineCtx* ctx = futoin__flow_ctx(p->owner);
        futoin__parallel_append(p,
                futoin__step_new(ctx, SK_OWNED, data, f, eh, owned_data_new(ctx, data, destroy)));
        return;
    }
    destroy(data);
}

/* ---- another implementation's object ---- */

typedef struct ForeignOwned {
    ForeignPending pending; /* first: released as a ForeignPending */
    FutoInAsyncSteps_execute_callback f;
    FutoInAsyncSteps_error_callback eh;
    void* data;
    FutoInDataDestroy destroy;
} ForeignOwned;

static void foreign_owned_end(ForeignOwned* fo)
{
    FutoInDataDestroy destroy = fo->destroy;
    void* data = fo->data;
    free(fo);
    destroy(data);
}

/* The step never ran: its root is being freed. */
static void foreign_owned_release(ForeignPending* p)
{
    foreign_owned_end((ForeignOwned*)p);
}

/* The step ran and its engine destroys it now. */
static void foreign_owned_cleanup(void* value)
{
    foreign_owned_end(*(ForeignOwned**)value);
}

static void foreign_owned_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    ForeignOwned* fo = data;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the slot is a pointer, sizeof(*slot) is meant */
    ForeignOwned** slot = as->api->stack(as, sizeof(*slot), foreign_owned_cleanup);
    if (!slot) {
        /* Stays recorded on the root, released with it; the error handler
         * below still finds it. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "futoin_add_owned(): out of memory");
        return;
    }
    futoin__pending_take(&fo->pending);
    *slot = fo;
    fo->f(as, fo->data, args);
}

static void foreign_owned_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    ForeignOwned* fo = data;
    fo->eh(as, fo->data, code);
}

static void foreign_add_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data, FutoInDataDestroy destroy)
{
    if (!f) {
        /* Not sent on as add(NULL): another implementation may abort. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "futoin_add_owned() with a NULL execute callback");
        destroy(data);
        return;
    }
    ForeignOwned* fo = calloc(1, sizeof(*fo));
    if (!fo || futoin__pending_put(as, &fo->pending, foreign_owned_release) != 0) {
        free(fo);
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "futoin_add_owned(): the step cannot be recorded on its root (out of memory, or "
                "the root is being freed)");
        destroy(data);
        return;
    }
    fo->f = f;
    fo->eh = eh;
    fo->data = data;
    fo->destroy = destroy;
    as->api->add(as, fo, foreign_owned_step, eh ? foreign_owned_eh : NULL);
}

/* ---- the public call ---- */

static void no_destroy(void* data)
{
    (void)data;
}

void futoin_add_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, void* data, FutoInDataDestroy destroy)
{
    /* The common case first: a flow of ours. */
    Flow* fl = as && as->api == &futoin__flow_api ? (Flow*)as : NULL;
    if (fl && f && destroy) {
        Step** at = futoin__add_target(fl, "futoin_add_owned");
        if (FUTOIN_UNLIKELY(!at)) {
            destroy(data); /* refused (reported): the data is done with */
            return;
        }
        EngineCtx* ctx = futoin__flow_ctx(fl);
        futoin__add_step_at(fl, at, SK_OWNED, data, f, eh, owned_data_new(ctx, data, destroy));
        return;
    }
    if (!destroy) {
        if (as && f) {
            as->api->add(as, data, f, eh); /* nothing to own: a plain add() */
            return;
        }
        destroy = no_destroy; /* refused below, as with a destructor */
    }
    if (!as) {
        destroy(data);
        return;
    }
    if (as->api == &futoin__par_api) {
        add_owned_branch((Parallel*)as, f, eh, data, destroy);
        return;
    }
    if (!fl) {
        foreign_add_owned(as, f, eh, data, destroy);
        return;
    }
    /* Ours, without f. */
    futoin__misuse(fl, "futoin_add_owned() with a NULL execute callback");
    destroy(data);
}
