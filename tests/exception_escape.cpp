/* SPDX-License-Identifier: MIT */
// A C++ exception that a C callback lets escape (docs/SEMANTICS.md
// "Exceptions and longjmp"): it reaches the caller of the call that drives
// the loop, the loop reports it once as misuse and is abandoned, every
// later run of it is refused with a message naming the cause, and the
// loop and its roots can still be freed without a leak. C callbacks must
// not throw; this is what happens when one does, instead of a loop that
// goes silent.
#include <futoin/asyncsteps.h>
#include <futoin/asynctool.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

namespace {

std::vector<std::string> g_lines;
int g_ran = 0;
int g_destroyed = 0;

void capture(void*, int kind, const char* line)
{
    if (kind == FUTOIN_LOG_MISUSE) {
        g_lines.emplace_back(line);
    }
}

int setup(void**)
{
    g_lines.clear();
    g_ran = 0;
    g_destroyed = 0;
    futoin_set_log_handler(capture, nullptr, nullptr);
    return 0;
}

int teardown(void**)
{
    futoin_set_log_handler(nullptr, nullptr, nullptr);
    return 0;
}

int count_lines(const char* needle)
{
    int n = 0;
    for (const std::string& l : g_lines) {
        n += l.find(needle) != std::string::npos;
    }
    return n;
}

void step_throws(FutoInAsyncSteps*, void*, const FutoInArgs*)
{
    ++g_ran;
    throw std::runtime_error("boom");
}

void step_counts(FutoInAsyncSteps*, void*, const FutoInArgs*)
{
    ++g_ran;
}

void eh_must_not_run(FutoInAsyncSteps*, void*, const char*)
{
    fail_msg("the error handler of a step left by an exception ran");
}

void count_destroy(void*)
{
    ++g_destroyed;
}

void cb_throws(void*)
{
    ++g_ran;
    throw 42;
}

void cb_counts(void*)
{
    ++g_ran;
}

// A step throws: the exception reaches futoin_loop_run()'s caller, with
// one report; the loop then refuses to run, and other roots stay as they
// are.
void test_step_throws(void**)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* a = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(loop);
    futoin_add(a, step_throws, eh_must_not_run, nullptr);
    futoin_add(a, step_counts, nullptr, nullptr);
    futoin_execute(a, nullptr, nullptr);
    bool caught = false;
    try {
        futoin_loop_run(loop);
    } catch (const std::runtime_error& e) {
        caught = std::strcmp(e.what(), "boom") == 0;
    }
    assert_true(caught);
    assert_int_equal(g_ran, 1);
    assert_int_equal(g_lines.size(), 1);
    assert_int_equal(count_lines("a callback run by futoin_loop_run() was left by an exception"),
            1);
    assert_int_equal(count_lines("the loop is abandoned"), 1);

    // Every later run is refused, with the cause named each time.
    futoin_add(b, step_counts, nullptr, nullptr);
    futoin_execute(b, nullptr, nullptr);
    futoin_loop_run(loop);
    int64_t delay = 0;
    assert_int_equal(futoin_loop_iterate(loop, &delay), -1);
    assert_int_equal(g_ran, 1);
    assert_int_equal(count_lines("futoin_loop_run() refused: a callback of this loop was left"), 1);
    assert_int_equal(count_lines("futoin_loop_iterate() refused: a callback of this loop"), 1);
    assert_int_equal(count_lines("left by an exception"), 3);

    futoin_asyncsteps_free(b);
    futoin_asyncsteps_free(a);
    futoin_loop_free(loop);
}

// The loop freed with roots still on it: the roots that were not in the
// middle of a callback are released as ever, owned data included.
void test_loop_free_after_exception(void**)
{
    FutoInLoop* loop = futoin_loop_new();
    FutoInAsyncSteps* a = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* b = futoin_asyncsteps_new(loop);
    FutoInAsyncSteps* c = futoin_asyncsteps_new(loop);
    futoin_add(a, step_throws, nullptr, nullptr);
    futoin_add_owned(b, step_counts, nullptr, nullptr, count_destroy);
    futoin_add_owned(c, step_counts, nullptr, nullptr, count_destroy); // never executed
    futoin_execute(a, nullptr, nullptr);
    futoin_execute(b, nullptr, nullptr);
    bool caught = false;
    try {
        futoin_loop_run(loop);
    } catch (const std::exception&) {
        caught = true;
    }
    assert_true(caught);
    assert_int_equal(g_destroyed, 0);
    futoin_loop_free(loop);
    assert_int_equal(g_destroyed, 2);
    assert_int_equal(count_lines("left by an exception"), 1);
}

// A loop callback throws on a virtual loop, through futoin_loop_advance():
// the same report names that call; futoin_loop_run_next() is refused.
void test_loop_callback_throws_virtual(void**)
{
    FutoInLoop* loop = futoin_loop_new_virtual();
    futoin_loop_deferred(loop, 10, nullptr, cb_throws);
    futoin_loop_deferred(loop, 20, nullptr, cb_counts);
    bool caught = false;
    try {
        futoin_loop_advance(loop, 100);
    } catch (int v) {
        caught = v == 42;
    }
    assert_true(caught);
    assert_int_equal(g_ran, 1);
    assert_int_equal(count_lines("a callback run by futoin_loop_advance() was left"), 1);
    assert_int_equal(futoin_loop_run_next(loop), -1);
    assert_int_equal(g_ran, 1);
    assert_int_equal(count_lines("futoin_loop_run_next() refused"), 1);
    futoin_loop_free(loop); // the pending callback is dropped, not run
    assert_int_equal(g_ran, 1);
}

// Through futoin_loop_iterate(), as an outer event loop drives it.
void test_iterate_callback_throws(void**)
{
    FutoInLoop* loop = futoin_loop_new();
    futoin_loop_immediate(loop, nullptr, cb_throws);
    bool caught = false;
    try {
        futoin_loop_iterate(loop, nullptr);
    } catch (int) {
        caught = true;
    }
    assert_true(caught);
    assert_int_equal(count_lines("a callback run by futoin_loop_iterate() was left"), 1);
    futoin_loop_free(loop);
}

// A callback that calls the loop again from inside is still reported as
// nesting, not as an exception: the two messages stay apart.
void nested_run(void* data)
{
    ++g_ran;
    futoin_loop_run(static_cast<FutoInLoop*>(data));
}

void test_nested_run_is_not_an_exception(void**)
{
    FutoInLoop* loop = futoin_loop_new();
    futoin_loop_immediate(loop, loop, nested_run);
    futoin_loop_immediate(loop, nullptr, cb_counts);
    futoin_loop_run(loop);
    assert_int_equal(g_ran, 2);
    assert_int_equal(count_lines("called from inside a callback of the same loop"), 1);
    assert_int_equal(count_lines("exception"), 0);
    // The loop still runs.
    futoin_loop_immediate(loop, nullptr, cb_counts);
    futoin_loop_run(loop);
    assert_int_equal(g_ran, 3);
    futoin_loop_free(loop);
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step_throws, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_free_after_exception, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_callback_throws_virtual, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iterate_callback_throws, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_run_is_not_an_exception, setup, teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
