/* SPDX-License-Identifier: MIT */
/* The library's side of the process-wide log handler
 * (futoin_set_log_handler(), include/futoin/asynctool.h): every line the
 * library prints goes through it. */
#ifndef FUTOIN_LOG_H
#define FUTOIN_LOG_H

#include <futoin/asynctool.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* "futoin: API misuse: <info>" as a FUTOIN_LOG_MISUSE line: what a loop
 * without a misuse handler of its own reports. */
void futoin__log_misuse(const char* info);

/* "futoin: <report>" as a FUTOIN_LOG_WARNING line: an error that escaped a
 * root executed without an unhandled-error callback, on a loop without a
 * misuse handler of its own (report: "unhandled error CODE (INFO)"). */
void futoin__log_unhandled(const char* report);

/* The current handler and its data (consistent with each other). */
FutoInLogHandler futoin__log_handler(void** data);

#pragma GCC visibility pop

#endif
