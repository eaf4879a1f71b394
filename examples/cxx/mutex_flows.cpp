/* SPDX-License-Identifier: MIT */
// Ten flows share a futoin::Mutex(2), in C++ (examples/mutex_flows.c): at
// most two are inside the critical section at any time, the others wait in
// FIFO order. Flow i stays inside (i % 3 + 1) * 10 ms, a timer of the loop
// whose handle lives in the step's stack() memory. Virtual clock: the times
// are exact and it ends at once.
#include <futoin/asyncsteps.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;

namespace {

// A step that waits d: the loop's timer completes it; when the step ends
// first (cancelled, timed out), the handle's destructor cancels the timer.
void sleep_step(Steps& as, futoin::Loop& loop, std::chrono::milliseconds d)
{
    as.stack<futoin::Scheduled>(loop.deferred(d, [as]() mutable { as.success(); }));
    as.wait_external();
}

} // namespace

int main()
{
    constexpr int kFlows = 10;
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Mutex mutex(loop, 2);
    std::vector<futoin::Root> roots;
    int inside = 0;
    int max_inside = 0;
    auto now = [&loop] { return unsigned(loop.now()); };

    std::printf("Mutex(2) shared by %d flows; flow i stays (i %% 3 + 1) * 10 ms\n", kFlows);
    for (int i = 0; i < kFlows; ++i) {
        futoin::Root& root = roots.emplace_back(loop);
        const auto stay = std::chrono::milliseconds((i % 3 + 1) * 10);
        root.sync(mutex, [&, i, stay](Steps& as) {
            if (++inside > max_inside) {
                max_inside = inside;
            }
            std::printf("t=%3u flow %d enter (inside: %d)\n", now(), i, inside);
            as.add([&loop, stay](Steps& as) { sleep_step(as, loop, stay); });
            as.add([&, i](Steps&) {
                --inside;
                std::printf("t=%3u flow %d leave\n", now(), i);
            });
        });
        root.execute([](Steps& as, std::string_view code) {
            std::fprintf(stderr, "unhandled error %s (%s)\n", std::string(code).c_str(),
                    std::string(as.error_info()).c_str());
        });
    }
    loop.run();
    std::printf("done at t=%u, at most %d inside\n", now(), max_inside);

    roots.clear();
    // Every flow has left, so the mutex can go.
    if (mutex.free() != FUTOIN_SYNC_OK) {
        std::fprintf(stderr, "mutex still busy\n");
        return 1;
    }
    return 0;
}
