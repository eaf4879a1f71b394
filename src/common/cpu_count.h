/* SPDX-License-Identifier: MIT */
/*
 * The number of processors the system has online (cpu_count.c), for the
 * default size of the loop and worker pools.
 */
#ifndef FUTOIN_CPU_COUNT_H
#define FUTOIN_CPU_COUNT_H

#pragma GCC visibility push(hidden)

/* Processors online: sysconf(_SC_NPROCESSORS_ONLN), or GetSystemInfo() on
 * Windows; 0 when the system does not say. */
unsigned long futoin__cpu_count(void);

#pragma GCC visibility pop

#endif
