/* SPDX-License-Identifier: MIT */
/* Cross-thread use of the AsyncTool loop: immediate, deferred, cancel,
 * stop, holds, idle sleeping and the wake-up fd (docs/THREADS.md). */
#include "threads_support.h"

#ifdef _WIN32
#include <windows.h>
#else
#include <poll.h>
#endif

#include "loop/loop_internal.h"

/* ---- immediates from other threads run in call order ---- */

#define PRODUCERS 4

typedef struct {
    FutoInLoop* loop;
    int id;
    unsigned long n;
    unsigned long next_expected; /* loop thread only */
    unsigned long errors;        /* loop thread only */
} Producer;

typedef struct {
    Producer* p;
    unsigned long seq;
} Job;

static void job_run(void* data)
{
    Job* j = data;
    Producer* p = j->p;
    if (j->seq != p->next_expected) {
        ++p->errors;
    }
    p->next_expected = j->seq + 1;
    free(j);
}

static void* produce_immediates(void* arg)
{
    Producer* p = arg;
    for (unsigned long i = 0; i < p->n; ++i) {
        Job* j = malloc(sizeof(*j));
        assert_non_null(j);
        j->p = p;
        j->seq = i;
        FutoInHandle h = futoin_loop_immediate(p->loop, j, job_run);
        assert_non_null(h.data1);
    }
    futoin_loop_release(p->loop);
    return NULL;
}

static void run_producers(unsigned long per_producer)
{
    FutoInLoop* loop = futoin_loop_new();
    Producer prod[PRODUCERS];
    pthread_t th[PRODUCERS];
    for (int i = 0; i < PRODUCERS; ++i) {
        prod[i] = (Producer){ loop, i, per_producer, 0, 0 };
        futoin_loop_hold(loop); /* released by the producer when done */
    }
    for (int i = 0; i < PRODUCERS; ++i) {
        assert_int_equal(pthread_create(&th[i], NULL, produce_immediates, &prod[i]), 0);
    }
    /* Returns once every producer released its hold and the queue ran dry. */
    futoin_loop_run(loop);
    for (int i = 0; i < PRODUCERS; ++i) {
        pthread_join(th[i], NULL);
    }
    for (int i = 0; i < PRODUCERS; ++i) {
        assert_int_equal(prod[i].errors, 0);
        assert_int_equal(prod[i].next_expected, per_producer);
    }
    assert_int_equal(futoin_loop_pending(loop), 0);
    futoin_loop_free(loop);
}

static void test_immediate_fifo_per_thread(void** state)
{
    (void)state;
    run_producers(scaled(50000, 1000000, 5000));
}

/* ---- deferred from another thread counts from the call ---- */

typedef struct {
    FutoInLoop* loop;
    uint64_t posted_ns;
    uint64_t ran_ns;
    int on_loop_thread;
} Timed;

static void timed_run(void* data)
{
    Timed* t = data;
    t->ran_ns = now_ns();
    t->on_loop_thread = futoin_loop_is_same_thread(t->loop);
    futoin_loop_release(t->loop);
}

static void* post_deferred(void* arg)
{
    Timed* t = arg;
    assert_int_equal(futoin_loop_is_same_thread(t->loop), 0);
    t->posted_ns = now_ns();
    FutoInHandle h = futoin_loop_deferred(t->loop, 30, t, timed_run);
    assert_non_null(h.data1);
    /* Cross-thread handles are exact from any thread. */
    assert_int_equal(futoin_loop_is_valid(t->loop, &h), 1);
    return NULL;
}

static void test_deferred_from_thread(void** state)
{
    (void)state;
    Timed t = { futoin_loop_new(), 0, 0, 0 };
    futoin_loop_hold(t.loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, post_deferred, &t), 0);
    futoin_loop_run(t.loop);
    pthread_join(th, NULL);
    assert_int_equal(t.on_loop_thread, 1);
    assert_true(t.ran_ns - t.posted_ns >= 30u * 1000000u);
    futoin_loop_free(t.loop);
}

/* ---- cancel vs execution: exactly one outcome per callback ---- */

typedef struct {
    atomic_int ran;
    atomic_int cancelled;
} Outcome;

typedef struct {
    FutoInLoop* loop;
    Outcome* out;
    unsigned long n;
    uint32_t seed;
} Racer;

