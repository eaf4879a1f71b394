/* SPDX-License-Identifier: MIT */
/*
 * futoin_set_on_end() (docs/SEMANTICS.md "The end of a run"): the hook is
 * called exactly once per run of a root, with how it ended (success and
 * its results, error with code and info, cancelled, freed), after the
 * unhandled-error callback and after what the run held is released; and
 * not for a root that is not running. From inside the hook the root may be
 * freed or executed again. The refusals: branches, parallel() interfaces,
 * freed roots, other threads and other implementations' roots.
 */
#include "tsupport.h"

#include "foreign/foreign_asyncsteps.h"

#include <pthread.h>

/* ---- the hook's recorder ---- */

enum { H_NONE = 0, H_FREE, H_EXEC_AGAIN, H_ADD_EXEC, H_TAKE, H_REHOOK };

typedef struct End {
    int calls;
    FutoInEndReason reason;
    char code[64];
    int code_null;
    char info[128];
    int results_null;
    int nresults;
    int32_t first;
    uint64_t at;
    int cleanups_seen; /* the Counted's cleanups when the hook ran */
    Counted* counted;  /* one of the results, if any */
    int action;        /* what the hook does (H_*) */
    int times;         /* how many calls still act */
    FutoInAsyncSteps* root;
    FutoInBinaryValue taken;
} End;

static const char* reason_name(FutoInEndReason r)
{
    switch (r) {
    case FUTOIN_END_SUCCESS:
        return "success";
    case FUTOIN_END_ERROR:
        return "error";
    case FUTOIN_END_CANCELLED:
        return "cancelled";
    case FUTOIN_END_FREED:
        return "freed";
    }
    return "?";
}

static void other_hook(FutoInAsyncSteps* root, void* data, const FutoInRootEnd* end)
{
    (void)root;
    (void)data;
    tr("other:%s", reason_name(end->reason));
}

static void on_end(FutoInAsyncSteps* root, void* data, const FutoInRootEnd* end)
{
    End* e = data;
    ++e->calls;
    e->root = root;
    e->reason = end->reason;
    e->code_null = end->code == NULL;
    snprintf(e->code, sizeof(e->code), "%s", end->code ? end->code : "");
    snprintf(e->info, sizeof(e->info), "%s", end->info);
    e->results_null = end->results == NULL;
    e->nresults = futoin_args_count(end->results);
    e->first = futoin_arg_i32(end->results, 0, -1);
    e->at = now_ms();
    if (e->counted) {
        e->cleanups_seen = e->counted->cleanups;
    }
    if (end->reason == FUTOIN_END_ERROR) {
        tr("end:error:%s:%s", end->code, end->info);
    } else {
        tr("end:%s", reason_name(end->reason));
    }
    if (e->times <= 0) {
        return;
    }
    --e->times;
    switch (e->action) {
    case H_FREE:
        futoin_asyncsteps_free(root);
        break;
    case H_EXEC_AGAIN:
        futoin_execute(root, no_unhandled, NULL);
        break;
    case H_ADD_EXEC:
        futoin_add(root, step_tag, NULL, "again");
        futoin_execute(root, no_unhandled, NULL);
        break;
    case H_TAKE:
        e->taken = end->results->args[1];
        end->results->args[1].type = NULL;
        break;
    case H_REHOOK:
        assert_int_equal(futoin_set_on_end(root, other_hook, NULL), 0);
        break;
    default:
        break;
    }
}

static FutoInAsyncSteps* hooked_root(End* e)
{
    memset(e, 0, sizeof(*e));
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    assert_non_null(r);
    assert_int_equal(futoin_set_on_end(r, on_end, e), 0);
    return r;
}

static void step_results(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("A");
    futoin_success2(as, futoin_val_i32(7), counted_val(data));
}

static void step_wait_info_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("A");
    futoin_error(as, "Fail", "why");
}

/* ---- outcomes ---- */

static void test_success_with_results(void** state)
{
    (void)state;
    End e;
    Counted c = { 1, 0 };
    FutoInAsyncSteps* r = hooked_root(&e);
    e.counted = &c;
    futoin_add(r, step_results, NULL, &c);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|end:success");
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.reason, FUTOIN_END_SUCCESS);
    assert_true(e.code_null);
    assert_string_equal(e.info, "");
    assert_false(e.results_null);
    assert_int_equal(e.nresults, 2);
    assert_int_equal(e.first, 7);
    assert_ptr_equal(e.root, r);
    /* The results are cleaned up after the hook. */
    assert_int_equal(e.cleanups_seen, 0);
    assert_int_equal(c.cleanups, 1);
    futoin_asyncsteps_free(r);
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 0);
}

