/* SPDX-License-Identifier: MIT */
/*
 * futoin_uv_signal_wait(): a step that waits for one of a set of signals.
 *
 * raise() while the step waits gives the signal's number as its result;
 * two signals in the set; a Timeout; a cancel; several steps waiting for
 * the same signal; a wait started again from the step that got the result,
 * and a root freed from there; refused arguments. After each test every
 * watcher is gone: libuv has put back the default disposition of the
 * signals (it does so when the last watcher of a signal stops), and
 * futoin_uv_free() logs no handle left open (the teardown checks it).
 *
 * The signals raised here (SIGUSR1, SIGUSR2) would end the process if no
 * watcher caught them: each test raises only while its step waits.
 */
#include "uv_tsupport.h"

/* libuv's handler is gone: no watcher of sig is left in the process. */
static int disposition_default(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigaction(sig, NULL, &sa);
    return sa.sa_handler == SIG_DFL;
}

/* ---- steps ---- */

typedef struct Wait {
    int set[4];
    size_t count;
    int got;     /* the signal received, 0 before */
    int argtype; /* the type of the result */
    int after;   /* steps run after the wait */
    int failed;
    char code[32];
    char info[128];
    int num;
} Wait;

static void st_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Wait* w = data;
    futoin_uv_signal_wait(as, w->set, w->count);
}

static void st_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Wait* w = data;
    w->argtype = futoin_arg_type(args, 0);
    w->got = futoin_arg_i32(args, 0, -1);
    ++w->after;
}

static void eh_wait(FutoInAsyncSteps* as, void* data, const char* code)
{
    Wait* w = data;
    w->failed = 1;
    snprintf(w->code, sizeof(w->code), "%s", code);
    snprintf(w->info, sizeof(w->info), "%s", futoin_error_info(as));
    w->num = futoin_uv_errno(as);
    futoin_success(as);
}

/* Raises *data after a short sleep (a branch beside the waiting one). */
static void st_raise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    raise(*(int*)data);
}

static void st_sleep_then_raise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, 10);
    futoin_add(as, st_raise, NULL, data);
}

static void add_wait(FutoInAsyncSteps* as, Wait* w)
{
    futoin_add(as, st_wait, eh_wait, w);
    futoin_add(as, st_got, NULL, w);
}

typedef struct WaitAndRaise {
    Wait* w;
    int sig;
} WaitAndRaise;

static void st_wait_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    add_wait(as, data);
}

/* A parallel: one branch waits, the other raises once it can. */
static void st_wait_and_raise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    WaitAndRaise* wr = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, st_wait_branch, NULL, wr->w);
    futoin_add(p, st_sleep_then_raise, NULL, &wr->sig);
}

/* ---- tests ---- */

static void test_signal_raised(void** state)
{
    (void)state;
    assert_true(disposition_default(SIGUSR1));
    Wait w = { { SIGUSR1 }, 1, 0, 0, 0, 0, "", "", 0 };
    WaitAndRaise wr = { &w, SIGUSR1 };
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_wait_and_raise, NULL, &wr);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(w.failed, 0);
    assert_int_equal(w.got, SIGUSR1);
    assert_int_equal(w.argtype, FTN_TYPE_INT32);
    assert_int_equal(w.after, 1);
    assert_true(disposition_default(SIGUSR1));
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

static void test_signal_two_in_set(void** state)
{
    (void)state;
    Wait w = { { SIGUSR1, SIGUSR2 }, 2, 0, 0, 0, 0, "", "", 0 };
    WaitAndRaise wr = { &w, SIGUSR2 };
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_wait_and_raise, NULL, &wr);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(w.got, SIGUSR2);
    assert_int_equal(w.after, 1);
    /* Both watchers stopped, not only the one that fired. */
    assert_true(disposition_default(SIGUSR1));
    assert_true(disposition_default(SIGUSR2));
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

static void st_wait_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Wait* w = data;
    futoin_set_timeout(as, 30);
    futoin_uv_signal_wait(as, w->set, w->count);
}

static void test_signal_timeout(void** state)
{
    (void)state;
    Wait w = { { SIGUSR1, SIGTERM }, 2, 0, 0, 0, 0, "", "", 0 };
    FutoInAsyncSteps* root = uv_new_root();
    futoin_add(root, st_wait_timeout, eh_wait, &w);
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    assert_int_equal(w.failed, 1);
    assert_string_equal(w.code, FUTOIN_TIMEOUT);
    assert_string_equal(w.info, "signal SIGUSR1 SIGTERM");
    assert_int_equal(w.num, 0); /* the engine's Timeout, not the backend's */
    assert_int_equal(w.got, 0);
    assert_true(disposition_default(SIGUSR1));
    assert_true(disposition_default(SIGTERM));
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

/* Cancels the root *data (another root's step). */
static void st_cancel_other(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    futoin_cancel(*(FutoInAsyncSteps**)data);
}

static void st_sleep_then_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_sleep(as, 10);
    futoin_add(as, st_cancel_other, NULL, data);
}

