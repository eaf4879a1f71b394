/* SPDX-License-Identifier: MIT */
/*
 * C API conveniences built on the engine: owned string values, successStep,
 * relinquish, copyFrom, forEach over arrays and key/value pairs.
 */
#include "engine/engine_impl.h"
#include "engine/interop_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_cstr(FutoInBinaryValue* v)
{
    free((void*)v->cstr);
}

FutoInBinaryValue futoin_val_strdup(const char* s)
{
    static const FutoInType owned_string = { FTN_TYPE_STRING, free_cstr };
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    if (!s) {
        s = "";
    }
    size_t len = strlen(s);
    char* p = malloc(len + 1);
    if (!p) {
        return r;
    }
    memcpy(p, s, len + 1);
    r.type = &owned_string;
    r.cstr = p;
    r.length = (uint32_t)len;
    return r;
}

FutoInBinaryValue futoin_val_custom(const FutoInType* type, void* object)
{
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = type;
    r.custom_data = object;
    r.p = object;
    return r;
}

void futoin_success_step(FutoInAsyncSteps* as, FutoInArgs* args)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        futoin__foreign_success_step(as, args);
        return;
    }
    Step** at = futoin__add_target(fl, "successStep");
    if (!at) {
        futoin__args_drop(args);
        return;
    }
    EngineCtx* ctx = futoin__flow_ctx(fl);
    ArgsBox* box = NULL;
    FutoInArgs taken;
    memset(&taken, 0, sizeof(taken));
    uint8_t n = futoin__args_take(&taken, args);
    if (n) {
        box = futoin__pool_get(&ctx->boxes);
        box->args = taken;
        box->nargs = n;
    }
    futoin__add_step_at(fl, at, SK_VALUE, NULL, NULL, NULL, box);
}

void futoin_relinquish(FutoInAsyncSteps* as)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl) {
        futoin__foreign_relinquish(as);
        return;
    }
    futoin__add_step(fl, "relinquish", SK_YIELD, NULL, NULL, NULL, NULL);
}

int futoin_set_wait_info(FutoInAsyncSteps* as, const char* what)
{
    Flow* fl = futoin__flow_of(as);
    if (!fl || !what || fl->cb != CB_EXEC) {
        return -1;
    }
    return futoin__flow_wait_info(fl, what);
}

void futoin_copy_from(FutoInAsyncSteps* as, FutoInAsyncSteps* model)
{
    Flow* fl = futoin__flow_of(as);
    Flow* mf = futoin__flow_of(model);
    if (!fl) {
        /* Our model's steps are engine records another engine cannot run. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "copyFrom() needs an AsyncSteps of this library (the model's steps cannot be copied into another implementation)");
        return;
    }
    if (!mf || mf->is_branch || futoin__flow_root(mf)->state == RS_RUNNING) {
        futoin__misuse(fl,
                "copyFrom(): the model must be a root of this library that is not running");
        return;
    }
    Step** at = futoin__add_target(fl, "copyFrom");
    if (!at) {
        return;
    }
    EngineCtx* ctx = futoin__flow_ctx(fl);
    const char* err = NULL;
    for (const Step* s = mf->frames[0].q_head; s; s = s->next) {
        Step* c = futoin__step_copy(ctx, s, fl, &err);
        if (c) {
            futoin__queue_step(fl, at, c);
            at = &c->next;
        }
    }
    futoin__state_copy(futoin__flow_root(fl), futoin__flow_root(mf));
    if (err) {
        futoin__misuse(fl, "%s", err);
    }
}

/* ------------------------------------------------------------------------ */
/* forEach                                                                   */

/* A size or count argument out of range: InternalError of the running step
 * (or a misuse report where no step runs); nothing is added. */
FUTOIN_PRINTF(2, 3) static void range_error(FutoInAsyncSteps* as, const char* fmt, ...)
{
    char info[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info, sizeof(info), fmt, ap);
    va_end(ap);
    Flow* fl = futoin__flow_of(as);
    if (fl) {
        futoin__misuse(fl, "%s", info);
    } else {
        /* Another implementation of the ABI: its own error(). */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, info);
    }
}

/* Checks that count elements of elem_size bytes from base fit in the
 * address space: count * elem_size does not overflow and base plus that
 * does not wrap. Reports the bad value (naming the function what and the
 * size parameter size_name) and returns 0 if not. */
static int span_ok(FutoInAsyncSteps* as, const char* what, const void* base, size_t count,
        size_t elem_size, const char* size_name)
{
    if (count == 0) {
        return 1;
    }
    if (elem_size == 0) {
        range_error(as, "%s(): elem_size 0 with count %zu (must be at least 1)", what, count);
        return 0;
    }
    if (count > SIZE_MAX / elem_size) {
        range_error(as, "%s(): count %zu * %s %zu overflows size_t", what, count, size_name,
                elem_size);
        return 0;
    }
    size_t bytes = count * elem_size;
    if (bytes > UINTPTR_MAX - (uintptr_t)base) {
        range_error(as, "%s(): count %zu: %zu bytes from %p wrap around the address space", what,
                count, bytes, (void*)(uintptr_t)base);
        return 0;
    }
    return 1;
}

typedef struct ArrayIter {
    const char* base;
    size_t elem_size;
    FutoInForEachArrayFn f;
    void* data;
} ArrayIter;

static void array_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    ArrayIter* it = data;
    it->f(as, it->data, i, it->base + i * it->elem_size);
}

void futoin_foreach_array(FutoInAsyncSteps* as, const void* base, size_t count, size_t elem_size,
        FutoInForEachArrayFn f, void* data, const char* label)
{
    if (!f || (!base && count)) {
        /* Not sent on as repeat(NULL): another implementation may abort. */
        range_error(as, "futoin_foreach_array() with a NULL %s", f ? "array" : "callback");
        return;
    }
    if (!span_ok(as, "futoin_foreach_array", base, count, elem_size, "elem_size")) {
        return;
    }
    /* The iterator lives as long as the step that adds the loop. */
    ArrayIter* it = futoin_stack(as, sizeof(ArrayIter), NULL);
    if (!it) {
        return;
    }
    it->base = base;
    it->elem_size = elem_size;
    it->f = f;
    it->data = data;
    as->api->repeat(as, it, count, array_body, label);
}

typedef struct PairIter {
    const FutoInKeyValue* pairs;
    FutoInForEachPairFn f;
    void* data;
} PairIter;

static void pair_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    PairIter* it = data;
    it->f(as, it->data, it->pairs[i].key, &it->pairs[i].value);
}

void futoin_foreach_pairs(FutoInAsyncSteps* as, const FutoInKeyValue* pairs, size_t count,
        FutoInForEachPairFn f, void* data, const char* label)
{
    if (!f || (!pairs && count)) {
        range_error(as, "futoin_foreach_pairs() with a NULL %s", f ? "array" : "callback");
        return;
    }
    if (!span_ok(as, "futoin_foreach_pairs", pairs, count, sizeof(FutoInKeyValue),
                "sizeof(FutoInKeyValue)")) {
        return;
    }
    PairIter* it = futoin_stack(as, sizeof(PairIter), NULL);
    if (!it) {
        return;
    }
    it->pairs = pairs;
    it->f = f;
    it->data = data;
    as->api->repeat(as, it, count, pair_body, label);
}
