/* SPDX-License-Identifier: MIT */
/*
 * AsyncTool event loop: a FIFO of immediate callbacks plus a timer heap
 * (loop_impl.h maps the loop's files).
 *
 * Every pending timer lives in a record taken from a growable pool (array
 * + free list), and every immediate in a slot of a ring, so scheduling does
 * not allocate in steady state. Records are addressed by index, never by
 * pointer, because the pool may be reallocated by any user callback that
 * schedules more work.
 *
 * Time is kept in nanoseconds internally although the API speaks
 * milliseconds: truncating the real clock to whole milliseconds could fire a
 * timer up to 1 ms before its delay has really elapsed.
 *
 * Other threads never touch the records, the ring or the heap. What they
 * call (schedule, cancel, stop, and through the engine success()/error()/
 * cancel()) becomes a message in the loop's queue (cross_thread.c), run by
 * the loop thread at the start of its next round; wakeup.c gets the loop
 * out of its idle wait. See docs/THREADS.md.
 */
#include "loop/loop_impl.h"

#include "common/aligned_alloc.h"
#include "common/log.h"
#include "common/slab_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- clock ---- */

/* Out of line: a round that reads no clock needs no stack for it. */
FUTOIN_NOINLINE uint64_t futoin__loop_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- records and handles ---- */

static FUTOIN_NOINLINE int grow_records(FutoInLoop* loop)
{
    uint32_t old = loop->record_capacity;
    uint32_t capacity = old ? old * 2 : MIN_POOL;
    /* A record handle's data2 (index + 1) stays below IMM_TAG, which also
     * keeps ids usable as heap ids. The byte limit only bites where size_t
     * is 32 bits wide. */
    if (capacity >= IMM_TAG || capacity <= old) {
        capacity = (uint32_t)(IMM_TAG - 1u);
    }
    size_t max_records = SIZE_MAX / sizeof(LoopRecord);
    if (capacity <= old || (size_t)capacity > max_records) {
        return -1;
    }
    LoopRecord* records = realloc(loop->records, (size_t)capacity * sizeof(*records));
    if (!records) {
        return -1;
    }
    /* Chained high-to-low so that low indices are handed out first. */
    for (uint32_t id = capacity; id-- > old;) {
        records[id].generation = 0;
        records[id].state = RECORD_FREE;
        records[id].next_free = loop->free_head;
        loop->free_head = id;
    }
    loop->records = records;
    loop->record_capacity = capacity;
    return 0;
}

static uint32_t record_alloc(FutoInLoop* loop, const LoopCall* call, uint8_t state)
{
    if (loop->free_head == NO_RECORD && grow_records(loop) != 0) {
        return NO_RECORD;
    }
    uint32_t id = loop->free_head;
    LoopRecord* rec = &loop->records[id];
    loop->free_head = rec->next_free;
    rec->fn = call->fn;
    rec->data = call->data;
    rec->aux = call->aux;
    rec->has_aux = (uint8_t)call->has_aux;
    rec->state = state;
    return id;
}

/* Bumping the generation is what invalidates every outstanding handle. */
static void record_release(FutoInLoop* loop, uint32_t id)
{
    LoopRecord* rec = &loop->records[id];
    rec->generation = (rec->generation + 1) & GENERATION_MASK;
    rec->state = RECORD_FREE;
    rec->next_free = loop->free_head;
    loop->free_head = id;
}

/* Frees the record before the call so the callback may freely schedule,
 * cancel (even itself) or grow the pool. */
static LoopCall record_take(FutoInLoop* loop, uint32_t id)
{
    const LoopRecord* rec = &loop->records[id];
    LoopCall call;
    call.fn = rec->fn;
    call.data = rec->data;
    call.aux = rec->aux;
    call.has_aux = rec->has_aux;
    record_release(loop, id);
    return call;
}

static FutoInHandle handle_make(FutoInLoop* loop, uint32_t id)
{
    FutoInHandle handle;
    handle.data1 = loop;
    handle.data2 = (void*)((uintptr_t)id + 1);
    handle.data3 = (ptrdiff_t)loop->records[id].generation;
    return handle;
}

