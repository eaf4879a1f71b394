/* SPDX-License-Identifier: MIT */
/* Spec section 1.2.1 "Steps in error handler": an error handler that adds
 * steps gives the failed step an alternative path. The added steps take the
 * failed step's place on the same level, and the handler itself is gone: when
 * the alternative path fails too, "Level 1 onerror" is NOT called a second
 * time; the error goes straight on to the level 0 handler. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#include <stdio.h>

static void level2_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 2 func");
    futoin_error(as, "second", NULL);
}

static void level2_onerror(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)as, (void)data;
    printf("Level 2 onerror: %s\n", error);
    /* Returning without success() lets the error continue unwinding. */
}

static void level1_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 1 func");
    futoin_error(as, "first", NULL);
}

static void level1_onerror(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)data;
    printf("Level 1 onerror: %s\n", error);
    /* Adding a step here is an implicit success() of the handler: the new
     * step replaces the failed one. */
    futoin_add(as, level2_func, level2_onerror, NULL);
}

static void level0_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 0 func");
    futoin_add(as, level1_func, level1_onerror, NULL);
}

static void level0_onerror(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)as, (void)data;
    printf("Level 0 onerror: %s\n", error);
}

/* "second" is not recovered anywhere, so it escapes level 0 and the root
 * fails. The spec's output ends above; keep stdout identical to it. */
static void unhandled_error(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)data;
    fprintf(stderr, "(unhandled error: %s)\n", error);
    if (futoin_tracing_enabled()) { /* a tracing build: the steps that led here */
        futoin_error_trace_print(as, stderr);
    }
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* as = futoin_asyncsteps_new(loop);
    futoin_add(as, level0_func, level0_onerror, NULL);
    futoin_execute(as, unhandled_error, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(as);
    futoin_loop_free(loop);
    return 0;
}
