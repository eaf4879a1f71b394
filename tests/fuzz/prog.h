/* SPDX-License-Identifier: MIT */
/*
 * The fuzzer's tiny step language: a program is 1..3 roots, each a list of
 * top-level steps, plus two Mutex, two Throttle and two Limiter objects, a
 * burst setting and an optional root cancel at a virtual tick. A step has a
 * body (setCancel, setTimeout, sub-steps, then one terminator) and an error
 * handler. Parallel steps, loop()/repeat() with labels and sync (Mutex,
 * Throttle or Limiter) sections nest freely.
 *
 * prog.c decodes any byte string into a bounded program (see the encoding
 * comment there). The engine runner (engine_run.c) and the reference model
 * (model.c) both execute a program and render the same trace format.
 */
#ifndef FUTOIN_FUZZ_PROG_H
#define FUTOIN_FUZZ_PROG_H

#include <stddef.h>
#include <stdint.h>

#define FZ_MAX_NODES 40
#define FZ_MAX_KIDS 3
#define FZ_MAX_BRANCHES 4
#define FZ_MAX_EH_KIDS 2
#define FZ_MAX_DEPTH 7
#define FZ_MAX_ROOTS 3
#define FZ_MAX_TOP 3
#define FZ_NO_CANCEL 0xffff
#define FZ_QUEUE_UNLIMITED 0xffffffffu

/* The sync objects of a program: FzNode.sync indexes this list. */
enum {
    FZ_SYNC_MUTEX0 = 0,
    FZ_SYNC_MUTEX1,
    FZ_SYNC_THROTTLE0,
    FZ_SYNC_THROTTLE1,
    FZ_SYNC_LIMITER0,
    FZ_SYNC_LIMITER1,
    FZ_NSYNC
};
#define FZ_SYNC_IS_THROTTLE(k) ((k) == FZ_SYNC_THROTTLE0 || (k) == FZ_SYNC_THROTTLE1)
#define FZ_SYNC_IS_LIMITER(k) ((k) == FZ_SYNC_LIMITER0 || (k) == FZ_SYNC_LIMITER1)

/* Terminators of a step body. */
enum {
    FZ_T_NONE = 0, /* return: implicit success / wait / sub-steps */
    FZ_T_SUCCESS,  /* success(args) inside the callback */
    FZ_T_ERROR,    /* error(code, "i<id>") inside the callback */
    FZ_T_EXT_OK,   /* waitExternal(); success(args) later from the loop */
    FZ_T_EXT_ERR,  /* waitExternal(); error(code, "x<id>") later */
    FZ_T_FOREVER,  /* waitExternal(); nothing completes it */
    FZ_T_BREAK,    /* break(label) */
    FZ_T_CONTINUE, /* continue(label) */
    FZ_T__COUNT
};

/* Error handler kinds. */
enum {
    FZ_EH_NONE = 0, /* no handler (NULL) */
    FZ_EH_RECOVER,  /* success(args) */
    FZ_EH_RETHROW,  /* error(code, "h<id>") */
    FZ_EH_PASS,     /* returns without anything: unwinding continues */
    FZ_EH_ADD,      /* adds steps that replace the failed step */
    FZ_EH_BREAK,    /* break(label) */
    FZ_EH_CONTINUE, /* continue(label) */
    FZ_EH__COUNT
};

enum { FZ_N_STEP = 0, FZ_N_PAR, FZ_N_LOOP, FZ_N_REPEAT, FZ_N_SYNC, FZ_N_VALUE, FZ_N_YIELD };

/* What a cancel handler does besides logging (and stopping the external
 * completion). Programs with a non-zero action are checked for invariants
 * only (the model does not cover re-entrant cancellation). */
enum { FZ_CA_NONE = 0, FZ_CA_CANCEL_ROOT, FZ_CA_FREE_ROOT };

/* Cross-root actions (the optional trailers of a program, see prog.c): a
 * callback of a node acts on a root, its own or another one. Invariants
 * only, as above. The first trailer gives the execute callback, error
 * handler or cancel handler a cancel() or free(); the re-entry trailer gives
 * any hook below any action of the re-entry matrix. */
