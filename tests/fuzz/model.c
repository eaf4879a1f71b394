/* SPDX-License-Identifier: MIT */
/*
 * The reference model: a deliberately plain interpreter of the semantics
 * contract. See model.h. Rules are quoted from docs/SEMANTICS.md where they
 * drive a decision.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODE_LEN 48
#define INFO_LEN 48
#define WORK_LIMIT 200000

/* ------------------------------------------------------------------------ */
/* Data                                                                      */

enum { IK_NODE, IK_END, IK_SECTION };
enum { MF_L0, MF_STEP, MF_PAR, MF_LOOP, MF_SYNC, MF_END, MF_VALUE, MF_YIELD };
enum { CAN_NONE, CAN_USER, CAN_SYNC };
enum { OUT_NONE, OUT_SUCCESS, OUT_ERROR, OUT_BREAK, OUT_CONTINUE };
enum { CTL_NONE, CTL_BREAK, CTL_CONTINUE };
/* A sync frame's lock state: SS_QUEUED waits for a Mutex slot, a Throttle
 * window or a Limiter slot; SS_RATE_QUEUED holds a Limiter slot and waits
 * for the rate (in the burst queue). */
enum { SS_NEW, SS_QUEUED, SS_HOLDER, SS_REJECTED, SS_RATE_QUEUED };
enum { SK_MUTEX, SK_THROTTLE, SK_LIMITER };
enum { RS_IDLE, RS_RUNNING, RS_DONE, RS_FAILED, RS_CANCELLED };
enum { EV_DISPATCH, EV_TIMEOUT, EV_EXT, EV_CANCEL_ROOT, EV_YIELD, EV_WINDOW };

typedef struct MItem {
    const FzNode* node;
    int kind;
} MItem;

typedef struct MQueue {
    MItem* v;
    int head;
    int len;
    int cap;
} MQueue;

typedef struct MFlow MFlow;

typedef struct MFrame {
    int kind;
    const FzNode* node;
    MQueue q;
    int eh_used;
    int cancel;                 /* CAN_* */
    int timer;                  /* event id of a setTimeout(), -1 */
    int ext;                    /* event id of the external completion, -1 */
    int late_cancel;            /* a late immediate term: the cancel handler schedules it */
    int wait;                   /* setTimeout/setCancel/waitExternal */
    int par_wait;               /* parallel step waiting for branches */
    MFlow* br[FZ_MAX_BRANCHES]; /* live branches, in creation order */
    int nbr;
    int pending;
    unsigned iter;
    int lock_phase;
    int locked;
    int section_queued;
    int sstate;
    FzArgs saved; /* results that came into a sync step */
} MFrame;

struct MFlow {
    int root;
    MFlow* parent;
    int par_depth; /* branches: the parent's frame holding the parallel */
    int is_branch;
    MFrame* frames;
    int depth;
    int cap;
    FzArgs out;
    int pending_unwind;
    char code[CODE_LEN];
    char info[INFO_LEN]; /* error_info is per flow (docs/SEMANTICS.md "Errors") */
    int ctl;
    int in_ready;
    MFlow* rnext;
    MFlow* all_next;
};

typedef struct MEv {
    int kind;
    int live;
    int imm;
    uint64_t due;
    uint64_t seq;
    MFlow* fl;
    int depth;
    const FzNode* node;
    int root;
    int hops; /* EV_EXT: immediates still to pass before the completion */
} MEv;

typedef struct MWaiter {
    MFlow* fl;
    int depth; /* the sync frame */
} MWaiter;

typedef struct MHolder {
    MFlow* fl;
    int count;
} MHolder;

/* A Mutex, a Throttle or a Limiter. A Limiter is modelled as sync.h
 * defines it: a Mutex(concurrent, max_queue) part (this record) and a
 * Throttle(rate, period_ms, burst) part nested inside it (a record of its
 * own, M.sy[part], whose queue is the burst queue). */
typedef struct MSync {
    int kind;     /* SK_* */
    int part;     /* Limiter: index of its Throttle part in M.sy */
    int owner;    /* a Limiter's Throttle part: the Limiter's index, else -1 */
    uint32_t max; /* Mutex, Limiter: flows inside; Throttle: entries per window */
    uint32_t max_queue;
    uint32_t used;   /* Mutex, Limiter: slots in use; Throttle: entries in the window */
    uint32_t period; /* Throttle: window length (ms) */
    int open;        /* Throttle: a window has been opened */
    uint64_t start;  /* Throttle: the window's start */
    int timer;       /* Throttle: the window timer's event id, -1 */
    MWaiter* q;
    int qlen;
    int qcap;
    MHolder* h;
    int nh;
    int hcap;
} MSync;

typedef struct MRoot {
    MFlow* main;
    int state;
} MRoot;

typedef struct M {
    const FzProg* p;
    FzStr* out;
    uint64_t now;
    uint64_t seq;
    MEv* ev;
    int nev;
    int cap_ev;
    MFlow* rhead;
    MFlow* rtail;
    int dispatching;
    int dispatch_scheduled;
    MFlow* all;
    MRoot roots[FZ_MAX_ROOTS];
    MSync sy[FZ_NSYNC + 2]; /* the objects, then the Limiters' Throttle parts */
    int ambiguous;          /* an order the documentation leaves open was hit */
    int fired_timer;        /* a timer has run: */
    uint64_t fired_due;     /* the due time of the last one */
    long work;
    int overflow;
} M;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

const char* fz_info_col(const char* code, const char* info)
{
    /* Infos the programs set: "", i<n>, x<n>, h<n>, loop labels and the
     * Mutex rejection; anything else is an engine-worded misuse message. */
    if (strcmp(code, "InternalError") == 0) {
        return "-";
    }
    if (!info || !*info) {
        return "~";
    }
    if (strchr("ixh", info[0]) && info[1] && strspn(info + 1, "0123456789") == strlen(info + 1)) {
        return info;
    }
    if (!strcmp(info, "a") || !strcmp(info, "b") || !strcmp(info, "zz")
            || !strcmp(info, "Mutex: queue is full")) {
        return info;
    }
    /* A full Limiter queue: the object and which of its two queues. */
    if (strcmp(code, "DefenseRejected") == 0 && strstr(info, "Limiter")) {
        if (strstr(info, "burst")) {
            return FZ_INFO_LIMITER_BURST;
        }
        if (strstr(info, "queue")) {
            return FZ_INFO_LIMITER_QUEUE;
        }
    }
    /* A full Throttle queue: sync.h only says that error_info "names the
     * object and the queue", so that is all the trace shows. */
    if (strcmp(code, "DefenseRejected") == 0 && strstr(info, "Throttle") && strstr(info, "queue")) {
        return FZ_INFO_THROTTLE_FULL;
    }
    return "-";
}

