/* SPDX-License-Identifier: MIT */
// The C++17 layer on this library's engine: typed results, closures in
// data and in the pool and when they are destroyed, errors and exceptions,
// loops, parallel, timeouts, cancel, state(), stack() and sync().
#include "cxx_support.hpp"

#include <futoin/sync.h>

#include <chrono>
#include <list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;

// A record made of two result values (a number and a text), as
// futoin/uv.hpp's Stat or Datagram are: one parameter takes both
// (ArgConv<T>::span), the parameters after it the values that follow.
struct NumText {
    int n;
    std::string_view text;
};
template <> struct futoin::detail::ArgConv<NumText> {
    static constexpr const char* name = "NumText (int, string)";
    static constexpr std::size_t span = 2;
    static Match match(const FutoInBinaryValue* v) noexcept
    {
        return ArgConv<int>::match(v[0]) == Match::ok
                        && ArgConv<std::string_view>::match(v[1]) == Match::ok
                ? Match::ok
                : Match::wrong_type;
    }
    static NumText get(const FutoInBinaryValue* v) noexcept
    {
        return NumText{ ArgConv<int>::get(v[0]), ArgConv<std::string_view>::get(v[1]) };
    }
};

namespace {

// A root on a virtual-clock loop, run to its end; the outcome recorded.
struct Run {
    futoin::Loop loop{ futoin::Loop::virtual_clock };
    futoin::Root root{ loop };
    std::string code;
    std::string info;
    bool failed = false;

