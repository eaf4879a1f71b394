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
#include <string.h>

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
    SK_OWNED     /* a plain step whose ext (StepOwner*) is released with it:
                  * await, work, futoin_add_owned() */
};

/* Lets C API helpers tie an object's lifetime to a step: release() runs
 * exactly once, when the step is dropped unstarted or its frame ends (the
 * last thing the frame releases: after its error handler, its cancel
 * handler and its stack() cleanups). It is user code for OWNER_DATA (the
 * destructor of futoin_add_owned()): the step's node is back in its pool
 * and the frame off the stack when it runs. */
typedef struct StepOwner {
    void (*release)(struct StepOwner* self);
    int kind; /* an OwnerKind: what introspection calls the step */
} StepOwner;

typedef enum OwnerKind { OWNER_STEP = 0, OWNER_AWAIT, OWNER_WORK, OWNER_DATA } OwnerKind;

static inline int futoin__owner_is(const StepOwner* o, OwnerKind kind)
{
    return o && o->kind == (int)kind;
}

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
                void (*loop_fn)(FutoInAsyncSteps* as, void* data);
                void (*repeat_fn)(FutoInAsyncSteps* as, void* data, size_t i);
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

_Static_assert(_Alignof(FutoInSync) > FUTOIN_KIND_MASK,
        "a sync object's address has room for the kind");

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
    FR_WAIT = 1,       /* waits for an external success()/error() */
    FR_PAR_WAIT = 2,   /* a parallel step waiting for its branches */
    FR_EH_USED = 4,    /* error handler already ran: never call it again */
    FR_LOCK_PHASE = 8, /* SYNC frame: lock() not yet completed */
    FR_LOCKED = 16,    /* SYNC frame: unlock() owed */
    FR_TIMER = 32,     /* timer holds a setTimeout() or relinquish handle */
    FR_SECTION = 64,   /* SYNC frame: the critical section has been queued */
    FR_EXTRAS = 128    /* Frame.extras_id names the frame's FrameExtra */
};

/* What few frames need: a cancel handler, stack() memory or a timer. Kept
 * out of the frame, in a loop-wide table (EngineCtx.extras_chunks) that the frame
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
#define FUTOIN_EXTRAS_CHUNK 256
#define FUTOIN_EXTRAS_NONE UINT32_MAX

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
#define FUTOIN_EXTRAS_OWNED 0x80000000u

/* A frame does not keep its step's execute callback: it is called once,
 * straight from the queued step. Nor the tail of its sub-step queue: steps
 * are only ever appended to the frame whose callback is running (or to an
 * idle root's level 0), so the flow keeps that one tail (Flow.add_link).
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
         * pays no field of its own for it. */
        FutoInAsyncSteps_error_callback unhandled;
        /* Level 0 of a branch of futoin_parallel_bounded(): the index of
         * the item it runs (engine/bounded.c). Unused in other branches. */
        size_t item;
    };
    uint8_t kind;
    uint8_t flags;
    /* With FR_EXTRAS: the FrameExtra's index (else stale), and in its top bit
     * (FUTOIN_EXTRAS_OWNED) whether the frame's wait is owned. */
    uint32_t extras_id;
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
    uint32_t gen; /* bumped when the flow is aborted or released */
    /* Cross-thread calls (engine/cross_thread_calls.c) read xepoch and loop from other
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
    uint8_t code_heap; /* the error record is malloc()ed, not a pooled small block */
    /* Where add() stores its next step without further checks (NULL: ask
     * futoin__add_target_slow()): the link that ends the sub-step queue of
     * the frame whose execute or error callback runs, until it completes,
     * or of level 0 of an idle root. One word for both the target and its
     * tail: an append is a store through it and a store of it. */
    Step** add_link;
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
 * siblings, and its own error record: what its handlers read is its own. */
