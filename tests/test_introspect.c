/* SPDX-License-Identifier: MIT */
/*
 * Observability (include/futoin/introspect.h): the walk over a
 * loop's live roots, flows and frames; the text dump taken while flows are
 * parked on a Mutex, a Throttle, a timer, a parallel and an external
 * completion; the counters after scripted scenarios; a dump requested from
 * another thread and by a signal; and 100,000-level nested flows (frames
 * and parallels) walked and dumped on a 256 KB thread stack.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream(), pthread_kill() */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>
#include <futoin/asynctool.h>
#include <futoin/introspect.h>
#include <futoin/sync.h>

/* The depths and frame lists checked by some tests are those of the normal
 * build: the tracing build keeps the frames of steps that end by adding one
 * sub-step (docs/OBSERVABILITY.md), which tests/tracing/ checks instead. */
#define SKIP_IF_TRACING()                                                                          \
    do {                                                                                           \
        if (FUTOIN_TRACING) {                                                                      \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* ---- small steps ---------------------------------------------------- */

static void st_noop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
}

static void st_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    if (data) {
        *(FutoInAsyncSteps**)data = as;
    }
    futoin_wait_external(as);
}

static void st_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    assert_int_equal(futoin_set_wait_info(as, "read 127.0.0.1:8080"), 0);
    futoin_set_timeout(as, 500);
}

static void st_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "Boom", "it went off");
}

static void eh_quiet(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)data, (void)code;
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data, (void)code;
    futoin_success(as);
}

static void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as, (void)code;
    if (data) {
        ++*(int*)data;
    }
}

/* ---- the parked scenario ---------------------------------------------- */

typedef struct Parked {
    FutoInLoop* loop;
    FutoInSync* mutex;
    FutoInSync* throttle;
    FutoInCompletion* comp;
    FutoInAsyncSteps* holder;  /* in the Mutex's critical section, waiting */
    FutoInAsyncSteps* waiter1; /* queued on the Mutex: position 1 of 2 */
    FutoInAsyncSteps* waiter2; /* position 2 of 2 */
    FutoInAsyncSteps* timer;   /* setTimeout(500), 200 ms ago */
    FutoInAsyncSteps* par;     /* a parallel of two waiting branches */
    FutoInAsyncSteps* awaiter; /* futoin_await() */
    FutoInAsyncSteps* thr1;    /* went through the Throttle: done */
    FutoInAsyncSteps* thr2;    /* queued in the Throttle's rate queue */
    FutoInAsyncSteps* idle;    /* two steps, never executed */
    FutoInAsyncSteps* failed;  /* failed with Boom */
    FutoInAsyncSteps* branch[2];
    FutoInAsyncSteps* holder_step;
    int unhandled;
} Parked;

static Parked* g_parked;

static void st_branch_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_parked->branch[0] = as;
    futoin_set_wait_info(as, "reply from worker");
    futoin_wait_external(as);
}

static void st_branch_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_parked->branch[1] = as;
    futoin_set_timeout(as, 1000);
}

static void st_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, st_branch_info, NULL, NULL);
    futoin_add(p, st_branch_timeout, NULL, NULL);
}

static FutoInAsyncSteps* new_root(FutoInLoop* loop)
{
    FutoInAsyncSteps* r = futoin_asyncsteps_new(loop);
    assert_non_null(r);
    return r;
}

static void parked_setup(Parked* p)
{
    memset(p, 0, sizeof(*p));
    g_parked = p;
    p->loop = futoin_loop_new_virtual();
    p->mutex = futoin_mutex_new(p->loop, 1, 10);
    p->throttle = futoin_throttle_new(p->loop, 1, 1000, 10);
    p->comp = futoin_completion_new();
    assert_non_null(p->mutex);
    assert_non_null(p->throttle);
    assert_non_null(p->comp);

    p->holder = new_root(p->loop);
    futoin_add_sync(p->holder, p->mutex, st_wait, NULL, &p->holder_step);
    p->waiter1 = new_root(p->loop);
    futoin_add_sync(p->waiter1, p->mutex, st_noop, NULL, NULL);
    p->waiter2 = new_root(p->loop);
    futoin_add_sync(p->waiter2, p->mutex, st_noop, NULL, NULL);
    p->timer = new_root(p->loop);
    futoin_add(p->timer, st_timeout, eh_quiet, NULL);
    p->par = new_root(p->loop);
    futoin_add(p->par, st_parallel, NULL, NULL);
    p->awaiter = new_root(p->loop);
    futoin_await(p->awaiter, p->comp, NULL, NULL);
    p->thr1 = new_root(p->loop);
    futoin_add_sync(p->thr1, p->throttle, st_noop, NULL, NULL);
    p->thr2 = new_root(p->loop);
    futoin_add_sync(p->thr2, p->throttle, st_noop, NULL, NULL);
    p->failed = new_root(p->loop);
    futoin_add(p->failed, st_fail, NULL, NULL);

    FutoInAsyncSteps* run[] = { p->holder, p->waiter1, p->waiter2, p->timer, p->par, p->awaiter,
        p->thr1, p->thr2, p->failed };
    for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); ++i) {
        futoin_execute(run[i], on_unhandled, &p->unhandled);
    }
    p->idle = new_root(p->loop);
    futoin_add(p->idle, st_noop, NULL, NULL);
    futoin_add(p->idle, st_noop, NULL, NULL);
    futoin_loop_advance(p->loop, 200);
    assert_int_equal(p->unhandled, 1); /* failed */
    assert_non_null(p->holder_step);
    assert_non_null(p->branch[0]);
    assert_non_null(p->branch[1]);
}

