/* SPDX-License-Identifier: MIT */
/*
 * The AsyncSteps engine's private data model.
 *
 *  Root ── owns ── main Flow ── frames[0..depth]   (frames[0] = level 0)
 *                        │
 *                        └─ a PARALLEL frame ── Parallel ── branch Flows
 *
 * A Step is a queued, not yet started step (a pooled node in its parent
 * frame's singly linked queue). When a step starts it becomes a Frame on its
 * flow's stack; the frame lives until the step and all its sub-steps finish.
 * A plain step's node goes back to the pool as it starts unless the frame
 * needs its error handler; every other kind keeps its node as Frame.node.
 * A Flow is one sequential line of execution with its own FutoInAsyncSteps
 * interface: the root's main flow, or one parallel branch (a Branch).
 *
 * Ready flows wait in the loop-wide ready queue; the dispatcher (one loop
 * immediate) pops a flow, runs one step callback, and requeues it at the tail
 * if it can continue, so concurrent flows take turns step by step. A flow
 * alone in the queue keeps its turn for the whole burst: its plain steps are
 * started and popped in place (advance()) and its loop iterations run back
 * to back (run_iteration()).
 */
#ifndef FUTOIN_ENGINE_INTERNAL_H
#define FUTOIN_ENGINE_INTERNAL_H

#include <futoin/asyncsteps.h>

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/list.h"
#include "common/slab_pool.h"
#include "loop/loop_internal.h"

/* Internal to the library: not exported from the shared object. */
#pragma GCC visibility push(hidden)

typedef struct Root Root;
typedef struct Flow Flow;
typedef struct Frame Frame;
typedef struct Step Step;
typedef struct Parallel Parallel;
typedef struct Step LoopSpec; /* a loop step's node is its own spec */
typedef struct ArgsBox ArgsBox;
typedef struct EngineCtx EngineCtx;
typedef struct StackBlock StackBlock;

enum StepKind {
    SK_PLAIN = 0,
    SK_PARALLEL, /* ext: Parallel* */
    SK_LOOP,     /* the node is a LoopSpec; once started, its frame's node */
    SK_SYNC,     /* ext: FutoInSync*; f/eh/data are the critical section's */
    SK_VALUE,    /* ext: ArgsBox* or NULL: successStep() */
    SK_YIELD,    /* relinquish(): one trip through the loop */
    SK_OWNED     /* a plain step whose ext (StepOwner*) is released with it */
};

/* Lets C API helpers tie an object's lifetime to a step: release() runs
 * exactly once, when the step is dropped unstarted or its frame ends. */
typedef struct StepOwner {
    void (*release)(struct StepOwner* self);
} StepOwner;

/* Step.tag holds a pointer and, where pointers leave three low bits free,
 * the step's kind in those bits: a step node is five words. Every pointer
 * stored there is to an object of at least pointer alignment (a pooled
 * block, a malloc()ed label, or a struct that holds a pointer). 32-bit
 * targets keep the kind in a byte of its own; FUTOIN_STEP_KIND_BYTE selects
 * that layout anywhere, so that the test suite runs it on 64-bit hosts. */
#if UINTPTR_MAX > 0xFFFFFFFFu && !defined(FUTOIN_STEP_KIND_BYTE)
#define FUTOIN_KIND_IN_TAG 1
#define FUTOIN_KIND_MASK ((uintptr_t)7)
#else
#define FUTOIN_KIND_IN_TAG 0
#define FUTOIN_KIND_MASK ((uintptr_t)0)
#endif

