/* SPDX-License-Identifier: MIT */
/* Behaviour of the AsyncTool event loop (immediates, timers, handles,
 * virtual and real clocks). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <futoin/asynctool.h>
#include "loop/loop_internal.h"

/* ---- helpers ---- */

#define LOG_MAX 64

typedef struct {
    FutoInLoop* loop;
    int ids[LOG_MAX];
    uint64_t times[LOG_MAX];
    size_t count;
} Log;

typedef struct {
    Log* log;
    int id;
} Tag;

static void log_tag(void* data)
{
    Tag* tag = data;
    Log* log = tag->log;
    assert_true(log->count < LOG_MAX);
    log->ids[log->count] = tag->id;
    log->times[log->count] = futoin_loop_now(log->loop);
    ++log->count;
}

static void must_not_run(void* data)
{
    (void)data;
    fail_msg("cancelled or dropped callback was called");
}

static void must_not_run2(void* data, uintptr_t aux)
{
    (void)data;
    (void)aux;
    fail_msg("cancelled or dropped callback was called");
}

static void assert_ids(const Log* log, const int* expected, size_t n)
{
    assert_int_equal(log->count, n);
    for (size_t i = 0; i < n; ++i) {
        assert_int_equal(log->ids[i], expected[i]);
    }
}

static int handle_is_zero(const FutoInHandle* h)
{
    return h->data1 == NULL && h->data2 == NULL && h->data3 == 0;
}

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- immediates ---- */

static void test_immediate_fifo(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag tags[5];
    for (int i = 0; i < 5; ++i) {
        tags[i] = (Tag){ &log, i };
        futoin_loop_immediate(log.loop, &tags[i], log_tag);
    }
    assert_int_equal(futoin_loop_pending(log.loop), 5);
    futoin_loop_run(log.loop);
    const int expected[] = { 0, 1, 2, 3, 4 };
    assert_ids(&log, expected, 5);
    assert_int_equal(futoin_loop_pending(log.loop), 0);
    futoin_loop_free(log.loop);
}

/* Each callback k queues 2k+1 and 2k+2: a FIFO runs them breadth-first,
 * i.e. in increasing k, while the ring wraps and grows under it. */
typedef struct {
    FutoInLoop* loop;
    int next_expected;
    int nodes[2000];
} Tree;

static Tree* tree;

static void tree_node(void* data)
{
    int* node = data;
    assert_int_equal(*node, tree->next_expected);
    ++tree->next_expected;
    for (int child = 2 * *node + 1; child <= 2 * *node + 2 && child < 2000; ++child) {
        futoin_loop_immediate(tree->loop, &tree->nodes[child], tree_node);
    }
}

static void test_immediate_fifo_across_ring_growth(void** state)
{
    (void)state;
    tree = calloc(1, sizeof(*tree));
    assert_non_null(tree);
    tree->loop = futoin_loop_new_virtual();
    for (int i = 0; i < 2000; ++i) {
        tree->nodes[i] = i;
    }
    futoin_loop_immediate(tree->loop, &tree->nodes[0], tree_node);
    futoin_loop_run(tree->loop);
    assert_int_equal(tree->next_expected, 2000);
    futoin_loop_free(tree->loop);
    free(tree);
    tree = NULL;
}

typedef struct {
    Tag self;
    Tag child;
} Spawner;

static void log_and_spawn(void* data)
{
    Spawner* sp = data;
    log_tag(&sp->self);
    futoin_loop_immediate(sp->self.log->loop, &sp->child, log_tag);
}

static void test_immediate_queued_in_round_runs_next_round(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Spawner a = { { &log, 1 }, { &log, 3 } };
    Tag c = { &log, 2 };
    futoin_loop_immediate(log.loop, &a, log_and_spawn);
    futoin_loop_immediate(log.loop, &c, log_tag);

    assert_int_equal(futoin_loop_iterate(log.loop, NULL), 1);
    const int first[] = { 1, 2 };
    assert_ids(&log, first, 2);
    assert_int_equal(futoin_loop_pending(log.loop), 1);

    assert_int_equal(futoin_loop_iterate(log.loop, NULL), 0);
    const int second[] = { 1, 2, 3 };
    assert_ids(&log, second, 3);
    futoin_loop_free(log.loop);
}

