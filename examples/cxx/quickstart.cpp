/* SPDX-License-Identifier: MIT */
// Quick start in C++ (examples/quickstart.c): a root with two steps. The
// first waits for a reply that never comes and fails with Timeout; its
// error handler recovers with a fallback value, which the second step
// receives as a typed parameter.
#include <futoin/asyncsteps.hpp>

#include <chrono>
#include <cstdio>
#include <string_view>

using namespace std::chrono_literals;

int main()
{
    futoin::Loop loop;
    futoin::Root root(loop);

    root.add(
                [](futoin::Steps& as) {
                    std::puts("fetch: waiting for a reply");
                    // A real step would start an I/O operation here and call
                    // as.success(...) from its completion callback.
                    as.set_timeout(100ms); // no reply within 100 ms: Timeout
                },
                [](futoin::Steps& as, std::string_view code) {
                    std::printf("fetch failed: %.*s\n", int(code.size()), code.data());
                    as.success("cached value"); // recover
                })
            .add([](futoin::Steps&, std::string_view value) {
                std::printf("use: %.*s\n", int(value.size()), value.data());
            });
    root.execute([](futoin::Steps&, std::string_view code) {
        std::printf("unhandled error: %.*s\n", int(code.size()), code.data());
    });

    loop.run(); // returns when no work is left
    return 0;
}