struct Step {
    union {
        Step* next;    /* queue link while the step waits */
        size_t i;      /* SK_LOOP, once started: the current iteration */
        ArgsBox* held; /* SK_SYNC, once started: results for the section */
    };
    union {
        struct { /* every kind but SK_LOOP */
            FutoInAsyncSteps_execute_callback f;
            FutoInAsyncSteps_error_callback eh;
            void* data;
        };
        /* SK_LOOP: the loop's spec lives in its step node, which becomes
         * its frame's node when the loop starts: one node per loop. A
         * counted loop (repeat()) has count > 0 and calls repeat_fn; loop()
         * has count 0 and calls loop_fn; repeat() of 0 iterations has
         * neither (NULL) and completes at once. */
        struct {
            union {
                void (*loop_fn)(FutoInAsyncSteps* bsi, void* data);
                void (*repeat_fn)(FutoInAsyncSteps* bsi, void* data, size_t i);
            };
            size_t count;
            void* loop_data;
        };
    };
    /* The kind (enum StepKind, see FUTOIN_KIND_IN_TAG) and a pointer: for
     * SK_LOOP the label (NULL, a pooled small block or, when longer, heap),
     * for the other kinds ext. Read through futoin__step_kind(),
     * futoin__step_ext() and futoin__loop_label(). */
    uintptr_t tag;
#if !FUTOIN_KIND_IN_TAG
    uint8_t kind;
#endif
#if FUTOIN_TRACING
    const char* file; /* where add() was called (futoin_trace_at()) */
    uint32_t line;
#endif
};

_Static_assert(_Alignof(FutoInSync) > FUTOIN_KIND_MASK, "a sync object's address has room for the kind");

static inline uint8_t futoin__step_kind(const Step* s)
{
#if FUTOIN_KIND_IN_TAG
    return (uint8_t)(s->tag & FUTOIN_KIND_MASK);
#else
    return s->kind;
#endif
}

/* ext, or a loop's label, without the kind. */
static inline void* futoin__step_ext(const Step* s)
{
    return (void*)(s->tag & ~FUTOIN_KIND_MASK);
}

static inline char* futoin__loop_label(const LoopSpec* l)
{
    return (char*)futoin__step_ext(l);
}

static inline void futoin__step_set(Step* s, uint8_t kind, const void* ext)
{
    assert(((uintptr_t)ext & FUTOIN_KIND_MASK) == 0);
#if FUTOIN_KIND_IN_TAG
    s->tag = (uintptr_t)ext | kind;
#else
    s->tag = (uintptr_t)ext;
    s->kind = kind;
#endif
}

enum FrameFlags {
    FR_WAIT = 1,      /* waits for an external success()/error() */
    FR_PAR_WAIT = 2,  /* a parallel step waiting for its branches */
    FR_EH_USED = 4,   /* error handler already ran: never call it again */
    FR_LOCK_PHASE = 8, /* SYNC frame: lock() not yet completed */
    FR_LOCKED = 16,   /* SYNC frame: unlock() owed */
    FR_TIMER = 32,    /* timer holds a setTimeout() or relinquish handle */
    FR_SECTION = 64,  /* SYNC frame: the critical section has been queued */
    FR_X = 128        /* Frame.xid names the frame's FrameExtra */
};

/* What few frames need: a cancel handler, stack() memory or a timer. Kept
 * out of the frame, in a loop-wide table (EngineCtx.xchunks) that the frame
 * names by index, so that a frame is 24 bytes, and a frame without one is
 * told apart by its flags alone. */
typedef struct FrameExtra {
    FutoInAsyncSteps_cancel_callback on_cancel;
    union {
        void* cancel_data;
        uint32_t next_free; /* while unused: the next unused one's index */
    };
    StackBlock* stack;
    LoopRef timer;
} FrameExtra;

/* FrameExtra table: chunks of this many, never moved once made (code may
 * hold a FrameExtra* while another frame gets one). */
#define FUTOIN_XCHUNK 256
#define FUTOIN_XNONE UINT32_MAX

