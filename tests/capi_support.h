/* SPDX-License-Identifier: MIT */
/*
 * What the C API tests (test_capi_helpers.c, test_await_promise.c,
 * test_add_sync.c) share beside tsupport.h: four counted values and a root
 * that a loop callback cancels.
 */
#ifndef FUTOIN_CAPI_SUPPORT_H
#define FUTOIN_CAPI_SUPPORT_H

#include "tsupport.h"

/* Four values whose cleanups count (reset_counted() before each use). */
static Counted g_c[4] __attribute__((unused));

static inline void reset_counted(void)
{
    for (int i = 0; i < 4; ++i) {
        g_c[i].id = i;
        g_c[i].cleanups = 0;
    }
}

/* The root cancel_g_root() cancels, from a loop callback. */
static FutoInAsyncSteps* g_root __attribute__((unused));

static inline void cancel_g_root(void* data)
{
    (void)data;
    tr("cancel");
    futoin_cancel(g_root);
}

#endif
