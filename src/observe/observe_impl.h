/* SPDX-License-Identifier: MIT */
/*
 * What the walk (observe/introspect.c) lends the text dump
 * (observe/dump.c): how a root, a flow and a frame are described; and
 * the in-memory stream the dump is written to (observe/text_stream.c).
 */
#ifndef FUTOIN_OBSERVE_IMPL_H
#define FUTOIN_OBSERVE_IMPL_H

#include <futoin/introspect.h>

#include "engine/engine_internal.h"

#pragma GCC visibility push(hidden)

/* Depth first: down into the branches of cur's parallel, else to the next
 * sibling of cur or of the nearest ancestor branch that has one; NULL at
 * the end. *nesting (if not NULL) follows: +1 down, -1 per level up. */
Flow* futoin__obs_next_flow(Flow* cur, uint32_t* nesting);
FutoInRootState futoin__obs_root_state(Root* r);
void futoin__obs_flow_info_fill(Flow* fl, FutoInFlowInfo* out);
const char* futoin__obs_flow_state_name(FutoInFlowState state);
void futoin__obs_frame_describe(Flow* fl, uint32_t level, FutoInFrameInfo* fi);
/* Steps queued in a chain. */
size_t futoin__obs_count_steps(const Step* s);
/* Function pointers as numbers, for printing (ISO C has no %p for them). */
uintptr_t futoin__obs_fn_addr(FutoInAsyncSteps_error_callback f);

/* A stream whose text is kept in memory (text_stream.c), for the dump
 * that a log handler gets line by line: open_memstream(), or on Windows,
 * which has none, a temporary file that is read back. */
typedef struct {
    FILE* f;
    char* text;
    size_t len;
} ObsText;
/* 0, or -1 without memory (or, on Windows, without a temporary file). */
int futoin__obs_text_open(ObsText* t);
/* Closes the stream: the text written (malloc'd, NUL-terminated; the
 * caller frees it), or NULL when anything failed. */
char* futoin__obs_text_close(ObsText* t);

#pragma GCC visibility pop

#endif
