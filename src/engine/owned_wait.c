/* SPDX-License-Identifier: MIT */
/*
 * Owned waits: a step parked by library code (a lock, await, work, an I/O
 * step) is ended only by that code, named by the key it armed the wait
 * with. The flow's interface is the same object for every step of the
 * flow, so a success() through it cannot tell which step it was meant
 * for; the key can. abi_table.c refuses interface completions on such a
 * wait, cross_thread_calls.c applies the same rule to queued ones.
 */
#include "engine/engine_internal.h"
#include "threads/cross_thread_calls.h"

void futoin_wait_owned(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* key)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        if (ch) {
            as->api->setCancel(as, key, ch);
        } else {
            as->api->waitExternal(as);
        }
        return;
    }
    if (!futoin__loop_on_thread(fl->loop) || fl->cb != CB_EXEC) {
        futoin__misuse(fl, "futoin_wait_owned() called outside the step's execute callback");
        return;
    }
    if (!key) {
        futoin__misuse(fl, "futoin_wait_owned() with a NULL key");
        return;
    }
    futoin__flow_wait_owned(fl, ch, key);
}

/* The owned wait armed with key is on top of fl: the running step's own
 * (its callback is still on the stack) or a parked one. */
static int owned_here(Flow* fl, const void* key)
{
    if (!futoin__flow_owned_by(fl, key)) {
        return 0;
    }
    return fl->cb == CB_EXEC || futoin__flow_waits_external(fl);
}

int futoin_owned_success(FutoInAsyncSteps* as, const void* key, FutoInArgs* args)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        if (args) {
            as->api->success(as, args);
        } else {
            futoin_success(as);
        }
        return 0;
    }
    if (!key) {
        futoin__args_drop(args);
        return -1;
    }
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_success(fl, args, key);
        return 0;
    }
    if (!owned_here(fl, key)) {
        futoin__args_drop(args);
        return -1;
    }
    if (fl->cb == CB_EXEC) {
        as->api->success(as, args); /* the step completes itself: usual checks */
    } else {
        futoin__flow_success(fl, args);
    }
    return 0;
}

int futoin_owned_error(FutoInAsyncSteps* as, const void* key, const char* code, const char* info)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        as->api->handle_error(as, code, info);
        return 0;
    }
    if (!key || !code) {
        return -1;
    }
    if (!futoin__loop_on_thread(fl->loop)) {
        futoin__xflow_error(fl, code, info, key);
        return 0;
    }
    if (!owned_here(fl, key)) {
        return -1;
    }
    if (fl->cb == CB_EXEC) {
        as->api->handle_error(as, code, info);
    } else {
        futoin__flow_error(fl, code, info);
    }
    return 0;
}
