/* SPDX-License-Identifier: MIT */
/*
 * Waits belong to their owners: a success() or error() through the
 * interface that arrives after its step is gone (the step timed out and its
 * error handler recovered) must not end a wait that library code created
 * for a later step of the same flow: a lock wait of a Mutex, Throttle or
 * Limiter (plain and shared), an await, a work item, a relinquish. It is
 * reported as misuse and changes nothing. futoin_wait_owned() gives the
 * same protection to user code. All on the virtual clock.
 */
#include "tsupport.h"

#include <futoin/sync.h>
#include <futoin/threads.h>

#include <pthread.h>
#include <stdatomic.h>

/* ---- a flow that moves on from a step whose completion is still owed ---- */

/* The stale handle: what a step's I/O callback would have kept. */
static FutoInAsyncSteps* g_stale;

static void owed_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_stale = as;
    futoin_set_timeout(as, 10);
}

static void owed_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("%s:%s@%llu", (const char*)data, code, (unsigned long long)now_ms());
    futoin_success(as);
}

static void add_owed(FutoInAsyncSteps* root, const char* name)
{
    futoin_add(root, owed_step, owed_recover, (void*)name);
}

/* ---- sync objects ---- */

enum SyncKind { K_MUTEX, K_THROTTLE, K_LIMITER };

typedef struct LateCase {
    const char* name;
    int kind;
    int shared;
    int error;         /* the late call is error(), not success() */
    uint64_t b_enters; /* when the late flow may enter: A left, or the rate */
} LateCase;

static FutoInSync* make_sync(const LateCase* c)
{
    FutoInLimiterOptions lo = FUTOIN_LIMITER_OPTIONS_INIT;
    lo.max_queue = 4;
    lo.burst = 4;
    lo.period_ms = 100;
    switch (c->kind) {
    case K_MUTEX:
        return c->shared ? futoin_mutex_new_shared(1, FUTOIN_SYNC_UNLIMITED)
                         : futoin_mutex_new(g_loop, 1, FUTOIN_SYNC_UNLIMITED);
    case K_THROTTLE:
        return c->shared ? futoin_throttle_new_shared(1, 100, FUTOIN_SYNC_UNLIMITED)
                         : futoin_throttle_new(g_loop, 1, 100, FUTOIN_SYNC_UNLIMITED);
    default:
        return c->shared ? futoin_limiter_new_shared(&lo) : futoin_limiter_new(g_loop, &lo);
    }
}

static int g_inside;
static int g_max_inside;
static FutoInHandle g_hold_timer;
static FutoInAsyncSteps* g_holder;

static void hold_done(void* data)
{
    (void)data;
    memset(&g_hold_timer, 0, sizeof(g_hold_timer));
    tr("A<%llu", (unsigned long long)now_ms());
    --g_inside;
    futoin_success(g_holder);
}

/* A's critical section: inside for 50 ms of the virtual clock. */
static void cs_hold(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    tr("A>%llu", (unsigned long long)now_ms());
    if (++g_inside > g_max_inside) {
        g_max_inside = g_inside;
    }
    g_holder = as;
    g_hold_timer = futoin_loop_deferred(g_loop, 50, NULL, hold_done);
    futoin_wait_external(as);
}

static void cs_pass(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    if (++g_inside > g_max_inside) {
        g_max_inside = g_inside;
    }
    tr("%s>%llu", (const char*)data, (unsigned long long)now_ms());
    --g_inside;
}

static FutoInSync* g_sync;
static const LateCase* g_case;
static FutoInSyncStats g_stats_after_late;

/* The completion owed to B's first step arrives while B waits in lock(). */
static void late_completion(void* data)
{
    (void)data;
    tr("late@%llu", (unsigned long long)now_ms());
    if (g_case->error) {
        futoin_error(g_stale, "Late", "meant for the step that timed out");
    } else {
        futoin_success1(g_stale, futoin_val_i32(7));
    }
    assert_int_equal(futoin_sync_stats(g_sync, &g_stats_after_late), FUTOIN_SYNC_OK);
}

static void b_sync_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add_sync(as, g_sync, cs_pass, NULL, (void*)"B");
}

