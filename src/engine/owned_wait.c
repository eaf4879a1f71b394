/* SPDX-License-Identifier: MIT */
/*
 * Owned waits: a step parked by library code (a lock, await, work, an I/O
 * step) is ended only by that code, named by the key it armed the wait
 * with. The flow's interface is the same object for every step of the
 * flow, so a success() through it cannot tell which step it was meant
 * for; the key can. abi_table.c refuses interface completions on such a
 * wait, cross_thread_calls.c applies the same rule to queued ones.
 *
 * The sync objects park and wake every contended flow through here, so
 * the common case (a flow of ours, on its loop thread) is kept inline.
 */
#include "engine/engine_impl.h"
#include "engine/cross_thread_calls_impl.h"

/* Our flow behind as: the common case costs one comparison. */
static FUTOIN_ALWAYS_INLINE Flow* flow_of(FutoInAsyncSteps* as)
{
    return as->api == &futoin__flow_api ? (Flow*)as : futoin__flow_of(as);
}

static FUTOIN_ALWAYS_INLINE int owned_by(Flow* fl, const void* key)
{
    Frame* f = &fl->frames[fl->depth];
    return (f->flags & (FR_WAIT | FR_EXTRAS)) == (FR_WAIT | FR_EXTRAS)
            && (f->extras_id & FUTOIN_EXTRAS_OWNED)
            && futoin__extras_slot(futoin__flow_ctx(fl), f->extras_id)->cancel_data == key;
}

int futoin__flow_owned_by(Flow* fl, const void* key)
{
    return owned_by(fl, key);
}

FUTOIN_COLD static void wait_owned_refused(Flow* fl, const void* key)
{
    futoin__misuse(fl,
            key ? "futoin_wait_owned() called outside the step's execute callback"
                : "futoin_wait_owned() with a NULL key");
}

void futoin_wait_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* key)
{
    Flow* fl = flow_of(as);
    if (!fl) {
        if (ch) {
            as->api->setCancel(as, key, ch);
        } else {
            as->api->waitExternal(as);
        }
        return;
    }
    /* As setCancel(): the step's own execute callback is running. */
    if (FUTOIN_UNLIKELY(fl->cb != CB_EXEC || !key)) {
        wait_owned_refused(fl, fl->cb != CB_EXEC ? key : NULL);
        return;
    }
    Frame* f = &fl->frames[fl->depth];
    FrameExtra* x = frame_extras_make(fl, f);
    x->on_cancel = ch;
    x->cancel_data = key;
    f->extras_id |= FUTOIN_EXTRAS_OWNED;
    f->flags |= FR_WAIT;
}

/* 1: a step (or error handler) of fl runs, and this is its own
 * completion: owner code called from it, say an I/O call that finished at
 * once (a loop callback, where late completions come from, never runs
 * under a step, and a call from another thread is queued). 0: the owned
 * wait armed with key is parked. -1: no such wait (it ended first, or the
 * key is wrong). */
static FUTOIN_ALWAYS_INLINE int owned_state(Flow* fl, const void* key)
{
    if (futoin__flow_in_step(fl)) {
        return 1;
    }
    if (!key || !owned_by(fl, key)) {
        return -1;
    }
    /* futoin__flow_waits_external(), less what owned_by() saw already. */
    return fl->cb == CB_NONE && fl->state == FS_WAIT && futoin__flow_root(fl)->state == RS_RUNNING
            ? 0
            : -1;
}

int futoin_owned_success(FutoInAsyncSteps* as, const void* key, FutoInArgs* args)
{
    Flow* fl = flow_of(as);
    if (!fl) {
        if (args) {
            as->api->success(as, args);
        } else {
            futoin_success_empty(as);
        }
        return 0;
    }
    if (FUTOIN_UNLIKELY(!futoin__loop_on_thread(fl->loop))) {
        if (!key) {
            futoin__args_drop(args);
            return -1;
        }
        futoin__xflow_success(fl, args, key);
        return 0;
    }
    switch (owned_state(fl, key)) {
    case 0:
        futoin__flow_success(fl, args);
        return 0;
    case 1:
        as->api->success(as, args); /* the step completes itself: usual checks */
        return 0;
    default:
        futoin__args_drop_refused(fl, args);
        return -1;
    }
}

int futoin_owned_error(FutoInAsyncSteps* as, const void* key, const char* code, const char* info)
{
    Flow* fl = flow_of(as);
    if (!fl) {
        as->api->handle_error(as, code, info);
        return 0;
    }
    if (!code) {
        return -1;
    }
    if (FUTOIN_UNLIKELY(!futoin__loop_on_thread(fl->loop))) {
        if (!key) {
            return -1;
        }
        futoin__xflow_error(fl, code, info, key);
        return 0;
    }
    switch (owned_state(fl, key)) {
    case 0:
        futoin__flow_error(fl, code, info);
        return 0;
    case 1:
        as->api->handle_error(as, code, info);
        return 0;
    default:
        return -1;
    }
}
