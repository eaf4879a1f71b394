/* SPDX-License-Identifier: MIT */
/*
 * The engine side of the differential check: every node of the program is
 * the data pointer of its callbacks, which do exactly what the node says
 * (in a fixed order: setCancel, setTimeout, sub-steps, terminator) and log
 * what they see.
 */
#include "engine_run.h"

#include "model.h"

#include <futoin/asyncsteps.h>
#include <futoin/sync.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hang detection: a run that makes more loop turns or callbacks than any
 * program of the language needs is reported as a hang (abort()). A spin
 * inside the library with no callback at all is left to libFuzzer's
 * -timeout. */
#define FZ_MAX_TURNS 1000000L
#define FZ_MAX_CALLBACKS 2000000L
/* Deep chains: at most this many levels run per program (a chain that
 * would exceed it adds its node at once), to keep every input fast. */
#define FZ_CHAIN_BUDGET 20000L
/* C stack a callback may find in use below fz_engine_run(): the engine must
 * not recurse per nesting level (a chain is up to 4096 levels deep).
 * FUZZ_MAX_C_STACK_KB=n in the environment sets another limit (0: none). */
#define FZ_MAX_C_STACK_KB 512L
#define FZ_MAGIC 0x5eed1e55u

typedef struct NodeRt {
    unsigned iter;        /* loop(): iterations so far of the live instance */
    FutoInAsyncSteps* as; /* the flow its completions go to */
    size_t cur;           /* 1 + the Pend its cancel handler stops, or 0 */
    int late_armed;       /* its cancel handler schedules a late completion */
    int cancel_armed;
} NodeRt;

/* An external completion the runner scheduled. With late completions a
 * node may have several: one its live instance's cancel handler stops
 * (NodeRt.cur), and others that arrive whenever they arrive. */
typedef struct Pend {
    const FzNode* node;
    FutoInAsyncSteps* as;
    FutoInHandle h;
    int root;      /* the root whose main flow it goes to, -1: a branch */
    unsigned hops; /* loop immediates still to pass before it calls */
    uint8_t live;
    uint8_t late; /* no cancel handler stops it */
} Pend;

typedef struct Run {
    const FzProg* p;
    FzStr* out;
    FutoInLoop* loop;
    FutoInAsyncSteps* roots[FZ_MAX_ROOTS];
    int root_ids[FZ_MAX_ROOTS];
    int end_ran[FZ_MAX_ROOTS];
    int unhandled[FZ_MAX_ROOTS];
    FutoInSync* sync[FZ_NSYNC]; /* FZ_SYNC_*: two Mutexes, Throttles, Limiters */
    NodeRt rt[FZ_MAX_NODES];
    Pend* pend;
    size_t npend;
    size_t cap_pend;
    /* The step whose execute callback ran last on the root's main flow:
     * when a completion from outside is accepted there, the step it
     * completed (a branch gets only its own steps' completions). */
    const FzNode* waiter[FZ_MAX_ROOTS];
    const FzNode* delivering; /* a completion of this node is being called */
    int refused;              /* ... and the misuse handler refused it */
    long boxes_live;
    int invariants_only;         /* callbacks cancel/free roots */
    int root_dead[FZ_MAX_ROOTS]; /* cancelled or freed by a callback */
    int revived[FZ_MAX_ROOTS];   /* executed again after that: its final step may run */
    /* Re-entry programs (p->reentry): every root has a sentinel state
     * variable, made first, so cleaned up last, when the root is destroyed:
     * until then a root whose free() is in progress can still be acted on
     * (freeing[]), afterwards none of its callbacks may run (destroyed[]). */
    int sentinels;
    FutoInAsyncSteps* freeing[FZ_MAX_ROOTS];
    int destroyed[FZ_MAX_ROOTS];
    /* The root's main flow is in (or waits on) the step of this node with
     * an external completion: FZ_XA_ADD actions on the root are skipped,
     * because a sub-step added now (a step's own calls, or its incoming
     * values' cleanups, which act as its calls) would complete the step
     * while the runner's completion is still scheduled for it. */
    const FzNode* ext_wait[FZ_MAX_ROOTS];
    long stacks_live; /* stack() blocks whose cleanup has not run */
    long states_live; /* state variables whose cleanup has not run */
    long turns;
    long callbacks;
    long chain_budget;
    uintptr_t stack_base;
    uintptr_t stack_max; /* bytes, 0: not checked */
    /* Per wrapped node: one byte per chain level (its data pointer):
     * CL_* flags of the level's live instance. */
    uint8_t* chain_lv[FZ_MAX_NODES];
} Run;

enum { CL_LOOPED = 1, CL_ARMED = 2, CL_LAST = 4 };

static Run* R;

static void violation(const char* what, const FzNode* n)
{
    fprintf(stderr, "fuzz_engine: protocol violation: %s (node %d)\n", what, n ? n->id : -1);
    fprintf(stderr, "--- engine trace so far ---\n%s\n", R->out->s ? R->out->s : "");
    abort();
}

/* Every callback: the hang budget and the C stack depth. */
static void enter_cb(const FzNode* n)
{
    if (++R->callbacks > FZ_MAX_CALLBACKS) {
        violation("hang: more callbacks than any program of the language makes", n);
    }
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (R->stack_max && R->stack_base > here && R->stack_base - here > R->stack_max) {
        violation("the engine recurses: a callback found more C stack in use than "
                  "FUZZ_MAX_C_STACK_KB (default 512) allows",
                n);
    }
}

