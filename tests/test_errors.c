/* SPDX-License-Identifier: MIT */
/* Error handling (spec 1.2, 1.2.1, 1.7): traces of the spec examples,
 * recovery, rethrow, unwinding rules, error_info and unhandled_error. */
#include "tsupport.h"

/* ---- spec 1.2 ---- */

static void s12_l1_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("Level 1 func");
    futoin_error(as, "myerror", NULL);
}

static void s12_l1_onerror(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("Level 1 onerror: %s", code);
    futoin_error(as, "newerror", NULL);
}

static void s12_l0_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("Level 0 func");
    futoin_add(as, s12_l1_func, s12_l1_onerror, NULL);
}

static void s12_l0_onerror(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("Level 0 onerror: %s", code);
    futoin_success1(as, futoin_val_cstr("Prm"));
}

static void s12_l0_func2(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    tr("Level 0 func2: %s", futoin_arg_cstr(args, 0, "(none)"));
    futoin_success(as);
}

static void test_spec_1_2(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, s12_l0_func, s12_l0_onerror, NULL);
    futoin_add(root, s12_l0_func2, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("Level 0 func|Level 1 func|Level 1 onerror: myerror|"
                 "Level 0 onerror: newerror|Level 0 func2: Prm");
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* ---- spec 1.2.1 ---- */

static int g_l1_onerror_calls;

static void s121_l2_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("Level 2 func");
    futoin_error(as, "second", NULL);
}

static void s121_l2_onerror(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("Level 2 onerror: %s", code);
}

static void s121_l1_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("Level 1 func");
    futoin_error(as, "first", NULL);
}

static void s121_l1_onerror(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    ++g_l1_onerror_calls;
    tr("Level 1 onerror: %s", code);
    futoin_add(as, s121_l2_func, s121_l2_onerror, NULL);
}

static void s121_l0_func(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("Level 0 func");
    futoin_add(as, s121_l1_func, s121_l1_onerror, NULL);
}

static void s121_l0_onerror(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("Level 0 onerror: %s", code);
}

static void test_spec_1_2_1(void** state)
{
    (void)state;
    g_l1_onerror_calls = 0;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, s121_l0_func, s121_l0_onerror, NULL);
    futoin_add(root, must_not_run, NULL, "after");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("Level 0 func|Level 1 func|Level 1 onerror: first|Level 2 func|"
                 "Level 2 onerror: second|Level 0 onerror: second|unhandled:second");
    assert_int_equal(g_l1_onerror_calls, 1);
    assert_int_equal(u.calls, 1);
    assert_ptr_equal(u.as, root);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* Steps added in an error handler replace the failed step: their result
 * goes to the failed step's successor. */
static void give_str(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_success1(as, futoin_val_cstr((const char*)data));
}

static void eh_add_alternative(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    futoin_add(as, step_tag, NULL, "alt1");
    futoin_add(as, give_str, NULL, "alt-result");
}

static void show_str(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    tr("%s:%s", (const char*)data, futoin_arg_cstr(args, 0, "(none)"));
}

static void test_eh_steps_replace_step(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_fail, eh_add_alternative, "s1");
    futoin_add(root, show_str, NULL, "s2");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("s1|eh:Fail|alt1|s2:alt-result");
    futoin_asyncsteps_free(root);
}

/* ---- recovery with args ---- */

static void eh_recover2(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    futoin_success2(as, futoin_val_i32(5), futoin_val_strdup("recovered"));
}

static void show_two(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    tr("next:%d:%d:%s", futoin_args_count(args), (int)futoin_arg_i32(args, 0, -1),
            futoin_arg_cstr(args, 1, "?"));
}

static void deep_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    tr("outer");
    futoin_add(as, step_fail, NULL, "inner");
    futoin_add(as, must_not_run, NULL, "inner2");
}

static void test_recovery_with_args(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, deep_fail, eh_recover2, NULL);
    futoin_add(root, show_two, NULL, NULL);
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("outer|inner|eh:Fail|next:2:5:recovered");
    futoin_asyncsteps_free(root);
}

/* Recovery in a sub-step's handler continues with the sub-step's siblings. */
static void outer_with_recovering_sub(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, step_fail, eh_recover2, "sub1");
    futoin_add(as, show_two, NULL, NULL);
}

