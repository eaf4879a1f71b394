// SPDX-License-Identifier: MIT
//
// asio_bench: the rows of futoin_bench that have a counterpart in Boost.Asio,
// written with Asio (C++20 coroutines and plain posted handlers), timed the
// way futoin_bench times its own rows: the floor F of floor.c measured first
// in this process, then for each row a warm-up run and the median of 7
// repetitions, printed in ns and as a multiple of F. bench/run.sh --vs-asio
// runs this program and futoin_bench in turns and sets the rows side by side.
//
//   asio_bench                 every row
//   asio_bench --quick         every size x0.1 (or --scale X)
//   asio_bench --reps N        N repetitions (default 7, at least 5)
//   asio_bench --only a,b      only the named rows (see --list)
//   asio_bench --memory N      tasks of the memory row (default 100,000)
//
// Every row uses an io_context of its own, constructed with the concurrency
// hint 1 (one thread runs it: the single-threaded case futoin_bench measures).
// A fresh one matters: once a timer has been used, the context's reactor
// takes part in every pass over its handler queue.

extern "C" {
#include "bench.h"
}

// Before Asio: 1.74's awaitable.hpp uses std::exchange without <utility>.
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/version.hpp>
#include <boost/version.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h> // malloc_trim()
#endif

namespace asio = boost::asio;

namespace {

constexpr unsigned kDefaultReps = 7;
constexpr unsigned kMaxReps = 101;
constexpr uint32_t kParked = 30000;
constexpr uint32_t kPendingTimers = 1000000;
constexpr unsigned kChain = 100;

unsigned g_reps = kDefaultReps;
double g_scale = 1.0;
double g_floor;

std::unique_ptr<asio::io_context> g_io; // the row's own context
uint64_t g_cnt;

uint64_t scaled(uint64_t n)
{
    auto v = static_cast<uint64_t>(static_cast<double>(n) * g_scale);
    return v ? v : 1;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A /proc/self/status field in KiB, -1 if unavailable.
long proc_status_kb(const char* field)
{
    FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) {
        return -1;
    }
    char line[256];
    size_t flen = std::strlen(field);
    long kb = -1;
    while (std::fgets(line, sizeof(line), f)) {
        if (std::strncmp(line, field, flen) == 0 && line[flen] == ':') {
            kb = std::strtol(line + flen + 1, nullptr, 10);
            break;
        }
    }
    std::fclose(f);
    return kb;
}

// The same generator and delays as futoin_bench's timer1M row.
uint64_t g_rng = 0x9E3779B97F4A7C15ull;

uint32_t rng_next()
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return static_cast<uint32_t>(g_rng >> 16);
}

std::chrono::milliseconds timer_delay()
{
    return std::chrono::milliseconds(60000u + rng_next() % 3600000u); // 1 min .. 61 min
}

void new_context()
{
    g_io = std::make_unique<asio::io_context>(1);
}

void drop_context()
{
    g_io.reset();
}

// Runs the context until it is out of work, ready to run again.
void run_all()
{
    g_io->run();
    g_io->restart();
}

// ---- spawn: a new task that runs one step, run until done ----------------

asio::awaitable<void> one_step()
{
    ++g_cnt;
    co_return;
}

uint64_t run_spawn_coro(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        asio::co_spawn(*g_io, one_step(), asio::detached);
        run_all();
    }
    bench_check(g_cnt - before == n, "spawn_coro: step count");
    return n;
}

// The cheapest task Asio has: one posted handler.
uint64_t run_spawn_post(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        asio::post(*g_io, [] { ++g_cnt; });
        run_all();
    }
    bench_check(g_cnt - before == n, "spawn_post: step count");
    return n;
}

// ---- chains of 100 stages --------------------------------------------------

// One coroutine per chain; each stage goes through the context's queue.
asio::awaitable<void> chain_of_stages()
{
    auto ex = co_await asio::this_coro::executor;
    for (unsigned k = 0; k < kChain; ++k) {
        co_await asio::post(ex, asio::use_awaitable);
        ++g_cnt;
    }
}

