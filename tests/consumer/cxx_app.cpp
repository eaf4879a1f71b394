/* SPDX-License-Identifier: MIT */
// An outside C++17 program on the installed headers (scripts/check-consumer.sh):
// futoin/asyncsteps.hpp and futoin/threads.hpp, a timer and a Mutex on a
// virtual-clock loop, and Root::promise() bringing the result back.
#include <futoin/asyncsteps.hpp>
#include <futoin/threads.hpp>
#include <futoin/version.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace std::chrono_literals;

int main()
{
    futoin::Loop loop(futoin::Loop::virtual_clock);
    futoin::Mutex mutex(loop);
    futoin::Root root(loop);
    root.add([&loop](futoin::Steps& as) {
        as.stack<futoin::Scheduled>(loop.deferred(5ms, [as]() mutable { as.success(40); }));
        as.wait_external();
    });
    root.sync(mutex, [](futoin::Steps& as, int v) { as.success(v + 2, std::string("ok")); });
    auto out = root.promise<int, std::string>();
    const int value = out ? std::get<0>(out.values()) : -1;
    const bool same = std::strcmp(futoin_version(), FUTOIN_VERSION_STRING) == 0;
    std::printf("futoin_asyncsteps %s (headers %s), C++ promise value=%d at t=%u\n",
            futoin_version(), FUTOIN_VERSION_STRING, value, unsigned(loop.now()));
    return value == 42 && loop.now() == 5 && same ? 0 : 1;
}
