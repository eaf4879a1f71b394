/* SPDX-License-Identifier: MIT */
/*
 * What introspection (include/futoin/introspect.h, src/observe/) asks of a
 * loop: the time left on a timer, the loop's counts, and dump requests,
 * which other threads and signal handlers may make (a message slot kept
 * for it: asking allocates nothing).
 */
#include "loop/loop_impl.h"

#include <errno.h>

int futoin__loop_timer_left(FutoInLoop* loop, LoopRef ref, uint64_t* left_ms)
{
    FutoInHandle h = futoin__loop_handle(loop, ref);
    if (is_imm_handle(&h)) {
        return 0;
    }
    uint32_t id = handle_lookup(loop, &h);
    if (id == NO_RECORD || id >= loop->timers.pos_capacity
            || loop->timers.pos[id] == FUTOIN_TIMER_ABSENT) {
        return 0;
    }
    uint64_t due = loop->timers.entries[loop->timers.pos[id]].due;
    uint64_t now = loop->is_virtual || loop->round_depth ? round_now(loop)
                                                         : futoin__loop_clock_ns();
    uint64_t left = due > now ? due - now : 0;
    /* Rounded up: "1 ms left" until it is due. */
    *left_ms = left / NS_PER_MS + (left % NS_PER_MS != 0);
    return 1;
}

void futoin__loop_stats(const FutoInLoop* loop, uint64_t* xmsgs, uint64_t* timers,
        uint64_t* immediates)
{
    *xmsgs = loop->xmsgs_run;
    *timers = futoin__timer_heap_size(&loop->timers);
    *immediates = loop->live_immediates;
}

int futoin__loop_is_virtual(const FutoInLoop* loop)
{
    return loop->is_virtual;
}

/* The kept dump message reaches the loop thread: the next request may be
 * queued from now on (even by the handler: the slot is off the queue). */
static int dump_msg_run(void* consumer, XMsg* m)
{
    (void)m;
    FutoInLoop* loop = consumer;
    atomic_store(&loop->dump_pending, 0);
    if (loop->dump_cb) {
        loop->dump_cb(loop, loop->dump_data);
    }
    return 1; /* kept for the next request */
}

int futoin__loop_dump_setup(FutoInLoop* loop, void (*cb)(FutoInLoop*, void*), void* data, int keep)
{
    if (keep && loop->dump_cb) {
        return 0;
    }
    if (!atomic_load(&loop->dump_msg)) {
        XMsg* m = futoin__xq_alloc(&loop->xq);
        if (!m) {
            return -1;
        }
        m->run = dump_msg_run;
        m->drop = NULL; /* the slot goes with the queue's memory */
        atomic_store(&loop->dump_msg, m);
    }
    loop->dump_cb = cb;
    loop->dump_data = data;
    return 0;
}

void futoin__loop_set_free_hook(FutoInLoop* loop, void (*hook)(FutoInLoop* loop))
{
    loop->free_hook = hook;
}

int futoin__loop_dump_request(FutoInLoop* loop)
{
    XMsg* m = atomic_load(&loop->dump_msg);
    if (!m) {
        return -1;
    }
    int idle = 0;
    if (!atomic_compare_exchange_strong(&loop->dump_pending, &idle, 1)) {
        return 0; /* one is queued already: it will show this state too */
    }
    int saved_errno = errno;
    atomic_fetch_add(&loop->xbusy, 1);
    futoin__xq_push(&loop->xq, m);
    /* Only the wake-up fd (or event), and only when that is all the loop
     * waits for: write() is async-signal-safe (and SetEvent() callable
     * from the thread Windows runs a handler on), the embedder's wake-up
     * callback need not be (a loop driven through one sees the request on
     * its next round). Taking SIG_FD from the flag owes exactly the post. */
    int expect = SIG_FD;
    if (atomic_compare_exchange_strong(&loop->need_signal, &expect, 0)) {
        futoin__loop_wake_post(loop);
    }
    atomic_fetch_sub(&loop->xbusy, 1);
    errno = saved_errno;
    return 1;
}
