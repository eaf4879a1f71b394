/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the engine tests (not a test itself: only test_*.c are
 * built as tests). Each test records the callbacks it sees into a trace
 * string ("a|b|c") and compares it with the expected sequence; misuse
 * reports are captured so that a test can assert there were none (or the
 * ones it provoked).
 */
#ifndef FUTOIN_TSUPPORT_H
#define FUTOIN_TSUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>

#include "trace_support.h"

#ifdef FUTOIN_TEST_FOREIGN
/* Interop mode: the engines schedule flows differently within one instant
 * of the virtual clock, so traces are compared instant by instant: the
 * same events at the same times, in any order within an instant. An
 * event's time is the number that ends it ("A>10", "B!Fail@10"); an event
 * without one belongs to the instant of the event before it. A trace
 * with no timed event at all is compared exactly. */
typedef struct TsEvent {
    unsigned long long t;
    const char* s;
    size_t len;
} TsEvent;

static inline size_t ts_events(const char* trace, TsEvent* ev, size_t max, int* timed)
{
    size_t n = 0;
    unsigned long long t = 0;
    const char* p = trace;
    while (*p && n < max) {
        const char* end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t d = len;
        while (d > 0 && p[d - 1] >= '0' && p[d - 1] <= '9') {
            --d;
        }
        if (d < len && d > 0 && strchr("<>~@", p[d - 1])) {
            t = strtoull(p + d, NULL, 10);
            *timed = 1;
        }
        ev[n].t = t;
        ev[n].s = p;
        ev[n].len = len;
        ++n;
        p += len + (end ? 1 : 0);
    }
    return n;
}

