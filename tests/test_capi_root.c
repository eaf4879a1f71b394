/* SPDX-License-Identifier: MIT */
/* What a root offers beside its steps: state variables, stack() memory,
 * newInstance() and isValid(), the loop accessor, the scheduler entries
 * and is_same_thread, and a reused root that starts clean. */
#include "tsupport.h"

#include <pthread.h>

/* ---- state variables ---- */

typedef struct VarLog {
    int allocs;
    int cleanups;
    char order[16];
} VarLog;

static VarLog g_vars;

static void* var_alloc(void* data)
{
    ++g_vars.allocs;
    int* v = (int*)malloc(sizeof(int));
    *v = (int)(intptr_t)data;
    return v;
}

static void var_cleanup(void* data, void* value)
{
    size_t n = strlen(g_vars.order);
    g_vars.order[n] = (char)('0' + (int)(intptr_t)data);
    g_vars.order[n + 1] = '\0';
    assert_int_equal(*(int*)value, (int)(intptr_t)data);
    ++g_vars.cleanups;
    free(value);
}

static void use_vars(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    int* a = (int*)futoin_state(as, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    int* a2 = (int*)futoin_state(as, "a", var_alloc, var_cleanup, (void*)(intptr_t)9);
    int* b = (int*)futoin_state(as, "b", var_alloc, var_cleanup, (void*)(intptr_t)2);
    assert_ptr_equal(a, a2);
    assert_int_equal(*a, 1);
    assert_int_equal(*b, 2);
    assert_null(futoin_state(as, "unknown", NULL, NULL, NULL));
    tr("allocs:%d", g_vars.allocs);
}

static void test_state_variables(void** state)
{
    (void)state;
    memset(&g_vars, 0, sizeof(g_vars));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    int* a = (int*)futoin_state(root, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    futoin_add(root, use_vars, NULL, NULL);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, use_vars, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("allocs:2|allocs:2");
    int* c = (int*)futoin_state(root, "c", var_alloc, var_cleanup, (void*)(intptr_t)3);
    assert_int_equal(*c, 3);
    assert_ptr_equal(futoin_state(root, "a", NULL, NULL, NULL), a);
    assert_int_equal(g_vars.cleanups, 0);
    futoin_asyncsteps_free(root);
    /* released with the root, last created first */
    assert_int_equal(g_vars.cleanups, 3);
    assert_string_equal(g_vars.order, "321");
}

/* A root handed out again after free() (roots are pooled) starts clean:
 * no error_info, no state variables, no steps, idle, and its old handle's
 * leftovers never run. */
static void step_fail_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "OldError", "old info");
}

static void test_reused_root_is_clean(void** state)
{
    (void)state;
    memset(&g_vars, 0, sizeof(g_vars));
    Unhandled u = { 0 };
    FutoInAsyncSteps* old = futoin_asyncsteps_new(g_loop);
    futoin_state(old, "a", var_alloc, var_cleanup, (void*)(intptr_t)1);
    futoin_add(old, step_fail_info, NULL, NULL);
    futoin_execute(old, on_unhandled, &u);
    run();
    assert_string_equal(u.code, "OldError");
    assert_string_equal(futoin_error_info(old), "old info");
    futoin_add(old, step_tag, NULL, "never"); /* queued on the finished root */
    futoin_asyncsteps_free(old);
    assert_int_equal(g_vars.cleanups, 1);

    for (int i = 0; i < 4; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
        assert_string_equal(futoin_error_info(r), "");
        assert_null(futoin_state(r, "a", NULL, NULL, NULL));
        futoin_add(r, step_tag, NULL, "fresh");
        futoin_execute(r, no_unhandled, NULL);
        run();
        assert_string_equal(futoin_error_info(r), "");
        futoin_asyncsteps_free(r);
    }
    assert_trace("unhandled:OldError|fresh|fresh|fresh|fresh");
    assert_int_equal(g_vars.cleanups, 1);
}

/* ---- stack() ---- */

static int g_stack_cleanups;

