/* SPDX-License-Identifier: MIT */
/* Quick start (the code shown in README.md): a root with two steps. The
 * first waits for a reply that never comes and fails with Timeout; its error
 * handler recovers with a fallback value, which the second step receives. */
#include <futoin/asyncsteps.h>

#include <stdio.h>

static void fetch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("fetch: waiting for a reply");
    /* A real step would start an I/O operation here and call
     * futoin_success1(as, ...) from its completion callback. */
    futoin_set_timeout(as, 100); /* no reply within 100 ms: Timeout */
}

static void fetch_failed(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    printf("fetch failed: %s\n", code);
    futoin_success1(as, futoin_val_cstr("cached value")); /* recover */
}

static void use(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data;
    printf("use: %s\n", futoin_arg_cstr(args, 0, "(none)"));
}

static void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)data;
    printf("unhandled error: %s\n", code);
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);

    futoin_add(root, fetch, fetch_failed, NULL);
    futoin_add(root, use, NULL, NULL);
    futoin_execute(root, on_unhandled, NULL);

    futoin_loop_run(loop); /* returns when no work is left */

    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return 0;
}
