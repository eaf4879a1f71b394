/* SPDX-License-Identifier: MIT */
/*
 * Counting allocator for futoin_bench. Defining malloc & co. in the
 * executable interposes them for the statically linked library (and libc's
 * own callers); every call is forwarded to glibc's real allocator.
 * Single-threaded bench: plain counters are enough.
 */
#include "bench.h"

#include <stddef.h>

#ifdef FUTOIN_BENCH_NO_MALLOC_COUNT
/* Sanitizer builds own malloc: no counting (the bench prints n/a). */
void bench_alloc_reset(void)
{
}

unsigned long long bench_alloc_calls(void)
{
    return 0;
}

unsigned long long bench_alloc_bytes(void)
{
    return 0;
}

int bench_alloc_counting(void)
{
    return 0;
}
#else
int bench_alloc_counting(void)
{
    return 1;
}

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void __libc_free(void* p);
extern void* __libc_memalign(size_t align, size_t size);

static unsigned long long g_allocs;
static unsigned long long g_bytes;

void* malloc(size_t size)
{
    ++g_allocs;
    g_bytes += size;
    return __libc_malloc(size);
}

void* calloc(size_t n, size_t size)
{
    ++g_allocs;
    g_bytes += n * size;
    return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size)
{
    ++g_allocs;
    g_bytes += size;
    return __libc_realloc(p, size);
}

void free(void* p)
{
    __libc_free(p);
}

void* memalign(size_t align, size_t size)
{
    ++g_allocs;
    g_bytes += size;
    return __libc_memalign(align, size);
}

void* aligned_alloc(size_t align, size_t size)
{
    ++g_allocs;
    g_bytes += size;
    return __libc_memalign(align, size);
}

int posix_memalign(void** out, size_t align, size_t size)
{
    ++g_allocs;
    g_bytes += size;
    void* p = __libc_memalign(align, size);
    if (!p) {
        return 12; /* ENOMEM */
    }
    *out = p;
    return 0;
}

void bench_alloc_reset(void)
{
    g_allocs = 0;
    g_bytes = 0;
}

unsigned long long bench_alloc_calls(void)
{
    return g_allocs;
}

unsigned long long bench_alloc_bytes(void)
{
    return g_bytes;
}
#endif
