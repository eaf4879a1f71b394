/* SPDX-License-Identifier: MIT */
/*
 * What a step may ask of its flow through the interface, once abi_table.c
 * has checked the calling context: success(), error(), setTimeout(),
 * setCancel(), waitExternal(), break and continue.
 */
#include "engine/engine_impl.h"

void futoin__flow_success(Flow* fl, FutoInArgs* args)
{
    Frame* f = &fl->frames[fl->depth];
    if (f->kind == SK_LOOP && args) {
        /* A loop body's own results go nowhere: not into the next
         * iteration, nor past the loop. Like results_set(), this takes
         * the values over without clearing the caller's holders. Their
         * cleanups are user code that may cancel or free the root: they
         * run once the step is complete (success_then_drop). */
        if (futoin__args_need_cleanup(args)) {
            futoin__success_then_drop(fl, args);
            return;
        }
        args = NULL;
    }
    if (futoin__flow_in_step(fl)) {
        fl->out = OUT_SUCCESS;
        fl->add_link = NULL;
        if (args || fl->results) { /* else nothing to set or drop */
            futoin__results_set(fl, args);
        }
        return;
    }
    /* External completion of a waiting step: resume on the next round.
     * One test of the flags for the common waiter, which holds no lock
     * phase, timer or cancel handler. */
    if (f->flags & (FR_LOCK_PHASE | FR_EXTRAS)) {
        if (f->flags & FR_LOCK_PHASE) {
            futoin__lock_acquired(fl, f);
        }
        frame_settle(fl, f);
    }
    f->flags &= (uint8_t)~FR_WAIT;
    fl->pending = PD_NEXT;
    futoin__rq_push(fl);
    if (fl->results) {
        /* Last: results it replaces have cleanups, which are user code;
         * held, so that one that frees the root does not destroy it under
         * the others. */
        Root* r = futoin__flow_root(fl);
        futoin__root_hold(r);
        futoin__results_set(fl, args);
        futoin__root_unhold(r);
    } else if (args) {
        futoin__results_set(fl, args);
    }
}

void futoin__flow_error(Flow* fl, const char* code, const char* info)
{
    ++futoin__flow_ctx(fl)->n_errors;
    futoin__trace_capture(fl, fl->depth);
    futoin__flow_set_error(fl, code, info);
    if (futoin__flow_in_step(fl)) {
        fl->out = OUT_ERROR;
        fl->ctl = CTL_NONE;
        fl->add_link = NULL;
        return;
    }
    fl->ctl = CTL_NONE;
    /* From outside the engine: the unwind runs user code (cleanups), which
     * may free the root; that takes effect once the unwind is done. */
    Root* r = futoin__flow_root(fl);
    futoin__root_hold(r);
    if (futoin__start_unwind(fl, fl->depth, 1)) {
        futoin__rq_push(fl);
    }
    futoin__root_unhold(r);
}

static void on_timeout(void* data, uintptr_t k)
{
    Flow* fl = data;
    Root* r = futoin__flow_root(fl);
    Frame* f = &fl->frames[k];
    f->flags &= (uint8_t)~FR_TIMER;
    futoin__frame_extras(fl, f)->timer.slot = 0;
    ++futoin__flow_ctx(fl)->n_timeouts;
    futoin__trace_capture(fl, (uint32_t)k);
    futoin__root_hold(r);
    futoin__flow_set_error(fl, FUTOIN_TIMEOUT, futoin__wait_info_of(fl, (uint32_t)k));
    fl->ctl = CTL_NONE;
    futoin__rq_remove(fl);
    if (futoin__start_unwind(fl, (uint32_t)k, 0)) {
        futoin__rq_push(fl);
    }
    futoin__root_unhold(r);
}

void futoin__flow_set_timeout(Flow* fl, uint32_t ms)
{
    Frame* f = &fl->frames[fl->depth];
    frame_stop_timer(fl, f);
    FutoInHandle h = futoin__loop_deferred_aux(fl->loop, ms, fl, fl->depth, on_timeout);
    if (FUTOIN_UNLIKELY(!h.data1)) {
        /* Unarmed, the step could wait forever. */
        futoin__step_out_of_memory(fl, "setTimeout()");
        return;
    }
    frame_extras_make(fl, f)->timer = futoin__loop_ref(h);
    f->flags |= FR_TIMER | FR_WAIT;
}

void futoin__flow_set_cancel(Flow* fl, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    Frame* f = &fl->frames[fl->depth];
    FrameExtra* x = frame_extras_make(fl, f);
    x->on_cancel = ch;
    x->cancel_data = data;
    f->flags |= FR_WAIT;
}

int futoin__flow_drop_cancel(Flow* fl, FutoInAsyncSteps_cancel_callback ch, void* data)
{
    FrameExtra* x = futoin__frame_extras(fl, &fl->frames[fl->depth]);
    if (!x || x->on_cancel != ch || x->cancel_data != data) {
        return 0;
    }
    x->on_cancel = NULL;
    return 1;
}

void futoin__flow_wait(Flow* fl)
{
    fl->frames[fl->depth].flags |= FR_WAIT;
}

void futoin__flow_ctl(Flow* fl, uint8_t ctl, const char* label)
{
    futoin__flow_set_error(fl, label, label);
    fl->out = futoin__outcome_of_ctl(ctl);
    fl->add_link = NULL;
}
