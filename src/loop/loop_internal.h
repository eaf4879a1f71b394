/* SPDX-License-Identifier: MIT */
/* Private loop interface shared by the engine and the loop implementation. */
#ifndef FUTOIN_LOOP_INTERNAL_H
#define FUTOIN_LOOP_INTERNAL_H

#include <futoin/asynctool.h>

#include <pthread.h>
#include <stddef.h>

#include "loop/cross_thread_queue_internal.h"

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

#define FUTOIN_LOOP_ENGINE_MEM 384

/* Which thread runs: where the compiler reads the thread pointer, that
 * register (one instruction, no call), else pthread_self(). Two live
 * threads never share either. */
#if defined(__has_builtin) && !defined(_WIN32)
#if __has_builtin(__builtin_thread_pointer)
#define FUTOIN_THREAD_POINTER 1
#endif
#endif
#ifndef FUTOIN_THREAD_POINTER
#define FUTOIN_THREAD_POINTER 0
#endif

/* The first member of struct FutoInLoop, so that the thread check of the
 * ABI entry points can be inlined: it is the one check the single-thread
 * hot path pays for cross-thread support. owner never changes. */
typedef struct LoopHead {
    pthread_t owner;
    void* engine_ctx; /* see futoin__loop_engine_slot() */
#if FUTOIN_THREAD_POINTER
    void* owner_tp; /* the owner's thread pointer */
#endif
    /* Room for the AsyncSteps engine's per-loop context: a flow reaches it
     * from its loop pointer by an addition, not a load. The engine checks
     * that its context fits. */
    _Alignas(max_align_t) unsigned char engine_mem[FUTOIN_LOOP_ENGINE_MEM];
} LoopHead;

static inline int futoin__loop_on_thread(const FutoInLoop* loop)
{
#if FUTOIN_THREAD_POINTER
    return __builtin_thread_pointer() == ((const LoopHead*)(const void*)loop)->owner_tp;
#else
    return pthread_equal(pthread_self(), ((const LoopHead*)(const void*)loop)->owner) != 0;
#endif
}

/* Callback with one extra word, so the engine can address a (flow, frame)
 * pair without allocating a record per timer. */
typedef void (*FutoInLoopAuxCallback)(void* data, uintptr_t aux);

FutoInHandle futoin__loop_immediate_aux(FutoInLoop* loop, void* data, uintptr_t aux,
        FutoInLoopAuxCallback cb);
FutoInHandle futoin__loop_deferred_aux(FutoInLoop* loop, uint32_t delay_ms, void* data,
        uintptr_t aux, FutoInLoopAuxCallback cb);

/* A loop handle without its loop pointer: 8 bytes instead of 24, for
 * structures that hold one per object (the engine's frames). Relies on the
 * loop's encoding: data2 = record index + 1, data3 = generation. */
typedef struct LoopRef {
    uint32_t slot; /* record index + 1; 0: none */
    uint32_t gen;
} LoopRef;

static inline LoopRef futoin__loop_ref(FutoInHandle h)
{
    LoopRef r;
    r.slot = (uint32_t)(uintptr_t)h.data2;
    r.gen = (uint32_t)h.data3;
    return r;
}

static inline FutoInHandle futoin__loop_handle(FutoInLoop* loop, LoopRef r)
{
    FutoInHandle h;
    h.data1 = r.slot ? loop : 0;
    h.data2 = (void*)(uintptr_t)r.slot;
    h.data3 = (ptrdiff_t)r.gen;
    return h;
}

/* One slot per loop for the AsyncSteps engine's context (which lives in
 * engine_mem). futoin_loop_free() calls the registered destructor on the
 * slot's value (when both are set) after dropping every pending callback. */
