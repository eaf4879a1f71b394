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
 */
#include "loop_internal.h"
#include "timer_heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define NO_RECORD UINT32_MAX
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)
/* Generations stay below 2^31 so they survive the round trip through the
 * handle's ptrdiff_t even where it is 32 bits wide. */
#define GENERATION_MASK UINT32_C(0x7fffffff)
#define MIN_POOL 64u

enum RecordState { RECORD_FREE, RECORD_IMMEDIATE, RECORD_DEFERRED };

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

/* The generation is captured with the index so that a slot whose record
 * was cancelled (and maybe reused) is recognised as dead when reached. */
typedef struct {
    uint32_t id;
    uint32_t generation;
} RingSlot;

struct FutoInLoop {
    LoopRecord* records;
    uint32_t record_capacity;
    uint32_t free_head;

    RingSlot* ring; /* capacity is a power of two */
    size_t ring_head;
    size_t ring_len;
    size_t ring_capacity;
    size_t live_immediates;

    FutoInTimerHeap timers;

    uint64_t now_ns;
    /* The real clock is read at most once per round, and only when a timer
     * needs it: rounds that only run immediates cost no clock read. */
    int clock_fresh;
    unsigned round_depth;
    int is_virtual;
    int stop_requested;
    pthread_t owner;

    void* engine_ctx;
    void (*engine_free)(void* engine_ctx);

    /* Lets an outer event loop (the libuv backend) learn that it must wake
     * up earlier than it planned; NULL when nobody drives the loop. */
    FutoInLoopWakeup wakeup;
    void* wakeup_data;
};

/* ---- clock ---- */

static uint64_t monotonic_ns(void)
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
        loop->clock_fresh = loop->round_depth > 0;
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

