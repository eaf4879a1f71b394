/* SPDX-License-Identifier: MIT */
/*
 * futoin_bench_threads: cross-thread figures.
 *
 *  1. completions/s: producer threads call success() on steps parked in
 *     waitExternal on one loop (32 roots per producer, each looping: wait,
 *     check the sequence number); with 1, 2 and 4 producers. Also raw
 *     cross-thread futoin_loop_immediate() calls/s.
 *  2. latency from success() on another thread to the next step running:
 *     median and p99, with the loop idle (asleep in the kernel, so the
 *     wake-up is included) and with the loop busy (other roots running).
 *  3. pool scaling: a CPU-bound step workload on a pool of 1 loop and of 2
 *     loops; throughput ratio (target >= 1.7 on a 2-core machine).
 *
 *   futoin_bench_threads            full run (~10-20 s)
 *   futoin_bench_threads --quick    smaller sizes
 *
 * Timings on a shared VM vary; each figure is the median of 3 runs.
 */
#define _POSIX_C_SOURCE 200809L

#include <futoin/asyncsteps.h>
#include <futoin/threads.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double g_scale = 1.0;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };
    nanosleep(&ts, NULL);
}

static int cmp_u64(const void* a, const void* b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void* a, const void* b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static double median3(double a, double b, double c)
{
    double v[3] = { a, b, c };
    qsort(v, 3, sizeof(double), cmp_double);
    return v[1];
}

/* ------------------------------------------------------------------------ */
/* 1. completions per second                                                  */

#define LANES 32

typedef struct Lane {
    FutoInAsyncSteps* root;
    _Atomic(FutoInAsyncSteps*) ready;
    uint32_t quota;
    uint32_t sent;
    uint32_t expect;
    uint32_t errors;
} Lane;

typedef struct {
    Lane* lanes;
    FutoInLoop* loop;
} Producer;

static void lane_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_wait_external(as);
    atomic_store_explicit(&((Lane*)data)->ready, as, memory_order_release);
}

static void lane_check(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Lane* l = data;
    uint32_t seq = (uint32_t)futoin_arg_int(args, 0, -1);
    l->errors += seq != l->expect;
    l->expect = seq + 1;
    if (l->expect >= l->quota) {
        futoin_break(as, NULL);
    }
}

static void lane_body(FutoInAsyncSteps* as, void* data)
{
    futoin_add(as, lane_wait, NULL, data);
    futoin_add(as, lane_check, NULL, data);
}

static void lane_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, lane_body, data, NULL);
}

static void* lane_producer(void* arg)
{
    Producer* p = arg;
    unsigned left = LANES;
    while (left) {
        int progressed = 0;
        for (unsigned i = 0; i < LANES; ++i) {
            Lane* l = &p->lanes[i];
            if (l->sent >= l->quota) {
                continue;
            }
            FutoInAsyncSteps* as = atomic_exchange_explicit(&l->ready, NULL, memory_order_acquire);
            if (as) {
                futoin_success1(as, futoin_val_u32(l->sent++));
                progressed = 1;
                left -= l->sent == l->quota;
            }
        }
        if (!progressed) {
            sched_yield();
        }
    }
    futoin_loop_release(p->loop);
    return NULL;
}

