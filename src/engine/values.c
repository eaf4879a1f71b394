/* SPDX-License-Identifier: MIT */
/*
 * Step values: the arguments a success() hands over, the results a flow
 * keeps for its next step (ArgsBox, pooled), and the cleanups of both,
 * which are user code and may call back into the engine, on this very
 * flow too. The hot inline helpers are in values_impl.h.
 */
#include "engine/engine_impl.h"

/* ---- arguments ---- */

void futoin__args_drop(FutoInArgs* args)
{
    if (args) {
        futoin__args_reset(args, 4);
    }
}

void futoin__args_drop_refused(Flow* fl, FutoInArgs* args)
{
    if (!args) {
        return;
    }
    /* A root whose free() completed is pooled (free_pending, nothing of
     * it on the stack): a stale handle, nothing to keep alive. */
    Root* r = futoin__flow_root(fl);
    int live = !r->free_pending || r->busy > 0;
    if (live) {
        futoin__root_hold(r);
    }
    futoin__args_reset(args, 4);
    if (live) {
        futoin__root_unhold(r);
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

/* ---- results waiting for the next step ---- */

/* The values' cleanups are user code that may call back into the engine,
 * on this flow too: the box is the caller's alone before they run. */
void futoin__results_drop_slow(Flow* fl)
{
    ArgsBox* b = fl->results;
    fl->results = NULL;
    futoin__box_free(futoin__flow_ctx(fl), b);
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
        futoin__box_free(futoin__flow_ctx(fl), old);
    }
}

/* ---- a loop body's results, which go nowhere ---- */

/* success(args) of a loop body whose values are dropped: the step
 * completes with no result first, then the values' cleanups run, so a
 * cleanup that cancels or frees the root finds the step done (no cancel
 * handler for it). */
void futoin__success_then_drop(Flow* fl, FutoInArgs* args)
{
    /* The caller's args stay valid until its success() returns, and are
     * not cleared (the caller's holders are left as they are). Held: a
     * cleanup that frees the root must not destroy it under the others. */
    Root* r = futoin__flow_root(fl);
    futoin__root_hold(r);
    futoin__flow_success(fl, NULL);
    futoin__args_release(args, 4);
    futoin__root_unhold(r);
}