/* ---- timers ---- */

static void test_timers_ordered_by_due(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag tags[3] = { { &log, 30 }, { &log, 10 }, { &log, 20 } };
    for (int i = 0; i < 3; ++i) {
        futoin_loop_deferred(log.loop, (uint32_t)tags[i].id, &tags[i], log_tag);
    }
    futoin_loop_run(log.loop);
    const int expected[] = { 10, 20, 30 };
    assert_ids(&log, expected, 3);
    for (size_t i = 0; i < 3; ++i) {
        assert_int_equal(log.times[i], (uint64_t)expected[i]);
    }
    futoin_loop_free(log.loop);
}

static void test_timers_equal_due_in_schedule_order(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag tags[6];
    const uint32_t delays[6] = { 10, 10, 5, 10, 10, 5 };
    for (int i = 0; i < 6; ++i) {
        tags[i] = (Tag){ &log, i };
        futoin_loop_deferred(log.loop, delays[i], &tags[i], log_tag);
    }
    futoin_loop_run(log.loop);
    const int expected[] = { 2, 5, 0, 1, 3, 4 };
    assert_ids(&log, expected, 6);
    futoin_loop_free(log.loop);
}

static void test_zero_delay_runs_after_queued_immediates(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, t = { &log, 2 }, b = { &log, 3 };
    futoin_loop_immediate(log.loop, &a, log_tag);
    futoin_loop_deferred(log.loop, 0, &t, log_tag);
    futoin_loop_immediate(log.loop, &b, log_tag);

    assert_int_equal(futoin_loop_iterate(log.loop, NULL), 0);
    const int expected[] = { 1, 3, 2 };
    assert_ids(&log, expected, 3);
    assert_int_equal(futoin_loop_now(log.loop), 0);
    futoin_loop_free(log.loop);
}

typedef struct {
    FutoInLoop* loop;
    int runs;
} Rearm;

static void rearm_zero(void* data)
{
    Rearm* r = data;
    if (++r->runs < 3) {
        futoin_loop_deferred(r->loop, 0, r, rearm_zero);
    }
}

static void test_zero_delay_from_round_waits_next_round(void** state)
{
    (void)state;
    Rearm r = { futoin_loop_new_virtual(), 0 };
    futoin_loop_deferred(r.loop, 0, &r, rearm_zero);
    int64_t delay = -2;

    assert_int_equal(futoin_loop_iterate(r.loop, &delay), 1);
    assert_int_equal(r.runs, 1);
    assert_int_equal(delay, 0);
    assert_int_equal(futoin_loop_iterate(r.loop, &delay), 1);
    assert_int_equal(r.runs, 2);
    assert_int_equal(futoin_loop_iterate(r.loop, &delay), 0);
    assert_int_equal(r.runs, 3);
    assert_int_equal(delay, -1);
    futoin_loop_free(r.loop);
}

static void test_max_delay(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag far = { &log, 1 }, near = { &log, 2 };
    futoin_loop_deferred(log.loop, UINT32_MAX, &far, log_tag);
    futoin_loop_deferred(log.loop, 0, &near, log_tag);

    int64_t delay = 0;
    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 1);
    assert_int_equal(delay, (int64_t)UINT32_MAX);

    futoin_loop_run(log.loop);
    const int expected[] = { 2, 1 };
    assert_ids(&log, expected, 2);
    assert_int_equal(log.times[1], (uint64_t)UINT32_MAX);
    assert_int_equal(futoin_loop_now(log.loop), (uint64_t)UINT32_MAX);
    futoin_loop_free(log.loop);
}

