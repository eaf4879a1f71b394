/* SPDX-License-Identifier: MIT */
/*
 * Engine contract check for sync objects (docs/SEMANTICS.md "Sync"): unlock
 * must be called exactly once after a successful lock, also when the flow is
 * aborted before the critical section starts.
 *
 * The window this guards: lock() succeeds (at once, or through an external
 * success() of a waiting lock), which only queues the flow, and the flow is
 * aborted before its next turn (a sibling branch fails, the root is
 * cancelled, an outer timeout fires). The engine marks the lock held
 * (FR_LOCKED) the moment lock() succeeds (futoin__lock_acquired()), so the
 * abort still owes and calls unlock(); were it marked only on the next
 * turn, the sync object would believe the flow holds the lock forever.
 *
 * The library's own Mutex/Throttle/Limiter admit in a sub-step of lock(),
 * which never opens the window; this test uses the plain protocol the
 * SEMANTICS document allows, with a minimal counting sync object.
 */
#include "tsupport.h"

typedef struct CountingSync {
    FutoInSync base;
    int locks;
    int unlocks;
    int wait;                  /* lock() waits; resumed from a loop callback */
    int resumed;               /* that loop callback has run */
    FutoInAsyncSteps* waiting; /* the flow to resume */
} CountingSync;

static void cs_resume(void* data)
{
    CountingSync* s = data;
    s->resumed = 1;
    futoin_success(s->waiting); /* acquired: the flow is queued to go on */
}

static void cs_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    CountingSync* s = (CountingSync*)sync;
    ++s->locks;
    if (s->wait) {
        s->waiting = as;
        futoin_wait_external(as);
        futoin_loop_immediate(g_loop, s, cs_resume);
    }
    /* else: returning is "acquired at once" (implicit success) */
}

static void cs_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    (void)as;
    ++((CountingSync*)sync)->unlocks;
}

static const FutoInSyncAPI counting_api = { .lock = cs_lock, .unlock = cs_unlock };

static void branch_sync(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_sync(as, (FutoInSync*)data, step_tag, NULL, "cs");
}

/* Sibling branch: one loop iteration per turn; it fails as soon as the
 * lock has been acquired, which is before the locking flow's next turn. */
static void probe(FutoInAsyncSteps* as, void* data)
{
    CountingSync* s = data;
    if (s->wait ? s->resumed : s->locks == 1) {
        futoin_error(as, "Sibling", NULL);
    }
}

static void probe_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, probe, data, NULL);
}

static void recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    futoin_success(as);
}

static void run_case(int wait)
{
    CountingSync s = { { &counting_api }, 0, 0, wait, 0, NULL };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(root, recover, NULL);
    futoin_add(p, branch_sync, NULL, &s);
    futoin_add(p, probe_branch, NULL, &s);
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* "cs" never ran: the branch was aborted after acquiring, before entry. */
    assert_trace("eh:Sibling");
    assert_int_equal(s.locks, 1);
    assert_int_equal(s.unlocks, 1); /* FAILS: the engine calls no unlock() */
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* lock() returns at once (acquired), a sibling fails before the next turn. */
static void test_unlock_after_immediate_lock_then_abort(void** state)
{
    (void)state;
    run_case(0);
}

/* lock() waits; a loop callback acquires it with success(); a sibling fails
 * before the flow's next turn. */
static void test_unlock_after_external_lock_success_then_abort(void** state)
{
    (void)state;
    run_case(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_unlock_after_immediate_lock_then_abort),
        ENV_TEST(test_unlock_after_external_lock_success_then_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
