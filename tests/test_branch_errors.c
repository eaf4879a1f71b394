/* SPDX-License-Identifier: MIT */
/* Error information per flow (docs/SEMANTICS.md "Errors"): an error handler
 * of a parallel branch reads the code and error_info of the error it
 * handles (its code argument, futoin_error_info(), the "error_info" state
 * variable, futoin_flow_info()), whatever the other branches raise
 * meanwhile; a branch's later steps read its own last error; an error that
 * escapes a branch brings its code and info to the flow that holds the
 * parallel step, its handlers and the root's unhandled-error callback. */
#include "tsupport.h"

#include <futoin/introspect.h>

/* ---- helpers ---- */

/* Every way a callback can read the error_info of its flow, checked to
 * agree: returns the info, or "<readers disagree>". */
static const char* info_of(FutoInAsyncSteps* as)
{
    const char* a = futoin_error_info(as);
    const char* b = (const char*)as->api->stateVariable(as, NULL, "error_info", NULL, NULL);
    FutoInFlowInfo fi;
    if (futoin_flow_info(as, &fi, sizeof(fi)) != 0 || !b || strcmp(a, b) != 0
            || strcmp(a, fi.error_info) != 0) {
        return "<readers disagree>";
    }
    return a;
}

static void wake(void* data)
{
    futoin_success((FutoInAsyncSteps*)data);
}

/* Waits data milliseconds of the virtual clock, then succeeds. */
static void step_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_wait_external(as);
    futoin_loop_deferred(g_loop, (uint32_t)(uintptr_t)data, as, wake);
}

#define SLEEP(ms) ((void*)(uintptr_t)(ms))

/* Records the flow's info: "<tag>:[<info>]@<ms>". */
static void step_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s:[%s]@%d", (const char*)data, info_of(as), (int)now_ms());
}

/* What a parked step and its handlers are told: the slot of g_waiting
 * the step parks in (-1: none) and the name its handlers record. */
typedef struct Tag {
    int slot;
    const char* name;
} Tag;

/* A branch step that waits for an error from outside. */
static FutoInAsyncSteps* g_waiting[4];

static void step_park(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    g_waiting[((const Tag*)data)->slot] = as;
    futoin_wait_external(as);
}

/* Raises, from outside, the errors of g_raise on the parked branches, all
 * in one loop callback: no handler runs before the last one is raised. */
typedef struct Raise {
    int slot;
    const char* code;
    const char* info;
} Raise;

static const Raise* g_raise;

static void raise_all(void* data)
{
    (void)data;
    for (const Raise* r = g_raise; r->code; ++r) {
        futoin_error(g_waiting[r->slot], r->code, r->info);
    }
}

/* An error handler (data: a Tag) that records what it reads and
 * recovers. */
static void eh_read_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("%s:%s:[%s]@%d", ((const Tag*)data)->name, code, info_of(as), (int)now_ms());
    futoin_success(as);
}

/* The same, without recovering. */
static void eh_read(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("%s:%s:[%s]@%d", ((const Tag*)data)->name, code, info_of(as), (int)now_ms());
}

static const Tag T_A = { 0, "A" };
static const Tag T_B = { 1, "B" };
static const Tag T_C0 = { 0, "C0" };
static const Tag T_C1 = { 1, "C1" };
static const Tag T_B1 = { 2, "B1" };
static const Tag T_ROOT = { -1, "root" };
#define TAG(t) ((void*)(uintptr_t) & (t))

/* A root step that fails with "R" / "root info" under a handler that
 * recovers: the root's own last error, before its parallel. */
static void step_root_error(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "R", "root info");
}

static void eh_quiet_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data, (void)code;
    futoin_success(as);
}

/* ---- 2, 10 and 100 branches fail at once, each reads its own ---- */

enum { FLEET_MAX = 100 };

typedef struct Fleet {
    int n;
    int last_fails; /* the last branch's handler does not recover */
    FutoInAsyncSteps* as[FLEET_MAX];
    char code[FLEET_MAX][16];
    char info[FLEET_MAX][96];
    int eh_calls[FLEET_MAX];
    int eh_ok[FLEET_MAX];
    int after_ok[FLEET_MAX];
    int cancels;
    char par_code[16];
    char par_info[96];
    int par_eh_calls;
    char root_after[96];
    int root_after_calls;
} Fleet;

