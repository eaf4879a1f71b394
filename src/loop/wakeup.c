/* SPDX-License-Identifier: MIT */
/*
 * Sleeping and waking up. The loop thread sleeps in the kernel (on the
 * wake-up fd: an eventfd on Linux, a pipe elsewhere) until its next timer or
 * until another thread posts work or releases the last hold; an outer event
 * loop that drives this one (futoin_loop_wakeup_fd(), futoin_loop_set_wakeup())
 * is told the same way. A busy loop costs the posting threads no system
 * call: only a loop that has said it is about to wait (need_signal) is
 * signalled, exactly once per wait.
 */
/* FUTOIN_LINUX_WAKEUP: eventfd, ppoll() (nanosecond timeouts for the idle
 * wait) and clock_nanosleep(). Elsewhere (macOS, the BSDs; on Linux the
 * build with FUTOIN_PORTABLE_POSIX, which tests these paths): a pipe,
 * poll() with millisecond timeouts, nanosleep() on a relative time. */
#if defined(__linux__) && !defined(FUTOIN_PORTABLE_POSIX)
#define FUTOIN_LINUX_WAKEUP 1
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll() */
#endif
#else
#define FUTOIN_LINUX_WAKEUP 0
#endif

#include "loop/loop_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#if FUTOIN_LINUX_WAKEUP
#include <sys/eventfd.h>
#endif

