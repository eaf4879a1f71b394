/* SPDX-License-Identifier: MIT */
/*
 * futoin_parallel_bounded(): count items, at most k running at once, each
 * a branch of its own; the outcomes (values, or code and error_info) for
 * the next step. Order and concurrency, k 1 and k >= count, no item,
 * 100,000 items (live branches, steps and allocations bounded), both
 * modes, timeouts on items and around the helper, cancel and free of the
 * root while items run, re-entry from item callbacks, misuse, copyFrom,
 * the helper as a branch of parallel(), and the refusal of another
 * implementation's object.
 */
#include "tsupport.h"

#include "fault_alloc.h"
#include "foreign/foreign_asyncsteps.h"

#include <futoin/introspect.h>

#include <pthread.h>

/* ---- a sleeping step on the virtual clock ---- */

typedef struct ItemCtx ItemCtx;

typedef struct Sleep {
    FutoInAsyncSteps* as;
    FutoInHandle h;
    ItemCtx* it;
} Sleep;

/* ---- a run: the plan of each item and what the items saw ---- */

typedef struct ItemPlan {
    uint32_t sleep_ms;   /* a sub-step that waits this long (0: none) */
    const char* fail;    /* then fails with this code (NULL: succeeds) */
    int counted;         /* succeeds with a counted value, not an int */
    uint32_t timeout_ms; /* the item's own timeout (0: none) */
    const char* wait;    /* futoin_set_wait_info() of the sleep step */
    int twice;           /* calls success() twice: InternalError */
} ItemPlan;

#define MAX_ITEMS 16

typedef struct Run Run;

struct ItemCtx {
    Run* run;
    size_t i;
};

struct Run {
    const ItemPlan* plan;
    size_t k;
    FutoInAsyncSteps* root;
    int running;
    int peak;
    uint32_t peak_flows;
    Counted counted[MAX_ITEMS];
    ItemCtx it[MAX_ITEMS];
};

static void run_init(Run* r, FutoInAsyncSteps* root, const ItemPlan* plan, size_t k)
{
    memset(r, 0, sizeof(*r));
    r->plan = plan;
    r->k = k;
    r->root = root;
    for (size_t i = 0; i < MAX_ITEMS; ++i) {
        r->it[i].run = r;
        r->it[i].i = i;
        r->counted[i].id = (int)i;
    }
}

/* Live flows of the root: its main flow and the running branches. */
static uint32_t live_flows(FutoInAsyncSteps* root)
{
    FutoInRootInfo ri;
    assert_int_equal(futoin_root_info(root, &ri, sizeof(ri)), 0);
    return ri.flows;
}

static void sleep_fire(void* data)
{
    Sleep* s = (Sleep*)data;
    s->h.data1 = NULL;
    futoin_success(s->as);
}

static void sleep_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Sleep* s = (Sleep*)data;
    tr("c%zu@%d", s->it->i, (int)now_ms());
    --s->it->run->running;
    if (s->h.data1) {
        futoin_loop_cancel(g_loop, &s->h);
    }
}

static void sleep_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ItemCtx* it = (ItemCtx*)data;
    const ItemPlan* p = &it->run->plan[it->i];
    Sleep* s = (Sleep*)futoin_stack(as, sizeof(Sleep), NULL);
    assert_non_null(s);
    s->as = as;
    s->it = it;
    s->h = futoin_loop_deferred(g_loop, p->sleep_ms, s, sleep_fire);
    if (p->wait) {
        assert_int_equal(futoin_set_wait_info(as, p->wait), 0);
    }
    futoin_set_cancel(as, sleep_cancel, s);
}

static void item_end(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ItemCtx* it = (ItemCtx*)data;
    Run* r = it->run;
    const ItemPlan* p = &r->plan[it->i];
    tr("e%zu@%d", it->i, (int)now_ms());
    --r->running;
    if (p->fail) {
        char info[32];
        snprintf(info, sizeof(info), "item %zu", it->i);
        futoin_error(as, p->fail, info);
    } else if (p->counted) {
        futoin_success1(as, counted_val(&r->counted[it->i]));
    } else if (p->twice) {
        futoin_success(as);
        futoin_success(as);
    } else {
        futoin_success1(as, futoin_val_i32((int32_t)it->i * 10));
    }
}