static void test_recovery_continues_siblings(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_with_recovering_sub, eh_tag, "outer");
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("sub1|eh:Fail|next:2:5:recovered|after");
    futoin_asyncsteps_free(root);
}

/* ---- rethrow: a new code replaces the old one on the way down ---- */

static void eh_rethrow(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:%s", (const char*)data, code, futoin_error_info(as));
    futoin_error(as, "Second", "info2");
}

static void eh_outer_check(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("outer-eh:%s:%s", code, futoin_error_info(as));
    futoin_success(as);
}

static void fail_with_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_error(as, "First", (const char*)data);
}

static void outer_rethrow(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, fail_with_info, eh_rethrow, "info1");
}

static void test_rethrow(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_rethrow, eh_outer_check, NULL);
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("eh:info1:First:info1|outer-eh:Second:info2|after");
    futoin_asyncsteps_free(root);
}

/* Re-raising the very code string the handler received is fine. */
static void eh_reraise_same(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh1:%s", code);
    futoin_error(as, code, futoin_error_info(as));
}

static void outer_reraise(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, fail_with_info, eh_reraise_same,
            "a rather long error info string that does not fit any inline buffer at all");
}

static void test_reraise_same_code(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_reraise, NULL, NULL);
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh1:First|unhandled:First");
    assert_string_equal(u.info,
            "a rather long error info string that does not fit any inline buffer at all");
    futoin_asyncsteps_free(root);
}

/* ---- eh returning without action: unwinding continues, same code ---- */

static void eh_silent(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    tr("silent:%s:%s", (const char*)data, code);
}

static void l1_silent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, step_fail, eh_silent, "l2");
    futoin_add(as, must_not_run, NULL, "l2-next");
}

static void l0_silent(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_add(as, l1_silent, eh_silent, "l1");
    futoin_add(as, must_not_run, NULL, "l1-next");
}

static void test_eh_without_action_continues(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, l0_silent, eh_silent, "l0");
    futoin_add(root, must_not_run, NULL, "l0-next");
    futoin_execute(root, on_unhandled, &u);
    run();
    /* no implicit success in error handlers */
    assert_trace("l2|silent:l2:Fail|silent:l1:Fail|silent:l0:Fail|unhandled:Fail");
    assert_int_equal(u.calls, 1);
    futoin_asyncsteps_free(root);
}

/* ---- a step's own error does not call its own cancel handler; frames popped
 * by unwinding without recovery do, after their error handler ---- */

static void own_fail_with_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s", (const char*)data);
    futoin_set_cancel(as, cancel_tag, data);
    futoin_error(as, "Own", NULL);
}

static void parent_with_cancel(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, cancel_tag, data);
    futoin_add(as, own_fail_with_cancel, eh_tag, "child");
}

static void test_unwind_cancel_handlers(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, parent_with_cancel, eh_tag, "parent");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("child|eh:child:Own|eh:parent:Own|cancel:parent|unhandled:Own");
    futoin_asyncsteps_free(root);
}

/* A recovering parent: its cancel handler is not called. */
static void eh_recover_tag(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s", (const char*)data, code);
    futoin_success(as);
}

static void test_recovered_frame_not_cancelled(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, parent_with_cancel, eh_recover_tag, "parent");
    futoin_add(root, step_tag, NULL, "after");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("child|eh:child:Own|eh:parent:Own|after");
    futoin_asyncsteps_free(root);
}

/* ---- error_info ---- */

static void show_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    tr("%s:[%s]", (const char*)data, futoin_error_info(as));
}

static void fail_no_info(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_error(as, "NoInfo", NULL);
}

static void eh_show_info_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    tr("eh:%s:%s:[%s]", (const char*)data, code, futoin_error_info(as));
    futoin_success(as);
}

static void test_error_info(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, show_info, NULL, "start");
    futoin_add(root, fail_with_info, eh_show_info_recover, "detail one");
    futoin_add(root, show_info, NULL, "kept"); /* still the last error's info */
    futoin_add(root, fail_no_info, eh_show_info_recover, "noinfo");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("start:[]|eh:detail one:First:[detail one]|kept:[detail one]|eh:noinfo:NoInfo:[]");
    /* error_info through the raw state variable */
    const char* raw = (const char*)root->api->stateVariable(root, NULL, "error_info", NULL, NULL);
    assert_non_null(raw);
    assert_string_equal(raw, "");
    assert_null(root->api->stateVariable(root, NULL, "last_exception", NULL, NULL));
    futoin_asyncsteps_free(root);
}

