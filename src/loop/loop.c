/* SPDX-License-Identifier: MIT */
/*
 * AsyncTool event loop: a FIFO of immediate callbacks plus a timer heap.
 *
 * Every pending callback lives in a record taken from a growable pool
 * (array + free list), so scheduling does not allocate in steady state.
 * Records are addressed by index, never by pointer, because the pool may be
 * reallocated by any user callback that schedules more work.
 *
 * Time is kept in nanoseconds internally although the API speaks
 * milliseconds: truncating the real clock to whole milliseconds could fire a
 * timer up to 1 ms before its delay has really elapsed.
 *
 * Other threads never touch the records, the ring or the heap. What they
 * call (schedule, cancel, stop, and through the engine success()/error()/
 * cancel()) becomes a message in the loop's MPSC queue (loop/cross_thread_queue.c), run by
 * the loop thread at the start of its next round; a wake-up fd (eventfd, or
 * a pipe elsewhere) gets the loop out of its idle wait. See "Cross-thread"
 * below and docs/THREADS.md.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* ppoll(): nanosecond timeouts for the idle wait */
#endif

#include "loop/loop_internal.h"
#include "loop/timer_heap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/eventfd.h>
#endif

#define NO_RECORD UINT32_MAX
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)
/* Generations stay below 2^31 so they survive the round trip through the
 * handle's ptrdiff_t even where it is 32 bits wide. */
#define GENERATION_MASK UINT32_C(0x7fffffff)
#define MIN_POOL 64u
#define LOOP_LINE 64

#if defined(__GNUC__) || defined(__clang__)
#define LOOP_NOINLINE __attribute__((noinline))
#define LOOP_INLINE inline __attribute__((always_inline))
#define LOOP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LOOP_NOINLINE
#define LOOP_INLINE inline
#define LOOP_UNLIKELY(x) (x)
#endif

/* Handle encoding. data2 says what a handle names:
 *   [1, IMM_TAG)          a record (timer): index + 1; data3 = generation
 *   IMM_TAG | seq >> 31   an immediate: data3 = seq & 0x7fffffff
 *   XHANDLE_TAG | ...     a cross-thread schedule (see "Cross-thread")
 * Both local kinds fit in 32 + 31 bits, which FutoInLoopRef relies on. */
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
 * armed): SIG_FD, a write to the wake-up fd (the loop thread waits on it in
 * run(), or an embedder polls it); SIG_HOOK, a call of the wake-up callback
 * of futoin_loop_set_wakeup() on the posting thread. */
enum { SIG_FD = 1, SIG_HOOK = 2 };

/* What a ring slot holds: the immediate is stored in the ring itself. */
enum ImmKind { IMM_DEAD, IMM_PLAIN, IMM_AUX };

typedef union {
    FutoInLoopCallback plain;
    FutoInLoopCallback2 with_aux;
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
    FutoInLoopHead head; /* first: futoin__loop_on_thread() reads it inline */

    /* ---- hot: what an immediate and a round touch, one cache line ----
     * Every immediate gets the next sequence number; the one numbered seq
     * sits in ring[seq & (ring_capacity - 1)] while imm_head <= seq <
     * imm_tail. Numbers are never reused, so the handle of an immediate
     * that ran or was cancelled never names a later one. */
    ImmSlot* ring;         /* capacity is a power of two */
    uint64_t imm_head;     /* sequence number of the oldest slot */
    uint64_t imm_tail;     /* sequence number the next immediate gets */
    size_t ring_capacity;
    size_t live_immediates; /* slots that are not IMM_DEAD */
    /* futoin_loop_set_wakeup(): lets an outer event loop (the libuv
     * backend, say) learn that it must wake up earlier than it planned;
     * NULL when nobody drives the loop. Written by the loop thread only
     * while no other thread can be calling it (see futoin_loop_set_wakeup). */
    FutoInLoopWakeup wakeup;
    unsigned round_depth;
    uint8_t stop_requested;
    uint8_t embedded;    /* futoin_loop_wakeup_fd() handed the fd out */
    uint8_t xpoll;       /* XPOLL_* */
    /* The real clock is read at most once per round, and only when a timer
     * needs it: rounds that only run immediates cost no clock read. */
    uint8_t clock_fresh;
    uint8_t is_virtual;
    /* ---- end of the hot part ---- */

    uint64_t now_ns;

    LoopRecord* records; /* timers only */
    uint32_t record_capacity;
    uint32_t free_head;

    FutoInTimerHeap timers;

    void (*engine_free)(void* engine_ctx);

    void* wakeup_data;

    /* ---- introspection (include/futoin/introspect.h) ---- */
    uint64_t xmsgs_run; /* cross-thread messages run */
    /* A dump request: a message slot kept for it (NULL until a handler is
     * set), so that asking for a dump allocates nothing and is safe in a
     * signal handler; dump_pending is 1 while it is queued. */
    _Atomic(FutoInXMsg*) dump_msg;
    _Atomic int dump_pending;
    void (*dump_cb)(FutoInLoop* loop, void* data);
    void* dump_data;
    uint8_t dump_sig; /* in the signal table of observe/introspect.c */

    /* ---- cross-thread ---- */
    _Alignas(LOOP_LINE) FutoInXQueue xq;
    /* Set (to SIG_* bits) by the loop thread when it is about to wait on
     * the wake-up fd (or, embedded, between iterations); whoever flips it
     * back to 0 owes exactly one signal of each kind: a write to the fd,
     * which the loop thread consumes (so the fd is never left readable by
     * accident), and/or a call of the wake-up callback. A busy loop costs
     * producers no system call. */
    _Atomic int need_signal;
    _Atomic long refs;   /* futoin_loop_hold(): outstanding external work */
    /* Threads between making work visible (a push, a release) and the end
     * of their wake-up: the loop thread may already have seen the work and
     * be on its way to futoin_loop_free(), which waits for this to drop to
     * 0 so that the wake-up never touches freed memory. */
    _Atomic int xbusy;
    int wake_rfd;        /* -1 until the loop first needs to wait */
    int wake_wfd;
    int armed;           /* loop thread: need_signal was set by us to these SIG_* bits */
    /* Loop thread: another thread took a SIG_HOOK signal and may still be
     * calling the hook; futoin_loop_set_wakeup() waits for it. */
    uint8_t hook_owed;
};