static void test_success_hook_takes_a_value(void** state)
{
    (void)state;
    End e;
    Counted c = { 1, 0 };
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_TAKE;
    e.times = 1;
    futoin_add(r, step_results, NULL, &c);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_int_equal(e.calls, 1);
    assert_int_equal(c.cleanups, 0); /* the hook owns it now */
    assert_ptr_equal(e.taken.custom_data, &c);
    futoin_reset_binval(&e.taken);
    assert_int_equal(c.cleanups, 1);
    futoin_asyncsteps_free(r);
}

static void test_success_without_results(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_int_equal(e.calls, 1);
    assert_false(e.results_null);
    assert_int_equal(e.nresults, 0);
    futoin_asyncsteps_free(r);
}

static void test_error_after_unhandled(void** state)
{
    (void)state;
    End e;
    Unhandled u = { 0 };
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, on_unhandled, &u);
    run();
    assert_trace("A|unhandled:Fail|end:error:Fail:why");
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.reason, FUTOIN_END_ERROR);
    assert_string_equal(e.code, "Fail");
    assert_string_equal(e.info, "why");
    assert_true(e.results_null);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void test_error_without_unhandled_is_not_misuse(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    run();
    assert_trace("A|end:error:Fail:why");
    /* The hook hears of it: no report to the misuse handler. */
    assert_int_equal(g_misuse, 0);
    /* Without the hook, the report is back. */
    assert_int_equal(futoin_set_on_end(r, NULL, NULL), 0);
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    run();
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "unhandled error Fail"));
    futoin_asyncsteps_free(r);
}

/* A branch's error: code and info from "CODE:INFO" in data. */
static void step_fail_with(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    char code[32];
    const char* text = data;
    const char* colon = strchr(text, ':');
    snprintf(code, sizeof(code), "%.*s", (int)(colon - text), text);
    tr("%s", text);
    futoin_error(as, code, colon + 1);
}

static void eh_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("recover:%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void test_error_of_a_branch(void** state)
{
    (void)state;
    End e;
    Unhandled u = { 0 };
    FutoInAsyncSteps* r = hooked_root(&e);
    FutoInAsyncSteps* p = futoin_parallel(r, NULL, NULL);
    /* Branch 0 fails and recovers; branch 1's error ends the run. The
     * hook hears branch 1's info, not the text of the error branch 0
     * handled. */
    futoin_add(p, step_fail_with, eh_recover, "Inner:inner-0");
    futoin_add(p, step_fail_with, NULL, "Outer:outer-1");
    futoin_execute(r, on_unhandled, &u);
    run();
    assert_trace("Inner:inner-0|recover:Inner:inner-0|Outer:outer-1|unhandled:Outer"
                 "|end:error:Outer:outer-1");
    assert_int_equal(e.calls, 1);
    assert_string_equal(e.code, "Outer");
    assert_string_equal(e.info, "outer-1");
    futoin_asyncsteps_free(r);
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 0);
}

static void step_timeout(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("A");
    futoin_set_wait_info(as, "the answer");
    futoin_set_timeout(as, 25);
}

static void test_timeout_at_virtual_time(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_timeout, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    run();
    assert_trace("A|end:error:Timeout:the answer");
    assert_int_equal(e.at, 25);
    futoin_asyncsteps_free(r);
}

static void owned_dtor(void* data)
{
    tr("dtor:%s", (const char*)data);
}

static void test_cancelled_after_cleanups(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add_owned(r, step_wait_tag, NULL, "A", owned_dtor);
    futoin_add_owned(r, must_not_run, NULL, "B", owned_dtor);
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("A|cancel:A|dtor:A|dtor:B|end:cancelled");
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.reason, FUTOIN_END_CANCELLED);
    assert_true(e.code_null);
    assert_string_equal(e.info, "");
    assert_true(e.results_null);
    /* Not running any more: neither cancel nor free has a run to end. */
    futoin_cancel(r);
    futoin_asyncsteps_free(r);
    assert_int_equal(e.calls, 1);
}

static void test_freed_while_running(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_wait_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(r);
    assert_trace("A|cancel:A|end:freed");
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.reason, FUTOIN_END_FREED);
}

static void step_frees_own_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("F");
    futoin_asyncsteps_free(as);
    tr("F-returns");
}

static void test_freed_from_own_step(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_frees_own_root, NULL, NULL);
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("F|end:freed|F-returns");
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 0);
}

static void test_not_running_no_call(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, must_not_run, NULL, "A");
    futoin_cancel(r);          /* idle: a no-op */
    futoin_asyncsteps_free(r); /* never executed: no run */
    assert_int_equal(e.calls, 0);
    assert_trace("");
}

/* ---- once per run ---- */

static void test_once_per_run(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_add(r, step_wait_tag, NULL, "C");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("A|end:success|B|end:success|C|cancel:C|end:cancelled");
    assert_int_equal(e.calls, 3);
    futoin_asyncsteps_free(r);
    assert_int_equal(e.calls, 3);
}

