/* SPDX-License-Identifier: MIT */
/* A Limiter (spec 1.11.7, 2.5) turns excess load into DefenseRejected:
 * 3 requests may run at once and 1 more may wait for a place; at most 2
 * may start per 100 ms and 1 more may wait for the rate (burst), holding
 * its place meanwhile. Six requests arrive at 0, each takes 10 ms.
 *
 *   0: requests 0 and 1 get a place and the rate: they start.
 *      Request 2 gets a place but the rate is used up: waits (burst 1/1).
 *      Request 3 finds no place: waits (queue 1/1).
 *      Requests 4 and 5 find the place queue full: rejected at once (their
 *      rejection happens on their admission turn, before 0 and 1 print
 *      "start" on their next turn).
 *  10: 0 and 1 are done. Request 3 gets 0's place, but the burst queue is
 *      full (2 still waits for the rate): rejected, place freed.
 * 100: the next rate window: request 2 starts; done at 110.
 * Runs on the virtual clock, so the times are exact and it ends at once. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>
#include <futoin/sync.h>

#include <stdio.h>

#define REQUESTS 6

typedef struct Request {
    int id;
    FutoInAsyncSteps* root;
    FutoInHandle timer;
} Request;

static FutoInLoop* loop;
static FutoInSync* limiter;
static int served;
static int rejected;

static unsigned now(void)
{
    return (unsigned)futoin_loop_now(loop);
}

static void work_done(void* data)
{
    Request* r = data;
    futoin_success(r->root);
}

static void work_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Request* r = data;
    futoin_loop_cancel(loop, &r->timer);
}

static void work(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Request* r = data;
    r->timer = futoin_loop_deferred(loop, 10, r, work_done);
    futoin_set_cancel(as, work_cancel, r);
}

static void finish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    Request* r = data;
    ++served;
    printf("t=%3u request %d done\n", now(), r->id);
}

static void handle(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Request* r = data;
    printf("t=%3u request %d start\n", now(), r->id);
    futoin_add(as, work, NULL, r);
    futoin_add(as, finish, NULL, r);
}

/* DefenseRejected comes from the Limiter, outside the critical section, so
 * it reaches the handler of the step around the sync step. */
static void on_error(FutoInAsyncSteps* as, void* data, const char* code)
{
    Request* r = data;
    ++rejected;
    printf("t=%3u request %d rejected: %s (%s)\n", now(), r->id, code, futoin_error_info(as));
    futoin_success(as); /* a real server would answer "busy" here */
}

static void request(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_sync(as, limiter, handle, NULL, data);
}

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    fprintf(stderr, "unhandled error %s (%s)\n", code, futoin_error_info(as));
    if (futoin_tracing_enabled()) { /* a tracing build: the steps that led here */
        futoin_error_trace_print(as, stderr);
    }
}

int main(void)
{
    loop = futoin_loop_new_virtual();
    FutoInLimiterOptions opts = FUTOIN_LIMITER_OPTIONS_INIT;
    opts.concurrent = 3;
    opts.max_queue = 1;
    opts.rate = 2;
    opts.period_ms = 100;
    opts.burst = 1;
    limiter = futoin_limiter_new(loop, &opts);
    Request reqs[REQUESTS];

    printf("Limiter: 3 at once + 1 waiting, 2 per 100 ms + 1 waiting; "
           "%d requests at t=0, 10 ms each\n",
            REQUESTS);
    for (int i = 0; i < REQUESTS; ++i) {
        reqs[i].id = i;
        reqs[i].root = futoin_asyncsteps_new(loop);
        futoin_add(reqs[i].root, request, on_error, &reqs[i]);
        futoin_execute(reqs[i].root, unhandled, NULL);
    }
    futoin_loop_run(loop);
    printf("served %d, rejected %d\n", served, rejected);

    for (int i = 0; i < REQUESTS; ++i) {
        futoin_asyncsteps_free(reqs[i].root);
    }
    if (futoin_sync_free(limiter) != FUTOIN_SYNC_OK) {
        fprintf(stderr, "limiter still busy\n");
        return 1;
    }
    futoin_loop_free(loop);
    return 0;
}