/* ---- aux callbacks ---- */

typedef struct {
    uintptr_t aux[4];
    void* data[4];
    size_t count;
} AuxLog;

static void log_aux(void* data, uintptr_t aux)
{
    AuxLog* log = data;
    log->data[log->count] = data;
    log->aux[log->count] = aux;
    ++log->count;
}

static void test_aux_callbacks(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    AuxLog log = { { 0 }, { 0 }, 0 };
    futoin__loop_deferred_aux(loop, 5, &log, 42, log_aux);
    FutoInHandle h = futoin__loop_immediate_aux(loop, &log, 7, must_not_run2);
    futoin__loop_immediate_aux(loop, &log, UINTPTR_MAX, log_aux);
    futoin_loop_cancel(loop, &h);
    FutoInHandle t = futoin__loop_deferred_aux(loop, 1, &log, 8, must_not_run2);
    assert_true(futoin_loop_is_valid(loop, &t));
    futoin_loop_cancel(loop, &t);

    futoin_loop_run(loop);
    assert_int_equal(log.count, 2);
    assert_int_equal(log.aux[0], UINTPTR_MAX);
    assert_int_equal(log.aux[1], 42);
    assert_ptr_equal(log.data[0], &log);
    assert_ptr_equal(log.data[1], &log);
    futoin_loop_free(loop);
}

/* ---- cancel & handles ---- */

static void test_cancel_immediate(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, c = { &log, 3 };
    futoin_loop_immediate(log.loop, &a, log_tag);
    FutoInHandle b = futoin_loop_immediate(log.loop, NULL, must_not_run);
    futoin_loop_immediate(log.loop, &c, log_tag);

    assert_true(futoin_loop_is_valid(log.loop, &b));
    futoin_loop_cancel(log.loop, &b);
    assert_true(handle_is_zero(&b));
    assert_int_equal(futoin_loop_pending(log.loop), 2);

    futoin_loop_run(log.loop);
    const int expected[] = { 1, 3 };
    assert_ids(&log, expected, 2);
    futoin_loop_free(log.loop);
}

static void test_cancel_timer(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, c = { &log, 3 };
    futoin_loop_deferred(log.loop, 10, &a, log_tag);
    FutoInHandle b = futoin_loop_deferred(log.loop, 20, NULL, must_not_run);
    futoin_loop_deferred(log.loop, 30, &c, log_tag);

    futoin_loop_cancel(log.loop, &b);
    assert_true(handle_is_zero(&b));
    assert_int_equal(futoin_loop_pending(log.loop), 2);

    futoin_loop_run(log.loop);
    const int expected[] = { 1, 3 };
    assert_ids(&log, expected, 2);
    assert_int_equal(log.times[1], 30);
    futoin_loop_free(log.loop);
}

typedef struct {
    FutoInLoop* loop;
    FutoInHandle victims[2];
    int ran;
} Canceller;

static void cancel_victims(void* data)
{
    Canceller* c = data;
    ++c->ran;
    futoin_loop_cancel(c->loop, &c->victims[0]);
    futoin_loop_cancel(c->loop, &c->victims[1]);
}

static void test_cancel_from_other_callback(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Canceller c = { .loop = log.loop };
    Tag after = { &log, 9 };
    futoin_loop_immediate(log.loop, &c, cancel_victims);
    /* Queued in the same round as the canceller, and a due timer. */
    c.victims[0] = futoin_loop_immediate(log.loop, NULL, must_not_run);
    c.victims[1] = futoin_loop_deferred(log.loop, 0, NULL, must_not_run);
    futoin_loop_immediate(log.loop, &after, log_tag);

    futoin_loop_run(log.loop);
    assert_int_equal(c.ran, 1);
    const int expected[] = { 9 };
    assert_ids(&log, expected, 1);
    assert_true(handle_is_zero(&c.victims[0]));
    assert_true(handle_is_zero(&c.victims[1]));
    futoin_loop_free(log.loop);
}