static FutoInHandle imm_handle(FutoInLoop* loop, uint64_t seq)
{
    FutoInHandle handle;
    handle.data1 = loop;
    handle.data2 = (void*)(IMM_TAG | ((uintptr_t)(seq >> IMM_LO_BITS) & IMM_HI_MASK));
    handle.data3 = (ptrdiff_t)(seq & IMM_LO_MASK);
    return handle;
}

/* The pending (not cancelled, not yet run) immediate an immediate handle
 * of this loop names, or NULL. */
static ImmSlot* imm_lookup(const FutoInLoop* loop, const FutoInHandle* handle)
{
    if (handle->data3 < 0 || (uint64_t)handle->data3 > IMM_LO_MASK) {
        return NULL;
    }
    uint64_t seq = ((uint64_t)((uintptr_t)handle->data2 & IMM_HI_MASK) << IMM_LO_BITS)
            | (uint64_t)handle->data3;
    uint64_t ahead = (seq - loop->imm_head) & IMM_SEQ_MASK;
    if (ahead >= loop->imm_tail - loop->imm_head) {
        return NULL;
    }
    ImmSlot* slot = &loop->ring[(loop->imm_head + ahead) & loop->ring_mask];
    return slot->kind != IMM_DEAD ? slot : NULL;
}

/* Moves every slot to its place in a ring twice as large (a slot's place
 * depends on the capacity). Kept out of line: the push stays small. */
static FUTOIN_NOINLINE int ring_grow(FutoInLoop* loop)
{
    size_t old = loop->ring_mask + 1;
    size_t capacity = old * 2;
    if (capacity <= old || capacity > SIZE_MAX / sizeof(ImmSlot)) {
        return -1;
    }
    ImmSlot* ring = malloc(capacity * sizeof(*ring));
    if (!ring) {
        return -1;
    }
    for (uint64_t seq = loop->imm_head; seq != loop->imm_tail; ++seq) {
        ring[seq & (capacity - 1)] = loop->ring[seq & (old - 1)];
    }
    free(loop->ring);
    loop->ring = ring;
    loop->ring_mask = capacity - 1;
    return 0;
}

/* ---- scheduling ---- */

static FUTOIN_ALWAYS_INLINE void imm_store(FutoInLoop* loop, uint64_t seq, LoopFn fn, void* data,
        uintptr_t aux, uintptr_t kind)
{
    ImmSlot* slot = &loop->ring[seq & loop->ring_mask];
    slot->fn = fn;
    slot->data = data;
    slot->aux = aux;
    slot->kind = kind;
    loop->imm_tail = seq + 1;
    ++loop->live_immediates;
}

/* schedule_immediate() when the ring is full or the driver must hear of
 * it. Out of line so that the common case needs no stack frame. spare is
 * 1 for ordinary immediates (the last slot is the dispatcher's), 0 for the
 * dispatcher. */
static FUTOIN_NOINLINE FutoInHandle schedule_immediate_slow(FutoInLoop* loop, LoopFn fn, void* data,
        uintptr_t aux, uintptr_t kind, size_t spare)
{
    uint64_t seq = loop->imm_tail;
    if (seq - loop->imm_head + spare > loop->ring_mask && ring_grow(loop) != 0) {
        return handle_none();
    }
    imm_store(loop, seq, fn, data, aux, kind);
    /* Only the first pending immediate can change the driver's plan: with
     * more already queued it is busy (or about to be) running them. */
    if (loop->wakeup && loop->live_immediates == 1) {
        loop->wakeup(loop->wakeup_data);
    }
    return imm_handle(loop, seq);
}

/* The one way an immediate is scheduled (loop thread). */
static FUTOIN_ALWAYS_INLINE FutoInHandle schedule_immediate(FutoInLoop* loop, LoopFn fn, void* data,
        uintptr_t aux, uintptr_t kind)
{
    uint64_t seq = loop->imm_tail;
    if (FUTOIN_UNLIKELY(seq - loop->imm_head >= loop->ring_mask
                || (loop->wakeup != NULL && loop->live_immediates == 0))) {
        return schedule_immediate_slow(loop, fn, data, aux, kind, 1);
    }
    imm_store(loop, seq, fn, data, aux, kind);
    return imm_handle(loop, seq);
}