static void parked_teardown(Parked* p)
{
    FutoInAsyncSteps* all[] = { p->holder, p->waiter1, p->waiter2, p->timer, p->par, p->awaiter,
        p->thr1, p->thr2, p->failed, p->idle };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
        futoin_asyncsteps_free(all[i]);
    }
    futoin_completion_free(p->comp);
    assert_int_equal(futoin_sync_free(p->mutex), FUTOIN_SYNC_OK);
    assert_int_equal(futoin_sync_free(p->throttle), FUTOIN_SYNC_OK);
    futoin_loop_run(p->loop);
    futoin_loop_free(p->loop);
    g_parked = NULL;
}

/* The dump of a loop as a string (free() it). Windows has no
 * open_memstream(): a temporary file, read back. */
static char* dump_string(FutoInLoop* loop, uint32_t max_frames, int* roots)
{
#ifdef _WIN32
    FILE* f = tmpfile();
    assert_non_null(f);
    int n = futoin_loop_dump(loop, f, max_frames);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    char* buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
#else
    char* buf = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    assert_non_null(f);
    int n = futoin_loop_dump(loop, f, max_frames);
    fclose(f);
#endif
    if (roots) {
        *roots = n;
    }
    return buf;
}

/* 1 if a line of text contains a (and b, unless NULL). */
static int has_line(const char* text, const char* a, const char* b)
{
    for (const char* line = text; line && *line;) {
        const char* end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char* copy = malloc(len + 1);
        memcpy(copy, line, len);
        copy[len] = 0;
        int hit = strstr(copy, a) && (!b || strstr(copy, b));
        free(copy);
        if (hit) {
            return 1;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

static void expect_line(const char* text, const char* a, const char* b)
{
    if (!has_line(text, a, b)) {
        fprintf(stderr, "no line with \"%s\"%s%s%s in the dump:\n%s", a, b ? " and \"" : "",
                b ? b : "", b ? "\"" : "", text);
        fail();
    }
}

static void test_dump_parked(void** state)
{
    (void)state;
    SKIP_IF_TRACING();
    Parked p;
    parked_setup(&p);
    int roots = 0;
    char* text = dump_string(p.loop, FUTOIN_DUMP_FRAMES_DEFAULT, &roots);
    assert_int_equal(roots, 10);
    char who[64];

    expect_line(text, "dump at 200 ms (virtual clock)", NULL);
    expect_line(text, "counters: roots 10,", "timeouts 0");
    expect_line(text, "errors 1,", "unhandled errors 1");
    /* The Mutex: the holder in its critical section, two in its queue. */
    snprintf(who, sizeof(who), "root %p waiting", (void*)p.holder);
    expect_line(text, who, NULL);
    expect_line(text, "#1 sync Mutex", ", held");
    snprintf(who, sizeof(who), "flow %p (main) waiting for Mutex", (void*)p.waiter1);
    expect_line(text, who, "position 1 of 2 in its concurrency queue");
    snprintf(who, sizeof(who), "flow %p (main) waiting for Mutex", (void*)p.waiter2);
    expect_line(text, who, "position 2 of 2 in its concurrency queue");
    /* The timer, 300 ms left, with what the step said it waits for. */
    snprintf(who, sizeof(who), "flow %p (main) waiting for an external completion", (void*)p.timer);
    expect_line(text, who, ": \"read 127.0.0.1:8080\", timeout in 300 ms (#1)");
    expect_line(text, "#1 step, waiting, timeout in 300 ms, \"read 127.0.0.1:8080\"",
            "error handler 0x");
    /* The parallel and its two branches. */
    snprintf(who, sizeof(who), "flow %p (main) waiting for 2 branches of its parallel step",
            (void*)p.par);
    expect_line(text, who, NULL);
    expect_line(text, "#1 parallel, 2 branches running, waiting", NULL);
    snprintf(who, sizeof(who), "branch %p of %p (nesting 1) waiting for an external completion",
            (void*)p.branch[0], (void*)p.par);
    expect_line(text, who, ": \"reply from worker\"");
    snprintf(who, sizeof(who), "branch %p of %p (nesting 1) waiting", (void*)p.branch[1],
            (void*)p.par);
    expect_line(text, who, "timeout in 800 ms (#1)");
    /* The external completion (await). */
    snprintf(who, sizeof(who), "flow %p (main) waiting for a completion (futoin_await)",
            (void*)p.awaiter);
    expect_line(text, who, NULL);
    expect_line(text, "#1 await", "waiting");
    /* The Throttle's rate queue. */
    snprintf(who, sizeof(who), "flow %p (main) waiting for Throttle", (void*)p.thr2);
    expect_line(text, who, "position 1 of 1 in its rate queue");
    /* Roots that are not running. */
    snprintf(who, sizeof(who), "root %p idle, 2 steps queued", (void*)p.idle);
    expect_line(text, who, NULL);
    snprintf(who, sizeof(who), "root %p done", (void*)p.thr1);
    expect_line(text, who, NULL);
    snprintf(who, sizeof(who), "root %p failed: Boom (it went off)", (void*)p.failed);
    expect_line(text, who, NULL);
    expect_line(text, "end of dump: 10 roots, 9 running flows", NULL);
    free(text);
    parked_teardown(&p);
}

/* ---- introspection of states, depths and waits -------------------------- */

static void test_walk_parked(void** state)
{
    (void)state;
    SKIP_IF_TRACING();
    Parked p;
    parked_setup(&p);

    /* Every live root exactly once. */
    FutoInAsyncSteps* expect[] = { p.holder, p.waiter1, p.waiter2, p.timer, p.par, p.awaiter,
        p.thr1, p.thr2, p.idle, p.failed };
    int seen[10] = { 0 };
    FutoInRootIter it;
    assert_int_equal(futoin_root_iter_init(&it, p.loop), 0);
    FutoInAsyncSteps* r;
    int n = 0;
    while ((r = futoin_root_iter_next(&it)) != NULL) {
        ++n;
        for (int i = 0; i < 10; ++i) {
            if (expect[i] == r) {
                ++seen[i];
            }
        }
    }
    assert_null(futoin_root_iter_next(&it));
    assert_int_equal(n, 10);
    for (int i = 0; i < 10; ++i) {
        assert_int_equal(seen[i], 1);
    }

    FutoInRootInfo ri;
    FutoInFlowInfo fi;
    FutoInFrameInfo fr;

    /* The holder: sync frame held, the section's step waits. */
    assert_int_equal(futoin_root_info(p.holder, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_WAITING);
    assert_int_equal(ri.depth, 2);
    assert_int_equal(ri.flows, 1);
    assert_ptr_equal(p.holder_step, p.holder); /* a root's steps get the root handle */
    assert_int_equal(futoin_flow_info(p.holder, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.state, FUTOIN_FLOW_WAITING);
    assert_int_equal(fi.wait, FUTOIN_WAIT_EXTERNAL);
    assert_null(fi.parent);
    assert_ptr_equal(fi.root, p.holder);
    assert_int_equal(fi.timer_level, UINT32_MAX);
    assert_int_equal(futoin_frame_info(p.holder, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_SYNC);
    assert_ptr_equal(fr.sync, p.mutex);
    assert_string_equal(fr.sync_kind, "Mutex");
    assert_true(fr.flags & FUTOIN_FRAME_LOCKED);
    assert_int_equal(fr.sync_queue, 0);
    assert_ptr_equal(fr.data, &p.holder_step); /* the critical section's data */
    assert_int_equal(futoin_frame_info(p.holder, 2, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_STEP);
    assert_true(fr.flags & FUTOIN_FRAME_WAITING);
    assert_int_equal(futoin_frame_info(p.holder, 3, &fr, sizeof(fr)), -1);
    assert_int_equal(futoin_frame_info(p.holder, 0, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_QUEUE);
    assert_true(fr.error_handler == on_unhandled); /* level 0: the unhandled-error callback */
    assert_ptr_equal(fr.data, &p.unhandled);

    /* The Mutex's waiters and their places. */
    assert_int_equal(futoin_flow_info(p.waiter2, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.wait, FUTOIN_WAIT_SYNC);
    assert_int_equal(fi.depth, 1);
    assert_int_equal(futoin_frame_info(p.waiter2, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_SYNC);
    assert_int_equal(fr.sync_queue, 1);
    assert_int_equal(fr.sync_position, 2);
    assert_int_equal(fr.sync_queue_length, 2);
    assert_true(fr.flags & FUTOIN_FRAME_CANCEL_HANDLER);
    assert_false(fr.flags & FUTOIN_FRAME_LOCKED);
    assert_int_equal(futoin_frame_info(p.waiter1, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.sync_position, 1);

    /* The timer: 300 ms left on the virtual clock. */
    assert_int_equal(futoin_flow_info(p.timer, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.wait, FUTOIN_WAIT_EXTERNAL);
    assert_int_equal(fi.timer_level, 1);
    assert_int_equal(fi.timer_left_ms, 300);
    assert_string_equal(fi.wait_info, "read 127.0.0.1:8080");
    assert_int_equal(futoin_frame_info(p.timer, 1, &fr, sizeof(fr)), 0);
    assert_true(fr.flags & FUTOIN_FRAME_TIMEOUT);
    assert_true(fr.flags & FUTOIN_FRAME_ERROR_HANDLER);
    assert_true(fr.error_handler == eh_quiet);
    assert_int_equal(fr.timeout_left_ms, 300);
    assert_string_equal(fr.wait_info, "read 127.0.0.1:8080");
    futoin_loop_advance(p.loop, 299);
    assert_int_equal(futoin_flow_info(p.timer, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.timer_left_ms, 1);

    /* The parallel: the main flow, then its two branches. */
    assert_int_equal(futoin_root_info(p.par, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.flows, 3);
    assert_ptr_equal(futoin_flow_next(p.par, NULL), p.par);
    assert_ptr_equal(futoin_flow_next(p.par, p.par), p.branch[0]);
    assert_ptr_equal(futoin_flow_next(p.par, p.branch[0]), p.branch[1]);
    assert_null(futoin_flow_next(p.par, p.branch[1]));
    assert_null(futoin_flow_next(p.timer, p.branch[0])); /* a flow of another root */
    assert_int_equal(futoin_flow_info(p.par, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.wait, FUTOIN_WAIT_PARALLEL);
    assert_int_equal(futoin_frame_info(p.par, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_PARALLEL);
    assert_int_equal(fr.branches, 2);
    assert_int_equal(futoin_flow_info(p.branch[1], &fi, sizeof(fi)), 0);
    assert_ptr_equal(fi.parent, p.par);
    assert_ptr_equal(fi.root, p.par);
    assert_int_equal(fi.state, FUTOIN_FLOW_WAITING);
    assert_int_equal(fi.timer_level, 1);
    assert_int_equal(fi.timer_left_ms, 501); /* 1000 - 200 - 299 */
    assert_int_equal(futoin_flow_info(p.branch[0], &fi, sizeof(fi)), 0);
    assert_string_equal(fi.wait_info, "reply from worker");

    /* The external completion. */
    assert_int_equal(futoin_flow_info(p.awaiter, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.wait, FUTOIN_WAIT_AWAIT);
    assert_int_equal(futoin_frame_info(p.awaiter, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_AWAIT);

    /* The Throttle: rate queue. */
    assert_int_equal(futoin_frame_info(p.thr2, 1, &fr, sizeof(fr)), 0);
    assert_string_equal(fr.sync_kind, "Throttle");
    assert_int_equal(fr.sync_queue, 2);
    assert_int_equal(fr.sync_position, 1);
    assert_int_equal(fr.sync_queue_length, 1);

    /* Roots that are not running. */
    assert_int_equal(futoin_root_info(p.idle, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_IDLE);
    assert_int_equal(ri.queued, 2);
    assert_int_equal(futoin_flow_info(p.idle, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.state, FUTOIN_FLOW_IDLE);
    assert_int_equal(futoin_root_info(p.thr1, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_DONE);
    assert_int_equal(futoin_root_info(p.failed, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_FAILED);
    assert_string_equal(ri.error_code, "Boom");
    assert_string_equal(ri.error_info, "it went off");
    assert_string_equal(futoin_root_state_name(ri.state), "failed");
    assert_string_equal(futoin_frame_kind_name(FUTOIN_FRAME_LOOP), "loop");

    /* A smaller struct (an older program) gets only what it has room for. */
    struct {
        FutoInFlowInfo head;
    } small;
    memset(&small, 0xAB, sizeof(small));
    assert_int_equal(futoin_flow_info(p.timer, &small.head, offsetof(FutoInFlowInfo, depth)), 0);
    assert_ptr_equal(small.head.flow, p.timer);
    assert_int_equal(small.head.depth, 0xABABABABu);

    parked_teardown(&p);
}

/* Loops, queued and running roots, stale handles. */
static FutoInAsyncSteps* g_loop_as;

static void body_repeat(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    if (i == 2) {
        g_loop_as = as;
        futoin_wait_external(as);
    }
}

static void st_inner_repeat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_repeat(as, 5, body_repeat, NULL, "outer");
}

static void st_check_running(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInRootInfo ri;
    FutoInFlowInfo fi;
    assert_int_equal(futoin_root_info(as, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_RUNNING);
    assert_int_equal(futoin_flow_info(as, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.state, FUTOIN_FLOW_RUNNING);
    /* A dump from inside a step works too. */
    FILE* f = fopen("/dev/null", "w");
    assert_non_null(f);
    assert_true(futoin_loop_dump(futoin_asyncsteps_loop(as), f, 0) >= 1);
    fclose(f);
    ++*(int*)data;
}

typedef struct WrongThread {
    FutoInLoop* loop;
    FutoInAsyncSteps* root;
    int results[6];
} WrongThread;

static void* wrong_thread(void* arg)
{
    WrongThread* w = arg;
    FutoInRootIter it;
    FutoInRootInfo ri;
    FutoInFlowInfo fi;
    FutoInFrameInfo fr;
    FutoInLoopCounters c;
    w->results[0] = futoin_root_iter_init(&it, w->loop);
    w->results[1] = futoin_root_info(w->root, &ri, sizeof(ri));
    w->results[2] = futoin_flow_info(w->root, &fi, sizeof(fi));
    w->results[3] = futoin_frame_info(w->root, 0, &fr, sizeof(fr));
    w->results[4] = futoin_loop_counters(w->loop, &c, sizeof(c));
    w->results[5] = futoin_loop_dump(w->loop, stderr, 0);
    return NULL;
}

static void test_walk_states(void** state)
{
    (void)state;
    SKIP_IF_TRACING();
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInRootIter it;
    assert_int_equal(futoin_root_iter_init(&it, loop), 0);
    assert_null(futoin_root_iter_next(&it)); /* no engine yet */

    /* A loop with its label and iteration. */
    FutoInAsyncSteps* lr = new_root(loop);
    futoin_add(lr, st_inner_repeat, NULL, NULL);
    futoin_execute(lr, NULL, NULL);
    /* Queued: executed, the loop has not run yet. */
    FutoInRootInfo ri;
    FutoInFlowInfo fi;
    FutoInFrameInfo fr;
    assert_int_equal(futoin_root_info(lr, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_QUEUED);
    assert_int_equal(futoin_flow_info(lr, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.state, FUTOIN_FLOW_QUEUED);
    futoin_loop_run(loop);
    assert_ptr_equal(g_loop_as, lr);
    assert_int_equal(futoin_root_info(lr, &ri, sizeof(ri)), 0);
    assert_int_equal(ri.state, FUTOIN_ROOT_WAITING);
    assert_int_equal(futoin_flow_info(lr, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.depth, 1); /* the step that added the loop was folded away */
    assert_int_equal(futoin_frame_info(lr, 1, &fr, sizeof(fr)), 0);
    assert_int_equal(fr.kind, FUTOIN_FRAME_LOOP);
    assert_int_equal(fr.iteration, 2);
    assert_int_equal(fr.count, 5);
    assert_string_equal(fr.label, "outer");
    assert_true(fr.flags & FUTOIN_FRAME_WAITING);
    char* text = dump_string(loop, 0, NULL);
    expect_line(text, "#1 loop 'outer', iteration 2 of 5, waiting", NULL);
    free(text);

    /* Running: seen from inside its own step. */
    int ran = 0;
    FutoInAsyncSteps* rr = new_root(loop);
    futoin_add(rr, st_check_running, NULL, &ran);
    futoin_execute(rr, NULL, NULL);
    futoin_loop_run(loop);
    assert_int_equal(ran, 1);

    /* Not the loop's thread: refused. */
    WrongThread w = { loop, lr, { 0 } };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wrong_thread, &w), 0);
    pthread_join(t, NULL);
    for (int i = 0; i < 6; ++i) {
        assert_int_equal(w.results[i], -1);
    }

    /* Freed roots leave the walk; a stale handle is refused. */
    futoin_asyncsteps_free(rr);
    assert_int_equal(futoin_root_info(rr, &ri, sizeof(ri)), -1);
    assert_int_equal(futoin_flow_info(rr, &fi, sizeof(fi)), -1);
    assert_int_equal(futoin_root_iter_init(&it, loop), 0);
    assert_ptr_equal(futoin_root_iter_next(&it), lr);
    assert_null(futoin_root_iter_next(&it));
    futoin_asyncsteps_free(lr);
    assert_int_equal(futoin_root_iter_init(&it, loop), 0);
    assert_null(futoin_root_iter_next(&it));
    assert_int_equal(futoin_root_iter_init(&it, NULL), -1);
    assert_null(futoin_root_iter_next(&it));
    assert_null(futoin_flow_next(NULL, NULL));
    futoin_loop_free(loop);
}

/* ---- counters ------------------------------------------------------------ */

static FutoInLoopCounters counters(FutoInLoop* loop)
{
    FutoInLoopCounters c;
    memset(&c, 0xAB, sizeof(c));
    assert_int_equal(futoin_loop_counters(loop, &c, sizeof(c)), 0);
    return c;
}

static void st_timeout_100(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 100);
}

static void st_success_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_success(as);
    futoin_success(as); /* misuse: InternalError */
}

static void st_set_burst(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_burst(futoin_asyncsteps_loop(as), (unsigned)(uintptr_t)data);
}

static void cb_nothing(void* data)
{
    (void)data;
}

static void* post_immediate(void* arg)
{
    FutoInLoop* loop = arg;
    futoin_loop_immediate(loop, NULL, cb_nothing);
    futoin_loop_release(loop);
    return NULL;
}

static void test_counters(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInLoopCounters c = counters(loop);
    assert_int_equal(c.roots, 0);
    assert_int_equal(c.steps, 0);
    assert_int_equal(c.errors, 0);
    assert_int_equal(c.timers_pending, 0);
    assert_int_equal(c.xmsgs, 0);

    /* Live roots and steps: a chain of 10 steps runs in one turn (the
     * dispatcher's budget: 1 for the turn, 1 per step it continued with). */
    FutoInAsyncSteps* r = new_root(loop);
    assert_int_equal(counters(loop).roots, 1);
    for (int i = 0; i < 10; ++i) {
        futoin_add(r, st_noop, NULL, NULL);
    }
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.steps, 11);
    assert_int_equal(c.roots, 1);
    futoin_asyncsteps_free(r);
    assert_int_equal(counters(loop).roots, 0);

    /* The same with the burst changed to 3 in the middle of the turn, and
     * then in turns of 3: 11 again. */
    r = new_root(loop);
    for (int i = 0; i < 10; ++i) {
        futoin_add(r, i == 1 ? st_set_burst : st_noop, NULL, (void*)(uintptr_t)3);
    }
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    assert_int_equal(counters(loop).steps, 22);
    for (int i = 0; i < 10; ++i) {
        futoin_add(r, st_noop, NULL, NULL);
    }
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    assert_int_equal(counters(loop).steps, 33);
    futoin_set_burst(loop, 100);
    futoin_asyncsteps_free(r);

    /* An error recovered, an unhandled one, a misuse. */
    int unhandled = 0;
    r = new_root(loop);
    futoin_add(r, st_fail, eh_recover, NULL);
    futoin_add(r, st_fail, NULL, NULL);
    futoin_execute(r, on_unhandled, &unhandled);
    futoin_loop_run(loop);
    assert_int_equal(unhandled, 1);
    c = counters(loop);
    assert_int_equal(c.errors, 2);
    assert_int_equal(c.unhandled_errors, 1);
    futoin_add(r, st_success_twice, NULL, NULL);
    futoin_execute(r, on_unhandled, &unhandled);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.errors, 3);
    assert_int_equal(c.unhandled_errors, 2);
    assert_int_equal(c.timeouts, 0);

    /* A timeout (recovered: no error, no unhandled one). */
    futoin_add(r, st_timeout_100, eh_recover, NULL);
    futoin_execute(r, on_unhandled, &unhandled);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.timeouts, 1);
    assert_int_equal(c.errors, 3);
    assert_int_equal(c.unhandled_errors, 2);

    /* Cancels: cancel() of a waiting root, free() of a running one; a
     * cancel of a root that is not running is not counted. */
    futoin_add(r, st_wait, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    futoin_cancel(r);
    futoin_cancel(r);
    assert_int_equal(counters(loop).cancels, 1);
    FutoInAsyncSteps* r2 = new_root(loop);
    futoin_add(r2, st_wait, NULL, NULL);
    futoin_execute(r2, NULL, NULL);
    futoin_loop_run(loop);
    futoin_asyncsteps_free(r2);
    assert_int_equal(counters(loop).cancels, 2);

    /* A sync rejection: a Mutex with no queue, held. */
    FutoInSync* m = futoin_mutex_new(loop, 1, 0);
    FutoInAsyncSteps* holder = new_root(loop);
    futoin_add_sync(holder, m, st_wait, NULL, NULL);
    futoin_execute(holder, NULL, NULL);
    futoin_add(r, st_noop, NULL, NULL);
    futoin_add_sync(r, m, st_noop, NULL, NULL);
    futoin_execute(r, on_unhandled, &unhandled);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.sync_rejections, 1);
    assert_int_equal(c.errors, 4);
    assert_int_equal(c.unhandled_errors, 3);
    assert_int_equal(c.roots, 2);
    futoin_asyncsteps_free(holder);
    assert_int_equal(futoin_sync_free(m), FUTOIN_SYNC_OK);

    /* A waiting flow rejected: it gets the Limiter's slot when the holder
     * leaves, but the rate is spent and there is no burst queue. */
    FutoInLimiterOptions lo = { 1, 5, 1, 1000, 0 };
    FutoInSync* lim = futoin_limiter_new(loop, &lo);
    FutoInAsyncSteps* in_section = NULL;
    holder = new_root(loop);
    futoin_add_sync(holder, lim, st_wait, NULL, &in_section);
    futoin_execute(holder, NULL, NULL);
    futoin_add_sync(r, lim, st_noop, NULL, NULL);
    futoin_execute(r, on_unhandled, &unhandled);
    futoin_loop_run(loop);
    assert_non_null(in_section);
    assert_int_equal(counters(loop).sync_rejections, 1); /* r waits */
    futoin_success(in_section);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.sync_rejections, 2);
    assert_int_equal(c.errors, 5);
    assert_int_equal(c.unhandled_errors, 4);
    futoin_asyncsteps_free(holder);
    assert_int_equal(futoin_sync_free(lim), FUTOIN_SYNC_OK);

    /* Pending timers and immediates, and a cross-thread message. */
    FutoInHandle t = futoin_loop_deferred(loop, 1000, NULL, cb_nothing);
    FutoInHandle i = futoin_loop_immediate(loop, NULL, cb_nothing);
    c = counters(loop);
    assert_int_equal(c.timers_pending, 1);
    assert_int_equal(c.immediates_pending, 1);
    futoin_loop_cancel(loop, &t);
    futoin_loop_cancel(loop, &i);
    futoin_loop_hold(loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, post_immediate, loop), 0);
    futoin_loop_run(loop); /* returns once the thread released its hold */
    pthread_join(th, NULL);
    futoin_loop_run(loop);
    c = counters(loop);
    assert_int_equal(c.xmsgs, 1);
    assert_int_equal(c.timers_pending, 0);

    /* A struct of an older, smaller layout gets its part only. */
    FutoInLoopCounters part;
    memset(&part, 0xAB, sizeof(part));
    assert_int_equal(futoin_loop_counters(loop, &part, offsetof(FutoInLoopCounters, errors)), 0);
    assert_int_equal(part.roots, 1);
    assert_int_equal(part.errors, UINT64_C(0xABABABABABABABAB));
    assert_int_equal(futoin_loop_counters(NULL, &part, sizeof(part)), -1);

    futoin_asyncsteps_free(r);
    assert_int_equal(counters(loop).roots, 0);
    futoin_loop_free(loop);
}

/* ---- a dump requested from another thread --------------------------------- */

typedef struct Answer {
    pthread_t loop_thread;
    int calls;
    int on_loop_thread;
    char* text;
} Answer;

static void answer_dump(FutoInLoop* loop, void* data)
{
    Answer* a = data;
    ++a->calls;
    a->on_loop_thread = pthread_equal(pthread_self(), a->loop_thread)
            && futoin_loop_is_same_thread(loop);
    free(a->text);
    a->text = dump_string(loop, 0, NULL);
    futoin_loop_release(loop); /* run() may return now */
}

static void* ask_dump(void* arg)
{
    FutoInLoop* loop = arg;
    int rc = futoin_loop_request_dump(loop);
    return (void*)(intptr_t)rc;
}

static void test_cross_thread_request(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new(); /* the real clock: run() sleeps in the kernel */
    assert_int_equal(futoin_loop_request_dump(loop), -1); /* no handler yet */
    Answer a = { pthread_self(), 0, 0, NULL };
    assert_int_equal(futoin_loop_set_dump_handler(loop, answer_dump, &a), 0);
    FutoInAsyncSteps* r = new_root(loop);
    futoin_add(r, st_wait, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop); /* parks */

    futoin_loop_hold(loop); /* released by the handler */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, ask_dump, loop), 0);
    futoin_loop_run(loop);
    void* rc;
    pthread_join(t, &rc);
    assert_int_equal((int)(intptr_t)rc, 1);
    assert_int_equal(a.calls, 1);
    assert_true(a.on_loop_thread);
    assert_non_null(a.text);
    expect_line(a.text, "(monotonic clock)", NULL);
    expect_line(a.text, "waiting for an external completion", NULL);

    /* Requests while one is queued are answered by it. */
    assert_int_equal(futoin_loop_request_dump(loop), 1);
    assert_int_equal(futoin_loop_request_dump(loop), 0);
    futoin_loop_hold(loop);
    futoin_loop_run(loop);
    assert_int_equal(a.calls, 2);
    assert_int_equal(futoin_loop_request_dump(loop), 1); /* the slot is free again */
    futoin_asyncsteps_free(r);
    futoin_loop_free(loop); /* drops the queued request unrun */
    assert_int_equal(a.calls, 2);
    free(a.text);
}

/* ---- a dump on a signal ------------------------------------------------------- */

/* Windows has no SIGUSR1, and its pthread_kill() sends no signal: SIGINT
 * there, raised on another thread (as a console's Ctrl-C arrives on a
 * thread of its own). */
#ifdef _WIN32
#define DUMP_SIGNAL SIGINT
#else
#define DUMP_SIGNAL SIGUSR1
#endif

static void* send_signal(void* arg)
{
#ifdef _WIN32
    (void)arg;
    raise(DUMP_SIGNAL);
#else
    pthread_kill(*(pthread_t*)arg, DUMP_SIGNAL);
#endif
    return NULL;
}

static void test_signal(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    Answer a = { pthread_self(), 0, 0, NULL };
    assert_int_equal(futoin_loop_set_dump_handler(loop, answer_dump, &a), 0);
    /* Keeps our handler (a loop without one gets the default, stderr). */
    assert_int_equal(futoin_loop_dump_on_signal(loop, DUMP_SIGNAL), 0);
    assert_int_equal(futoin_loop_dump_on_signal(loop, DUMP_SIGNAL), 0); /* once is enough */
    assert_int_equal(futoin_loop_dump_on_signal(loop, -1), -1);

    /* Raised on the loop thread itself: answered on the next round. */
    futoin_loop_hold(loop);
    raise(DUMP_SIGNAL);
    assert_int_equal(a.calls, 0); /* the handler only queued the request */
    futoin_loop_run(loop);
    assert_int_equal(a.calls, 1);
    assert_true(a.on_loop_thread);
    expect_line(a.text, "end of dump: 0 roots", NULL);

    /* Sent to the loop thread while it sleeps in run(): the handler wakes it. */
    futoin_loop_hold(loop);
    pthread_t self = pthread_self();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, send_signal, &self), 0);
    futoin_loop_run(loop);
    pthread_join(t, NULL);
    assert_int_equal(a.calls, 2);

    /* Unregistered: the signal asks nobody (the handler stays installed). */
    assert_int_equal(futoin_loop_dump_on_signal(loop, 0), 0);
    raise(DUMP_SIGNAL);
    futoin_loop_run(loop);
    assert_int_equal(a.calls, 2);

    /* futoin_loop_free() takes a registration out of the table. */
    FutoInLoop* l2 = futoin_loop_new_virtual();
    assert_int_equal(futoin_loop_dump_on_signal(l2, DUMP_SIGNAL), 0); /* default handler */
    futoin_loop_free(l2);
    raise(DUMP_SIGNAL); /* must not touch the freed loop */
    futoin_loop_free(loop);
    free(a.text);
}

/* ---- 100,000 levels -------------------------------------------------------- */

/* 100,000 levels; 30,000 under valgrind, where the walks below take 13 s
 * of CPU at 100,000: a walk or a dump that recursed per level would still
 * overflow the 256 KB stack (16 bytes and more a frame) long before 30,000. */
static size_t deep_levels(void)
{
    const char* v = getenv("FUTOIN_DEEP_LEVELS");
    if (v && *v) {
        return (size_t)strtoull(v, NULL, 10);
    }
    const char* vg = getenv("FUTOIN_TEST_VALGRIND");
    return vg && strcmp(vg, "1") == 0 ? 30000 : 100000;
}

typedef struct Deep {
    size_t levels;
    size_t* depth; /* depth[i] == i: each level's data */
    FutoInAsyncSteps* innermost;
    int ok;
} Deep;

static Deep* g_deep;

static void deep_add_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    size_t d = *(size_t*)data;
    if (d + 1 < g_deep->levels) {
        /* An error handler on every level: none is folded away. */
        futoin_add(as, deep_add_step, eh_quiet, &g_deep->depth[d + 1]);
    } else {
        g_deep->innermost = as;
        futoin_wait_external(as);
    }
}

static void deep_par_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    size_t d = *(size_t*)data;
    if (d + 1 < g_deep->levels) {
        FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
        futoin_add(p, deep_par_step, NULL, &g_deep->depth[d + 1]);
    } else {
        g_deep->innermost = as;
        futoin_wait_external(as);
    }
}

/* Counts the lines of a dump written to a temporary file and keeps the last. */
static size_t dump_lines(FutoInLoop* loop, uint32_t max_frames, char* last, size_t last_size,
        char* gap, size_t gap_size)
{
    FILE* f = tmpfile();
    assert_non_null(f);
    assert_int_equal(futoin_loop_dump(loop, f, max_frames), 1);
    rewind(f);
    char line[512];
    size_t n = 0;
    gap[0] = 0;
    while (fgets(line, sizeof(line), f)) {
        ++n;
        snprintf(last, last_size, "%s", line);
        if (strstr(line, " frames ...")) {
            snprintf(gap, gap_size, "%s", line);
        }
    }
    fclose(f);
    return n;
}

static void* deep_thread(void* arg)
{
    Deep* dp = arg;
    g_deep = dp;
    FutoInLoop* loop = futoin_loop_new_virtual();
    char last[512], gap[512];

    /* Nested steps: one flow, levels + 0 frames deep. */
    FutoInAsyncSteps* r = futoin_asyncsteps_new(loop);
    futoin_add(r, deep_add_step, eh_quiet, &dp->depth[0]);
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    FutoInFlowInfo fi;
    FutoInFrameInfo fr;
    int ok = dp->innermost == r && futoin_flow_info(r, &fi, sizeof(fi)) == 0
            && fi.depth == dp->levels && fi.wait == FUTOIN_WAIT_EXTERNAL;
    for (uint32_t lv = 1; ok && lv <= fi.depth; ++lv) {
        ok = futoin_frame_info(r, lv, &fr, sizeof(fr)) == 0 && fr.kind == FUTOIN_FRAME_STEP
                && fr.data == &dp->depth[lv - 1] && (fr.flags & FUTOIN_FRAME_ERROR_HANDLER);
    }
    size_t lines = dump_lines(loop, 32, last, sizeof(last), gap, sizeof(gap));
    char expect_gap[64];
    snprintf(expect_gap, sizeof(expect_gap), "    ... %zu frames ...\n", dp->levels + 1 - 32);
    ok = ok && lines == 3 + 1 + 32 + 1 + 1 && strcmp(gap, expect_gap) == 0
            && strcmp(last, "end of dump: 1 root, 1 running flow\n") == 0;
    lines = dump_lines(loop, 0, last, sizeof(last), gap, sizeof(gap));
    ok = ok && lines == 3 + 1 + dp->levels + 1 + 1 && !gap[0];
    futoin_asyncsteps_free(r);

    /* Nested parallels: levels flows, each a branch of the one before. */
    dp->innermost = NULL;
    r = futoin_asyncsteps_new(loop);
    futoin_add(r, deep_par_step, NULL, &dp->depth[0]);
    futoin_execute(r, NULL, NULL);
    futoin_loop_run(loop);
    size_t flows = 0;
    for (FutoInAsyncSteps* f = futoin_flow_next(r, NULL); f; f = futoin_flow_next(r, f)) {
        ++flows;
    }
    FutoInRootInfo ri;
    ok = ok && dp->innermost && flows == dp->levels && futoin_root_info(r, &ri, sizeof(ri)) == 0
            && ri.flows == dp->levels && ri.state == FUTOIN_ROOT_WAITING
            && futoin_flow_info(dp->innermost, &fi, sizeof(fi)) == 0
            && fi.wait == FUTOIN_WAIT_EXTERNAL;
    lines = dump_lines(loop, 32, last, sizeof(last), gap, sizeof(gap));
    char expect_last[80];
    snprintf(expect_last, sizeof(expect_last), "end of dump: 1 root, %zu running flows\n",
            dp->levels);
    /* Each flow: its line and its two frames. */
    ok = ok && lines == 3 + 3 * dp->levels + 1 && strcmp(last, expect_last) == 0;
    futoin_asyncsteps_free(r);
    futoin_loop_free(loop);
    dp->ok = ok;
    return NULL;
}

static void test_deep_walk(void** state)
{
    (void)state;
    SKIP_IF_TRACING();
    Deep dp;
    memset(&dp, 0, sizeof(dp));
    dp.levels = deep_levels();
    dp.depth = malloc(dp.levels * sizeof(size_t));
    assert_non_null(dp.depth);
    for (size_t i = 0; i < dp.levels; ++i) {
        dp.depth[i] = i;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    assert_int_equal(pthread_create(&t, &attr, deep_thread, &dp), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    free(dp.depth);
    assert_true(dp.ok);
}

/* ---- steps_started: a flow's own count of started steps ------------- */

typedef struct StepCount {
    uint32_t seen[8];
    int n;
    FutoInAsyncSteps* waiter;
    uint32_t branch_seen[2][2]; /* each branch's count in its two steps */
    int branch_n[2];
} StepCount;

static uint32_t steps_of(FutoInAsyncSteps* as)
{
    FutoInFlowInfo fi;
    memset(&fi, 0, sizeof(fi));
    assert_int_equal(futoin_flow_info(as, &fi, sizeof(fi)), 0);
    return fi.steps_started;
}

static void sc_note(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    StepCount* c = data;
    c->seen[c->n++] = steps_of(as);
}

static void sc_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    StepCount* c = data;
    c->seen[c->n++] = steps_of(as);
    c->waiter = as;
    futoin_wait_external(as);
}

static void sc_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    sc_note(as, data, args);
    futoin_error(as, "Boom", NULL);
}

static void sc_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    StepCount* c = data;
    c->seen[c->n++] = steps_of(as); /* an error handler starts no step */
    futoin_success(as);
}

typedef struct BranchCount {
    StepCount* c;
    int i;
} BranchCount;

static void sc_branch_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    BranchCount* b = data;
    b->c->branch_seen[b->i][b->c->branch_n[b->i]++] = steps_of(as);
}

static void sc_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    sc_branch_step(as, data, args);
    futoin_add(as, sc_branch_step, NULL, data);
}

static void sc_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    static BranchCount b[2];
    b[0].c = b[1].c = data;
    b[0].i = 0;
    b[1].i = 1;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    futoin_add(p, sc_branch, NULL, &b[0]);
    futoin_add(p, sc_branch, NULL, &b[1]);
}

static void test_flow_steps_started(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    StepCount c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = new_root(loop);
    futoin_add(root, sc_note, NULL, &c);
    futoin_add(root, sc_wait, NULL, &c);
    futoin_add(root, sc_fail, sc_eh, &c);
    futoin_add(root, sc_parallel, NULL, &c);
    futoin_add(root, sc_note, NULL, &c);
    uint32_t before = steps_of(root);
    futoin_execute(root, on_unhandled, NULL);
    futoin_loop_run(loop);
    /* Parked in sc_wait: the count is the one its step saw, from outside too. */
    assert_int_equal(c.n, 2);
    assert_int_equal(c.seen[0], before + 1);
    assert_int_equal(c.seen[1], before + 2);
    assert_int_equal(steps_of(root), c.seen[1]);
    futoin_success(c.waiter);
    futoin_loop_run(loop);
    /* sc_fail, its handler (no new step), sc_parallel, the last step. */
    assert_int_equal(c.n, 5);
    assert_int_equal(c.seen[2], before + 3);
    assert_int_equal(c.seen[3], c.seen[2]);
    /* Each branch counts its own steps (a sub-step is a step too)... */
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(c.branch_n[i], 2);
        assert_int_equal(c.branch_seen[i][1], c.branch_seen[i][0] + 1);
    }
    /* ...and the root's count is its own: sc_parallel, then the last step. */
    assert_int_equal(c.seen[4], before + 5);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_parked),
        cmocka_unit_test(test_walk_parked),
        cmocka_unit_test(test_walk_states),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_cross_thread_request),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_deep_walk),
        cmocka_unit_test(test_flow_steps_started),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
