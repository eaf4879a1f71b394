/* SPDX-License-Identifier: MIT */
/* Shared declarations of the futoin_bench program. */
#ifndef FUTOIN_BENCH_H
#define FUTOIN_BENCH_H

#include <stdint.h>

/* One workload: run(n) performs n units and returns the number of ops
 * (the denominator of ns/op). setup/teardown are not timed. */
typedef struct BenchWorkload {
    const char* name;
    const char* per; /* what one op is: "root", "step", "branch", ... */
    void (*setup)(void);
    uint64_t (*run)(uint64_t n);
    void (*teardown)(void);
    uint64_t n;      /* units per measured repetition (scaled) */
    uint64_t warm_n; /* units of the warm-up run (scaled) */
    double target;   /* PASS when ns/op <= target * F; 0: no target */
    int zero_malloc; /* PASS needs 0 malloc calls per op */
    const char* target_text;
    int cpu_time; /* time with the process CPU clock (workloads that sleep) */
} BenchWorkload;

/* monotonic seconds */
double bench_now(void);
/* floor.c: ns per record of the ring-of-callbacks floor over n records */
double bench_floor_run(uint64_t n);
/* malloc_count.c */
void bench_alloc_reset(void);
unsigned long long bench_alloc_calls(void);
unsigned long long bench_alloc_bytes(void);
/* 0 when malloc is not counted (sanitizer builds) */
int bench_alloc_counting(void);
/* Set when a workload's own sanity check fails (the engine did not run
 * what was asked); printed in the table. */
/* bench_support.c: what the workloads of every file share. A failed
 * check is kept (the first one) until bench_check_reset(). */
void bench_check(int ok, const char* what);
const char* bench_check_failed(void);
void bench_check_reset(void);

/* sync_bench.c: the Mutex, Throttle and Limiter rows. */
const BenchWorkload* bench_sync_workloads(unsigned* count);

#endif
