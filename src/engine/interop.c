/*
 * SPDX-License-Identifier: MIT
 *
 * successStep() and relinquish() for AsyncSteps of other implementations,
 * and the per-root record of what their unstarted steps own (engine/interop_impl.h).
 */
#include "engine/engine_impl.h"
#include "engine/interop_impl.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The pending list: a state variable of the root                           */

/* Each entry knows the list it is on (ForeignPending.on), so that it can
 * leave without knowing its root. */
static const char pending_name[] = "futoin.c/pending";
#define PENDING_LINK offsetof(ForeignPending, link)

static void* pending_allocate(void* data)
{
    (void)data;
    return calloc(1, sizeof(List));
}

static void pending_cleanup(void* data, void* value)
{
    (void)data;
    List* list = value;
    /* Each entry leaves the list before its release runs: a release may
     * call back into the library, even record a new entry here. */
    while (list->head) {
        ForeignPending* p = list->head;
        futoin__pending_take(p);
        p->release(p);
    }
    free(list);
}

int futoin__pending_put(FutoInAsyncSteps* as, ForeignPending* p, void (*release)(ForeignPending*))
{
    List* list = as->api->stateVariable(as, NULL, pending_name, pending_allocate, pending_cleanup);
    if (!list) {
        return -1;
    }
    p->release = release;
    p->on = list;
    list_push_back(list, p, PENDING_LINK);
    return 0;
}

void futoin__pending_take(ForeignPending* p)
{
    if (p->on) {
        list_remove(p->on, p, PENDING_LINK);
        p->on = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* successStep: an added step that succeeds with the recorded values       */

typedef struct ValueStep {
    ForeignPending pending; /* first: released as a ForeignPending */
    FutoInArgs args;
} ValueStep;

static void value_step_release(ForeignPending* p)
{
    ValueStep* v = (ValueStep*)p;
    futoin__args_drop(&v->args);
    free(v);
}

static void value_step_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* in)
{
    (void)in;
    ValueStep* v = data;
    futoin__pending_take(&v->pending);
    FutoInArgs out = v->args;
    free(v);
    as->api->success(as, &out);
}

void futoin__foreign_success_step(FutoInAsyncSteps* as, FutoInArgs* args)
{
    ValueStep* v = calloc(1, sizeof(*v));
    if (!v || futoin__pending_put(as, &v->pending, value_step_release) != 0) {
        free(v);
        futoin__args_drop(args);
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "successStep(): out of memory");
        return;
    }
    if (args) {
        v->args = *args;
        memset(args, 0, sizeof(*args));
    }
    as->api->add(as, v, value_step_run, NULL);
}

/* ------------------------------------------------------------------------ */
/* relinquish: a step completed from the loop's next round                  */

typedef struct Yield {
    FutoInAsyncSteps* as;
    FutoInHandle handle;
    int armed;
} Yield;

static void yield_fire(void* data)
{
    Yield* y = data;
    y->armed = 0;
    futoin_success(y->as);
}

static void yield_disarm(Yield* y)
{
    if (y->armed) {
        y->armed = 0;
        y->as->api->sched_cancel(y->as, &y->handle);
    }
}

static void yield_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    yield_disarm(data);
}

/* An engine that destroys the step without calling its cancel handler
 * still leaves no callback behind. */
static void yield_cleanup(void* value)
{
    yield_disarm(value);
}

static void yield_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* in)
{
    (void)data;
    (void)in;
    Yield* y = as->api->stack(as, sizeof(*y), yield_cleanup);
    if (!y) {
        return; /* implicit success: no turn is given up, nothing is lost */
    }
    y->as = as;
    y->handle = as->api->sched_immediate(as, y, yield_fire);
    y->armed = 1;
    as->api->setCancel(as, y, yield_cancel);
}

void futoin__foreign_relinquish(FutoInAsyncSteps* as)
{
    as->api->add(as, NULL, yield_step, NULL);
}
