/* SPDX-License-Identifier: MIT */
/* Spec section 1.1 "Levels": steps added with add() and parallel() at three
 * levels. A step's sub-steps (level n+1) all run before the next step of
 * level n, so the lines come out in the order of the spec's tree.
 *
 *     add()      -> Level 0 #1
 *         add()      -> Level 1 #1
 *             add()      -> Level 2 #1
 *             parallel() -> Level 2 #2
 *             add()      -> Level 2 #3
 *         parallel() -> Level 1 #2
 *         add()      -> Level 1 #3
 *     parallel() -> Level 0 #2
 *     add()      -> Level 0 #3
 *
 * A parallel() is one step of its level; here each one has a single branch
 * that prints the parallel step's line. Steps that return without calling
 * success() (and without waiting) succeed implicitly. */
#include <futoin/asyncsteps.h>

#include <stdio.h>

/* ---- Level 2 ---- */

static void level2_add1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 2 add #1");
}

static void level2_parallel2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 2 parallel #2");
}

static void level2_add3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 2 add #3");
}

/* ---- Level 1 ---- */

static void level1_add1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 1 add #1");
    futoin_add(as, level2_add1, NULL, NULL);
    futoin_add(futoin_parallel(as, NULL, NULL), level2_parallel2, NULL, NULL);
    futoin_add(as, level2_add3, NULL, NULL);
}

static void level1_parallel2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 1 parallel #2");
}

static void level1_add3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 1 add #3");
}

/* ---- Level 0 ---- */

static void level0_add1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    puts("Level 0 add #1");
    futoin_add(as, level1_add1, NULL, NULL);
    futoin_add(futoin_parallel(as, NULL, NULL), level1_parallel2, NULL, NULL);
    futoin_add(as, level1_add3, NULL, NULL);
}

static void level0_parallel2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 0 parallel #2");
}

static void level0_add3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    puts("Level 0 add #3");
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* as = futoin_asyncsteps_new(loop);
    futoin_add(as, level0_add1, NULL, NULL);
    futoin_add(futoin_parallel(as, NULL, NULL), level0_parallel2, NULL, NULL);
    futoin_add(as, level0_add3, NULL, NULL);
    futoin_execute(as, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(as);
    futoin_loop_free(loop);
    return 0;
}