/* Returns completions per second. */
static double run_completions(unsigned producers, unsigned long per_producer)
{
    FutoInLoop* loop = futoin_loop_new();
    Lane* lanes = calloc(producers * LANES, sizeof(*lanes));
    Producer* prod = calloc(producers, sizeof(*prod));
    pthread_t* th = calloc(producers, sizeof(*th));
    for (unsigned i = 0; i < producers * LANES; ++i) {
        lanes[i].quota = (uint32_t)(per_producer / LANES);
        lanes[i].root = futoin_asyncsteps_new(loop);
        futoin_add(lanes[i].root, lane_start, NULL, &lanes[i]);
        futoin_execute(lanes[i].root, NULL, NULL);
    }
    futoin_loop_iterate(loop, NULL); /* park them all before timing */
    uint64_t t0 = now_ns();
    for (unsigned p = 0; p < producers; ++p) {
        prod[p].lanes = &lanes[p * LANES];
        prod[p].loop = loop;
        futoin_loop_hold(loop);
        pthread_create(&th[p], NULL, lane_producer, &prod[p]);
    }
    futoin_loop_run(loop);
    double secs = (double)(now_ns() - t0) / 1e9;
    unsigned long total = 0;
    for (unsigned p = 0; p < producers; ++p) {
        pthread_join(th[p], NULL);
    }
    for (unsigned i = 0; i < producers * LANES; ++i) {
        if (lanes[i].errors || lanes[i].expect != lanes[i].quota) {
            fprintf(stderr, "completion check failed on lane %u\n", i);
            exit(1);
        }
        total += lanes[i].expect;
        futoin_asyncsteps_free(lanes[i].root);
    }
    free(lanes);
    free(prod);
    free(th);
    futoin_loop_free(loop);
    return (double)total / secs;
}

/* Raw cross-thread immediates: producers post, the loop runs them. */
typedef struct {
    FutoInLoop* loop;
    unsigned long n;
} Poster;

static atomic_ulong g_ran;

static void count_cb(void* data)
{
    (void)data;
    atomic_fetch_add_explicit(&g_ran, 1, memory_order_relaxed);
}

static void* poster(void* arg)
{
    Poster* p = arg;
    for (unsigned long i = 0; i < p->n; ++i) {
        futoin_loop_immediate(p->loop, NULL, count_cb);
    }
    futoin_loop_release(p->loop);
    return NULL;
}

static double run_posts(unsigned producers, unsigned long per_producer)
{
    FutoInLoop* loop = futoin_loop_new();
    Poster p = { loop, per_producer };
    pthread_t th[8];
    atomic_store(&g_ran, 0);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < producers; ++i) {
        futoin_loop_hold(loop);
        pthread_create(&th[i], NULL, poster, &p);
    }
    futoin_loop_run(loop);
    double secs = (double)(now_ns() - t0) / 1e9;
    for (unsigned i = 0; i < producers; ++i) {
        pthread_join(th[i], NULL);
    }
    if (atomic_load(&g_ran) != producers * per_producer) {
        fprintf(stderr, "post check failed\n");
        exit(1);
    }
    futoin_loop_free(loop);
    return (double)(producers * per_producer) / secs;
}

/* ------------------------------------------------------------------------ */
/* 2. latency: success() on another thread -> next step                      */

typedef struct {
    FutoInLoop* loop;
    _Atomic(FutoInAsyncSteps*) waiting;
    _Atomic uint64_t t_call;
    uint64_t* samples;
    unsigned n;
    unsigned count;
    int busy; /* the loop runs a spinning root meanwhile */
    atomic_int stop_spin;
} Lat;

static void lat_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_wait_external(as);
    atomic_store_explicit(&((Lat*)data)->waiting, as, memory_order_release);
}

static void lat_next(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Lat* l = data;
    l->samples[l->count++] = now_ns() - atomic_load(&l->t_call);
    if (l->count >= l->n) {
        futoin_break(as, NULL);
    }
}

static void lat_body(FutoInAsyncSteps* as, void* data)
{
    futoin_add(as, lat_wait, NULL, data);
    futoin_add(as, lat_next, NULL, data);
}

static void lat_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, lat_body, data, NULL);
}

/* The busy variant: another root keeps the loop running steps. */
static void spin_body(FutoInAsyncSteps* as, void* data)
{
    Lat* l = data;
    if (atomic_load(&l->stop_spin)) {
        futoin_break(as, NULL);
        return;
    }
    for (volatile int k = 0; k < 200; ++k) {
    }
}

static void spin_start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add_loop(as, spin_body, data, NULL);
}