/* A callback of root r after it was destroyed (its free() completed). */
static void check_not_destroyed(int r, const char* what, const FzNode* n)
{
    if (R->destroyed[r]) {
        violation(what, n);
    }
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

/* A boxed value: the int first (log_args() reads it), then its maker. */
typedef struct Box {
    int v;
    const FzNode* node;
} Box;

static void do_action(const FzNode* n, int where);

static void box_cleanup(FutoInBinaryValue* v)
{
    Box* b = v->custom_data;
    if (!b) {
        violation("boxed value cleaned up twice", NULL);
    }
    const FzNode* n = b->node;
    free(b);
    v->custom_data = NULL;
    --R->boxes_live;
    enter_cb(n);
    if (R->sentinels) {
        check_not_destroyed(n->root, "a boxed value cleaned up after its root was destroyed", n);
    }
    do_action(n, FZ_XW_VALUE);
}

static const FutoInType box_type = { FTN_TYPE_CUSTOM_OBJECT, box_cleanup };

static void make_args(const FzNode* n, const FzArgs* a, FutoInArgs* out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < a->n; ++i) {
        if (a->boxed[i]) {
            Box* p = malloc(sizeof(Box));
            if (!p) {
                abort();
            }
            p->v = a->v[i];
            p->node = n;
            ++R->boxes_live;
            out->args[i] = futoin_val_custom(&box_type, p);
        } else {
            out->args[i] = futoin_val_i32(a->v[i]);
        }
    }
}

static void log_args(const FutoInArgs* args)
{
    fz_str_addf(R->out, "(");
    int n = futoin_args_count(args);
    for (int i = 0; i < n; ++i) {
        const char* sep = i ? "," : "";
        if (futoin_arg_type(args, i) == FTN_TYPE_CUSTOM_OBJECT) {
            const int* p = futoin_arg_custom(args, i);
            fz_str_addf(R->out, "%sb%d", sep, p ? *p : -1);
        } else {
            fz_str_addf(R->out, "%s%d", sep, (int)futoin_arg_i32(args, i, -1));
        }
    }
    fz_str_addf(R->out, ")");
}

static void stamp(void)
{
    fz_str_addf(R->out, "t%llu ", (unsigned long long)futoin_loop_now(R->loop));
}

static int root_of(FutoInAsyncSteps* as)
{
    ptrdiff_t id = futoin_root_id(as);
    for (int i = 0; i < R->p->nroots; ++i) {
        if (R->roots[i] && futoin_root_id(R->roots[i]) == id) {
            return i;
        }
    }
    return -1;
}

/* Steps of a root's main flow get the root's own handle; branch steps a
 * flow of their own with a distinct rootId(). */
static void check_flow(FutoInAsyncSteps* as, const FzNode* n)
{
    enter_cb(n);
    if (R->root_dead[n->root]) {
        violation("a callback of a root ran after a cancel handler cancelled or freed it", n);
    }
    int in_root = root_of(as) >= 0;
    if (n->in_branch == in_root) {
        violation(n->in_branch ? "branch step runs on a root handle"
                               : "main-flow step runs on a foreign handle",
                n);
    }
}

/* ------------------------------------------------------------------------ */
/* Callbacks                                                                 */

static void step_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
static void eh_cb(FutoInAsyncSteps* as, void* data, const char* code);
static void loop_cb(FutoInAsyncSteps* as, void* data);
static void repeat_cb(FutoInAsyncSteps* as, void* data, size_t i);

static FutoInAsyncSteps_error_callback eh_for(const FzNode* n)
{
    return n->eh.kind == FZ_EH_NONE ? NULL : eh_cb;
}

static void add_node_plain(FutoInAsyncSteps* as, const FzNode* n);
static void chain_step_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);

/* A node wrapped in a chain is added as the chain's first level. */
static void add_node(FutoInAsyncSteps* as, const FzNode* n)
{
    if (n->chain_kind) {
        as->api->add(as, R->chain_lv[n->id], chain_step_cb, NULL);
    } else {
        add_node_plain(as, n);
    }
}

static void add_node_plain(FutoInAsyncSteps* as, const FzNode* n)
{
    void* d = (void*)(uintptr_t)n;
    switch (n->kind) {
    case FZ_N_STEP:
        as->api->add(as, d, step_cb, eh_for(n));
        break;
    case FZ_N_VALUE: {
        FutoInArgs a;
        make_args(n, &n->value, &a);
        futoin_success_step(as, n->value.n ? &a : NULL);
        break;
    }
    case FZ_N_YIELD:
        futoin_relinquish(as);
        break;
    case FZ_N_PAR: {
        FutoInAsyncSteps* p = as->api->parallel(as, d, eh_for(n));
        for (int i = 0; i < n->nbr; ++i) {
            add_node(p, n->br[i]);
        }
        break;
    }
    case FZ_N_LOOP:
        R->rt[n->id].iter = 0;
        as->api->loop(as, d, loop_cb, fz_loop_labels[n->label]);
        break;
    case FZ_N_REPEAT:
        as->api->repeat(as, d, n->count, repeat_cb, fz_loop_labels[n->label]);
        break;
    case FZ_N_SYNC:
        as->api->addSync(as, R->sync[n->sync], (void*)(uintptr_t)n->section, step_cb,
                eh_for(n->section));
        break;
    default:
        break;
    }
}

static void end_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
static void unhandled_cb(FutoInAsyncSteps* as, void* data, const char* code);

/* Action-made state variables (FZ_XA_STATE) and the sentinels: plain
 * values that count their cleanups. */
typedef struct StateRec {
    unsigned magic;
    int root;           /* a sentinel: its root, else -1 */
    const FzNode* node; /* a node's own variable: the node (its hooks act) */
} StateRec;

static const char* const state_names[FZ_NSTATE_NAMES] = { "v0", "v1", "v2", "v3" };

static StateRec* state_rec(int root, const FzNode* node)
{
    StateRec* v = malloc(sizeof(*v));
    if (!v) {
        abort();
    }
    v->magic = FZ_MAGIC;
    v->root = root;
    v->node = node;
    ++R->states_live;
    return v;
}

