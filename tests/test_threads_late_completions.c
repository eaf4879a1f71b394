/* SPDX-License-Identifier: MIT */
/*
 * Late cross-thread completions racing timeouts into shared sync objects.
 *
 * Roots on two loop threads each start a step that waits for a "completer"
 * thread and times out after 1-8 ms; the completer calls success() or
 * error() on it after 0-4 ms, so about half of the calls arrive after the
 * step is gone, while the flow waits in a shared Mutex, Throttle or
 * Limiter, or inside one. Such a call must never end the lock wait: the
 * Mutex and the Limiter keep one flow inside at a time, every object ends
 * with nothing active or queued and can be freed, every late call is
 * reported exactly once, and every root finishes. Run by ctest -L threads under ThreadSanitizer too.
 */
#include "threads_support.h"

#include <futoin/sync.h>

enum { T_MUTEX, T_THROTTLE, T_LIMITER, N_SYNC };

typedef struct Item Item;

typedef struct Shared {
    FutoInSync* sync[N_SYNC];
    atomic_int inside[N_SYNC];
    atomic_int max_inside[N_SYNC];
    atomic_long roots_done;
    atomic_long timeouts; /* the first step timed out: its call is late */
    atomic_long misuse;
    atomic_long entries;
    long roots;
    /* the completer's queue */
    pthread_mutex_t lock;
    Item* head;
    Item** tail;
    atomic_int stop;
} Shared;

struct Item {
    Item* next;
    Shared* sh;
    FutoInAsyncSteps* as; /* the first step's flow */
    uint64_t due_ns;
    int error; /* error() instead of success() */
    int which; /* the sync object */
    uint32_t seed;
    atomic_int sent; /* the completer is done with as */
    FutoInHandle poll;
};

static Shared g_sh;

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data, (void)as, (void)info;
    atomic_fetch_add(&g_sh.misuse, 1);
}

/* ---- the completer thread ---- */

static void* completer(void* arg)
{
    Shared* sh = arg;
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        Item* it = sh->head;
        if (it && it->due_ns <= now_ns()) {
            sh->head = it->next;
            if (!sh->head) {
                sh->tail = &sh->head;
            }
        } else {
            it = NULL;
        }
        pthread_mutex_unlock(&sh->lock);
        if (!it) {
            if (atomic_load(&sh->stop)) {
                return NULL;
            }
            sleep_us(100);
            continue;
        }
        if (it->error) {
            futoin_error(it->as, "Late", "from the completer");
        } else {
            futoin_success(it->as);
        }
        atomic_store(&it->sent, 1); /* last access to it */
    }
}

/* ---- a root ---- */

static void owed_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Item* it = data;
    Shared* sh = it->sh;
    it->as = as;
    futoin_set_timeout(as, 1 + xrand(&it->seed) % 8);
    futoin_wait_external(as);
    it->due_ns = now_ns() + (uint64_t)(xrand(&it->seed) % 4000) * 1000u;
    pthread_mutex_lock(&sh->lock);
    it->next = NULL;
    *sh->tail = it;
    sh->tail = &it->next;
    pthread_mutex_unlock(&sh->lock);
}

static void owed_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Item* it = data;
    if (strcmp(code, FUTOIN_TIMEOUT) == 0) {
        atomic_fetch_add(&it->sh->timeouts, 1);
    }
    futoin_success(as);
}

static void cs_leave(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    Item* it = data;
    atomic_fetch_sub(&it->sh->inside[it->which], 1);
}

static void cs_enter(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Item* it = data;
    Shared* sh = it->sh;
    int in = atomic_fetch_add(&sh->inside[it->which], 1) + 1;
    int seen = atomic_load(&sh->max_inside[it->which]);
    while (in > seen && !atomic_compare_exchange_weak(&sh->max_inside[it->which], &seen, in)) {
    }
    atomic_fetch_add(&sh->entries, 1);
    /* Stay inside across a trip through the loop: late calls keep landing. */
    futoin_relinquish(as);
    futoin_add(as, cs_leave, NULL, it);
}

static void sync_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Item* it = data;
    futoin_add_sync(as, it->sh->sync[it->which], cs_enter, NULL, it);
}

/* The root must not end (and be recycled) while the completer may still
 * use its handle. Its own wait is owned, so a late call cannot end it. */
static void poll_sent(void* data)
{
    Item* it = data;
    memset(&it->poll, 0, sizeof(it->poll));
    if (atomic_load(&it->sent)) {
        assert_int_equal(futoin_owned_success(it->as, it, NULL), 0);
    } else {
        it->poll = futoin_loop_deferred(futoin_asyncsteps_loop(it->as), 1, it, poll_sent);
    }
}

