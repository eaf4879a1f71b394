/* SPDX-License-Identifier: MIT */
/*
 * Deep nesting: N nested parallel() levels (each level's step makes a
 * parallel whose one branch goes one level deeper), N nested add() levels
 * (each with an error handler, so that no level is folded away) and N
 * nested loops (repeat(1) inside repeat(1)), each ended by cancel(), a
 * timeout of the outermost step, an error raised at the innermost level,
 * free() and normal completion (loops also by a labelled break from the
 * innermost level). Every run happens on a thread with a small stack
 * (256 KB by default): teardown and unwinding must not use C stack in
 * proportion to the depth.
 *
 * Every level arms a cancel handler; the tests check how many run and
 * that they run innermost first, how many error handlers run, and what
 * reaches the unhandled-error callback.
 *
 * Environment:
 *   FUTOIN_DEEP_LEVELS=N      levels (default 100000)
 *   FUTOIN_DEEP_STACK_KB=K    the thread's stack (default 256)
 *   FUTOIN_DEEP_MAIN_THREAD=1 run on the calling thread instead (its stack
 *                             is what `ulimit -s` says): scripts/stress.sh
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>
#include <futoin/asynctool.h>

enum Nest { NEST_PARALLEL, NEST_ADD, NEST_LOOP };
enum End { END_CANCEL, END_TIMEOUT, END_ERROR, END_FREE, END_COMPLETE, END_BREAK };

typedef struct Run {
    enum Nest nest;
    enum End end;
    size_t levels;
    /* results, read by the test body after the thread ended */
    size_t deepest;      /* the innermost level reached */
    size_t cancels;      /* cancel handlers called */
    int cancel_order_ok; /* each cancel handler's level below the previous */
    size_t last_cancel;
    size_t error_handlers; /* error handlers called */
    size_t completed;      /* steps that ran after their level completed */
    int unhandled;
    char unhandled_code[32];
    int final_ran; /* the step after the outermost level */
    int misuse;
    int loop_ended;
} Run;

static size_t env_size(const char* name, size_t dflt)
{
    const char* v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : dflt;
}

static size_t levels_default(void)
{
    return env_size("FUTOIN_DEEP_LEVELS", 100000);
}

/* A level: its index is the step's data, packed with the run's address in
 * a small per-level record kept on the step's stack() memory. */
typedef struct Level {
    Run* run;
    size_t depth;
} Level;

static void level_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);

static void on_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Level* lv = (Level*)data;
    Run* run = lv->run;
    if (run->cancels && lv->depth >= run->last_cancel) {
        run->cancel_order_ok = 0;
    }
    run->last_cancel = lv->depth;
    ++run->cancels;
}

static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)code;
    Level* lv = (Level*)data;
    ++lv->run->error_handlers;
}

static void after_level(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ++((Run*)data)->completed;
}

static void loop_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)i;
    level_step(as, data, NULL);
}

/* The levels live in one array (the run's), indexed by depth, so that the
 * callbacks need no allocation of their own. */
static Level* g_levels;

static void level_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Level* lv = (Level*)data;
    Run* run = lv->run;
    if (lv->depth > run->deepest) {
        run->deepest = lv->depth;
    }
    if (lv->depth == 0 && run->end == END_TIMEOUT) {
        futoin_set_timeout(as, 10);
    }
    if (lv->depth < run->levels) {
        Level* next = &g_levels[lv->depth + 1];
        switch (run->nest) {
        case NEST_PARALLEL: {
            FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
            futoin_add(p, level_step, NULL, next);
            break;
        }
        case NEST_ADD:
            futoin_add(as, level_step, on_error, next);
            futoin_add(as, after_level, NULL, run);
            break;
        case NEST_LOOP:
            futoin_repeat(as, 1, loop_body, next, lv->depth == 0 ? "outer" : NULL);
            break;
        }
        futoin_set_cancel(as, on_cancel, lv);
        return;
    }
    /* The innermost level. */
    switch (run->end) {
    case END_ERROR:
        futoin_error(as, "Deep", "raised at the innermost level");
        break;
    case END_COMPLETE:
        futoin_success(as);
        break;
    case END_BREAK:
        futoin_break(as, "outer");
        break;
    default:
        futoin_set_cancel(as, on_cancel, lv); /* waits */
        break;
    }
}

