/* SPDX-License-Identifier: MIT */
// JS README example "External event wait" in C++
// (examples/external_event_wait.c): a step completed later by a loop
// callback (Loop::immediate(), "setImmediate"), and a step whose external
// event never comes, so its 1 s timeout fires and its cancel handler runs.
#include <futoin/asyncsteps.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

using futoin::Steps;
using namespace std::chrono_literals;

namespace {

// A dummy external service whose read never completes: a real one would
// call as.success(data) or as.complete_error(code) from a loop callback.
struct DummyRequest {
    bool pending = false;
};

DummyRequest* dummy_service_read(Steps)
{
    static DummyRequest req;
    req.pending = true;
    return &req;
}

} // namespace

int main()
{
    futoin::Loop loop;
    futoin::Root root(loop);

    root.add([&loop](Steps& as) {
            // The handle lives in the step's stack() memory: it cancels the
            // callback if the step ends first (here it never does).
            as.stack<futoin::Scheduled>(loop.immediate([as]() mutable {
                as.success("async success()");
            }));
            // set_timeout() also makes the step wait for an external success().
            as.set_timeout(10ms);
        })
            .add(
                    [](Steps& as, std::string_view text) {
                        std::puts(std::string(text).c_str());
                        DummyRequest* req = dummy_service_read(as);
                        // Runs when the step is aborted, also on its own timeout.
                        as.set_cancel([req](Steps&) { req->pending = false; });
                        // Optional: fail with Timeout after 1 s.
                        as.set_timeout(1s);
                    },
                    [](Steps& as, std::string_view err) {
                        // error_info is empty after a Timeout.
                        std::printf("%s: %s\n", std::string(err).c_str(),
                                std::string(as.error_info()).c_str());
                    });

    // The error is not recovered, so it escapes the root.
    root.execute([](Steps&, std::string_view error) {
        std::fprintf(stderr, "(unhandled error: %s)\n", std::string(error).c_str());
    });
    loop.run();
    return 0;
}
