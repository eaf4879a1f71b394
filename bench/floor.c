/* SPDX-License-Identifier: MIT */
/*
 * The floor F measured in-process: a FIFO ring of callback records; each
 * record is popped, called through its function pointer, and pushes its
 * successor: the cheapest "run the next thing" of an event loop.
 */
#include "bench.h"

#include <stdint.h>

typedef struct FloorRec FloorRec;
struct FloorRec {
    void (*fn)(FloorRec* r);
    void* data;
    uint64_t arg;
};

#define FLOOR_RING 1024u

static FloorRec floor_ring[FLOOR_RING];
static unsigned floor_head;
static unsigned floor_tail;
static uint64_t floor_left;
static volatile uint64_t floor_sink; /* keeps the work observable */
static uint64_t floor_acc;

static void floor_push(void (*fn)(FloorRec*), void* data, uint64_t arg)
{
    FloorRec* r = &floor_ring[floor_tail++ & (FLOOR_RING - 1)];
    r->fn = fn;
    r->data = data;
    r->arg = arg;
}

static void floor_step(FloorRec* r)
{
    floor_acc += r->arg;
    if (--floor_left) {
        floor_push(floor_step, r->data, r->arg + 1);
    }
}

double bench_floor_run(uint64_t n)
{
    floor_head = floor_tail = 0;
    floor_left = n;
    floor_acc = 0;
    floor_push(floor_step, 0, 1);
    double t0 = bench_now();
    while (floor_head != floor_tail) {
        FloorRec r = floor_ring[floor_head++ & (FLOOR_RING - 1)];
        r.fn(&r);
    }
    double dt = bench_now() - t0;
    floor_sink = floor_acc;
    return dt * 1e9 / (double)n;
}
