/* SPDX-License-Identifier: MIT */
/*
 * Out of memory never loses work silently (docs/SEMANTICS.md "Memory"):
 * every allocation point of four representative programs (the engine's
 * step kinds, the sync objects with waiting flows, a loop pool with work
 * and a cross-thread completion, futoin_parallel_bounded() with items
 * that succeed, fail and time out) is failed once and from on, and each run
 * must end in a documented outcome (oom_sweep.h).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "oom_sweep.h"

#include <futoin/asyncsteps.h>
#include <futoin/sync.h>
#include <futoin/threads.h>

#include <pthread.h>
#include <stdatomic.h>

/* ---- (a) the engine: nested steps, an error handler, setTimeout,
 * parallel, a loop with break, state variables, stack(), relinquish,
 * successStep ---- */

typedef struct {
    int recovered; /* the nested error reached its handler */
    int timed_out; /* the timeout reached its handler */
    int branches[3];
    int iterations;
    int state_ok;
    int stack_ok;
    int value_ok;
    int finished;  /* the last step ran */
    int unhandled; /* the unhandled-error callback ran */
    int reported;  /* an API reported a failure to the program */
    char code[64];
    char info[160];
} EngineRun;

static void note_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)as;
    (void)info;
    ++*(int*)data;
}

static void fail_step(FutoInAsyncSteps* as, EngineRun* r, const char* info)
{
    r->reported = 1;
    futoin_error(as, FUTOIN_INTERNAL_ERROR, info);
}

static void nested_fails(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "MyError", "expected");
}

/* Four levels deep: past the frames a flow holds inline. */
static void nested3(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, nested_fails, NULL, data);
}

static void nested2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, nested3, NULL, data);
}

static void nested(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, nested2, NULL, data);
}

static void nested_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    EngineRun* r = data;
    if (strcmp(code, "MyError") == 0) {
        r->recovered = 1;
        futoin_success1(as, futoin_val_i32(7));
    }
}

static void wait_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    EngineRun* r = data;
    if (futoin_arg_i32(args, 0, 0) != 7) {
        r->recovered = 0;
    }
    futoin_set_timeout(as, 5);
}

static void timeout_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        ((EngineRun*)data)->timed_out = 1;
        futoin_success(as);
    }
}

static void branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    int* flag = data;
    *flag = 1;
    futoin_success(as);
}

static void run_parallel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    EngineRun* r = data;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (int i = 0; i < 3; ++i) {
        futoin_add(p, branch, NULL, &r->branches[i]);
    }
}

static void loop_body(FutoInAsyncSteps* as, void* data)
{
    EngineRun* r = data;
    if (++r->iterations == 3) {
        futoin_break(as, NULL);
    }
}

static void run_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, loop_body, data, "outer");
}

static void* state_alloc(void* data)
{
    (void)data;
    int* v = malloc(sizeof(int));
    if (v) {
        *v = 42;
    }
    return v;
}

static void state_cleanup(void* data, void* value)
{
    (void)data;
    free(value);
}

static void use_state(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    EngineRun* r = data;
    int* v = futoin_state(as, "counter", state_alloc, state_cleanup, r);
    if (!v) {
        fail_step(as, r, "state variable: out of memory");
        return;
    }
    r->state_ok = *v == 42;
}

static void use_stack(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    EngineRun* r = data;
    /* Larger than the pooled blocks: this one comes from the heap. */
    unsigned char* mem = futoin_stack(as, 4096, NULL);
    if (!mem) {
        fail_step(as, r, "stack(): out of memory");
        return;
    }
    mem[4095] = 1;
    r->stack_ok = mem[0] == 0;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.args[0] = futoin_val_strdup("value");
    if (!out.args[0].type) {
        fail_step(as, r, "strdup value: out of memory");
        return;
    }
    futoin_relinquish(as);
    futoin_success_step(as, &out);
}

static void check_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    EngineRun* r = data;
    r->value_ok = strcmp(futoin_arg_cstr(args, 0, ""), "value") == 0;
    r->finished = 1;
}

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    EngineRun* r = data;
    r->unhandled = 1;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", futoin_error_info(as));
}

