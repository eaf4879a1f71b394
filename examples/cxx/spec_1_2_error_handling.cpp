/* SPDX-License-Identifier: MIT */
// Spec section 1.2 "Error handling" in C++
// (examples/spec_1_2_error_handling.c): nested error handlers, the inner one
// raising a new error (error() does not return) and the outer one recovering
// with a value that the next step receives.
#include <futoin/asyncsteps.hpp>

#include <cstdio>
#include <string>
#include <string_view>

using futoin::Steps;

int main()
{
    futoin::Loop loop;
    futoin::Root as(loop);

    as.add(
            [](Steps& as) {
                std::puts("Level 0 func");
                as.add(
                        [](Steps& as) {
                            std::puts("Level 1 func");
                            as.error("myerror");
                        },
                        [](Steps& as, std::string_view error) {
                            std::printf("Level 1 onerror: %s\n", std::string(error).c_str());
                            as.error("newerror");
                        });
            },
            [](Steps& as, std::string_view error) {
                std::printf("Level 0 onerror: %s\n", std::string(error).c_str());
                as.success("Prm");
            });
    as.add([](Steps& as, std::string_view prm) {
        std::printf("Level 0 func2: %s\n", std::string(prm).c_str());
        as.success();
    });

    as.execute();
    loop.run();
    return 0;
}