static void state_rec_free(void* value, const FzNode* n)
{
    StateRec* v = value;
    if (!v || v->magic != FZ_MAGIC) {
        violation("a state variable cleaned up twice (or with a foreign value)", n);
    }
    v->magic = 0;
    free(v);
    --R->states_live;
}

static void* plain_state_alloc(void* data)
{
    (void)data;
    enter_cb(NULL);
    return state_rec(-1, NULL);
}

static void plain_state_cleanup(void* data, void* value)
{
    (void)data;
    enter_cb(NULL);
    state_rec_free(value, NULL);
}

static void* sentinel_alloc(void* data)
{
    return state_rec(*(const int*)data, NULL);
}

/* The root is being destroyed: its other variables are gone (the sentinel
 * was made first), and nothing of it may run any more. */
static void sentinel_cleanup(void* data, void* value)
{
    int r = *(const int*)data;
    enter_cb(NULL);
    if (R->roots[r]) {
        violation("a root was destroyed without free()", NULL);
    }
    R->destroyed[r] = 1;
    R->freeing[r] = NULL;
    state_rec_free(value, NULL);
}

static void* node_state_alloc(void* data)
{
    const FzNode* n = data;
    enter_cb(n);
    StateRec* v = state_rec(-1, n);
    do_action(n, FZ_XW_SALLOC);
    return v;
}

static void node_state_cleanup(void* data, void* value)
{
    const FzNode* n = data;
    enter_cb(n);
    state_rec_free(value, n);
    do_action(n, FZ_XW_SCLEAN);
}

/* A node's stack() block (or a chain level's: node NULL). */
typedef struct StackRec {
    unsigned magic;
    const FzNode* node;
} StackRec;

static void stack_cleanup(void* value)
{
    StackRec* b = value;
    if (b->magic != FZ_MAGIC) {
        violation("a stack() cleanup ran twice (or on foreign memory)", b->node);
    }
    const FzNode* n = b->node;
    b->magic = 0;
    --R->stacks_live;
    enter_cb(n);
    if (n) {
        if (R->sentinels) {
            check_not_destroyed(n->root, "a stack() cleanup ran after its root was destroyed", n);
        }
        do_action(n, FZ_XW_STACK);
    }
}

static void take_stack(FutoInAsyncSteps* as, const FzNode* n, size_t size)
{
    StackRec* b = futoin_stack(as, size, stack_cleanup);
    if (b) {
        b->magic = FZ_MAGIC;
        b->node = n;
        ++R->stacks_live;
    }
}

/* The root an action on root j goes to: the live one, or (re-entry
 * programs) one whose free() is in progress. */
static FutoInAsyncSteps* target_of(int j)
{
    if (R->roots[j]) {
        return R->roots[j];
    }
    return R->sentinels ? R->freeing[j] : NULL;
}

static void tail_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);
static void pend_drop_root(int j);

/* The action of node n's callback `where` (FZ_XW_*), if any. A root freed
 * here is gone from roots[]: later actions on it only reach it while its
 * free() is in progress (re-entry programs), else they do nothing, as the
 * program's own teardown does. */
static void do_action(const FzNode* n, int where)
{
    uint8_t what = n->x_what[where];
    int j = n->x_target[where];
    FutoInAsyncSteps* root = what ? target_of(j) : NULL;
    if (!root) {
        return;
    }
    int live = R->roots[j] != NULL;
    char nm[16];
    fz_node_name(n, nm, sizeof(nm));
    stamp();
    switch (what) {
    case FZ_XA_CANCEL:
        fz_str_addf(R->out, "%s cancels r%d%s\n", nm, j, live ? "" : " (being freed)");
        break;
    case FZ_XA_FREE:
        fz_str_addf(R->out, "%s frees r%d%s\n", nm, j, live ? "" : " (being freed)");
        break;
    case FZ_XA_STATE:
        fz_str_addf(R->out, "%s state v%u r%d%s\n", nm, n->x_arg[where], j,
                live ? "" : " (being freed)");
        futoin_state(root, state_names[n->x_arg[where] % FZ_NSTATE_NAMES], plain_state_alloc,
                plain_state_cleanup, NULL);
        return;
    default:
        if (R->ext_wait[j]) {
            fz_str_addf(R->out, "%s adds to r%d: skipped, it waits for an external completion\n",
                    nm, j);
            return;
        }
        fz_str_addf(R->out, "%s adds to r%d%s\n", nm, j, live ? "" : " (being freed)");
        root->api->add(root, &R->root_ids[j], tail_cb, NULL);
        return;
    }
    if (!live) {
        /* Its free() is under way: both must be no-ops. */
        if (what == FZ_XA_CANCEL) {
            futoin_cancel(root);
        } else {
            futoin_asyncsteps_free(root);
        }
        return;
    }
    R->revived[j] = 0; /* a new run ends here too */
    if (what == FZ_XA_CANCEL) {
        futoin_cancel(root);
        if (!futoin_is_valid(root)) {
            R->root_dead[j] = 1;
            if (n->x_revive[where]) {
                /* None of its nodes may run again; only the new final step
                 * (and the unhandled-error callback) of the new run. */
                R->revived[j] = 1;
                root->api->add(root, &R->root_ids[j], end_cb, NULL);
                futoin_execute(root, unhandled_cb, &R->root_ids[j]);
            }
        }
        return;
    }
    R->roots[j] = NULL;
    R->freeing[j] = root;
    pend_drop_root(j);
    futoin_asyncsteps_free(root);
    R->root_dead[j] = 1;
}

static void ext_cb(void* data);

