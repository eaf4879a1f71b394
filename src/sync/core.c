/* SPDX-License-Identifier: MIT */
/*
 * The FutoInSync protocol shared by Mutex, Throttle and Limiter: lock(),
 * unlock(), the cancel handler, the node free list, the FIFO queues and the
 * holder table (see sync_internal.h for the stages).
 *
 * lock() admits, queues or rejects the flow at once. The engine owes
 * unlock() from the moment lock() succeeds: when lock() returns after
 * admitting (implicit success) or when a waiter is woken with success().
 * A queued flow has the sync step's cancel handler armed, so for every
 * node exactly one of these happens: the cancel handler runs (lock not
 * held), unlock() runs (lock held), or the flow is rejected (the node is
 * returned at once).
 *
 * Node life: SN_NEW (lock) -> SN_HOLDER, SN_Q_CONC,
 * SN_Q_RATE or SN_REJECTED; queued nodes later become SN_HOLDER or
 * SN_REJECTED (wake-up) or are removed (cancel handler).
 */
#include "sync/sync_impl.h"

#include <futoin/asyncsteps.h>

#include <stdlib.h>
#include <string.h>

#define SYNC_INITIAL_BUCKETS 8

static void sync_lock(FutoInAsyncSteps* as, FutoInSync* sync);
static void sync_unlock(FutoInAsyncSteps* as, FutoInSync* sync);

static const FutoInSyncAPI sync_api = { .lock = sync_lock, .unlock = sync_unlock };

/* ------------------------------------------------------------------------ */
/* Node free list                                                             */

static void sync_cancel(FutoInAsyncSteps* as, void* data);

static SyncNode* node_get(SyncCore* c)
{
    SyncNode* n = c->free_nodes;
    if (n) {
        c->free_nodes = n->free_next;
    } else {
        n = malloc(sizeof(*n));
        if (!n) {
            return NULL;
        }
        ++c->nodes_allocated;
    }
    memset(n, 0, sizeof(*n));
    n->core = c;
    ++c->nodes_out;
    return n;
}

static void node_put(SyncCore* c, SyncNode* n)
{
    n->free_next = c->free_nodes;
    c->free_nodes = n;
    --c->nodes_out;
}

/* ------------------------------------------------------------------------ */
/* FIFO queues                                                                */

void futoin__sync_enqueue(SyncQueue* q, SyncNode* n)
{
    list_push_back(&q->l, n, SYNC_Q_LINK);
    ++q->len;
}

SyncNode* futoin__sync_dequeue(SyncQueue* q)
{
    if (!q->l.head) {
        return NULL;
    }
    --q->len;
    return list_pop_front(&q->l, SYNC_Q_LINK);
}

/* Removes a node from the middle of a queue: a waiter that was cancelled. */
static void queue_remove(SyncQueue* q, SyncNode* n)
{
    list_remove(&q->l, n, SYNC_Q_LINK);
    --q->len;
}

/* ------------------------------------------------------------------------ */
/* Holder table: rootId -> innermost record. Re-entries shadow the record
 * they nest in (kept in ->outer), so nesting unwinds LIFO without search. */

static size_t bucket_of(const SyncCore* c, ptrdiff_t id)
{
    /* rootIds are pointers: mix the bits so that alignment zeros and
     * allocator strides do not all land in a few buckets. */
    uint64_t h = (uint64_t)(uintptr_t)id;
    h ^= h >> 31;
    h *= UINT64_C(0x9E3779B97F4A7C15);
    h ^= h >> 29;
    return (size_t)h & (c->nbuckets - 1);
}

/* The link that points at id's record, or at the NULL ending its bucket's
 * chain: what insertion and removal need, from one hash and one walk. */