typedef struct {
    FutoInLoop* loop;
    FutoInHandle self;
    int valid_inside;
    int ran;
    Tag replacement;
} SelfCanceller;

/* The replacement most likely reuses the record just freed: cancelling the
 * stale self handle afterwards must not touch it. */
static void cancel_self(void* data)
{
    SelfCanceller* s = data;
    ++s->ran;
    s->valid_inside = futoin_loop_is_valid(s->loop, &s->self);
    futoin_loop_immediate(s->loop, &s->replacement, log_tag);
    futoin_loop_cancel(s->loop, &s->self);
}

static void test_self_cancel(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    SelfCanceller s = { .loop = log.loop, .valid_inside = -1, .replacement = { &log, 5 } };
    s.self = futoin_loop_deferred(log.loop, 3, &s, cancel_self);

    futoin_loop_run(log.loop);
    assert_int_equal(s.ran, 1);
    assert_int_equal(s.valid_inside, 0);
    assert_true(handle_is_zero(&s.self));
    const int expected[] = { 5 };
    assert_ids(&log, expected, 1);
    futoin_loop_free(log.loop);
}

static void test_stale_handle_after_run(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, b = { &log, 2 };
    FutoInHandle h = futoin_loop_immediate(log.loop, &a, log_tag);
    FutoInHandle copy = h;
    futoin_loop_run(log.loop);
    assert_false(futoin_loop_is_valid(log.loop, &h));

    futoin_loop_cancel(log.loop, &h);
    assert_true(handle_is_zero(&h));

    FutoInHandle fresh = futoin_loop_immediate(log.loop, &b, log_tag);
    assert_ptr_equal(fresh.data2, copy.data2); /* same record, new generation */
    assert_false(futoin_loop_is_valid(log.loop, &copy));
    futoin_loop_cancel(log.loop, &copy);
    assert_true(futoin_loop_is_valid(log.loop, &fresh));

    futoin_loop_run(log.loop);
    const int expected[] = { 1, 2 };
    assert_ids(&log, expected, 2);
    futoin_loop_free(log.loop);
}

static void test_stale_handle_after_cancel(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInHandle h = futoin_loop_deferred(loop, 10, NULL, must_not_run);
    FutoInHandle copy = h;
    futoin_loop_cancel(loop, &h);
    assert_false(futoin_loop_is_valid(loop, &copy));
    futoin_loop_cancel(loop, &copy);
    assert_true(handle_is_zero(&copy));
    futoin_loop_cancel(loop, &h);
    assert_int_equal(futoin_loop_pending(loop), 0);
    futoin_loop_run(loop);
    futoin_loop_free(loop);
}

static void test_zero_and_null_handles(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInHandle zero = { NULL, NULL, 0 };
    futoin_loop_cancel(loop, NULL);
    futoin_loop_cancel(loop, &zero);
    assert_true(handle_is_zero(&zero));
    assert_false(futoin_loop_is_valid(loop, NULL));
    assert_false(futoin_loop_is_valid(loop, &zero));

    /* A forged handle pointing past the pool. */
    FutoInHandle forged = { loop, (void*)(uintptr_t)100000, 0 };
    assert_false(futoin_loop_is_valid(loop, &forged));
    futoin_loop_cancel(loop, &forged);
    futoin_loop_free(loop);
}

static void test_handle_from_other_loop(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    FutoInLoop* other = futoin_loop_new_virtual();
    Tag a = { &log, 1 };
    FutoInHandle h = futoin_loop_deferred(log.loop, 1, &a, log_tag);
    FutoInHandle h_other = futoin_loop_deferred(other, 1, NULL, must_not_run);
    FutoInHandle copy = h;

    assert_false(futoin_loop_is_valid(other, &h));
    futoin_loop_cancel(other, &h);
    assert_memory_equal(&h, &copy, sizeof(h));
    assert_true(futoin_loop_is_valid(log.loop, &h));
    assert_int_equal(futoin_loop_pending(other), 1);

    futoin_loop_run(log.loop);
    const int expected[] = { 1 };
    assert_ids(&log, expected, 1);

    futoin_loop_cancel(other, &h_other);
    assert_int_equal(futoin_loop_pending(other), 0);
    futoin_loop_free(other);
    futoin_loop_free(log.loop);
}

