/* SPDX-License-Identifier: MIT */
#include "loop/timer_heap_impl.h"

#include "common/compiler.h"

#include <stdlib.h>

/* Four children per node: a shallower tree than a binary heap, and with
 * 24-byte entries a node's children span about one and a half cache lines,
 * which pays off once the heap no longer fits in cache. */
enum { ARITY = 4, MIN_CAPACITY = 64 };

static int entry_before(const TimerEntry* a, const TimerEntry* b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static size_t parent_of(size_t index)
{
    return (index - 1) / ARITY;
}

static void place(TimerHeap* heap, size_t index, TimerEntry entry)
{
    heap->entries[index] = entry;
    heap->pos[entry.id] = (uint32_t)index;
}

/* Hole-based sifting: the moving entry is written once at its final slot
 * instead of being swapped at every level. */
static void sift_up(TimerHeap* heap, size_t index, TimerEntry moving)
{
    while (index > 0) {
        size_t parent = parent_of(index);
        if (!entry_before(&moving, &heap->entries[parent])) {
            break;
        }
        place(heap, index, heap->entries[parent]);
        index = parent;
    }
    place(heap, index, moving);
}

static size_t smallest_child(const TimerHeap* heap, size_t first)
{
    size_t end = first + ARITY;
    if (end > heap->size) {
        end = heap->size;
    }
    size_t best = first;
    for (size_t child = first + 1; child < end; ++child) {
        if (entry_before(&heap->entries[child], &heap->entries[best])) {
            best = child;
        }
    }
    return best;
}

static void sift_down(TimerHeap* heap, size_t index, TimerEntry moving)
{
    for (;;) {
        size_t first = index * ARITY + 1;
        if (first >= heap->size) {
            break;
        }
        size_t best = smallest_child(heap, first);
        if (!entry_before(&heap->entries[best], &moving)) {
            break;
        }
        place(heap, index, heap->entries[best]);
        index = best;
    }
    place(heap, index, moving);
}

/* The growth paths are out of line: a push that needs none stays small. */
static FUTOIN_NOINLINE int grow_entries(TimerHeap* heap)
{
    size_t capacity = heap->capacity ? heap->capacity * 2 : MIN_CAPACITY;
    if (capacity < heap->capacity || capacity > SIZE_MAX / sizeof(TimerEntry)) {
        return -1;
    }
    TimerEntry* entries = realloc(heap->entries, capacity * sizeof(*entries));
    if (!entries) {
        return -1;
    }
    heap->entries = entries;
    heap->capacity = capacity;
    return 0;
}

static FUTOIN_NOINLINE int grow_pos(TimerHeap* heap, uint32_t id)
{
    size_t capacity = heap->pos_capacity ? heap->pos_capacity : MIN_CAPACITY;
    while (capacity <= id) {
        if (capacity > SIZE_MAX / 2 / sizeof(uint32_t)) {
            return -1;
        }
        capacity *= 2;
    }
    uint32_t* pos = realloc(heap->pos, capacity * sizeof(*pos));
    if (!pos) {
        return -1;
    }
    for (size_t i = heap->pos_capacity; i < capacity; ++i) {
        pos[i] = FUTOIN_TIMER_ABSENT;
    }
    heap->pos = pos;
    heap->pos_capacity = capacity;
    return 0;
}

static FUTOIN_ALWAYS_INLINE void remove_at(TimerHeap* heap, size_t index)
{
    heap->pos[heap->entries[index].id] = FUTOIN_TIMER_ABSENT;
    --heap->size;
    if (index == heap->size) {
        return;
    }
    /* The last entry fills the hole; it may belong above or below it. */
    TimerEntry moving = heap->entries[heap->size];
    if (index > 0 && entry_before(&moving, &heap->entries[parent_of(index)])) {
        sift_up(heap, index, moving);
    } else {
        sift_down(heap, index, moving);
    }
}

void futoin__timer_heap_init(TimerHeap* heap)
{
    heap->entries = NULL;
    heap->size = 0;
    heap->capacity = 0;
    heap->pos = NULL;
    heap->pos_capacity = 0;
    heap->next_seq = 0;
}

void futoin__timer_heap_destroy(TimerHeap* heap)
{
    free(heap->entries);
    free(heap->pos);
    futoin__timer_heap_init(heap);
}

void futoin__timer_heap_clear(TimerHeap* heap)
{
    for (size_t i = 0; i < heap->size; ++i) {
        heap->pos[heap->entries[i].id] = FUTOIN_TIMER_ABSENT;
    }
    heap->size = 0;
}

int futoin__timer_heap_push(TimerHeap* heap, uint32_t id, uint64_t due)
{
    if (id == FUTOIN_TIMER_ABSENT) {
        return -1;
    }
    if (heap->size == heap->capacity && grow_entries(heap) != 0) {
        return -1;
    }
    if (id >= heap->pos_capacity && grow_pos(heap, id) != 0) {
        return -1;
    }
    TimerEntry entry = { .due = due, .seq = heap->next_seq++, .id = id };
    ++heap->size;
    sift_up(heap, heap->size - 1, entry);
    return 0;
}

int futoin__timer_heap_remove(TimerHeap* heap, uint32_t id)
{
    if (id >= heap->pos_capacity || heap->pos[id] == FUTOIN_TIMER_ABSENT) {
        return 0;
    }
    remove_at(heap, heap->pos[id]);
    return 1;
}

uint32_t futoin__timer_heap_pop(TimerHeap* heap)
{
    uint32_t id = heap->entries[0].id;
    remove_at(heap, 0);
    return id;
}