static SyncNode** holder_link(const SyncCore* c, ptrdiff_t id)
{
    SyncNode** pp = &c->buckets[bucket_of(c, id)];
    while (*pp && (*pp)->root_id != id) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

/* Doubles the bucket array when flows outnumber buckets. Growth is the only
 * allocation here and is amortised; if it fails the table just keeps
 * longer chains. */
static void holders_grow(SyncCore* c)
{
    size_t nb = c->nbuckets * 2;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    SyncNode** b = calloc(nb, sizeof(*b));
    if (!b) {
        return;
    }
    SyncNode** old = c->buckets;
    size_t old_n = c->nbuckets;
    c->buckets = b;
    c->nbuckets = nb;
    for (size_t i = 0; i < old_n; ++i) {
        SyncNode* n = old[i];
        while (n) {
            SyncNode* next = n->hnext;
            size_t k = bucket_of(c, n->root_id);
            n->hnext = b[k];
            b[k] = n;
            n = next;
        }
    }
    free(old);
}

/* Inserts n at pp, the holder_link() of its rootId. */
static void holder_insert_at(SyncCore* c, SyncNode** pp, SyncNode* n)
{
    SyncNode* outer = *pp;
    if (outer) {
        /* Re-entry: n takes the outer record's place in the chain. */
        n->outer = outer;
        n->hnext = outer->hnext;
        outer->hnext = NULL;
        *pp = n;
        return;
    }
    n->outer = NULL;
    n->hnext = NULL;
    *pp = n;
    if (++c->nflows > c->nbuckets) {
        holders_grow(c);
    }
}

/* Removes the innermost record at pp (a holder_link()). */
static void holder_unlink(SyncCore* c, SyncNode** pp)
{
    SyncNode* n = *pp;
    if (n->outer) {
        n->outer->hnext = n->hnext;
        *pp = n->outer;
    } else {
        *pp = n->hnext;
        --c->nflows;
    }
    n->hnext = NULL;
    n->outer = NULL;
}

static void holder_remove(SyncCore* c, SyncNode* n)
{
    SyncNode** pp = &c->buckets[bucket_of(c, n->root_id)];
    while (*pp && *pp != n) {
        pp = &(*pp)->hnext;
    }
    if (!*pp) {
        return; /* not in the table: nothing to undo */
    }
    holder_unlink(c, pp);
}

/* The flow behind n leaves: its record goes, and its slot (if it owns one)
 * passes to the next waiter or becomes free. */
static void release(SyncCore* c, SyncNode* n)
{
    holder_remove(c, n);
    if (n->slot) {
        n->slot = 0;
        futoin__sync_conc_release(c);
    }
}

/* ------------------------------------------------------------------------ */
/* Admission                                                                  */

SyncVerdict futoin__sync_progress(SyncCore* c, SyncNode* n, int after_conc)
{
    SyncNode** pp = holder_link(c, n->root_id);
    if (!after_conc) {
        if (*pp) {
            /* Counted re-entrance: in at once, nothing else counted. */
            holder_insert_at(c, pp, n);
            n->state = SN_HOLDER;
            return SYNC_ENTER;
        }
        if (c->conc_max) {
            SyncVerdict v = futoin__sync_conc_admit(c, n);
            if (v != SYNC_ENTER) {
                return v;
            }
        }
    }
    /* In the table from here on, so that unlock() and re-entries find the
     * flow even while it waits for the rate. conc_admit() does not touch
     * the table, so pp is still n's link. */
    holder_insert_at(c, pp, n);
    if (c->rate_max) {
        SyncVerdict v = futoin__sync_rate_admit(c, n);
        if (v == SYNC_WAIT) {
            return v;
        }
        if (v != SYNC_ENTER) {
            /* The caller decides what becomes of the slot (if any). */
            holder_remove(c, n);
            n->state = SN_REJECTED;
            return v;
        }
    }
    n->state = SN_HOLDER;
    return SYNC_ENTER;
}

/* ------------------------------------------------------------------------ */
/* Flows of other implementations                                             */

/* A waiting flow of another engine holds its node through a ticket in the
 * lock step's stack() memory, not directly: that engine may or may not call
 * the cancel handler of a step that we fail with DefenseRejected (the spec
 * does not say), and it tells us nothing else, but it always destroys the
 * step's stack memory. So the cancel handler and the stack cleanup both
 * end the wait, and whichever comes first gives the node back; a woken flow
 * is detached from its ticket, since from then on unlock() owns the node. */
typedef struct SyncTicket {
    SyncNode* n;
} SyncTicket;

static void sync_cancel_locked(FutoInAsyncSteps* as, SyncNode* n);

static void ticket_detach(SyncNode* n)
{
    if (n->ticket) {
        n->ticket->n = NULL;
        n->ticket = NULL;
    }
}

static void ticket_end(SyncTicket* t)
{
    SyncNode* n = t->n;
    if (n) {
        ticket_detach(n);
        sync_cancel_locked(n->as, n);
    }
}

static void ticket_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ticket_end(data);
}