static void* xrealloc(void* p, size_t n)
{
    void* q = realloc(p, n);
    if (!q) {
        abort();
    }
    return q;
}

static void q_push(MQueue* q, const FzNode* n, int kind)
{
    if (q->head + q->len == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 4;
        q->v = xrealloc(q->v, sizeof(MItem) * (size_t)q->cap);
    }
    q->v[q->head + q->len].node = n;
    q->v[q->head + q->len].kind = kind;
    ++q->len;
}

static MItem q_pop(MQueue* q)
{
    MItem it = q->v[q->head++];
    if (--q->len == 0) {
        q->head = 0;
    }
    return it;
}

static void q_clear(MQueue* q)
{
    q->head = q->len = 0;
}

static void q_free(MQueue* q)
{
    free(q->v);
    memset(q, 0, sizeof(*q));
}

static void name_of(const FzNode* n, char* buf)
{
    fz_node_name(n, buf, 16);
}

static void tr(M* m, const char* fmt, const char* a, const char* b, const char* c)
{
    if (++m->work > WORK_LIMIT) {
        m->overflow = 1;
    }
    fz_str_addf(m->out, "t%llu ", (unsigned long long)m->now);
    fz_str_addf(m->out, fmt, a, b, c);
    fz_str_addf(m->out, "\n");
}

static void tr_args(M* m, const char* what, const char* name, const FzArgs* a)
{
    if (++m->work > WORK_LIMIT) {
        m->overflow = 1;
    }
    fz_str_addf(m->out, "t%llu %s %s ", (unsigned long long)m->now, what, name);
    fz_args_fmt(m->out, a);
    fz_str_addf(m->out, "\n");
}

static MFrame* top(MFlow* fl)
{
    return &fl->frames[fl->depth];
}

static void set_code(MFlow* fl, const char* code)
{
    snprintf(fl->code, sizeof(fl->code), "%s", code);
}