static void final_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ((Run*)data)->final_ran = 1;
}

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    Run* run = (Run*)data;
    ++run->unhandled;
    snprintf(run->unhandled_code, sizeof(run->unhandled_code), "%s", code);
}

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)as, (void)info;
    ++((Run*)data)->misuse;
}

static void* run_deep(void* arg)
{
    Run* run = (Run*)arg;
    g_levels = calloc(run->levels + 1, sizeof(Level));
    if (!g_levels) {
        return NULL;
    }
    for (size_t i = 0; i <= run->levels; ++i) {
        g_levels[i].run = run;
        g_levels[i].depth = i;
    }
    run->cancel_order_ok = 1;
    FutoInLoop* loop = futoin_loop_new_virtual();
    futoin_set_misuse_handler(loop, on_misuse, run);
    futoin_set_burst(loop, 1000);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, level_step, run->nest == NEST_ADD ? on_error : NULL, &g_levels[0]);
    futoin_add(root, final_step, NULL, run);
    futoin_execute(root, unhandled, run);
    /* Up to the innermost level, parked or done. */
    while (futoin_loop_pending(loop) && run->deepest < run->levels) {
        futoin_loop_run_next(loop);
    }
    int freed = 0;
    switch (run->end) {
    case END_CANCEL:
        futoin_cancel(root);
        break;
    case END_FREE:
        futoin_asyncsteps_free(root);
        freed = 1;
        break;
    default:
        break; /* the timer, the error or the completion go on by themselves */
    }
    futoin_loop_run(loop);
    run->loop_ended = futoin_loop_pending(loop) == 0;
    if (!freed) {
        futoin_asyncsteps_free(root);
    }
    futoin_loop_free(loop);
    free(g_levels);
    g_levels = NULL;
    return NULL;
}

static void deep(enum Nest nest, enum End end, Run* run)
{
    memset(run, 0, sizeof(*run));
    run->nest = nest;
    run->end = end;
    run->levels = levels_default();
    if (getenv("FUTOIN_DEEP_MAIN_THREAD")) {
        run_deep(run);
        return;
    }
    pthread_attr_t attr;
    pthread_t th;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, env_size("FUTOIN_DEEP_STACK_KB", 256) * 1024),
            0);
    assert_int_equal(pthread_create(&th, &attr, run_deep, run), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
}

/* Every level's cancel handler ran once, innermost first, nothing else. */
static void assert_all_cancelled(const Run* run, size_t expected_cancels)
{
    assert_int_equal(run->deepest, run->levels);
    assert_int_equal(run->cancels, expected_cancels);
    assert_true(run->cancel_order_ok);
    assert_int_equal(run->completed, 0);
    assert_false(run->final_ran);
    assert_int_equal(run->misuse, 0);
    assert_true(run->loop_ended);
}

static void check_cancel(enum Nest nest)
{
    Run run;
    deep(nest, END_CANCEL, &run);
    /* The innermost level arms one handler, every other level one. */
    assert_all_cancelled(&run, run.levels + 1);
    assert_int_equal(run.unhandled, 0);
    assert_int_equal(run.error_handlers, 0);
}

static void check_free(enum Nest nest)
{
    Run run;
    deep(nest, END_FREE, &run);
    assert_all_cancelled(&run, run.levels + 1);
    assert_int_equal(run.unhandled, 0);
    assert_int_equal(run.error_handlers, 0);
}

/* The outermost step times out: every level above it is cancelled, and so
 * is the outermost one (its own timeout aborts it from outside). */
static void check_timeout(enum Nest nest)
{
    Run run;
    deep(nest, END_TIMEOUT, &run);
    assert_all_cancelled(&run, run.levels + 1);
    assert_int_equal(run.unhandled, 1);
    assert_string_equal(run.unhandled_code, FUTOIN_TIMEOUT);
    /* Only add() levels have error handlers: the outermost one's sees the
     * timeout (the levels above it were aborted, not failed). */
    assert_int_equal(run.error_handlers, nest == NEST_ADD ? 1 : 0);
}

/* An error at the innermost level passes every level's error handler
 * (none recovers) and reaches the unhandled-error callback; a step that
 * fails by itself drops its cancel handlers on the way. */
