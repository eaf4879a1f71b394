/* SPDX-License-Identifier: MIT */
// The C++17 layer as a view over another implementation of the binary
// interface: the strict foreign engine of tests/foreign/. Typed results,
// pooled closures (owned steps are wrapped by the C library there),
// exceptions, loops, parallel, timeouts, state() and stack(); every
// closure and every object of the foreign engine is gone at the end.
#include "cxx_support.hpp"

#include "foreign_asyncsteps.h"

#include <chrono>
#include <string>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;

namespace {

struct ForeignRun {
    FrnLoop* loop = frn_loop_new();
    futoin::Root root = futoin::Root::adopt(frn_root_new(loop));
    std::string code;
    std::string info;
    bool failed = false;

    ForeignRun() = default;
    ForeignRun(const ForeignRun&) = delete;
    ForeignRun& operator=(const ForeignRun&) = delete;
    ~ForeignRun()
    {
        root.reset();
        assert_int_equal(frn_live_objects(loop), 0);
        frn_loop_free(loop);
    }
    void go()
    {
        root.execute([this](Steps& as, std::string_view c) {
            failed = true;
            code = std::string(c);
            info = std::string(as.error_info());
        });
        frn_loop_run_all(loop, 100000);
    }
};

void test_foreign_values_and_closures(void**)
{
    std::string trace;
    {
        ForeignRun r;
        r.root.add([](Steps& as) { as.success(1, std::string("two"), 3.0, Track(4)); })
                .add([&trace, p = Payload<100>()](Steps& as, int a, std::string_view b, double c,
                             const Track& d) {
                    trace += std::to_string(a) + std::string(b) + std::to_string(int(c))
                            + std::to_string(d.id);
                    as.success("x");
                })
                .add([&trace](Steps&, int) { trace += "not reached"; },
                        [&trace, p = Payload<10>()](Steps& as, std::string_view code) {
                            trace.append(" ").append(code).append(": ").append(as.error_info());
                            as.success();
                        });
        r.go();
        assert_false(r.failed);
    }
    assert_string_equal(trace.c_str(),
            "1two34 InternalError: futoin::Steps: parameter 1 of the step wants int32_t, the "
            "result is a string");
}

void test_foreign_errors_and_loops(void**)
{
    std::vector<std::string> seen;
    {
        ForeignRun r;
        int n = 0;
        r.root.add([](Steps& as) { as.add([](Steps&) { throw std::runtime_error("thrown"); }); },
                [&seen](Steps& as, std::string_view code) {
                    seen.push_back(std::string(code) + ":" + std::string(as.error_info()));
                    as.success();
                });
        r.root.loop([&n, p = Payload<50>()](Steps& as) {
            if (++n == 4) {
                as.break_loop();
            }
        });
        r.root.for_each(std::vector<int>{ 1, 2, 3 }, [&n](Steps&, int v) { n += v; });
        r.root.add([&seen, &n](Steps& as) {
            seen.push_back("n=" + std::to_string(n));
            as.error("Final", "end");
        });
        r.go();
        assert_true(r.failed);
        assert_string_equal(r.code.c_str(), "Final");
        assert_string_equal(r.info.c_str(), "end");
    }
    assert_int_equal(seen.size(), 2);
    assert_string_equal(seen[0].c_str(), "InternalError:thrown");
    assert_string_equal(seen[1].c_str(), "n=10");
}

void test_foreign_parallel_timeout_state(void**)
{
    int cancels = 0;
    std::string trace;
    {
        ForeignRun r;
        r.root.add([&trace](Steps& as) {
            Steps p = as.parallel([t = Payload<30>()](Steps&, std::string_view) {});
            p.add([&trace, t = Payload<30>()](Steps&) { trace += "a"; });
            p.add([&trace](Steps&) { trace += "b"; });
        });
        r.root.add(
                [&cancels](Steps& as) {
                    as.set_timeout(10ms);
                    as.set_cancel([&cancels, t = Payload<30>()](Steps&) { ++cancels; });
                },
                [&trace](Steps& as, std::string_view code) {
                    trace.append(" ").append(code);
                    ++*as.state<int>("n");
                    Track* t = as.stack<Track>(2);
                    trace += std::to_string(t->id);
                    as.success();
                });
        r.root.add([&trace](Steps& as) { trace += std::to_string(*as.state<int>("n")); });
        r.go();
        assert_false(r.failed);
        assert_true(frn_loop_now(r.loop) >= 10);
    }
    assert_int_equal(cancels, 1);
    assert_string_equal(trace.c_str(), "ab Timeout21");
}

void test_foreign_root_freed_with_pending_closures(void**)
{
    {
        ForeignRun r;
        r.root.add([p = Payload<60>()](Steps& as) { as.wait_external(); });
        r.root.add([p = Payload<60>()](Steps&) {});
        r.root.repeat(3, [p = Payload<60>()](Steps&, std::size_t) {});
        r.root.execute();
        frn_loop_run_all(r.loop, 1000);
        assert_int_equal(Track::live, 3);
    }
    assert_int_equal(Track::live, 0);
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_foreign_values_and_closures, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_foreign_errors_and_loops, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_foreign_parallel_timeout_state, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_foreign_root_freed_with_pending_closures, track_setup,
                track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
