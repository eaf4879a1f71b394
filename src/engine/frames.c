/* SPDX-License-Identifier: MIT */
/*
 * The frame stack's out-of-line parts: the extras table (timer, cancel
 * handler, stack() memory), wait descriptions, calling a cancel handler or
 * unlock(), and taking a frame off the stack with everything it holds.
 */
#include "engine/engine_impl.h"

#include "common/log.h"

/* Another chunk of unused extras, put in front of the free list. */
void futoin__extras_grow(EngineCtx* ctx)
{
    uint32_t n = ctx->n_extras_chunks;
    if (n == FUTOIN_EXTRAS_NONE / FUTOIN_EXTRAS_CHUNK) {
        /* 2^32 frames with extras at once: over 200 GB, like an OOM. */
        futoin_log_write(FUTOIN_LOG_FATAL, "futoin: out of frame extras");
        abort();
    }
    if ((n & (n - 1)) == 0) { /* 0, 1, 2, 4...: the array is full, double it */
        ctx->extras_chunks = futoin__xrealloc(ctx->extras_chunks,
                sizeof(FrameExtra*) * (n ? 2 * n : 1));
    }
    FrameExtra* chunk = futoin__xmalloc(sizeof(FrameExtra) * FUTOIN_EXTRAS_CHUNK);
    ctx->extras_chunks[n] = chunk;
    ctx->n_extras_chunks = n + 1;
    uint32_t base = n * FUTOIN_EXTRAS_CHUNK;
    for (uint32_t i = 0; i + 1 < FUTOIN_EXTRAS_CHUNK; ++i) {
        chunk[i].next_free = base + i + 1;
    }
    chunk[FUTOIN_EXTRAS_CHUNK - 1].next_free = ctx->extras_free;
    ctx->extras_free = base;
}

void futoin__stack_free(EngineCtx* ctx, StackBlock** head)
{
    while (*head) {
        StackBlock* b = *head;
        *head = b->hdr.h.next;
        if (b->hdr.h.cleanup) {
            b->hdr.h.cleanup(b + 1);
        }
        if (b->hdr.h.pooled) {
            futoin__pool_put(&ctx->stacks, b);
        } else {
            free(b);
        }
    }
}

void* futoin__flow_stack(Flow* fl, size_t size, void (*cleanup)(void*))
{
    Frame* f = &fl->frames[fl->depth];
    StackBlock* b;
    if (size <= STACK_POOLED_SIZE) {
        b = futoin__pool_get(&futoin__flow_ctx(fl)->stacks);
        memset(b + 1, 0, size);
        b->hdr.h.pooled = 1;
    } else {
        /* No object may be larger than PTRDIFF_MAX (pointer differences
         * within it must be defined), and the header must not wrap the
         * size around: anything larger is a block that cannot be had. */
        b = size <= PTRDIFF_MAX - sizeof(StackBlock) ? calloc(1, sizeof(StackBlock) + size) : NULL;
        if (!b) {
            return NULL;
        }
        b->hdr.h.pooled = 0;
    }
    FrameExtra* x = frame_extras_make(fl, f);
    b->hdr.h.cleanup = cleanup;
    b->hdr.h.next = x->stack;
    x->stack = b;
    return b + 1;
}

/* futoin_set_wait_info(): the text lives in a stack() block of the step,
 * told apart by this cleanup, so it costs nothing to steps that do not
 * use it and goes away with the step. */
void futoin__wait_info_block(void* value)
{
    (void)value;
}

int futoin__flow_wait_info(Flow* fl, const char* what)
{
    size_t len = strlen(what);
    char* copy = futoin__flow_stack(fl, len + 1, futoin__wait_info_block);
    if (!copy) {
        return -1;
    }
    memcpy(copy, what, len + 1);
    return 0;
}

/* Introspection: the futoin_set_wait_info() text of the frame at level d
 * (its latest one), NULL if it has none. */
const char* futoin__frame_wait_info(Flow* fl, uint32_t d)
{
    const Frame* f = &fl->frames[d];
    if (!(f->flags & FR_EXTRAS)) {
        return NULL;
    }
    for (StackBlock* b = futoin__extras_slot(futoin__flow_ctx(fl), f->extras_id)->stack; b;
            b = b->hdr.h.next) {
        if (b->hdr.h.cleanup == futoin__wait_info_block) {
            return (const char*)(b + 1);
        }
    }
    return NULL;
}

/* The innermost wait description of the frames k..depth of fl: the latest
 * block of the highest frame that has one. */
const char* futoin__wait_info_of(Flow* fl, uint32_t k)
{
    for (uint32_t d = fl->depth + 1; d-- > k;) {
        FrameExtra* x = futoin__frame_extras(fl, &fl->frames[d]);
        for (StackBlock* b = x ? x->stack : NULL; b; b = b->hdr.h.next) {
            if (b->hdr.h.cleanup == futoin__wait_info_block) {
                return (const char*)(b + 1);
            }
        }
    }
    return "";
}