static inline int ts_event_cmp(const void* a, const void* b)
{
    const TsEvent* x = (const TsEvent*)a;
    const TsEvent* y = (const TsEvent*)b;
    if (x->t != y->t) {
        return x->t < y->t ? -1 : 1;
    }
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

static inline int ts_same_in_time(const char* got, const char* want)
{
    static TsEvent a[512], b[512];
    int timed_a = 0, timed_b = 0;
    size_t na = ts_events(got, a, 512, &timed_a);
    size_t nb = ts_events(want, b, 512, &timed_b);
    if (na != nb || !timed_b) {
        return 0; /* untimed traces (one flow's order) compare exactly */
    }
    for (size_t i = 1; i < na; ++i) {
        if (a[i].t < a[i - 1].t || b[i].t < b[i - 1].t) {
            return 0; /* time must not go backwards in either */
        }
    }
    qsort(a, na, sizeof(TsEvent), ts_event_cmp);
    qsort(b, nb, sizeof(TsEvent), ts_event_cmp);
    for (size_t i = 0; i < na; ++i) {
        if (ts_event_cmp(&a[i], &b[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

#undef assert_trace
#define assert_trace(expected)                                                                     \
    do {                                                                                           \
        if (!ts_same_in_time(g_trace, (expected))) {                                               \
            assert_string_equal(g_trace, (expected));                                              \
        }                                                                                          \
    } while (0)
#endif

/* ---- environment: one virtual loop per test, misuse captured ---- */

static FutoInLoop* g_loop;
static int g_misuse;
static char g_misuse_msg[256];

static inline void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    ++g_misuse;
    snprintf(g_misuse_msg, sizeof(g_misuse_msg), "%s", info);
}

#ifdef FUTOIN_TEST_FOREIGN
/* ---- interop mode (docs/INTEROP.md) ----
 * The same test source built a second time (target <name>_foreign): every
 * root the test makes with futoin_asyncsteps_new() is a root of the strict
 * foreign implementation in tests/foreign/, on a loop of its own whose
 * virtual clock run() keeps equal to g_loop's. What the test does on g_loop
 * (timers, sync objects' windows) stays on our loop. */
#include "foreign/foreign_asyncsteps.h"

static FrnLoop* g_frn;
static int g_violations;
static char g_violation_msg[256];

static inline void frn_on_misuse(void* data, const char* what)
{
    on_misuse(data, NULL, what);
}

/* A breach of the interface contract found by the strict implementation:
 * recorded (callbacks must not assert), failed in env_teardown. */
static inline void frn_on_violation(void* data, const char* what)
{
    (void)data;
    if (!g_violations++) {
        snprintf(g_violation_msg, sizeof(g_violation_msg), "%s", what);
    }
    fprintf(stderr, "interop: VIOLATION: %s\n", what);
}

static inline FutoInAsyncSteps* ts_root_new(FutoInLoop* loop)
{
    (void)loop;
    return frn_root_new(g_frn);
}
#define futoin_asyncsteps_new(loop) ts_root_new(loop)

/* One pass over both loops: what is ready on either runs; when neither
 * has anything ready, both clocks move to the earlier of their next
 * timers. Returns 0 when both loops are empty. */
static inline int ts_pass(void)
{
    size_t ran = frn_loop_run_ready(g_frn);
    int64_t delay = -1;
    futoin_loop_iterate(g_loop, &delay);
    if (ran || delay == 0 || frn_loop_run_ready(g_frn)) {
        return 1;
    }
    uint64_t now = futoin_loop_now(g_loop);
    uint64_t next = UINT64_MAX;
    if (delay > 0) {
        next = now + (uint64_t)delay;
    }
    int64_t due = frn_loop_next_due(g_frn);
    if (due >= 0 && (uint64_t)due < next) {
        next = (uint64_t)due;
    }
    if (next == UINT64_MAX) {
        return 0;
    }
    if (next > now) {
        futoin_loop_advance(g_loop, next - now);
    }
    frn_loop_set_now(g_frn, next > now ? next : now);
    return 1;
}
#endif

/* Marks a test that only applies to this library's own objects or to our
 * engine's scheduler (reason says which); interop mode skips it, visibly.
 * test_interop.c checks how own-only calls refuse foreign objects. */
#ifdef FUTOIN_TEST_FOREIGN
#define OWN_ONLY(reason) skip()
#else
#define OWN_ONLY(reason) ((void)0)
#endif

static inline int env_setup(void** state)
{
    (void)state;
    tr_reset();
    g_misuse = 0;
    g_misuse_msg[0] = '\0';
    g_loop = futoin_loop_new_virtual();
    if (!g_loop) {
        return -1;
    }
    futoin_set_misuse_handler(g_loop, on_misuse, NULL);
#ifdef FUTOIN_TEST_FOREIGN
    g_frn = frn_loop_new();
    if (!g_frn) {
        return -1;
    }
    frn_set_misuse_handler(g_frn, frn_on_misuse, NULL);
    frn_set_violation_handler(g_frn, frn_on_violation, NULL);
    g_violations = 0;
#endif
    return 0;
}

static inline int env_teardown(void** state)
{
    (void)state;
#ifdef FUTOIN_TEST_FOREIGN
    /* Everything the test made on the foreign side must be gone. After a
     * failed assertion roots may be left: then both loops are left too
     * (the test has failed already; freeing would only crash). */
    size_t live = frn_live_objects(g_frn);
    if (live == 0) {
        frn_loop_free(g_frn);
        futoin_loop_free(g_loop);
    }
    g_frn = NULL;
    g_loop = NULL;
    assert_int_equal(live, 0);
    if (g_violations) {
        fail_msg("%d interface violation(s), first: %s", g_violations, g_violation_msg);
    }
    return 0;
#else
    futoin_loop_free(g_loop);
    g_loop = NULL;
    return 0;
#endif
}

/* fn as a cmocka test of this environment (env_setup() and env_teardown()).
 * Each fixture has a registration macro named after it: ENV_TEST here,
 * UV_TEST (uv/uv_tsupport.h), MISUSE_TEST (misuse_support.h). */
#define ENV_TEST(fn) cmocka_unit_test_setup_teardown(fn, env_setup, env_teardown)

static inline uint64_t now_ms(void)
{
    return futoin_loop_now(g_loop);
}

/* ---- values with a counted cleanup ---- */

/* The object of a counted value: its cleanup increments *cleanups. */
typedef struct Counted {
    int id;
    int cleanups;
} Counted;

static inline void counted_cleanup(FutoInBinaryValue* v)
{
    Counted* c = (Counted*)v->custom_data;
    ++c->cleanups;
}

static const FutoInType counted_type = { FTN_TYPE_CUSTOM_OBJECT, counted_cleanup };

static inline FutoInBinaryValue counted_val(Counted* c)
{
    return futoin_val_custom(&counted_type, c);
}

/* ---- unhandled error recorder ---- */

typedef struct Unhandled {
    int calls;
    FutoInAsyncSteps* as;
    char code[64];
    char info[128];
} Unhandled;

static inline void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Unhandled* u = (Unhandled*)data;
    ++u->calls;
    u->as = as;
    snprintf(u->code, sizeof(u->code), "%s", code);
    snprintf(u->info, sizeof(u->info), "%s", futoin_error_info(as));
    tr("unhandled:%s", code);
}

/* An unhandled_error callback for tests that expect none. */
static inline void no_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    fail_msg("unexpected unhandled error %s (%s)", code, futoin_error_info(as));
}

/* Runs the loop until it is empty (in interop mode: both loops). */
static inline void run(void)
{
#ifdef FUTOIN_TEST_FOREIGN
    while (ts_pass()) {
    }
#else
    futoin_loop_run(g_loop);
#endif
}

/* Runs the next callback (interop mode: one pass over both loops).
 * Returns 0 when nothing was left to run. */
static inline int run_next(void)
{
#ifdef FUTOIN_TEST_FOREIGN
    return ts_pass();
#else
    return futoin_loop_run_next(g_loop);
#endif
}

/* A named callback event: steps that only record themselves. */
static inline void step_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
}

static inline void step_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_error(as, "Fail", (const char*)data);
}

static inline void must_not_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    fail_msg("step '%s' must not run", data ? (const char*)data : "?");
}

static inline void cancel_tag(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    tr("cancel:%s", (const char*)data);
}

static inline void step_wait_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
}

static inline void eh_tag(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("eh:%s:%s", (const char*)data, code);
}

#endif
