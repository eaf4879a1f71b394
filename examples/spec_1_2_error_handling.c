/* SPDX-License-Identifier: MIT */
/* Spec section 1.2 "Error handling": nested error handlers, the second
 * rewriting the error and the outer one recovering with a value. */
#include <futoin/asyncsteps.h>

#include <stdio.h>

static void level1_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 1 func");
    futoin_error(as, "myerror", NULL);
}

static void level1_onerror(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)data;
    printf("Level 1 onerror: %s\n", error);
    futoin_error(as, "newerror", NULL);
}

static void level0_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 0 func");
    futoin_add(as, level1_func, level1_onerror, NULL);
}

static void level0_onerror(FutoInAsyncSteps* as, void* data, const char* error)
{
    (void)data;
    printf("Level 0 onerror: %s\n", error);
    futoin_success1(as, futoin_val_cstr("Prm"));
}

static void level0_func2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    printf("Level 0 func2: %s\n", futoin_arg_cstr(args, 0, "(none)"));
    futoin_success(as);
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* as = futoin_asyncsteps_new(loop);
    futoin_add(as, level0_func, level0_onerror, NULL);
    futoin_add(as, level0_func2, NULL, NULL);
    futoin_execute(as, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(as);
    futoin_loop_free(loop);
    return 0;
}
