/* SPDX-License-Identifier: MIT */
/*
 * The libuv backend prints through the core's log handler
 * (futoin_set_log_handler()), as the core does: futoin_uv_run() refused
 * inside a callback of its loop is a FUTOIN_LOG_MISUSE line, and
 * futoin_uv_free() finding libuv handles still open a FUTOIN_LOG_WARNING
 * line; nothing goes to stderr.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <futoin/uv.h>
#include "../log_capture.h"

static Captured g_cap;

static int setup(void** state)
{
    (void)state;
    log_capture_start(&g_cap);
    return 0;
}

static int teardown(void** state)
{
    (void)state;
    log_capture_stop();
    return 0;
}

static int g_nested_rc;

static void step_runs_uv(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    g_nested_rc = futoin_uv_run((FutoInUv*)data);
}

static void test_nested_run_reports_through_log(void** state)
{
    (void)state;
    FutoInUv* uv = futoin_uv_new(NULL);
    assert_non_null(uv);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    assert_non_null(root);
    futoin_add(root, step_runs_uv, NULL, uv);
    futoin_execute(root, NULL, NULL);
    g_nested_rc = 0;
    assert_int_equal(futoin_uv_run(uv), 0);
    assert_int_equal(g_nested_rc, UV_EBUSY);
    assert_int_equal(g_cap.n, 1);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_MISUSE);
    assert_string_equal(g_cap.lines[0],
            "futoin: API misuse: futoin_uv_run() called from inside a callback of the same loop: "
            "refused");
    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    assert_int_equal(g_cap.n, 1);
}

/* A handle of the program's own on the backend's loop, never closed (its
 * memory is static, so that closing it for the program leaks nothing). */
static uv_timer_t g_left_open;

static void test_free_with_open_handles_warns_through_log(void** state)
{
    (void)state;
    FutoInUv* uv = futoin_uv_new(NULL);
    assert_non_null(uv);
    assert_int_equal(uv_timer_init(futoin_uv_uv_loop(uv), &g_left_open), 0);
    futoin_uv_free(uv);
    assert_int_equal(g_cap.n, 1);
    assert_int_equal(g_cap.kinds[0], FUTOIN_LOG_WARNING);
    assert_string_equal(g_cap.lines[0],
            "futoin_uv_free: libuv handles still open (streams or servers not released)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nested_run_reports_through_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_with_open_handles_warns_through_log, setup,
                teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
