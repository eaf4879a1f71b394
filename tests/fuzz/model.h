/* SPDX-License-Identifier: MIT */
/*
 * Reference model of docs/SEMANTICS.md (and the Mutex, Throttle and Limiter
 * rules of include/futoin/sync.h) for the fuzzer's step language (prog.h).
 *
 * It shares no code with src/: it interprets the program directly, with its
 * own ready queue, its own tiny virtual-clock loop (immediates FIFO first,
 * then timers by due time and scheduling order, as futoin_loop_run_next()
 * is documented) and its own frame stacks, and renders the trace that the
 * engine runner (engine_run.c) must reproduce exactly.
 */
#ifndef FUTOIN_FUZZ_MODEL_H
#define FUTOIN_FUZZ_MODEL_H

#include "prog.h"

/* Runs p and appends its trace to out. Returns 0; -1 when the program
 * exceeds the model's work bound (the caller skips such an input); 1 when
 * the run depends on an order the documentation leaves open (a rate window
 * timer of a Throttle or Limiter due at the same time as another timer):
 * the trace is not authoritative and the caller checks the engine's
 * invariants only. */
int fz_model_run(const FzProg* p, FzStr* out);

/* Shared trace formatting: the error_info column of "eh" and "unhandled"
 * lines. InternalError carries an engine-worded message: shown as "-". */
const char* fz_info_col(const char* code, const char* info);

/* The error_info column of a full Throttle queue (any info naming the
 * Throttle and its queue). */
#define FZ_INFO_THROTTLE_FULL "Throttle:queue"

/* The error_info columns of a full Limiter queue: sync.h names its two
 * queues max_queue (flows waiting for a concurrency slot) and burst (flows
 * waiting for the rate). An info naming the Limiter and its burst queue
 * shows as "Limiter:burst"; one naming the Limiter and a queue, but not the
 * burst one, as "Limiter:queue". */
#define FZ_INFO_LIMITER_QUEUE "Limiter:queue"
#define FZ_INFO_LIMITER_BURST "Limiter:burst"

#endif