/* The item: records its start, checks the bound, adds its steps. */
static void item(FutoInAsyncSteps* as, void* data, size_t i)
{
    Run* r = (Run*)data;
    assert_true(i < MAX_ITEMS);
    const ItemPlan* p = &r->plan[i];
    tr("s%zu@%d", i, (int)now_ms());
    ++r->running;
    assert_true((size_t)r->running <= r->k);
    if (r->running > r->peak) {
        r->peak = r->running;
    }
    uint32_t flows = live_flows(r->root);
    if (flows > r->peak_flows) {
        r->peak_flows = flows;
    }
    if (p->timeout_ms) {
        futoin_set_timeout(as, p->timeout_ms);
    }
    if (p->sleep_ms) {
        futoin_add(as, sleep_step, NULL, &r->it[i]);
    }
    futoin_add(as, item_end, NULL, &r->it[i]);
}

/* A step that prints the outcomes: "n=3 f=1 [0:i0|1:!Code(info)|2:c2]". */
static void show_outcomes(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    FutoInBoundedResult* res = futoin_bounded_result(args);
    assert_non_null(res);
    assert_int_equal(futoin_args_count(args), 1);
    char buf[1024];
    size_t len = (size_t)snprintf(buf, sizeof(buf), "n=%zu f=%zu [", res->count, res->failed);
    for (size_t i = 0; i < res->count && len < sizeof(buf); ++i) {
        const FutoInBoundedOutcome* o = &res->items[i];
        const char* sep = i ? "," : "";
        if (o->code) {
            assert_int_equal(futoin_args_count(&o->args), 0);
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%zu:!%s(%s)", sep, i, o->code,
                    o->info);
        } else if (futoin_arg_type(&o->args, 0) == FTN_TYPE_CUSTOM_OBJECT) {
            assert_string_equal(o->info, "");
            const Counted* c = (const Counted*)futoin_arg_custom(&o->args, 0);
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%zu:c%d", sep, i, c->id);
        } else {
            assert_string_equal(o->info, "");
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%zu:i%d", sep, i,
                    (int)futoin_arg_int(&o->args, 0, -1));
        }
    }
    assert_true(len < sizeof(buf));
    tr("%s]@%d", buf, (int)now_ms());
}

/* The helper from inside a step: k and mode in the data (Bounded...). */
typedef struct Call {
    Run* run;
    size_t count;
    size_t k;
    int mode;
    uint32_t timeout_ms; /* on the step that calls the helper (0: none) */
} Call;

static void step_call(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Call* c = (Call*)data;
    if (c->timeout_ms) {
        futoin_set_timeout(as, c->timeout_ms);
    }
    futoin_parallel_bounded(as, c->count, c->k, item, c->run, c->mode);
}

/* Records an error and recovers, with the time and error_info. */
static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s(%s)@%d", code, futoin_error_info(as), (int)now_ms());
    futoin_success(as);
}

static const ItemPlan PLAIN[MAX_ITEMS];

/* ---- order and concurrency ---- */

