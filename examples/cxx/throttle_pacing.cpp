/* SPDX-License-Identifier: MIT */
// A futoin::Throttle(3 per 100 ms) paces ten flows, in C++
// (examples/throttle_pacing.c). Flow i arrives at 15 * i ms; at most 3
// enter per 100 ms window, the others wait in FIFO order for the next one.
// Virtual clock: the times are exact and it ends at once.
#include <futoin/asyncsteps.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;

int main()
{
    constexpr int kFlows = 10;
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Throttle throttle(loop, 3, 100ms);
    std::vector<futoin::Root> roots;
    auto now = [&loop] { return unsigned(loop.now()); };

    std::printf("Throttle(3 per 100 ms); flow i arrives at 15 * i ms\n");
    for (int i = 0; i < kFlows; ++i) {
        futoin::Root& root = roots.emplace_back(loop);
        const unsigned arrive = unsigned(i) * 15;
        // First step: wait until the flow's arrival time.
        root.add([&loop, arrive](Steps& as) {
            if (arrive) {
                as.stack<futoin::Scheduled>(loop.deferred(std::chrono::milliseconds(arrive),
                        [as]() mutable { as.success(); }));
                as.wait_external();
            }
        });
        root.sync(throttle, [&now, i, arrive](Steps&) {
            std::printf("t=%3u flow %d enters (arrived t=%3u, waited %3u ms)\n", now(), i, arrive,
                    now() - arrive);
        });
        root.execute([](Steps& as, std::string_view code) {
            std::fprintf(stderr, "unhandled error %s (%s)\n", std::string(code).c_str(),
                    std::string(as.error_info()).c_str());
        });
    }
    loop.run();
    std::printf("done at t=%u\n", now());

    roots.clear();
    if (throttle.free() != FUTOIN_SYNC_OK) {
        std::fprintf(stderr, "throttle still busy\n");
        return 1;
    }
    return 0;
}
