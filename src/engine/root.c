/* SPDX-License-Identifier: MIT */
/*
 * Roots and flows: making and recycling them, execute(), cancel() and
 * free(). A root is destroyed only once no engine frame of it is on the C
 * stack (Root.busy); branch flows wait for that on the zombie list.
 */
#include "engine/engine_impl.h"

/* Gives r the state futoin_asyncsteps_new() hands out, but for
 * free_pending, its pool link and add_link. Done when a root is first made and
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
            && (!r->ext
                    || (!r->ext->nvars && !r->ext->cap_vars && !r->ext->vars && !r->ext->zombies)));
    assert(fl->depth == 0 && !fl->in_rq && !fl->rq_link.next && !fl->rq_link.prev && !fl->results);
    assert(!fl->frames[0].q_head && !fl->frames[0].flags && fl->frames[0].kind == SK_PLAIN
            && futoin__flow_code(fl) == futoin__no_code && !fl->is_branch);
    ++fl->gen;
    flow_clear(fl, FS_IDLE);
}

/* A root never handed out before: carved from the root slabs. */
FUTOIN_NOINLINE static Root* root_make(EngineCtx* ctx)
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
        ctx->free_roots = (Root*)r->main.pool_next;
        r->main.pool_next = NULL;
    } else {
        r = root_make(ctx);
        if (!r) {
            return NULL;
        }
    }
    /* Counted while ctx is at hand (root_pool() takes it back). */
    ++ctx->n_roots;
    r->free_pending = 0;
    r->unhold_due = 0;
    r->main.add_link = &r->main.frames[0].q_head; /* idle: add() appends to level 0 */
    return &r->main.iface;
}

/* Empties the main flow's error_info, keeping its code. Out of line: only
 * a root that had an error has a record to clear. */
FUTOIN_NOINLINE static void info_clear_slow(Root* r)
{
    char* code = r->ext->code;
    code[strlen(code) + 1] = 0;
}

static inline void info_clear(Root* r)
{
    if (r->ext && r->ext->code != futoin__no_code) {
        info_clear_slow(r);
    }
}

void futoin__root_execute(Flow* fl, void* data, FutoInAsyncSteps_error_callback unhandled)
{
    Root* r = futoin__flow_root(fl);
    r->state = RS_RUNNING;
    fl->frames[0].unhandled = unhandled;
    r->unhandled_data = data;
    fl->pending = PD_NEXT;
    fl->out = OUT_NONE;
    fl->ctl = CTL_NONE;
    fl->add_link = NULL;
    futoin__rq_push(fl);
    info_clear(r); /* last: a tail call, when there is a record */
}

/* A branch flow is done with: its memory (and its error record) is
 * recycled once no engine frame of the root is on the C stack (a callback
 * of it may still be running, recycle_zombies()). */
void futoin__flow_release(Flow* fl)
{
    Root* r = futoin__flow_root(fl);
    futoin__rq_remove(fl);
    ++fl->gen;
    fl->add_link = NULL;
    fl->state = FS_DONE;
    RootExt* x = futoin__root_ext(r);
    futoin__branch(fl)->sib_next = x->zombies;
    x->zombies = fl;
    r->unhold_due = 1;
    /* A branch's level 0 runs no step, so it holds no extras. */
    assert(!(fl->frames[0].flags & FR_EXTRAS));
}

void futoin__root_on_done(Root* r, RootDoneHook hook, void* data)
{
    if (!hook && !r->ext) {
        return;
    }
    RootExt* x = futoin__root_ext(r);
    x->done = hook;
    x->done_data = hook ? data : NULL;
}

void futoin__root_report_end(Root* r, FutoInEndReason reason, const char* code, FutoInArgs* results)
{
    RootExt* x = r->ext;
    if (!x || !x->on_end) {
        return;
    }
    FutoInArgs none;
    FutoInRootEnd end;
    memset(&end, 0, sizeof(end));
    end.reason = reason;
    end.info = "";
    if (reason == FUTOIN_END_ERROR) {
        end.code = code ? code : "";
        end.info = futoin__root_info(r);
    } else if (reason == FUTOIN_END_SUCCESS) {
        if (!results) {
            memset(&none, 0, sizeof(none));
            results = &none;
        }
        end.results = results;
    }
    futoin__root_hold(r);
    x->on_end(&r->main.iface, x->on_end_data, &end);
    futoin__root_unhold(r);
}

