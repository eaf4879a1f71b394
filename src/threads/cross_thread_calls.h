/* SPDX-License-Identifier: MIT */
/*
 * Cross-thread calls on AsyncSteps flows (src/threads/cross_thread_calls.c): the ABI entry
 * points (engine/abi_table.c) hand a call made on a thread other than the flow's
 * loop thread to these functions, which queue it for the loop thread. There
 * the same internal functions run as for a same-thread call, after checking
 * that the call still applies (see docs/THREADS.md).
 */
#ifndef FUTOIN_XFLOW_H
#define FUTOIN_XFLOW_H

#include "engine/engine_internal.h"

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* success()/error() on a waiting step. Applied only if, when the loop
 * thread gets to it, the step that was current when the call was made is
 * still the one waiting; otherwise dropped (args cleaned up once) and,
 * unless quiet, reported to the loop's misuse handler. */
void futoin__xflow_success(Flow* fl, FutoInArgs* args, int quiet);
void futoin__xflow_error(Flow* fl, const char* code, const char* info, int quiet);
/* Root cancel() and free() from another thread. */
void futoin__xflow_cancel(Flow* fl);
void futoin__xflow_free(Flow* fl);

/* For library code that completes steps it parked itself (shared sync
 * objects): success (code NULL) or error on bsi from any thread, through
 * the ABI on the loop thread, quietly queued otherwise, because losing a
 * race with a cancel is expected there and not a misuse. */
void futoin__complete_any_thread(FutoInAsyncSteps* bsi, const char* code, const char* info);

/* For library code rejecting a step of this library that it parked and gave
 * the cancel handler (ch, data), whose data it wants back exactly once:
 * - FUTOIN_PARKED_FAILED (the step's loop thread): the handler is taken off
 *   the step, so it will not be called, and the step fails with code if it
 *   still waits (a root being cancelled or freed keeps it, and aborts it
 *   next); the caller takes its data back now.
 * - FUTOIN_PARKED_QUEUED (another thread): queued for the loop thread,
 *   where ch(bsi, data) is called exactly once, by the step's abort if that
 *   comes first, else just before the step fails (ch(NULL, data) if the
 *   loop is freed before it gets there); the caller must not take it back.
 * - 0: not a flow of this library; nothing was done. */
enum { FUTOIN_PARKED_FAILED = 1, FUTOIN_PARKED_QUEUED = 2 };
int futoin__fail_parked_step(FutoInAsyncSteps* bsi, FutoInAsyncSteps_cancel_callback ch, void* data,
        const char* code, const char* info);
/* Counts a lock() that rejects its flow at once (sync/core.c): the loop's
 * sync_rejections counter, on the loop thread and for flows of this
 * library only. futoin__fail_parked_step() counts the waiting flows it
 * rejects itself. */
void futoin__note_sync_rejection(FutoInAsyncSteps* bsi);

#pragma GCC visibility pop

#endif
