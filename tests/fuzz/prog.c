/* SPDX-License-Identifier: MIT */
/*
 * Byte string -> program. Encoding (every byte past the end reads as 0):
 *
 *   prog    := B0 B1 root{nroots}
 *     B0: nroots = 1 + B0 % 3; burst = {100,1,2,3,5,100,7,100}[(B0 >> 2) & 7]
 *     B1: mutex0 max = 1 + (B1 & 1), max_queue = Q[(B1 >> 1) & 3];
 *         mutex1 max = 1 + ((B1 >> 3) & 1), max_queue = Q[(B1 >> 4) & 3]
 *         with Q = {0, 1, 2, unlimited}
 *   root    := C N node{ntop}
 *     C: cancel at tick (C & 0x3f) if C & 0x40; C & 0x80: execute() with a
 *        NULL unhandled_error callback; N: ntop = 1 + N % 3
 *   node    := K ...   kind = K % 8: 0-2 step, 3 special, 4 parallel, 5 loop,
 *                      6 repeat, 7 sync (a step at the maximum depth; a
 *                      special node is a step where it would be a branch)
 *   special := S [args]  S & 1: relinquish(), else successStep(args)
 *   step    := body eh
 *   body    := T [timeout] [term params] [term_iter] kid{nkids}
 *     T: term = T % 8, set_cancel = bit 3, has_timeout = bit 4,
 *        nkids = (T >> 5) & 3 (0 for EXT_* terms, which also force
 *        set_cancel: the cancel handler stops the completion)
 *     timeout: byte % 16 ms; with set_cancel, (byte >> 4) % 3 is what the
 *       cancel handler does: 0 nothing, 1 cancel() the root, 2 free() it
 *     SUCCESS: args; ERROR: code byte; EXT_OK: E args; EXT_ERR: E code byte
 *       E: immediate = E & 1, delay = (E >> 1) % 16, late = E & 0x20 (bits
 *          5-7 were unused before late completions; the one checked-in
 *          input that sets bit 5 does so on a repeat(0) in a parallel
 *          branch, which never runs and would ignore it: older inputs
 *          keep their meaning). Late, on a root's main flow: with a timer, the cancel
 *          handler does not stop it; immediate: nothing is scheduled at
 *          waitExternal(), the cancel handler schedules the completion, a
 *          loop immediate that re-schedules itself `delay` times before it
 *          calls success()/error(). Either way it may arrive after the
 *          step timed out or was cancelled, on the same flow's handle. In
 *          a parallel branch the flag is ignored (a finished branch's
 *          handle is recycled for later branches: no call may use it).
 *     BREAK/CONTINUE: label byte (% 4: none, "a", "b", unknown "zz")
 *     term_iter (loop bodies only): byte % 4
 *   args    := A v{A % 5}: value = v >> 1, boxed = v & 1
 *   eh      := H ...   kind = (H & 7) % 7: none, recover args, rethrow code
 *                      byte, pass, add 1 + (H >> 3) % 2 nodes, break label
 *                      byte, continue label byte
 *   parallel:= eh NB node{NB % 5}
 *   loop    := L body   label = L % 3 (none, "a", "b"), count = (L >> 2) % 4
 *                       (repeat: count; loop: the iteration that breaks)
 *   sync    := M [P | P1 P2] step   M & 8: a Throttle, else M & 16: a
 *                      Limiter, else a Mutex; index M & 1 (other bits
 *                      unused); the step is the critical section
 *     P: only at the first sync node (in decoding order) that uses a given
 *        throttle: its parameters, max = 1 + (P & 3) % 3 entries per window,
 *        period_ms = {5,7,10,12,15,20,25,30}[(P >> 2) & 7],
 *        max_queue = Q[(P >> 5) & 3]. A throttle no node uses keeps the
 *        defaults (1, 10 ms, unlimited); both throttles always exist.
 *     P1 P2: only at the first sync node that uses a given limiter: its
 *        FutoInLimiterOptions, concurrent = 1 + (P1 & 3) % 3,
 *        max_queue = Q[(P1 >> 2) & 3], rate = 1 + ((P1 >> 4) & 3) % 3,
 *        burst = Q[(P1 >> 6) & 3], period_ms = the periods above [P2 & 7]
 *        (other bits of P2 unused). A limiter no node uses is created with
 *        NULL options (the spec defaults 1, 0, 1, 1000 ms, 0); both
 *        limiters always exist.
 *     (Before throttles existed M was "mutex = M & 1"; before limiters,
 *     "M & 8: a Throttle, else a Mutex". Bits 3 and 4 are clear in the M
 *     byte of every mutex node of the corpus files checked in before each
 *     change, so those decode to the same programs.)
 *
 *   After the roots, an optional trailer of cross-root actions:
 *     X0 X1 N (I A){1 + N % 4}, only if X0 X1 = 0xC5 0x3A (a magic pair, so
 *     that the stray bytes libFuzzer leaves after older inputs do not turn
 *     them into programs with actions).
 *     I: node index % number of nodes; A: what = A & 1 (cancel(), free()),
 *     target root = ((A >> 1) & 3) % nroots, where = ((A >> 3) & 3) % 3
 *     (the node's execute callback, error handler or cancel handler; a
 *     loop body's execute acts at its terminator's iteration only);
 *     A & 0x20 with cancel(): if that left the root cancelled, it is revived
 *     at once: add() of its final logging step, then execute(). An
 *     entry the node cannot take (no such callback, or one already set for
 *     that callback) is ignored.
 *
 *   Then an optional re-entry trailer (after the cross-root actions, or in
 *   their place): X0 X1 N entry{1 + N % 8}, only if X0 X1 = 0xD7 0x4B.
 *   Programs with one are checked for invariants only.
 *   entry := I H A [D]
 *     I: node index % number of nodes
 *     H & 7 == 7: a chain (deep nesting): node I is added wrapped in n
 *       levels, each a step that adds the next level (the last one: node I)
 *       through a construct of kind A & 3: a parallel() with that one
 *       branch, an add() of it as a sub-step, a loop() whose first
 *       iteration adds it and whose second breaks, or mixed (level k has
 *       kind k % 3 in that order); A & 4: every level takes a 16-byte
 *       stack() block with a cleanup, A & 8: every level sets a cancel
 *       handler; n = (1 + (D & 63)) << 3 * (D >> 6), at most 4096. The
 *       subtree of a node in a chain with a parallel level runs in a branch.
 *       Ignored for a critical section and for a node already wrapped.
 *     else a hook of node I, hook = H & 7: its execute callback, error
 *       handler, cancel handler, the cleanup of each boxed value it makes,
 *       the cleanup of a stack() block its execute callback takes (16 bytes,
 *       or 256, not pooled, if H & 8), the allocator or the cleanup of a
 *       state variable "v<(H >> 3) & 3>" its execute callback asks for with
 *       futoin_state() (the first state entry of a node names it); the stack
 *       and state hooks need an execute callback (step, loop, repeat).
 *       A: what = {cancel, free, cancel + revive, state, add, none, free,
 *       cancel}[A & 7] on root ((A >> 3) & 3) % nroots; "state" creates the
 *       variable "v<(A >> 5) & 3>" on it (plain allocator and cleanup),
 *       "add" adds a logging step to it (where the engine refuses it: a
 *       misuse report). The root acted on may be one whose free() is in
 *       progress (a cleanup run by that free): cancel(), free(), add() and
 *       futoin_state() still go to it. "none" only makes the stack() or
 *       futoin_state() call. An entry for a hook the node does not have, or
 *       one already set, is ignored.
 */