/* ---- iterate ---- */

static void spawn_immediate(void* data)
{
    Tag* tag = data;
    futoin_loop_immediate(tag->log->loop, tag, log_tag);
}

static void test_iterate_result_and_delay(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    int64_t delay = 0;
    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 0);
    assert_int_equal(delay, -1);

    Tag imm = { &log, 1 }, timer = { &log, 2 };
    futoin_loop_immediate(log.loop, &imm, spawn_immediate);
    futoin_loop_deferred(log.loop, 250, &timer, log_tag);

    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 1);
    assert_int_equal(delay, 0); /* spawned immediate pending */
    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 1);
    assert_int_equal(delay, 250);
    assert_int_equal(log.count, 1);

    futoin_loop_advance(log.loop, 100);
    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 1);
    assert_int_equal(delay, 150);
    assert_int_equal(futoin_loop_iterate(log.loop, NULL), 1);

    futoin_loop_advance(log.loop, 150);
    const int expected[] = { 1, 2 };
    assert_ids(&log, expected, 2);
    assert_int_equal(futoin_loop_iterate(log.loop, &delay), 0);
    assert_int_equal(delay, -1);
    futoin_loop_free(log.loop);
}

/* ---- virtual clock ---- */

static void test_virtual_run_next(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag i1 = { &log, 1 }, t50 = { &log, 50 }, t20 = { &log, 20 }, i2 = { &log, 2 };
    futoin_loop_deferred(log.loop, 50, &t50, log_tag);
    futoin_loop_deferred(log.loop, 20, &t20, log_tag);
    futoin_loop_immediate(log.loop, &i1, log_tag);
    futoin_loop_immediate(log.loop, &i2, log_tag);

    assert_int_equal(futoin_loop_run_next(log.loop), 1);
    assert_int_equal(log.count, 1);
    assert_int_equal(futoin_loop_run_next(log.loop), 1);
    assert_int_equal(log.count, 2);
    assert_int_equal(futoin_loop_now(log.loop), 0);
    assert_int_equal(futoin_loop_run_next(log.loop), 1);
    assert_int_equal(futoin_loop_now(log.loop), 20);
    assert_int_equal(futoin_loop_run_next(log.loop), 1);
    assert_int_equal(futoin_loop_now(log.loop), 50);
    assert_int_equal(futoin_loop_run_next(log.loop), 0);

    const int expected[] = { 1, 2, 20, 50 };
    assert_ids(&log, expected, 4);
    assert_int_equal(log.times[2], 20);
    assert_int_equal(log.times[3], 50);
    futoin_loop_free(log.loop);
}

typedef struct {
    Tag self;
    Tag imm;
    Tag later;
} Fanout;

static void fanout(void* data)
{
    Fanout* f = data;
    log_tag(&f->self);
    futoin_loop_immediate(f->self.log->loop, &f->imm, log_tag);
    futoin_loop_deferred(f->self.log->loop, 5, &f->later, log_tag);
}