/* Who may complete a frame's wait from outside its step.
 * - The step's own code made it wait (waitExternal(), setTimeout(),
 *   setCancel() through the interface): success()/error() on the flow from
 *   outside the step complete it, as the spec has it.
 * - Owned: library code parked the step with futoin_wait_owned(): a lock
 *   wait, an await, a work item, a relinquish, an I/O step of the libuv
 *   backend. Only futoin_owned_success()/futoin_owned_error() with the key
 *   the wait was armed with (its cancel data) complete it; a success() or
 *   error() through the interface is a completion meant for a step that is
 *   gone (the flow's handle is the same for all its steps), and is refused
 *   as misuse.
 * An owned wait always has a FrameExtra (its key is the cancel data), so
 * the mark is the top bit of the frame's extras index: no byte of the
 * frame, and no store when a frame starts. A loop iteration or frame that
 * gives its extras back loses the mark with them. */
#define FUTOIN_XID_OWNED 0x80000000u

/* A frame does not keep its step's execute callback: it is called once,
 * straight from the queued step. Nor the tail of its sub-step queue: steps
 * are only ever appended to the frame whose callback is running (or to an
 * idle root's level 0), so the flow keeps that one tail (Flow.q_tail).
 * What else the step brought stays in its node, which the frame keeps only
 * when it needs it: a parked flow several levels deep costs 24 bytes a
 * level plus the nodes of the levels that have a handler or a spec. */
struct Frame {
    Step* q_head;
    union {
        /* The started step's node (NULL: a plain step without error
         * handler). SK_PLAIN, SK_OWNED, SK_PARALLEL, SK_VALUE: its eh and
         * data are the frame's error handler, its ext the frame's
         * Parallel*, StepOwner* or ArgsBox*. SK_LOOP: the node is the
         * loop's spec. SK_SYNC: ext is the FutoInSync*, f/eh/data the
         * critical section's. */
        Step* node;
        /* Level 0, which no step started: a root's unhandled-error
         * callback (Root.unhandled_data is its data), so that the root
         * pays no field of its own for it. Unused in a branch. */
        FutoInAsyncSteps_error_callback unhandled;
    };
    uint8_t kind;
    uint8_t flags;
    /* With FR_X: the FrameExtra's index (else stale), and in its top bit
     * (FUTOIN_XID_OWNED) whether the frame's wait is owned. */
    uint32_t xid;
#if FUTOIN_TRACING
    /* Kept from the step, which the frame may not keep (see above). */
    void (*fn)(void);
    const char* file;
    uint32_t line;
#endif
};

/* Callback context of a flow: which user callback is on the C stack. */
enum CbContext { CB_NONE = 0, CB_EXEC, CB_ERROR, CB_CANCEL, CB_FINAL };
/* What the running callback decided. */
enum Outcome { OUT_NONE = 0, OUT_SUCCESS, OUT_ERROR, OUT_BREAK, OUT_CONTINUE };
enum FlowState { FS_IDLE = 0, FS_READY, FS_WAIT, FS_DONE };
enum Pending { PD_NEXT = 0, PD_UNWIND };
enum Ctl { CTL_NONE = 0, CTL_BREAK, CTL_CONTINUE };

/* Error codes and loop labels up to this size (with the NUL) live in
 * pooled blocks, longer ones on the heap: a flow or loop without one pays
 * a pointer. */
#define FUTOIN_SMALL_STR 32
#define FUTOIN_INLINE_FRAMES 3

