/* SPDX-License-Identifier: MIT */
/*
 * What the sync objects offer the subsystems above them: observe/ asks
 * where a flow waits in a Mutex, Throttle or Limiter. Everything else of
 * theirs is in sync_impl.h, for src/sync/ only.
 */
#ifndef FUTOIN_SYNC_INTERNAL_H
#define FUTOIN_SYNC_INTERNAL_H

#include <futoin/sync.h>

#include <stdint.h>

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

/* Introspection (src/observe/introspect.c): what a flow whose sync step has the
 * cancel handler (ch, data) waits for in sync. */
typedef struct SyncWaitPos {
    const char* kind; /* "Mutex", "Throttle", "Limiter" */
    int shared;
    uint32_t queue;    /* 0: not queued; 1: concurrency queue; 2: rate queue */
    uint32_t position; /* 1: first */
    uint32_t length;
} SyncWaitPos;
/* 1 if sync is a Mutex, Throttle or Limiter of this library (out filled,
 * the position when (ch, data) is one of its waiters), else 0. Takes a
 * shared object's lock. */
int futoin__sync_describe(const FutoInSync* sync, FutoInAsyncSteps_cancel_callback ch, void* data,
        SyncWaitPos* out);

#pragma GCC visibility pop

#endif
