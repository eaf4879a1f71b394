/* SPDX-License-Identifier: MIT */
/* The tracing build (FUTOIN_TRACING): frames keep their step's callback and
 * where add() was called, errors carry the chain of steps that led to them,
 * the dump prints both. Built against a traced copy of the library (see
 * tests/CMakeLists.txt) and linked with -rdynamic, so that the callbacks
 * below (not static on purpose) get names from dladdr(). */
#define _POSIX_C_SOURCE 200809L /* fmemopen() */

#include "tsupport.h"

#include <futoin/introspect.h>

/* ---- what the error handlers and unhandled-error callbacks saw ---- */

typedef struct Seen {
    int calls;
    char code[32];
    size_t n;
    size_t total;
    FutoInTraceEntry e[FUTOIN_TRACE_MAX];
    char printed[65536]; /* 64 lines with the build's absolute paths */
} Seen;

static Seen g_eh;        /* in an error handler */
static Seen g_unhandled; /* in the unhandled-error callback */

static void see(Seen* s, FutoInAsyncSteps* as, const char* code)
{
    ++s->calls;
    snprintf(s->code, sizeof(s->code), "%s", code);
    const FutoInTraceEntry* e = NULL;
    s->n = futoin_error_trace(as, &e, &s->total);
    if (s->n) {
        memcpy(s->e, e, s->n * sizeof(*e));
    }
    FILE* f = fmemopen(s->printed, sizeof(s->printed), "w");
    assert_non_null(f);
    futoin_error_trace_print(as, f);
    /* A full buffer would cut the innermost lines: the checks need them all. */
    assert_true(ftell(f) < (long)sizeof(s->printed) - 1);
    fclose(f);
}

void trace_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    see(&g_unhandled, as, code);
}

void trace_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    see(&g_eh, as, code);
    /* not handled: the error goes on to the unhandled-error callback */
}

static void reset_seen(void)
{
    memset(&g_eh, 0, sizeof(g_eh));
    memset(&g_unhandled, 0, sizeof(g_unhandled));
}

static int ends_with(const char* s, const char* tail)
{
    size_t a = s ? strlen(s) : 0;
    size_t b = strlen(tail);
    return s && a >= b && strcmp(s + a - b, tail) == 0;
}

#define FN(f) ((void (*)(void))(f))

/* ---- an error three levels deep ---- */

/* The line of each add() is taken with __LINE__ on the same line, which
 * clang-format would split in two: those lines are marked off for it. */
static unsigned g_line1;
static unsigned g_line2;
static unsigned g_line3;

void level3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "Deep", "raised three levels down");
}

void not_reached(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    tr("not reached");
}

void level2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    /* clang-format off */
    g_line3 = __LINE__; futoin_add(as, level3, NULL, NULL);
    /* clang-format on */
    futoin_add(as, not_reached, NULL, NULL);
}

void level1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    /* clang-format off */
    g_line2 = __LINE__; futoin_add(as, level2, NULL, NULL);
    /* clang-format on */
}

static void test_enabled(void** state)
{
    (void)state;
    assert_int_equal(futoin_tracing_enabled(), 1);
    assert_int_equal(FUTOIN_TRACING, 1);
}

