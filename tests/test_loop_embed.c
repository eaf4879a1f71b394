/* SPDX-License-Identifier: MIT */
/*
 * The embedding API of <futoin/asynctool.h>: futoin_loop_set_wakeup(),
 * futoin_loop_wakeup_data() and futoin_loop_next_delay(), as an outer event
 * loop uses them. The outer loop here is a tiny poll() loop with a
 * self-pipe: the wake-up callback writes to the pipe when it is called on
 * another thread and asks for a new plan when it is called on the loop
 * thread; the loop itself is run only through futoin_loop_iterate().
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#include "time_scale.h"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void nop(void* data)
{
    (void)data;
}

/* ------------------------------------------------------------------------ */
/* The callback's contract on the loop thread (virtual clock: exact delays)  */

static int g_wakeups;

static void count_wakeup(void* data)
{
    (void)data;
    ++g_wakeups;
}

static void test_wakeup_on_loop_thread(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new_virtual();
    g_wakeups = 0;
    assert_null(futoin_loop_wakeup_data(loop));
    futoin_loop_set_wakeup(loop, count_wakeup, &g_wakeups);
    assert_ptr_equal(futoin_loop_wakeup_data(loop), &g_wakeups);
    assert_int_equal(futoin_loop_next_delay(loop), -1);
    assert_int_equal(g_wakeups, 0);

    /* Only the first pending immediate changes the plan. */
    futoin_loop_immediate(loop, NULL, nop);
    futoin_loop_immediate(loop, NULL, nop);
    assert_int_equal(g_wakeups, 1);
    assert_int_equal(futoin_loop_next_delay(loop), 0);
    int64_t delay = 7;
    assert_int_equal(futoin_loop_iterate(loop, &delay), 0);
    assert_int_equal(delay, -1);

    /* Timers: only one that becomes the earliest. */
    g_wakeups = 0;
    futoin_loop_deferred(loop, 100, NULL, nop);
    assert_int_equal(g_wakeups, 1);
    futoin_loop_deferred(loop, 200, NULL, nop);
    assert_int_equal(g_wakeups, 1);
    FutoInHandle early = futoin_loop_deferred(loop, 50, NULL, nop);
    assert_int_equal(g_wakeups, 2);
    assert_int_equal(futoin_loop_next_delay(loop), 50);
    /* Cancelling can only make the plan later: no call. */
    futoin_loop_cancel(loop, &early);
    assert_int_equal(g_wakeups, 2);
    assert_int_equal(futoin_loop_next_delay(loop), 100);
    futoin_loop_advance(loop, 60);
    assert_int_equal(futoin_loop_next_delay(loop), 40);

    /* Immediates after the queue ran empty change it again. */
    futoin_loop_immediate(loop, NULL, nop);
    assert_int_equal(g_wakeups, 3);
    assert_int_equal(futoin_loop_next_delay(loop), 0);

    /* Removed: nothing is called, no data is reported (the data given
     * with a NULL callback is ignored). */
    futoin_loop_set_wakeup(loop, NULL, &g_wakeups);
    assert_null(futoin_loop_wakeup_data(loop));
    futoin_loop_deferred(loop, 1, NULL, nop);
    futoin_loop_run(loop);
    futoin_loop_immediate(loop, NULL, nop);
    assert_int_equal(g_wakeups, 3);

    /* NULL loops are harmless. */
    assert_int_equal(futoin_loop_next_delay(NULL), -1);
    assert_null(futoin_loop_wakeup_data(NULL));
    futoin_loop_set_wakeup(NULL, count_wakeup, NULL);
    futoin_loop_free(loop);
}

/* A step's own work (immediates, a timeout) reaches the plan too: the
 * engine schedules through the same loop. */
static void step_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_set_timeout(as, 30);
}

static void on_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    strncpy((char*)data, code, 15);
}

