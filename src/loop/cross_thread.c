/* SPDX-License-Identifier: MIT */
/*
 * Scheduling, cancelling and stopping from other threads, and the loop
 * thread's side of it: draining the message queue once per round.
 *
 * Schedules from another thread get a slot of the message queue as their
 * record: the handle names (slot, generation) and is marked with the top
 * bit of data2, which loop records never use. The slot's state word is the
 * one place where running and cancelling race: the loop thread moves it
 * PENDING -> TAKEN right before calling the callback, a cancel moves it
 * PENDING -> CANCELLED, and only one compare-and-swap can succeed. On the
 * loop thread the slot is carried by an ordinary immediate or timer record
 * (the "carrier") that does that swap when it fires.
 */
#include "loop/loop_impl.h"

#include "common/slab_pool.h"

#define XDRAIN_MAX 1024u

typedef struct {
    FutoInLoop* loop;
    LoopCall call;
    uint64_t due;         /* absolute ns, or a relative delay when due_rel */
    FutoInHandle carrier; /* loop thread only, valid while armed */
    uint8_t deferred;
    uint8_t due_rel; /* virtual clock: another thread cannot read it */
    uint8_t armed;   /* loop thread only: the carrier is scheduled */
} XSched;

typedef struct {
    XMsg* target;
    uint64_t cancelled_state; /* the target's state word after the cancel */
} XReap;

static XSched* xsched_of(XMsg* m)
{
    return (XSched*)(void*)m->u.bytes;
}

static FutoInHandle xhandle_make(FutoInLoop* loop, XMsg* m)
{
    uint64_t st = atomic_load_explicit(&m->state, memory_order_relaxed);
    FutoInHandle h;
    h.data1 = loop;
    h.data2 = (void*)(XHANDLE_TAG | (xsched_of(m)->deferred ? XHANDLE_DEFERRED : 0)
            | ((uintptr_t)m->idx + 1u));
    h.data3 = (ptrdiff_t)futoin__xq_gen(st);
    return h;
}

/* The slot a cross-thread handle names, with the state word it has while
 * still pending; NULL for a malformed handle. */
XMsg* futoin__loop_xhandle_slot(FutoInLoop* loop, const FutoInHandle* h, uint64_t* pending)
{
    uintptr_t v = (uintptr_t)h->data2 & ~(XHANDLE_TAG | XHANDLE_DEFERRED);
    if (v == 0 || v > UINT32_MAX || h->data3 < 0 || (uint64_t)h->data3 > FUTOIN_XGEN_MASK) {
        return NULL;
    }
    *pending = ((uint64_t)h->data3 << 2) | XS_PENDING;
    return futoin__xq_slot(&loop->xq, (uint32_t)(v - 1u));
}

XMsg* futoin__loop_xmsg_alloc(FutoInLoop* loop)
{
    return futoin__xq_alloc(&loop->xq);
}

void futoin__loop_xmsg_post(FutoInLoop* loop, XMsg* msg)
{
    atomic_fetch_add(&loop->xbusy, 1);
    futoin__xq_push(&loop->xq, msg);
    futoin__loop_signal_if_needed(loop);
    atomic_fetch_sub(&loop->xbusy, 1);
}

void futoin__loop_xmsg_free(FutoInLoop* loop, XMsg* msg)
{
    futoin__xq_free(&loop->xq, msg);
}

/* Carrier callback, loop thread: the scheduled callback runs unless a
 * cancel got to the slot first. The slot is freed before the call, as a
 * record is, so the callback may schedule or cancel anything. */
static void xsched_fire(void* data, uintptr_t aux)
{
    (void)aux;
    XMsg* m = data;
    XSched* x = xsched_of(m);
    FutoInLoop* loop = x->loop;
    x->armed = 0;
    uint64_t st = atomic_load_explicit(&m->state, memory_order_acquire);
    int won = futoin__xq_st(st) == XS_PENDING
            && atomic_compare_exchange_strong_explicit(&m->state, &st,
                    (st & ~UINT64_C(3)) | XS_TAKEN, memory_order_acq_rel, memory_order_acquire);
    LoopCall call = x->call;
    futoin__xq_free(&loop->xq, m);
    if (won) {
        call_invoke(&call);
    }
}

/* Loop thread: schedules the carrier. Returns 1 (slot kept) when armed,
 * 0 when cancelled already or (for the loop thread's own schedule, which
 * reports it) out of memory. */
static int xsched_arm_now(FutoInLoop* loop, XMsg* m, int own)
{
    XSched* x = xsched_of(m);
    if (futoin__xq_st(atomic_load_explicit(&m->state, memory_order_acquire)) != XS_PENDING) {
        return 0; /* cancelled while it was queued */
    }
    LoopCall carrier = call_with_aux(m, 0, xsched_fire);
    if (x->deferred) {
        uint64_t due = x->due_rel ? add_saturating(round_now(loop), x->due) : x->due;
        x->carrier = futoin__loop_schedule_at(loop, due, &carrier);
    } else {
        x->carrier = futoin__loop_schedule_call(loop, &carrier);
    }
    if (!x->carrier.data1) {
        if (!own) {
            /* Another thread was handed a handle for it: dropping the
             * callback would lose work nobody hears of. */
            futoin__out_of_memory("a cross-thread schedule");
        }
        return 0;
    }
    x->armed = 1;
    return 1;
}

static int xsched_run(void* consumer, XMsg* m)
{
    return xsched_arm_now(consumer, m, 0);
}

