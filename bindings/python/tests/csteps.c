/* SPDX-License-Identifier: MIT */
/* C steps for the mixed-flow tests of the Python binding. */
#define FUTOIN_NO_TRACE_MACROS 1
#include <futoin/asyncsteps.h>

#include <stdio.h>
#include <string.h>

int c_cancelled = 0;

/* (n) -> (n + 1) */
void c_add_one(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    futoin_success1(as, futoin_val_i64(futoin_arg_int(args, 0, -1) + 1));
}

/* (str, double) -> ("C:" str, double * 2, true) */
void c_pair(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    static char buf[64];
    snprintf(buf, sizeof(buf), "C:%s", futoin_arg_cstr(args, 0, "?"));
    futoin_success3(as, futoin_val_cstr(buf), futoin_val_double(futoin_arg_double(args, 1, 0) * 2),
            futoin_val_bool(true));
}

void c_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_error(as, "CError", "raised in C");
}

/* Recovers any error with ("recovered", code's length). */
void c_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    futoin_success2(as, futoin_val_cstr("recovered"), futoin_val_i32((int32_t)strlen(code)));
}

static void c_on_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as, (void)data;
    c_cancelled++;
}

/* Waits forever: only a timeout or a cancel ends it. */
void c_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_cancel(as, c_on_cancel, NULL);
    futoin_wait_external(as);
}
