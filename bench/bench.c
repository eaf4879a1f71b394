/* SPDX-License-Identifier: MIT */
/*
 * futoin_bench: the project's performance yardstick.
 *
 * Measures the floor F in-process (a ring of callback records, see floor.c),
 * then every workload with a warm-up run and the median of BENCH_REPS
 * repetitions on a real-clock loop, and prints one row per workload:
 * ns/op, ratio to F, the target ratio, malloc calls per op in steady state
 * (counted by malloc_count.c during the measured repetitions only), peak RSS
 * of the workload (VmHWM after resetting it through /proc/self/clear_refs)
 * and PASS/MISS.
 *
 *   futoin_bench                      full run
 *   futoin_bench --quick              every size x0.1 (or FUTOIN_BENCH_SCALE=x)
 *   futoin_bench --reps N             N repetitions (default 7, at least 5)
 *   futoin_bench --only a,b           only the named workloads (see --list)
 *   futoin_bench --run NAME N         run one workload once with N units, no
 *                                     timing (for callgrind / perf); NAME may
 *                                     also be "floor" (N records)
 *   futoin_bench --callgrind-simple N = --run simple N    (N roots)
 *   futoin_bench --callgrind-chain N  = --run chain100 N/100 (N steps)
 *
 * A build configured with -DFUTOIN_BENCH_BASELINE=FILE.c also builds the
 * external baseline program FILE.c (futoin_baseline) and prints its
 * ns/step after F; by default there is none.
 */
#include "bench.h"

#include <futoin/asyncsteps.h>
#include <futoin/sync.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim() */
#endif

#define BENCH_REPS 7
#define MAX_REPS 101
#define PARKED_ROOTS 30000u
#define MEMORY_ROOTS 1000000u
#define PENDING_TIMERS 1000000u

/* ------------------------------------------------------------------------ */
/* Utilities                                                                  */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b)
{
    double x = *(const double*)a;
    double y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static double median(double* v, unsigned n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A /proc/self/status field in KiB, -1 if unavailable. */
static long proc_status_kb(const char* field)
{
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) {
        return -1;
    }
    char line[256];
    size_t flen = strlen(field);
    long kb = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
            kb = strtol(line + flen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

static int g_hwm_resettable = -1;

/* Resets the peak RSS (VmHWM) so that it covers the next workload only. */
static void hwm_reset(void)
{
    FILE* f = fopen("/proc/self/clear_refs", "w");
    int ok = 0;
    if (f) {
        ok = fputs("5", f) >= 0;
        ok = (fclose(f) == 0) && ok;
    }
    if (g_hwm_resettable < 0) {
        g_hwm_resettable = ok;
    }
}

/* Peak RSS in KiB since the last reset (or of the process). */
static long peak_rss_kb(void)
{
    long kb = proc_status_kb("VmHWM");
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = ru.ru_maxrss;
    }
    return kb;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rng_next(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static double g_scale = 1.0;

static uint64_t scaled(uint64_t n)
{
    uint64_t v = (uint64_t)((double)n * g_scale);
    return v ? v : 1;
}

/* ------------------------------------------------------------------------ */
/* Step callbacks                                                             */

static FutoInLoop* L;
static FutoInAsyncSteps* R; /* reused root */
static uint64_t g_cnt;
static uint64_t g_sum;

static void st_noop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    ++*(uint64_t*)data;
}

static void eh_unused(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    (void)code;
    bench_check(0, "error handler called without an error");
}

static void st_raise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "BenchError", NULL);
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    if (code[0] == 'B') {
        ++*(uint64_t*)data;
    }
    futoin_success(as);
}

static void rep_body(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    (void)i;
    ++*(uint64_t*)data;
}

static void st_repeat(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_repeat(as, 1000, rep_body, data, NULL);
}

static int g_array[1000];

static void fe_body(FutoInAsyncSteps* as, void* data, size_t i, const void* elem)
{
    (void)as;
    (void)i;
    g_sum += (uint64_t) * (const int*)elem;
    ++*(uint64_t*)data;
}

static void st_foreach(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_foreach_array(as, g_array, 1000, sizeof(int), fe_body, data, NULL);
}

static unsigned g_par_n;

static void st_par(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (unsigned b = 0; b < g_par_n; ++b) {
        futoin_add(p, st_noop, NULL, data);
    }
}

static void st_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_timeout(as, 10000);
    ++*(uint64_t*)data;
    futoin_success(as);
}

/* ------------------------------------------------------------------------ */
/* Common setup: a real-clock loop and one reusable root                      */

