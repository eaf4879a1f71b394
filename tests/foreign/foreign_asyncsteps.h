/*
 * SPDX-License-Identifier: MIT
 *
 * The foreign AsyncSteps (names prefixed frn_, Frn, FRN_): a small, strict
 * "foreign" implementation of the FTN12 universal binary interface (spec
 * 2.7), written from the specification text only. It shares no code with
 * the project's engine, so interop tests that hand its interfaces to the
 * project's library (and the other way round) exercise the binary contract
 * itself rather than two copies of the same assumptions.
 *
 * It runs on a virtual clock and its own event loop that the test drives, and
 * it reports contract violations loudly instead of tolerating them.
 */
#ifndef FOREIGN_ASYNCSTEPS_H
#define FOREIGN_ASYNCSTEPS_H

#include <stddef.h>
#include <stdint.h>

#include <futoin/binarysteps.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct FrnLoop FrnLoop;

/* A loop with a virtual clock at 0 ms. */
FrnLoop* frn_loop_new(void);
/* Roots must be freed before; live roots are reported as a violation and
 * then freed. */
void frn_loop_free(FrnLoop* l);
uint64_t frn_loop_now(const FrnLoop* l);
/* Moves the clock forward only; runs nothing. */
void frn_loop_set_now(FrnLoop* l, uint64_t ms);
/* Absolute due time (ms) of the earliest timer, -1 if none. */
int64_t frn_loop_next_due(const FrnLoop* l);
/* Immediates + timers pending. */
size_t frn_loop_pending(const FrnLoop* l);
/* Runs the immediates queued when the call starts, then the timers (already
 * scheduled when the call starts) due at now, in due order, FIFO for equal
 * times. Returns the number of callbacks run. Never advances the clock. */
size_t frn_loop_run_ready(FrnLoop* l);
/* Convenience driver: frn_loop_run_ready() repeatedly, moving the clock to
 * the next due timer whenever nothing is ready, until nothing is pending or
 * at least `limit` callbacks ran. Returns the number of callbacks run. */
size_t frn_loop_run_all(FrnLoop* l, size_t limit);

/* A root; freed through its api->free. */
FutoInAsyncSteps* frn_root_new(FrnLoop* l);

/* Violations of the interface contract found by the strict checks. Default
 * handler: print "frn: VIOLATION: <text>" to stderr and abort(). Tests may
 * install their own; when it returns, the offending call does nothing. A NULL
 * handler restores the default. */
typedef void (*FrnViolationHandler)(void* data, const char* what);
void frn_set_violation_handler(FrnLoop* l, FrnViolationHandler h, void* data);

/* Misuse that the spec turns into an InternalError of the running step is
 * NOT reported here (it becomes InternalError with an error_info text).
 * Misuse with no running step (wrong context, dead interface) is. Default
 * handler: print "frn: MISUSE: <text>" to stderr and abort(), so that nothing
 * slips through an interop run unnoticed; when an installed handler returns,
 * the call has no effect (pointer results are NULL). A NULL handler restores
 * the default. */
typedef void (*FrnMisuseHandler)(void* data, const char* what);
void frn_set_misuse_handler(FrnLoop* l, FrnMisuseHandler h, void* data);

/* Behaviour switches where the spec is silent, so that the other library is
 * tested against both. */
enum {
    /* A step that waits (setCancel) and then gets an error() of its own has
     * its cancel handler called too (before its error handler), as the
     * JavaScript implementation does. Default: not called. */
    FRN_OPT_CANCEL_ON_OWN_ERROR = 1
};
void frn_set_options(FrnLoop* l, unsigned opts);

/* Roots, frames, branches, stack blocks and state variables still allocated;
 * 0 after everything is freed. */
size_t frn_live_objects(const FrnLoop* l);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FOREIGN_ASYNCSTEPS_H */
