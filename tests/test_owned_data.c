/* SPDX-License-Identifier: MIT */
/*
 * futoin_add_owned() (docs/SEMANTICS.md "Owned step data"): a step whose
 * data has a destructor, called exactly once in every ending: the step
 * completed (after its sub-steps), failed (after its error handler and
 * what that handler added), was cancelled while it waited or while it was
 * queued, its root or loop was freed, it was a parallel branch, the add
 * was refused; and its order against the cancel handler, the stack()
 * cleanups, the next step and the error handler around it. The destructor
 * is user code: re-entry from it. The data of most cases is a heap
 * "closure" freed by its destructor, so that ASan and valgrind see a
 * double or missing destruction. The same on the strict foreign
 * implementation of tests/foreign/.
 */
#include "tsupport.h"

#include "foreign/foreign_asyncsteps.h"

#include <futoin/introspect.h>

/* ---- owned data: a heap closure that records its life ---- */

typedef struct Closure {
    char name[16];
    int* destroyed;          /* counts destructions, outlives the closure */
    FutoInAsyncSteps* other; /* what some destructors act on */
    int action;              /* what the destructor does (ACT_*) */
    int ends;                /* step_ends_own_root(): ACT_FREE or ACT_CANCEL */
} Closure;

enum { ACT_NONE = 0, ACT_FREE, ACT_CANCEL, ACT_EXEC_OTHER, ACT_ADD_SELF, ACT_NEW_ROOT };

static int g_destroyed[8];

static Closure* closure(int i, const char* name)
{
    Closure* c = calloc(1, sizeof(*c));
    assert_non_null(c);
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->destroyed = &g_destroyed[i];
    return c;
}

static void owned_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args);

/* The destructor. Some closures act on re-entry first. */
static void closure_destroy(void* data)
{
    Closure* c = data;
    ++*c->destroyed;
    tr("dtor:%s", c->name);
    switch (c->action) {
    case ACT_FREE:
        futoin_asyncsteps_free(c->other);
        break;
    case ACT_CANCEL:
        futoin_cancel(c->other);
        break;
    case ACT_EXEC_OTHER:
        futoin_add(c->other, step_tag, NULL, "other");
        futoin_execute(c->other, no_unhandled, NULL);
        break;
    case ACT_ADD_SELF:
        /* On the root being freed: refused, its destructor runs at once. */
        futoin_add_owned(c->other, owned_tag, NULL, closure(7, "late"), closure_destroy);
        break;
    case ACT_NEW_ROOT: {
        /* During futoin_loop_free(): a new root with an owned step. */
        FutoInAsyncSteps* r = futoin_new_instance(c->other);
        assert_non_null(r);
        futoin_add_owned(r, owned_tag, NULL, closure(7, "new"), closure_destroy);
        futoin_execute(r, no_unhandled, NULL);
        break;
    }
    default:
        break;
    }
    free(c);
}

static void owned_tag(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)args;
    tr("%s", ((Closure*)data)->name);
}

static void owned_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", ((Closure*)data)->name);
    futoin_error(as, "Fail", ((Closure*)data)->name);
}

static void owned_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", ((Closure*)data)->name);
    futoin_add(as, step_tag, NULL, "S");
}

static void owned_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    tr("cancel:%s", ((Closure*)data)->name);
}

static void owned_stack_cleanup(void* value)
{
    tr("stack:%s", *(const char**)value);
}

/* Waits with a cancel handler and a stack() block, both using the data. */
static void owned_wait(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Closure* c = data;
    tr("%s", c->name);
    const char** slot = futoin_stack(as, sizeof(*slot), owned_stack_cleanup);
    assert_non_null(slot);
    *slot = c->name;
    futoin_set_cancel(as, owned_cancel, c);
}

static void owned_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("eh:%s:%s", ((Closure*)data)->name, code);
}

static void owned_eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", ((Closure*)data)->name, code);
    futoin_success(as);
}

static void owned_eh_adds(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", ((Closure*)data)->name, code);
    futoin_add(as, step_tag, NULL, "R");
}

static void eh_recover_tag(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", (const char*)data, code);
    futoin_success(as);
}

static FutoInAsyncSteps* new_root(void)
{
    memset(g_destroyed, 0, sizeof(g_destroyed));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    assert_non_null(r);
    return r;
}

/* ---- endings ---- */