int futoin_set_on_end(FutoInAsyncSteps* root, FutoInRootEndCallback cb, void* data)
{
    /* A parallel() interface gives its flow: refused below. */
    Flow* fl = futoin__flow_of(root);
    if (!fl || !futoin__loop_on_thread(fl->loop)) {
        return -1; /* NULL, another implementation's root, or another thread */
    }
    if (root->api == &futoin__par_api) {
        futoin__misuse(fl, "futoin_set_on_end() on a parallel() interface: only a root has an end");
        return -1;
    }
    Root* r = futoin__flow_root(fl);
    if (fl->is_branch) {
        futoin__misuse(fl, "futoin_set_on_end() on a parallel branch: only a root has an end");
        return -1;
    }
    if (r->free_pending) {
        futoin__misuse(fl, "futoin_set_on_end() on an instance that was freed: ignored");
        return -1;
    }
    if (cb || r->ext) {
        RootExt* x = futoin__root_ext(r);
        x->on_end = cb;
        x->on_end_data = cb ? data : NULL;
    }
    return 0;
}

void futoin__root_cancel(Root* r)
{
    if (r->cancelling || r->state != RS_RUNNING) {
        return;
    }
    futoin__root_hold(r);
    r->cancelling = 1;
    ++futoin__root_ctx(r)->n_cancels;
    futoin__flow_abort(&r->main);
    frame_extras_release(futoin__root_ctx(r), &r->main.frames[0]);
    r->state = RS_CANCELLED;
    r->cancelling = 0;
    /* Everything of the run is released: its end is told last. */
    futoin__root_report_end(r, r->free_pending ? FUTOIN_END_FREED : FUTOIN_END_CANCELLED, NULL,
            NULL);
    futoin__root_unhold(r);
}

/* What a destroyed root may hold beyond its frames: level 0's extras (an
 * idle root may have used stack()), an error record and the RootExt. */
static void root_release_extras(Root* r)
{
    Flow* fl = &r->main;
    frame_extras_release(futoin__root_ctx(r), &fl->frames[0]);
    futoin__flow_code_release(fl);
    if (r->ext) {
        if (r->ext->vars) {
            futoin__state_free(r);
        }
        recycle_zombies(r);
#if FUTOIN_TRACING
        futoin__trace_free(r->ext);
#endif
        r->ext->done = NULL;
        r->ext->done_data = NULL;
        r->ext->on_end = NULL; /* the hook was the handle's: not the next root's */
        r->ext->on_end_data = NULL;
    }
}

/* Pooled with its frame array and extras for the next root. Its stale
 * handle keeps being refused: free_pending stays set until the root is
 * handed out again, and add_link is NULL. */
static inline void root_pool(Root* r)
{
    EngineCtx* ctx = futoin__root_ctx(r);
    root_reset(r, 0);
    r->free_pending = 1;
    r->unhold_due = 1;
    r->main.add_link = NULL;
    r->main.pool_next = (Flow*)ctx->free_roots;
    ctx->free_roots = r;
    --ctx->n_roots;
}

static void root_destroy_slow(Root* r)
{
    Flow* fl = &r->main;
    if (fl->in_rq || flow_holds_work(fl)) {
        futoin__flow_abort(fl);
    }
    if ((fl->frames[0].flags & FR_EXTRAS) || r->ext) { /* a code lives in r->ext */
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

void futoin__root_destroy(Root* r)
{
    root_destroy(r);
}

/* futoin__root_unhold() out of line: what it may release (branch flows
 * and their error records) would otherwise cost the common free() of a
 * finished root the saving of registers. */
FUTOIN_NOINLINE static void root_unhold_cold(Root* r)
{
    futoin__root_unhold(r);
}

void futoin__root_free(Root* r)
{
    if (r->free_pending) {
        return;
    }
    r->free_pending = 1;
    r->unhold_due = 1;
    r->main.add_link = NULL;
    if (!r->busy && r->state != RS_RUNNING) {
        root_destroy(r); /* nothing of it runs or is on the C stack */
        return;
    }
    futoin__root_hold(r);
    futoin__root_cancel(r); /* no-op if idle, finished or already cancelling */
    root_unhold_cold(r);    /* destroys now, or when the outermost callback returns */
}

/* futoin_loop_free(): the roots still live on the loop (found in the
 * root slabs, as introspection finds them) are freed as
 * futoin_asyncsteps_free() would free them, so that what their steps own
 * is released. That runs user code (cancel handlers, cleanups,
 * destructors), which may make or execute other roots: passes go on until
 * one finds none. */
void futoin__roots_free_all(EngineCtx* ctx)
{
    const void* flow_api = &futoin__flow_api;
    int found;
    do {
        found = 0;
        for (void* slab = futoin__pool_first_slab(&ctx->root_mem); slab;
                slab = futoin__pool_next_slab(slab)) {
            for (size_t i = 0; i < ctx->root_mem.per_slab; ++i) {
                void* e = futoin__pool_slab_elem(&ctx->root_mem, slab, i);
                const void* first;
                memcpy(&first, e, sizeof(first));
                if (first == flow_api && !((Root*)e)->free_pending) {
                    found = 1;
                    futoin__root_free(e);
                }
            }
        }
    } while (found);
}

void futoin_asyncsteps_free(FutoInAsyncSteps* root)
{
    if (root) {
        root->api->free(root);
    }
}
