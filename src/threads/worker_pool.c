/* SPDX-License-Identifier: MIT */
/*
 * futoin_add_work(): blocking work on a process-wide pool of worker
 * threads, as a step (include/futoin/threads.h).
 *
 * A work item has two owners: the step (its frame, through the engine's
 * StepOwner release, which runs exactly once when the step is dropped
 * unstarted or its frame ends, whatever ended it) and the worker side
 * (from submission until the loop thread has received the result). The
 * item is freed by whichever lets go last; both decisions happen on the
 * loop thread, except the worker's own state changes, which take the pool
 * mutex. That gives the cancel guarantees:
 *  - frame ends while the item is QUEUED: it is unlinked under the mutex,
 *    so no worker can pick it up: the work never runs;
 *  - frame ends while RUNNING/POSTED: the step is marked gone; when the
 *    result reaches the loop thread it is dropped (values cleaned up once).
 * The loop is held from submission until the item is freed, so a loop
 * running futoin_loop_run() waits for the result instead of returning, and
 * a stopping loop thread settles it before freeing the loop.
 */
#include <futoin/threads.h>

#include "common/cpu_count.h"
#include "common/list.h"
#include "engine/engine_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { W_NEW = 0, W_QUEUED, W_RUNNING, W_POSTED, W_APPLIED };

#define QUEUE_LINK offsetof(WorkItem, link)

typedef struct WorkItem WorkItem;
struct WorkItem {
    StepOwner owner; /* first: the engine sees the item as a StepOwner */
    ListLink link;   /* in the pool's queue */
    FutoInLoop* loop;
    FutoInAsyncSteps* as;
    FutoInWorkFn fn;
    void* data;
    FutoInWorkRelease release;
    int state;     /* under g.lock while a worker may see the item */
    int submitted; /* the loop is held */
    int step_gone; /* loop thread: the step's frame has ended */
    int failed;    /* the work reported an error (code may be NULL: no memory) */
    FutoInArgs args;
    char* code;
    char* info;
    /* The message that brings the result back, reserved when the step
     * starts waiting: a worker that could not get one would have no way
     * to report it. Owned by the item until the worker posts it. */
    XMsg* msg;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work_cond;
    pthread_cond_t idle_cond;
    List queue; /* WorkItems waiting for a worker, oldest first */
    unsigned running;
    pthread_t* threads;
    unsigned nthreads;
    unsigned configured;
    int stopping;
} g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work_cond = PTHREAD_COND_INITIALIZER,
    .idle_cond = PTHREAD_COND_INITIALIZER,
};

static char* dup_str(const char* s)
{
    size_t len = strlen(s);
    char* p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len + 1);
    }
    return p;
}

/* Loop thread: both owners have let go. */
static void work_finish(WorkItem* w)
{
    if (w->release) {
        w->release(w->data);
    }
    if (w->msg) {
        futoin__loop_xmsg_free(w->loop, w->msg); /* never posted */
    }
    if (w->submitted) {
        futoin_loop_release(w->loop);
    }
    free(w->code);
    free(w->info);
    free(w);
}

static void queue_unlink(WorkItem* w)
{
    list_remove(&g.queue, w, QUEUE_LINK);
}

/* ---- loop thread: the result arrives ---- */

static int work_done_run(void* consumer, XMsg* m)
{
    (void)consumer;
    WorkItem* w = *(WorkItem**)(void*)m->u.bytes;
    /* The worker is done with w (it posted after its last access). */
    w->state = W_APPLIED;
    if (w->step_gone) {
        futoin__args_drop(&w->args);
        work_finish(w);
        return 0;
    }
    /* The frame is alive, so the step still waits: nothing else completes
     * it, and anything that ends it first would have set step_gone. The
     * frame's end then releases the item (W_APPLIED). */
    FutoInAsyncSteps* as = w->as;
    if (w->failed) {
        futoin_owned_error(as, w, w->code ? w->code : FUTOIN_INTERNAL_ERROR,
                w->code ? (w->info ? w->info : "") : "futoin_add_work: out of memory");
    } else {
        futoin_owned_success(as, w, &w->args);
    }
    return 0;
}

/* ---- workers ---- */

static void post_result(WorkItem* w)
{
    XMsg* m = w->msg;
    w->msg = NULL; /* the message is the loop's from here on */
    *(WorkItem**)(void*)m->u.bytes = w;
    m->run = work_done_run;
    futoin__loop_xmsg_post(w->loop, m);
}

static void* worker_main(void* arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g.lock);
        while (!g.queue.head && !g.stopping) {
            pthread_cond_wait(&g.work_cond, &g.lock);
        }
        WorkItem* w = g.queue.head;
        if (!w) {
            pthread_mutex_unlock(&g.lock);
            return NULL; /* stopping and nothing left */
        }
        queue_unlink(w);
        w->state = W_RUNNING;
        ++g.running;
        pthread_mutex_unlock(&g.lock);

        FutoInWorkResult out;
        memset(&out, 0, sizeof(out));
        w->fn(w->data, &out);
        /* Copied now: the strings may live in the work function's frame
         * or in work_data, which may be released before the step sees them. */
        if (out.error) {
            futoin__args_drop(&out.args);
            w->failed = 1;
            w->code = dup_str(out.error);
            w->info = out.info ? dup_str(out.info) : NULL;
        } else {
            w->args = out.args;
        }

        pthread_mutex_lock(&g.lock);
        w->state = W_POSTED;
        if (--g.running == 0 && !g.queue.head) {
            pthread_cond_broadcast(&g.idle_cond);
        }
        pthread_mutex_unlock(&g.lock);
        post_result(w); /* last access to w on this thread */
    }
}