static Fleet g_fleet;

static int fleet_index(FutoInAsyncSteps* as)
{
    for (int i = 0; i < g_fleet.n; ++i) {
        if (g_fleet.as[i] == as) {
            return i;
        }
    }
    fail_msg("not a branch of the fleet");
    return -1;
}

static void fleet_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as, (void)data;
    ++g_fleet.cancels;
}

static void fleet_park(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int i = (int)(uintptr_t)data;
    g_fleet.as[i] = as;
    futoin_set_cancel(as, fleet_cancel, NULL); /* not called: the step fails by itself */
}

static void fleet_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    int i = fleet_index(as);
    ++g_fleet.eh_calls[i];
    FutoInFlowInfo fi;
    assert_int_equal(futoin_flow_info(as, &fi, sizeof(fi)), 0);
    g_fleet.eh_ok[i] = strcmp(code, g_fleet.code[i]) == 0
            && strcmp(fi.error_code, g_fleet.code[i]) == 0
            && strcmp(info_of(as), g_fleet.info[i]) == 0;
    if (!(g_fleet.last_fails && i == g_fleet.n - 1)) {
        futoin_success(as);
    }
}

static void fleet_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    int i = fleet_index(as);
    g_fleet.after_ok[i] = strcmp(info_of(as), g_fleet.info[i]) == 0;
}

static void fleet_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, fleet_park, fleet_eh, data);
    futoin_add(as, fleet_after, NULL, data);
}

static void fleet_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < g_fleet.n; ++i) {
        futoin_add(p, fleet_branch, NULL, (void*)(uintptr_t)i);
    }
}

static void fleet_par_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    ++g_fleet.par_eh_calls;
    snprintf(g_fleet.par_code, sizeof(g_fleet.par_code), "%s", code);
    snprintf(g_fleet.par_info, sizeof(g_fleet.par_info), "%s", info_of(as));
}

static void fleet_root_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    ++g_fleet.root_after_calls;
    snprintf(g_fleet.root_after, sizeof(g_fleet.root_after), "%s", info_of(as));
}

static void fleet_raise(void* data)
{
    (void)data;
    for (int i = 0; i < g_fleet.n; ++i) {
        futoin_error(g_fleet.as[i], g_fleet.code[i], g_fleet.info[i]);
    }
}

static void run_fleet(int n, int last_fails)
{
    memset(&g_fleet, 0, sizeof(g_fleet));
    g_fleet.n = n;
    g_fleet.last_fails = last_fails;
    for (int i = 0; i < n; ++i) {
        snprintf(g_fleet.code[i], sizeof(g_fleet.code[i]), "E%d", i);
        /* Short infos share a pooled record with the code; every third is
         * longer than that and takes the heap. */
        if (i % 3 == 0) {
            snprintf(g_fleet.info[i], sizeof(g_fleet.info[i]),
                    "a description of what went wrong in branch %d, long enough", i);
        } else {
            snprintf(g_fleet.info[i], sizeof(g_fleet.info[i]), "b%d", i);
        }
    }
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Unhandled u = { 0 };
    futoin_add(root, step_root_error, eh_quiet_recover, NULL);
    futoin_add(root, fleet_par, fleet_par_eh, NULL);
    futoin_add(root, fleet_root_after, NULL, NULL);
    futoin_execute(root, on_unhandled, &u);
    futoin_loop_deferred(g_loop, 10, NULL, fleet_raise);
    run();
    for (int i = 0; i < n; ++i) {
        assert_int_equal(g_fleet.eh_calls[i], 1);
        if (!g_fleet.eh_ok[i]) {
            fail_msg("branch %d of %d: its handler did not read its own code and info", i, n);
        }
        /* A branch that recovered goes on reading its own error; when the
         * last branch fails, the others are aborted first. */
        assert_int_equal(g_fleet.after_ok[i], !last_fails);
    }
    assert_int_equal(g_fleet.cancels, 0);
    if (last_fails) {
        /* The failed branch's error reaches the root's handlers. */
        assert_int_equal(g_fleet.par_eh_calls, 1);
        assert_string_equal(g_fleet.par_code, g_fleet.code[n - 1]);
        assert_string_equal(g_fleet.par_info, g_fleet.info[n - 1]);
        assert_int_equal(u.calls, 1);
        assert_string_equal(u.code, g_fleet.code[n - 1]);
        assert_string_equal(u.info, g_fleet.info[n - 1]);
        assert_int_equal(g_fleet.root_after_calls, 0);
        assert_string_equal(futoin_error_info(root), g_fleet.info[n - 1]);
    } else {
        /* Errors handled inside the branches stay there: the root's later
         * steps read the root's own last error. */
        assert_int_equal(g_fleet.par_eh_calls, 0);
        assert_int_equal(u.calls, 0);
        assert_int_equal(g_fleet.root_after_calls, 1);
        assert_string_equal(g_fleet.root_after, "root info");
    }
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void test_2_branches_recover(void** state)
{
    (void)state;
    run_fleet(2, 0);
}

static void test_10_branches_recover(void** state)
{
    (void)state;
    run_fleet(10, 0);
}

static void test_100_branches_recover(void** state)
{
    (void)state;
    run_fleet(100, 0);
}

static void test_2_branches_last_fails(void** state)
{
    (void)state;
    run_fleet(2, 1);
}

static void test_10_branches_last_fails(void** state)
{
    (void)state;
    run_fleet(10, 1);
}

static void test_100_branches_last_fails(void** state)
{
    (void)state;
    run_fleet(100, 1);
}

/* The fleet again on the same loop: branch flows are recycled, and each
 * starts with an empty error record of its own. */
static void fresh_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInFlowInfo fi;
    assert_int_equal(futoin_flow_info(as, &fi, sizeof(fi)), 0);
    tr("fresh:%s:[%s]", fi.error_code, info_of(as));
}