static void poll_cancel(FutoInAsyncSteps* as, void* data)
{
    Item* it = data;
    futoin_loop_cancel(futoin_asyncsteps_loop(as), &it->poll);
}

static void wait_sent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Item* it = data;
    futoin_wait_owned(as, poll_cancel, it);
    it->poll = futoin_loop_deferred(futoin_asyncsteps_loop(as), 0, it, poll_sent);
}

static void root_setup(FutoInAsyncSteps* root, void* data)
{
    Item* it = data;
    futoin_set_misuse_handler(futoin_asyncsteps_loop(root), on_misuse, NULL);
    futoin_add(root, owed_step, owed_eh, it);
    futoin_add(root, sync_step, NULL, it);
    futoin_add(root, wait_sent, NULL, it);
}

static void root_done(void* data, const char* code)
{
    Item* it = data;
    if (code) {
        fprintf(stderr, "root ended with %s\n", code);
    } else {
        atomic_fetch_add(&it->sh->roots_done, 1);
    }
    free(it);
}

static void test_late_completions_into_shared_sync(void** state)
{
    (void)state;
    Shared* sh = &g_sh;
    memset(sh, 0, sizeof(*sh));
    pthread_mutex_init(&sh->lock, NULL);
    sh->tail = &sh->head;
    FutoInLimiterOptions lo = FUTOIN_LIMITER_OPTIONS_INIT;
    lo.max_queue = 100000;
    lo.rate = 1000;
    lo.period_ms = 10;
    lo.burst = 100000;
    sh->sync[T_MUTEX] = futoin_mutex_new_shared(1, FUTOIN_SYNC_UNLIMITED);
    sh->sync[T_THROTTLE] = futoin_throttle_new_shared(1, 1, FUTOIN_SYNC_UNLIMITED);
    sh->sync[T_LIMITER] = futoin_limiter_new_shared(&lo);
    for (int i = 0; i < N_SYNC; ++i) {
        assert_non_null(sh->sync[i]);
    }
    sh->roots = (long)scaled(600, 6000, 90);

    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, completer, sh), 0);
    FutoInLoopPool* pool = futoin_loop_pool_new(2);
    assert_non_null(pool);
    uint32_t seed = 12345;
    for (long i = 0; i < sh->roots; ++i) {
        Item* it = calloc(1, sizeof(*it));
        assert_non_null(it);
        it->sh = sh;
        it->error = (int)(i % 2);
        it->which = (int)(i % N_SYNC);
        it->seed = xrand(&seed) | 1u;
        assert_true(futoin_loop_pool_spawn(pool, root_setup, root_done, it) >= 0);
        if (i % 32 == 31) {
            sleep_us(500); /* arrivals spread out: queues form and drain */
        }
    }
    while (atomic_load(&sh->roots_done) < sh->roots) {
        sleep_us(1000);
    }
    atomic_store(&sh->stop, 1);
    pthread_join(t, NULL);
    futoin_loop_pool_free(pool);

    for (int i = 0; i < N_SYNC; ++i) {
        if (i != T_THROTTLE) { /* a Throttle limits the rate, not who is inside */
            assert_int_equal(atomic_load(&sh->max_inside[i]), 1);
        }
        assert_int_equal(atomic_load(&sh->inside[i]), 0);
        FutoInSyncStats st;
        assert_int_equal(futoin_sync_stats(sh->sync[i], &st), FUTOIN_SYNC_OK);
        assert_int_equal(st.active, 0);
        assert_int_equal(st.queued, 0);
        assert_int_equal(futoin_sync_free(sh->sync[i]), FUTOIN_SYNC_OK);
    }
    assert_int_equal(atomic_load(&sh->entries), sh->roots);
    /* Every call that found its step gone was reported once, no more. */
    long late = atomic_load(&sh->timeouts);
    assert_int_equal(atomic_load(&sh->misuse), late);
    print_message("%ld roots: %ld completions applied, %ld late (refused or dropped)\n", sh->roots,
            sh->roots - late, late);
#ifndef _WIN32
    /* The race was run: some completions came after their timeout. */
    assert_true(late > 0);
#else
    /* Under wine the completer thread may lose every race in a run:
     * the checks above still hold, that one would be chance. */
    (void)late;
#endif
    pthread_mutex_destroy(&sh->lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_completions_into_shared_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