static void test_success_destroys_before_next_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_tag, NULL, closure(0, "A"), closure_destroy);
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    assert_int_equal(g_destroyed[0], 0); /* nothing runs inside execute() */
    run();
    assert_trace("A|dtor:A|B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_destroyed[0], 1);
}

static void test_destroy_after_substeps(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_sub, NULL, closure(0, "A"), closure_destroy);
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|S|dtor:A|B");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

static void outer_tag_adds_failing(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("O");
    futoin_add_owned(as, owned_fail, owned_eh, closure(0, "A"), closure_destroy);
}

static void test_error_order_with_outer_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Unhandled u = { 0 };
    futoin_add(r, outer_tag_adds_failing, eh_tag, "O");
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, on_unhandled, &u);
    run();
    assert_trace("O|A|eh:A:Fail|dtor:A|eh:O:Fail|unhandled:Fail");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

static void test_error_without_handler_before_unhandled(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Unhandled u = { 0 };
    futoin_add_owned(r, owned_fail, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, on_unhandled, &u);
    run();
    /* B never ran: dropped with the failed run, before unhandled. */
    assert_trace("A|dtor:A|dtor:B|unhandled:Fail");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    futoin_asyncsteps_free(r);
}

static void test_handler_recovers(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_fail, owned_eh_recover, closure(0, "A"), closure_destroy);
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|eh:A:Fail|dtor:A|B");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

static void test_handler_adds_steps(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_fail, owned_eh_adds, closure(0, "A"), closure_destroy);
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* The handler's steps replace the step: its data lives until they end. */
    assert_trace("A|eh:A:Fail|R|dtor:A|B");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

static void test_cancel_while_waiting(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_wait, NULL, closure(0, "A"), closure_destroy);
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A");
    futoin_cancel(r);
    /* The cancel handler and the stack() cleanup still use the data. */
    assert_trace("A|cancel:A|stack:A|dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_destroyed[0], 1);
}

static void owned_wait_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    owned_wait(as, data, args);
    futoin_set_timeout(as, 10);
}