/* The outcome of a root that ran until its loop had no work left. */
static OomResult root_outcome(const char* what, int finished, int unhandled, int reported,
        const char* code, const char* info, int values_ok, char* why, size_t size)
{
    if (finished && !unhandled) {
        if (!values_ok) {
            oom_bad(why, size, "%s: success with values missing", what);
            return OOM_BAD;
        }
        return OOM_COMPLETED;
    }
    if (unhandled) {
        if (strcmp(code, FUTOIN_INTERNAL_ERROR) == 0 && oom_info_ok(info)) {
            return reported ? OOM_REPORTED : OOM_STEP_ERROR;
        }
        oom_bad(why, size, "%s: failed with %s \"%s\"", what, code, info);
        return OOM_BAD;
    }
    oom_bad(why, size, "%s: never completed, and the loop ran out of work", what);
    return OOM_BAD;
}

/* More roots than the loop's first ring, timer records and pools hold:
 * their growth is swept too. */
#define ENGINE_ROOTS 70

static OomResult engine_program(char* why, size_t size)
{
    static EngineRun runs[ENGINE_ROOTS];
    FutoInAsyncSteps* roots[ENGINE_ROOTS] = { NULL };
    memset(runs, 0, sizeof(runs));
    FutoInLoop* loop = futoin_loop_new_virtual();
    if (!loop) {
        return OOM_REPORTED;
    }
    int misuse = 0;
    futoin_set_misuse_handler(loop, note_misuse, &misuse);
    OomResult res = OOM_COMPLETED;
    for (int i = 0; i < ENGINE_ROOTS; ++i) {
        EngineRun* r = &runs[i];
        FutoInAsyncSteps* as = futoin_asyncsteps_new(loop);
        if (!as) {
            res = OOM_REPORTED;
            break;
        }
        roots[i] = as;
        /* All roots yield in the same burst: the loop's ring must grow. */
        futoin_relinquish(as);
        futoin_add(as, nested, nested_eh, r);
        futoin_add(as, wait_timeout, timeout_eh, r);
        futoin_add(as, run_parallel, NULL, r);
        futoin_add(as, run_loop, NULL, r);
        futoin_add(as, use_state, NULL, r);
        futoin_add(as, use_stack, NULL, r);
        futoin_add(as, check_value, NULL, r);
        futoin_execute(as, unhandled, r);
    }
    futoin_loop_run(loop);
    for (int i = 0; i < ENGINE_ROOTS && roots[i] && res != OOM_BAD; ++i) {
        EngineRun* r = &runs[i];
        int values_ok = r->recovered && r->timed_out && r->branches[0] && r->branches[1]
                && r->branches[2] && r->iterations == 3 && r->state_ok && r->stack_ok
                && r->value_ok;
        OomResult one = root_outcome("engine root", r->finished, r->unhandled, r->reported, r->code,
                r->info, values_ok, why, size);
        if (one != OOM_COMPLETED) {
            res = one;
        }
    }
    for (int i = 0; i < ENGINE_ROOTS; ++i) {
        if (roots[i]) {
            futoin_asyncsteps_free(roots[i]);
        }
    }
    futoin_loop_free(loop);
    if (misuse) {
        oom_bad(why, size, "%d misuse reports", misuse);
        return OOM_BAD;
    }
    return res;
}

/* ---- (b) sync: three roots through a Mutex, a Throttle and a Limiter
 * that admit one at a time, so the others wait ---- */

#define SYNC_ROOTS 3

typedef struct {
    int sections[3];
    int finished;
    int unhandled;
    int reported;
    char code[64];
    char info[160];
} SyncRoot;

typedef struct {
    FutoInSync* obj[3];
    SyncRoot roots[SYNC_ROOTS];
    int misuse;
} SyncRun;

static void hold(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_set_timeout(as, 2);
}

static void hold_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        futoin_success(as);
    }
}

typedef struct {
    SyncRoot* root;
    int k;
} SectionArg;

