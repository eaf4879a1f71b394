/* SPDX-License-Identifier: MIT */
#include "common/slab_pool.h"

#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>

typedef union SlabHeader {
    void* next;
    max_align_t align;
} SlabHeader;

void futoin__pool_init(SlabPool* pool, size_t elem_size, size_t elem_align, size_t per_slab)
{
    /* Free elements hold a link, so they are pointer-aligned at least; a
     * slab's first element is max_align_t-aligned (SlabHeader). */
    size_t align = elem_align < _Alignof(void*) ? _Alignof(void*) : elem_align;
    if (elem_size < sizeof(void*)) {
        elem_size = sizeof(void*);
    }
    pool->elem_size = (elem_size + align - 1) / align * align;
    pool->per_slab = per_slab ? per_slab : 64;
    pool->free_list = NULL;
    pool->slabs = NULL;
}

void futoin__pool_destroy(SlabPool* pool)
{
    void* s = pool->slabs;
    while (s) {
        void* next = ((SlabHeader*)s)->next;
        free(s);
        s = next;
    }
    pool->slabs = NULL;
    pool->free_list = NULL;
}

static int pool_refill(SlabPool* pool)
{
    SlabHeader* slab = malloc(sizeof(SlabHeader) + pool->elem_size * pool->per_slab);
    if (!slab) {
        return 0;
    }
    char* first = (char*)(slab + 1);
    slab->next = pool->slabs;
    pool->slabs = slab;
    /* Thread the new elements in address order for locality. */
    for (size_t i = pool->per_slab; i-- > 0;) {
        futoin__pool_put(pool, first + i * pool->elem_size);
    }
    return 1;
}

void* futoin__pool_try_get(SlabPool* pool)
{
    if (!pool->free_list && !pool_refill(pool)) {
        return NULL;
    }
    return futoin__pool_get(pool);
}

void* futoin__pool_first_slab(const SlabPool* pool)
{
    return pool->slabs;
}

void* futoin__pool_next_slab(const void* slab)
{
    return ((const SlabHeader*)slab)->next;
}

void* futoin__pool_slab_elem(const SlabPool* pool, void* slab, size_t i)
{
    return (char*)((SlabHeader*)slab + 1) + i * pool->elem_size;
}

static void out_of_memory(size_t size);

void* futoin__pool_refill_get(SlabPool* pool)
{
    if (!pool->free_list && !pool_refill(pool)) {
        out_of_memory(sizeof(SlabHeader) + pool->elem_size * pool->per_slab);
    }
    void* p = pool->free_list;
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): per_slab > 0, so a refill fills it */
    pool->free_list = *(void**)p;
    return p;
}

static void out_of_memory(size_t size)
{
    char line[80];
    snprintf(line, sizeof(line), "futoin: out of memory allocating %zu bytes", size);
    futoin_log_write(FUTOIN_LOG_FATAL, line);
    abort();
}

void futoin__out_of_memory(const char* what)
{
    char line[256];
    snprintf(line, sizeof(line), "futoin: out of memory: %s", what);
    futoin_log_write(FUTOIN_LOG_FATAL, line);
    abort();
}

void* futoin__xmalloc(size_t size)
{
    void* p = malloc(size ? size : 1);
    if (!p) {
        out_of_memory(size);
    }
    return p;
}

void* futoin__xrealloc(void* p, size_t size)
{
    void* n = realloc(p, size ? size : 1);
    if (!n) {
        out_of_memory(size);
    }
    return n;
}