static unsigned default_threads(void)
{
    unsigned long cpus = futoin__cpu_count();
    if (cpus > FUTOIN_THREADS_MAX) {
        return FUTOIN_THREADS_MAX;
    }
    return cpus > 2 ? (unsigned)cpus : 2u;
}

/* With g.lock held. */
static int ensure_started(void)
{
    if (g.nthreads) {
        return 0;
    }
    unsigned n = g.configured ? g.configured : default_threads();
    g.threads = calloc(n, sizeof(pthread_t));
    if (!g.threads) {
        return -1;
    }
    for (unsigned i = 0; i < n; ++i) {
        if (pthread_create(&g.threads[i], NULL, worker_main, NULL) != 0) {
            break;
        }
        ++g.nthreads;
    }
    if (!g.nthreads) {
        free(g.threads);
        g.threads = NULL;
        return -1;
    }
    return 0;
}

int futoin_work_pool_configure(unsigned threads)
{
    if (threads > FUTOIN_THREADS_MAX) {
        return -1;
    }
    pthread_mutex_lock(&g.lock);
    int rc = g.nthreads ? -1 : 0;
    if (rc == 0) {
        g.configured = threads;
    }
    pthread_mutex_unlock(&g.lock);
    return rc;
}

void futoin_work_pool_shutdown(void)
{
    pthread_mutex_lock(&g.lock);
    if (!g.nthreads) {
        pthread_mutex_unlock(&g.lock);
        return;
    }
    /* Workers leave only once the queue is empty: queued work runs. */
    g.stopping = 1;
    pthread_cond_broadcast(&g.work_cond);
    unsigned n = g.nthreads;
    pthread_t* threads = g.threads;
    pthread_mutex_unlock(&g.lock);
    for (unsigned i = 0; i < n; ++i) {
        pthread_join(threads[i], NULL);
    }
    pthread_mutex_lock(&g.lock);
    free(g.threads);
    g.threads = NULL;
    g.nthreads = 0;
    g.stopping = 0;
    pthread_mutex_unlock(&g.lock);
}

/* ---- the step ---- */

static void work_owner_release(StepOwner* self)
{
    WorkItem* w = (WorkItem*)self;
    w->step_gone = 1;
    int finish_now = 0;
    pthread_mutex_lock(&g.lock);
    switch (w->state) {
    case W_QUEUED:
        queue_unlink(w); /* no worker can see it any more: never runs */
        finish_now = 1;
        break;
    case W_RUNNING:
    case W_POSTED:
        break; /* the result will find step_gone */
    default:
        finish_now = 1; /* W_NEW: never submitted; W_APPLIED: delivered */
        break;
    }
    pthread_mutex_unlock(&g.lock);
    if (finish_now) {
        work_finish(w);
    }
}

static void work_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    WorkItem* w = data;
    w->as = as;
    w->loop = futoin_asyncsteps_loop(as);
    w->msg = futoin__loop_xmsg_alloc(w->loop);
    if (!w->msg) {
        futoin_error(as, FUTOIN_INTERNAL_ERROR, "futoin_add_work(): out of memory");
        return;
    }
    pthread_mutex_lock(&g.lock);
    if (ensure_started() != 0) {
        pthread_mutex_unlock(&g.lock);
        futoin_error(as, FUTOIN_INTERNAL_ERROR,
                "futoin_add_work: cannot start worker threads (out of memory or threads)");
        return;
    }
    futoin_loop_hold(w->loop);
    w->submitted = 1;
    w->state = W_QUEUED;
    list_push_back(&g.queue, w, QUEUE_LINK);
    pthread_cond_signal(&g.work_cond);
    pthread_mutex_unlock(&g.lock);
    /* The result comes back as a message, run in a later round; owned, so
     * that only that message ends the wait. */
    futoin_wait_owned(as, NULL, w);
}

void futoin_add_work(FutoInAsyncSteps* as, FutoInWorkFn fn, void* work_data,
        FutoInWorkRelease release)
{
    /* On every refusal work_data is released at once: the caller handed
     * it over and gets no other chance to free it. */
    Flow* fl = futoin__flow_of(as);
    WorkItem* w = NULL;
    if (!fl) {
        /* Its result comes back through our loop: own objects only. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "futoin_add_work() needs an AsyncSteps of this library");
    } else if (!fn) {
        futoin__misuse(fl, "futoin_add_work() with a NULL work function");
    } else if ((w = calloc(1, sizeof(*w))) == NULL) {
        futoin__misuse(fl, "futoin_add_work(): out of memory");
    } else {
        w->owner.release = work_owner_release;
        w->owner.kind = OWNER_WORK;
        w->fn = fn;
        w->data = work_data;
        w->release = release;
        if (futoin__add_owned_step(fl, "futoin_add_work", &w->owner, work_step, NULL, w) == 0) {
            return;
        }
        free(w); /* refused before it was queued: nothing else has it */
    }
    if (release) {
        release(work_data);
    }
}