static void outcome_ran(void* data)
{
    Outcome* o = data;
    atomic_fetch_add(&o->ran, 1);
}

static void* race_cancels(void* arg)
{
    Racer* r = arg;
    for (unsigned long i = 0; i < r->n; ++i) {
        uint32_t x = xrand(&r->seed);
        FutoInHandle h = (x & 1) ? futoin_loop_immediate(r->loop, &r->out[i], outcome_ran)
                                 : futoin_loop_deferred(r->loop, x % 3, &r->out[i], outcome_ran);
        if ((x >> 4) % 3 == 0) {
            /* Give the loop a chance to win the race: a short spin, not a
             * sched_yield(), whose cost depends on the machine's load. */
            for (volatile int k = 0; k < (int)(x % 2000); ++k) {
            }
        }
        if ((x >> 8) % 4 != 0) {
            int rc = futoin_loop_try_cancel(r->loop, &h);
            assert_true(rc == 0 || rc == 1);
            assert_null(h.data1); /* zeroed either way */
            if (rc == 1) {
                atomic_fetch_add(&r->out[i].cancelled, 1);
            }
            /* A second cancel of the same (zeroed) handle is a no-op. */
            assert_int_equal(futoin_loop_try_cancel(r->loop, &h), 0);
        }
    }
    futoin_loop_release(r->loop);
    return NULL;
}

static void test_cancel_races_execution(void** state)
{
    (void)state;
    unsigned long n = scaled(20000, 200000, 2000);
    FutoInLoop* loop = futoin_loop_new();
    Outcome* out = calloc(n * 2, sizeof(*out));
    assert_non_null(out);
    Racer r[2] = { { loop, out, n, 1 }, { loop, out + n, n, 7 } };
    pthread_t th[2];
    futoin_loop_hold(loop);
    futoin_loop_hold(loop);
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(pthread_create(&th[i], NULL, race_cancels, &r[i]), 0);
    }
    futoin_loop_run(loop);
    for (int i = 0; i < 2; ++i) {
        pthread_join(th[i], NULL);
    }
    unsigned long ran = 0, cancelled = 0;
    for (unsigned long i = 0; i < 2 * n; ++i) {
        int a = atomic_load(&out[i].ran), c = atomic_load(&out[i].cancelled);
        assert_true(a + c == 1); /* never both, never neither, never twice */
        ran += (unsigned long)a;
        cancelled += (unsigned long)c;
    }
    assert_int_equal(ran + cancelled, 2 * n);
    assert_int_equal(futoin_loop_pending(loop), 0);
    free(out);
    futoin_loop_free(loop);
}

/* A long timer cancelled from another thread is gone at once: run() does
 * not wait for its due time. */
static void* cancel_long_timer(void* arg)
{
    FutoInLoop* loop = arg;
    FutoInHandle h = futoin_loop_deferred(loop, 60000, NULL, outcome_ran);
    sleep_us(5000);
    assert_int_equal(futoin_loop_try_cancel(loop, &h), 1);
    futoin_loop_release(loop);
    return NULL;
}

static void test_cancel_long_timer_from_thread(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    futoin_loop_hold(loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_long_timer, loop), 0);
    futoin_loop_run(loop); /* would take 60 s if the timer stayed */
    pthread_join(th, NULL);
    assert_int_equal(futoin_loop_pending(loop), 0);
    futoin_loop_free(loop);
}

/* A handle made on the loop thread, cancelled from another: queued (-1),
 * decided on the loop thread: exactly one outcome. */
typedef struct {
    FutoInLoop* loop;
    FutoInHandle h;
    Outcome out;
    int rc;
} LocalCancel;

static void* cancel_local_handle(void* arg)
{
    LocalCancel* lc = arg;
    assert_int_equal(futoin_loop_is_valid(lc->loop, &lc->h), 0); /* unknown here */
    lc->rc = futoin_loop_try_cancel(lc->loop, &lc->h);
    futoin_loop_release(lc->loop);
    return NULL;
}