typedef struct Branch {
    Flow fl; /* first: a Branch is used as its Flow */
    Root* root;
    char* code;     /* its error record, see futoin__flow_code() */
    Flow* parent;   /* the flow holding the PARALLEL frame */
    Parallel* par;  /* the parallel it belongs to */
    Flow* sib_next; /* next live branch of the same parallel; zombie link */
#if FUTOIN_TRACING
    struct TraceBuf* trace; /* its last error's trace, see engine/trace.c */
#endif
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
        struct {            /* once started */
            Flow* branches; /* live branch flows */
            uint32_t pending;
        };
    };
    uint8_t started;
    /* The step of futoin_parallel_bounded(): this Parallel is the head of
     * a Bounded (engine/bounded.c), malloc()ed rather than a step node,
     * whose branches are made one item at a time as others end. */
    uint8_t bounded;
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

/* What only some roots use: the main flow's error record (code and
 * error_info), state variables, released branch flows, a completion hook
 * and the end hook. Allocated on first use and kept with the root when it
 * is pooled, so a root that never needs them (most parked or short-lived
 * roots) pays one pointer. */
typedef struct RootExt {
    char* code; /* the main flow's error record, see futoin__flow_code() */
    StateVar* vars;
    uint32_t nvars;
    uint32_t cap_vars;
    Flow* zombies; /* released branch flows, recycled when busy drops to 0 */
    RootDoneHook done;
    void* done_data;
    FutoInRootEndCallback on_end; /* futoin_set_on_end(): kept across runs */
    void* on_end_data;
#if FUTOIN_TRACING
    struct TraceBuf* trace; /* the main flow's last error's trace, see engine/trace.c */
#endif
} RootExt;

/* A root's engine context is its loop's (see futoin__flow_ctx()), and a
 * pooled root is linked through main.pool_next: neither costs a field. */
struct Root {
    Flow main;            /* first: the root's handle is its main flow's interface */
    void* unhandled_data; /* for main.frames[0].unhandled */
    RootExt* ext;         /* NULL until needed (futoin__root_ext()) */
    uint32_t busy;        /* engine frames of this root on the C stack */
    uint8_t state;
    uint8_t cancelling;
    uint8_t free_pending;
    /* The last unhold has work: free_pending is set, or ext->zombies is
     * not empty. One test for the dispatcher's every turn. */
    uint8_t unhold_due;
};

/* Where a flow's ready-queue link sits (common/list.h). */
#define RQ_LINK offsetof(Flow, rq_link)

