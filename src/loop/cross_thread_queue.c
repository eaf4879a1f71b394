/* SPDX-License-Identifier: MIT */
/*
 * The cross-thread message queue and its slot pool (see loop/cross_thread_queue_internal.h).
 *
 * Queue: Dmitry Vyukov's intrusive MPSC queue. A push is one atomic
 * exchange of the head plus one store linking the previous node, so
 * producers never wait for each other or for the consumer. The price is a
 * short window in which a producer has swung the head but not yet linked
 * its node; the consumer that runs into it yields until the link appears
 * (the producer is between two consecutive instructions).
 *
 * Pool: slots live in chunks that are never freed before the queue is, so
 * a slot index stays valid for the loop's lifetime; free slots form a
 * Treiber stack whose top word carries a counter against ABA. Growth is
 * the only locked path and happens O(log n) times.
 */
#include "loop/cross_thread_queue_internal.h"

#include <sched.h>
#include <stdlib.h>

#define CHUNK0 64u

static XMsg* msg_of(XLink* link)
{
    /* link is the first member of XMsg. */
    return (XMsg*)(void*)link;
}

void futoin__xq_init(XQueue* q)
{
    atomic_init(&q->stub.next, NULL);
    atomic_init(&q->head, &q->stub);
    q->tail = &q->stub;
    atomic_init(&q->free_top, 0);
    for (unsigned k = 0; k < FUTOIN_XCHUNKS; ++k) {
        atomic_init(&q->chunks[k], NULL);
    }
    pthread_mutex_init(&q->grow_lock, NULL);
}

void futoin__xq_destroy(XQueue* q)
{
    for (unsigned k = 0; k < FUTOIN_XCHUNKS; ++k) {
        free(atomic_load_explicit(&q->chunks[k], memory_order_relaxed));
    }
    pthread_mutex_destroy(&q->grow_lock);
}

/* ---- slot addressing: chunk k holds indices [64(2^k - 1), 64(2^(k+1) - 1)) */

static unsigned floor_log2(uint32_t v)
{
#if defined(__GNUC__)
    return 31u - (unsigned)__builtin_clz(v);
#else
    unsigned r = 0;
    while (v >>= 1) {
        ++r;
    }
    return r;
#endif
}

static uint32_t chunk_base(unsigned k)
{
    return CHUNK0 * ((UINT32_C(1) << k) - 1u);
}

XMsg* futoin__xq_slot(XQueue* q, uint32_t idx)
{
    if (idx >= chunk_base(FUTOIN_XCHUNKS)) {
        return NULL;
    }
    unsigned k = floor_log2(idx / CHUNK0 + 1u);
    XMsg* chunk = atomic_load_explicit(&q->chunks[k], memory_order_acquire);
    return chunk ? &chunk[idx - chunk_base(k)] : NULL;
}

/* ---- pool ---- */

static uint64_t top_with(uint64_t old_top, uint32_t idx_plus_1)
{
    return (((old_top >> 32) + 1u) << 32) | idx_plus_1;
}

/* Pushes the chain first..last (already linked through free_next). */
static void free_push_chain(XQueue* q, XMsg* first, XMsg* last)
{
    uint64_t top = atomic_load_explicit(&q->free_top, memory_order_relaxed);
    do {
        atomic_store_explicit(&last->free_next, (uint32_t)top, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&q->free_top, &top,
            top_with(top, first->idx + 1u), memory_order_release, memory_order_relaxed));
}

