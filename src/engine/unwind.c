/* SPDX-License-Identifier: MIT */
/*
 * Errors, break and continue: unwinding a flow through its error handlers
 * and loops; aborting frames (cancel, free, a failed sibling branch)
 * innermost first, without a C call per level of nesting.
 */
#include "engine/engine_impl.h"

/* An error was raised at frame k: the frames above k are aborted innermost
 * first; frame k's own work stops (own: the step failed by itself, so its
 * cancel handler is dropped; else, e.g. a timeout, it is called). Returns 0
 * if a cancel handler aborted the whole flow meanwhile. */
int futoin__start_unwind(Flow* fl, uint32_t k, int own)
{
    uint32_t gen = futoin__flow_mark(fl);
    /* The frames above k and, if frame k is a parallel, its branches. */
    if ((fl->depth > k || futoin__live_branches(fl)) && !futoin__flow_unwind_to(fl, k)) {
        return 0;
    }
    Frame* f = &fl->frames[k];
    frame_stop_timer(fl, f);
    if (own) {
        if (f->flags & FR_EXTRAS) {
            futoin__frame_extras(fl, f)->on_cancel = NULL;
        }
    } else {
        futoin__call_cancel(fl, f);
        if (!futoin__flow_survived(fl, gen)) {
            return 0;
        }
        f = &fl->frames[k];
    }
    Step* queued = f->q_head;
    ArgsBox* dropped = fl->results;
    f->q_head = NULL;
    f->flags &= (uint8_t) ~(FR_WAIT | FR_PAR_WAIT);
    fl->results = NULL;
    fl->pending = PD_UNWIND;
    if (queued || dropped) { /* user cleanups, once the flow is consistent */
        EngineCtx* ctx = futoin__flow_ctx(fl);
        futoin__queue_free(ctx, queued);
        if (dropped) {
            futoin__box_free(ctx, dropped);
        }
        return futoin__flow_survived(fl, gen);
    }
    return 1;
}

/* The frame's error handler, if its step had one. A sync frame's node
 * holds the critical section's, which belongs to the section's own frame. */
static inline FutoInAsyncSteps_error_callback frame_eh(const Frame* f)
{
    return f->node && f->kind != SK_LOOP && f->kind != SK_SYNC ? f->node->eh : NULL;
}

static int label_matches(const LoopSpec* l, const char* label)
{
    if (!label || !*label) {
        return 1;
    }
    const char* own = futoin__loop_label(l);
    return own && strcmp(own, label) == 0;
}

/* Walks the stack from the top, calling error handlers (not for
 * break/continue), until the error is handled or escapes the flow.
 * Returns 1 if a handler recovered and the flow goes on with its next
 * step, for the caller to run or queue. */
int futoin__flow_unwind_run(Flow* fl)
{
    fl->pending = PD_NEXT;
    for (;;) {
        if (fl->depth == 0) {
            futoin__flow_failed(fl);
            return 0;
        }
        Frame* f = &fl->frames[fl->depth];
        if (fl->ctl && f->kind == SK_LOOP && label_matches(f->node, futoin__flow_code(fl))) {
            uint8_t ctl = fl->ctl;
            uint32_t gen = futoin__flow_mark(fl);
            fl->ctl = CTL_NONE;
            /* The iteration is abandoned: a cancel handler the body left
             * armed runs (the breaking step's own one was dropped). */
            if (ctl == CTL_BREAK) {
                frame_pop(fl, 1);
            } else {
                futoin__call_cancel(fl, f);
                if (futoin__flow_survived(fl, gen)) {
                    (void)iteration_reset(fl, &fl->frames[fl->depth]);
                }
            }
            /* CONTINUE: the loop frame is empty, so advance() completes
             * the iteration and starts the next one. */
            return futoin__flow_survived(fl, gen);
        }
        /* Sub-steps of this frame that have not started yet are abandoned
         * with it: the error handler must see an empty queue, or it could
         * neither call success() nor tell its own added steps from them. */
        if (f->q_head) {
            Step* queued = f->q_head;
            uint32_t gen = futoin__flow_mark(fl);
            f->q_head = NULL;
            futoin__queue_free(futoin__flow_ctx(fl), queued);
            if (!futoin__flow_survived(fl, gen)) {
                return 0;
            }
            f = &fl->frames[fl->depth];
        }
        FutoInAsyncSteps_error_callback eh = frame_eh(f);
        if (!fl->ctl && eh && !(f->flags & FR_EH_USED)) {
            f->flags |= FR_EH_USED;
            uint32_t gen = futoin__flow_mark(fl);
            fl->cb = CB_ERROR;
            fl->out = OUT_NONE;
            fl->add_link = &f->q_head; /* emptied above */
            eh(&fl->iface, f->node->data, futoin__flow_code(fl));
            if (!futoin__flow_survived(fl, gen)) {
                futoin__owners_flush_if_any(futoin__flow_ctx(fl));
                return 0;
            }
            fl->cb = CB_NONE;
            fl->add_link = NULL;
            f = &fl->frames[fl->depth];
            switch (fl->out) {
            case OUT_SUCCESS:
                return frame_pop(fl, 0);
            case OUT_ERROR:
                break; /* new code already stored; keep unwinding */
            case OUT_BREAK:
            case OUT_CONTINUE:
                fl->ctl = futoin__ctl_of_outcome(fl->out);
                break;
            default:
                if (f->q_head) {
                    /* Steps added in an error handler replace the step. */
                    return 1;
                }
                break;
            }
        }
        if (!frame_pop(fl, 1)) {
            return 0;
        }
    }
}

