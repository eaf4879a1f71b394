/* SPDX-License-Identifier: MIT */
/*
 * Observability (include/futoin/introspect.h): the walk over a loop's live
 * roots, their flows and frames, and the counters. The text dump and its
 * triggers are in observe/dump.c.
 *
 * Nothing here costs a root or a frame anything: the walk reads what the
 * engine keeps anyway.
 *  - Live roots are found in the engine's root slabs (EngineCtx.root_mem),
 *    whose memory is never handed back: a slot is a root once its first
 *    word is the flow interface's table (before that it holds the pool's
 *    free-list link), and a live one unless free_pending is set (pooled, or
 *    freed while a callback of it runs).
 *  - The flows of a root form a tree through the top frame's Parallel
 *    (branches, linked by sib_next) and Branch.parent, which the walk
 *    follows down and back up: iterative at any nesting depth, like
 *    futoin__flow_unwind_to() in engine/unwind.c.
 *  - Frames are an array per flow.
 */
#include "engine/engine_internal.h"
#include "observe/observe_impl.h"
#include "sync/sync_internal.h"

#include <futoin/introspect.h>

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static EngineCtx* ctx_if_any(FutoInLoop* loop)
{
    return (EngineCtx*)*futoin__loop_engine_slot(loop);
}

/* A flow of this library on its loop's thread, else NULL. A root that is
 * pooled (freed, no callback of it running) is no longer a flow. */
static Flow* flow_checked(FutoInAsyncSteps* as)
{
    if (!as || as->api != &futoin__flow_api) {
        return NULL;
    }
    Flow* fl = (Flow*)as;
    if (!futoin__loop_on_thread(fl->loop)) {
        return NULL;
    }
    if (!fl->is_branch) {
        const Root* r = (const Root*)(const void*)fl;
        if (r->free_pending && !r->busy) {
            return NULL;
        }
    } else if (fl->state == FS_DONE || fl->state == FS_IDLE) {
        return NULL; /* a branch that ended (or was recycled) */
    }
    return fl;
}

/* The live branches of the parallel frame on top of fl, if it is one. */
/* The ms left of a frame's timeout, if it has one armed. */
static int frame_timer(Flow* fl, const Frame* f, uint64_t* left)
{
    if (!(f->flags & FR_TIMER) || f->kind == SK_YIELD) {
        return 0; /* relinquish() holds an immediate, not a timeout */
    }
    FrameExtra* x = futoin__frame_extras(fl, f);
    return x && futoin__loop_timer_left(fl->loop, x->timer, left);
}

size_t futoin__obs_count_steps(const Step* s)
{
    size_t n = 0;
    for (; s; s = s->next) {
        ++n;
    }
    return n;
}

/* Function pointers as numbers, for printing (ISO C has no %p for them). */
uintptr_t futoin__obs_fn_addr(FutoInAsyncSteps_error_callback f)
{
    uintptr_t u = 0;
    memcpy(&u, &f, sizeof(f) < sizeof(u) ? sizeof(f) : sizeof(u));
    return u;
}

/* Copies what fits of a filled struct into the caller's (its size). */
static void copy_out(void* out, const void* full, size_t full_size, size_t size)
{
    memcpy(out, full, size < full_size ? size : full_size);
}

/* ------------------------------------------------------------------------ */
/* Roots                                                                     */

int futoin_root_iter_init(FutoInRootIter* it, FutoInLoop* loop)
{
    if (!it) {
        return -1;
    }
    it->priv_[0] = it->priv_[1] = it->priv_[2] = NULL;
    if (!loop || !futoin__loop_on_thread(loop)) {
        return -1;
    }
    EngineCtx* ctx = ctx_if_any(loop);
    if (ctx) {
        it->priv_[0] = ctx;
        it->priv_[1] = futoin__pool_first_slab(&ctx->root_mem);
    }
    return 0;
}

