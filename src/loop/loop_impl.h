/* SPDX-License-Identifier: MIT */
/*
 * What the files of the event loop (src/loop/) share and nobody else: the
 * loop object itself, the encoding of handles, and the functions the files
 * call in each other. The engine and the other subsystems use
 * loop_internal.h.
 *
 *   loop.c               the loop's life, its rounds, scheduling and
 *                        cancelling on the loop thread
 *   cross_thread.c       schedules, cancels and stops from other threads,
 *                        and draining the message queue
 *   wakeup.c             sleeping until work comes and being woken: the
 *                        protocol of the wake-up fd and the embedder's
 *                        wake-up callback
 *   wakeup_posix.c       the wake-up fd (eventfd or pipe), the idle wait
 *   wakeup_win32.c       the same on Windows: a Win32 event
 *   loop_introspect.c    what introspect.h asks of a loop: timers, counts,
 *                        dump requests
 *   timer_heap.c         the timers' 4-ary heap
 *   cross_thread_queue.c the lock-free message queue other threads post to
 */
#ifndef FUTOIN_LOOP_IMPL_H
#define FUTOIN_LOOP_IMPL_H

#include "common/compiler.h"
#include "loop/loop_internal.h"
#include "loop/timer_heap_impl.h"

#include <stdint.h>
#include <time.h>

#pragma GCC visibility push(hidden)

#define NO_RECORD UINT32_MAX
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)
/* Generations stay below 2^31 so they survive the round trip through the
 * handle's ptrdiff_t even where it is 32 bits wide. */
#define GENERATION_MASK UINT32_C(0x7fffffff)
#define MIN_POOL 64u
#define LOOP_LINE 64

/* Handle encoding. data2 says what a handle names:
 *   [1, IMM_TAG)          a record (timer): index + 1; data3 = generation
 *   IMM_TAG | seq >> 31   an immediate: data3 = seq & 0x7fffffff
 *   XHANDLE_TAG | ...     a cross-thread schedule (see "Cross-thread")
 * Both local kinds fit in 32 + 31 bits, which LoopRef relies on. */
#define IMM_TAG ((uintptr_t)1 << 30)
#define IMM_HI_MASK (IMM_TAG - 1u)
#define IMM_LO_BITS 31
#define IMM_LO_MASK UINT64_C(0x7fffffff)
/* Bits of an immediate's sequence number a handle keeps: a stale handle
 * could only match after 2^61 more immediates. */
#define IMM_SEQ_MASK ((UINT64_C(1) << (30 + IMM_LO_BITS)) - 1u)

enum RecordState { RECORD_FREE, RECORD_DEFERRED };

/* Loop-side reasons to drain the cross-thread queue without looking at it:
 * XPOLL_EMBEDDED, an outer event loop drives this one (it polls the wake-up
 * fd or registered a wake-up callback) and the signal is disarmed every
 * round; XPOLL_BACKLOG,
 * the last drain stopped before the queue was empty. Without them the
 * queue's consumer end is at its stub (a pop only fails there), so the
 * per-round check is one relaxed load of the word producers swing. */
enum { XPOLL_EMBEDDED = 1, XPOLL_BACKLOG = 2 };

/* How other threads wake the loop thread up (bits of need_signal and of
 * armed): SIG_FD, a post to the wake-up fd, or the event on Windows (the
 * loop thread waits on it in run(), or an embedder polls the fd);
 * SIG_HOOK, a call of the wake-up callback of futoin_loop_set_wakeup() on
 * the posting thread. */
enum { SIG_FD = 1, SIG_HOOK = 2 };

/* What a ring slot holds: the immediate is stored in the ring itself. */
enum ImmKind { IMM_DEAD, IMM_PLAIN, IMM_AUX };

typedef union {
    FutoInLoopCallback plain;
    FutoInLoopAuxCallback with_aux;
} LoopFn;

/* What is needed to invoke a callback once its record is gone. */
typedef struct {
    LoopFn fn;
    void* data;
    uintptr_t aux;
    int has_aux;
} LoopCall;