static void test_cancel_loop_handle_from_thread(void** state)
{
    (void)state;
    LocalCancel lc;
    memset(&lc, 0, sizeof(lc));
    lc.loop = futoin_loop_new();
    /* Far enough that the cancel is first however slowly the other thread
     * starts; run() ends with the cancel, not the due time. */
    lc.h = futoin_loop_deferred(lc.loop, 60000, &lc.out, outcome_ran);
    futoin_loop_hold(lc.loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_local_handle, &lc), 0);
    futoin_loop_run(lc.loop);
    pthread_join(th, NULL);
    assert_int_equal(lc.rc, -1);
    assert_int_equal(atomic_load(&lc.out.ran), 0); /* cancelled before due */
    futoin_loop_free(lc.loop);
}

/* ---- stop from another thread; idle loop sleeps in the kernel ---- */

typedef struct {
    FutoInLoop* loop;
    clockid_t cpu_clock;
    int ready;
    pthread_mutex_t m;
    pthread_cond_t c;
    atomic_int woke;
} Idle;

static void note_wake(void* data)
{
    Idle* s = data;
    atomic_fetch_add(&s->woke, 1);
}

static void* idle_loop_thread(void* arg)
{
    Idle* s = arg;
    s->loop = futoin_loop_new();
    futoin_loop_hold(s->loop);
    pthread_getcpuclockid(pthread_self(), &s->cpu_clock);
    pthread_mutex_lock(&s->m);
    s->ready = 1;
    pthread_cond_signal(&s->c);
    pthread_mutex_unlock(&s->m);
    futoin_loop_run(s->loop); /* held and idle: sleeps until stopped */
    return NULL;
}

/* The loop thread's CPU time. Windows (winpthreads) has no clock of
 * another thread's CPU time: the process's, which is the same here (the
 * test's own thread sleeps meanwhile). */
static uint64_t cpu_ns(clockid_t c)
{
#ifdef _WIN32
    (void)c;
    FILETIME created, ended, kernel, user;
    GetProcessTimes(GetCurrentProcess(), &created, &ended, &kernel, &user);
    uint64_t k = (uint64_t)kernel.dwHighDateTime << 32 | kernel.dwLowDateTime;
    uint64_t u = (uint64_t)user.dwHighDateTime << 32 | user.dwLowDateTime;
    return (k + u) * 100u; /* 100 ns units */
#else
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static void test_idle_sleeps_and_wakes(void** state)
{
    (void)state;
    Idle s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.m, NULL);
    pthread_cond_init(&s.c, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, idle_loop_thread, &s), 0);
    pthread_mutex_lock(&s.m);
    while (!s.ready) {
        pthread_cond_wait(&s.c, &s.m);
    }
    pthread_mutex_unlock(&s.m);
    /* Time for the loop to reach its sleep (valgrind translates its code
     * on the way, which is CPU time). */
    sleep_us(futoin_test_ms(20) * 1000u);
    uint64_t cpu0 = cpu_ns(s.cpu_clock);
    sleep_us(300000);
    uint64_t idle_cpu = cpu_ns(s.cpu_clock) - cpu0;
    /* A busy-spinning loop would burn ~300 ms here; a sleeping one ~0. */
    assert_true(idle_cpu < 30u * 1000000u);
    futoin_loop_immediate(s.loop, &s, note_wake);
    while (atomic_load(&s.woke) == 0) {
        sleep_us(1000);
    }
    futoin_loop_stop(s.loop); /* from this thread: queued, run() returns */
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&s.woke), 1);
    futoin_loop_free(s.loop);
    pthread_cond_destroy(&s.c);
    pthread_mutex_destroy(&s.m);
}

/* A cross-thread stop also ends a run() that has timers pending. */
static void* stop_later(void* arg)
{
    FutoInLoop* loop = arg;
    sleep_us(10000);
    futoin_loop_stop(loop);
    return NULL;
}

static void test_stop_from_thread(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    futoin_loop_deferred(loop, 60000, NULL, outcome_ran);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stop_later, loop), 0);
    futoin_loop_run(loop);
    pthread_join(th, NULL);
    assert_int_equal(futoin_loop_pending(loop), 1); /* the timer is still there */
    futoin_loop_free(loop);
}

/* ---- embedding: the wake-up fd ---- */

#ifdef _WIN32
/* Windows: the loop wakes up on a Win32 event, not on an fd; an outer loop
 * uses futoin_loop_set_wakeup(). */