static void setup_loop_root(void)
{
    L = futoin_loop_new();
    R = futoin_asyncsteps_new(L);
    if (!L || !R) {
        fprintf(stderr, "futoin_bench: out of memory\n");
        exit(1);
    }
}

static void teardown_loop_root(void)
{
    futoin_asyncsteps_free(R);
    R = NULL;
    futoin_loop_free(L);
    L = NULL;
}

static void setup_loop(void)
{
    L = futoin_loop_new();
}

static void teardown_loop(void)
{
    futoin_loop_free(L);
    L = NULL;
}

/* Runs R's queued steps to completion on the loop. */
static void run_root(void)
{
    futoin_execute(R, NULL, NULL);
    futoin_loop_run(L);
}

/* ---- simple: new root, one step, execute, run loop, free ---------------- */

static uint64_t run_simple(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(L);
        futoin_add(r, st_noop, NULL, &g_cnt);
        futoin_execute(r, NULL, NULL);
        futoin_loop_run(L);
        futoin_asyncsteps_free(r);
    }
    bench_check(g_cnt - before == n, "simple: step count");
    return n;
}

/* The same through the raw ABI table. */
static uint64_t run_simple_abi(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        FutoInAsyncSteps* r = futoin_asyncsteps_new(L);
        r->api->add(r, &g_cnt, st_noop, NULL);
        r->api->execute(r, NULL, NULL);
        futoin_loop_run(L);
        r->api->free(r);
    }
    bench_check(g_cnt - before == n, "simple_abi: step count");
    return n;
}

/* ---- chains of 100 top-level steps on a reused root ---------------------- */

static uint64_t run_chain_of(uint64_t chains, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh, const char* what)
{
    uint64_t before = g_cnt;
    for (uint64_t c = 0; c < chains; ++c) {
        for (int k = 0; k < 100; ++k) {
            futoin_add(R, f, eh, &g_cnt);
        }
        run_root();
    }
    bench_check(g_cnt - before == chains * 100, what);
    return chains * 100;
}

static uint64_t run_chain(uint64_t n)
{
    return run_chain_of(n, st_noop, NULL, "chain100: step count");
}

static uint64_t run_eh(uint64_t n)
{
    return run_chain_of(n, st_noop, eh_unused, "add+eh: step count");
}

/* Chains of 100 steps with owned data (futoin_add_owned()): each step's
 * destructor runs once, from the pooled record. */
static uint64_t g_destroyed;

static void owned_destroy(void* data)
{
    (void)data;
    ++g_destroyed;
}

static uint64_t run_owned(uint64_t n)
{
    uint64_t before = g_cnt;
    uint64_t destroyed = g_destroyed;
    for (uint64_t c = 0; c < n; ++c) {
        for (int k = 0; k < 100; ++k) {
            futoin_add_owned(R, st_noop, NULL, &g_cnt, owned_destroy);
        }
        run_root();
    }
    bench_check(g_cnt - before == n * 100 && g_destroyed - destroyed == n * 100,
            "owned100: step and destructor count");
    return n * 100;
}

static uint64_t run_error(uint64_t n)
{
    return run_chain_of(n, st_raise, eh_recover, "error+recover: recovery count");
}

static uint64_t run_settimeout(uint64_t n)
{
    uint64_t r = run_chain_of(n, st_timeout, NULL, "setTimeout: step count");
    bench_check(futoin_loop_pending(L) == 0, "setTimeout: timers left pending");
    return r;
}

/* ---- loops ---------------------------------------------------------------- */

static uint64_t run_repeat(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        futoin_add(R, st_repeat, NULL, &g_cnt);
        run_root();
    }
    bench_check(g_cnt - before == n * 1000, "repeat: iteration count");
    return n * 1000;
}

static uint64_t run_foreach(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        futoin_add(R, st_foreach, NULL, &g_cnt);
        run_root();
    }
    bench_check(g_cnt - before == n * 1000, "forEach: element count");
    return n * 1000;
}

/* ---- parallel: each execution runs 100 branches in all -------------------- */

static uint64_t run_parallel(uint64_t n)
{
    uint64_t before = g_cnt;
    unsigned per_exec = 100 / g_par_n;
    for (uint64_t i = 0; i < n; ++i) {
        for (unsigned k = 0; k < per_exec; ++k) {
            futoin_add(R, st_par, NULL, &g_cnt);
        }
        run_root();
    }
    bench_check(g_cnt - before == n * per_exec * g_par_n, "parallel: branch count");
    return n * per_exec * g_par_n;
}

static void setup_par2(void)
{
    g_par_n = 2;
    setup_loop_root();
}