/* Adds the next chunk to the pool; called with grow_lock held. */
static int grow_locked(XQueue* q)
{
    if ((uint32_t)atomic_load_explicit(&q->free_top, memory_order_acquire) != 0) {
        return 0; /* another thread grew the pool, or a slot came back */
    }
    unsigned k = 0;
    while (k < FUTOIN_XCHUNKS && atomic_load_explicit(&q->chunks[k], memory_order_relaxed)) {
        ++k;
    }
    if (k == FUTOIN_XCHUNKS) {
        return -1;
    }
    uint32_t size = CHUNK0 << k;
    XMsg* chunk = malloc((size_t)size * sizeof(*chunk));
    if (!chunk) {
        return -1;
    }
    uint32_t base = chunk_base(k);
    for (uint32_t j = 0; j < size; ++j) {
        XMsg* m = &chunk[j];
        atomic_init(&m->link.next, NULL);
        atomic_init(&m->state, XS_FREE);
        atomic_init(&m->free_next, j + 1 < size ? base + j + 2 : 0);
        m->idx = base + j;
        m->run = NULL;
        m->drop = NULL;
    }
    /* Published before any of its indices can be popped. */
    atomic_store_explicit(&q->chunks[k], chunk, memory_order_release);
    free_push_chain(q, &chunk[0], &chunk[size - 1]);
    return 0;
}

static int grow(XQueue* q)
{
    pthread_mutex_lock(&q->grow_lock);
    int rc = grow_locked(q);
    pthread_mutex_unlock(&q->grow_lock);
    return rc;
}

XMsg* futoin__xq_alloc(XQueue* q)
{
    for (;;) {
        uint64_t top = atomic_load_explicit(&q->free_top, memory_order_acquire);
        uint32_t first = (uint32_t)top;
        if (first == 0) {
            if (grow(q) != 0) {
                return NULL;
            }
            continue;
        }
        XMsg* m = futoin__xq_slot(q, first - 1u);
        /* May be stale if another thread pops m first: the tag then makes
         * the exchange fail, and slots are never unmapped, so the read is
         * harmless. */
        uint32_t next = atomic_load_explicit(&m->free_next, memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&q->free_top, &top, top_with(top, next),
                    memory_order_acquire, memory_order_acquire)) {
            uint64_t st = atomic_load_explicit(&m->state, memory_order_relaxed);
            atomic_store_explicit(&m->state, (futoin__xq_gen(st) << 2) | XS_PENDING,
                    memory_order_relaxed);
            m->drop = NULL;
            return m;
        }
    }
}

void futoin__xq_free(XQueue* q, XMsg* m)
{
    uint64_t st = atomic_load_explicit(&m->state, memory_order_relaxed);
    uint64_t gen = (futoin__xq_gen(st) + 1u) & FUTOIN_XGEN_MASK;
    atomic_store_explicit(&m->state, (gen << 2) | XS_FREE, memory_order_release);
    free_push_chain(q, m, m);
}

/* ---- queue ---- */

void futoin__xq_push(XQueue* q, XMsg* m)
{
    atomic_store_explicit(&m->link.next, NULL, memory_order_relaxed);
    XLink* prev = atomic_exchange_explicit(&q->head, &m->link, memory_order_seq_cst);
    atomic_store_explicit(&prev->next, &m->link, memory_order_release);
}

XMsg* futoin__xq_pop(XQueue* q)
{
    for (;;) {
        XLink* tail = q->tail;
        XLink* next = atomic_load_explicit(&tail->next, memory_order_acquire);
        if (tail == &q->stub) {
            if (!next) {
                if (atomic_load_explicit(&q->head, memory_order_acquire) == &q->stub) {
                    return NULL;
                }
                sched_yield(); /* a producer has swung head but not linked yet */
                continue;
            }
            q->tail = next;
            tail = next;
            next = atomic_load_explicit(&tail->next, memory_order_acquire);
        }
        if (next) {
            q->tail = next;
            return msg_of(tail);
        }
        if (atomic_load_explicit(&q->head, memory_order_acquire) != tail) {
            sched_yield();
            continue;
        }
        /* tail is the last node: queue the stub behind it, so that tail
         * can be handed out without leaving the queue without a node. */
        atomic_store_explicit(&q->stub.next, NULL, memory_order_relaxed);
        XLink* prev = atomic_exchange_explicit(&q->head, &q->stub, memory_order_seq_cst);
        atomic_store_explicit(&prev->next, &q->stub, memory_order_release);
        next = atomic_load_explicit(&tail->next, memory_order_acquire);
        if (next) {
            q->tail = next;
            return msg_of(tail);
        }
        sched_yield();
    }
}