FutoInHandle futoin__loop_schedule_call(FutoInLoop* loop, const LoopCall* call)
{
    return schedule_immediate(loop, call->fn, call->data, call->aux,
            call->has_aux ? IMM_AUX : IMM_PLAIN);
}

/* Runs the oldest slot (the ring must not be empty). The slot is left
 * before the call, so the callback may schedule (and grow the ring) or
 * cancel anything, itself included. Returns 1 if it was live and ran. */
static FUTOIN_ALWAYS_INLINE int run_ring_slot(FutoInLoop* loop)
{
    uint64_t seq = loop->imm_head;
    const ImmSlot* slot = &loop->ring[seq & loop->ring_mask];
    loop->imm_head = seq + 1;
    uintptr_t kind = slot->kind;
    if (kind == IMM_DEAD) {
        return 0;
    }
    LoopFn fn = slot->fn;
    void* data = slot->data;
    uintptr_t aux = slot->aux;
    --loop->live_immediates;
    if (kind == IMM_AUX) {
        fn.with_aux(data, aux);
    } else {
        fn.plain(data);
    }
    return 1;
}

static FutoInHandle schedule_deferred_at(FutoInLoop* loop, uint64_t due, const LoopCall* call)
{
    uint32_t id = record_alloc(loop, call, RECORD_DEFERRED);
    if (id == NO_RECORD) {
        return handle_none();
    }
    if (futoin__timer_heap_push(&loop->timers, id, due) != 0) {
        record_release(loop, id);
        return handle_none();
    }
    /* A timer that is not the earliest cannot make the driver's timer late. */
    if (loop->wakeup && futoin__timer_heap_top(&loop->timers)->id == id) {
        loop->wakeup(loop->wakeup_data);
    }
    return handle_make(loop, id);
}

FutoInHandle futoin__loop_schedule_at(FutoInLoop* loop, uint64_t due, const LoopCall* call)
{
    return schedule_deferred_at(loop, due, call);
}

static FutoInHandle schedule_deferred(FutoInLoop* loop, uint32_t delay_ms, const LoopCall* call)
{
    return schedule_deferred_at(loop, add_saturating(schedule_base(loop), ms_to_ns(delay_ms)),
            call);
}

/* ---- public scheduling ---- */

FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    if (!futoin__loop_on_thread(loop)) {
        LoopCall call = call_plain(data, cb);
        return futoin__loop_xsched_post(loop, &call, 0, 0);
    }
    LoopFn fn;
    fn.plain = cb;
    return schedule_immediate(loop, fn, data, 0, IMM_PLAIN);
}

FutoInHandle futoin_loop_deferred(FutoInLoop* loop, uint32_t delay_ms, void* data,
        FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_plain(data, cb);
    if (!futoin__loop_on_thread(loop)) {
        return futoin__loop_xsched_post(loop, &call, 1, delay_ms);
    }
    return schedule_deferred(loop, delay_ms, &call);
}

void futoin__loop_post_local(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    LoopFn fn;
    fn.plain = cb;
    uint64_t seq = loop->imm_tail;
    if (FUTOIN_UNLIKELY(seq - loop->imm_head > loop->ring_mask
                || (loop->wakeup != NULL && loop->live_immediates == 0))) {
        /* The ring's spare slot is ours: this cannot fail unless a second
         * post is pending, which the engine never makes. */
        if (!schedule_immediate_slow(loop, fn, data, 0, IMM_PLAIN, 0).data1) {
            futoin__out_of_memory("the dispatcher's immediate");
        }
        return;
    }
    imm_store(loop, seq, fn, data, 0, IMM_PLAIN);
}