static void setup_par10(void)
{
    g_par_n = 10;
    setup_loop_root();
}

static void setup_par100(void)
{
    g_par_n = 100;
    setup_loop_root();
}

/* ---- bounded parallel: 1,000 items, 8 at a time; one op is an item ------ */

#define BD_ITEMS 1000u
#define BD_K 8u

static FutoInSync* g_bd_mutex;
static int64_t g_bd_sum;

/* The item of both versions: it succeeds at once with its index. */
static void bd_item(FutoInAsyncSteps* as, void* data, size_t i)
{
    ++*(uint64_t*)data;
    futoin_success1(as, futoin_val_i32((int32_t)i));
}

static void bd_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    const FutoInBoundedResult* res = futoin_bounded_result(args);
    bench_check(res && res->count == BD_ITEMS && !res->failed, "bounded: outcomes");
    for (size_t i = 0; res && i < res->count; ++i) {
        g_bd_sum += res->items[i].args.arg0.i32;
    }
}

static uint64_t bd_expected_sum(uint64_t n)
{
    return n * ((uint64_t)BD_ITEMS * (BD_ITEMS - 1) / 2);
}

/* futoin_parallel_bounded(): every outcome kept, the next step reads them. */
static uint64_t run_bounded(uint64_t n)
{
    uint64_t before = g_cnt;
    g_bd_sum = 0;
    for (uint64_t i = 0; i < n; ++i) {
        futoin_parallel_bounded(R, BD_ITEMS, BD_K, bd_item, &g_cnt, FUTOIN_BOUNDED_ALL_SETTLED);
        futoin_add(R, bd_check, NULL, NULL);
        run_root();
    }
    bench_check(g_cnt - before == n * BD_ITEMS && (uint64_t)g_bd_sum == bd_expected_sum(n),
            "bounded: item count");
    return n * BD_ITEMS;
}

/* The same written by hand with what the API had before: parallel() with a
 * branch per item, a Mutex(8) around each item, and an error handler per
 * branch that records its outcome in an array the program allocates. */
typedef struct HandOutcome {
    int32_t value;
    int failed;
    char code[32];
    char info[96];
} HandOutcome;

static HandOutcome* g_hand_out;

static void hand_section(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    bd_item(as, &g_cnt, (size_t)(uintptr_t)data);
}

static void hand_record(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    g_hand_out[(uintptr_t)data].value = futoin_arg_i32(args, 0, -1);
}

static void hand_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    HandOutcome* o = &g_hand_out[(uintptr_t)data];
    o->failed = 1;
    snprintf(o->code, sizeof(o->code), "%s", code);
    snprintf(o->info, sizeof(o->info), "%s", futoin_error_info(as));
    futoin_success(as);
}

static void hand_branch(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_sync(as, g_bd_mutex, hand_section, NULL, data);
    futoin_add(as, hand_record, NULL, data);
}

static void hand_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    g_hand_out = calloc(BD_ITEMS, sizeof(HandOutcome));
    bench_check(g_hand_out != NULL, "bounded_hand: out of memory");
    FutoInAsyncSteps* p = futoin_parallel(as, NULL, NULL);
    for (uintptr_t i = 0; i < BD_ITEMS; ++i) {
        futoin_add(p, hand_branch, hand_eh, (void*)i);
    }
}

static void hand_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    for (size_t i = 0; i < BD_ITEMS; ++i) {
        bench_check(!g_hand_out[i].failed, "bounded_hand: outcomes");
        g_bd_sum += g_hand_out[i].value;
    }
    free(g_hand_out);
    g_hand_out = NULL;
}

static uint64_t run_bounded_hand(uint64_t n)
{
    uint64_t before = g_cnt;
    g_bd_sum = 0;
    for (uint64_t i = 0; i < n; ++i) {
        futoin_add(R, hand_start, NULL, NULL);
        futoin_add(R, hand_check, NULL, NULL);
        run_root();
    }
    bench_check(g_cnt - before == n * BD_ITEMS && (uint64_t)g_bd_sum == bd_expected_sum(n),
            "bounded_hand: item count");
    return n * BD_ITEMS;
}

/* Both versions share the root and the Mutex (measured interleaved). */
static void setup_bounded(void)
{
    setup_loop_root();
    g_bd_mutex = futoin_mutex_new(L, BD_K, FUTOIN_SYNC_UNLIMITED);
    if (!g_bd_mutex) {
        fprintf(stderr, "futoin_bench: out of memory\n");
        exit(1);
    }
}