static void test_steps_change_the_plan(void** state)
{
    (void)state;
    char code[16] = "";
    FutoInLoop* loop = futoin_loop_new_virtual();
    g_wakeups = 0;
    futoin_loop_set_wakeup(loop, count_wakeup, NULL);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, step_timeout, NULL, NULL);
    futoin_execute(root, on_unhandled, code);
    assert_true(g_wakeups >= 1);
    assert_int_equal(futoin_loop_next_delay(loop), 0);
    int64_t delay = -2;
    assert_int_equal(futoin_loop_iterate(loop, &delay), 1);
    /* The step waits for its timeout: the plan is the timeout. */
    assert_int_equal(delay, 30);
    assert_int_equal(futoin_loop_next_delay(loop), 30);
    futoin_loop_advance(loop, 30);
    assert_string_equal(code, "Timeout");
    assert_int_equal(futoin_loop_iterate(loop, &delay), 0);
    assert_int_equal(delay, -1);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
}

/* ------------------------------------------------------------------------ */
/* A poll() loop with a self-pipe                                            */

typedef struct Outer {
    FutoInLoop* loop;
    int wake[2]; /* self-pipe: other threads' wake-ups */
    int io_fd;   /* optional: an I/O source of the outer loop, -1 if none */
    void (*on_io)(struct Outer* o);
    int replan; /* loop thread: the plan changed outside iterate() */
    int in_iterate;
    int rounds;
    int loop_thread_calls;    /* wake-ups on the loop thread, outside iterate() */
    atomic_int foreign_calls; /* wake-ups on other threads */
    atomic_int polling;       /* the loop thread is in (or entering) poll() */
} Outer;

static void outer_wakeup(void* data)
{
    Outer* o = data;
    if (!futoin_loop_is_same_thread(o->loop)) {
        atomic_fetch_add(&o->foreign_calls, 1);
        char c = 1;
        while (write(o->wake[1], &c, 1) < 0 && errno == EINTR) {
        }
        return;
    }
    if (!o->in_iterate) {
        ++o->loop_thread_calls;
        o->replan = 1;
    }
}

static void outer_init(Outer* o, FutoInLoop* loop)
{
    memset(o, 0, sizeof(*o));
    o->loop = loop;
    o->io_fd = -1;
    atomic_init(&o->foreign_calls, 0);
    atomic_init(&o->polling, 0);
    assert_int_equal(pipe(o->wake), 0);
    for (int i = 0; i < 2; ++i) {
        fcntl(o->wake[i], F_SETFL, fcntl(o->wake[i], F_GETFL) | O_NONBLOCK);
    }
    futoin_loop_set_wakeup(loop, outer_wakeup, o);
    assert_ptr_equal(futoin_loop_wakeup_data(loop), o);
}

static void outer_destroy(Outer* o)
{
    futoin_loop_set_wakeup(o->loop, NULL, NULL);
    close(o->wake[0]);
    close(o->wake[1]);
}

/* Runs until the FutoInLoop has no work left (or limit_ms, scaled, passes:
 * then 0). */