static void unhandled_count(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)code;
    ++*(int*)data;
}

static void test_signal_cancel(void** state)
{
    (void)state;
    Wait w = { { SIGUSR1 }, 1, 0, 0, 0, 0, "", "", 0 };
    FutoInAsyncSteps* waiting = uv_new_root();
    add_wait(waiting, &w);
    int unhandled = 0;
    futoin_execute(waiting, unhandled_count, &unhandled);
    FutoInAsyncSteps* canceller = uv_new_root();
    futoin_add(canceller, st_sleep_then_cancel, NULL, &waiting);
    Outcome o;
    run_root(canceller, &o, 5000);
    assert_string_equal(o.code, "");
    /* The watcher was stopped by the cancel: nothing is installed for
     * SIGUSR1 any more, and nothing reaches the step later. */
    assert_true(disposition_default(SIGUSR1));
    run_for(50);
    assert_int_equal(w.got, 0);
    assert_int_equal(w.after, 0);
    assert_int_equal(w.failed, 0);
    assert_int_equal(unhandled, 0);
    futoin_asyncsteps_free(waiting);
    futoin_asyncsteps_free(canceller);
    assert_int_equal(g_misuse, 0);
}

/* Freeing a waiting root stops its watchers the same way. */
static void test_signal_free_waiting(void** state)
{
    (void)state;
    Wait w = { { SIGUSR2 }, 1, 0, 0, 0, 0, "", "", 0 };
    FutoInAsyncSteps* waiting = uv_new_root();
    add_wait(waiting, &w);
    futoin_execute(waiting, NULL, NULL);
    run_for(20);
    assert_false(disposition_default(SIGUSR2)); /* watched */
    futoin_asyncsteps_free(waiting);
    assert_true(disposition_default(SIGUSR2));
    run_for(20);
    assert_int_equal(w.after, 0);
    assert_int_equal(g_misuse, 0);
}

/* Two roots wait for SIGUSR1, a third raises it once: both get it. */
static void test_signal_several_waiters(void** state)
{
    (void)state;
    Wait w1 = { { SIGUSR1 }, 1, 0, 0, 0, 0, "", "", 0 };
    Wait w2 = { { SIGUSR2, SIGUSR1 }, 2, 0, 0, 0, 0, "", "", 0 };
    FutoInAsyncSteps* r1 = uv_new_root();
    FutoInAsyncSteps* r2 = uv_new_root();
    add_wait(r1, &w1);
    add_wait(r2, &w2);
    Outcome o1;
    Outcome o2;
    memset(&o1, 0, sizeof(o1));
    memset(&o2, 0, sizeof(o2));
    futoin_add(r1, outcome_ok, NULL, &o1);
    futoin_add(r2, outcome_ok, NULL, &o2);
    futoin_execute(r1, outcome_error, &o1);
    futoin_execute(r2, outcome_error, &o2);
    int sig = SIGUSR1;
    FutoInAsyncSteps* raiser = uv_new_root();
    futoin_add(raiser, st_sleep_then_raise, NULL, &sig);
    Outcome o3;
    run_root(raiser, &o3, 5000);
    assert_true(run_until(&o1.done, scaled_ms(5000)));
    assert_true(run_until(&o2.done, scaled_ms(5000)));
    assert_string_equal(o1.code, "");
    assert_string_equal(o2.code, "");
    assert_int_equal(w1.got, SIGUSR1);
    assert_int_equal(w2.got, SIGUSR1);
    assert_true(disposition_default(SIGUSR1));
    assert_true(disposition_default(SIGUSR2));
    futoin_asyncsteps_free(r1);
    futoin_asyncsteps_free(r2);
    futoin_asyncsteps_free(raiser);
    assert_int_equal(g_misuse, 0);
}

/* Re-entry: the step that receives the signal waits again, and after the
 * second signal frees its own root. A watcher of the test's own keeps
 * SIGUSR1 caught in between (the default action would end the test). */
typedef struct Again {
    int set[1];
    int got[2];
    int n;
    FutoInAsyncSteps* root;
    int freed;
} Again;

static void again_wait(FutoInAsyncSteps* as, Again* a);