static size_t pend_new(const FzNode* n, FutoInAsyncSteps* as, int late)
{
    /* A record that fired or was cancelled is named by no handle and no
     * NodeRt.cur any more: reused, so that long runs stay small. */
    size_t i = 0;
    while (i < R->npend && R->pend[i].live) {
        ++i;
    }
    if (i == R->npend && R->npend == R->cap_pend) {
        R->cap_pend = R->cap_pend ? R->cap_pend * 2 : 16;
        R->pend = realloc(R->pend, sizeof(Pend) * R->cap_pend);
        if (!R->pend) {
            abort();
        }
    }
    if (i == R->npend) {
        ++R->npend;
    }
    Pend* pd = &R->pend[i];
    memset(pd, 0, sizeof(*pd));
    pd->node = n;
    pd->as = as;
    pd->root = root_of(as);
    pd->live = 1;
    pd->late = (uint8_t)late;
    return i;
}

/* Root j is being freed: completions no cancel handler stops (late ones,
 * and those of a step that a late completion already completed: no
 * NodeRt.cur names them) must not reach its handle. The rest are left to
 * the cancel handlers free() runs, which the final check holds to it. */
static void pend_drop_root(int j)
{
    for (size_t i = 0; i < R->npend; ++i) {
        Pend* pd = &R->pend[i];
        if (!pd->live || pd->root != j) {
            continue;
        }
        if (pd->late || R->rt[pd->node->id].cur != i + 1) {
            futoin_loop_cancel(R->loop, &pd->h);
            pd->live = 0;
        }
    }
}

static void cancel_cb(FutoInAsyncSteps* as, void* data)
{
    const FzNode* n = data;
    NodeRt* rt = &R->rt[n->id];
    /* A cancel handler may still run after a nested cancel()/free() of its
     * root returned: the teardown that was in progress (a timeout, a failing
     * branch) finishes aborting its frames. Armed-once is still required. */
    enter_cb(n);
    check_not_destroyed(n->root, "a cancel handler ran after its root was destroyed", n);
    if (!rt->cancel_armed) {
        violation("cancel handler called while not armed (twice, or after completion)", n);
    }
    rt->cancel_armed = 0;
    if (R->ext_wait[n->root] == n) {
        R->ext_wait[n->root] = NULL;
    }
    char nm[16];
    fz_node_name(n, nm, sizeof(nm));
    stamp();
    fz_str_addf(R->out, "cancel %s\n", nm);
    if (rt->cur) {
        Pend* pd = &R->pend[rt->cur - 1];
        if (pd->live) {
            futoin_loop_cancel(R->loop, &pd->h);
            pd->live = 0;
        }
        rt->cur = 0;
    }
    if (rt->late_armed) {
        rt->late_armed = 0;
        /* Not for a root being freed: its handle is about to go. */
        if (R->roots[n->root]) {
            size_t i = pend_new(n, rt->as, 1);
            R->pend[i].hops = n->body.ext_delay;
            R->pend[i].h = futoin_loop_immediate(R->loop, (void*)(uintptr_t)(i + 1), ext_cb);
        }
    }
    do_action(n, FZ_XW_CANCEL);
    FutoInAsyncSteps* root = R->roots[n->root];
    if (!root) {
        return;
    }
    switch (n->body.cancel_action) {
    case FZ_CA_CANCEL_ROOT:
        as->api->cancel(as); /* on a branch: its root */
        if (!futoin_is_valid(root)) {
            R->root_dead[n->root] = 1;
            R->revived[n->root] = 0;
        }
        break;
    case FZ_CA_FREE_ROOT:
        /* Safe from the root's own callbacks: released on return. The
         * cancel handlers it runs see roots[] == NULL and do nothing. */
        R->roots[n->root] = NULL;
        R->freeing[n->root] = root;
        pend_drop_root(n->root);
        futoin_asyncsteps_free(root);
        R->root_dead[n->root] = 1;
        R->revived[n->root] = 0;
        break;
    default:
        break;
    }
}

static void ext_cb(void* data)
{
    size_t i = (uintptr_t)data - 1;
    Pend* pd = &R->pend[i];
    if (!pd->live) {
        violation("external completion fired after being cancelled", pd->node);
    }
    if (pd->hops) {
        --pd->hops;
        pd->h = futoin_loop_immediate(R->loop, data, ext_cb);
        return;
    }
    pd->live = 0;
    memset(&pd->h, 0, sizeof(pd->h));
    /* Copied: the calls below may schedule more completions (pend grows). */
    const FzNode* n = pd->node;
    FutoInAsyncSteps* as = pd->as;
    int root = pd->root;
    NodeRt* rt = &R->rt[n->id];
    if (rt->cur == i + 1) {
        rt->cur = 0;
    }
    const FzBody* b = &n->body;
    R->delivering = n;
    R->refused = 0;
    if (b->term == FZ_T_EXT_OK) {
        FutoInArgs a;
        make_args(n, &b->args, &a);
        as->api->success(as, &a);
    } else {
        char info[16];
        snprintf(info, sizeof(info), "x%d", n->id);
        as->api->handle_error(as, fz_codes[b->code], info);
    }
    R->delivering = NULL;
    if (!R->refused) {
        /* It completed the step the flow waited on, perhaps a later one
         * than n's: that step's cancel handler is disarmed, and its own
         * completion, if any, now arrives late (no cancel handler stops
         * it any more). */
        const FzNode* w = root >= 0 ? R->waiter[root] : n;
        if (w) {
            R->rt[w->id].cancel_armed = 0;
            R->rt[w->id].late_armed = 0;
            R->rt[w->id].cur = 0;
        }
        if (root >= 0) {
            R->waiter[root] = NULL;
            R->ext_wait[root] = NULL;
        }
    }
}