typedef struct {
    LoopFn fn;
    void* data;
    uintptr_t aux;
    uint32_t generation;
    uint32_t next_free;
    uint8_t state;
    uint8_t has_aux;
} LoopRecord;

/* An immediate lives in its ring slot: scheduling one is a few stores,
 * with no record. A cancelled one stays in the ring as IMM_DEAD until the
 * loop reaches it, which keeps cancel O(1). */
typedef struct {
    LoopFn fn;
    void* data;
    uintptr_t aux;
    uintptr_t kind; /* enum ImmKind */
} ImmSlot;

struct FutoInLoop {
    LoopHead head; /* first: futoin__loop_on_thread() reads it inline */

    /* ---- hot: what an immediate and a round touch, one cache line ----
     * Every immediate gets the next sequence number; the one numbered seq
     * sits in ring[seq & ring_mask] while imm_head <= seq < imm_tail.
     * Numbers are never reused, so the handle of an immediate that ran or
     * was cancelled never names a later one.
     *
     * The ring exists from the loop's creation and ordinary immediates
     * leave its last slot free: it is the engine's dispatcher's (at most
     * one is pending per loop), which therefore never needs memory. Its
     * failure would leave every root of the loop waiting for a dispatch
     * that never comes, with nobody to tell. */
    ImmSlot* ring;     /* ring_mask + 1 slots, a power of two */
    uint64_t imm_head; /* sequence number of the oldest slot */
    uint64_t imm_tail; /* sequence number the next immediate gets */
    size_t ring_mask;
    size_t live_immediates; /* slots that are not IMM_DEAD */
    /* futoin_loop_set_wakeup(): lets an outer event loop (the libuv
     * backend, say) learn that it must wake up earlier than it planned;
     * NULL when nobody drives the loop. Written by the loop thread only
     * while no other thread can be calling it (see futoin_loop_set_wakeup). */
    FutoInLoopWakeup wakeup;
    /* Rounds on the stack: 1 while iterate(), run(), run_next() or
     * advance() runs callbacks, which may not run the loop again (a round
     * inside a round would run a step's timeout while its callback is
     * still on the stack). */
    unsigned round_depth;
    uint8_t stop_requested;
    uint8_t embedded; /* futoin_loop_wakeup_fd() handed the fd out */
    uint8_t xpoll;    /* XPOLL_* */
    /* The real clock is read at most once per round, and only when a timer
     * needs it: rounds that only run immediates cost no clock read. */
    uint8_t clock_fresh;
    uint8_t is_virtual;
    /* A callback left a round by an exception or a forced unwind: the
     * round's depth stays counted, so the loop refuses to run again (see
     * "Callbacks left by an exception" in loop.c). */
    uint8_t abandoned;
    /* ---- end of the hot part ---- */

    uint64_t now_ns;

    LoopRecord* records; /* timers only */
    uint32_t record_capacity;
    uint32_t free_head;

    TimerHeap timers;

    void (*engine_free)(void* engine_ctx);
    /* Where the loop reports misuse (the engine's misuse handler, once the
     * engine has a context here); NULL: a FUTOIN_LOG_MISUSE line of the
     * log handler (common/log.h). */
    void (*misuse_hook)(FutoInLoop* loop, const char* info);
    /* Set while a signal may ask this loop for a dump (observe/dump.c):
     * futoin_loop_free() calls it first, so that no handler finds the loop
     * after it is gone. A hook, because the loop sits below observe. */
    void (*free_hook)(FutoInLoop* loop);

    void* wakeup_data;

    /* ---- introspection (include/futoin/introspect.h) ---- */
    uint64_t xmsgs_run; /* cross-thread messages run */
    /* A dump request: a message slot kept for it (NULL until a handler is
     * set), so that asking for a dump allocates nothing and is safe in a
     * signal handler; dump_pending is 1 while it is queued. */
    _Atomic(XMsg*) dump_msg;
    _Atomic int dump_pending;
    void (*dump_cb)(FutoInLoop* loop, void* data);
    void* dump_data;