static int outer_run(Outer* o, unsigned limit_ms)
{
    uint64_t end = mono_ms() + futoin_test_ms(limit_ms);
    int64_t plan = futoin_loop_next_delay(o->loop);
    uint64_t due = plan < 0 ? UINT64_MAX : mono_ms() + (uint64_t)plan;
    for (;;) {
        uint64_t now = mono_ms();
        if (now >= end) {
            return 0;
        }
        int run = 0;
        if (due <= now) {
            run = 1;
        } else {
            uint64_t until = due < end ? due : end;
            struct pollfd p[2] = { { o->wake[0], POLLIN, 0 }, { o->io_fd, POLLIN, 0 } };
            int n = o->io_fd >= 0 ? 2 : 1;
            uint64_t wait = until - now;
            atomic_store(&o->polling, 1);
            poll(p, (nfds_t)n, wait > INT_MAX ? INT_MAX : (int)wait);
            atomic_store(&o->polling, 0);
            if (p[0].revents & POLLIN) {
                char buf[64];
                while (read(o->wake[0], buf, sizeof(buf)) > 0) {
                }
                run = 1;
            }
            if (n == 2 && (p[1].revents & POLLIN)) {
                o->on_io(o); /* may complete steps: the callback asks to replan */
            }
            if (o->replan) {
                o->replan = 0;
                plan = futoin_loop_next_delay(o->loop);
                due = plan < 0 ? UINT64_MAX : mono_ms() + (uint64_t)plan;
            }
            if (due <= mono_ms()) {
                run = 1;
            }
        }
        if (!run) {
            continue;
        }
        o->in_iterate = 1;
        int more = futoin_loop_iterate(o->loop, &plan);
        o->in_iterate = 0;
        ++o->rounds;
        if (!more) {
            return 1;
        }
        /* more with no plan: holds or posts on their way, the callback
         * (through the pipe) says when they arrive. */
        due = plan < 0 ? UINT64_MAX : mono_ms() + (uint64_t)plan;
    }
}

/* ---- another thread completes a waiting step ---- */

typedef struct Remote {
    FutoInLoop* loop;
    Outer* outer;
    FutoInAsyncSteps* waiting;
    pthread_t th;
    int resumed_on_loop_thread;
    int done;
} Remote;

static void remote_resume(void* data)
{
    Remote* r = data;
    r->resumed_on_loop_thread = futoin_loop_is_same_thread(r->loop);
    futoin_success1(r->waiting, futoin_val_i32(42));
    futoin_loop_release(r->loop);
}

static void* remote_thread(void* arg)
{
    Remote* r = arg;
    sleep_ms(30);
    /* Posted while the outer loop waits, which is what the callback is for.
     * A post made while the loop thread is still in its round (a loaded
     * machine can keep it there past 30 ms) is in that round's plan
     * instead, and calls nothing. */
    while (!atomic_load(&r->outer->polling)) {
        sleep_ms(1);
    }
    futoin_loop_immediate(r->loop, r, remote_resume);
    return NULL;
}

static void remote_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Remote* r = data;
    r->waiting = as;
    /* A long timeout: the test fails on time if the post is not noticed. */
    futoin_set_timeout(as, futoin_test_ms(10000));
    futoin_loop_hold(r->loop);
    assert_int_equal(pthread_create(&r->th, NULL, remote_thread, r), 0);
}

static void remote_got(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    Remote* r = data;
    r->done = futoin_arg_i32(args, 0, -1);
}

static void test_poll_loop_cross_thread_post(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    Outer o;
    outer_init(&o, loop);
    Remote r;
    memset(&r, 0, sizeof(r));
    r.loop = loop;
    r.outer = &o;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, remote_wait, NULL, &r);
    futoin_add(root, remote_got, NULL, &r);
    futoin_execute(root, NULL, NULL);
    uint64_t t0 = mono_ms();
    assert_int_equal(outer_run(&o, 5000), 1);
    uint64_t dt = mono_ms() - t0;
    pthread_join(r.th, NULL);
    assert_int_equal(r.done, 42);
    assert_int_equal(r.resumed_on_loop_thread, 1);
    assert_true(dt >= 29);
    assert_true(dt < futoin_test_ms(5000));
    /* The post woke the outer loop through the callback, called on the
     * posting thread (and the release of the hold at most once more). */
    assert_true(atomic_load(&o.foreign_calls) >= 1);
    /* The outer loop slept instead of spinning: a handful of rounds. */
    assert_true(o.rounds < 20);
    futoin_asyncsteps_free(root);
    outer_destroy(&o);
    futoin_loop_free(loop);
}

/* ---- an I/O source of the outer loop completes a waiting step ----
 * The success() happens on the loop thread outside futoin_loop_iterate():
 * only the callback tells the outer loop that its 10 s plan is stale. */