static void test_timeout_order(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Unhandled u = { 0 };
    futoin_add_owned(r, owned_wait_timeout, owned_eh, closure(0, "A"), closure_destroy);
    futoin_execute(r, on_unhandled, &u);
    run();
    assert_trace("A|cancel:A|eh:A:Timeout|stack:A|dtor:A|unhandled:Timeout");
    assert_int_equal(now_ms(), 10);
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

static void test_cancel_while_queued(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add(r, step_wait_tag, NULL, "W");
    futoin_add_owned(r, owned_tag, NULL, closure(0, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("W|cancel:W|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_destroyed[0], 1);
}

static void test_free_running_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_wait, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(r);
    assert_trace("A|cancel:A|stack:A|dtor:A|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
}

static void test_free_idle_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_tag, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_asyncsteps_free(r);
    assert_trace("dtor:A|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
}

/* Frees (ends ACT_FREE) or cancels its own root, then goes on using its
 * data, as a C++ closure would use its captures: the data must outlive
 * the callback. */
static void step_ends_own_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Closure* c = data;
    tr("%s", c->name);
    if (c->ends == ACT_FREE) {
        futoin_asyncsteps_free(as);
    } else {
        futoin_cancel(as);
    }
    tr("%s-returns:%d", c->name, *c->destroyed);
}

static void eh_ends_own_root(FutoInAsyncSteps* as, void* data, const char* code)
{
    Closure* c = data;
    tr("eh:%s:%s", c->name, code);
    futoin_cancel(as);
    tr("eh-returns:%s:%d", c->name, *c->destroyed);
}

static void test_free_from_own_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* a = closure(0, "A");
    a->ends = ACT_FREE;
    futoin_add_owned(r, step_ends_own_root, NULL, a, closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* The step's frame is aborted by the free, under its callback: its
     * data goes once the callback has returned, and the queued step's
     * after it, in the frames' order. */
    assert_trace("A|A-returns:0|dtor:A|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    assert_int_equal(g_misuse, 0);
}

static void test_cancel_from_own_step_and_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* a = closure(0, "A");
    a->ends = ACT_CANCEL;
    futoin_add_owned(r, step_ends_own_root, NULL, a, closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|A-returns:0|dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);

    /* From its error handler. */
    tr_reset();
    r = new_root();
    futoin_add_owned(r, owned_fail, eh_ends_own_root, closure(0, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("B|eh:B:Fail|eh-returns:B:0|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);

    /* From a sub-step: the owned step around it is not running, but its
     * data waits behind the sub-step's, in the frames' order. */
    tr_reset();
    r = new_root();
    Closure* s = closure(1, "S");
    s->ends = ACT_CANCEL;
    futoin_add_owned(r, owned_tag, NULL, closure(0, "O"), closure_destroy);
    futoin_add_owned(r, step_ends_own_root, NULL, s, closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("O|dtor:O|S|S-returns:0|dtor:S");
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void owned_adds_canceller(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", ((Closure*)data)->name);
    Closure* s = closure(1, "S");
    s->ends = ACT_CANCEL;
    futoin_add_owned(as, step_ends_own_root, NULL, s, closure_destroy);
}

static void test_cancel_from_substep_order(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_owned(r, owned_adds_canceller, NULL, closure(0, "O"), closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(2, "Q"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* Innermost first, all after the running callback. */
    assert_trace("O|S|S-returns:0|dtor:S|dtor:O|dtor:Q");
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(g_destroyed[i], 1);
    }
    futoin_asyncsteps_free(r);
}

/* The loop is freed with roots queued, waiting and idle on it: what their
 * steps own is released; so is a root a destructor makes meanwhile. */
static void test_loop_freed(void** state)
{
    (void)state;
    memset(g_destroyed, 0, sizeof(g_destroyed));
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    FutoInAsyncSteps* waiting = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* queued = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* idle = futoin_asyncsteps_new(loop);
    assert_non_null(waiting);
    assert_non_null(queued);
    assert_non_null(idle);
    futoin_add_owned(waiting, owned_wait, NULL, closure(0, "W"), closure_destroy);
    futoin_add_owned(waiting, owned_tag, NULL, closure(1, "W2"), closure_destroy);
    futoin_execute(waiting, no_unhandled, NULL);
    futoin_loop_run(loop);
    assert_trace("W");
    futoin_add_owned(queued, owned_tag, NULL, closure(2, "Q"), closure_destroy);
    futoin_execute(queued, no_unhandled, NULL); /* queued: the loop never runs again */
    Closure* c = closure(3, "I");
    c->action = ACT_NEW_ROOT;
    c->other = idle;
    futoin_add_owned(idle, owned_tag, NULL, c, closure_destroy);
    tr_reset();
    futoin_loop_free(loop);
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(g_destroyed[i], 1);
    }
    assert_int_equal(g_destroyed[7], 1); /* the root made while freeing */
    /* Each root's own order holds, whichever root goes first. */
    assert_non_null(strstr(g_trace, "cancel:W|stack:W|dtor:W|dtor:W2"));
    assert_null(strstr(g_trace, "|Q")); /* nothing ran */
    assert_null(strstr(g_trace, "|new"));
}

/* ---- parallel branches ---- */

static void test_parallel_branches(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    FutoInAsyncSteps* p = futoin_parallel(r, NULL, NULL);
    futoin_add_owned(p, owned_tag, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(p, owned_sub, NULL, closure(1, "B"), closure_destroy);
    futoin_add(r, step_tag, NULL, "C");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|dtor:A|B|S|dtor:B|C");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    futoin_asyncsteps_free(r);
}

static void test_parallel_failing_sibling(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    FutoInAsyncSteps* p = futoin_parallel(r, eh_recover_tag, "P");
    futoin_add_owned(p, owned_wait, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(p, owned_fail, owned_eh, closure(1, "B"), closure_destroy);
    futoin_add(r, step_tag, NULL, "C");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|B|eh:B:Fail|dtor:B|cancel:A|stack:A|dtor:A|eh:P:Fail|C");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    futoin_asyncsteps_free(r);
}

static void test_parallel_never_started(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add(r, step_wait_tag, NULL, "W");
    FutoInAsyncSteps* p = futoin_parallel(r, NULL, NULL);
    futoin_add_owned(p, owned_tag, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(p, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("W|cancel:W|dtor:A|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    futoin_asyncsteps_free(r);
}

/* ---- refused adds: the destructor runs before the call returns ---- */

static char g_info[256];

static void eh_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    snprintf(g_info, sizeof(g_info), "%s", futoin_error_info(as));
    tr("eh:%s:%s", (const char*)data, code);
    futoin_success(as);
}

static void step_adds_null_f(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("S");
    futoin_add_owned(as, NULL, NULL, closure(0, "A"), closure_destroy);
    tr("after:%d", g_destroyed[0]);
}

static void step_adds_after_success(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("S");
    futoin_success(as);
    futoin_add_owned(as, owned_tag, NULL, closure(0, "A"), closure_destroy);
    tr("after:%d", g_destroyed[0]);
}

static void test_refused_in_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add(r, step_adds_null_f, eh_info, "S");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("S|dtor:A|after:1|eh:S:InternalError");
    assert_non_null(strstr(g_info, "futoin_add_owned() with a NULL execute callback"));
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);

    tr_reset();
    r = new_root();
    futoin_add(r, step_adds_after_success, eh_info, "S");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("S|dtor:A|after:1|eh:S:InternalError");
    assert_non_null(strstr(g_info, "futoin_add_owned() after success()"));
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void test_refused_outside_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add(r, step_wait_tag, NULL, "W");
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* A running root from outside its steps. */
    futoin_add_owned(r, owned_tag, NULL, closure(0, "A"), closure_destroy);
    assert_trace("W|dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_add_owned() called from no running step"));
    /* NULL as: nothing to add to. */
    futoin_add_owned(NULL, owned_tag, NULL, closure(1, "N"), closure_destroy);
    assert_int_equal(g_destroyed[1], 1);
    /* The root goes on as before. */
    futoin_success(r);
    run();
    assert_trace("W|dtor:A|dtor:N");
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 1);
}

static void cancel_handler_adds(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("cancel");
    futoin_add_owned(as, owned_tag, NULL, closure(0, "A"), closure_destroy);
}

static void step_wait_adds_on_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_handler_adds, data);
}

static void test_refused_in_cancel_handler(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add(r, step_wait_adds_on_cancel, NULL, NULL);
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("cancel|dtor:A");
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_add_owned() called from a cancel handler"));
    futoin_asyncsteps_free(r);
}

static void test_null_destroy(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    /* A plain add(). */
    futoin_add_owned(r, step_tag, NULL, "A", NULL);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A");
    futoin_asyncsteps_free(r);
    /* Refused all the same without f. */
    r = new_root();
    futoin_add_owned(r, NULL, NULL, NULL, NULL);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_add_owned() with a NULL execute callback"));
    futoin_asyncsteps_free(r);
}

/* ---- loops ---- */

static void body_adds_owned(FutoInAsyncSteps* as, void* data, size_t i)
{
    (void)data;
    char name[16];
    snprintf(name, sizeof(name), "%zu", i);
    tr("i%zu", i);
    futoin_add_owned(as, owned_tag, NULL, closure((int)(i % 2), name), closure_destroy);
}

static void test_loop_body_adds_each_iteration(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_repeat(r, 3, body_adds_owned, NULL, NULL);
    futoin_add(r, step_tag, NULL, "end");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("i0|0|dtor:0|i1|1|dtor:1|i2|2|dtor:2|end");
    assert_int_equal(g_destroyed[0] + g_destroyed[1], 3);
    futoin_asyncsteps_free(r);

    /* Many iterations: each closure once (ASan, valgrind: none lost). */
    r = new_root();
    futoin_repeat(r, 1000, body_adds_owned, NULL, NULL);
    futoin_execute(r, no_unhandled, NULL);
    tr_reset();
    while (run_next()) {
        tr_reset();
    }
    assert_int_equal(g_destroyed[0] + g_destroyed[1], 1000);
    futoin_asyncsteps_free(r);
}

static void owned_break(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", ((Closure*)data)->name);
    futoin_break(as, NULL);
}

static void body_adds_breaking(FutoInAsyncSteps* as, void* data)
{
    (void)data;
    tr("body");
    futoin_add_owned(as, owned_break, owned_eh, closure(0, "A"), closure_destroy);
}

static void test_break_out_of_owned_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    futoin_add_loop(r, body_adds_breaking, NULL, NULL);
    futoin_add(r, step_tag, NULL, "after");
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* break calls no error handler; the data goes with the step. */
    assert_trace("body|A|dtor:A|after");
    assert_int_equal(g_destroyed[0], 1);
    futoin_asyncsteps_free(r);
}

/* ---- re-entry from the destructor ---- */

static void test_destructor_frees_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* c = closure(0, "A");
    c->action = ACT_FREE;
    c->other = r;
    futoin_add_owned(r, owned_tag, NULL, c, closure_destroy);
    futoin_add_owned(r, must_not_run, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|dtor:A|dtor:B");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    assert_int_equal(g_misuse, 0);
}

static void test_destructor_cancels_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* c = closure(0, "A");
    c->action = ACT_CANCEL;
    c->other = r;
    futoin_add_owned(r, owned_fail, owned_eh, c, closure_destroy);
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|eh:A:Fail|dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    assert_false(futoin_is_valid(r));
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void test_destructor_executes_other_root(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    FutoInAsyncSteps* other = futoin_asyncsteps_new(g_loop);
    Closure* c = closure(0, "A");
    c->action = ACT_EXEC_OTHER;
    c->other = other;
    futoin_add_owned(r, owned_tag, NULL, c, closure_destroy);
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|dtor:A|other|B");
    futoin_asyncsteps_free(r);
    futoin_asyncsteps_free(other);
    assert_int_equal(g_misuse, 0);
}

static void test_destructor_adds_to_root_being_freed(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* c = closure(0, "A");
    c->action = ACT_ADD_SELF;
    c->other = r;
    futoin_add_owned(r, owned_tag, NULL, c, closure_destroy);
    futoin_asyncsteps_free(r);
    assert_trace("dtor:A|dtor:late");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[7], 1);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "was freed"));
}

/* ---- what else sees an owned step ---- */

static void test_copy_from_refuses(void** state)
{
    (void)state;
    FutoInAsyncSteps* model = new_root();
    futoin_add_owned(model, owned_tag, NULL, closure(0, "M"), closure_destroy);
    futoin_add(model, step_tag, NULL, "plain");
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    futoin_copy_from(r, model);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "an owned step"));
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("plain");
    futoin_asyncsteps_free(r);
    futoin_asyncsteps_free(model);
    assert_trace("plain|dtor:M");
    assert_int_equal(g_destroyed[0], 1);
}