FutoInHandle futoin__loop_immediate_aux(FutoInLoop* loop, void* data, uintptr_t aux,
        FutoInLoopAuxCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopFn fn;
    fn.with_aux = cb;
    return schedule_immediate(loop, fn, data, aux, IMM_AUX);
}

FutoInHandle futoin__loop_deferred_aux(FutoInLoop* loop, uint32_t delay_ms, void* data,
        uintptr_t aux, FutoInLoopAuxCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_with_aux(data, aux, cb);
    return schedule_deferred(loop, delay_ms, &call);
}

/* A local (not cross-thread) handle of this loop, loop thread. A
 * cancelled immediate keeps its ring slot, marked dead, which keeps cancel
 * O(1). Returns 1 if it was pending. */
static int cancel_local(FutoInLoop* loop, FutoInHandle* handle)
{
    int was_pending = 0;
    if (is_imm_handle(handle)) {
        ImmSlot* slot = imm_lookup(loop, handle);
        if (slot) {
            slot->kind = IMM_DEAD;
            --loop->live_immediates;
            was_pending = 1;
        }
    } else {
        uint32_t id = handle_lookup(loop, handle);
        if (id != NO_RECORD) {
            futoin__timer_heap_remove(&loop->timers, id);
            record_release(loop, id);
            was_pending = 1;
        }
    }
    *handle = handle_none();
    return was_pending;
}

void futoin__loop_cancel_local(FutoInLoop* loop, FutoInHandle* handle)
{
    if (handle && (const void*)handle->data1 == (const void*)loop) {
        cancel_local(loop, handle);
    }
}

int futoin_loop_try_cancel(FutoInLoop* loop, FutoInHandle* handle)
{
    if (!handle || (const void*)handle->data1 != (const void*)loop) {
        /* A handle of another loop is left intact: it is still valid there. */
        return 0;
    }
    if (!loop) {
        *handle = handle_none();
        return 0;
    }
    int rc;
    if (is_xhandle(handle)) {
        rc = futoin__loop_xsched_cancel(loop, handle);
    } else if (futoin__loop_on_thread(loop)) {
        return cancel_local(loop, handle);
    } else {
        /* Records belong to the loop thread: the cancel is queued, and
         * decided there (pending at that point: it never runs). */
        XMsg* m = futoin__xq_alloc(&loop->xq);
        rc = -1;
        if (m) {
            ((XCancelRecord*)(void*)m->u.bytes)->handle = *handle;
            m->run = futoin__loop_xcancel_record_run;
            futoin__loop_xmsg_post(loop, m);
        } else {
            /* -1 also means "queued": a dropped cancel would let the
             * callback run behind the caller's back. */
            futoin__out_of_memory("a cross-thread cancel");
        }
    }
    *handle = handle_none();
    return rc;
}

void futoin_loop_cancel(FutoInLoop* loop, FutoInHandle* handle)
{
    futoin_loop_try_cancel(loop, handle);
}

int futoin_loop_is_valid(const FutoInLoop* loop, const FutoInHandle* handle)
{
    if (!loop || !handle || (const void*)handle->data1 != (const void*)loop) {
        return 0;
    }
    if (is_xhandle(handle)) {
        uint64_t pending;
        /* Reading a slot's state is safe from any thread. */
        XMsg* m = futoin__loop_xhandle_slot((FutoInLoop*)(uintptr_t)loop, handle, &pending);
        return m && atomic_load_explicit(&m->state, memory_order_acquire) == pending;
    }
    if (!futoin__loop_on_thread(loop)) {
        return 0; /* the records may be moving under us: unknown, see header */
    }
    if (is_imm_handle(handle)) {
        return imm_lookup(loop, handle) != NULL;
    }
    return handle_lookup(loop, handle) != NO_RECORD;
}

uint64_t futoin__monotonic_ms(void)
{
    return futoin__loop_clock_ns() / NS_PER_MS;
}

/* ---- running ---- */

static int run_first_immediate(FutoInLoop* loop)
{
    while (loop->live_immediates > 0 && loop->imm_head != loop->imm_tail) {
        if (run_ring_slot(loop)) {
            return 1;
        }
    }
    return 0;
}

