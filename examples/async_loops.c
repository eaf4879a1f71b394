/* SPDX-License-Identifier: MIT */
/* JS README example "Async Loops": repeat(), and forEach() over a list and
 * over a map. In C, forEach comes in two forms: futoin_foreach_array() for a
 * C array and futoin_foreach_pairs() for key/value pairs. Each loop is a
 * sub-step of the step that adds it, so the three loops run one after
 * another. */
#include <futoin/asyncsteps.h>

#include <stdio.h>

static const int list[] = { 1, 2, 3 };

typedef struct Map {
    FutoInKeyValue pairs[3];
} Map;

static void repeat_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as, (void)data;
    printf("> Repeat: %zu\n", i);
}

static void list_body(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)as, (void)data;
    printf("> forEach: %zu = %d\n", i, *(const int*)elem);
}

static void map_body(FutoInAsyncSteps* as, void* data, const char* key,
        const FutoInBinaryValue* value)
{
    (void)as, (void)data;
    printf("> forEach: %s = %d\n", key, (int)value->i32);
}

static void step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const Map* map = data;
    futoin_repeat(as, 3, repeat_body, NULL, NULL);
    futoin_foreach_array(as, list, 3, sizeof(list[0]), list_body, NULL, NULL);
    futoin_foreach_pairs(as, map->pairs, 3, map_body, NULL, NULL);
}

int main(void)
{
    /* { a: 1, b: 2, c: 3 }: must outlive the loop over it. */
    Map map = { {
            { "a", futoin_val_i32(1) },
            { "b", futoin_val_i32(2) },
            { "c", futoin_val_i32(3) },
    } };

    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, step, NULL, &map);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return 0;
}