static void ticket_cleanup(void* value)
{
    ticket_end(value);
}

/* Arms the cancel handler of a flow that waits in a queue. Returns 0, or
 * -1 if a foreign flow's ticket cannot be had (the caller undoes the wait). */
static int arm_wait(FutoInAsyncSteps* as, SyncNode* n)
{
    if (futoin__is_library_flow(as)) {
        /* Owned: a success() through the interface meant for an earlier
         * step of the flow must not end the lock wait; only the wake-up
         * with this node does. */
        futoin_wait_owned(as, sync_cancel, n);
        return 0;
    }
    SyncTicket* t = as->api->stack(as, sizeof(*t), ticket_cleanup);
    if (!t) {
        return -1;
    }
    t->n = n;
    n->ticket = t;
    as->api->setCancel(as, t, ticket_cancel);
    return 0;
}

void futoin__sync_wake(SyncNode* n)
{
    n->state = SN_HOLDER;
    ticket_detach(n);
    /* The waiter may be on another loop (a shared object): queued there,
     * and quietly dropped if its cancel handler wins (it hands the slot
     * on). Another implementation's flow gets success(). */
    futoin_owned_success(n->as, n, NULL);
}

void futoin__sync_reject_waiting(SyncNode* n, const char* info)
{
    n->state = SN_REJECTED;
    /* The node is given back exactly once. A step that takes the error
     * fails by itself, which drops its cancel handler; but one whose root is
     * being cancelled or freed (this may run from the abort of a sibling
     * branch) refuses the error and is aborted next, and a step on another
     * loop thread may be aborted before the error gets there: either way
     * its cancel handler, sync_cancel(), would give the node back too. So
     * the handler is taken off first, or, across threads, left to give the
     * node back itself. */
    switch (futoin__fail_parked_step(n->as, sync_cancel, n, FUTOIN_DEFENSE_REJECTED, info)) {
    case FUTOIN_PARKED_FAILED:
        break;
    case FUTOIN_PARKED_QUEUED:
        return; /* sync_cancel() gives it back on the step's loop thread */
    default: {
        /* Another engine's flow: its ticket gives the node back when the
         * step ends (ticket_end), which may happen inside handle_error(). */
        int ticketed = n->ticket != NULL;
        n->as->api->handle_error(n->as, FUTOIN_DEFENSE_REJECTED, info);
        if (ticketed) {
            return;
        }
        break;
    }
    }
    node_put(n->core, n);
}

/* The sync step was aborted or failed before the lock was held. */
static void sync_cancel_locked(FutoInAsyncSteps* as, SyncNode* n)
{
    SyncCore* c = n->core;
    switch (n->state) {
    case SN_Q_CONC:
        queue_remove(&c->conc_q, n);
        break;
    case SN_Q_RATE:
        queue_remove(&c->rate_q, n);
        if (!c->rate_q.len) {
            /* Nobody left to admit: a pending timer would only keep the
             * loop alive. */
            futoin__sync_rate_cancel_timer(c);
        } else if (c->mtx && c->timer_loop == futoin_asyncsteps_loop(as)) {
            /* A shared object's timer lives on a waiter's loop, which may
             * be going away (its roots are being freed): move it to the
             * loop of the new head of the queue. */
            futoin__sync_rate_cancel_timer(c);
            futoin__sync_rate_arm_timer(c);
        }
        release(c, n);
        break;
    case SN_HOLDER:
        /* Admitted but aborted before the engine marked the lock held. */
        release(c, n);
        break;
    default:
        break; /* SN_NEW, SN_REJECTED: holds nothing */
    }
    node_put(c, n);
}