enum {
    FZ_XW_EXEC = 0, /* the execute callback (a loop body: at its terminator's iteration) */
    FZ_XW_EH,       /* the error handler */
    FZ_XW_CANCEL,   /* the cancel handler */
    FZ_XW_VALUE,    /* the cleanup of each boxed value the node makes */
    FZ_XW_STACK,    /* the cleanup of its stack() block (made by its execute callback) */
    FZ_XW_SALLOC,   /* the allocator of its state variable (futoin_state() in execute) */
    FZ_XW_SCLEAN,   /* the cleanup of that state variable (run when the root is freed) */
    FZ_XW__COUNT
};
#define FZ_XW_OLD_COUNT 3 /* the hooks the first trailer can name */
enum {
    FZ_XA_NONE = 0,
    FZ_XA_CANCEL, /* cancel(); with x_revive, then add() + execute() if that left it cancelled */
    FZ_XA_FREE,   /* free() */
    FZ_XA_STATE,  /* futoin_state(root, "v<x_arg>") with a plain allocator and cleanup */
    FZ_XA_ADD     /* add() of a logging step (the engine may refuse: misuse report) */
};
#define FZ_MAX_XACTIONS 4
#define FZ_MAX_REENTRY 8
#define FZ_NSTATE_NAMES 4

/* Deep nesting: a node of the program wrapped in a chain of n levels, each
 * a step that adds the next level (or, at the last one, the node itself)
 * through a construct of its kind. */
enum { FZ_CH_NONE = 0, FZ_CH_PAR, FZ_CH_ADD, FZ_CH_LOOP, FZ_CH_MIX };
#define FZ_CHF_STACK 1  /* every level takes a stack() block with a cleanup */
#define FZ_CHF_CANCEL 2 /* every level sets a cancel handler */
#define FZ_MAX_CHAIN 4096

typedef struct FzArgs {
    uint8_t n;
    uint8_t v[4];     /* 0..127 */
    uint8_t boxed[4]; /* 1: a custom value with a cleanup (heap int) */
} FzArgs;

typedef struct FzNode FzNode;

typedef struct FzBody {
    uint8_t term;
    uint8_t set_cancel;
    uint8_t has_timeout;
    uint8_t timeout_ms;
    uint8_t nkids;
    FzNode* kids[FZ_MAX_KIDS];
    FzArgs args;       /* SUCCESS, EXT_OK */
    uint8_t code;      /* ERROR, EXT_ERR: index into fz_codes */
    uint8_t label;     /* BREAK, CONTINUE: index into fz_ctl_labels */
    uint8_t ext_imm;   /* EXT_*: completed from a loop immediate (else a timer) */
    uint8_t ext_delay; /* EXT_* with a timer: delay in ms; late with ext_imm: extra hops */
    /* EXT_*: a late completion (ignored in a parallel branch, whose handle
     * is recycled when the branch ends): the cancel handler does not stop
     * the timer, or, with ext_imm, it is what schedules the completion
     * (after 1 + ext_delay loop immediates); either way the completion may
     * reach the flow after the step is gone. */
    uint8_t late;
    uint8_t term_iter;     /* loop bodies: the iteration the terminator applies to */
    uint8_t cancel_action; /* FZ_CA_* */
} FzBody;

typedef struct FzEh {
    uint8_t kind;
    FzArgs args;
    uint8_t code;
    uint8_t label; /* BREAK, CONTINUE */
    uint8_t nkids;
    FzNode* kids[FZ_MAX_EH_KIDS];
} FzEh;

