/* SPDX-License-Identifier: MIT */
/*
 * Step values (values.c): what the engine's files call to take over,
 * keep and drop the values of success() and the results a flow holds for
 * its next step. Values' cleanups are user code: every function here that
 * runs one says what the caller must check afterwards.
 */
#ifndef FUTOIN_VALUES_IMPL_H
#define FUTOIN_VALUES_IMPL_H

#include "engine/engine_internal.h"

#pragma GCC visibility push(hidden)

/* Runs the cleanups of the values in a[0..n). The holders are left as
 * they are: a box is written in full before it is used again. */
static inline void futoin__args_release(FutoInArgs* a, uint8_t n)
{
    for (uint8_t i = 0; i < n; ++i) {
        const FutoInType* tp = a->args[i].type;
        if (tp && tp->cleanup) {
            tp->cleanup(&a->args[i]);
        }
    }
}

static inline int futoin__type_has_cleanup(const FutoInType* t)
{
    return t && t->cleanup;
}

/* Unrolled: a value or two, the common case, cost a test for each empty
 * slot rather than a trip round a loop. */
static inline int futoin__args_need_cleanup(const FutoInArgs* a)
{
    return futoin__type_has_cleanup(a->args[0].type) || futoin__type_has_cleanup(a->args[1].type)
            || futoin__type_has_cleanup(a->args[2].type)
            || futoin__type_has_cleanup(a->args[3].type);
}

/* Runs the cleanups of a's first n values and empties their holders. */
void futoin__args_reset(FutoInArgs* a, uint8_t n);
/* The same for the values of a success() on fl that was refused: their
 * cleanups are user code that may free the root, so a live root is held
 * until the last has run (it is destroyed after them, not under them). */
void futoin__args_drop_refused(Flow* fl, FutoInArgs* args);
static inline void futoin__args_clear(FutoInArgs* a, uint8_t* n)
{
    if (*n) {
        futoin__args_reset(a, *n);
        *n = 0;
    }
}
/* Moves the values of src into dst (which must be empty); returns the
 * count of argument slots used. */
uint8_t futoin__args_take(FutoInArgs* dst, FutoInArgs* src);

static inline void futoin__box_free(EngineCtx* ctx, ArgsBox* b)
{
    futoin__args_release(&b->args, b->nargs);
    futoin__pool_put(&ctx->boxes, b);
}

/* Results waiting in a flow for its next step. */
void futoin__results_drop_slow(Flow* fl);
static inline void futoin__results_drop(Flow* fl)
{
    if (fl->results) {
        futoin__results_drop_slow(fl);
    }
}
void futoin__results_set(Flow* fl, FutoInArgs* args);

/* success(args) of a loop body whose values are dropped: the step
 * completes with no result first, then the values' cleanups run (the root
 * held meanwhile). */
FUTOIN_NOINLINE void futoin__success_then_drop(Flow* fl, FutoInArgs* args);

#pragma GCC visibility pop

#endif
