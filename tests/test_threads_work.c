/* SPDX-License-Identifier: MIT */
/* futoin_add_work(): blocking work on worker threads as a step; cancel
 * before the work starts (never runs) and while it runs (result dropped,
 * cleaned up once); release of work_data exactly once. */
#include "threads_support.h"

typedef struct {
    int input;
    Gate* gate;         /* the work blocks on it when set */
    Gate* release_gate; /* opened by timeout_eh() */
    atomic_int started;
    atomic_int finished;
    atomic_int released;
    const char* fail; /* error code to return instead */
    pthread_t worker;
    int on_loop_thread; /* is_same_thread seen by the next step */
} Job;

static void job_fn(void* data, FutoInWorkResult* out)
{
    Job* j = data;
    j->worker = pthread_self();
    atomic_store(&j->started, 1);
    if (j->gate) {
        gate_wait(j->gate);
    }
    if (j->fail) {
        out->error = j->fail;
        out->info = "work failed";
    } else {
        out->args.arg0 = futoin_val_i32(j->input * 2);
        out->args.arg1 = counted_val(j->input);
    }
    atomic_store(&j->finished, 1);
}

static void job_release(void* data)
{
    atomic_fetch_add(&((Job*)data)->released, 1);
}

typedef struct {
    FutoInLoop* loop;
    int result;
    char error[64];
} Outcome;

static void take_result(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Outcome* o = data;
    o->result = futoin_arg_i32(args, 0, -1);
    assert_int_equal(as->api->is_same_thread(as), 1);
}

typedef struct {
    Job* job;
    Outcome* out;
} Pair;

static void pair_job(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_work(as, job_fn, ((Pair*)data)->job, job_release);
}

static void pair_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Outcome* o = ((Pair*)data)->out;
    snprintf(o->error, sizeof(o->error), "%s/%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void add_job(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_work(as, job_fn, data, job_release);
}

static void test_work_result(void** state)
{
    (void)state;
    counted_reset();
    Job j;
    memset(&j, 0, sizeof(j));
    j.input = 21;
    Outcome o = { futoin_loop_new(), 0, "" };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(o.loop);
    futoin_add(root, add_job, NULL, &j);
    futoin_add(root, take_result, NULL, &o);
    futoin_execute(root, NULL, NULL);
    /* No hold needed by the caller: the work holds the loop. */
    futoin_loop_run(o.loop);
    assert_int_equal(o.result, 42);
    assert_int_equal(atomic_load(&j.released), 1);
    assert_false(pthread_equal(j.worker, pthread_self()));
    assert_counted_balanced();
    futoin_asyncsteps_free(root);
    futoin_loop_free(o.loop);
}

static void test_work_error(void** state)
{
    (void)state;
    Job j;
    memset(&j, 0, sizeof(j));
    j.fail = "Blocked";
    Outcome o = { futoin_loop_new(), 0, "" };
    Pair pair = { &j, &o };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(o.loop);
    futoin_add(root, pair_job, pair_eh, &pair);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(o.loop);
    assert_string_equal(o.error, "Blocked/work failed");
    assert_int_equal(atomic_load(&j.released), 1);
    futoin_asyncsteps_free(root);
    futoin_loop_free(o.loop);
}

/* futoin_promise() waits for the worker too (the loop is held). */
static void test_work_promise(void** state)
{
    (void)state;
    counted_reset();
    Job j;
    memset(&j, 0, sizeof(j));
    j.input = 5;
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add_work(root, job_fn, &j, job_release);
    FutoInOutcome out;
    assert_int_equal(futoin_promise(root, &out), FUTOIN_PROMISE_OK);
    assert_int_equal(futoin_arg_i32(&out.args, 0, -1), 10);
    futoin_outcome_reset(&out);
    assert_counted_balanced();
    assert_int_equal(atomic_load(&j.released), 1);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* ---- cancel before the work starts: it never runs ---- */

static void with_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 20);
    futoin_add_work(as, job_fn, data, job_release);
}