static void test_error_three_levels_deep(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    /* No error yet: no trace. */
    assert_int_equal(futoin_error_trace(root, NULL, NULL), 0);
    /* clang-format off */
    g_line1 = __LINE__; futoin_add(root, level1, trace_eh, NULL);
    /* clang-format on */
    futoin_execute(root, trace_unhandled, NULL);
    run();
    /* The handler of level 1 and the unhandled-error callback both see the
     * chain, outermost first, with the line of each add(). */
    Seen* all[2] = { &g_eh, &g_unhandled };
    for (int i = 0; i < 2; ++i) {
        Seen* s = all[i];
        assert_int_equal(s->calls, 1);
        assert_string_equal(s->code, "Deep");
        assert_int_equal(s->n, 3);
        assert_int_equal(s->total, 3);
        assert_ptr_equal(s->e[0].callback, FN(level1));
        assert_ptr_equal(s->e[1].callback, FN(level2));
        assert_ptr_equal(s->e[2].callback, FN(level3));
        assert_int_equal(s->e[0].line, g_line1);
        assert_int_equal(s->e[1].line, g_line2);
        assert_int_equal(s->e[2].line, g_line3);
        for (int k = 0; k < 3; ++k) {
            assert_true(ends_with(s->e[k].file, "test_tracing.c"));
            assert_int_equal(s->e[k].kind, FUTOIN_FRAME_STEP);
        }
    }
    /* Printed with the names dladdr() finds. */
    char want[128];
    snprintf(want, sizeof(want), "  #1 step level1 (");
    assert_non_null(strstr(g_unhandled.printed, want));
    snprintf(want, sizeof(want), "test_tracing.c:%u)\n  #2 step level2 (", g_line1);
    assert_non_null(strstr(g_unhandled.printed, want));
    snprintf(want, sizeof(want), "test_tracing.c:%u)\n", g_line3);
    assert_non_null(strstr(g_unhandled.printed, want));
    /* Kept with the root until it is freed; a reused root starts clean. */
    assert_int_equal(futoin_error_trace(root, NULL, NULL), 3);
    futoin_asyncsteps_free(root);
    root = futoin_asyncsteps_new(g_loop);
    assert_int_equal(futoin_error_trace(root, NULL, NULL), 0);
    futoin_asyncsteps_free(root);
}

/* ---- a Timeout ends the trace at the step that timed out ---- */

void wait_long(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 50);
}

void timed_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, wait_long, NULL, NULL);
}

static void test_timeout_trace(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, timed_outer, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_string_equal(g_unhandled.code, FUTOIN_TIMEOUT);
    assert_int_equal(g_unhandled.n, 2);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(timed_outer));
    assert_ptr_equal(g_unhandled.e[1].callback, FN(wait_long));
    futoin_asyncsteps_free(root);
}

/* ---- a branch's chain continues its parent's ---- */

static unsigned g_branch_line;

void branch_inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "BranchFailed", NULL);
}

void branch_body(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, branch_inner, NULL, NULL);
}

void make_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    /* clang-format off */
    g_branch_line = __LINE__; futoin_add(p, branch_body, NULL, NULL);
    /* clang-format on */
}

static void test_branch_trace(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, make_parallel, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_string_equal(g_unhandled.code, "BranchFailed");
    assert_int_equal(g_unhandled.n, 4);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(make_parallel));
    assert_int_equal(g_unhandled.e[1].kind, FUTOIN_FRAME_PARALLEL);
    assert_null(g_unhandled.e[1].callback);
    assert_true(ends_with(g_unhandled.e[1].file, "test_tracing.c"));
    assert_ptr_equal(g_unhandled.e[2].callback, FN(branch_body));
    assert_int_equal(g_unhandled.e[2].line, g_branch_line);
    assert_ptr_equal(g_unhandled.e[3].callback, FN(branch_inner));
    futoin_asyncsteps_free(root);
}

/* ---- each branch reads its own trace; the root gets the one that
 * escaped ---- */

static FutoInAsyncSteps* g_parked[2];
static Seen g_branch_eh[2];

void park_a(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_parked[0] = as;
    futoin_wait_external(as);
}

void park_b(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_parked[1] = as;
    futoin_wait_external(as);
}

void branch_eh_a(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    see(&g_branch_eh[0], as, code);
    futoin_success(as);
}

void branch_eh_b(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    see(&g_branch_eh[1], as, code); /* not handled: B fails the root */
}

void outer_a(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, park_a, branch_eh_a, NULL);
}

void two_parked(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, outer_a, NULL, NULL);
    futoin_add(p, park_b, branch_eh_b, NULL);
}

/* Both errors in one loop callback: no handler runs in between. */
static void raise_both(void* data)
{
    (void)data;
    futoin_error(g_parked[0], "EA", NULL);
    futoin_error(g_parked[1], "EB", NULL);
}

