/* SPDX-License-Identifier: MIT */
/* Fixed-size object pools: free lists carved from slabs, so steady-state
 * step execution never calls malloc. Slabs are released with the pool. */
#ifndef FUTOIN_POOL_H
#define FUTOIN_POOL_H

#include <stddef.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

typedef struct SlabPool {
    size_t elem_size;
    size_t per_slab;
    void* free_list;
    void* slabs;
} SlabPool;

/* Elements are elem_size rounded up to elem_align (at most
 * _Alignof(max_align_t)): a 232-byte root with pointer alignment takes 232
 * bytes, not 240. */
void futoin__pool_init(SlabPool* pool, size_t elem_size, size_t elem_align, size_t per_slab);
void futoin__pool_destroy(SlabPool* pool);
/* Never returns NULL: aborts the process on out-of-memory, like the rest of
 * the engine's structural allocations (there is no flow to report to). */
void* futoin__pool_refill_get(SlabPool* pool);
/* As futoin__pool_get(), but NULL when a new slab cannot be allocated. */
void* futoin__pool_try_get(SlabPool* pool);

static inline void* futoin__pool_get(SlabPool* pool)
{
    void* p = pool->free_list;
    if (!p) {
        return futoin__pool_refill_get(pool);
    }
    pool->free_list = *(void**)p;
    return p;
}

static inline void futoin__pool_put(SlabPool* pool, void* p)
{
    *(void**)p = pool->free_list;
    pool->free_list = p;
}

/* Slab walking, for introspection (slabs stay until the pool is
 * destroyed): the newest slab (NULL: none), the one made before it, and
 * the address of element i (< per_slab) of a slab. Every element's first
 * word is written: by the pool's free-list link until it is first handed
 * out, then by its owner. */
void* futoin__pool_first_slab(const SlabPool* pool);
void* futoin__pool_next_slab(const void* slab);
void* futoin__pool_slab_elem(const SlabPool* pool, void* slab, size_t i);

/* Reports "futoin: out of memory: <what>" through the log handler
 * (futoin_set_log_handler()) and aborts: for the allocations whose failure
 * nobody could be told of (docs/SEMANTICS.md, "Memory"). */
_Noreturn void futoin__out_of_memory(const char* what);

/* malloc/realloc that abort with a message instead of returning NULL. */
void* futoin__xmalloc(size_t size);
void* futoin__xrealloc(void* p, size_t size);

#pragma GCC visibility pop

#endif
