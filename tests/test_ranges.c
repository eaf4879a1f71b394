/* SPDX-License-Identifier: MIT */
/*
 * Size and range arithmetic of the core API: counts and sizes
 * that cannot describe real memory, and thread counts beyond
 * FUTOIN_THREADS_MAX, are refused with an error naming the function, the
 * parameter and the value; nothing is added, nothing runs, nothing leaks.
 *
 * Callbacks never assert: they record, and the test body checks.
 */
#include "tsupport.h"

#include <errno.h>
#include <limits.h>

#include <futoin/threads.h>

/* ------------------------------------------------------------------------ */
/* Recorder                                                                  */

typedef struct Rec {
    int body_calls; /* loop bodies (must stay 0) */
    int eh_calls;
    char code[64];
    char info[256];
    int after_calls; /* the step after the failed one (must stay 0) */
    int recovered;   /* the outer step's error handler recovers */
    /* what the step under test does */
    const void* base;
    size_t count;
    size_t elem_size;
} Rec;

static void rec_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Rec* r = data;
    ++r->eh_calls;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", futoin_error_info(as));
    if (r->recovered) {
        futoin_success(as);
    }
}

static void rec_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++((Rec*)data)->after_calls;
}

/* A loop body that runs at most once: without the range check it would
 * be handed elements that do not exist (it never reads them). */
static void array_body(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)i;
    (void)elem;
    ++((Rec*)data)->body_calls;
    futoin_break(as, NULL);
}

static void pair_body(FutoInAsyncSteps* as, void* data, const char* key,
        const FutoInBinaryValue* value)
{
    (void)key;
    (void)value;
    ++((Rec*)data)->body_calls;
    futoin_break(as, NULL);
}

static void step_foreach_array(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Rec* r = data;
    futoin_foreach_array(as, r->base, r->count, r->elem_size, array_body, r, NULL);
}

static void step_foreach_pairs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Rec* r = data;
    futoin_foreach_pairs(as, r->base, r->count, pair_body, r, NULL);
}

/* Runs step under an error handler that records the error, then checks
 * that it was InternalError and that nothing else ran (neither the loop
 * body nor the root's next step). */
static void run_and_expect_ie(Rec* r, FutoInAsyncSteps_execute_callback step)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_non_null(root);
    futoin_add(root, step, rec_eh, r);
    futoin_add(root, rec_after, NULL, r);
    Unhandled u;
    memset(&u, 0, sizeof(u));
    futoin_execute(root, on_unhandled, &u);
    run();
    futoin_asyncsteps_free(root);
    assert_int_equal(r->eh_calls, 1);
    assert_string_equal(r->code, FUTOIN_INTERNAL_ERROR);
    assert_int_equal(r->body_calls, 0);
    assert_int_equal(r->after_calls, 0);
    assert_int_equal(u.calls, 1); /* the handler did not recover */
    assert_int_equal(g_misuse, 0);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
}

/* ------------------------------------------------------------------------ */
/* forEach over an array                                                     */

static void test_foreach_array_count_overflow(void** state)
{
    (void)state;
    static const uint16_t arr[4] = { 1, 2, 3, 4 };
    Rec r;
    memset(&r, 0, sizeof(r));
    r.base = arr;
    r.count = SIZE_MAX / 2 + 2; /* * 2 wraps to 2 */
    r.elem_size = 2;
    run_and_expect_ie(&r, step_foreach_array);
    char expect[128];
    snprintf(expect, sizeof(expect), "futoin_foreach_array(): count %zu * elem_size 2 overflows",
            r.count);
    assert_non_null(strstr(r.info, expect));
}

static void test_foreach_array_wraps_address_space(void** state)
{
    (void)state;
    Rec r;
    memset(&r, 0, sizeof(r));
    /* 16 bytes below the top of the address space, 32 bytes long. */
    r.base = (const void*)(UINTPTR_MAX - 15u);
    r.count = 8;
    r.elem_size = 4;
    run_and_expect_ie(&r, step_foreach_array);
    assert_non_null(strstr(r.info, "futoin_foreach_array(): count 8: 32 bytes"));
    assert_non_null(strstr(r.info, "wrap around the address space"));
}

static void test_foreach_array_zero_elem_size(void** state)
{
    (void)state;
    static const int arr[3] = { 1, 2, 3 };
    Rec r;
    memset(&r, 0, sizeof(r));
    r.base = arr;
    r.count = 3;
    r.elem_size = 0;
    run_and_expect_ie(&r, step_foreach_array);
    assert_non_null(strstr(r.info, "futoin_foreach_array(): elem_size 0 with count 3"));
}

