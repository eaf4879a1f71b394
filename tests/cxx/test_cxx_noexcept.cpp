/* SPDX-License-Identifier: MIT */
// The C++17 layer built with -fno-exceptions: error(), break_loop() and
// continue_loop() record the outcome and return, as in C; typed results,
// mismatches and closures work as with exceptions.
#include "cxx_support.hpp"

#include <string>
#include <vector>

#if FUTOIN_CXX_EXCEPTIONS
#error "test_cxx_noexcept is built with -fno-exceptions"
#endif

using futoin::Steps;

namespace {

void test_error_returns(void**)
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    std::string trace;
    {
        futoin::Root root(loop);
        root.add(
                [&trace, p = Payload<40>()](Steps& as) {
                    as.error("Failed", "no exceptions");
                    trace += "returned ";
                },
                [&trace](Steps& as, std::string_view code) {
                    trace += std::string(code) + ":" + std::string(as.error_info()) + " ";
                    as.success(5);
                });
        root.add([&trace](Steps&, int v) { trace += std::to_string(v) + " "; });
        root.add([](Steps& as) { as.success("text"); });
        root.add([&trace](Steps&, int) { trace += "not reached"; },
                [&trace](Steps& as, std::string_view code) {
                    trace += std::string(code) + " ";
                    assert_contains(as.error_info(), "wants int32_t, the result is a string");
                    as.success();
                });
        int n = 0;
        root.loop([&n, &trace, p = Payload<40>()](Steps& as) {
            if (++n == 3) {
                as.break_loop();
                trace += "break returned ";
                return;
            }
        });
        root.for_each(std::vector<int>{ 1, 2, 3 }, [&trace](Steps& as, int v) {
            if (v == 2) {
                as.continue_loop();
                return;
            }
            trace += std::to_string(v);
        });
        root.execute();
        loop.run();
    }
    assert_string_equal(trace.c_str(),
            "returned Failed:no exceptions 5 InternalError break returned 13");
}

} // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_error_returns, track_setup, track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