static void late_case_run(const LateCase* c)
{
    g_inside = g_max_inside = 0;
    g_case = c;
    g_sync = make_sync(c);
    assert_non_null(g_sync);

    FutoInAsyncSteps* a = futoin_asyncsteps_new(g_loop);
    futoin_add_sync(a, g_sync, cs_hold, NULL, NULL);
    futoin_execute(a, no_unhandled, NULL);

    FutoInAsyncSteps* b = futoin_asyncsteps_new(g_loop);
    add_owed(b, "B");
    futoin_add(b, b_sync_step, NULL, NULL);
    futoin_add(b, step_tag, NULL, (void*)"B-done");
    futoin_execute(b, no_unhandled, NULL);

    FutoInHandle late = futoin_loop_deferred(g_loop, 20, NULL, late_completion);
    assert_true(futoin_loop_is_valid(g_loop, &late));
    run();

    char want[128];
    if (c->shared && c->kind != K_MUTEX) {
        /* A shared object's rate window runs on the monotonic clock, not
         * on this loop's virtual one: B enters later, whenever that is. */
        const char* prefix = "A>0|B:Timeout@10|late@20|A<50|B>";
        assert_memory_equal(g_trace, prefix, strlen(prefix));
        assert_non_null(strstr(g_trace, "|B-done"));
    } else {
        snprintf(want, sizeof(want), "A>0|B:Timeout@10|late@20|A<50|B>%llu|B-done",
                (unsigned long long)c->b_enters);
        assert_trace(want);
    }
    /* B still queued after the late call, A alone inside. */
    assert_int_equal(g_stats_after_late.queued, 1);
    assert_int_equal(g_max_inside, 1);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, c->error ? "error(Late)" : "success()"));
    assert_non_null(strstr(g_misuse_msg, "lock()"));

    FutoInSyncStats st;
    assert_int_equal(futoin_sync_stats(g_sync, &st), FUTOIN_SYNC_OK);
    assert_int_equal(st.active, 0);
    assert_int_equal(st.queued, 0);
    futoin_asyncsteps_free(a);
    futoin_asyncsteps_free(b);
    assert_int_equal(futoin_sync_free(g_sync), FUTOIN_SYNC_OK);
}

static const LateCase LATE_CASES[] = {
    { "mutex success", K_MUTEX, 0, 0, 50 },
    { "mutex error", K_MUTEX, 0, 1, 50 },
    { "shared mutex success", K_MUTEX, 1, 0, 50 },
    { "shared mutex error", K_MUTEX, 1, 1, 50 },
    /* A Throttle of 1 per 100 ms: B waits for the next window. */
    { "throttle success", K_THROTTLE, 0, 0, 100 },
    { "throttle error", K_THROTTLE, 0, 1, 100 },
    { "shared throttle success", K_THROTTLE, 1, 0, 100 },
    { "shared throttle error", K_THROTTLE, 1, 1, 100 },
    /* A Limiter(1 inside, 1 per 100 ms): the slot at 50, the rate at 100. */
    { "limiter success", K_LIMITER, 0, 0, 100 },
    { "limiter error", K_LIMITER, 0, 1, 100 },
    { "shared limiter success", K_LIMITER, 1, 0, 100 },
    { "shared limiter error", K_LIMITER, 1, 1, 100 },
};

#define LATE_TEST(fn, i)                                                                           \
    static void fn(void** state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        late_case_run(&LATE_CASES[i]);                                                             \
    }
LATE_TEST(test_late_success_mutex, 0)
LATE_TEST(test_late_error_mutex, 1)
LATE_TEST(test_late_success_shared_mutex, 2)
LATE_TEST(test_late_error_shared_mutex, 3)
LATE_TEST(test_late_success_throttle, 4)
LATE_TEST(test_late_error_throttle, 5)
LATE_TEST(test_late_success_shared_throttle, 6)
LATE_TEST(test_late_error_shared_throttle, 7)
LATE_TEST(test_late_success_limiter, 8)
LATE_TEST(test_late_error_limiter, 9)
LATE_TEST(test_late_success_shared_limiter, 10)
LATE_TEST(test_late_error_shared_limiter, 11)

