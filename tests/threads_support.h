/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the thread tests (test_threads_*.c; not a test itself).
 *
 * Sizes: the default suite uses moderate sizes so that each test binary
 * stays well under 10 s even under valgrind or ThreadSanitizer (which set
 * FUTOIN_THREADS_SMALL=1 through CTest); FUTOIN_STRESS=1 selects the full
 * stress sizes (scripts/stress-threads.sh).
 */
#ifndef FUTOIN_THREADS_SUPPORT_H
#define FUTOIN_THREADS_SUPPORT_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <futoin/asyncsteps.h>
#include <futoin/threads.h>

#include "time_scale.h"

/* full: the stress size; small: valgrind/TSan; else the default. */
static inline unsigned long scaled(unsigned long def, unsigned long full, unsigned long small)
{
    const char* s = getenv("FUTOIN_STRESS");
    if (s && *s == '1') {
        return full;
    }
    s = getenv("FUTOIN_THREADS_SMALL");
    if (s && *s == '1') {
        return small;
    }
    return def;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void sleep_us(unsigned us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };
    nanosleep(&ts, NULL);
}

/* A tiny xorshift PRNG per thread (rand() is not thread-safe). */
static inline uint32_t xrand(uint32_t* s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

/* ---- a value whose cleanup is counted: "cleaned up exactly once" ---- */

static atomic_long g_counted_made;
static atomic_long g_counted_freed;

static inline void counted_cleanup(FutoInBinaryValue* v)
{
    free(v->custom_data);
    atomic_fetch_add(&g_counted_freed, 1);
}

static const FutoInType counted_type = { FTN_TYPE_CUSTOM_OBJECT, counted_cleanup };

static inline FutoInBinaryValue counted_val(int32_t payload)
{
    int32_t* p = malloc(sizeof(*p));
    assert_non_null(p);
    *p = payload;
    atomic_fetch_add(&g_counted_made, 1);
    return futoin_val_custom(&counted_type, p);
}

static inline void counted_reset(void)
{
    atomic_store(&g_counted_made, 0);
    atomic_store(&g_counted_freed, 0);
}

static inline void assert_counted_balanced(void)
{
    assert_int_equal(atomic_load(&g_counted_made), atomic_load(&g_counted_freed));
}

/* ---- misuse reports, counted from the loop thread(s) ---- */

static atomic_long g_xmisuse;

static inline void count_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    (void)info;
    atomic_fetch_add(&g_xmisuse, 1);
}

/* ---- a one-shot gate threads can wait on ---- */

typedef struct Gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open;
} Gate;

static inline void gate_init(Gate* g)
{
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
    g->open = 0;
}

static inline void gate_open(Gate* g)
{
    pthread_mutex_lock(&g->m);
    g->open = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static inline void gate_wait(Gate* g)
{
    pthread_mutex_lock(&g->m);
    while (!g->open) {
        pthread_cond_wait(&g->c, &g->m);
    }
    pthread_mutex_unlock(&g->m);
}

static inline void gate_destroy(Gate* g)
{
    pthread_cond_destroy(&g->c);
    pthread_mutex_destroy(&g->m);
}

#endif