typedef struct Io {
    int fds[2];
    FutoInAsyncSteps* waiting;
    pthread_t th;
    int done;
} Io;

static Io g_io;

static void io_ready(Outer* o)
{
    (void)o;
    char buf[16];
    while (read(g_io.fds[0], buf, sizeof(buf)) > 0) {
    }
    if (g_io.waiting) {
        FutoInAsyncSteps* as = g_io.waiting;
        g_io.waiting = NULL;
        futoin_success(as);
    }
}

static void* io_writer(void* arg)
{
    (void)arg;
    sleep_ms(30);
    char c = 'x';
    while (write(g_io.fds[1], &c, 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

static void io_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    g_io.waiting = as;
    futoin_set_timeout(as, futoin_test_ms(10000));
}

static void io_done(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    g_io.done = 1;
}

static void test_poll_loop_outer_io(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    Outer o;
    outer_init(&o, loop);
    memset(&g_io, 0, sizeof(g_io));
    assert_int_equal(pipe(g_io.fds), 0);
    fcntl(g_io.fds[0], F_SETFL, fcntl(g_io.fds[0], F_GETFL) | O_NONBLOCK);
    o.io_fd = g_io.fds[0];
    o.on_io = io_ready;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, io_wait, NULL, NULL);
    futoin_add(root, io_done, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    /* execute() queued the root: that was a call on the loop thread. */
    assert_int_equal(o.loop_thread_calls, 1);
    assert_int_equal(pthread_create(&g_io.th, NULL, io_writer, NULL), 0);
    uint64_t t0 = mono_ms();
    assert_int_equal(outer_run(&o, 5000), 1);
    uint64_t dt = mono_ms() - t0;
    pthread_join(g_io.th, NULL);
    assert_int_equal(g_io.done, 1);
    assert_true(dt < futoin_test_ms(5000));
    /* success() from the I/O handler: a second call on the loop thread.
     * Nothing came from another thread through the loop. */
    assert_int_equal(o.loop_thread_calls, 2);
    assert_int_equal(atomic_load(&o.foreign_calls), 0);
    futoin_asyncsteps_free(root);
    outer_destroy(&o);
    close(g_io.fds[0]);
    close(g_io.fds[1]);
    futoin_loop_free(loop);
}

/* ---- many threads posting: every callback runs, wake-ups coalesce ---- */

enum { POSTERS = 4 };

typedef struct Storm {
    FutoInLoop* loop;
    unsigned per_thread;
    unsigned ran; /* loop thread only */
    atomic_uint posted;
} Storm;

static void storm_cb(void* data)
{
    Storm* s = data;
    ++s->ran;
}

static void storm_release(void* data)
{
    Storm* s = data;
    futoin_loop_release(s->loop);
}

static void* storm_thread(void* arg)
{
    Storm* s = arg;
    for (unsigned i = 0; i < s->per_thread; ++i) {
        futoin_loop_immediate(s->loop, s, storm_cb);
        atomic_fetch_add(&s->posted, 1);
        if (i % 64 == 0) {
            sched_yield();
        }
    }
    futoin_loop_immediate(s->loop, s, storm_release);
    return NULL;
}

static void test_poll_loop_many_posters(void** state)
{
    (void)state;
    const char* small = getenv("FUTOIN_THREADS_SMALL");
    FutoInLoop* loop = futoin_loop_new();
    Outer o;
    outer_init(&o, loop);
    Storm s;
    memset(&s, 0, sizeof(s));
    s.loop = loop;
    s.per_thread = small && *small == '1' ? 500 : 20000;
    atomic_init(&s.posted, 0);
    pthread_t th[POSTERS];
    for (int i = 0; i < POSTERS; ++i) {
        futoin_loop_hold(loop);
    }
    for (int i = 0; i < POSTERS; ++i) {
        assert_int_equal(pthread_create(&th[i], NULL, storm_thread, &s), 0);
    }
    int finished = outer_run(&o, 60000);
    for (int i = 0; i < POSTERS; ++i) {
        pthread_join(th[i], NULL);
    }
    if (!finished) {
        /* Say what the loop saw, and whether one more round (as a lost
         * wake-up would need) gets it going again. */
        FutoInLoopCounters c;
        futoin_loop_counters(loop, &c, sizeof(c));
        int64_t plan = futoin_loop_next_delay(loop);
        fprintf(stderr,
                "stalled: posted %u ran %u of %u; rounds %d wake-ups %d; "
                "cross-thread messages run %llu, immediates pending %llu; plan %lld\n",
                atomic_load(&s.posted), s.ran, POSTERS * s.per_thread, o.rounds,
                atomic_load(&o.foreign_calls), (unsigned long long)c.xmsgs,
                (unsigned long long)c.immediates_pending, (long long)plan);
        futoin_loop_iterate(loop, &plan);
        fprintf(stderr, "one more round: ran %u, plan %lld\n", s.ran, (long long)plan);
    }
    assert_int_equal(finished, 1);
    assert_int_equal(s.ran, POSTERS * s.per_thread);
    /* At most one wake-up per round from other threads (plus the one
     * that ends the wait before the first round). */
    assert_true(atomic_load(&o.foreign_calls) <= o.rounds + 1);
    outer_destroy(&o);
    futoin_loop_free(loop);
}

/* ---- a drain cut short exactly where the queue ran empty ----
 * A round runs at most a bounded batch of what other threads queued (so a
 * flood cannot starve the loop's own work). When the queue's last message
 * is the last one of a batch, nothing is left: iterate() must not answer
 * "work, but no plan" then, which tells the outer loop to sleep until a
 * wake-up that no thread will ever send. Deterministic: every message is
 * queued before the loop thread looks, and the batch size is measured. */

typedef struct Burst {
    FutoInLoop* loop;
    unsigned n;   /* messages to queue: n - 1 counted, then a release */
    unsigned ran; /* loop thread only */
} Burst;

static void burst_cb(void* data)
{
    Burst* b = data;
    ++b->ran;
}

static void burst_release(void* data)
{
    Burst* b = data;
    futoin_loop_release(b->loop);
}

static void* burst_thread(void* arg)
{
    Burst* b = arg;
    for (unsigned i = 0; i + 1 < b->n; ++i) {
        futoin_loop_immediate(b->loop, b, burst_cb);
    }
    futoin_loop_immediate(b->loop, b, burst_release);
    return NULL;
}

static void* stop_thread(void* arg)
{
    futoin_loop_stop(arg);
    return NULL;
}

/* Queues b->n messages from another thread while the loop thread waits,
 * under a hold that the last of them releases. */
static void burst_post(Burst* b)
{
    pthread_t th;
    b->ran = 0;
    futoin_loop_hold(b->loop);
    assert_int_equal(pthread_create(&th, NULL, burst_thread, b), 0);
    pthread_join(th, NULL);
}

static void test_drain_bound_empties_queue(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    Outer o;
    outer_init(&o, loop); /* embedded, as the poll() loop above drives it */
    Burst b;
    memset(&b, 0, sizeof(b));
    b.loop = loop;

    /* The batch: how many of a large burst the first round runs (each
     * message's callback runs in the round that drains it). */
    unsigned batch = 0;
    for (b.n = 256; b.n <= 65536; b.n *= 2) {
        burst_post(&b);
        int more = futoin_loop_iterate(loop, NULL);
        batch = b.ran;
        while (more) {
            more = futoin_loop_iterate(loop, NULL);
        }
        if (batch + 1 < b.n) {
            break;
        }
    }
    assert_true(batch > 0 && batch + 1 < b.n); /* the drain is bounded */
    /* The queue holds exactly one batch, then exactly two. */
    for (unsigned k = 1; k <= 2; ++k) {
        b.n = k * batch;
        burst_post(&b);
        int more = 1;
        unsigned rounds = 0;
        while (more) {
            int64_t plan = -2;
            more = futoin_loop_iterate(loop, &plan);
            ++rounds;
            /* Nothing is on its way: work comes with a plan. */
            assert_false(more && plan < 0);
            assert_true(rounds <= k);
        }
        assert_int_equal(b.ran, b.n - 1);
        assert_int_equal(futoin_loop_next_delay(loop), -1);
    }
    /* A drain cut short by a stop that was the queue's last message. */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stop_thread, loop), 0);
    pthread_join(th, NULL);
    int64_t plan = -2;
    int more = futoin_loop_iterate(loop, &plan);
    assert_false(more && plan < 0);
    outer_destroy(&o);
    futoin_loop_free(loop);
}