/* A root whose first step is owed a completion and whose second step
 * parks in wait; got_value records what ended that wait. */
static void got_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);

static FutoInAsyncSteps* owed_then(FutoInAsyncSteps_execute_callback wait)
{
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    add_owed(r, "R");
    futoin_add(r, wait, NULL, NULL);
    futoin_add(r, got_value, NULL, NULL);
    futoin_execute(r, no_unhandled, NULL);
    return r;
}

/* The one misuse report, naming what. */
static void assert_one_misuse(const char* what)
{
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, what));
}

/* ---- await ---- */

static FutoInCompletion* g_completion;

static void await_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_await(as, g_completion, NULL, NULL);
}

static void got_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data;
    tr("got:%lld@%llu", (long long)futoin_arg_int(args, 0, -1), (unsigned long long)now_ms());
}

static void late_success_plain(void* data)
{
    (void)data;
    tr("late@%llu", (unsigned long long)now_ms());
    futoin_success1(g_stale, futoin_val_i32(7));
}

static void resolve_completion(void* data)
{
    (void)data;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.args[0] = futoin_val_i32(42);
    assert_int_equal(futoin_completion_resolve(g_completion, &args), 0);
}

static void test_late_success_on_await(void** state)
{
    (void)state;
    g_completion = futoin_completion_new();
    assert_non_null(g_completion);
    FutoInAsyncSteps* r = owed_then(await_step);
    futoin_loop_deferred(g_loop, 20, NULL, late_success_plain);
    futoin_loop_deferred(g_loop, 30, NULL, resolve_completion);
    run();
    assert_trace("R:Timeout@10|late@20|got:42@30");
    assert_one_misuse("await()");
    futoin_completion_free(g_completion);
    futoin_asyncsteps_free(r);
}

/* ---- work on a worker thread ---- */

static atomic_int g_work_release;

static void work_fn(void* work_data, FutoInWorkResult* out)
{
    (void)work_data;
    while (!atomic_load(&g_work_release)) {
        sched_yield();
    }
    out->args.args[0] = futoin_val_i32(5);
}

static void work_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add_work(as, work_fn, NULL, NULL);
}

static void late_then_release(void* data)
{
    (void)data;
    tr("late@%llu", (unsigned long long)now_ms());
    futoin_error(g_stale, "Late", NULL);
    atomic_store(&g_work_release, 1);
}

static void test_late_error_on_work(void** state)
{
    (void)state;
    atomic_store(&g_work_release, 0);
    FutoInAsyncSteps* r = owed_then(work_step);
    futoin_loop_deferred(g_loop, 20, NULL, late_then_release);
    run();
    assert_trace("R:Timeout@10|late@20|got:5@20");
    assert_one_misuse("futoin_add_work()");
    futoin_asyncsteps_free(r);
    futoin_work_pool_shutdown();
}

/* ---- relinquish: another flow's step calls success() on a yielding flow ---- */

static FutoInAsyncSteps* g_yielder;

static void yield_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_yielder = as;
    futoin_relinquish(as);
}

static void poke_yielder(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    tr("poke");
    futoin_success(g_yielder);
}

static void test_success_on_relinquish(void** state)
{
    (void)state;
    FutoInAsyncSteps* y = futoin_asyncsteps_new(g_loop);
    futoin_add(y, yield_step, NULL, NULL);
    futoin_add(y, step_tag, NULL, (void*)"Y-after");
    futoin_execute(y, no_unhandled, NULL);
    /* Flows take turns step by step: P's second step runs while Y's
     * relinquish step is parked. */
    FutoInAsyncSteps* p = futoin_asyncsteps_new(g_loop);
    futoin_add(p, step_tag, NULL, (void*)"P");
    futoin_add(p, poke_yielder, NULL, NULL);
    futoin_execute(p, no_unhandled, NULL);
    run();
    assert_trace("P|poke|Y-after");
    assert_one_misuse("relinquish()");
    futoin_asyncsteps_free(y);
    futoin_asyncsteps_free(p);
}

/* ---- futoin_wait_owned() in user code ---- */

