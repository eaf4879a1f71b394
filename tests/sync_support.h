/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the sync object tests (Mutex, Throttle, Limiter). A "worker" is
 * one flow (a root of its own, or a parallel branch) that optionally waits
 * start_ms, then runs a sync step whose critical section stays hold_ms and
 * leaves. What it sees goes to the trace with the virtual time:
 *   "A>t"    A entered the critical section at t
 *   "A<t"    A left it normally at t
 *   "A~t"    A was aborted inside it (cancel handler of its wait) at t
 *   "A!C@t"  error C reached A's handler outside the sync step at t (the
 *            handler recovers, so the root completes, unless no_recover)
 * Not a test itself: only test_*.c are built as tests.
 */
#ifndef FUTOIN_SYNC_SUPPORT_H
#define FUTOIN_SYNC_SUPPORT_H

#include "tsupport.h"

#include <futoin/sync.h>

#define HOLD_FOREVER UINT32_MAX

typedef struct Worker {
    const char* name;
    FutoInSync* sync;
    uint32_t start_ms;   /* wait before the sync step */
    uint32_t hold_ms;    /* time inside; HOLD_FOREVER: until aborted */
    uint32_t timeout_ms; /* 0: none; else a timeout on the step around the sync step */
    int fail_inside;     /* the critical section fails with "Fail" at its end */
    int no_recover;      /* the outer handler lets errors escape */
    int cs_eh;           /* the critical section step gets an error handler
                          * that traces "A?C" and does not recover */
    /* filled in */
    FutoInAsyncSteps* root;    /* when the worker is a root of its own */
    FutoInAsyncSteps* waiting; /* the flow whose step waits for w->timer */
    FutoInHandle timer;
    int entered;
    int left;
    int aborted;
    int errors;
    uint64_t entered_at;
    char last_error[64];
    char last_info[128];
} Worker;

static int g_inside;
static int g_max_inside;

static inline void sync_counters_reset(void)
{
    g_inside = 0;
    g_max_inside = 0;
}

static inline unsigned long long vt(void)
{
    return (unsigned long long)now_ms();
}

/* ---- a step that waits ms on a loop timer (cancel stops the timer) ---- */

static inline void w_timer_fired(void* data)
{
    Worker* w = (Worker*)data;
    memset(&w->timer, 0, sizeof(w->timer));
    futoin_success(w->waiting);
}

static inline void w_wait_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Worker* w = (Worker*)data;
    futoin_loop_cancel(g_loop, &w->timer);
}

static inline void w_wait(FutoInAsyncSteps* as, Worker* w, uint32_t ms)
{
    w->waiting = as;
    if (ms != HOLD_FOREVER) {
        w->timer = futoin_loop_deferred(g_loop, ms, w, w_timer_fired);
    }
    futoin_set_cancel(as, w_wait_cancel, w);
}

/* ---- the critical section ---- */

static inline void w_hold_cancel(FutoInAsyncSteps* as, void* data)
{
    Worker* w = (Worker*)data;
    w_wait_cancel(as, data);
    --g_inside;
    ++w->aborted;
    tr("%s~%llu", w->name, vt());
}

static inline void w_hold(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = (Worker*)data;
    w->waiting = as;
    if (w->hold_ms != HOLD_FOREVER) {
        w->timer = futoin_loop_deferred(g_loop, w->hold_ms, w, w_timer_fired);
    }
    futoin_set_cancel(as, w_hold_cancel, w);
}

static inline void w_leave(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = (Worker*)data;
    --g_inside;
    ++w->left;
    tr("%s<%llu", w->name, vt());
    if (w->fail_inside) {
        futoin_error(as, "Fail", w->name);
    }
}

static inline void w_cs(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = (Worker*)data;
    ++w->entered;
    w->entered_at = now_ms();
    if (++g_inside > g_max_inside) {
        g_max_inside = g_inside;
    }
    tr("%s>%llu", w->name, vt());
    futoin_add(as, w_hold, NULL, w);
    futoin_add(as, w_leave, NULL, w);
}

/* ---- the flow around it ---- */

static inline void w_outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Worker* w = (Worker*)data;
    ++w->errors;
    snprintf(w->last_error, sizeof(w->last_error), "%s", code);
    snprintf(w->last_info, sizeof(w->last_info), "%s", futoin_error_info(as));
    tr("%s!%s@%llu", w->name, code, vt());
    if (!w->no_recover) {
        futoin_success(as);
    }
}

static inline void w_cs_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("%s?%s", ((Worker*)data)->name, code);
}

static inline void w_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = (Worker*)data;
    if (w->timeout_ms) {
        futoin_set_timeout(as, w->timeout_ms);
    }
    futoin_add_sync(as, w->sync, w_cs, w->cs_eh ? w_cs_eh : NULL, w);
}

static inline void w_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Worker* w = (Worker*)data;
    if (w->start_ms) {
        w_wait(as, w, w->start_ms);
    }
}

/* Adds the worker's steps to as (a root before execute(), a parallel
 * interface, or a running step). */
static inline void worker_add(FutoInAsyncSteps* as, Worker* w)
{
    futoin_add(as, w_start, NULL, w);
    futoin_add(as, w_outer, w_outer_eh, w);
}

static inline void w_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    worker_add(as, (Worker*)data);
}

/* Adds the worker as one parallel branch of p. */
static inline void worker_branch(FutoInAsyncSteps* p, Worker* w)
{
    futoin_add(p, w_branch, NULL, w);
}

/* A root running the worker, executed at once (nothing runs until the loop
 * does). */
static inline void worker_run(Worker* w)
{
    w->root = futoin_asyncsteps_new(g_loop);
    assert_non_null(w->root);
    worker_add(w->root, w);
    futoin_execute(w->root, no_unhandled, NULL);
}

static inline void workers_free(Worker* ws, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        futoin_asyncsteps_free(ws[i].root);
        ws[i].root = NULL;
    }
}

static inline void cancel_root_cb(void* data)
{
    futoin_cancel((FutoInAsyncSteps*)data);
}

/* Cancels a root from a loop callback at virtual time ms. */
static inline void cancel_at(FutoInAsyncSteps* root, uint32_t ms)
{
    futoin_loop_deferred(g_loop, ms, root, cancel_root_cb);
}

static inline FutoInSyncStats sync_stats(FutoInSync* s)
{
    FutoInSyncStats st;
    assert_int_equal(futoin_sync_stats(s, &st), FUTOIN_SYNC_OK);
    return st;
}

/* The object holds nothing: nobody inside, nobody queued. */
static inline void assert_sync_idle(FutoInSync* s)
{
    FutoInSyncStats st = sync_stats(s);
    assert_int_equal(st.active, 0);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.slots_used, 0);
}

/* Frees the object, which must be idle (also proves no node leaked). */
static inline void sync_free_ok(FutoInSync* s)
{
    assert_sync_idle(s);
    assert_int_equal(futoin_sync_free(s), FUTOIN_SYNC_OK);
}

/* ---- a custom value whose cleanup is counted, carried through sync ---- */

static inline void step_args_in(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Counted* c = (Counted*)data;
    futoin_success2(as, futoin_val_i32(7), counted_val(c));
}

/* Snapshot of a sync object's stats, taken from a loop callback at a
 * chosen virtual time (schedule stats_cb with futoin_loop_deferred). */
typedef struct StatsAt {
    FutoInSync* sync;
    FutoInSyncStats st;
} StatsAt;

static inline void stats_cb(void* data)
{
    StatsAt* s = data;
    assert_int_equal(futoin_sync_stats(s->sync, &s->st), FUTOIN_SYNC_OK);
}

#endif
