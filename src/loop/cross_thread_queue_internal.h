/* SPDX-License-Identifier: MIT */
/*
 * Private cross-thread message queue of a loop: a multi-producer,
 * single-consumer intrusive queue (Vyukov's algorithm) over fixed-size
 * message slots taken from a lock-free pool.
 *
 * Why slots from a pool rather than malloc'ed messages: a slot's address
 * and index never change and its memory is kept until the loop is freed,
 * so a handle naming (index, generation) can be checked from any thread at
 * any time without a use-after-free, which is what makes cross-thread
 * schedule handles cancellable from the thread that got them. It also
 * keeps a steady stream of cross-thread calls free of malloc/free pairs
 * split across threads.
 *
 * Every slot carries an atomic state word, (generation << 2) | XS_*:
 * generation changes each time the slot is freed, so a stale handle never
 * matches a reused slot; the low bits decide races between the loop thread
 * running a scheduled callback and another thread cancelling it with one
 * compare-and-swap.
 */
#ifndef FUTOIN_CROSS_THREAD_QUEUE_INTERNAL_H
#define FUTOIN_CROSS_THREAD_QUEUE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* Room for a message's own data: FutoInArgs (128 bytes) plus a few words. */
#define FUTOIN_XMSG_PAYLOAD 160
/* Slot chunks double in size: chunk k holds 64 << k slots. */
#define FUTOIN_XCHUNKS 26
#define FUTOIN_XGEN_MASK UINT64_C(0x7fffffff)

enum {
    XS_FREE = 0,      /* in the pool */
    XS_PENDING = 1,   /* owned by a message or schedule in flight */
    XS_CANCELLED = 2, /* a scheduled callback that lost to a cancel */
    XS_TAKEN = 3      /* a scheduled callback that won: it runs */
};

typedef struct XLink XLink;
struct XLink {
    _Atomic(XLink*) next;
};

typedef struct XMsg XMsg;

/* Runs on the consumer (loop) thread. Returns 1 when it keeps the slot
 * (and frees it later itself), 0 to have it freed right away. */
typedef int (*FutoInXRun)(void* consumer, XMsg* msg);
/* Releases what a message owns when it is discarded unrun (loop freed). */
typedef void (*FutoInXDrop)(XMsg* msg);

struct XMsg {
    XLink link; /* first: the queue links slots through it */
    _Atomic uint64_t state;
    _Atomic uint32_t free_next; /* pool link: index + 1, 0 = end */
    uint32_t idx;
    FutoInXRun run;
    FutoInXDrop drop;
    union {
        max_align_t align;
        unsigned char bytes[FUTOIN_XMSG_PAYLOAD];
    } u;
};

typedef struct XQueue {
    /* Producers swing head; the consumer alone reads tail. Kept on
     * separate cache lines so producers do not slow the consumer down. */
    _Atomic(XLink*) head;
    char pad0[64 - sizeof(void*)];
    XLink* tail;
    XLink stub;
    char pad1[64 - 2 * sizeof(void*)];
    /* Pool: a Treiber stack of slot indices; the top carries an ABA tag
     * in its upper 32 bits. */
    _Atomic uint64_t free_top;
    _Atomic(XMsg*) chunks[FUTOIN_XCHUNKS];
    pthread_mutex_t grow_lock;
} XQueue;

void futoin__xq_init(XQueue* q);
/* Frees every chunk. The queue must have been emptied by its consumer. */
void futoin__xq_destroy(XQueue* q);

/* Any thread: a slot in state XS_PENDING with its generation kept, or NULL
 * when out of memory. run/drop are left for the caller to set. */
XMsg* futoin__xq_alloc(XQueue* q);
/* Any thread: bumps the generation (stale handles stop matching) and
 * returns the slot to the pool. */
void futoin__xq_free(XQueue* q, XMsg* m);
/* The slot with that index, NULL if no such slot was ever allocated. */
XMsg* futoin__xq_slot(XQueue* q, uint32_t idx);

/* Any thread. Sequentially consistent, so that a producer that pushes and
 * then reads the consumer's "wake me" flag cannot miss a consumer that set
 * the flag and then checked the queue (see loop/loop.c). */
void futoin__xq_push(XQueue* q, XMsg* m);
/* Consumer only: the oldest message, or NULL when the queue is empty. */
XMsg* futoin__xq_pop(XQueue* q);
/* Consumer only: 1 when something was pushed and not yet popped. Inline:
 * the loop asks once per round. The queue is empty when the consumer is at
 * the stub and no producer has swung the head away from it. */
static inline int futoin__xq_nonempty(XQueue* q)
{
    return q->tail != &q->stub || atomic_load_explicit(&q->head, memory_order_seq_cst) != &q->stub;
}

/* Consumer only, and only while its end of the queue is at the stub,
 * which is where every pop that returned NULL leaves it: 1 when something
 * was pushed since. A relaxed read, for a loop that merely polls (it looks
 * again, sequentially consistent, before it sleeps); a push that happened
 * before something the consumer has synchronised with is still seen. */
static inline int futoin__xq_head_moved(XQueue* q)
{
    return atomic_load_explicit(&q->head, memory_order_relaxed) != &q->stub;
}

static inline uint64_t futoin__xq_gen(uint64_t state)
{
    return state >> 2;
}

static inline unsigned futoin__xq_st(uint64_t state)
{
    return (unsigned)(state & 3u);
}

#pragma GCC visibility pop

#endif