typedef struct Op {
    FutoInAsyncSteps* as;
    int cancelled;
} Op;

static void op_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ((Op*)data)->cancelled++;
    tr("op-cancel");
}

static Op g_op;

static void owned_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_op.as = as;
    futoin_wait_owned(as, op_cancel, &g_op);
}

static void owned_step_timed(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    owned_step(as, data, args);
    futoin_set_timeout(as, 10);
}

static Counted g_counted;

static void interface_then_wrong_key_then_owner(void* data)
{
    (void)data;
    static int other_key;
    futoin_success(g_op.as); /* through the interface: refused */
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "success()"));
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.args[0] = counted_val(&g_counted);
    assert_int_equal(futoin_owned_success(g_op.as, &other_key, &args), -1);
    assert_int_equal(g_counted.cleanups, 1); /* the refused value is released */
    memset(&args, 0, sizeof(args));
    args.args[0] = futoin_val_i32(9);
    assert_int_equal(futoin_owned_success(g_op.as, &g_op, &args), 0);
    /* Once ended, the key no longer matches anything. */
    assert_int_equal(futoin_owned_error(g_op.as, &g_op, "Again", NULL), -1);
    assert_int_equal(g_misuse, 1);
}

static void test_wait_owned_user_step(void** state)
{
    (void)state;
    memset(&g_op, 0, sizeof(g_op));
    memset(&g_counted, 0, sizeof(g_counted));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, owned_step, NULL, NULL);
    futoin_add(r, got_value, NULL, NULL);
    futoin_execute(r, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, interface_then_wrong_key_then_owner);
    run();
    assert_trace("got:9@5");
    assert_int_equal(g_op.cancelled, 0);
    futoin_asyncsteps_free(r);
}

static void owner_after_timeout(void* data)
{
    (void)data;
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.args[0] = counted_val(&g_counted);
    /* The timeout came first: the owner's completion is refused quietly. */
    assert_int_equal(futoin_owned_success(g_op.as, &g_op, &args), -1);
    assert_int_equal(g_counted.cleanups, 1);
    tr("owner-late@%llu", (unsigned long long)now_ms());
}

static void test_wait_owned_loses_to_timeout(void** state)
{
    (void)state;
    memset(&g_op, 0, sizeof(g_op));
    memset(&g_counted, 0, sizeof(g_counted));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, owned_step_timed, owed_recover, (void*)"R");
    futoin_execute(r, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 20, NULL, owner_after_timeout);
    run();
    assert_trace("op-cancel|R:Timeout@10|owner-late@20");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(r);
}

static void owned_error_cb(void* data)
{
    (void)data;
    assert_int_equal(futoin_owned_error(g_op.as, &g_op, "Mine", "from the owner"), 0);
}

static void test_wait_owned_error(void** state)
{
    (void)state;
    memset(&g_op, 0, sizeof(g_op));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, owned_step, owed_recover, (void*)"R");
    futoin_execute(r, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 3, NULL, owned_error_cb);
    run();
    assert_trace("R:Mine@3");
    assert_int_equal(g_op.cancelled, 0);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(r);
}

/* Misuse: outside a step, and a NULL key. */
static void owned_null_key(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_wait_owned(as, NULL, NULL);
}

static void test_wait_owned_misuse(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_wait_owned(r, op_cancel, &g_op); /* the root runs no step */
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_wait_owned() called outside"));
    Unhandled u = { 0 };
    futoin_add(r, owned_null_key, NULL, NULL);
    futoin_execute(r, on_unhandled, &u);
    run();
    /* Inside a step, misuse fails the step with InternalError. */
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, FUTOIN_INTERNAL_ERROR);
    assert_non_null(strstr(u.info, "NULL key"));
    assert_int_equal(futoin_owned_success(r, NULL, NULL), -1);
    futoin_asyncsteps_free(r);
}

/* ---- across threads: the owner from a thread; the interface refused ---- */

static void* owner_thread(void* arg)
{
    (void)arg;
    futoin_success(g_op.as); /* through the interface: refused on the loop thread */
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.args[0] = futoin_val_i32(11);
    assert_int_equal(futoin_owned_success(g_op.as, &g_op, &args), 0);
    return NULL;
}

