/* SPDX-License-Identifier: MIT */
/*
 * The fault-injecting allocator of fault_alloc.h. The executable's own
 * definitions of the allocation functions win over the C library's (and
 * over the weak ones of AddressSanitizer's runtime) for every caller in
 * the process. They forward to the allocator they replace: ASan's when it
 * is linked in (its memory must go back to its free()), else the next
 * definition in lookup order, found with dlsym(RTLD_NEXT). dlsym() itself
 * may allocate before the real functions are known: those few requests
 * are served from a static buffer that free() recognises and ignores.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fault_alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The allocation functions run before AddressSanitizer has set up its
 * shadow memory (its own start-up allocates): they must not be
 * instrumented. */
#define FAULT_RAW __attribute__((no_sanitize("address", "undefined")))

/* AddressSanitizer's entry points (absent without it). */
extern void* __interceptor_malloc(size_t size) __attribute__((weak));
extern void* __interceptor_calloc(size_t n, size_t size) __attribute__((weak));
extern void* __interceptor_realloc(void* p, size_t size) __attribute__((weak));
extern void __interceptor_free(void* p) __attribute__((weak));
extern void* __interceptor_aligned_alloc(size_t align, size_t size) __attribute__((weak));
extern int __interceptor_posix_memalign(void** out, size_t align, size_t size)
        __attribute__((weak));

/* LeakSanitizer takes what the dynamic loader allocates for backtrace()
 * for a leak once its caller is this file's malloc(): such allocations are
 * made with it disabled. */
extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

FAULT_RAW static int backtrace_unleaked(void** frames, int max)
{
    if (__lsan_disable) {
        __lsan_disable();
    }
    int n = backtrace(frames, max);
    if (__lsan_enable) {
        __lsan_enable();
    }
    return n;
}

typedef struct {
    void* (*malloc)(size_t);
    void* (*calloc)(size_t, size_t);
    void* (*realloc)(void*, size_t);
    void (*free)(void*);
    void* (*aligned_alloc)(size_t, size_t);
    int (*posix_memalign)(void**, size_t, size_t);
} RealAlloc;

static RealAlloc real;
static int resolving;

static _Alignas(max_align_t) unsigned char boot_buf[8192];
static size_t boot_used;

static _Atomic int armed;
static int quiet; /* fault_works(): no backtrace */
static _Atomic unsigned long counted;
static _Atomic unsigned long injected;
static FaultMode fault_mode;
static unsigned long fault_n;

FAULT_RAW static void* boot_alloc(size_t size)
{
    size_t a = _Alignof(max_align_t);
    size = (size + a - 1) / a * a;
    if (size > sizeof(boot_buf) - boot_used) {
        return NULL;
    }
    void* p = boot_buf + boot_used;
    boot_used += size;
    memset(p, 0, size);
    return p;
}

FAULT_RAW static int is_boot(const void* p)
{
    return (const unsigned char*)p >= boot_buf
            && (const unsigned char*)p < boot_buf + sizeof(boot_buf);
}

FAULT_RAW static void resolve(void)
{
    if (real.malloc || resolving) {
        return;
    }
    if (__interceptor_malloc) {
        real.calloc = __interceptor_calloc;
        real.realloc = __interceptor_realloc;
        real.free = __interceptor_free;
        real.aligned_alloc = __interceptor_aligned_alloc;
        real.posix_memalign = __interceptor_posix_memalign;
        real.malloc = __interceptor_malloc;
        return;
    }
    resolving = 1;
    /* Through an object pointer: ISO C has no function pointer casts from
     * void*, POSIX guarantees the representation. */
    void* sym;
    sym = dlsym(RTLD_NEXT, "calloc");
    memcpy(&real.calloc, &sym, sizeof(sym));
    sym = dlsym(RTLD_NEXT, "realloc");
    memcpy(&real.realloc, &sym, sizeof(sym));
    sym = dlsym(RTLD_NEXT, "free");
    memcpy(&real.free, &sym, sizeof(sym));
    sym = dlsym(RTLD_NEXT, "aligned_alloc");
    memcpy(&real.aligned_alloc, &sym, sizeof(sym));
    sym = dlsym(RTLD_NEXT, "posix_memalign");
    memcpy(&real.posix_memalign, &sym, sizeof(sym));
    sym = dlsym(RTLD_NEXT, "malloc");
    memcpy(&real.malloc, &sym, sizeof(sym));
    resolving = 0;
}

__attribute__((constructor)) static void fault_init(void)
{
    resolve();
}

/* AddressSanitizer's start of a thread needs pthread_getattr_np(), which
 * allocates (through helpers of the C library), to succeed: those
 * allocations are not the program's. */
