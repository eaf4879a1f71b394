/* SPDX-License-Identifier: MIT */
/*
 * Compiler hints shared by every subsystem. They change code placement
 * and inlining only, never behaviour, and expand to nothing on compilers
 * without the GNU extensions.
 *
 * The step, loop and timer paths are tuned with them against instruction
 * counts (bench/callgrind.sh): a hint here is a measured choice, so
 * changing one means measuring again.
 */
#ifndef FUTOIN_COMPILER_H
#define FUTOIN_COMPILER_H

#if defined(__GNUC__) || defined(__clang__)
/* Kept out of line: a slow path that would bloat its hot caller. */
#define FUTOIN_NOINLINE __attribute__((noinline))
/* Inlined even where the heuristics would not: a hot path's helper. */
#define FUTOIN_ALWAYS_INLINE inline __attribute__((always_inline))
/* An error or misuse path: out of line, laid out away from hot code. */
#define FUTOIN_COLD __attribute__((cold, noinline))
#define FUTOIN_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* The path a hot loop takes: laid out straight, without a jump. */
#define FUTOIN_LIKELY(x) __builtin_expect(!!(x), 1)
/* printf-style arguments, checked by -Wformat. With mingw-w64 the build
 * takes its C99 printf (__USE_MINGW_ANSI_STDIO, set by CMakeLists.txt),
 * whose formats (%zu, %lld) are GNU's, not those of msvcrt's printf. */
#ifdef __MINGW32__
#define FUTOIN_PRINTF(fmt, first) __attribute__((format(gnu_printf, fmt, first)))
#else
#define FUTOIN_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#endif
#else
#define FUTOIN_NOINLINE
#define FUTOIN_ALWAYS_INLINE inline
#define FUTOIN_COLD
#define FUTOIN_UNLIKELY(x) (x)
#define FUTOIN_LIKELY(x) (x)
#define FUTOIN_PRINTF(fmt, first)
#endif

#endif