static void do_body(FutoInAsyncSteps* as, const FzNode* n, const FzBody* b, int term_applies)
{
    NodeRt* rt = &R->rt[n->id];
    if (term_applies && (b->term == FZ_T_EXT_OK || b->term == FZ_T_EXT_ERR)
            && root_of(as) == n->root) {
        R->ext_wait[n->root] = n;
    }
    {
        int r = root_of(as);
        if (r >= 0) {
            R->waiter[r] = n;
        }
    }
    rt->late_armed = 0;
    if (b->set_cancel) {
        as->api->setCancel(as, (void*)(uintptr_t)n, cancel_cb);
        rt->cancel_armed = 1;
    }
    if (b->has_timeout) {
        as->api->setTimeout(as, b->timeout_ms);
    }
    if (n->stack_size) {
        take_stack(as, n, n->stack_size == 1 ? 16 : 256);
    }
    if (n->state_name) {
        futoin_state(as, state_names[(n->state_name - 1) % FZ_NSTATE_NAMES], node_state_alloc,
                node_state_cleanup, (void*)(uintptr_t)n);
    }
    for (int i = 0; i < b->nkids; ++i) {
        add_node(as, b->kids[i]);
    }
    if (!term_applies) {
        return;
    }
    /* In a loop body: at the terminator's iteration, so that a later
     * iteration, run back to back with the one before, can be the one. */
    do_action(n, FZ_XW_EXEC);
    /* The calls below still go to the flow when the action above cancelled
     * or freed its own root (the engine must refuse them cleanly), but no
     * external completion is scheduled for a flow that is gone. */
    int own_root_dead = R->root_dead[n->root];
    char info[16];
    FutoInArgs a;
    switch (b->term) {
    case FZ_T_SUCCESS:
        if (b->args.n) {
            make_args(n, &b->args, &a);
            as->api->success(as, &a);
        } else {
            as->api->success(as, NULL);
        }
        if (!(b->nkids)) {
            rt->cancel_armed = 0; /* success disarms it */
        }
        break;
    case FZ_T_ERROR:
        snprintf(info, sizeof(info), "i%d", n->id);
        as->api->handle_error(as, fz_codes[b->code], info);
        break;
    case FZ_T_EXT_OK:
    case FZ_T_EXT_ERR:
        as->api->waitExternal(as);
        if (own_root_dead) {
            if (R->ext_wait[n->root] == n) {
                R->ext_wait[n->root] = NULL;
            }
            break;
        }
        if (rt->cur && R->pend[rt->cur - 1].live) {
            violation("a second live instance of a waiting step", n);
        }
        rt->as = as;
        rt->cur = 0;
        {
            /* Late only on a root's main flow: a finished branch's handle
             * is recycled for later branches. */
            int late = b->late && root_of(as) >= 0;
            if (late && b->ext_imm) {
                rt->late_armed = 1; /* the cancel handler schedules it */
                break;
            }
            size_t i = pend_new(n, as, late);
            void* d = (void*)(uintptr_t)(i + 1);
            R->pend[i].h = b->ext_imm ? futoin_loop_immediate(R->loop, d, ext_cb)
                                      : futoin_loop_deferred(R->loop, b->ext_delay, d, ext_cb);
            if (!late) {
                rt->cur = i + 1;
            }
        }
        break;
    case FZ_T_FOREVER:
        as->api->waitExternal(as);
        break;
    case FZ_T_BREAK:
        as->api->breakLoop(as, fz_ctl_labels[b->label]);
        break;
    case FZ_T_CONTINUE:
        as->api->continueLoop(as, fz_ctl_labels[b->label]);
        break;
    default:
        break;
    }
}

static void step_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    const FzNode* n = data;
    char nm[16];
    check_flow(as, n);
    fz_node_name(n, nm, sizeof(nm));
    stamp();
    fz_str_addf(R->out, "exec %s ", nm);
    log_args(args);
    fz_str_addf(R->out, "\n");
    do_body(as, n, &n->body, 1);
}

static void iteration(FutoInAsyncSteps* as, const FzNode* n, size_t i)
{
    char nm[16];
    check_flow(as, n);
    fz_node_name(n, nm, sizeof(nm));
    stamp();
    fz_str_addf(R->out, "iter %s %u\n", nm, (unsigned)i);
    if (n->kind == FZ_N_LOOP && i == n->count) {
        as->api->breakLoop(as, NULL);
        return;
    }
    do_body(as, n, &n->body, i == n->body.term_iter);
}

static void loop_cb(FutoInAsyncSteps* as, void* data)
{
    const FzNode* n = data;
    iteration(as, n, R->rt[n->id].iter++);
}

static void repeat_cb(FutoInAsyncSteps* as, void* data, size_t i)
{
    iteration(as, data, i);
}

static void eh_cb(FutoInAsyncSteps* as, void* data, const char* code)
{
    const FzNode* n = data;
    const FzEh* eh = &n->eh;
    char nm[16];
    check_flow(as, n);
    fz_node_name(n, nm, sizeof(nm));
    stamp();
    fz_str_addf(R->out, "eh %s %s %s\n", nm, code, fz_info_col(code, futoin_error_info(as)));
    do_action(n, FZ_XW_EH);
    char info[16];
    FutoInArgs a;
    switch (eh->kind) {
    case FZ_EH_RECOVER:
        if (eh->args.n) {
            make_args(n, &eh->args, &a);
            as->api->success(as, &a);
        } else {
            as->api->success(as, NULL);
        }
        break;
    case FZ_EH_RETHROW:
        snprintf(info, sizeof(info), "h%d", n->id);
        as->api->handle_error(as, fz_codes[eh->code], info);
        break;
    case FZ_EH_ADD:
        for (int i = 0; i < eh->nkids; ++i) {
            add_node(as, eh->kids[i]);
        }
        break;
    case FZ_EH_BREAK:
        as->api->breakLoop(as, fz_ctl_labels[eh->label]);
        break;
    case FZ_EH_CONTINUE:
        as->api->continueLoop(as, fz_ctl_labels[eh->label]);
        break;
    default:
        break;
    }
}