static void test_branch_traces_own(void** state)
{
    (void)state;
    reset_seen();
    memset(g_branch_eh, 0, sizeof(g_branch_eh));
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, two_parked, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    futoin_loop_deferred(g_loop, 10, NULL, raise_both);
    run();
    /* A's handler: A's chain, though B's error was raised after it. */
    Seen* a = &g_branch_eh[0];
    assert_int_equal(a->calls, 1);
    assert_string_equal(a->code, "EA");
    assert_int_equal(a->n, 4);
    assert_ptr_equal(a->e[0].callback, FN(two_parked));
    assert_int_equal(a->e[1].kind, FUTOIN_FRAME_PARALLEL);
    assert_ptr_equal(a->e[2].callback, FN(outer_a));
    assert_ptr_equal(a->e[3].callback, FN(park_a));
    /* B's handler and then the root's unhandled-error callback: B's. */
    Seen* all[2] = { &g_branch_eh[1], &g_unhandled };
    for (int i = 0; i < 2; ++i) {
        Seen* b = all[i];
        assert_int_equal(b->calls, 1);
        assert_string_equal(b->code, "EB");
        assert_int_equal(b->n, 3);
        assert_ptr_equal(b->e[0].callback, FN(two_parked));
        assert_int_equal(b->e[1].kind, FUTOIN_FRAME_PARALLEL);
        assert_ptr_equal(b->e[2].callback, FN(park_b));
    }
    assert_non_null(strstr(g_unhandled.printed, " park_b ("));
    assert_null(strstr(g_unhandled.printed, "park_a"));
    /* The failed root keeps it. */
    const FutoInTraceEntry* e = NULL;
    assert_int_equal(futoin_error_trace(root, &e, NULL), 3);
    assert_ptr_equal(e[2].callback, FN(park_b));
    futoin_asyncsteps_free(root);
    /* Recycled branch flows start without a trace. */
    root = futoin_asyncsteps_new(g_loop);
    g_parked[0] = g_parked[1] = NULL;
    futoin_add(root, two_parked, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    run(); /* until both branches are parked */
    assert_non_null(g_parked[0]);
    assert_non_null(g_parked[1]);
    assert_int_equal(futoin_error_trace(g_parked[0], NULL, NULL), 0);
    assert_int_equal(futoin_error_trace(g_parked[1], NULL, NULL), 0);
    futoin_asyncsteps_free(root);
}

/* ---- a chain longer than FUTOIN_TRACE_MAX keeps its innermost steps ---- */

enum { DEEP = 100 };

void deeper(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    size_t left = (size_t)(uintptr_t)data;
    if (left == 1) {
        futoin_error(as, "Bottom", NULL);
        return;
    }
    futoin_add(as, deeper, NULL, (void*)(uintptr_t)(left - 1));
}

static void test_long_chain(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, deeper, NULL, (void*)(uintptr_t)DEEP);
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_string_equal(g_unhandled.code, "Bottom");
    assert_int_equal(g_unhandled.n, FUTOIN_TRACE_MAX);
    assert_int_equal(g_unhandled.total, DEEP);
    assert_ptr_equal(g_unhandled.e[FUTOIN_TRACE_MAX - 1].callback, FN(deeper));
    char want[64];
    snprintf(want, sizeof(want), "  ... %d outer steps ...\n", DEEP - (int)FUTOIN_TRACE_MAX);
    assert_non_null(strstr(g_unhandled.printed, want));
    snprintf(want, sizeof(want), "  #%d step deeper (", DEEP);
    assert_non_null(strstr(g_unhandled.printed, want));
    futoin_asyncsteps_free(root);
}

/* ---- misuse: the InternalError's trace ends at the misusing step ---- */

void misuser(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, NULL, NULL, NULL);
}

static void test_misuse_trace(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, misuser, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_string_equal(g_unhandled.code, FUTOIN_INTERNAL_ERROR);
    assert_int_equal(g_unhandled.n, 1);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(misuser));
    futoin_asyncsteps_free(root);
}

/* ---- loops and the frame walk ---- */

static unsigned g_loop_line;
static char g_dump[8192];

void loop_body(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 1000);
}

void loop_iteration(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    futoin_add(as, loop_body, NULL, NULL);
}

void start_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    /* clang-format off */
    g_loop_line = __LINE__; futoin_add_loop(as, loop_iteration, NULL, "outer");
    /* clang-format on */
}