static void owned_wait_owned(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", ((Closure*)data)->name);
    futoin_wait_owned(as, NULL, data);
}

static void test_owned_wait_and_introspection(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = new_root();
    Closure* c = closure(0, "A");
    futoin_add_owned(r, owned_wait_owned, owned_eh, c, closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    run();
    FutoInFrameInfo fi;
    assert_int_equal(futoin_frame_info(r, 1, &fi, sizeof(fi)), 0);
    assert_int_equal(fi.kind, FUTOIN_FRAME_STEP);
    assert_ptr_equal(fi.data, c);
    /* A stray success() is refused, and named as library code's wait. */
    futoin_success(r);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "waits for library code"));
    assert_int_equal(futoin_owned_success(r, c, NULL), 0);
    run();
    assert_trace("A|dtor:A");
    futoin_asyncsteps_free(r);
}

/* ---- another implementation's objects ---- */

static FrnLoop* g_frn;
static int g_frn_misuse;

static void frn_misuse_rec(void* data, const char* what)
{
    (void)data;
    ++g_frn_misuse;
    tr("frn-misuse:%s", what);
}

static FutoInAsyncSteps* frn_root(void)
{
    memset(g_destroyed, 0, sizeof(g_destroyed));
    g_frn_misuse = 0;
    g_frn = frn_loop_new();
    assert_non_null(g_frn);
    frn_set_misuse_handler(g_frn, frn_misuse_rec, NULL);
    FutoInAsyncSteps* r = frn_root_new(g_frn);
    assert_non_null(r);
    return r;
}

