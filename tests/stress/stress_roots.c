/* SPDX-License-Identifier: MIT */
/* One million roots parked in waitExternal(), then completed with an
 * external success() in random order: every root must run its next step
 * exactly once, with the value it was completed with, and finish.
 *   stress_roots [count]   (default 1000000) */
#include "stress_common.h"

#include <futoin/asyncsteps.h>

#include <string.h>

typedef struct {
    FutoInAsyncSteps** waiting; /* the flow of each parked step */
    uint8_t* done;              /* completions seen per root */
    size_t parked;
    size_t bad_value;
} Ctx;

static Ctx g;

static void park(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    g.waiting[(size_t)(uintptr_t)data] = as;
    ++g.parked;
    futoin_wait_external(as);
}

static void after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    size_t i = (size_t)(uintptr_t)data;
    if (futoin_arg_int(args, 0, -1) != (int64_t)(i & 0x7fffffff)) {
        ++g.bad_value;
    }
    ++g.done[i];
}

int main(int argc, char** argv)
{
    size_t n = stress_count(argc, argv, 1000000);
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInAsyncSteps** roots = malloc(n * sizeof(*roots));
    g.waiting = calloc(n, sizeof(*g.waiting));
    g.done = calloc(n, 1);
    uint32_t* order = malloc(n * sizeof(*order));
    STRESS_CHECK(loop && roots && g.waiting && g.done && order, "out of memory");
    for (size_t i = 0; i < n; ++i) {
        roots[i] = futoin_asyncsteps_new(loop);
        STRESS_CHECK(roots[i], "futoin_asyncsteps_new failed at %zu", i);
        futoin_add(roots[i], park, NULL, (void*)(uintptr_t)i);
        futoin_add(roots[i], after, NULL, (void*)(uintptr_t)i);
        futoin_execute(roots[i], NULL, NULL);
        order[i] = (uint32_t)i;
    }
    futoin_loop_run(loop);
    STRESS_CHECK(g.parked == n, "parked %zu of %zu", g.parked, n);
    long rss_parked = stress_peak_rss_kb();
    stress_shuffle(order, n);
    /* Complete in random order, running the loop now and then so that
     * completions interleave with resumed flows. */
    for (size_t k = 0; k < n; ++k) {
        size_t i = order[k];
        futoin_success1(g.waiting[i], futoin_val_i32((int32_t)(i & 0x7fffffff)));
        if (k % 4096 == 4095) {
            futoin_loop_iterate(loop, NULL);
        }
    }
    futoin_loop_run(loop);
    size_t missing = 0, twice = 0;
    for (size_t i = 0; i < n; ++i) {
        missing += g.done[i] == 0;
        twice += g.done[i] > 1;
    }
    STRESS_CHECK(!missing && !twice && !g.bad_value, "missing %zu, twice %zu, bad values %zu",
            missing, twice, g.bad_value);
    for (size_t i = 0; i < n; ++i) {
        futoin_asyncsteps_free(roots[i]);
    }
    futoin_loop_free(loop);
    printf("stress_roots: %zu roots parked and completed exactly once; peak RSS %ld KiB "
           "(%ld KiB when all were parked)\n",
            n, stress_peak_rss_kb(), rss_parked);
    free(roots);
    free(g.waiting);
    free(g.done);
    free(order);
    return 0;
}