static void test_hook_replaced_from_hook(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_REHOOK;
    e.times = 1;
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_add(r, step_tag, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|end:success|B|other:success");
    assert_int_equal(e.calls, 1);
    futoin_asyncsteps_free(r);
}

/* ---- re-entry from the hook ---- */

static void test_free_from_hook(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_FREE;
    e.times = 1;
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|end:success");

    tr_reset();
    r = hooked_root(&e);
    e.action = H_FREE;
    e.times = 1;
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    run();
    assert_trace("A|end:error:Fail:why");

    tr_reset();
    r = hooked_root(&e);
    e.action = H_FREE;
    e.times = 1;
    futoin_add(r, step_wait_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    assert_trace("A|cancel:A|end:cancelled");
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 0);
    /* Freed: ASan and valgrind check that the memory went, once. */
}

static void test_execute_again_from_hook(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_ADD_EXEC;
    e.times = 1;
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("A|end:success|again|end:success");
    assert_int_equal(e.calls, 2);

    /* From the hook of a cancelled run. */
    tr_reset();
    e.calls = 0;
    e.times = 1;
    futoin_add(r, step_wait_tag, NULL, "W");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_cancel(r);
    run();
    assert_trace("W|cancel:W|end:cancelled|again|end:success");
    assert_int_equal(e.calls, 2);

    /* From the hook of a failed run: the error is over. */
    tr_reset();
    e.calls = 0;
    e.times = 1;
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_execute(r, NULL, NULL);
    run();
    assert_trace("A|end:error:Fail:why|again|end:success");
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void step_cancels_own_root(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    (void)data;
    tr("S");
    futoin_cancel(as);
    tr("S-returns");
}

static void test_execute_again_from_hook_under_own_step(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_ADD_EXEC;
    e.times = 1;
    futoin_add(r, step_cancels_own_root, NULL, NULL);
    futoin_add(r, must_not_run, NULL, "B");
    futoin_execute(r, no_unhandled, NULL);
    run();
    /* The cancelled run's step is still on the C stack when the hook runs
     * the root again: nothing of the old run goes on. */
    assert_trace("S|end:cancelled|S-returns|again|end:success");
    assert_int_equal(e.calls, 2);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void test_freed_hook_cannot_run_it_again(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    e.action = H_ADD_EXEC;
    e.times = 1;
    futoin_add(r, step_wait_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(r);
    run();
    assert_trace("A|cancel:A|end:freed");
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 2); /* add() and execute() */
    assert_non_null(strstr(g_misuse_msg, "was freed"));
}

/* A queued owned step's destructor, run when the failed run drops it,
 * executes the root again: the failed run still ends once, then the new
 * one. */
static FutoInAsyncSteps* g_reexec_root;

static void dtor_executes_again(void* data)
{
    tr("dtor:%s", (const char*)data);
    futoin_add(g_reexec_root, step_tag, NULL, "again");
    futoin_execute(g_reexec_root, no_unhandled, NULL);
}

static void test_executed_again_by_failure_cleanup(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    g_reexec_root = r;
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_add_owned(r, must_not_run, NULL, "Q", dtor_executes_again);
    futoin_execute(r, NULL, NULL);
    run();
    assert_trace("A|dtor:Q|end:error:Fail:|again|end:success");
    assert_int_equal(e.calls, 2);
    futoin_asyncsteps_free(r);
    assert_int_equal(g_misuse, 0);
}

static void unhandled_frees(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("unhandled:%s", code);
    futoin_asyncsteps_free(as);
}

static void test_unhandled_frees_root(void** state)
{
    (void)state;
    End e;
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_wait_info_fail, NULL, NULL);
    futoin_execute(r, unhandled_frees, NULL);
    run();
    /* The run ended in its error before the free: told once, so. */
    assert_trace("A|unhandled:Fail|end:error:Fail:why");
    assert_int_equal(e.calls, 1);
    assert_int_equal(g_misuse, 0);
}

static void test_loop_freed_while_running(void** state)
{
    (void)state;
    End e;
    memset(&e, 0, sizeof(e));
    FutoInLoop* loop = futoin_loop_new_virtual();
    assert_non_null(loop);
    FutoInAsyncSteps* r = futoin_asyncsteps_new(loop);
    assert_non_null(r);
    assert_int_equal(futoin_set_on_end(r, on_end, &e), 0);
    futoin_add(r, step_wait_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    futoin_loop_run(loop);
    futoin_loop_free(loop);
    assert_trace("A|cancel:A|end:freed");
    assert_int_equal(e.calls, 1);
}

static void test_promise_and_hook(void** state)
{
    (void)state;
    End e;
    Counted c = { 1, 0 };
    FutoInAsyncSteps* r = hooked_root(&e);
    futoin_add(r, step_results, NULL, &c);
    FutoInOutcome out;
    assert_int_equal(futoin_promise(r, &out), FUTOIN_PROMISE_OK);
    assert_int_equal(e.calls, 1);
    assert_int_equal(e.nresults, 2);
    /* promise() takes the values: the hook saw them first. */
    assert_int_equal(futoin_arg_i32(&out.args, 0, -1), 7);
    assert_int_equal(c.cleanups, 0);
    futoin_outcome_reset(&out);
    assert_int_equal(c.cleanups, 1);
    futoin_asyncsteps_free(r);
}

/* ---- refusals ---- */

static char g_info[256];

static void branch_sets_hook(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    End* e = data;
    assert_int_equal(futoin_set_on_end(as, on_end, e), -1);
}

static void eh_info(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    snprintf(g_info, sizeof(g_info), "%s", futoin_error_info(as));
    tr("eh:%s", code);
    futoin_success(as);
}

static void step_free_then_hook(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_asyncsteps_free(as);
    assert_int_equal(futoin_set_on_end(as, on_end, data), -1);
}

static void* thread_sets_hook(void* arg)
{
    return (void*)(intptr_t)futoin_set_on_end(arg, on_end, NULL);
}

static void test_refusals(void** state)
{
    (void)state;
    End e;
    memset(&e, 0, sizeof(e));
    assert_int_equal(futoin_set_on_end(NULL, on_end, &e), -1);

    /* A branch: InternalError of the branch's step. */
    FutoInAsyncSteps* r = futoin_asyncsteps_new(g_loop);
    FutoInAsyncSteps* p = futoin_parallel(r, eh_info, NULL);
    futoin_add(p, branch_sets_hook, NULL, &e);
    /* The parallel() interface: reported to the misuse handler. */
    assert_int_equal(futoin_set_on_end(p, on_end, &e), -1);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "futoin_set_on_end() on a parallel() interface"));
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_trace("eh:InternalError");
    assert_non_null(strstr(g_info, "futoin_set_on_end() on a parallel branch"));
    futoin_asyncsteps_free(r);

    /* A root whose free() was called. */
    r = futoin_asyncsteps_new(g_loop);
    futoin_add(r, step_free_then_hook, NULL, &e);
    futoin_execute(r, no_unhandled, NULL);
    run();
    assert_int_equal(g_misuse, 2);
    assert_non_null(strstr(g_misuse_msg, "futoin_set_on_end() on an instance that was freed"));

    /* Another thread. */
    r = futoin_asyncsteps_new(g_loop);
    pthread_t t;
    void* rc = NULL;
    assert_int_equal(pthread_create(&t, NULL, thread_sets_hook, r), 0);
    assert_int_equal(pthread_join(t, &rc), 0);
    assert_int_equal((int)(intptr_t)rc, -1);
    futoin_add(r, step_tag, NULL, "A");
    futoin_execute(r, no_unhandled, NULL);
    run();
    futoin_asyncsteps_free(r);

    /* Another implementation's root: the interface cannot tell its end. */
    FrnLoop* fl = frn_loop_new();
    assert_non_null(fl);
    FutoInAsyncSteps* fr = frn_root_new(fl);
    assert_int_equal(futoin_set_on_end(fr, on_end, &e), -1);
    futoin_asyncsteps_free(fr);
    assert_int_equal(frn_live_objects(fl), 0);
    frn_loop_free(fl);

    assert_int_equal(e.calls, 0);
    assert_int_equal(g_misuse, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_success_with_results),
        ENV_TEST(test_success_hook_takes_a_value),
        ENV_TEST(test_success_without_results),
        ENV_TEST(test_error_after_unhandled),
        ENV_TEST(test_error_of_a_branch),
        ENV_TEST(test_error_without_unhandled_is_not_misuse),
        ENV_TEST(test_timeout_at_virtual_time),
        ENV_TEST(test_cancelled_after_cleanups),
        ENV_TEST(test_freed_while_running),
        ENV_TEST(test_freed_from_own_step),
        ENV_TEST(test_not_running_no_call),
        ENV_TEST(test_once_per_run),
        ENV_TEST(test_hook_replaced_from_hook),
        ENV_TEST(test_free_from_hook),
        ENV_TEST(test_execute_again_from_hook),
        ENV_TEST(test_execute_again_from_hook_under_own_step),
        ENV_TEST(test_freed_hook_cannot_run_it_again),
        ENV_TEST(test_executed_again_by_failure_cleanup),
        ENV_TEST(test_unhandled_frees_root),
        ENV_TEST(test_loop_freed_while_running),
        ENV_TEST(test_promise_and_hook),
        ENV_TEST(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
