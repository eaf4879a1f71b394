/* SPDX-License-Identifier: MIT */
/*
 * The wake-up object on Windows (wakeup.c has the protocol; the POSIX
 * systems use wakeup_posix.c): a manual-reset Win32 event. A post sets it;
 * the idle wait is WaitForSingleObject() with a timeout in milliseconds,
 * which leaves it set; the loop thread resets it when it consumes the post
 * it is owed, so that it is never left set by accident. There is no file
 * descriptor for an fd-based outer loop: futoin_loop_wakeup_fd() returns
 * -1, and an outer loop uses futoin_loop_set_wakeup() instead.
 */
#include "loop/loop_impl.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

/* Milliseconds until due_ns on the loop's clock, rounded up (a timer never
 * fires early); INFINITE for UINT64_MAX, 0 when it is due. */
static DWORD ms_until(uint64_t due_ns)
{
    if (due_ns == UINT64_MAX) {
        return INFINITE;
    }
    uint64_t now = futoin__loop_clock_ns();
    if (due_ns <= now) {
        return 0;
    }
    uint64_t ms = (due_ns - now + NS_PER_MS - 1) / NS_PER_MS;
    /* INFINITE is 0xffffffff: a longer wait is cut short, and the caller
     * waits again while the timer is not due. */
    return ms >= INFINITE ? INFINITE - 1 : (DWORD)ms;
}

void futoin__loop_sleep_until(uint64_t due_ns)
{
    DWORD ms;
    while ((ms = ms_until(due_ns)) != 0) {
        Sleep(ms);
    }
}

void futoin__loop_wake_init(FutoInLoop* loop)
{
    loop->wake_event = NULL;
}

void futoin__loop_wake_close(FutoInLoop* loop)
{
    if (loop->wake_event) {
        CloseHandle(loop->wake_event);
    }
}

/* Any thread, also the thread Windows runs a signal handler on. */
void futoin__loop_wake_post(FutoInLoop* loop)
{
    SetEvent(loop->wake_event);
}

/* Loop thread: the event, created the first time it is needed; published
 * to producers through need_signal, which is set only afterwards. */
int futoin__loop_wake_open(FutoInLoop* loop)
{
    if (loop->wake_event) {
        return 0;
    }
    loop->wake_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    return loop->wake_event ? 0 : -1;
}

int futoin__loop_wake_pollable_fd(FutoInLoop* loop)
{
    (void)loop;
    return -1;
}

/* Loop thread: the post another thread owes, waited for (at most the
 * producer's next few instructions), then taken back. */
void futoin__loop_wake_consume(FutoInLoop* loop)
{
    WaitForSingleObject(loop->wake_event, INFINITE);
    ResetEvent(loop->wake_event);
}

void futoin__loop_wake_wait(FutoInLoop* loop, uint64_t due_ns)
{
    DWORD ms = ms_until(due_ns);
    if (ms != 0) {
        WaitForSingleObject(loop->wake_event, ms);
    }
}
