/* SPDX-License-Identifier: MIT */
// The service-side parts of the C++ layer: Loop::immediate()/deferred()
// and their Scheduled handles, Root::on_end(), the owning Mutex, Throttle
// and Limiter, Completion with Steps::await(), copy_from() with state(),
// and futoin/threads.hpp (LoopPool, add_work()). Every closure is counted:
// each is destroyed exactly once, whatever ends it.
#include "cxx_support.hpp"

#include <futoin/threads.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;

namespace {

// ---- Loop::immediate(), Loop::deferred() ---------------------------------

void test_immediate_and_deferred_run(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    std::string trace;
    futoin::Scheduled late = loop.deferred(20ms, [&trace, t = Track(1)] { trace += "d20,"; });
    futoin::Scheduled early = loop.deferred(5ms, [&trace, p = Payload<300>()] { trace += "d5,"; });
    futoin::Scheduled now = loop.immediate([&trace] { trace += "i,"; });
    assert_true(late.pending());
    assert_int_equal(Track::live, 2);
    loop.run();
    assert_string_equal(trace.c_str(), "i,d5,d20,");
    assert_false(late.pending());
    assert_false(now.pending());
    assert_int_equal(loop.now(), 20);
    assert_int_equal(Track::live, 0);
    assert_false(late.cancel());
}

void test_scheduled_cancel_and_destroy(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    int ran = 0;
    futoin::Scheduled a = loop.deferred(10ms, [&ran, t = Track(1)] { ++ran; });
    {
        futoin::Scheduled b = loop.immediate([&ran, t = Track(2)] { ++ran; });
        assert_int_equal(Track::live, 2);
    } // b's destructor cancels it
    assert_int_equal(Track::live, 1);
    assert_true(a.cancel());
    assert_false(a.pending());
    assert_int_equal(Track::live, 0);
    // Moved: the new owner cancels; reassignment cancels the old callback.
    futoin::Scheduled c = loop.immediate([&ran, t = Track(3)] { ++ran; });
    futoin::Scheduled d(std::move(c));
    assert_false(c.pending());
    assert_true(d.pending());
    d = loop.immediate([&ran] { ran += 10; });
    assert_int_equal(Track::live, 0);
    loop.run();
    assert_int_equal(ran, 10);
}

void test_scheduled_detach_and_loop_free(void**)
{
    int ran = 0;
    {
        futoin::Loop loop(futoin::Loop::virtual_clock);
        loop.immediate([&ran, t = Track(1)] { ++ran; }).detach();
        loop.deferred(1h, [&ran, p = Payload<100>()] { ++ran; }).detach();
        futoin::Scheduled kept = loop.deferred(2h, [&ran, t = Track(2)] { ++ran; });
        assert_int_equal(loop.run_next(), 1);
        assert_int_equal(ran, 1);
        assert_int_equal(Track::live, 2);
        // The loop goes first: it destroys what is still pending, and the
        // handle that outlives it lets go.
        futoin::Loop moved(std::move(loop));
        moved.reset();
        assert_int_equal(Track::live, 0);
        assert_false(kept.pending());
    }
    assert_int_equal(ran, 1);
}

void test_scheduled_in_step_stack(void**)
{
    // The handle in stack() memory: the timer completes the step, or the
    // step's timeout cancels the timer.
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::string trace;
    root.add([&loop](Steps& as) {
        as.stack<futoin::Scheduled>(loop.deferred(5ms, [as]() mutable { as.success(1); }));
        as.wait_external();
    });
    root.add(
            [&loop](Steps& as, int) {
                as.stack<futoin::Scheduled>(loop.deferred(50ms,
                        [as, t = Track(1)]() mutable { as.success(2); }));
                as.set_timeout(10ms);
            },
            [&trace](Steps& as, std::string_view code) {
                trace = std::string(code);
                as.success(3);
            });
    root.execute();
    loop.run();
    assert_string_equal(trace.c_str(), "Timeout");
    assert_int_equal(loop.now(), 15);
    assert_int_equal(Track::live, 0);
}

void test_scheduled_exception_is_logged(void**)
{
    LogCapture log;
    futoin::Loop loop(futoin::Loop::virtual_clock);
    loop.immediate([t = Track(1)] { throw std::runtime_error("boom"); }).detach();
    loop.run();
    assert_true(log.has("boom"));
    assert_int_equal(Track::live, 0);
}

// ---- Root::on_end() ---------------------------------------------------------

void test_on_end(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    std::string trace;
    {
        futoin::Root root(loop);
        assert_true(root.on_end([&trace, t = Track(1)](Steps&, const FutoInRootEnd& end) {
            trace += "end" + std::to_string(int(end.reason));
            if (end.reason == FUTOIN_END_SUCCESS) {
                trace += ":" + std::to_string(end.results->args[0].i32);
            }
            if (end.reason == FUTOIN_END_ERROR) {
                trace += std::string(":") + end.code + "/" + end.info;
            }
            trace += ",";
        }));
        root.add([](Steps& as) { as.success(5); });
        root.execute();
        loop.run();
        root.add([](Steps& as) { as.error("Bad", "info"); });
        root.execute([](Steps&, std::string_view) {});
        loop.run();
        root.add([](Steps& as) { as.wait_external(); });
        root.execute();
        loop.run();
        assert_int_equal(Track::live, 1);
    } // freed while it waits: the hook hears FUTOIN_END_FREED, then goes
    assert_string_equal(trace.c_str(), "end0:5,end1:Bad/info,end3,");
    assert_int_equal(Track::live, 0);
}

void test_on_end_replaced_inside(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    std::string trace;
    root.on_end([&trace, &root, t = Track(1)](Steps&, const FutoInRootEnd&) {
        trace += "first,";
        // Replaced from inside: the running closure stays alive until it returns.
        root.on_end([&trace, t = Track(2)](Steps&, const FutoInRootEnd&) { trace += "second,"; });
        assert_int_equal(t.magic, Track::kAlive);
        trace += "still,";
    });
    root.add([](Steps&) {});
    root.execute();
    loop.run();
    assert_int_equal(Track::live, 1);
    root.add([](Steps&) {});
    root.execute();
    loop.run();
    assert_string_equal(trace.c_str(), "first,still,second,");
    root.clear_on_end();
    assert_int_equal(Track::live, 0);
    root.add([](Steps&) {});
    root.execute();
    loop.run();
    assert_string_equal(trace.c_str(), "first,still,second,");
}

// ---- sync objects -------------------------------------------------------------

void test_sync_wrappers(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Mutex mutex(loop, 1, 1);
    futoin::Throttle throttle(loop, 1, 100ms);
    futoin::Limiter::Options opts;
    opts.concurrent = 1;
    opts.max_queue = 2;
    opts.rate = FUTOIN_SYNC_UNLIMITED;
    futoin::Limiter limiter(loop, opts);
    std::string trace;
    std::vector<futoin::Root> roots;
    for (int i = 0; i < 3; ++i) {
        futoin::Root& root = roots.emplace_back(loop);
        root.add(
                [&, i](Steps& as) {
                    as.sync(mutex, [&, i](Steps& as) {
                        trace += "m" + std::to_string(i);
                        as.stack<futoin::Scheduled>(loop.deferred(10ms,
                                [as]() mutable { as.success(); }));
                        as.wait_external();
                    });
                    as.sync(throttle, [&, i](Steps&) {
                        trace += "t" + std::to_string(i) + "@" + std::to_string(loop.now());
                    });
                },
                [&, i](Steps& as, std::string_view code) {
                    trace += "r" + std::to_string(i) + std::string(code);
                    as.success();
                });
        root.add([&](Steps& as) { as.sync(limiter, [&](Steps&) { trace += "l"; }); });
        root.execute();
    }
    loop.run();
    // Mutex(1, 1): 0 enters, 1 waits, 2 is rejected at once (and goes on to
    // the Limiter); Throttle(1 per 100 ms): 1 waits for the next window.
    assert_string_equal(trace.c_str(), "r2DefenseRejectedm0lm1t0@10lt1@110l");
    // A busy object is kept by free(); the destructor frees it once idle.
    futoin::Root holder(loop);
    holder.sync(mutex, [](Steps& as) { as.wait_external(); });
    holder.execute();
    loop.run();
    assert_int_equal(mutex.free(), FUTOIN_SYNC_BUSY);
    holder.reset();
    assert_int_equal(mutex.free(), FUTOIN_SYNC_OK);
    assert_null(mutex.handle());
    futoin::Mutex shared = futoin::Mutex::shared(2);
    assert_non_null(shared.handle());
#if FUTOIN_CXX_EXCEPTIONS
    bool threw = false;
    try {
        futoin::Mutex bad(loop, 0);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    assert_true(threw);
#endif
}

// ---- Completion, await() ------------------------------------------------------

void test_completion_await(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Completion ok;
    futoin::Completion bad;
    std::string trace;
    futoin::Root root(loop);
    root.await(ok).add([&](Steps& as, int v, std::string_view s) {
        trace += std::to_string(v) + std::string(s) + ",";
        as.await(bad, [&trace, t = Track(1), p = Payload<50>()](Steps& as, std::string_view code) {
            trace += std::string(code) + ":" + std::string(as.error_info());
            as.success();
        });
    });
    root.execute();
    futoin::Scheduled s1 = loop.deferred(5ms, [&] { assert_true(ok.resolve(7, "x")); });
    futoin::Scheduled s2 = loop.deferred(9ms, [&] { assert_true(bad.reject("No", "because")); });
    loop.run();
    assert_string_equal(trace.c_str(), "7x,No:because");
    assert_false(ok.resolve(1));
    assert_int_equal(Track::live, 0);
}

// ---- copy_from() and state() ----------------------------------------------------

struct Counter {
    int n = 100;
};

void test_copy_from_state(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root model(loop);
    assert_int_equal(model.state<Counter>("c", Counter{ 5 })->n, 5);
    model.add([](Steps& as) { as.state<Counter>("c")->n += 1; });
    std::vector<int> seen;
    {
        futoin::Root copy(loop);
        copy.copy_from(model);
        copy.add([&seen](Steps& as) { seen.push_back(as.state<Counter>("c")->n); });
        copy.execute();
        loop.run();
    }
    // The copy's variable is value-initialized: the model's arguments are gone.
    assert_int_equal(int(seen.size()), 1);
    assert_int_equal(seen[0], 101);
    assert_int_equal(model.state<Counter>("c")->n, 5);
}

// ---- Root::promise() ------------------------------------------------------------

void test_promise(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    {
        futoin::Root root(loop);
        root.add([&loop](Steps& as) {
            as.stack<futoin::Scheduled>(loop.deferred(5ms, [as]() mutable {
                as.success(42, "text", Point{ 1, 2 });
            }));
            as.wait_external();
        });
        auto out = root.promise<int, std::string, Point>();
        assert_true(bool(out));
        assert_int_equal(std::get<0>(out.values()), 42);
        assert_string_equal(std::get<1>(out.values()).c_str(), "text");
        assert_int_equal(std::get<2>(out.values()).y, 2);
        assert_int_equal(loop.now(), 5);
    }
    {
        futoin::Root root(loop);
        root.add([](Steps& as) { as.error("Bad", "why"); });
        auto out = root.promise<int>();
        assert_int_equal(out.status(), FUTOIN_PROMISE_ERROR);
        assert_string_equal(out.code().c_str(), "Bad");
        assert_string_equal(out.info().c_str(), "why");
#if FUTOIN_CXX_EXCEPTIONS
        bool threw = false;
        try {
            (void)out.get();
        } catch (const futoin::Error& e) {
            threw = std::string(e.code()) == "Bad";
        }
        assert_true(threw);
#endif
    }
    {
        futoin::Root root(loop);
        root.add([t = Track(1)](Steps& as) { as.success("not a number", t); });
        auto out = root.promise<int>();
        assert_int_equal(out.status(), FUTOIN_PROMISE_ERROR);
        assert_string_equal(out.code().c_str(), "InternalError");
        assert_contains(out.info(), "value 1 wants int32_t");
    }
    {
        futoin::Root root(loop);
        root.add([](Steps& as) { as.wait_external(); });
        assert_int_equal(root.promise<>().status(), FUTOIN_PROMISE_STALLED);
        root.add([](Steps& as) { as.success(7); });
#if FUTOIN_CXX_EXCEPTIONS
        assert_int_equal(root.promise<long>().get(), 7);
#endif
    }
    assert_int_equal(Track::live, 0);
}

// ---- futoin/threads.hpp ----------------------------------------------------------

void test_loop_pool_and_work(void**)
{
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::string> outcomes;
    {
        futoin::LoopPool pool(2);
        assert_int_equal(pool.size(), 2);
        for (int i = 0; i < 4; ++i) {
            const int idx = pool.spawn(
                    [i](Steps& root) {
                        futoin::add_work(root, [i](futoin::WorkOut& out) {
                            if (i == 1) {
                                throw futoin::Error("WorkFailed", "one");
                            }
                            if (i == 2) {
                                throw std::runtime_error("two");
                            }
                            if (i == 3) {
                                out.error("Reported", "three");
                                return;
                            }
                            out.success(i * 10, "w");
                        });
                        root.add([](Steps& as, int v, std::string_view w) {
                            if (v != 0 || w != "w") {
                                as.error("Wrong");
                            }
                        });
                    },
                    [&, i](std::string_view code) {
                        std::lock_guard<std::mutex> g(m);
                        outcomes.push_back(std::to_string(i) + ":" + std::string(code));
                        cv.notify_one();
                    });
            assert_true(idx >= 0);
        }
        std::unique_lock<std::mutex> g(m);
        cv.wait(g, [&] { return outcomes.size() == 4; });
    }
    futoin_work_pool_shutdown(); // joins the workers: nothing left for valgrind
    std::sort(outcomes.begin(), outcomes.end());
    assert_string_equal(outcomes[0].c_str(), "0:");
    assert_string_equal(outcomes[1].c_str(), "1:WorkFailed");
    assert_string_equal(outcomes[2].c_str(), "2:InternalError");
    assert_string_equal(outcomes[3].c_str(), "3:Reported");
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_immediate_and_deferred_run, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_scheduled_cancel_and_destroy, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_scheduled_detach_and_loop_free, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_scheduled_in_step_stack, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_scheduled_exception_is_logged, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_on_end, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_on_end_replaced_inside, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_sync_wrappers, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_completion_await, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_copy_from_state, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_promise, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_loop_pool_and_work, track_setup, track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
