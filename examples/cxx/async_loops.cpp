/* SPDX-License-Identifier: MIT */
// JS README example "Async Loops" in C++ (examples/async_loops.c): repeat(),
// and for_each() over a std::vector and over a std::map (in key order). Each
// loop is a sub-step of the step that adds it, so the three loops run one
// after another.
#include <futoin/asyncsteps.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

using futoin::Steps;

int main()
{
    futoin::Loop loop;
    futoin::Root root(loop);

    root.add([](Steps& as) {
        as.repeat(3, [](Steps&, std::size_t i) { std::printf("> Repeat: %zu\n", i); });
        // An rvalue container is moved into its loop step.
        as.for_each(std::vector<int>{ 1, 2, 3 },
                [](Steps&, std::size_t i, int v) { std::printf("> forEach: %zu = %d\n", i, v); });
        as.for_each(std::map<std::string, int>{ { "a", 1 }, { "b", 2 }, { "c", 3 } },
                [](Steps&, const std::pair<const std::string, int>& kv) {
                    std::printf("> forEach: %s = %d\n", kv.first.c_str(), kv.second);
                });
    });

    root.execute();
    loop.run();
    return 0;
}