#include "prog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* const fz_codes[3] = { "E0", "E1", "E2" };
const char* const fz_loop_labels[3] = { NULL, "a", "b" };
const char* const fz_ctl_labels[4] = { NULL, "a", "b", "zz" };

typedef struct Rd {
    const uint8_t* p;
    size_t n;
    size_t i;
    int root;
} Rd;

static unsigned rd(Rd* r)
{
    return r->i < r->n ? r->p[r->i++] : 0;
}

static FzNode* node_alloc(FzProg* p, uint8_t kind)
{
    if (p->nnodes >= FZ_MAX_NODES) {
        return NULL;
    }
    FzNode* n = &p->nodes[p->nnodes];
    memset(n, 0, sizeof(*n));
    n->id = p->nnodes++;
    n->kind = kind;
    return n;
}

static void read_args(Rd* r, FzArgs* a)
{
    a->n = (uint8_t)(rd(r) % 5);
    for (int i = 0; i < a->n; ++i) {
        unsigned v = rd(r);
        a->v[i] = (uint8_t)(v >> 1);
        a->boxed[i] = (uint8_t)(v & 1);
    }
}

static FzNode* read_node(FzProg* p, Rd* r, int depth, int in_branch, int force_step,
        int branch_pos);
static void read_cross_actions(FzProg* p, Rd* r);
static void read_reentry(FzProg* p, Rd* r);