    /* ---- cross-thread ---- */
    _Alignas(LOOP_LINE) XQueue xq;
    /* Set (to SIG_* bits) by the loop thread when it is about to wait on
     * the wake-up fd (or, embedded, between iterations); whoever flips it
     * back to 0 owes exactly one signal of each kind: a write to the fd,
     * which the loop thread consumes (so the fd is never left readable by
     * accident), and/or a call of the wake-up callback. A busy loop costs
     * producers no system call. */
    _Atomic int need_signal;
    _Atomic long refs; /* futoin_loop_hold(): outstanding external work */
    /* Threads between making work visible (a push, a release) and the end
     * of their wake-up: the loop thread may already have seen the work and
     * be on its way to futoin_loop_free(), which waits for this to drop to
     * 0 so that the wake-up never touches freed memory. */
    _Atomic int xbusy;
    /* The wake-up object (wakeup_posix.c, wakeup_win32.c), made when the
     * loop first needs to wait. */
#ifdef _WIN32
    void* wake_event; /* a Win32 event HANDLE; NULL until then */
#else
    int wake_rfd; /* -1 until then */
    int wake_wfd;
#endif
    int armed; /* loop thread: need_signal was set by us to these SIG_* bits */
    /* Loop thread: another thread took a SIG_HOOK signal and may still be
     * calling the hook; futoin_loop_set_wakeup() waits for it. */
    uint8_t hook_owed;
};

/* Cross-thread schedules (cross_thread.c).
 *
 * Schedules from another thread get a slot of the message queue as their
 * record: the handle names (slot, generation) and is marked with the top
 * bit of data2, which loop records never use. The slot's state word is the
 * one place where running and cancelling race: the loop thread moves it
 * PENDING -> TAKEN right before calling the callback, a cancel moves it
 * PENDING -> CANCELLED, and only one compare-and-swap can succeed. On the
 * loop thread the slot is carried by an ordinary immediate or timer record
 * (the "carrier") that does that swap when it fires. */

#define XHANDLE_TAG ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 1))
/* In the handle, not read from the slot: once a cancel has won, the loop
 * thread may free and another thread reuse the slot at any moment. */
#define XHANDLE_DEFERRED ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 2))

/* A cancel of a loop record from another thread, decided on the loop
 * thread (futoin__loop_xcancel_record_run()). */
typedef struct {
    FutoInHandle handle;
} XCancelRecord;

/* ---- loop.c ---- */
/* The monotonic clock in nanoseconds (out of line: a round that reads no
 * clock needs no stack for it). */
uint64_t futoin__loop_clock_ns(void);
/* Loop thread: an immediate, or a timer due at `due` (ns on the loop's
 * clock), for call; a null handle without memory. */
FutoInHandle futoin__loop_schedule_call(FutoInLoop* loop, const LoopCall* call);
FutoInHandle futoin__loop_schedule_at(FutoInLoop* loop, uint64_t due, const LoopCall* call);

/* ---- cross_thread.c ---- */
FutoInHandle futoin__loop_xsched_post(FutoInLoop* loop, const LoopCall* call, int deferred,
        uint32_t delay_ms);
int futoin__loop_xsched_cancel(FutoInLoop* loop, const FutoInHandle* h);
XMsg* futoin__loop_xhandle_slot(FutoInLoop* loop, const FutoInHandle* h, uint64_t* pending);
int futoin__loop_xcancel_record_run(void* consumer, XMsg* m);
int futoin__loop_xstop_run(void* consumer, XMsg* m);
/* Runs a bounded batch of what other threads queued; 1 on a stop request. */
int futoin__loop_drain_x(FutoInLoop* loop);

/* ---- wakeup.c ---- */
void futoin__loop_signal_if_needed(FutoInLoop* loop);
int futoin__loop_signal_disarm(FutoInLoop* loop);
void futoin__loop_embed_arm(FutoInLoop* loop);
/* Sleeps until due_ns (real clock; UINT64_MAX: no timer) or a wake-up. */
void futoin__loop_block_until(FutoInLoop* loop, uint64_t due_ns);

/* ---- wakeup_posix.c, or wakeup_win32.c on Windows: the system's part ----
 * The wake-up object: an eventfd or a pipe, or a Win32 event. */
