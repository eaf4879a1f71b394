/* SPDX-License-Identifier: MIT */
/*
 * Private 4-ary min-heap of timers for the event loop.
 *
 * Timers are identified by a small integer id (the loop's record index).
 * The heap keeps its own id -> position map so that an arbitrary timer can
 * be removed in O(log n) without the caller storing positions in records
 * that may move when the record pool is reallocated.
 *
 * Ordering is (due, seq): seq is assigned by the heap at push time, so
 * timers that share a due time come out in the order they were pushed.
 */
#ifndef FUTOIN_TIMER_HEAP_IMPL_H
#define FUTOIN_TIMER_HEAP_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* Position of an id that is not in the heap. */
#define FUTOIN_TIMER_ABSENT UINT32_MAX

typedef struct {
    uint64_t due;
    uint64_t seq;
    uint32_t id;
} TimerEntry;

typedef struct {
    TimerEntry* entries;
    size_t size;
    size_t capacity;
    uint32_t* pos; /* pos[id]: index in entries, or FUTOIN_TIMER_ABSENT */
    size_t pos_capacity;
    uint64_t next_seq;
} TimerHeap;

void futoin__timer_heap_init(TimerHeap* heap);
void futoin__timer_heap_destroy(TimerHeap* heap);

/* Drops every timer but keeps the memory for reuse. */
void futoin__timer_heap_clear(TimerHeap* heap);

/* Returns 0, or -1 when memory could not be grown (heap unchanged).
 * id must not already be in the heap and must be below UINT32_MAX. */
int futoin__timer_heap_push(TimerHeap* heap, uint32_t id, uint64_t due);

/* Returns 1 if id was in the heap and is now removed, else 0. */
int futoin__timer_heap_remove(TimerHeap* heap, uint32_t id);

/* Removes the earliest timer and returns its id (heap must not be empty). */
uint32_t futoin__timer_heap_pop(TimerHeap* heap);

/* Inline: the loop asks these every round. */

/* The earliest timer, or NULL when empty. Invalidated by any mutation. */
static inline const TimerEntry* futoin__timer_heap_top(const TimerHeap* heap)
{
    return heap->size ? &heap->entries[0] : NULL;
}

static inline size_t futoin__timer_heap_size(const TimerHeap* heap)
{
    return heap->size;
}

/* The seq the next push will get: a timer with seq below it already exists
 * (or existed) when this was read. */
static inline uint64_t futoin__timer_heap_next_seq(const TimerHeap* heap)
{
    return heap->next_seq;
}

#pragma GCC visibility pop

#endif
