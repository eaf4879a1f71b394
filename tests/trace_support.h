/* SPDX-License-Identifier: MIT */
/*
 * The event trace every behaviour test records: tr("event %d", n) appends
 * one event, events are separated by '|', and assert_trace("a|b|c")
 * compares the whole sequence. Shared by the engine tests (tsupport.h)
 * the libuv backend tests (uv/uv_tsupport.h) and test_abi_only.c: it uses
 * nothing of the library, so the ABI-only test stays ABI-only.
 * Include after <cmocka.h>.
 */
#ifndef FUTOIN_TRACE_SUPPORT_H
#define FUTOIN_TRACE_SUPPORT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char g_trace[8192];

static inline void tr_reset(void)
{
    g_trace[0] = '\0';
}

/* Appends one event. A trace that outgrows the buffer fails the test
 * rather than being cut short. */
static inline void tr(const char* fmt, ...)
{
    size_t len = strlen(g_trace);
    assert_true(len + 2 < sizeof(g_trace));
    if (len) {
        g_trace[len++] = '|';
        g_trace[len] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_trace + len, sizeof(g_trace) - len, fmt, ap);
    va_end(ap);
}

#define assert_trace(expected) assert_string_equal(g_trace, (expected))

#endif