static void test_virtual_advance(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Fanout f = { { &log, 10 }, { &log, 11 }, { &log, 15 } };
    Tag t20 = { &log, 20 }, t30 = { &log, 30 }, t100 = { &log, 100 };
    futoin_loop_deferred(log.loop, 30, &t30, log_tag);
    futoin_loop_deferred(log.loop, 10, &f, fanout);
    futoin_loop_deferred(log.loop, 100, &t100, log_tag);
    futoin_loop_deferred(log.loop, 20, &t20, log_tag);

    futoin_loop_advance(log.loop, 50);
    const int expected[] = { 10, 11, 15, 20, 30 };
    const uint64_t times[] = { 10, 10, 15, 20, 30 };
    assert_ids(&log, expected, 5);
    for (size_t i = 0; i < 5; ++i) {
        assert_int_equal(log.times[i], times[i]);
    }
    assert_int_equal(futoin_loop_now(log.loop), 50);
    assert_int_equal(futoin_loop_pending(log.loop), 1);

    futoin_loop_advance(log.loop, 50);
    assert_int_equal(log.count, 6);
    assert_int_equal(log.times[5], 100);
    assert_int_equal(futoin_loop_now(log.loop), 100);

    futoin_loop_advance(log.loop, 0);
    assert_int_equal(futoin_loop_now(log.loop), 100);
    futoin_loop_free(log.loop);
}

static void test_virtual_run_jumps_clock(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, b = { &log, 2 };
    futoin_loop_deferred(log.loop, 1000, &a, log_tag);
    futoin_loop_deferred(log.loop, 1000, &b, log_tag);
    assert_int_equal(futoin_loop_now(log.loop), 0);

    futoin_loop_run(log.loop);
    const int expected[] = { 1, 2 };
    assert_ids(&log, expected, 2);
    assert_int_equal(log.times[0], 1000);
    assert_int_equal(log.times[1], 1000);
    assert_int_equal(futoin_loop_now(log.loop), 1000);
    futoin_loop_free(log.loop);
}

static void test_real_loop_rejects_virtual_api(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    FutoInHandle h = futoin_loop_deferred(loop, 1000, NULL, must_not_run);
    assert_int_equal(futoin_loop_run_next(loop), -1);
    futoin_loop_advance(loop, 5000);
    assert_int_equal(futoin_loop_pending(loop), 1);
    assert_true(futoin_loop_is_valid(loop, &h));
    futoin_loop_cancel(loop, &h);
    futoin_loop_run(loop);
    futoin_loop_free(loop);
}

/* ---- many timers ---- */

#define MANY 100000

typedef struct {
    uint32_t delay;
    int calls;
    int cancelled;
} ManyTimer;

typedef struct {
    FutoInLoop* loop;
    ManyTimer* timers;
    uint64_t last_time;
    ptrdiff_t last_index;
    size_t calls;
    int in_order;
} ManyRun;

static ManyRun many_run;

static void many_fire(void* data)
{
    ManyTimer* t = data;
    ptrdiff_t index = t - many_run.timers;
    uint64_t now = futoin_loop_now(many_run.loop);
    ++t->calls;
    ++many_run.calls;
    /* Not assert_*: a failure inside 50,000 callbacks should be reported
     * once, after the run. */
    if (now != t->delay || now < many_run.last_time
            || (now == many_run.last_time && index < many_run.last_index)) {
        many_run.in_order = 0;
    }
    many_run.last_time = now;
    many_run.last_index = index;
}

