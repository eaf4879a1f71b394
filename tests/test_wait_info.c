/*
 * SPDX-License-Identifier: MIT
 *
 * futoin_set_wait_info(): a step names what it waits for, and a Timeout
 * that fails it (or a step around it) carries that text as error_info.
 */
#include "tsupport.h"

/* Wrong answers of futoin_set_wait_info() inside callbacks, checked by the
 * test bodies (callbacks record, they do not assert). */
static int g_rc_bad;

typedef struct WaitCase {
    const char* info;    /* described by the waiting step (NULL: none) */
    uint32_t timeout_ms; /* on the waiting step itself (0: none) */
    int rc;              /* futoin_set_wait_info's answer */
} WaitCase;

static void eh_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void waiting_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    WaitCase* w = data;
    if (w->info) {
        w->rc = futoin_set_wait_info(as, w->info);
    }
    if (w->timeout_ms) {
        futoin_set_timeout(as, w->timeout_ms);
    } else {
        futoin_wait_external(as);
    }
}

static void test_timeout_names_the_wait(void** state)
{
    (void)state;
    WaitCase w = { "read 127.0.0.1:8080", 10, -9 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, waiting_step, eh_info, &w);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_int_equal(w.rc, 0);
    assert_trace("eh:Timeout:read 127.0.0.1:8080");
    assert_int_equal(now_ms(), 10);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_rc_bad, 0);
}

/* The timeout of an outer step names the innermost described wait. */
typedef struct Outer {
    const char* info;
    WaitCase* inner;
} Outer;

static void outer_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Outer* o = data;
    if (o->info && futoin_set_wait_info(as, o->info) != 0) {
        ++g_rc_bad;
    }
    futoin_set_timeout(as, 20);
    futoin_add(as, waiting_step, NULL, o->inner);
}

static void test_outer_timeout_names_innermost(void** state)
{
    (void)state;
    WaitCase inner = { "connect example.org:443", 0, -9 };
    Outer o = { "request GET /", &inner };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_step, eh_info, &o);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout:connect example.org:443");
    tr_reset();
    /* Without an inner description the outer one is used. */
    inner.info = NULL;
    futoin_add(root, outer_step, eh_info, &o);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout:request GET /");
    futoin_asyncsteps_free(root);
    assert_int_equal(g_rc_bad, 0);
}

/* A description ends with its step: a later timeout does not see it. */
static void describe_and_finish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_rc_bad += futoin_set_wait_info(as, "old operation") != 0;
    g_rc_bad += futoin_set_wait_info(as, "newer operation") != 0;
}

static void test_description_ends_with_step(void** state)
{
    (void)state;
    WaitCase w = { NULL, 5, -9 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, describe_and_finish, NULL, NULL);
    futoin_add(root, waiting_step, eh_info, &w);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout:");
    futoin_asyncsteps_free(root);
    assert_int_equal(g_rc_bad, 0);
}

/* Of two descriptions of one step, the latest wins. */
static void describe_twice_and_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_rc_bad += futoin_set_wait_info(as, "resolve db.local") != 0;
    g_rc_bad += futoin_set_wait_info(as, "connect 10.0.0.5:5432") != 0;
    futoin_set_timeout(as, 3);
}

static void test_latest_description_wins(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, describe_twice_and_wait, eh_info, "s");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:Timeout:connect 10.0.0.5:5432");
    futoin_asyncsteps_free(root);
    assert_int_equal(g_rc_bad, 0);
}

/* Refusals: NULL text, an error handler, no running step. A long text is
 * kept whole. */
static int g_rc_eh;

static void eh_tries(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    (void)code;
    g_rc_eh = futoin_set_wait_info(as, "in an error handler");
}

static void long_text_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    g_rc_bad += futoin_set_wait_info(as, NULL) != -1;
    g_rc_bad += futoin_set_wait_info(as, (const char*)data) != 0;
    futoin_set_timeout(as, 1);
}

static void test_refusals_and_long_text(void** state)
{
    (void)state;
    static char text[3001];
    memset(text, 'x', sizeof(text) - 1);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    assert_int_equal(futoin_set_wait_info(root, "idle root"), -1);
    futoin_add(root, long_text_wait, eh_tries, text);
    Unhandled u = { 0 };
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_int_equal(g_rc_eh, -1);
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, FUTOIN_TIMEOUT);
    assert_int_equal(strlen(futoin_error_info(root)), 3000);
    assert_int_equal(futoin_set_wait_info(root, "finished root"), -1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_rc_bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_timeout_names_the_wait),
        ENV_TEST(test_outer_timeout_names_innermost),
        ENV_TEST(test_description_ends_with_step),
        ENV_TEST(test_latest_description_wins),
        ENV_TEST(test_refusals_and_long_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