static void teardown_bounded(void)
{
    bench_check(futoin_sync_free(g_bd_mutex) == FUTOIN_SYNC_OK, "bounded: Mutex still busy");
    g_bd_mutex = NULL;
    teardown_loop_root();
}

/* ---- parked roots: loop body parks in waitExternal, a driver resumes ----- */

static FutoInAsyncSteps** pk_roots;
static FutoInAsyncSteps** pk_cur; /* parked since the driver last ran */
static FutoInAsyncSteps** pk_spare;
static size_t pk_n;
static size_t pk_count;
static uint64_t pk_remaining;
static uint64_t pk_resumed;
static int64_t pk_valsum;

static void pk_body(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    futoin_wait_external(as);
    pk_cur[pk_n++] = as;
}

static void st_pk_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, pk_body, data, NULL);
}

static void pk_driver(void* data)
{
    (void)data;
    FutoInAsyncSteps** list = pk_cur;
    size_t n = pk_n;
    pk_cur = pk_spare;
    pk_spare = list;
    pk_n = 0;
    for (size_t i = 0; i < n; ++i) {
        if (pk_remaining) {
            --pk_remaining;
            ++pk_resumed;
            pk_valsum += (int32_t)i;
            futoin_success1(list[i], futoin_val_i32((int32_t)i));
        } else {
            pk_cur[pk_n++] = list[i];
        }
    }
    if (pk_remaining) {
        futoin_loop_immediate(L, NULL, pk_driver);
    }
}

static void setup_parked(void)
{
    setup_loop();
    pk_count = PARKED_ROOTS;
    pk_roots = malloc(sizeof(*pk_roots) * pk_count);
    pk_cur = malloc(sizeof(*pk_cur) * pk_count);
    pk_spare = malloc(sizeof(*pk_spare) * pk_count);
    pk_n = 0;
    for (size_t i = 0; i < pk_count; ++i) {
        pk_roots[i] = futoin_asyncsteps_new(L);
        futoin_add(pk_roots[i], st_pk_loop, NULL, NULL);
        futoin_execute(pk_roots[i], NULL, NULL);
    }
    futoin_loop_run(L);
    bench_check(pk_n == pk_count, "parked: not every root parked");
}

static uint64_t run_parked(uint64_t n)
{
    pk_remaining = n;
    pk_resumed = 0;
    futoin_loop_immediate(L, NULL, pk_driver);
    futoin_loop_run(L);
    bench_check(pk_resumed == n && pk_n == pk_count, "parked: resume count");
    return n;
}

static void teardown_parked(void)
{
    for (size_t i = 0; i < pk_count; ++i) {
        futoin_asyncsteps_free(pk_roots[i]);
    }
    free(pk_roots);
    free(pk_cur);
    free(pk_spare);
    pk_roots = pk_cur = pk_spare = NULL;
    teardown_loop();
}

/* ---- timers: schedule + cancel with 1,000,000 pending (loop API) --------- */

static uint64_t tm_n;

static void tm_cb(void* data)
{
    (void)data;
    bench_check(0, "timers: a timer fired");
}

static uint32_t tm_delay(void)
{
    return 60000u + rng_next() % 3600000u; /* 1 min .. 61 min */
}

static void tm_populate(void* data)
{
    (void)data;
    for (uint32_t i = 0; i < PENDING_TIMERS; ++i) {
        futoin_loop_deferred(L, tm_delay(), NULL, tm_cb);
    }
}

/* Inside a loop round, where schedulers normally run (cached clock). */
static void tm_pairs(void* data)
{
    (void)data;
    for (uint64_t i = 0; i < tm_n; ++i) {
        FutoInHandle h = futoin_loop_deferred(L, tm_delay(), NULL, tm_cb);
        futoin_loop_cancel(L, &h);
    }
}

static void setup_timers(void)
{
    setup_loop();
    futoin_loop_immediate(L, NULL, tm_populate);
    futoin_loop_iterate(L, NULL);
    bench_check(futoin_loop_pending(L) == PENDING_TIMERS, "timers: pending count");
}

static uint64_t run_timers(uint64_t n)
{
    tm_n = n;
    futoin_loop_immediate(L, NULL, tm_pairs);
    futoin_loop_iterate(L, NULL);
    bench_check(futoin_loop_pending(L) == PENDING_TIMERS, "timers: pending count");
    return n;
}

/* ------------------------------------------------------------------------ */
/* Workload table                                                             */