static void fresh_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < 3; ++i) {
        futoin_add(p, fresh_read, NULL, NULL);
    }
}

static void test_recycled_branches_start_clean(void** state)
{
    (void)state;
    run_fleet(10, 0);
    run_fleet(10, 1);
    tr_reset();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fresh_par, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("fresh::[]|fresh::[]|fresh::[]");
    futoin_asyncsteps_free(root);
}

/* ---- nested parallels ---- */

static int g_b0_recovers;

static void eh_b0(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("B0:%s:[%s]@%d", code, info_of(as), (int)now_ms());
    if (g_b0_recovers) {
        futoin_success(as);
    }
}

static void inner_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_park, eh_read_recover, TAG(T_C0));
    futoin_add(p, step_park, eh_read, TAG(T_C1));
}

/* B0 holds the inner parallel, then reads its info after B1's error. */
static void branch_b0(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, inner_par, eh_b0, NULL);
    futoin_add(as, step_sleep, NULL, SLEEP(20));
    futoin_add(as, step_read, NULL, "B0.after");
}

static void branch_b1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_read_recover, TAG(T_B1));
    futoin_add(as, step_read, NULL, "B1.after");
}

static void outer_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_b0, NULL, NULL);
    futoin_add(p, branch_b1, NULL, NULL);
}

#define C1_INFO "what went wrong in C1, in more words than a small block holds"

static const Raise g_inner_raise[] = {
    { 0, "C0", "c0 info" },
    { 1, "C1", C1_INFO },
    { 0, NULL, NULL },
};
static const Raise g_b1_raise[] = { { 2, "B1", "b1 info" }, { 0, NULL, NULL } };

static void raise_b1(void* data)
{
    (void)data;
    g_raise = g_b1_raise;
    raise_all(NULL);
}