static void test_order_and_concurrency(void** state)
{
    (void)state;
    static const ItemPlan plan[5] = {
        { .sleep_ms = 30 },
        { .sleep_ms = 10 },
        { .sleep_ms = 20 },
        { .sleep_ms = 10 },
        { .sleep_ms = 5 },
    };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 2);
    futoin_add(root, step_tag, NULL, "before");
    futoin_parallel_bounded(root, 5, 2, item, &r, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, show_outcomes, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* Two at a time, in index order: 1 ends at 10 and 2 takes its place,
     * 0 and 2 end at 30 and 3 and 4 follow, 4 ends at 35, 3 at 40. */
    assert_trace("before|s0@0|s1@0|e1@10|s2@10|e0@30|e2@30|s3@30|s4@30|e4@35|e3@40|"
                 "n=5 f=0 [0:i0,1:i10,2:i20,3:i30,4:i40]@40");
    assert_int_equal(r.peak, 2);
    assert_int_equal(r.peak_flows, 3); /* the main flow and two branches */
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void test_k1_is_sequential(void** state)
{
    (void)state;
    static const ItemPlan plan[3] = { { .sleep_ms = 5 }, { 0 }, { .sleep_ms = 5 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 1);
    futoin_parallel_bounded(root, 3, 1, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, show_outcomes, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0@0|e0@5|s1@5|e1@5|s2@5|e2@10|n=3 f=0 [0:i0,1:i10,2:i20]@10");
    assert_int_equal(r.peak, 1);
    assert_int_equal(r.peak_flows, 2);
    futoin_asyncsteps_free(root);
}

/* k >= count: every item at once, interleaved as parallel() branches. */
static void par_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    ItemCtx* it = (ItemCtx*)data;
    item(as, it->run, it->i);
}

static void test_k_at_least_count_is_parallel(void** state)
{
    (void)state;
    static const ItemPlan plan[3] = { { .sleep_ms = 5 }, { 0 }, { .sleep_ms = 1 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 100);
    futoin_parallel_bounded(root, 3, 100, item, &r, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_execute(root, no_unhandled, NULL);
    run();
    static char bounded[sizeof(g_trace)];
    memcpy(bounded, g_trace, sizeof(g_trace));
    assert_string_equal(bounded, "s0@0|s1@0|s2@0|e1@0|e2@1|e0@5");
    assert_int_equal(r.peak, 3);
    futoin_asyncsteps_free(root);

    /* The same three items as the branches of parallel(), on a loop whose
     * clock starts at 0 again: the same trace. */
    FutoInLoop* first = g_loop;
    g_loop = futoin_loop_new_virtual();
    assert_non_null(g_loop);
    futoin_set_misuse_handler(g_loop, on_misuse, NULL);
    tr_reset();
    root = futoin_asyncsteps_new(g_loop);
    run_init(&r, root, plan, 100);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    for (size_t i = 0; i < 3; ++i) {
        futoin_add(p, par_branch, NULL, &r.it[i]);
    }
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(root);
    futoin_loop_free(g_loop);
    g_loop = first;
    assert_trace(bounded);
    assert_int_equal(g_misuse, 0);
}

/* count 0: the next step gets an empty result at once. */
static void test_no_item(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, PLAIN, 1);
    futoin_add(root, step_tag, NULL, "before");
    futoin_parallel_bounded(root, 0, 4, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, show_outcomes, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    assert_int_equal(futoin_loop_run_next(g_loop), 1); /* one dispatch runs it all */
    assert_trace("before|n=0 f=0 []@0|after");
    run();
    assert_int_equal(r.peak, 0);
    futoin_asyncsteps_free(root);
}

/* ---- 100,000 items: bounded branches and memory, linear work ---- */

typedef struct Big {
    FutoInAsyncSteps* root;
    size_t k;
    size_t started;
    size_t ended;
    uint32_t peak_flows;
    size_t checked;
    int ok;
} Big;

static void big_end(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Big* b = (Big*)data;
    ++b->ended;
    futoin_success1(as, futoin_val_u64(b->ended));
}

static void big_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    Big* b = (Big*)data;
    if (i != b->started || b->started - b->ended >= b->k) {
        b->ok = 0; /* out of order, or more than k running */
    }
    ++b->started;
    if (i % 97 == 0) { /* live flows: O(k) to count, so not every time */
        uint32_t flows = live_flows(b->root);
        if (flows > b->peak_flows) {
            b->peak_flows = flows;
        }
    }
    futoin_add(as, big_end, NULL, b);
}

static void big_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Big* b = (Big*)data;
    FutoInBoundedResult* res = futoin_bounded_result(args);
    if (!res || res->count != b->started || res->failed) {
        b->ok = 0;
        return;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < res->count; ++i) {
        if (res->items[i].code || futoin_arg_type(&res->items[i].args, 0) != FTN_TYPE_UINT64) {
            b->ok = 0;
            return;
        }
        sum += res->items[i].args.arg0.u64;
    }
    /* Each item got the number of items ended so far: all of 1..n. */
    b->ok = b->ok && sum == (uint64_t)res->count * (res->count + 1) / 2;
    b->checked = res->count;
}

/* Runs count items, k at a time, on a fresh root; returns the engine's
 * step counter for the run and, when counting works, the allocations. */
static uint64_t big_run(size_t count, size_t k, unsigned long* allocs)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Big b = { .root = root, .k = k, .ok = 1 };
    FutoInLoopCounters c0;
    FutoInLoopCounters c1;
    futoin_parallel_bounded(root, count, k, big_item, &b, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, big_check, NULL, &b);
    assert_int_equal(futoin_loop_counters(g_loop, &c0, sizeof(c0)), 0);
    fault_arm(FAULT_OFF, 0);
    futoin_execute(root, no_unhandled, NULL);
    run();
    fault_disarm();
    *allocs = fault_count();
    assert_int_equal(futoin_loop_counters(g_loop, &c1, sizeof(c1)), 0);
    assert_true(b.ok);
    assert_int_equal(b.checked, count);
    assert_int_equal(b.started, count);
    assert_int_equal(b.peak_flows, k + 1);
    futoin_asyncsteps_free(root);
    return c1.steps - c0.steps;
}

static void test_hundred_thousand_items(void** state)
{
    (void)state;
    unsigned long allocs_small = 0;
    unsigned long allocs_big = 0;
    big_run(1000, 8, &allocs_small); /* warms the pools up */
    uint64_t steps_small = big_run(10000, 8, &allocs_small);
    uint64_t steps_big = big_run(100000, 8, &allocs_big);
    /* Linear: ten times the items, ten times the dispatcher's work. */
    assert_true(steps_big >= steps_small * 10 - steps_small / 100);
    assert_true(steps_big <= steps_small * 10 + steps_small / 100);
    if (fault_works()) {
        /* The pools were warm: the helper's record and the outcome
         * records, whatever the count (no allocation per item). */
        assert_true(allocs_small <= 4);
        assert_int_equal(allocs_big, allocs_small);
    }
}

/* ---- modes ---- */

static void test_first_error_cancels_the_rest(void** state)
{
    (void)state;
    static const ItemPlan plan[6] = {
        { .counted = 1, .sleep_ms = 5 },
        { .sleep_ms = 10, .fail = "Boom" },
        { .sleep_ms = 50 },
        { .sleep_ms = 50 },
    };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 3);
    Call c = { .run = &r, .count = 6, .k = 3, .mode = FUTOIN_BOUNDED_FIRST_ERROR };
    futoin_add(root, step_call, eh_recover, &c);
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    /* 0 ends at 5 and 3 starts; 1 fails at 10: 2 and 3 are cancelled, in
     * index order, 4 and 5 never start; the error goes on with 1's code
     * and info; the value 0 gave is released with the rest. */
    assert_trace("s0@0|s1@0|s2@0|e0@5|s3@5|e1@10|c2@10|c3@10|eh:Boom(item 1)@10|next");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

static void test_all_settled_collects_every_outcome(void** state)
{
    (void)state;
    static const ItemPlan plan[6] = {
        { .sleep_ms = 5 },
        { .sleep_ms = 10, .fail = "E1" },
        { .counted = 1 },
        { .sleep_ms = 100, .timeout_ms = 20, .wait = "wait 3" },
        { .twice = 1 },
        { .sleep_ms = 1, .fail = "E5" },
    };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 2);
    futoin_parallel_bounded(root, 6, 2, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, show_outcomes, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0@0|s1@0|e0@5|s2@5|e2@5|s3@5|e1@10|s4@10|e4@10|s5@10|e5@11|c3@25|"
                 "n=6 f=4 [0:i0,1:!E1(item 1),2:c2,3:!Timeout(wait 3),4:!InternalError("
                 "success() called twice),5:!E5(item 5)]@25|after");
    /* Released once, right after the step that received it. */
    assert_int_equal(r.counted[2].cleanups, 1);
    assert_int_equal(r.peak, 2);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* The receiving step may take a value over: the release skips it. */
static void take_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    FutoInBoundedResult* res = futoin_bounded_result(args);
    assert_non_null(res);
    FutoInBinaryValue* kept = (FutoInBinaryValue*)data;
    *kept = res->items[1].args.arg0;
    res->items[1].args.arg0.type = NULL;
    tr("took c%d", ((Counted*)kept->custom_data)->id);
}