static void check_error(enum Nest nest)
{
    Run run;
    deep(nest, END_ERROR, &run);
    assert_int_equal(run.deepest, run.levels);
    assert_int_equal(run.unhandled, 1);
    assert_string_equal(run.unhandled_code, "Deep");
    assert_int_equal(run.error_handlers, nest == NEST_ADD ? run.levels + 1 : 0);
    /* The levels below the failing one are unwound: aborted, so their
     * cancel handlers run, innermost first. */
    assert_int_equal(run.cancels, run.levels);
    assert_true(run.cancel_order_ok);
    assert_int_equal(run.completed, 0);
    assert_false(run.final_ran);
    assert_int_equal(run.misuse, 0);
    assert_true(run.loop_ended);
}

static void check_complete(enum Nest nest)
{
    Run run;
    deep(nest, END_COMPLETE, &run);
    assert_int_equal(run.deepest, run.levels);
    assert_int_equal(run.cancels, 0);
    assert_int_equal(run.unhandled, 0);
    assert_int_equal(run.completed, nest == NEST_ADD ? run.levels : 0);
    assert_true(run.final_ran);
    assert_int_equal(run.misuse, 0);
    assert_true(run.loop_ended);
}

static void test_parallel_cancel(void** s)
{
    (void)s;
    check_cancel(NEST_PARALLEL);
}
static void test_parallel_free(void** s)
{
    (void)s;
    check_free(NEST_PARALLEL);
}
static void test_parallel_timeout(void** s)
{
    (void)s;
    check_timeout(NEST_PARALLEL);
}
static void test_parallel_error(void** s)
{
    (void)s;
    check_error(NEST_PARALLEL);
}
static void test_parallel_complete(void** s)
{
    (void)s;
    check_complete(NEST_PARALLEL);
}
static void test_add_cancel(void** s)
{
    (void)s;
    check_cancel(NEST_ADD);
}
static void test_add_free(void** s)
{
    (void)s;
    check_free(NEST_ADD);
}
static void test_add_timeout(void** s)
{
    (void)s;
    check_timeout(NEST_ADD);
}
static void test_add_error(void** s)
{
    (void)s;
    check_error(NEST_ADD);
}
static void test_add_complete(void** s)
{
    (void)s;
    check_complete(NEST_ADD);
}
static void test_loop_cancel(void** s)
{
    (void)s;
    check_cancel(NEST_LOOP);
}
static void test_loop_free(void** s)
{
    (void)s;
    check_free(NEST_LOOP);
}
static void test_loop_timeout(void** s)
{
    (void)s;
    check_timeout(NEST_LOOP);
}
static void test_loop_error(void** s)
{
    (void)s;
    check_error(NEST_LOOP);
}
static void test_loop_complete(void** s)
{
    (void)s;
    check_complete(NEST_LOOP);
}

/* A labelled break from the innermost level leaves every loop: the
 * cancel handlers the levels armed run (their iterations are abandoned),
 * and the flow goes on after the outermost step. */
static void test_loop_break(void** s)
{
    (void)s;
    Run run;
    deep(NEST_LOOP, END_BREAK, &run);
    assert_int_equal(run.deepest, run.levels);
    /* Levels 1 .. N-1 armed theirs on the loops that are left; level 0's
     * step is not left (the break ends at its loop), level N armed none. */
    assert_int_equal(run.cancels, run.levels - 1);
    assert_true(run.cancel_order_ok);
    assert_int_equal(run.unhandled, 0);
    assert_true(run.final_ran);
    assert_int_equal(run.misuse, 0);
    assert_true(run.loop_ended);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_cancel),
        cmocka_unit_test(test_parallel_free),
        cmocka_unit_test(test_parallel_timeout),
        cmocka_unit_test(test_parallel_error),
        cmocka_unit_test(test_parallel_complete),
        cmocka_unit_test(test_add_cancel),
        cmocka_unit_test(test_add_free),
        cmocka_unit_test(test_add_timeout),
        cmocka_unit_test(test_add_error),
        cmocka_unit_test(test_add_complete),
        cmocka_unit_test(test_loop_cancel),
        cmocka_unit_test(test_loop_free),
        cmocka_unit_test(test_loop_timeout),
        cmocka_unit_test(test_loop_error),
        cmocka_unit_test(test_loop_complete),
        cmocka_unit_test(test_loop_break),
    };
    if (getenv("TEST_FILTER")) {
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