struct Flow {
    FutoInAsyncSteps iface; /* first: the interface pointer is the flow */
    Frame* frames;
    uint32_t depth;
    uint32_t cap;
    union {
        ListLink rq_link; /* its place in the ready queue (EngineCtx.rq) */
        Flow* pool_next;  /* pooled: the next pooled flow or root */
    };
    uint32_t gen;   /* bumped when the flow is aborted or released */
    /* Cross-thread calls (threads/cross_thread_calls.c) read xepoch and loop from other
     * threads. xepoch counts step callbacks started: a success()/error()
     * from another thread carries the value it saw and is dropped if
     * another step has started since. */
    _Atomic uint32_t xepoch;
    uint8_t is_branch; /* a Branch: a parallel() branch, not a root */
    uint8_t state;
    uint8_t pending;
    uint8_t cb;
    uint8_t out;
    uint8_t ctl;
    uint8_t in_rq;
    uint8_t code_heap; /* the code buffer is malloc()ed, not a pooled small block */
    /* Where add() appends without further checks (NULL: ask
     * futoin__add_target_slow()): the frame of the running execute or error
     * callback until it completes, or level 0 of an idle root. */
    Frame* add_fr;
    Step* q_tail; /* last step queued in the frame steps are appended to */
    /* Results of the last success() waiting for the next step (NULL: none).
     * Pooled and moved by pointer, so results cost nothing when absent. */
    ArgsBox* results;
    /* Set once, when the flow's memory is first used (flows are pooled per
     * loop and never change loop). */
    FutoInLoop* loop;
    /* The first frames live in the flow itself: most flows never go deeper,
     * so a root or branch costs one allocation (none when pooled). */
    Frame inline_frames[FUTOIN_INLINE_FRAMES];
};

/* A parallel() branch: a flow with its root and its place among its
 * siblings. */
typedef struct Branch {
    Flow fl;        /* first: a Branch is used as its Flow */
    Root* root;
    char* code;     /* see futoin__flow_code() */
    Flow* parent;   /* the flow holding the PARALLEL frame */
    Parallel* par;  /* the parallel it belongs to */
    Flow* sib_next; /* next live branch of the same parallel; zombie link */
} Branch;

static inline Branch* futoin__branch(Flow* fl)
{
    return (Branch*)fl;
}

/* A root's main flow is the root itself (Root.main comes first), so only a
 * branch keeps a pointer to its root: a root pays no field for it. */
static inline Root* futoin__flow_root(const Flow* fl)
{
    return fl->is_branch ? ((const Branch*)fl)->root : (Root*)(uintptr_t)fl;
}

struct Parallel {
    FutoInAsyncSteps iface;
    Flow* owner;
    union {
        struct { /* until it starts: the branches' steps */
            Step* b_head;
            Step* b_tail;
        };
        struct { /* once started */
            Flow* branches; /* live branch flows */
            uint32_t pending;
        };
    };
    uint8_t started;
};

struct ArgsBox {
    FutoInArgs args;
    uint8_t nargs;
};

typedef struct StateVar {
    char* name;
    void* value;
    void* data;
    void* (*allocate)(void* data);
    void (*cleanup)(void* data, void* value);
} StateVar;

enum RootState { RS_IDLE = 0, RS_RUNNING, RS_DONE, RS_FAILED, RS_CANCELLED };

typedef void (*RootDoneHook)(void* data, Root* root, const char* code, FutoInArgs* args);

/* What only some roots use: the error code, error_info text, state
 * variables, released branch flows and a completion hook. Allocated on first use and kept
 * with the root when it is pooled, so a root that never needs them (most
 * parked or short-lived roots) pays one pointer. */
typedef struct RootExt {
    char* code; /* the main flow's, see futoin__flow_code() */
    char* info; /* error_info; NULL means "" */
    size_t info_cap;
    StateVar* vars;
    uint32_t nvars;
    uint32_t cap_vars;
    Flow* zombies; /* released branch flows, recycled when busy drops to 0 */
    RootDoneHook done;
    void* done_data;
#if FUTOIN_TRACING
    struct TraceBuf* trace; /* the last error's trace, see observe/trace.c */
#endif
} RootExt;

/* A root's engine context is its loop's (see futoin__flow_ctx()), and a
 * pooled root is linked through main.pool_next: neither costs a field. */
struct Root {
    Flow main; /* first: the root's handle is its main flow's interface */
    void* unhandled_data; /* for main.frames[0].unhandled */
    RootExt* ext; /* NULL until needed (futoin__root_ext()) */
    uint32_t busy; /* engine frames of this root on the C stack */
    uint8_t state;
    uint8_t cancelling;
    uint8_t free_pending;
};