static void test_wakeup_fd(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    assert_int_equal(futoin_loop_wakeup_fd(loop), -1);
    futoin_loop_free(loop);
}
#else
typedef struct {
    FutoInLoop* loop;
    int n;
    atomic_int count;
} Embed;

static void embed_cb(void* data)
{
    Embed* e = data;
    atomic_fetch_add(&e->count, 1);
}

static void* embed_producer(void* arg)
{
    Embed* e = arg;
    for (int i = 0; i < e->n; ++i) {
        futoin_loop_immediate(e->loop, e, embed_cb);
        if (i % 16 == 0) {
            sleep_us(200);
        }
    }
    return NULL;
}

static void test_wakeup_fd(void** state)
{
    (void)state;
    Embed e = { futoin_loop_new(), 200, 0 };
    int fd = futoin_loop_wakeup_fd(e.loop);
    assert_true(fd >= 0);
    assert_int_equal(futoin_loop_wakeup_fd(e.loop), fd); /* stable */
    struct pollfd p = { fd, POLLIN, 0 };
    assert_int_equal(poll(&p, 1, 0), 0); /* nothing queued: not readable */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, embed_producer, &e), 0);
    /* The embedder's loop: wait on the fd, then iterate. */
    while (atomic_load(&e.count) < e.n) {
        int64_t delay = 0;
        futoin_loop_iterate(e.loop, &delay);
        if (atomic_load(&e.count) >= e.n) {
            break;
        }
        p.revents = 0;
        poll(&p, 1, delay < 0 ? 1000 : (int)delay);
    }
    pthread_join(th, NULL);
    futoin_loop_iterate(e.loop, NULL);
    assert_int_equal(atomic_load(&e.count), e.n);
    /* Consumed: the fd is quiet again once the queue is empty. */
    p.revents = 0;
    assert_int_equal(poll(&p, 1, 0), 0);
    futoin_loop_free(e.loop);
}
#endif

/* ---- is_same_thread tells the truth; holds keep run() alive ---- */

typedef struct {
    FutoInLoop* loop;
    int other_thread_says;
} Truth;

static void release_cb(void* data)
{
    futoin_loop_release(data);
}

static void* ask_truth(void* arg)
{
    Truth* t = arg;
    t->other_thread_says = futoin_loop_is_same_thread(t->loop);
    sleep_us(20000); /* run() must still be waiting: the loop is held */
    futoin_loop_immediate(t->loop, t->loop, release_cb);
    return NULL;
}

static void test_same_thread_and_hold(void** state)
{
    (void)state;
    Truth t = { futoin_loop_new(), -1 };
    assert_int_equal(futoin_loop_is_same_thread(t.loop), 1);
    futoin_loop_hold(t.loop);
    int64_t delay = 0;
    /* Held: iterate reports work although nothing is runnable. */
    assert_int_equal(futoin_loop_iterate(t.loop, &delay), 1);
    assert_int_equal(delay, -1);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, ask_truth, &t), 0);
    futoin_loop_run(t.loop); /* returns after the posted release */
    pthread_join(th, NULL);
    assert_int_equal(t.other_thread_says, 0);
    assert_int_equal(futoin_loop_iterate(t.loop, NULL), 0);
    futoin_loop_free(t.loop);
}

/* Messages still queued when the loop is freed are dropped, not leaked. */
static void* post_and_leave(void* arg)
{
    FutoInLoop* loop = arg;
    for (int i = 0; i < 100; ++i) {
        futoin_loop_immediate(loop, NULL, outcome_ran);
        futoin_loop_deferred(loop, 1000, NULL, outcome_ran);
    }
    return NULL;
}

static void test_free_with_queued_messages(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, post_and_leave, loop), 0);
    pthread_join(th, NULL);
    futoin_loop_free(loop); /* none of outcome_ran(NULL) may run */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_immediate_fifo_per_thread),
        cmocka_unit_test(test_deferred_from_thread),
        cmocka_unit_test(test_cancel_races_execution),
        cmocka_unit_test(test_cancel_long_timer_from_thread),
        cmocka_unit_test(test_cancel_loop_handle_from_thread),
        cmocka_unit_test(test_idle_sleeps_and_wakes),
        cmocka_unit_test(test_stop_from_thread),
        cmocka_unit_test(test_wakeup_fd),
        cmocka_unit_test(test_same_thread_and_hold),
        cmocka_unit_test(test_free_with_queued_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