static void again_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Again* a = data;
    a->got[a->n++] = futoin_arg_i32(args, 0, -1);
    if (a->n < 2) {
        again_wait(as, a);
        return;
    }
    futoin_asyncsteps_free(a->root);
    a->freed = 1;
}

static void again_wait(FutoInAsyncSteps* as, Again* a)
{
    futoin_uv_signal_wait(as, a->set, 1);
    futoin_add(as, again_got, NULL, a);
}

static void again_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    again_wait(as, data);
}

static void on_guard_signal(uv_signal_t* h, int signum)
{
    (void)h;
    (void)signum;
}

static void test_signal_again_and_free(void** state)
{
    (void)state;
    uv_signal_t guard;
    uv_signal_init(futoin_uv_uv_loop(g_uv), &guard);
    uv_signal_start(&guard, on_guard_signal, SIGUSR1);
    uv_unref((uv_handle_t*)&guard);

    Again a = { { SIGUSR1 }, { 0, 0 }, 0, NULL, 0 };
    a.root = uv_new_root();
    futoin_add(a.root, again_start, NULL, &a);
    futoin_execute(a.root, NULL, NULL);
    for (int i = 0; i < 2; ++i) {
        run_for(20);
        raise(SIGUSR1);
        int want = i + 1;
        int reached = 0;
        for (unsigned t = 0; t < 100 && !reached; ++t) {
            run_for(10);
            reached = a.n >= want;
        }
        assert_int_equal(a.n, want);
    }
    assert_int_equal(a.got[0], SIGUSR1);
    assert_int_equal(a.got[1], SIGUSR1);
    assert_true(a.freed);

    uv_close((uv_handle_t*)&guard, NULL);
    run_for(10);
    assert_true(disposition_default(SIGUSR1));
    assert_int_equal(g_misuse, 0);
}

/* ---- refused arguments ---- */

typedef struct Bad {
    const int* set;
    size_t count;
    const char* expect;
    char code[32];
    char info[128];
    int num;
} Bad;

static void st_bad(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Bad* b = data;
    futoin_uv_signal_wait(as, b->set, b->count);
}

static void eh_bad(FutoInAsyncSteps* as, void* data, const char* code)
{
    Bad* b = data;
    snprintf(b->code, sizeof(b->code), "%s", code);
    snprintf(b->info, sizeof(b->info), "%s", futoin_error_info(as));
    b->num = futoin_uv_errno(as);
    futoin_success(as);
}

static void test_signal_refused(void** state)
{
    (void)state;
    static const int zero[1] = { 0 };
    static const int high[2] = { SIGUSR1, 65 };
    static const int kill_set[1] = { SIGKILL };
    static const int usr1[1] = { SIGUSR1 };
    static const int many[FUTOIN_UV_SIGNALS_MAX + 1] = { SIGUSR1 };
    Bad bad[] = {
        { NULL, 1, "EINVAL: futoin_uv_signal_wait: signals is NULL", "", "", 0 },
        { usr1, 0, "EINVAL: futoin_uv_signal_wait: count 0 out of range (1..32)", "", "", 0 },
        { many, FUTOIN_UV_SIGNALS_MAX + 1,
                "EINVAL: futoin_uv_signal_wait: count 33 out of range (1..32)", "", "", 0 },
        { zero, 1, "EINVAL: futoin_uv_signal_wait: signal 0 out of range (1..64)", "", "", 0 },
        { high, 2, "EINVAL: futoin_uv_signal_wait: signal 65 out of range (1..64)", "", "", 0 },
        /* Refused by libuv when the step starts. */
        { kill_set, 1, "EINVAL: signal SIGKILL", "", "", 0 },
    };
    FutoInAsyncSteps* root = uv_new_root();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        futoin_add(root, st_bad, eh_bad, &bad[i]);
    }
    Outcome o;
    run_root(root, &o, 5000);
    assert_string_equal(o.code, "");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        assert_string_equal(bad[i].code, FUTOIN_INTERNAL_ERROR);
        assert_string_equal(bad[i].info, bad[i].expect);
        assert_int_equal(bad[i].num, UV_EINVAL);
    }
    futoin_asyncsteps_free(root);
    assert_true(disposition_default(SIGUSR1));
    assert_int_equal(g_misuse, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UV_STRICT_TEST(test_signal_raised),
        UV_STRICT_TEST(test_signal_two_in_set),
        UV_STRICT_TEST(test_signal_timeout),
        UV_STRICT_TEST(test_signal_cancel),
        UV_STRICT_TEST(test_signal_free_waiting),
        UV_STRICT_TEST(test_signal_several_waiters),
        UV_STRICT_TEST(test_signal_again_and_free),
        UV_STRICT_TEST(test_signal_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