static const BenchWorkload g_core[] = {
    { "simple", "root", setup_loop, run_simple, teardown_loop, 300000, 30000, 4.0, 0, "<=4F", 0 },
    { "chain100", "step", setup_loop_root, run_chain, teardown_loop_root, 20000, 2000, 1.2, 1,
            "<=1.2F, 0 malloc", 0 },
    { "add+eh", "step", setup_loop_root, run_eh, teardown_loop_root, 20000, 2000, 0, 1, "0 malloc",
            0 },
    { "owned100", "step", setup_loop_root, run_owned, teardown_loop_root, 20000, 2000, 0, 1,
            "0 malloc", 0 },
    { "error+recover", "error", setup_loop_root, run_error, teardown_loop_root, 5000, 500, 0, 1,
            "0 malloc", 0 },
    { "repeat1000", "iter", setup_loop_root, run_repeat, teardown_loop_root, 2000, 200, 0.6, 1,
            "<=0.6F, 0 malloc", 0 },
    { "forEach1000", "elem", setup_loop_root, run_foreach, teardown_loop_root, 2000, 200, 0, 1,
            "0 malloc", 0 },
    { "parallel2", "branch", setup_par2, run_parallel, teardown_loop_root, 10000, 1000, 8.0, 1,
            "<=8F, 0 malloc", 0 },
    { "parallel10", "branch", setup_par10, run_parallel, teardown_loop_root, 10000, 1000, 8.0, 1,
            "<=8F, 0 malloc", 0 },
    { "parallel100", "branch", setup_par100, run_parallel, teardown_loop_root, 10000, 1000, 8.0, 1,
            "<=8F, 0 malloc", 0 },
    { "parked30k", "resume", setup_parked, run_parked, teardown_parked, 2000000, 300000, 6.0, 1,
            "<=6F, 0 malloc", 0 },
    { "setTimeout", "step", setup_loop_root, run_settimeout, teardown_loop_root, 10000, 1000, 0, 1,
            "0 malloc", 0 },
    { "timer1M", "pair", setup_timers, run_timers, teardown_loop, 2000000, 200000, 10.0, 1,
            "<=10F, 0 malloc", 0 },
    { "simple_abi", "root", setup_loop, run_simple_abi, teardown_loop, 300000, 30000, 0, 0,
            "~C API", 0 },
    { "bounded1000", "item", setup_bounded, run_bounded, teardown_bounded, 300, 30, 0, 0,
            "vs hand-written", 0 },
    { "bounded1000_hand", "item", setup_bounded, run_bounded_hand, teardown_bounded, 300, 30, 0, 0,
            "parallel+Mutex(8)", 0 },
};
#define N_CORE (sizeof(g_core) / sizeof(g_core[0]))

/* ------------------------------------------------------------------------ */
/* Measuring and printing                                                     */

typedef struct Result {
    double ns;
    double mallocs;
    long peak_kb;
    const char* check;
} Result;

static double g_floor;

static unsigned g_reps = BENCH_REPS;

/* Measures w, and partner (same setup/teardown) interleaved repetition by
 * repetition when given, so that both see the same machine noise. */
static void measure2(const BenchWorkload* w, const BenchWorkload* partner, Result* out,
        Result* pout)
{
    const BenchWorkload* ws[2] = { w, partner };
    unsigned nw = partner ? 2 : 1;
    double v[2][MAX_REPS];
    unsigned long long allocs[2] = { 0, 0 };
    uint64_t ops_total[2] = { 0, 0 };
    bench_check_reset();
    hwm_reset();
    w->setup();
    for (unsigned k = 0; k < nw; ++k) {
        ws[k]->run(scaled(ws[k]->warm_n));
    }
    for (unsigned r = 0; r < g_reps; ++r) {
        for (unsigned k = 0; k < nw; ++k) {
            double (*clk)(void) = ws[k]->cpu_time ? cpu_now : bench_now;
            unsigned long long a0 = bench_alloc_calls();
            double t0 = clk();
            uint64_t ops = ws[k]->run(scaled(ws[k]->n));
            double dt = clk() - t0;
            allocs[k] += bench_alloc_calls() - a0;
            ops_total[k] += ops;
            v[k][r] = dt * 1e9 / (double)ops;
        }
    }
    long peak = peak_rss_kb();
    w->teardown();
    Result* outs[2] = { out, pout };
    for (unsigned k = 0; k < nw; ++k) {
        outs[k]->ns = median(v[k], g_reps);
        outs[k]->mallocs = (double)allocs[k] / (double)ops_total[k];
        outs[k]->peak_kb = peak;
        outs[k]->check = bench_check_failed();
    }
}

static Result measure(const BenchWorkload* w)
{
    Result r;
    measure2(w, NULL, &r, NULL);
    return r;
}