/* The timeout has cancelled the queued work: the blocked workers may go
 * on now (opened here, not by a timer, so the order never depends on the
 * machine's speed). */
static void timeout_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    assert_string_equal(code, FUTOIN_TIMEOUT);
    gate_open(((Job*)data)->release_gate);
    futoin_success(as);
}

static void test_cancel_before_start(void** state)
{
    (void)state;
    counted_reset();
    /* Two workers, both blocked: the third job stays queued. */
    Gate gate;
    gate_init(&gate);
    Job blockers[2], queued;
    memset(blockers, 0, sizeof(blockers));
    memset(&queued, 0, sizeof(queued));
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* roots[3];
    for (int i = 0; i < 2; ++i) {
        blockers[i].gate = &gate;
        roots[i] = futoin_asyncsteps_new(loop);
        futoin_add(roots[i], add_job, NULL, &blockers[i]);
        futoin_execute(roots[i], NULL, NULL);
    }
    roots[2] = futoin_asyncsteps_new(loop);
    queued.release_gate = &gate;
    futoin_add(roots[2], with_timeout, timeout_eh, &queued);
    futoin_execute(roots[2], NULL, NULL);
    /* The timeout cancels the queued work; the gate opens after it. */
    futoin_loop_run(loop);
    assert_int_equal(atomic_load(&queued.started), 0); /* never ran */
    assert_int_equal(atomic_load(&queued.released), 1);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(atomic_load(&blockers[i].finished), 1);
        assert_int_equal(atomic_load(&blockers[i].released), 1);
    }
    for (int i = 0; i < 3; ++i) {
        futoin_asyncsteps_free(roots[i]);
    }
    futoin_loop_free(loop);
    assert_counted_balanced();
    gate_destroy(&gate);
}

/* ---- cancel while the work runs: result dropped, cleaned up once ---- */

typedef struct {
    FutoInAsyncSteps* root;
    Job* job;
    Gate* gate;
} CancelLater;

static void cancel_when_started(void* data)
{
    CancelLater* c = data;
    if (!atomic_load(&c->job->started)) {
        futoin_loop_deferred(futoin_asyncsteps_loop(c->root), 1, c, cancel_when_started);
        return;
    }
    futoin_cancel(c->root); /* the work is running: its result is now orphaned */
    gate_open(c->gate);     /* let it finish */
}

static void test_cancel_while_running(void** state)
{
    (void)state;
    counted_reset();
    Gate gate;
    gate_init(&gate);
    Job j;
    memset(&j, 0, sizeof(j));
    j.gate = &gate;
    j.input = 3;
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    Outcome o = { loop, 0, "" };
    futoin_add(root, add_job, NULL, &j);
    futoin_add(root, take_result, NULL, &o);
    futoin_execute(root, NULL, NULL);
    CancelLater c = { root, &j, &gate };
    futoin_loop_immediate(loop, &c, cancel_when_started);
    /* run() returns only after the orphaned result came back and was
     * dropped: the work held the loop until then. */
    futoin_loop_run(loop);
    assert_int_equal(atomic_load(&j.finished), 1);
    assert_int_equal(o.result, 0); /* the next step never ran */
    assert_int_equal(atomic_load(&j.released), 1);
    assert_int_equal(atomic_load(&g_counted_made), 1);
    assert_counted_balanced(); /* the dropped value was cleaned up once */
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    gate_destroy(&gate);
}

/* ---- a step dropped before it starts releases work_data ---- */

static void fail_first(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "Early", NULL);
}