static void* lat_producer(void* arg)
{
    Lat* l = arg;
    unsigned seed = 12345;
    for (unsigned i = 0; i < l->n; ++i) {
        FutoInAsyncSteps* as;
        while ((as = atomic_exchange_explicit(&l->waiting, NULL, memory_order_acquire)) == NULL) {
            sched_yield();
        }
        /* Let the loop go to sleep (idle) or run a while (busy). */
        seed = seed * 1103515245u + 12345u;
        sleep_us(50 + (seed >> 16) % 150);
        atomic_store(&l->t_call, now_ns());
        futoin_success(as);
    }
    atomic_store(&l->stop_spin, 1);
    futoin_loop_release(l->loop);
    return NULL;
}

static void run_latency(int busy, unsigned n, double* median, double* p99)
{
    Lat l;
    memset(&l, 0, sizeof(l));
    l.loop = futoin_loop_new();
    l.samples = calloc(n, sizeof(uint64_t));
    l.n = n;
    l.busy = busy;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(l.loop);
    futoin_add(root, lat_start, NULL, &l);
    futoin_execute(root, NULL, NULL);
    FutoInAsyncSteps* spinner = NULL;
    if (busy) {
        spinner = futoin_asyncsteps_new(l.loop);
        futoin_add(spinner, spin_start, NULL, &l);
        futoin_execute(spinner, NULL, NULL);
    }
    futoin_loop_hold(l.loop);
    pthread_t th;
    pthread_create(&th, NULL, lat_producer, &l);
    futoin_loop_run(l.loop);
    pthread_join(th, NULL);
    qsort(l.samples, l.count, sizeof(uint64_t), cmp_u64);
    *median = (double)l.samples[l.count / 2] / 1000.0;
    *p99 = (double)l.samples[(size_t)((double)l.count * 0.99)] / 1000.0;
    free(l.samples);
    futoin_asyncsteps_free(root);
    futoin_asyncsteps_free(spinner);
    futoin_loop_free(l.loop);
}

/* ------------------------------------------------------------------------ */
/* 3. pool scaling: CPU-bound steps                                           */

typedef struct {
    atomic_int done;
    unsigned steps;
    unsigned work;
} Cpu;

/* Keeps the arithmetic from being optimised away without a shared write
 * per step (a shared atomic would bounce a cache line between the loops
 * and measure that instead). */
static _Thread_local uint64_t tl_sink;

static void cpu_iter(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)as;
    Cpu* c = data;
    /* A few microseconds of arithmetic per step. */
    uint64_t h = 1469598103934665603u ^ i;
    for (unsigned k = 0; k < c->work; ++k) {
        h = (h ^ k) * 1099511628211u;
    }
    tl_sink += h;
}

static void cpu_setup(FutoInAsyncSteps* root, void* data)
{
    Cpu* c = data;
    futoin_repeat(root, c->steps, cpu_iter, c, NULL);
}

static void cpu_done(void* data, const char* code)
{
    (void)code;
    atomic_fetch_add(&((Cpu*)data)->done, 1);
}

/* Steps per second of `roots` roots on a pool of n loops. */
static double run_pool(unsigned n, unsigned roots, unsigned steps)
{
    Cpu c;
    memset(&c, 0, sizeof(c));
    c.steps = steps;
    c.work = 2000;
    FutoInLoopPool* pool = futoin_loop_pool_new(n);
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < roots; ++i) {
        futoin_loop_pool_spawn(pool, cpu_setup, cpu_done, &c);
    }
    while (atomic_load(&c.done) < (int)roots) {
        sleep_us(200);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    futoin_loop_pool_free(pool);
    return (double)roots * steps / secs;
}

/* The same arithmetic on plain threads, no library: how much parallelism
 * the machine gives us right now (on a shared VM often less than its CPU
 * count). Returns work units per second. */
typedef struct {
    unsigned long units;
    unsigned work;
} Burn;