uint64_t run_chain_coro(uint64_t chains)
{
    uint64_t before = g_cnt;
    for (uint64_t c = 0; c < chains; ++c) {
        asio::co_spawn(*g_io, chain_of_stages(), asio::detached);
        run_all();
    }
    bench_check(g_cnt - before == chains * kChain, "chain100_coro: stage count");
    return chains * kChain;
}

// The same chain as plain handlers: each stage posts the next.
struct Stage {
    unsigned left;
    void operator()() const
    {
        ++g_cnt;
        if (left > 1) {
            asio::post(*g_io, Stage{ left - 1 });
        }
    }
};

uint64_t run_chain_post(uint64_t chains)
{
    uint64_t before = g_cnt;
    for (uint64_t c = 0; c < chains; ++c) {
        asio::post(*g_io, Stage{ kChain });
        run_all();
    }
    bench_check(g_cnt - before == chains * kChain, "chain100_post: stage count");
    return chains * kChain;
}

// ---- parked tasks: coroutines waiting on a completion handler --------------

// What a coroutine awaiting an operation of signature void(int) leaves
// behind: the handler that resumes it. Every parked task keeps one in its
// slot, as an operation would keep it until it completes.
using ParkHandler = asio::async_result<asio::use_awaitable_t<>, void(int)>::handler_type;

struct ParkSlot {
    std::optional<ParkHandler> handler;
};

std::vector<ParkSlot> pk_slots;
std::vector<uint32_t> pk_cur; // parked since the driver last ran
std::vector<uint32_t> pk_spare;
size_t pk_n;
uint64_t pk_remaining;
uint64_t pk_resumed;
int64_t pk_valsum;
int64_t pk_valsum_expected;
bool pk_inline;

// An operation that completes when someone calls the handler it keeps.
auto park(ParkSlot& slot)
{
    return asio::async_initiate<const asio::use_awaitable_t<>, void(int)>(
            [&slot](auto&& handler) { slot.handler.emplace(std::move(handler)); },
            asio::use_awaitable);
}

asio::awaitable<void> parked_task(uint32_t i)
{
    for (;;) {
        pk_cur[pk_n++] = i;
        int v = co_await park(pk_slots[i]);
        if (v < 0) {
            co_return;
        }
        pk_valsum += v;
    }
}

// Completes slot i's operation with v: through the context's queue, the way
// an operation's completion reaches its handler, or by calling the handler
// at once (the coroutine runs inside the caller until it parks again).
void resume(uint32_t i, int v, bool at_once)
{
    ParkHandler h = std::move(*pk_slots[i].handler);
    pk_slots[i].handler.reset();
    if (at_once) {
        h(v);
    } else {
        asio::post(*g_io, [h = std::move(h), v]() mutable { h(v); });
    }
}

void pk_driver()
{
    size_t n = pk_n;
    std::swap(pk_cur, pk_spare);
    pk_n = 0;
    for (size_t k = 0; k < n; ++k) {
        uint32_t i = pk_spare[k];
        if (pk_remaining) {
            --pk_remaining;
            ++pk_resumed;
            pk_valsum_expected += static_cast<int32_t>(k);
            resume(i, static_cast<int32_t>(k), pk_inline);
        } else {
            pk_cur[pk_n++] = i;
        }
    }
    if (pk_remaining) {
        asio::post(*g_io, pk_driver);
    }
}

// Spawns count tasks and runs them until each has parked.
void spawn_parked(size_t count)
{
    pk_slots = std::vector<ParkSlot>(count);
    pk_cur.assign(count, 0);
    pk_spare.assign(count, 0);
    pk_n = 0;
    for (size_t i = 0; i < count; ++i) {
        asio::co_spawn(*g_io, parked_task(static_cast<uint32_t>(i)), asio::detached);
    }
    // Parked tasks keep the context's work count up: run() would wait.
    g_io->poll();
}