static void test_outcome_value_taken_over(void** state)
{
    (void)state;
    static const ItemPlan plan[3] = { { .counted = 1 }, { .counted = 1 }, { .counted = 1 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 2);
    FutoInBinaryValue kept;
    memset(&kept, 0, sizeof(kept));
    futoin_parallel_bounded(root, 3, 2, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, take_value, NULL, &kept);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0@0|s1@0|e0@0|e1@0|s2@0|e2@0|took c1");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(r.counted[1].cleanups, 0);
    assert_int_equal(r.counted[2].cleanups, 1);
    futoin_reset_binval(&kept);
    assert_int_equal(r.counted[1].cleanups, 1);
    futoin_asyncsteps_free(root);
}

/* ---- timeouts ---- */

/* A timeout on the step around the helper cancels the running items and
 * starts no other; what the items gave is released. */
static void test_timeout_around_the_helper(void** state)
{
    (void)state;
    static const ItemPlan plan[8] = {
        { .counted = 1, .sleep_ms = 10 },
        { .sleep_ms = 100 },
        { .sleep_ms = 100 },
        { .sleep_ms = 100 },
    };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 3);
    Call c = { .run = &r,
        .count = 8,
        .k = 3,
        .mode = FUTOIN_BOUNDED_ALL_SETTLED,
        .timeout_ms = 30 };
    futoin_add(root, step_call, eh_recover, &c);
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0@0|s1@0|s2@0|e0@10|s3@10|c1@30|c2@30|c3@30|eh:Timeout()@30|next");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(now_ms(), 30); /* no timer of an item is left */
    futoin_asyncsteps_free(root);
}

