/* SPDX-License-Identifier: MIT */
/*
 * Rejecting steps the library parked itself (the sync objects' waiters),
 * from any thread (src/engine/cross_thread_calls.c); they are parked with
 * futoin_wait_owned() and woken with futoin_owned_success(). Declared apart from
 * cross_thread_calls_impl.h because the sync objects see flows only through the
 * binary interface: this header needs nothing but the public types.
 */
#ifndef FUTOIN_PARKED_STEPS_INTERNAL_H
#define FUTOIN_PARKED_STEPS_INTERNAL_H

#include <futoin/asyncsteps.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* For library code rejecting a step of this library that it parked and gave
 * the cancel handler (ch, data), whose data it wants back exactly once:
 * - FUTOIN_PARKED_FAILED (the step's loop thread): the handler is taken off
 *   the step, so it will not be called, and the step fails with code if it
 *   still waits (a root being cancelled or freed keeps it, and aborts it
 *   next); the caller takes its data back now.
 * - FUTOIN_PARKED_QUEUED (another thread): queued for the loop thread,
 *   where ch(as, data) is called exactly once, by the step's abort if that
 *   comes first, else just before the step fails (ch(NULL, data) if the
 *   loop is freed before it gets there); the caller must not take it back.
 * - 0: not a flow of this library; nothing was done. */
/* Whether as is a flow of this library: an engine flow (one comparison,
 * the common case) or a parallel branch or other flow that knows its loop. */
extern const FutoInAsyncStepsAPI futoin__flow_api;

static inline int futoin__is_library_flow(FutoInAsyncSteps* as)
{
    return as->api == &futoin__flow_api || futoin_asyncsteps_loop(as) != NULL;
}

enum { FUTOIN_PARKED_FAILED = 1, FUTOIN_PARKED_QUEUED = 2 };
int futoin__fail_parked_step(FutoInAsyncSteps* as, FutoInAsyncSteps_cancel_callback ch, void* data,
        const char* code, const char* info);
/* Counts a lock() that rejects its flow at once (sync/core.c): the loop's
 * sync_rejections counter, on the loop thread and for flows of this
 * library only. futoin__fail_parked_step() counts the waiting flows it
 * rejects itself. */
void futoin__note_sync_rejection(FutoInAsyncSteps* as);

#pragma GCC visibility pop

#endif