static void read_body(FzProg* p, Rd* r, FzBody* b, int depth, int in_branch, int is_loop)
{
    unsigned t = rd(r);
    b->term = (uint8_t)(t % 8);
    b->set_cancel = (uint8_t)((t >> 3) & 1);
    b->has_timeout = (uint8_t)((t >> 4) & 1);
    unsigned nkids = (t >> 5) & 3;
    unsigned action = 0;
    if (b->has_timeout) {
        unsigned tb = rd(r);
        b->timeout_ms = (uint8_t)(tb % 16);
        action = (tb >> 4) % 3;
    }
    switch (b->term) {
    case FZ_T_SUCCESS:
        read_args(r, &b->args);
        break;
    case FZ_T_ERROR:
        b->code = (uint8_t)(rd(r) % 3);
        break;
    case FZ_T_EXT_OK:
    case FZ_T_EXT_ERR: {
        unsigned e = rd(r);
        b->ext_imm = (uint8_t)(e & 1);
        b->ext_delay = (uint8_t)((e >> 1) % 16);
        b->late = (uint8_t)((e >> 5) & 1);
        if (b->term == FZ_T_EXT_OK) {
            read_args(r, &b->args);
        } else {
            b->code = (uint8_t)(rd(r) % 3);
        }
        b->set_cancel = 1;
        nkids = 0;
        break;
    }
    case FZ_T_BREAK:
    case FZ_T_CONTINUE:
        b->label = (uint8_t)(rd(r) % 4);
        break;
    default:
        break;
    }
    if (is_loop) {
        b->term_iter = (uint8_t)(rd(r) % 4);
    }
    if (b->set_cancel && action) {
        b->cancel_action = (uint8_t)action;
        ++p->cancel_actions;
    }
    if (depth >= FZ_MAX_DEPTH) {
        nkids = 0;
    }
    for (unsigned i = 0; i < nkids; ++i) {
        FzNode* k = read_node(p, r, depth + 1, in_branch, 0, 0);
        if (k) {
            b->kids[b->nkids++] = k;
        }
    }
}

static void read_eh(FzProg* p, Rd* r, FzEh* eh, int depth, int in_branch)
{
    unsigned h = rd(r);
    eh->kind = (uint8_t)((h & 7) % FZ_EH__COUNT);
    switch (eh->kind) {
    case FZ_EH_RECOVER:
        read_args(r, &eh->args);
        break;
    case FZ_EH_RETHROW:
        eh->code = (uint8_t)(rd(r) % 3);
        break;
    case FZ_EH_ADD: {
        unsigned nk = depth >= FZ_MAX_DEPTH ? 0 : 1 + (h >> 3) % 2;
        for (unsigned i = 0; i < nk; ++i) {
            FzNode* k = read_node(p, r, depth + 1, in_branch, 0, 0);
            if (k) {
                eh->kids[eh->nkids++] = k;
            }
        }
        break;
    }
    case FZ_EH_BREAK:
    case FZ_EH_CONTINUE:
        eh->label = (uint8_t)(rd(r) % 4);
        break;
    default:
        break;
    }
}