struct FzNode {
    uint8_t kind;
    uint8_t in_branch; /* statically inside a parallel branch */
    uint8_t root;      /* index of the root it belongs to */
    int id;
    FzArgs value; /* VALUE (successStep) */
    FzBody body;  /* STEP; LOOP/REPEAT: the iteration body */
    FzEh eh;      /* STEP, PAR */
    uint8_t nbr;  /* PAR */
    FzNode* br[FZ_MAX_BRANCHES];
    uint8_t label;                  /* LOOP/REPEAT: index into fz_loop_labels */
    uint8_t count;                  /* REPEAT: count; LOOP: the iteration that breaks */
    uint8_t sync;                   /* SYNC: FZ_SYNC_* */
    FzNode* section;                /* SYNC: a STEP node */
    uint8_t x_what[FZ_XW__COUNT];   /* FZ_XA_* per callback (FZ_XW_*) */
    uint8_t x_target[FZ_XW__COUNT]; /* the root it acts on */
    uint8_t x_revive[FZ_XW__COUNT]; /* FZ_XA_CANCEL: then add a step and execute() it again */
    uint8_t x_arg[FZ_XW__COUNT];    /* FZ_XA_STATE: the variable's name index */
    uint8_t stack_size;             /* 0, or its execute callback takes stack(): 1 small, 2 large */
    uint8_t state_name;  /* 0, or its execute callback calls futoin_state("v<state_name-1>") */
    uint8_t is_section;  /* the critical section of a sync node (never wrapped) */
    uint8_t chain_kind;  /* FZ_CH_*: added wrapped in a chain of chain_n levels */
    uint8_t chain_flags; /* FZ_CHF_* */
    uint16_t chain_n;
};

typedef struct FzRoot {
    uint16_t cancel_at;   /* virtual ms, or FZ_NO_CANCEL */
    uint8_t no_unhandled; /* execute(root, NULL, NULL): report to the misuse handler */
    uint8_t ntop;
    FzNode* top[FZ_MAX_TOP];
} FzRoot;

typedef struct FzMutex {
    uint32_t max;
    uint32_t max_queue;
} FzMutex;

typedef struct FzThrottle {
    uint32_t max;       /* entries per window: 1..3 */
    uint32_t period_ms; /* window length */
    uint32_t max_queue;
    uint8_t defined; /* 1: set by a sync node (else the defaults) */
} FzThrottle;

/* A Limiter (sync.h FutoInLimiterOptions): a Mutex(concurrent, max_queue)
 * with a Throttle(rate, period_ms, burst) nested inside. */
typedef struct FzLimiter {
    uint32_t concurrent; /* 1..3 */
    uint32_t max_queue;  /* flows waiting for a slot */
    uint32_t rate;       /* entries per window: 1..3 */
    uint32_t period_ms;
    uint32_t burst;  /* flows waiting for the rate */
    uint8_t defined; /* 1: set by a sync node (else the spec defaults) */
} FzLimiter;

typedef struct FzProg {
    unsigned burst;
    uint8_t nroots;
    FzRoot roots[FZ_MAX_ROOTS];
    FzMutex mutex[2];
    FzThrottle throttle[2];
    FzLimiter limiter[2];
    int nnodes;
    int cancel_actions; /* nodes with a cancel_action */
    int cross_actions;  /* x_what entries set */
    int reentry;        /* entries of the re-entry trailer that took effect */
    FzNode nodes[FZ_MAX_NODES];
} FzProg;

extern const char* const fz_codes[3];
extern const char* const fz_loop_labels[3]; /* NULL, "a", "b" */
extern const char* const fz_ctl_labels[4];  /* NULL, "a", "b", "zz" */

/* Decodes data into *p (never fails: missing bytes read as 0). */
void fz_decode(FzProg* p, const uint8_t* data, size_t size);

/* "s3", "p4", "l5", "m6" */
void fz_node_name(const FzNode* n, char* buf, size_t len);

/* Appends a readable dump of the program to a growing string. */
typedef struct FzStr {
    char* s;
    size_t len;
    size_t cap;
} FzStr;
void fz_str_addf(FzStr* s, const char* fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
void fz_str_free(FzStr* s);
void fz_args_fmt(FzStr* s, const FzArgs* a);
void fz_dump(const FzProg* p, FzStr* out);

#endif