static SectionArg section_args[SYNC_ROOTS][3];

static void section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    SectionArg* a = data;
    ++a->root->sections[a->k];
    futoin_add(as, hold, hold_eh, NULL);
}

static void sync_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ((SyncRoot*)data)->finished = 1;
}

static void sync_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    SyncRoot* r = data;
    r->unhandled = 1;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", futoin_error_info(as));
}

static void sync_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)as;
    (void)info;
    ++((SyncRun*)data)->misuse;
}

static OomResult sync_program(char* why, size_t size)
{
    SyncRun run;
    memset(&run, 0, sizeof(run));
    FutoInLoop* loop = futoin_loop_new_virtual();
    if (!loop) {
        return OOM_REPORTED;
    }
    futoin_set_misuse_handler(loop, sync_misuse, &run);
    FutoInLimiterOptions lo;
    futoin_limiter_options_init(&lo);
    lo.concurrent = 1;
    lo.max_queue = SYNC_ROOTS;
    lo.rate = 1;
    lo.period_ms = 3;
    lo.burst = SYNC_ROOTS;
    run.obj[0] = futoin_mutex_new(loop, 1, SYNC_ROOTS);
    run.obj[1] = futoin_throttle_new(loop, 1, 3, SYNC_ROOTS);
    run.obj[2] = futoin_limiter_new(loop, &lo);
    FutoInAsyncSteps* roots[SYNC_ROOTS] = { NULL };
    OomResult res = OOM_COMPLETED;
    int made = run.obj[0] && run.obj[1] && run.obj[2];
    for (int i = 0; made && i < SYNC_ROOTS; ++i) {
        roots[i] = futoin_asyncsteps_new(loop);
        made = roots[i] != NULL;
    }
    if (!made) {
        res = OOM_REPORTED;
    } else {
        for (int i = 0; i < SYNC_ROOTS; ++i) {
            for (int k = 0; k < 3; ++k) {
                section_args[i][k].root = &run.roots[i];
                section_args[i][k].k = k;
                futoin_add_sync(roots[i], run.obj[k], section, NULL, &section_args[i][k]);
            }
            futoin_add(roots[i], sync_done, NULL, &run.roots[i]);
            futoin_execute(roots[i], sync_unhandled, &run.roots[i]);
        }
        futoin_loop_run(loop);
        for (int i = 0; i < SYNC_ROOTS && res != OOM_BAD; ++i) {
            SyncRoot* r = &run.roots[i];
            int values_ok = r->sections[0] == 1 && r->sections[1] == 1 && r->sections[2] == 1;
            OomResult one = root_outcome("sync root", r->finished, r->unhandled, r->reported,
                    r->code, r->info, values_ok, why, size);
            if (one != OOM_COMPLETED) {
                res = one;
            }
        }
    }
    for (int i = 0; i < SYNC_ROOTS; ++i) {
        if (roots[i]) {
            futoin_asyncsteps_free(roots[i]);
        }
    }
    for (int k = 0; k < 3; ++k) {
        if (run.obj[k]) {
            futoin_sync_free(run.obj[k]);
        }
    }
    futoin_loop_free(loop);
    if (run.misuse) {
        oom_bad(why, size, "%d misuse reports", run.misuse);
        return OOM_BAD;
    }
    return res;
}

/* ---- (c) threads: a root spawned on a loop pool runs blocking work on
 * the worker pool, then waits for a completion from the main thread ---- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    FutoInAsyncSteps* waiting; /* the step that waits for the main thread */
    int setup_ran;
    int work_value;
    int external_value;
    int finished;
    int done;            /* done() of the pool ran */
    char code[64];       /* its code ("" on success) */
    char info[160];      /* error_info seen by the outermost handler */
    atomic_int released; /* the work's release ran */
} PoolRun;

static void work_fn(void* data, FutoInWorkResult* out)
{
    (void)data;
    out->args.args[0] = futoin_val_i32(42);
}

static void work_release(void* data)
{
    atomic_fetch_add(&((PoolRun*)data)->released, 1);
}