static void print_header(void)
{
    printf("%-18s %-7s %9s %7s  %-17s %10s %10s  %s\n", "workload", "per", "ns/op", "xF", "target",
            "malloc/op", "peakRSS", "verdict");
    printf("%.*s\n", 100,
            "-----------------------------------------------------------------------------"
            "-----------------------------------------");
}

static void print_row(const BenchWorkload* w, const Result* r, const char* verdict_override,
        const char* target_text)
{
    double ratio = r->ns / g_floor;
    const char* verdict = "-";
    char buf[64];
    int time_ok = w->target <= 0 || ratio <= w->target;
    int malloc_ok = !w->zero_malloc || r->mallocs == 0 || !bench_alloc_counting();
    if (w->target > 0 || w->zero_malloc) {
        if (time_ok && malloc_ok) {
            verdict = "PASS";
        } else {
            snprintf(buf, sizeof(buf), "MISS(%s%s%s)", time_ok ? "" : "time",
                    (!time_ok && !malloc_ok) ? "," : "", malloc_ok ? "" : "malloc");
            verdict = buf;
        }
    }
    if (verdict_override) {
        verdict = verdict_override;
    }
    char mallocs[32];
    if (bench_alloc_counting()) {
        snprintf(mallocs, sizeof(mallocs), "%.4g", r->mallocs);
    } else {
        snprintf(mallocs, sizeof(mallocs), "n/a");
    }
    printf("%-18s %-7s %9.2f %7.2f  %-17s %10s %8ldKi  %s", w->name, w->per, r->ns, ratio,
            target_text ? target_text : w->target_text, mallocs, r->peak_kb, verdict);
    if (r->check) {
        printf("  CHECK FAILED: %s", r->check);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- memory per parked root ---------------------------------------------- */

static void mem_body(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    futoin_wait_external(as);
}

static void st_mem_loop(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, mem_body, data, NULL);
}

/* The same parked loop inside a step with an error handler, the usual way
 * to catch a loop's errors: the handler's step keeps its node and a frame. */
static void eh_mem_unused(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    (void)code;
}

static void run_memory(const char* name, FutoInAsyncSteps_error_callback eh)
{
    size_t n = (size_t)scaled(MEMORY_ROOTS);
    FutoInAsyncSteps** roots = calloc(n, sizeof(*roots));
    memset(roots, 1, n * sizeof(*roots)); /* touch: not part of the delta */
    bench_check_reset();
    hwm_reset();
    setup_loop();
#ifdef __GLIBC__
    /* Pages freed by earlier workloads (an earlier memory run above all)
     * would otherwise be reused without showing in the RSS delta. */
    malloc_trim(0);
#endif
    long rss0 = proc_status_kb("VmRSS");
    unsigned long long a0 = bench_alloc_calls();
    unsigned long long b0 = bench_alloc_bytes();
    double t0 = bench_now();
    for (size_t i = 0; i < n; ++i) {
        roots[i] = futoin_asyncsteps_new(L);
        futoin_add(roots[i], st_mem_loop, eh, NULL);
        futoin_execute(roots[i], NULL, NULL);
    }
    futoin_loop_run(L);
    double dt = bench_now() - t0;
    long rss1 = proc_status_kb("VmRSS");
    unsigned long long allocs = bench_alloc_calls() - a0;
    unsigned long long bytes = bench_alloc_bytes() - b0;
    bench_check(futoin_loop_pending(L) == 0, "memory: roots did not park");
    long peak = peak_rss_kb();
    double t1 = bench_now();
    for (size_t i = 0; i < n; ++i) {
        futoin_asyncsteps_free(roots[i]);
    }
    double dt_free = bench_now() - t1;
    teardown_loop();
    free(roots);
    double per_root = (double)(rss1 - rss0) * 1024.0 / (double)n;
    printf("%-18s %-7s %9.1f %7s  %-17s %10.4g %8ldKi  %s", name, "root", per_root, "B",
            eh ? "(for comparison)" : "<=128 B/root", (double)allocs / (double)n, peak,
            eh                        ? "-"
                    : per_root <= 128 ? "PASS"
                                      : "MISS(size)");
    if (bench_check_failed()) {
        printf("  CHECK FAILED: %s", bench_check_failed());
    }
    printf("\n   (%zu parked roots: RSS +%ld KiB; heap requested %.0f B/root in %.2f mallocs;"
           " create+park %.0f ns/root, free %.0f ns/root)\n",
            n, rss1 - rss0, (double)bytes / (double)n, (double)allocs / (double)n,
            dt * 1e9 / (double)n, dt_free * 1e9 / (double)n);
    fflush(stdout);
}

/* ---- floor ---------------------------------------------------------------- */

static double measure_floor(void)
{
    uint64_t n = scaled(20000000);
    double v[MAX_REPS];
    bench_floor_run(n);
    for (unsigned r = 0; r < g_reps; ++r) {
        v[r] = bench_floor_run(n);
    }
    return median(v, g_reps);
}

/* The external baseline program, when the build names one
 * (cmake -DFUTOIN_BENCH_BASELINE=FILE.c): run with the number of steps, it
 * prints "baseline_ns_per_step X". Without one, nothing is printed. */
static void run_external_baseline(void)
{
#ifdef FUTOIN_BASELINE_PATH
    char cmd[1024];
    unsigned long long n = (unsigned long long)scaled(100000000);
    snprintf(cmd, sizeof(cmd), "'%s' %llu 2>/dev/null", FUTOIN_BASELINE_PATH, n);
    FILE* p = popen(cmd, "r");
    double ns = -1;
    if (p) {
        char line[256];
        while (fgets(line, sizeof(line), p)) {
            sscanf(line, "baseline_ns_per_step %lf", &ns);
        }
        pclose(p);
    }
    if (ns > 0) {
        printf("F (external baseline, separate process): %.3f ns/step\n", ns);
    } else {
        printf("F (external baseline): could not run %s\n", FUTOIN_BASELINE_PATH);
    }
#endif
}

static void print_machine(void)
{
    FILE* f = fopen("/proc/cpuinfo", "r");
    char line[256];
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char* c = strchr(line, ':');
                printf("cpu:%s", c ? c + 1 : line);
                break;
            }
        }
        fclose(f);
    }
}

