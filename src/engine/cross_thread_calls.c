/* SPDX-License-Identifier: MIT */
/*
 * Cross-thread success()/error()/cancel()/free() on AsyncSteps flows.
 *
 * The calling thread only reads two fields of the flow that never change
 * under it (fl->loop, written once, and the atomic fl->xepoch) and queues a
 * message on the loop; everything else happens on the loop thread, through
 * the same internal functions as a same-thread call.
 *
 * Race resolution. A cross-thread success() races with whatever else can
 * end the waiting step on the loop thread: its timeout, a root cancel, an
 * abort by a failing sibling branch, another completion. All of those run
 * on the loop thread, one at a time, and the message is applied there too,
 * so "the first to reach the loop thread wins": if the step still waits
 * when the message is run, the message completes it (and stops its timer);
 * if the timeout or cancel ran first, the step no longer waits and the
 * message is dropped. The epoch check adds that a message cannot complete
 * a *later* step of the same flow that happens to be waiting by then (the
 * step timed out, the error handler recovered, the next step waits).
 */
#include "engine/cross_thread_calls_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Flow* fl;
    const void* key; /* NULL: through the interface; else the owner's key */
    uint32_t epoch;
    FutoInArgs args;
} XSuccess;

/* code, a NUL, info, a NUL: inline when short, else on the heap. */
#define XERROR_INLINE (FUTOIN_XMSG_PAYLOAD - 5 * sizeof(void*) - 8)

typedef struct {
    Flow* fl;
    char* heap;
    /* A parked step's own cancel handler, which library code (a sync
     * object) gives back its record through: called instead of dropped when
     * the error applies, and when the message is dropped unrun. */
    FutoInAsyncSteps_cancel_callback take_ch;
    void* take_data;
    const void* key; /* as XSuccess.key */
    uint32_t epoch;
    uint8_t null_code;
    char buf[XERROR_INLINE];
} XError;

typedef struct {
    Flow* fl;
} XRootOp;

_Static_assert(sizeof(XSuccess) <= FUTOIN_XMSG_PAYLOAD, "XSuccess must fit a message slot");
_Static_assert(sizeof(XError) <= FUTOIN_XMSG_PAYLOAD, "XError must fit a message slot");

/* The step that was current at `epoch` still waits for an external
 * completion, and no callback of the flow is on the stack. */
static int still_waiting(Flow* fl, uint32_t epoch)
{
    return futoin__flow_waits_external(fl) && !futoin__flow_root(fl)->free_pending
            && atomic_load_explicit(&fl->xepoch, memory_order_relaxed) == epoch;
}

/* ... and the wait is the caller's to end (see futoin__xflow_success()). */
static int applies(Flow* fl, uint32_t epoch, const void* key)
{
    if (!still_waiting(fl, epoch)) {
        return 0;
    }
    return key ? futoin__flow_owned_by(fl, key) : !futoin__flow_wait_is_owned(fl);
}

static void report_dropped(Flow* fl, const char* what)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    char buf[240];
    if (futoin__flow_waits_external(fl) && futoin__flow_wait_is_owned(fl)) {
        snprintf(buf, sizeof(buf),
                "%s from another thread refused: the step waits for library code that "
                "completes it itself (a late completion meant for an earlier step?)",
                what);
    } else {
        snprintf(buf, sizeof(buf),
                "%s from another thread dropped: the step was no longer waiting when it "
                "reached the loop thread (timeout, cancel or another completion came first)",
                what);
    }
    ctx->misuse(ctx->misuse_data, &fl->iface, buf);
}

static uint32_t epoch_now(Flow* fl)
{
    /* Acquire: pairs with the loop thread's release when the step began. */
    return atomic_load_explicit(&fl->xepoch, memory_order_acquire);
}

/* ---- success ---- */

static int xsuccess_run(void* consumer, XMsg* m)
{
    (void)consumer;
    XSuccess* x = (XSuccess*)(void*)m->u.bytes;
    Flow* fl = x->fl;
    if (applies(fl, x->epoch, x->key)) {
        futoin__flow_success(fl, &x->args);
        return 0;
    }
    futoin__args_drop_refused(fl, &x->args);
    if (!x->key) {
        report_dropped(fl, "success()");
    }
    return 0;
}

static void xsuccess_drop(XMsg* m)
{
    futoin__args_drop(&((XSuccess*)(void*)m->u.bytes)->args);
}

void futoin__xflow_success(Flow* fl, FutoInArgs* args, const void* key)
{
    XMsg* m = futoin__loop_xmsg_alloc(fl->loop);
    if (!m) {
        /* Dropped, the step would wait for good, and the caller, on
         * another thread, has no way to hear of it (SEMANTICS.md "Memory"). */
        futoin__out_of_memory("a cross-thread success() cannot be queued");
    }
    XSuccess* x = (XSuccess*)(void*)m->u.bytes;
    x->fl = fl;
    x->key = key;
    x->epoch = epoch_now(fl);
    memset(&x->args, 0, sizeof(x->args));
    if (args) {
        futoin__args_take(&x->args, args);
    }
    m->run = xsuccess_run;
    m->drop = xsuccess_drop;
    futoin__loop_xmsg_post(fl->loop, m);
}

/* ---- error ---- */

