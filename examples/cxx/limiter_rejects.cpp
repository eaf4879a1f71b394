/* SPDX-License-Identifier: MIT */
// A futoin::Limiter turns excess load into DefenseRejected, in C++
// (examples/limiter_rejects.c, whose comment explains the timeline): 3
// requests may run at once and 1 more may wait for a place; at most 2 may
// start per 100 ms and 1 more may wait for the rate. Six requests arrive at
// 0, each takes 10 ms. Virtual clock: exact times, it ends at once.
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
    constexpr int kRequests = 6;
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Limiter::Options opts;
    opts.concurrent = 3;
    opts.max_queue = 1;
    opts.rate = 2;
    opts.period_ms = 100;
    opts.burst = 1;
    futoin::Limiter limiter(loop, opts);
    std::vector<futoin::Root> roots;
    int served = 0;
    int rejected = 0;
    auto now = [&loop] { return unsigned(loop.now()); };

    std::printf("Limiter: 3 at once + 1 waiting, 2 per 100 ms + 1 waiting; "
                "%d requests at t=0, 10 ms each\n",
            kRequests);
    for (int i = 0; i < kRequests; ++i) {
        futoin::Root& root = roots.emplace_back(loop);
        root.add(
                [&, i](Steps& as) {
                    as.sync(limiter, [&, i](Steps& as) {
                        std::printf("t=%3u request %d start\n", now(), i);
                        as.add([&loop](Steps& as) { // the work: 10 ms
                            as.stack<futoin::Scheduled>(loop.deferred(10ms,
                                    [as]() mutable { as.success(); }));
                            as.wait_external();
                        });
                        as.add([&, i](Steps&) {
                            ++served;
                            std::printf("t=%3u request %d done\n", now(), i);
                        });
                    });
                },
                // DefenseRejected comes from the Limiter, outside the
                // critical section: the handler of the step around it.
                [&, i](Steps& as, std::string_view code) {
                    ++rejected;
                    std::printf("t=%3u request %d rejected: %s (%s)\n", now(), i,
                            std::string(code).c_str(), std::string(as.error_info()).c_str());
                    as.success(); // a real server would answer "busy" here
                });
        root.execute([](Steps& as, std::string_view code) {
            std::fprintf(stderr, "unhandled error %s (%s)\n", std::string(code).c_str(),
                    std::string(as.error_info()).c_str());
        });
    }
    loop.run();
    std::printf("served %d, rejected %d\n", served, rejected);

    roots.clear();
    if (limiter.free() != FUTOIN_SYNC_OK) {
        std::fprintf(stderr, "limiter still busy\n");
        return 1;
    }
    return 0;
}
