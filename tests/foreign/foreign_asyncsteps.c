/*
 * SPDX-License-Identifier: MIT
 *
 * The foreign AsyncSteps (prefix frn_): an independent, strict implementation
 * of the FTN12 binary AsyncSteps interface, written from the specification
 * (FTN12 1.x sections 1 and 2.7) only. See foreign_asyncsteps.h for the
 * public surface.
 *
 * Design in short:
 * - Every step is a heap frame whose first member is the FutoInAsyncSteps
 *   handed to its callbacks, so that pointer stays valid for as long as the
 *   step lives (the other library may keep it while the flow waits in one of
 *   its queues). A parallel step has a second interface, the "adder", whose
 *   add() creates branches.
 * - A flow is one sequential thread of steps: the root's main flow or one
 *   parallel branch. Each runnable flow has one immediate on the loop and
 *   runs at most one user step or error handler per turn, so concurrent flows
 *   interleave one step at a time. External success()/error() only record
 *   the outcome and queue the flow.
 * - Execution, unwinding and teardown walk parent pointers and explicit work
 *   lists, never the C stack, so nesting depth costs heap only.
 * - Nothing of a root is released while one of its callbacks is on the C
 *   stack (depth counter): dead objects are parked and released when the
 *   outermost callback returns. cancel()/free() requested while the engine is
 *   itself calling cancel handlers or cleanups (busy counter) are deferred to
 *   the end of that work, so no walk is disturbed half-way.
 * - Released frames and roots stay in a bounded quarantine as dead shells, so
 *   that a late success() on a finished step is reported as a violation
 *   instead of writing to freed memory.
 */
#include "foreign_asyncsteps.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Event loop with a virtual clock                                           */
/* ------------------------------------------------------------------------ */

enum { EV_FREE = 0, EV_IMM = 1, EV_TIMER = 2 };

typedef struct FrnEv {
    void (*cb)(void* data);
    void* data;
    uint64_t due;
    uint64_t seq;
    uint32_t gen;
    uint32_t next;
    uint32_t prev;
    uint32_t hpos;
    uint8_t kind;
    uint8_t user; /* scheduled through sched_*: only these are reachable by handles */
} FrnEv;

/* Dead shells kept before their memory goes back to malloc. */
#define FRN_QUARANTINE 4096u

typedef struct FrnRoot FrnRoot;
typedef struct FrnFlow FrnFlow;
typedef struct FrnFrame FrnFrame;
typedef struct FrnBlock FrnBlock;
typedef struct FrnVar FrnVar;

struct FrnLoop {
    /* Slot 0 is never used, so index 0 means "none". */
    FrnEv* ev;
    uint32_t ev_cap;
    uint32_t free_head;
    uint32_t imm_head;
    uint32_t imm_tail;
    size_t n_imm;
    uint32_t* heap;
    size_t n_heap;
    size_t heap_cap;
    uint64_t now;
    uint64_t seq;
    int in_run;
    FrnViolationHandler vh;
    void* vdata;
    FrnMisuseHandler mh;
    void* mdata;
    unsigned opts;
    size_t live;
    FrnRoot* roots;
    void* quar[FRN_QUARANTINE];
    size_t quar_n;
    size_t quar_pos;
};

static void* xcalloc(size_t n, size_t sz)
{
    void* p = calloc(n, sz);
    if (!p) {
        fputs("frn: out of memory\n", stderr);
        abort();
    }
    return p;
}

static char* str_dup(const char* s)
{
    size_t n = strlen(s) + 1;
    char* p = xcalloc(1, n);
    memcpy(p, s, n);
    return p;
}

static void default_violation(void* data, const char* what)
{
    (void)data;
    fprintf(stderr, "frn: VIOLATION: %s\n", what);
    abort();
}

static void default_misuse(void* data, const char* what)
{
    (void)data;
    fprintf(stderr, "frn: MISUSE: %s\n", what);
    abort();
}

static void violation(FrnLoop* l, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    l->vh(l->vdata, buf);
}

static void misuse(FrnLoop* l, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    l->mh(l->mdata, buf);
}

static uint32_t ev_new(FrnLoop* l)
{
    if (!l->free_head) {
        uint32_t old = l->ev_cap;
        uint32_t cap = old ? old * 2 : 64;
        uint32_t first = old ? old : 1;
        FrnEv* n = realloc(l->ev, (size_t)cap * sizeof *n);
        if (!n) {
            fputs("frn: out of memory\n", stderr);
            abort();
        }
        memset(n + old, 0, (size_t)(cap - old) * sizeof *n);
        for (uint32_t i = cap; i-- > first;) {
            n[i].gen = 1;
            n[i].next = l->free_head;
            l->free_head = i;
        }
        l->ev = n;
        l->ev_cap = cap;
    }
    uint32_t i = l->free_head;
    l->free_head = l->ev[i].next;
    l->ev[i].next = 0;
    l->ev[i].prev = 0;
    return i;
}

static void ev_release(FrnLoop* l, uint32_t i)
{
    FrnEv* e = &l->ev[i];
    e->kind = EV_FREE;
    e->cb = NULL;
    e->data = NULL;
    e->user = 0;
    /* A new generation makes every handle to the old event stale. */
    if (++e->gen == 0) {
        e->gen = 1;
    }
    e->next = l->free_head;
    l->free_head = i;
}

static int ev_before(const FrnLoop* l, uint32_t a, uint32_t b)
{
    const FrnEv* x = &l->ev[a];
    const FrnEv* y = &l->ev[b];
    return x->due < y->due || (x->due == y->due && x->seq < y->seq);
}

static void heap_set(FrnLoop* l, size_t pos, uint32_t i)
{
    l->heap[pos] = i;
    l->ev[i].hpos = (uint32_t)pos;
}

static void heap_up(FrnLoop* l, size_t pos)
{
    uint32_t i = l->heap[pos];
    while (pos) {
        size_t p = (pos - 1) / 2;
        if (!ev_before(l, i, l->heap[p])) {
            break;
        }
        heap_set(l, pos, l->heap[p]);
        pos = p;
    }
    heap_set(l, pos, i);
}

static void heap_down(FrnLoop* l, size_t pos)
{
    uint32_t i = l->heap[pos];
    for (;;) {
        size_t c = 2 * pos + 1;
        if (c >= l->n_heap) {
            break;
        }
        if (c + 1 < l->n_heap && ev_before(l, l->heap[c + 1], l->heap[c])) {
            ++c;
        }
        if (!ev_before(l, l->heap[c], i)) {
            break;
        }
        heap_set(l, pos, l->heap[c]);
        pos = c;
    }
    heap_set(l, pos, i);
}

static void heap_remove(FrnLoop* l, size_t pos)
{
    uint32_t last = l->heap[--l->n_heap];
    if (pos < l->n_heap) {
        heap_set(l, pos, last);
        heap_up(l, pos);
        heap_down(l, l->ev[last].hpos);
    }
}

static uint32_t ev_immediate(FrnLoop* l, void (*cb)(void*), void* data)
{
    uint32_t i = ev_new(l);
    FrnEv* e = &l->ev[i];
    e->kind = EV_IMM;
    e->cb = cb;
    e->data = data;
    e->seq = l->seq++;
    e->prev = l->imm_tail;
    e->next = 0;
    if (l->imm_tail) {
        l->ev[l->imm_tail].next = i;
    } else {
        l->imm_head = i;
    }
    l->imm_tail = i;
    l->n_imm++;
    return i;
}

static uint32_t ev_timer(FrnLoop* l, uint64_t delay, void (*cb)(void*), void* data)
{
    uint32_t i = ev_new(l);
    FrnEv* e = &l->ev[i];
    e->kind = EV_TIMER;
    e->cb = cb;
    e->data = data;
    e->due = l->now + delay;
    e->seq = l->seq++;
    if (l->n_heap == l->heap_cap) {
        size_t cap = l->heap_cap ? l->heap_cap * 2 : 64;
        uint32_t* h = realloc(l->heap, cap * sizeof *h);
        if (!h) {
            fputs("frn: out of memory\n", stderr);
            abort();
        }
        l->heap = h;
        l->heap_cap = cap;
    }
    heap_set(l, l->n_heap++, i);
    heap_up(l, l->n_heap - 1);
    return i;
}

