/* SPDX-License-Identifier: MIT */
/* JS README example "Model steps": a model root is built once and its steps
 * (and state variables) are copied into three roots with futoin_copy_from(),
 * before execute() and again as sub-steps of a running step. The model's
 * step function is written once and runs six times.
 *
 * The three roots run concurrently on one loop and take turns one step at a
 * time, which gives the README's order. */
#include <futoin/asyncsteps.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VAR_SIZE = 16, ROOTS = 3 };

/* State variable "var": created as "Vanilla" by this allocator. copyFrom()
 * calls the allocator again for each copy, so every root gets its own. */
static void* alloc_var(void* data)
{
    (void)data;
    char* s = calloc(1, VAR_SIZE);
    if (s) {
        strcpy(s, "Vanilla");
    }
    return s;
}

static void free_var(void* data, void* value)
{
    (void)data;
    free(value);
}

/* The model's only step. */
static void model_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    char* var = futoin_state(as, "var", alloc_var, free_var, NULL);
    puts("-----");
    puts("Hi! I am from model_as");
    printf("State.var: %s\n", var);
    strcpy(var, "Dirty");
    futoin_success(as);
}

static void first_inner_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts(">> The first inner step");
    futoin_success(as);
}

static void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* model = data;
    futoin_add(as, first_inner_step, NULL, NULL);
    futoin_copy_from(as, model); /* the model's steps become sub-steps */
    futoin_success_step(as, NULL);
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();

    FutoInAsyncSteps* model = futoin_asyncsteps_new(loop);
    futoin_state(model, "var", alloc_var, free_var, NULL); /* "Vanilla" */
    futoin_add(model, model_step, NULL, NULL);

    FutoInAsyncSteps* roots[ROOTS];
    for (int i = 0; i < ROOTS; ++i) {
        roots[i] = futoin_asyncsteps_new(loop);
        futoin_copy_from(roots[i], model);
        futoin_add(roots[i], outer_step, NULL, model);
        futoin_execute(roots[i], NULL, NULL);
    }

    futoin_loop_run(loop);

    for (int i = 0; i < ROOTS; ++i) {
        futoin_asyncsteps_free(roots[i]);
    }
    futoin_asyncsteps_free(model); /* never executed: just a template */
    futoin_loop_free(loop);
    return 0;
}