static void stack_cleanup(void* value)
{
    ++g_stack_cleanups;
    assert_int_equal(*(int*)value, 77);
}

typedef struct Big {
    long double ld;
    char bytes[100];
} Big;

static void sub_uses_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("sub:%d:c%d", *(int*)data, g_stack_cleanups);
}

static void step_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int* p = (int*)futoin_stack(as, sizeof(int), stack_cleanup);
    assert_non_null(p);
    assert_int_equal(*p, 0);
    *p = 77;
    Big* big = (Big*)futoin_stack(as, sizeof(Big), NULL);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % _Alignof(max_align_t), 0);
    for (size_t i = 0; i < sizeof(big->bytes); ++i) {
        assert_int_equal(big->bytes[i], 0);
    }
    futoin_add(as, sub_uses_stack, NULL, p);
    if (data) {
        futoin_add(as, step_fail, NULL, "fail");
    }
}

static void show_cleanups(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s:c%d", (const char*)data, g_stack_cleanups);
}

static void eh_show_cleanups(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("eh:%s:c%d", code, g_stack_cleanups);
}

static void test_stack_memory(void** state)
{
    (void)state;
    g_stack_cleanups = 0;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_stack, NULL, NULL);
    futoin_add(root, show_cleanups, NULL, "next");
    futoin_add(root, step_stack, eh_show_cleanups, (void*)1);
    futoin_add(root, must_not_run, NULL, "never");
    futoin_execute(root, on_unhandled, &u);
    run();
    /* released when the step ends (its sub-steps can use it); on error
     * after the failing step's own handler ran */
    assert_trace("sub:77:c0|next:c1|sub:77:c1|fail|eh:Fail:c1|unhandled:Fail");
    assert_int_equal(g_stack_cleanups, 2);
    futoin_asyncsteps_free(root);
}

/* ---- newInstance, isValid, loop accessor ---- */

static void spawn(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    assert_int_equal(futoin_is_valid(as), 1);
    FutoInAsyncSteps* child = futoin_new_instance(as);
    assert_non_null(child);
    assert_true(child != as);
#ifndef FUTOIN_TEST_FOREIGN
    assert_ptr_equal(futoin_asyncsteps_loop(child), g_loop);
#else
    assert_null(futoin_asyncsteps_loop(child)); /* a foreign root: no loop of ours */
#endif
    assert_int_equal(futoin_is_valid(child), 1);
    futoin_add(child, step_tag, NULL, "child");
    futoin_execute(child, no_unhandled, NULL);
    *(FutoInAsyncSteps**)futoin_state(as, "child", NULL, NULL, NULL) = child;
    tr("spawned");
}

static void* child_slot_alloc(void* data)
{
    return data;
}

static void test_new_instance(void** state)
{
    (void)state;
    FutoInAsyncSteps* child = NULL;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_int_equal(futoin_is_valid(root), 1);
    futoin_state(root, "child", child_slot_alloc, NULL, &child);
    futoin_add(root, spawn, NULL, NULL);
    futoin_add(root, step_tag, NULL, "parent2");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("spawned|child|parent2");
    assert_non_null(child);
    futoin_asyncsteps_free(child);
    futoin_asyncsteps_free(root);
}

/* ---- scheduler entries, is_same_thread ---- */

static void sched_cb(void* data)
{
    tr("%s@%d", (const char*)data, (int)now_ms());
}

static void step_sched(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInHandle h1 = as->api->sched_immediate(as, "imm", sched_cb);
    FutoInHandle h2 = as->api->sched_deferred(as, 20, "def", sched_cb);
    FutoInHandle h3 = as->api->sched_deferred(as, 10, "cancelled", sched_cb);
    assert_int_equal(as->api->sched_is_valid(as, &h1), 1);
    assert_int_equal(as->api->sched_is_valid(as, &h2), 1);
    assert_int_equal(as->api->sched_is_valid(as, &h3), 1);
    as->api->sched_cancel(as, &h3);
    assert_int_equal(as->api->sched_is_valid(as, &h3), 0);
    as->api->sched_cancel(as, &h3); /* zeroed handle: no-op */
    assert_int_equal(as->api->is_same_thread(as), 1);
    FutoInHandle* keep = (FutoInHandle*)futoin_state(as, "h", NULL, NULL, NULL);
    keep[0] = h1;
    keep[1] = h2;
}