/* ---- cancel and free of the root while items run ---- */

static void cancel_root_cb(void* data)
{
    tr("cancel@%d", (int)now_ms());
    futoin_cancel((FutoInAsyncSteps*)data);
}

static void free_root_cb(void* data)
{
    tr("free@%d", (int)now_ms());
    futoin_asyncsteps_free((FutoInAsyncSteps*)data);
}

static const ItemPlan WAITING[4] = {
    { .counted = 1, .sleep_ms = 5 },
    { .sleep_ms = 100 },
    { .sleep_ms = 100 },
    { .sleep_ms = 100 },
};

static void test_root_cancel_while_items_run(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, WAITING, 2);
    futoin_parallel_bounded(root, 4, 2, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 20, root, cancel_root_cb);
    run();
    assert_trace("s0@0|s1@0|e0@5|s2@5|cancel@20|c1@20|c2@20");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(now_ms(), 20);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_misuse, 0);
}

static void test_root_free_while_items_run(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, WAITING, 3);
    futoin_parallel_bounded(root, 4, 3, item, &r, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    futoin_loop_deferred(g_loop, 20, root, free_root_cb);
    run();
    assert_trace("s0@0|s1@0|s2@0|e0@5|s3@5|free@20|c1@20|c2@20|c3@20");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(g_misuse, 0);
}

/* ---- re-entry from item callbacks ---- */

/* An item that runs a bounded parallel of its own: its outcome is the
 * inner result, released with the outer one. */
static void inner_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    size_t outer = (size_t)(uintptr_t)data;
    tr("in%zu.%zu", outer, i);
    futoin_success1(as, futoin_val_i32((int32_t)(outer * 100 + i)));
}

static void outer_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("out%zu", i);
    futoin_parallel_bounded(as, i + 1, 1, inner_item, (void*)(uintptr_t)i,
            FUTOIN_BOUNDED_ALL_SETTLED);
}

static void show_nested(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    FutoInBoundedResult* res = futoin_bounded_result(args);
    assert_non_null(res);
    for (size_t i = 0; i < res->count; ++i) {
        FutoInBoundedResult* in = futoin_bounded_result(&res->items[i].args);
        assert_non_null(in);
        for (size_t j = 0; j < in->count; ++j) {
            tr("r%d", (int)futoin_arg_int(&in->items[j].args, 0, -1));
        }
    }
}

