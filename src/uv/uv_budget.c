/* SPDX-License-Identifier: MIT */
/*
 * The input budget (FutoInUvBudget): a byte count shared by streams on any
 * loop or thread, charged with their receive buffers beyond their first
 * FUTOIN_UV_BUDGET_FREE_BYTES; atomics only, no lock.
 */
#include "uv_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FutoInUvBudget* futoin_uv_budget_new(size_t limit)
{
    FutoInUvBudget* b = calloc(1, sizeof(*b));
    if (!b) {
        return NULL;
    }
    b->limit = limit;
    atomic_init(&b->used, 0);
    atomic_init(&b->refusals, 0);
    atomic_init(&b->refs, 1);
    return b;
}

FutoInUvBudget* futoin_uv_budget_ref(FutoInUvBudget* b)
{
    if (b) {
        atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    }
    return b;
}

void futoin_uv_budget_release(FutoInUvBudget* b)
{
    if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        free(b);
    }
}

int futoin_uv_budget_take(FutoInUvBudget* b, size_t n)
{
    if (!b) {
        return -1;
    }
    size_t cur = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (cur > b->limit || n > b->limit - cur) {
            atomic_fetch_add_explicit(&b->refusals, 1, memory_order_relaxed);
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &cur, cur + n, memory_order_relaxed,
            memory_order_relaxed));
    return 0;
}

void futoin_uv_budget_give(FutoInUvBudget* b, size_t n)
{
    if (b && n) {
        atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
    }
}

size_t futoin_uv_budget_used(const FutoInUvBudget* b)
{
    return b ? atomic_load_explicit(&((FutoInUvBudget*)b)->used, memory_order_relaxed) : 0;
}

size_t futoin_uv_budget_limit(const FutoInUvBudget* b)
{
    return b ? b->limit : 0;
}

unsigned long futoin_uv_budget_refusals(const FutoInUvBudget* b)
{
    return b ? atomic_load_explicit(&((FutoInUvBudget*)b)->refusals, memory_order_relaxed) : 0;
}
