/* SPDX-License-Identifier: MIT */
/* A parallel step with 100,000 branches, every branch waiting with a
 * cancel handler, one failing (an external error from a timer once all
 * branches are parked): the parallel step's error handler must run once
 * with that code, and the cancel handler of every other branch exactly
 * once; then the root goes on.
 *   stress_parallel [branches]   (default 100000) */
#include "stress_common.h"

#include <futoin/asyncsteps.h>

#include <string.h>

typedef struct {
    FutoInLoop* loop;
    size_t n;
    size_t failing;
    uint8_t* cancelled;
    uint8_t* started;
    FutoInAsyncSteps* failing_as;
    size_t eh_calls;
    char eh_code[32];
    size_t after_calls;
    size_t unhandled;
} Ctx;

static Ctx g;

static void on_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ++g.cancelled[(size_t)(uintptr_t)data];
}

static void fail_later(void* data)
{
    (void)data;
    futoin_error(g.failing_as, "BranchFailed", "one of many");
}

static void branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    size_t i = (size_t)(uintptr_t)data;
    ++g.started[i];
    if (i == g.failing) {
        g.failing_as = as;
        futoin_wait_external(as);
        futoin_loop_deferred(g.loop, 1, NULL, fail_later);
        return;
    }
    futoin_set_cancel(as, on_cancel, data);
}

static void par_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    ++g.eh_calls;
    snprintf(g.eh_code, sizeof(g.eh_code), "%s", code);
    futoin_success(as);
}

static void start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, par_eh, NULL);
    for (size_t i = 0; i < g.n; ++i) {
        futoin_add(p, branch, NULL, (void*)(uintptr_t)i);
    }
}

static void after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    ++g.after_calls;
}

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)data, (void)code;
    ++g.unhandled;
}

int main(int argc, char** argv)
{
    g.n = stress_count(argc, argv, 100000);
    g.failing = g.n / 2;
    g.loop = futoin_loop_new_virtual();
    g.cancelled = calloc(g.n, 1);
    g.started = calloc(g.n, 1);
    STRESS_CHECK(g.loop && g.cancelled && g.started, "out of memory");
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g.loop);
    futoin_add(root, start, NULL, NULL);
    futoin_add(root, after, NULL, NULL);
    futoin_execute(root, unhandled, NULL);
    futoin_loop_run(g.loop);
    size_t not_started = 0, bad_cancel = 0;
    for (size_t i = 0; i < g.n; ++i) {
        not_started += g.started[i] != 1;
        if (i != g.failing && g.cancelled[i] != 1) {
            ++bad_cancel;
        }
    }
    STRESS_CHECK(!not_started, "%zu branches not started exactly once", not_started);
    STRESS_CHECK(!bad_cancel && g.cancelled[g.failing] == 0,
            "%zu cancel handlers did not run exactly once", bad_cancel);
    STRESS_CHECK(g.eh_calls == 1 && strcmp(g.eh_code, "BranchFailed") == 0,
            "parallel eh calls %zu code %s", g.eh_calls, g.eh_code);
    STRESS_CHECK(g.after_calls == 1 && g.unhandled == 0, "after %zu unhandled %zu", g.after_calls,
            g.unhandled);
    futoin_asyncsteps_free(root);
    futoin_loop_free(g.loop);
    printf("stress_parallel: %zu branches, one failed, %zu cancel handlers ran exactly once; "
           "peak RSS %ld KiB\n",
            g.n, g.n - 1, stress_peak_rss_kb());
    free(g.cancelled);
    free(g.started);
    return 0;
}