struct EngineCtx {
    FutoInLoop* loop;
    Root* free_roots;
    SlabPool steps; /* step nodes: Step, LoopSpec, Parallel */
    SlabPool boxes;
    SlabPool stacks;            /* small stack() blocks */
    SlabPool strs;              /* FUTOIN_SMALL_STR blocks: codes and labels */
    FrameExtra** extras_chunks; /* see FrameExtra */
    uint32_t n_extras_chunks;
    uint32_t extras_free; /* first unused FrameExtra's index; FUTOIN_EXTRAS_NONE: none */
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
    /* Destructors of futoin_add_owned() data whose step was aborted under
     * its own running callback: run once that callback has returned
     * (engine/owned_data.c). Newest first; NULL: none. */
    StepOwner* owners_deferred;
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

/* id may carry FUTOIN_EXTRAS_OWNED. */
static inline FrameExtra* futoin__extras_slot(EngineCtx* ctx, uint32_t id)
{
    id &= ~FUTOIN_EXTRAS_OWNED;
    return &ctx->extras_chunks[id / FUTOIN_EXTRAS_CHUNK][id % FUTOIN_EXTRAS_CHUNK];
}

/* The frame's extras, NULL if it has none. */
static inline FrameExtra* futoin__frame_extras(const Flow* fl, const Frame* f)
{
    return f->flags & FR_EXTRAS ? futoin__extras_slot(futoin__flow_ctx(fl), f->extras_id) : NULL;
}

/* The live branches of the parallel frame on top of fl, if it is one. */
static inline Flow* futoin__live_branches(const Flow* fl)
{
    const Frame* top = &fl->frames[fl->depth];
    if (top->kind != SK_PARALLEL || !fl->depth) {
        return NULL;
    }
    const Parallel* p = futoin__step_ext(top->node);
    return p->started ? p->branches : NULL;
}

extern char futoin__no_code[2];

/* The flow's error record: its current error code (or break/continue
 * label), a NUL, its error_info, a NUL, in one buffer. futoin__no_code
 * (both empty) until the flow first needs one, then a pooled block of
 * FUTOIN_SMALL_STR bytes, or a heap block when longer (Flow.code_heap),
 * which the flow keeps until it ends. A branch holds it; a root's main
 * flow keeps it in its RootExt, so a root that never fails or breaks pays
 * nothing for it. Every flow has its own: an error is recorded in the flow
 * it is raised in, and reaches the parent flow only when it escapes a
 * branch (the parent then takes the branch's record). */
static inline char* futoin__flow_code(const Flow* fl)
{
    if (fl->is_branch) {
        return ((const Branch*)fl)->code;
    }
    const Root* r = (const Root*)(const void*)fl;
    return r->ext ? r->ext->code : futoin__no_code;
}

/* The flow's error_info: the second half of its error record. */
static inline const char* futoin__flow_info(const Flow* fl)
{
    const char* code = futoin__flow_code(fl);
    return code + strlen(code) + 1;
}

/* The root's error_info: its main flow's. */
static inline const char* futoin__root_info(const Root* r)
{
    return futoin__flow_info(&r->main);
}

/* The seam for code that runs a root to its end and must hear of it (the
 * loop pool, promise()): hook(data, root, code, results) is called once
 * when the root's run ends (code NULL on success), before what the run
 * left is released. NULL takes the hook off; cancel and free do not call
 * it. */
void futoin__root_on_done(Root* r, RootDoneHook hook, void* data);

Flow* futoin__flow_of(FutoInAsyncSteps* as); /* NULL for a foreign interface */
/* Reports misuse: the running step fails with InternalError (error_info
 * the formatted text), or, where no step runs, the loop's misuse handler
 * gets it. */
FUTOIN_PRINTF(2, 3) void futoin__misuse(Flow* fl, const char* fmt, ...);
/* An error escaped the root of fl, which was executed without an
 * unhandled-error callback: report is "unhandled error CODE (INFO)". A
 * misuse handler of the loop's own gets it (the documented contract); the
 * default one sends it to the log handler as a FUTOIN_LOG_WARNING line,
 * "futoin: unhandled error ...", not as API misuse: nothing was misused. */
void futoin__report_unhandled(Flow* fl, const char* report);
/* The same for all four; args may be NULL. What every call that refuses
 * or drops a success() does with the values it was given (values.c). */
void futoin__args_drop(FutoInArgs* args);
/* The futoin_set_wait_info() text of fl's frame at level d, NULL if none. */
const char* futoin__frame_wait_info(Flow* fl, uint32_t d);

/* The one way for code outside the core to add a step: a step of its own
 * (owner released with it, exactly once) added to fl where add() would
 * add it; what names the caller in a misuse report. Returns 0, or -1 if
 * fl takes no steps now (reported to the step, as for add()). */
int futoin__add_owned_step(Flow* fl, const char* what, StepOwner* owner,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, void* data);

/* Pools shared between kinds (see futoin__ctx_create()). */
_Static_assert(sizeof(Parallel) <= sizeof(Step), "Parallel must fit a step node");
_Static_assert(sizeof(EngineCtx) <= FUTOIN_LOOP_ENGINE_MEM, "EngineCtx must fit the loop's room");
_Static_assert(sizeof(Frame) == 3 * sizeof(void*) || sizeof(void*) != 8 || FUTOIN_TRACING,
        "a frame is 24 bytes (more in the tracing build)");

#pragma GCC visibility pop

#endif