/* Where a flow's ready-queue link sits (common/list.h). */
#define RQ_LINK offsetof(Flow, rq_link)

struct EngineCtx {
    FutoInLoop* loop;
    Root* free_roots;
    unsigned budget; /* step callbacks left in the current dispatch */
    SlabPool steps;  /* step nodes: Step, LoopSpec, Parallel */
    SlabPool boxes;
    SlabPool stacks; /* small stack() blocks */
    SlabPool strs;   /* FUTOIN_SMALL_STR blocks: codes and labels */
    FrameExtra** xchunks; /* see FrameExtra */
    uint32_t nxchunks;
    uint32_t xfree; /* first unused FrameExtra's index; FUTOIN_XNONE: none */
    /* Memory of roots and branch flows: carved from slabs (no malloc
     * header each) and never returned to the pool: once made, they are
     * recycled through free_roots / free_flows, whose links leave the
     * interface pointer alone. */
    SlabPool root_mem;
    SlabPool branch_mem;
    Flow* free_flows;
    List rq; /* the ready queue: flows whose next turn is due, in order */
    unsigned burst;
    uint8_t dispatch_scheduled;
    uint32_t dispatching; /* nesting depth of the dispatcher */
    FutoInMisuseHandler misuse;
    void* misuse_data;
    /* Counters (futoin_loop_counters(), include/futoin/introspect.h),
     * bumped only where the engine does more work anyway: a root handed
     * out or pooled, a dispatch burst (the budget it used), an error, a
     * timeout, a root cancel, a failed lock(), a root that failed. */
    uint64_t n_roots;
    uint64_t n_steps;
    uint64_t n_errors;
    uint64_t n_timeouts;
    uint64_t n_cancels;
    uint64_t n_sync_rejections;
    uint64_t n_unhandled;
};

/* The interface tables: flows (abi_table.c), the interface parallel()
 * returns (abi_table_parallel.c), and the inert interface handed out in
 * place of one when the call that would return it was misuse
 * (abi_table_inert.c). */
extern const FutoInAsyncStepsAPI futoin__flow_api;
extern const FutoInAsyncStepsAPI futoin__par_api;
extern FutoInAsyncSteps futoin__inert_iface;

/* NULL if addSync() can use sync, else what is wrong with it. */
const char* futoin__sync_problem(const FutoInSync* sync);

/* Whether a flow outlived the user code just called on it. Every place
 * that calls user code (a callback, a cleanup, lock()/unlock()) takes
 * the flow's mark first and asks afterwards: the code may have cancelled
 * or freed the root, or aborted the flow's branch, which bumps Flow.gen
 * (the flow's memory stays valid while Root.busy holds it). Once it has
 * not survived, the caller leaves the flow alone: the abort has done
 * what was left to do. */
static inline uint32_t futoin__flow_mark(const Flow* fl)
{
    return fl->gen;
}

static inline int futoin__flow_survived(const Flow* fl, uint32_t mark)
{
    return fl->gen == mark;
}

/* A step or an error handler of fl is on the C stack: what it calls
 * (success(), error(), add()...) decides its own outcome (Flow.out). */
static inline int futoin__flow_in_step(const Flow* fl)
{
    return fl->cb == CB_EXEC || fl->cb == CB_ERROR;
}

/* The running step (or error handler) has already decided its outcome:
 * success(), error(), break() or continue() was called (Flow.out). */
static inline int futoin__flow_step_settled(const Flow* fl)
{
    return fl->out != OUT_NONE;
}

/* break() and continue(): as a step's outcome (Flow.out) and as what the
 * unwind carries up to the loop (Flow.ctl). */
static inline uint8_t futoin__ctl_of_outcome(uint8_t out)
{
    return out == OUT_BREAK ? CTL_BREAK : CTL_CONTINUE;
}

