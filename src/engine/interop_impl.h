/*
 * SPDX-License-Identifier: MIT
 *
 * The C API helpers applied to AsyncSteps objects of other implementations
 * of the binary interface (docs/INTEROP.md). Everything here goes through
 * the 25 interface entries only; our own objects keep their fast paths in
 * engine/helpers.c and engine/await.c.
 *
 * A foreign engine tells us nothing when it drops a step that never ran,
 * so what such a step owns (successStep values, an await registration) is
 * recorded on its root with a state variable, whose cleanup (the root's
 * free) releases whatever was never taken back.
 */
#ifndef FUTOIN_INTEROP_IMPL_H
#define FUTOIN_INTEROP_IMPL_H

#include <futoin/asyncsteps.h>

#include "common/list.h"

#pragma GCC visibility push(hidden)

typedef struct ForeignPending ForeignPending;
struct ForeignPending {
    ListLink link; /* in the root's pending list */
    List* on;      /* that list (NULL: not recorded), so that p can leave it
                    * without knowing its root */
    void (*release)(ForeignPending* self);
};

/* Records p on the root behind as until futoin__pending_take(p), or else
 * until the root is freed, when release(p) is called. Returns 0, or -1
 * when the root has no room for it (out of memory, or its free() is
 * pending): p is not recorded. */
int futoin__pending_put(FutoInAsyncSteps* as, ForeignPending* p, void (*release)(ForeignPending*));
/* Takes p back: release will not be called. */
void futoin__pending_take(ForeignPending* p);

/* successStep() and relinquish() on another implementation's object. */
void futoin__foreign_success_step(FutoInAsyncSteps* as, FutoInArgs* args);
void futoin__foreign_relinquish(FutoInAsyncSteps* as);

#pragma GCC visibility pop

#endif /* FUTOIN_INTEROP_IMPL_H */
