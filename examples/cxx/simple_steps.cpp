/* SPDX-License-Identifier: MIT */
// JS README example "Simple steps" in C++ (examples/simple_steps.c): typed
// results passed between steps, an error recovered by a handler (with
// error_info), state variables as std::string, and a parallel step whose two
// branches interleave one step at a time.
#include <futoin/asyncsteps.hpp>

#include <cstdio>
#include <string>
#include <string_view>

using futoin::Steps;

namespace {

// as.state.NAME in JS: a std::string made on first use, freed with the root.
std::string& state_str(Steps& as, const char* name)
{
    return *as.state<std::string>(name);
}

} // namespace

int main()
{
    futoin::Loop loop;
    futoin::Root root(loop);

    root.add([](Steps& as) { as.success("MyValue"); })
            .add(
                    [](Steps& as, std::string_view value) {
                        if (value == "MyValue") {
                            as.add([](Steps& as) {
                                as.error("MyError", "Something bad has happened");
                            });
                        }
                        // Succeeds after the sub-steps, if any were added.
                        as.success_step();
                    },
                    [](Steps& as, std::string_view err) {
                        if (err == "MyError") {
                            as.success("NotSoBad");
                        }
                    })
            .add([](Steps& as, std::string_view value) {
                if (value == "NotSoBad") {
                    std::printf("MyError was ignored: %s\n", std::string(as.error_info()).c_str());
                }
                state_str(as, "p1arg") = "abc";
                state_str(as, "p2arg") = "xyz";

                Steps p = as.parallel();
                p.add([](Steps& as) {
                    std::puts("Parallel Step 1");
                    as.add([](Steps& as) {
                        std::puts("Parallel Step 1.1");
                        state_str(as, "p1") = state_str(as, "p1arg") + "1";
                    });
                });
                p.add([](Steps& as) {
                    std::puts("Parallel Step 2");
                    as.add([](Steps& as) {
                        std::puts("Parallel Step 2.1");
                        state_str(as, "p2") = state_str(as, "p2arg") + "2";
                    });
                });
            })
            .add([](Steps& as) {
                std::printf("Parallel 1 result: %s\n", state_str(as, "p1").c_str());
                std::printf("Parallel 2 result: %s\n", state_str(as, "p2").c_str());
            });

    root.execute();
    loop.run();
    return 0;
}