static void sleep_until(uint64_t due_ns)
{
    uint64_t sec = due_ns / NS_PER_SEC;
    /* Keeps the value representable in a 32-bit time_t; the caller simply
     * sleeps again if the timer is still not due. */
    if (sec > (uint64_t)INT32_MAX) {
        sec = (uint64_t)INT32_MAX;
    }
#if FUTOIN_LINUX_WAKEUP
    struct timespec ts = { .tv_sec = (time_t)sec, .tv_nsec = (long)(due_ns % NS_PER_SEC) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
#else
    /* No clock_nanosleep() (macOS): the time left on the loop's clock,
     * taken again after an interruption. */
    due_ns = sec * NS_PER_SEC + due_ns % NS_PER_SEC;
    for (;;) {
        uint64_t now = futoin__loop_clock_ns();
        if (due_ns <= now) {
            return;
        }
        uint64_t left = due_ns - now;
        struct timespec ts = { .tv_sec = (time_t)(left / NS_PER_SEC),
            .tv_nsec = (long)(left % NS_PER_SEC) };
        if (nanosleep(&ts, NULL) == 0 || errno != EINTR) {
            return;
        }
    }
#endif
}

void futoin__loop_wake_fd_write(FutoInLoop* loop)
{
#if FUTOIN_LINUX_WAKEUP
    uint64_t one = 1;
    while (write(loop->wake_wfd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
#else
    char one = 1;
    while (write(loop->wake_wfd, &one, 1) < 0 && errno == EINTR) {
    }
#endif
}

/* Any thread, after making work visible (a push or a release): the write
 * is owed by whoever takes need_signal from 1 to 0. Sequentially
 * consistent with the loop thread's "set need_signal, then look for work",
 * so one of the two always sees the other. */
void futoin__loop_signal_if_needed(FutoInLoop* loop)
{
    if (atomic_load(&loop->need_signal)) {
        int mode = atomic_exchange(&loop->need_signal, 0);
        if (mode & SIG_FD) {
            futoin__loop_wake_fd_write(loop);
        }
        if (mode & SIG_HOOK) {
            /* The hook was set before SIG_HOOK was armed (the exchange
             * synchronizes with that store), and futoin_loop_set_wakeup()
             * waits for xbusy to drop before it changes it again. */
            loop->wakeup(loop->wakeup_data);
        }
    }
}

/* Loop thread: the wake-up fd, created the first time it is needed, so
 * that a loop which never waits or never sees another thread costs no
 * file descriptor. Only the loop thread creates it and it is published to
 * producers through need_signal, which is set only afterwards. */
int futoin__loop_wake_fd_ensure(FutoInLoop* loop)
{
    if (loop->wake_rfd >= 0) {
        return 0;
    }
#if FUTOIN_LINUX_WAKEUP
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    loop->wake_rfd = loop->wake_wfd = fd;
#else
    int fds[2];
    if (pipe(fds) != 0) {
        return -1;
    }
    for (int i = 0; i < 2; ++i) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    loop->wake_rfd = fds[0];
    loop->wake_wfd = fds[1];
#endif
    return 0;
}

static void signal_arm(FutoInLoop* loop, int mode)
{
    loop->armed = mode;
    atomic_store(&loop->need_signal, mode);
}

/* Takes need_signal back. If another thread took it first, its signal is
 * owed (it may not have happened yet). A write to the fd: wait for it and
 * consume it, so the fd is clean again (the wait is at most the producer's
 * next few instructions). A call of the hook: nothing to consume (at worst
 * the outer loop wakes up once for nothing). Returns 1 when another thread
 * took it. */
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
    char buf[64];
    struct pollfd p = { loop->wake_rfd, POLLIN, 0 };
    for (;;) {
        if (read(loop->wake_rfd, buf, sizeof(buf)) > 0) {
            return 1;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            poll(&p, 1, -1);
        } else if (errno != EINTR) {
            return 1;
        }
    }
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

/* Waits on the wake-up fd until due_ns on the real clock (UINT64_MAX: no
 * timeout). */
static void poll_until(int fd, uint64_t due_ns)
{
    struct pollfd p = { fd, POLLIN, 0 };
#if FUTOIN_LINUX_WAKEUP
    if (due_ns == UINT64_MAX) {
        ppoll(&p, 1, NULL, NULL);
        return;
    }
    uint64_t now = futoin__loop_clock_ns();
    if (due_ns <= now) {
        return;
    }
    uint64_t left = due_ns - now;
    struct timespec ts = { .tv_sec = (time_t)(left / NS_PER_SEC),
        .tv_nsec = (long)(left % NS_PER_SEC) };
    ppoll(&p, 1, &ts, NULL);
#else
    int timeout = -1;
    if (due_ns != UINT64_MAX) {
        uint64_t now = futoin__loop_clock_ns();
        if (due_ns <= now) {
            return;
        }
        /* Rounded up: never wake before the timer is due. */
        uint64_t ms = (due_ns - now + NS_PER_MS - 1) / NS_PER_MS;
        timeout = ms > INT32_MAX ? INT32_MAX : (int)ms;
    }
    poll(&p, 1, timeout);
#endif
}

/* The loop has nothing to run before due_ns (real clock; UINT64_MAX: no
 * timer): sleep in the kernel until then or until another thread posts
 * work or releases the last hold. Never sleeps when nothing could ever
 * wake it (no timer and no hold). */
void futoin__loop_block_until(FutoInLoop* loop, uint64_t due_ns)
{
    if (futoin__loop_wake_fd_ensure(loop) != 0) {
        /* Out of file descriptors: other threads cannot wake us, so
         * sleep in short slices rather than until the timer. */
        uint64_t slice = futoin__loop_clock_ns() + NS_PER_MS;
        sleep_until(due_ns < slice ? due_ns : slice);
        return;
    }
    if (!(loop->armed & SIG_FD)) {
        /* The loop thread itself waits: the fd, whatever an embedder
         * armed (at worst its hook fires once for nothing). */
        futoin__loop_signal_disarm(loop);
        signal_arm(loop, SIG_FD);
    }
    if (!futoin__xq_nonempty(&loop->xq) && (due_ns != UINT64_MAX || atomic_load(&loop->refs) > 0)) {
        poll_until(loop->wake_rfd, due_ns);
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
    if (!loop || futoin__loop_wake_fd_ensure(loop) != 0) {
        return -1;
    }
    loop->embedded = 1;
    loop->xpoll |= XPOLL_EMBEDDED;
    futoin__loop_embed_arm(loop);
    if (futoin__xq_nonempty(&loop->xq)) {
        futoin__loop_signal_if_needed(loop); /* already queued work: make the fd readable */
    }
    return loop->wake_rfd;
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
