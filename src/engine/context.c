/* SPDX-License-Identifier: MIT */
/*
 * The engine's per-loop context (EngineCtx: pools, ready queue, counters,
 * the misuse handler), the error record (code and error_info) of a flow, argument
 * moves, and the misuse reporter.
 */
#include "engine/engine_impl.h"

#include "common/log.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BURST 100

static void ctx_free(void* p)
{
    EngineCtx* ctx = p;
    futoin__roots_free_all(ctx);
    futoin__owners_flush_if_any(ctx);
    while (ctx->free_flows) {
        Flow* f = ctx->free_flows;
        ctx->free_flows = f->pool_next;
        flow_free_frames(f);
#if FUTOIN_TRACING
        futoin__trace_branch_free(f);
#endif
    }
    while (ctx->free_roots) {
        Root* r = ctx->free_roots;
        ctx->free_roots = (Root*)r->main.pool_next;
        flow_free_frames(&r->main);
        if (r->ext) {
#if FUTOIN_TRACING
            futoin__trace_free(r->ext);
#endif
            free(r->ext);
        }
    }
    futoin__pool_destroy(&ctx->root_mem);
    futoin__pool_destroy(&ctx->branch_mem);
    futoin__pool_destroy(&ctx->steps);
    futoin__pool_destroy(&ctx->boxes);
    futoin__pool_destroy(&ctx->stacks);
    futoin__pool_destroy(&ctx->strs); /* ctx itself is the loop's memory */
    for (uint32_t i = 0; i < ctx->n_extras_chunks; ++i) {
        free(ctx->extras_chunks[i]);
    }
    free(ctx->extras_chunks);
}

static void default_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    (void)as;
    futoin__log_misuse(info);
}

void futoin__report_unhandled(Flow* fl, const char* report)
{
    EngineCtx* ctx = futoin__flow_ctx(fl);
    if (ctx->misuse == default_misuse) {
        futoin__log_unhandled(report);
        return;
    }
    ctx->misuse(ctx->misuse_data, &fl->iface, report);
}

/* The loop's own misuse (running it from inside its callbacks) goes to
 * the same handler as the engine's. */
static void loop_misuse(FutoInLoop* loop, const char* info)
{
    EngineCtx* ctx = *futoin__loop_engine_slot(loop);
    ctx->misuse(ctx->misuse_data, NULL, info);
}

EngineCtx* futoin__ctx_create(FutoInLoop* loop)
{
    void** slot = futoin__loop_engine_slot(loop);
    if (!*slot) {
        EngineCtx* ctx = (EngineCtx*)(void*)((LoopHead*)(void*)loop)->engine_mem;
        memset(ctx, 0, sizeof(*ctx));
        ctx->loop = loop;
        ctx->burst = DEFAULT_BURST;
        ctx->misuse = default_misuse;
        ctx->extras_free = FUTOIN_EXTRAS_NONE;
        /* Steps, loop specs and parallels share one pool of nodes
         * (and error codes and labels the small-string pool), so memory
         * freed by one kind serves the others. */
        futoin__pool_init(&ctx->steps, sizeof(Step), _Alignof(Step), 256);
        futoin__pool_init(&ctx->boxes, sizeof(ArgsBox), _Alignof(ArgsBox), 32);
        /* stack() memory is the caller's: aligned for any type. */
        futoin__pool_init(&ctx->stacks, sizeof(StackBlock) + STACK_POOLED_SIZE,
                _Alignof(max_align_t), 32);
        futoin__pool_init(&ctx->strs, FUTOIN_SMALL_STR, _Alignof(void*), 64);
        futoin__pool_init(&ctx->root_mem, sizeof(Root), _Alignof(Root), 64);
        futoin__pool_init(&ctx->branch_mem, sizeof(Branch), _Alignof(Branch), 32);
        *slot = ctx;
        futoin__loop_set_engine_free(loop, ctx_free);
        futoin__loop_set_misuse_hook(loop, loop_misuse);
    }
    return *slot;
}

void futoin_set_burst(FutoInLoop* loop, unsigned steps)
{
    EngineCtx* ctx = futoin__ctx_get(loop);
    unsigned burst = steps ? steps : 1;
    if (ctx->dispatching) {
        /* The running dispatch counts burst - budget when it ends: keep
         * n_steps what the budget granted at its start makes it. */
        ctx->n_steps += (uint64_t)ctx->burst - burst;
    }
    ctx->burst = burst;
}

void futoin_set_misuse_handler(FutoInLoop* loop, FutoInMisuseHandler cb, void* data)
{
    EngineCtx* ctx = futoin__ctx_get(loop);
    ctx->misuse = cb ? cb : default_misuse;
    ctx->misuse_data = cb ? data : NULL;
}

Flow* futoin__flow_of(FutoInAsyncSteps* as)
{
    if (!as) {
        return NULL;
    }
    if (as->api == &futoin__flow_api) {
        return (Flow*)as;
    }
    if (as->api == &futoin__par_api) {
        return ((Parallel*)as)->owner;
    }
    return NULL;
}

FutoInLoop* futoin_asyncsteps_loop(FutoInAsyncSteps* as)
{
    Flow* fl = futoin__flow_of(as);
    /* Flow.loop is written once, when the flow's memory is first used, so
     * other threads (shared sync objects) may ask too. */
    return fl ? fl->loop : NULL;
}

/* Both halves of an empty error record (futoin__flow_code()). */
char futoin__no_code[2];

/* Where the flow's error record pointer lives (see futoin__flow_code());
 * a root's RootExt is made if it has none. */
static char** flow_code_slot(Flow* fl)
{
    if (fl->is_branch) {
        return &futoin__branch(fl)->code;
    }
    return &futoin__root_ext((Root*)fl)->code;
}