static void wait_main(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    PoolRun* p = data;
    pthread_mutex_lock(&p->lock);
    p->work_value = futoin_arg_i32(args, 0, 0);
    p->waiting = as;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    futoin_wait_external(as);
}

static void pool_last(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    PoolRun* p = data;
    p->external_value = futoin_arg_i32(args, 0, 0);
    p->finished = 1;
}

static void pool_body(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_work(as, work_fn, data, work_release);
    futoin_add(as, wait_main, NULL, data);
    futoin_add(as, pool_last, NULL, data);
}

static void pool_outer_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)code;
    PoolRun* p = data;
    snprintf(p->info, sizeof(p->info), "%s", futoin_error_info(as));
}

static void pool_setup(FutoInAsyncSteps* root, void* data)
{
    ((PoolRun*)data)->setup_ran = 1;
    futoin_add(root, pool_body, pool_outer_eh, data);
}

static void pool_done(void* data, const char* code)
{
    PoolRun* p = data;
    pthread_mutex_lock(&p->lock);
    snprintf(p->code, sizeof(p->code), "%s", code ? code : "");
    p->done = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static OomResult pool_program(char* why, size_t size)
{
    static PoolRun p;
    memset(&p, 0, sizeof(p));
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    FutoInLoopPool* pool = futoin_loop_pool_new(1);
    if (!pool) {
        return OOM_REPORTED;
    }
    if (futoin_loop_pool_spawn(pool, pool_setup, pool_done, &p) < 0) {
        futoin_loop_pool_free(pool);
        futoin_work_pool_shutdown();
        return OOM_REPORTED;
    }
    pthread_mutex_lock(&p.lock);
    while (!p.done && !p.waiting) {
        pthread_cond_wait(&p.cond, &p.lock);
    }
    FutoInAsyncSteps* waiting = p.done ? NULL : p.waiting;
    pthread_mutex_unlock(&p.lock);
    if (waiting) {
        /* From this thread: the completion crosses to the loop thread. */
        futoin_success1(waiting, futoin_val_i32(5));
    }
    pthread_mutex_lock(&p.lock);
    while (!p.done) {
        pthread_cond_wait(&p.cond, &p.lock);
    }
    pthread_mutex_unlock(&p.lock);
    futoin_loop_pool_free(pool);
    futoin_work_pool_shutdown();
    if (!p.code[0]) {
        if (!p.finished || p.work_value != 42 || p.external_value != 5) {
            oom_bad(why, size, "pool root: success with values missing");
            return OOM_BAD;
        }
    } else if (strcmp(p.code, FUTOIN_INTERNAL_ERROR) != 0) {
        oom_bad(why, size, "pool root: done() with %s \"%s\"", p.code, p.info);
        return OOM_BAD;
    } else if (p.setup_ran && !oom_info_ok(p.info)) {
        oom_bad(why, size, "pool root: InternalError \"%s\"", p.info);
        return OOM_BAD;
    }
    if (p.setup_ran && p.finished + (p.code[0] != 0) != 1) {
        oom_bad(why, size, "pool root: finished %d with code %s", p.finished, p.code);
        return OOM_BAD;
    }
    if (atomic_load(&p.released) > 1) {
        oom_bad(why, size, "work released %d times", atomic_load(&p.released));
        return OOM_BAD;
    }
    if (!p.code[0]) {
        return OOM_COMPLETED;
    }
    /* Without setup the spawn's root could not be made: done() said so. */
    return p.setup_ran ? OOM_STEP_ERROR : OOM_REPORTED;
}

/* ---- (d) futoin_parallel_bounded(): items that succeed with an owned
 * string and a plain value, fail, and time out; the next step checks every
 * outcome ---- */

#define BOUNDED_ITEMS 5

typedef struct {
    int checked;   /* the outcomes were as expected */
    int finished;  /* the last step ran */
    int unhandled; /* the unhandled-error callback ran */
    int reported;  /* an outcome or a step said "out of memory" */
    char code[64];
    char info[160];
} BoundedRun;

static void bounded_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    switch (i % 4) {
    case 0: {
        FutoInBinaryValue v = futoin_val_strdup("owned");
        if (!v.type) {
            futoin_error(as, FUTOIN_INTERNAL_ERROR, "strdup value: out of memory");
            return;
        }
        futoin_success1(as, v);
        break;
    }
    case 1:
        futoin_error(as, "ItemError", "item info");
        break;
    case 2:
        futoin_set_timeout(as, 1);
        break;
    default:
        futoin_success1(as, futoin_val_i32((int32_t)i));
        break;
    }
}

