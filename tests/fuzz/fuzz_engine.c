/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry point: the input bytes are a program of the step language
 * (prog.h); it runs on the engine and on the reference model, and any
 * difference in the trace or the outcome abort()s (see engine_run.c).
 */
#include "engine_run.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size > 512) {
        return 0; /* the decoder reads far less; keep inputs small */
    }
    fz_check_input(data, size, 0);
    return 0;
}