/* The step a FZ_XA_ADD action adds: only the live root may run it, and
 * only while its nodes may run (or after a revive). */
static void tail_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    int r = *(const int*)data;
    enter_cb(NULL);
    if ((R->root_dead[r] && !R->revived[r]) || as != R->roots[r] || R->destroyed[r]) {
        violation("an added step runs on a dead root or with a foreign handle", NULL);
    }
    stamp();
    fz_str_addf(R->out, "tail r%d ", r);
    log_args(args);
    fz_str_addf(R->out, "\n");
}

/* ------------------------------------------------------------------------ */
/* Deep chains                                                               */

static const FzNode* chain_of(const void* data, unsigned* level)
{
    uintptr_t d = (uintptr_t)data;
    for (int i = 0; i < R->p->nnodes; ++i) {
        const FzNode* n = &R->p->nodes[i];
        uintptr_t base = (uintptr_t)R->chain_lv[i];
        if (base && d >= base && d - base < n->chain_n) {
            *level = (unsigned)(d - base);
            return n;
        }
    }
    violation("a chain callback with foreign data", NULL);
    return NULL;
}

static void chain_check(FutoInAsyncSteps* as, const FzNode* n)
{
    enter_cb(n);
    (void)as;
    if (R->root_dead[n->root] || R->destroyed[n->root]) {
        violation("a chain level of a root ran after it was cancelled or freed", n);
    }
}

static void chain_loop_cb(FutoInAsyncSteps* as, void* data);

static void chain_cancel_cb(FutoInAsyncSteps* as, void* data)
{
    unsigned k;
    const FzNode* n = chain_of(data, &k);
    uint8_t* lv = data;
    (void)as;
    enter_cb(n);
    check_not_destroyed(n->root, "a chain level's cancel handler ran after its root was destroyed",
            n);
    if (!(*lv & CL_ARMED)) {
        violation("a chain level's cancel handler called while not armed", n);
    }
    *lv = (uint8_t)(*lv & ~CL_ARMED);
}

/* Adds what comes inside level k: the next level, or the node itself. */
static void chain_inside(FutoInAsyncSteps* as, const FzNode* n, uint8_t* lv)
{
    if (*lv & CL_LAST) {
        char nm[16];
        fz_node_name(n, nm, sizeof(nm));
        stamp();
        fz_str_addf(R->out, "chain %s level %u\n", nm, (unsigned)(lv - R->chain_lv[n->id]));
        add_node_plain(as, n);
    } else {
        as->api->add(as, lv + 1, chain_step_cb, NULL);
    }
}

static void chain_step_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    unsigned k;
    const FzNode* n = chain_of(data, &k);
    uint8_t* lv = data;
    (void)args;
    chain_check(as, n);
    *lv = 0;
    if (k + 1 >= n->chain_n || --R->chain_budget <= 0) {
        *lv |= CL_LAST;
    }
    if (n->chain_flags & FZ_CHF_STACK) {
        take_stack(as, NULL, 16);
    }
    if (n->chain_flags & FZ_CHF_CANCEL) {
        as->api->setCancel(as, data, chain_cancel_cb);
        *lv |= CL_ARMED;
    }
    unsigned kind = n->chain_kind == FZ_CH_MIX ? FZ_CH_PAR + k % 3 : n->chain_kind;
    switch (kind) {
    case FZ_CH_PAR:
        chain_inside(as->api->parallel(as, NULL, NULL), n, lv);
        break;
    case FZ_CH_ADD:
        chain_inside(as, n, lv);
        break;
    default:
        as->api->loop(as, data, chain_loop_cb, NULL);
        break;
    }
}

static void chain_loop_cb(FutoInAsyncSteps* as, void* data)
{
    unsigned k;
    const FzNode* n = chain_of(data, &k);
    uint8_t* lv = data;
    chain_check(as, n);
    if (*lv & CL_LOOPED) {
        as->api->breakLoop(as, NULL);
        return;
    }
    *lv |= CL_LOOPED;
    chain_inside(as, n, lv);
}

/* ------------------------------------------------------------------------ */

static void end_cb(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    int r = *(const int*)data;
    enter_cb(NULL);
    if ((R->root_dead[r] && !R->revived[r]) || as != R->roots[r]) {
        violation("the last top-level step does not run on the live root handle", NULL);
    }
    R->end_ran[r] = 1;
    stamp();
    fz_str_addf(R->out, "end r%d ", r);
    log_args(args);
    fz_str_addf(R->out, "\n");
}

static void unhandled_cb(FutoInAsyncSteps* as, void* data, const char* code)
{
    int r = *(const int*)data;
    enter_cb(NULL);
    if ((R->root_dead[r] && !R->revived[r]) || as != R->roots[r]) {
        violation("unhandled_error on a dead root or with a foreign handle", NULL);
    }
    R->unhandled[r] = 1;
    stamp();
    fz_str_addf(R->out, "unhandled r%d %s %s\n", r, code, fz_info_col(code, futoin_error_info(as)));
}

static void cancel_root_cb(void* data)
{
    int r = *(const int*)data;
    if (R->roots[r]) {
        futoin_cancel(R->roots[r]);
    }
}

/* Why the engine refused a completion, as the trace shows it (the
 * wording is the engine's, the reasons are docs/SEMANTICS.md's "Whose
 * wait it is"); NULL: some other report. */
