/* SPDX-License-Identifier: MIT */
/*
 * A fault-injecting allocator for tests: linking fault_alloc.c into a test
 * executable interposes malloc, calloc, realloc, aligned_alloc,
 * posix_memalign, memalign, strdup and strndup for the whole process (the
 * library, libuv and libc included). Nothing fails until fault_arm() is
 * called: only allocations made while armed are counted, so setup done
 * before arming is never affected.
 *
 * Under a tool that replaces the allocator (valgrind) the interposer may
 * be bypassed: fault_works() tells, so that the test can skip.
 */
#ifndef FUTOIN_TEST_FAULT_ALLOC_H
#define FUTOIN_TEST_FAULT_ALLOC_H

typedef enum {
    FAULT_OFF,  /* count only */
    FAULT_ONCE, /* the n-th allocation fails, the others succeed */
    FAULT_FROM  /* the n-th allocation and every later one fail */
} FaultMode;

/* Starts counting at 0; allocation number n (1-based) is the first to fail. */
void fault_arm(FaultMode mode, unsigned long n);
/* Stops counting and failing; the counters keep their values. */
void fault_disarm(void);
/* Allocations counted since the last fault_arm(). */
unsigned long fault_count(void);
/* Failures injected since the last fault_arm(). */
unsigned long fault_injected(void);
/* 1 when an armed failure really reaches a malloc() call of this process. */
int fault_works(void);

#endif
