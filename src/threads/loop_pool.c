/* SPDX-License-Identifier: MIT */
/*
 * A pool of loop threads with least-loaded placement of new roots
 * (include/futoin/threads.h).
 *
 * Load of a loop = roots the pool placed there that have not finished,
 * counted with an atomic from the moment futoin_loop_pool_spawn() picks the
 * loop (not when the loop thread gets to it), so a burst of spawns from one
 * thread spreads instead of piling onto the loop that looked idle.
 *
 * Every placed root has a record in its slot's list (under the slot's
 * mutex, because spawn runs on any thread) from spawn until it ends, so
 * that a stop can hand every unfinished root, started or not, its
 * FUTOIN_POOL_CANCELLED. The end of a root is observed through the
 * engine's root-done hook, the one futoin_promise() uses.
 */
#include <futoin/threads.h>

#include "common/cpu_count.h"
#include "common/list.h"
#include "engine/engine_internal.h"
#include "loop/loop_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct PoolSlot PoolSlot;
typedef struct PoolRoot PoolRoot;

struct PoolRoot {
    ListLink link; /* in its slot's roots */
    PoolSlot* slot;
    FutoInAsyncSteps* root; /* loop thread only; NULL until started */
    FutoInPoolSetup setup;
    FutoInPoolDone done;
    void* data;
};

#define ROOT_LINK offsetof(PoolRoot, link)

struct PoolSlot {
    FutoInLoopThread* thread;
    _Atomic unsigned load;
    pthread_mutex_t lock; /* guards roots and closed */
    List roots;
    int closed;
};

struct FutoInLoopPool {
    unsigned n;
    _Atomic unsigned next; /* rotates the tie-break */
    atomic_int stopped;    /* spawn refuses from then on */
    PoolSlot* slots;
};

static void unlink_root(PoolSlot* s, PoolRoot* pr)
{
    list_remove(&s->roots, pr, ROOT_LINK);
}

/* Loop thread: the root ended (hook) or never will (stop). */
static void root_finished(PoolRoot* pr, const char* code, int unlink)
{
    PoolSlot* s = pr->slot;
    if (unlink) {
        pthread_mutex_lock(&s->lock);
        unlink_root(s, pr);
        pthread_mutex_unlock(&s->lock);
    }
    if (pr->done) {
        pr->done(pr->data, code);
    }
    if (pr->root) {
        /* From inside the root's last callback: released once it returns. */
        futoin_asyncsteps_free(pr->root);
    }
    atomic_fetch_sub(&s->load, 1);
    free(pr);
}

static void root_done_hook(void* data, Root* root, const char* code, FutoInArgs* args)
{
    (void)root;
    (void)args;
    root_finished(data, code, 1);
}

static void spawn_run(void* data)
{
    PoolRoot* pr = data;
    FutoInLoop* loop = futoin_loop_thread_loop(pr->slot->thread);
    FutoInAsyncSteps* as = futoin_asyncsteps_new(loop);
    if (!as) {
        root_finished(pr, FUTOIN_INTERNAL_ERROR, 1);
        return;
    }
    pr->root = as;
    pr->setup(as, pr->data);
    futoin__root_on_done(futoin__flow_root(futoin__flow_of(as)), root_done_hook, pr);
    futoin_execute(as, NULL, NULL);
}

/* What the spawn message carries to the loop thread. */
typedef struct {
    PoolSlot* slot;
    PoolRoot* pr;
} SpawnMsg;

/* Loop thread, draining the queue. A message rather than a cross-thread
 * immediate: the latter needs a ring slot on the loop thread, where a
 * failed allocation could no longer be reported to the caller, who was
 * told the spawn was accepted. */
static int spawn_msg_run(void* consumer, XMsg* m)
{
    (void)consumer;
    const SpawnMsg* sm = (const SpawnMsg*)(const void*)m->u.bytes;
    PoolSlot* s = sm->slot;
    pthread_mutex_lock(&s->lock);
    int closed = s->closed;
    pthread_mutex_unlock(&s->lock);
    /* Once closed, slot_on_stop() gave every placed root its done() and
     * freed the record: a message that arrives during the settle after it
     * has nothing left to do. */
    if (!closed) {
        spawn_run(sm->pr);
    }
    return 0;
}

static void slot_on_stop(FutoInLoop* loop, void* data)
{
    (void)loop;
    PoolSlot* s = data;
    pthread_mutex_lock(&s->lock);
    s->closed = 1;
    PoolRoot* next = s->roots.head;
    s->roots.head = s->roots.tail = NULL;
    pthread_mutex_unlock(&s->lock);
    while (next) {
        PoolRoot* pr = next;
        next = list_next(pr, ROOT_LINK);
        if (pr->root) {
            /* Cancelled, not finished: the hook must not fire; the root's
             * cancel handlers run before done() hears of it. */
            futoin__root_on_done(futoin__flow_root(futoin__flow_of(pr->root)), NULL, NULL);
            futoin_asyncsteps_free(pr->root);
            pr->root = NULL;
        }
        root_finished(pr, FUTOIN_POOL_CANCELLED, 0);
    }
}