/* ---- removing the callback while threads post ----
 * After futoin_loop_set_wakeup(NULL) returns no call of the old callback
 * runs, so its data can go at once. */

typedef struct Churn {
    FutoInLoop* loop;
    atomic_int stop;
    atomic_int inside; /* calls of the callback in progress */
    atomic_int bad;    /* a call seen after its removal */
    atomic_int removed;
    atomic_int in_flight; /* posted, not run yet: kept small, so that a
                           * loop thread starved by other processes does
                           * not let the queue grow without bound */
} Churn;

static void churn_wakeup(void* data)
{
    Churn* c = data;
    atomic_fetch_add(&c->inside, 1);
    if (atomic_load(&c->removed)) {
        atomic_store(&c->bad, 1);
    }
    atomic_fetch_sub(&c->inside, 1);
}

static void churn_ran(void* data)
{
    Churn* c = data;
    atomic_fetch_sub(&c->in_flight, 1);
}

static void* churn_thread(void* arg)
{
    Churn* c = arg;
    while (!atomic_load(&c->stop)) {
        if (atomic_load(&c->in_flight) >= 256) {
            sched_yield();
            continue;
        }
        atomic_fetch_add(&c->in_flight, 1);
        futoin_loop_immediate(c->loop, c, churn_ran);
    }
    return NULL;
}