FutoInAsyncSteps* futoin_root_iter_next(FutoInRootIter* it)
{
    if (!it || !it->priv_[0]) {
        return NULL;
    }
    EngineCtx* ctx = it->priv_[0];
    void* slab = it->priv_[1];
    size_t i = (size_t)(uintptr_t)it->priv_[2];
    const void* flow_api = &futoin__flow_api;
    while (slab) {
        while (i < ctx->root_mem.per_slab) {
            void* e = futoin__pool_slab_elem(&ctx->root_mem, slab, i++);
            const void* first;
            memcpy(&first, e, sizeof(first));
            if (first == flow_api && !((const Root*)e)->free_pending) {
                it->priv_[1] = slab;
                it->priv_[2] = (void*)(uintptr_t)i;
                return &((Root*)e)->main.iface;
            }
        }
        slab = futoin__pool_next_slab(slab);
        i = 0;
    }
    it->priv_[0] = it->priv_[1] = it->priv_[2] = NULL;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Flows                                                                     */

/* Depth first: down into the branches of cur's parallel, else to the next
 * sibling of cur or of the nearest ancestor branch that has one. *nesting
 * (if not NULL) follows: +1 down, -1 per level up. */
Flow* futoin__obs_next_flow(Flow* cur, uint32_t* nesting)
{
    Flow* b = futoin__live_branches(cur);
    if (b) {
        if (nesting) {
            ++*nesting;
        }
        return b;
    }
    while (cur->is_branch) {
        Branch* br = futoin__branch(cur);
        if (br->sib_next) {
            return br->sib_next;
        }
        cur = br->parent;
        if (nesting) {
            --*nesting;
        }
    }
    return NULL;
}

static Flow* next_flow(Flow* cur)
{
    return futoin__obs_next_flow(cur, NULL);
}

FutoInAsyncSteps* futoin_flow_next(FutoInAsyncSteps* root, FutoInAsyncSteps* prev)
{
    Flow* rfl = flow_checked(root);
    if (!rfl || rfl->is_branch) {
        return NULL;
    }
    if (!prev) {
        return root;
    }
    Flow* cur = flow_checked(prev);
    if (!cur || &futoin__flow_root(cur)->main != rfl) {
        return NULL;
    }
    Flow* n = next_flow(cur);
    return n ? &n->iface : NULL;
}

FutoInRootState futoin__obs_root_state(Root* r)
{
    switch (r->state) {
    case RS_IDLE:
        return FUTOIN_ROOT_IDLE;
    case RS_DONE:
        return FUTOIN_ROOT_DONE;
    case RS_FAILED:
        return FUTOIN_ROOT_FAILED;
    case RS_CANCELLED:
        return FUTOIN_ROOT_CANCELLED;
    default:
        break;
    }
    if (r->busy || r->cancelling) {
        return FUTOIN_ROOT_RUNNING;
    }
    for (Flow* fl = &r->main; fl; fl = next_flow(fl)) {
        if (fl->in_rq) {
            return FUTOIN_ROOT_QUEUED;
        }
        if (fl->cb != CB_NONE) {
            return FUTOIN_ROOT_RUNNING;
        }
    }
    return FUTOIN_ROOT_WAITING;
}

static FutoInFlowState flow_state_of(const Flow* fl)
{
    const Root* r = futoin__flow_root(fl);
    if (r->state == RS_IDLE) {
        return FUTOIN_FLOW_IDLE;
    }
    if (r->state != RS_RUNNING) {
        return FUTOIN_FLOW_FINISHED;
    }
    if (fl->cb != CB_NONE) {
        return FUTOIN_FLOW_RUNNING;
    }
    if (fl->in_rq) {
        return FUTOIN_FLOW_QUEUED;
    }
    switch (fl->state) {
    case FS_WAIT:
        return FUTOIN_FLOW_WAITING;
    case FS_IDLE:
        return FUTOIN_FLOW_IDLE;
    case FS_DONE:
        return FUTOIN_FLOW_FINISHED;
    default:
        return FUTOIN_FLOW_RUNNING; /* being advanced by the dispatcher */
    }
}

static FutoInWaitKind wait_kind_of(const Flow* fl)
{
    const Frame* f = &fl->frames[fl->depth];
    if (f->flags & FR_PAR_WAIT) {
        return FUTOIN_WAIT_PARALLEL;
    }
    if (!fl->depth) {
        return FUTOIN_WAIT_NONE;
    }
    switch (f->kind) {
    case SK_YIELD:
        return FUTOIN_WAIT_YIELD;
    case SK_SYNC:
        if (f->flags & FR_LOCK_PHASE) {
            return FUTOIN_WAIT_SYNC;
        }
        break;
    case SK_OWNED: {
        const StepOwner* o = futoin__step_ext(f->node);
        if (futoin__owner_is(o, OWNER_AWAIT)) {
            return FUTOIN_WAIT_AWAIT;
        }
        if (futoin__owner_is(o, OWNER_WORK)) {
            return FUTOIN_WAIT_WORK;
        }
        break;
    }
    default:
        break;
    }
    return (f->flags & FR_WAIT) ? FUTOIN_WAIT_EXTERNAL : FUTOIN_WAIT_NONE;
}

int futoin_root_info(FutoInAsyncSteps* root, FutoInRootInfo* out, size_t size)
{
    Flow* fl = flow_checked(root);
    if (!fl || fl->is_branch || !out) {
        return -1;
    }
    Root* r = (Root*)fl;
    FutoInRootInfo ri;
    memset(&ri, 0, sizeof(ri));
    ri.root = root;
    ri.state = futoin__obs_root_state(r);
    if (r->state == RS_RUNNING) {
        for (Flow* f = fl; f; f = next_flow(f)) {
            ++ri.flows;
        }
    } else {
        ri.flows = 1;
    }
    ri.depth = fl->depth;
    ri.queued = futoin__obs_count_steps(fl->frames[0].q_head);
    ri.error_code = futoin__flow_code(fl);
    ri.error_info = futoin__root_info(r);
    copy_out(out, &ri, sizeof(ri), size);
    return 0;
}

void futoin__obs_flow_info_fill(Flow* fl, FutoInFlowInfo* out)
{
    Root* r = futoin__flow_root(fl);
    FutoInFlowInfo fi;
    memset(&fi, 0, sizeof(fi));
    fi.flow = &fl->iface;
    fi.root = &r->main.iface;
    fi.parent = fl->is_branch ? &futoin__branch(fl)->parent->iface : NULL;
    fi.depth = fl->depth;
    fi.state = flow_state_of(fl);
    fi.wait = fi.state == FUTOIN_FLOW_WAITING ? wait_kind_of(fl) : FUTOIN_WAIT_NONE;
    fi.timer_level = UINT32_MAX;
    fi.wait_info = "";
    for (uint32_t d = 0; d <= fl->depth; ++d) {
        uint64_t left;
        if (frame_timer(fl, &fl->frames[d], &left)
                && (fi.timer_level == UINT32_MAX || left <= fi.timer_left_ms)) {
            fi.timer_level = d;
            fi.timer_left_ms = left;
        }
    }
    for (uint32_t d = fl->depth + 1; d-- > 0;) {
        const char* w = futoin__frame_wait_info(fl, d);
        if (w) {
            fi.wait_info = w;
            break;
        }
    }
    fi.error_code = futoin__flow_code(fl);
    fi.error_info = futoin__flow_info(fl);
    fi.steps_started = atomic_load_explicit(&fl->xepoch, memory_order_relaxed);
    *out = fi;
}

int futoin_flow_info(FutoInAsyncSteps* flow, FutoInFlowInfo* out, size_t size)
{
    Flow* fl = flow_checked(flow);
    if (!fl || !out) {
        return -1;
    }
    FutoInFlowInfo fi;
    futoin__obs_flow_info_fill(fl, &fi);
    copy_out(out, &fi, sizeof(fi), size);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */

void futoin__obs_frame_describe(Flow* fl, uint32_t level, FutoInFrameInfo* fi)
{
    const Frame* f = &fl->frames[level];
    memset(fi, 0, sizeof(*fi));
    fi->level = level;
    fi->queued = futoin__obs_count_steps(f->q_head);
    fi->wait_info = futoin__frame_wait_info(fl, level);
#if FUTOIN_TRACING
    fi->callback = f->fn;
    fi->file = f->file;
    fi->line = f->line;
#endif
    if (level == 0) {
        fi->kind = FUTOIN_FRAME_QUEUE;
        fi->error_handler = fl->is_branch ? NULL : f->unhandled;
        if (fi->error_handler) {
            fi->flags |= FUTOIN_FRAME_ERROR_HANDLER;
            fi->data = futoin__flow_root(fl)->unhandled_data;
        }
    } else {
        const Step* node = f->node;
        switch (f->kind) {
        case SK_LOOP: {
            fi->kind = FUTOIN_FRAME_LOOP;
            fi->iteration = node->i;
            fi->count = node->count;
            fi->label = futoin__loop_label(node);
            fi->data = node->loop_data;
            break;
        }
        case SK_PARALLEL: {
            const Parallel* p = futoin__step_ext(node);
            fi->kind = FUTOIN_FRAME_PARALLEL;
            fi->branches = p->started ? p->pending : (uint32_t)futoin__obs_count_steps(p->b_head);
            break;
        }
        case SK_SYNC: {
            fi->kind = FUTOIN_FRAME_SYNC;
            fi->sync = futoin__step_ext(node);
            fi->data = node->data; /* the critical section's */
            FrameExtra* x = futoin__frame_extras(fl, f);
            SyncWaitPos pos;
            int ours = futoin__sync_describe(fi->sync,
                    x && (f->flags & FR_LOCK_PHASE) ? x->on_cancel : NULL,
                    x ? x->cancel_data : NULL, &pos);
            fi->sync_kind = ours ? pos.kind : "sync";
            fi->sync_queue = pos.queue;
            fi->sync_position = pos.position;
            fi->sync_queue_length = pos.length;
            break;
        }
        case SK_VALUE:
            fi->kind = FUTOIN_FRAME_VALUE;
            break;
        case SK_YIELD:
            fi->kind = FUTOIN_FRAME_YIELD;
            break;
        case SK_OWNED: {
            const StepOwner* o = futoin__step_ext(node);
            fi->kind = futoin__owner_is(o, OWNER_AWAIT) ? FUTOIN_FRAME_AWAIT
                    : futoin__owner_is(o, OWNER_WORK)   ? FUTOIN_FRAME_WORK
                                                        : FUTOIN_FRAME_STEP;
            break;
        }
        default:
            fi->kind = FUTOIN_FRAME_STEP;
            break;
        }
        /* The node's eh and data are the step's own but for a loop (its
         * spec) and a sync step (the critical section's). A running plain
         * step's frame holds its node for the call even without a handler
         * (dispatch.c): what it shows is what it keeps afterwards. */
        if (node && f->kind != SK_LOOP && f->kind != SK_SYNC
                && (node->eh || (f->kind != SK_PLAIN && f->kind != SK_YIELD))) {
            fi->error_handler = node->eh;
            fi->data = node->data;
            if (node->eh) {
                fi->flags |= FUTOIN_FRAME_ERROR_HANDLER;
            }
        }
    }
    if (f->flags & FR_EH_USED) {
        fi->flags |= FUTOIN_FRAME_EH_RAN;
    }
    if (f->flags & (FR_WAIT | FR_PAR_WAIT)) {
        fi->flags |= FUTOIN_FRAME_WAITING;
    }
    if (f->flags & FR_LOCKED) {
        fi->flags |= FUTOIN_FRAME_LOCKED;
    }
    FrameExtra* x = futoin__frame_extras(fl, f);
    if (x) {
        if (x->on_cancel) {
            fi->flags |= FUTOIN_FRAME_CANCEL_HANDLER;
        }
        if (x->stack) {
            fi->flags |= FUTOIN_FRAME_STACK;
        }
    }
    if (frame_timer(fl, f, &fi->timeout_left_ms)) {
        fi->flags |= FUTOIN_FRAME_TIMEOUT;
    }
}

int futoin_frame_info(FutoInAsyncSteps* flow, uint32_t level, FutoInFrameInfo* out, size_t size)
{
    Flow* fl = flow_checked(flow);
    if (!fl || !out || level > fl->depth) {
        return -1;
    }
    FutoInFrameInfo fi;
    futoin__obs_frame_describe(fl, level, &fi);
    copy_out(out, &fi, sizeof(fi), size);
    return 0;
}

const char* futoin_root_state_name(FutoInRootState state)
{
    static const char* const names[] = { "idle", "queued", "running", "waiting", "done", "failed",
        "cancelled" };
    return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

const char* futoin_frame_kind_name(FutoInFrameKind kind)
{
    static const char* const names[] = { "queue", "step", "loop", "parallel", "sync", "value",
        "yield", "await", "work" };
    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char* futoin__obs_flow_state_name(FutoInFlowState state)
{
    static const char* const names[] = { "idle", "queued", "running", "waiting", "finished" };
    return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

/* ------------------------------------------------------------------------ */
/* Counters                                                                  */

int futoin_loop_counters(FutoInLoop* loop, FutoInLoopCounters* out, size_t size)
{
    if (!loop || !out || !futoin__loop_on_thread(loop)) {
        return -1;
    }
    FutoInLoopCounters c;
    memset(&c, 0, sizeof(c));
    EngineCtx* ctx = ctx_if_any(loop);
    if (ctx) {
        c.roots = ctx->n_roots;
        c.steps = ctx->n_steps;
        c.errors = ctx->n_errors;
        c.timeouts = ctx->n_timeouts;
        c.cancels = ctx->n_cancels;
        c.sync_rejections = ctx->n_sync_rejections;
        c.unhandled_errors = ctx->n_unhandled;
    }
    futoin__loop_stats(loop, &c.xmsgs, &c.timers_pending, &c.immediates_pending);
    copy_out(out, &c, sizeof(c), size);
    return 0;
}