static int xerror_run(void* consumer, XMsg* m)
{
    (void)consumer;
    XError* x = (XError*)(void*)m->u.bytes;
    Flow* fl = x->fl;
    const char* code = x->heap ? x->heap : x->buf;
    const char* info = code + strlen(code) + 1;
    if (x->null_code) {
        EngineCtx* ctx = futoin__flow_ctx(fl);
        ctx->misuse(ctx->misuse_data, &fl->iface,
                "error() with a NULL error code (from another thread)");
    } else if (applies(fl, x->epoch, x->key)) {
        if (x->take_ch && futoin__flow_drop_cancel(fl, x->take_ch, x->take_data)) {
            x->take_ch(&fl->iface, x->take_data);
        }
        if (x->take_ch) {
            ++futoin__flow_ctx(fl)->n_sync_rejections; /* only sync objects park this way */
        }
        futoin__flow_error(fl, code, info);
    } else if (!x->key) {
        report_dropped(fl, "error()");
    }
    /* else the step stopped waiting first: its abort called take_ch. */
    free(x->heap);
    return 0;
}

static void xerror_drop(XMsg* m)
{
    XError* x = (XError*)(void*)m->u.bytes;
    if (x->take_ch) {
        x->take_ch(NULL, x->take_data);
    }
    free(x->heap);
}

static void xflow_error_post(Flow* fl, const char* code, const char* info, const void* key,
        FutoInAsyncSteps_cancel_callback take_ch, void* take_data);

void futoin__xflow_error(Flow* fl, const char* code, const char* info, const void* key)
{
    xflow_error_post(fl, code, info, key, NULL, NULL);
}

static void xflow_error_post(Flow* fl, const char* code, const char* info, const void* key,
        FutoInAsyncSteps_cancel_callback take_ch, void* take_data)
{
    XMsg* m = futoin__loop_xmsg_alloc(fl->loop);
    if (!m) {
        futoin__out_of_memory("a cross-thread error() cannot be queued");
    }
    XError* x = (XError*)(void*)m->u.bytes;
    x->fl = fl;
    x->take_ch = take_ch;
    x->take_data = take_data;
    x->key = key;
    x->epoch = epoch_now(fl);
    x->null_code = code == NULL;
    x->heap = NULL;
    /* The caller's strings may not outlive the call: copy them. */
    const char* c = code ? code : "";
    const char* i = info ? info : "";
    size_t lc = strlen(c);
    size_t li = strlen(i);
    char* dst = x->buf;
    if (lc + li + 2 > sizeof(x->buf)) {
        x->heap = malloc(lc + li + 2);
        if (x->heap) {
            dst = x->heap;
        } else {
            /* Keep the code, cut the info: the step must still fail. */
            lc = lc < sizeof(x->buf) - 2 ? lc : sizeof(x->buf) - 2;
            li = sizeof(x->buf) - 2 - lc;
        }
    }
    memcpy(dst, c, lc);
    dst[lc] = '\0';
    memcpy(dst + lc + 1, i, li);
    dst[lc + 1 + li] = '\0';
    m->run = xerror_run;
    m->drop = xerror_drop;
    futoin__loop_xmsg_post(fl->loop, m);
}

/* ---- cancel, free ---- */

static int xcancel_run(void* consumer, XMsg* m)
{
    (void)consumer;
    Flow* fl = ((XRootOp*)(void*)m->u.bytes)->fl;
    futoin__root_cancel(futoin__flow_root(fl));
    return 0;
}

static int xfree_run(void* consumer, XMsg* m)
{
    (void)consumer;
    Flow* fl = ((XRootOp*)(void*)m->u.bytes)->fl;
    if (fl->is_branch) {
        futoin__misuse(fl, "free() on a parallel branch: only a root can be freed");
        return 0;
    }
    futoin__root_free(futoin__flow_root(fl));
    return 0;
}

static void post_root_op(Flow* fl, FutoInXRun run, const char* what)
{
    XMsg* m = futoin__loop_xmsg_alloc(fl->loop);
    if (!m) {
        char buf[64];
        snprintf(buf, sizeof(buf), "a cross-thread %s cannot be queued", what);
        futoin__out_of_memory(buf);
    }
    ((XRootOp*)(void*)m->u.bytes)->fl = fl;
    m->run = run;
    futoin__loop_xmsg_post(fl->loop, m);
}

void futoin__xflow_cancel(Flow* fl)
{
    post_root_op(fl, xcancel_run, "cancel()");
}

void futoin__xflow_free(Flow* fl)
{
    post_root_op(fl, xfree_run, "free()");
}

int futoin__fail_parked_step(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* data,
        const char* code, const char* info)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        return 0;
    }
    if (!futoin__loop_on_thread(fl->loop)) {
        /* Decided on the loop thread, whichever comes first there. */
        xflow_error_post(fl, code, info, data, ch, data);
        return FUTOIN_PARKED_QUEUED;
    }
    futoin__flow_drop_cancel(fl, ch, data);
    if (applies(fl, atomic_load_explicit(&fl->xepoch, memory_order_relaxed), data)) {
        ++futoin__flow_ctx(fl)->n_sync_rejections;
        futoin__flow_error(fl, code, info);
    }
    return FUTOIN_PARKED_FAILED;
}

void futoin__note_sync_rejection(FutoInAsyncSteps* as)
{
    Flow* fl = futoin__flow_of(as);
    if (fl && futoin__loop_on_thread(fl->loop)) {
        ++futoin__flow_ctx(fl)->n_sync_rejections;
    }
}
