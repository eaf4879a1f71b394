/* SPDX-License-Identifier: MIT */
/*
 * The wake-up object of the POSIX systems (wakeup.c has the protocol): an
 * eventfd on Linux, a non-blocking pipe elsewhere, waited for with poll();
 * and the sleep of a loop that has no wake-up object. Built everywhere but
 * on Windows (wakeup_win32.c).
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
#include <unistd.h>
#if FUTOIN_LINUX_WAKEUP
#include <sys/eventfd.h>
#endif

void futoin__loop_sleep_until(uint64_t due_ns)
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

void futoin__loop_wake_init(FutoInLoop* loop)
{
    loop->wake_rfd = loop->wake_wfd = -1;
}

void futoin__loop_wake_close(FutoInLoop* loop)
{
    if (loop->wake_rfd >= 0) {
        close(loop->wake_rfd);
        if (loop->wake_wfd != loop->wake_rfd) {
            close(loop->wake_wfd);
        }
    }
}

/* Any thread, also a signal handler: write() is async-signal-safe. */
void futoin__loop_wake_post(FutoInLoop* loop)
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

/* Loop thread: the wake-up fd, created the first time it is needed, so
 * that a loop which never waits or never sees another thread costs no
 * file descriptor. Only the loop thread creates it and it is published to
 * producers through need_signal, which is set only afterwards. */
int futoin__loop_wake_open(FutoInLoop* loop)
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

int futoin__loop_wake_pollable_fd(FutoInLoop* loop)
{
    return futoin__loop_wake_open(loop) == 0 ? loop->wake_rfd : -1;
}

/* Loop thread: the post another thread owes, waited for (at most the
 * producer's next few instructions) and read, so that the fd is not
 * readable any more. */
void futoin__loop_wake_consume(FutoInLoop* loop)
{
    char buf[64];
    struct pollfd p = { loop->wake_rfd, POLLIN, 0 };
    for (;;) {
        if (read(loop->wake_rfd, buf, sizeof(buf)) > 0) {
            return;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            poll(&p, 1, -1);
        } else if (errno != EINTR) {
            return;
        }
    }
}

void futoin__loop_wake_wait(FutoInLoop* loop, uint64_t due_ns)
{
    struct pollfd p = { loop->wake_rfd, POLLIN, 0 };
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
