/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzzer program (prog.h) on the real engine (virtual clock, driven
 * by futoin_loop_run_next) and renders the same trace as the model.
 * Protocol violations that a trace cannot show (a cancel handler called
 * when none is armed, a value cleaned up twice or never, a late external
 * completion, a sync object left busy) abort() at once.
 */
#ifndef FUTOIN_FUZZ_ENGINE_RUN_H
#define FUTOIN_FUZZ_ENGINE_RUN_H

#include "prog.h"

void fz_engine_run(const FzProg* p, FzStr* out);

/* Decodes data, runs the model and the engine and compares the traces.
 * Returns 0 when they agree (or the model declined the input: 1), and
 * prints the program and both traces then abort()s when they differ. */
int fz_check_input(const uint8_t* data, size_t size, int verbose);

#endif
