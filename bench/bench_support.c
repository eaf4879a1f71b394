/* SPDX-License-Identifier: MIT */
/*
 * The clock and the result checks that the bench's workload files share,
 * apart from the runner (bench.c), so that the workloads depend on this
 * file and the runner on them, never back.
 */
#include "bench.h"

#include <stddef.h>
#include <time.h>

static const char* g_check_failed;

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_check(int ok, const char* what)
{
    if (!ok && !g_check_failed) {
        g_check_failed = what;
    }
}

const char* bench_check_failed(void)
{
    return g_check_failed;
}

void bench_check_reset(void)
{
    g_check_failed = NULL;
}
