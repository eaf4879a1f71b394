/* SPDX-License-Identifier: MIT */
/*
 * The C counterparts of await(future) and promise() (spec 1.13, 2.2.3):
 * a completion object that any callback may resolve or reject, awaited as a
 * step; and a call that runs a root to completion and reports its outcome.
 */
#include "engine/engine_impl.h"
#include "engine/interop_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C_PENDING = 0, C_RESOLVED, C_REJECTED };

/* The await step owns a reference to the completion (StepOwner), released
 * by the engine when the step is dropped unstarted or its frame ends, so
 * freeing a completion that a step still refers to is deferred safely. */
struct FutoInCompletion {
    StepOwner owner; /* first: the engine sees the completion as a StepOwner */
    uint8_t state;
    uint8_t nargs;
    uint8_t registered; /* an await step refers to the completion */
    uint8_t freed;      /* freed by the user while registered */
    FutoInArgs args;
    char* code;
    char* info;
    FutoInAsyncSteps* waiter; /* the awaiting step, while it waits */
    FutoInAsyncSteps_error_callback user_eh;
    void* user_data;
};

static char* dup_str(const char* s)
{
    size_t len = strlen(s ? s : "");
    char* p = futoin__xmalloc(len + 1);
    memcpy(p, s ? s : "", len + 1);
    return p;
}

static void completion_release(FutoInCompletion* c)
{
    futoin__args_clear(&c->args, &c->nargs);
    free(c->code);
    free(c->info);
    free(c);
}

static void await_step_ended(StepOwner* self)
{
    FutoInCompletion* c = (FutoInCompletion*)self;
    c->waiter = NULL;
    c->registered = 0;
    if (c->freed) {
        completion_release(c);
    }
}

FutoInCompletion* futoin_completion_new(void)
{
    FutoInCompletion* c = calloc(1, sizeof(FutoInCompletion));
    if (c) {
        c->owner.release = await_step_ended;
        c->owner.kind = OWNER_AWAIT;
    }
    return c;
}

int futoin_completion_resolve(FutoInCompletion* c, FutoInArgs* args)
{
    if (!c || c->freed || c->state != C_PENDING) {
        futoin__args_drop(args);
        return -1;
    }
    c->state = C_RESOLVED;
    if (c->waiter) {
        FutoInAsyncSteps* w = c->waiter;
        c->waiter = NULL;
        futoin_owned_success(w, c, args);
    } else {
        c->nargs = futoin__args_take(&c->args, args);
    }
    return 0;
}

int futoin_completion_reject(FutoInCompletion* c, const char* code, const char* info)
{
    if (!c || c->freed || c->state != C_PENDING || !code) {
        return -1;
    }
    c->state = C_REJECTED;
    if (c->waiter) {
        FutoInAsyncSteps* w = c->waiter;
        c->waiter = NULL;
        futoin_owned_error(w, c, code, info);
    } else {
        c->code = dup_str(code);
        c->info = dup_str(info);
    }
    return 0;
}

void futoin_completion_free(FutoInCompletion* c)
{
    if (!c || c->freed) {
        return;
    }
    c->freed = 1;
    if (c->waiter) {
        FutoInAsyncSteps* w = c->waiter;
        c->waiter = NULL;
        futoin_owned_error(w, c, FUTOIN_INTERNAL_ERROR, "completion freed while a step awaited it");
    }
    if (!c->registered) {
        completion_release(c);
    }
}

static void await_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInCompletion* c = data;
    if (c->freed) {
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "completion freed before it was awaited");
        return;
    }
    switch (c->state) {
    case C_RESOLVED: {
        FutoInArgs out = c->args;
        memset(&c->args, 0, sizeof(c->args));
        c->nargs = 0;
        as->api->success(as, &out);
        return;
    }
    case C_REJECTED:
        as->api->handle_error(as, c->code, c->info);
        return;
    default:
        /* Owned by the completion: a stray success() on the flow cannot
         * end the await, only resolve/reject/free of c can. */
        c->waiter = as;
        futoin_wait_owned(as, NULL, c);
        return;
    }
}

static void await_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    FutoInCompletion* c = data;
    c->user_eh(as, c->user_data, code);
}

/* ---- await on another implementation's AsyncSteps ----
 * Its engine does not tell us when it drops the await step, so the
 * registration is recorded on the root (engine/interop_impl.h) until the step runs,
 * and from then on tied to the step's stack() memory, whose cleanup runs
 * when the step is destroyed, after its error handler. */

typedef struct ForeignAwait {
    ForeignPending pending; /* first: released as a ForeignPending */
    FutoInCompletion* c;
    FutoInAsyncSteps_error_callback user_eh;
    void* user_data;
} ForeignAwait;

static void foreign_await_end(ForeignAwait* fa)
{
    await_step_ended(&fa->c->owner);
    free(fa);
}

static void foreign_await_release(ForeignPending* p)
{
    foreign_await_end((ForeignAwait*)p);
}