static void run_top_timer(FutoInLoop* loop)
{
    uint32_t id = futoin__timer_heap_pop(&loop->timers);
    LoopCall call = record_take(loop, id);
    call_invoke(&call);
}

/* Only the slots present at round start are consumed: anything queued by
 * the callbacks lands behind them and waits for the next round. Returns 1
 * when stopped. */
static FUTOIN_ALWAYS_INLINE int run_immediate_batch(FutoInLoop* loop)
{
    uint64_t end = loop->imm_tail;
    while (loop->imm_head < end) {
        if (run_ring_slot(loop) && loop->stop_requested) {
            return 1;
        }
    }
    return 0;
}

/* Timers pushed during the round have seq >= seq_limit. Stopping at the
 * first such timer is enough: a new timer can tie on due only with an
 * older one, which wins on seq, so every older due timer comes before it.
 * Without the limit a callback re-arming itself with delay 0 would keep
 * the round going forever. Returns 1 when stopped. */
static FUTOIN_ALWAYS_INLINE int run_due_timers(FutoInLoop* loop, uint64_t seq_limit)
{
    if (futoin__timer_heap_size(&loop->timers) == 0) {
        return 0;
    }
    for (;;) {
        const TimerEntry* top = futoin__timer_heap_top(&loop->timers);
        if (!top || top->seq >= seq_limit || top->due > round_now(loop)) {
            return 0;
        }
        run_top_timer(loop);
        if (loop->stop_requested) {
            return 1;
        }
    }
}

/* Returns 1 when futoin_loop_stop() was called during the round. */
static FUTOIN_ALWAYS_INLINE int run_round(FutoInLoop* loop)
{
    ++loop->round_depth;
    loop->clock_fresh = 0;
    /* Other threads' work first: it was queued before this round began.
     * The common case (nothing queued, not embedded) costs a load of our
     * own flags and one relaxed load of the queue's head. */
    int stopped = (loop->xpoll || futoin__xq_head_moved(&loop->xq)) && futoin__loop_drain_x(loop);
    uint64_t seq_limit = futoin__timer_heap_next_seq(&loop->timers);
    stopped = stopped || run_immediate_batch(loop) || run_due_timers(loop, seq_limit);
    --loop->round_depth;
    return stopped;
}

/* Runs the first immediate, else the earliest timer due at or before
 * limit_ns, moving the virtual clock to it. Returns 1 if a callback ran. */
static int run_one_virtual(FutoInLoop* loop, uint64_t limit_ns)
{
    if ((loop->xpoll & XPOLL_EMBEDDED) || futoin__xq_nonempty(&loop->xq)) {
        futoin__loop_drain_x(loop);
    }
    if (run_first_immediate(loop)) {
        return 1;
    }
    const TimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (!top || top->due > limit_ns) {
        return 0;
    }
    if (top->due > loop->now_ns) {
        loop->now_ns = top->due;
    }
    run_top_timer(loop);
    return 1;
}

/* Nothing is runnable right now: the real clock sleeps in the kernel until
 * the next timer or another thread's wake-up; the virtual clock jumps to
 * the next timer, or (no timer, but holds) sleeps until another thread
 * posts. Returns at once when there is work. */
static void idle_wait(FutoInLoop* loop)
{
    if (loop->live_immediates > 0 || futoin__xq_nonempty(&loop->xq)) {
        return;
    }
    const TimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (loop->is_virtual) {
        if (top) {
            if (top->due > loop->now_ns) {
                loop->now_ns = top->due;
            }
            return;
        }
        futoin__loop_block_until(loop, UINT64_MAX);
        return;
    }
    futoin__loop_block_until(loop, top ? top->due : UINT64_MAX);
}

/* Work that keeps run() going: callbacks, queued messages, holds. The
 * hold count is read first: a thread posts, then releases, so once the
 * release is seen its message is seen too. */
