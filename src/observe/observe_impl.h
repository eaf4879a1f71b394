/* SPDX-License-Identifier: MIT */
/*
 * What the walk (observe/introspect.c) lends the text dump
 * (observe/dump.c): how a root, a flow and a frame are described.
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

#pragma GCC visibility pop

#endif