/* Calls a cancel handler with the flow in the CANCEL context. */
void futoin__call_cancel(Flow* fl, Frame* f)
{
    FrameExtra* x = futoin__frame_extras(fl, f);
    FutoInAsyncSteps_cancel_callback ch = x ? x->on_cancel : NULL;
    if (!ch) {
        return;
    }
    x->on_cancel = NULL;
    uint8_t saved = fl->cb;
    Step** saved_at = fl->add_link;
    uint32_t gen = futoin__flow_mark(fl);
    fl->cb = CB_CANCEL;
    fl->add_link = NULL;
    ch(&fl->iface, x->cancel_data);
    if (futoin__flow_survived(fl, gen)) { /* else aborted or revived: its state is new */
        fl->cb = saved;
        fl->add_link = saved_at;
    }
}

/* The step on top of fl ends. aborted: it did not complete, so its cancel
 * handler runs. Either way timers stop, queued sub-steps and stack memory
 * are released and a held sync lock is unlocked.
 * The frame is taken off the stack before any user code runs, so a cancel
 * handler or unlock() that cancels or frees the root cannot pop it twice. */
/* Stops the timer of a frame taken off the stack (FR_TIMER). */
static inline void popped_timer_stop(EngineCtx* ctx, const Frame* f)
{
    FutoInHandle h = futoin__loop_handle(ctx->loop, futoin__extras_slot(ctx, f->extras_id)->timer);
    futoin__loop_cancel_local(ctx->loop, &h);
}

int futoin__frame_pop_slow(Flow* fl, int aborted)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (!aborted && (fl->frames[fl->depth].flags & FR_EXTRAS)
            && fl->frames[fl->depth].kind == SK_PLAIN && !fl->frames[fl->depth].node
            && !fl->frames[fl->depth].q_head
            && !futoin__extras_slot(ctx, fl->frames[fl->depth].extras_id)->stack) {
        /* A completed plain step that kept only a timer or a spent cancel
         * handler (setTimeout()): no user code runs, so nothing is to be
         * re-checked after. */
        Frame f = fl->frames[fl->depth--];
        if (f.flags & FR_TIMER) {
            popped_timer_stop(ctx, &f);
        }
        frame_extras_release(ctx, &f);
        return 1;
    }
    if (!aborted && fl->frames[fl->depth].kind == SK_OWNED && !fl->frames[fl->depth].flags
            && !fl->frames[fl->depth].q_head) {
        /* An owned step that completed with sub-steps: its owner only. */
        return frame_pop_owned(fl, &fl->frames[fl->depth]);
    }
    uint32_t gen = futoin__flow_mark(fl);
    if (aborted && futoin__live_branches(fl)) {
        /* Every caller has already aborted them (futoin__flow_unwind_to()); were
         * one not to, they go first, without nesting C calls per level.
         * (A parallel that completed has none left.) */
        if (!futoin__flow_unwind_to(fl, fl->depth) || !futoin__flow_survived(fl, gen)) {
            return 0;
        }
    }
    Frame f = fl->frames[fl->depth--];
    if (f.flags & FR_TIMER) {
        popped_timer_stop(ctx, &f);
    }
    if (aborted) {
        futoin__call_cancel(fl, &f);
    }
    futoin__queue_free(ctx, f.q_head);
    Step* node = f.node;
    switch (f.kind) {
    case SK_PARALLEL:
        /* Its branches are gone: see futoin__frame_pop_slow() and futoin__flow_unwind_to(). */
        assert(!((Parallel*)futoin__step_ext(node))->started
                || !((Parallel*)futoin__step_ext(node))->branches);
        futoin__step_free(ctx, node); /* and the Parallel */
        break;
    case SK_SYNC: {
        FutoInSync* sync = futoin__step_ext(node);
        if (node->held) {
            futoin__box_free(ctx, node->held);
        }
        futoin__pool_put(&ctx->steps, node);
        if (f.flags & FR_LOCKED) {
            futoin__call_unlock(fl, sync);
        }
        break;
    }
    case SK_OWNED: {
        /* Its owner goes last, after the stack memory: the data of
         * futoin_add_owned(), which the cancel handler and the stack()
         * cleanups may still use, and so may the step's callback if it is
         * the one that aborted the flow (it is on the C stack then). */
        StepOwner* o = futoin__step_ext(node);
        int defer = futoin__flow_in_step(fl);
        futoin__pool_put(&ctx->steps, node);
        frame_extras_release(ctx, &f);
        futoin__owner_end(ctx, o, defer);
        return futoin__flow_survived(fl, gen);
    }
    default:
        /* The rest own nothing a started step has not used up but their
         * loop label (SK_LOOP) or unused value. */
        if (node) {
            futoin__step_free(ctx, node);
        }
        break;
    }
    /* Last: a cancel handler may still use the step's stack memory. */
    frame_extras_release(ctx, &f);
    return futoin__flow_survived(fl, gen);
}

/* Per-iteration state of a loop frame is that of a fresh step. */
int futoin__iteration_reset_slow(Flow* fl, Frame* f)
{
    uint32_t gen = futoin__flow_mark(fl);
    Step* queued = f->q_head;
    f->q_head = NULL;
    f->flags &= (uint8_t)~FR_WAIT;
    /* What the iteration held is taken off the frame, then released: the
     * cleanups are user code. */
    Frame spent = *f;
    if (f->flags & FR_EXTRAS) {
        frame_stop_timer(fl, f);
        f->flags &= (uint8_t)~FR_EXTRAS;
    }
    if (queued) {
        futoin__queue_free(futoin__flow_ctx(fl), queued);
    }
    frame_extras_release(futoin__flow_ctx(fl), &spent);
    return futoin__flow_survived(fl, gen);
}