static void run_nested(int b0_recovers)
{
    g_b0_recovers = b0_recovers;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Unhandled u = { 0 };
    futoin_add(root, outer_par, eh_read, TAG(T_ROOT));
    futoin_add(root, step_read, NULL, "root.after");
    futoin_execute(root, on_unhandled, &u);
    g_raise = g_inner_raise;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    if (b0_recovers) {
        futoin_loop_deferred(g_loop, 20, NULL, raise_b1);
    }
    run();
    if (b0_recovers) {
        /* C1's error escapes the inner parallel into B0, whose handler
         * recovers; B1's error later does not touch what B0 reads. */
        assert_trace("C0:C0:[c0 info]@10|C1:C1:[" C1_INFO "]@10|B0:C1:[" C1_INFO "]@10"
                     "|B1:B1:[b1 info]@20|B1.after:[b1 info]@20"
                     "|B0.after:[" C1_INFO "]@30|root.after:[]@30");
        assert_int_equal(u.calls, 0);
    } else {
        /* Not recovered in B0, C1's error goes on to the root. */
        assert_trace("C0:C0:[c0 info]@10|C1:C1:[" C1_INFO "]@10|B0:C1:[" C1_INFO "]@10"
                     "|root:C1:[" C1_INFO "]@10|unhandled:C1");
        assert_int_equal(u.calls, 1);
        assert_string_equal(u.info, C1_INFO);
    }
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void test_nested_parallel_recovered(void** state)
{
    (void)state;
    run_nested(1);
}

static void test_nested_parallel_to_root(void** state)
{
    (void)state;
    run_nested(0);
}

/* ---- errors raised in error handlers replace code and info ---- */

#define LONG_A "branch A's replacement info, longer than the pooled record of 32 bytes"

/* A: four levels of handlers over a parked step. */
static void eh_a3(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A3:%s:[%s]", code, info_of(as));
    futoin_error(as, "EA2", LONG_A); /* both replaced */
}

static void eh_a2(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A2:%s:[%s]", code, info_of(as));
    futoin_error(as, code, futoin_error_info(as)); /* raised again, as it is */
}

static void eh_a1(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A1:%s:[%s]", code, info_of(as));
    futoin_error(as, "EA3", "short"); /* back to a short info */
}

static void eh_a0(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A0:%s:[%s]", code, info_of(as));
    futoin_success(as);
}

static void a_l3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_a3, TAG(T_A));
}

static void a_l2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, a_l3, eh_a2, NULL);
}

static void a_l1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, a_l2, eh_a1, NULL);
}

/* B: a new code with the info it had, then code and info swapped; the
 * branch fails with that. */
static void eh_b(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("B:%s:[%s]", code, info_of(as));
    futoin_error(as, "EB2", futoin_error_info(as));
}

static void eh_b_swap(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("B.outer:%s:[%s]", code, info_of(as));
    futoin_error(as, futoin_error_info(as), code);
}

static void b_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_b, TAG(T_B));
}

static void two_branches_ab(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, a_l1, eh_a0, NULL);
    futoin_add(p, b_outer, eh_b_swap, NULL);
}

/* The root's handler makes the info its new code: the record's own text
 * as the code. */
static void eh_root_from_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("root:%s:[%s]", code, info_of(as));
    futoin_error(as, futoin_error_info(as), "from the info");
}

static const Raise g_raise_ab[] = {
    { 0, "EA", "a info" },
    { 1, "EB", "b info" },
    { 0, NULL, NULL },
};

static void test_errors_in_handlers(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Unhandled u = { 0 };
    futoin_add(root, two_branches_ab, eh_root_from_info, NULL);
    futoin_execute(root, on_unhandled, &u);
    g_raise = g_raise_ab;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    run();
    assert_trace("A3:EA:[a info]|A2:EA2:[" LONG_A "]|A1:EA2:[" LONG_A "]|A0:EA3:[short]"
                 "|B:EB:[b info]|B.outer:EB2:[b info]|root:b info:[EB2]|unhandled:EB2");
    assert_int_equal(u.calls, 1);
    assert_string_equal(u.code, "EB2");
    assert_string_equal(u.info, "from the info");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- timeouts in branches ---- */

/* data: the Tag whose name is also the step's wait description ("":
 * none). */
static void step_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const char* what = ((const Tag*)data)->name;
    if (*what) {
        assert_int_equal(futoin_set_wait_info(as, what), 0);
    }
    futoin_set_timeout(as, 10);
}

static void branch_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, step_timeout, eh_read_recover, data);
    futoin_add(as, step_read, NULL, (void*)(uintptr_t)((const Tag*)data)->name);
}

/* Waits for ever, until the parallel step's own timeout aborts it. */
static void branch_forever(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_sleep, NULL, SLEEP(15));
    futoin_add(as, step_wait_tag, NULL, "forever");
}

static const Tag T_WAIT_A = { -1, "waiting for A" };
static const Tag T_WAIT_B = { -1, "waiting for B" };
static const Tag T_WAIT_NONE = { -1, "" };

static void timed_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    assert_int_equal(futoin_set_wait_info(as, "the parallel step"), 0);
    futoin_set_timeout(as, 30);
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_timeout, NULL, TAG(T_WAIT_A));
    futoin_add(p, branch_timeout, NULL, TAG(T_WAIT_B));
    futoin_add(p, branch_timeout, NULL, TAG(T_WAIT_NONE));
    futoin_add(p, branch_forever, NULL, NULL);
}