static void test_remove_while_posting(void** state)
{
    (void)state;
    FutoInLoop* loop = futoin_loop_new();
    Churn c;
    memset(&c, 0, sizeof(c));
    c.loop = loop;
    atomic_init(&c.stop, 0);
    atomic_init(&c.inside, 0);
    atomic_init(&c.bad, 0);
    atomic_init(&c.removed, 0);
    atomic_init(&c.in_flight, 0);
    futoin_loop_hold(loop);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, churn_thread, &c), 0);
    const char* small = getenv("FUTOIN_THREADS_SMALL");
    int cycles = small && *small == '1' ? 50 : 500;
    for (int i = 0; i < cycles; ++i) {
        atomic_store(&c.removed, 0);
        futoin_loop_set_wakeup(loop, churn_wakeup, &c);
        for (int k = 0; k < 3; ++k) {
            futoin_loop_iterate(loop, NULL); /* re-arms: the next post calls it */
            sched_yield();
        }
        futoin_loop_set_wakeup(loop, NULL, NULL);
        assert_int_equal(atomic_load(&c.inside), 0);
        atomic_store(&c.removed, 1);
        futoin_loop_iterate(loop, NULL);
    }
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&c.bad), 0);
    futoin_loop_release(loop);
    while (futoin_loop_iterate(loop, NULL)) {
    }
    /* Every post ran. */
    assert_int_equal(atomic_load(&c.in_flight), 0);
    futoin_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wakeup_on_loop_thread),
        cmocka_unit_test(test_steps_change_the_plan),
        cmocka_unit_test(test_poll_loop_cross_thread_post),
        cmocka_unit_test(test_poll_loop_outer_io),
        cmocka_unit_test(test_poll_loop_many_posters),
        cmocka_unit_test(test_drain_bound_empties_queue),
        cmocka_unit_test(test_remove_while_posting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