static uint32_t lcg_next(uint32_t* state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static void test_many_timers(void** state)
{
    (void)state;
    ManyTimer* timers = calloc(MANY, sizeof(*timers));
    FutoInHandle* handles = calloc(MANY, sizeof(*handles));
    assert_non_null(timers);
    assert_non_null(handles);
    many_run = (ManyRun){ futoin_loop_new_virtual(), timers, 0, -1, 0, 1 };

    uint32_t seed = 12345;
    for (size_t i = 0; i < MANY; ++i) {
        /* A narrow range forces many equal due times. */
        timers[i].delay = lcg_next(&seed) % 20000;
        handles[i] = futoin_loop_deferred(many_run.loop, timers[i].delay, &timers[i], many_fire);
    }
    size_t cancelled = 0;
    for (size_t i = 0; i < MANY; ++i) {
        if (lcg_next(&seed) & 1) {
            futoin_loop_cancel(many_run.loop, &handles[i]);
            timers[i].cancelled = 1;
            ++cancelled;
        }
    }
    assert_true(cancelled > MANY / 3 && cancelled < MANY * 2 / 3);
    assert_int_equal(futoin_loop_pending(many_run.loop), MANY - cancelled);

    futoin_loop_run(many_run.loop);
    assert_true(many_run.in_order);
    assert_int_equal(many_run.calls, MANY - cancelled);
    for (size_t i = 0; i < MANY; ++i) {
        assert_int_equal(timers[i].calls, timers[i].cancelled ? 0 : 1);
    }
    assert_int_equal(futoin_loop_pending(many_run.loop), 0);
    futoin_loop_free(many_run.loop);
    free(handles);
    free(timers);
}

/* ---- stop ---- */

static void log_and_stop(void* data)
{
    Tag* tag = data;
    log_tag(tag);
    futoin_loop_stop(tag->log->loop);
}

static void test_stop(void** state)
{
    (void)state;
    Log log = { .loop = futoin_loop_new_virtual() };
    Tag a = { &log, 1 }, b = { &log, 2 }, t1 = { &log, 10 }, t2 = { &log, 20 };
    futoin_loop_immediate(log.loop, &a, log_and_stop);
    futoin_loop_immediate(log.loop, &b, log_tag);
    futoin_loop_deferred(log.loop, 5, &t1, log_and_stop);
    futoin_loop_deferred(log.loop, 5, &t2, log_tag);

    futoin_loop_run(log.loop);
    const int first[] = { 1 };
    assert_ids(&log, first, 1);
    assert_int_equal(futoin_loop_pending(log.loop), 3);

    futoin_loop_run(log.loop);
    const int second[] = { 1, 2, 10 };
    assert_ids(&log, second, 3);
    assert_int_equal(futoin_loop_pending(log.loop), 1);

    futoin_loop_run(log.loop);
    const int third[] = { 1, 2, 10, 20 };
    assert_ids(&log, third, 4);
    futoin_loop_free(log.loop);
}

/* ---- lifetime ---- */

static void test_free_with_pending(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    for (int i = 0; i < 200; ++i) {
        futoin_loop_immediate(loop, NULL, must_not_run);
        futoin_loop_deferred(loop, (uint32_t)i, NULL, must_not_run);
        futoin__loop_deferred_aux(loop, 7, NULL, 1, must_not_run2);
    }
    futoin_loop_free(loop);

    FutoInLoop* real = futoin_loop_new();
    futoin_loop_deferred(real, 0, NULL, must_not_run);
    futoin_loop_free(real);
    futoin_loop_free(NULL);
}

typedef struct {
    FutoInLoop* loop;
    FutoInHandle pending;
    int destroyed;
    int pending_valid;
} EngineCtx;

static void engine_destroy(void* data)
{
    EngineCtx* ctx = data;
    ++ctx->destroyed;
    /* Engines cancel their handles while tearing down: must be harmless. */
    ctx->pending_valid = futoin_loop_is_valid(ctx->loop, &ctx->pending);
    futoin_loop_cancel(ctx->loop, &ctx->pending);
}

static int destroy_calls;

static void count_destroy(void* data)
{
    (void)data;
    ++destroy_calls;
}

static void test_engine_slot_destructor(void** state)
{
    (void)state;
    EngineCtx ctx = { .pending_valid = -1 };
    ctx.loop = futoin_loop_new_virtual();
    void** slot = futoin__loop_engine_slot(ctx.loop);
    assert_non_null(slot);
    assert_null(*slot);
    assert_ptr_equal(futoin__loop_engine_slot(ctx.loop), slot);
    *slot = &ctx;
    futoin__loop_set_engine_free(ctx.loop, engine_destroy);
    ctx.pending = futoin_loop_deferred(ctx.loop, 10, NULL, must_not_run);

    futoin_loop_free(ctx.loop);
    assert_int_equal(ctx.destroyed, 1);
    assert_int_equal(ctx.pending_valid, 0);

    /* No value in the slot: the destructor is not called. */
    FutoInLoop* loop = futoin_loop_new_virtual();
    futoin__loop_set_engine_free(loop, count_destroy);
    futoin_loop_free(loop);
    assert_int_equal(destroy_calls, 0);
}

typedef struct {
    FutoInLoop* loop;
    int same;
} ThreadProbe;

static void* probe_thread(void* data)
{
    ThreadProbe* probe = data;
    probe->same = futoin_loop_is_same_thread(probe->loop);
    return NULL;
}

static void test_is_same_thread(void** state)
{
    (void)state;
    ThreadProbe probe = { futoin_loop_new(), -1 };
    assert_int_equal(futoin_loop_is_same_thread(probe.loop), 1);

    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, probe_thread, &probe), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(probe.same, 0);
    futoin_loop_free(probe.loop);
}

