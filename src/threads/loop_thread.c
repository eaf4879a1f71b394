/* SPDX-License-Identifier: MIT */
/*
 * A loop on a thread of its own (include/futoin/threads.h).
 *
 * The loop is created on the new thread, so its owner (what
 * futoin_loop_is_same_thread() and every cross-thread check compare with)
 * is the thread that runs it. The thread keeps one hold on its loop until
 * it is asked to stop: that is what keeps futoin_loop_run() sleeping, not
 * returning, while the loop is idle. Releasing it is a DRAIN stop; a NOW
 * stop also posts futoin_loop_stop().
 *
 * Teardown order on the thread: run() returns -> on_stop (the owner frees
 * its roots) -> settle (only messages, until no hold is left: work in
 * flight finishes and is dropped) -> "exited" under the lock -> free. The
 * lock makes a late futoin_loop_thread_stop() either reach a live loop or
 * see "exited" and leave it alone.
 */
#include <futoin/threads.h>

#include "loop/loop_internal.h"

#include <pthread.h>
#include <stdlib.h>

struct FutoInLoopThread {
    pthread_t thread;
    FutoInLoop* loop;
    FutoInLoopThreadHooks hooks;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready;    /* 1: loop created, -1: creation failed */
    int released; /* the keep-alive hold was given back */
    int exited;   /* the loop is being freed: hands off */
    int stop_asked;
};

/* Called with t->lock held. */
static void release_keepalive(FutoInLoopThread* t)
{
    if (!t->released) {
        t->released = 1;
        futoin_loop_release(t->loop);
    }
}

static void* thread_main(void* arg)
{
    FutoInLoopThread* t = arg;
    FutoInLoop* loop = futoin_loop_new();
    if (loop) {
        futoin_loop_hold(loop);
    }
    pthread_mutex_lock(&t->lock);
    t->loop = loop;
    t->ready = loop ? 1 : -1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    if (!loop) {
        return NULL;
    }
    if (t->hooks.on_start) {
        t->hooks.on_start(loop, t->hooks.data);
    }
    futoin_loop_run(loop);
    /* Stopped by futoin_loop_stop() directly, or drained: either way the
     * keep-alive hold must not make settle wait forever. */
    pthread_mutex_lock(&t->lock);
    release_keepalive(t);
    pthread_mutex_unlock(&t->lock);
    if (t->hooks.on_stop) {
        t->hooks.on_stop(loop, t->hooks.data);
    }
    futoin__loop_settle(loop);
    pthread_mutex_lock(&t->lock);
    t->exited = 1;
    pthread_mutex_unlock(&t->lock);
    futoin_loop_free(loop);
    return NULL;
}

FutoInLoopThread* futoin_loop_thread_start(const FutoInLoopThreadHooks* hooks)
{
    FutoInLoopThread* t = calloc(1, sizeof(*t));
    if (!t) {
        return NULL;
    }
    if (hooks) {
        t->hooks = *hooks;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    if (pthread_create(&t->thread, NULL, thread_main, t) != 0) {
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
    }
    pthread_mutex_lock(&t->lock);
    while (!t->ready) {
        pthread_cond_wait(&t->cond, &t->lock);
    }
    int ok = t->ready > 0;
    pthread_mutex_unlock(&t->lock);
    if (!ok) {
        pthread_join(t->thread, NULL);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
    }
    return t;
}

FutoInLoop* futoin_loop_thread_loop(const FutoInLoopThread* t)
{
    return t->loop;
}

void futoin_loop_thread_stop(FutoInLoopThread* t, int mode)
{
    if (!t) {
        return;
    }
    pthread_mutex_lock(&t->lock);
    t->stop_asked = 1;
    if (!t->exited) {
        if (mode == FUTOIN_LOOP_STOP_NOW) {
            futoin_loop_stop(t->loop);
        }
        release_keepalive(t);
    }
    pthread_mutex_unlock(&t->lock);
}

void futoin_loop_thread_join(FutoInLoopThread* t)
{
    if (!t) {
        return;
    }
    pthread_mutex_lock(&t->lock);
    int asked = t->stop_asked;
    pthread_mutex_unlock(&t->lock);
    if (!asked) {
        futoin_loop_thread_stop(t, FUTOIN_LOOP_STOP_DRAIN);
    }
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