static void sync_cancel(FutoInAsyncSteps* as, void* data)
{
    SyncNode* n = data;
    SyncCore* c = n->core;
    futoin__sync_enter(c);
    sync_cancel_locked(as, n);
    futoin__sync_leave(c);
}

static void sync_lock_locked(FutoInAsyncSteps* as, SyncCore* c)
{
    SyncNode* n = node_get(c);
    if (!n) {
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "sync object: out of memory");
        return;
    }
    n->as = as;
    n->root_id = as->api->rootId(as);
    n->state = SN_NEW;
    SyncVerdict v = futoin__sync_progress(c, n, 0);
    switch (v) {
    case SYNC_ENTER:
        return; /* implicit success: the critical section follows */
    case SYNC_WAIT:
        /* Resumed by success()/handle_error() from unlock(), another
         * flow's cancel handler or the rate timer. */
        if (arm_wait(as, n) != 0) {
            sync_cancel_locked(as, n);
            as->api->handle_error(as, FUTOIN_INTERNAL_ERROR, "sync object: out of memory");
        }
        return;
    case SYNC_REJECT_CONC:
    case SYNC_REJECT_RATE: {
        int had_slot = n->slot;
        n->slot = 0;
        futoin__note_sync_rejection(as);
        as->api->handle_error(as, FUTOIN_DEFENSE_REJECTED,
                v == SYNC_REJECT_CONC ? c->reject_conc : c->reject_rate);
        if (had_slot) {
            /* A Limiter flow that got a slot but no rate place. */
            futoin__sync_conc_release(c);
        }
        node_put(c, n);
        return;
    }
    }
}

static void sync_lock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    SyncCore* c = (SyncCore*)sync;
    if (c->mtx && !futoin_asyncsteps_loop(as)) {
        /* Waking a waiter across threads needs this library's flows. */
        as->api->handle_error(as, FUTOIN_INTERNAL_ERROR,
                "shared sync object: needs an AsyncSteps of this library");
        return;
    }
    futoin__sync_enter(c);
    sync_lock_locked(as, c);
    futoin__sync_leave(c);
}

/* Called by the engine exactly once when a held sync step ends, possibly
 * from a cancel path: only bookkeeping and wake-ups of other flows here. */
static void sync_unlock(FutoInAsyncSteps* as, FutoInSync* sync)
{
    SyncCore* c = (SyncCore*)sync;
    futoin__sync_enter(c);
    SyncNode** pp = holder_link(c, as->api->rootId(as));
    SyncNode* n = *pp;
    if (n) {
        /* The innermost record of the flow: the one this unlock() ends. */
        holder_unlink(c, pp);
        if (n->slot) {
            n->slot = 0;
            futoin__sync_conc_release(c);
        }
        node_put(c, n);
    } /* else: not a flow of ours: a protocol violation we can only ignore */
    futoin__sync_leave(c);
}

/* ------------------------------------------------------------------------ */
/* Construction, destruction, stats                                          */

static SyncCore* core_new(FutoInLoop* loop)
{
    SyncCore* c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    c->buckets = calloc(SYNC_INITIAL_BUCKETS, sizeof(*c->buckets));
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    /* base.api is const: set it once in the fresh (untyped) allocation. */
    const FutoInSync base = { &sync_api };
    memcpy(&c->base, &base, sizeof(base));
    c->nbuckets = SYNC_INITIAL_BUCKETS;
    c->loop = loop;
    return c;
}

