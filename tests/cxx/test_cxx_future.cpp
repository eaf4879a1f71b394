/* SPDX-License-Identifier: MIT */
// Steps::await_future(): a std::future (or std::shared_future) awaited by
// polling from a loop timer. Values typed to the next step, an exception
// of the future as the step's error, a timeout and a cancel while it
// waits (the timer goes with the step; nothing completes it late), a
// future fulfilled from another thread.
#include "cxx_support.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

using futoin::Steps;
using namespace std::chrono_literals;

namespace {

// Ready at once: the value reaches the next step without a timer.
void test_future_ready(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::promise<int> p;
    p.set_value(42);
    int got = 0;
    root.await_future(p.get_future()).add([&](Steps&, int v) { got = v; });
    root.execute();
    loop.run();
    assert_int_equal(got, 42);
    assert_int_equal(loop.now(), 0);
}

// Fulfilled later on the loop: seen by a poll within max_poll; a string
// and a move-only object, and void.
void test_future_later_typed(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::promise<std::string> ps;
    std::promise<std::unique_ptr<Track>> pt;
    std::promise<void> pv;
    std::string text;
    int id = 0;
    bool done = false;
    root.await_future(ps.get_future(), 4ms)
            .add([&](Steps& as, std::string_view s) {
                text = std::string(s);
                as.await_future(pt.get_future());
            })
            .add([&](Steps& as, std::unique_ptr<Track>& t) {
                id = t->id;
                as.await_future(pv.get_future().share());
            })
            .add([&](Steps&) { done = true; });
    root.execute();
    futoin::Scheduled a = loop.deferred(10ms, [&] { ps.set_value("hello"); });
    futoin::Scheduled b = loop.deferred(30ms, [&] { pt.set_value(std::make_unique<Track>(7)); });
    futoin::Scheduled c = loop.deferred(50ms, [&] { pv.set_value(); });
    loop.run();
    assert_string_equal(text.c_str(), "hello");
    assert_int_equal(id, 7);
    assert_true(done);
    // Polls at 1, 2, 4, 4, ... ms (max 4) see "hello" by 14 ms; the others
    // at most 16 ms after they are set.
    assert_true(loop.now() >= 50 && loop.now() <= 66);
}

// An exception stored in the future is the step's error.
void test_future_exception(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::promise<int> p1;
    std::promise<int> p2;
    std::string codes;
    root.add([&](Steps& as) { as.await_future(p1.get_future()); },
            [&](Steps& as, std::string_view code) {
                codes += std::string(code) + ":" + std::string(as.error_info()) + ";";
                as.success();
            });
    root.add([&](Steps& as) { as.await_future(p2.get_future()); },
            [&](Steps& as, std::string_view code) {
                codes += std::string(code) + ":" + std::string(as.error_info()) + ";";
                as.success();
            });
    root.execute();
    p1.set_exception(std::make_exception_ptr(std::runtime_error("boom")));
    futoin::Scheduled s = loop.deferred(5ms, [&] {
        p2.set_exception(std::make_exception_ptr(futoin::Error("NotFound", "no such")));
    });
    loop.run();
    assert_string_equal(codes.c_str(), "InternalError:boom;NotFound:no such;");
}

// A timeout while waiting: the step fails with Timeout, its timer goes
// with it, and the value set afterwards reaches nothing.
void test_future_timeout(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::promise<Track> p;
    std::string code;
    bool late = false;
    root.add(
            [&](Steps& as) {
                as.set_timeout(20ms);
                as.await_future(p.get_future());
                as.add([&](Steps&, Track&) { late = true; });
            },
            [&](Steps& as, std::string_view c) {
                code = std::string(c);
                as.success();
            });
    root.execute();
    loop.run(); // polls until the timeout; nothing is left after it
    assert_string_equal(code.c_str(), FUTOIN_TIMEOUT);
    assert_int_equal(loop.now(), 20);
    assert_int_equal(loop.pending(), 0);
    p.set_value(Track(3));
    loop.run();
    assert_false(late);
}

// The root freed (cancelled) while waiting: the future and the timer go.
void test_future_cancel(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    std::promise<int> p;
    std::future<int> f = p.get_future();
    bool late = false;
    {
        futoin::Root root(loop);
        root.await_future(std::move(f)).add([&](Steps&, int) { late = true; });
        root.execute();
        assert_int_equal(loop.run_next(), 1); // the step: it polls
        loop.advance(3ms);
        assert_true(loop.pending() > 0);
    }
    assert_int_equal(loop.pending(), 0);
    p.set_value(1);
    loop.run();
    assert_false(late);
}

// A future fulfilled by another thread, on a real clock.
void test_future_from_thread(void**)
{
    futoin::Loop loop;
    futoin::Root root(loop);
    std::promise<std::uint64_t> p;
    std::future<std::uint64_t> f = p.get_future();
    std::thread t([&p] {
        std::this_thread::sleep_for(20ms);
        p.set_value(12345);
    });
    std::uint64_t got = 0;
    root.await_future(std::move(f), 2ms).add([&](Steps&, std::uint64_t v) { got = v; });
    root.execute();
    loop.run();
    t.join();
    assert_int_equal(got, 12345);
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_future_ready, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_future_later_typed, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_future_exception, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_future_timeout, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_future_cancel, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_future_from_thread, track_setup, track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
