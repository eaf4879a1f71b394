/* SPDX-License-Identifier: MIT */
/*
 * futoin_uv_resolve() when copying its result runs out of memory: the step
 * fails with InternalError "ENOMEM: resolve HOST: out of memory", it never
 * succeeds with a value missing.
 *
 * This binary is linked with -Wl,--wrap=malloc (tests/uv/CMakeLists.txt):
 * every malloc() of the test and of the static libraries goes through
 * __wrap_malloc(), which fails one chosen allocation. The allocations of
 * the result are told apart by size, on the loop thread only: for
 * "127.0.0.1" (one address) the address list takes INET6_ADDRSTRLEN + 2
 * bytes, the copy of the first address strlen("127.0.0.1") + 1. The test
 * checks that the chosen allocation really failed, so a change in how the
 * result is allocated shows up here instead of passing unnoticed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "uv_tsupport.h"

void* __real_malloc(size_t size);
void* __wrap_malloc(size_t size);

static pthread_t g_fail_thread;
static size_t g_fail_size; /* 0: nothing to fail */
static int g_failed;

void* __wrap_malloc(size_t size)
{
    if (g_fail_size && size == g_fail_size && pthread_equal(pthread_self(), g_fail_thread)) {
        g_fail_size = 0;
        ++g_failed;
        return NULL;
    }
    return __real_malloc(size);
}

static void arm(size_t size)
{
    g_fail_thread = pthread_self();
    g_failed = 0;
    g_fail_size = size;
}

typedef struct OomCase {
    size_t size;
    int armed;
} OomCase;

static void step_resolve_armed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    OomCase* c = data;
    futoin_uv_resolve(as, "127.0.0.1");
    /* Armed once the step is added: its parameter copy is not the target. */
    arm(c->size);
    c->armed = 1;
}

static void step_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("success:%s:%d", futoin_arg_cstr(args, 0, "(missing)"), (int)futoin_arg_int(args, 1, -1));
}

static void run_case(size_t size, Outcome* o)
{
    OomCase c = { size, 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(g_uv));
    futoin_add(root, step_resolve_armed, NULL, &c);
    futoin_add(root, step_after, NULL, NULL);
    run_root(root, o, 10000);
    g_fail_size = 0;
    futoin_asyncsteps_free(root);
    assert_int_equal(c.armed, 1);
}

static void test_first_address_copy_fails(void** state)
{
    (void)state;
    Outcome o;
    run_case(strlen("127.0.0.1") + 1, &o);
    assert_int_equal(g_failed, 1);
    assert_string_equal(o.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(o.info, "ENOMEM: resolve 127.0.0.1: out of memory");
    assert_trace("unhandled:InternalError");
}

static void test_address_list_fails(void** state)
{
    (void)state;
    Outcome o;
    run_case(INET6_ADDRSTRLEN + 2, &o);
    assert_int_equal(g_failed, 1);
    assert_string_equal(o.code, FUTOIN_INTERNAL_ERROR);
    assert_string_equal(o.info, "ENOMEM: resolve 127.0.0.1: out of memory");
    assert_trace("unhandled:InternalError");
}

/* Without a failure the same lookup succeeds with both values. */
static void test_no_failure(void** state)
{
    (void)state;
    Outcome o;
    run_case(0, &o);
    assert_int_equal(g_failed, 0);
    assert_string_equal(o.code, "");
    assert_trace("success:127.0.0.1:1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_TEST(test_first_address_copy_fails),
        UV_TEST(test_address_list_fails),
        UV_TEST(test_no_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