/* At the loop's creation: no object yet. */
void futoin__loop_wake_init(FutoInLoop* loop);
/* In futoin_loop_free(): the object, if it was made, is closed. */
void futoin__loop_wake_close(FutoInLoop* loop);
/* Loop thread: makes the object unless it exists; 0, or -1 (out of file
 * descriptors or handles). */
int futoin__loop_wake_open(FutoInLoop* loop);
/* Loop thread: the fd an outer event loop polls (made if needed), or -1
 * when it cannot be made or the system's object is no fd (Windows). */
int futoin__loop_wake_pollable_fd(FutoInLoop* loop);
/* Any thread (also a signal handler): makes the object signalled. */
void futoin__loop_wake_post(FutoInLoop* loop);
/* Loop thread: waits for the post another thread owes and consumes it. */
void futoin__loop_wake_consume(FutoInLoop* loop);
/* Loop thread: waits until the object is signalled or until due_ns (real
 * clock; UINT64_MAX: no timeout); consumes nothing. */
void futoin__loop_wake_wait(FutoInLoop* loop, uint64_t due_ns);
/* Sleeps until due_ns on the real clock, without the object. */
void futoin__loop_sleep_until(uint64_t due_ns);

/* ---- inline helpers ---- */

static inline uint64_t add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t ms_to_ns(uint64_t ms)
{
    return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

/* Inside a round the cached time is used so that every callback of the
 * round sees the same "now"; outside one the cache may be arbitrarily old
 * and a timer based on it would fire early. */
static inline uint64_t round_now(FutoInLoop* loop)
{
    if (!loop->is_virtual && !loop->clock_fresh) {
        loop->now_ns = futoin__loop_clock_ns();
        loop->clock_fresh = (uint8_t)(loop->round_depth > 0);
    }
    return loop->now_ns;
}

static inline uint64_t schedule_base(FutoInLoop* loop)
{
    if (!loop->is_virtual && loop->round_depth == 0) {
        loop->clock_fresh = 0;
    }
    return round_now(loop);
}

static inline FutoInHandle handle_none(void)
{
    FutoInHandle handle = { NULL, NULL, 0 };
    return handle;
}

/* NO_RECORD unless the handle (of this loop: the caller checked data1)
 * names a timer that is still pending. */
static inline uint32_t handle_lookup(const FutoInLoop* loop, const FutoInHandle* handle)
{
    uintptr_t slot = (uintptr_t)handle->data2;
    if (slot == 0 || slot > loop->record_capacity) {
        return NO_RECORD;
    }
    uint32_t id = (uint32_t)(slot - 1);
    const LoopRecord* rec = &loop->records[id];
    if (rec->state == RECORD_FREE || rec->generation != (uint32_t)handle->data3) {
        return NO_RECORD;
    }
    return id;
}

static inline int is_imm_handle(const FutoInHandle* handle)
{
    return ((uintptr_t)handle->data2 & ~IMM_HI_MASK) == IMM_TAG;
}

static inline void call_invoke(const LoopCall* call)
{
    if (call->has_aux) {
        call->fn.with_aux(call->data, call->aux);
    } else {
        call->fn.plain(call->data);
    }
}

static inline LoopCall call_plain(void* data, FutoInLoopCallback cb)
{
    LoopCall call;
    call.fn.plain = cb;
    call.data = data;
    call.aux = 0;
    call.has_aux = 0;
    return call;
}

static inline LoopCall call_with_aux(void* data, uintptr_t aux, FutoInLoopAuxCallback cb)
{
    LoopCall call;
    call.fn.with_aux = cb;
    call.data = data;
    call.aux = aux;
    call.has_aux = 1;
    return call;
}

static inline int is_xhandle(const FutoInHandle* h)
{
    return ((uintptr_t)h->data2 & XHANDLE_TAG) != 0;
}

/* Between iterations of an embedded loop (an outer event loop polls the
 * wake-up fd or set a wake-up callback): the next post by another thread
 * signals the outer loop. Nothing to do for a loop that is not embedded. */
static inline void embed_arm(FutoInLoop* loop)
{
    if (loop->embedded || loop->wakeup) {
        futoin__loop_embed_arm(loop);
    }
}

#pragma GCC visibility pop

#endif