static void imm_unlink(FrnLoop* l, uint32_t i)
{
    FrnEv* e = &l->ev[i];
    if (e->prev) {
        l->ev[e->prev].next = e->next;
    } else {
        l->imm_head = e->next;
    }
    if (e->next) {
        l->ev[e->next].prev = e->prev;
    } else {
        l->imm_tail = e->prev;
    }
    l->n_imm--;
}

static int ev_alive(const FrnLoop* l, uint32_t i, uint32_t gen)
{
    return i && i < l->ev_cap && l->ev[i].kind != EV_FREE && l->ev[i].gen == gen;
}

static void ev_cancel(FrnLoop* l, uint32_t i)
{
    FrnEv* e = &l->ev[i];
    if (e->kind == EV_IMM) {
        imm_unlink(l, i);
    } else if (e->kind == EV_TIMER) {
        heap_remove(l, e->hpos);
    } else {
        return;
    }
    ev_release(l, i);
}

FrnLoop* frn_loop_new(void)
{
    FrnLoop* l = xcalloc(1, sizeof *l);
    l->vh = default_violation;
    l->mh = default_misuse;
    return l;
}

uint64_t frn_loop_now(const FrnLoop* l)
{
    return l->now;
}

void frn_loop_set_now(FrnLoop* l, uint64_t ms)
{
    if (ms > l->now) {
        l->now = ms;
    }
}

int64_t frn_loop_next_due(const FrnLoop* l)
{
    return l->n_heap ? (int64_t)l->ev[l->heap[0]].due : -1;
}

size_t frn_loop_pending(const FrnLoop* l)
{
    return l->n_imm + l->n_heap;
}

size_t frn_loop_run_ready(FrnLoop* l)
{
    if (l->in_run) {
        violation(l, "frn_loop_run_ready() called from inside one of its own callbacks");
        return 0;
    }
    l->in_run = 1;
    /* Work queued by the callbacks waits for the next call, so that one call
     * is one bounded round even when callbacks keep scheduling. */
    const uint64_t limit = l->seq;
    size_t ran = 0;
    while (l->imm_head && l->ev[l->imm_head].seq < limit) {
        uint32_t i = l->imm_head;
        void (*cb)(void*) = l->ev[i].cb;
        void* data = l->ev[i].data;
        imm_unlink(l, i);
        ev_release(l, i);
        cb(data);
        ++ran;
    }
    while (l->n_heap) {
        uint32_t i = l->heap[0];
        if (l->ev[i].due > l->now || l->ev[i].seq >= limit) {
            break;
        }
        void (*cb)(void*) = l->ev[i].cb;
        void* data = l->ev[i].data;
        heap_remove(l, 0);
        ev_release(l, i);
        cb(data);
        ++ran;
    }
    l->in_run = 0;
    return ran;
}

size_t frn_loop_run_all(FrnLoop* l, size_t limit)
{
    size_t total = 0;
    while (total < limit && frn_loop_pending(l)) {
        size_t n = frn_loop_run_ready(l);
        total += n;
        if (!n) {
            int64_t due = frn_loop_next_due(l);
            if (due < 0) {
                break;
            }
            frn_loop_set_now(l, (uint64_t)due);
        }
    }
    return total;
}

void frn_set_violation_handler(FrnLoop* l, FrnViolationHandler h, void* data)
{
    l->vh = h ? h : default_violation;
    l->vdata = h ? data : NULL;
}

void frn_set_misuse_handler(FrnLoop* l, FrnMisuseHandler h, void* data)
{
    l->mh = h ? h : default_misuse;
    l->mdata = h ? data : NULL;
}

void frn_set_options(FrnLoop* l, unsigned opts)
{
    l->opts = opts;
}

size_t frn_live_objects(const FrnLoop* l)
{
    return l->live;
}

static void quarantine(FrnLoop* l, void* shell)
{
    if (l->quar_n == FRN_QUARANTINE) {
        free(l->quar[l->quar_pos]);
        l->quar[l->quar_pos] = shell;
        l->quar_pos = (l->quar_pos + 1) % FRN_QUARANTINE;
    } else {
        l->quar[(l->quar_pos + l->quar_n) % FRN_QUARANTINE] = shell;
        l->quar_n++;
    }
}

/* ------------------------------------------------------------------------ */
/* Engine objects                                                            */
/* ------------------------------------------------------------------------ */

enum Kind {
    K_TOP,    /* container of a root's main flow */
    K_STEP,   /* add() */
    K_PAR,    /* parallel(): branches while running, sub-steps once its eh added some */
    K_BRANCH, /* container of one parallel branch flow */
    K_LOOP,   /* loop() */
    K_REPEAT, /* repeat() */
    K_ITER,   /* one loop/repeat body call */
    K_SYNC,   /* addSync(): runs a lock step, then the critical section */
    K_LOCK,   /* calls sync->lock() */
    K_SECTION /* the critical-section step (f, eh) */
};

enum State {
    ST_QUEUED,   /* not started */
    ST_RUN,      /* its step callback is running */
    ST_ERRH,     /* its error handler is running */
    ST_SUBS,     /* executing sub-steps (or: between states, neither current nor waiting) */
    ST_WAIT,     /* waiting for an external success()/error() */
    ST_RESOLVED, /* got its external outcome; the flow is queued to act on it */
    ST_ENDING,   /* being completed or aborted: cancel handler / unlock / cleanups run */
    ST_DEAD
};

enum Out { OUT_NONE, OUT_SUCCESS, OUT_ERROR, OUT_BREAK, OUT_CONT };

#define MAGIC_ROOT 0x46524e52u
#define MAGIC_ROOT_DEAD 0x64656164u

typedef void (*LoopFn)(FutoInAsyncSteps* bsi, void* data);
typedef void (*RepeatFn)(FutoInAsyncSteps* bsi, void* data, size_t i);

struct FrnBlock {
    FrnBlock* next;
    void (*cleanup)(void* value);
    void* mem;
};

struct FrnVar {
    FrnVar* next;
    char* name;
    void* value;
    void* data;
    void (*cleanup)(void* data, void* value);
};

struct FrnFrame {
    FutoInAsyncSteps iface; /* first: the bsi handed to this step's callbacks */
    FutoInAsyncSteps adder; /* K_PAR only: parallel()'s result */
    uint8_t kind;
    uint8_t state;
    uint8_t out;      /* outcome recorded by the current callback / external call */
    uint8_t waiting;  /* setCancel/setTimeout/waitExternal in its callback */
    uint8_t eh_done;  /* its error handler replaced it with sub-steps: never again */
    uint8_t ch_first; /* call the cancel handler before unwinding its own error */
    uint8_t locked;   /* K_SYNC: lock granted, unlock owed */
    size_t lvl;       /* depth in the frame tree, across branches */
    FrnLoop* loop;
    FrnRoot* root;
    FrnFlow* flow; /* the flow running it (K_BRANCH: the branch's own flow) */
    FrnFrame* parent;
    FrnFrame* next; /* sibling in the parent's queue; also dead/work list link */
    FrnFrame* prev;
    FrnFrame* q_head; /* queued sub-steps; K_PAR: its branches */
    FrnFrame* q_tail;
    FrnFrame* active; /* started sub-step */
    void* data;
    FutoInAsyncSteps_execute_callback f;
    LoopFn lf;
    RepeatFn rf;
    FutoInAsyncSteps_error_callback eh;
    FutoInAsyncSteps_cancel_callback ch;
    void* ch_data;
    uint32_t tm;
    uint32_t tm_gen;
    FutoInArgs out_args;
    char* out_str; /* error code, or break/continue label */
    FrnBlock* stack;
    char* label;
    size_t count;
    size_t iter;
    FutoInSync* sync;
    FutoInArgs* held; /* K_SYNC: the incoming args, kept for the section */
    size_t n_live;    /* K_PAR: branches still running */
    uint8_t failed;   /* K_PAR: a branch failed */
};

struct FrnFlow {
    FrnRoot* root;
    FrnFrame* container;
    FrnFrame* cur;    /* innermost started frame */
    FutoInArgs carry; /* result of the last completed step, for the next one */
    uint8_t err_active;
    uint8_t err_kind;
    uint8_t dead;
    uint8_t idle;
    uint8_t sched;
    char* err_str;
    FrnFrame* err_frame; /* where the pending error/break/continue unwinds from */
    uint32_t imm;
    uint32_t imm_gen;
    FrnFlow* next_dead;
};

