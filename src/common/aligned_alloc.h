/* SPDX-License-Identifier: MIT */
/*
 * Memory aligned beyond what malloc() promises (cache lines): C11's
 * aligned_alloc() and free(), or on Windows, whose C runtime has no
 * aligned_alloc(), _aligned_malloc() and _aligned_free(), which must be
 * paired. A block of futoin__aligned_alloc() is freed with
 * futoin__aligned_free() only. size is a multiple of align.
 */
#ifndef FUTOIN_ALIGNED_ALLOC_H
#define FUTOIN_ALIGNED_ALLOC_H

#include <stdlib.h>
#ifdef _WIN32
#include <malloc.h>
#endif

static inline void* futoin__aligned_alloc(size_t align, size_t size)
{
#ifdef _WIN32
    return _aligned_malloc(size, align);
#else
    return aligned_alloc(align, size);
#endif
}

static inline void futoin__aligned_free(void* p)
{
#ifdef _WIN32
    _aligned_free(p);
#else
    free(p);
#endif
}

#endif