static void test_dropped_unstarted(void** state)
{
    (void)state;
    Job j;
    memset(&j, 0, sizeof(j));
    FutoInLoop* loop = futoin_loop_new_virtual();
    futoin_set_misuse_handler(loop, count_misuse, NULL);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, fail_first, NULL, NULL);
    futoin_add_work(root, job_fn, &j, job_release);
    futoin_execute(root, NULL, NULL);
    futoin_loop_run(loop);
    assert_int_equal(atomic_load(&j.started), 0);
    assert_int_equal(atomic_load(&j.released), 1);
    /* Refused calls release at once too. */
    Job k;
    memset(&k, 0, sizeof(k));
    futoin_add_work(root, NULL, &k, job_release);
    assert_int_equal(atomic_load(&k.released), 1);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* ---- a loop thread stopped NOW with work in flight: settled, no leak ---- */

typedef struct {
    Job job;
    Gate gate;
    FutoInAsyncSteps* root;
} Flight;

static void flight_start(FutoInLoop* loop, void* data)
{
    Flight* f = data;
    f->root = futoin_asyncsteps_new(loop);
    futoin_add(f->root, add_job, NULL, &f->job);
    futoin_execute(f->root, NULL, NULL);
}

static void flight_stop(FutoInLoop* loop, void* data)
{
    (void)loop;
    Flight* f = data;
    futoin_asyncsteps_free(f->root);
    gate_open(&f->gate); /* the work finishes while the thread settles */
}

static void test_stop_now_with_work_in_flight(void** state)
{
    (void)state;
    counted_reset();
    Flight f;
    memset(&f, 0, sizeof(f));
    gate_init(&f.gate);
    f.job.gate = &f.gate;
    FutoInLoopThreadHooks hooks = { flight_start, flight_stop, &f };
    FutoInLoopThread* t = futoin_loop_thread_start(&hooks);
    assert_non_null(t);
    while (!atomic_load(&f.job.started)) {
        sleep_us(200);
    }
    futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_NOW);
    futoin_loop_thread_join(t);
    assert_int_equal(atomic_load(&f.job.finished), 1);
    assert_int_equal(atomic_load(&f.job.released), 1);
    assert_counted_balanced();
    gate_destroy(&f.gate);
}

/* ---- many small jobs from many roots ---- */

static void test_many_jobs(void** state)
{
    (void)state;
    counted_reset();
    unsigned n = (unsigned)scaled(2000, 20000, 200);
    FutoInLoop* loop = futoin_loop_new();
    Job* jobs = calloc(n, sizeof(*jobs));
    Outcome* outs = calloc(n, sizeof(*outs));
    FutoInAsyncSteps** roots = calloc(n, sizeof(*roots));
    assert_true(jobs && outs && roots);
    for (unsigned i = 0; i < n; ++i) {
        jobs[i].input = (int)i;
        roots[i] = futoin_asyncsteps_new(loop);
        futoin_add(roots[i], add_job, NULL, &jobs[i]);
        futoin_add(roots[i], take_result, NULL, &outs[i]);
        futoin_execute(roots[i], NULL, NULL);
    }
    futoin_loop_run(loop);
    for (unsigned i = 0; i < n; ++i) {
        assert_int_equal(outs[i].result, (int)(2 * i));
        assert_int_equal(atomic_load(&jobs[i].released), 1);
        futoin_asyncsteps_free(roots[i]);
    }
    assert_counted_balanced();
    free(jobs);
    free(outs);
    free(roots);
    futoin_loop_free(loop);
}

static int teardown_pool(void** state)
{
    (void)state;
    futoin_work_pool_shutdown();
    return 0;
}

static int setup_pool(void** state)
{
    (void)state;
    /* Two workers, so that "all workers busy" is easy to arrange. */
    return futoin_work_pool_configure(2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_work_result),
        cmocka_unit_test(test_work_error),
        cmocka_unit_test(test_work_promise),
        cmocka_unit_test(test_cancel_before_start),
        cmocka_unit_test(test_cancel_while_running),
        cmocka_unit_test(test_dropped_unstarted),
        cmocka_unit_test(test_stop_now_with_work_in_flight),
        cmocka_unit_test(test_many_jobs),
    };
    return cmocka_run_group_tests(tests, setup_pool, teardown_pool);
}