static FzNode* read_node(FzProg* p, Rd* r, int depth, int in_branch, int force_step, int branch_pos)
{
    unsigned k = rd(r);
    unsigned kind = k % 8;
    if (force_step || depth >= FZ_MAX_DEPTH || kind < 3 || (kind == 3 && branch_pos)) {
        kind = FZ_N_STEP;
    } else if (kind == 3) {
        kind = (rd(r) & 1) ? FZ_N_YIELD : FZ_N_VALUE;
    } else {
        kind -= 3;
    }
    FzNode* n = node_alloc(p, (uint8_t)kind);
    if (!n) {
        return NULL;
    }
    n->in_branch = (uint8_t)in_branch;
    n->root = (uint8_t)r->root;
    switch (kind) {
    case FZ_N_VALUE:
        read_args(r, &n->value);
        break;
    case FZ_N_STEP:
        read_body(p, r, &n->body, depth, in_branch, 0);
        read_eh(p, r, &n->eh, depth, in_branch);
        break;
    case FZ_N_PAR: {
        read_eh(p, r, &n->eh, depth, in_branch);
        unsigned nb = rd(r) % 5;
        for (unsigned i = 0; i < nb; ++i) {
            FzNode* b = read_node(p, r, depth + 1, 1, 0, 1);
            if (b) {
                n->br[n->nbr++] = b;
            }
        }
        break;
    }
    case FZ_N_LOOP:
    case FZ_N_REPEAT: {
        unsigned l = rd(r);
        n->label = (uint8_t)(l % 3);
        n->count = (uint8_t)((l >> 2) % 4);
        read_body(p, r, &n->body, depth, in_branch, 1);
        break;
    }
    case FZ_N_SYNC: {
        static const uint32_t periods[8] = { 5, 7, 10, 12, 15, 20, 25, 30 };
        static const uint32_t queues[4] = { 0, 1, 2, FZ_QUEUE_UNLIMITED };
        unsigned mb = rd(r);
        unsigned base = (mb & 8) ? FZ_SYNC_THROTTLE0
                : (mb & 16)      ? FZ_SYNC_LIMITER0
                                 : FZ_SYNC_MUTEX0;
        n->sync = (uint8_t)(base + (mb & 1));
        if (FZ_SYNC_IS_THROTTLE(n->sync)) {
            FzThrottle* t = &p->throttle[n->sync - FZ_SYNC_THROTTLE0];
            if (!t->defined) {
                unsigned b = rd(r);
                t->defined = 1;
                t->max = 1 + (b & 3) % 3;
                t->period_ms = periods[(b >> 2) & 7];
                t->max_queue = queues[(b >> 5) & 3];
            }
        } else if (FZ_SYNC_IS_LIMITER(n->sync)) {
            FzLimiter* l = &p->limiter[n->sync - FZ_SYNC_LIMITER0];
            if (!l->defined) {
                unsigned b1 = rd(r);
                unsigned b2 = rd(r);
                l->defined = 1;
                l->concurrent = 1 + (b1 & 3) % 3;
                l->max_queue = queues[(b1 >> 2) & 3];
                l->rate = 1 + ((b1 >> 4) & 3) % 3;
                l->burst = queues[(b1 >> 6) & 3];
                l->period_ms = periods[b2 & 7];
            }
        }
        n->section = read_node(p, r, depth + 1, in_branch, 1, 0);
        if (n->section) {
            n->section->is_section = 1;
        }
        if (!n->section) {
            /* No room for the section: degrade to an empty step. */
            n->kind = FZ_N_STEP;
        }
        break;
    }
    default:
        break;
    }
    return n;
}