/* ------------------------------------------------------------------------ */

static int selected(const char* only, const char* name)
{
    if (!only) {
        return 1;
    }
    size_t len = strlen(name);
    for (const char* p = only; *p;) {
        const char* e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && strncmp(p, name, l) == 0) {
            return 1;
        }
        p += l + (e ? 1 : 0);
    }
    return 0;
}

static const BenchWorkload* find_workload(const char* name)
{
    for (unsigned i = 0; i < N_CORE; ++i) {
        if (strcmp(g_core[i].name, name) == 0) {
            return &g_core[i];
        }
    }
    unsigned ns = 0;
    const BenchWorkload* s = bench_sync_workloads(&ns);
    for (unsigned i = 0; i < ns; ++i) {
        if (strcmp(s[i].name, name) == 0) {
            return &s[i];
        }
    }
    return NULL;
}

/* One untimed run for instruction counting. */
static int run_once(const char* name, uint64_t n)
{
    if (strcmp(name, "floor") == 0) {
        bench_floor_run(n ? n : 1);
        printf("floor: %llu ops\n", (unsigned long long)(n ? n : 1));
        return 0;
    }
    if (strcmp(name, "memory_parked") == 0) {
        g_scale = (double)n / MEMORY_ROOTS;
        run_memory(name, NULL);
        return 0;
    }
    if (strcmp(name, "memory_parked_eh") == 0) {
        g_scale = (double)n / MEMORY_ROOTS;
        run_memory(name, eh_mem_unused);
        return 0;
    }
    const BenchWorkload* w = find_workload(name);
    if (!w) {
        fprintf(stderr, "futoin_bench: unknown workload %s (see --list)\n", name);
        return 2;
    }
    w->setup();
    uint64_t ops = w->run(n ? n : 1);
    w->teardown();
    printf("%s: %llu ops\n", name, (unsigned long long)ops);
    if (bench_check_failed()) {
        printf("CHECK FAILED: %s\n", bench_check_failed());
        return 1;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: futoin_bench [--quick | --scale X] [--reps N] [--only a,b,...]\n"
            "       futoin_bench --list\n"
            "       futoin_bench --run NAME N\n"
            "       futoin_bench --callgrind-simple N   (N roots)\n"
            "       futoin_bench --callgrind-chain N    (N steps, chains of 100)\n"
            "env: FUTOIN_BENCH_SCALE=x scales every size (default 1)\n");
}