FutoInSync* futoin__sync_make(FutoInLoop* loop, int shared, const SyncConfig* cfg)
{
    SyncCore* c = core_new(shared ? NULL : loop);
    if (!c) {
        return NULL;
    }
    if (shared) {
        c->mtx = malloc(sizeof(*c->mtx)); /* NOLINT(misc-non-copyable-objects): sizeof only */
        if (!c->mtx || pthread_mutex_init(c->mtx, NULL) != 0) {
            free(c->mtx);
            c->mtx = NULL;
            futoin_sync_free(&c->base);
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): futoin_sync_free() freed c */
            return NULL;
        }
    }
    c->conc_max = cfg->conc_max;
    c->conc_qmax = cfg->conc_qmax;
    c->rate_max = cfg->rate_max;
    c->period_ms = cfg->period_ms;
    c->rate_qmax = cfg->rate_qmax;
    c->reject_conc = cfg->reject_conc;
    c->reject_rate = cfg->reject_rate;
    return &c->base;
}

static SyncCore* core_of(const FutoInSync* sync)
{
    return sync && sync->api == &sync_api ? (SyncCore*)(uintptr_t)sync : NULL;
}

int futoin_sync_free(FutoInSync* sync)
{
    if (!sync) {
        return FUTOIN_SYNC_OK;
    }
    SyncCore* c = core_of(sync);
    if (!c) {
        return FUTOIN_SYNC_INVALID;
    }
    futoin__sync_enter(c);
    if (c->nodes_out) {
        /* Some flow would call back into freed memory later. */
        futoin__sync_leave(c);
        return FUTOIN_SYNC_BUSY;
    }
    futoin__sync_rate_cancel_timer(c);
    if (c->timer_inflight) {
        /* A timer callback that lost to a cancel still has to run. */
        futoin__sync_leave(c);
        return FUTOIN_SYNC_BUSY;
    }
    futoin__sync_leave(c);
    if (c->mtx) {
        pthread_mutex_destroy(c->mtx);
        free(c->mtx);
    }
    while (c->free_nodes) {
        SyncNode* n = c->free_nodes;
        c->free_nodes = n->free_next;
        free(n);
    }
    free(c->buckets);
    free(c);
    return FUTOIN_SYNC_OK;
}

int futoin_sync_stats(const FutoInSync* sync, FutoInSyncStats* out)
{
    if (!out) {
        return FUTOIN_SYNC_INVALID;
    }
    memset(out, 0, sizeof(*out));
    SyncCore* c = core_of(sync);
    if (!c) {
        return FUTOIN_SYNC_INVALID;
    }
    futoin__sync_enter(c);
    /* Flows waiting for the rate are in the holder table already. */
    out->active = (uint32_t)(c->nflows - c->rate_q.len);
    out->queued = c->conc_q.len + c->rate_q.len;
    out->slots_used = c->conc_used;
    out->window_entries = futoin__sync_rate_window_entries(c);
    out->nodes_allocated = c->nodes_allocated;
    futoin__sync_leave(c);
    return FUTOIN_SYNC_OK;
}

/* ------------------------------------------------------------------------ */
/* Introspection                                                              */

int futoin__sync_describe(const FutoInSync* sync, FutoInAsyncSteps_cancel_callback ch, void* data,
        SyncWaitPos* out)
{
    SyncCore* c = core_of(sync);
    memset(out, 0, sizeof(*out));
    if (!c) {
        return 0;
    }
    out->kind = c->conc_max && c->rate_max ? "Limiter" : c->conc_max ? "Mutex" : "Throttle";
    out->shared = c->mtx != NULL;
    if (ch != sync_cancel || !data) {
        return 1; /* not one of our waiters (or not waiting) */
    }
    SyncNode* n = data;
    futoin__sync_enter(c);
    if (n->core == c && (n->state == SN_Q_CONC || n->state == SN_Q_RATE)) {
        const SyncQueue* q = n->state == SN_Q_CONC ? &c->conc_q : &c->rate_q;
        uint32_t pos = 1;
        for (const SyncNode* p = n->q.prev; p; p = list_prev(p, SYNC_Q_LINK)) {
            ++pos;
        }
        out->queue = n->state == SN_Q_CONC ? 1 : 2;
        out->position = pos;
        out->length = q->len;
    }
    futoin__sync_leave(c);
    return 1;
}