static void test_timeouts_in_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timed_par, eh_read_recover, TAG(T_ROOT));
    futoin_add(root, step_read, NULL, "root.after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* The three timers expire in one round; each handler reads its own
     * step's wait description. The parallel step's own timeout is the
     * root's, with its description. */
    assert_trace("waiting for A:Timeout:[waiting for A]@10"
                 "|waiting for B:Timeout:[waiting for B]@10|:Timeout:[]@10"
                 "|waiting for A:[waiting for A]@10|waiting for B:[waiting for B]@10|:[]@10"
                 "|forever|cancel:forever"
                 "|root:Timeout:[the parallel step]@30|root.after:[the parallel step]@30");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- a branch fails while another branch's handler runs ---- */

static void eh_a_fails_b(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A:%s:[%s]", code, info_of(as));
    /* B, parked, fails from inside A's handler. */
    futoin_error(g_waiting[1], "EB", "b info");
    tr("A.again:%s:[%s]", code, info_of(as));
    /* Steps that replace the failed one: they read A's error later. */
    futoin_add(as, step_sleep, NULL, SLEEP(10));
    futoin_add(as, step_read, NULL, "A.replaced");
}

static void branch_a_handler(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_a_fails_b, TAG(T_A));
    futoin_add(as, step_read, NULL, "A.after");
}

static void branch_b_parked(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_read_recover, TAG(T_B));
    futoin_add(as, step_read, NULL, "B.after");
}

static void par_a_b(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_a_handler, NULL, NULL);
    futoin_add(p, branch_b_parked, NULL, NULL);
}

static const Raise g_raise_a[] = { { 0, "EA", "a info" }, { 0, NULL, NULL } };

static void test_branch_fails_during_other_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, par_a_b, NULL, NULL);
    futoin_add(root, step_read, NULL, "root.after");
    futoin_execute(root, no_unhandled, NULL);
    g_raise = g_raise_a;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    run();
    assert_trace("A:EA:[a info]|A.again:EA:[a info]|B:EB:[b info]@10|B.after:[b info]@10"
                 "|A.replaced:[a info]@20|A.after:[a info]@20|root.after:[]@20");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- the unhandled-error callback ---- */

/* A replaces its error and recovers from that; B does not recover. */
static void eh_a_replace(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("A:%s:[%s]", code, info_of(as));
    futoin_error(as, "EA2", "a again");
}

static void branch_a_replace(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, step_park, eh_a_replace, TAG(T_A));
}

static void par_unhandled(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, branch_a_replace, eh_read_recover, TAG(T_A));
    futoin_add(p, step_park, eh_read, TAG(T_B));
}

static void test_unhandled_sees_branch_info(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Unhandled u = { 0 };
    futoin_add(root, step_root_error, eh_quiet_recover, NULL);
    futoin_add(root, par_unhandled, NULL, NULL);
    futoin_execute(root, on_unhandled, &u);
    g_raise = g_raise_ab;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    run();
    /* A's handlers run first and raise last; B's error, raised before,
     * is still what B's handler and then the root read. */
    assert_trace("A:EA:[a info]|A:EA2:[a again]@10|B:EB:[b info]@10|unhandled:EB");
    assert_int_equal(u.calls, 1);
    assert_ptr_equal(u.as, root);
    assert_string_equal(u.code, "EB");
    assert_string_equal(u.info, "b info");
    /* Kept by the failed root. */
    assert_string_equal(futoin_error_info(root), "b info");
    FutoInRootInfo ri;
    assert_int_equal(futoin_root_info(root, &ri, sizeof(ri)), 0);
    assert_string_equal(ri.error_code, "EB");
    assert_string_equal(ri.error_info, "b info");
    futoin_asyncsteps_free(root);
}

/* ---- through the parallel() interface and the state variable ---- */

static void eh_through_parallel(FutoInAsyncSteps* as, void* data, const char* code)
{
    const char* name = ((const Tag*)data)->name;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    const char* raw = (const char*)p->api->stateVariable(p, NULL, "error_info", NULL, NULL);
    tr("%s:%s:[%s]:[%s]:[%s]", name, code, futoin_error_info(p), raw ? raw : "NULL", info_of(as));
    /* Its branches replace the failed step, and start with no error. */
    futoin_add(p, step_read, NULL, (void*)(uintptr_t)name);
}