struct FrnRoot {
    FutoInAsyncSteps iface;
    uint32_t magic;
    FrnLoop* loop;
    FrnFrame* top;
    FrnFlow* main;
    FrnVar* vars; /* newest first: also the cleanup order */
    char* error_info;
    void* exec_data;
    FutoInAsyncSteps_error_callback unhandled;
    uint8_t running;
    uint8_t freed;
    uint8_t cancel_req;
    uint8_t free_req;
    unsigned depth; /* engine frames of this root on the C stack */
    unsigned busy;  /* engine walks in progress: cancel/free wait */
    unsigned epoch; /* bumped by every cancel */
    FrnFrame* dead_frames;
    FrnFlow* dead_flows;
    FrnRoot* next;
    FrnRoot* prev;
};

static const FutoInAsyncStepsAPI g_step_api;
static const FutoInAsyncStepsAPI g_adder_api;
static const FutoInAsyncStepsAPI g_root_api;

static const char* const kInternalError = "InternalError";

static void set_api(FutoInAsyncSteps* b, const FutoInAsyncStepsAPI* api)
{
    /* The api member is const-qualified; the object is fresh heap memory. */
    FutoInAsyncSteps init = { api };
    memcpy(b, &init, sizeof init);
}

static void args_clean(FutoInArgs* a)
{
    for (int i = 0; i < 4; ++i) {
        futoin_reset_binval(&a->args[i]);
    }
}

static void set_error_info(FrnRoot* r, const char* info)
{
    /* Copy first: info may be the current error_info itself. */
    char* n = str_dup(info ? info : "");
    free(r->error_info);
    r->error_info = n;
}

/* ---- lifetime --------------------------------------------------------- */

static FrnFrame* frame_new(FrnRoot* r, int kind)
{
    FrnFrame* X = xcalloc(1, sizeof *X);
    set_api(&X->iface, &g_step_api);
    X->kind = (uint8_t)kind;
    X->state = ST_QUEUED;
    X->loop = r->loop;
    X->root = r;
    r->loop->live++;
    return X;
}

static FrnFlow* flow_new(FrnRoot* r)
{
    FrnFlow* fl = xcalloc(1, sizeof *fl);
    fl->root = r;
    fl->idle = 1;
    r->loop->live++;
    return fl;
}

static void bury_frame(FrnRoot* r, FrnFrame* X)
{
    X->state = ST_DEAD;
    X->next = r->dead_frames;
    r->dead_frames = X;
}

static void frame_release(FrnLoop* l, FrnFrame* X)
{
    while (X->stack) {
        FrnBlock* b = X->stack;
        X->stack = b->next;
        free(b->mem);
        free(b);
        l->live--;
    }
    l->live--;
    quarantine(l, X);
}

static void root_release(FrnRoot* r)
{
    FrnLoop* l = r->loop;
    if (r->prev) {
        r->prev->next = r->next;
    } else {
        l->roots = r->next;
    }
    if (r->next) {
        r->next->prev = r->prev;
    }
    free(r->error_info);
    r->error_info = NULL;
    r->magic = MAGIC_ROOT_DEAD;
    l->live--;
    quarantine(l, r);
}

static void futoin__root_hold(FrnRoot* r)
{
    r->depth++;
}

static void futoin__root_unhold(FrnRoot* r)
{
    if (--r->depth) {
        return;
    }
    FrnLoop* l = r->loop;
    while (r->dead_frames) {
        FrnFrame* X = r->dead_frames;
        r->dead_frames = X->next;
        frame_release(l, X);
    }
    while (r->dead_flows) {
        FrnFlow* fl = r->dead_flows;
        r->dead_flows = fl->next_dead;
        free(fl);
        l->live--;
    }
    if (r->freed) {
        root_release(r);
    }
}

static void do_cancel(FrnRoot* r);
static void do_free(FrnRoot* r);

static void busy_enter(FrnRoot* r)
{
    r->busy++;
}

static void busy_leave(FrnRoot* r)
{
    if (--r->busy) {
        return;
    }
    while (r->cancel_req || r->free_req) {
        r->busy++;
        if (r->free_req) {
            r->free_req = 0;
            r->cancel_req = 0;
            if (!r->freed) {
                do_free(r);
            }
        } else {
            r->cancel_req = 0;
            if (!r->freed) {
                do_cancel(r);
            }
        }
        r->busy--;
    }
}

/* Around step callbacks and error handlers: the engine is not walking
 * anything then, so cancel()/free() from inside take effect at once. Returns
 * 0 (and stays busy) if a deferred cancel ran and the call must not happen. */
static int user_begin(FrnRoot* r, unsigned ep)
{
    busy_leave(r);
    if (r->epoch != ep) {
        r->busy++;
        return 0;
    }
    return 1;
}

static void user_end(FrnRoot* r)
{
    r->busy++;
}

/* ---- lists -------------------------------------------------------------- */

static void list_push(FrnFrame* P, FrnFrame* X)
{
    X->parent = P;
    X->next = NULL;
    X->prev = P->q_tail;
    if (P->q_tail) {
        P->q_tail->next = X;
    } else {
        P->q_head = X;
    }
    P->q_tail = X;
}

static void list_unlink(FrnFrame* P, FrnFrame* X)
{
    if (X->prev) {
        X->prev->next = X->next;
    } else {
        P->q_head = X->next;
    }
    if (X->next) {
        X->next->prev = X->prev;
    } else {
        P->q_tail = X->prev;
    }
    X->next = X->prev = NULL;
}

/* ---- loop events owned by flows and frames ------------------------------ */

static void flow_tick(void* p);
static void frame_timeout(void* p);

static void schedule(FrnFlow* fl)
{
    if (fl->sched || fl->dead) {
        return;
    }
    FrnLoop* l = fl->root->loop;
    fl->imm = ev_immediate(l, flow_tick, fl);
    fl->imm_gen = l->ev[fl->imm].gen;
    fl->sched = 1;
}

static void unschedule(FrnFlow* fl)
{
    if (fl->sched) {
        FrnLoop* l = fl->root->loop;
        if (ev_alive(l, fl->imm, fl->imm_gen)) {
            ev_cancel(l, fl->imm);
        }
        fl->sched = 0;
    }
}

static void timer_cancel(FrnFrame* X)
{
    if (X->tm) {
        if (ev_alive(X->loop, X->tm, X->tm_gen)) {
            ev_cancel(X->loop, X->tm);
        }
        X->tm = 0;
    }
}

static void timer_arm(FrnFrame* X, uint32_t ms)
{
    timer_cancel(X);
    X->tm = ev_timer(X->loop, ms, frame_timeout, X);
    X->tm_gen = X->loop->ev[X->tm].gen;
}

/* ---- teardown ----------------------------------------------------------- */

static void drop_carry(FrnFlow* fl)
{
    args_clean(&fl->carry);
}

static void flow_kill(FrnFlow* fl)
{
    FrnRoot* r = fl->root;
    unschedule(fl);
    args_clean(&fl->carry);
    free(fl->err_str);
    fl->err_str = NULL;
    fl->err_active = 0;
    fl->dead = 1;
    fl->idle = 1;
    fl->next_dead = r->dead_flows;
    r->dead_flows = fl;
}

/* Frames that never started: no callbacks of theirs ran, so no cancel
 * handlers or cleanups are owed; a work list keeps nested parallels and
 * their queued branches off the C stack. */
static void destroy_queue(FrnRoot* r, FrnFrame* F)
{
    FrnFrame* work = F->q_head;
    F->q_head = F->q_tail = NULL;
    while (work) {
        FrnFrame* X = work;
        work = X->next;
        if (X->q_head) {
            X->q_tail->next = work;
            work = X->q_head;
            X->q_head = X->q_tail = NULL;
        }
        if (X->kind == K_BRANCH && X->flow) {
            flow_kill(X->flow);
            X->flow = NULL;
        }
        free(X->label);
        X->label = NULL;
        bury_frame(r, X);
    }
}

