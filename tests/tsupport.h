/*
 * Shared helpers of the engine tests (not a test itself: only test_*.c are
 * built as tests). Each test records the callbacks it sees into a trace
 * string ("a|b|c") and compares it with the expected sequence; misuse
 * reports are captured so that a test can assert there were none (or the
 * ones it provoked).
 */
#ifndef FUTOIN_TSUPPORT_H
#define FUTOIN_TSUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <futoin/asyncsteps.h>

/* ---- trace ---- */

static char g_trace[8192];

static inline void tr_reset(void)
{
    g_trace[0] = '\0';
}

/* Appends one event; events are separated by '|'. */
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

/* ---- environment: one virtual loop per test, misuse captured ---- */

static FutoInLoop* g_loop;
static int g_misuse;
static char g_misuse_msg[256];

static inline void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    ++g_misuse;
    snprintf(g_misuse_msg, sizeof(g_misuse_msg), "%s", info);
}

static inline int env_setup(void** state)
{
    (void)state;
    tr_reset();
    g_misuse = 0;
    g_misuse_msg[0] = '\0';
    g_loop = futoin_loop_new_virtual();
    if (!g_loop) {
        return -1;
    }
    futoin_set_misuse_handler(g_loop, on_misuse, NULL);
    return 0;
}

static inline int env_teardown(void** state)
{
    (void)state;
    futoin_loop_free(g_loop);
    g_loop = NULL;
    return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, env_setup, env_teardown)

static inline uint64_t now_ms(void)
{
    return futoin_loop_now(g_loop);
}

/* ---- values with a counted cleanup ---- */

/* The object of a counted value: its cleanup increments *cleanups. */
typedef struct Counted {
    int id;
    int cleanups;
} Counted;

static inline void counted_cleanup(FutoInBinaryValue* v)
{
    Counted* c = (Counted*)v->custom_data;
    ++c->cleanups;
}

static const FutoInType counted_type = {FTN_TYPE_CUSTOM_OBJECT, counted_cleanup};

static inline FutoInBinaryValue counted_val(Counted* c)
{
    return futoin_val_custom(&counted_type, c);
}

/* ---- unhandled error recorder ---- */

typedef struct Unhandled {
    int calls;
    FutoInAsyncSteps* as;
    char code[64];
    char info[128];
} Unhandled;

static inline void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    Unhandled* u = (Unhandled*)data;
    ++u->calls;
    u->as = as;
    snprintf(u->code, sizeof(u->code), "%s", code);
    snprintf(u->info, sizeof(u->info), "%s", futoin_error_info(as));
    tr("unhandled:%s", code);
}

/* An unhandled_error callback for tests that expect none. */
static inline void no_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    fail_msg("unexpected unhandled error %s (%s)", code, futoin_error_info(as));
}

/* Runs the loop until it is empty. */
static inline void run(void)
{
    futoin_loop_run(g_loop);
}

/* A named callback event: steps that only record themselves. */
static inline void step_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", (const char*)data);
}

static inline void step_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_error(as, "Fail", (const char*)data);
}

static inline void must_not_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    fail_msg("step '%s' must not run", data ? (const char*)data : "?");
}

static inline void cancel_tag(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    tr("cancel:%s", (const char*)data);
}

static inline void step_wait_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
}

static inline void eh_tag(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("eh:%s:%s", (const char*)data, code);
}

#endif