void fz_decode(FzProg* p, const uint8_t* data, size_t size)
{
    static const unsigned bursts[8] = { 100, 1, 2, 3, 5, 100, 7, 100 };
    static const uint32_t queues[4] = { 0, 1, 2, FZ_QUEUE_UNLIMITED };
    Rd r = { data, size, 0, 0 };
    memset(p, 0, sizeof(*p));
    unsigned b0 = rd(&r);
    p->nroots = (uint8_t)(1 + b0 % 3);
    p->burst = bursts[(b0 >> 2) & 7];
    unsigned b1 = rd(&r);
    p->mutex[0].max = 1 + (b1 & 1);
    p->mutex[0].max_queue = queues[(b1 >> 1) & 3];
    p->mutex[1].max = 1 + ((b1 >> 3) & 1);
    p->mutex[1].max_queue = queues[(b1 >> 4) & 3];
    for (int i = 0; i < 2; ++i) {
        p->throttle[i].max = 1;
        p->throttle[i].period_ms = 10;
        p->throttle[i].max_queue = FZ_QUEUE_UNLIMITED;
        /* FUTOIN_LIMITER_OPTIONS_INIT: what NULL options mean */
        p->limiter[i].concurrent = 1;
        p->limiter[i].max_queue = 0;
        p->limiter[i].rate = 1;
        p->limiter[i].period_ms = 1000;
        p->limiter[i].burst = 0;
    }
    for (int i = 0; i < p->nroots; ++i) {
        FzRoot* rt = &p->roots[i];
        r.root = i;
        unsigned c = rd(&r);
        rt->cancel_at = (c & 0x40) ? (uint16_t)(c & 0x3f) : FZ_NO_CANCEL;
        rt->no_unhandled = (uint8_t)((c >> 7) & 1);
        unsigned nt = 1 + rd(&r) % 3;
        for (unsigned j = 0; j < nt; ++j) {
            FzNode* n = read_node(p, &r, 1, 0, 0, 0);
            if (n) {
                rt->top[rt->ntop++] = n;
            }
        }
    }
    size_t at = r.i;
    read_cross_actions(p, &r);
    if (!p->cross_actions) {
        r.i = at; /* no first trailer: the re-entry one may start here */
    }
    read_reentry(p, &r);
}

/* Can node n's callback `where` (FZ_XW_*) run? */
static int has_callback(const FzNode* n, unsigned where)
{
    int exec = n->kind == FZ_N_STEP || n->kind == FZ_N_LOOP || n->kind == FZ_N_REPEAT;
    switch (where) {
    case FZ_XW_EXEC:
    case FZ_XW_STACK:
    case FZ_XW_SALLOC:
    case FZ_XW_SCLEAN:
        return exec;
    case FZ_XW_EH:
        return (n->kind == FZ_N_STEP || n->kind == FZ_N_PAR) && n->eh.kind != FZ_EH_NONE;
    case FZ_XW_VALUE:
        return n->kind != FZ_N_YIELD && n->kind != FZ_N_SYNC;
    default:
        return exec && n->body.set_cancel;
    }
}

static void read_cross_actions(FzProg* p, Rd* r)
{
    if (rd(r) != 0xC5 || rd(r) != 0x3A || p->nnodes == 0) {
        return;
    }
    unsigned n = 1 + rd(r) % FZ_MAX_XACTIONS;
    for (unsigned i = 0; i < n; ++i) {
        FzNode* node = &p->nodes[rd(r) % (unsigned)p->nnodes];
        unsigned a = rd(r);
        unsigned where = ((a >> 3) & 3) % FZ_XW_OLD_COUNT;
        if (!has_callback(node, where) || node->x_what[where]) {
            continue;
        }
        node->x_what[where] = (uint8_t)((a & 1) ? FZ_XA_FREE : FZ_XA_CANCEL);
        node->x_target[where] = (uint8_t)(((a >> 1) & 3) % p->nroots);
        node->x_revive[where] = (uint8_t)(!(a & 1) && (a & 0x20));
        ++p->cross_actions;
    }
}

/* The subtree of a node wrapped in a chain with a parallel level runs in
 * a branch flow. */
static void mark_in_branch(FzNode* n)
{
    if (!n) {
        return;
    }
    n->in_branch = 1;
    for (int i = 0; i < n->body.nkids; ++i) {
        mark_in_branch(n->body.kids[i]);
    }
    for (int i = 0; i < n->eh.nkids; ++i) {
        mark_in_branch(n->eh.kids[i]);
    }
    for (int i = 0; i < n->nbr; ++i) {
        mark_in_branch(n->br[i]);
    }
    mark_in_branch(n->section);
}

