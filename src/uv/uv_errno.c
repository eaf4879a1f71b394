/* SPDX-License-Identifier: MIT */
/*
 * The libuv error number of the errors the backend raises
 * (futoin_uv_errno()).
 *
 * The number must answer for one flow: two branches of a parallel may fail
 * in the same libuv iteration with different numbers, and each branch's
 * error handler must see its own. The core's interface carries a code and
 * an info string per error, no number, so the backend notes each failure
 * it raises beside the flow, on the failure path only (a step that
 * succeeds costs nothing here):
 *
 *   root state variable "futoin_uv:errno" ─► ErrTable ─► ErrRecord per failure
 *       ErrRecord: err, code, info, entries[0] = the failing flow,
 *                  entries[1..] = the flows of the parallel steps around it
 *       ErrEntry:  a flow handle and its FutoInFlowInfo.steps_started then
 *
 * An entry answers while its flow's error is still the failure: the flow
 * has not started another step since (its steps_started is unchanged: the
 * error is still being handled, not recovered from), and its error code
 * and error_info (both kept per flow by the engine) are the ones raised.
 * An error reaches the flows around a branch only if it escapes the
 * branch, which the backend cannot see, but then the engine hands the
 * parallel step's flow the branch's code and error_info: their entries
 * answer exactly then. So the number always goes with the error the
 * handler reads, and a handler that raises an error of its own (another
 * code or another info) reads 0.
 *
 * The table is a state variable, so it goes with its root; stale records
 * are dropped each time a new one is added (a root has few failures being
 * handled at once).
 */
#include "uv_impl.h"

#include <futoin/introspect.h>

#include <stdlib.h>
#include <string.h>

#define ERRNO_VAR "futoin_uv:errno"

typedef struct ErrEntry {
    FutoInAsyncSteps* flow;
    uint32_t steps; /* its FutoInFlowInfo.steps_started at the failure */
} ErrEntry;

typedef struct ErrRecord {
    int err;
    const char* code; /* a string literal of the backend's */
    const char* info; /* the error_info raised: after entries[] */
    uint32_t n;       /* entries: the failing flow, then the flows around it */
    ErrEntry entries[];
} ErrRecord;

typedef struct ErrTable {
    ErrRecord** recs;
    uint32_t n;
    uint32_t cap;
} ErrTable;

static void* table_adopt(void* data)
{
    return data;
}

static void table_free(void* data, void* value)
{
    (void)data;
    ErrTable* t = value;
    if (!t) {
        return;
    }
    for (uint32_t i = 0; i < t->n; ++i) {
        free(t->recs[i]);
    }
    free(t->recs);
    free(t);
}

/* The flow has not moved on since the entry was made. */
static int entry_current(const ErrEntry* e, FutoInAsyncSteps* root)
{
    FutoInFlowInfo fi;
    return futoin_flow_info(e->flow, &fi, sizeof(fi)) == 0 && fi.root == root
            && fi.steps_started == e->steps;
}

/* Drops the entries whose flow went on (or is gone), and the records left
 * without one. */
static void prune(ErrTable* t, FutoInAsyncSteps* root)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < t->n; ++i) {
        ErrRecord* r = t->recs[i];
        uint32_t live = 0;
        for (uint32_t j = 0; j < r->n; ++j) {
            if (entry_current(&r->entries[j], root)) {
                r->entries[live++] = r->entries[j];
            }
        }
        r->n = live;
        if (live) {
            t->recs[keep++] = r;
        } else {
            free(r);
        }
    }
    t->n = keep;
}

static ErrTable* table_of(FutoInAsyncSteps* as)
{
    ErrTable* t = futoin_state(as, ERRNO_VAR, NULL, NULL, NULL);
    if (t) {
        return t;
    }
    /* Allocated here rather than by the state's allocator: out of memory,
     * nothing is recorded and the root gets no variable. */
    ErrTable* fresh = calloc(1, sizeof(*fresh));
    if (!fresh) {
        return NULL;
    }
    t = futoin_state(as, ERRNO_VAR, table_adopt, table_free, fresh);
    if (t != fresh) {
        free(fresh); /* refused (a root being freed): nothing kept */
    }
    return t;
}

void futoin__uv_note_error(FutoInAsyncSteps* as, const char* code, int err, const char* info)
{
    FutoInFlowInfo fi;
    if (!err || !as || futoin_flow_info(as, &fi, sizeof(fi)) != 0
            || strcmp(fi.error_code, code) != 0 || !futoin_is_valid(fi.root)) {
        return; /* the error did not take (the flow was released meanwhile) */
    }
    FutoInAsyncSteps* root = fi.root;
    ErrTable* t = table_of(as);
    if (!t) {
        return;
    }
    prune(t, root);
    /* The failing flow and the parallel steps' flows around it. */
    ErrEntry chain[1 + FUTOIN_UV_ERRNO_LEVELS];
    uint32_t n = 0;
    chain[n].flow = as;
    chain[n++].steps = fi.steps_started;
    for (FutoInAsyncSteps* up = fi.parent; up && n <= FUTOIN_UV_ERRNO_LEVELS; up = fi.parent) {
        if (futoin_flow_info(up, &fi, sizeof(fi)) != 0) {
            break;
        }
        chain[n].flow = up;
        chain[n++].steps = fi.steps_started;
    }
    if (!info) {
        info = "";
    }
    size_t ilen = strlen(info);
    ErrRecord* r = malloc(sizeof(*r) + n * sizeof(ErrEntry) + ilen + 1);
    if (!r) {
        return;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 4;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to records */
        ErrRecord** recs = realloc(t->recs, cap * sizeof(*recs));
        if (!recs) {
            free(r);
            return;
        }
        t->recs = recs;
        t->cap = cap;
    }
    r->err = err;
    r->code = code;
    r->n = n;
    memcpy(r->entries, chain, n * sizeof(ErrEntry));
    char* text = (char*)(r->entries + n);
    memcpy(text, info, ilen + 1);
    r->info = text;
    t->recs[t->n++] = r;
}

int futoin_uv_errno(FutoInAsyncSteps* as)
{
    FutoInFlowInfo fi;
    if (!as || futoin_flow_info(as, &fi, sizeof(fi)) != 0 || !*fi.error_code) {
        return 0;
    }
    ErrTable* t = futoin_state(as, ERRNO_VAR, NULL, NULL, NULL);
    for (uint32_t i = t ? t->n : 0; i-- > 0;) {
        const ErrRecord* r = t->recs[i];
        if (strcmp(r->code, fi.error_code) != 0) {
            continue;
        }
        for (uint32_t j = 0; j < r->n; ++j) {
            const ErrEntry* e = &r->entries[j];
            if (e->flow == as && e->steps == fi.steps_started
                    && strcmp(r->info, fi.error_info) == 0) {
                return r->err;
            }
        }
    }
    return 0;
}