FutoInLoopPool* futoin_loop_pool_new(unsigned n)
{
    if (n > FUTOIN_THREADS_MAX) {
        errno = EINVAL;
        return NULL;
    }
    if (n == 0) {
        unsigned long cpus = futoin__cpu_count();
        n = cpus == 0 ? 1u : cpus > FUTOIN_THREADS_MAX ? FUTOIN_THREADS_MAX : (unsigned)cpus;
    }
    FutoInLoopPool* pool = calloc(1, sizeof(*pool));
    PoolSlot* slots = calloc(n, sizeof(*slots));
    if (!pool || !slots) {
        free(pool);
        free(slots);
        return NULL;
    }
    pool->n = n;
    pool->slots = slots;
    atomic_init(&pool->next, 0);
    atomic_init(&pool->stopped, 0);
    for (unsigned i = 0; i < n; ++i) {
        atomic_init(&slots[i].load, 0);
        pthread_mutex_init(&slots[i].lock, NULL);
    }
    for (unsigned i = 0; i < n; ++i) {
        FutoInLoopThreadHooks hooks = { NULL, slot_on_stop, &slots[i] };
        slots[i].thread = futoin_loop_thread_start(&hooks);
        if (!slots[i].thread) {
            for (unsigned j = 0; j < i; ++j) {
                futoin_loop_thread_join(slots[j].thread);
            }
            for (unsigned j = 0; j < n; ++j) {
                pthread_mutex_destroy(&slots[j].lock);
            }
            free(slots);
            free(pool);
            return NULL;
        }
    }
    return pool;
}

unsigned futoin_loop_pool_size(const FutoInLoopPool* pool)
{
    return pool->n;
}

FutoInLoop* futoin_loop_pool_loop(const FutoInLoopPool* pool, unsigned i)
{
    return i < pool->n ? futoin_loop_thread_loop(pool->slots[i].thread) : NULL;
}

unsigned futoin_loop_pool_load(const FutoInLoopPool* pool, unsigned i)
{
    return i < pool->n ? atomic_load(&pool->slots[i].load) : 0;
}

int futoin_loop_pool_spawn(FutoInLoopPool* pool, FutoInPoolSetup setup, FutoInPoolDone done,
        void* data)
{
    if (!pool || !setup || pool->n == 0 || atomic_load(&pool->stopped)) {
        return -1;
    }
    unsigned start = atomic_fetch_add(&pool->next, 1) % pool->n;
    unsigned best = start;
    unsigned best_load = atomic_load(&pool->slots[start].load);
    for (unsigned k = 1; k < pool->n && best_load > 0; ++k) {
        unsigned i = (start + k) % pool->n;
        unsigned l = atomic_load(&pool->slots[i].load);
        if (l < best_load) {
            best = i;
            best_load = l;
        }
    }
    PoolRoot* pr = calloc(1, sizeof(*pr));
    if (!pr) {
        return -1;
    }
    PoolSlot* s = &pool->slots[best];
    pr->slot = s;
    pr->setup = setup;
    pr->done = done;
    pr->data = data;
    pthread_mutex_lock(&s->lock);
    /* Under the lock: the loop cannot reach on_stop (and be freed) while
     * the message is being allocated and posted. */
    FutoInLoop* loop = s->closed ? NULL : futoin_loop_thread_loop(s->thread);
    XMsg* m = loop ? futoin__loop_xmsg_alloc(loop) : NULL;
    if (!m) {
        pthread_mutex_unlock(&s->lock);
        free(pr);
        return -1;
    }
    list_push_front(&s->roots, pr, ROOT_LINK);
    atomic_fetch_add(&s->load, 1);
    SpawnMsg* sm = (SpawnMsg*)(void*)m->u.bytes;
    sm->slot = s;
    sm->pr = pr;
    m->run = spawn_msg_run;
    m->drop = NULL;
    futoin__loop_xmsg_post(loop, m);
    pthread_mutex_unlock(&s->lock);
    return (int)best;
}

void futoin_loop_pool_stop(FutoInLoopPool* pool, int mode)
{
    if (!pool) {
        return;
    }
    atomic_store(&pool->stopped, 1);
    for (unsigned i = 0; i < pool->n; ++i) {
        futoin_loop_thread_stop(pool->slots[i].thread, mode);
    }
}

void futoin_loop_pool_free(FutoInLoopPool* pool)
{
    if (!pool) {
        return;
    }
    if (!atomic_load(&pool->stopped)) {
        futoin_loop_pool_stop(pool, FUTOIN_LOOP_STOP_DRAIN);
    }
    for (unsigned i = 0; i < pool->n; ++i) {
        futoin_loop_thread_join(pool->slots[i].thread);
    }
    for (unsigned i = 0; i < pool->n; ++i) {
        pthread_mutex_destroy(&pool->slots[i].lock);
    }
    free(pool->slots);
    free(pool);
}