/* ---- real clock ---- */

typedef struct {
    FutoInLoop* loop;
    uint64_t fired_ns;
    uint64_t fired_ms;
    int calls;
} RealTimer;

static void real_fire(void* data)
{
    RealTimer* t = data;
    t->fired_ns = clock_ns();
    t->fired_ms = futoin_loop_now(t->loop);
    ++t->calls;
}

static void test_real_clock_timer_not_early(void** state)
{
    (void)state;
    enum { DELAY_MS = 12 };
    RealTimer t = { futoin_loop_new(), 0, 0, 0 };
    uint64_t start_ns = clock_ns();
    uint64_t start_ms = futoin_loop_now(t.loop);
    futoin_loop_deferred(t.loop, DELAY_MS, &t, real_fire);

    int64_t delay = -1;
    assert_int_equal(futoin_loop_iterate(t.loop, &delay), 1);
    assert_true(delay >= 0 && delay <= DELAY_MS);

    futoin_loop_run(t.loop);
    assert_int_equal(t.calls, 1);
    assert_true(t.fired_ns - start_ns >= (uint64_t)DELAY_MS * 1000000u);
    assert_true(t.fired_ms - start_ms >= DELAY_MS);
    assert_true(futoin_loop_now(t.loop) >= start_ms + DELAY_MS);
    futoin_loop_free(t.loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_immediate_fifo),
        cmocka_unit_test(test_immediate_fifo_across_ring_growth),
        cmocka_unit_test(test_immediate_queued_in_round_runs_next_round),
        cmocka_unit_test(test_timers_ordered_by_due),
        cmocka_unit_test(test_timers_equal_due_in_schedule_order),
        cmocka_unit_test(test_zero_delay_runs_after_queued_immediates),
        cmocka_unit_test(test_zero_delay_from_round_waits_next_round),
        cmocka_unit_test(test_max_delay),
        cmocka_unit_test(test_aux_callbacks),
        cmocka_unit_test(test_cancel_immediate),
        cmocka_unit_test(test_cancel_timer),
        cmocka_unit_test(test_cancel_from_other_callback),
        cmocka_unit_test(test_self_cancel),
        cmocka_unit_test(test_stale_handle_after_run),
        cmocka_unit_test(test_stale_handle_after_cancel),
        cmocka_unit_test(test_zero_and_null_handles),
        cmocka_unit_test(test_handle_from_other_loop),
        cmocka_unit_test(test_iterate_result_and_delay),
        cmocka_unit_test(test_virtual_run_next),
        cmocka_unit_test(test_virtual_advance),
        cmocka_unit_test(test_virtual_run_jumps_clock),
        cmocka_unit_test(test_real_loop_rejects_virtual_api),
        cmocka_unit_test(test_many_timers),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_free_with_pending),
        cmocka_unit_test(test_engine_slot_destructor),
        cmocka_unit_test(test_is_same_thread),
        cmocka_unit_test(test_real_clock_timer_not_early),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