static FUTOIN_ALWAYS_INLINE int has_work(FutoInLoop* loop)
{
    return atomic_load_explicit(&loop->refs, memory_order_acquire) > 0 || loop->live_immediates > 0
            || futoin__timer_heap_size(&loop->timers) > 0 || (loop->xpoll & XPOLL_BACKLOG)
            || futoin__xq_head_moved(&loop->xq);
}

/* Rounded up so that a poll() with this timeout never wakes too early. */
static int64_t next_delay_ms(const FutoInLoop* loop)
{
    /* The queue is only read here; the loop itself is never const. */
    if (loop->live_immediates > 0 || futoin__xq_nonempty((XQueue*)(uintptr_t)&loop->xq)) {
        return 0;
    }
    const TimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (!top) {
        return -1;
    }
    uint64_t now = loop->is_virtual ? loop->now_ns : futoin__loop_clock_ns();
    if (top->due <= now) {
        return 0;
    }
    uint64_t ms = (top->due - now) / NS_PER_MS + ((top->due - now) % NS_PER_MS != 0);
    return ms > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ms;
}

size_t futoin_loop_pending(const FutoInLoop* loop)
{
    return loop ? loop->live_immediates + futoin__timer_heap_size(&loop->timers) : 0;
}

static void report_misuse(FutoInLoop* loop, const char* info)
{
    if (loop->misuse_hook) {
        loop->misuse_hook(loop, info);
    } else {
        futoin__log_misuse(info);
    }
}

/* A loop callback asked to run the loop again: refused with a report,
 * since the inner round would run timers and handlers of the very step
 * whose callback is still on the C stack. An abandoned loop (below)
 * refuses every run. Returns 1 if it was refused. */
static int refuse_nested(FutoInLoop* loop, const char* what)
{
    if (!FUTOIN_UNLIKELY(loop->round_depth)) {
        return 0;
    }
    char buf[300];
    if (loop->abandoned) {
        snprintf(buf, sizeof(buf),
                "%s() refused: a callback of this loop was left by an exception or a "
                "forced unwind, and the loop is abandoned (free it; docs/SEMANTICS.md "
                "\"Exceptions and longjmp\")",
                what);
    } else {
        snprintf(buf, sizeof(buf),
                "%s() called from inside a callback of the same loop: refused "
                "(the loop is already running that callback)",
                what);
    }
    report_misuse(loop, buf);
    return 1;
}

/* ---- callbacks left by an exception ----
 * C callbacks must not throw, but a C++ callback can let an exception
 * escape (or a thread be cancelled inside one: glibc's pthread_cancel()
 * unwinds too). The exception then passes through the loop's C frames and
 * leaves the round half done: a step marked running, the engine's
 * dispatcher mid-batch. C cannot catch it, and the state cannot be
 * repaired; what must not happen is silence, with every later run
 * refused as "nested" or every root stuck. The library is built with
 * -fexceptions where the compiler has it, so the cleanup of a DriveGuard
 * runs as the exception passes the call that drives the loop: it reports
 * once and marks the loop abandoned. The round's depth is left counted,
 * so the only cost on the normal path is the guard's flag. */
typedef struct DriveGuard {
    FutoInLoop* loop;
    const char* what;
    int returned;
} DriveGuard;

static FUTOIN_COLD void drive_abandoned(DriveGuard* g)
{
    FutoInLoop* loop = g->loop;
    if (loop->abandoned) {
        return;
    }
    loop->abandoned = 1;
    if (loop->round_depth == 0) {
        loop->round_depth = 1;
    }
    char buf[300];
    snprintf(buf, sizeof(buf),
            "a callback run by %s() was left by an exception or a forced unwind "
            "(a C++ throw, pthread_cancel()): the loop is abandoned and refuses to "
            "run again; C callbacks must not throw (docs/SEMANTICS.md \"Exceptions "
            "and longjmp\")",
            g->what);
    report_misuse(loop, buf);
}

static inline void drive_guard_end(DriveGuard* g)
{
    if (FUTOIN_UNLIKELY(!g->returned)) {
        drive_abandoned(g);
    }
}