/* ---- clock ---- */

/* Out of line: a round that reads no clock needs no stack for it. */
static LOOP_NOINLINE uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t ms_to_ns(uint64_t ms)
{
    return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

/* Inside a round the cached time is used so that every callback of the
 * round sees the same "now"; outside one the cache may be arbitrarily old
 * and a timer based on it would fire early. */
static uint64_t round_now(FutoInLoop* loop)
{
    if (!loop->is_virtual && !loop->clock_fresh) {
        loop->now_ns = monotonic_ns();
        loop->clock_fresh = (uint8_t)(loop->round_depth > 0);
    }
    return loop->now_ns;
}

static uint64_t schedule_base(FutoInLoop* loop)
{
    if (!loop->is_virtual && loop->round_depth == 0) {
        loop->clock_fresh = 0;
    }
    return round_now(loop);
}

static void sleep_until(uint64_t due_ns)
{
    uint64_t sec = due_ns / NS_PER_SEC;
    /* Keeps the value representable in a 32-bit time_t; the caller simply
     * sleeps again if the timer is still not due. */
    if (sec > (uint64_t)INT32_MAX) {
        sec = (uint64_t)INT32_MAX;
    }
    struct timespec ts = { .tv_sec = (time_t)sec, .tv_nsec = (long)(due_ns % NS_PER_SEC) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ---- record pool ---- */

static LOOP_NOINLINE int grow_records(FutoInLoop* loop)
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

static void call_invoke(const LoopCall* call)
{
    if (call->has_aux) {
        call->fn.with_aux(call->data, call->aux);
    } else {
        call->fn.plain(call->data);
    }
}

/* ---- handles ---- */

static FutoInHandle handle_make(FutoInLoop* loop, uint32_t id)
{
    FutoInHandle handle;
    handle.data1 = loop;
    handle.data2 = (void*)((uintptr_t)id + 1);
    handle.data3 = (ptrdiff_t)loop->records[id].generation;
    return handle;
}

static FutoInHandle handle_none(void)
{
    FutoInHandle handle = { NULL, NULL, 0 };
    return handle;
}

/* NO_RECORD unless the handle (of this loop: the caller checked data1)
 * names a timer that is still pending. */
static LOOP_INLINE uint32_t handle_lookup(const FutoInLoop* loop, const FutoInHandle* handle)
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

/* ---- immediate ring ---- */

static FutoInHandle imm_handle(FutoInLoop* loop, uint64_t seq)
{
    FutoInHandle handle;
    handle.data1 = loop;
    handle.data2 = (void*)(IMM_TAG | ((uintptr_t)(seq >> IMM_LO_BITS) & IMM_HI_MASK));
    handle.data3 = (ptrdiff_t)(seq & IMM_LO_MASK);
    return handle;
}

static int is_imm_handle(const FutoInHandle* handle)
{
    return ((uintptr_t)handle->data2 & ~IMM_HI_MASK) == IMM_TAG;
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
    ImmSlot* slot = &loop->ring[(loop->imm_head + ahead) & (loop->ring_capacity - 1)];
    return slot->kind != IMM_DEAD ? slot : NULL;
}

/* Moves every slot to its place in a ring twice as large (a slot's place
 * depends on the capacity). Kept out of line: the push stays small. */
static LOOP_NOINLINE int ring_grow(FutoInLoop* loop)
{
    size_t old = loop->ring_capacity;
    size_t capacity = old ? old * 2 : MIN_POOL;
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
    loop->ring_capacity = capacity;
    return 0;
}

/* ---- scheduling ---- */

static LOOP_INLINE void imm_store(
        FutoInLoop* loop, uint64_t seq, LoopFn fn, void* data, uintptr_t aux, uintptr_t kind)
{
    ImmSlot* slot = &loop->ring[seq & (loop->ring_capacity - 1)];
    slot->fn = fn;
    slot->data = data;
    slot->aux = aux;
    slot->kind = kind;
    loop->imm_tail = seq + 1;
    ++loop->live_immediates;
}

/* schedule_immediate() when the ring is full or the driver must hear of
 * it. Out of line so that the common case needs no stack frame. */
static LOOP_NOINLINE FutoInHandle schedule_immediate_slow(
        FutoInLoop* loop, LoopFn fn, void* data, uintptr_t aux, uintptr_t kind)
{
    uint64_t seq = loop->imm_tail;
    if (seq - loop->imm_head == loop->ring_capacity && ring_grow(loop) != 0) {
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
static LOOP_INLINE FutoInHandle schedule_immediate(
        FutoInLoop* loop, LoopFn fn, void* data, uintptr_t aux, uintptr_t kind)
{
    uint64_t seq = loop->imm_tail;
    if (LOOP_UNLIKELY(seq - loop->imm_head == loop->ring_capacity
                || (loop->wakeup != NULL && loop->live_immediates == 0))) {
        return schedule_immediate_slow(loop, fn, data, aux, kind);
    }
    imm_store(loop, seq, fn, data, aux, kind);
    return imm_handle(loop, seq);
}

static FutoInHandle schedule_immediate_call(FutoInLoop* loop, const LoopCall* call)
{
    return schedule_immediate(
            loop, call->fn, call->data, call->aux, call->has_aux ? IMM_AUX : IMM_PLAIN);
}

/* Runs the oldest slot (the ring must not be empty). The slot is left
 * before the call, so the callback may schedule (and grow the ring) or
 * cancel anything, itself included. Returns 1 if it was live and ran. */
static LOOP_INLINE int run_ring_slot(FutoInLoop* loop)
{
    uint64_t seq = loop->imm_head;
    const ImmSlot* slot = &loop->ring[seq & (loop->ring_capacity - 1)];
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

static FutoInHandle schedule_deferred(FutoInLoop* loop, uint32_t delay_ms, const LoopCall* call)
{
    return schedule_deferred_at(loop, add_saturating(schedule_base(loop), ms_to_ns(delay_ms)), call);
}

static LoopCall call_plain(void* data, FutoInLoopCallback cb)
{
    LoopCall call;
    call.fn.plain = cb;
    call.data = data;
    call.aux = 0;
    call.has_aux = 0;
    return call;
}

static LoopCall call_with_aux(void* data, uintptr_t aux, FutoInLoopCallback2 cb)
{
    LoopCall call;
    call.fn.with_aux = cb;
    call.data = data;
    call.aux = aux;
    call.has_aux = 1;
    return call;
}

/* ---- cross-thread ----
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
#define XDRAIN_MAX 1024u

typedef struct {
    FutoInLoop* loop;
    LoopCall call;
    uint64_t due;          /* absolute ns, or a relative delay when due_rel */
    FutoInHandle carrier;  /* loop thread only, valid while armed */
    uint8_t deferred;
    uint8_t due_rel;       /* virtual clock: another thread cannot read it */
    uint8_t armed;         /* loop thread only: the carrier is scheduled */
} XSched;

typedef struct {
    FutoInXMsg* target;
    uint64_t cancelled_state; /* the target's state word after the cancel */
} XReap;

typedef struct {
    FutoInHandle handle;
} XCancelRecord;

static XSched* xsched_of(FutoInXMsg* m)
{
    return (XSched*)(void*)m->u.bytes;
}

static int is_xhandle(const FutoInHandle* h)
{
    return ((uintptr_t)h->data2 & XHANDLE_TAG) != 0;
}

static FutoInHandle xhandle_make(FutoInLoop* loop, FutoInXMsg* m)
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
static FutoInXMsg* xhandle_slot(FutoInLoop* loop, const FutoInHandle* h, uint64_t* pending)
{
    uintptr_t v = (uintptr_t)h->data2 & ~(XHANDLE_TAG | XHANDLE_DEFERRED);
    if (v == 0 || v > UINT32_MAX || h->data3 < 0
            || (uint64_t)h->data3 > FUTOIN_XGEN_MASK) {
        return NULL;
    }
    *pending = ((uint64_t)h->data3 << 2) | XS_PENDING;
    return futoin__xq_slot(&loop->xq, (uint32_t)(v - 1u));
}

static void wake_fd_write(FutoInLoop* loop)
{
#if defined(__linux__)
    uint64_t one = 1;
    while (write(loop->wake_wfd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
#else
    char one = 1;
    while (write(loop->wake_wfd, &one, 1) < 0 && errno == EINTR) {
    }
#endif
}

/* Any thread, after making work visible (a push or a release): the write
 * is owed by whoever takes need_signal from 1 to 0. Sequentially
 * consistent with the loop thread's "set need_signal, then look for work",
 * so one of the two always sees the other. */
static void signal_if_needed(FutoInLoop* loop)
{
    if (atomic_load(&loop->need_signal)) {
        int mode = atomic_exchange(&loop->need_signal, 0);
        if (mode & SIG_FD) {
            wake_fd_write(loop);
        }
        if (mode & SIG_HOOK) {
            /* The hook was set before SIG_HOOK was armed (the exchange
             * synchronizes with that store), and futoin_loop_set_wakeup()
             * waits for xbusy to drop before it changes it again. */
            loop->wakeup(loop->wakeup_data);
        }
    }
}

/* Loop thread: the wake-up fd, created the first time it is needed, so
 * that a loop which never waits or never sees another thread costs no
 * file descriptor. Only the loop thread creates it and it is published to
 * producers through need_signal, which is set only afterwards. */
static int wake_fd_ensure(FutoInLoop* loop)
{
    if (loop->wake_rfd >= 0) {
        return 0;
    }
#if defined(__linux__)
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    loop->wake_rfd = loop->wake_wfd = fd;
#else
    int fds[2];
    if (pipe(fds) != 0) {
        return -1;
    }
    for (int i = 0; i < 2; ++i) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    loop->wake_rfd = fds[0];
    loop->wake_wfd = fds[1];
#endif
    return 0;
}

static void signal_arm(FutoInLoop* loop, int mode)
{
    loop->armed = mode;
    atomic_store(&loop->need_signal, mode);
}

/* Takes need_signal back. If another thread took it first, its signal is
 * owed (it may not have happened yet). A write to the fd: wait for it and
 * consume it, so the fd is clean again (the wait is at most the producer's
 * next few instructions). A call of the hook: nothing to consume (at worst
 * the outer loop wakes up once for nothing). Returns 1 when another thread
 * took it. */
static int signal_disarm(FutoInLoop* loop)
{
    int mode = loop->armed;
    if (!mode) {
        return 0;
    }
    loop->armed = 0;
    if (atomic_exchange(&loop->need_signal, 0) != 0) {
        return 0;
    }
    if (mode & SIG_HOOK) {
        loop->hook_owed = 1;
    }
    if (!(mode & SIG_FD)) {
        return 1;
    }
    char buf[64];
    struct pollfd p = { loop->wake_rfd, POLLIN, 0 };
    for (;;) {
        if (read(loop->wake_rfd, buf, sizeof(buf)) > 0) {
            return 1;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            poll(&p, 1, -1);
        } else if (errno != EINTR) {
            return 1;
        }
    }
}

/* The signals an outer event loop waits for between iterations. */
static int embed_mode(const FutoInLoop* loop)
{
    return (loop->embedded ? SIG_FD : 0) | (loop->wakeup ? SIG_HOOK : 0);
}

/* Between iterations of an embedded loop: the next post by another thread
 * signals the outer loop. */
static void embed_arm(FutoInLoop* loop)
{
    int mode = embed_mode(loop);
    if (mode && loop->armed != mode) {
        signal_disarm(loop);
        signal_arm(loop, mode);
    }
}

/* Waits on the wake-up fd until due_ns on the real clock (UINT64_MAX: no
 * timeout). */
static void poll_until(int fd, uint64_t due_ns)
{
    struct pollfd p = { fd, POLLIN, 0 };
#if defined(__linux__)
    if (due_ns == UINT64_MAX) {
        ppoll(&p, 1, NULL, NULL);
        return;
    }
    uint64_t now = monotonic_ns();
    if (due_ns <= now) {
        return;
    }
    uint64_t left = due_ns - now;
    struct timespec ts = { .tv_sec = (time_t)(left / NS_PER_SEC),
        .tv_nsec = (long)(left % NS_PER_SEC) };
    ppoll(&p, 1, &ts, NULL);
#else
    int timeout = -1;
    if (due_ns != UINT64_MAX) {
        uint64_t now = monotonic_ns();
        if (due_ns <= now) {
            return;
        }
        /* Rounded up: never wake before the timer is due. */
        uint64_t ms = (due_ns - now + NS_PER_MS - 1) / NS_PER_MS;
        timeout = ms > INT32_MAX ? INT32_MAX : (int)ms;
    }
    poll(&p, 1, timeout);
#endif
}

/* The loop has nothing to run before due_ns (real clock; UINT64_MAX: no
 * timer): sleep in the kernel until then or until another thread posts
 * work or releases the last hold. Never sleeps when nothing could ever
 * wake it (no timer and no hold). */
static void block_until(FutoInLoop* loop, uint64_t due_ns)
{
    if (wake_fd_ensure(loop) != 0) {
        /* Out of file descriptors: other threads cannot wake us, so
         * sleep in short slices rather than until the timer. */
        uint64_t slice = monotonic_ns() + NS_PER_MS;
        sleep_until(due_ns < slice ? due_ns : slice);
        return;
    }
    if (!(loop->armed & SIG_FD)) {
        /* The loop thread itself waits: the fd, whatever an embedder
         * armed (at worst its hook fires once for nothing). */
        signal_disarm(loop);
        signal_arm(loop, SIG_FD);
    }
    if (!futoin__xq_nonempty(&loop->xq)
            && (due_ns != UINT64_MAX || atomic_load(&loop->refs) > 0)) {
        poll_until(loop->wake_rfd, due_ns);
    }
    signal_disarm(loop);
}

FutoInXMsg* futoin__loop_xmsg_alloc(FutoInLoop* loop)
{
    return futoin__xq_alloc(&loop->xq);
}

void futoin__loop_xmsg_post(FutoInLoop* loop, FutoInXMsg* msg)
{
    atomic_fetch_add(&loop->xbusy, 1);
    futoin__xq_push(&loop->xq, msg);
    signal_if_needed(loop);
    atomic_fetch_sub(&loop->xbusy, 1);
}

void futoin__loop_xmsg_free(FutoInLoop* loop, FutoInXMsg* msg)
{
    futoin__xq_free(&loop->xq, msg);
}

/* Carrier callback, loop thread: the scheduled callback runs unless a
 * cancel got to the slot first. The slot is freed before the call, as a
 * record is, so the callback may schedule or cancel anything. */
static void xsched_fire(void* data, uintptr_t aux)
{
    (void)aux;
    FutoInXMsg* m = data;
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

/* Loop thread: schedules the carrier. Returns 1 (slot kept) when armed. */
static int xsched_arm_now(FutoInLoop* loop, FutoInXMsg* m)
{
    XSched* x = xsched_of(m);
    if (futoin__xq_st(atomic_load_explicit(&m->state, memory_order_acquire)) != XS_PENDING) {
        return 0; /* cancelled while it was queued */
    }
    LoopCall carrier = call_with_aux(m, 0, xsched_fire);
    if (x->deferred) {
        uint64_t due = x->due_rel ? add_saturating(round_now(loop), x->due) : x->due;
        x->carrier = schedule_deferred_at(loop, due, &carrier);
    } else {
        x->carrier = schedule_immediate_call(loop, &carrier);
    }
    if (!x->carrier.data1) {
        /* Out of memory: the callback cannot run, so resolve the handle
         * as cancelled (unless a cancel already did). */
        uint64_t st = atomic_load_explicit(&m->state, memory_order_acquire);
        if (futoin__xq_st(st) == XS_PENDING) {
            atomic_compare_exchange_strong(&m->state, &st, (st & ~UINT64_C(3)) | XS_CANCELLED);
        }
        fputs("futoin: out of memory: a cross-thread schedule was dropped\n", stderr);
        return 0;
    }
    x->armed = 1;
    return 1;
}

static int xsched_run(void* consumer, FutoInXMsg* m)
{
    return xsched_arm_now(consumer, m);
}

/* Fills a slot for cb; deferred with delay_ms if deferred. */
static FutoInXMsg* xsched_new(FutoInLoop* loop, const LoopCall* call, int deferred,
        uint32_t delay_ms, int on_thread)
{
    FutoInXMsg* m = futoin__xq_alloc(&loop->xq);
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
            x->due = add_saturating(monotonic_ns(), x->due);
        }
    }
    m->run = xsched_run;
    m->drop = NULL;
    return m;
}

/* Another thread schedules: queue the slot, return its handle. */
static FutoInHandle xsched_post(FutoInLoop* loop, const LoopCall* call, int deferred, uint32_t delay_ms)
{
    FutoInXMsg* m = xsched_new(loop, call, deferred, delay_ms, 0);
    if (!m) {
        return handle_none();
    }
    /* Made before the push: from then on the slot may run and be reused. */
    FutoInHandle h = xhandle_make(loop, m);
    futoin__loop_xmsg_post(loop, m);
    return h;
}

FutoInHandle futoin__loop_deferred2_x(FutoInLoop* loop, uint32_t delay_ms,
        void* data, uintptr_t aux, FutoInLoopCallback2 cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_with_aux(data, aux, cb);
    if (!futoin__loop_on_thread(loop)) {
        return xsched_post(loop, &call, 1, delay_ms);
    }
    FutoInXMsg* m = xsched_new(loop, &call, 1, delay_ms, 1);
    if (!m) {
        return handle_none();
    }
    FutoInHandle h = xhandle_make(loop, m);
    if (!xsched_arm_now(loop, m)) {
        futoin__xq_free(&loop->xq, m);
        return handle_none();
    }
    return h;
}

/* Loop thread: a slot whose cancel won gives its carrier back now. A slot
 * still in the queue (not armed) is freed when the queue reaches it. */
static void xsched_reap(FutoInLoop* loop, FutoInXMsg* m)
{
    XSched* x = xsched_of(m);
    if (x->armed) {
        x->armed = 0;
        futoin__loop_cancel_local(loop, &x->carrier);
        futoin__xq_free(&loop->xq, m);
    }
}

static int xreap_run(void* consumer, FutoInXMsg* m)
{
    XReap* r = (XReap*)(void*)m->u.bytes;
    /* Unless the slot has been freed (and maybe reused) since. */
    if (atomic_load_explicit(&r->target->state, memory_order_acquire) == r->cancelled_state) {
        xsched_reap(consumer, r->target);
    }
    return 0;
}

/* 1 when the cancel won (the callback will never run), else 0. */
static int xsched_cancel(FutoInLoop* loop, const FutoInHandle* h)
{
    uint64_t expect;
    FutoInXMsg* m = xhandle_slot(loop, h, &expect);
    uint64_t cancelled = (expect & ~UINT64_C(3)) | XS_CANCELLED;
    if (!m || !atomic_compare_exchange_strong_explicit(&m->state, &expect, cancelled,
                      memory_order_acq_rel, memory_order_relaxed)) {
        return 0;
    }
    if (futoin__loop_on_thread(loop)) {
        xsched_reap(loop, m);
    } else if ((uintptr_t)h->data2 & XHANDLE_DEFERRED) {
        /* The timer would free the slot only when due: ask the loop to
         * drop it now. Best effort: without memory it waits until due. */
        FutoInXMsg* r = futoin__xq_alloc(&loop->xq);
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

static int xcancel_record_run(void* consumer, FutoInXMsg* m)
{
    XCancelRecord* c = (XCancelRecord*)(void*)m->u.bytes;
    futoin__loop_cancel_local(consumer, &c->handle);
    return 0;
}

static int xstop_run(void* consumer, FutoInXMsg* m)
{
    (void)m;
    ((FutoInLoop*)consumer)->stop_requested = 1;
    return 0;
}

/* Runs what other threads queued, at most XDRAIN_MAX messages so that a
 * flood cannot starve the loop's own work. Returns 1 on a stop request. */
static int drain_x(FutoInLoop* loop)
{
    if (loop->armed) {
        signal_disarm(loop);
    }
    loop->xpoll |= XPOLL_BACKLOG;
    for (unsigned n = 0; n < XDRAIN_MAX; ++n) {
        FutoInXMsg* m = futoin__xq_pop(&loop->xq);
        if (!m) {
            loop->xpoll &= (uint8_t)~XPOLL_BACKLOG;
            break;
        }
        ++loop->xmsgs_run;
        if (!m->run(loop, m)) {
            futoin__xq_free(&loop->xq, m);
        }
        if (loop->stop_requested) {
            return 1;
        }
    }
    return 0;
}

/* ---- public scheduling ---- */

FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    if (!futoin__loop_on_thread(loop)) {
        LoopCall call = call_plain(data, cb);
        return xsched_post(loop, &call, 0, 0);
    }
    LoopFn fn;
    fn.plain = cb;
    return schedule_immediate(loop, fn, data, 0, IMM_PLAIN);
}

FutoInHandle futoin_loop_deferred(
        FutoInLoop* loop, uint32_t delay_ms, void* data, FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_plain(data, cb);
    if (!futoin__loop_on_thread(loop)) {
        return xsched_post(loop, &call, 1, delay_ms);
    }
    return schedule_deferred(loop, delay_ms, &call);
}

FutoInHandle futoin__loop_immediate_local(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    LoopFn fn;
    fn.plain = cb;
    return schedule_immediate(loop, fn, data, 0, IMM_PLAIN);
}

void futoin__loop_post_local(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    LoopFn fn;
    fn.plain = cb;
    (void)schedule_immediate(loop, fn, data, 0, IMM_PLAIN);
}

FutoInHandle futoin__loop_immediate2(
        FutoInLoop* loop, void* data, uintptr_t aux, FutoInLoopCallback2 cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopFn fn;
    fn.with_aux = cb;
    return schedule_immediate(loop, fn, data, aux, IMM_AUX);
}

FutoInHandle futoin__loop_deferred2(FutoInLoop* loop, uint32_t delay_ms,
        void* data, uintptr_t aux, FutoInLoopCallback2 cb)
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
        rc = xsched_cancel(loop, handle);
    } else if (futoin__loop_on_thread(loop)) {
        return cancel_local(loop, handle);
    } else {
        /* Records belong to the loop thread: the cancel is queued, and
         * decided there (pending at that point: it never runs). */
        FutoInXMsg* m = futoin__xq_alloc(&loop->xq);
        rc = -1;
        if (m) {
            ((XCancelRecord*)(void*)m->u.bytes)->handle = *handle;
            m->run = xcancel_record_run;
            futoin__loop_xmsg_post(loop, m);
        } else {
            fputs("futoin: out of memory: a cross-thread cancel was dropped\n", stderr);
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
        FutoInXMsg* m = xhandle_slot((FutoInLoop*)(uintptr_t)loop, handle, &pending);
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

void futoin_loop_hold(FutoInLoop* loop)
{
    atomic_fetch_add(&loop->refs, 1);
}

void futoin_loop_release(FutoInLoop* loop)
{
    /* The last release may end an idle run(): wake it to look again. */
    atomic_fetch_add(&loop->xbusy, 1);
    if (atomic_fetch_sub(&loop->refs, 1) == 1) {
        signal_if_needed(loop);
    }
    atomic_fetch_sub(&loop->xbusy, 1);
}

int futoin_loop_wakeup_fd(FutoInLoop* loop)
{
    if (!loop || wake_fd_ensure(loop) != 0) {
        return -1;
    }
    loop->embedded = 1;
    loop->xpoll |= XPOLL_EMBEDDED;
    embed_arm(loop);
    if (futoin__xq_nonempty(&loop->xq)) {
        signal_if_needed(loop); /* already queued work: make the fd readable */
    }
    return loop->wake_rfd;
}

uint64_t futoin__monotonic_ms(void)
{
    return monotonic_ns() / NS_PER_MS;
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
static LOOP_INLINE int run_immediate_batch(FutoInLoop* loop)
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
static LOOP_INLINE int run_due_timers(FutoInLoop* loop, uint64_t seq_limit)
{
    if (futoin__timer_heap_size(&loop->timers) == 0) {
        return 0;
    }
    for (;;) {
        const FutoInTimerEntry* top = futoin__timer_heap_top(&loop->timers);
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
static LOOP_INLINE int run_round(FutoInLoop* loop)
{
    ++loop->round_depth;
    loop->clock_fresh = 0;
    /* Other threads' work first: it was queued before this round began.
     * The common case (nothing queued, not embedded) costs a load of our
     * own flags and one relaxed load of the queue's head. */
    int stopped = (loop->xpoll || futoin__xq_head_moved(&loop->xq)) && drain_x(loop);
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
        drain_x(loop);
    }
    if (run_first_immediate(loop)) {
        return 1;
    }
    const FutoInTimerEntry* top = futoin__timer_heap_top(&loop->timers);
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
    const FutoInTimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (loop->is_virtual) {
        if (top) {
            if (top->due > loop->now_ns) {
                loop->now_ns = top->due;
            }
            return;
        }
        block_until(loop, UINT64_MAX);
        return;
    }
    block_until(loop, top ? top->due : UINT64_MAX);
}

/* Work that keeps run() going: callbacks, queued messages, holds. The
 * hold count is read first: a thread posts, then releases, so once the
 * release is seen its message is seen too. */
static LOOP_INLINE int has_work(FutoInLoop* loop)
{
    return atomic_load_explicit(&loop->refs, memory_order_acquire) > 0
            || loop->live_immediates > 0 || futoin__timer_heap_size(&loop->timers) > 0
            || (loop->xpoll & XPOLL_BACKLOG) || futoin__xq_head_moved(&loop->xq);
}

/* Rounded up so that a poll() with this timeout never wakes too early. */
static int64_t next_delay_ms(const FutoInLoop* loop)
{
    /* The queue is only read here; the loop itself is never const. */
    if (loop->live_immediates > 0 || futoin__xq_nonempty((FutoInXQueue*)(uintptr_t)&loop->xq)) {
        return 0;
    }
    const FutoInTimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (!top) {
        return -1;
    }
    uint64_t now = loop->is_virtual ? loop->now_ns : monotonic_ns();
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

int futoin_loop_iterate(FutoInLoop* loop, int64_t* next_delay)
{
    /* A stop requested outside run() must not cut a later round short. */
    if (loop->round_depth == 0) {
        loop->stop_requested = 0;
    }
    run_round(loop);
    if (loop->round_depth == 0) {
        loop->stop_requested = 0;
    }
    /* The embedder waits on the fd or for the hook until the next call. */
    embed_arm(loop);
    if (next_delay) {
        *next_delay = next_delay_ms(loop);
    }
    return has_work(loop);
}

void futoin_loop_run(FutoInLoop* loop)
{
    loop->stop_requested = 0;
    while (!run_round(loop) && has_work(loop)) {
        if (loop->live_immediates == 0) {
            idle_wait(loop);
        }
    }
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
    FutoInXMsg* m = futoin__xq_alloc(&loop->xq);
    if (!m) {
        fputs("futoin: out of memory: a cross-thread stop was dropped\n", stderr);
        return;
    }
    m->run = xstop_run;
    futoin__loop_xmsg_post(loop, m);
}

int futoin_loop_run_next(FutoInLoop* loop)
{
    if (!loop->is_virtual) {
        return -1;
    }
    return run_one_virtual(loop, UINT64_MAX);
}

void futoin_loop_advance(FutoInLoop* loop, uint64_t ms)
{
    if (!loop->is_virtual) {
        return;
    }
    uint64_t target = add_saturating(loop->now_ns, ms_to_ns(ms));
    while (run_one_virtual(loop, target)) {
    }
    if (target > loop->now_ns) {
        loop->now_ns = target;
    }
}

/* ---- clock & thread queries ---- */

uint64_t futoin_loop_now(const FutoInLoop* loop)
{
    if (!loop->is_virtual && loop->round_depth == 0) {
        return monotonic_ns() / NS_PER_MS;
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
    FutoInLoop* loop = aligned_alloc(LOOP_LINE, size);
    if (!loop) {
        return NULL;
    }
    memset(loop, 0, size);
    loop->free_head = NO_RECORD;
    futoin__timer_heap_init(&loop->timers);
    loop->is_virtual = (uint8_t)is_virtual;
    loop->now_ns = is_virtual ? 0 : monotonic_ns();
    loop->head.owner = pthread_self();
    futoin__xq_init(&loop->xq);
    atomic_init(&loop->need_signal, 0);
    atomic_init(&loop->refs, 0);
    atomic_init(&loop->xbusy, 0);
    atomic_init(&loop->dump_msg, NULL);
    atomic_init(&loop->dump_pending, 0);
    loop->wake_rfd = loop->wake_wfd = -1;
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
    if (loop->dump_sig) {
        /* No signal handler may ask this loop for a dump any more. */
        futoin__dump_signal_forget(loop);
    }
    /* A thread may still be finishing the wake-up of a post or release
     * that the loop thread has already acted on. */
    while (atomic_load(&loop->xbusy) > 0) {
        sched_yield();
    }
    /* Messages nobody will run: what they own is released exactly once. */
    FutoInXMsg* m;
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
    if (loop->wake_rfd >= 0) {
        close(loop->wake_rfd);
        if (loop->wake_wfd != loop->wake_rfd) {
            close(loop->wake_wfd);
        }
    }
    free(loop->ring);
    free(loop->records);
    free(loop);
}

void futoin__loop_set_engine_free(FutoInLoop* loop, void (*destroy)(void* engine_ctx))
{
    loop->engine_free = destroy;
}

void futoin_loop_set_wakeup(FutoInLoop* loop, FutoInLoopWakeup cb, void* data)
{
    if (!loop) {
        return;
    }
    /* No other thread may start a call of the old hook from now on; one
     * that took a signal already is inside xbusy (from before its push or
     * release to the end of its wake-up): let it finish, so that the
     * caller may free the old data when this returns. */
    signal_disarm(loop);
    if (loop->hook_owed) {
        while (atomic_load(&loop->xbusy) > 0) {
            sched_yield();
        }
        loop->hook_owed = 0;
    }
    loop->wakeup = cb;
    loop->wakeup_data = cb ? data : NULL;
    if (cb || loop->embedded) {
        loop->xpoll |= XPOLL_EMBEDDED;
    } else {
        loop->xpoll &= (uint8_t)~XPOLL_EMBEDDED;
    }
    embed_arm(loop);
}

void* futoin_loop_wakeup_data(const FutoInLoop* loop)
{
    return loop ? loop->wakeup_data : NULL;
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
            drain_x(loop);
        }
        if (atomic_load(&loop->refs) <= 0) {
            return;
        }
        block_until(loop, UINT64_MAX);
    }
}

/* ---- introspection ---- */

int futoin__loop_timer_left(FutoInLoop* loop, FutoInLoopRef ref, uint64_t* left_ms)
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
    uint64_t now = loop->is_virtual || loop->round_depth ? round_now(loop) : monotonic_ns();
    uint64_t left = due > now ? due - now : 0;
    /* Rounded up: "1 ms left" until it is due. */
    *left_ms = left / NS_PER_MS + (left % NS_PER_MS != 0);
    return 1;
}

void futoin__loop_stats(const FutoInLoop* loop, uint64_t* xmsgs, uint64_t* timers, uint64_t* immediates)
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
static int dump_msg_run(void* consumer, FutoInXMsg* m)
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
        FutoInXMsg* m = futoin__xq_alloc(&loop->xq);
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

void futoin__loop_set_dump_sig(FutoInLoop* loop, int on)
{
    loop->dump_sig = (uint8_t)(on != 0);
}

int futoin__loop_dump_request(FutoInLoop* loop)
{
    FutoInXMsg* m = atomic_load(&loop->dump_msg);
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
    /* Only the wake-up fd, and only when that is all the loop waits for:
     * write() is async-signal-safe, the embedder's wake-up callback need
     * not be (a loop driven through one sees the request on its next
     * round). Taking SIG_FD from the flag owes exactly the write. */
    int expect = SIG_FD;
    if (atomic_compare_exchange_strong(&loop->need_signal, &expect, 0)) {
        wake_fd_write(loop);
    }
    atomic_fetch_sub(&loop->xbusy, 1);
    errno = saved_errno;
    return 1;
}