static void read_reentry(FzProg* p, Rd* r)
{
    static const uint8_t whats[8] = { FZ_XA_CANCEL, FZ_XA_FREE, FZ_XA_CANCEL, FZ_XA_STATE,
        FZ_XA_ADD, FZ_XA_NONE, FZ_XA_FREE, FZ_XA_CANCEL };
    if (rd(r) != 0xD7 || rd(r) != 0x4B || p->nnodes == 0) {
        return;
    }
    unsigned n = 1 + rd(r) % FZ_MAX_REENTRY;
    for (unsigned i = 0; i < n; ++i) {
        FzNode* node = &p->nodes[rd(r) % (unsigned)p->nnodes];
        unsigned h = rd(r);
        unsigned a = rd(r);
        unsigned where = h & 7;
        if (where == 7) {
            unsigned d = rd(r);
            unsigned len = (1u + (d & 63)) << (3 * (d >> 6));
            if (node->is_section || node->chain_kind) {
                continue;
            }
            node->chain_kind = (uint8_t)(FZ_CH_PAR + (a & 3));
            node->chain_flags = (uint8_t)(((a >> 2) & 1 ? FZ_CHF_STACK : 0)
                    | ((a >> 3) & 1 ? FZ_CHF_CANCEL : 0));
            node->chain_n = (uint16_t)(len > FZ_MAX_CHAIN ? FZ_MAX_CHAIN : len);
            if (node->chain_kind == FZ_CH_PAR || node->chain_kind == FZ_CH_MIX) {
                mark_in_branch(node);
            }
            ++p->reentry;
            continue;
        }
        if (!has_callback(node, where) || node->x_what[where]) {
            continue;
        }
        uint8_t what = whats[a & 7];
        if (where == FZ_XW_STACK) {
            node->stack_size = (uint8_t)(1 + ((h >> 3) & 1));
        } else if (where == FZ_XW_SALLOC || where == FZ_XW_SCLEAN) {
            if (!node->state_name) {
                node->state_name = (uint8_t)(1 + ((h >> 3) & 3));
            }
        } else if (what == FZ_XA_NONE) {
            continue;
        }
        node->x_what[where] = what;
        node->x_target[where] = (uint8_t)(((a >> 3) & 3) % p->nroots);
        node->x_revive[where] = (uint8_t)((a & 7) == 2);
        node->x_arg[where] = (uint8_t)((a >> 5) & 3);
        ++p->reentry;
    }
}

void fz_node_name(const FzNode* n, char* buf, size_t len)
{
    static const char pre[] = { 's', 'p', 'l', 'l', 'm', 'v', 'y' };
    snprintf(buf, len, "%c%d", pre[n->kind], n->id);
}

void fz_str_addf(FzStr* s, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) {
        abort();
    }
    if (s->len + (size_t)need + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + (size_t)need + 1) {
            cap *= 2;
        }
        char* q = realloc(s->s, cap);
        if (!q) {
            abort();
        }
        s->s = q;
        s->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(s->s + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)need;
}

void fz_str_free(FzStr* s)
{
    free(s->s);
    s->s = NULL;
    s->len = s->cap = 0;
}

void fz_args_fmt(FzStr* s, const FzArgs* a)
{
    fz_str_addf(s, "(");
    for (int i = 0; i < a->n; ++i) {
        fz_str_addf(s, "%s%s%u", i ? "," : "", a->boxed[i] ? "b" : "", a->v[i]);
    }
    fz_str_addf(s, ")");
}

static const char* term_name(uint8_t t)
{
    static const char* const names[] = { "none", "success", "error", "ext-ok", "ext-err", "forever",
        "break", "continue" };
    return t < FZ_T__COUNT ? names[t] : "?";
}

static void dump_node(const FzNode* n, FzStr* o, int ind);