// Ends every parked task, then the context.
void end_parked()
{
    size_t n = pk_n;
    for (size_t k = 0; k < n; ++k) {
        resume(pk_cur[k], -1, true);
    }
    g_io->run();
    bench_check(g_io->stopped(), "parked: a task did not end");
    drop_context();
    pk_slots = std::vector<ParkSlot>();
    pk_cur = std::vector<uint32_t>();
    pk_spare = std::vector<uint32_t>();
}

void setup_parked()
{
    new_context();
    pk_inline = false;
    spawn_parked(kParked);
    bench_check(pk_n == kParked, "parked: not every task parked");
}

void setup_parked_inline()
{
    setup_parked();
    pk_inline = true;
}

uint64_t run_parked(uint64_t n)
{
    pk_remaining = n;
    pk_resumed = 0;
    pk_valsum = pk_valsum_expected = 0;
    asio::post(*g_io, pk_driver);
    g_io->poll();
    bench_check(pk_resumed == n && pk_n == kParked && pk_valsum == pk_valsum_expected,
            "parked: resume count");
    return n;
}

// ---- deadlines: a timer armed for an hour, then cancelled -----------------

void on_cancelled(const boost::system::error_code& ec)
{
    if (ec == asio::error::operation_aborted) {
        ++g_cnt;
    } else {
        bench_check(0, "a timer fired");
    }
}

// A new timer per deadline, armed, awaited and cancelled; the cancelled
// waits' handlers run after every 100 (futoin_bench's setTimeout row runs
// its loop after every 100 steps).
uint64_t run_deadline(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        asio::steady_timer t(*g_io, std::chrono::hours(1));
        t.async_wait(on_cancelled);
        t.cancel();
        if ((i + 1) % kChain == 0 || i + 1 == n) {
            run_all();
        }
    }
    bench_check(g_cnt - before == n, "deadline: cancelled count");
    return n;
}

// The same with 1,000,000 timers pending 1 to 61 minutes, as timer1M: the
// pairs' timers have random delays too, so that few are the earliest.
std::vector<asio::steady_timer> tm_pending;

void on_pending(const boost::system::error_code& ec)
{
    bench_check(ec == asio::error::operation_aborted, "timer1M: a timer fired");
}

void setup_timers()
{
    new_context();
    tm_pending.reserve(kPendingTimers);
    for (uint32_t i = 0; i < kPendingTimers; ++i) {
        tm_pending.emplace_back(*g_io, timer_delay());
        tm_pending.back().async_wait(on_pending);
    }
}

uint64_t run_timers(uint64_t n)
{
    uint64_t before = g_cnt;
    for (uint64_t i = 0; i < n; ++i) {
        asio::steady_timer t(*g_io, timer_delay());
        t.async_wait(on_cancelled);
        t.cancel();
        if ((i + 1) % kChain == 0 || i + 1 == n) {
            g_io->poll(); // the pending timers keep run() waiting
        }
    }
    bench_check(g_cnt - before == n, "timer1M: cancelled count");
    return n;
}

void teardown_timers()
{
    tm_pending = std::vector<asio::steady_timer>(); // cancels them
    drop_context();                                 // destroys the cancelled waits' handlers
}

// ---- the rows ----------------------------------------------------------------

struct Row {
    const char* name;
    const char* per;
    void (*setup)();
    uint64_t (*run)(uint64_t n);
    void (*teardown)();
    uint64_t n; // units per measured repetition (scaled)
    uint64_t warm_n;
    const char* what;
};

void teardown_parked()
{
    end_parked();
}