/* error_info is reset when the root is executed again. */
static void test_error_info_reset_on_execute(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_with_info, NULL, "first run");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_string_equal(u.info, "first run");
    assert_string_equal(futoin_error_info(root), "first run");
    futoin_add(root, show_info, NULL, "second");
    futoin_execute(root, no_unhandled, NULL);
    run();
    assert_trace("unhandled:First|second:[]");
    futoin_asyncsteps_free(root);
}

/* ---- unhandled_error: arguments; remaining steps dropped ---- */

static void test_unhandled_error_args(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_tag, NULL, "s1");
    futoin_add(root, fail_with_info, NULL, "why");
    futoin_add(root, must_not_run, NULL, "s3");
    futoin_add(root, must_not_run, NULL, "s4");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("s1|unhandled:First");
    assert_int_equal(u.calls, 1);
    assert_ptr_equal(u.as, root);
    assert_string_equal(u.code, "First");
    assert_string_equal(u.info, "why");
    assert_int_equal(futoin_loop_pending(g_loop), 0);
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

/* An error from steps nested deeper than a root keeps frames in itself
 * reaches the unhandled-error callback given to execute(), with its data,
 * through error handlers that do not recover. The root's memory is then
 * reused: each new root gets the callback and data of its own execute(),
 * and one executed without a callback reports misuse instead. */
static void eh_pass_on(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    (void)data;
    tr("eh:%s", code);
}

static void nest_then_fail(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    intptr_t left = (intptr_t)data;
    tr("n%d", (int)left);
    if (left) {
        futoin_add(as, nest_then_fail, left % 2 ? eh_pass_on : NULL, (void*)(left - 1));
    } else {
        futoin_error(as, "Deep", "from the bottom");
    }
}

static void test_unhandled_from_deep_nesting(void** state)
{
    (void)state;
    Unhandled first = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, nest_then_fail, NULL, (void*)(intptr_t)6);
    futoin_execute(root, on_unhandled, &first);
    run();
    assert_trace("n6|n5|n4|n3|n2|n1|n0|eh:Deep|eh:Deep|eh:Deep|unhandled:Deep");
    assert_int_equal(first.calls, 1);
    assert_ptr_equal(first.as, root);
    assert_string_equal(first.info, "from the bottom");
    futoin_asyncsteps_free(root);

    tr_reset();
    Unhandled second = { 0 };
    FutoInAsyncSteps* again = futoin_asyncsteps_new(g_loop);
    futoin_add(again, nest_then_fail, NULL, (void*)(intptr_t)4);
    futoin_execute(again, on_unhandled, &second);
    run();
    assert_trace("n4|n3|n2|n1|n0|eh:Deep|eh:Deep|unhandled:Deep");
    assert_int_equal(first.calls, 1);
    assert_int_equal(second.calls, 1);
    assert_ptr_equal(second.as, again);
    futoin_asyncsteps_free(again);

    tr_reset();
    FutoInAsyncSteps* third = futoin_asyncsteps_new(g_loop);
    futoin_add(third, nest_then_fail, NULL, (void*)(intptr_t)4);
    futoin_execute(third, NULL, NULL);
    run();
    assert_trace("n4|n3|n2|n1|n0|eh:Deep|eh:Deep");
    assert_int_equal(first.calls + second.calls, 2);
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "Deep"));
    futoin_asyncsteps_free(third);
}

/* Without an unhandled_error callback the misuse handler gets a report. */
static void test_unhandled_without_callback(void** state)
{
    (void)state;
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_with_info, NULL, "no handler");
    futoin_execute(root, NULL, NULL);
    run();
    assert_int_equal(g_misuse, 1);
    assert_non_null(strstr(g_misuse_msg, "First"));
    futoin_asyncsteps_free(root);
}

/* The error raised in an error handler at level 0 reaches unhandled_error. */
static void eh_replace(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("eh:%s", code);
    futoin_error(as, "Replaced", "by eh");
}

static void test_unhandled_gets_replaced_code(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_with_info, eh_replace, "orig");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh:First|unhandled:Replaced");
    assert_string_equal(u.info, "by eh");
    futoin_asyncsteps_free(root);
}