    void go()
    {
        root.execute([this](Steps& as, std::string_view c) {
            failed = true;
            code = std::string(c);
            info = std::string(as.error_info());
        });
        loop.run();
    }
};

// ---- typed results -------------------------------------------------------

// Records of several values: at the start, in the middle, and a value of
// another type reported for the record's parameter.
void test_value_records(void**)
{
    Run r;
    std::string seen;
    r.root.add([](Steps& as) { as.success(1, "one", 2, "two"); })
            .add([&seen](Steps& as, NumText a, NumText b) {
                seen += std::to_string(a.n) + std::string(a.text) + std::to_string(b.n)
                        + std::string(b.text) + ";";
                as.success(true, 3, "three", 4.5);
            })
            .add([&seen](Steps& as, bool f, NumText m, double d) {
                seen += std::string(f ? "t" : "f") + std::to_string(m.n) + std::string(m.text)
                        + std::to_string(int(d * 2)) + ";";
                as.success(5, 6);
            })
            .add([&seen](Steps&, NumText) { seen += "unexpected;"; });
    r.go();
    assert_string_equal(seen.c_str(), "1one2two;t3three9;");
    assert_string_equal(r.code.c_str(), FUTOIN_INTERNAL_ERROR);
    assert_string_equal(r.info.c_str(),
            "futoin::Steps: parameter 1 of the step wants NumText (int, string), the result "
            "is an int32 (5)");
}

void test_values(void**)
{
    Run r;
    int seen = 0;
    r.root.add([](Steps& as) { as.success(int32_t(-5), int64_t(1) << 40, 2.5, true); })
            .add([&seen](Steps& as, int a, int64_t b, double c, bool d) {
                assert_int_equal(a, -5);
                assert_true(b == (int64_t(1) << 40));
                assert_true(c == 2.5);
                assert_true(d);
                ++seen;
                as.success("literal", std::string("string"), std::string_view("view"), 3.5f);
            })
            .add([&seen](Steps& as, std::string_view a, const std::string& b, std::string c,
                         float d) {
                assert_sv_equal(a, "literal");
                assert_string_equal(b.c_str(), "string");
                assert_string_equal(c.c_str(), "view");
                assert_true(d == 3.5f);
                ++seen;
                as.success(uint32_t(7), uint64_t(9), Point{ 1, 2 });
            })
            .add([&seen](Steps& as, int64_t a, double b, const Point& p) {
                // Integers widen, to double too; a custom object by reference.
                assert_true(a == 7);
                assert_true(b == 9.0);
                assert_int_equal(p.x, 1);
                assert_int_equal(p.y, 2);
                ++seen;
                as.success(Track(3), futoin_val_i32(4));
            })
            .add([&seen](Steps& as, Track t, const FutoInBinaryValue& raw) {
                // The object is moved out of the value, which still goes.
                assert_int_equal(t.id, 3);
                assert_int_equal(raw.i32, 4);
                assert_int_equal(Track::live, 2);
                ++seen;
                as.success(Track(5));
            })
            .add([&seen](Steps&) {
                // Fewer parameters than values: the rest is dropped.
                ++seen;
            });
    r.go();
    assert_false(r.failed);
    assert_int_equal(seen, 5);
}

// A result of another type than the parameter: InternalError naming both.
void expect_mismatch(FutoInBinaryValue (*make)(), const char* wanted_info)
{
    Run r;
    bool reached = false;
    r.root.add([make](Steps& as) {
        if (make) {
            as.success(make());
        }
    });
    r.root.add([&reached](Steps&, int32_t) { reached = true; });
    r.go();
    assert_false(reached);
    assert_true(r.failed);
    assert_string_equal(r.code.c_str(), FUTOIN_INTERNAL_ERROR);
    assert_string_equal(r.info.c_str(), wanted_info);
}

void test_type_mismatch(void**)
{
    expect_mismatch([] { return futoin_val_cstr("x"); },
            "futoin::Steps: parameter 1 of the step wants int32_t, the result is a string");
    expect_mismatch(nullptr,
            "futoin::Steps: parameter 1 of the step wants int32_t, the result is no value");
    expect_mismatch([] { return futoin_val_i64(5000000000); },
            "futoin::Steps: parameter 1 of the step wants int32_t, the result is an int64 "
            "(5000000000), out of its range");
    expect_mismatch([] { return futoin_val_bool(true); },
            "futoin::Steps: parameter 1 of the step wants int32_t, the result is a bool");

    // Objects of another C++ type, negative values for unsigned, strings
    // for bool: all refused; the second parameter is named.
    Run r;
    bool reached = false;
    r.root.add([](Steps& as) {
              as.success(1, Point{ 1, 2 });
          }).add([&reached](Steps&, int, const std::string&) { reached = true; });
    r.go();
    assert_false(reached);
    assert_string_equal(r.info.c_str(),
            "futoin::Steps: parameter 2 of the step wants std::string, the result is a custom "
            "object");

    Run r2;
    r2.root.add([](Steps& as) { as.success(-1); }).add([&reached](Steps&, unsigned) {
        reached = true;
    });
    r2.go();
    assert_false(reached);
    assert_contains(r2.info, "wants uint32_t, the result is an int32 (-1), out of its range");

    Run r3;
    r3.root.add([](Steps& as) {
               as.success(Point{ 3, 4 });
           })
            .add([&reached](Steps&, Track) { reached = true; });
    r3.go();
    assert_false(reached);
    assert_contains(r3.info, "wants a C++ object of the declared type, the result is a custom");
}

// ---- closure storage --------------------------------------------------------

void test_small_closures_stay_in_data(void**)
{
    Run r;
    int count = 0;
    int* pc = &count;
    const std::size_t before = pool_heap_blocks();
    const std::size_t cached0 = futoin::detail::pool::cache.count[0];
    r.root.add([](Steps& as) { as.success(1); })
            .add([pc](Steps&, int v) { *pc += v; }, [](Steps&, std::string_view) {})
            .add([](Steps&) {}, [pc](Steps&, std::string_view) { ++*pc; })
            .loop([pc](Steps& as) {
                if (++*pc > 5) {
                    as.break_loop();
                }
            })
            .repeat(3, [pc](Steps&, std::size_t i) { *pc += int(i); });
    static_assert(futoin::detail::step_in_data<void (*)(Steps&)>());
    r.go();
    assert_false(r.failed);
    assert_int_equal(count, 6 + 3);
    assert_int_equal(pool_heap_blocks(), before);
    assert_int_equal(futoin::detail::pool::cache.count[0], cached0);
}

void test_pool_is_reused(void**)
{
    // Once warm, a step with a closure of 100 bytes takes no new block.
    Run r;
    Payload<100> p;
    int n = 0;
    r.root.repeat(1000,
            [p, &n](Steps& as, std::size_t) { as.add([p, &n](Steps&) { n += p.t.id; }); });
    const std::size_t before = pool_heap_blocks();
    r.go();
    assert_int_equal(n, 1000);
    assert_true(pool_heap_blocks() - before <= 2);
}

void test_closure_destroyed_after_success(void**)
{
    Run r;
    int live_in_next = -1;
    {
        Payload<40> p;
        r.root.add([p](Steps& as) { as.success(); });
    }
    assert_int_equal(Track::live, 1);
    r.root.add([&live_in_next](Steps&) { live_in_next = Track::live; });
    r.go();
    assert_int_equal(live_in_next, 0);
    assert_int_equal(Track::live, 0);
}

void test_closure_destroyed_after_error(void**)
{
    Run r;
    int eh_calls = 0;
    int live_after = -1;
    Payload<8> p;
    r.root.add(
            [&eh_calls](Steps& as) {
                as.add([p = Payload<8>()](Steps& as) { as.error("MyError", "inner"); },
                        [p = Payload<64>(), &eh_calls](Steps&, std::string_view code) {
                            assert_sv_equal(code, "MyError");
                            ++eh_calls;
                        });
            },
            [p, &eh_calls](Steps& as, std::string_view code) {
                assert_sv_equal(code, "MyError");
                assert_sv_equal(as.error_info(), "inner");
                ++eh_calls;
                as.success();
            });
    r.root.add([&live_after](Steps&) { live_after = Track::live; });
    r.go();
    assert_false(r.failed);
    assert_int_equal(eh_calls, 2);
    assert_int_equal(live_after, 1); // only p of this test
}

void test_closure_destroyed_on_timeout(void**)
{
    Run r;
    int cancels = 0;
    r.root.add(
            [&cancels](Steps& as) {
                as.set_timeout(1500us); // rounded up to 2 ms
                as.set_cancel([p = Payload<16>(), &cancels](Steps&) { ++cancels; });
            },
            [p = Payload<200>()](Steps&, std::string_view code) {
                assert_sv_equal(code, FUTOIN_TIMEOUT);
            });
    r.go();
    assert_true(r.failed);
    assert_string_equal(r.code.c_str(), FUTOIN_TIMEOUT);
    assert_int_equal(cancels, 1);
    assert_true(r.loop.now() == 2);
    assert_int_equal(Track::live, 0);
}

void test_closure_destroyed_on_cancel(void**)
{
    Run r;
    int cancels = 0;
    bool later = false;
    r.root.add([p = Payload<50>(), &cancels](Steps& as) {
        as.set_cancel([&cancels](Steps&) { ++cancels; });
    });
    r.root.add([p = Payload<50>(), &later](Steps&) { later = true; });
    r.root.execute();
    while (r.loop.run_next() > 0 && cancels == 0 && r.loop.pending() > 0) {
    }
    assert_int_equal(Track::live, 2);
    r.root.cancel();
    assert_int_equal(cancels, 1);
    assert_int_equal(Track::live, 0);
    r.loop.run();
    assert_false(later);
}

void test_closure_destroyed_on_root_free(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    {
        // Never executed.
        futoin::Root root(loop);
        root.add([p = Payload<30>()](Steps&) {}, [p = Payload<30>()](Steps&, std::string_view) {});
        root.loop([p = Payload<30>()](Steps&) {}, "label");
        std::vector<int> v{ 1, 2 };
        root.for_each(std::move(v), [p = Payload<30>()](Steps&, int) {});
        assert_int_equal(Track::live, 4);
    }
    assert_int_equal(Track::live, 0);
    {
        // Freed while a step waits.
        futoin::Root root(loop);
        root.add([p = Payload<30>()](Steps& as) { as.wait_external(); });
        root.add([p = Payload<30>()](Steps&) {});
        root.execute();
        loop.run();
        assert_int_equal(Track::live, 2);
        root.reset();
        assert_int_equal(Track::live, 0);
    }
}

void test_closure_destroyed_on_loop_free(void**)
{
    FutoInAsyncSteps* raw = nullptr;
    {
        futoin::Loop loop(futoin::Loop::virtual_clock);
        futoin::Root root(loop);
        root.add([p = Payload<70>()](Steps& as) { as.wait_external(); });
        root.add([p = Payload<1000>()](Steps&) {});
        root.execute();
        loop.run();
        raw = root.release();
        assert_non_null(raw);
        assert_int_equal(Track::live, 2);
    }
    assert_int_equal(Track::live, 0);
}

void test_big_closure(void**)
{
    // Beyond the largest size class (256 bytes): from operator new.
    Run r;
    int sum = 0;
    Payload<4096> big;
    big.bytes[4095] = 7;
    r.root.add([big, &sum](Steps& as) {
        sum += big.bytes[4095];
        as.success(sum);
    });
    r.root.add([big](Steps&, int s) { assert_int_equal(s, 7); });
    r.go();
    assert_false(r.failed);
    assert_int_equal(sum, 7);
}

// A capture whose copy throws: add() throws in the caller's context.
struct ThrowOnCopy {
    Track t;
    ThrowOnCopy() = default;
    ThrowOnCopy(const ThrowOnCopy&)
    {
        throw std::runtime_error("copy refused");
    }
};

void test_throwing_copy(void**)
{
    Run r;
    ThrowOnCopy t;
    bool thrown = false;
    try {
        r.root.add([t](Steps&) {});
    } catch (const std::runtime_error& e) {
        thrown = true;
        assert_string_equal(e.what(), "copy refused");
    }
    assert_true(thrown);
    assert_int_equal(Track::live, 1);
    // Inside a step, the exception becomes the step's error.
    r.root.add([&t](Steps& as) { as.add([t](Steps&) {}); });
    r.go();
    assert_true(r.failed);
    assert_string_equal(r.code.c_str(), FUTOIN_INTERNAL_ERROR);
    assert_string_equal(r.info.c_str(), "copy refused");
}

// ---- errors and exceptions ---------------------------------------------

void expect_error_from(void (*thrower)(Steps&), const char* code, const char* info)
{
    Run r;
    std::string seen;
    r.root.add([thrower](Steps& as) { thrower(as); },
            [&seen](Steps& as, std::string_view c) {
                seen = std::string(c) + "|" + std::string(as.error_info());
            });
    r.go();
    assert_true(r.failed);
    assert_string_equal(r.code.c_str(), code);
    assert_string_equal(r.info.c_str(), info);
    assert_string_equal(seen.c_str(), (std::string(code) + "|" + info).c_str());
}

void test_exceptions_from_steps(void**)
{
    expect_error_from([](Steps&) { throw futoin::Error("MyCode", "my info"); }, "MyCode",
            "my info");
    expect_error_from([](Steps&) { throw std::out_of_range("index 3"); }, FUTOIN_INTERNAL_ERROR,
            "index 3");
    expect_error_from([](Steps&) { throw 42; }, FUTOIN_INTERNAL_ERROR,
            "a C++ exception that is not a std::exception");
    expect_error_from(
            [](Steps& as) {
                as.error("Raised", "by error()");
                fail();
            },
            "Raised", "by error()");
    expect_error_from(
            [](Steps& as) {
                // error() is not a std::exception: user code lets it pass.
                try {
                    as.error(std::string("Dyn"), std::string_view("from a string"));
                } catch (const std::exception&) {
                    fail();
                }
            },
            "Dyn", "from a string");
}

void test_exceptions_from_handlers(void**)
{
    Run r;
    std::vector<std::string> seen;
    r.root.add(
            [&seen](Steps& as) {
                as.add(
                        [](Steps& as) {
                            as.add([](Steps& as) { as.error("First"); },
                                    [](Steps&, std::string_view) {
                                        throw std::runtime_error("handler threw");
                                    });
                        },
                        [&seen](Steps& as, std::string_view code) {
                            seen.push_back(std::string(code) + ":" + std::string(as.error_info()));
                            throw futoin::Error("Second", "replaced");
                        });
            },
            [&seen](Steps& as, std::string_view code) {
                seen.push_back(std::string(code) + ":" + std::string(as.error_info()));
                as.error("Third", "by error()");
            });
    r.go();
    assert_int_equal(seen.size(), 2);
    assert_string_equal(seen[0].c_str(), "InternalError:handler threw");
    assert_string_equal(seen[1].c_str(), "Second:replaced");
    assert_string_equal(r.code.c_str(), "Third");
    assert_string_equal(r.info.c_str(), "by error()");
}

void test_exception_from_cancel_handler(void**)
{
    LogCapture log;
    Run r;
    r.root.add([](Steps& as) {
        as.set_timeout(5ms);
        as.set_cancel([p = Payload<20>()](Steps&) { throw std::logic_error("cancel threw"); });
    });
    r.go();
    assert_string_equal(r.code.c_str(), FUTOIN_TIMEOUT);
    assert_true(log.has("futoin: C++ exception from a cancel handler: cancel threw"));
}

void test_exception_from_unhandled_handler(void**)
{
    LogCapture log;
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root(loop);
    root.add([](Steps& as) { as.error("E"); });
    root.execute([](Steps&, std::string_view) { throw std::runtime_error("late"); });
    loop.run();
    assert_true(log.has("futoin: C++ exception from an unhandled-error handler: late"));
}

void test_exceptions_from_loop_bodies(void**)
{
    Run r;
    int iterations = 0;
    std::vector<std::string> codes;
    r.root.add(
            [&iterations](Steps& as) {
                as.loop([&iterations](Steps&) {
                    if (++iterations == 3) {
                        throw std::runtime_error("loop body threw");
                    }
                });
            },
            [&codes](Steps& as, std::string_view code) {
                codes.push_back(std::string(code) + ":" + std::string(as.error_info()));
                as.success();
            });
    r.root.add(
            [](Steps& as) {
                as.repeat(5, [p = Payload<40>()](Steps&, std::size_t i) {
                    if (i == 2) {
                        throw futoin::Error("RepeatFailed", std::to_string(i));
                    }
                });
            },
            [&codes](Steps& as, std::string_view code) {
                codes.push_back(std::string(code) + ":" + std::string(as.error_info()));
                as.success();
            });
    r.root.add(
            [](Steps& as) {
                as.for_each(std::list<int>{ 1, 2, 3 }, [](Steps&, int v) {
                    if (v == 3) {
                        throw 3;
                    }
                });
            },
            [&codes](Steps& as, std::string_view code) {
                codes.push_back(std::string(code) + ":" + std::string(as.error_info()));
                as.success();
            });
    r.go();
    assert_false(r.failed);
    assert_int_equal(iterations, 3);
    assert_int_equal(codes.size(), 3);
    assert_string_equal(codes[0].c_str(), "InternalError:loop body threw");
    assert_string_equal(codes[1].c_str(), "RepeatFailed:2");
    assert_string_equal(codes[2].c_str(),
            "InternalError:a C++ exception that is not a std::exception");
}

// ---- loops --------------------------------------------------------------------

void test_loops(void**)
{
    Run r;
    std::vector<int> v{ 10, 20, 30, 40 };
    std::map<std::string, int> m{ { "a", 1 }, { "b", 2 }, { "c", 3 } };
    std::string trace;
    r.root.for_each(v, [&trace](Steps& as, std::size_t i, int x) {
        if (x == 20) {
            as.continue_loop();
        }
        trace += std::to_string(i) + "=" + std::to_string(x) + " ";
        if (x == 30) {
            as.break_loop();
        }
    });
    r.root.for_each(m, [&trace](Steps&, const std::pair<const std::string, int>& kv) {
        trace += kv.first + std::to_string(kv.second) + " ";
    });
    // A labelled outer loop left from an inner one, and from a sub-step.
    r.root.repeat(
            10,
            [&trace, p = Payload<10>()](Steps& as, std::size_t i) {
                as.loop(
                        [&trace, i](Steps& as) {
                            trace.append("i").append(std::to_string(i)).append(" ");
                            if (i == 1) {
                                as.add([](Steps& as) { as.break_loop("outer"); });
                                return;
                            }
                            as.break_loop();
                        },
                        "inner");
            },
            "outer");
    r.go();
    assert_false(r.failed);
    assert_string_equal(trace.c_str(), "0=10 2=30 a1 b2 c3 i0 i1 ");
}

// ---- parallel -----------------------------------------------------------------

void test_parallel(void**)
{
    Run r;
    std::string trace;
    int cancels = 0;
    r.root.add([&trace](Steps& as) {
        Steps p = as.parallel();
        for (int i = 0; i < 3; ++i) {
            p.add([i, &trace, t = Payload<30>()](Steps& as) {
                as.add([i, &trace](Steps&) { trace += std::to_string(i); });
            });
        }
    });
    r.root.add(
            [&cancels](Steps& as) {
                Steps p = as.parallel([t = Payload<60>()](Steps& as, std::string_view code) {
                    assert_sv_equal(code, "BranchFailed");
                    assert_sv_equal(as.error_info(), "b1");
                    as.success();
                });
                p.add([&cancels](Steps& as) { as.set_cancel([&cancels](Steps&) { ++cancels; }); });
                p.add([](Steps& as) { as.error("BranchFailed", "b1"); });
            },
            [](Steps&, std::string_view) { fail(); });
    r.go();
    assert_false(r.failed);
    assert_string_equal(trace.c_str(), "012");
    assert_int_equal(cancels, 1);
}

// ---- state, stack, success_step, sync ------------------------------------------

void test_state_and_stack(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    int stack_live_in_next = -1;
    {
        futoin::Root root(loop);
        root.repeat(3, [](Steps& as, std::size_t) { ++*as.state<int>("count"); });
        root.add([](Steps& as) {
            assert_int_equal(*as.state<int>("count"), 3);
            // The same name with another type: nullptr.
            assert_null(as.state<double>("count"));
            Track* t = as.state<Track>("track", 9);
            assert_int_equal(t->id, 9);
            assert_true(as.state<Track>("track", 10) == t);
            Track* s = as.stack<Track>(5);
            assert_int_equal(s->id, 5);
            assert_int_equal(Track::live, 2);
            std::string* str = as.stack<std::string>(3, 'z');
            assert_string_equal(str->c_str(), "zzz");
        });
        root.add([&stack_live_in_next](Steps&) { stack_live_in_next = Track::live; });
        root.execute();
        loop.run();
        assert_int_equal(stack_live_in_next, 1); // the state variable stays
    }
    assert_int_equal(Track::live, 0); // gone with the root
}

void test_success_step_and_timeout_values(void**)
{
    Run r;
    int got = 0;
    r.root.add([](Steps& as) {
        as.add([](Steps&) {});
        as.success_step(41, std::string("x"));
    });
    r.root.add([&got](Steps&, int v, std::string_view s) { got = v + int(s.size()); });
    r.go();
    assert_false(r.failed);
    assert_int_equal(got, 42);
}

void test_sync_mutex(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    FutoInSync* mutex = futoin_mutex_new(loop.handle(), 1, 10);
    assert_non_null(mutex);
    std::string trace;
    {
        futoin::Root a(loop);
        futoin::Root b(loop);
        for (futoin::Root* root : { &a, &b }) {
            const char name = root == &a ? 'a' : 'b';
            root->add([](Steps& as) { as.success(7); });
            root->sync(
                    mutex,
                    [name, &trace, p = Payload<40>()](Steps& as, int v) {
                        trace += name;
                        trace += std::to_string(v);
                        as.add([&trace, name](Steps& as) {
                            trace += name;
                            as.success();
                        });
                    },
                    [](Steps&, std::string_view) {});
            root->execute();
        }
        loop.run();
    }
    assert_string_equal(trace.c_str(), "a7ab7b");
    assert_int_equal(futoin_sync_free(mutex), FUTOIN_SYNC_OK);
}

void test_unhandled_handler_gets_root(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root root = loop.root();
    std::string seen;
    root.add([](Steps& as) { as.error(FUTOIN_NOT_IMPLEMENTED, "nope"); });
    FutoInAsyncSteps* handle = root.handle();
    root.execute([&seen, handle, t = Payload<8>()](Steps& as, std::string_view code) {
        assert_ptr_equal(as.handle(), handle);
        seen = std::string(code) + "/" + std::string(as.error_info());
    });
    loop.run();
    assert_string_equal(seen.c_str(), "NotImplemented/nope");
    // Executed again with another handler: the first one goes.
    root.add([](Steps& as) { as.error("Again"); });
    root.execute([&seen](Steps&, std::string_view code) { seen = std::string(code); });
    assert_int_equal(Track::live, 0);
    loop.run();
    assert_string_equal(seen.c_str(), "Again");
    // Moved: the new owner frees it.
    futoin::Root other(std::move(root));
    assert_false(static_cast<bool>(root));
    assert_true(static_cast<bool>(other));
}

void test_external_completion(void**)
{
    // A step waits; a later step of another root completes it with complete_error().
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Root waiting(loop);
    futoin::Root other(loop);
    std::string seen;
    FutoInAsyncSteps* flow = nullptr;
    waiting.add([&flow](Steps& as) {
        flow = as.handle();
        as.wait_external();
    });
    waiting.execute([&seen](Steps& as, std::string_view code) {
        seen = std::string(code) + ":" + std::string(as.error_info());
    });
    other.add([&flow](Steps&) { Steps(flow).complete_error("External", "from another root"); });
    other.execute();
    loop.run();
    assert_string_equal(seen.c_str(), "External:from another root");
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_values, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_value_records, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_type_mismatch, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_small_closures_stay_in_data, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_pool_is_reused, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_after_success, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_after_error, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_on_timeout, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_on_cancel, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_on_root_free, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_closure_destroyed_on_loop_free, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_big_closure, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_throwing_copy, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_exceptions_from_steps, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_exceptions_from_handlers, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_exception_from_cancel_handler, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_exception_from_unhandled_handler, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_exceptions_from_loop_bodies, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_loops, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_parallel, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_state_and_stack, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_success_step_and_timeout_values, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_sync_mutex, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_unhandled_handler_gets_root, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_external_completion, track_setup, track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