static void frn_done(FutoInAsyncSteps* r)
{
    if (r) {
        futoin_asyncsteps_free(r);
    }
    assert_int_equal(frn_live_objects(g_frn), 0);
    frn_loop_free(g_frn);
    g_frn = NULL;
}

static void test_foreign_success_and_error(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = frn_root();
    futoin_add_owned(r, owned_sub, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(r, owned_fail, owned_eh_recover, closure(1, "B"), closure_destroy);
    futoin_add(r, step_tag, NULL, "C");
    futoin_execute(r, no_unhandled, NULL);
    frn_loop_run_all(g_frn, 1000);
    assert_trace("A|S|dtor:A|B|eh:B:Fail|dtor:B|C");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 1);
    frn_done(r);
}

static void test_foreign_cancel_and_free(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = frn_root();
    futoin_add_owned(r, owned_wait, NULL, closure(0, "A"), closure_destroy);
    futoin_add_owned(r, owned_tag, NULL, closure(1, "B"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    frn_loop_run_all(g_frn, 1000);
    futoin_cancel(r);
    frn_loop_run_all(g_frn, 1000);
    /* The running step ends with its stack(): its data goes. The queued
     * one is dropped unseen: its data goes with the root. */
    assert_trace("A|cancel:A|stack:A|dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    assert_int_equal(g_destroyed[1], 0);
    futoin_asyncsteps_free(r);
    assert_trace("A|cancel:A|stack:A|dtor:A|dtor:B");
    assert_int_equal(g_destroyed[1], 1);
    frn_done(NULL);
}

static void frn_step_adds_null_f(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("S");
    futoin_add_owned(as, NULL, NULL, closure(0, "A"), closure_destroy);
    tr("after:%d", g_destroyed[0]);
}

static void test_foreign_refused_and_parallel(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = frn_root();
    futoin_add(r, frn_step_adds_null_f, eh_info, "S");
    FutoInAsyncSteps* p = futoin_parallel(r, NULL, NULL);
    futoin_add_owned(p, owned_tag, NULL, closure(1, "P1"), closure_destroy);
    futoin_add_owned(p, owned_tag, NULL, closure(2, "P2"), closure_destroy);
    futoin_execute(r, no_unhandled, NULL);
    frn_loop_run_all(g_frn, 1000);
    assert_non_null(strstr(g_trace, "S|dtor:A|after:1|eh:S:InternalError"));
    assert_non_null(strstr(g_info, "futoin_add_owned() with a NULL execute callback"));
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(g_destroyed[i], 1);
    }
    assert_non_null(strstr(g_trace, "P1"));
    assert_non_null(strstr(g_trace, "dtor:P1"));
    assert_non_null(strstr(g_trace, "dtor:P2"));
    assert_int_equal(g_frn_misuse, 0);
    frn_done(r);
}

static void test_foreign_idle_root_freed(void** state)
{
    (void)state;
    FutoInAsyncSteps* r = frn_root();
    futoin_add_owned(r, owned_tag, NULL, closure(0, "A"), closure_destroy);
    futoin_asyncsteps_free(r);
    assert_trace("dtor:A");
    assert_int_equal(g_destroyed[0], 1);
    frn_done(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_success_destroys_before_next_step),
        ENV_TEST(test_destroy_after_substeps),
        ENV_TEST(test_error_order_with_outer_handler),
        ENV_TEST(test_error_without_handler_before_unhandled),
        ENV_TEST(test_handler_recovers),
        ENV_TEST(test_handler_adds_steps),
        ENV_TEST(test_cancel_while_waiting),
        ENV_TEST(test_timeout_order),
        ENV_TEST(test_cancel_while_queued),
        ENV_TEST(test_free_running_root),
        ENV_TEST(test_free_idle_root),
        ENV_TEST(test_free_from_own_step),
        ENV_TEST(test_cancel_from_own_step_and_handler),
        ENV_TEST(test_cancel_from_substep_order),
        ENV_TEST(test_loop_freed),
        ENV_TEST(test_parallel_branches),
        ENV_TEST(test_parallel_failing_sibling),
        ENV_TEST(test_parallel_never_started),
        ENV_TEST(test_refused_in_step),
        ENV_TEST(test_refused_outside_step),
        ENV_TEST(test_refused_in_cancel_handler),
        ENV_TEST(test_null_destroy),
        ENV_TEST(test_loop_body_adds_each_iteration),
        ENV_TEST(test_break_out_of_owned_step),
        ENV_TEST(test_destructor_frees_root),
        ENV_TEST(test_destructor_cancels_root),
        ENV_TEST(test_destructor_executes_other_root),
        ENV_TEST(test_destructor_adds_to_root_being_freed),
        ENV_TEST(test_copy_from_refuses),
        ENV_TEST(test_owned_wait_and_introspection),
        ENV_TEST(test_foreign_success_and_error),
        ENV_TEST(test_foreign_cancel_and_free),
        ENV_TEST(test_foreign_refused_and_parallel),
        ENV_TEST(test_foreign_idle_root_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
