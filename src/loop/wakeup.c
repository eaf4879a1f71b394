/* SPDX-License-Identifier: MIT */
/*
 * Sleeping and waking up. The loop thread sleeps in the kernel (on the
 * wake-up object of the system: wakeup_posix.c, wakeup_win32.c) until its
 * next timer or until another thread posts work or releases the last hold;
 * an outer event loop that drives this one (futoin_loop_wakeup_fd(),
 * futoin_loop_set_wakeup()) is told the same way. A busy loop costs the
 * posting threads no system call: only a loop that has said it is about to
 * wait (need_signal) is signalled, exactly once per wait. This file is the
 * protocol, the same on every system.
 */
#include "loop/loop_impl.h"

#include <sched.h>

/* Any thread, after making work visible (a push or a release): the post
 * (a write to the wake-up fd, or setting the event on Windows) is owed by
 * whoever takes need_signal from 1 to 0. Sequentially consistent with the
 * loop thread's "set need_signal, then look for work", so one of the two
 * always sees the other. */
void futoin__loop_signal_if_needed(FutoInLoop* loop)
{
    if (atomic_load(&loop->need_signal)) {
        int mode = atomic_exchange(&loop->need_signal, 0);
        if (mode & SIG_FD) {
            futoin__loop_wake_post(loop);
        }
        if (mode & SIG_HOOK) {
            /* The hook was set before SIG_HOOK was armed (the exchange
             * synchronizes with that store), and futoin_loop_set_wakeup()
             * waits for xbusy to drop before it changes it again. */
            loop->wakeup(loop->wakeup_data);
        }
    }
}

static void signal_arm(FutoInLoop* loop, int mode)
{
    loop->armed = mode;
    atomic_store(&loop->need_signal, mode);
}

/* Takes need_signal back. If another thread took it first, its signal is
 * owed (it may not have happened yet). A post to the wake-up object: wait
 * for it and consume it, so the object is clean again (the wait is at most
 * the producer's next few instructions). A call of the hook: nothing to
 * consume (at worst the outer loop wakes up once for nothing). Returns 1
 * when another thread took it. */
int futoin__loop_signal_disarm(FutoInLoop* loop)
{
    int mode = loop->armed;
    if (!mode) {
        return 0;
    }
    loop->armed = 0;
    if (atomic_exchange(&loop->need_signal, 0) != 0) {
        return 0;
    }
    if (mode & SIG_HOOK) {
        loop->hook_owed = 1;
    }
    if (!(mode & SIG_FD)) {
        return 1;
    }
    futoin__loop_wake_consume(loop);
    return 1;
}

/* The signals an outer event loop waits for between iterations. */
static int embed_mode(const FutoInLoop* loop)
{
    return (loop->embedded ? SIG_FD : 0) | (loop->wakeup ? SIG_HOOK : 0);
}

/* Between iterations of an embedded loop: the next post by another thread
 * signals the outer loop. */
void futoin__loop_embed_arm(FutoInLoop* loop)
{
    int mode = embed_mode(loop);
    if (mode && loop->armed != mode) {
        futoin__loop_signal_disarm(loop);
        signal_arm(loop, mode);
    }
}

/* The loop has nothing to run before due_ns (real clock; UINT64_MAX: no
 * timer): sleep in the kernel until then or until another thread posts
 * work or releases the last hold. Never sleeps when nothing could ever
 * wake it (no timer and no hold). */
void futoin__loop_block_until(FutoInLoop* loop, uint64_t due_ns)
{
    if (futoin__loop_wake_open(loop) != 0) {
        /* Out of file descriptors (or handles): other threads cannot
         * wake us, so sleep in short slices rather than until the timer. */
        uint64_t slice = futoin__loop_clock_ns() + NS_PER_MS;
        futoin__loop_sleep_until(due_ns < slice ? due_ns : slice);
        return;
    }
    if (!(loop->armed & SIG_FD)) {
        /* The loop thread itself waits: the wake-up object, whatever an
         * embedder armed (at worst its hook fires once for nothing). */
        futoin__loop_signal_disarm(loop);
        signal_arm(loop, SIG_FD);
    }
    if (!futoin__xq_nonempty(&loop->xq) && (due_ns != UINT64_MAX || atomic_load(&loop->refs) > 0)) {
        futoin__loop_wake_wait(loop, due_ns);
    }
    futoin__loop_signal_disarm(loop);
}

void futoin_loop_hold(FutoInLoop* loop)
{
    atomic_fetch_add(&loop->refs, 1);
}

void futoin_loop_release(FutoInLoop* loop)
{
    /* The last release may end an idle run(): wake it to look again. */
    atomic_fetch_add(&loop->xbusy, 1);
    if (atomic_fetch_sub(&loop->refs, 1) == 1) {
        futoin__loop_signal_if_needed(loop);
    }
    atomic_fetch_sub(&loop->xbusy, 1);
}

int futoin_loop_wakeup_fd(FutoInLoop* loop)
{
    int fd = loop ? futoin__loop_wake_pollable_fd(loop) : -1;
    if (fd < 0) {
        return -1;
    }
    loop->embedded = 1;
    loop->xpoll |= XPOLL_EMBEDDED;
    futoin__loop_embed_arm(loop);
    if (futoin__xq_nonempty(&loop->xq)) {
        futoin__loop_signal_if_needed(loop); /* already queued work: make the fd readable */
    }
    return fd;
}

void futoin_loop_set_wakeup(FutoInLoop* loop, FutoInLoopWakeup cb, void* data)
{
    if (!loop) {
        return;
    }
    /* No other thread may start a call of the old hook from now on; one
     * that took a signal already is inside xbusy (from before its push or
     * release to the end of its wake-up): let it finish, so that the
     * caller may free the old data when this returns. */
    futoin__loop_signal_disarm(loop);
    if (loop->hook_owed) {
        while (atomic_load(&loop->xbusy) > 0) {
            sched_yield();
        }
        loop->hook_owed = 0;
    }
    loop->wakeup = cb;
    loop->wakeup_data = cb ? data : NULL;
    if (cb || loop->embedded) {
        loop->xpoll |= XPOLL_EMBEDDED;
    } else {
        loop->xpoll &= (uint8_t)~XPOLL_EMBEDDED;
    }
    futoin__loop_embed_arm(loop);
}

void* futoin_loop_wakeup_data(const FutoInLoop* loop)
{
    return loop ? loop->wakeup_data : NULL;
}