static void* burner(void* arg)
{
    Burn* b = arg;
    for (unsigned long i = 0; i < b->units; ++i) {
        uint64_t h = 1469598103934665603u ^ i;
        for (unsigned k = 0; k < b->work; ++k) {
            h = (h ^ k) * 1099511628211u;
        }
        tl_sink += h;
    }
    return NULL;
}

static double run_burners(unsigned threads, unsigned long units)
{
    pthread_t th[2];
    Burn b = { units / threads, 2000 };
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < threads; ++i) {
        pthread_create(&th[i], NULL, burner, &b);
    }
    for (unsigned i = 0; i < threads; ++i) {
        pthread_join(th[i], NULL);
    }
    return (double)units / ((double)(now_ns() - t0) / 1e9);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_scale = 0.1;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("futoin_bench_threads: %ld online CPUs, median of 3 runs\n\n", cpus);

    unsigned long per = (unsigned long)(400000 * g_scale);
    printf("%-44s %14s\n", "cross-thread throughput", "per second");
    unsigned prods[3] = { 1, 2, 4 };
    for (int k = 0; k < 3; ++k) {
        unsigned p = prods[k];
        double r = median3(run_completions(p, per), run_completions(p, per),
                run_completions(p, per));
        char name[64];
        snprintf(name, sizeof(name), "success() completions, %u producer%s", p, p > 1 ? "s" : "");
        printf("%-44s %14.0f\n", name, r);
    }
    for (int k = 0; k < 3; ++k) {
        unsigned p = prods[k];
        unsigned long n = (unsigned long)(1000000 * g_scale);
        double r = median3(run_posts(p, n), run_posts(p, n), run_posts(p, n));
        char name[64];
        snprintf(name, sizeof(name), "futoin_loop_immediate() posts, %u producer%s", p,
                p > 1 ? "s" : "");
        printf("%-44s %14.0f\n", name, r);
    }

    unsigned n = (unsigned)(5000 * g_scale);
    printf("\n%-44s %10s %10s\n", "success() on another thread -> next step", "median us",
            "p99 us");
    for (int busy = 0; busy < 2; ++busy) {
        double m[3], q[3];
        for (int r = 0; r < 3; ++r) {
            run_latency(busy, n, &m[r], &q[r]);
        }
        printf("%-44s %10.1f %10.1f\n",
                busy ? "  loop busy (other roots running)" : "  loop idle (asleep in ppoll)",
                median3(m[0], m[1], m[2]), median3(q[0], q[1], q[2]));
    }

    unsigned roots = 64, steps = (unsigned)(4000 * g_scale);
    double one[3], two[3];
    for (int r = 0; r < 3; ++r) {
        one[r] = run_pool(1, roots, steps);
        two[r] = run_pool(2, roots, steps);
    }
    double s1 = median3(one[0], one[1], one[2]);
    double s2 = median3(two[0], two[1], two[2]);
    unsigned long units = (unsigned long)roots * steps;
    double b1 = median3(run_burners(1, units), run_burners(1, units), run_burners(1, units));
    double b2 = median3(run_burners(2, units), run_burners(2, units), run_burners(2, units));
    printf("\n%-44s %14s\n", "pool, CPU-bound steps (64 roots, ~2 us each)", "steps/s");
    printf("%-44s %14.0f\n", "  1 loop", s1);
    printf("%-44s %14.0f\n", "  2 loops", s2);
    printf("%-44s %14.2f   (target >= 1.7 on 2 cores) %s\n", "  ratio 2 loops / 1 loop", s2 / s1,
            s2 / s1 >= 1.7 ? "PASS" : "MISS");
    printf("%-44s %14.2f   (same arithmetic on 2 vs 1 plain threads)\n",
            "  control: machine parallelism now", b2 / b1);
    printf("%-44s %14.2f   (pool ratio / control)\n", "  pool scaling efficiency",
            (s2 / s1) / (b2 / b1));
    return 0;
}