/* X has no started sub-steps left. */
static void frame_finish(FrnRoot* r, FrnFrame* X)
{
    FrnFrame* P = X->parent;
    if (P) {
        if (P->active == X) {
            P->active = NULL;
        } else if (X->kind == K_BRANCH) {
            list_unlink(P, X);
            P->n_live--;
        }
    }
    destroy_queue(r, X);
    /* Newest block first, like automatic storage. The memory itself goes
     * when the frame is released: a callback still on the stack may hold it. */
    for (FrnBlock* b = X->stack; b; b = b->next) {
        b->cleanup(b->mem);
    }
    args_clean(&X->out_args);
    if (X->held) {
        args_clean(X->held);
        free(X->held);
        X->held = NULL;
    }
    free(X->out_str);
    X->out_str = NULL;
    free(X->label);
    X->label = NULL;
    X->out = OUT_NONE;
    bury_frame(r, X);
}

/* X is abandoned before completing: its cancel handler runs and a lock it
 * holds is released. */
static void abort_one(FrnRoot* r, FrnFrame* X)
{
    X->state = ST_ENDING;
    timer_cancel(X);
    if (X->ch) {
        FutoInAsyncSteps_cancel_callback ch = X->ch;
        X->ch = NULL;
        ch(&X->iface, X->ch_data);
    }
    if (X->kind == K_SYNC && X->locked) {
        X->locked = 0;
        X->sync->api->unlock(&X->iface, X->sync);
    }
    if (X->kind == K_BRANCH && X->flow) {
        flow_kill(X->flow);
    }
    frame_finish(r, X);
}

static int par_running(const FrnFrame* X)
{
    return X->kind == K_PAR && X->state == ST_SUBS && !X->eh_done;
}

static FrnFrame* descend(FrnFrame* X)
{
    for (;;) {
        if (par_running(X) && X->q_head) {
            X = X->q_head;
        } else if (X->active) {
            X = X->active;
        } else {
            return X;
        }
    }
}

/* Aborts everything started below G, innermost first (branches in order),
 * without recursion: after each leaf, continue from its parent. */
static void abort_below(FrnRoot* r, FrnFrame* G)
{
    FrnFrame* X = descend(G);
    while (X != G) {
        FrnFrame* P = X->parent;
        abort_one(r, X);
        X = descend(P);
    }
}

static void do_cancel(FrnRoot* r)
{
    FrnFlow* fl = r->main;
    r->epoch++;
    abort_below(r, r->top);
    destroy_queue(r, r->top);
    unschedule(fl);
    drop_carry(fl);
    free(fl->err_str);
    fl->err_str = NULL;
    fl->err_active = 0;
    fl->idle = 1;
    fl->cur = r->top;
    r->running = 0;
}

static void do_free(FrnRoot* r)
{
    do_cancel(r);
    r->freed = 1;
    bury_frame(r, r->top);
    r->main->dead = 1;
    r->main->next_dead = r->dead_flows;
    r->dead_flows = r->main;
    while (r->vars) {
        FrnVar* v = r->vars;
        r->vars = v->next;
        if (v->cleanup) {
            v->cleanup(v->data, v->value);
        }
        free(v->name);
        free(v);
        r->loop->live--;
    }
}

/* ------------------------------------------------------------------------ */
/* Execution                                                                 */
/* ------------------------------------------------------------------------ */

enum { RC_CONT, RC_RAN, RC_STOP };

static void start_error(FrnFlow* fl, FrnFrame* X, int kind, char* str, int timeout)
{
    if (fl->err_active) {
        free(fl->err_str);
    }
    fl->err_active = 1;
    fl->err_kind = (uint8_t)kind;
    fl->err_str = str;
    fl->err_frame = X;
    if (X->ch) {
        if (timeout || (X->loop->opts & FRN_OPT_CANCEL_ON_OWN_ERROR)) {
            X->ch_first = 1;
        } else {
            /* The step reported its own failure: nothing left to cancel. */
            X->ch = NULL;
        }
    }
    if (X->state == ST_RUN || X->state == ST_WAIT || X->state == ST_RESOLVED
            || X->state == ST_ERRH) {
        X->state = ST_SUBS;
    }
}

static void clear_err(FrnFlow* fl)
{
    free(fl->err_str);
    fl->err_str = NULL;
    fl->err_active = 0;
}

/* X completed; fl->carry holds its result. */
static void complete_frame(FrnFlow* fl, FrnFrame* X)
{
    FrnRoot* r = fl->root;
    FrnFrame* P = X->parent;
    if (X->kind == K_LOCK) {
        P->locked = 1;
    }
    X->state = ST_ENDING;
    X->ch = NULL;
    timer_cancel(X);
    if (X->kind == K_SYNC && X->locked) {
        X->locked = 0;
        X->sync->api->unlock(&X->iface, X->sync);
    }
    frame_finish(r, X);
    fl->cur = P;
}

static void push_iter(FrnFrame* L)
{
    FrnFrame* I = frame_new(L->root, K_ITER);
    I->lf = L->lf;
    I->rf = L->rf;
    I->data = L->data;
    I->iter = L->iter;
    list_push(L, I);
}

static void branch_start(FrnFrame* P, FrnFrame* B)
{
    FrnFlow* fl = flow_new(P->root);
    fl->container = B;
    fl->cur = B;
    fl->idle = 0;
    B->flow = fl;
    B->state = ST_SUBS;
    B->lvl = P->lvl + 1;
    P->n_live++;
    schedule(fl);
}

static void branch_done(FrnFlow* fl, FrnFrame* B)
{
    FrnRoot* r = fl->root;
    FrnFrame* P = B->parent;
    FrnFlow* pf = P->flow;
    drop_carry(fl);
    B->state = ST_ENDING;
    flow_kill(fl);
    frame_finish(r, B);
    if (P->n_live == 0 && !P->failed && !pf->err_active) {
        /* success() of a parallel step carries no arguments */
        drop_carry(pf);
        complete_frame(pf, P);
        schedule(pf);
    }
}

static void branch_failed(FrnFlow* fl, FrnFrame* B)
{
    FrnRoot* r = fl->root;
    FrnFrame* P = B->parent;
    FrnFlow* pf = P->flow;
    int kind = fl->err_kind;
    char* s = fl->err_str;
    fl->err_str = NULL;
    fl->err_active = 0;
    B->state = ST_ENDING;
    flow_kill(fl);
    frame_finish(r, B);
    P->failed = 1;
    abort_below(r, P); /* the sibling branches */
    if (pf->err_active) {
        /* an error above P is already unwinding past it */
        free(s);
        return;
    }
    start_error(pf, P, kind, s, 0);
    schedule(pf);
}

static int label_match(const FrnFrame* L, const char* label)
{
    return (L->kind == K_LOOP || L->kind == K_REPEAT)
            && (!label || (L->label && strcmp(L->label, label) == 0));
}

static void unwind_one(FrnFlow* fl, FrnFrame* G)
{
    FrnFrame* P = G->parent;
    abort_one(fl->root, G);
    fl->cur = P;
    fl->err_frame = P;
}

static void run_exec(FrnFlow* fl, FrnFrame* X, unsigned ep)
{
    FrnRoot* r = fl->root;
    FutoInArgs in;
    memset(&in, 0, sizeof in);
    if (X->kind == K_STEP) {
        in = fl->carry;
        memset(&fl->carry, 0, sizeof fl->carry);
    } else {
        drop_carry(fl);
        if (X->kind == K_SECTION && X->parent->held) {
            /* spec 1.11.3: the incoming args go to the critical section */
            in = *X->parent->held;
            memset(X->parent->held, 0, sizeof *X->parent->held);
        }
    }
    X->state = ST_RUN;
    X->out = OUT_NONE;
    X->waiting = 0;
    if (user_begin(r, ep)) {
        switch (X->kind) {
        case K_STEP:
        case K_SECTION:
            X->f(&X->iface, X->data, &in);
            break;
        case K_ITER:
            if (X->rf) {
                X->rf(&X->iface, X->data, X->iter);
            } else {
                X->lf(&X->iface, X->data);
            }
            break;
        case K_LOCK: {
            FutoInSync* s = X->parent->sync;
            s->api->lock(&X->iface, s);
            break;
        }
        default:
            break;
        }
        user_end(r);
    }
    args_clean(&in);
    if (r->epoch != ep) {
        return;
    }
    switch (X->out) {
    case OUT_ERROR:
    case OUT_BREAK:
    case OUT_CONT: {
        int k = X->out;
        char* s = X->out_str;
        X->out_str = NULL;
        X->out = OUT_NONE;
        destroy_queue(r, X);
        start_error(fl, X, k, s, 0);
        return;
    }
    case OUT_SUCCESS:
        drop_carry(fl);
        fl->carry = X->out_args;
        memset(&X->out_args, 0, sizeof X->out_args);
        X->out = OUT_NONE;
        complete_frame(fl, X);
        return;
    default:
        break;
    }
    if (X->q_head) {
        X->state = ST_SUBS;
    } else if (X->waiting) {
        X->state = ST_WAIT;
    } else {
        complete_frame(fl, X); /* implicit success */
    }
}