/* Fills a slot for cb; deferred with delay_ms if deferred. */
static XMsg* xsched_new(FutoInLoop* loop, const LoopCall* call, int deferred, uint32_t delay_ms,
        int on_thread)
{
    XMsg* m = futoin__xq_alloc(&loop->xq);
    if (!m) {
        return NULL;
    }
    XSched* x = xsched_of(m);
    x->loop = loop;
    x->call = *call;
    x->deferred = (uint8_t)deferred;
    x->armed = 0;
    x->due_rel = 0;
    x->due = ms_to_ns(delay_ms);
    if (deferred) {
        if (on_thread) {
            x->due = add_saturating(schedule_base(loop), x->due);
        } else if (loop->is_virtual) {
            x->due_rel = 1;
        } else {
            /* Measured from the call, not from when the loop gets to it. */
            x->due = add_saturating(futoin__loop_clock_ns(), x->due);
        }
    }
    m->run = xsched_run;
    m->drop = NULL;
    return m;
}

/* Another thread schedules: queue the slot, return its handle. */
FutoInHandle futoin__loop_xsched_post(FutoInLoop* loop, const LoopCall* call, int deferred,
        uint32_t delay_ms)
{
    XMsg* m = xsched_new(loop, call, deferred, delay_ms, 0);
    if (!m) {
        return handle_none();
    }
    /* Made before the push: from then on the slot may run and be reused. */
    FutoInHandle h = xhandle_make(loop, m);
    futoin__loop_xmsg_post(loop, m);
    return h;
}

FutoInHandle futoin__loop_deferred_aux_x(FutoInLoop* loop, uint32_t delay_ms, void* data,
        uintptr_t aux, FutoInLoopAuxCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_with_aux(data, aux, cb);
    if (!futoin__loop_on_thread(loop)) {
        return futoin__loop_xsched_post(loop, &call, 1, delay_ms);
    }
    XMsg* m = xsched_new(loop, &call, 1, delay_ms, 1);
    if (!m) {
        return handle_none();
    }
    FutoInHandle h = xhandle_make(loop, m);
    if (!xsched_arm_now(loop, m, 1)) {
        futoin__xq_free(&loop->xq, m);
        return handle_none();
    }
    return h;
}

/* Loop thread: a slot whose cancel won gives its carrier back now. A slot
 * still in the queue (not armed) is freed when the queue reaches it. */
static void xsched_reap(FutoInLoop* loop, XMsg* m)
{
    XSched* x = xsched_of(m);
    if (x->armed) {
        x->armed = 0;
        futoin__loop_cancel_local(loop, &x->carrier);
        futoin__xq_free(&loop->xq, m);
    }
}

static int xreap_run(void* consumer, XMsg* m)
{
    XReap* r = (XReap*)(void*)m->u.bytes;
    /* Unless the slot has been freed (and maybe reused) since. */
    if (atomic_load_explicit(&r->target->state, memory_order_acquire) == r->cancelled_state) {
        xsched_reap(consumer, r->target);
    }
    return 0;
}

/* 1 when the cancel won (the callback will never run), else 0. */
int futoin__loop_xsched_cancel(FutoInLoop* loop, const FutoInHandle* h)
{
    uint64_t expect = 0; /* left unset for a malformed handle */
    XMsg* m = futoin__loop_xhandle_slot(loop, h, &expect);
    uint64_t cancelled = (expect & ~UINT64_C(3)) | XS_CANCELLED;
    if (!m
            || !atomic_compare_exchange_strong_explicit(&m->state, &expect, cancelled,
                    memory_order_acq_rel, memory_order_relaxed)) {
        return 0;
    }
    if (futoin__loop_on_thread(loop)) {
        xsched_reap(loop, m);
    } else if ((uintptr_t)h->data2 & XHANDLE_DEFERRED) {
        /* The timer would free the slot only when due: ask the loop to
         * drop it now. Best effort: without memory it waits until due. */
        XMsg* r = futoin__xq_alloc(&loop->xq);
        if (r) {
            XReap* rp = (XReap*)(void*)r->u.bytes;
            rp->target = m;
            rp->cancelled_state = cancelled;
            r->run = xreap_run;
            futoin__loop_xmsg_post(loop, r);
        }
    }
    return 1;
}

int futoin__loop_xcancel_record_run(void* consumer, XMsg* m)
{
    XCancelRecord* c = (XCancelRecord*)(void*)m->u.bytes;
    futoin__loop_cancel_local(consumer, &c->handle);
    return 0;
}

int futoin__loop_xstop_run(void* consumer, XMsg* m)
{
    (void)m;
    ((FutoInLoop*)consumer)->stop_requested = 1;
    return 0;
}

/* Runs what other threads queued, at most XDRAIN_MAX messages so that a
 * flood cannot starve the loop's own work. Returns 1 on a stop request. */
int futoin__loop_drain_x(FutoInLoop* loop)
{
    if (loop->armed) {
        futoin__loop_signal_disarm(loop);
    }
    loop->xpoll |= XPOLL_BACKLOG;
    int stopped = 0;
    for (unsigned n = 0; n < XDRAIN_MAX && !stopped; ++n) {
        XMsg* m = futoin__xq_pop(&loop->xq);
        if (!m) {
            loop->xpoll &= (uint8_t)~XPOLL_BACKLOG;
            return 0;
        }
        ++loop->xmsgs_run;
        if (!m->run(loop, m)) {
            futoin__xq_free(&loop->xq, m);
        }
        stopped = loop->stop_requested;
    }
    /* Cut short (the bound, or a stop): a backlog only if something is
     * really left. The last message of a batch may have been the queue's
     * last: a flag left set then would make iterate() report work with no
     * plan, and an outer loop would wait for a wake-up nobody owes it. An
     * empty queue leaves the consumer at the stub, as a failed pop does. */
    if (!futoin__xq_nonempty(&loop->xq)) {
        loop->xpoll &= (uint8_t)~XPOLL_BACKLOG;
    }
    return stopped;
}