static inline uint8_t futoin__outcome_of_ctl(uint8_t ctl)
{
    return ctl == CTL_BREAK ? OUT_BREAK : OUT_CONTINUE;
}

/* A root that was cancelled, or whose free() was called: its handle and
 * its flows answer isValid() with 0, and late calls on it are reported as
 * made on a cancelled or freed instance. */
static inline int futoin__root_is_gone(const Root* r)
{
    return r->free_pending || r->state == RS_CANCELLED;
}

/* fl is the main flow of a root that does not run, with no callback of it
 * on the C stack and no free() pending: add() and stack() go to level 0,
 * to be run by the next execute(). */
static inline int futoin__flow_is_idle_root(const Flow* fl)
{
    const Root* r = futoin__flow_root(fl);
    return fl->cb == CB_NONE && fl == &r->main && r->state != RS_RUNNING && !r->free_pending;
}

/* A running root's flow parked on a step that waits for an external
 * success() or error() (waitExternal(), setTimeout(), setCancel()), with
 * no callback of the flow on the C stack: the state in which a completion
 * from outside the step applies. On the loop thread that includes a root
 * whose cancel or free() is under way: a sync object's unlock() run by
 * that very abort may hand its slot to a waiter of the same root, and the
 * abort then releases the flow it woke. A completion from another thread
 * also needs the root not freed, and its epoch (cross_thread_calls.c). */
static inline int futoin__flow_waits_external(const Flow* fl)
{
    return fl->cb == CB_NONE && fl->state == FS_WAIT && fl->depth > 0
            && (fl->frames[fl->depth].flags & FR_WAIT)
            && futoin__flow_root(fl)->state == RS_RUNNING;
}

/* The wait on top of fl (futoin__flow_waits_external()) was armed by
 * futoin_wait_owned(): a completion through the interface is refused. */
static inline int futoin__flow_wait_is_owned(const Flow* fl)
{
    const Frame* f = &fl->frames[fl->depth];
    return (f->flags & FR_X) && (f->xid & FUTOIN_XID_OWNED);
}

/* The engine context of a flow's loop, which lives in the loop's head
 * (futoin__ctx_create()). Flow.loop never changes, so this needs no field
 * in the root and no load beyond the loop pointer. */
static inline EngineCtx* futoin__flow_ctx(const Flow* fl)
{
    return (EngineCtx*)(void*)((LoopHead*)(void*)fl->loop)->engine_mem;
}

static inline EngineCtx* futoin__root_ctx(const Root* r)
{
    return futoin__flow_ctx(&r->main);
}

RootExt* futoin__root_ext_make(Root* r);
static inline RootExt* futoin__root_ext(Root* r) /* created on first use */
{
    return r->ext ? r->ext : futoin__root_ext_make(r);
}

extern char futoin__no_code[1];

/* The flow's current error code or break/continue label: futoin__no_code
 * (empty) until the flow first needs one, then a buffer it keeps until it
 * ends. A branch holds it; a root's main flow keeps it in its RootExt, so a
 * root that never fails or breaks pays nothing for it. */
static inline char* futoin__flow_code(const Flow* fl)
{
    if (fl->is_branch) {
        return ((const Branch*)fl)->code;
    }
    const Root* r = (const Root*)(const void*)fl;
    return r->ext ? r->ext->code : futoin__no_code;
}

static inline const char* futoin__root_info(const Root* r)
{
    return r->ext && r->ext->info ? r->ext->info : "";
}

static inline RootDoneHook futoin__root_done(const Root* r)
{
    return r->ext ? r->ext->done : NULL;
}

/* The seam for code that runs a root to its end and must hear of it (the
 * loop pool, promise()): hook(data, root, code, results) is called once
 * when the root's run ends (code NULL on success), before what the run
 * left is released. NULL takes the hook off; cancel and free do not call
 * it. */
void futoin__root_on_done(Root* r, RootDoneHook hook, void* data);