static void test_frames_and_dump(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, start_loop, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    futoin_loop_advance(g_loop, 10); /* parked in loop_body's timeout */
    FutoInFrameInfo fi;
    assert_int_equal(futoin_frame_info(root, 2, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.kind, FUTOIN_FRAME_LOOP);
    assert_ptr_equal(fi.callback, FN(loop_iteration));
    assert_int_equal(fi.line, g_loop_line);
    assert_true(ends_with(fi.file, "test_tracing.c"));
    assert_int_equal(futoin_frame_info(root, 3, &fi, sizeof(fi)), 0);
    assert_ptr_equal(fi.callback, FN(loop_body));
    assert_int_equal(futoin_frame_info(root, 0, &fi, sizeof(fi)), 0);
    assert_null(fi.callback);
    assert_null(fi.file);
    FILE* f = fmemopen(g_dump, sizeof(g_dump), "w");
    assert_non_null(f);
    futoin_loop_dump(g_loop, f, 0);
    fclose(f);
    char want[128];
    snprintf(want, sizeof(want), ", loop_iteration, added at %s", __FILE__);
    if (!strstr(g_dump, want) || !strstr(g_dump, ", loop_body, added at ")) {
        fail_msg("dump without the step locations:\n%s", g_dump);
    }
    futoin_asyncsteps_free(root);
}

/* ---- a chain of steps that each end by adding one sub-step: every
 * level is in the trace (the tracing build keeps such frames up to
 * FUTOIN_TRACE_KEEP_DEPTH levels) ---- */

void tail_loop(FutoInAsyncSteps* as, void* data, size_t i);

void tail_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_repeat(as, 1, tail_loop, NULL, NULL);
}

void tail_loop(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data, (void)i;
    futoin_add(as, level3, NULL, NULL);
}

static void test_tail_steps_kept(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, tail_outer, NULL, NULL);
    futoin_add(root, not_reached, NULL, NULL);
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_string_equal(g_unhandled.code, "Deep");
    assert_int_equal(g_unhandled.n, 3);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(tail_outer));
    assert_int_equal(g_unhandled.e[1].kind, FUTOIN_FRAME_LOOP);
    assert_ptr_equal(g_unhandled.e[1].callback, FN(tail_loop));
    assert_ptr_equal(g_unhandled.e[2].callback, FN(level3));
    futoin_asyncsteps_free(root);
}

/* ---- a step added without the macros has a callback but no place ---- */

static void test_untraced_add(void** state)
{
    (void)state;
    reset_seen();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    (futoin_add)(root, level3, NULL, NULL); /* the function itself */
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_int_equal(g_unhandled.n, 1);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(level3));
    assert_null(g_unhandled.e[0].file);
    assert_int_equal(g_unhandled.e[0].line, 0);
    /* Nothing is left behind for the next add() of this thread. */
    futoin_trace_at(NULL, 0);
    futoin_asyncsteps_free(root);
}

/* ---- a step with owned data is a step in the trace ---- */

static unsigned g_owned_line;
static int g_owned_destroyed;

void owned_outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_add(as, level3, NULL, NULL);
}

static void owned_destroy(void* data)
{
    (void)data;
    ++g_owned_destroyed;
}

static void test_owned_step_trace(void** state)
{
    (void)state;
    reset_seen();
    g_owned_destroyed = 0;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    /* clang-format off */
    g_owned_line = __LINE__; futoin_add_owned(root, owned_outer, NULL, &g_owned_line, owned_destroy);
    /* clang-format on */
    futoin_execute(root, trace_unhandled, NULL);
    run();
    assert_int_equal(g_unhandled.n, 2);
    assert_int_equal(g_unhandled.e[0].kind, FUTOIN_FRAME_STEP);
    assert_ptr_equal(g_unhandled.e[0].callback, FN(owned_outer));
    assert_int_equal(g_unhandled.e[0].line, g_owned_line);
    assert_true(ends_with(g_unhandled.e[0].file, "test_tracing.c"));
    assert_ptr_equal(g_unhandled.e[1].callback, FN(level3));
    assert_int_equal(g_owned_destroyed, 1);
    futoin_asyncsteps_free(root);
    assert_int_equal(g_owned_destroyed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_enabled),
        ENV_TEST(test_error_three_levels_deep),
        ENV_TEST(test_timeout_trace),
        ENV_TEST(test_branch_trace),
        ENV_TEST(test_branch_traces_own),
        ENV_TEST(test_long_chain),
        ENV_TEST(test_misuse_trace),
        ENV_TEST(test_frames_and_dump),
        ENV_TEST(test_tail_steps_kept),
        ENV_TEST(test_untraced_add),
        ENV_TEST(test_owned_step_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