static const char* refusal_of(const char* info)
{
    if (strstr(info, "from outside a step that waits for")) {
        return strstr(info, "waits for relinquish()")          ? "owned relinquish"
                : strstr(info, "waits for a lock() of a sync") ? "owned lock"
                                                               : NULL;
    }
    if (strstr(info, "called from no running step while the step is not waiting")) {
        return "not waiting";
    }
    if (strstr(info, "on an instance that was cancelled: ignored")) {
        return "cancelled";
    }
    return NULL;
}

static void misuse_cb(void* data, FutoInAsyncSteps* as, const char* info)
{
    (void)data;
    stamp();
    if (R->delivering && !R->refused) {
        const char* why = refusal_of(info);
        R->refused = 1;
        if (why) {
            char nm[16];
            fz_node_name(R->delivering, nm, sizeof(nm));
            fz_str_addf(R->out, "misuse %s %s refused: %s\n", nm,
                    R->delivering->body.term == FZ_T_EXT_OK ? "success" : "error", why);
            return;
        }
    }
    /* The report of an unhandled error of a root executed without an
     * unhandled_error callback: normalised (the wording is the engine's). */
    int r = as ? root_of(as) : -1;
    if (r >= 0 && R->p->roots[r].no_unhandled && strncmp(info, "unhandled error ", 16) == 0) {
        char code[32];
        size_t n = strcspn(info + 16, " ");
        snprintf(code, sizeof(code), "%.*s", (int)(n < 31 ? n : 31), info + 16);
        R->unhandled[r] = 1;
        fz_str_addf(R->out, "misuse r%d unhandled %s\n", r, code);
        return;
    }
    fz_str_addf(R->out, "misuse %s\n", info);
}

/* ------------------------------------------------------------------------ */

void fz_engine_run(const FzProg* p, FzStr* out)
{
    Run run;
    memset(&run, 0, sizeof(run));
    Run* saved = R;
    R = &run;
    run.p = p;
    run.out = out;
    run.invariants_only = p->cancel_actions > 0 || p->cross_actions > 0 || p->reentry > 0;
    run.sentinels = p->reentry > 0;
    run.chain_budget = FZ_CHAIN_BUDGET;
    run.stack_base = (uintptr_t)__builtin_frame_address(0);
    {
        static long max_kb = -1;
        if (max_kb < 0) {
            const char* e = getenv("FUZZ_MAX_C_STACK_KB");
            max_kb = e && *e ? atol(e) : FZ_MAX_C_STACK_KB;
            if (max_kb < 0) {
                max_kb = 0;
            }
        }
        run.stack_max = (uintptr_t)max_kb * 1024u;
    }
    for (int i = 0; i < p->nnodes; ++i) {
        if (p->nodes[i].chain_kind) {
            run.chain_lv[i] = calloc(p->nodes[i].chain_n, 1);
            if (!run.chain_lv[i]) {
                abort();
            }
        }
    }
    run.loop = futoin_loop_new_virtual();
    if (!run.loop) {
        abort();
    }
    futoin_set_burst(run.loop, p->burst);
    futoin_set_misuse_handler(run.loop, misuse_cb, NULL);
    for (int i = 0; i < FZ_NSYNC; ++i) {
        if (FZ_SYNC_IS_THROTTLE(i)) {
            const FzThrottle* t = &p->throttle[i - FZ_SYNC_THROTTLE0];
            run.sync[i] = futoin_throttle_new(run.loop, t->max, t->period_ms,
                    t->max_queue == FZ_QUEUE_UNLIMITED ? FUTOIN_SYNC_UNLIMITED : t->max_queue);
        } else if (FZ_SYNC_IS_LIMITER(i)) {
            const FzLimiter* l = &p->limiter[i - FZ_SYNC_LIMITER0];
            if (l->defined) {
                FutoInLimiterOptions o;
                futoin_limiter_options_init(&o);
                o.concurrent = l->concurrent;
                o.max_queue = l->max_queue == FZ_QUEUE_UNLIMITED ? FUTOIN_SYNC_UNLIMITED
                                                                 : l->max_queue;
                o.rate = l->rate;
                o.period_ms = l->period_ms;
                o.burst = l->burst == FZ_QUEUE_UNLIMITED ? FUTOIN_SYNC_UNLIMITED : l->burst;
                run.sync[i] = futoin_limiter_new(run.loop, &o);
            } else {
                run.sync[i] = futoin_limiter_new(run.loop, NULL); /* the spec defaults */
            }
        } else {
            run.sync[i] = futoin_mutex_new(run.loop, p->mutex[i].max,
                    p->mutex[i].max_queue == FZ_QUEUE_UNLIMITED ? FUTOIN_SYNC_UNLIMITED
                                                                : p->mutex[i].max_queue);
        }
        if (!run.sync[i]) {
            abort();
        }
    }
    for (int i = 0; i < p->nroots; ++i) {
        run.root_ids[i] = i;
        run.roots[i] = futoin_asyncsteps_new(run.loop);
        if (!run.roots[i]) {
            abort();
        }
        if (run.sentinels) {
            futoin_state(run.roots[i], "sentinel", sentinel_alloc, sentinel_cleanup,
                    &run.root_ids[i]);
        }
        for (int j = 0; j < p->roots[i].ntop; ++j) {
            add_node(run.roots[i], p->roots[i].top[j]);
        }
        run.roots[i]->api->add(run.roots[i], &run.root_ids[i], end_cb, NULL);
    }
    for (int i = 0; i < p->nroots; ++i) {
        if (p->roots[i].cancel_at != FZ_NO_CANCEL) {
            futoin_loop_deferred(run.loop, p->roots[i].cancel_at, &run.root_ids[i], cancel_root_cb);
        }
    }
    for (int i = 0; i < p->nroots; ++i) {
        if (p->roots[i].no_unhandled) {
            futoin_execute(run.roots[i], NULL, NULL);
        } else {
            futoin_execute(run.roots[i], unhandled_cb, &run.root_ids[i]);
        }
    }
    while (futoin_loop_run_next(run.loop) == 1) {
        if (++run.turns > FZ_MAX_TURNS) {
            violation("hang: more loop turns than any program of the language needs", NULL);
        }
    }
    stamp();
    fz_str_addf(out, "idle\n");
    for (int i = 0; i < p->nroots; ++i) {
        const char* st = run.end_ran[i]                           ? "done"
                : run.unhandled[i]                                ? "failed"
                : !run.roots[i] || !futoin_is_valid(run.roots[i]) ? "cancelled"
                                                                  : "stalled";
        fz_str_addf(out, "outcome r%d %s\n", i, st);
    }
    for (int i = 0; i < p->nroots; ++i) {
        FutoInAsyncSteps* root = run.roots[i];
        if (root) {
            run.roots[i] = NULL; /* a cancel handler may free() it again: no-op */
            run.freeing[i] = root;
            run.root_dead[i] = 0;
            pend_drop_root(i);
            futoin_asyncsteps_free(root);
        }
    }
    if (run.sentinels) {
        /* Nothing runs any more: each root is destroyed now. */
        for (int i = 0; i < p->nroots; ++i) {
            if (!run.destroyed[i]) {
                violation("a root was not destroyed when its free() returned outside its "
                          "callbacks",
                        NULL);
            }
        }
    }
    for (size_t i = 0; i < run.npend; ++i) {
        if (run.pend[i].live) {
            violation("an external completion is still pending after free()", run.pend[i].node);
        }
    }
    for (int i = 0; i < FZ_NSYNC; ++i) {
        FutoInSyncStats st;
        if (futoin_sync_stats(run.sync[i], &st) != FUTOIN_SYNC_OK || st.active || st.queued
                || st.slots_used) {
            violation("a sync object still has flows after every root was freed", NULL);
        }
        if (futoin_sync_free(run.sync[i]) != FUTOIN_SYNC_OK) {
            violation("sync object still busy after every root was freed", NULL);
        }
    }
    /* Freeing a root may leave the dispatcher scheduled (e.g. an unlock()
     * woke a flow of a root freed next): it may run, but must do nothing
     * observable. */
    size_t len_before = out->len;
    while (futoin_loop_run_next(run.loop) == 1) {
        if (++run.turns > FZ_MAX_TURNS) {
            violation("hang: the loop keeps running after every root was freed", NULL);
        }
    }
    if (out->len != len_before) {
        violation("callbacks ran after every root was freed", NULL);
    }
    futoin_loop_free(run.loop);
    if (run.boxes_live != 0) {
        violation(run.boxes_live > 0 ? "a boxed result value was never cleaned up"
                                     : "a boxed result value was cleaned up twice",
                NULL);
    }
    if (run.stacks_live != 0) {
        violation(run.stacks_live > 0 ? "a stack() cleanup never ran"
                                      : "a stack() cleanup ran twice",
                NULL);
    }
    if (run.states_live != 0) {
        violation(run.states_live > 0 ? "a state variable was never cleaned up"
                                      : "a state variable was cleaned up twice",
                NULL);
    }
    for (int i = 0; i < p->nnodes; ++i) {
        free(run.chain_lv[i]);
    }
    free(run.pend);
    R = saved;
}

