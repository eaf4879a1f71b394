/* SPDX-License-Identifier: MIT */
/* addSync() with a sync object of the plain protocol: lock and unlock
 * around the critical section, and unlock owed exactly once whatever ends
 * the step (cancel while locking, inside the section). */
#include "capi_support.h"

static void show_arg(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%d:%d", (const char*)data, futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1));
}

static void give_int(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_i32((int32_t)(intptr_t)data));
}

/* ---- addSync ---- */

static uint64_t g_base; /* virtual time at the start of a sync scenario */

typedef struct TestSync {
    FutoInSync base;
    int mode; /* 0: acquire at once, 1: wait for a deferred grant, 2: reject */
    int locks;
    int unlocks;
    FutoInAsyncSteps* waiter;
} TestSync;

static void lock_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    TestSync* s = (TestSync*)data;
    s->waiter = NULL;
    tr("lock-cancel");
}

static void grant(void* data)
{
    TestSync* s = (TestSync*)data;
    if (s->waiter) {
        tr("grant@%d", (int)(now_ms() - g_base));
        futoin_success(s->waiter);
    }
}

static void ts_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    TestSync* s = (TestSync*)sync;
    ++s->locks;
    tr("lock");
    if (s->mode == 1) {
        s->waiter = as;
        futoin_set_cancel(as, lock_cancel, s);
        futoin_loop_deferred(g_loop, 10, s, grant);
    } else if (s->mode == 2) {
        futoin_error(as, FUTOIN_DEFENSE_REJECTED, "queue full");
    }
}

static void ts_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    TestSync* s = (TestSync*)sync;
    ++s->unlocks;
    tr("unlock");
}

static const FutoInSyncAPI ts_api = { .lock = ts_lock, .unlock = ts_unlock };

static void critical(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    tr("cs:%d@%d", (int)futoin_arg_i32(args, 0, -1), (int)(now_ms() - g_base));
    if (data) {
        futoin_error(as, (const char*)data, NULL);
        return;
    }
    futoin_success1(as, futoin_val_i32(futoin_arg_i32(args, 0, 0) + 1));
}

static void eh_outer(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("outer-eh:%s:[%s]", code, futoin_error_info(as));
    (void)data;
    futoin_success(as);
}

static void sync_holder(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    TestSync* s = (TestSync*)data;
    futoin_add(as, give_int, NULL, (void*)(intptr_t)9);
    futoin_add_sync(as, &s->base, critical, eh_tag, s->mode == 3 ? (void*)"CsFail" : NULL);
}

static void test_add_sync(void** state)
{
    (void)state;
    for (int mode = 0; mode <= 3; ++mode) {
        tr_reset();
        /* mode 3 acquires at once (like 0) and the critical section fails */
        TestSync s = { { &ts_api }, mode, 0, 0, NULL };
        g_base = now_ms();
        FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
        futoin_add(root, sync_holder, eh_outer, &s);
        futoin_add(root, show_arg, NULL, "next");
        futoin_execute(root, no_unhandled, NULL);
        run();
        switch (mode) {
        case 0:
            assert_trace("lock|cs:9@0|unlock|next:1:10");
            break;
        case 1:
            assert_trace("lock|grant@10|cs:9@10|unlock|next:1:10");
            break;
        case 2:
            /* the critical section's eh does not see lock's error */
            assert_trace("lock|outer-eh:DefenseRejected:[queue full]|next:0:-1");
            break;
        case 3:
            assert_trace("lock|cs:9@0|eh:CsFail:CsFail|unlock|outer-eh:CsFail:[]|next:0:-1");
            break;
        }
        assert_int_equal(s.locks, 1);
        assert_int_equal(s.unlocks, mode == 2 ? 0 : 1);
        futoin_asyncsteps_free(root);
    }
}

static void test_add_sync_cancel(void** state)
{
    (void)state;
    /* cancelled while waiting for the lock: lock's cancel handler, no unlock */
    TestSync s = { { &ts_api }, 1, 0, 0, NULL };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    g_root = root;
    futoin_add_sync(root, &s.base, critical, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, cancel_g_root);
    run();
    assert_trace("lock|cancel|lock-cancel");
    assert_int_equal(s.unlocks, 0);

    /* cancelled inside the critical section: unlock once */
    tr_reset();
    TestSync s2 = { { &ts_api }, 0, 0, 0, NULL };
    futoin_add_sync(root, &s2.base, step_wait_tag, NULL, "cs");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, cancel_g_root);
    run();
    assert_trace("lock|cs|cancel|cancel:cs|unlock");
    assert_int_equal(s2.unlocks, 1);
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_add_sync),
        ENV_TEST(test_add_sync_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
