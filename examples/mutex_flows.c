/* SPDX-License-Identifier: MIT */
/* Ten flows share a Mutex(2) (spec 1.11.1, 2.3): at most two are inside the
 * critical section at any time, the others wait in FIFO order and enter as
 * soon as a place frees up. Flow i stays inside (i % 3 + 1) * 10 ms.
 * Runs on the virtual clock, so the times are exact and it ends at once. */
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>
#include <futoin/sync.h>

#include <stdio.h>

#define FLOWS 10

typedef struct Flow {
    int id;
    uint32_t stay_ms;
    FutoInAsyncSteps* root;
    FutoInHandle timer;
} Flow;

static FutoInLoop* loop;
static FutoInSync* mutex;
static int inside;
static int max_inside;

static unsigned now(void)
{
    return (unsigned)futoin_loop_now(loop);
}

/* ---- a step that waits stay_ms: completed from a loop timer ---- */

static void stay_done(void* data)
{
    Flow* f = data;
    futoin_success(f->root);
}

static void stay_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    Flow* f = data;
    futoin_loop_cancel(loop, &f->timer);
}

static void stay(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Flow* f = data;
    f->timer = futoin_loop_deferred(loop, f->stay_ms, f, stay_done);
    futoin_set_cancel(as, stay_cancel, f);
}

/* ---- the critical section ---- */

static void leave(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    Flow* f = data;
    --inside;
    printf("t=%3u flow %d leave\n", now(), f->id);
}

static void critical_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Flow* f = data;
    if (++inside > max_inside) {
        max_inside = inside;
    }
    printf("t=%3u flow %d enter (inside: %d)\n", now(), f->id, inside);
    futoin_add(as, stay, NULL, f);
    futoin_add(as, leave, NULL, f);
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
    mutex = futoin_mutex_new(loop, 2, FUTOIN_SYNC_UNLIMITED);
    Flow flows[FLOWS];

    printf("Mutex(2) shared by %d flows; flow i stays (i %% 3 + 1) * 10 ms\n", FLOWS);
    for (int i = 0; i < FLOWS; ++i) {
        flows[i].id = i;
        flows[i].stay_ms = (uint32_t)(i % 3 + 1) * 10;
        flows[i].root = futoin_asyncsteps_new(loop);
        futoin_add_sync(flows[i].root, mutex, critical_section, NULL, &flows[i]);
        futoin_execute(flows[i].root, unhandled, NULL);
    }
    futoin_loop_run(loop);
    printf("done at t=%u, at most %d inside\n", now(), max_inside);

    for (int i = 0; i < FLOWS; ++i) {
        futoin_asyncsteps_free(flows[i].root);
    }
    /* Every flow has left, so the mutex can go. */
    if (futoin_sync_free(mutex) != FUTOIN_SYNC_OK) {
        fprintf(stderr, "mutex still busy\n");
        return 1;
    }
    futoin_loop_free(loop);
    return 0;
}