static void par_through_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_park, eh_through_parallel, TAG(T_A));
    futoin_add(p, step_park, eh_through_parallel, TAG(T_B));
}

/* In the root, after its own recovered error. */
static void root_through_iface(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    const char* raw = (const char*)p->api->stateVariable(p, NULL, "error_info", NULL, NULL);
    tr("root:[%s]:[%s]", futoin_error_info(p), raw ? raw : "NULL");
    futoin_add(p, step_read, NULL, "root.branch");
}

static void test_parallel_interface_and_state_var(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_root_error, eh_quiet_recover, NULL);
    futoin_add(root, par_through_iface, NULL, NULL);
    futoin_add(root, root_through_iface, NULL, NULL);
    futoin_add(root, step_read, NULL, "root.after");
    futoin_execute(root, no_unhandled, NULL);
    g_raise = g_raise_ab;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    run();
    assert_trace("A:EA:[a info]:[a info]:[a info]|B:EB:[b info]:[b info]:[b info]"
                 "|A:[]@10|B:[]@10|root:[root info]:[root info]|root.branch:[]@10"
                 "|root.after:[root info]@10");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- re-entry: a branch's handler cancels or frees the root ---- */

#define LONG_INFO "the error of branch A, with an info that needs the heap"

static FutoInAsyncSteps* g_root;
static int g_free_instead;

static void eh_cancel_root(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    const char* info = futoin_error_info(as);
    tr("A:%s:[%s]", code, info);
    if (g_free_instead) {
        futoin_asyncsteps_free(g_root);
    } else {
        futoin_cancel(g_root);
    }
    /* What the handler read stays readable until it returns. */
    tr("A.after:%s:[%s]:[%s]:%d", code, info, futoin_error_info(as), futoin_is_valid(as));
}

static void par_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, step_park, eh_cancel_root, TAG(T_A));
    futoin_add(p, step_park, eh_read_recover, TAG(T_B));
    futoin_add(p, step_wait_tag, NULL, "C");
}

static const Raise g_cancel_raise[] = {
    { 0, "EA", LONG_INFO },
    { 1, "EB", "b info, not handled: the root is gone" },
    { 0, NULL, NULL },
};

static void run_cancel(int free_instead)
{
    g_free_instead = free_instead;
    g_root = futoin_asyncsteps_new(g_loop);
    Unhandled u = { 0 };
    futoin_add(g_root, par_cancel, eh_read, TAG(T_ROOT));
    futoin_execute(g_root, on_unhandled, &u);
    g_raise = g_cancel_raise;
    futoin_loop_deferred(g_loop, 10, NULL, raise_all);
    run();
    assert_trace("C|A:EA:[" LONG_INFO "]|cancel:C|A.after:EA:[" LONG_INFO "]:[" LONG_INFO "]:0");
    assert_int_equal(u.calls, 0);
    assert_int_equal(g_misuse, 0);
    if (!free_instead) {
        assert_int_equal(futoin_is_valid(g_root), 0);
        futoin_asyncsteps_free(g_root);
    }
}

static void test_handler_cancels_root(void** state)
{
    (void)state;
    run_cancel(0);
}

static void test_handler_frees_root(void** state)
{
    (void)state;
    run_cancel(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_2_branches_recover),
        ENV_TEST(test_10_branches_recover),
        ENV_TEST(test_100_branches_recover),
        ENV_TEST(test_2_branches_last_fails),
        ENV_TEST(test_10_branches_last_fails),
        ENV_TEST(test_100_branches_last_fails),
        ENV_TEST(test_recycled_branches_start_clean),
        ENV_TEST(test_nested_parallel_recovered),
        ENV_TEST(test_nested_parallel_to_root),
        ENV_TEST(test_errors_in_handlers),
        ENV_TEST(test_timeouts_in_branches),
        ENV_TEST(test_branch_fails_during_other_handler),
        ENV_TEST(test_unhandled_sees_branch_info),
        ENV_TEST(test_parallel_interface_and_state_var),
        ENV_TEST(test_handler_cancels_root),
        ENV_TEST(test_handler_frees_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