static void dump_body(const FzBody* b, FzStr* o, int ind, int is_loop)
{
    fz_str_addf(o, " %s", term_name(b->term));
    switch (b->term) {
    case FZ_T_SUCCESS:
        fz_args_fmt(o, &b->args);
        break;
    case FZ_T_ERROR:
        fz_str_addf(o, "(%s)", fz_codes[b->code]);
        break;
    case FZ_T_EXT_OK:
    case FZ_T_EXT_ERR:
        fz_str_addf(o, "[%s %u%s]", b->ext_imm ? "imm" : "timer", b->ext_delay,
                !b->late             ? ""
                        : b->ext_imm ? " late: hops after cancel"
                                     : " late: not stopped by cancel");
        if (b->term == FZ_T_EXT_OK) {
            fz_args_fmt(o, &b->args);
        } else {
            fz_str_addf(o, "(%s)", fz_codes[b->code]);
        }
        break;
    case FZ_T_BREAK:
    case FZ_T_CONTINUE:
        fz_str_addf(o, "(%s)", fz_ctl_labels[b->label] ? fz_ctl_labels[b->label] : "");
        break;
    default:
        break;
    }
    if (is_loop) {
        fz_str_addf(o, "@iter%u", b->term_iter);
    }
    if (b->set_cancel) {
        static const char* const ca[] = { "", ":cancel-root", ":free-root" };
        fz_str_addf(o, " +cancel%s", ca[b->cancel_action]);
    }
    if (b->has_timeout) {
        fz_str_addf(o, " +timeout(%u)", b->timeout_ms);
    }
    fz_str_addf(o, "\n");
    for (int i = 0; i < b->nkids; ++i) {
        dump_node(b->kids[i], o, ind + 1);
    }
}

static void dump_eh(const FzEh* eh, FzStr* o, int ind)
{
    static const char* const names[] = { "none", "recover", "rethrow", "pass", "add", "break",
        "continue" };
    if (eh->kind == FZ_EH_NONE) {
        return;
    }
    fz_str_addf(o, "%*seh %s", ind * 2 + 2, "", names[eh->kind]);
    if (eh->kind == FZ_EH_RECOVER) {
        fz_args_fmt(o, &eh->args);
    } else if (eh->kind == FZ_EH_RETHROW) {
        fz_str_addf(o, "(%s)", fz_codes[eh->code]);
    } else if (eh->kind == FZ_EH_BREAK || eh->kind == FZ_EH_CONTINUE) {
        fz_str_addf(o, "(%s)", fz_ctl_labels[eh->label] ? fz_ctl_labels[eh->label] : "");
    }
    fz_str_addf(o, "\n");
    for (int i = 0; i < eh->nkids; ++i) {
        dump_node(eh->kids[i], o, ind + 2);
    }
}

static void dump_cross_actions(const FzNode* n, FzStr* o, int ind)
{
    static const char* const where[] = { "execute", "error handler", "cancel handler",
        "value cleanup", "stack cleanup", "state allocator", "state cleanup" };
    char nm[16];
    fz_node_name(n, nm, sizeof(nm));
    if (n->stack_size || n->state_name) {
        fz_str_addf(o, "%*s(%s: its execute", ind * 2 + 2, "", nm);
        if (n->stack_size) {
            fz_str_addf(o, " takes stack(%u)", n->stack_size == 1 ? 16u : 256u);
        }
        if (n->state_name) {
            fz_str_addf(o, " asks for state v%u", n->state_name - 1u);
        }
        fz_str_addf(o, ")\n");
    }
    if (n->chain_kind) {
        static const char* const kinds[] = { "", "parallel", "add", "loop", "mixed" };
        fz_str_addf(o, "%*s(%s: added in a chain of %u %s levels%s%s)\n", ind * 2 + 2, "", nm,
                n->chain_n, kinds[n->chain_kind], n->chain_flags & FZ_CHF_STACK ? " +stack" : "",
                n->chain_flags & FZ_CHF_CANCEL ? " +cancel" : "");
    }
    for (int w = 0; w < FZ_XW__COUNT; ++w) {
        if (n->x_what[w]) {
            fz_str_addf(o, "%*s(%s: its %s ", ind * 2 + 2, "", nm, where[w]);
            switch (n->x_what[w]) {
            case FZ_XA_FREE:
                fz_str_addf(o, "frees");
                break;
            case FZ_XA_CANCEL:
                fz_str_addf(o, n->x_revive[w] ? "cancels and revives" : "cancels");
                break;
            case FZ_XA_STATE:
                fz_str_addf(o, "creates state v%u on", n->x_arg[w]);
                break;
            default:
                fz_str_addf(o, "adds a step to");
                break;
            }
            fz_str_addf(o, " r%u)\n", n->x_target[w]);
        }
    }
}