void futoin__flow_unwind(Flow* fl)
{
    if (futoin__flow_unwind_run(fl)) {
        futoin__rq_push(fl);
    }
}

int futoin__find_loop(Flow* fl, const char* label)
{
    if (label && !*label) {
        label = NULL;
    }
    for (Flow* cur = fl; cur; cur = cur->is_branch ? futoin__branch(cur)->parent : NULL) {
        for (uint32_t d = cur->depth; d > 0; --d) {
            Frame* f = &cur->frames[d];
            if (f->kind == SK_LOOP && label_matches(f->node, label)) {
                return 1;
            }
        }
    }
    return 0;
}

/* A flow whose frames above level 0 are gone ends: its level-0 queue and
 * results are taken off it, it is marked done (a branch also leaves its
 * parallel and is released), and only then are they released, since
 * their cleanups are user code that may cancel or free the root. */
static void flow_end_aborted(Flow* fl)
{
    Step* queued = fl->frames[0].q_head;
    ArgsBox* dropped = fl->results;
    fl->frames[0].q_head = NULL;
    fl->results = NULL;
    fl->add_link = NULL;
    flow_clear(fl, FS_DONE);
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (fl->is_branch) {
        futoin__branch_unlink(fl);
        futoin__flow_release(fl);
    }
    if (queued) {
        futoin__queue_free(ctx, queued);
    }
    if (dropped) {
        futoin__box_free(ctx, dropped);
    }
}

/* Aborts the frames of base above level k, innermost first, and the
 * branches of a parallel frame at level k. A parallel frame's branches go
 * before the frame, and theirs before them, to any depth: the walk goes
 * down into a branch and back up through Branch.parent rather than
 * nesting a C call per level, so neither the C stack nor the heap grows
 * with the depth (the tree of flows is the walk's stack).
 * A branch stays linked to its parallel until it has no frame left, so
 * that user code run on the way (a cancel handler, a cleanup, unlock())
 * which cancels or frees the root finds it, and aborts it with the rest.
 * Returns 0 if such code aborted base: that abort finished the walk. */
int futoin__flow_unwind_to(Flow* base, uint32_t k)
{
    uint32_t gen = futoin__flow_mark(base);
    Flow* cur = base;
    for (;;) {
        Flow* b = futoin__live_branches(cur);
        if (b) {
            /* Down into the first live branch; it is aborted from now on
             * (a callback of it still on the C stack sees its gen move). */
            futoin__branch(b)->par->pending = 0;
            futoin__rq_remove(b);
            ++b->gen;
            cur = b;
            continue;
        }
        if (cur->depth > (cur == base ? k : 0)) {
            frame_pop(cur, 1);
        } else if (cur == base) {
            return 1;
        } else {
            Flow* parent = futoin__branch(cur)->parent;
            flow_end_aborted(cur);
            cur = parent;
        }
        if (!futoin__flow_survived(base, gen)) {
            return 0;
        }
    }
}

/* Stops a flow where it is: every frame is aborted innermost first. */
void futoin__flow_abort(Flow* fl)
{
    futoin__rq_remove(fl);
    ++fl->gen;
    /* A finished flow (what free() mostly meets) has nothing to release. */
    if (flow_holds_work(fl)) {
        uint32_t gen = futoin__flow_mark(fl);
        if (fl->depth && !futoin__flow_unwind_to(fl, 0)) {
            return;
        }
        if (futoin__flow_survived(fl, gen)) {
            flow_end_aborted(fl);
            return;
        }
    }
    fl->add_link = NULL;
    flow_clear(fl, FS_DONE);
}