static void test_nested_bounded(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_parallel_bounded(root, 3, 2, outer_item, NULL, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, show_nested, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("out0|out1|in0.0|in1.0|in1.1|out2|in2.0|in2.1|in2.2|"
                 "r0|r100|r101|r200|r201|r202");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* An item callback that cancels or frees its root: nothing runs after,
 * no further item starts, the values given so far are released. */
typedef struct Killer {
    FutoInAsyncSteps* root;
    int free_it;
    Counted counted;
} Killer;

static void kill_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    Killer* k = (Killer*)data;
    tr("s%zu", i);
    if (i == 0) {
        futoin_success1(as, counted_val(&k->counted));
    } else if (i == 1) {
        futoin_add(as, step_wait_tag, NULL, "w1");
    } else {
        if (k->free_it) {
            futoin_asyncsteps_free(k->root);
        } else {
            futoin_cancel(k->root);
        }
        tr("back");
    }
}

static void reentry_kill(int free_it)
{
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Killer k = { .root = root, .free_it = free_it };
    futoin_parallel_bounded(root, 5, 2, kill_item, &k, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0|s1|w1|s2|cancel:w1|back");
    assert_int_equal(k.counted.cleanups, 1);
    assert_int_equal(g_misuse, 0);
    if (!free_it) {
        futoin_asyncsteps_free(root);
    }
}

static void test_item_cancels_root(void** state)
{
    (void)state;
    reentry_kill(0);
}

static void test_item_frees_root(void** state)
{
    (void)state;
    reentry_kill(1);
}

/* break() out of an item leaves the helper as it leaves a parallel(): the
 * loop around it ends, the other items are cancelled. */
static void break_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    tr("s%zu", i);
    if (i == 1) {
        futoin_break(as, "outer");
    } else {
        futoin_set_cancel(as, cancel_tag, "w0");
    }
}

static void loop_body(FutoInAsyncSteps* as, void* data)
{
    tr("iter");
    futoin_parallel_bounded(as, 4, 2, break_item, data, FUTOIN_BOUNDED_ALL_SETTLED);
}

static void step_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, loop_body, data, "outer");
}

static void test_break_from_item(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_loop, NULL, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("iter|s0|s1|cancel:w0|after");
    futoin_asyncsteps_free(root);
}

/* Many nested levels, each item running the next level's helper as its
 * last step, on a small C stack: cancelled, each level's cancel handler
 * runs once; completed, the outcomes nest as deep and are read and
 * released without recursion per level. */
#define DEEP_LEVELS 5000

typedef struct Deep {
    int complete;
    int cancels;
    int levels;
    int depth_seen;
    int bottom;
} Deep;

static Deep g_deep;

static void deep_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    (void)data;
    ++g_deep.cancels;
}

static void deep_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)i;
    size_t level = (size_t)(uintptr_t)data;
    ++g_deep.levels;
    futoin_set_cancel(as, deep_cancel, NULL);
    if (level < DEEP_LEVELS) {
        futoin_parallel_bounded(as, 1, 1, deep_item, (void*)(uintptr_t)(level + 1),
                FUTOIN_BOUNDED_FIRST_ERROR);
    } else if (g_deep.complete) {
        futoin_success1(as, futoin_val_i32(42));
    }
}

static void deep_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    const FutoInArgs* a = args;
    FutoInBoundedResult* res;
    while ((res = futoin_bounded_result(a)) != NULL && res->count == 1) {
        ++g_deep.depth_seen;
        a = &res->items[0].args;
    }
    g_deep.bottom = (int)futoin_arg_int(a, 0, -1);
}