#if defined(__GNUC__) || defined(__clang__)
#define DRIVE_GUARD(g, lp, name)                                                                   \
    DriveGuard g __attribute__((cleanup(drive_guard_end))) = { (lp), (name), 0 }
#else
#define DRIVE_GUARD(g, lp, name)                                                                   \
    DriveGuard g = { (lp), (name), 0 };                                                            \
    (void)g
#endif
/* Every normal return of a guarded function passes here first. */
#define DRIVE_RETURNED(g) ((g).returned = 1)

int futoin_loop_iterate(FutoInLoop* loop, int64_t* next_delay)
{
    if (refuse_nested(loop, "futoin_loop_iterate")) {
        if (next_delay) {
            *next_delay = next_delay_ms(loop);
        }
        return -1;
    }
    DRIVE_GUARD(guard, loop, "futoin_loop_iterate");
    /* A stop requested outside run() must not cut a later round short. */
    loop->stop_requested = 0;
    run_round(loop);
    DRIVE_RETURNED(guard);
    loop->stop_requested = 0;
    /* The embedder waits on the fd or for the hook until the next call. */
    embed_arm(loop);
    if (next_delay) {
        *next_delay = next_delay_ms(loop);
    }
    return has_work(loop);
}

void futoin_loop_run(FutoInLoop* loop)
{
    if (refuse_nested(loop, "futoin_loop_run")) {
        return;
    }
    DRIVE_GUARD(guard, loop, "futoin_loop_run");
    loop->stop_requested = 0;
    while (!run_round(loop) && has_work(loop)) {
        if (loop->live_immediates == 0) {
            idle_wait(loop);
        }
    }
    DRIVE_RETURNED(guard);
    loop->stop_requested = 0;
    embed_arm(loop);
}

void futoin_loop_stop(FutoInLoop* loop)
{
    if (!loop) {
        return;
    }
    if (futoin__loop_on_thread(loop)) {
        loop->stop_requested = 1;
        return;
    }
    XMsg* m = futoin__xq_alloc(&loop->xq);
    if (!m) {
        /* Nobody to tell, and a lost stop leaves the loop running. */
        futoin__out_of_memory("a cross-thread stop");
    }
    m->run = futoin__loop_xstop_run;
    futoin__loop_xmsg_post(loop, m);
}

int futoin_loop_run_next(FutoInLoop* loop)
{
    if (!loop->is_virtual || refuse_nested(loop, "futoin_loop_run_next")) {
        return -1;
    }
    DRIVE_GUARD(guard, loop, "futoin_loop_run_next");
    ++loop->round_depth;
    int ran = run_one_virtual(loop, UINT64_MAX);
    --loop->round_depth;
    DRIVE_RETURNED(guard);
    return ran;
}

void futoin_loop_advance(FutoInLoop* loop, uint64_t ms)
{
    if (!loop->is_virtual || refuse_nested(loop, "futoin_loop_advance")) {
        return;
    }
    DRIVE_GUARD(guard, loop, "futoin_loop_advance");
    ++loop->round_depth;
    uint64_t target = add_saturating(loop->now_ns, ms_to_ns(ms));
    while (run_one_virtual(loop, target)) {
    }
    if (target > loop->now_ns) {
        loop->now_ns = target;
    }
    --loop->round_depth;
    DRIVE_RETURNED(guard);
}

/* ---- clock & thread queries ---- */

uint64_t futoin_loop_now(const FutoInLoop* loop)
{
    if (!loop->is_virtual && loop->round_depth == 0) {
        return futoin__loop_clock_ns() / NS_PER_MS;
    }
    /* The loop is never a const object: the cast only fills the cache. */
    return round_now((FutoInLoop*)loop) / NS_PER_MS;
}

int futoin_loop_is_same_thread(const FutoInLoop* loop)
{
    return futoin__loop_on_thread(loop);
}

/* ---- lifetime ---- */