int main(int argc, char** argv)
{
    const char* only = NULL;
    const char* env = getenv("FUTOIN_BENCH_SCALE");
    if (env && atof(env) > 0) {
        g_scale = atof(env);
    }
    for (int i = 0; i < 1000; ++i) {
        g_array[i] = i;
    }
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            g_scale = 0.1;
        } else if (strcmp(a, "--scale") == 0 && i + 1 < argc) {
            g_scale = atof(argv[++i]);
            if (g_scale <= 0) {
                g_scale = 1;
            }
        } else if (strcmp(a, "--reps") == 0 && i + 1 < argc) {
            g_reps = (unsigned)atoi(argv[++i]);
            if (g_reps < 5) {
                g_reps = 5;
            }
            if (g_reps > MAX_REPS) {
                g_reps = MAX_REPS;
            }
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(a, "--list") == 0) {
            for (unsigned k = 0; k < N_CORE; ++k) {
                printf("%s\n", g_core[k].name);
            }
            unsigned ns = 0;
            const BenchWorkload* s = bench_sync_workloads(&ns);
            for (unsigned k = 0; k < ns; ++k) {
                printf("%s\n", s[k].name);
            }
            printf("memory_parked\nmemory_parked_eh\n");
            return 0;
        } else if (strcmp(a, "--run") == 0 && i + 2 < argc) {
            return run_once(argv[i + 1], strtoull(argv[i + 2], NULL, 10));
        } else if (strcmp(a, "--callgrind-simple") == 0 && i + 1 < argc) {
            return run_once("simple", strtoull(argv[i + 1], NULL, 10));
        } else if (strcmp(a, "--callgrind-chain") == 0 && i + 1 < argc) {
            uint64_t steps = strtoull(argv[i + 1], NULL, 10);
            return run_once("chain100", (steps + 99) / 100);
        } else {
            usage();
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }

    double t_start = bench_now();
    printf("futoin_bench: median of %u runs after a warm-up; scale %g; real-clock loop;"
           " burst default\n",
            g_reps, g_scale);
    print_machine();
    g_floor = measure_floor();
    printf("F (in-process floor: ring of callback records): %.3f ns/step\n", g_floor);
    run_external_baseline();
    if (!g_hwm_resettable) {
        printf("note: peak RSS is process-wide (cannot reset VmHWM)\n");
    }
    printf("\n");
    print_header();

    const BenchWorkload* w_simple = find_workload("simple");
    const BenchWorkload* w_abi = find_workload("simple_abi");
    int pair = selected(only, "simple") && selected(only, "simple_abi");
    const BenchWorkload* w_bounded = find_workload("bounded1000");
    const BenchWorkload* w_hand = find_workload("bounded1000_hand");
    int bounded_pair = selected(only, "bounded1000") && selected(only, "bounded1000_hand");
    for (unsigned i = 0; i < N_CORE; ++i) {
        const BenchWorkload* w = &g_core[i];
        if (!selected(only, w->name) || (pair && w == w_abi) || (bounded_pair && w == w_hand)) {
            continue;
        }
        if (bounded_pair && w == w_bounded) {
            /* The helper against the same work written by hand, interleaved. */
            Result rb;
            Result rh;
            char target[64];
            measure2(w_bounded, w_hand, &rb, &rh);
            snprintf(target, sizeof(target), "x%.3f hand", rb.ns / rh.ns);
            print_row(w_bounded, &rb, NULL, target);
            print_row(w_hand, &rh, NULL, NULL);
            continue;
        }
        if (pair && w == w_simple) {
            /* The ABI row is measured interleaved with the C API row. */
            Result rs;
            Result ra;
            char target[64];
            measure2(w_simple, w_abi, &rs, &ra);
            print_row(w_simple, &rs, NULL, NULL);
            double rel = ra.ns / rs.ns;
            snprintf(target, sizeof(target), "~C API (x%.3f)", rel);
            print_row(w_abi, &ra, rel >= 0.9 && rel <= 1.1 ? "PASS" : "MISS", target);
            continue;
        }
        Result r = measure(w);
        print_row(w, &r, NULL, w == w_abi ? "~C API (n/a)" : NULL);
    }

    {
        unsigned ns = 0;
        const BenchWorkload* s = bench_sync_workloads(&ns);
        for (unsigned i = 0; i < ns; ++i) {
            if (selected(only, s[i].name)) {
                Result r = measure(&s[i]);
                print_row(&s[i], &r, NULL, NULL);
            }
        }
    }

    if (selected(only, "memory_parked")) {
        run_memory("memory_parked", NULL);
    }
    if (selected(only, "memory_parked_eh")) {
        run_memory("memory_parked_eh", eh_mem_unused);
    }
    printf("\nF re-measured at the end: %.3f ns (ratios use the first figure)\n", measure_floor());
    if (!bench_alloc_counting()) {
        printf("malloc/op: not counted in this build (sanitizer)\n");
    }
    printf("F = %.3f ns. malloc/op counts malloc+calloc+realloc calls during the measured"
           " repetitions.\ntotal bench time %.1f s\n",
            g_floor, bench_now() - t_start);
    return 0;
}
