/* SPDX-License-Identifier: MIT */
/*
 * Cross-thread calls on AsyncSteps flows (src/engine/cross_thread_calls.c): the ABI entry
 * points (engine/abi_table.c) hand a call made on a thread other than the flow's
 * loop thread to these functions, which queue it for the loop thread. There
 * the same internal functions run as for a same-thread call, after checking
 * that the call still applies (see docs/THREADS.md).
 */
#ifndef FUTOIN_CROSS_THREAD_CALLS_IMPL_H
#define FUTOIN_CROSS_THREAD_CALLS_IMPL_H

#include "engine/engine_impl.h"
#include "engine/parked_steps_internal.h"

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* success()/error() on a waiting step. Applied only if, when the loop
 * thread gets to it, the step that was current when the call was made is
 * still the one waiting, and the wait is the caller's to end: key NULL
 * (a call through the interface) needs a wait of the step's own code,
 * a key the owned wait armed with that key (futoin_wait_owned()).
 * Otherwise dropped (args cleaned up once); a call through the interface
 * is then reported to the loop's misuse handler, an owner's is quiet
 * (losing a race with a timeout or cancel is expected there). */
void futoin__xflow_success(Flow* fl, FutoInArgs* args, const void* key);
void futoin__xflow_error(Flow* fl, const char* code, const char* info, const void* key);
/* Root cancel() and free() from another thread. */
void futoin__xflow_cancel(Flow* fl);
void futoin__xflow_free(Flow* fl);

#pragma GCC visibility pop

#endif
