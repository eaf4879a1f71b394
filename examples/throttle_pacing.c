/* SPDX-License-Identifier: MIT */
/* A Throttle(3 per 100 ms) paces ten flows (spec 1.11.2, 2.4). Flow i
 * arrives at 15 * i ms; at most 3 enter per 100 ms window, the others wait
 * in FIFO order for the next window.
 *
 * Windows (see include/futoin/sync.h): the first entry at 0 opens [0,100);
 * flows 0-2 fill it and flows 3-6 queue. At 100 the next window opens and
 * takes the three oldest waiters (3, 4, 5); 7-9 arrive meanwhile and queue
 * behind 6. At 200: 6, 7, 8. At 300: 9.
 * Runs on the virtual clock, so the times are exact and it ends at once. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>
#include <futoin/sync.h>

#include <stdio.h>

#define FLOWS 10

typedef struct Flow {
    int id;
    uint32_t arrive_ms;
    FutoInAsyncSteps* root;
    FutoInHandle timer;
} Flow;

static FutoInLoop* loop;
static FutoInSync* throttle;

static unsigned now(void)
{
    return (unsigned)futoin_loop_now(loop);
}

static void arrived(void* data)
{
    Flow* f = data;
    futoin_success(f->root);
}

static void arrive_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Flow* f = data;
    futoin_loop_cancel(loop, &f->timer);
}

/* First step: wait until the flow's arrival time. */
static void arrive(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Flow* f = data;
    if (f->arrive_ms) {
        f->timer = futoin_loop_deferred(loop, f->arrive_ms, f, arrived);
        futoin_set_cancel(as, arrive_cancel, f);
    }
}

static void critical_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    Flow* f = data;
    printf("t=%3u flow %d enters (arrived t=%3u, waited %3u ms)\n", now(), f->id,
            (unsigned)f->arrive_ms, now() - (unsigned)f->arrive_ms);
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
    throttle = futoin_throttle_new(loop, 3, 100, FUTOIN_SYNC_UNLIMITED);
    Flow flows[FLOWS];

    printf("Throttle(3 per 100 ms); flow i arrives at 15 * i ms\n");
    for (int i = 0; i < FLOWS; ++i) {
        flows[i].id = i;
        flows[i].arrive_ms = (uint32_t)i * 15;
        flows[i].root = futoin_asyncsteps_new(loop);
        futoin_add(flows[i].root, arrive, NULL, &flows[i]);
        futoin_add_sync(flows[i].root, throttle, critical_section, NULL, &flows[i]);
        futoin_execute(flows[i].root, unhandled, NULL);
    }
    futoin_loop_run(loop);
    printf("done at t=%u\n", now());

    for (int i = 0; i < FLOWS; ++i) {
        futoin_asyncsteps_free(flows[i].root);
    }
    if (futoin_sync_free(throttle) != FUTOIN_SYNC_OK) {
        fprintf(stderr, "throttle still busy\n");
        return 1;
    }
    futoin_loop_free(loop);
    return 0;
}