/* A heap record keeps its capacity in the word before its text. */
static size_t* heap_head(char* rec)
{
    return (size_t*)(void*)rec - 1;
}

/* Releases the flow's error record: code and info read as "" again. */
void futoin__flow_code_release(Flow* fl)
{
    char* code = futoin__flow_code(fl);
    if (code != futoin__no_code) {
        if (fl->code_heap) {
            free(heap_head(code));
        } else {
            futoin__pool_put(&futoin__flow_ctx(fl)->strs, code);
        }
        *flow_code_slot(fl) = futoin__no_code;
        fl->code_heap = 0;
    }
}

/* p points into the cap bytes at rec (compared as addresses: p may be
 * any string). */
static int points_into(const char* p, const char* rec, size_t cap)
{
    return (uintptr_t)p - (uintptr_t)rec < cap;
}

/* Writes "code\0info\0" at rec, which has room for it; either text may
 * come out of rec itself (an error handler raising the code it was given,
 * or keeping the info it read). The record stays where it is, so what a
 * handler was given stays readable memory. */
static void record_write(char* rec, size_t cap, const char* code, size_t lc, const char* info,
        size_t li)
{
    int code_in = points_into(code, rec, cap);
    int info_in = points_into(info, rec, cap);
    if (!info_in) {
        memmove(rec, code, lc + 1);
        memcpy(rec + lc + 1, info, li + 1);
    } else if (!code_in || code == rec) {
        /* The info first: its new place starts after the code's. */
        memmove(rec + lc + 1, info, li + 1);
        if (code != rec) {
            memcpy(rec, code, lc + 1);
        }
    } else {
        /* Both from the record, the code not at its start: rare. */
        char* tmp = futoin__xmalloc(lc + li + 2);
        memcpy(tmp, code, lc + 1);
        memcpy(tmp + lc + 1, info, li + 1);
        memcpy(rec, tmp, lc + li + 2);
        free(tmp);
    }
}

void futoin__flow_set_error(Flow* fl, const char* code, const char* info)
{
    if (!code) {
        code = "";
    }
    if (!info) {
        info = "";
    }
    char* rec = futoin__flow_code(fl);
    size_t lc = strlen(code);
    size_t li = *info ? strlen(info) : 0;
    size_t need = lc + li + 2;
    size_t cap = 0;
    if (rec != futoin__no_code) {
        cap = fl->code_heap ? *heap_head(rec) : FUTOIN_SMALL_STR;
    }
    if (need <= cap) {
        if (!li) { /* the common error() without info: one copy */
            memmove(rec, code, lc + 1);
            rec[lc + 1] = 0;
            return;
        }
        record_write(rec, cap, code, lc, info, li);
        return;
    }
    if (need == 2) {
        return; /* both empty, and no record: nothing to hold */
    }
    /* A larger record; code and info may point into the old one: copy
     * before releasing it. */
    char* p;
    int heap = need > FUTOIN_SMALL_STR;
    if (heap) {
        size_t ncap = 64;
        while (ncap < need) {
            ncap *= 2;
        }
        size_t* head = futoin__xmalloc(sizeof(size_t) + ncap);
        *head = ncap;
        p = (char*)(head + 1);
    } else {
        p = futoin__pool_get(&futoin__flow_ctx(fl)->strs);
    }
    memcpy(p, code, lc + 1);
    memcpy(p + lc + 1, info, li + 1);
    futoin__flow_code_release(fl);
    *flow_code_slot(fl) = p;
    fl->code_heap = (uint8_t)heap;
}

void futoin__flow_take_error(Flow* dst, Flow* src)
{
    char** d = flow_code_slot(dst);
    char** s = flow_code_slot(src);
    char* rec = *d;
    uint8_t heap = dst->code_heap;
    *d = *s;
    dst->code_heap = src->code_heap;
    *s = rec;
    src->code_heap = heap;
#if FUTOIN_TRACING
    futoin__trace_swap(dst, src);
#endif
}

RootExt* futoin__root_ext_make(Root* r)
{
    r->ext = futoin__xmalloc(sizeof(RootExt));
    memset(r->ext, 0, sizeof(RootExt));
    r->ext->code = futoin__no_code;
    return r->ext;
}

/* The running step fails: the spec's InternalError. */
static void fail_running_step(Flow* fl, const char* info)
{
    futoin__trace_capture(fl, fl->depth);
    futoin__flow_set_error(fl, FUTOIN_INTERNAL_ERROR, info);
    ++futoin__flow_ctx(fl)->n_errors;
    fl->out = OUT_ERROR;
    fl->add_link = NULL;
    fl->ctl = CTL_NONE;
}

void futoin__step_out_of_memory(Flow* fl, const char* what)
{
    if (!futoin__flow_in_step(fl)) {
        futoin__out_of_memory(what);
    }
    char buf[128];
    snprintf(buf, sizeof(buf), "%s: out of memory", what);
    fail_running_step(fl, buf);
}

void futoin__misuse(Flow* fl, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (fl && futoin__flow_in_step(fl)) {
        /* A call of the step that failed for memory cannot tell the step,
         * which goes on with calls that are misuse only because of it:
         * that failure stays the step's error. */
        if (fl->out == OUT_ERROR && strstr(futoin__flow_info(fl), "out of memory") != NULL) {
            return;
        }
        fail_running_step(fl, buf);
        return;
    }
    if (fl) {
        EngineCtx* ctx = futoin__flow_ctx(fl);
        ctx->misuse(ctx->misuse_data, &fl->iface, buf);
    } else {
        default_misuse(NULL, NULL, buf);
    }
}
