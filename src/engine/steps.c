/* SPDX-License-Identifier: MIT */
/*
 * Steps before they run: the nodes of loops and parallels, the boxes of
 * values passed between steps, releasing a step that never started, and
 * the deep copy of copyFrom().
 */
#include "engine/engine_impl.h"

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

static void parallel_free(EngineCtx* ctx, Parallel* p)
{
    if (p->bounded) {
        futoin__bounded_free(p); /* not a step node */
        return;
    }
    if (!p->started) {
        futoin__queue_free(ctx, p->b_head);
    }
    futoin__pool_put(&ctx->steps, p);
}

/* Releases a step that never started, with whatever it owns. */
int futoin__add_owned_step(Flow* fl, const char* what, StepOwner* owner,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* data)
{
    return futoin__add_step(fl, what, SK_OWNED, data, f, eh, owner);
}

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
            futoin__box_free(ctx, ext);
        }
        break;
    case SK_OWNED:
        /* The node first: release() may be user code (futoin_add_owned()),
         * which may add steps or free the root. */
        futoin__pool_put(&ctx->steps, s);
        futoin__owner_end(ctx, ext, 0);
        return;
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
        *err = "copyFrom(): an owned step (await(), futoin_add_work(), futoin_add_owned()) cannot be copied";
        return NULL;
    case SK_PARALLEL: {
        const Parallel* src = ext;
        if (src->bounded) {
            ext = futoin__bounded_copy(src, owner);
            break;
        }
        Parallel* p = futoin__parallel_new(ctx, owner);
        for (const Step* b = src->b_head; b; b = b->next) {
            Step* c = futoin__step_copy(ctx, b, owner, err);
            if (c) {
                futoin__parallel_append(p, c);
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