const Row kRows[] = {
    { "spawn_coro", "task", new_context, run_spawn_coro, drop_context, 100000, 10000,
            "co_spawn(a coroutine doing one step), run(), done" },
    { "spawn_post", "task", new_context, run_spawn_post, drop_context, 300000, 30000,
            "post(a handler doing one step), run(), done" },
    { "parked30k", "resume", setup_parked, run_parked, teardown_parked, 1000000, 100000,
            "30,000 coroutines parked on a handler; each resumed by posting it a value" },
    { "parked30k_inline", "resume", setup_parked_inline, run_parked, teardown_parked, 1000000,
            100000, "the same; the driver calls each handler itself" },
    { "chain100_coro", "stage", new_context, run_chain_coro, drop_context, 5000, 500,
            "a coroutine of 100 co_await post() stages" },
    { "chain100_post", "stage", new_context, run_chain_post, drop_context, 20000, 2000,
            "100 plain handlers, each posting the next" },
    { "deadline", "timer", new_context, run_deadline, drop_context, 100000, 10000,
            "steady_timer: 1 h, async_wait, cancel, aborted handler run" },
    { "timer1M", "pair", setup_timers, run_timers, teardown_timers, 1000000, 100000,
            "the same with 1,000,000 timers pending (1-61 min), random delays" },
};

struct Result {
    double ns;
    double mallocs;
    const char* check;
};

Result measure(const Row& w)
{
    std::vector<double> v;
    unsigned long long allocs = 0;
    uint64_t ops_total = 0;
    bench_check_reset();
    w.setup();
    w.run(scaled(w.warm_n));
    for (unsigned r = 0; r < g_reps; ++r) {
        unsigned long long a0 = bench_alloc_calls();
        double t0 = bench_now();
        uint64_t ops = w.run(scaled(w.n));
        double dt = bench_now() - t0;
        allocs += bench_alloc_calls() - a0;
        ops_total += ops;
        v.push_back(dt * 1e9 / static_cast<double>(ops));
    }
    w.teardown();
    return { median(v), static_cast<double>(allocs) / static_cast<double>(ops_total),
        bench_check_failed() };
}

void print_row(const Row& w, const Result& r)
{
    char mallocs[32];
    if (bench_alloc_counting()) {
        std::snprintf(mallocs, sizeof(mallocs), "%.4g", r.mallocs);
    } else {
        std::snprintf(mallocs, sizeof(mallocs), "n/a");
    }
    std::printf("%-18s %-7s %9.2f %7.2f %10s  %s", w.name, w.per, r.ns, r.ns / g_floor, mallocs,
            w.what);
    if (r.check) {
        std::printf("  CHECK FAILED: %s", r.check);
    }
    std::printf("\n");
    std::fflush(stdout);
}

// ---- memory per parked task --------------------------------------------------

void run_memory(size_t n)
{
    bench_check_reset();
    new_context();
    pk_inline = false;
    // The arrays are allocated and touched before the first figure; the
    // slots are added to the figure below.
    pk_slots = std::vector<ParkSlot>(n);
    pk_cur.assign(n, 0);
    pk_spare.assign(n, 0);
    pk_n = 0;
#ifdef __GLIBC__
    malloc_trim(0); // pages freed by earlier rows would hide in the delta
#endif
    long rss0 = proc_status_kb("VmRSS");
    unsigned long long a0 = bench_alloc_calls();
    unsigned long long b0 = bench_alloc_bytes();
    double t0 = bench_now();
    for (size_t i = 0; i < n; ++i) {
        asio::co_spawn(*g_io, parked_task(static_cast<uint32_t>(i)), asio::detached);
    }
    g_io->poll();
    double dt = bench_now() - t0;
    long rss1 = proc_status_kb("VmRSS");
    unsigned long long allocs = bench_alloc_calls() - a0;
    unsigned long long bytes = bench_alloc_bytes() - b0;
    bench_check(pk_n == n, "memory: tasks did not park");
    double t1 = bench_now();
    end_parked();
    double dt_end = bench_now() - t1;
    // The handler a task parks in is part of it (an operation would keep it
    // in its own record): its slot is added to the RSS growth.
    double per_task = static_cast<double>(rss1 - rss0) * 1024.0 / static_cast<double>(n)
            + static_cast<double>(sizeof(ParkSlot));
    std::printf("%-18s %-7s %9.1f %7s %10.4g  %s", "memory_parked", "task", per_task, "B",
            static_cast<double>(allocs) / static_cast<double>(n),
            "RSS growth per coroutine parked on a handler, + the handler's slot");
    if (bench_check_failed()) {
        std::printf("  CHECK FAILED: %s", bench_check_failed());
    }
    std::printf("\n   (%zu parked tasks: RSS +%ld KiB; heap requested %.0f B/task in %.2f"
                " mallocs; the handler's slot %zu B; spawn+park %.0f ns/task,"
                " end %.0f ns/task)\n",
            n, rss1 - rss0, static_cast<double>(bytes) / static_cast<double>(n),
            static_cast<double>(allocs) / static_cast<double>(n), sizeof(ParkSlot),
            dt * 1e9 / static_cast<double>(n), dt_end * 1e9 / static_cast<double>(n));
    std::fflush(stdout);
}