/* Returns 1 if a user step callback ran. */
static int start_next(FrnFlow* fl, FrnFrame* F, unsigned ep)
{
    FrnRoot* r = fl->root;
    FrnFrame* X = F->q_head;
    list_unlink(F, X);
    X->parent = F;
    F->active = X;
    X->flow = fl;
    X->lvl = F->lvl + 1;
    fl->cur = X;
    switch (X->kind) {
    case K_PAR:
        drop_carry(fl);
        X->state = ST_SUBS;
        if (!X->q_head) {
            complete_frame(fl, X);
        } else {
            for (FrnFrame* B = X->q_head; B; B = B->next) {
                branch_start(X, B);
            }
        }
        return 0;
    case K_LOOP:
    case K_REPEAT:
        drop_carry(fl);
        X->state = ST_SUBS;
        X->iter = 0;
        if (X->kind == K_REPEAT && X->count == 0) {
            complete_frame(fl, X);
        } else {
            push_iter(X);
        }
        return 0;
    case K_SYNC: {
        X->held = xcalloc(1, sizeof *X->held);
        *X->held = fl->carry;
        memset(&fl->carry, 0, sizeof fl->carry);
        X->state = ST_SUBS;
        FrnFrame* L = frame_new(r, K_LOCK);
        list_push(X, L);
        FrnFrame* C = frame_new(r, K_SECTION);
        C->f = X->f;
        C->eh = X->eh;
        C->data = X->data;
        /* The handler guards the critical section only: it runs while the
         * lock is held, and errors of lock() itself go past it. */
        X->eh = NULL;
        list_push(X, C);
        return 0;
    }
    default:
        run_exec(fl, X, ep);
        return 1;
    }
}

/* F ran out of sub-steps. Returns 1 if the flow stops. */
static int subs_done(FrnFlow* fl, FrnFrame* F)
{
    FrnRoot* r = fl->root;
    switch (F->kind) {
    case K_TOP:
        drop_carry(fl);
        fl->idle = 1;
        r->running = 0;
        return 1;
    case K_BRANCH:
        branch_done(fl, F);
        return 1;
    case K_LOOP:
        drop_carry(fl);
        push_iter(F);
        return 0;
    case K_REPEAT:
        drop_carry(fl);
        if (++F->iter < F->count) {
            push_iter(F);
        } else {
            complete_frame(fl, F);
        }
        return 0;
    default:
        complete_frame(fl, F);
        return 0;
    }
}

static void on_resolved(FrnFlow* fl, FrnFrame* X)
{
    if (X->out == OUT_SUCCESS) {
        drop_carry(fl);
        fl->carry = X->out_args;
        memset(&X->out_args, 0, sizeof X->out_args);
        X->out = OUT_NONE;
        complete_frame(fl, X);
    } else {
        int k = X->out;
        char* s = X->out_str;
        X->out_str = NULL;
        X->out = OUT_NONE;
        start_error(fl, X, k, s, 0);
    }
}

static int err_step(FrnFlow* fl, unsigned ep)
{
    FrnRoot* r = fl->root;
    FrnFrame* G = fl->err_frame;
    drop_carry(fl);
    abort_below(r, G);
    fl->cur = G;
    destroy_queue(r, G);
    timer_cancel(G);
    if (G->ch_first) {
        G->ch_first = 0;
        if (G->ch) {
            FutoInAsyncSteps_cancel_callback ch = G->ch;
            G->ch = NULL;
            ch(&G->iface, G->ch_data);
        }
    }
    if (G->kind == K_TOP) {
        int kind = fl->err_kind;
        char* code = fl->err_str;
        fl->err_str = NULL;
        fl->err_active = 0;
        destroy_queue(r, G);
        fl->idle = 1;
        r->running = 0;
        if (r->unhandled && user_begin(r, ep)) {
            r->unhandled(&r->iface, r->exec_data,
                    kind == OUT_ERROR && code ? code : kInternalError);
            user_end(r);
        }
        free(code);
        return RC_STOP;
    }
    if (G->kind == K_BRANCH) {
        branch_failed(fl, G);
        return RC_STOP;
    }
    if (fl->err_kind != OUT_ERROR) {
        /* break/continue are control flow: error handlers do not see them */
        if (label_match(G, fl->err_str)) {
            int brk = fl->err_kind == OUT_BREAK;
            clear_err(fl);
            if (brk || (G->kind == K_REPEAT && ++G->iter >= G->count)) {
                complete_frame(fl, G);
            } else {
                G->state = ST_SUBS;
                push_iter(G);
            }
            return RC_CONT;
        }
        unwind_one(fl, G);
        return RC_CONT;
    }
    if (!G->eh || G->eh_done) {
        unwind_one(fl, G);
        return RC_CONT;
    }
    G->state = ST_ERRH;
    G->out = OUT_NONE;
    if (!user_begin(r, ep)) {
        return RC_STOP;
    }
    G->eh(&G->iface, G->data, fl->err_str);
    user_end(r);
    if (r->epoch != ep) {
        return RC_STOP;
    }
    switch (G->out) {
    case OUT_SUCCESS:
        clear_err(fl);
        fl->carry = G->out_args;
        memset(&G->out_args, 0, sizeof G->out_args);
        G->out = OUT_NONE;
        complete_frame(fl, G);
        return RC_RAN;
    case OUT_ERROR:
    case OUT_BREAK:
    case OUT_CONT:
        free(fl->err_str);
        fl->err_kind = G->out;
        fl->err_str = G->out_str;
        G->out_str = NULL;
        G->out = OUT_NONE;
        G->state = ST_SUBS;
        unwind_one(fl, G);
        return RC_RAN;
    default:
        break;
    }
    G->state = ST_SUBS;
    if (G->q_head) {
        /* spec 1.2.1: the added steps replace the failed one */
        G->eh_done = 1;
        clear_err(fl);
        return RC_RAN;
    }
    unwind_one(fl, G);
    return RC_RAN;
}

static int runnable(const FrnFlow* fl)
{
    if (fl->dead || fl->idle) {
        return 0;
    }
    if (fl->err_active) {
        return 1;
    }
    const FrnFrame* F = fl->cur;
    return F->state != ST_WAIT && !par_running(F);
}

static void flow_run(FrnFlow* fl)
{
    FrnRoot* r = fl->root;
    const unsigned ep = r->epoch;
    for (;;) {
        if (r->epoch != ep || fl->dead || fl->idle) {
            return;
        }
        int ran = 0;
        if (fl->err_active) {
            int rc = err_step(fl, ep);
            if (rc == RC_STOP) {
                return;
            }
            ran = rc == RC_RAN;
        } else {
            FrnFrame* F = fl->cur;
            if (F->state == ST_WAIT || par_running(F)) {
                return;
            }
            if (F->state == ST_RESOLVED) {
                on_resolved(fl, F);
            } else if (F->q_head) {
                ran = start_next(fl, F, ep);
            } else if (subs_done(fl, F)) {
                return;
            }
        }
        if (ran) {
            /* one user step per turn: other flows go next */
            if (r->epoch == ep && runnable(fl)) {
                schedule(fl);
            }
            return;
        }
    }
}

static void flow_tick(void* p)
{
    FrnFlow* fl = p;
    FrnRoot* r = fl->root;
    fl->sched = 0;
    futoin__root_hold(r);
    busy_enter(r);
    flow_run(fl);
    busy_leave(r);
    futoin__root_unhold(r);
}