static int grow_records(FutoInLoop* loop)
{
    uint32_t old = loop->record_capacity;
    uint32_t capacity = old ? old * 2 : MIN_POOL;
    /* NO_RECORD is reserved, and ids must stay usable as heap ids. The
     * byte limit only bites where size_t is 32 bits wide. */
    size_t max_records = SIZE_MAX / sizeof(LoopRecord);
    if (capacity <= old || capacity >= NO_RECORD || (size_t)capacity > max_records) {
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

/* NO_RECORD unless the handle names a callback of this loop that is still
 * pending. */
static uint32_t handle_lookup(const FutoInLoop* loop, const FutoInHandle* handle)
{
    if (!loop || !handle || (const void*)handle->data1 != (const void*)loop) {
        return NO_RECORD;
    }
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

static int ring_grow(FutoInLoop* loop)
{
    size_t old = loop->ring_capacity;
    size_t capacity = old ? old * 2 : MIN_POOL;
    if (capacity <= old || capacity > SIZE_MAX / sizeof(RingSlot)) {
        return -1;
    }
    RingSlot* ring = realloc(loop->ring, capacity * sizeof(*ring));
    if (!ring) {
        return -1;
    }
    /* The ring is full, so a wrapped tail [0, wrapped) is shorter than old
     * and fits right after the old end, restoring FIFO order. */
    size_t wrapped = loop->ring_head + loop->ring_len > old
            ? loop->ring_head + loop->ring_len - old
            : 0;
    for (size_t i = 0; i < wrapped; ++i) {
        ring[old + i] = ring[i];
    }
    loop->ring = ring;
    loop->ring_capacity = capacity;
    return 0;
}

static int ring_push(FutoInLoop* loop, RingSlot slot)
{
    if (loop->ring_len == loop->ring_capacity && ring_grow(loop) != 0) {
        return -1;
    }
    size_t tail = (loop->ring_head + loop->ring_len) & (loop->ring_capacity - 1);
    loop->ring[tail] = slot;
    ++loop->ring_len;
    return 0;
}

static RingSlot ring_pop(FutoInLoop* loop)
{
    RingSlot slot = loop->ring[loop->ring_head];
    loop->ring_head = (loop->ring_head + 1) & (loop->ring_capacity - 1);
    --loop->ring_len;
    return slot;
}

/* ---- scheduling ---- */

static FutoInHandle schedule_immediate(FutoInLoop* loop, const LoopCall* call)
{
    uint32_t id = record_alloc(loop, call, RECORD_IMMEDIATE);
    if (id == NO_RECORD) {
        return handle_none();
    }
    RingSlot slot = { id, loop->records[id].generation };
    if (ring_push(loop, slot) != 0) {
        record_release(loop, id);
        return handle_none();
    }
    ++loop->live_immediates;
    /* Only the first pending immediate can change the driver's plan: with
     * more already queued it is busy (or about to be) running them. */
    if (loop->wakeup && loop->live_immediates == 1) {
        loop->wakeup(loop->wakeup_data);
    }
    return handle_make(loop, id);
}

static FutoInHandle schedule_deferred(FutoInLoop* loop, uint32_t delay_ms, const LoopCall* call)
{
    uint64_t due = add_saturating(schedule_base(loop), ms_to_ns(delay_ms));
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

FutoInHandle futoin_loop_immediate(FutoInLoop* loop, void* data, FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_plain(data, cb);
    return schedule_immediate(loop, &call);
}

FutoInHandle futoin_loop_deferred(
        FutoInLoop* loop, uint32_t delay_ms, void* data, FutoInLoopCallback cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_plain(data, cb);
    return schedule_deferred(loop, delay_ms, &call);
}

FutoInHandle futoin__loop_immediate2(
        FutoInLoop* loop, void* data, uintptr_t aux, FutoInLoopCallback2 cb)
{
    if (!loop || !cb) {
        return handle_none();
    }
    LoopCall call = call_with_aux(data, aux, cb);
    return schedule_immediate(loop, &call);
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

/* A cancelled immediate keeps its ring slot; the generation bump makes the
 * slot dead, which keeps cancel O(1). */
void futoin_loop_cancel(FutoInLoop* loop, FutoInHandle* handle)
{
    if (!handle || (const void*)handle->data1 != (const void*)loop) {
        /* A handle of another loop is left intact: it is still valid there. */
        return;
    }
    uint32_t id = handle_lookup(loop, handle);
    if (id != NO_RECORD) {
        if (loop->records[id].state == RECORD_DEFERRED) {
            futoin__timer_heap_remove(&loop->timers, id);
        } else {
            --loop->live_immediates;
        }
        record_release(loop, id);
    }
    *handle = handle_none();
}

int futoin_loop_is_valid(const FutoInLoop* loop, const FutoInHandle* handle)
{
    return handle_lookup(loop, handle) != NO_RECORD;
}

/* ---- running ---- */

/* Returns 1 if the slot was live and its callback ran. */
static int run_ring_slot(FutoInLoop* loop)
{
    RingSlot slot = ring_pop(loop);
    const LoopRecord* rec = &loop->records[slot.id];
    if (rec->state != RECORD_IMMEDIATE || rec->generation != slot.generation) {
        return 0;
    }
    --loop->live_immediates;
    LoopCall call = record_take(loop, slot.id);
    call_invoke(&call);
    return 1;
}

static int run_first_immediate(FutoInLoop* loop)
{
    while (loop->live_immediates > 0 && loop->ring_len > 0) {
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
static int run_immediate_batch(FutoInLoop* loop)
{
    for (size_t left = loop->ring_len; left > 0 && loop->ring_len > 0; --left) {
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
static int run_due_timers(FutoInLoop* loop, uint64_t seq_limit)
{
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
static int run_round(FutoInLoop* loop)
{
    ++loop->round_depth;
    loop->clock_fresh = 0;
    uint64_t seq_limit = futoin__timer_heap_next_seq(&loop->timers);
    int stopped = run_immediate_batch(loop) || run_due_timers(loop, seq_limit);
    --loop->round_depth;
    return stopped;
}

/* Runs the first immediate, else the earliest timer due at or before
 * limit_ns, moving the virtual clock to it. Returns 1 if a callback ran. */
static int run_one_virtual(FutoInLoop* loop, uint64_t limit_ns)
{
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

static void wait_for_next_timer(FutoInLoop* loop)
{
    const FutoInTimerEntry* top = futoin__timer_heap_top(&loop->timers);
    if (!top) {
        return;
    }
    if (loop->is_virtual) {
        if (top->due > loop->now_ns) {
            loop->now_ns = top->due;
        }
    } else if (top->due > monotonic_ns()) {
        sleep_until(top->due);
    }
}

/* Rounded up so that a poll() with this timeout never wakes too early. */
static int64_t next_delay_ms(const FutoInLoop* loop)
{
    if (loop->live_immediates > 0) {
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
    if (next_delay) {
        *next_delay = next_delay_ms(loop);
    }
    return futoin_loop_pending(loop) > 0;
}

void futoin_loop_run(FutoInLoop* loop)
{
    loop->stop_requested = 0;
    while (!run_round(loop) && futoin_loop_pending(loop) > 0) {
        if (loop->live_immediates == 0) {
            wait_for_next_timer(loop);
        }
    }
    loop->stop_requested = 0;
}

void futoin_loop_stop(FutoInLoop* loop)
{
    if (loop) {
        loop->stop_requested = 1;
    }
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
    return pthread_equal(pthread_self(), loop->owner) != 0;
}

/* ---- lifetime ---- */

static FutoInLoop* loop_create(int is_virtual)
{
    FutoInLoop* loop = calloc(1, sizeof(*loop));
    if (!loop) {
        return NULL;
    }
    loop->free_head = NO_RECORD;
    futoin__timer_heap_init(&loop->timers);
    loop->is_virtual = is_virtual;
    loop->now_ns = is_virtual ? 0 : monotonic_ns();
    loop->owner = pthread_self();
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
    loop->ring_head = 0;
    loop->ring_len = 0;
    loop->live_immediates = 0;
}

void futoin_loop_free(FutoInLoop* loop)
{
    if (!loop) {
        return;
    }
    drop_pending(loop);
    if (loop->engine_free && loop->engine_ctx) {
        loop->engine_free(loop->engine_ctx);
    }
    futoin__timer_heap_destroy(&loop->timers);
    free(loop->ring);
    free(loop->records);
    free(loop);
}

void** futoin__loop_engine_slot(FutoInLoop* loop)
{
    return &loop->engine_ctx;
}

void futoin__loop_set_engine_free(FutoInLoop* loop, void (*destroy)(void* engine_ctx))
{
    loop->engine_free = destroy;
}

void futoin__loop_set_wakeup(FutoInLoop* loop, FutoInLoopWakeup cb, void* data)
{
    loop->wakeup = cb;
    loop->wakeup_data = cb ? data : NULL;
}

void* futoin__loop_wakeup_data(const FutoInLoop* loop)
{
    return loop->wakeup_data;
}

int64_t futoin__loop_next_delay(const FutoInLoop* loop)
{
    return next_delay_ms(loop);
}

void futoin__loop_wait_next_timer(FutoInLoop* loop)
{
    if (loop->live_immediates == 0) {
        wait_for_next_timer(loop);
    }
}
