/* SPDX-License-Identifier: MIT */
/*
 * Real-time limits of the tests, scaled for slow machines.
 *
 * Most engine tests run on a virtual clock and need none of this. The tests
 * that wait on the real clock (libuv, threads, an outer poll() loop) take
 * their limits through futoin_test_ms():
 *
 *   FUTOIN_TEST_TIME_SCALE   a positive number (default 1) the limits are
 *                            multiplied by: "FUTOIN_TEST_TIME_SCALE=3 ctest"
 *                            on a machine that is busy with other work
 *   FUTOIN_TEST_VALGRIND=1   set by CMake for the tests of a valgrind build
 *                            (cmake/FutoinTest.cmake): a further factor of
 *                            FUTOIN_TEST_VALGRIND_FACTOR
 *
 * tests/time_scale.sh is the same for the shell tests.
 *
 * What is scaled: safety limits (how long a test waits before it calls a
 * hang a failure) and delays that must pass before something is expected.
 * What is not: a timeout that the test expects to fire is made certain to
 * fire by the test's design (the peer never answers), not by a margin of
 * time; lower bounds ("not before 50 ms") hold on any machine.
 */
#ifndef FUTOIN_TEST_TIME_SCALE_H
#define FUTOIN_TEST_TIME_SCALE_H

#include <math.h> /* isfinite(), a macro: no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* valgrind memcheck runs code 10-50 times slower; its threads take turns. */
#define FUTOIN_TEST_VALGRIND_FACTOR 10.0

/* The factor; a value of FUTOIN_TEST_TIME_SCALE that is not a positive
 * number stops the test at once: a silently ignored setting would leave
 * the limits that the user meant to raise. Read on every call (getenv()
 * is safe from any thread while nobody sets the environment). */
static inline double futoin_test_time_scale(void)
{
    double f = 1.0;
    const char* s = getenv("FUTOIN_TEST_TIME_SCALE");
    if (s && *s) {
        char* end = NULL;
        f = strtod(s, &end);
        if (end == s || *end != '\0' || !(f > 0.0) || !isfinite(f)) {
            fprintf(stderr, "FUTOIN_TEST_TIME_SCALE=%s: not a positive number\n", s);
            abort();
        }
    }
    const char* vg = getenv("FUTOIN_TEST_VALGRIND");
    if (vg && vg[0] == '1' && vg[1] == '\0') {
        f *= FUTOIN_TEST_VALGRIND_FACTOR;
    }
    return f;
}

/* ms scaled by the factor, rounded up (a limit is never cut to 0), at
 * most UINT32_MAX (the widest timeout of the API). */
static inline uint32_t futoin_test_ms(uint32_t ms)
{
    double v = (double)ms * futoin_test_time_scale();
    if (v >= (double)UINT32_MAX) {
        return UINT32_MAX;
    }
    uint32_t r = (uint32_t)v;
    return (double)r < v || (r == 0 && ms > 0) ? r + 1 : r;
}

#endif
