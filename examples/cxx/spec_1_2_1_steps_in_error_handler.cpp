/* SPDX-License-Identifier: MIT */
// Spec section 1.2.1 "Steps in error handler" in C++
// (examples/spec_1_2_1_steps_in_error_handler.c): an error handler that adds
// steps gives the failed step an alternative path; when that path fails too,
// the error goes straight on to the level 0 handler. Here the errors are
// thrown as futoin::Error, which the layer turns into the step's error.
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
                        [](Steps&) {
                            std::puts("Level 1 func");
                            throw futoin::Error("first");
                        },
                        [](Steps& as, std::string_view error) {
                            std::printf("Level 1 onerror: %s\n", std::string(error).c_str());
                            // Adding a step here is an implicit success() of
                            // the handler: the new step replaces the failed one.
                            as.add(
                                    [](Steps&) {
                                        std::puts("Level 2 func");
                                        throw futoin::Error("second");
                                    },
                                    [](Steps&, std::string_view error) {
                                        std::printf("Level 2 onerror: %s\n",
                                                std::string(error).c_str());
                                        // Returning lets the error unwind on.
                                    });
                        });
            },
            [](Steps&, std::string_view error) {
                std::printf("Level 0 onerror: %s\n", std::string(error).c_str());
            });

    // "second" is not recovered anywhere: the root fails. The spec's output
    // ends above; keep stdout identical to it.
    as.execute([](Steps&, std::string_view error) {
        std::fprintf(stderr, "(unhandled error: %s)\n", std::string(error).c_str());
    });
    loop.run();
    return 0;
}
