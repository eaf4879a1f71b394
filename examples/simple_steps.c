/* SPDX-License-Identifier: MIT */
/* JS README example "Simple steps": results passed between steps, an error
 * recovered by a handler (with error_info), state variables, and a parallel
 * step whose two branches interleave one step at a time. */
#include <futoin/asyncsteps.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- State variables ----------------------------------------------------
 * as.state.NAME in JS. Here each one is a small string buffer created by
 * alloc_str() on first use and released with the root by free_str(). */

enum { STATE_STR_SIZE = 32 };

static void* alloc_str(void* data)
{
    (void)data;
    return calloc(1, STATE_STR_SIZE);
}

static void free_str(void* data, void* value)
{
    (void)data;
    free(value);
}

static char* state_str(FutoInAsyncSteps* as, const char* name)
{
    return futoin_state(as, name, alloc_str, free_str, NULL);
}

/* ---- Step 1 and 2: a value, an error, a recovery ------------------------ */

static void step1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_success1(as, futoin_val_cstr("MyValue"));
}

static void raise_my_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "MyError", "Something bad has happened");
}

static void step2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    if (strcmp(futoin_arg_cstr(args, 0, ""), "MyValue") == 0) {
        futoin_add(as, raise_my_error, NULL, NULL);
    }
    /* Succeeds after the sub-steps, whether or not any were added. */
    futoin_success_step(as, NULL);
}

static void step2_onerror(FutoInAsyncSteps* as, void* data, const char* err)
{
    (void)data;
    if (strcmp(err, "MyError") == 0) {
        futoin_success1(as, futoin_val_cstr("NotSoBad"));
    }
}

/* ---- Step 3: a parallel step with two branches -------------------------- */

static void branch1_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Parallel Step 1.1");
    snprintf(state_str(as, "p1"), STATE_STR_SIZE, "%s1", state_str(as, "p1arg"));
    futoin_success(as);
}

static void branch1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Parallel Step 1");
    futoin_add(as, branch1_sub, NULL, NULL);
}

static void branch2_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Parallel Step 2.1");
    snprintf(state_str(as, "p2"), STATE_STR_SIZE, "%s2", state_str(as, "p2arg"));
    futoin_success(as);
}

static void branch2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Parallel Step 2");
    futoin_add(as, branch2_sub, NULL, NULL);
}

static void step3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    if (strcmp(futoin_arg_cstr(args, 0, ""), "NotSoBad") == 0) {
        printf("MyError was ignored: %s\n", futoin_error_info(as));
    }

    strcpy(state_str(as, "p1arg"), "abc");
    strcpy(state_str(as, "p2arg"), "xyz");

    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch1, NULL, NULL);
    futoin_add(p, branch2, NULL, NULL);
}

/* ---- Step 4: the branches' results -------------------------------------- */

static void step4(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    printf("Parallel 1 result: %s\n", state_str(as, "p1"));
    printf("Parallel 2 result: %s\n", state_str(as, "p2"));
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, step1, NULL, NULL);
    futoin_add(root, step2, step2_onerror, NULL);
    futoin_add(root, step3, NULL, NULL);
    futoin_add(root, step4, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return 0;
}