/* The engine core (engine_core.h lists its files) */
EngineCtx* futoin__ctx_create(FutoInLoop* loop);
/* The loop's engine context, created on first use. */
static inline EngineCtx* futoin__ctx_get(FutoInLoop* loop)
{
    EngineCtx* ctx = *futoin__loop_engine_slot(loop);
    return ctx ? ctx : futoin__ctx_create(loop);
}
Flow* futoin__flow_of(FutoInAsyncSteps* bsi); /* NULL for a foreign interface */
/* Reports misuse: the running step fails with InternalError (error_info
 * the formatted text), or, where no step runs, the loop's misuse handler
 * gets it. */
FUTOIN_PRINTF(2, 3) void futoin__misuse(Flow* fl, const char* fmt, ...);
Frame* futoin__add_target_slow(Flow* fl, const char* what);

/* Hot helpers used by every add(): kept inline so that adding a step costs
 * a cursor load, a pool pop and a queue append. */
static inline Frame* futoin__add_target(Flow* fl, const char* what)
{
    Frame* fr = fl->add_fr;
    return fr ? fr : futoin__add_target_slow(fl, what);
}

#if FUTOIN_TRACING
/* Below this depth a spent frame keeps its place in the tracing build, so
 * that traces show each step of a chain (dispatch.c, frame_spent()). */
#define FUTOIN_TRACE_KEEP_DEPTH 1024u

/* Where the steps being added come from (futoin_trace_at()). */
typedef struct TraceLoc {
    const char* file;
    uint32_t line;
} TraceLoc;
extern _Thread_local TraceLoc futoin__trace_loc;

static inline void futoin__trace_stamp(Step* s)
{
    s->file = futoin__trace_loc.file;
    s->line = futoin__trace_loc.line;
}
/* The error just raised in fl: its chain of frames, from frame `top` of fl
 * out to the root, becomes the root's trace. */
void futoin__trace_capture(Flow* fl, uint32_t top);
void futoin__trace_free(RootExt* x);
#else
static inline void futoin__trace_stamp(Step* s)
{
    (void)s;
}
static inline void futoin__trace_capture(Flow* fl, uint32_t top)
{
    (void)fl, (void)top;
}
#endif

static inline Step* futoin__step_new(EngineCtx* ctx, uint8_t kind, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* ext)
{
    Step* s = (Step*)futoin__pool_get(&ctx->steps);
    s->next = NULL;
    s->f = f;
    s->eh = eh;
    s->data = data;
    futoin__step_set(s, kind, ext);
    futoin__trace_stamp(s);
    return s;
}

/* Appends to fr, which must be the frame add() targets (see Flow.q_tail). */
static inline void futoin__queue_step(Flow* fl, Frame* fr, Step* s)
{
    if (fr->q_head) {
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): a queue with a head has a q_tail */
        fl->q_tail->next = s;
    } else {
        fr->q_head = s;
    }
    fl->q_tail = s;
}
void futoin__step_free(EngineCtx* ctx, Step* s);
Step* futoin__step_copy(EngineCtx* ctx, const Step* s, Flow* owner, const char** err);
Parallel* futoin__parallel_new(EngineCtx* ctx, Flow* owner);
/* Appends a branch step to a parallel that has not started. */
static inline void futoin__parallel_append(Parallel* p, Step* s)
{
    if (p->b_tail) {
        p->b_tail->next = s;
    } else {
        p->b_head = s;
    }
    p->b_tail = s;
}
/* A loop step: loop() with loop_fn, else repeat() of count iterations. */
LoopSpec* futoin__loopspec_new(EngineCtx* ctx, const char* label, void* data, size_t count,
        void (*loop_fn)(FutoInAsyncSteps*, void*),
        void (*repeat_fn)(FutoInAsyncSteps*, void*, size_t));