static void frame_timeout(void* p)
{
    FrnFrame* F = p;
    FrnFlow* fl = F->flow;
    F->tm = 0;
    if (fl->err_active && fl->err_frame->lvl < F->lvl) {
        return; /* an error above F is about to abort it anyway */
    }
    set_error_info(F->root, "");
    start_error(fl, F, OUT_ERROR, str_dup("Timeout"), 1);
    schedule(fl);
}

/* ------------------------------------------------------------------------ */
/* The interface functions                                                   */
/* ------------------------------------------------------------------------ */

static int is_root_if(const FutoInAsyncSteps* b)
{
    return b->api == &g_root_api;
}

static int is_adder_if(const FutoInAsyncSteps* b)
{
    return b->api == &g_adder_api;
}

static int is_step_if(const FutoInAsyncSteps* b)
{
    return b->api == &g_step_api;
}

static FrnRoot* as_root(FutoInAsyncSteps* b)
{
    return (FrnRoot*)(void*)b;
}

static FrnFrame* as_frame(FutoInAsyncSteps* b)
{
    if (is_adder_if(b)) {
        return (FrnFrame*)(void*)((char*)b - offsetof(FrnFrame, adder));
    }
    return (FrnFrame*)(void*)b;
}

static FrnLoop* loop_of(FutoInAsyncSteps* b)
{
    return is_root_if(b) ? as_root(b)->loop : as_frame(b)->loop;
}

static int root_alive(const FrnRoot* r)
{
    return r->magic == MAGIC_ROOT && !r->freed;
}

/* The live root behind any interface, or NULL for a dead one. */
static FrnRoot* live_root(FutoInAsyncSteps* b)
{
    if (is_root_if(b)) {
        FrnRoot* r = as_root(b);
        return root_alive(r) ? r : NULL;
    }
    FrnFrame* X = as_frame(b);
    return X->state == ST_DEAD ? NULL : X->root;
}

static FrnFlow* flow_of(FrnFrame* X)
{
    while (!X->flow && X->parent) {
        X = X->parent;
    }
    return X->flow;
}

static int in_callback(const FrnFrame* X)
{
    return X->state == ST_RUN || X->state == ST_ERRH;
}

/* An InternalError of X: in its own callback it replaces the outcome (the
 * first InternalError's info is kept); on a waiting step it completes it. */
static void internal_error(FrnFrame* X, const char* fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (X->state == ST_WAIT) {
        set_error_info(X->root, buf);
        X->out = OUT_ERROR;
        X->out_str = str_dup(kInternalError);
        X->state = ST_RESOLVED;
        timer_cancel(X);
        if (!(X->loop->opts & FRN_OPT_CANCEL_ON_OWN_ERROR)) {
            X->ch = NULL;
        }
        schedule(X->flow);
        return;
    }
    if (X->out == OUT_ERROR && X->out_str && strcmp(X->out_str, kInternalError) == 0) {
        return;
    }
    set_error_info(X->root, buf);
    if (X->out == OUT_SUCCESS) {
        args_clean(&X->out_args);
    }
    free(X->out_str);
    X->out = OUT_ERROR;
    X->out_str = str_dup(kInternalError);
}

static const char* state_text(const FrnFrame* X)
{
    switch (X->state) {
    case ST_QUEUED:
        return "has not started";
    case ST_SUBS:
        return "is neither running nor waiting (sub-steps or unwinding in progress)";
    case ST_RESOLVED:
        return "already got its outcome";
    case ST_ENDING:
        return "is being completed or cancelled";
    case ST_DEAD:
        return "has completed or was cancelled";
    default:
        return "is in an unexpected state";
    }
}

/* The frame whose queue receives a new step added through b, or NULL when
 * the call is misuse (reported). Through the adder a fresh branch is made. */
static FrnFrame* add_target(FutoInAsyncSteps* b, const char* fn)
{
    FrnLoop* l = loop_of(b);
    if (is_root_if(b)) {
        FrnRoot* r = as_root(b);
        if (!root_alive(r)) {
            misuse(l, "%s() on a freed root", fn);
            return NULL;
        }
        return r->top;
    }
    FrnFrame* X = as_frame(b);
    if (is_adder_if(b)) {
        if ((X->state != ST_QUEUED && !par_running(X)) || X->failed) {
            misuse(l, "%s() on a parallel() interface that no longer takes branches", fn);
            return NULL;
        }
        FrnFrame* B = frame_new(X->root, K_BRANCH);
        list_push(X, B);
        if (X->state == ST_SUBS) {
            branch_start(X, B);
        }
        return B;
    }
    if (!in_callback(X)) {
        misuse(l, "%s() on a step that %s; sub-steps are added from the step's own callback", fn,
                state_text(X));
        return NULL;
    }
    if (X->out != OUT_NONE) {
        /* attached anyway: dropped with the failing step */
        internal_error(X, "%s() after success()/error() in the same callback", fn);
    }
    return X;
}

static void f_add(FutoInAsyncSteps* b, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    if (!f) {
        violation(loop_of(b), "add(): NULL step callback");
        return;
    }
    FrnFrame* T = add_target(b, "add");
    if (!T) {
        return;
    }
    FrnFrame* S = frame_new(T->root, K_STEP);
    S->data = data;
    S->f = f;
    S->eh = eh;
    list_push(T, S);
}

static FutoInAsyncSteps* f_parallel(FutoInAsyncSteps* b, void* data,
        FutoInAsyncSteps_error_callback eh)
{
    FrnFrame* T = add_target(b, "parallel");
    if (!T) {
        return NULL;
    }
    FrnFrame* P = frame_new(T->root, K_PAR);
    set_api(&P->adder, &g_adder_api);
    P->data = data;
    P->eh = eh;
    list_push(T, P);
    return &P->adder;
}

static void* f_stateVariable(FutoInAsyncSteps* b, void* data, const char* name,
        void* (*allocate)(void* data), void (*cleanup)(void* data, void* value))
{
    FrnLoop* l = loop_of(b);
    if (!name || !*name) {
        violation(l, "stateVariable(): NULL or empty name");
        return NULL;
    }
    FrnRoot* r = live_root(b);
    if (!r) {
        misuse(l, "stateVariable(\"%s\") on a dead interface", name);
        return NULL;
    }
    int is_info = strcmp(name, "error_info") == 0;
    if (is_info || strcmp(name, "last_exception") == 0) {
        if (allocate || cleanup) {
            violation(l, "stateVariable(\"%s\"): special names take NULL allocate/cleanup", name);
            return NULL;
        }
        /* last_exception is C++-only: null in a C implementation */
        return is_info ? (void*)r->error_info : NULL;
    }
    for (FrnVar* v = r->vars; v; v = v->next) {
        if (strcmp(v->name, name) == 0) {
            return v->value;
        }
    }
    if (!allocate) {
        return NULL;
    }
    futoin__root_hold(r);
    void* value = allocate(data);
    if (r->freed) {
        /* the root went away inside allocate(): nobody will clean up later */
        if (cleanup) {
            cleanup(data, value);
        }
        futoin__root_unhold(r);
        return NULL;
    }
    FrnVar* v = xcalloc(1, sizeof *v);
    v->name = str_dup(name);
    v->value = value;
    v->data = data;
    v->cleanup = cleanup;
    v->next = r->vars;
    r->vars = v;
    l->live++;
    futoin__root_unhold(r);
    return value;
}

static void* f_stack(FutoInAsyncSteps* b, size_t data_size, void (*cleanup)(void* value))
{
    FrnLoop* l = loop_of(b);
    if (!cleanup) {
        violation(l, "stack(): NULL cleanup");
        return NULL;
    }
    if (!is_step_if(b)) {
        misuse(l, "stack() on an interface that is not a step");
        return NULL;
    }
    FrnFrame* X = as_frame(b);
    if (!in_callback(X) && X->state != ST_WAIT) {
        misuse(l, "stack() on a step that %s", state_text(X));
        return NULL;
    }
    FrnBlock* blk = xcalloc(1, sizeof *blk);
    blk->mem = xcalloc(1, data_size ? data_size : 1);
    blk->cleanup = cleanup;
    blk->next = X->stack;
    X->stack = blk;
    l->live++;
    return blk->mem;
}