static void start_owner_thread(void* data)
{
    pthread_t* t = data;
    assert_int_equal(pthread_create(t, NULL, owner_thread, NULL), 0);
}

static void got_value_release(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    got_value(as, data, args);
    futoin_loop_release(g_loop);
}

static void test_wait_owned_cross_thread(void** state)
{
    (void)state;
    memset(&g_op, 0, sizeof(g_op));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, owned_step, NULL, NULL);
    futoin_add(r, got_value_release, NULL, NULL);
    futoin_execute(r, no_unhandled, NULL);
    pthread_t t;
    futoin_loop_hold(g_loop); /* the loop waits for the thread's messages */
    futoin_loop_deferred(g_loop, 1, &t, start_owner_thread);
    run();
    pthread_join(t, NULL);
    assert_trace("got:11@1");
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "refused"));
    futoin_asyncsteps_free(r);
}

/* ---- the values of a refused success() ---- */

/* A refused success()'s values are the caller's, dropped by the call;
 * when the first one's cleanup frees the root, the root must outlive the
 * second cleanup too (destroyed after the last, not under them), as for
 * every other value the engine drops. A destroyed root goes back to the
 * pool, so a root made in the second cleanup would be the same object. */
static FutoInAsyncSteps* g_victim;
static int g_cleanups;
static int g_reused_under_cleanup;

static void cleanup_frees_root(FutoInBinaryValue* v)
{
    (void)v;
    ++g_cleanups;
    futoin_asyncsteps_free(g_victim);
}

static void cleanup_makes_root(FutoInBinaryValue* v)
{
    (void)v;
    ++g_cleanups;
    FutoInAsyncSteps* fresh = futoin_asyncsteps_new(g_loop);
    g_reused_under_cleanup = fresh == g_victim;
    futoin_asyncsteps_free(fresh);
}

static const FutoInType frees_root_type = { FTN_TYPE_CUSTOM_OBJECT, cleanup_frees_root };
static const FutoInType makes_root_type = { FTN_TYPE_CUSTOM_OBJECT, cleanup_makes_root };

static void refused_success_with_values(void* data)
{
    (void)data;
    /* The root has finished: the success() is refused. */
    futoin_success2(g_victim, futoin_val_custom(&frees_root_type, NULL),
            futoin_val_custom(&makes_root_type, NULL));
}

static void test_refused_values_cleanup_frees_root(void** state)
{
    (void)state;
    g_cleanups = 0;
    g_reused_under_cleanup = 0;
    g_victim = futoin_asyncsteps_new(g_loop);
    futoin_add(g_victim, step_tag, NULL, (void*)"ran");
    futoin_execute(g_victim, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 5, NULL, refused_success_with_values);
    run();
    assert_trace("ran");
    assert_one_misuse("success()");
    assert_int_equal(g_cleanups, 2);
    assert_int_equal(g_reused_under_cleanup, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_late_success_mutex),
        ENV_TEST(test_late_error_mutex),
        ENV_TEST(test_late_success_shared_mutex),
        ENV_TEST(test_late_error_shared_mutex),
        ENV_TEST(test_late_success_throttle),
        ENV_TEST(test_late_error_throttle),
        ENV_TEST(test_late_success_shared_throttle),
        ENV_TEST(test_late_error_shared_throttle),
        ENV_TEST(test_late_success_limiter),
        ENV_TEST(test_late_error_limiter),
        ENV_TEST(test_late_success_shared_limiter),
        ENV_TEST(test_late_error_shared_limiter),
        ENV_TEST(test_late_success_on_await),
        ENV_TEST(test_late_error_on_work),
        ENV_TEST(test_success_on_relinquish),
        ENV_TEST(test_wait_owned_user_step),
        ENV_TEST(test_wait_owned_loses_to_timeout),
        ENV_TEST(test_wait_owned_error),
        ENV_TEST(test_wait_owned_misuse),
        ENV_TEST(test_wait_owned_cross_thread),
        ENV_TEST(test_refused_values_cleanup_frees_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