/* Item i's outcome: 1 as expected, 0 an InternalError that says out of
 * memory (the item or its record could not have what it needed), -1
 * anything else. */
static int bounded_outcome_ok(const FutoInBoundedOutcome* o, size_t i)
{
    if (o->code && strcmp(o->code, FUTOIN_INTERNAL_ERROR) == 0 && oom_info_ok(o->info)) {
        return 0;
    }
    switch (i % 4) {
    case 0:
        return !o->code && strcmp(futoin_arg_cstr(&o->args, 0, ""), "owned") == 0 ? 1 : -1;
    case 1:
        return o->code && strcmp(o->code, "ItemError") == 0 && strcmp(o->info, "item info") == 0
                ? 1
                : -1;
    case 2:
        return o->code && strcmp(o->code, FUTOIN_TIMEOUT) == 0 ? 1 : -1;
    default:
        return !o->code && futoin_arg_int(&o->args, 0, -1) == (int64_t)i ? 1 : -1;
    }
}

static void bounded_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    BoundedRun* r = data;
    const FutoInBoundedResult* res = futoin_bounded_result(args);
    r->finished = 1;
    if (!res || res->count != BOUNDED_ITEMS) {
        return;
    }
    int ok = 1;
    for (size_t i = 0; i < res->count; ++i) {
        int one = bounded_outcome_ok(&res->items[i], i);
        if (one < 0) {
            ok = 0;
        } else if (one == 0) {
            r->reported = 1;
        }
    }
    r->checked = ok;
}

static void bounded_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    BoundedRun* r = data;
    r->unhandled = 1;
    snprintf(r->code, sizeof(r->code), "%s", code);
    snprintf(r->info, sizeof(r->info), "%s", futoin_error_info(as));
}

static OomResult bounded_program(char* why, size_t size)
{
    BoundedRun run;
    memset(&run, 0, sizeof(run));
    FutoInLoop* loop = futoin_loop_new_virtual();
    if (!loop) {
        return OOM_REPORTED;
    }
    int misuse = 0;
    futoin_set_misuse_handler(loop, note_misuse, &misuse);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    if (!root) {
        futoin_loop_free(loop);
        return OOM_REPORTED;
    }
    futoin_parallel_bounded(root, BOUNDED_ITEMS, 2, bounded_item, NULL, FUTOIN_BOUNDED_ALL_SETTLED);
    futoin_add(root, bounded_check, NULL, &run);
    futoin_execute(root, bounded_unhandled, &run);
    futoin_loop_run(loop);
    OomResult res = root_outcome("bounded root", run.finished, run.unhandled, run.reported,
            run.code, run.info, run.checked, why, size);
    if (res == OOM_COMPLETED && run.reported) {
        res = OOM_STEP_ERROR; /* an item's step was told */
    }
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    if (misuse) {
        oom_bad(why, size, "%d misuse reports", misuse);
        return OOM_BAD;
    }
    return res;
}

static void test_oom_engine(void** state)
{
    (void)state;
    oom_sweep("engine", engine_program);
}

static void test_oom_sync(void** state)
{
    (void)state;
    oom_sweep("sync", sync_program);
}

static void test_oom_threads(void** state)
{
    (void)state;
    oom_sweep("threads", pool_program);
}

static void test_oom_bounded(void** state)
{
    (void)state;
    oom_sweep("bounded", bounded_program);
}

int main(void)
{
    oom_require_fault_injection();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_engine),
        cmocka_unit_test(test_oom_sync),
        cmocka_unit_test(test_oom_threads),
        cmocka_unit_test(test_oom_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