static FutoInLoop* loop_create(int is_virtual)
{
    /* Cache-line aligned: the hot fields share the first line, and the
     * queue's producer and consumer ends get lines of their own. */
    size_t size = (sizeof(FutoInLoop) + LOOP_LINE - 1) / LOOP_LINE * LOOP_LINE;
    FutoInLoop* loop = futoin__aligned_alloc(LOOP_LINE, size);
    if (!loop) {
        return NULL;
    }
    memset(loop, 0, size);
    loop->ring = malloc(MIN_POOL * sizeof(*loop->ring));
    if (!loop->ring) {
        futoin__aligned_free(loop);
        return NULL;
    }
    loop->ring_mask = MIN_POOL - 1;
    loop->free_head = NO_RECORD;
    futoin__timer_heap_init(&loop->timers);
    loop->is_virtual = (uint8_t)is_virtual;
    loop->now_ns = is_virtual ? 0 : futoin__loop_clock_ns();
    loop->head.owner = pthread_self();
#if FUTOIN_THREAD_POINTER
    loop->head.owner_tp = __builtin_thread_pointer();
#endif
    futoin__xq_init(&loop->xq);
    atomic_init(&loop->need_signal, 0);
    atomic_init(&loop->refs, 0);
    atomic_init(&loop->xbusy, 0);
    atomic_init(&loop->dump_msg, NULL);
    atomic_init(&loop->dump_pending, 0);
    futoin__loop_wake_init(loop);
    return loop;
}

FutoInLoop* futoin_loop_new(void)
{
    return loop_create(0);
}

FutoInLoop* futoin_loop_new_virtual(void)
{
    return loop_create(1);
}

/* Invalidates every handle so that the engine destructor, which runs
 * afterwards, can still cancel its handles harmlessly. */
static void drop_pending(FutoInLoop* loop)
{
    for (uint32_t id = 0; id < loop->record_capacity; ++id) {
        if (loop->records[id].state != RECORD_FREE) {
            record_release(loop, id);
        }
    }
    futoin__timer_heap_clear(&loop->timers);
    loop->imm_head = loop->imm_tail; /* every immediate handle goes stale */
    loop->live_immediates = 0;
}

void futoin_loop_free(FutoInLoop* loop)
{
    if (!loop) {
        return;
    }
    if (loop->free_hook) {
        /* E.g. no signal handler may ask this loop for a dump any more. */
        loop->free_hook(loop);
    }
    /* A thread may still be finishing the wake-up of a post or release
     * that the loop thread has already acted on. */
    while (atomic_load(&loop->xbusy) > 0) {
        sched_yield();
    }
    /* Messages nobody will run: what they own is released exactly once. */
    XMsg* m;
    while ((m = futoin__xq_pop(&loop->xq)) != NULL) {
        if (m->drop) {
            m->drop(m);
        }
    }
    drop_pending(loop);
    if (loop->engine_free && loop->head.engine_ctx) {
        loop->engine_free(loop->head.engine_ctx);
    }
    futoin__timer_heap_destroy(&loop->timers);
    futoin__xq_destroy(&loop->xq);
    futoin__loop_wake_close(loop);
    free(loop->ring);
    free(loop->records);
    futoin__aligned_free(loop);
}

void futoin__loop_set_engine_free(FutoInLoop* loop, void (*destroy)(void* engine_ctx))
{
    loop->engine_free = destroy;
}

void futoin__loop_set_misuse_hook(FutoInLoop* loop,
        void (*hook)(FutoInLoop* loop, const char* info))
{
    loop->misuse_hook = hook;
}

int futoin__loop_is_driving(const FutoInLoop* loop)
{
    return loop->round_depth > 0;
}

int64_t futoin_loop_next_delay(const FutoInLoop* loop)
{
    return loop ? next_delay_ms(loop) : -1;
}

void futoin__loop_wait_next_timer(FutoInLoop* loop)
{
    idle_wait(loop);
}

void futoin__loop_settle(FutoInLoop* loop)
{
    for (;;) {
        while (futoin__xq_nonempty(&loop->xq)) {
            futoin__loop_drain_x(loop);
        }
        if (atomic_load(&loop->refs) <= 0) {
            return;
        }
        futoin__loop_block_until(loop, UINT64_MAX);
    }
}
