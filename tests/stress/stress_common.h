/* SPDX-License-Identifier: MIT */
/* Shared bits of the stress programs (not CTest tests: scripts/stress.sh). */
#ifndef FUTOIN_STRESS_COMMON_H
#define FUTOIN_STRESS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* xorshift64*: deterministic, seedable. */
static uint64_t stress_rng_state = 0x9E3779B97F4A7C15u;
static inline uint64_t stress_rand(void)
{
    uint64_t x = stress_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    stress_rng_state = x;
    return x * 0x2545F4914F6CDD1Du;
}

static inline void stress_shuffle(uint32_t* v, size_t n)
{
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(stress_rand() % i);
        uint32_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static inline long stress_peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss; /* KiB on Linux */
}

static inline size_t stress_count(int argc, char** argv, size_t dflt)
{
    return argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : dflt;
}

#define STRESS_CHECK(cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "STRESS FAILURE: ");                                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
