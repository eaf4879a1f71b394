/* SPDX-License-Identifier: MIT */
/*
 * The tracing build (CMake -DFUTOIN_TRACING=ON, docs/OBSERVABILITY.md):
 * where steps come from and the trace of an error.
 *
 * futoin_trace_at() leaves the caller's file and line in a thread-local
 * slot; every step made while it is set records them (engine_internal.h,
 * futoin__trace_stamp()), and a frame keeps them with the step's callback
 * when the step starts. When an error is raised, futoin__trace_capture()
 * copies the chain of frames from the failing one out to the root into a
 * buffer of the failing flow (as its error record, a branch's trace is its
 * own; the flow holding the parallel takes it over when the error escapes
 * the branch), so that error handlers and the unhandled-error callback can
 * read it after the failing frames are gone. Bounded work per
 * error: at most FUTOIN_TRACE_MAX frames are copied (the innermost ones);
 * the rest of a deeper chain is only counted, one step per flow level.
 *
 * Without tracing the functions are still exported (programs built either
 * way link with either library) and report that there is no trace.
 */
#include "engine/engine_impl.h"

#include <futoin/introspect.h>

#include <inttypes.h>
#include <stdlib.h>

#if FUTOIN_TRACING
_Thread_local TraceLoc futoin__trace_loc;

typedef struct TraceBuf {
    size_t n;     /* entries kept */
    size_t total; /* length of the whole chain */
    FutoInTraceEntry e[FUTOIN_TRACE_MAX];
} TraceBuf;
#endif

void futoin_trace_at(const char* file, unsigned line)
{
#if FUTOIN_TRACING
    futoin__trace_loc.file = file;
    futoin__trace_loc.line = line;
#else
    (void)file, (void)line;
#endif
}

int futoin_tracing_enabled(void)
{
    return FUTOIN_TRACING;
}

#if FUTOIN_TRACING
/* The introspection kind of an engine frame kind. */
static FutoInFrameKind frame_kind(const Frame* f)
{
    switch (f->kind) {
    case SK_LOOP:
        return FUTOIN_FRAME_LOOP;
    case SK_PARALLEL:
        return FUTOIN_FRAME_PARALLEL;
    case SK_SYNC:
        return FUTOIN_FRAME_SYNC;
    case SK_VALUE:
        return FUTOIN_FRAME_VALUE;
    case SK_YIELD:
        return FUTOIN_FRAME_YIELD;
    case SK_OWNED: {
        const StepOwner* o = f->node ? futoin__step_ext(f->node) : NULL;
        return futoin__owner_is(o, OWNER_AWAIT)   ? FUTOIN_FRAME_AWAIT
                : futoin__owner_is(o, OWNER_WORK) ? FUTOIN_FRAME_WORK
                                                  : FUTOIN_FRAME_STEP;
    }
    default:
        return FUTOIN_FRAME_STEP;
    }
}

void futoin__trace_free(RootExt* x)
{
    free(x->trace);
    x->trace = NULL;
}

/* Where fl's trace lives: in its Branch, or the root's RootExt for the
 * main flow (made if make is set, else NULL when there is none). */
static TraceBuf** trace_slot(Flow* fl, int make)
{
    if (fl->is_branch) {
        return &futoin__branch(fl)->trace;
    }
    Root* r = futoin__flow_root(fl);
    if (!r->ext && !make) {
        return NULL;
    }
    return &futoin__root_ext(r)->trace;
}

void futoin__trace_swap(Flow* a, Flow* b)
{
    TraceBuf** sa = trace_slot(a, 1);
    TraceBuf** sb = trace_slot(b, 1);
    TraceBuf* t = *sa;
    *sa = *sb;
    *sb = t;
}

void futoin__trace_branch_reset(Flow* fl)
{
    TraceBuf* b = futoin__branch(fl)->trace;
    if (b) {
        b->n = 0;
        b->total = 0;
    }
}

void futoin__trace_branch_free(Flow* fl)
{
    free(futoin__branch(fl)->trace);
    futoin__branch(fl)->trace = NULL;
}

/* Innermost first into b (reversed at the end): frames top..1 of fl, then
 * of each flow that holds the parallel step fl is a branch of. */
void futoin__trace_capture(Flow* fl, uint32_t top)
{
    TraceBuf** slot = trace_slot(fl, 1);
    TraceBuf* b = *slot;
    if (!b) {
        b = malloc(sizeof(*b));
        if (!b) {
            return; /* no trace rather than no error */
        }
        *slot = b;
    }
    b->n = 0;
    b->total = 0;
    for (Flow* f = fl; f; f = f->is_branch ? futoin__branch(f)->parent : NULL) {
        uint32_t k = f == fl ? top : f->depth;
        b->total += k;
        for (; k >= 1 && b->n < FUTOIN_TRACE_MAX; --k) {
            const Frame* fr = &f->frames[k];
            FutoInTraceEntry* e = &b->e[b->n++];
            e->kind = frame_kind(fr);
            e->callback = fr->fn;
            e->file = fr->file;
            e->line = fr->line;
        }
    }
    for (size_t i = 0, j = b->n; i + 1 < j; ++i, --j) {
        FutoInTraceEntry t = b->e[i];
        b->e[i] = b->e[j - 1];
        b->e[j - 1] = t;
    }
}
#endif

size_t futoin_error_trace(FutoInAsyncSteps* as, const FutoInTraceEntry** entries, size_t* total)
{
    if (entries) {
        *entries = NULL;
    }
    if (total) {
        *total = 0;
    }
#if FUTOIN_TRACING
    Flow* fl = as ? futoin__flow_of(as) : NULL;
    if (!fl || !futoin__loop_on_thread(fl->loop)) {
        return 0;
    }
    TraceBuf** slot = trace_slot(fl, 0);
    const TraceBuf* b = slot ? *slot : NULL;
    if (!b || b->n == 0) {
        return 0;
    }
    if (entries) {
        *entries = b->e;
    }
    if (total) {
        *total = b->total;
    }
    return b->n;
#else
    (void)as;
    return 0;
#endif
}

static const char* kind_word(FutoInFrameKind k)
{
    switch (k) {
    case FUTOIN_FRAME_LOOP:
        return "loop";
    case FUTOIN_FRAME_PARALLEL:
        return "parallel";
    case FUTOIN_FRAME_SYNC:
        return "sync";
    case FUTOIN_FRAME_VALUE:
        return "value";
    case FUTOIN_FRAME_YIELD:
        return "yield";
    case FUTOIN_FRAME_AWAIT:
        return "await";
    case FUTOIN_FRAME_WORK:
        return "work";
    default:
        return "step";
    }
}

size_t futoin_error_trace_print(FutoInAsyncSteps* as, FILE* out)
{
    if (!out) {
        return 0;
    }
    const FutoInTraceEntry* e;
    size_t total;
    size_t n = futoin_error_trace(as, &e, &total);
    if (n == 0) {
        fputs(futoin_tracing_enabled()
                        ? "  (no error trace for this flow)\n"
                        : "  (no error trace: the library was built without FUTOIN_TRACING)\n",
                out);
        return 0;
    }
    if (total > n) {
        fprintf(out, "  ... %zu outer steps ...\n", total - n);
    }
    for (size_t i = 0; i < n; ++i) {
        char name[128];
        futoin_callback_name(e[i].callback, name, sizeof(name));
        fprintf(out, "  #%zu %s %s", total - n + i + 1, kind_word(e[i].kind), name);
        if (e[i].file) {
            fprintf(out, " (%s:%" PRIu32 ")", e[i].file, e[i].line);
        }
        fputc('\n', out);
    }
    return n;
}