static void set_info(M* m, MFlow* fl, const char* info)
{
    (void)m;
    snprintf(fl->info, INFO_LEN, "%s", info);
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */

static int ev_new(M* m, int kind, int imm, uint32_t delay)
{
    if (m->nev == m->cap_ev) {
        m->cap_ev = m->cap_ev ? m->cap_ev * 2 : 64;
        m->ev = xrealloc(m->ev, sizeof(MEv) * (size_t)m->cap_ev);
    }
    MEv* e = &m->ev[m->nev];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->live = 1;
    e->imm = imm;
    e->due = m->now + delay;
    e->seq = m->seq++;
    return m->nev++;
}

static void ev_cancel(M* m, int* id)
{
    if (*id >= 0) {
        m->ev[*id].live = 0;
        *id = -1;
    }
}

/* futoin_loop_run_next(): the first immediate, else the earliest timer
 * (ties: the one scheduled first). */
static int ev_next(M* m)
{
    int best = -1;
    for (int i = 0; i < m->nev; ++i) {
        MEv* e = &m->ev[i];
        if (e->live && e->imm && (best < 0 || e->seq < m->ev[best].seq)) {
            best = i;
        }
    }
    if (best >= 0) {
        return best;
    }
    for (int i = 0; i < m->nev; ++i) {
        MEv* e = &m->ev[i];
        if (e->live && !e->imm
                && (best < 0 || e->due < m->ev[best].due
                        || (e->due == m->ev[best].due && e->seq < m->ev[best].seq))) {
            best = i;
        }
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* Ready queue                                                               */

static void ready(M* m, MFlow* fl)
{
    if (fl->in_ready) {
        return;
    }
    fl->in_ready = 1;
    fl->rnext = NULL;
    if (m->rtail) {
        m->rtail->rnext = fl;
    } else {
        m->rhead = fl;
    }
    m->rtail = fl;
    if (!m->dispatching && !m->dispatch_scheduled) {
        m->dispatch_scheduled = 1;
        ev_new(m, EV_DISPATCH, 1, 0);
    }
}

static void unready(M* m, MFlow* fl)
{
    if (!fl->in_ready) {
        return;
    }
    MFlow* prev = NULL;
    for (MFlow* c = m->rhead; c; prev = c, c = c->rnext) {
        if (c == fl) {
            if (prev) {
                prev->rnext = c->rnext;
            } else {
                m->rhead = c->rnext;
            }
            if (m->rtail == c) {
                m->rtail = prev;
            }
            break;
        }
    }
    fl->in_ready = 0;
    fl->rnext = NULL;
}

/* ------------------------------------------------------------------------ */
/* Flows and frames                                                          */

static MFlow* flow_new(M* m, int root, MFlow* parent)
{
    MFlow* fl = calloc(1, sizeof(MFlow));
    if (!fl) {
        abort();
    }
    fl->root = root;
    fl->parent = parent;
    fl->is_branch = parent != NULL;
    fl->cap = 4;
    fl->frames = calloc((size_t)fl->cap, sizeof(MFrame));
    if (!fl->frames) {
        abort();
    }
    fl->frames[0].kind = MF_L0;
    fl->frames[0].timer = fl->frames[0].ext = -1;
    fl->all_next = m->all;
    m->all = fl;
    return fl;
}

static MFrame* frame_push(MFlow* fl, int kind, const FzNode* node)
{
    if (fl->depth + 1 >= fl->cap) {
        fl->frames = xrealloc(fl->frames, sizeof(MFrame) * (size_t)fl->cap * 2);
        memset(fl->frames + fl->cap, 0, sizeof(MFrame) * (size_t)fl->cap);
        fl->cap *= 2;
    }
    MFrame* f = &fl->frames[++fl->depth];
    MQueue keep = f->q; /* reuse the queue memory of a popped frame */
    memset(f, 0, sizeof(*f));
    f->q = keep;
    q_clear(&f->q);
    f->kind = kind;
    f->node = node;
    f->timer = f->ext = -1;
    return f;
}

static int find_loop(MFlow* fl, const char* label)
{
    for (MFlow* c = fl; c; c = c->parent) {
        for (int d = c->depth; d > 0; --d) {
            MFrame* f = &c->frames[d];
            if (f->kind == MF_LOOP
                    && (!label
                            || (fz_loop_labels[f->node->label]
                                    && strcmp(fz_loop_labels[f->node->label], label) == 0))) {
                return 1;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Sync objects (include/futoin/sync.h): Mutex, Throttle and Limiter      */

static MHolder* holder(MSync* x, MFlow* fl)
{
    for (int i = 0; i < x->nh; ++i) {
        if (x->h[i].fl == fl) {
            return &x->h[i];
        }
    }
    return NULL;
}

/* The flow is admitted (or re-enters: counted). */
static void sync_hold(MSync* x, MFlow* fl)
{
    MHolder* h = holder(x, fl);
    if (h) {
        ++h->count;
        return;
    }
    if (x->nh == x->hcap) {
        x->hcap = x->hcap ? x->hcap * 2 : 4;
        x->h = xrealloc(x->h, sizeof(MHolder) * (size_t)x->hcap);
    }
    x->h[x->nh].fl = fl;
    x->h[x->nh].count = 1;
    ++x->nh;
}

static MWaiter q_take(MSync* x, int i)
{
    MWaiter w = x->q[i];
    memmove(x->q + i, x->q + i + 1, sizeof(MWaiter) * (size_t)(x->qlen - i - 1));
    --x->qlen;
    return w;
}

static void q_add(MSync* x, MFlow* fl)
{
    if (x->qlen == x->qcap) {
        x->qcap = x->qcap ? x->qcap * 2 : 4;
        x->q = xrealloc(x->q, sizeof(MWaiter) * (size_t)x->qcap);
    }
    x->q[x->qlen].fl = fl;
    x->q[x->qlen].depth = fl->depth;
    ++x->qlen;
}

static void q_remove(MSync* x, MFlow* fl)
{
    for (int i = 0; i < x->qlen; ++i) {
        if (x->q[i].fl == fl) {
            q_take(x, i);
            return;
        }
    }
}

static void ext_success(M* m, MFlow* fl, const FzArgs* args);
static void ext_error(M* m, MFlow* fl, const char* code, const char* info);

/* "the next waiter is resumed directly with success() on its flow": the
 * object's bookkeeping is done first (it holds its place), then success()
 * queues the flow, which enters on its next turn. A flow admitted by a
 * Limiter's Throttle part is a holder of the Limiter. */
static void admit_waiter(M* m, MSync* x)
{
    MWaiter w = q_take(x, 0);
    sync_hold(x->owner >= 0 ? &m->sy[x->owner] : x, w.fl);
    w.fl->frames[w.depth].sstate = SS_HOLDER;
    FzArgs none = { 0, { 0 }, { 0 } };
    ext_success(m, w.fl, &none);
}

/* A Throttle (or a Limiter's Throttle part) with nobody queued: "When a
 * flow is admitted and no window is open (none yet, or the last one has
 * ended), a window [t, t + period_ms) opens at that time t"; "Inside a
 * window at most max flows are admitted". 1: one more entry, admitted. */
static int throttle_try(M* m, MSync* x)
{
    if (x->qlen) {
        return 0; /* "a new flow never overtakes a queued one" */
    }
    if (!x->open || m->now >= x->start + x->period) {
        x->open = 1;
        x->start = m->now;
        x->used = 0;
    }
    if (x->used < x->max) {
        ++x->used;
        return 1;
    }
    return 0;
}

/* Throttle: the window timer exists only while flows wait; it fires at the
 * end of the window ("the first max queued flows (FIFO) are admitted at
 * that moment by a loop timer"). */
static void throttle_arm(M* m, MSync* x, int idx)
{
    if (x->timer < 0 && x->qlen) {
        x->timer = ev_new(m, EV_WINDOW, 0, (uint32_t)(x->start + x->period - m->now));
        m->ev[x->timer].root = idx;
    }
}

static int limiter_rate(M* m, MSync* x, MFlow* fl, int woken);

/* A Limiter slot frees up (unlock, a burst rejection, or the cancel of a
 * flow waiting for the rate): "the next waiter is resumed directly ...
 * from inside that call". The first flow waiting for a slot (FIFO) takes
 * it and, "holding the slot, passes the rate limit" at once. */
static void limiter_free_slot(M* m, MSync* x)
{
    if (!x->qlen) {
        --x->used;
        return;
    }
    MWaiter w = q_take(x, 0);
    if (w.depth != w.fl->depth) {
        abort(); /* model bug: a queued flow is not waiting at its sync step */
    }
    limiter_rate(m, x, w.fl, 1);
}

/* The rate stage of a Limiter: the flow holds one of its slots. Admitted
 * (a holder; success() when it was woken), queued in the burst FIFO (still
 * waiting, its slot held), or "rejected when it is full, which frees the
 * slot again": DefenseRejected, returned by lock() or, for a woken flow,
 * handle_error() on it. The rejected flow is resumed first, then the slot
 * goes on to the next waiter (FIFO order). Returns OUT_* for lock(). */
static int limiter_rate(M* m, MSync* x, MFlow* fl, int woken)
{
    MSync* r = &m->sy[x->part];
    MFrame* s = top(fl);
    if (throttle_try(m, r)) {
        sync_hold(x, fl);
        s->sstate = SS_HOLDER;
        if (woken) {
            FzArgs none = { 0, { 0 }, { 0 } };
            ext_success(m, fl, &none);
        }
        return OUT_NONE;
    }
    if ((uint32_t)r->qlen < r->max_queue) {
        q_add(r, fl);
        s->sstate = SS_RATE_QUEUED;
        s->cancel = CAN_SYNC;
        s->wait = 1;
        throttle_arm(m, r, x->part);
        return OUT_NONE;
    }
    s->sstate = SS_REJECTED;
    if (woken) {
        ext_error(m, fl, "DefenseRejected", FZ_INFO_LIMITER_BURST);
        limiter_free_slot(m, x);
        return OUT_NONE;
    }
    limiter_free_slot(m, x);
    set_code(fl, "DefenseRejected");
    set_info(m, fl, FZ_INFO_LIMITER_BURST);
    return OUT_ERROR;
}

/* unlock(): the flow leaves once (re-entries are counted). A Mutex slot
 * goes to the first waiter (FIFO); a Throttle admits nobody early; a
 * Limiter frees its slot (its rate part admits nobody early). */
static void sync_release(M* m, MSync* x, MFlow* fl)
{
    MHolder* h = holder(x, fl);
    if (!h) {
        abort(); /* model bug */
    }
    if (--h->count > 0) {
        return;
    }
    *h = x->h[--x->nh];
    if (x->kind == SK_THROTTLE) {
        return;
    }
    if (x->kind == SK_LIMITER) {
        limiter_free_slot(m, x);
        return;
    }
    if (x->qlen) {
        admit_waiter(m, x); /* the slot passes on */
    } else {
        --x->used;
    }
}

/* lock(), the sync step's execute callback: enter at once (counted
 * re-entrance, or a place and nobody queued), queue (FIFO, setCancel: the
 * step waits for success() from an unlock() or the window timer), or
 * reject with DefenseRejected. A Limiter: "a flow first takes one of the
 * concurrent slots (waiting in the max_queue FIFO or rejected when it is
 * full), then, holding the slot, passes the rate limit". Returns OUT_*. */
static int sync_lock(M* m, MFlow* fl)
{
    MFrame* s = top(fl);
    int idx = s->node->sync;
    MSync* x = &m->sy[idx];
    if (holder(x, fl)) {
        /* "no queueing, no new concurrency slot, no new rate entry" */
        sync_hold(x, fl);
        s->sstate = SS_HOLDER;
        return OUT_NONE;
    }
    if (x->kind == SK_THROTTLE) {
        if (throttle_try(m, x)) {
            sync_hold(x, fl);
            s->sstate = SS_HOLDER;
            return OUT_NONE;
        }
    } else if (x->used < x->max && x->qlen == 0) {
        ++x->used;
        if (x->kind == SK_LIMITER) {
            return limiter_rate(m, x, fl, 0);
        }
        sync_hold(x, fl);
        s->sstate = SS_HOLDER;
        return OUT_NONE;
    }
    if ((uint32_t)x->qlen < x->max_queue) {
        q_add(x, fl);
        s->sstate = SS_QUEUED;
        s->cancel = CAN_SYNC;
        s->wait = 1;
        if (x->kind == SK_THROTTLE) {
            throttle_arm(m, x, idx);
        }
        return OUT_NONE;
    }
    s->sstate = SS_REJECTED;
    set_code(fl, "DefenseRejected");
    set_info(m, fl,
            x->kind == SK_THROTTLE          ? FZ_INFO_THROTTLE_FULL
                    : x->kind == SK_LIMITER ? FZ_INFO_LIMITER_QUEUE
                                            : "Mutex: queue is full");
    return OUT_ERROR;
}

/* The sync step's own cancel handler: the lock is not held. A waiter
 * leaves the queue and never enters; a Throttle with nobody left queued
 * keeps no timer ("When it ends with none queued ... no timer is
 * pending"). A Limiter flow waiting for the rate leaves the burst queue
 * (the same timer rule) and then gives its slot back ("When a slot frees
 * up (... a cancel handler of a flow that was admitted or queued)"). */
static void sync_cancel(M* m, MFlow* fl, MFrame* s)
{
    MSync* x = &m->sy[s->node->sync];
    if (s->sstate == SS_QUEUED) {
        q_remove(x, fl);
        if (x->kind == SK_THROTTLE && !x->qlen) {
            ev_cancel(m, &x->timer);
        }
    } else if (s->sstate == SS_RATE_QUEUED) {
        MSync* r = &m->sy[x->part];
        s->sstate = SS_NEW;
        q_remove(r, fl);
        if (!r->qlen) {
            ev_cancel(m, &r->timer);
        }
        limiter_free_slot(m, x);
    } else if (s->sstate == SS_HOLDER) {
        sync_release(m, x, fl);
    }
}

/* The Throttle's window timer: "When a window ends with flows queued, the
 * next window opens at once, at the end time of the previous one, and the
 * first max queued flows (FIFO) are admitted at that moment". */
static void throttle_window_end(M* m, MSync* x, int idx)
{
    x->timer = -1;
    x->start += x->period; /* == now: the virtual clock is exact */
    x->used = 0;
    while (x->used < x->max && x->qlen) {
        ++x->used;
        admit_waiter(m, x);
    }
    throttle_arm(m, x, idx);
}

/* ------------------------------------------------------------------------ */
/* Aborting                                                                  */

static void frame_pop(M* m, MFlow* fl, int aborted);

static void call_cancel(M* m, MFlow* fl, MFrame* f)
{
    int c = f->cancel;
    int late = f->late_cancel;
    f->cancel = CAN_NONE;
    f->late_cancel = 0;
    if (c == CAN_USER) {
        char nm[16];
        name_of(f->node, nm);
        tr(m, "cancel %s%s%s", nm, "", "");
        ev_cancel(m, &f->ext); /* what the harness's cancel handler does */
        if (late) {
            /* ... or, for a late immediate term, it schedules the
             * completion, which no longer has a step to complete. */
            int id = ev_new(m, EV_EXT, 1, 0);
            m->ev[id].fl = fl;
            m->ev[id].depth = -1;
            m->ev[id].node = f->node;
            m->ev[id].hops = f->node->body.ext_delay;
        }
    } else if (c == CAN_SYNC) {
        sync_cancel(m, fl, f);
    }
}

static void flow_abort(M* m, MFlow* fl);

static void abort_branches(M* m, MFrame* f)
{
    while (f->nbr) {
        MFlow* b = f->br[0];
        memmove(f->br, f->br + 1, sizeof(MFlow*) * (size_t)(f->nbr - 1));
        --f->nbr;
        flow_abort(m, b);
    }
    f->pending = 0;
}

/* "Frames popped by unwinding without recovery have their cancel handler
 * called"; a parallel frame takes its live branches with it; a held sync
 * lock is unlocked exactly once. */
static void frame_pop(M* m, MFlow* fl, int aborted)
{
    MFrame f = fl->frames[fl->depth];
    --fl->depth;
    ev_cancel(m, &f.timer);
    if (aborted) {
        call_cancel(m, fl, &f);
    }
    q_clear(&fl->frames[fl->depth + 1].q);
    if (f.kind == MF_PAR) {
        abort_branches(m, &f);
    }
    if (f.kind == MF_SYNC && f.locked) {
        sync_release(m, &m->sy[f.node->sync], fl);
    }
}

/* "every active frame ... is aborted, innermost first". */
static void flow_abort(M* m, MFlow* fl)
{
    unready(m, fl);
    while (fl->depth > 0) {
        frame_pop(m, fl, 1);
    }
    q_clear(&fl->frames[0].q);
    fl->out.n = 0;
    fl->pending_unwind = 0;
    fl->ctl = CTL_NONE;
}

/* An error (or break/continue) raised at frame k: frames above k are
 * aborted; frame k stops its timer; its cancel handler is dropped when the
 * step failed by itself (own) and called otherwise (timeout). */
static void raise_at(M* m, MFlow* fl, int k, int own)
{
    while (fl->depth > k) {
        frame_pop(m, fl, 1);
    }
    MFrame* f = &fl->frames[k];
    ev_cancel(m, &f->timer);
    if (own) {
        f->cancel = CAN_NONE;
    } else {
        call_cancel(m, fl, f);
        f = &fl->frames[k];
    }
    if (f->kind == MF_PAR) {
        abort_branches(m, f);
    }
    q_clear(&f->q);
    f->wait = 0;
    f->par_wait = 0;
    fl->out.n = 0;
    fl->pending_unwind = 1;
}

/* ------------------------------------------------------------------------ */
/* Completion of flows                                                       */

static void branch_detach(MFlow* fl)
{
    MFrame* pf = &fl->parent->frames[fl->par_depth];
    for (int i = 0; i < pf->nbr; ++i) {
        if (pf->br[i] == fl) {
            memmove(pf->br + i, pf->br + i + 1, sizeof(MFlow*) * (size_t)(pf->nbr - i - 1));
            --pf->nbr;
            break;
        }
    }
}

static void flow_finished(M* m, MFlow* fl)
{
    if (fl->is_branch) {
        MFlow* parent = fl->parent;
        MFrame* pf = &parent->frames[fl->par_depth];
        fl->out.n = 0;
        branch_detach(fl);
        unready(m, fl);
        if (--pf->pending == 0) {
            pf->par_wait = 0;
            ready(m, parent);
        }
        return;
    }
    m->roots[fl->root].state = RS_DONE;
    q_clear(&fl->frames[0].q);
    fl->out.n = 0;
}

static void flow_failed(M* m, MFlow* fl)
{
    if (fl->is_branch) {
        /* "The first branch error cancels the other branches (their cancel
         * handlers run), then unwinds from the parallel step in the parent
         * flow with the same code". Break/continue travel the same way. */
        MFlow* parent = fl->parent;
        MFrame* pf = &parent->frames[fl->par_depth];
        branch_detach(fl);
        /* The parent flow's handlers read the branch's code and info. */
        set_code(parent, fl->code);
        set_info(m, parent, fl->info);
        parent->ctl = fl->ctl;
        unready(m, fl);
        abort_branches(m, pf);
        pf->par_wait = 0;
        raise_at(m, parent, parent->depth, 1);
        ready(m, parent);
        return;
    }
    MRoot* r = &m->roots[fl->root];
    r->state = RS_FAILED;
    q_clear(&fl->frames[0].q);
    fl->out.n = 0;
    char rn[16];
    snprintf(rn, sizeof(rn), "r%d", fl->root);
    if (m->p->roots[fl->root].no_unhandled) {
        /* "unhandled_error ... (NULL: reported to the misuse handler)" */
        tr(m, "misuse %s unhandled %s%s", rn, fl->code, "");
        return;
    }
    tr(m, "unhandled %s %s %s", rn, fl->code, fz_info_col(fl->code, fl->info));
}

/* ------------------------------------------------------------------------ */
/* Step callbacks (the harness's behaviour, interpreted)                    */

static void queue_node(MFrame* f, const FzNode* n)
{
    q_push(&f->q, n, IK_NODE);
}

static int misuse(M* m, MFlow* fl)
{
    set_code(fl, "InternalError");
    set_info(m, fl, "<IE>");
    return OUT_ERROR;
}

/* A step body: setCancel, setTimeout, sub-steps, then the terminator. */
static int run_body(M* m, MFlow* fl, const FzNode* node, const FzBody* b, int term_applies)
{
    int d = fl->depth;
    if (b->set_cancel) {
        fl->frames[d].cancel = CAN_USER;
        fl->frames[d].wait = 1;
    }
    if (b->has_timeout) {
        int id = ev_new(m, EV_TIMEOUT, 0, b->timeout_ms);
        m->ev[id].fl = fl;
        m->ev[id].depth = d;
        fl->frames[d].timer = id;
        fl->frames[d].wait = 1;
    }
    for (int i = 0; i < b->nkids; ++i) {
        queue_node(&fl->frames[d], b->kids[i]);
    }
    if (!term_applies) {
        return OUT_NONE;
    }
    MFrame* f = &fl->frames[d];
    char info[16];
    switch (b->term) {
    case FZ_T_SUCCESS:
        if (f->q.len) {
            return misuse(m, fl); /* "success ... after add" */
        }
        fl->out = b->args;
        return OUT_SUCCESS;
    case FZ_T_ERROR:
        if (f->q.len) {
            return misuse(m, fl);
        }
        set_code(fl, fz_codes[b->code]);
        snprintf(info, sizeof(info), "i%d", node->id);
        set_info(m, fl, info);
        return OUT_ERROR;
    case FZ_T_EXT_OK:
    case FZ_T_EXT_ERR: {
        /* Late (on a main flow only: a branch's handle dies with it): the
         * timer is not the cancel handler's to stop, or the cancel handler
         * schedules the completion. */
        int late = b->late && !fl->is_branch;
        f->wait = 1;
        if (late && b->ext_imm) {
            f->late_cancel = 1;
            return OUT_NONE;
        }
        int id = ev_new(m, EV_EXT, b->ext_imm, b->ext_imm ? 0 : b->ext_delay);
        m->ev[id].fl = fl;
        m->ev[id].depth = late ? -1 : d;
        m->ev[id].node = node;
        if (!late) {
            fl->frames[d].ext = id;
        }
        return OUT_NONE;
    }
    case FZ_T_FOREVER:
        f->wait = 1;
        return OUT_NONE;
    case FZ_T_BREAK:
    case FZ_T_CONTINUE: {
        const char* label = fz_ctl_labels[b->label];
        if (!find_loop(fl, label)) {
            return misuse(m, fl); /* "break/continue without a loop or with an unknown label" */
        }
        set_code(fl, label ? label : "");
        set_info(m, fl, label ? label : "");
        return b->term == FZ_T_BREAK ? OUT_BREAK : OUT_CONTINUE;
    }
    default:
        return OUT_NONE;
    }
}

static void unwind(M* m, MFlow* fl);

/* lock() succeeded (at once or by a later success()): from now on the
 * engine owes unlock(), whatever happens before the section starts. */
static void lock_acquired(M* m, MFrame* f)
{
    if (f->kind == MF_SYNC && f->lock_phase) {
        f->lock_phase = 0;
        f->locked = 1;
        f->cancel = CAN_NONE;
        f->wait = 0;
        ev_cancel(m, &f->timer);
    }
}

/* "Step outcome (after the execute callback returns)". */
static void exec_outcome(M* m, MFlow* fl, int out)
{
    MFrame* f = top(fl);
    switch (out) {
    case OUT_ERROR:
        fl->ctl = CTL_NONE;
        raise_at(m, fl, fl->depth, 1);
        unwind(m, fl);
        return;
    case OUT_BREAK:
    case OUT_CONTINUE:
        fl->ctl = out == OUT_BREAK ? CTL_BREAK : CTL_CONTINUE;
        raise_at(m, fl, fl->depth, 1);
        unwind(m, fl);
        return;
    case OUT_SUCCESS:
        /* Complete now (timer and cancel handler gone); popped next turn. */
        lock_acquired(m, f);
        ev_cancel(m, &f->timer);
        f->cancel = CAN_NONE;
        f->wait = 0;
        ready(m, fl);
        return;
    default:
        if (f->q.len) {
            f->wait = 0; /* sub-steps run; the step completes after them */
            ready(m, fl);
        } else if (!f->wait) {
            lock_acquired(m, f);
            ready(m, fl); /* implicit success */
        }
        return;
    }
}

static void run_iteration(M* m, MFlow* fl)
{
    MFrame* f = top(fl);
    const FzNode* n = f->node;
    char nm[16];
    char it[16];
    fl->out.n = 0; /* "Results of an iteration are dropped." */
    name_of(n, nm);
    snprintf(it, sizeof(it), "%u", f->iter);
    tr(m, "iter %s %s%s", nm, it, "");
    int out;
    if (n->kind == FZ_N_LOOP && f->iter == n->count) {
        set_code(fl, "");
        set_info(m, fl, "");
        out = OUT_BREAK; /* the harness's loop() bound: break() */
    } else {
        out = run_body(m, fl, n, &n->body, f->iter == n->body.term_iter);
    }
    exec_outcome(m, fl, out);
}

static void iteration_reset(M* m, MFrame* f)
{
    ev_cancel(m, &f->timer);
    q_clear(&f->q);
    f->cancel = CAN_NONE;
    f->late_cancel = 0;
    f->wait = 0;
}

/* Starts the frame just pushed. 1: a callback ran (the turn is over). */
static int start_frame(M* m, MFlow* fl, int kind)
{
    MFrame* f = top(fl);
    const FzNode* n = f->node;
    char nm[16];
    switch (kind) {
    case MF_STEP: {
        FzArgs in = fl->out;
        fl->out.n = 0;
        name_of(n, nm);
        tr_args(m, "exec", nm, &in);
        exec_outcome(m, fl, run_body(m, fl, n, &n->body, 1));
        return 1;
    }
    case MF_VALUE:
        /* successStep(): the step succeeds with its values, no callback. */
        fl->out = n->value;
        return 0;
    case MF_YIELD: {
        /* relinquish(): one trip through the loop (an immediate); the
         * results of the step before pass through. */
        f->wait = 1;
        int id = ev_new(m, EV_YIELD, 1, 0);
        m->ev[id].fl = fl;
        m->ev[id].depth = fl->depth;
        f->timer = id;
        return 1;
    }
    case MF_END: {
        FzArgs in = fl->out;
        fl->out.n = 0;
        snprintf(nm, sizeof(nm), "r%d", fl->root);
        tr_args(m, "end", nm, &in);
        exec_outcome(m, fl, OUT_NONE);
        return 1;
    }
    case MF_LOOP:
        f->iter = 0;
        if (n->kind == FZ_N_REPEAT && n->count == 0) {
            return 0; /* completes at once */
        }
        run_iteration(m, fl);
        return 1;
    case MF_PAR: {
        /* "Parallel branches start with no input"; all start together. */
        fl->out.n = 0;
        for (int i = 0; i < n->nbr; ++i) {
            MFlow* b = flow_new(m, fl->root, fl);
            b->par_depth = fl->depth;
            queue_node(&b->frames[0], n->br[i]);
            f = top(fl);
            f->br[f->nbr++] = b;
            ++f->pending;
        }
        if (!f->pending) {
            ready(m, fl);
            return 1;
        }
        f->par_wait = 1;
        for (int i = 0; i < f->nbr; ++i) {
            ready(m, f->br[i]);
        }
        return 1;
    }
    case MF_SYNC:
        /* Incoming results are for the critical section, not lock(). */
        f->saved = fl->out;
        fl->out.n = 0;
        f->lock_phase = 1;
        exec_outcome(m, fl, sync_lock(m, fl));
        return 1;
    default:
        abort();
    }
}

/* The top frame has nothing left to run. 1: a callback ran. */
static int frame_complete(M* m, MFlow* fl)
{
    MFrame* f = top(fl);
    if (f->kind == MF_LOOP) {
        iteration_reset(m, f);
        ++f->iter;
        if (f->node->kind == FZ_N_LOOP || f->iter < f->node->count) {
            run_iteration(m, fl);
            return 1;
        }
        fl->out.n = 0;
    } else if (f->kind == MF_SYNC && !f->section_queued) {
        /* Lock acquired: the critical section runs as a sub-step with the
         * results that came into the sync step. */
        lock_acquired(m, f);
        f->section_queued = 1;
        fl->out = f->saved;
        q_push(&f->q, f->node->section, IK_SECTION);
        return 0;
    }
    frame_pop(m, fl, 0);
    return 0;
}

/* One turn of a flow that is not unwinding. */
static void advance(M* m, MFlow* fl)
{
    for (;;) {
        MFrame* t = top(fl);
        if (t->q.len) {
            MItem it = q_pop(&t->q);
            int kind;
            const FzNode* node = it.node;
            switch (it.kind) {
            case IK_END:
                kind = MF_END;
                break;
            case IK_SECTION:
                kind = MF_STEP;
                break;
            default:
                switch (node->kind) {
                case FZ_N_STEP:
                    kind = MF_STEP;
                    break;
                case FZ_N_VALUE:
                    kind = MF_VALUE;
                    break;
                case FZ_N_YIELD:
                    kind = MF_YIELD;
                    break;
                case FZ_N_PAR:
                    kind = MF_PAR;
                    break;
                case FZ_N_SYNC:
                    kind = MF_SYNC;
                    break;
                default:
                    kind = MF_LOOP;
                    break;
                }
                break;
            }
            frame_push(fl, kind, node);
            if (start_frame(m, fl, kind)) {
                return;
            }
            continue;
        }
        if (fl->depth == 0) {
            flow_finished(m, fl);
            return;
        }
        if (t->wait || t->par_wait) {
            return;
        }
        if (frame_complete(m, fl)) {
            return;
        }
    }
}

static const FzEh* eh_of(const MFrame* f)
{
    if ((f->kind == MF_STEP || f->kind == MF_PAR) && f->node->eh.kind != FZ_EH_NONE) {
        return &f->node->eh;
    }
    return NULL;
}

/* Error handlers from the top frame down; break/continue skip them. */
static void unwind(M* m, MFlow* fl)
{
    fl->pending_unwind = 0;
    for (;;) {
        if (fl->depth == 0) {
            flow_failed(m, fl);
            return;
        }
        MFrame* f = top(fl);
        if (fl->ctl && f->kind == MF_LOOP) {
            const char* want = fl->code[0] ? fl->code : NULL;
            const char* have = fz_loop_labels[f->node->label];
            if (!want || (have && strcmp(want, have) == 0)) {
                int ctl = fl->ctl;
                fl->ctl = CTL_NONE;
                if (ctl == CTL_BREAK) {
                    frame_pop(m, fl, 1);
                } else {
                    call_cancel(m, fl, top(fl));
                    iteration_reset(m, top(fl));
                }
                ready(m, fl);
                return;
            }
        }
        q_clear(&f->q);
        const FzEh* eh = eh_of(f);
        if (!fl->ctl && eh && !f->eh_used) {
            f->eh_used = 1;
            char nm[16];
            name_of(f->node, nm);
            tr(m, "eh %s %s %s", nm, fl->code, fz_info_col(fl->code, fl->info));
            char info[16];
            switch (eh->kind) {
            case FZ_EH_RECOVER:
                fl->out = eh->args;
                frame_pop(m, fl, 0);
                ready(m, fl);
                return;
            case FZ_EH_RETHROW:
                set_code(fl, fz_codes[eh->code]);
                snprintf(info, sizeof(info), "h%d", f->node->id);
                set_info(m, fl, info);
                break;
            case FZ_EH_ADD:
                for (int i = 0; i < eh->nkids; ++i) {
                    queue_node(f, eh->kids[i]);
                }
                if (f->q.len) {
                    ready(m, fl); /* they replace the failed step */
                    return;
                }
                break;
            case FZ_EH_BREAK:
            case FZ_EH_CONTINUE: {
                /* Loop control from a handler: no further handlers, cancel
                 * handlers of the frames left run; no loop: InternalError. */
                const char* label = fz_ctl_labels[eh->label];
                if (!find_loop(fl, label)) {
                    misuse(m, fl);
                } else {
                    set_code(fl, label ? label : "");
                    set_info(m, fl, label ? label : "");
                    fl->ctl = eh->kind == FZ_EH_BREAK ? CTL_BREAK : CTL_CONTINUE;
                }
                break;
            }
            default:
                break;
            }
        }
        frame_pop(m, fl, 1);
    }
}

/* External success() on a waiting step: it completes; the flow resumes on
 * its next turn. */
static void ext_success(M* m, MFlow* fl, const FzArgs* args)
{
    MFrame* f = top(fl);
    lock_acquired(m, f);
    ev_cancel(m, &f->timer);
    f->cancel = CAN_NONE;
    f->wait = 0;
    fl->out = *args;
    fl->pending_unwind = 0;
    ready(m, fl);
}

/* External handle_error() on a waiting step: it fails by itself (its
 * cancel handler is not called); the flow unwinds on its next turn. */
static void ext_error(M* m, MFlow* fl, const char* code, const char* info)
{
    set_code(fl, code);
    set_info(m, fl, info);
    fl->ctl = CTL_NONE;
    raise_at(m, fl, fl->depth, 1);
    ready(m, fl);
}

/* The harness's success()/error() through the flow's interface from a
 * loop callback, for whichever step the flow is at now ("Whose wait it
 * is"): a wait the step's own code made (setCancel, setTimeout,
 * waitExternal) is completed, whichever step it belongs to; an owned wait
 * (a lock queue, relinquish()) refuses it; so does a flow with no waiting
 * step. A refusal is a misuse report and changes nothing. */
static void ext_deliver(M* m, MFlow* fl, const FzNode* node)
{
    const FzBody* b = &node->body;
    int ok = b->term == FZ_T_EXT_OK;
    MRoot* r = &m->roots[fl->root];
    const char* why = NULL;
    int waits = r->state == RS_RUNNING && !fl->in_ready && !fl->pending_unwind && fl->depth > 0
            && top(fl)->wait;
    if (waits) {
        int k = top(fl)->kind;
        why = k == MF_SYNC ? "owned lock" : k == MF_YIELD ? "owned relinquish" : NULL;
    } else {
        why = r->state == RS_CANCELLED && !fl->is_branch ? "cancelled" : "not waiting";
    }
    if (why) {
        if (fl->is_branch) {
            abort(); /* model bug: only main flows get late completions */
        }
        char nm[16];
        name_of(node, nm);
        tr(m, "misuse %s %s refused: %s", nm, ok ? "success" : "error", why);
        return;
    }
    /* Someone else's (late) completion completes the step: the step's own
     * completion, if still scheduled, now arrives late as well; no cancel
     * handler stops it any more, not even that of the next iteration of a
     * loop, which reuses the frame. */
    top(fl)->ext = -1;
    if (ok) {
        ext_success(m, fl, &b->args);
    } else {
        char info[16];
        snprintf(info, sizeof(info), "x%d", node->id);
        ext_error(m, fl, fz_codes[b->code], info);
    }
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

static void run_event(M* m, int id)
{
    MEv e = m->ev[id];
    m->ev[id].live = 0;
    if (!e.imm) {
        if (e.kind == EV_WINDOW) {
            /* When the window timer was scheduled is not documented, so
             * its order among timers due at the same time is not either:
             * such a program is compared for invariants only. */
            int tie = m->fired_timer && m->fired_due == e.due;
            for (int i = 0; i < m->nev && !tie; ++i) {
                tie = m->ev[i].live && !m->ev[i].imm && m->ev[i].due == e.due;
            }
            if (tie) {
                m->ambiguous = 1;
            }
        }
        m->fired_timer = 1;
        m->fired_due = e.due;
        if (e.due > m->now) {
            m->now = e.due;
        }
    }
    switch (e.kind) {
    case EV_DISPATCH:
        m->dispatch_scheduled = 0;
        m->dispatching = 1;
        for (unsigned budget = m->p->burst; budget && m->rhead && !m->overflow; --budget) {
            MFlow* fl = m->rhead;
            unready(m, fl);
            if (fl->pending_unwind) {
                unwind(m, fl);
            } else {
                advance(m, fl);
            }
        }
        m->dispatching = 0;
        if (m->rhead && !m->dispatch_scheduled) {
            m->dispatch_scheduled = 1;
            ev_new(m, EV_DISPATCH, 1, 0);
        }
        break;
    case EV_TIMEOUT: {
        /* "the step (with its sub-steps) fails with Timeout"; a frame
         * failed by its timeout gets its cancel handler called. */
        MFlow* fl = e.fl;
        fl->frames[e.depth].timer = -1;
        set_code(fl, "Timeout");
        set_info(m, fl, "");
        fl->ctl = CTL_NONE;
        unready(m, fl);
        raise_at(m, fl, e.depth, 0);
        ready(m, fl);
        break;
    }
    case EV_EXT: {
        MFlow* fl = e.fl;
        if (e.hops > 0) {
            /* One more trip through the loop's immediates. */
            int nid = ev_new(m, EV_EXT, 1, 0);
            m->ev[nid].fl = fl;
            m->ev[nid].depth = -1;
            m->ev[nid].node = e.node;
            m->ev[nid].hops = e.hops - 1;
            break;
        }
        if (e.depth >= 0 && fl->frames[e.depth].ext == id) {
            fl->frames[e.depth].ext = -1;
        }
        ext_deliver(m, fl, e.node);
        break;
    }
    case EV_YIELD: {
        MFrame* f = &e.fl->frames[e.depth];
        f->timer = -1;
        f->wait = 0;
        ready(m, e.fl);
        break;
    }
    case EV_WINDOW:
        throttle_window_end(m, &m->sy[e.root], e.root);
        break;
    case EV_CANCEL_ROOT: {
        MRoot* r = &m->roots[e.root];
        if (r->state == RS_RUNNING) {
            flow_abort(m, r->main);
            r->state = RS_CANCELLED;
        }
        break;
    }
    default:
        break;
    }
}

int fz_model_run(const FzProg* p, FzStr* out)
{
    M m;
    memset(&m, 0, sizeof(m));
    m.p = p;
    m.out = out;
    for (int i = 0; i < FZ_NSYNC + 2; ++i) {
        m.sy[i].timer = -1;
        m.sy[i].owner = -1;
    }
    for (int i = 0; i < FZ_NSYNC; ++i) {
        MSync* x = &m.sy[i];
        if (FZ_SYNC_IS_THROTTLE(i)) {
            const FzThrottle* t = &p->throttle[i - FZ_SYNC_THROTTLE0];
            x->kind = SK_THROTTLE;
            x->max = t->max;
            x->period = t->period_ms;
            x->max_queue = t->max_queue;
        } else if (FZ_SYNC_IS_LIMITER(i)) {
            const FzLimiter* l = &p->limiter[i - FZ_SYNC_LIMITER0];
            MSync* r = &m.sy[FZ_NSYNC + i - FZ_SYNC_LIMITER0];
            x->kind = SK_LIMITER;
            x->max = l->concurrent;
            x->max_queue = l->max_queue;
            x->part = FZ_NSYNC + i - FZ_SYNC_LIMITER0;
            r->kind = SK_THROTTLE;
            r->owner = i;
            r->max = l->rate;
            r->period = l->period_ms;
            r->max_queue = l->burst;
        } else {
            x->kind = SK_MUTEX;
            x->max = p->mutex[i].max;
            x->max_queue = p->mutex[i].max_queue;
        }
    }
    for (int i = 0; i < p->nroots; ++i) {
        MRoot* r = &m.roots[i];
        r->main = flow_new(&m, i, NULL);
        for (int j = 0; j < p->roots[i].ntop; ++j) {
            queue_node(&r->main->frames[0], p->roots[i].top[j]);
        }
        q_push(&r->main->frames[0].q, NULL, IK_END);
    }
    for (int i = 0; i < p->nroots; ++i) {
        if (p->roots[i].cancel_at != FZ_NO_CANCEL) {
            int id = ev_new(&m, EV_CANCEL_ROOT, 0, p->roots[i].cancel_at);
            m.ev[id].root = i;
        }
    }
    for (int i = 0; i < p->nroots; ++i) {
        m.roots[i].state = RS_RUNNING;
        m.roots[i].main->info[0] = 0;
        ready(&m, m.roots[i].main);
    }
    for (;;) {
        if (m.overflow) {
            break;
        }
        int id = ev_next(&m);
        if (id < 0) {
            break;
        }
        run_event(&m, id);
    }
    int rc = m.overflow ? -1 : m.ambiguous ? 1 : 0;
    if (!rc) {
        fz_str_addf(out, "t%llu idle\n", (unsigned long long)m.now);
        for (int i = 0; i < p->nroots; ++i) {
            static const char* const st[] = { "idle", "stalled", "done", "failed", "cancelled" };
            fz_str_addf(out, "outcome r%d %s\n", i, st[m.roots[i].state]);
        }
        /* free(): a running root is cancelled first. */
        for (int i = 0; i < p->nroots; ++i) {
            if (m.roots[i].state == RS_RUNNING) {
                flow_abort(&m, m.roots[i].main);
                m.roots[i].state = RS_CANCELLED;
            }
        }
    }
    while (m.all) {
        MFlow* fl = m.all;
        m.all = fl->all_next;
        for (int d = 0; d < fl->cap; ++d) {
            q_free(&fl->frames[d].q);
        }
        free(fl->frames);
        free(fl);
    }
    for (int i = 0; i < FZ_NSYNC + 2; ++i) {
        free(m.sy[i].q);
        free(m.sy[i].h);
    }
    free(m.ev);
    return rc;
}