int fz_check_input(const uint8_t* data, size_t size, int verbose)
{
    static FzProg prog; /* large: keep it off the stack */
    fz_decode(&prog, data, size);
    FzStr model = { 0, 0, 0 };
    FzStr engine = { 0, 0, 0 };
    /* Re-entrant cancellation: invariants only (no model). A rate window
     * timer (Throttle or Limiter) tied with another timer (model returns
     * 1): the order is not documented, invariants only as well. */
    const char* why = prog.cancel_actions ? "cancel handlers cancel or free roots"
            : prog.cross_actions          ? "callbacks cancel or free roots"
            : prog.reentry                ? "re-entry hooks or deep chains"
                                          : NULL;
    if (!why) {
        int rc = fz_model_run(&prog, &model);
        if (rc < 0) {
            fz_str_free(&model);
            return 1;
        }
        if (rc > 0) {
            why = "rate window timer tied with another timer";
        }
    }
    if (why) {
        if (verbose) {
            FzStr dump = { 0, 0, 0 };
            fz_dump(&prog, &dump);
            fprintf(stderr, "=== program (invariants only: %s) ===\n%s", why, dump.s);
            fz_str_free(&dump);
        }
        fz_engine_run(&prog, &engine);
        if (verbose) {
            fprintf(stderr, "=== engine ===\n%s", engine.s);
        }
        fz_str_free(&model);
        fz_str_free(&engine);
        return 0;
    }
    if (verbose) {
        FzStr dump = { 0, 0, 0 };
        fz_dump(&prog, &dump);
        fprintf(stderr, "=== program ===\n%s=== model ===\n%s", dump.s, model.s);
        fz_str_free(&dump);
    }
    fz_engine_run(&prog, &engine);
    int same = model.len == engine.len && memcmp(model.s, engine.s, model.len) == 0;
    if (!same) {
        FzStr dump = { 0, 0, 0 };
        fz_dump(&prog, &dump);
        fprintf(stderr, "=== program ===\n%s=== model ===\n%s=== engine ===\n%s", dump.s, model.s,
                engine.s);
        if (!same) {
            size_t i = 0;
            size_t line = 1;
            while (i < model.len && i < engine.len && model.s[i] == engine.s[i]) {
                if (model.s[i] == '\n') {
                    ++line;
                }
                ++i;
            }
            fprintf(stderr, "=== MISMATCH at trace line %zu ===\n", line);
        }
        fz_str_free(&dump);
    }
    fz_str_free(&model);
    fz_str_free(&engine);
    if (!same) {
        abort();
    }
    return 0;
}