/* On a root before execute() no step runs: a misuse report, nothing added. */
static void test_foreach_array_overflow_on_idle_root(void** state)
{
    (void)state;
    static const uint32_t arr[2] = { 1, 2 };
    Rec r;
    memset(&r, 0, sizeof(r));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_foreach_array(root, arr, SIZE_MAX / 4 + 1, 4, array_body, &r, NULL);
    futoin_add(root, rec_after, NULL, &r);
    Unhandled u;
    memset(&u, 0, sizeof(u));
    futoin_execute(root, on_unhandled, &u);
    run();
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_foreach_array(): count"));
    assert_non_null(strstr(g_misuse_msg, "* elem_size 4 overflows"));
    assert_int_equal(r.body_calls, 0);
    assert_int_equal(r.after_calls, 1); /* the root runs without the loop */
    assert_int_equal(u.calls, 0);
}

/* The flow goes on normally once a handler recovers. */
static void test_foreach_array_overflow_recoverable(void** state)
{
    (void)state;
    static const uint64_t arr[1] = { 7 };
    Rec r;
    memset(&r, 0, sizeof(r));
    r.base = arr;
    r.count = SIZE_MAX / 8 + 1;
    r.elem_size = 8;
    r.recovered = 1;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_foreach_array, rec_eh, &r);
    futoin_add(root, rec_after, NULL, &r);
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(root);
    assert_int_equal(r.eh_calls, 1);
    assert_string_equal(r.code, FUTOIN_INTERNAL_ERROR);
    assert_non_null(strstr(r.info, "futoin_foreach_array()"));
    assert_int_equal(r.body_calls, 0);
    assert_int_equal(r.after_calls, 1); /* the root's second step, not the inner one */
    assert_int_equal(g_misuse, 0);
}

/* ------------------------------------------------------------------------ */
/* forEach over key/value pairs                                              */

static void test_foreach_pairs_count_overflow(void** state)
{
    (void)state;
    static FutoInKeyValue one[1];
    one[0].key = "k";
    one[0].value = futoin_val_i32(1);
    Rec r;
    memset(&r, 0, sizeof(r));
    r.base = one;
    r.count = SIZE_MAX / sizeof(FutoInKeyValue) + 1;
    run_and_expect_ie(&r, step_foreach_pairs);
    char expect[160];
    snprintf(expect, sizeof(expect),
            "futoin_foreach_pairs(): count %zu * sizeof(FutoInKeyValue) %zu overflows", r.count,
            sizeof(FutoInKeyValue));
    assert_non_null(strstr(r.info, expect));
}

/* ------------------------------------------------------------------------ */
/* Thread counts                                                             */

static void test_loop_pool_new_too_many_threads(void** state)
{
    (void)state;
    errno = 0;
    FutoInLoopPool* pool = futoin_loop_pool_new(FUTOIN_THREADS_MAX + 1u);
    int err = errno;
    if (pool) {
        futoin_loop_pool_free(pool);
    }
    assert_null(pool);
    assert_int_equal(err, EINVAL);
    errno = 0;
    pool = futoin_loop_pool_new(UINT_MAX);
    err = errno;
    assert_null(pool);
    assert_int_equal(err, EINVAL);
}

static void test_work_pool_configure_too_many_threads(void** state)
{
    (void)state;
    /* The worker pool has not been started in this process. */
    assert_int_equal(futoin_work_pool_configure(FUTOIN_THREADS_MAX + 1u), -1);
    assert_int_equal(futoin_work_pool_configure(UINT_MAX), -1);
    assert_int_equal(futoin_work_pool_configure(FUTOIN_THREADS_MAX), 0);
    /* Back to the default. */
    assert_int_equal(futoin_work_pool_configure(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_foreach_array_count_overflow),
        ENV_TEST(test_foreach_array_wraps_address_space),
        ENV_TEST(test_foreach_array_zero_elem_size),
        ENV_TEST(test_foreach_array_overflow_on_idle_root),
        ENV_TEST(test_foreach_array_overflow_recoverable),
        ENV_TEST(test_foreach_pairs_count_overflow),
        cmocka_unit_test(test_loop_pool_new_too_many_threads),
        cmocka_unit_test(test_work_pool_configure_too_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