// ---- main ----------------------------------------------------------------------

double measure_floor()
{
    uint64_t n = scaled(20000000);
    std::vector<double> v;
    bench_floor_run(n);
    for (unsigned r = 0; r < g_reps; ++r) {
        v.push_back(bench_floor_run(n));
    }
    return median(v);
}

bool selected(const char* only, const char* name)
{
    if (!only) {
        return true;
    }
    std::string list = std::string(",") + only + ",";
    return list.find(std::string(",") + name + ",") != std::string::npos;
}

void usage()
{
    std::fprintf(stderr,
            "usage: asio_bench [--quick | --scale X] [--reps N] [--only a,b,...]"
            " [--memory N]\n"
            "       asio_bench --list\n");
}

} // namespace

int main(int argc, char** argv)
{
    const char* only = nullptr;
    size_t memory_n = 100000;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") {
            g_scale = 0.1;
        } else if (a == "--scale" && i + 1 < argc) {
            g_scale = std::atof(argv[++i]);
            if (g_scale <= 0) {
                g_scale = 1;
            }
        } else if (a == "--reps" && i + 1 < argc) {
            g_reps = static_cast<unsigned>(std::atoi(argv[++i]));
            g_reps = std::min(std::max(g_reps, 5u), kMaxReps);
        } else if (a == "--only" && i + 1 < argc) {
            only = argv[++i];
        } else if (a == "--memory" && i + 1 < argc) {
            memory_n = std::strtoul(argv[++i], nullptr, 10);
            if (memory_n == 0) {
                memory_n = 1;
            }
        } else if (a == "--list") {
            for (const Row& w : kRows) {
                std::printf("%s\n", w.name);
            }
            std::printf("memory_parked\n");
            return 0;
        } else {
            usage();
            return a == "--help" ? 0 : 2;
        }
    }

    double t_start = bench_now();
    std::printf("asio_bench: Boost.Asio %d.%d.%d (asio %d), median of %u runs after a"
                " warm-up; scale %g; io_context(1) per row\n",
            BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100,
            BOOST_ASIO_VERSION, g_reps, g_scale);
    g_floor = measure_floor();
    std::printf("F (in-process floor: ring of callback records): %.3f ns/step\n\n", g_floor);
    std::printf("%-18s %-7s %9s %7s %10s  %s\n", "row", "per", "ns/op", "xF", "malloc/op", "what");
    std::printf("%.*s\n", 100,
            "-----------------------------------------------------------------------------"
            "-----------------------------------------");
    for (const Row& w : kRows) {
        if (selected(only, w.name)) {
            print_row(w, measure(w));
        }
    }
    if (selected(only, "memory_parked")) {
        run_memory(memory_n);
    }
    std::printf("\nF re-measured at the end: %.3f ns (ratios use the first figure)\n",
            measure_floor());
    std::printf("total bench time %.1f s\n", bench_now() - t_start);
    return 0;
}