void futoin__flow_set_code(Flow* fl, const char* s);
void futoin__set_info(Root* r, const char* info);
/* Runs the cleanups of a's first n values and empties their holders. */
void futoin__args_reset(FutoInArgs* a, uint8_t n);
/* The same for all four; args may be NULL. What every call that refuses
 * or drops a success() does with the values it was given. */
void futoin__args_drop(FutoInArgs* args);
/* The same for the values of a success() on fl that was refused: their
 * cleanups are user code that may free the root, so a live root is held
 * until the last has run (it is destroyed after them, not under them). */
void futoin__args_drop_refused(Flow* fl, FutoInArgs* args);
static inline void futoin__args_clear(FutoInArgs* a, uint8_t* n)
{
    if (*n) {
        futoin__args_reset(a, *n);
        *n = 0;
    }
}
uint8_t futoin__args_take(FutoInArgs* dst, FutoInArgs* src);
int futoin__find_loop(Flow* fl, const char* label);

void futoin__flow_success(Flow* fl, FutoInArgs* args);
void futoin__flow_error(Flow* fl, const char* code, const char* info);
void futoin__flow_set_timeout(Flow* fl, uint32_t ms);
void futoin__flow_set_cancel(Flow* fl, void* data, FutoInAsyncSteps_cancel_callback ch);
void futoin__flow_wait(Flow* fl);
/* fl's top frame waits on the owned wait armed with key
 * (futoin_wait_owned(), engine/owned_wait.c). */
int futoin__flow_owned_by(Flow* fl, const void* key);
/* Takes the cancel handler (ch, data) off fl's top frame if that is its
 * handler: it will not be called. Returns 1 if it was. */
int futoin__flow_drop_cancel(Flow* fl, FutoInAsyncSteps_cancel_callback ch, void* data);
void futoin__flow_ctl(Flow* fl, uint8_t ctl, const char* label);
void futoin__root_execute(Flow* fl, void* data, FutoInAsyncSteps_error_callback unhandled);
void futoin__root_cancel(Root* r);
/* Keeps r from being destroyed while code outside the engine's own paths
 * calls user code on it (a free() meanwhile takes effect at the matching
 * unhold, which may destroy r). */
void futoin__root_hold(Root* r);
void futoin__root_unhold(Root* r);
void futoin__root_free(Root* r);
void* futoin__flow_stack(Flow* fl, size_t size, void (*cleanup)(void*));
int futoin__flow_wait_info(Flow* fl, const char* what);
/* The cleanup that marks a stack() block as futoin_set_wait_info() text. */
void futoin__wait_info_block(void* value);
/* The futoin_set_wait_info() text of fl's frame at level d, NULL if none. */
const char* futoin__frame_wait_info(Flow* fl, uint32_t d);

/* engine/await.c, threads/worker_pool.c: which helper a SK_OWNED step belongs to (introspection). */
int futoin__owner_is_await(const StepOwner* o);
int futoin__owner_is_work(const StepOwner* o);

/* Results waiting in a flow for its next step. */
void futoin__results_drop_slow(Flow* fl);
static inline void futoin__results_drop(Flow* fl)
{
    if (fl->results) {
        futoin__results_drop_slow(fl);
    }
}
void futoin__results_set(Flow* fl, FutoInArgs* args);

/* engine/state_vars.c */
void* futoin__state_var(Root* r, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*));
void futoin__state_copy(Root* dst, Root* src);
void futoin__state_free(Root* r);

/* Pools shared between kinds (see futoin__ctx_create()). */
_Static_assert(sizeof(Parallel) <= sizeof(Step), "Parallel must fit a step node");
_Static_assert(sizeof(EngineCtx) <= FUTOIN_LOOP_ENGINE_MEM, "EngineCtx must fit the loop's room");
_Static_assert(sizeof(Frame) == 3 * sizeof(void*) || sizeof(void*) != 8 || FUTOIN_TRACING,
        "a frame is 24 bytes (more in the tracing build)");

#pragma GCC visibility pop

#endif