FAULT_RAW static int sanitizer_needs(void)
{
    /* backtrace() may allocate (its first call loads the unwinder). */
    static _Thread_local int inside;
    if (inside) {
        return 1;
    }
    inside = 1;
    void* frames[12];
    int n = backtrace_unleaked(frames, 12);
    inside = 0;
    for (int i = 1; i < n; ++i) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_sname
                && strcmp(info.dli_sname, "pthread_getattr_np") == 0) {
            return 1;
        }
    }
    return 0;
}

/* Counts an allocation while armed; 1 when it must fail. Inlined into
 * each allocation function, so that the backtrace's first frame is that
 * function and the second its caller. */
static inline __attribute__((always_inline)) FAULT_RAW int inject(void)
{
    if (!atomic_load_explicit(&armed, memory_order_acquire)) {
        return 0;
    }
    unsigned long k = atomic_fetch_add(&counted, 1) + 1;
    int fail = fault_mode == FAULT_ONCE ? k == fault_n
            : fault_mode == FAULT_FROM  ? k >= fault_n
                                        : 0;
    /* Asked only of an allocation about to fail: it walks the stack. */
    if (fail && __interceptor_malloc && sanitizer_needs()) {
        fail = 0;
    }
    if (fail) {
        /* Where the first failure struck, for the report of a run that
         * goes wrong (backtrace_symbols_fd() does not allocate). */
        if (atomic_fetch_add(&injected, 1) == 0 && !quiet) {
            void* frames[24];
            int n = backtrace(frames, 24);
            static const char head[] = "fault_alloc: failed allocation called from:\n";
            ssize_t w = write(2, head, sizeof(head) - 1);
            (void)w;
            if (n > 1) {
                backtrace_symbols_fd(frames + 1, n - 1, 2);
            }
        }
        errno = ENOMEM;
    }
    return fail;
}

void fault_arm(FaultMode mode, unsigned long n)
{
    /* backtrace() loads its unwinder on first use, which allocates (in
     * the child that runs the program: the dynamic loader's memory is
     * then never reported as a leak of the test). */
    if (!quiet) {
        void* frame;
        (void)backtrace_unleaked(&frame, 1);
    }
    atomic_store(&armed, 0);
    fault_mode = mode;
    fault_n = n;
    atomic_store(&counted, 0);
    atomic_store(&injected, 0);
    atomic_store_explicit(&armed, 1, memory_order_release);
}

void fault_disarm(void)
{
    atomic_store(&armed, 0);
}

unsigned long fault_count(void)
{
    return atomic_load(&counted);
}

unsigned long fault_injected(void)
{
    return atomic_load(&injected);
}

int fault_works(void)
{
    /* Through a volatile pointer: the compiler may not pair and drop the
     * malloc()/free() below. */
    void* (*volatile m)(size_t) = malloc;
    quiet = 1;
    fault_arm(FAULT_ONCE, 1);
    void* p = m(32);
    fault_disarm();
    quiet = 0;
    free(p);
    return p == NULL && fault_injected() == 1;
}

FAULT_RAW void* malloc(size_t size)
{
    resolve();
    if (!real.malloc) {
        return boot_alloc(size);
    }
    return inject() ? NULL : real.malloc(size);
}

FAULT_RAW void* calloc(size_t n, size_t size)
{
    resolve();
    if (!real.calloc) {
        return n && size > SIZE_MAX / n ? NULL : boot_alloc(n * size);
    }
    return inject() ? NULL : real.calloc(n, size);
}

FAULT_RAW void* realloc(void* p, size_t size)
{
    resolve();
    if (p && is_boot(p)) {
        void* n = malloc(size);
        if (n) {
            memcpy(n, p,
                    size < sizeof(boot_buf) - (size_t)((unsigned char*)p - boot_buf)
                            ? size
                            : sizeof(boot_buf) - (size_t)((unsigned char*)p - boot_buf));
        }
        return n;
    }
    /* realloc(p, 0) frees: not an allocation that can fail. */
    if (size == 0 && p) {
        return real.realloc(p, size);
    }
    return inject() ? NULL : real.realloc(p, size);
}

FAULT_RAW void free(void* p)
{
    if (!p || is_boot(p)) {
        return;
    }
    resolve();
    real.free(p);
}

FAULT_RAW void* aligned_alloc(size_t align, size_t size)
{
    resolve();
    return inject() ? NULL : real.aligned_alloc(align, size);
}

FAULT_RAW int posix_memalign(void** out, size_t align, size_t size)
{
    resolve();
    return inject() ? ENOMEM : real.posix_memalign(out, align, size);
}

FAULT_RAW void* memalign(size_t align, size_t size)
{
    void* p = NULL;
    return posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, size) == 0 ? p : NULL;
}

FAULT_RAW char* strdup(const char* s)
{
    size_t n = strlen(s) + 1;
    char* p = malloc(n);
    if (p) {
        memcpy(p, s, n);
    }
    return p;
}

FAULT_RAW char* strndup(const char* s, size_t max)
{
    size_t n = strnlen(s, max);
    char* p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}
