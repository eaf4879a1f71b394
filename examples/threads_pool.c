/* SPDX-License-Identifier: MIT */
/* Loop threads, a worker pool and a shared Mutex (docs/RECIPES.md).
 *
 * A batch of jobs runs on a pool of two loop threads (futoin_loop_pool_*).
 * Each job is a root of its own:
 *   1. its checksum is computed on the worker pool (futoin_add_work(): the
 *      blocking part leaves the loop thread free for the other roots);
 *   2. the result is appended to a ledger that all jobs share, inside a
 *      Mutex shared by the loops (futoin_mutex_new_shared()); the append
 *      itself is blocking work again, done while the job holds the Mutex.
 * Job 4 has a bad input: its work function reports an error, which ends
 * that root with the error code; the other jobs are not affected.
 *
 * The main thread waits until every job has called done, then stops the
 * pool. The output is printed at the end, in job order, so that it does
 * not depend on which loop or worker ran what. */
#include <futoin/sync.h>
#include <futoin/threads.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define JOBS 6
#define LOOPS 2
#define WORKERS 2
#define BAD_JOB 4

typedef struct Batch {
    FutoInSync* ledger_lock; /* a shared Mutex(1): the ledger's owner */
    /* The ledger: written only by the job that holds ledger_lock. */
    unsigned ledger[JOBS];
    unsigned ledger_len;
    /* Checks of the Mutex: jobs inside the critical section right now, and
     * the most there ever were (loop threads update them: atomics). */
    atomic_int inside;
    atomic_int max_inside;
    /* Jobs that have ended (done called), for the main thread to wait on. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned finished;
} Batch;

typedef struct Job {
    Batch* batch;
    unsigned id;
    uint32_t checksum;
    char outcome[64]; /* "ok" or the error code that ended the job */
} Job;

/* ---- work on a worker thread: may block, must not touch the loop ---- */

static void checksum_work(void* data, FutoInWorkResult* out)
{
    Job* job = data;
    if (job->id == BAD_JOB) {
        out->error = "BadInput"; /* copied when this returns */
        out->info = "record 4 is malformed";
        return;
    }
    /* FNV-1a over the record repeated 20000 times: the stand-in for real
     * work. */
    char record[32];
    int len = snprintf(record, sizeof(record), "record-%u", job->id);
    uint32_t h = 2166136261u;
    for (int round = 0; round < 20000; ++round) {
        for (int i = 0; i < len; ++i) {
            h = (h ^ (unsigned char)record[i]) * 16777619u;
        }
    }
    out->args.arg0 = futoin_val_u32(h);
}

static void append_work(void* data, FutoInWorkResult* out)
{
    (void)out;
    Job* job = data;
    Batch* b = job->batch;
    /* Safe without a lock of its own: the job holds ledger_lock until the
     * step after this one. */
    b->ledger[b->ledger_len++] = job->id;
}

/* ---- the steps, on the job's loop thread ---- */

static void leave_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    Job* job = data;
    atomic_fetch_sub(&job->batch->inside, 1);
}

/* The critical section: its input is the result of the step before the
 * sync step, the checksum. */
static void record(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Job* job = data;
    Batch* b = job->batch;
    job->checksum = (uint32_t)futoin_arg_int(args, 0, 0);
    int now = atomic_fetch_add(&b->inside, 1) + 1;
    int max = atomic_load(&b->max_inside);
    while (now > max && !atomic_compare_exchange_weak(&b->max_inside, &max, now)) {
    }
    futoin_add_work(as, append_work, job, NULL);
    futoin_add(as, leave_section, NULL, job);
}

static void job_setup(FutoInAsyncSteps* root, void* data)
{
    Job* job = data;
    futoin_add_work(root, checksum_work, job, NULL);
    futoin_add_sync(root, job->batch->ledger_lock, record, NULL, job);
}

/* Called once per job on its loop thread: code is NULL on success, else
 * the error that ended the root (or FUTOIN_POOL_CANCELLED). */
static void job_done(void* data, const char* code)
{
    Job* job = data;
    Batch* b = job->batch;
    snprintf(job->outcome, sizeof(job->outcome), "%s", code ? code : "ok");
    pthread_mutex_lock(&b->lock);
    ++b->finished;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

int main(void)
{
    static Batch b;
    static Job jobs[JOBS];
    memset(&b, 0, sizeof(b));
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    b.ledger_lock = futoin_mutex_new_shared(1, FUTOIN_SYNC_UNLIMITED);
    FutoInLoopPool* pool = futoin_loop_pool_new(LOOPS);
    if (!b.ledger_lock || !pool || futoin_work_pool_configure(WORKERS) != 0) {
        fprintf(stderr, "threads_pool: cannot set up\n");
        return 1;
    }
    printf("%d jobs on %u loop threads, blocking work on %d worker threads\n", JOBS,
            futoin_loop_pool_size(pool), WORKERS);

    unsigned started = 0;
    for (unsigned i = 0; i < JOBS; ++i) {
        jobs[i].batch = &b;
        jobs[i].id = i + 1;
        snprintf(jobs[i].outcome, sizeof(jobs[i].outcome), "not started");
        if (futoin_loop_pool_spawn(pool, job_setup, job_done, &jobs[i]) >= 0) {
            ++started;
        }
    }

    /* Wait for the jobs, then stop the pool. A DRAIN stop alone would not
     * wait for a job queued on the shared Mutex while a job of another loop
     * holds it: nothing on the queued job's own loop keeps that loop busy. */
    pthread_mutex_lock(&b.lock);
    while (b.finished < started) {
        pthread_cond_wait(&b.cond, &b.lock);
    }
    pthread_mutex_unlock(&b.lock);
    futoin_loop_pool_free(pool);
    futoin_work_pool_shutdown(); /* joins the workers: a clean exit */

    int ok = 1;
    unsigned appended[JOBS + 1] = { 0 };
    for (unsigned i = 0; i < b.ledger_len; ++i) {
        ++appended[b.ledger[i]];
    }
    for (unsigned i = 0; i < JOBS; ++i) {
        Job* job = &jobs[i];
        if (strcmp(job->outcome, "ok") == 0) {
            printf("job %u: checksum %08x, recorded\n", job->id, (unsigned)job->checksum);
            ok = ok && appended[job->id] == 1;
        } else {
            printf("job %u: failed with %s, not recorded\n", job->id, job->outcome);
            ok = ok && appended[job->id] == 0;
        }
    }
    printf("ledger: %u records\n", b.ledger_len);
    printf("jobs inside the shared Mutex at once: at most %d\n", atomic_load(&b.max_inside));
    ok = ok && atomic_load(&b.max_inside) == 1;
    ok = ok && futoin_sync_free(b.ledger_lock) == FUTOIN_SYNC_OK;
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
    return ok ? 0 : 1;
}