static void f_success(FutoInAsyncSteps* b, FutoInArgs* args)
{
    FrnLoop* l = loop_of(b);
    if (!args) {
        violation(l, "success(): NULL args (send a zeroed FutoInArgs)");
        return;
    }
    if (!is_step_if(b)) {
        violation(l, "success() on a %s interface, which is not a step",
                is_root_if(b) ? "root" : "parallel()");
        return;
    }
    FrnFrame* X = as_frame(b);
    if (in_callback(X)) {
        if (X->out != OUT_NONE || X->q_head) {
            /* we own the values now; they go nowhere */
            FutoInArgs tmp = *args;
            args_clean(&tmp);
            internal_error(X,
                    X->out != OUT_NONE ? "success() after success()/error()"
                                       : "success() after adding sub-steps");
            return;
        }
        X->out = OUT_SUCCESS;
        X->out_args = *args;
        if (X->kind == K_LOCK) {
            X->parent->locked = 1;
        }
        return;
    }
    if (X->state == ST_WAIT) {
        X->out = OUT_SUCCESS;
        X->out_args = *args;
        X->state = ST_RESOLVED;
        X->ch = NULL;
        timer_cancel(X);
        /* granted now: a cancel before the flow's turn still owes unlock() */
        if (X->kind == K_LOCK) {
            X->parent->locked = 1;
        }
        schedule(X->flow);
        return;
    }
    violation(l, "success() on a step that %s (not the current step and not waiting)",
            state_text(X));
}

static void f_handle_error(FutoInAsyncSteps* b, const char* code, const char* info)
{
    FrnLoop* l = loop_of(b);
    if (!code) {
        violation(l, "handle_error(): NULL code");
        return;
    }
    if (!is_step_if(b)) {
        violation(l, "handle_error(\"%s\") on a %s interface, which is not a step", code,
                is_root_if(b) ? "root" : "parallel()");
        return;
    }
    FrnFrame* X = as_frame(b);
    if (in_callback(X)) {
        if (X->out != OUT_NONE) {
            internal_error(X, "error(\"%s\") after success()/error()", code);
            return;
        }
        set_error_info(X->root, info);
        X->out = OUT_ERROR;
        X->out_str = str_dup(code);
        return;
    }
    if (X->state == ST_WAIT) {
        set_error_info(X->root, info);
        X->out = OUT_ERROR;
        X->out_str = str_dup(code);
        X->state = ST_RESOLVED;
        timer_cancel(X);
        if (!(l->opts & FRN_OPT_CANCEL_ON_OWN_ERROR)) {
            X->ch = NULL;
        }
        schedule(X->flow);
        return;
    }
    violation(l, "handle_error(\"%s\") on a step that %s (not the current step and not waiting)",
            code, state_text(X));
}

/* setTimeout/setCancel/waitExternal: in the step's callback, or on a step
 * already waiting. Returns the frame, or NULL when handled here. */
static FrnFrame* wait_target(FutoInAsyncSteps* b, const char* fn)
{
    FrnLoop* l = loop_of(b);
    if (!is_step_if(b)) {
        misuse(l, "%s() on an interface that is not a step", fn);
        return NULL;
    }
    FrnFrame* X = as_frame(b);
    if (X->state == ST_WAIT) {
        return X;
    }
    if (X->state == ST_ERRH) {
        internal_error(X, "%s() in an error handler", fn);
        return NULL;
    }
    if (X->state == ST_RUN) {
        if (X->out != OUT_NONE) {
            internal_error(X, "%s() after success()/error()", fn);
            return NULL;
        }
        return X;
    }
    misuse(l, "%s() on a step that %s", fn, state_text(X));
    return NULL;
}

static void f_setTimeout(FutoInAsyncSteps* b, uint32_t timeout_ms)
{
    FrnFrame* X = wait_target(b, "setTimeout");
    if (X) {
        X->waiting = 1;
        timer_arm(X, timeout_ms);
    }
}

static void f_setCancel(FutoInAsyncSteps* b, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    FrnFrame* X = wait_target(b, "setCancel");
    if (X) {
        X->waiting = 1;
        X->ch = ch;
        X->ch_data = data;
    }
}

static void f_waitExternal(FutoInAsyncSteps* b)
{
    FrnFrame* X = wait_target(b, "waitExternal");
    if (X) {
        X->waiting = 1;
    }
}

static FrnFrame* add_loop_frame(FutoInAsyncSteps* b, const char* fn, int kind, void* data,
        const char* label)
{
    FrnFrame* T = add_target(b, fn);
    if (!T) {
        return NULL;
    }
    FrnFrame* L = frame_new(T->root, kind);
    L->data = data;
    L->label = label ? str_dup(label) : NULL;
    list_push(T, L);
    return L;
}

static void f_loop(FutoInAsyncSteps* b, void* data, void (*f)(FutoInAsyncSteps* bsi, void* data),
        const char* label)
{
    if (!f) {
        violation(loop_of(b), "loop(): NULL body callback");
        return;
    }
    FrnFrame* L = add_loop_frame(b, "loop", K_LOOP, data, label);
    if (L) {
        L->lf = f;
    }
}

static void f_repeat(FutoInAsyncSteps* b, void* data, size_t count,
        void (*f)(FutoInAsyncSteps* bsi, void* data, size_t i), const char* label)
{
    if (!f) {
        violation(loop_of(b), "repeat(): NULL body callback");
        return;
    }
    FrnFrame* L = add_loop_frame(b, "repeat", K_REPEAT, data, label);
    if (L) {
        L->rf = f;
        L->count = count;
    }
}

static void loop_control(FutoInAsyncSteps* b, int kind, const char* label)
{
    const char* fn = kind == OUT_BREAK ? "breakLoop" : "continueLoop";
    FrnLoop* l = loop_of(b);
    if (!is_step_if(b)) {
        misuse(l, "%s() on an interface that is not a step", fn);
        return;
    }
    FrnFrame* X = as_frame(b);
    if (!in_callback(X) && X->state != ST_WAIT) {
        misuse(l, "%s() on a step that %s", fn, state_text(X));
        return;
    }
    if (in_callback(X) && X->out != OUT_NONE) {
        internal_error(X, "%s() after success()/error()", fn);
        return;
    }
    const FrnFrame* L = X;
    while (L && !label_match(L, label)) {
        L = L->parent;
    }
    if (!L) {
        if (label) {
            internal_error(X, "%s(): no enclosing loop labelled \"%s\"", fn, label);
        } else {
            internal_error(X, "%s(): no enclosing loop", fn);
        }
        return;
    }
    set_error_info(X->root, label);
    X->out = (uint8_t)kind;
    X->out_str = label ? str_dup(label) : NULL;
    if (X->state == ST_WAIT) {
        X->state = ST_RESOLVED;
        timer_cancel(X);
        if (!(l->opts & FRN_OPT_CANCEL_ON_OWN_ERROR)) {
            X->ch = NULL;
        }
        schedule(X->flow);
    }
}

static void f_breakLoop(FutoInAsyncSteps* b, const char* label)
{
    loop_control(b, OUT_BREAK, label);
}

static void f_continueLoop(FutoInAsyncSteps* b, const char* label)
{
    loop_control(b, OUT_CONT, label);
}

static void f_execute(FutoInAsyncSteps* b, void* data,
        FutoInAsyncSteps_error_callback unhandled_error)
{
    FrnLoop* l = loop_of(b);
    if (!is_root_if(b)) {
        misuse(l, "execute() on an interface that is not a root");
        return;
    }
    FrnRoot* r = as_root(b);
    if (!root_alive(r)) {
        misuse(l, "execute() on a freed root");
        return;
    }
    if (r->running) {
        misuse(l, "execute() on a root that is already running");
        return;
    }
    r->exec_data = data;
    r->unhandled = unhandled_error;
    r->running = 1;
    r->main->idle = 0;
    r->main->cur = r->top;
    schedule(r->main); /* nothing runs inside execute() */
}

static void f_cancel(FutoInAsyncSteps* b)
{
    FrnLoop* l = loop_of(b);
    if (!is_root_if(b)) {
        misuse(l, "cancel() on an interface that is not a root");
        return;
    }
    FrnRoot* r = as_root(b);
    if (!root_alive(r)) {
        misuse(l, "cancel() on a freed root");
        return;
    }
    if (r->busy) {
        r->cancel_req = 1;
        return;
    }
    futoin__root_hold(r);
    busy_enter(r);
    do_cancel(r);
    busy_leave(r);
    futoin__root_unhold(r);
}