static void dump_node(const FzNode* n, FzStr* o, int ind)
{
    char nm[16];
    fz_node_name(n, nm, sizeof(nm));
    fz_str_addf(o, "%*s%s", ind * 2, "", nm);

    switch (n->kind) {
    case FZ_N_VALUE:
        fz_str_addf(o, " successStep");
        fz_args_fmt(o, &n->value);
        fz_str_addf(o, "\n");
        break;
    case FZ_N_YIELD:
        fz_str_addf(o, " relinquish\n");
        break;
    case FZ_N_STEP:
        fz_str_addf(o, " step");
        dump_body(&n->body, o, ind, 0);
        dump_eh(&n->eh, o, ind);
        break;
    case FZ_N_PAR:
        fz_str_addf(o, " parallel(%u)\n", n->nbr);
        dump_eh(&n->eh, o, ind);
        for (int i = 0; i < n->nbr; ++i) {
            dump_node(n->br[i], o, ind + 1);
        }
        break;
    case FZ_N_LOOP:
    case FZ_N_REPEAT:
        fz_str_addf(o, " %s(%u, label=%s)", n->kind == FZ_N_LOOP ? "loop" : "repeat", n->count,
                fz_loop_labels[n->label] ? fz_loop_labels[n->label] : "-");
        dump_body(&n->body, o, ind, 1);
        break;
    case FZ_N_SYNC:
        if (FZ_SYNC_IS_THROTTLE(n->sync)) {
            fz_str_addf(o, " sync(throttle%u)\n", n->sync - FZ_SYNC_THROTTLE0);
        } else if (FZ_SYNC_IS_LIMITER(n->sync)) {
            fz_str_addf(o, " sync(limiter%u)\n", n->sync - FZ_SYNC_LIMITER0);
        } else {
            fz_str_addf(o, " sync(mutex%u)\n", n->sync);
        }
        dump_node(n->section, o, ind + 1);
        break;
    default:
        break;
    }
    dump_cross_actions(n, o, ind);
}

void fz_dump(const FzProg* p, FzStr* o)
{
    fz_str_addf(o, "burst=%u mutex0=(%u,%d) mutex1=(%u,%d)\n", p->burst, p->mutex[0].max,
            p->mutex[0].max_queue == FZ_QUEUE_UNLIMITED ? -1 : (int)p->mutex[0].max_queue,
            p->mutex[1].max,
            p->mutex[1].max_queue == FZ_QUEUE_UNLIMITED ? -1 : (int)p->mutex[1].max_queue);
    for (int i = 0; i < 2; ++i) {
        const FzThrottle* t = &p->throttle[i];
        if (t->defined) {
            fz_str_addf(o, "throttle%d=(%u per %u ms, queue %d)\n", i, t->max, t->period_ms,
                    t->max_queue == FZ_QUEUE_UNLIMITED ? -1 : (int)t->max_queue);
        }
    }
    for (int i = 0; i < 2; ++i) {
        const FzLimiter* l = &p->limiter[i];
        if (l->defined) {
            fz_str_addf(o, "limiter%d=(%u inside, queue %d; %u per %u ms, burst %d)\n", i,
                    l->concurrent, l->max_queue == FZ_QUEUE_UNLIMITED ? -1 : (int)l->max_queue,
                    l->rate, l->period_ms, l->burst == FZ_QUEUE_UNLIMITED ? -1 : (int)l->burst);
        }
    }
    for (int i = 0; i < p->nroots; ++i) {
        const FzRoot* r = &p->roots[i];
        fz_str_addf(o, "root r%d%s", i, r->no_unhandled ? " (no unhandled_error)" : "");
        if (r->cancel_at != FZ_NO_CANCEL) {
            fz_str_addf(o, " cancel@%u", r->cancel_at);
        }
        fz_str_addf(o, "\n");
        for (int j = 0; j < r->ntop; ++j) {
            dump_node(r->top[j], o, 1);
        }
    }
}