/* Error codes longer than any inline buffer survive intact. */
static void fail_long(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    char code[100];
    memset(code, 'E', sizeof(code) - 1);
    code[sizeof(code) - 1] = '\0';
    futoin_error(as, code, NULL); /* a stack buffer: the engine copies it */
}

static void test_long_error_code(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, fail_long, eh_silent, "long");
    futoin_execute(root, on_unhandled, &u);
    run();
    char expected[100];
    memset(expected, 'E', sizeof(expected) - 1);
    expected[sizeof(expected) - 1] = '\0';
    assert_int_equal(strlen(u.code), 63); /* the recorder truncates to its buffer */
    assert_int_equal(strncmp(u.code, expected, 63), 0);
    assert_non_null(strstr(g_trace, expected));
    futoin_asyncsteps_free(root);
}

/* The flow's code buffer follows the code: long (heap), short (pooled) and
 * long again, through handlers that raise a new code from the old one. */
static void fail_code(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_error(as, (const char*)data, NULL);
}

static void eh_lengthen(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    char longer[128];
    snprintf(longer, sizeof(longer), "%s-and-then-some-more-text-to-pass-32", code);
    tr("eh:%s", code);
    futoin_error(as, longer, NULL);
}

static void eh_record_recover(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    tr("got:%s", code);
    futoin_success(as);
}

static void outer_lengthen(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_add(as, fail_code, eh_lengthen, data);
}

static void test_code_buffer_long_short_long(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, outer_lengthen, eh_record_recover, "Short");
    futoin_add(root, fail_code, eh_record_recover, "Tiny");
    futoin_add(root, outer_lengthen, eh_record_recover,
            "a-code-that-is-already-longer-than-thirty-two");
    futoin_add(root, fail_code, NULL, "Last");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace(
            "eh:Short|got:Short-and-then-some-more-text-to-pass-32|got:Tiny"
            "|eh:a-code-that-is-already-longer-than-thirty-two"
            "|got:a-code-that-is-already-longer-than-thirty-two-and-then-some-more-text-to-pass-32"
            "|unhandled:Last");
    assert_string_equal(u.code, "Last");
    futoin_asyncsteps_free(root);
}

/* An error handler is never called twice for the same step, even when the
 * steps it added fail. */
static int g_eh_once_calls;

static void eh_once(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    ++g_eh_once_calls;
    tr("eh-once:%s", code);
    futoin_add(as, step_fail, NULL, "retry");
}

static void test_eh_called_once(void** state)
{
    (void)state;
    g_eh_once_calls = 0;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, step_fail, eh_once, "try");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("try|eh-once:Fail|retry|unhandled:Fail");
    assert_int_equal(g_eh_once_calls, 1);
    futoin_asyncsteps_free(root);
}

/* Misuse inside a step: InternalError with a descriptive error_info. */
static void success_twice(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    futoin_success(as);
    futoin_success(as);
}

static void test_misuse_is_internal_error(void** state)
{
    (void)state;
    Unhandled u = { 0 };
    FutoInAsyncSteps* root = futoin_asyncsteps_new(g_loop);
    futoin_add(root, success_twice, eh_tag, "twice");
    futoin_execute(root, on_unhandled, &u);
    run();
    assert_trace("eh:twice:InternalError|unhandled:InternalError");
    assert_non_null(strstr(u.info, "twice"));
    assert_int_equal(g_misuse, 0);
    futoin_asyncsteps_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_spec_1_2),
        ENV_TEST(test_spec_1_2_1),
        ENV_TEST(test_eh_steps_replace_step),
        ENV_TEST(test_recovery_with_args),
        ENV_TEST(test_recovery_continues_siblings),
        ENV_TEST(test_rethrow),
        ENV_TEST(test_reraise_same_code),
        ENV_TEST(test_eh_without_action_continues),
        ENV_TEST(test_unwind_cancel_handlers),
        ENV_TEST(test_recovered_frame_not_cancelled),
        ENV_TEST(test_error_info),
        ENV_TEST(test_error_info_reset_on_execute),
        ENV_TEST(test_unhandled_error_args),
        ENV_TEST(test_unhandled_from_deep_nesting),
        ENV_TEST(test_unhandled_without_callback),
        ENV_TEST(test_unhandled_gets_replaced_code),
        ENV_TEST(test_long_error_code),
        ENV_TEST(test_code_buffer_long_short_long),
        ENV_TEST(test_eh_called_once),
        ENV_TEST(test_misuse_is_internal_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