static FutoInHandle g_handles[2];

static void* handles_alloc(void* data)
{
    (void)data;
    return g_handles;
}

static void* thread_is_same(void* arg)
{
    FutoInAsyncSteps* as = (FutoInAsyncSteps*)arg;
    return (void*)(intptr_t)as->api->is_same_thread(as);
}

static void test_sched_entries(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_state(root, "h", handles_alloc, NULL, NULL);
    futoin_add(root, step_sched, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("imm@0|def@20");
    assert_int_equal(root->api->sched_is_valid(root, &g_handles[0]), 0);
    assert_int_equal(root->api->sched_is_valid(root, &g_handles[1]), 0);
    assert_int_equal(root->api->is_same_thread(root), 1);
#ifdef FUTOIN_TEST_FOREIGN
    /* The foreign implementation is single-threaded: always 1. */
    futoin_asyncsteps_free(root);
    return;
#endif
    pthread_t th;
    void* res = (void*)1;
    assert_int_equal(pthread_create(&th, NULL, thread_is_same, root), 0);
    assert_int_equal(pthread_join(th, &res), 0);
    assert_int_equal((int)(intptr_t)res, 0);
    futoin_asyncsteps_free(root);
}

/* ---- roots left on a loop that is freed ---- */

static FutoInLoop* g_freed_loop;

static void left_stack_cleanup(void* value)
{
    tr("stack:%s", *(const char**)value);
}

static void step_left_waiting(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char** slot = futoin_stack(as, sizeof(*slot), left_stack_cleanup);
    assert_non_null(slot);
    *slot = data;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
}

static void* left_var_alloc(void* data)
{
    return data;
}

static void left_var_cleanup(void* data, void* value)
{
    (void)value;
    tr("var:%s", (const char*)data);
}

/* A cleanup that, while the loop is being freed, makes another root on it. */
static void left_var_cleanup_makes_root(void* data, void* value)
{
    left_var_cleanup(data, value);
    FutoInAsyncSteps* c = futoin_asyncsteps_new(g_freed_loop);
    assert_non_null(c);
    futoin_state(c, "v", left_var_alloc, left_var_cleanup, "C");
    futoin_add(c, must_not_run, NULL, "C");
}

static void test_loop_free_frees_roots_left(void** state)
{
    (void)state;
    OWN_ONLY("futoin_loop_free() frees the roots of our loop");
    g_freed_loop = futoin_loop_new_virtual();
    assert_non_null(g_freed_loop);
    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_freed_loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_freed_loop);
    assert_non_null(a);
    assert_non_null(b);
    futoin_state(a, "v", left_var_alloc, left_var_cleanup, "A");
    futoin_add(a, step_left_waiting, NULL, "A");
    futoin_add(a, must_not_run, NULL, "A2");
    futoin_execute(a, no_unhandled, NULL);
    futoin_state(b, "v", left_var_alloc, left_var_cleanup_makes_root, "B");
    futoin_add(b, must_not_run, NULL, "B");
    futoin_loop_run(g_freed_loop);
    assert_trace("A");
    futoin_loop_free(g_freed_loop);
    g_freed_loop = NULL;
    /* The running root is cancelled, then its memory and variables go; the
     * idle one's variable, and that of the root made meanwhile, too. */
    assert_non_null(strstr(g_trace, "A|cancel:A|stack:A|var:A"));
    assert_non_null(strstr(g_trace, "var:B"));
    assert_non_null(strstr(g_trace, "var:C"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_state_variables),
        ENV_TEST(test_stack_memory),
        ENV_TEST(test_new_instance),
        ENV_TEST(test_sched_entries),
        ENV_TEST(test_reused_root_is_clean),
        ENV_TEST(test_loop_free_frees_roots_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
