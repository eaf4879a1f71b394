/* SPDX-License-Identifier: MIT */
// Spec section 1.1 "Levels" in C++ (examples/spec_1_1_levels.c): steps
// added with add() and parallel() at three levels. A step's sub-steps all
// run before the next step of its level, so the lines come out in the order
// of the spec's tree. Each parallel() here has a single branch.
#include <futoin/asyncsteps.hpp>

#include <cstdio>

using futoin::Steps;

int main()
{
    futoin::Loop loop;
    futoin::Root as(loop);

    as.add([](Steps& as) {
        std::puts("Level 0 add #1");
        as.add([](Steps& as) {
            std::puts("Level 1 add #1");
            as.add([](Steps&) { std::puts("Level 2 add #1"); });
            as.parallel().add([](Steps&) { std::puts("Level 2 parallel #2"); });
            as.add([](Steps&) { std::puts("Level 2 add #3"); });
        });
        as.parallel().add([](Steps&) { std::puts("Level 1 parallel #2"); });
        as.add([](Steps&) { std::puts("Level 1 add #3"); });
    });
    as.parallel().add([](Steps&) { std::puts("Level 0 parallel #2"); });
    as.add([](Steps&) { std::puts("Level 0 add #3"); });

    as.execute();
    loop.run();
    return 0;
}