static void* deep_thread(void* arg)
{
    (void)arg;
    FutoInLoop* loop = futoin_loop_new_virtual();
    if (!loop) {
        return NULL;
    }
    FutoInAsyncSteps* root = (futoin_asyncsteps_new)(loop);
    futoin_parallel_bounded(root, 1, 1, deep_item, (void*)(uintptr_t)1, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, deep_read, NULL, NULL);
    /* And once more, left for the root's end to release. */
    futoin_parallel_bounded(root, 1, 1, deep_item, (void*)(uintptr_t)1, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    futoin_cancel(root);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    return NULL;
}

static void run_deep(int complete)
{
    memset(&g_deep, 0, sizeof(g_deep));
    g_deep.complete = complete;
    pthread_attr_t attr;
    pthread_t th;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 128 * 1024), 0);
    assert_int_equal(pthread_create(&th, &attr, deep_thread, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
}

static void test_deep_nesting_cancel(void** state)
{
    (void)state;
    run_deep(0);
    assert_int_equal(g_deep.levels, DEEP_LEVELS);
    assert_int_equal(g_deep.cancels, DEEP_LEVELS);
    assert_int_equal(g_deep.depth_seen, 0);
}

static void test_deep_nesting_results(void** state)
{
    (void)state;
    run_deep(1);
    assert_int_equal(g_deep.levels, 2 * DEEP_LEVELS);
    assert_int_equal(g_deep.cancels, 0);
    assert_int_equal(g_deep.depth_seen, DEEP_LEVELS);
    assert_int_equal(g_deep.bottom, 42);
}

/* ---- misuse ---- */

typedef struct Misuse {
    size_t count;
    size_t k;
    FutoInBoundedItemFn item;
    int mode;
} Misuse;

static void step_misuse(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    const Misuse* m = (const Misuse*)data;
    futoin_parallel_bounded(as, m->count, m->k, m->item, NULL, m->mode);
}

static void eh_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void misuse_case(const Misuse* m, const char* expected)
{
    tr_reset();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_misuse, eh_info, (void*)(uintptr_t)m);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace(expected);
    futoin_asyncsteps_free(root);
}

static void test_misuse(void** state)
{
    (void)state;
    Misuse m = { 3, 2, NULL, FUTOIN_BOUNDED_FIRST_ERROR };
    misuse_case(&m, "InternalError:futoin_parallel_bounded() with a NULL item callback");
    m = (Misuse){ 3, 0, inner_item, FUTOIN_BOUNDED_FIRST_ERROR };
    misuse_case(&m,
            "InternalError:futoin_parallel_bounded() with k 0: at least one item must be "
            "allowed to run");
    m = (Misuse){ 0, 0, inner_item, FUTOIN_BOUNDED_ALL_SETTLED };
    misuse_case(&m,
            "InternalError:futoin_parallel_bounded() with k 0: at least one item must be "
            "allowed to run");
    m = (Misuse){ 3, 2, inner_item, 7 };
    misuse_case(&m,
            "InternalError:futoin_parallel_bounded() with an unknown mode 7 "
            "(FUTOIN_BOUNDED_FIRST_ERROR or FUTOIN_BOUNDED_ALL_SETTLED)");
    m = (Misuse){ SIZE_MAX, 2, inner_item, FUTOIN_BOUNDED_ALL_SETTLED };
    char want[200];
    snprintf(want, sizeof(want),
            "InternalError:futoin_parallel_bounded() with count %zu: its outcome records "
            "would not fit in memory",
            (size_t)SIZE_MAX);
    misuse_case(&m, want);
    assert_int_equal(g_misuse, 0);
}

static void step_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success(as);
    futoin_parallel_bounded(as, 2, 1, inner_item, NULL, FUTOIN_BOUNDED_FIRST_ERROR);
}

static void test_misuse_where_add_is_not_allowed(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_after_success, eh_info, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("InternalError:futoin_parallel_bounded() after success()");

    /* On a root that is not running: reported, nothing added. */
    tr_reset();
    futoin_add(root, step_tag, NULL, "first");
    futoin_parallel_bounded(root, 2, 1, NULL, NULL, FUTOIN_BOUNDED_FIRST_ERROR);
    assert_int_equal(g_misuse, 1);
    assert_string_equal(g_misuse_msg, "futoin_parallel_bounded() with a NULL item callback");
    futoin_add(root, step_tag, NULL, "second");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("first|second");

    /* On a running root from outside its steps. */
    tr_reset();
    g_misuse = 0;
    futoin_add(root, step_wait_tag, NULL, "wait");
    futoin_execute(root, no_unhandled, NULL);
    run();
    futoin_parallel_bounded(root, 2, 1, inner_item, NULL, FUTOIN_BOUNDED_FIRST_ERROR);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_parallel_bounded() called from no running step"));
    futoin_cancel(root);
    assert_trace("wait|cancel:wait");
    futoin_asyncsteps_free(root);
}