static inline void** futoin__loop_engine_slot(FutoInLoop* loop)
{
    return &((LoopHead*)(void*)loop)->engine_ctx;
}
void futoin__loop_set_engine_free(FutoInLoop* loop, void (*destroy)(void* engine_ctx));
/* Where the loop sends its misuse reports (the engine's misuse handler). */
void futoin__loop_set_misuse_hook(FutoInLoop* loop,
        void (*hook)(FutoInLoop* loop, const char* info));
/* 1 while a call that runs the loop's callbacks (iterate, run, run_next,
 * advance) is on the stack: running the loop again is refused. */
int futoin__loop_is_driving(const FutoInLoop* loop);

/* When no immediate is pending: sleeps until the next timer is due (real
 * clock) or moves the virtual clock to it. Lets futoin_promise() drive the
 * loop round by round. */
void futoin__loop_wait_next_timer(FutoInLoop* loop);

/* ---- loop thread only, without the thread check (engine hot paths) ---- */
/* An immediate without a handle, for a caller that never cancels it. */
void futoin__loop_post_local(FutoInLoop* loop, void* data, FutoInLoopCallback cb);
void futoin__loop_cancel_local(FutoInLoop* loop, FutoInHandle* handle);

/* ---- cross-thread messages (src/loop/cross_thread_queue_internal.h) ---- */

/* Any thread: a message slot of loop's queue in state XS_PENDING, or NULL
 * when out of memory. Fill the payload, run (and drop if the payload owns
 * something), then post it. run(loop, msg) runs on the loop thread at the
 * start of a round, in posting order per thread; drop(msg) runs instead if
 * the loop is freed first. */
XMsg* futoin__loop_xmsg_alloc(FutoInLoop* loop);
void futoin__loop_xmsg_post(FutoInLoop* loop, XMsg* msg);
/* Returns a slot that run() kept (returned 1 for). Loop thread. */
void futoin__loop_xmsg_free(FutoInLoop* loop, XMsg* msg);

/* Any thread, the loop thread included: a deferred callback whose handle is
 * a cross-thread handle, so that futoin_loop_try_cancel() decides its fate
 * exactly from any thread (shared sync objects arm timers on other loops). */
FutoInHandle futoin__loop_deferred_aux_x(FutoInLoop* loop, uint32_t delay_ms, void* data,
        uintptr_t aux, FutoInLoopAuxCallback cb);

/* For a loop thread that has stopped: runs only what other threads post
 * (no callbacks, no timers) until nothing holds the loop any more, so
 * that no thread posts to the loop once it is freed. */
void futoin__loop_settle(FutoInLoop* loop);

/* CLOCK_MONOTONIC in milliseconds (the real loops' clock). */
uint64_t futoin__monotonic_ms(void);

/* ---- introspection (src/observe/introspect.c), loop thread unless said ---- */

/* 1 and the ms left (rounded up) if ref names a pending timer, else 0. */
int futoin__loop_timer_left(FutoInLoop* loop, LoopRef ref, uint64_t* left_ms);
/* Cross-thread messages run so far, timers and immediates pending. */
void futoin__loop_stats(const FutoInLoop* loop, uint64_t* xmsgs, uint64_t* timers,
        uint64_t* immediates);
int futoin__loop_is_virtual(const FutoInLoop* loop);
/* Sets what a dump request calls on the loop thread (keep: unless it has
 * one), and keeps a message slot for requests. Returns 0, or -1 when out
 * of memory. */
int futoin__loop_dump_setup(FutoInLoop* loop, void (*cb)(FutoInLoop* loop, void* data), void* data,
        int keep);
/* Any thread, async-signal-safe: queues the kept slot unless it is
 * queued already (1 queued, 0 already queued, -1 no setup). */
int futoin__loop_dump_request(FutoInLoop* loop);
/* What futoin_loop_free() calls first, on the loop thread, while it is set
 * (NULL: nothing): the subsystems above the loop forget it there. */
void futoin__loop_set_free_hook(FutoInLoop* loop, void (*hook)(FutoInLoop* loop));

#pragma GCC visibility pop

#endif