static void foreign_await_cleanup(void* value)
{
    foreign_await_end(*(ForeignAwait**)value);
}

static void foreign_await_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    FutoInCompletion* c = data;
    c->waiter = NULL;
}

static void foreign_await_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ForeignAwait* fa = data;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the slot is a pointer, sizeof(*slot) is meant */
    ForeignAwait** slot = as->api->stack(as, sizeof(*slot), foreign_await_cleanup);
    if (!slot) {
        /* Stays recorded on the root, released with it. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "await(): out of memory");
        return;
    }
    futoin__pending_take(&fa->pending);
    *slot = fa;
    FutoInCompletion* c = fa->c;
    if (c->state == C_PENDING && !c->freed) {
        c->waiter = as;
        /* Not just waitExternal(): an engine that aborts the step must
         * also detach it from the completion. */
        as->api->setCancel(as, c, foreign_await_cancel);
        return;
    }
    await_step(as, c, NULL);
}

static void foreign_await_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    ForeignAwait* fa = data;
    fa->user_eh(as, fa->user_data, code);
}

static void foreign_await(FutoInAsyncSteps* as, FutoInCompletion* c,
        FutoInAsyncSteps_error_callback eh, void* data)
{
    ForeignAwait* fa = calloc(1, sizeof(*fa));
    if (!fa || futoin__pending_put(as, &fa->pending, foreign_await_release) != 0) {
        free(fa);
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "await(): out of memory");
        return;
    }
    c->registered = 1;
    fa->c = c;
    fa->user_eh = eh;
    fa->user_data = data;
    as->api->add(as, fa, foreign_await_step, eh ? foreign_await_eh : NULL);
}

void futoin_await(FutoInAsyncSteps* as, FutoInCompletion* c, FutoInAsyncSteps_error_callback eh,
        void* data)
{
    Flow* fl = futoin__flow_of(as);
    const char* bad = !c || c->freed ? "await() with a NULL or freed completion"
            : c->registered          ? "await(): the completion is already awaited by another step"
                                     : NULL;
    if (!fl) {
        if (bad) {
            as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, bad);
        } else {
            foreign_await(as, c, eh, data);
        }
        return;
    }
    if (bad) {
        futoin__misuse(fl, "%s", bad);
        return;
    }
    if (futoin__add_owned_step(fl, "await", &c->owner, await_step, eh ? await_eh : NULL, c) == 0) {
        c->registered = 1;
        c->user_eh = eh;
        c->user_data = data;
    }
}

/* ------------------------------------------------------------------------ */
/* promise                                                                   */

typedef struct PromiseState {
    FutoInOutcome* out;
    int done;
} PromiseState;

static void promise_done(void* data, Root* r, const char* code, FutoInArgs* args)
{
    PromiseState* ps = data;
    FutoInOutcome* out = ps->out;
    ps->done = 1;
    if (code) {
        snprintf(out->code_buf, sizeof(out->code_buf), "%s", code);
        out->code = out->code_buf;
        snprintf(out->info, sizeof(out->info), "%s", futoin__root_info(r));
    } else if (args) {
        /* The outcome takes the values over; the engine's copy is emptied. */
        memcpy(&out->args, args, sizeof(FutoInArgs));
        memset(args, 0, sizeof(FutoInArgs));
    }
}

int futoin_promise(FutoInAsyncSteps* root, FutoInOutcome* out)
{
    if (out) {
        memset(out, 0, sizeof(*out));
    }
    Flow* fl = futoin__flow_of(root);
    /* Only an idle root that nothing of the loop is running: not inside a
     * dispatch or any other callback of the loop (the loop cannot be run
     * from within itself), and not one whose free() is under way (a
     * cleanup that free() runs may call this for the very root it belongs
     * to). */
    if (!fl || !out || !futoin__flow_is_idle_root(fl) || futoin__flow_ctx(fl)->dispatching
            || futoin__loop_is_driving(fl->loop)) {
        return FUTOIN_PROMISE_MISUSE;
    }
    Root* r = futoin__flow_root(fl);
    FutoInLoop* loop = r->main.loop;
    PromiseState ps = { out, 0 };
    futoin__root_on_done(r, promise_done, &ps);
    futoin__root_execute(fl, NULL, NULL);
    while (!ps.done) {
        if (!futoin_loop_iterate(loop, NULL)) {
            break;
        }
        if (!ps.done) {
            futoin__loop_wait_next_timer(loop);
        }
    }
    if (!ps.done) {
        futoin__root_on_done(r, NULL, NULL);
        futoin__root_cancel(r);
        return FUTOIN_PROMISE_STALLED;
    }
    return out->code ? FUTOIN_PROMISE_ERROR : FUTOIN_PROMISE_OK;
}

void futoin_outcome_reset(FutoInOutcome* out)
{
    if (out) {
        futoin__args_drop(&out->args);
    }
}