/* ---- other places the helper goes ---- */

/* As one branch of parallel(): its items run beside the other branch;
 * the parallel step drops its result (released once). */
static void test_as_parallel_branch(void** state)
{
    (void)state;
    static const ItemPlan plan[2] = { { .counted = 1 }, { .counted = 1 } };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, root, plan, 1);
    FutoInAsyncSteps* p = futoin_parallel(root, NULL, NULL);
    futoin_add(p, step_tag, NULL, "A");
    futoin_parallel_bounded(p, 2, 1, item, &r, FUTOIN_BOUNDED_FIRST_ERROR);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("A|s0@0|e0@0|s1@0|e1@0|after");
    assert_int_equal(r.counted[0].cleanups, 1);
    assert_int_equal(r.counted[1].cleanups, 1);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* copyFrom() copies the helper's step: the copy runs its own items. */
static void test_copy_from(void** state)
{
    (void)state;
    FutoInAsyncSteps* model = futoin_asyncsteps_new(g_loop);
    Run r;
    run_init(&r, model, PLAIN, 2);
    futoin_parallel_bounded(model, 2, 2, item, &r, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(model, show_outcomes, NULL, NULL);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    r.root = root;
    futoin_copy_from(root, model);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s0@0|s1@0|e0@0|e1@0|n=2 f=0 [0:i0,1:i10]@0");
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(model); /* its own copy never ran: released */
    assert_int_equal(g_misuse, 0);
}

/* An idle root freed with the helper's step still queued. */
static void test_unstarted_step_released(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_parallel_bounded(root, 1000, 4, inner_item, NULL, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_asyncsteps_free(root);
    run();
    assert_trace("");
}

/* ---- another implementation's object: refused through its own error ---- */

static void step_bounded_here(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_parallel_bounded(as, 2, 1, inner_item, data, FUTOIN_BOUNDED_ALL_SETTLED);
}

static void test_refuses_foreign(void** state)
{
    (void)state;
    FrnLoop* fl = frn_loop_new();
    assert_non_null(fl);
    FutoInAsyncSteps* root = frn_root_new(fl);
    assert_non_null(root);
    futoin_add(root, step_bounded_here, eh_info, NULL);
    futoin_add(root, step_tag, NULL, "next");
    futoin_execute(root, no_unhandled, NULL);
    frn_loop_run_all(fl, 1000);
    assert_trace("InternalError:futoin_parallel_bounded() needs an AsyncSteps of this library "
                 "(its items are branches of the engine's own parallel step)|next");
    root->api->free(root);
    assert_int_equal(frn_live_objects(fl), 0);
    frn_loop_free(fl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_order_and_concurrency),
        ENV_TEST(test_k1_is_sequential),
        ENV_TEST(test_k_at_least_count_is_parallel),
        ENV_TEST(test_no_item),
        ENV_TEST(test_hundred_thousand_items),
        ENV_TEST(test_first_error_cancels_the_rest),
        ENV_TEST(test_all_settled_collects_every_outcome),
        ENV_TEST(test_outcome_value_taken_over),
        ENV_TEST(test_timeout_around_the_helper),
        ENV_TEST(test_root_cancel_while_items_run),
        ENV_TEST(test_root_free_while_items_run),
        ENV_TEST(test_nested_bounded),
        ENV_TEST(test_item_cancels_root),
        ENV_TEST(test_item_frees_root),
        ENV_TEST(test_break_from_item),
        ENV_TEST(test_deep_nesting_cancel),
        ENV_TEST(test_deep_nesting_results),
        ENV_TEST(test_misuse),
        ENV_TEST(test_misuse_where_add_is_not_allowed),
        ENV_TEST(test_as_parallel_branch),
        ENV_TEST(test_copy_from),
        ENV_TEST(test_unstarted_step_released),
        ENV_TEST(test_refuses_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
