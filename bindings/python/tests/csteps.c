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

/* ---- C code that adds Python steps ------------------------------------ */

/* The binding's entry point (futoin_asyncsteps.C_ADD_STEP), set by the
 * tests: adds a Python step whose callable arrived as a value. */
typedef int (*AddPythonStep)(FutoInAsyncSteps* as, const FutoInBinaryValue* fn,
        const FutoInBinaryValue* on_error);
static AddPythonStep add_python_step;

void c_set_add_python_step(uintptr_t address)
{
    add_python_step = (AddPythonStep)address;
}

/* (n) -> (n * 2): a C sub-step. */
static void c_double(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_i64((int64_t)(intptr_t)data * 2));
}

/* (fn, n, [on_error]): runs C's n * 2, then the Python callable fn with it
 * (and on_error as its handler); the step's result is fn's. */
void c_call_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    futoin_add(as, c_double, NULL, (void*)(intptr_t)futoin_arg_int(args, 1, 0));
    add_python_step(as, &args->args[0], &args->args[2]);
}

/* (fn): a step with a 50 ms timeout whose only sub-step is the Python fn
 * (expected to wait): the Timeout reaches fn's cancel handler. */
void c_timeout_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    futoin_set_timeout(as, 50);
    add_python_step(as, &args->args[0], NULL);
}

/* (x): add_python_step() with a value that is not a Python callable. */
void c_call_not_python(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    add_python_step(as, &args->args[0], NULL);
}

/* ---- A Mutex shared by C and Python flows ----------------------------- */

/* Who is inside the critical sections of both languages: the Python steps
 * update the same counters (c_enter(), c_leave()) and the same log. */
int shared_inside = 0;
int shared_max = 0;
char shared_log[1024];

void c_enter(const char* who)
{
    if (++shared_inside > shared_max) {
        shared_max = shared_inside;
    }
    size_t n = strlen(shared_log);
    snprintf(shared_log + n, sizeof(shared_log) - n, "%s+ ", who);
}

void c_leave(const char* who)
{
    --shared_inside;
    size_t n = strlen(shared_log);
    snprintf(shared_log + n, sizeof(shared_log) - n, "%s- ", who);
}

typedef struct CFlow {
    FutoInAsyncSteps* as;
    FutoInHandle timer;
    char name[8];
} CFlow;

static CFlow c_flows[8];

static void c_stay_done(void* data)
{
    CFlow* f = data;
    FutoInArgs none;
    memset(&none, 0, sizeof(none));
    c_leave(f->name);
    /* futoin_success() is the library's; this module links none of it. */
    f->as->api->success(f->as, &none);
}

static void c_stay_cancel(FutoInAsyncSteps* as, void* data)
{
    CFlow* f = data;
    as->api->sched_cancel(as, &f->timer);
    c_leave(f->name);
    c_cancelled++;
}

/* Inside the Mutex: stays 10 ms (a loop timer), then leaves. */
static void c_critical(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    CFlow* f = data;
    f->as = as;
    c_enter(f->name);
    f->timer = as->api->sched_deferred(as, 10, f, c_stay_done);
    futoin_set_cancel(as, c_stay_cancel, f);
}

/* data: the FutoInSync* (a Python Mutex's c_pointer); (id): the flow's
 * number, 0 to 7, named "C<id>" in the log. */
void c_sync_flow(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    int id = (int)futoin_arg_int(args, 0, 0) & 7;
    CFlow* f = &c_flows[id];
    snprintf(f->name, sizeof(f->name), "C%d", id);
    futoin_add_sync(as, (FutoInSync*)data, c_critical, NULL, f);
}

/* ---- Arrays and UTF-16/32 strings ------------------------------------- */

static const FutoInType c_i16_array = { FTN_TYPE_INT16 | FTN_TYPE_ARRAY, NULL };
static const FutoInType c_u16_string = { FTN_TYPE_STRING16, NULL };
static const FutoInType c_u32_string = { FTN_TYPE_STRING32, NULL };
static const int16_t c_shorts[3] = { 1, -2, 30000 };
static const uint16_t c_text16[3] = { 'h', 0xe9, 0x263a };
static const uint32_t c_text32[2] = { 'x', 0x1f600 };

/* () -> (int16[] {1, -2, 30000}, UTF-16 "hé☺", UTF-32 "x😀") */
void c_arrays(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    FutoInBinaryValue a, s16, s32;
    memset(&a, 0, sizeof(a));
    memset(&s16, 0, sizeof(s16));
    memset(&s32, 0, sizeof(s32));
    a.type = &c_i16_array;
    a.p = c_shorts;
    a.length = 3;
    s16.type = &c_u16_string;
    s16.p = c_text16;
    s16.length = 3;
    s32.type = &c_u32_string;
    s32.p = c_text32;
    s32.length = 2;
    futoin_success3(as, a, s16, s32);
}

/* (array of int32, int64, uint8 or double) -> (sum as double, length) */
void c_sum(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    const FutoInBinaryValue* v = &args->args[0];
    double sum = 0;
    if (!v->type || !(v->type->flags & FTN_TYPE_ARRAY)) {
        futoin_error(as, "CError", "not an array");
        return;
    }
    for (uint32_t i = 0; i < v->length; ++i) {
        switch (v->type->flags & FTN_BASE_TYPE_MASK) {
        case FTN_TYPE_INT32:
            sum += ((const int32_t*)v->p)[i];
            break;
        case FTN_TYPE_INT64:
            sum += (double)((const int64_t*)v->p)[i];
            break;
        case FTN_TYPE_UINT8:
            sum += ((const uint8_t*)v->p)[i];
            break;
        case FTN_TYPE_DOUBLE:
            sum += ((const double*)v->p)[i];
            break;
        default:
            futoin_error(as, "CError", "unexpected element type");
            return;
        }
    }
    futoin_success2(as, futoin_val_double(sum), futoin_val_i64(v->length));
}