static void f_addSync(FutoInAsyncSteps* b, FutoInSync* sync, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    FrnLoop* l = loop_of(b);
    if (!f) {
        violation(l, "addSync(): NULL step callback");
        return;
    }
    if (!sync || !sync->api || !sync->api->lock || !sync->api->unlock) {
        violation(l, "addSync(): sync object without api, lock or unlock");
        return;
    }
    FrnFrame* T = add_target(b, "addSync");
    if (!T) {
        return;
    }
    FrnFrame* S = frame_new(T->root, K_SYNC);
    S->sync = sync;
    S->data = data;
    S->f = f;
    S->eh = eh;
    list_push(T, S);
}

static ptrdiff_t f_rootId(FutoInAsyncSteps* b)
{
    FrnLoop* l = loop_of(b);
    if (!live_root(b)) {
        misuse(l, "rootId() on a dead interface");
        return 0;
    }
    /* A flow's address: distinct from every other live flow of any library
     * in the process, as long as the other libraries use addresses too. */
    FrnFlow* fl = is_root_if(b) ? as_root(b)->main : flow_of(as_frame(b));
    return (ptrdiff_t)(intptr_t)fl;
}

static int f_isValid(FutoInAsyncSteps* b)
{
    if (is_root_if(b)) {
        return root_alive(as_root(b));
    }
    FrnFrame* X = as_frame(b);
    return X->state != ST_DEAD && X->state != ST_ENDING;
}

static FutoInAsyncSteps* f_newInstance(FutoInAsyncSteps* b)
{
    FrnLoop* l = loop_of(b);
    if (!live_root(b)) {
        misuse(l, "newInstance() on a dead interface");
        return NULL;
    }
    return frn_root_new(l);
}

static void f_free(FutoInAsyncSteps* b)
{
    FrnLoop* l = loop_of(b);
    if (!is_root_if(b)) {
        misuse(l, "free() on an interface that is not a root");
        return;
    }
    FrnRoot* r = as_root(b);
    if (!root_alive(r)) {
        misuse(l, "free() on a root that is already freed");
        return;
    }
    if (r->busy) {
        r->free_req = 1;
        return;
    }
    futoin__root_hold(r);
    busy_enter(r);
    do_free(r);
    busy_leave(r);
    futoin__root_unhold(r); /* releases the memory unless a callback of r is running */
}

static FutoInHandle make_handle(FrnLoop* l, uint32_t i)
{
    FutoInHandle h;
    h.data1 = l;
    h.data2 = (void*)(uintptr_t)l->ev[i].gen;
    h.data3 = (ptrdiff_t)i;
    return h;
}

static FutoInHandle zero_handle(void)
{
    FutoInHandle h;
    memset(&h, 0, sizeof h);
    return h;
}

static FrnLoop* sched_loop(FutoInAsyncSteps* b, const char* fn)
{
    FrnLoop* l = loop_of(b);
    if (!live_root(b)) {
        misuse(l, "%s() on a dead interface", fn);
        return NULL;
    }
    return l;
}

static FutoInHandle f_sched_immediate(FutoInAsyncSteps* b, void* data, void (*cb)(void* data))
{
    if (!cb) {
        violation(loop_of(b), "sched_immediate(): NULL callback");
        return zero_handle();
    }
    FrnLoop* l = sched_loop(b, "sched_immediate");
    if (!l) {
        return zero_handle();
    }
    uint32_t i = ev_immediate(l, cb, data);
    l->ev[i].user = 1;
    return make_handle(l, i);
}

static FutoInHandle f_sched_deferred(FutoInAsyncSteps* b, uint32_t delay_ms, void* data,
        void (*cb)(void* data))
{
    if (!cb) {
        violation(loop_of(b), "sched_deferred(): NULL callback");
        return zero_handle();
    }
    FrnLoop* l = sched_loop(b, "sched_deferred");
    if (!l) {
        return zero_handle();
    }
    uint32_t i = ev_timer(l, delay_ms, cb, data);
    l->ev[i].user = 1;
    return make_handle(l, i);
}

static int handle_index(const FrnLoop* l, const FutoInHandle* h, uint32_t* out)
{
    if (h->data1 != (const void*)l || h->data3 <= 0 || (uint64_t)h->data3 >= l->ev_cap) {
        return 0;
    }
    uint32_t i = (uint32_t)h->data3;
    if (!ev_alive(l, i, (uint32_t)(uintptr_t)h->data2) || !l->ev[i].user) {
        return 0;
    }
    *out = i;
    return 1;
}

static void f_sched_cancel(FutoInAsyncSteps* b, FutoInHandle* handle)
{
    if (!handle) {
        violation(loop_of(b), "sched_cancel(): NULL handle pointer");
        return;
    }
    FrnLoop* l = sched_loop(b, "sched_cancel");
    uint32_t i;
    if (l && handle_index(l, handle, &i)) {
        ev_cancel(l, i);
    }
}

static int f_sched_is_valid(FutoInAsyncSteps* b, FutoInHandle* handle)
{
    if (!handle) {
        violation(loop_of(b), "sched_is_valid(): NULL handle pointer");
        return 0;
    }
    FrnLoop* l = sched_loop(b, "sched_is_valid");
    uint32_t i;
    return l && handle_index(l, handle, &i);
}

static int f_is_same_thread(FutoInAsyncSteps* b)
{
    (void)b;
    return 1;
}

/* One set of functions: each looks at which of the three tables it was
 * reached through (step, parallel adder, root). */
#define FRN_API_INIT                                                                               \
    {                                                                                              \
        .add = f_add, .parallel = f_parallel, .stateVariable = f_stateVariable, .stack = f_stack,  \
        .success = f_success, .handle_error = f_handle_error, .setTimeout = f_setTimeout,          \
        .setCancel = f_setCancel, .waitExternal = f_waitExternal, .loop = f_loop,                  \
        .repeat = f_repeat, .breakLoop = f_breakLoop, .continueLoop = f_continueLoop,              \
        .execute = f_execute, .cancel = f_cancel, .addSync = f_addSync, .rootId = f_rootId,        \
        .isValid = f_isValid, .newInstance = f_newInstance, .free = f_free,                        \
        .sched_immediate = f_sched_immediate, .sched_deferred = f_sched_deferred,                  \
        .sched_cancel = f_sched_cancel, .sched_is_valid = f_sched_is_valid,                        \
        .is_same_thread = f_is_same_thread                                                         \
    }

static const FutoInAsyncStepsAPI g_step_api = FRN_API_INIT;
static const FutoInAsyncStepsAPI g_adder_api = FRN_API_INIT;
static const FutoInAsyncStepsAPI g_root_api = FRN_API_INIT;

FutoInAsyncSteps* frn_root_new(FrnLoop* l)
{
    FrnRoot* r = xcalloc(1, sizeof *r);
    set_api(&r->iface, &g_root_api);
    r->magic = MAGIC_ROOT;
    r->loop = l;
    r->error_info = str_dup("");
    l->live++;
    r->main = flow_new(r);
    r->top = frame_new(r, K_TOP);
    r->top->state = ST_SUBS;
    r->top->flow = r->main;
    r->main->container = r->top;
    r->main->cur = r->top;
    r->next = l->roots;
    if (l->roots) {
        l->roots->prev = r;
    }
    l->roots = r;
    return &r->iface;
}

void frn_loop_free(FrnLoop* l)
{
    if (!l) {
        return;
    }
    if (l->roots) {
        violation(l, "frn_loop_free(): roots still alive (free them first)");
        while (l->roots) {
            FrnRoot* r = l->roots;
            if (r->depth || r->busy) {
                /* freed from inside one of its callbacks: cannot tear down */
                l->roots = r->next;
                continue;
            }
            if (!r->freed) {
                futoin__root_hold(r);
                busy_enter(r);
                do_free(r);
                busy_leave(r);
                futoin__root_unhold(r);
            } else {
                root_release(r);
            }
        }
    }
    for (size_t k = 0; k < l->quar_n; ++k) {
        free(l->quar[(l->quar_pos + k) % FRN_QUARANTINE]);
    }
    free(l->ev);
    free(l->heap);
    free(l);
}
